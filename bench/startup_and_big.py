"""Start-up and single-file figures of issue 16, pinlint and ruff side by side in one run.

    python bench/startup_and_big.py [--workdir /tmp/pinlint-bench16] [--repeat 5]

Cases (each command run with the case's folder as working directory, the median of ``--repeat``
wall times, and the peak RSS of the process from ``os.wait4``):

* ``no GPU file``: ``pinlint check --no-cache plain.py`` on a 40-line module naming no GPU library
  (the common pre-commit case), and ``ruff check --isolated --no-cache plain.py``;
* ``one small GPU file``: the same on a CuPy file with one PIN001;
* ``600 kB, one finding`` and ``100k lines of small GPU functions`` from bench/big_files.py
  (once each: they take seconds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import big_files  # noqa: E402

PLAIN = "import os\nimport json\nfrom pathlib import Path\n\n\n" + "".join(
    f"def helper_{i}(path):\n    return json.dumps({{'p': os.fspath(Path(path)), 'i': {i}}})\n\n\n" for i in range(8))
SMALL_GPU = ("import numpy as np\nimport cupy as cp\n\n\ndef upload(n):\n    s = cp.cuda.Stream(non_blocking=True)\n"
             "    h = np.empty(n, dtype=np.float32)\n    d = cp.empty(n, dtype=cp.float32)\n    d.set(h, stream=s)\n"
             "    s.synchronize()\n    return d\n")


def timed(command: list, cwd: Path) -> tuple:
    start = time.perf_counter()
    try:
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as exc:
        raise SystemExit(f"startup_and_big.py: error: cannot run {command[0]}: {exc.strerror}") from None
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {code}: {process.stderr.read().decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pinlint-bench16"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--big", action="store_true", help="also the 600 kB and 100k-line files")
    parser.add_argument("--ruff", help="ruff to compare with (default: next to this Python, then on PATH)")
    args = parser.parse_args()
    here = Path(sys.executable).parent
    pinlint = str(here / "pinlint")
    ruff = args.ruff or shutil.which("ruff", path=str(here)) or shutil.which("ruff")
    if ruff is None or shutil.which(ruff) is None:
        raise SystemExit("startup_and_big.py: error: ruff not found: install it (`pip install ruff`) or pass --ruff PATH")
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    (work / "plain.py").write_text(PLAIN)
    (work / "small_gpu.py").write_text(SMALL_GPU)
    cases = [("no GPU file", "plain.py", args.repeat), ("one small GPU file", "small_gpu.py", args.repeat)]
    if args.big:
        (work / "big_one_finding.py").write_text(big_files.big_one_finding())
        (work / "many_functions.py").write_text(big_files.many_functions())
        cases += [("600 kB, one finding", "big_one_finding.py", 1), ("100k lines, GPU functions", "many_functions.py", 1)]
    print(f"{'case':<28} {'tool':<8} {'wall s':>8} {'max RSS MiB':>12}")
    for label, name, repeat in cases:
        for tool, command in (("pinlint", [pinlint, "check", "--no-cache", name]),
                              ("ruff", [ruff, "check", "--isolated", "--no-cache", name])):
            runs = [timed(command, work) for _ in range(repeat)]
            wall = statistics.median(r[0] for r in runs)
            print(f"{label:<28} {tool:<8} {wall:>8.3f} {max(r[1] for r in runs):>12.0f}   $ {' '.join(command)}",
                  flush=True)


if __name__ == "__main__":
    main()
