"""Fixes: .in.py/.out.py pairs, convergence, parse-ability, locality, encodings, atomic writes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import libcst as cst
import pytest

from pinlint.checks import ALL_RULES
from pinlint import fixes
from pinlint.engine import fix_text, lint_text
from pinlint.fixes import apply_plans, edits_between, source_lines
from pinlint.settings import Settings

from fixture_catalog import fixture_files
from helpers import default_sigint, pinlint_in_process

CASES = Path(__file__).resolve().parent / "fix_cases"
PAIRS = sorted(CASES.glob("*.in.py"))


def _unsafe(text: str) -> bool:
    return text.splitlines()[0].strip() == "# pinlint-fix: unsafe"


def _expected(path: Path) -> str:
    return path.with_name(path.name.replace(".in.py", ".out.py")).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.name)
def test_fix_pair(path):
    text = path.read_text(encoding="utf-8")
    outcome = fix_text(text, path.name, Settings(), _unsafe(text))
    assert outcome.error is None
    assert outcome.text == _expected(path)
    assert outcome.applied >= 1
    assert outcome.result.findings == [], "a fixed file has nothing left to report"


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.name)
def test_second_run_changes_nothing(path):
    expected = _expected(path)
    outcome = fix_text(expected, path.name, Settings(), unsafe=True)
    assert outcome.text == expected and outcome.applied == 0


def test_safe_mode_leaves_unsafe_fixes_alone():
    text = (CASES / "pin006_loop.in.py").read_text(encoding="utf-8")
    outcome = fix_text(text, "t.py", Settings(), unsafe=False)
    assert outcome.text == text
    assert [f.code for f in outcome.result.findings] == ["PIN006"]
    assert outcome.result.findings[0].fix.applicability == "unsafe"


_PER_COPY = """
import numpy as np
{imports}


def run(frames, d_in, stream, n):
    {setup}
    for f in frames:
        h = np.empty(f.size, dtype=np.float32)
        h[:] = f.ravel()
        {copy}
        stream.synchronize()
