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

# Size thresholds: a finding about a buffer whose constant byte size is below its rule's threshold is not
# reported (unknown sizes always are). The figures behind each default are in the rule's document.
PIN001_MIN_BYTES = 64 * 1024         # rules/PIN001.md: the same line as PIN007 and `pinlint trace`
PIN007_MIN_BYTES = 64 * 1024         # rules/PIN007.md: smaller transfers are latency-bound
PIN008_MIN_BYTES = 16 * 1024 * 1024  # rules/PIN008.md: the smallest size measured, already a net loss
# `pinlint trace`'s PIN009: the peak of pinned host memory above this share of physical memory.
PIN009_MAX_SHARE = 0.25

# configuration key -> Settings field, for every size threshold: one list, so --show-settings, the
# cache key and each Settings built from a configuration carry the same ones.
THRESHOLD_FIELDS = {"pin001-min-bytes": "pin001_min_bytes", "pin007-min-bytes": "pin007_min_bytes",
                    "pin008-min-bytes": "pin008_min_bytes"}


@dataclass(frozen=True)
class Settings:
    select: frozenset = field(default_factory=lambda: frozenset(ALL_CODES))
    pin001_min_bytes: int = PIN001_MIN_BYTES
    pin007_min_bytes: int = PIN007_MIN_BYTES
    pin008_min_bytes: int = PIN008_MIN_BYTES
    render_fixes: bool = True   # compute each fix's text edits (JSON, SARIF, editors); text output needs none
    ignore_noqa: bool = False   # --ignore-noqa: report findings that `# noqa` comments suppress

    def __post_init__(self) -> None:
        object.__setattr__(self, "select", frozenset(self.select) | ALWAYS)

    def thresholds(self) -> dict:
        """The size thresholds by configuration key, in a fixed order."""
        return {key: getattr(self, name) for key, name in THRESHOLD_FIELDS.items()}


def thresholds_of(config) -> dict:
    """A configuration's size thresholds as ``Settings`` keyword arguments."""
    return {name: getattr(config, name) for name in THRESHOLD_FIELDS.values()}


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
