"""The long fuzz run: pinlint on many generated, mutated and (optionally) hypothesmith programs.

    python bench/fuzz.py [COUNT] [SEED] [--mode mixed|generate|mutate|hypothesmith] [--jobs N]
                         [--save DIR] [--no-cli] [--timeout S]

COUNT programs (default 2000), SEED (default 0), with LF (80%), CRLF (15%) and lone CR (5%) line
endings. ``mixed`` (the default) takes 45% programs generated from the API tables, 45% mutants of
the bundled fixtures, fix cases and rule examples, and 10% hypothesmith programs (plain, then with
API calls spliced in) when hypothesmith is installed (otherwise the share goes to the other two).
Every program goes through
``tests/fuzzing.check_program``: linting never raises nor reports an internal error; a program that
compiles is never PIN000; safe and unsafe fixing never raises, its text parses and compiles,
fixing the fixed text changes nothing, and no line that no finding points at changes. Then the real
command line runs on a folder of the first programs (``pinlint check --no-cache`` and
``pinlint fix --unsafe-fixes``): exit code 0 or 1, no traceback, every fixed file parses.

Program i of a mode depends only on (SEED, i), whatever --jobs is: a failure is reproduced with
``python -c "import fuzzing; print(fuzzing.program_at('generate', SEED, i)[1])"``
from tests/,
or saved with --save DIR (one file per failing program, with the problem as a header comment).
Each program runs under a per-program alarm (--timeout, default 120 s; a timeout is a ``hang``);
a worker process that dies (a segfault in a native parser) is a ``crash`` of the program it ran.

Prints: programs fuzzed, the share with findings and with fixes applied, findings per code,
crashes, internal errors, spurious PIN000s, valid programs left unchecked (skipped with a
warning), unparsable fixes, non-converging fixes, non-local edits, unbound names, new load-time
imports, broken noqa comments, hangs and slow programs, and
the seconds taken. Exits 1 when any problem was found.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import fuzzing  # noqa: E402 - after the path above

HANG = "hang"
PROBLEM_ORDER = [fuzzing.CRASH, fuzzing.INTERNAL, fuzzing.SPURIOUS_PIN000, fuzzing.UNCHECKED, fuzzing.UNPARSABLE,
                 fuzzing.NON_CONVERGING, fuzzing.NON_LOCAL, fuzzing.UNBOUND, fuzzing.NEW_IMPORT, fuzzing.BROKEN_NOQA,
                 HANG, fuzzing.SLOW]


class _Alarm(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Alarm()


def _have_hypothesmith() -> bool:
    try:
        import hypothesmith  # noqa: F401
    except ImportError:
        return False
    return True


def plan(count: int, seed: int, mode: str) -> list:
    """(kind, index) of every program, in a fixed order."""
    if mode != "mixed":
        return [(mode, index) for index in range(count)]
    hypo = count // 10 if _have_hypothesmith() else 0
    generate = (count - hypo + 1) // 2
    mutate = count - hypo - generate
    items = [("generate", i) for i in range(generate)] + [("mutate", i) for i in range(mutate)]
    random.Random(seed).shuffle(items)
    return items + [("hypothesmith", i) for i in range(hypo)]


def program(kind: str, seed: int, index: int, corpus=None) -> tuple:
    """Program ``index`` of a stream, with every line ending style (LF 80%, CRLF 15%, lone CR 5%)."""
    if kind == "generate":
        return fuzzing.generated_one(seed, index)
    return fuzzing.mutant_one(seed, index, corpus)


_CORPUS = None


def run_one(item: tuple) -> dict:
    """Check one program (in a worker); returns a picklable summary."""
    global _CORPUS
    kind, seed, index, timeout = item
    if kind == "mutate" and _CORPUS is None:
        _CORPUS = fuzzing.seed_corpus()
    name, text = program(kind, seed, index, _CORPUS)
    return _check(name, text, kind, index, timeout)


def _check(name: str, text: str, kind: str, index: int, timeout: float) -> dict:
    summary = {"kind": kind, "index": index, "name": name, "valid": fuzzing._compiles(text), "findings": 0,
               "fixed": False, "codes": [], "problems": [], "seconds": 0.0, "newline": _newline(text)}
    if not summary["valid"]:
        return summary  # the generator's mistake, not pinlint's: counted apart
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    started = time.perf_counter()
    try:
        checked = fuzzing.check_program(text, name, slow_seconds=timeout / 2)
    except _Alarm:
        summary["problems"].append((HANG, f"no result after {timeout:.0f} s"))
        summary["text"] = text
        return summary
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        summary["seconds"] = time.perf_counter() - started
    summary.update(findings=checked.findings, fixed=bool(checked.fixed_lines), codes=sorted(checked.codes),
                   problems=[(p.kind, p.detail) for p in checked.problems])
    if summary["problems"]:
        summary["text"] = text  # failures are rare: keep the program itself, to save and reproduce
    return summary


def _newline(text: str) -> str:
    if "\r\n" in text:
        return "CRLF"
    return "CR" if "\r" in text else "LF"


def run_hypothesmith(count: int, seed: int, timeout: float) -> list:
    """hypothesmith programs, each checked as written and with API fragments spliced into it."""
    import hypothesmith
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    summaries: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=max(1, count), database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(source=hypothesmith.from_grammar())
    def body(source: str) -> None:
        index = len(summaries)
        if index >= count:
            return
        summaries.append(_check(f"hypothesmith-{seed}-{index}.py", source, "hypothesmith", index, timeout))
        rng = random.Random(f"{seed}:hypothesmith:{index}")
        try:
            spliced = fuzzing.mutate(rng, source, fuzzing.ProgramGenerator(rng), rounds=3)
        except Exception:  # noqa: BLE001 - libcst may not take what CPython takes: the program stays plain
            return
        if spliced != source:
            summaries[-1]["spliced"] = _check(f"hypothesmith-spliced-{seed}-{index}.py", spliced, "hypothesmith",
                                              index, timeout)

    body()
    out = []
    for summary in summaries[:count]:
        spliced = summary.pop("spliced", None)
        out.append(summary)
        if spliced is not None:
            out.append(spliced)
    return out


def run_all(items: list, seed: int, jobs: int, timeout: float) -> list:
    work = [(kind, seed, index, timeout) for kind, index in items if kind != "hypothesmith"]
    results: list = []
    if jobs <= 1:
        return [run_one(item) for item in work]
    chunk = jobs * 8
    for start in range(0, len(work), chunk):
        batch = work[start:start + chunk]
        try:
            with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
                results.extend(pool.map(run_one, batch))
        except BrokenProcessPool:
            # A worker died (a segfault): run the batch one program per process to find which.
            for item in batch:
                try:
                    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
                        results.append(pool.submit(run_one, item).result())
                except BrokenProcessPool:
                    kind, _, index, _ = item
                    results.append({"kind": kind, "index": index, "name": f"{kind}-{seed}-{index}", "valid": True,
                                    "findings": 0, "fixed": False, "codes": [], "seconds": 0.0, "newline": "?",
                                    "problems": [(fuzzing.CRASH, "the process checking it died (signal)")]})
        done = len(results)
        if done % (chunk * 10) < chunk:
            print(f"  ... {done} of {len(work)} programs", file=sys.stderr, flush=True)
    return results


def run_cli(items: list, seed: int, limit: int) -> dict:
    """The real command line over a folder of fuzzed programs: check, then fix."""
    corpus = fuzzing.seed_corpus()
    with tempfile.TemporaryDirectory(prefix="pinlint-fuzz-") as tmp:
        folder = Path(tmp) / "programs"
        folder.mkdir()
        written = 0
        for kind, index in items:
            if kind == "hypothesmith" or written >= limit:
                continue
            name, text = program(kind, seed, index, corpus)
            if fuzzing._compiles(text):
                (folder / f"p{written:05d}.py").write_bytes(text.encode("utf-8"))
                written += 1
        out = {"files": written, "problems": []}
        for args in (["check", "--no-cache", "programs"], ["fix", "--unsafe-fixes", "programs"]):
            done = subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=tmp, capture_output=True,
                                  text=True, timeout=3600)
            out[args[0] + "_exit"] = done.returncode
            if done.returncode not in (0, 1):
                out["problems"].append((fuzzing.CRASH, f"pinlint {' '.join(args)} exited {done.returncode}: "
                                                       f"{done.stderr.strip()[-500:]}"))
            if "Traceback" in done.stdout + done.stderr:
                out["problems"].append((fuzzing.CRASH, f"pinlint {' '.join(args)} printed a traceback"))
        for path in sorted(folder.glob("*.py")):
            if not fuzzing._compiles(path.read_bytes().decode("utf-8")):
                out["problems"].append((fuzzing.UNPARSABLE, f"{path.name} does not compile after `pinlint fix`"))
        return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("count", type=int, nargs="?", default=2000, help="programs to fuzz (default 2000)")
    parser.add_argument("seed", type=int, nargs="?", default=0, help="seed (default 0)")
    parser.add_argument("--mode", choices=["mixed", "generate", "mutate", "hypothesmith"], default="mixed")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="worker processes")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per program before it is a hang")
    parser.add_argument("--save", metavar="DIR", help="write every failing program into DIR")
    parser.add_argument("--no-cli", action="store_true", help="skip the command-line run over a folder")
    parser.add_argument("--cli-files", type=int, default=300, help="programs in the command-line run")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=SyntaxWarning)  # odd but valid programs, compiled to check them

    if args.mode == "hypothesmith" and not _have_hypothesmith():
        print("hypothesmith is not installed: pip install hypothesmith", file=sys.stderr)
        return 2
    started = time.perf_counter()
    items = plan(args.count, args.seed, args.mode)
    hypo = sum(1 for kind, _ in items if kind == "hypothesmith")
    results = run_all(items, args.seed, args.jobs, args.timeout)
    if hypo:
        results += run_hypothesmith(hypo, args.seed, args.timeout)
    cli = None if args.no_cli else run_cli(items, args.seed, args.cli_files)
    seconds = time.perf_counter() - started

    valid = [r for r in results if r["valid"]]
    by_kind = collections.Counter(r["kind"] for r in valid)
    with_findings = sum(1 for r in valid if r["findings"])
    fixed = sum(1 for r in valid if r["fixed"])
    codes = collections.Counter(code for r in valid for code in r["codes"])
    problems = collections.Counter(kind for r in valid for kind, _ in r["problems"])
    failing = [r for r in valid if r["problems"]]
    if cli:
        problems.update(kind for kind, _ in cli["problems"])

    share = lambda part: f"{100.0 * part / max(1, len(valid)):.1f}%"  # noqa: E731
    print(f"pinlint fuzz: seed {args.seed}, mode {args.mode}, {args.jobs} worker(s)")
    print(f"programs fuzzed: {len(valid)} ({', '.join(f'{k} {v}' for k, v in sorted(by_kind.items()))}"
          + ("; hypothesmith counts each program as written and with API calls spliced in" if by_kind.get("hypothesmith")
             else "") + ")"
          + (f"; {len(results) - len(valid)} generated programs did not compile and were skipped"
             if len(results) != len(valid) else ""))
    print(f"with findings: {with_findings} ({share(with_findings)}); with fixes applied: {fixed} ({share(fixed)})")
    print("programs with each code: " + (", ".join(f"{c} {n}" for c, n in sorted(codes.items())) or "none"))
    for kind in PROBLEM_ORDER:
        print(f"{kind}: {problems.get(kind, 0)}")
    endings = collections.Counter(r["newline"] for r in valid)
    failing_endings = collections.Counter(r["newline"] for r in failing)
    print("line endings (programs / with a problem): " + ", ".join(
        f"{e} {endings[e]} / {failing_endings.get(e, 0)}" for e in ("LF", "CRLF", "CR") if e in endings))
    if cli:
        print(f"command line on {cli['files']} programs: check exit {cli['check_exit']}, "
              f"fix --unsafe-fixes exit {cli['fix_exit']}, {len(cli['problems'])} problem(s)")
    print(f"seconds: {seconds:.1f}")

    for r in failing[:20]:
        for kind, detail in r["problems"]:
            how = (f"fuzzing.program_at({r['kind']!r}, {args.seed}, {r['index']})"
                   if r["kind"] != "hypothesmith"
                   else "hypothesmith: use --save DIR")
            print(f"\n--- {kind}: {r['name']} (reproduce: {how})")
            print(detail[:3000])
    if cli:
        for kind, detail in cli["problems"]:
            print(f"\n--- {kind} (command line): {detail}")
    if args.save and failing:
        target = Path(args.save)
        target.mkdir(parents=True, exist_ok=True)
        for r in failing:
            name, text = r["name"], r.get("text", "")
            header = "".join(f"# {kind}: {detail.splitlines()[0] if detail else ''}\n" for kind, detail in r["problems"])
            (target / (Path(name).stem + ".py")).write_text(header + text, encoding="utf-8")
        print(f"\nfailing programs written to {target}/")
    return 1 if sum(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