"""


@pytest.mark.parametrize("imports, setup, copy", [
    ("import pycuda.autoinit\nimport pycuda.driver as drv", "pass", "drv.memcpy_htod_async(d_in, h, stream)"),
    ("from numba import cuda", "stream = cuda.stream()", "cuda.to_device(h, stream=stream)"),
    ("import cupy as cp\nimport cupyx", "stream = cp.cuda.Stream(non_blocking=True); d_in = cp.empty(n)",
     "d_in.set(h, stream=stream)"),
])
def test_a_buffer_allocated_anew_for_each_copy_gets_no_pinning_fix(imports, setup, copy):
    """PIN001's fix of an allocation in the loop that copies it (survey 57 GA: the fix pinned a frame
    buffer made per batch) would make a pinned allocation per iteration, PIN002's finding (and a raw
    twin page-locks new memory for each copy): none is offered, even unsafe."""
    text = _PER_COPY.format(imports=imports, setup=setup, copy=copy)
    settings = Settings(pin001_min_bytes=0)
    assert [f.code for f in lint_text(text, "t.py", settings).findings] == ["PIN001"]
    assert fix_text(text, "t.py", settings, unsafe=True).text == text
    hoisted = text.replace("    for f in frames:\n        h = np.empty(f.size, dtype=np.float32)",
                           "    h = np.empty(n, dtype=np.float32)\n    for f in frames:")
    assert fix_text(hoisted, "t.py", settings, unsafe=True).text != hoisted  # made once: pinned by the fix


# ------------------------------------------------------------------ properties over every known program
def _programs():
    for path in fixture_files():
        yield path.name, path.read_text(encoding="utf-8")
    for path in PAIRS:
        yield path.name, path.read_text(encoding="utf-8")
    for rule in ALL_RULES:
        for index, source in enumerate(rule.INVALID):
            yield f"{rule.code}-invalid-{index}", source


PROGRAMS = list(_programs())


@pytest.mark.parametrize("name, text", PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_fixing_twice_equals_fixing_once_and_parses(name, text):
    once = fix_text(text, name, Settings(), unsafe=True)
    assert once.error is None
    cst.parse_module(once.text)
    compile(once.text, name, "exec")
    twice = fix_text(once.text, name, Settings(), unsafe=True)
    assert twice.text == once.text


def _rows(node_span) -> set:
    (start, _), (end, _) = node_span
    return set(range(start, end + 1))


@pytest.mark.parametrize("name, text", PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_each_fix_only_touches_its_own_nodes_and_imports(name, text):
    result = lint_text(text, name, Settings())
    module = result.module
    if module is None:
        return
    import_rows = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], (cst.Import, cst.ImportFrom)):
            import_rows |= _rows(result.span(statement))
    last_import = max(import_rows, default=0)
    for finding in result.findings:
        plan = finding.plan
        if plan is None:
            continue
        allowed = set(range(1, last_import + 2))  # added imports go with the imports
        for node in plan.targets():
            allowed |= _rows(result.span(node))
        fixed = apply_plans(module, [plan])
        for edit in finding.fix.edits:
            touched = set(range(edit.location.row, max(edit.end_location.row, edit.location.row + 1)))
            assert touched <= allowed, (finding.code, edit, sorted(allowed))
        # Applying the finding's edits to the original text gives exactly the plan's result.
        assert _apply_edits(text, finding.fix.edits) == fixed


def _apply_edits(text: str, edits) -> str:
    lines = source_lines(text)
    for edit in sorted(edits, key=lambda e: e.location.row, reverse=True):
        lines[edit.location.row - 1:edit.end_location.row - 1] = [edit.content]
    return "".join(lines)


# ------------------------------------------------------------------ the command line on real files
def _pinlint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # In this process: what these tests check is the written file and the report, not the process
    # (the tests further down that stop, kill and race fix runs have processes of their own).
    return pinlint_in_process(cwd, *args)


def test_fix_keeps_crlf_bom_and_mode(tmp_path):
    source = (CASES / "cupy_set_async.in.py").read_text(encoding="utf-8")
    expected = _expected(CASES / "cupy_set_async.in.py")
    target = tmp_path / "crlf.py"
    target.write_bytes(b"\xef\xbb\xbf" + source.replace("\n", "\r\n").encode("utf-8"))
    os.chmod(target, 0o640)
    done = _pinlint(tmp_path, "fix", "crlf.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 fixed, 0 remaining" in done.stdout
    assert target.read_bytes() == b"\xef\xbb\xbf" + expected.replace("\n", "\r\n").encode("utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pinlint-")]


def test_fix_keeps_a_latin1_coding_cookie(tmp_path):
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + (CASES / "cupy_set_async.in.py").read_text(encoding="utf-8")
    target = tmp_path / "latin.py"
    target.write_bytes(source.encode("latin-1"))
    assert _pinlint(tmp_path, "check", "--fix", "latin.py").returncode == 0
    fixed = target.read_bytes().decode("latin-1")
    assert "caf\xe9" in fixed and "cupyx.empty_pinned" in fixed


def test_diff_prints_and_changes_nothing(tmp_path):
    target = tmp_path / "a.py"
    target.write_text((CASES / "cupy_set_async.in.py").read_text(encoding="utf-8"), encoding="utf-8")
    before = target.read_bytes()
    done = _pinlint(tmp_path, "check", "--diff", "a.py")
    assert done.returncode == 1
    assert "+h = cupyx.empty_pinned(n, dtype=np.float32)" in done.stdout and "+import cupyx" in done.stdout
    assert target.read_bytes() == before
    clean = _pinlint(tmp_path, "check", "--diff", str(CASES / "cupy_set_async.out.py"))
    assert clean.returncode == 0 and clean.stdout == ""


def test_unsafe_fixes_need_the_flag(tmp_path):
    target = tmp_path / "race.py"
    target.write_text((CASES / "pin006_loop.in.py").read_text(encoding="utf-8"), encoding="utf-8")
    safe_only = _pinlint(tmp_path, "fix", "race.py")
    assert safe_only.returncode == 1 and "hidden fix can be enabled with the `--unsafe-fixes` option" in safe_only.stdout
    assert _pinlint(tmp_path, "fix", "--unsafe-fixes", "race.py").returncode == 0
    assert target.read_text(encoding="utf-8") == _expected(CASES / "pin006_loop.in.py")


def test_json_fix_object_names_applicability(tmp_path):
    import json
    target = tmp_path / "race.py"
    target.write_text((CASES / "pin006_loop.in.py").read_text(encoding="utf-8"), encoding="utf-8")
    [finding] = json.loads(_pinlint(tmp_path, "check", "--format", "json", "race.py").stdout)
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"][0]["content"].strip() == "s.synchronize()"


# ------------------------------------------------------------------ never half-written
def test_failed_write_leaves_the_original(tmp_path, monkeypatch):
    from pinlint.runner import FIX, Job, process

    target = tmp_path / "a.py"
    original = (CASES / "cupy_set_async.in.py").read_bytes()
    target.write_bytes(original)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    result = process(Job(str(target), "a.py", Settings(), FIX))
    assert len(result.errors) == 1 and "could not write" in result.errors[0] and "No space left" in result.errors[0]
    assert target.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"], "the temporary file is cleaned up"
    assert [f.code for f in result.findings] == ["PIN001"]


def test_read_only_file_is_left_intact(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    target = tmp_path / "a.py"
    target.write_bytes((CASES / "cupy_set_async.in.py").read_bytes())
    os.chmod(tmp_path, 0o555)
    try:
        done = _pinlint(tmp_path, "fix", "a.py")
    finally:
        os.chmod(tmp_path, 0o755)
    assert done.returncode == 2 and "could not write" in done.stderr


def _names_seen_while_syncing(monkeypatch, folder) -> list:
    """The folder's entries at each fsync of a write, the moment a SIGKILL would most likely land."""
    seen = []
    real_fsync = os.fsync

    def fsync(fd):
        seen.append(sorted(p.name for p in folder.iterdir()))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _has_unnamed_files() -> bool:
    fd = fixes._unnamed_file(Path(__file__).parent)
    if fd is not None:
        os.close(fd)
    return fd is not None


