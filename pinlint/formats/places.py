"""Where a finding is, for tools that only know files: its region in the file on disk (for a notebook,
the line of the ``.ipynb`` that holds the reported source line) and a fingerprint that follows the
finding when lines above it move."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from ..model import Finding, Location
from .notebook_lines import notebook_lines


@dataclass(frozen=True)
class Place:
    start: Location       # 1-based line and column in the file itself
    end: Location
    prefix: str = ""      # "cell 3, line 5: " for a notebook, so the message still says where in the cell
    line_text: str = ""   # the reported source line ("" when it cannot be read)


def place(finding: Finding) -> Place:
    if finding.cell is None:
        return Place(finding.location, finding.end_location, "", _source_line(finding.filename, finding.location.row))
    prefix = f"cell {finding.cell}, line {finding.location.row}: "
    lines = notebook_lines(finding.filename)
    start = lines.position(finding.cell, finding.location.row, finding.location.column) if lines else None
    end = lines.position(finding.cell, finding.end_location.row, finding.end_location.column) if lines else None
    if start is None or end is None:
        return Place(Location(1, 1), Location(1, 1), prefix)  # the file changed since it was checked
    code = lines.code_lines(finding.cell)
    text = code[finding.location.row - 1] if finding.location.row <= len(code) else ""
    return Place(Location(*start), Location(*end), prefix, text)


def fingerprints(findings: list, places: list) -> list:
    """One fingerprint per finding: a hash of its code and its source line's text (whitespace aside),
    then ``:N`` for the N-th such finding in its file (as GitHub's own ``primaryLocationLineHash``)."""
    seen: Counter = Counter()
    out = []
    for finding, where in zip(findings, places):
        content = re.sub(r"\s+", "", where.line_text) or finding.message
        digest = hashlib.sha256(f"{finding.code}\0{content}".encode("utf-8", "backslashreplace")).hexdigest()[:16]
        seen[(finding.filename, digest)] += 1
        out.append(f"{digest}:{seen[(finding.filename, digest)]}")
    return out


def _source_line(filename: str, row: int) -> str:
    lines = _read_lines(filename, *_stamp(filename))
    return lines[row - 1] if lines is not None and 1 <= row <= len(lines) else ""


def _stamp(filename: str) -> tuple:
    try:
        stat = os.stat(filename)
    except OSError:
        return (0, -1)
    return (stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _read_lines(filename: str, mtime_ns: int, size: int) -> Optional[list]:
    if size < 0:
        return None
    try:
        with tokenize.open(filename) as handle:  # the file's own encoding; newlines as Python counts rows
            return handle.read().split("\n")
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None
