"""Rule documentation, read from ``rules/PINxxx.md``: one source for `pinlint rule` and SARIF help."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .apitables import rules_dir


@dataclass(frozen=True)
class RuleDoc:
    code: str
    text: str

    def section(self, title: str) -> str:
        match = re.search(rf"^## {re.escape(title)}\??\s*\n(.*?)(?=^## |\Z)", self.text, re.M | re.S)
        return match.group(1).strip() if match else ""


@functools.lru_cache(maxsize=None)
def rule_doc(code: str) -> RuleDoc:
    path = rules_dir() / f"{code}.md"
    try:
        return RuleDoc(code, path.read_text(encoding="utf-8"))
    except OSError:
        return RuleDoc(code, "")


@dataclass(frozen=True)
class SyntaxErrorRule:
    """PIN000 is no check over the analysis' facts (nothing can be analysed), but it is listed and
    documented like one."""

    code: str = "PIN000"
    name: str = "syntax-error"
    fix_availability: str = "never"
    summary: str = "A file pinlint cannot read as Python (always reported; cannot be deselected)"


SYNTAX_ERROR = SyntaxErrorRule()


@dataclass(frozen=True)
class RuntimeRule:
    """A code only ``pinlint trace`` reports: what a run showed, with no static check behind it. It is
    listed, documented and accepted in ``select``/``ignore``/``noqa`` like a rule."""

    code: str
    name: str
    summary: str
    fix_availability: str = "never"


RUNTIME_RULES = (
    RuntimeRule("PIN009", "too-much-pinned-memory",
                "Peak pinned host memory above a share of physical memory (observed by `pinlint trace` only)"),
)
