"""Speed benchmark: pinlint (cold and warm cache) against `fixit lint` and `ruff check`, on the same files.

    python bench/run_bench.py --sizes 1000 10000 [--profile]      # synthetic corpora (bench/corpus.py)
    python bench/run_bench.py --dir PATH                          # an existing folder of Python files

For each corpus, in this order and on the same files:

* pinlint cold: ``pinlint clean`` (not timed), then ``pinlint check .`` (cache on, but empty);
* pinlint warm: ``pinlint check .`` again, no file changed;
* ruff: ``ruff check --isolated --no-cache .`` (ruff's default rules, no config file, no ruff cache);
* fixit: ``fixit lint .`` (Fixit's built-in rules), only on corpora of at most ``--fixit-max-files``
  files and killed after ``--fixit-timeout`` seconds (both reported, nothing extrapolated).

Every command runs with the corpus as its working directory and is printed before it runs. pinlint
runs with its default ``--jobs`` (one worker per core). Exit code 1 (findings) is not an error; any
other non-zero code is reported as one.

Measured per run: wall time (``time.perf_counter`` around the process), CPU time (user+sys of the
process and every descendant it reaped, from ``os.wait4``), peak memory as the largest *sum* of the
RSS of the process tree (the process and all its descendants, found by polling ``/proc`` every
20 ms for the first 2 s, then every 100 ms), and, for comparison, the largest RSS of any single
process (``ru_maxrss`` from ``os.wait4``, what ``/usr/bin/time -v`` calls "Maximum resident set
size"). The tree sum counts pages shared between forked workers once per process, so it is an upper
bound on the memory really used.

``--profile`` also runs one cold pinlint check of the smallest corpus in a single process
(``--jobs 1``) under cProfile and prints the top functions by cumulative time plus where the time
went (parsing, metadata, analysis, rules, prefilter, cache).

Linux only (``/proc``). Needs pinlint, fixit and ruff executables (``--pinlint``, ``--fixit``,
``--ruff``; by default ``pinlint`` next to this Python, fixit and ruff from /tmp/bench-venv/bin or PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus as corpus_mod  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
OK_CODES = (0, 1)  # 1: findings


# ---------------------------------------------------------------------------- measuring one process
def _process_table() -> dict:
    """pid -> (ppid, rss bytes) for every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            table[int(entry)] = (int(fields[1]), int(fields[21]) * PAGE)
        except (IndexError, ValueError):
            continue
    return table


def tree_rss(root: int) -> tuple:
    """(sum of RSS over ``root`` and its descendants, number of processes)."""
    table = _process_table()
    children: dict = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, count, stack = 0, 0, [root]
    while stack:
        pid = stack.pop()
        if pid in table:
            total += table[pid][1]
            count += 1
        stack.extend(children.get(pid, ()))
    return total, count


@dataclass
class Run:
    tool: str
    command: str
    cwd: str
    wall_s: float
    cpu_s: float
    peak_tree_mib: float
    peak_single_mib: float
    max_procs: int
    exit_code: int
    timed_out: bool = False
    ok: bool = True
    summary: str = ""          # the last non-empty line of stdout
    stderr_head: str = ""
    stdout_path: str = ""