@pytest.mark.skipif(not _has_unnamed_files(), reason="no O_TMPFILE on this platform or file system")
def test_new_content_has_no_name_until_the_replace(tmp_path, monkeypatch):
    # CI, stop 31: a fix run killed with SIGKILL during a write left `.pinlint-*.tmp` in the user's tree
    target = tmp_path / "a.py"
    target.write_text("x = 1\n", encoding="utf-8")
    os.chmod(target, 0o640)
    seen = _names_seen_while_syncing(monkeypatch, tmp_path)
    fixes.write_atomically(target, b"x = 2\n", expected=b"x = 1\n")
    assert seen == [["a.py"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    assert target.read_bytes() == b"x = 2\n" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_write_without_unnamed_files_still_replaces_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(fixes, "_unnamed_file", lambda folder: None)  # e.g. macOS, or a file system without it
    target = tmp_path / "a.py"
    target.write_text("x = 1\n", encoding="utf-8")
    seen = _names_seen_while_syncing(monkeypatch, tmp_path)
    fixes.write_atomically(target, b"x = 2\n", expected=b"x = 1\n")
    assert len(seen) == 1 and len(seen[0]) == 2  # a named temporary beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    assert target.read_bytes() == b"x = 2\n"


def test_write_that_finds_the_fix_already_there_leaves_nothing(tmp_path):
    target = tmp_path / "a.py"
    target.write_text("x = 2\n", encoding="utf-8")
    fixes.write_atomically(target, b"x = 2\n", expected=b"x = 1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


_PADDING = ("#" * 100 + "\n") * 2_000  # large writes, so that a write cut short would show


def _fix_tree(tmp_path, count=400) -> tuple:
    """(tree, original text, fixed text): ``count`` copies of a fixable file."""
    original = (CASES / "cupy_set_async.in.py").read_text(encoding="utf-8") + _PADDING
    fixed = _expected(CASES / "cupy_set_async.in.py") + _PADDING
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(count):
        (tree / f"m{index:03d}.py").write_text(original, encoding="utf-8")
    return tree, original, fixed


def _start_fix_run(tmp_path, tree, *args) -> subprocess.Popen:
    """`pinlint fix tree` with two workers, in its own process group; returns once files are being fixed."""
    process = subprocess.Popen([sys.executable, "-m", "pinlint", "fix", "--jobs", "2", *args, "tree"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=default_sigint)
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until some files are fixed
        time.sleep(0.05)
        if sum(1 for p in tree.glob("*.py") if "cupyx" in p.read_text(encoding="utf-8")) >= 5:
            break
    return process


def _alive_in_group(group: int) -> list:
    """Processes of a process group that still run (zombies waiting for a reaper do not)."""
    alive = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(stat_file.parent.name))
    return alive


def _snapshot(tree) -> dict:
    return {p.name: p.read_bytes() for p in tree.iterdir()}


def _assert_stopped(tree, group, original, fixed) -> None:
    """Within a few seconds no process of the run is left; after that no file changes, every file
    is its old or its new text, and no temporary file is left."""
    deadline = time.time() + 10
    while _alive_in_group(group) and time.time() < deadline:
        time.sleep(0.05)
    assert _alive_in_group(group) == [], "a process of the stopped run survived it"
    before = _snapshot(tree)
    time.sleep(1.0)
    assert _snapshot(tree) == before, "files changed after the run was stopped"
    states = {"old": 0, "new": 0}
    for name, content in before.items():
        assert name.endswith(".py"), f"{name} left behind"
        text = content.decode("utf-8")
        assert text in (original, fixed), f"{name} is neither old nor new"
        states["old" if text == original else "new"] += 1
    assert states["new"] >= 5 and states["old"] >= 1, states


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_killed_fix_run_leaves_every_file_old_or_new(tmp_path):
    tree, original, fixed = _fix_tree(tmp_path)
    process = _start_fix_run(tmp_path, tree)
    os.killpg(process.pid, signal.SIGKILL)  # the whole process group, without warning
    process.wait()
    _assert_stopped(tree, process.pid, original, fixed)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_workers_die_with_a_killed_parent(tmp_path):
    # Issue 14: after SIGKILL of the parent alone, both workers lived on (parent 1) and kept fixing files.
    tree, original, fixed = _fix_tree(tmp_path)
    process = _start_fix_run(tmp_path, tree)
    process.send_signal(signal.SIGKILL)
    process.wait()
    _assert_stopped(tree, process.pid, original, fixed)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_run_stops_its_workers_cleanly(tmp_path, signum):
    tree, original, fixed = _fix_tree(tmp_path)
    process = _start_fix_run(tmp_path, tree)
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=60)
    finally:  # a run that did not stop must not outlive the test
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 2
    assert err.decode().strip().splitlines() == ["pinlint: error: interrupted"]
    _assert_stopped(tree, process.pid, original, fixed)


# ------------------------------------------------------------------ edits as ruff's JSON shows them
EDIT_CASES = {
    "form-feed-and-separators": ("a = 1\nb = '\x0c\u2028'\nc = 3\n", "a = 1\nb = '\x0c\u2028'\nc = 4\n"),
    "lone-cr": ("a\rb\rc\r", "a\rB\rc\r"),
    "crlf-and-no-final-newline": ("a\r\nb\r\nc", "import x\r\na\r\nb\r\nC"),
    "insert-at-end": ("a\n", "a\nb\n"),
    "delete-all": ("a\nb\n", ""),
    "from-empty": ("", "a\n"),
    "repeated-lines": ("import numpy as np\n" + "x = 1\n" * 20_000 + "h = np.zeros(4)\n",
                       "import cupyx\nimport numpy as np\n" + "x = 1\n" * 20_000 + "h = cupyx.zeros_pinned(4)\n"),
    "repeated-lines-changed-inside": ("y = 0\n" * 3000 + "a\n" + "y = 0\n" * 3000,
                                      "y = 0\n" * 3000 + "b\n" + "y = 0\n" * 3000),
}


@pytest.mark.parametrize("name", sorted(EDIT_CASES))
def test_edits_rebuild_the_new_text(name):
    old, new = EDIT_CASES[name]
    edits = edits_between(old, new)
    assert _apply_edits(old, edits) == new
    assert all(e.location.row <= len(source_lines(old)) + 1 for e in edits)


def test_edit_rows_are_pythons_rows():
    old, new = EDIT_CASES["form-feed-and-separators"]
    (edit,) = edits_between(old, new)
    assert (edit.location.row, edit.end_location.row, edit.content) == (3, 4, "c = 4\n")


def test_edits_for_a_long_file_of_repeated_lines_stay_small():
    # One edit per changed place, not one that rewrites the 20,000 lines between them.
    old, new = EDIT_CASES["repeated-lines"]
    edits = edits_between(old, new)
    assert [(e.location.row, e.end_location.row) for e in edits] == [(1, 1), (20_002, 20_003)]
    old, new = EDIT_CASES["repeated-lines-changed-inside"]
    assert [(e.location.row, e.content) for e in edits_between(old, new)] == [(3001, "b\n")]


# ------------------------------------------------------------------ a finding's edits, made cheaply
def _plans_of(text: str, name: str) -> tuple:
    result = lint_text(text, name, Settings(select=frozenset(r.code for r in ALL_RULES), render_fixes=False))
    return result.module, [f.plan for f in result.findings if f.plan is not None]


def test_a_findings_edits_are_those_of_its_fix_applied_alone_on_every_fixture():
    """`plan_edits` makes a top-of-module import's edits once per file and joins them with each
    plan's own, and with the module's locator makes the plan's own on the statements it touches: on
    every fixture and fix case with a fix it gives exactly the edits of the plan applied alone."""
    from pinlint.fixes import _local_edits, plan_edits
    from pinlint.positions import Locator

    compared = with_import = local = 0
    for path in [*fixture_files(), *PAIRS]:
        text = path.read_text(encoding="utf-8")
        module, plans = _plans_of(text, path.name)
        memo: dict = {}
        local_memo: dict = {}
        locator = Locator(module, text)
        for plan in plans:
            expected = edits_between(text, apply_plans(module, [plan]))
            assert plan_edits(module, text, plan, memo) == expected, (path, plan.message)
            # Made on the top-level statements the plan touches, written out alone: the same edits.
            assert plan_edits(module, text, plan, local_memo, locator) == expected, (path, plan.message)
            local += _local_edits(plan, locator) is not None
            compared += 1
        with_import += bool(memo)
    assert compared > 20 and with_import > 3  # the shortcut was exercised, not just the plain path
    assert local == compared  # and every plan's own edits were made on its statements alone


def test_a_fix_next_to_the_import_it_adds_falls_back_to_one_whole_apply():
    """Where a plan's own lines meet the added import's, one diff would join them: the edits are
    then made from the plan applied whole, so they still equal its edits alone."""
    from pinlint.fixes import plan_edits
    from pinlint.positions import Locator

    text = "import cupy\nimport numpy\nh = numpy.zeros(1 << 22)\ncupy.asarray(h).set(h, stream=cupy.cuda.Stream())\n"
    module, plans = _plans_of(text, "t.py")
    assert plans
    for plan in plans:
        assert plan_edits(module, text, plan, {}) == edits_between(text, apply_plans(module, [plan]))
        assert plan_edits(module, text, plan, {}, Locator(module, text)) == edits_between(text, apply_plans(module, [plan]))


@pytest.mark.parametrize("end", ["\n", ""])
def test_an_import_a_fix_adds_is_made_on_the_modules_leading_imports(end):
    """The import codemod is given the statements up to the last top-level import (on a long file it
    resolved metadata over all of it once per run: 45 s at 20,000 lines): the same edits as the
    whole module gives, with or without a newline at the end of the file."""
    from pinlint.fixes import _import_head, plan_edits
    from pinlint.positions import Locator

    text = ("import numpy as np\nimport cupy as cp\n\n\ndef f(n, s):\n    h = np.empty(n)\n"
            "    d = cp.empty(n)\n    d.set(h, stream=s)\n\n\nx = 1" + end)
    module, plans = _plans_of(text, "t.py")
    head = _import_head(module)
    assert head is not module and text.startswith(head.code) and len(head.body) == 2
    assert any(plan.imports for plan in plans)
    for plan in plans:
        assert plan_edits(module, text, plan, {}, Locator(module, text)) == edits_between(text, apply_plans(module, [plan]))
