"""Resolved settings: which codes run, and the rules' thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from .codes import all_codes

ALL_CODES = all_codes()  # the rules' codes, without importing the rules (libcst, the analysis)


class SettingsError(ValueError):
    """A bad option or configuration value; the CLI prints it and exits 2."""


# A file that does not parse is always reported, whatever is selected or ignored (as ruff does with
# syntax errors): nothing else can be said about it, and silence would read as "All checks passed!".
ALWAYS = frozenset({"PIN000"})


@dataclass(frozen=True)
class Settings:
    select: frozenset = field(default_factory=lambda: frozenset(ALL_CODES))
    pin007_min_bytes: int = 64 * 1024
    render_fixes: bool = True   # compute each fix's text edits (JSON, SARIF, editors); text output needs none
    ignore_noqa: bool = False   # --ignore-noqa: report findings that `# noqa` comments suppress

    def __post_init__(self) -> None:
        object.__setattr__(self, "select", frozenset(self.select) | ALWAYS)


def _expand(selector: str, option: str) -> set:
    selector = selector.strip().upper()
    if not selector:
        return set()
    if selector == "ALL":
        return set(ALL_CODES)
    matched = {code for code in ALL_CODES if code.startswith(selector)}
    if not matched:
        raise SettingsError(f"{option}: unknown rule code or prefix {selector!r} "
                            f"(known codes: {', '.join(ALL_CODES)}; see `pinlint rule --all`)")
    return matched


def _split(values: Optional[Iterable[str]]) -> list:
    out: list = []
    for value in values or ():
        out.extend(part for part in value.split(",") if part.strip())
    return out


def resolve_selection(select: Optional[Iterable[str]] = None, ignore: Optional[Iterable[str]] = None,
                      extend_select: Optional[Iterable[str]] = None) -> frozenset:
    """The codes that run: ``select`` (None: every rule; an empty list: none, as in ruff), plus
    ``extend_select``, less ``ignore``; PIN000 always."""
    chosen: set = set(ALL_CODES) if select is None else set()
    for selector in _split(select):
        chosen |= _expand(selector, "--select")
    for selector in _split(extend_select):
        chosen |= _expand(selector, "--extend-select")
    for selector in _split(ignore):
        chosen -= _expand(selector, "--ignore")
    return frozenset(chosen) | ALWAYS