def measure(tool: str, cmd: list, cwd: Path, out_dir: Path, timeout: float | None = None) -> Run:
    shown = f"(cd {shlex.quote(str(cwd))} && {shlex.join(cmd)})"
    print(f"$ {shown}", flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{tool.replace(' ', '_')}-{int(time.time() * 1000)}"
    stdout_path, stderr_path = out_dir / f"{stem}.out", out_dir / f"{stem}.err"
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        peak, procs, timed_out = 0, 0, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            rss, count = tree_rss(proc.pid)
            peak, procs = max(peak, rss), max(procs, count)
            elapsed = time.perf_counter() - start
            if timeout is not None and elapsed > timeout and not timed_out:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.02 if elapsed < 2 else 0.1)
        wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code  # reaped by os.wait4 above
    text = stdout_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    errtext = stderr_path.read_text(encoding="utf-8", errors="replace").strip()
    run = Run(tool=tool, command=shown, cwd=str(cwd), wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime,
              peak_tree_mib=peak / MIB, peak_single_mib=usage.ru_maxrss * 1024 / MIB, max_procs=procs,
              exit_code=code, timed_out=timed_out, ok=(code in OK_CODES and not timed_out),
              summary=text[-1] if text else "", stderr_head="\n".join(errtext.splitlines()[:5]),
              stdout_path=str(stdout_path))
    flag = "" if run.ok else ("  ** TIMED OUT **" if timed_out else f"  ** ERROR (exit {code}) **")
    print(f"  wall {wall:8.2f} s  cpu {run.cpu_s:8.2f} s  peak tree RSS {run.peak_tree_mib:7.1f} MiB "
          f"(largest process {run.peak_single_mib:6.1f} MiB, up to {procs} processes)  exit {code}{flag}",
          flush=True)
    if run.summary:
        print(f"  stdout ends: {run.summary[:160]}")
    if run.stderr_head and not run.ok:
        print("  stderr: " + run.stderr_head.replace("\n", "\n          "))
    return run


def median_run(runs: list) -> Run:
    """The run with the median wall time; peak memory is the largest over all runs."""
    ordered = sorted(runs, key=lambda r: r.wall_s)
    chosen = ordered[(len(ordered) - 1) // 2]
    best = Run(**asdict(chosen))
    best.peak_tree_mib = max(r.peak_tree_mib for r in runs)
    best.peak_single_mib = max(r.peak_single_mib for r in runs)
    best.ok = all(r.ok for r in runs)
    return best


# ---------------------------------------------------------------------------- tools
def _default_exe(name: str, *candidates: str) -> str:
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name) or name


def _version(cmd: list) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def _python_of(exe: str) -> str:
    """The interpreter in an executable's shebang (to ask that environment for package versions)."""
    try:
        first = Path(exe).read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return sys.executable
    return first[2:].strip().split()[0] if first.startswith("#!") else sys.executable


def _pkg_version(python: str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return _version([python, "-c", code])


def _pinlint_source(python: str) -> str:
    """Where the benchmarked pinlint's code lives, with the git commit when that is a checkout."""
    try:
        where = subprocess.run([python, "-c", "import pinlint; print(pinlint.__file__)"], capture_output=True,
                               text=True, timeout=60, cwd="/").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    folder = str(Path(where).parent.parent) if where else "/"
    try:
        commit = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", folder, "status", "--porcelain", "--", "pinlint", "rules"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = dirty = ""
    return where + (f" (git {commit[:12]}{', modified' if dirty else ''})" if commit else "")


def environment(args) -> dict:
    pinlint_py, fixit_py = _python_of(args.pinlint), _python_of(args.fixit)
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": _version(["nproc"]),
        "cpu": cpu,
        "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * PAGE / 1024 ** 3, 1),
        "kernel": platform.release(),
        "python_pinlint": _version([pinlint_py, "--version"]),
        "python_fixit": _version([fixit_py, "--version"]),
        "pinlint": _pkg_version(pinlint_py, "pinlint"),
        "pinlint_module": _pinlint_source(pinlint_py),
        "libcst_pinlint": _pkg_version(pinlint_py, "libcst"),
        "fixit": _pkg_version(fixit_py, "fixit"),
        "libcst_fixit": _pkg_version(fixit_py, "libcst"),
        "ruff": _version([args.ruff, "--version"]),
        "loadavg_start": os.getloadavg(),
    }


# ---------------------------------------------------------------------------- one corpus
@dataclass
class CorpusResult:
    name: str
    path: str
    files: int
    lines: int
    gpu_files: int
    runs: dict = field(default_factory=dict)      # tool -> Run (median)
    samples: dict = field(default_factory=dict)   # tool -> [Run]
    notes: list = field(default_factory=list)
    warm_matches_cold: bool | None = None


