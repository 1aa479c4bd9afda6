"""Fixture discovery, fixed variants, and measuring both in fresh processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from ..engine import fix_text, lint_text
from ..settings import Settings
from . import recorded
from .verdict import ERROR, RACE_RULES, Outcome, Verdict, combined, judge, judge_recorded

_HEADER = re.compile(r"^# pinlint-expect: (?P<codes>none|PIN\d{3}(?:\s*,\s*PIN\d{3})*)\s*$")
METRIC = {"PIN005": "result", "PIN006": "result"}


@dataclass(frozen=True)
class Fixture:
    path: Path
    codes: tuple          # expected codes from the header

    @property
    def library(self) -> str:
        return self.path.name.split("_", 1)[0]

    @property
    def hand_fixed(self) -> Path:
        return self.path.with_name(self.path.name[:-3] + ".fixed.py")


@dataclass
class Row:
    fixture: Fixture
    code: str
    size: Optional[int] = None
    bad: Optional[Outcome] = None
    fixed: Optional[Outcome] = None
    verdict: Verdict = field(default_factory=lambda: Verdict(ERROR, "not run"))
    fixed_by: str = ""    # "autofix" or "hand-written"
    measure: Optional[recorded.Measure] = None  # the recorder's measure of the claim, when it judged it

    def as_dict(self) -> dict:
        return {"recorded": self.measure.as_dict() if self.measure else None,
                "bad_runs": list(self.bad.runs) if self.bad else None,
                "fixed_runs": list(self.fixed.runs) if self.fixed else None,
            "rule": self.code, "fixture": str(self.fixture.path), "size": self.size,
            "metric": "result" if self.code in METRIC else "median run time (ms)",
            "bad_ms": self.bad.median if self.bad else None, "fixed_ms": self.fixed.median if self.fixed else None,
            "bad_spread_ms": self.bad.spread if self.bad else None,
            "fixed_spread_ms": self.fixed.spread if self.fixed else None,
            "processes": self.bad.processes if self.bad else None,
            "bad_process_medians_ms": list(self.bad.process_medians) if self.bad else None,
            "fixed_process_medians_ms": list(self.fixed.process_medians) if self.fixed else None,
            "bad_result": self.bad.result if self.bad else None,
            "fixed_result": self.fixed.result if self.fixed else None,
            "bad_times_ms": list(self.bad.times_ms) if self.bad else None,
            "fixed_times_ms": list(self.fixed.times_ms) if self.fixed else None,
            "ratio": self.verdict.ratio, "verdict": self.verdict.verdict, "detail": self.verdict.detail,
            "fixed_by": self.fixed_by,
        }


def read_header(path: Path) -> Optional[tuple]:
    try:
        first = path.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    match = _HEADER.match(first)
    if match is None:
        return None
    codes = match.group("codes")
    return () if codes == "none" else tuple(c.strip() for c in codes.split(","))


def discover_fixtures(paths: Iterable[str]) -> list:
    """Positive fixtures (header names codes) under the given paths; hand-written fixes are not fixtures."""
    found = []
    for raw in paths:
        root = Path(raw)
        candidates = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for path in candidates:
            if path.name.endswith(".fixed.py"):
                continue
            codes = read_header(path)
            if codes:
                found.append(Fixture(path, codes))
    return found


def fixed_variant(fixture: Fixture, workdir: Path) -> tuple:
    """(path of the fixed program, how it was made) or (None, why not)."""
    if fixture.hand_fixed.is_file():
        return fixture.hand_fixed, "hand-written"
    text = fixture.path.read_text(encoding="utf-8")
    outcome = fix_text(text, fixture.path.name, Settings(), unsafe=True)
    if outcome.error:
        return None, outcome.error
    if outcome.text == text:
        return None, "pinlint has no fix for it and there is no hand-written .fixed.py"
    target = workdir / fixture.path.name
    target.write_text(outcome.text, encoding="utf-8")
    return target, "autofix"


def check_expectations(fixture: Fixture) -> Optional[str]:
    codes = {f.code for f in _findings(fixture)}
    missing = set(fixture.codes) - codes
    return f"pinlint did not report {', '.join(sorted(missing))}" if missing else None


def _findings(fixture: Fixture) -> list:
    return lint_text(fixture.path.read_text(encoding="utf-8"), str(fixture.path), Settings()).findings


def flagged_lines(fixture: Fixture, code: str) -> set:
    """Every row the findings of ``code`` span in the fixture (where the recorder looks)."""
    return {row for f in _findings(fixture) if f.code == code
            for row in range(f.location.row, max(f.end_location.row, f.location.row) + 1)}


def recorder_available() -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec("cupti") is not None
    except (ImportError, ValueError):
        return False


def pooled(fixture: Fixture, code: str) -> bool:
    """Every finding of ``code`` is about a buffer from a pooling allocator."""
    found = [f for f in _findings(fixture) if f.code == code]
    return bool(found) and all(f.pooled for f in found)


def measure(program: Path, size: int, repeats: int, warmup: int, timeout: float, record: bool = False,
            kernels: bool = False) -> Outcome:
    """Run one variant in a fresh interpreter; raises RuntimeError with the reason when it fails.
    With ``record`` the recorder runs in it and each timed run's copies and allocations come back."""
    program = program.resolve()  # the child runs in the program's folder
    command = [sys.executable, "-m", "pinlint.verify.runner", str(program), str(size), str(repeats), str(warmup)]
    command += (["--record"] if record else []) + (["--kernels"] if record and kernels else [])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Its own process group, so a timeout ends everything the fixture started, not only the fixture.
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=str(program.parent), start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        raise RuntimeError(f"timed out after {timeout:.0f} s") from None
    finally:
        _kill_group(child)  # anything it left running
    line = next((l for l in stdout.splitlines() if l.startswith("PINLINT-RESULT ")), None)
    if child.returncode != 0 or line is None:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {child.returncode}: {last[:200]}")
    try:
        data = json.loads(line[len("PINLINT-RESULT "):])
        if record and "recorder_error" in data:
            raise RuntimeError(f"the recorder could not start: {data['recorder_error'][:200]}")
        return Outcome(tuple(float(t) for t in data["times_ms"]), dict(data["result"]),
                       runs=tuple(data.get("runs") or ()))
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"unreadable result line ({type(exc).__name__})") from None


