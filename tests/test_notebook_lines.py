"""Positions of a notebook cell's code in the ``.ipynb`` file (what GitHub, GitLab and SARIF viewers
point at), for the ways Jupyter and other tools write notebooks."""

from __future__ import annotations

import json

import pytest

from pinlint.formats.notebook_lines import NotebookLines

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# d = cp.asarray(h) in a heading\n"]},
    {"cell_type": "code", "execution_count": 1, "metadata": {},
     "outputs": [{"output_type": "stream", "name": "stdout", "text": ["s = 'tab\\there'  # \u00e9 \U0001f680\n"]}],
     "source": ["import numpy as np\n", "s = 'tab\\there'  # \u00e9 \U0001f680\n", 'q = "\\"quoted\\""']},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": "x = 1\ny = \"\u00e9\" + s\n"},
]


def _notebook(**dump) -> str:
    return json.dumps({"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, **dump)


def _at(text: str, position) -> str:
    line, column = position
    return text.split("\n")[line - 1][column - 1:]


@pytest.mark.parametrize("dump", [{"indent": 1}, {"indent": 1, "ensure_ascii": False}, {"indent": 2},
                                  {}, {"separators": (",", ":")}],
                         ids=["jupyter", "jupyter-unicode", "indent-2", "one-line", "compact"])
def test_each_cell_position_lands_on_its_source_text(dump):
    text = _notebook(**dump)
    lines = NotebookLines.parse(text)
    assert lines.code_lines(2) == ["import numpy as np", "s = 'tab\\there'  # \u00e9 \U0001f680", 'q = "\\"quoted\\""']
    assert _at(text, lines.position(2, 1, 1)).startswith('import numpy as np\\n"')
    assert _at(text, lines.position(2, 2, 1)).startswith("s = 'tab\\\\there'")  # not the output's copy
    # After an escape, a non-ASCII letter (escaped or not) and an astral character: still the right column.
    assert _at(text, lines.position(2, 2, 20)).startswith(json.dumps("\u00e9 \U0001f680", **dump)[1:-1])
    assert _at(text, lines.position(2, 2, 22)).startswith(json.dumps("\U0001f680\n", **dump)[1:-1])
    assert _at(text, lines.position(2, 3, 5)).startswith('\\"\\\\\\"quoted')
    assert _at(text, lines.position(3, 2, 5)).startswith('\\"' + json.dumps("\u00e9", **dump)[1:-1] + '\\" + s')
    assert _at(text, lines.position(3, 1, 1)).startswith("x = 1\\ny")
    jupyter = dump.get("indent") == 1
    if jupyter:  # one source line per file line, as Jupyter writes them
        assert lines.position(2, 2, 1)[0] == lines.position(2, 1, 1)[0] + 1


def test_end_of_a_line_is_the_end_of_its_string():
    text = _notebook(indent=1)
    lines = NotebookLines.parse(text)
    assert _at(text, lines.position(2, 3, 17)) == '"'          # one past the last character: the closing quote
    assert _at(text, lines.position(2, 1, 19)).startswith('\\n"')  # one past a line that goes on: its newline


@pytest.mark.parametrize("bad", ["", "[]", '{"cells": 3}', '{"cells": [1, "x", {"source": 7}]}', "{not json"])
def test_what_is_not_a_notebook_maps_nothing(bad):
    lines = NotebookLines.parse(bad)
    assert lines is None or lines.position(1, 1, 1) is None


def test_rows_outside_the_cell_map_nothing():
    lines = NotebookLines.parse(_notebook(indent=1))
    assert lines.position(2, 4, 1) is None
    assert lines.position(9, 1, 1) is None
