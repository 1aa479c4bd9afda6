"""The README's example is what `pinlint check` really prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> tuple:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Example"):]
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n\$ pinlint check example.py\n(.*?)```", section, re.S).group(1)
    return program, shown


def test_readme_example_output_is_current(tmp_path):
    program, shown = _example()
    (tmp_path / "example.py").write_text(program, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--no-cache", "example.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout == shown
    assert done.returncode == 1
