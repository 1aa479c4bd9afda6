"""Small frozen types shared by every stage: memory kinds, allocation sites, events, findings."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # annotations only: reading findings (reports, the cache) needs no libcst
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


def kept_hash(obj, key_fields: Optional[tuple] = None) -> int:
    """A frozen dataclass's hash over ``key_fields`` (by default all its fields), computed once and
    kept on the object."""
    cached = obj.__dict__.get("_hash")
    if cached is None:
        cached = hash(tuple(getattr(obj, f.name) for f in (fields(obj) if key_fields is None else key_fields)))
        object.__setattr__(obj, "_hash", cached)
    return cached


@dataclass(frozen=True)
class Site:
    """Where a host buffer was allocated (or registered): a value, equal to any site made by the same
    call in the same way (so a dataflow fixpoint re-creates the same sites without a memo)."""

    kind: Kind
    library: str          # the buffer's maker: "numpy", "cupy", "numba", "pycuda", "cuda-python", "torch"
    api: str              # qualified name or method of the allocating call
    node: cst.CSTNode = field(repr=False)  # the allocation call (fixes rewrite it; reports point to it)
    loops: tuple = field(default=(), repr=False)  # the loops around the allocation (their nodes), outermost first
    nbytes: Optional[int] = None
    pooled: bool = False
    max_nbytes: Optional[int] = None  # where ``nbytes`` is not known but its element count is: at most
                                      # ``dtypes.WIDEST_ITEM`` bytes an element (a dtype from a fixture)
    fix: Optional[str] = None  # fix family from the API table, None when the site cannot be rewritten
    scope: str = ""        # function (qualified) in which the site was allocated
    fresh_each_iteration: bool = False  # a new buffer per use (DataLoader batches, get() results)
    via: frozenset = frozenset()  # for a call of a project function: the sites it allocates inside
    dtype: Optional[str] = None   # canonical element type ("float32") when known
    ndim: Optional[int] = None
    variant: str = ""      # several sites of one call (a registration of each argument, a copy's destination)
    uninitialized: bool = False  # the allocator leaves the memory uninitialized (reusing it changes nothing)
    from_values: bool = False  # made from data that is not a known host buffer (a list, a number, a parameter)
    python_numbers: bool = False  # made from a list of Python numbers the code builds (`torch.tensor([n] * b)`):
                                  # as many elements as a Python list holds, small when its size is not known
    values: Optional[tuple] = field(default=None, repr=False)  # the numbers of a literal 1-D array
                                                               # (`ghosts = np.array([2, 2, 2, 2])`)
    copies_data: bool = False  # it copies a host buffer into the new memory (``t.pin_memory()``, ``torch.tensor(h)``)
    leading_ones: int = 0  # leading dimensions of size 1 its shape spells out (``torch.empty([1, n, h, d])``)
    module: object = field(default=None, compare=False)  # the ModuleInfo holding ``node``

    def __hash__(self) -> int:
        # Computed once: sites are members of the sets every event, value and memo key holds, and a
        # dataclass's own hash walks every field (its `via` sites, their `via` ...) each time it is asked.
        return kept_hash(self, _SITE_KEY_FIELDS)

    def __getstate__(self) -> dict:
        # a node's hash is its identity in this process: another process works it out again
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_order")}

    def through(self) -> frozenset:
        """The sites a call's site came through, at every depth (``run()`` and ``torch.tensor`` for
        ``step()``); empty for a library call's own site."""
        found: set = set()
        todo = list(self.via)
        while todo:
            inner = todo.pop()
            if inner not in found:
                found.add(inner)
                todo.extend(inner.via)
        return frozenset(found)

    def origins(self) -> frozenset:
        """The allocations themselves: this site, or for a call's site the library calls at the end
        of what it came through."""
        return frozenset(s for s in self.through() if not s.via) if self.via else frozenset([self])

    @property
    def metadata_block(self) -> bool:
        """A pool's block of a size nothing says, made from Python values (per-step metadata from a
        list, pinned so that its copy does not wait): there is no pageable copy of the data to upload
        instead, nor a buffer of one size to reuse, and the pool hands the block back on each call."""
        return all(s.pooled and s.nbytes is None and s.from_values for s in self.origins())

    @property
    def fresh_pool_block(self) -> bool:
        """A pool's block taken for new data (``torch.empty(n, pin_memory=True)``, ``cupyx.empty_pinned``),
        not a pinned copy of a tensor (``t.pin_memory()``, which copies the data on every call): after
        the pool's first request of that size, taking it again locks no page."""
        return all(s.pooled and not s.copies_data for s in self.origins())


_SITE_KEY_FIELDS = tuple(f for f in fields(Site) if f.compare)


def first_site(sites) -> Site:
    """One site of several, the same on every run: the first in the code (a set's own first member
    changes with the hash seed and the interpreter's addresses, and so did the site a finding's
    message named, the loops PIN002 compared and the path a helper's depth was counted along)."""
    if len(sites) == 1:
        return next(iter(sites))
    return min(sites, key=site_order)


def site_order(site: Site) -> tuple:
    # Kept on the site: the last key (its repr, for ties) walks every site it came through, and the
    # analysis asks for the first of a set of sites again and again.
    found = site.__dict__.get("_order")
    if found is None:
        module = site.module
        found = (str(getattr(module, "filename", "")), node_place(module, site.node), site.api, site.variant,
                 site.kind.value, repr(site))
        object.__setattr__(site, "_order", found)
    return found


