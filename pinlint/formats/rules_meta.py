"""What the machine formats say about each rule besides its finding: name, documentation URL, tags and
severity (SARIF for code scanning, GitLab code quality)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional

SYNTAX_ERROR = "PIN000"
SYNTAX_ERROR_NAME = "syntax-error"
SYNTAX_ERROR_SUMMARY = "The file is not valid Python source (or a notebook is not valid JSON)"


@dataclass(frozen=True)
class RuleMeta:
    tags: tuple
    severity: str          # SARIF `problem.severity`: "error", "warning" or "recommendation"
    precision: str = "high"


# Races give wrong data (errors); the memory-kind rules cost time (warnings). A code missing here (a rule
# added later) gets the default.
_META = {
    SYNTAX_ERROR: RuleMeta(("correctness", "syntax"), "error", "very-high"),
    "PIN005": RuleMeta(("correctness", "cuda", "race"), "error"),
    "PIN006": RuleMeta(("correctness", "cuda", "race"), "error"),
}
_DEFAULT = RuleMeta(("performance", "cuda", "host-memory"), "warning")


def rule_meta(code: str) -> RuleMeta:
    return _META.get(code, _DEFAULT)


def rule_name(code: str) -> str:
    from ..checks import RULES_BY_CODE, RUNTIME_RULES
    rule = RULES_BY_CODE.get(code) or next((r for r in RUNTIME_RULES if r.code == code), None)
    return rule.name if rule is not None else SYNTAX_ERROR_NAME if code == SYNTAX_ERROR else code.lower()


@functools.lru_cache(maxsize=None)
def rule_url(code: str) -> Optional[str]:
    """The rule's documentation: a ``file:`` URI of ``rules/CODE.md`` as installed (the same text
    `pinlint rule CODE` prints), or None for a code without a document."""
    from ..apitables import rules_dir
    try:
        path = rules_dir() / f"{code}.md"
        return path.resolve().as_uri() if path.is_file() else None
    except (OSError, ValueError):
        return None


def plain_text(markdown: str) -> str:
    """A rule document as plain text (for viewers that do not render Markdown): no heading marks,
    code fences, emphasis or link syntax; tables and lists stay as they read."""
    text = re.sub(r"^```[^\n]*\n", "", markdown, flags=re.M)
    text = re.sub(r"^#{1,6}\s*", "", text, flags=re.M)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    return text.replace("`", "")
