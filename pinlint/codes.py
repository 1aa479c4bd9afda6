"""The rule codes, known without importing the rules: each rule is documented in ``rules/PINxxx.md``
(the one source of `pinlint rule` and SARIF help), so the documents name them. Settings and
configuration need the codes on every run; the rules themselves (libcst, the analysis) only a file
that passes the prefilter does. tests/test_startup.py checks both lists agree."""

from __future__ import annotations

import functools
import re

from .apitables import rules_dir

_CODE = re.compile(r"PIN\d{3}")


@functools.lru_cache(maxsize=1)
def all_codes() -> tuple:
    try:
        codes = sorted(p.stem for p in rules_dir().glob("PIN*.md") if _CODE.fullmatch(p.stem))
    except OSError:
        codes = []
    if not codes:  # an installation without its rule documents: ask the rules themselves
        from .checks import ALL_CODES
        return ALL_CODES
    return tuple(codes)