def count_corpus(path: Path) -> dict:
    manifest = path / "corpus.json"
    if manifest.is_file():
        return json.loads(manifest.read_text(encoding="utf-8"))
    files = lines = gpu = 0
    for p in path.rglob("*.py"):
        if any(part.startswith(".") or part in ("__pycache__", "venv", "build", "dist") for part in
               p.relative_to(path).parts[:-1]):
            continue
        data = p.read_bytes()
        files += 1
        lines += data.count(b"\n")
        gpu += any(t.encode() in data for t in corpus_mod.GPU_TRIGGERS)
    return {"files": files, "lines": lines, "gpu_files": gpu}


def bench_corpus(name: str, path: Path, args, out_dir: Path) -> CorpusResult:
    counts = count_corpus(path)
    result = CorpusResult(name, str(path), counts["files"], counts["lines"], counts.get("gpu_files", -1))
    print(f"\n=== corpus {name}: {path} ({result.files} files, {result.lines} lines, "
          f"{result.gpu_files} naming a GPU library) ===", flush=True)
    pinlint, logs = [args.pinlint], out_dir / path.name
    check = pinlint + ["check", "."] + (["--jobs", str(args.jobs)] if args.jobs else [])

    cold = []
    for i in range(args.repeat if "pinlint" in args.tools else 0):
        print(f"$ (cd {shlex.quote(str(path))} && {shlex.join(pinlint + ['clean'])})   # not timed", flush=True)
        subprocess.run(pinlint + ["clean"], cwd=path, check=True, stdout=subprocess.DEVNULL)
        cold.append(measure("pinlint cold", check, path, logs))
    warm = [measure("pinlint warm", check, path, logs) for _ in range(args.repeat_fast if cold else 0)]
    ruff = [measure("ruff", [args.ruff, "check", "--isolated", "--no-cache", "."], path, logs)
            for _ in range(args.repeat_fast if "ruff" in args.tools else 0)]
    result.samples = {tool: runs for tool, runs in
                      (("pinlint cold", cold), ("pinlint warm", warm), ("ruff", ruff)) if runs}
    if cold:
        cold_out = Path(cold[-1].stdout_path).read_text(encoding="utf-8", errors="replace")
        result.warm_matches_cold = all(Path(w.stdout_path).read_text(encoding="utf-8", errors="replace") == cold_out
                                       for w in warm)
        print(f"  pinlint warm output identical to cold output: {result.warm_matches_cold}")
    if "fixit" not in args.tools:
        result.notes.append("fixit not run (--tools)")
    elif result.files <= args.fixit_max_files:
        result.samples["fixit"] = [measure("fixit", [args.fixit, "lint", "."], path, logs,
                                           timeout=args.fixit_timeout)]
        if result.samples["fixit"][0].timed_out:
            result.notes.append(f"fixit killed after {args.fixit_timeout:.0f} s: no fixit figure for this corpus")
    else:
        note = (f"fixit not run: {result.files} files > --fixit-max-files {args.fixit_max_files} "
                f"(no figure is extrapolated)")
        print(f"  {note}")
        result.notes.append(note)
    result.runs = {tool: median_run(runs) for tool, runs in result.samples.items()}
    return result


# ---------------------------------------------------------------------------- profile
BUCKETS = [  # (label, file substring, function name)
    ("libcst parse_module", "libcst/_parser/entrypoints.py", "parse_module"),
    ("MetadataWrapper (copy/visit setup)", "libcst/metadata/wrapper.py", "__init__"),
    ("metadata resolve (positions, parents)", "libcst/metadata/wrapper.py", "resolve"),
    ("pinlint collect_imports", "pinlint/imports.py", "collect_imports"),
    ("pinlint analyze (dataflow)", "pinlint/analysis.py", "analyze"),
    ("pinlint _check_module (all after parse)", "pinlint/engine.py", "_check_module"),
    ("prefilter: passes_prefilter", "pinlint/engine.py", "passes_prefilter"),
    ("prefilter 1: names_gpu_library", "pinlint/engine.py", "names_gpu_library"),
    ("prefilter 2: calls_relevant_api", "pinlint/engine.py", "calls_relevant_api"),
    ("pinlint lint_bytes", "pinlint/engine.py", "lint_bytes"),
    ("fix rendering: engine._rendered (apply_plans + Module.code + diff)", "pinlint/engine.py", "_rendered"),
    ("libcst Module.code (code generation)", "libcst/_nodes/module.py", "code"),
    ("rule checks (checks/*.check)", "pinlint/checks/", "check"),
    ("positions for findings: engine.position", "pinlint/engine.py", "position"),
    ("suppressions (noqa comments)", "pinlint/suppress.py", "__init__"),
    ("cache put", "pinlint/runner.py", "put"),
    ("cache key (sha256)", "pinlint/runner.py", "key"),
    ("discover files", "pinlint/discover.py", "discover"),
    ("pinlint import (libcst, typer, ...)", "<frozen importlib._bootstrap>", "_find_and_load"),
]