def node_place(module, node) -> tuple:
    """(line, column) where ``node`` starts in ``module`` (a ModuleInfo); (0, 0) for a node that is
    not the file's (one the analysis made) or a module that cannot say."""
    if not hasattr(module, "position"):
        return (0, 0)
    try:
        start = module.position(node).start
    except KeyError:
        return (0, 0)
    return (start.line, start.column)


def scoped_registration(site: Site) -> bool:
    """A registration that ends with its ``with`` block (``cuda.pinned(buf)``), directly or in a
    callee: the buffer is page-locked for that block only."""
    if site.via:
        return all(scoped_registration(inner) for inner in site.via)
    return site.variant.startswith("with-")


@dataclass(frozen=True)
class IssuedBy:
    """A call through which an asynchronous copy was issued, as its caller sees it: the copy made in
    ``m.upload(stream)`` runs, for the loop calling it, at that call (``PendingCopy.calls``)."""

    scope: str                                       # the calling function
    node: cst.CSTNode = field(repr=False)            # the call
    loops: tuple = field(default=(), repr=False)     # loop nodes around the call, outermost first
    module: object = field(default=None, compare=False)


@dataclass(frozen=True)
class TraceStep:
    """One step of an interprocedural path: a node of some module, and what happens there."""

    module: object          # ModuleInfo
    node: cst.CSTNode = field(repr=False)
    message: str = ""
    function: str = ""      # the function the step is in


@dataclass(frozen=True)
class PendingCopy:
    """An asynchronous copy that may still be running: the state the race rules read."""

    node: cst.CSTNode = field(repr=False)
    api: str
    direction: str
    sites: frozenset
    stream: object = None          # abstract stream, None for an unknown or device-wide one
    library: str = ""
    stream_node: Optional[cst.CSTNode] = field(default=None, repr=False)
    hypothetical: bool = False     # a pageable buffer's copy: blocking now, truly async once pinned
    family: str = ""               # the API's family (cuda-python.runtime vs .driver): which sync fits
    module: object = field(default=None, compare=False)
    trace: tuple = ()              # how the copy is reached from the scope that sees it pending
    loops: tuple = field(default=(), repr=False)  # loop nodes around the copy, outermost first
    varies: frozenset = field(default=frozenset(), repr=False)  # loops in which the copied buffer is a different one each iteration
    scope: str = ""                # the function the copy is in
    captured: bool = False         # recorded into a CUDA graph (stream capture): runs only when a graph is launched
    calls: tuple = ()              # IssuedBy of the calls it was issued through, innermost first


class EventType(str, enum.Enum):
    ALLOC = "alloc"
    REGISTER = "register"
    COPY = "copy"
    READ = "read"
    WRITE = "write"
    SYNC = "sync"
    LAUNCH = "launch"
    ESCAPE = "escape"      # the buffer is stored, returned or handed to unknown code: it may outlive its scope


@dataclass(frozen=True, eq=False)
class Event:
    """One step of a scope's execution, with its loop and branch context."""

    type: EventType
    node: cst.CSTNode = field(repr=False)
    loops: tuple = field(default=(), repr=False)   # loop nodes around the event, outermost first
    branch: tuple = field(default=(), repr=False)  # (if node, arm) pairs around the event, outermost first
    sites: frozenset = frozenset()        # host buffer(s) involved; empty when unknown
    maybe_unknown: bool = False           # some of the buffer's possible values are unknown
    varies_in: frozenset = frozenset()    # loops in which the buffer is a different one each iteration
    api: str = ""
    direction: str = ""                   # "h2d" / "d2h" for copies
    is_async: bool = False                # the copy is asynchronous by API or by its arguments
    stream: object = None                 # abstract stream (or None for the default stream)
    dest_allocated: bool = False          # the copy allocated its own host destination
    staged: bool = False                  # the API stages pageable sources through a pinned pool itself
    library: str = ""                     # the library whose API made the event ("cupy", "torch", ...)
    family: str = ""                      # the API's family in the tables (library, or library.prefix)
    stream_node: Optional[cst.CSTNode] = field(default=None, repr=False)  # the stream argument as written
    scope: str = ""
    pending: frozenset = frozenset()      # READ/WRITE: async copies of this buffer that may still run
    trace: tuple = ()                     # TraceSteps from this scope's call into the callee's event
    module: object = None                 # ModuleInfo of ``node``
    handed: bool = False                  # ESCAPE: only handed to a call nothing in the tree explains
    into_object: bool = False             # ESCAPE: stored in the fields of an object built here (a dataclass):
                                          # where that object goes, its own escape says
    visits: tuple = field(default=(), repr=False)  # COPY of a loop's element: (loop, (sites of each element, ...))
    conditional: bool = False             # lifted from a callee, where it ran under an `if` or in a loop
    once_per_object: bool = False         # under a method's cache guard: no caller's loop repeats it
    replaced: frozenset = frozenset()     # REGISTER in place: the sites of the buffer as it was before
    # `if` nodes of ``branch`` whose test this analysis found constant, the arm taken the only one: the
    # event runs wherever its scope runs, as far as those tests go (`if isinstance(off, np.ndarray):`)
    decided: frozenset = field(default=frozenset(), repr=False)

    def visited(self, predicate) -> frozenset:
        """The sites of the elements a copy of a loop's element takes in turn (``visits``) that satisfy
        ``predicate`` element by element: each of those buffers is copied on some iteration."""
        if not self.visits:
            return frozenset()
        return frozenset(s for group in self.visits[1] if group <= self.sites and all(predicate(x) for x in group)
                         for s in group)

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
    cell: Optional[int] = None  # in a notebook: the cell (1-based) the rows refer to


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
    trace: tuple[Related, ...] = field(default=())  # the interprocedural path, allocation to finding
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
