"""Small frozen types shared by every stage: memory kinds, allocation sites, events, findings."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst


class Kind(str, enum.Enum):
    """Host-memory kinds of the lattice in DESIGN.md (``maybe`` joins are sets of these)."""

    PAGEABLE = "pageable"
    PINNED = "pinned"
    PINNED_WC = "pinned+write-combined"
    MAPPED = "mapped"
    MAPPED_WC = "mapped+write-combined"
    MANAGED = "managed"
    DEVICE = "device"

    @property
    def is_pinned(self) -> bool:
        return self in (Kind.PINNED, Kind.PINNED_WC, Kind.MAPPED, Kind.MAPPED_WC)

    @property
    def is_write_combined(self) -> bool:
        return self in (Kind.PINNED_WC, Kind.MAPPED_WC)

    @property
    def is_mapped(self) -> bool:
        return self in (Kind.MAPPED, Kind.MAPPED_WC)


@dataclass(frozen=True, eq=False)
class Site:
    """Where a host buffer was allocated (or registered). Identity is the site object itself."""

    kind: Kind
    library: str          # "numpy", "cupy", "numba", "pycuda", "cuda-python", "torch"
    api: str              # qualified name or method of the allocating call
    node: cst.CSTNode     # the allocation call (fixes rewrite it; reports point to it)
    loops: tuple[int, ...]  # ids of the loops around the allocation, outermost first
    nbytes: Optional[int] = None
    pooled: bool = False
    fix: Optional[str] = None  # fix family from the API table, None when the site cannot be rewritten
    scope: str = ""        # function (qualified) in which the site was allocated
    fresh_each_iteration: bool = False  # a new buffer per use (DataLoader batches, get() results)
    via: frozenset = frozenset()  # for a call to a local allocating function: the sites inside it
    dtype: Optional[str] = None   # canonical element type ("float32") when known
    ndim: Optional[int] = None


class EventType(str, enum.Enum):
    ALLOC = "alloc"
    REGISTER = "register"
    COPY = "copy"
    READ = "read"
    WRITE = "write"
    SYNC = "sync"
    LAUNCH = "launch"
    ESCAPE = "escape"      # the buffer is stored, returned or handed to unknown code: it may outlive its scope
    LOOP_START = "loop-start"
    LOOP_END = "loop-end"


@dataclass(frozen=True, eq=False)
class Event:
    """One step of a scope's execution, in source order, with its loop and branch context."""

    type: EventType
    node: cst.CSTNode
    loops: tuple[int, ...]
    branch: tuple[tuple[int, int], ...]  # (if-id, arm) pairs around the event, outermost first
    sites: frozenset[Site] = frozenset()  # host buffer(s) involved; empty when unknown
    maybe_unknown: bool = False           # some of the buffer's possible values are unknown
    varies_in: frozenset = frozenset()    # loops in which the buffer is a different one each iteration
    api: str = ""
    direction: str = ""                   # "h2d" / "d2h" for copies
    is_async: bool = False                # the copy is asynchronous by API or by its arguments
    stream: object = None                 # abstract stream (or None for the default stream)
    dest_allocated: bool = False          # the copy allocated its own host destination
    staged: bool = False                  # the API stages pageable sources through a pinned pool itself
    library: str = ""                     # the library whose API made the event ("cupy", "torch", ...)
    stream_node: Optional[cst.CSTNode] = None  # the stream argument as written, when one was passed
    scope: str = ""

    @property
    def kinds(self) -> frozenset[Kind]:
        return frozenset(s.kind for s in self.sites)

    def definitely(self, predicate) -> bool:
        """True when the buffer is known and every possible site satisfies ``predicate``."""
        return bool(self.sites) and not self.maybe_unknown and all(predicate(s) for s in self.sites)


@dataclass(frozen=True)
class Location:
    row: int     # 1-based
    column: int  # 1-based


@dataclass(frozen=True)
class Edit:
    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe" | "display-only"
    message: str
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Related:
    message: str
    filename: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Optional[Fix] = None
    related: tuple[Related, ...] = field(default=())
    url: Optional[str] = None
    plan: Optional[object] = field(default=None, compare=False, repr=False)  # the fix in CST terms
    nbytes: Optional[int] = field(default=None, compare=False, repr=False)   # the buffer's constant size
    direction: str = field(default="", compare=False, repr=False)
    pooled: bool = field(default=False, compare=False, repr=False)  # the buffer comes from a pooling allocator
    cell: Optional[int] = None  # in a notebook: the cell (1-based, counting every cell) the rows refer to
    # The interprocedural path from the allocation to the finding: Related-like steps (message, filename,
    # location, end_location), rendered as JSON `trace` and SARIF `codeFlows`; empty when the evidence
    # stays in one function.
    trace: tuple = ()

    def sort_key(self):
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)