def profile(path: Path, args, out_dir: Path) -> dict:
    import pstats
    python = _python_of(args.pinlint)
    prof = out_dir / "pinlint-cold-jobs1.prof"
    print(f"\n=== cProfile: one cold pinlint run, single process, on {path} ===", flush=True)
    print(f"$ (cd {shlex.quote(str(path))} && {shlex.join([args.pinlint, 'clean'])})   # not timed", flush=True)
    subprocess.run([args.pinlint, "clean"], cwd=path, check=True, stdout=subprocess.DEVNULL)
    cmd = [python, "-m", "cProfile", "-o", str(prof), "-m", "pinlint", "check", "--jobs", "1", "."]
    run = measure("pinlint cold jobs1 cProfile", cmd, path, out_dir / "profile")
    stats = pstats.Stats(str(prof))
    total = stats.total_tt
    rows = []
    for (filename, line, func), (cc, nc, tt, ct, callers) in stats.stats.items():
        rows.append({"function": f"{_short(filename)}:{line}({func})", "ncalls": nc, "tottime": tt,
                     "cumtime": ct})
    top_cum = sorted(rows, key=lambda r: -r["cumtime"])[:args.profile_top]
    # The raw list starts with the driver chain (runpy, typer, cli, run_jobs: one call each); below
    # it, the per-file work: functions called more than once.
    top_work = sorted((r for r in rows if r["ncalls"] > 1 and not any(x in r["function"] for x in ("builtins.exec", "typer/", "click/"))),
                      key=lambda r: -r["cumtime"])[:args.profile_top]
    top_tot = sorted(rows, key=lambda r: -r["tottime"])[:args.profile_top]
    buckets = []
    for label, file_part, func in BUCKETS:
        ct = sum(v[3] for (f, _, fn), v in stats.stats.items() if file_part in f and fn == func)
        calls = sum(v[1] for (f, _, fn), v in stats.stats.items() if file_part in f and fn == func)
        buckets.append({"what": label, "cumtime": ct, "share": ct / total if total else 0, "calls": calls})
    print(f"  total profiled time {total:.2f} s (wall under the profiler {run.wall_s:.2f} s)")
    print(f"\n  top {args.profile_top} by cumulative time:")
    print(f"  {'cumtime s':>9} {'share':>6} {'tottime s':>9} {'ncalls':>9}  function")
    for r in top_cum:
        print(f"  {r['cumtime']:9.2f} {r['cumtime'] / total:6.1%} {r['tottime']:9.2f} {r['ncalls']:9d}  {r['function']}")
    print(f"\n  top {args.profile_top} by cumulative time among functions called more than once (per-file work):")
    for r in top_work:
        print(f"  {r['cumtime']:9.2f} {r['cumtime'] / total:6.1%} {r['tottime']:9.2f} {r['ncalls']:9d}  {r['function']}")
    print(f"\n  top {args.profile_top} by own time (tottime):")
    for r in top_tot:
        print(f"  {r['cumtime']:9.2f} {r['cumtime'] / total:6.1%} {r['tottime']:9.2f} {r['ncalls']:9d}  {r['function']}")
    print("\n  where the time went (cumulative, overlapping):")
    for b in buckets:
        print(f"  {b['cumtime']:9.2f} {b['share']:6.1%} {b['calls']:9d}  {b['what']}")
    return {"command": run.command, "wall_s": run.wall_s, "total_s": total, "top_cumulative": top_cum,
            "top_tottime": top_tot, "top_work": top_work, "buckets": buckets, "prof_file": str(prof), "exit_code": run.exit_code}


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/work/main/", "lib/python3."):
        if marker in filename:
            return filename.split(marker, 1)[1] if marker != "lib/python3." else "stdlib/" + filename.split("/")[-1]
    return filename


