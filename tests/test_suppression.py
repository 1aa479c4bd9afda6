"""``# noqa`` and ``# pinlint: ignore[...]`` on the reported line."""

from __future__ import annotations

import pytest

from helpers import codes, row_of, rows
from pinlint.engine import lint_text
from pinlint.settings import Settings
from pinlint.suppress import ALL, suppressed_codes

PRE = """
import numpy as np, cupy as cp
h = np.zeros(1 << 20, dtype=np.float32)
d = cp.empty(1 << 20, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
"""
ASYNC = "d.set(h, stream=s)"              # PIN001
LOOP = "for i in range(3):\n    x = cp.asarray(h){comment}\n"  # PIN007


def test_unsuppressed_control():
    assert codes(PRE + ASYNC + "\n") == ["PIN001"]
    assert codes(PRE + LOOP.format(comment="")) == ["PIN007"]


@pytest.mark.parametrize("comment", [
    "# noqa: PIN001",
    "# noqa:PIN001",
    "# noqa:PIN001,PIN007",
    "# noqa: PIN007, PIN001",
    "# noqa",
    "#noqa",
    "# NOQA: pin001",
    "# pinlint: ignore[PIN001]",
    "# pinlint: ignore[PIN007, PIN001]",
    "# some text  # noqa: PIN001",
])
def test_comment_suppresses_pin001(comment):
    assert codes(PRE + f"{ASYNC}  {comment}\n") == []


@pytest.mark.parametrize("comment", [
    "# noqa: E501",
    "# noqa: PIN007",
    "# noqa: PIN0011",
    "# pinlint: ignore[PIN007]",
    "# pinlint: ignore[]",
    "# a comment about noqa handling",
])
def test_comment_for_other_codes_does_not_suppress(comment):
    assert codes(PRE + f"{ASYNC}  {comment}\n") == ["PIN001"]


@pytest.mark.parametrize("comment, expected", [
    ("  # noqa: PIN007", []), ("  # noqa:PIN001,PIN007", []), ("  # noqa", []),
    ("  # pinlint: ignore[PIN007]", []), ("  # noqa: PIN001", ["PIN007"]), ("  # noqa: E501", ["PIN007"]),
])
def test_pin007_suppression(comment, expected):
    assert codes(PRE + LOOP.format(comment=comment)) == expected


def test_suppression_is_per_line():
    src = PRE + f"{ASYNC}  # noqa: PIN001\n{ASYNC}  # second\n"
    assert rows(src, "PIN001") == [row_of(src, "# second")]


def test_comment_on_the_allocation_line_does_not_suppress_the_copy():
    src = PRE.replace("dtype=np.float32)\nd", "dtype=np.float32)  # noqa: PIN001\nd", 1) + ASYNC + "\n"
    assert "# noqa: PIN001" in src
    assert codes(src) == ["PIN001"]


def test_multiline_call_suppressed_on_its_last_line():
    src = PRE + "d.set(\n    h,\n    stream=s,\n)  # noqa: PIN001\n"
    assert codes(src) == []


def test_multiline_call_suppressed_on_its_first_line():
    src = PRE + "d.set(  # noqa: PIN001\n    h,\n    stream=s,\n)\n"
    assert codes(src) == []


def test_multiline_call_without_comment_is_reported_at_its_first_line():
    src = PRE + "d.set(\n    h,\n    stream=s,\n)\n"
    assert rows(src, "PIN001") == [row_of(src, "d.set(")]


def test_multiline_call_last_line_other_code_does_not_suppress():
    src = PRE + "d.set(\n    h,\n    stream=s,\n)  # noqa: E501\n"
    assert codes(src) == ["PIN001"]


def test_suppressing_one_of_two_codes_on_different_copies():
    src = PRE + f"{ASYNC}  # noqa: PIN001\nfor i in range(3):\n    y = cp.asarray(h)\n"
    assert codes(src) == ["PIN007"]


def test_suppressed_codes_parser():
    assert suppressed_codes("x = 1") is None
    assert suppressed_codes("x = 1  # a comment") is None
    assert suppressed_codes("x = 1  # noqa") is ALL
    assert suppressed_codes("x  # noqa: PIN001, PIN007") == frozenset({"PIN001", "PIN007"})
    assert suppressed_codes("x  # pinlint: ignore[PIN001]") == frozenset({"PIN001"})


def test_noqa_inside_a_string_is_not_a_comment():
    src = PRE + f'label = "# noqa"; {ASYNC}\n'
    assert codes(src) == ["PIN001"]


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x1c"])
def test_suppression_after_an_unusual_line_separator(separator):
    # A form feed on its own line (a page break) is ordinary whitespace to Python; \u2028 in a string too.
    text = ("import numpy as np, cupy as cp\n"
            f"label = 'a{separator}b'\n"
            "h = np.zeros(1 << 20, dtype=np.float32)\n"
            "d = cp.empty(1 << 20, dtype=np.float32)\n"
            "s = cp.cuda.Stream(non_blocking=True)  # noqa\n"
            "d.set(h, stream=s)\n"
            "d.set(h, stream=s)  # noqa: PIN001\n")
    result = lint_text(text, "t.py", Settings())
    assert [(f.code, f.location.row) for f in result.findings] == [("PIN001", 6)]


def test_a_file_without_suppression_text_is_not_tokenized(monkeypatch):
    from pinlint import suppress

    read: list = []
    original = suppress.read_lines
    monkeypatch.setattr(suppress, "read_lines", lambda text: read.append(text) or original(text))
    plain = "x = 1\ny = 2  # a comment\n"
    assert not suppress.Suppressions(plain).suppressed("PIN001", [1, 2]) and read == []
    for comment in ("# noqa", "# NOQA: PIN001", "# pinlint: ignore[PIN001]"):
        text = f"x = 1  {comment}\n"
        assert suppress.Suppressions(text).suppressed("PIN001", [1]), comment
    assert len(read) == 3
