"""Odd inputs reach the user as PIN000 findings with Python's own message and position."""

from __future__ import annotations

import subprocess
import sys

from pinlint.engine import lint_bytes, lint_text
from pinlint.settings import Settings


def _pin000(source: str):
    findings = lint_text(source, "t.py", Settings()).findings
    assert [f.code for f in findings] == ["PIN000"], findings
    return findings[0]


def test_syntax_error_is_reported_where_python_reports_it():
    finding = _pin000("import cupy\nx = (1,\ny = 2 +\n")
    assert finding.location.row == 2
    assert finding.message.startswith("SyntaxError: ")


def test_null_bytes_are_not_python_source():
    finding = _pin000("import cupy\nx = 1\x00\n")
    assert "null bytes" in finding.message


def test_undecodable_bytes_are_pin000():
    result = lint_bytes(b"import cupy\nx = '\xff\xfe'\n", "t.py", Settings())
    assert [f.code for f in result.findings] == ["PIN000"]
    assert "not valid Python source" in result.findings[0].message


def test_pin000_cannot_be_deselected():
    # Issue 14: a file that does not parse is reported whatever is selected (as ruff does).
    [finding] = lint_text("import cupy\nx = (\n", "t.py", Settings(select=frozenset({"PIN001"}))).findings
    assert finding.code == "PIN000"


def test_missing_path_does_not_claim_all_checks_passed(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "nope.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "All checks passed" not in done.stdout
    assert "nope.py" in done.stderr and "Traceback" not in done.stderr


def test_torch_conversion_is_named_as_a_tensor_method():
    source = (
        "import torch\n"
        "x = torch.empty(1 << 24, dtype=torch.float16, pin_memory=True)\n"
        "y = x.float().to('cuda', non_blocking=True)\n"
    )
    findings = lint_text(source, "t.py", Settings()).findings
    assert [f.code for f in findings] == ["PIN001"]
    assert "`Tensor.float`" in findings[0].message