# ---------------------------------------------------------------------------- report
TOOLS = ["pinlint cold", "pinlint warm", "ruff", "fixit"]


def _ratio(a, b) -> str:
    return f"{a / b:.1f}x" if a and b else "n/a"


def report(results: list, env: dict, prof: dict | None, args) -> str:
    lines = []
    w = lines.append
    w("\n## Results\n")
    w(f"Machine: {env['nproc']} cores ({env['cpu']}), {env['memory_gib']} GiB; {env['python_pinlint']}; "
      f"pinlint {env['pinlint']}, libcst {env['libcst_pinlint']}; fixit {env['fixit']} "
      f"(libcst {env['libcst_fixit']}); {env['ruff']}. pinlint code: {env['pinlint_module']}. Load average at start: "
      f"{', '.join(f'{x:.2f}' for x in env['loadavg_start'])}; at end: "
      f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.\n")
    w(f"Repeats: pinlint cold x{args.repeat}, pinlint warm and ruff x{args.repeat_fast} (median wall shown, "
      f"peak memory the largest), fixit x1.\n")
    w("| corpus | tool | wall s | CPU s | files/s | lines/s | peak tree RSS MiB | largest process MiB | exit |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for res in results:
        for tool in TOOLS:
            run = res.runs.get(tool)
            if run is None:
                w(f"| {res.name} | {tool} | not run | | | | | | |")
                continue
            if run.timed_out:
                w(f"| {res.name} | {tool} | killed at {run.wall_s:.0f} | | | | | | |")
                continue
            w(f"| {res.name} | {tool} | {run.wall_s:.2f} | {run.cpu_s:.2f} | {res.files / run.wall_s:,.0f} | "
              f"{res.lines / run.wall_s:,.0f} | {run.peak_tree_mib:.0f} | {run.peak_single_mib:.0f} | "
              f"{run.exit_code}{'' if run.ok else ' ERROR'} |")
    w("\n| corpus | files | lines | GPU files | fixit / pinlint cold | pinlint cold / warm | pinlint cold / ruff "
      "| warm output = cold output |")
    w("|---|---:|---:|---:|---:|---:|---:|---|")
    for res in results:
        r = {t: (res.runs[t].wall_s if t in res.runs and res.runs[t].ok else None) for t in TOOLS}
        w(f"| {res.name} | {res.files} | {res.lines} | {res.gpu_files} | {_ratio(r['fixit'], r['pinlint cold'])} | "
          f"{_ratio(r['pinlint cold'], r['pinlint warm'])} | {_ratio(r['pinlint cold'], r['ruff'])} | "
          f"{res.warm_matches_cold} |")
    if len(results) >= 2:
        small, large = results[0], results[-1]
        w(f"\nScaling, {small.name} -> {large.name} ({large.files / small.files:.1f}x the files, "
          f"{large.lines / small.lines:.2f}x the lines): time per file in ms, and the time ratio.\n")
        w(f"| tool | ms/file at {small.name} | ms/file at {large.name} | time ratio |")
        w("|---|---:|---:|---:|")
        for tool in TOOLS:
            a, b = small.runs.get(tool), large.runs.get(tool)
            if a is None or b is None or not (a.ok and b.ok):
                w(f"| {tool} | {1000 * a.wall_s / small.files:.2f} | not run | n/a |" if a is not None and a.ok
                  else f"| {tool} | n/a | n/a | n/a |")
                continue
            w(f"| {tool} | {1000 * a.wall_s / small.files:.2f} | {1000 * b.wall_s / large.files:.2f} | "
              f"{b.wall_s / a.wall_s:.2f}x |")
    for res in results:
        for note in res.notes:
            w(f"\nNote ({res.name}): {note}")
    w("\nCommands (each corpus is the working directory):\n")
    seen = set()
    for res in results:
        for tool, runs in res.samples.items():
            for run in runs[:1]:
                cmd = run.command.split(" && ", 1)[1].rstrip(")")
                if (tool, cmd) not in seen:
                    seen.add((tool, cmd))
                    w(f"- {tool}: `{cmd}`" + (" (after `pinlint clean`)" if tool == "pinlint cold" else ""))
    if prof:
        w(f"\nProfile: `{prof['command']}`, total {prof['total_s']:.2f} s profiled.")
    return "\n".join(lines)


def main(argv=None) -> int:
    here = Path(sys.executable).parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000],
                        help="synthetic corpus sizes in files (default: 1000 10000)")
    parser.add_argument("--dir", action="append", default=[], help="benchmark this folder instead (repeatable)")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "pinlint-bench"),
                        help="where corpora, logs and the profile go")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu-fraction", type=float, default=0.2)
    parser.add_argument("--pinlint", default=_default_exe("pinlint", str(here / "pinlint")))
    parser.add_argument("--fixit", default=_default_exe("fixit", "/tmp/bench-venv/bin/fixit"))
    parser.add_argument("--ruff", default=_default_exe("ruff", "/tmp/bench-venv/bin/ruff"))
    parser.add_argument("--tools", default="pinlint,ruff,fixit",
                        help="comma-separated subset of pinlint,ruff,fixit to run (default: all)")
    parser.add_argument("--jobs", type=int, default=0, help="pass --jobs N to pinlint (default: pinlint's own)")
    parser.add_argument("--repeat", type=int, default=1, help="pinlint cold runs per corpus (median)")
    parser.add_argument("--repeat-fast", type=int, default=3, help="pinlint warm and ruff runs per corpus (median)")
    parser.add_argument("--fixit-max-files", type=int, default=1000,
                        help="run fixit only on corpora with at most this many files")
    parser.add_argument("--fixit-timeout", type=float, default=900.0, help="kill fixit after this many seconds")
    parser.add_argument("--profile", action="store_true", help="cProfile one cold --jobs 1 run of the smallest corpus")
    parser.add_argument("--profile-top", type=int, default=10)
    parser.add_argument("--json", help="also write every measurement here")
    args = parser.parse_args(argv)
    args.tools = {t.strip() for t in args.tools.split(",") if t.strip()}

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env = environment(args)
    print("environment: " + json.dumps(env))
    corpora = []
    if args.dir:
        corpora = [(Path(d).name, Path(d).resolve()) for d in args.dir]
    else:
        for size in sorted(args.sizes):
            dest = workdir / f"corpus-{size}"
            start = time.perf_counter()
            manifest = corpus_mod.build(dest, size, args.seed, args.gpu_fraction)
            print(f"built {dest} in {time.perf_counter() - start:.1f} s: {json.dumps(manifest)}", flush=True)
            corpora.append((f"{size:,} files", dest))
    logs = workdir / "logs"
    results = [bench_corpus(name, path, args, logs) for name, path in corpora]
    prof = profile(corpora[0][1], args, logs) if args.profile else None
    text = report(results, env, prof, args)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "environment": env, "corpora": [
                {**{k: v for k, v in asdict(r).items() if k not in ("runs", "samples")},
                 "runs": {t: asdict(x) for t, x in r.runs.items()},
                 "samples": {t: [asdict(x) for x in xs] for t, xs in r.samples.items()}} for r in results],
            "profile": prof, "argv": sys.argv}, indent=2, default=str) + "\n", encoding="utf-8")
    failed = [f"{r.name}: {t}" for r in results for t, x in r.runs.items() if not x.ok and not x.timed_out]
    if failed:
        print("\nerrors (exit codes other than 0 and 1): " + ", ".join(failed), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
