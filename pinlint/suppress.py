"""``# noqa`` and ``# pinlint: ignore[...]`` comments on a reported line."""

from __future__ import annotations

import re
from typing import Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*pinlint:\s*ignore\[(?P<codes>[^\]]*)\]")
ALL = frozenset(["*"])


def suppressed_codes(line: str) -> Optional[frozenset]:
    """The codes a line's comment suppresses: ``ALL`` for a bare ``# noqa``, None when none."""
    if "#" not in line:
        return None
    codes: set = set()
    for match in _NOQA.finditer(line):
        if match.group("codes") is None:
            return ALL
        codes.update(c.strip().upper() for c in match.group("codes").split(","))
    for match in _IGNORE.finditer(line):
        codes.update(c.strip().upper() for c in match.group("codes").split(",") if c.strip())
    return frozenset(codes) if codes else None


def is_suppressed(code: str, lines: list, rows: tuple) -> bool:
    for row in rows:
        if 1 <= row <= len(lines):
            codes = suppressed_codes(lines[row - 1])
            if codes is not None and (codes is ALL or code in codes):
                return True
    return False
