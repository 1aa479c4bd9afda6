"""``--add-noqa`` writes its comment where the tokenizer ends the reported line, and that comment
suppresses the finding (issue 14, item 3)."""

from __future__ import annotations

import pytest

from pinlint.engine import lint_text
from pinlint.runner import add_noqa_text
from pinlint.settings import Settings

import safety_props
from helpers import BAD, run_in_process, source, write

HEAD = BAD.rsplit("d.set", 1)[0]  # imports, the pageable buffer, a device array and a stream


def _noqa(text: str) -> str:
    result = lint_text(text, "t.py", Settings())
    assert result.findings
    new, added = add_noqa_text(text, result.findings)
    assert added == len(result.findings)
    return new


@pytest.mark.parametrize("tail, commented", [
    # a backslash continuation: the comment goes on the line that ends the statement
    ("d.set(h, \\\n      stream=s)\n", "d.set(h, \\\n      stream=s)  # noqa: PIN001\n"),
    ("d.set(h, stream=s) \\\n    ; x = 1\n", "d.set(h, stream=s) \\\n    ; x = 1  # noqa: PIN001\n"),
    # the line ends inside a triple-quoted string: after the string, not in it
    ('d.set(h, stream=s); doc = """text\nmore"""\n', 'd.set(h, stream=s); doc = """text\nmore"""  # noqa: PIN001\n'),
    ("d.set(h, stream=s); doc = f'''{1}\n'''; e = '''a\nb'''\n",
     "d.set(h, stream=s); doc = f'''{1}\n'''; e = '''a\nb'''  # noqa: PIN001\n"),
    # a plain line and a line inside brackets keep the comment where it was
    ("d.set(h, stream=s)\n", "d.set(h, stream=s)  # noqa: PIN001\n"),
    ("d.set(h,\n      stream=s)\n", "d.set(h,  # noqa: PIN001\n      stream=s)\n"),
], ids=["backslash", "backslash-semicolon", "triple-string", "fstring-then-string", "plain", "brackets"])
def test_the_comment_goes_where_the_line_ends_and_suppresses(tail, commented):
    text = HEAD + tail
    new = _noqa(text)
    assert new == HEAD + commented
    assert safety_props.compiles(new)
    assert safety_props.string_values(new) == safety_props.string_values(text), "a string's value changed"
    assert lint_text(new, "t.py", Settings()).findings == [], "the added comment does not suppress"


def test_a_comment_at_the_end_of_a_continued_line_suppresses_its_first_line():
    text = source("""
        import numpy as np, cupy as cp
        h = np.zeros(1 << 20, dtype=np.float32)
        d = cp.empty(1 << 20, dtype=np.float32)
        s = cp.cuda.Stream(non_blocking=True)
        d.set(h, stream=s); doc = '''a
        b'''  # noqa: PIN001
        """)
    assert lint_text(text, "t.py", Settings()).findings == []


def test_add_noqa_through_the_command_line(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, "a.py", HEAD + 'd.set(h, \\\n      stream=s); doc = """x\ny"""\n')
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--add-noqa", "--no-cache", "a.py")
    assert (code, err) == (0, "") and out == "Added 1 noqa directive in 1 file.\n"
    fixed = path.read_text(encoding="utf-8")
    assert fixed.endswith('stream=s); doc = """x\ny"""  # noqa: PIN001\n')
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "a.py")
    assert code == 0 and "All checks passed!" in out


def test_add_noqa_reaches_a_finding_that_comes_through_a_helper_of_the_tree(tmp_path, monkeypatch, capsys):
    """A file that calls no GPU API itself but a helper of the tree that copies its buffer: the check
    reports it there, so --add-noqa must suppress it there (it used to skip such files)."""
    write(tmp_path, "helpers.py", """
import numpy as np
from numba import cuda

def upload(h):
    s = cuda.stream()
    return cuda.to_device(h, stream=s)
""")
    write(tmp_path, "main.py", """
import numpy as np
from helpers import upload

def run():
    h = np.zeros(1 << 20)
    return upload(h)
""")
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", "main.py")
    assert code == 1 and "main.py:7" in out
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--add-noqa", "--no-cache", "--jobs", "1", ".")
    assert code == 0 and "main.py" not in err
    assert "upload(h)  # noqa: PIN001" in (tmp_path / "main.py").read_text()
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--jobs", "1", ".")
    assert code == 0 and "All checks passed!" in out


def _notebook(cells: list) -> str:
    import json
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": source} for source in cells] +
                      [{"cell_type": "markdown", "metadata": {}, "source": ["# notes\n"]}],
                      "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                      "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_add_noqa_comments_the_lines_of_a_notebooks_cells(tmp_path, monkeypatch, capsys):
    import json
    before = _notebook([["import numpy as np\n", "import cupy as cp\n", "%load_ext autoreload\n"],
                        ["h = np.empty(1 << 22, dtype=np.float32)\n", "d = cp.empty_like(h)\n",
                         "s = cp.cuda.Stream(non_blocking=True)\n", "d.set(h, stream=s)\n", "!nvidia-smi"]])
    path = write(tmp_path, "nb.ipynb", before)
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--add-noqa", "--no-cache", "nb.ipynb")
    assert (code, err, out) == (0, "", "Added 1 noqa directive in 1 file.\n")
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][1]["source"] == ["h = np.empty(1 << 22, dtype=np.float32)\n", "d = cp.empty_like(h)\n",
                                           "s = cp.cuda.Stream(non_blocking=True)\n",
                                           "d.set(h, stream=s)  # noqa: PIN001\n", "!nvidia-smi"]
    old = json.loads(before)
    old["cells"][1]["source"] = after["cells"][1]["source"]
    assert after == old  # nothing else in the notebook changed
    code, out, _ = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "nb.ipynb")
    assert code == 0 and "All checks passed!" in out
