"""Legacy adoption and editor plumbing: --add-noqa and --stdin-filename."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pinlint.runner import add_noqa_text

CASES = Path(__file__).resolve().parent / "fix_cases"


def _pinlint(cwd, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=120)


def test_add_noqa_silences_every_finding_and_is_idempotent(tmp_path):
    source = (CASES / "cupy_asarray_loop.in.py").read_text(encoding="utf-8")
    target = tmp_path / "legacy.py"
    target.write_text(source, encoding="utf-8")
    done = _pinlint(tmp_path, "check", "--add-noqa", ".")
    assert done.returncode == 0 and "Added 1 noqa directive in 1 file." in done.stdout
    assert "    gpu = cupy.asarray(frame)  # noqa: PIN007\n" in target.read_text(encoding="utf-8")
    assert _pinlint(tmp_path, "check", ".").returncode == 0
    again = _pinlint(tmp_path, "check", "--add-noqa", ".")
    assert "Added 0 noqa directives" in again.stdout
    assert target.read_text(encoding="utf-8").count("noqa") == 1


def test_add_noqa_merges_into_an_existing_comment_and_respects_a_bare_noqa():
    from pinlint.engine import lint_text
    from pinlint.settings import Settings
    text = ("import numpy as np, cupy as cp\n"
            "h = np.zeros(1 << 20)\n"
            "d = cp.empty(1 << 20)\n"
            "s = cp.cuda.Stream()\n"
            "d.set(h, stream=s)  # noqa: E501 keep this note\n"
            "d.set(h, stream=s)  # noqa\n")
    findings = lint_text(text, "t.py", Settings()).findings
    new, added = add_noqa_text(text, findings)
    assert added == 1
    assert "d.set(h, stream=s)  # noqa: E501, PIN001 keep this note\n" in new
    assert new.endswith("d.set(h, stream=s)  # noqa\n")


def test_stdin_is_linted_under_the_given_name(tmp_path):
    source = (CASES / "cupy_set_async.in.py").read_text(encoding="utf-8")
    done = _pinlint(tmp_path, "check", "--stdin-filename", "pkg/upload.py", "-", stdin=source)
    assert done.returncode == 1
    assert done.stdout.startswith("pkg/upload.py:9:1: PIN001")


def test_stdin_fix_prints_the_fixed_text(tmp_path):
    source = (CASES / "cupy_set_async.in.py").read_text(encoding="utf-8")
    done = _pinlint(tmp_path, "check", "--fix", "--stdin-filename", "upload.py", stdin=source)
    assert done.returncode == 0
    assert done.stdout == (CASES / "cupy_set_async.out.py").read_text(encoding="utf-8")


def test_add_noqa_counts_lines_as_python_does():
    # A form feed or U+2028 inside a line is not a line break for Python: the directive must still
    # land on the reported line, not on a line str.splitlines would count.
    from pinlint.engine import lint_text
    from pinlint.settings import Settings
    text = ("import numpy as np, cupy as cp\n"
            "NOTE = '\u2028 page \x0c break'\n"
            "h = np.zeros(1 << 20)\n"
            "d = cp.empty(1 << 20)\n"
            "s = cp.cuda.Stream(non_blocking=True)\n"
            "d.set(h, stream=s)\n"
            "x = 1\n")
    findings = lint_text(text, "t.py", Settings()).findings
    assert [(f.code, f.location.row) for f in findings] == [("PIN001", 6)]
    new, added = add_noqa_text(text, findings)
    assert added == 1
    assert new == text.replace("d.set(h, stream=s)\n", "d.set(h, stream=s)  # noqa: PIN001\n")
