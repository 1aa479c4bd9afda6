"""Two large single files for the positions-on-demand targets of issue 16.

    python bench/big_files.py DIR            # writes DIR/big_one_finding.py and DIR/many_functions.py

* ``big_one_finding.py``: about 600 kB of plain numeric helpers in a module that imports CuPy, with
  one pageable buffer in an asynchronous copy (one PIN001) in its last function: the cost of a
  finding's position must not be the cost of positioning the whole module.
* ``many_functions.py``: ``--functions`` (default 10,000) small GPU functions, about 10 lines each
  (100k lines), one in ten with a finding: time and memory must grow linearly with the file.

Both are deterministic (no randomness), so two runs time the same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

_HEADER = ["import numpy as np", "import cupy as cp", "", ""]


def plain_helper(i: int) -> list:
    return [f"def helper_{i}(values, scale={i % 7 + 1}):",
            f"    \"\"\"Scale, clip and sum a list of numbers ({i}).\"\"\"",
            "    total = 0.0",
            "    for index, value in enumerate(values):",
            f"        if value > {i % 13}:",
            "            total += value * scale - index",
            "        else:",
            f"            total -= value / (scale + {i % 5 + 1})",
            "    return {'total': total, 'count': len(values)}",
            "", ""]


_FINDING = ["def upload(n):",
            "    stream = cp.cuda.Stream(non_blocking=True)",
            "    host = np.empty(n, dtype=np.float32)",
            "    device = cp.empty(n, dtype=cp.float32)",
            "    device.set(host, stream=stream)  # PIN001: pageable source, async copy",
            "    stream.synchronize()",
            "    return device", ""]


def big_one_finding(target_bytes: int = 600_000) -> str:
    lines, size, i = list(_HEADER), 0, 0
    while size < target_bytes:
        block = plain_helper(i)
        lines += block
        size += sum(len(line) + 1 for line in block)
        i += 1
    return "\n".join(lines + _FINDING)


def gpu_function(i: int) -> list:
    if i % 10 == 0:  # a pageable staging buffer in an async copy: PIN001
        alloc = f"    host = np.empty(n + {i}, dtype=np.float32)"
    else:
        alloc = f"    host = cp.cuda.alloc_pinned_memory(4 * (n + {i}))"
    return [f"def step_{i}(n, stream):",
            alloc,
            f"    device = cp.empty(n + {i}, dtype=cp.float32)",
            "    with stream:",
            f"        device *= {i % 9 + 2}",
            "    if isinstance(host, np.ndarray):",
            "        device.set(host, stream=stream)",
            "    stream.synchronize()",
            "    return device", ""]


def many_functions(functions: int = 10_000) -> str:
    lines = list(_HEADER)
    for i in range(functions):
        lines += gpu_function(i)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--bytes", type=int, default=600_000, help="size of big_one_finding.py")
    parser.add_argument("--functions", type=int, default=10_000, help="functions in many_functions.py")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    (args.dir / "big_one_finding.py").write_text(big_one_finding(args.bytes))
    (args.dir / "many_functions.py").write_text(many_functions(args.functions))


if __name__ == "__main__":
    main()
