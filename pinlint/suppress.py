"""``# noqa`` and ``# pinlint: ignore[...]`` comments on a reported line.

Only real comments count (a ``"# noqa"`` string literal does not): they are read with ``tokenize``,
once per file and only when the file has a finding.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Optional

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*pinlint:\s*ignore\[(?P<codes>[^\]]*)\]")
ALL = frozenset(["*"])
_ANY_SUPPRESSION = re.compile(r"noqa|pinlint\s*:", re.IGNORECASE)  # in every comment the two above match


def suppressed_codes(comment: str) -> Optional[frozenset]:
    """The codes a comment suppresses: ``ALL`` for a bare ``# noqa``, None when none."""
    codes: set = set()
    for match in NOQA.finditer(comment):
        if match.group("codes") is None:
            return ALL
        codes.update(c.strip().upper() for c in match.group("codes").split(","))
    for match in _IGNORE.finditer(comment):
        codes.update(c.strip().upper() for c in match.group("codes").split(",") if c.strip())
    return frozenset(codes) if codes else None


@dataclass(frozen=True)
class Lines:
    """What the tokenizer says about a file's rows: the comment on each, and the rows where a
    physical line ends in code (an NL or NEWLINE token), the only places a comment can go."""

    comments: dict            # row (1-based, as libcst counts) -> the comment on that row
    ends: tuple               # sorted rows where a line ends outside a string and without a backslash
    complete: bool            # the whole file was tokenized

    def comment_row(self, row: int) -> Optional[int]:
        """The row where a comment about ``row`` goes: ``row`` itself, or, when ``row`` ends with a
        backslash or inside a string that goes on, the row that ends that logical line's piece
        (ruff puts its ``noqa`` there too); None when the tokenizer could not say."""
        at = bisect.bisect_left(self.ends, row)
        return self.ends[at] if at < len(self.ends) else None


def read_lines(text: str) -> Lines:
    comments: dict = {}
    ends: list = []
    complete = True
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
            elif token.type in (tokenize.NL, tokenize.NEWLINE):
                ends.append(token.start[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        complete = False  # what was read before the error still counts; the file parsed, so this is rare
    return Lines(comments, tuple(sorted(set(ends))), complete)


def comments_by_line(text: str) -> dict:
    """Row (1-based, as libcst counts) -> the comment on that row."""
    return read_lines(text).comments


class Suppressions:
    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: Optional[Lines] = None

    def suppressed(self, code: str, rows) -> bool:
        """A comment on a reported row suppresses, and so does one where that row's line goes on
        to end (after a backslash continuation or a string spanning lines): ``--add-noqa`` puts it there."""
        if self._lines is None:
            if _ANY_SUPPRESSION.search(self._text) is None:
                # No comment can suppress anything (each needs "noqa" or "pinlint:" in it): a file
                # with no such text is not tokenized (a second of a 100k-line file's check).
                self._lines = Lines({}, (), True)
            else:
                self._lines = read_lines(self._text)
        lines = self._lines
        for row in {*rows, *(lines.comment_row(r) for r in rows)}:
            comment = lines.comments.get(row)
            if comment is None:
                continue
            codes = suppressed_codes(comment)
            if codes is not None and (codes is ALL or code in codes):
                return True
        return False