def measure_pair(bad: Path, fixed: Path, size: int, repeats: int, warmup: int, timeout: float,
                 processes: int, record: bool = False, kernels: bool = False) -> tuple:
    """Both variants, each in ``processes`` fresh processes, alternating (bad, fixed, bad, ...), so
    that a slow phase of the machine falls on both and the spread covers process-to-process drift."""
    runs: dict = {bad: [], fixed: []}
    for _ in range(processes):
        for program in (bad, fixed):
            runs[program].append(measure(program, size, repeats, warmup, timeout, record, kernels))
    return combined(runs[bad]), combined(runs[fixed])


def _kill_group(child: subprocess.Popen) -> None:
    import signal
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    if child.poll() is None:
        child.wait()


def library_module(library: str) -> str:
    """The module a fixture's library needs, from the fixture's file-name prefix (the API tables'
    `fixture_prefix` and `probe_module`)."""
    from ..apitables import default_tables
    return default_tables().fixture_prefixes.get(library, library)


def library_available(library: str) -> bool:
    import importlib.util
    module = library_module(library)
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def sizes_of(program: Path, which: str) -> list:
    text = program.read_text(encoding="utf-8")
    match = re.search(r"^SIZES\s*=\s*(\[[^\]]*\])", text, re.M)
    if match is None:
        return []
    try:
        sizes = [_constant(item) for item in match.group(1).strip("[]").split(",") if item.strip()]
    except (ValueError, SyntaxError):  # an unreadable SIZES is reported as an error by the caller
        return []
    if which == "all":
        return sizes
    return [min(sizes)] if which == "min" else [max(sizes)]


def _constant(text: str) -> int:
    """An integer written with literals and + - * // << ** (small operands only): fixture code is
    never evaluated in this process."""
    import ast
    import operator
    operators = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                 ast.FloorDiv: operator.floordiv, ast.LShift: operator.lshift, ast.Pow: operator.pow}

    def value(node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, (ast.LShift, ast.Pow)) and not 0 <= right <= 64:
                raise ValueError("exponent out of range")
            result = operators[type(node.op)](left, right)
            if abs(result) > 1 << 48:
                raise ValueError("size out of range")
            return result
        raise ValueError("not a constant size")

    return value(ast.parse(text.strip(), mode="eval").body)


def verify(fixtures: list, repeats: int = 5, warmup: int = 1, which_sizes: str = "max", timeout: float = 300,
           progress: Callable = lambda row: None, processes: int = 2, record: bool = False) -> list:
    """Every fixture against its fixed variant. Speed claims are timed in ``processes`` fresh
    processes per variant; race claims (wrong data or not) in one. With ``record`` the claims
    the recorder can measure (``recorded.RECORDED``) are judged by what it saw."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="pinlint-verify-") as tmp:
        for fixture in fixtures:
            code = fixture.codes[0]
            row = Row(fixture, code)
            problem = check_expectations(fixture)
            fixed, how = fixed_variant(fixture, Path(tmp))
            sizes = sizes_of(fixture.path, which_sizes)
            if problem is None and fixed is None:
                problem = how
            if problem is None and not sizes:
                problem = "the fixture defines no readable SIZES"
            if problem is None and not library_available(fixture.library):
                problem = f"{library_module(fixture.library)} not installed"
            if problem is not None:
                row.verdict = Verdict(ERROR, problem)
                rows.append(row)
                progress(row)
                continue
            row.fixed_by = how
            for size in sizes:
                row = Row(fixture, code, size, fixed_by=how)
                recording = record and code in recorded.RECORDED
                try:
                    row.bad, row.fixed = measure_pair(fixture.path, fixed, size, repeats, warmup, timeout,
                                                      1 if code in RACE_RULES else processes, recording,
                                                      kernels=code == "PIN004")
                    row.verdict = judge_row(row, code, recording, pooled(fixture, code))
                except RuntimeError as exc:
                    row.verdict = Verdict(ERROR, str(exc))
                rows.append(row)
                progress(row)
    return rows


def judge_row(row: Row, code: str, recording: bool, is_pooled: bool) -> Verdict:
    """By the recorder's measure where it has one; by wall time otherwise (and then says why)."""
    if recording:
        row.measure = recorded.measure(code, row.bad.runs, row.fixed.runs, flagged_lines(row.fixture, code))
        if row.measure is not None:
            return judge_recorded(code, row.bad, row.fixed, row.measure, is_pooled)
    verdict = judge(code, row.bad, row.fixed, is_pooled)
    if recording:
        note = "the recorder saw no copy on the flagged line to judge by; judged by run time"
        verdict = Verdict(verdict.verdict, f"{verdict.detail}; {note}" if verdict.detail else note, verdict.ratio,
                          verdict.refuted)
    return verdict
