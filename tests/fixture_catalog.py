"""The bundled fixtures and their contract headers (shared by the CPU and GPU fixture tests)."""

from __future__ import annotations

import re
from pathlib import Path

from pinlint.apitables import default_tables

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# The libraries a fixture's file name may start with: the API tables' `fixture_prefix`es.
LIBRARIES = tuple(sorted(default_tables().fixture_prefixes))
_HEADER = re.compile(r"^# pinlint-expect: (?P<codes>none|PIN\d{3}(?:, PIN\d{3})*)\s*$")


def fixture_files() -> list:
    return sorted(FIXTURES.glob("PIN*/*.py"))


def expected_codes(path: Path) -> set:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = _HEADER.match(first)
    if match is None:
        raise AssertionError(f"{path}: first line must be '# pinlint-expect: PINxxx[, PINyyy]' or '... none'")
    codes = match.group("codes")
    return set() if codes == "none" else {c.strip() for c in codes.split(",")}


def library_of(path: Path) -> str:
    return path.name.split("_", 1)[0]
