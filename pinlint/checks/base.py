"""The rule base class: a rule is a short query over the analysis' events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, Optional

import libcst as cst

from ..analysis import FileFacts
from ..model import Event, Kind, Site


@dataclass(frozen=True)
class Report:
    """What a rule found, in node terms; the engine turns it into a positioned Finding."""

    node: cst.CSTNode
    message: str
    sites: frozenset = frozenset()   # allocation sites shown as related locations
    fix: Optional[object] = None     # a fixes.Plan
    direction: str = ""              # for copies: "h2d" / "d2h" (used by `pinlint verify --estimate`)


@dataclass
class CheckContext:
    """What a rule may ask besides the facts: settings, where a node is, and how to build a fix."""

    line_of: Callable[[cst.CSTNode], int]
    pin007_min_bytes: int = 0
    fixes: Optional[object] = None   # a FixContext, when fixes are wanted
    qualify: Callable = lambda node: None

    def plan(self, builder, *args):
        """A fix plan from ``builder`` (see pinlint.fixers), or None when fixes are not wanted."""
        return builder(*args, self.fixes) if self.fixes is not None else None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    fix_availability: ClassVar[str] = "sometimes"  # "always", "sometimes" or "never" (ruff's wording)
    # Fixit-style embedded cases: each a full program; INVALID ones must produce this rule's code.
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        raise NotImplementedError


def pageable(site: Site) -> bool:
    return site.kind is Kind.PAGEABLE


def is_pageable_async_copy(event: Event) -> bool:
    """PIN001's condition, shared with PIN007 (which yields to PIN001 at the same copy)."""
    return event.is_async and not event.staged and event.definitely(pageable)


def describe_site(site: Site, ctx: CheckContext) -> str:
    api = site.api.replace("numpy.", "np.") if site.api != "arithmetic" else "arithmetic"
    return f"`{api}` at line {ctx.line_of(site.node)}"
