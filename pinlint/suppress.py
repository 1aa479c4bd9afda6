"""``# noqa`` and ``# pinlint: ignore[...]`` comments on a reported line.

Only real comments count (a ``"# noqa"`` string literal does not): they are read with ``tokenize``,
once per file and only when the file has a finding.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*pinlint:\s*ignore\[(?P<codes>[^\]]*)\]")
ALL = frozenset(["*"])


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


def comments_by_line(text: str) -> dict:
    """Row (1-based, as libcst counts) -> the comment on that row."""
    comments: dict = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # what was read before the error still counts; the file parsed, so this is rare
    return comments


class Suppressions:
    def __init__(self, text: str) -> None:
        self._text = text
        self._comments: Optional[dict] = None

    def suppressed(self, code: str, rows) -> bool:
        if self._comments is None:
            self._comments = comments_by_line(self._text)
        for row in rows:
            comment = self._comments.get(row)
            if comment is None:
                continue
            codes = suppressed_codes(comment)
            if codes is not None and (codes is ALL or code in codes):
                return True
        return False
