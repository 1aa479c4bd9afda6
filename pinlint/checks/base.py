"""The rule base class: a rule is a short query over the analysis' events."""

from __future__ import annotations

import os
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
    trace: tuple = ()                # TraceSteps from the reported call into the callee where it happens
    # Related locations other than allocation sites: (node, ModuleInfo or None for the checked file,
    # message), e.g. PIN008's single transfer of the buffer it reports at the pinning call.
    related: tuple = ()
    scope: str = ""                  # the function the reported node is in (reports of one mistake merge per function)


@dataclass
class CheckContext:
    """What a rule may ask besides the facts: settings, where a node is, and how to build a fix."""

    line_of: Callable[[cst.CSTNode], int]
    pin001_min_bytes: int = 0        # thresholds: constant-size buffers below them are not reported
    pin007_min_bytes: int = 0
    pin008_min_bytes: int = 0
    fixes: Optional[object] = None   # a FixContext, when fixes are wanted
    qualify: Callable = lambda node: None
    module: object = None            # the ModuleInfo of the checked file

    def plan(self, builder, *args):
        """A fix plan from ``builder`` (see pinlint.fixers), or None when fixes are not wanted."""
        return builder(*args, self.fixes) if self.fixes is not None else None

    def place(self, node: cst.CSTNode, module=None) -> str:
        """``line 12`` in the checked file, ``utils.py:12`` in another module."""
        if module is None or module is self.module:
            return f"line {self.line_of(node)}"
        return f"{self.name_of(module)}:{module.position(node).start.line}"

    def enclosing_or_place(self, loop: cst.CSTNode, node: cst.CSTNode, trace: tuple) -> Optional[str]:
        """None when ``loop`` holds ``node`` in the checked file; else where the loop is (a loop of a
        callee the reported call reaches: ``line 30``, ``schedule.py:24``)."""
        for module in [self.module] + [step.module for step in trace]:
            if module is None:
                continue
            try:
                span = module.position(loop)
            except KeyError:
                continue  # a node of another module
            if module is self.module:
                at = module.position(node)
                if span.start.line <= at.start.line and at.end.line <= span.end.line:
                    return None
            return self.place(loop, module)
        return None

    def name_of(self, module) -> str:
        """Another module as the reader of this file's report knows it: relative to this file."""
        here = getattr(self.module, "path", None)
        there = getattr(module, "path", None)
        if here is not None and there is not None:
            return os.path.relpath(there, here.parent)
        return module.filename

    def via(self, trace: tuple) -> str:
        """`` via `upload` (helpers.py:40)`` for an event that happens in a function the reported
        line calls: the function called, and where in the callees it happens."""
        if not trace:
            return ""
        first, last = trace[0], trace[-1]
        name = first.function.rsplit(".", 1)[-1] if first.function else "a call"
        where = f"line {self.line_of(last.node)}" if last.module is self.module else \
            f"{self.name_of(last.module)}:{last.module.position(last.node).start.line}"
        return f" via `{name}` ({where})"


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


def below(sites, threshold: int) -> bool:
    """Every buffer has a constant size, or a known element count of a dtype nothing names (at most
    16 bytes an element), and all are under ``threshold`` bytes (unknown sizes report), or is a tensor
    of Python numbers the code lists (one element per Python object: an index or length tensor, small
    whatever its count)."""
    sizes = [0 if s.nbytes is None and s.python_numbers else s.nbytes if s.nbytes is not None else s.max_nbytes
             for s in sites]
    return bool(sizes) and all(size is not None for size in sizes) and max(sizes) < threshold


def pageable(site: Site) -> bool:
    return site.kind is Kind.PAGEABLE


def is_pageable_async_copy(event: Event) -> bool:
    """PIN001's condition, shared with PIN007 (which yields to PIN001 at the same copy)."""
    return event.is_async and not event.staged and event.definitely(pageable)


def describe_site(site: Site, ctx: CheckContext) -> str:
    place = ctx.place(site.node, site.module)
    if site.api == "arithmetic":
        return f"array arithmetic at {place}"  # `a * 2`: a new array, not a call to name
    api = site.api.replace("numpy.", "np.")
    if site.variant == "tested-pageable":
        return f"the caller: `.is_pinned()` is False at {place}"  # analysis/narrowing.py
    if site.variant == "contiguous-copy":
        return f"PyTorch's contiguous copy of a non-contiguous view at {place}"
    if site.variant == "from-sequence":
        return f"`{api}` converting a Python sequence at {place}"
    return f"`{api}` at {place}"


def origins(sites, ctx: CheckContext) -> str:
    """Where the buffer may come from, each place once (one call can be several sites)."""
    return ", ".join(sorted({describe_site(s, ctx) for s in sites}))


def local_site(site: Site, ctx: CheckContext) -> bool:
    """The site is in the checked file, so a fix can rewrite it."""
    return site.module is None or ctx.module is None or site.module is ctx.module
