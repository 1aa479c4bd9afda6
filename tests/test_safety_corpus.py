"""Issue 14's "done means": every script and notebook of ``tests/safety_corpus/`` through the real
command line with ``--fix``, ``--fix --unsafe-fixes`` and ``--add-noqa``. Every written file
compiles, binds every name it uses (``symtable``), imports nothing new at load time, keeps its
string values; notebooks keep every cell's code (IPython lines included) and give no PIN000; bad
notebook JSON and bad configuration give their one-line messages.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pinlint import notebooks
from pinlint.settings import Settings

import safety_props
from helpers import run_in_process, write

CORPUS = Path(__file__).resolve().parent / "safety_corpus"
SCRIPTS = sorted(CORPUS.glob("*.py"))
NOTEBOOKS = sorted(CORPUS.glob("*.ipynb"))
MODES = {"fix": ("--fix",), "unsafe": ("--fix", "--unsafe-fixes"), "add-noqa": ("--add-noqa",)}


def _run(tmp_path, monkeypatch, capsys, original: Path, mode: str) -> tuple:
    target = tmp_path / original.name
    shutil.copyfile(original, target)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", *MODES[mode],
                                    original.name)
    return code, out, err, target


def _sources(notebook: dict) -> list:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in notebook["cells"]]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_scripts_stay_working_programs(tmp_path, monkeypatch, capsys, path, mode):
    old = path.read_text(encoding="utf-8")
    code, out, err, target = _run(tmp_path, monkeypatch, capsys, path, mode)
    assert code in (0, 1) and err == "", err
    new = target.read_text(encoding="utf-8")
    assert safety_props.broken(old, new) == []
    assert safety_props.unbound_names(new) == set()
    if mode == "add-noqa":
        assert safety_props.string_values(new) == safety_props.string_values(old)
        code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", target.name)
        assert code == 0, f"the added comments do not suppress:\n{out}"


def test_the_corpus_exercises_fixes():
    """Most scripts are changed by `--fix` (a corpus that fixes nothing would prove nothing)."""
    from pinlint.engine import fix_text
    changed = [p.name for p in SCRIPTS if fix_text(p.read_text(encoding="utf-8"), p.name, Settings(),
                                                   True).text != p.read_text(encoding="utf-8")]
    assert len(changed) >= len(SCRIPTS) - 1, changed  # shadowed_name.py must stay as it is


def _ipython_lines(source: str) -> list:
    return [line for line in source.split("\n") if line.lstrip()[:1] in ("%", "!") or "= !" in line
            or line.rstrip().endswith("?") and not line.lstrip().startswith(("doc", "#"))]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_keep_every_cell(tmp_path, monkeypatch, capsys, path, mode):
    old = json.loads(path.read_text(encoding="utf-8"))
    code, out, err, target = _run(tmp_path, monkeypatch, capsys, path, mode)
    assert code in (0, 1) and err == "", err
    assert "PIN000" not in out
    new = json.loads(target.read_text(encoding="utf-8"))
    assert len(new["cells"]) == len(old["cells"])
    for before, after, old_text, new_text in zip(old["cells"], new["cells"], _sources(old), _sources(new)):
        assert {k: v for k, v in before.items() if k != "source"} == {k: v for k, v in after.items() if k != "source"}
        if before["cell_type"] != "code":
            assert after == before
            continue
        assert new_text.strip() or not old_text.strip(), "a cell was emptied"
        for line in _ipython_lines(old_text):
            assert line in new_text.split("\n"), f"IPython line {line!r} lost"
        # Lines the fix did not mean to touch are still there, in order (`--add-noqa` only appends
        # its comment to them).
        kept = [line for line in old_text.split("\n") if "np.empty(" not in line and "empty_pinned(" not in line]
        written = new_text.split("\n")
        if mode == "add-noqa":
            written = [re.sub(r"  # noqa: [A-Z0-9, ]+$", "", line) for line in written]
        remaining = iter(written)
        assert all(line in remaining for line in kept), (old_text, new_text)
    program = notebooks.to_program(new)
    assert safety_props.compiles(program.text)
    assert safety_props.broken(notebooks.to_program(old).text, program.text) == []
    lint = notebooks.check_notebook(target.read_bytes(), target.name, Settings())
    assert [f.code for f in lint.findings if f.code == "PIN000"] == []


@pytest.mark.parametrize("path", sorted((CORPUS / "bad_notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_bad_notebook_json_gives_its_one_line_pin000(tmp_path, monkeypatch, capsys, path):
    for mode in sorted(MODES):
        code, out, err, target = _run(tmp_path, monkeypatch, capsys, path, mode)
        assert err == "" and target.read_bytes() == path.read_bytes()
        if mode != "add-noqa":
            [line] = [line for line in out.splitlines() if "PIN000" in line]
            assert line.startswith(f"{path.name}:1:1: PIN000 Notebook ") and code == 1


@pytest.mark.parametrize("body", ["tool = 1\n", '[tool]\npinlint = "x"\n', "[tool.pinlint]\nselect = 3\n"])
def test_bad_configuration_gives_its_one_line_message(tmp_path, monkeypatch, capsys, body):
    write(tmp_path, "pyproject.toml", body)
    shutil.copyfile(SCRIPTS[0], tmp_path / SCRIPTS[0].name)
    for mode in sorted(MODES):
        code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", *MODES[mode], ".")
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and "pyproject.toml" in err
    assert (tmp_path / SCRIPTS[0].name).read_bytes() == SCRIPTS[0].read_bytes()
