"""A file that does not parse is always reported: PIN000 cannot be deselected, and it has a doc
(issue 14, item 7)."""

from __future__ import annotations

import re

import pytest

from pinlint.engine import lint_bytes, lint_text
from pinlint.rule_docs import rule_doc
from pinlint.settings import Settings, resolve_selection

from helpers import REPO, run_in_process, write

BROKEN = "import cupy as cp\nd = cp.empty(4\n"
SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"]


@pytest.mark.parametrize("args", [("--select", "PIN001"), ("--ignore", "PIN000"), ("--select", "PIN00"),
                                  ("--ignore", "ALL"), ()])
def test_a_syntax_error_is_reported_whatever_is_selected(tmp_path, monkeypatch, capsys, args):
    write(tmp_path, "broken.py", BROKEN)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", *args, ".")
    assert code == 1 and "broken.py:2:13: PIN000 SyntaxError: '(' was never closed" in out
    assert "All checks passed!" not in out


def test_per_file_ignores_and_noqa_do_not_hide_it(tmp_path, monkeypatch, capsys):
    write(tmp_path, "pyproject.toml", '[tool.pinlint]\nselect = ["PIN001"]\n[tool.pinlint.per-file-ignores]\n'
                                      '"*.py" = ["ALL"]\n')
    write(tmp_path, "broken.py", "import cupy as cp  # noqa\nd = cp.empty(4  # noqa\n")
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", ".")
    assert code == 1 and "PIN000" in out


@pytest.mark.parametrize("select", [frozenset(), frozenset({"PIN001"})])
def test_settings_always_hold_pin000(select):
    assert "PIN000" in Settings(select=select).select
    assert lint_text(BROKEN, "t.py", Settings(select=select)).findings[0].code == "PIN000"
    assert lint_bytes(b"import cupy\n\xff\n", "t.py", Settings(select=select)).findings[0].code == "PIN000"
    assert resolve_selection(["PIN001"], ["PIN000"]) == {"PIN000", "PIN001"}
    assert resolve_selection([]) == {"PIN000"}


def test_pin000_has_a_doc_in_the_sections_of_the_others(tmp_path, monkeypatch, capsys):
    text = (REPO / "rules" / "PIN000.md").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# PIN000: syntax-error"
    assert re.findall(r"^## (.+?)\s*$", text, re.M) == SECTIONS
    assert "cannot be deselected" in text or "always reported" in text
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "rule", "pin000")
    assert (code, err) == (0, "") and out == rule_doc("PIN000").text == text
    # The doc's example is reported at its marked line, and its fix is clean.
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    bad, good = blocks
    [marked] = [i + 1 for i, line in enumerate(bad.splitlines()) if "# PIN000" in line]
    [finding] = lint_text(bad, "example.py", Settings()).findings
    assert (finding.code, finding.location.row) == ("PIN000", marked)
    assert lint_text(good, "example.py", Settings()).findings == []
