"""Where a notebook cell's code sits in the ``.ipynb`` file itself.

Findings in a notebook name a cell and a row in it. Code review tools (GitHub annotations and code
scanning, GitLab code quality) only know the file, so the machine formats point at the line of the JSON
file that holds the reported source line. The file is scanned once with the ``json`` module's own string
scanner, which gives each ``source`` string's offsets; escapes are then counted inside the string so a
column lands on the right character.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Optional

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class _Piece:
    start: int    # offset of the opening quote in the file
    text: str     # the decoded string


class NotebookLines:
    """Cell code positions of one notebook file (cells numbered from 1, counting every cell)."""

    def __init__(self, text: str, cells: dict) -> None:
        self._text = text
        self._cells = cells          # cell number -> [_Piece, ...] of its `source`
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    @staticmethod
    def parse(text: str) -> Optional["NotebookLines"]:
        try:
            return NotebookLines(text, _cell_sources(text))
        except (ValueError, IndexError, RecursionError):
            return None

    def code_lines(self, cell: int) -> list:
        """The cell's code, split into lines (without their line ends)."""
        return "".join(p.text for p in self._cells.get(cell, ())).split("\n")

    def position(self, cell: int, row: int, column: int) -> Optional[tuple]:
        """(line, column) in the file, both 1-based, of the character at ``row:column`` of the cell."""
        pieces = self._cells.get(cell)
        if not pieces:
            return None
        lines = self.code_lines(cell)
        if not 1 <= row <= len(lines):
            return None
        offset = sum(len(line) + 1 for line in lines[:row - 1]) + min(column - 1, len(lines[row - 1]))
        for piece in pieces:
            if offset < len(piece.text) or piece is pieces[-1]:
                return self._file_position(_raw_offset(self._text, piece.start, min(offset, len(piece.text))))
            offset -= len(piece.text)
        return None

    def _file_position(self, offset: int) -> tuple:
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


def _raw_offset(text: str, quote: int, decoded: int) -> int:
    """File offset of the ``decoded``-th character of the JSON string whose opening quote is at ``quote``
    (its closing quote for the end of the string)."""
    i = quote + 1
    for _ in range(decoded):
        if text[i] != "\\":
            i += 1
        elif text[i + 1] != "u":
            i += 2
        else:
            high = int(text[i + 2:i + 6], 16)
            i += 12 if 0xD800 <= high < 0xDC00 and text[i + 6:i + 8] == "\\u" else 6  # a surrogate pair is one
    return i


def _skip(text: str, i: int) -> int:
    while text[i] in _WHITESPACE:
        i += 1
    return i


def _expect(text: str, i: int, char: str) -> int:
    if text[i] != char:
        raise ValueError(f"expected {char!r} at offset {i}")
    return i + 1


def _object(text: str, i: int, member) -> int:
    """Walk the JSON object at ``i``: ``member(key, value offset)`` returns where the value ends.
    Returns the offset after the object."""
    i = _skip(text, _expect(text, _skip(text, i), "{"))
    if text[i] == "}":
        return i + 1
    while True:
        key, i = scanstring(text, _expect(text, i, '"'))
        i = _skip(text, _expect(text, _skip(text, i), ":"))
        i = _skip(text, member(key, i))
        if text[i] == "}":
            return i + 1
        i = _skip(text, _expect(text, i, ","))


def _array(text: str, i: int, element) -> int:
    """Walk the JSON array at ``i``: ``element(offset)`` returns where the element ends."""
    i = _skip(text, _expect(text, _skip(text, i), "["))
    if text[i] == "]":
        return i + 1
    while True:
        i = _skip(text, element(i))
        if text[i] == "]":
            return i + 1
        i = _skip(text, _expect(text, i, ","))


def _value_end(text: str, i: int) -> int:
    return _DECODER.raw_decode(text, i)[1]


def _cell_sources(text: str) -> dict:
    """Cell number -> the ``source`` strings of that cell, with their offsets."""
    cells: dict = {}

    def strings(pieces: list, i: int) -> int:
        if text[i] != '"':
            return _value_end(text, i)
        value, end = scanstring(text, i + 1)
        pieces.append(_Piece(i, value))
        return end

    def cell(number: int, i: int) -> int:
        def member(key: str, j: int) -> int:
            if key != "source":
                return _value_end(text, j)
            pieces = cells.setdefault(number, [])
            return _array(text, j, lambda k: strings(pieces, k)) if text[j] == "[" else strings(pieces, j)
        return _object(text, i, member) if text[i] == "{" else _value_end(text, i)

    def top(key: str, i: int) -> int:
        if key != "cells":
            return _value_end(text, i)
        numbers = iter(range(1, len(text) + 2))
        return _array(text, i, lambda j: cell(next(numbers), j))

    _object(text, 0, top)
    return cells


@functools.lru_cache(maxsize=64)
def _cached(path: str, mtime_ns: int, size: int) -> Optional[NotebookLines]:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return NotebookLines.parse(handle.read())
    except (OSError, UnicodeDecodeError):
        return None


def notebook_lines(path: str) -> Optional[NotebookLines]:
    """The positions of a notebook on disk (None when it cannot be read or is not a notebook)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _cached(path, stat.st_mtime_ns, stat.st_size)
