"""The abstract domain: what a value may be, with its provenance, and how values join and widen.

A host buffer is the set of allocation sites it may come from (a may-point-to set), so branch joins
fall out as set union: one kind when every site agrees, a "maybe" when they differ. Every value
records which library made it (a CuPy device array, a Numba ``DeviceNDArray``, a torch tensor, a
stream), because methods resolve through that provenance, never through their name alone.
``UNKNOWN`` is everything the checked code does not explain; rules never report on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from ..model import kept_hash, node_place
from ..walk import code_node


class Value:
    __slots__ = ()


def _kept_hash(value) -> int:
    """A frozen container's or object's hash (that of its fields, as a dataclass's own), computed once:
    they are keys of every analysis memo, and hashing one walks all it holds."""
    return kept_hash(value)


@dataclass(frozen=True)
class Unknown(Value):
    pass


UNKNOWN = Unknown()
# Inside a Const's set of values: "or any other value" (a parameter that defaults to 0).
ANYTHING = object()


@dataclass(frozen=True)
class Host(Value):
    """Host memory: a buffer, a view of one, or a raw pointer into one. ``sites`` empty with
    ``maybe_unknown`` is a host array of unknown kind (an ``np.ndarray`` parameter): its provenance
    is known (its methods resolve) but no rule can report on it."""

    sites: frozenset
    library: str = "numpy"        # which methods apply: "numpy" arrays or "torch" CPU tensors
    maybe_unknown: bool = False   # joined with an unknown value on some path
    batch: bool = False           # a DataLoader batch: indexing picks a tensor, not an element
    varies: frozenset = field(default=frozenset(), repr=False)  # loops whose iterations each see a different buffer (`for a in arrays`)
    contiguous: Optional[bool] = True  # False after a transpose; None when it cannot be told
    pointer: bool = False         # a raw address (cudaHostAlloc's ptr, h.ctypes): arithmetic on it reads nothing
    ndim: Optional[int] = None    # dimensions of this view when they differ from the allocation's (a reshape);
                                  # NDIM_UNKNOWN when nothing tells them (a ravel, h[None])
    # (loop, (sites of one element, ...)): a loop's element over a container whose elements are known
    # one by one (`for v in feeds.values()`): each element's buffers are taken in turn, not either
    # (``with_visits``); a join of two values forgets it.
    visits: tuple = field(default=(), repr=False)
    # A view that leaves out part of a dimension after one it spans (`t[:, :, :2]`, `t[:, 0]`): not
    # dense, so PyTorch cannot give the destination its strides and copies it through a contiguous
    # (pageable) tensor first, whatever memory it views.
    sliced: bool = False

    def kinds(self) -> frozenset:
        return frozenset(s.kind for s in self.sites)

    def dimensions(self) -> Optional[int]:
        if self.ndim is not None:
            return self.ndim if self.ndim != NDIM_UNKNOWN else None
        ndims = {s.ndim for s in self.sites}
        return ndims.pop() if len(ndims) == 1 else None



NDIM_UNKNOWN = -1


def _joined_ndim(a: Host, b: Host) -> Optional[int]:
    if a.ndim == b.ndim:
        return a.ndim
    dims = a.dimensions()
    return a.ndim if dims is not None and dims == b.dimensions() else NDIM_UNKNOWN


def unknown_host(library: str = "numpy") -> Host:
    return Host(frozenset(), library, maybe_unknown=True)


@dataclass(frozen=True)
class Device(Value):
    """Device memory made by ``library``; Numba arrays remember the stream they were made on.
    ``chosen_by``: the variable holding "cpu" or "cuda" that placed it (``torch.empty(n,
    device=target)``), taken as the GPU except where a test of that variable says the CPU."""

    library: str
    stream: Optional["Stream"] = None
    chosen_by: Optional[str] = None


@dataclass(frozen=True)
class Tensor(Value):
    """A torch tensor whose device nothing tells (a ``torch.Tensor`` parameter, a receiver that only
    PyTorch's signatures fit): its methods resolve as torch's, its memory is unknown. ``made``: the
    site of the new memory it is where it is on the CPU (``torch.stack(frames)`` of tensors nothing
    places: new pageable memory on the CPU, or device memory), seen once the code shows it is on the
    CPU (``.numpy()``)."""

    made: object = field(default=None, compare=True, repr=False)


@dataclass(frozen=True)
class Stream(Value):
    """A stream object, identified by the call (or parameter) that made it. ``default`` streams never
    make copies asynchronous."""

    origin: object = field(default=None, repr=False)
    default: bool = False
    library: str = ""


@dataclass(frozen=True)
class Const(Value):
    """A constant, or a small set of constants after a join (``"cuda" if ok else "cpu"``)."""

    values: frozenset

    @staticmethod
    def of(value) -> "Const":
        return Const(frozenset([value]))

    @property
    def single(self):
        return next(iter(self.values)) if len(self.values) == 1 else None

    def is_exactly(self, value) -> bool:
        return len(self.values) == 1 and next(iter(self.values)) == value


@dataclass(frozen=True)
class Scalar(Value):
    """A Python number (or a NumPy scalar) whose value nothing tells: an array's ``shape[0]``,
    ``len(x)``, ``int(s)``, arithmetic on those. A literal of such items is as small as one of
    constants (``np.array([h, w])`` is two numbers), so PIN007's byte threshold applies to it.
    ``kind``: "int", "float", or "number" when the two join."""

    kind: str = "number"
    objects: bool = False  # the length of a Python list of numbers the code builds (`len(ids)`): one per object
    # An integer at most this large, where the code bounds it: `m` of `for m in range(1, 2 * n + 2)`
    # with `n` a test's parametrized size, and sums and products of such numbers (`1 + m`); it only
    # ever bounds a size, so a bound too large is safe and None is "no bound".
    bound: Optional[int] = None


def numeric_const(value: Value) -> Optional[str]:
    """"int" or "float" (the wider) for a constant that is only numbers, else None."""
    if not isinstance(value, Const) or not value.values:
        return None
    kinds = set()
    for item in value.values:
        if isinstance(item, (bool, int)):
            kinds.add("int")
        elif isinstance(item, float):
            kinds.add("float")
        else:
            return None
    return "float" if "float" in kinds else "int"


def upper_bound(value: Value) -> Optional[int]:
    """The largest non-negative integer ``value`` may be: the largest of a few integer constants, or a
    bounded ``Scalar``'s bound; None where nothing bounds it (or it may be negative, or not an integer)."""
    if isinstance(value, Scalar):
        return value.bound
    if isinstance(value, Const) and value.values and \
            all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values):
        return max(value.values)
    return None


def scalar_kind(values) -> Optional[str]:
    """The kind of a number made of ``values`` (scalars and numeric constants, at least one a
    scalar), or None where one of them may be something else (an array, an unknown value)."""
    kinds = set()
    scalars = False
    for value in values:
        if isinstance(value, Scalar):
            kinds.add(value.kind)
            scalars = True
        else:
            kind = numeric_const(value)
            if kind is None:
                return None
            kinds.add(kind)
    if not scalars:
        return None
    return kinds.pop() if len(kinds) == 1 else ("float" if kinds <= {"int", "float"} else "number")


@dataclass(frozen=True)
class Items(Value):
    """A tuple or list of known length (a literal, ``(err, ptr)`` results); ``names``: a namedtuple's
    field names, in order (``slot.cpu`` is the item at ``cpu``'s place)."""

    items: tuple
    names: tuple = ()

    __hash__ = _kept_hash


@dataclass(frozen=True)
class RecordType(Value):
    """A tuple class made by ``collections.namedtuple("Slot", "name cpu gpu")``: calling it gives
    ``Items`` with these names."""

    names: tuple

    def build(self, positional: list, keywords: dict) -> Optional["Items"]:
        """The record a call with these arguments makes, or None when they do not fit its fields."""
        if len(positional) > len(self.names) or any(k not in self.names for k in keywords):
            return None
        values = list(positional) + [keywords.get(n, UNKNOWN) for n in self.names[len(positional):]]
        return Items(tuple(values), self.names)


@dataclass(frozen=True)
class Seq(Value):
    """A list, set or tuple of unknown length whose every element may be ``element``."""

    element: Value

    __hash__ = _kept_hash


@dataclass(frozen=True)
class Mapping(Value):
    """A dict: values of constant keys, and ``rest`` for what other keys may hold (None: nothing)."""

    entries: tuple = ()            # ((key, value), ...) sorted by repr(key)
    rest: Optional[Value] = None
    optional: frozenset = frozenset()  # keys of entries that some paths did not set (``f(**d)`` may lack them)

    def get(self, key) -> Optional[Value]:
        for k, v in self.entries:
            if k == key:
                return v
        return None

    def with_entry(self, key, value: Value) -> "Mapping":
        entries = dict(self.entries)
        entries[key] = value
        return Mapping(_sorted_entries(entries), self.rest, self.optional - {key})

    def values(self) -> list:
        found = [v for _, v in self.entries]
        return found + ([self.rest] if self.rest is not None else [])

    __hash__ = _kept_hash


def _sorted_entries(entries: dict) -> tuple:
    return tuple(sorted(entries.items(), key=lambda kv: repr(kv[0])))


def merged(into: Mapping, other: Mapping) -> Mapping:
    """``into | other`` (``d.update(other)``, ``d |= other``): the keys ``other`` surely has replace
    ``into``'s; the ones it may lack, and any key it holds besides, may or may not."""
    result = into
    for key, value in other.entries:
        previous = into.get(key)
        if key in other.optional and previous is not None:
            value = join(previous, value)
        result = result.with_entry(key, value)
        if key in other.optional and previous is None:
            result = Mapping(result.entries, result.rest, result.optional | {key})
    if other.rest is not None:
        result = Mapping(tuple((k, join(v, other.rest)) for k, v in result.entries),
                         other.rest if result.rest is None else join(result.rest, other.rest), result.optional)
    return result


def mapping(entries: dict, rest: Optional[Value] = None) -> Mapping:
    return Mapping(_sorted_entries(entries), rest)


@dataclass(frozen=True)
class DeviceSpec(Value):
    """A torch device: ``cuda`` True, False (cpu) or None (either). ``other``: a device that is
    neither, named as such (``torch.device("meta")``, ``"mps"``): a move there is no CUDA transfer."""

    cuda: Optional[bool]
    other: bool = False
    # The device of a tensor the code holds (``x.device``): code that moves a tensor there follows its
    # input's placement, so a CPU one says nothing of where the moved tensor was (``idx.to(x.device)``
    # in a module run on the CPU is no download), unlike a CPU the code names.
    of_data: bool = False


@dataclass(frozen=True)
class Loader(Value):
    """A torch DataLoader; iterating it yields batches allocated at ``site``, or ``batch`` where the
    checked code's own ``collate_fn`` says what a batch holds (see ``effects._loader``)."""

    site: object
    batch: Optional[Value] = field(default=None, repr=False)


@dataclass(frozen=True)
class Obj(Value):
    """Library objects whose methods matter: "event", "gpu-device", "pool", "pinned-pool", "kernel", "kernel-module"."""

    tag: str


# A library dataset whose items are (sample, class index), the index a Python int (torchvision's
# `ImageFolder`, `CIFAR10`: python.toml's `labelled-dataset` entries).
LABELLED_DATASET = Obj("labelled-dataset")
LABELLED_ITEM = Items((UNKNOWN, Scalar("int")))


@dataclass(frozen=True)
class Context(Value):
    """What a ``with`` statement enters: a stream made current, or registered (pinned/mapped) buffers."""

    stream: Optional[Stream] = None
    registered: tuple = ()  # ((environment key, Host value), ...)
    sync_on_exit: Optional[Stream] = None  # the block ends with a synchronize of this stream
    sync_node: object = None  # ... or of the whole device when this is set and the stream is None
    sync_api: str = ""        # what synchronizes, for traces ("auto_synchronize" when empty)


@dataclass(frozen=True)
class Function(Value):
    """A function of the checked code; ``bound`` is the receiver of a bound method."""

    node: object = field(repr=False)
    module: object = None       # ModuleInfo
    name: str = ""              # qualified name inside its module
    kernel: bool = False
    bound: Optional[Value] = None
    klass: object = None        # ClassRef of a method
    kind: str = "function"      # "function", "method", "static", "class", "property"
    # A nested function made where its enclosing function's parameters are known constants (or
    # functions of the checked code): (name, value) pairs it reads wherever it is later called (a
    # factory's `pin_memory=False` worker, a decorator's wrapper calling `func`).
    captured: tuple = ()
    undecorated: bool = False   # the body itself, as a decorator receives it
    # A lambda's variables bound more than once, as they are where it is made: what it reads if it
    # runs at once (`timed(lambda: d.copy_to_host(out, s))`, a callee that only calls it), not later.
    captured_now: tuple = field(default=(), repr=False)


@dataclass(frozen=True)
class ClassRef(Value):
    """A class of the checked code: calling it constructs an ``Instance``."""

    node: object = field(repr=False)
    module: object = None
    name: str = ""


PLACEMENT = "<placement>"  # the field of an object of the checked code saying where a module is (placement.py)
BUFFER = "<buffer>"        # prefix of the fields holding a module's registered buffers (placement.py)
LOADER_PART = "<loader>"   # the DataLoader an object of a DataLoader subclass of the checked code is (interproc.py)
_READ_PLACEMENTS = ("made", "cpu")  # placements under which a buffer reads as what was registered


def _unread_buffers(value: "Instance") -> bool:
    """The object holds registered buffers and nothing says where it is: they read as unknown."""
    placement = value.field(PLACEMENT)
    return (placement is None or placement.single not in _READ_PLACEMENTS) and \
        any(k.startswith(BUFFER) for k, _ in value.fields)


@dataclass(frozen=True)
class Instance(Value):
    """An object of a class of the checked code, with what its fields are known to hold."""

    klass: ClassRef
    fields: tuple = ()  # ((name, value), ...) sorted by name

    def field(self, name: str) -> Optional[Value]:
        for key, value in self.fields:
            if key == name:
                return value
        return None

    def with_fields(self, updates: dict) -> "Instance":
        fields = dict(self.fields)
        fields.update(updates)
        return Instance(self.klass, tuple(sorted(fields.items())))

    __hash__ = _kept_hash


@dataclass(frozen=True)
class ModuleRef(Value):
    """A module of the checked code, imported as a name (``import utils``, ``from . import io``)."""

    name: str


@dataclass(frozen=True)
class LibraryRef(Value):
    """A library module or name that the file reaches other than by its own import statements: one a
    module of the checked code imports and the file imports from it (``from pkg.libs import cudart``,
    ``pkg/libs.py`` doing ``from cuda.bindings import runtime as cudart``), or one loaded by
    ``importlib.import_module("cuda.bindings.runtime")``. Its attributes and calls are the library's,
    under the library's own name."""

    name: str


@dataclass(frozen=True)
class Alternatives(Value):
    """One of a few definitions of the checked code (``from .a import Engine`` on one path, ``from .b
    import Engine`` on another; ``A() if fast else B()``): calls and members apply to each."""

    options: frozenset


def ordered(options) -> list:
    """Alternatives in an order that is the same on every run, cheaply: by kind and name, and by their
    full text only among options those leave tied. (Sorting by text alone wrote out, for an object
    whose fields hold buffers, every loop around their allocations: minutes on Megatron-LM's tests.)"""
    groups: dict = {}
    for option in options:
        groups.setdefault(_order_key(option), []).append(option)
    out: list = []
    for key in sorted(groups):
        group = groups[key]
        out.extend(group if len(group) == 1 else sorted(group, key=_tie_key))
    return out


def _tie_key(value: Value) -> tuple:
    """Among options of one kind and name: where their code is, then their text. (Two lambdas of one
    function share a name, and their text leaves out the node: set order decided which ran first, and
    with it which analyses a budget cut, so a run's findings came and went with the hash seed.)"""
    node, module = getattr(value, "node", None), getattr(value, "module", None)
    module = getattr(module, "info", module)  # a ModuleContext's file
    place = node_place(module, code_node(node)) if node is not None else (0, 0)
    return place, repr(value)


def _order_key(value: Value) -> tuple:
    def where(module) -> str:
        return str(getattr(module, "filename", "") or getattr(getattr(module, "info", None), "filename", "") or "")
    if isinstance(value, Function):
        bound = value.bound
        owner = bound.klass.name if isinstance(bound, Instance) else getattr(bound, "name", "")
        return ("function", where(value.module), value.name, value.kind, str(owner))
    if isinstance(value, ClassRef):
        return ("class", where(value.module), value.name, "", "")
    if isinstance(value, Instance):
        return ("object", where(value.klass.module), value.klass.name, str(len(value.fields)), "")
    return (type(value).__name__, str(getattr(value, "name", "")), "", "", "")


_ALTERNATIVES_LIMIT = 4


_ARRAY_LIBRARIES = frozenset({"numba", "cupy"})


def _plain_device(value: "Device") -> "Device":
    return Device(value.library, value.stream, value.chosen_by)


def _definition(value: Value) -> bool:
    return isinstance(value, (Function, ClassRef, Instance, ModuleRef, LibraryRef, Alternatives))


def is_none(value: Value) -> bool:
    return isinstance(value, Const) and value.values == frozenset([None])


def _has_library(value: Value) -> bool:
    return isinstance(value, LibraryRef) or \
        (isinstance(value, Alternatives) and any(isinstance(o, LibraryRef) for o in value.options))


def _stand_in(value: Value) -> bool:
    """What an import shim gives when the library is missing (``None``, an object standing in for the
    module, something unknown): a call of a library name on it fails, so where such a call runs,
    the value was the library module."""
    return isinstance(value, (Instance, Unknown)) or is_none(value)


def module_stand_in(value: Value) -> bool:
    """What ``except ImportError: cuda = None`` binds in place of an imported module: where a library
    call on the name runs, the import succeeded and the name is the module. (Not an object of the
    checked code: a local of that class named like an import is that object.)"""
    return is_none(value)


def alternatives(a: Value, b: Value) -> Value:
    options = set(a.options if isinstance(a, Alternatives) else [a])
    options |= set(b.options if isinstance(b, Alternatives) else [b])
    if any(isinstance(option, LibraryRef) for option in options):
        options = {option for option in options if not _stand_in(option)}  # see _stand_in
    # Objects of one class join field by field instead.
    merged: dict = {}
    for option in options:
        # An object of a class and the class itself (`self` or `cls` after a classmethod called
        # through the object) are two options, not one to join field by field.
        key = ("object of", option.klass) if isinstance(option, Instance) else option
        merged[key] = join(merged[key], option) if key in merged else option
    if len(merged) > _ALTERNATIVES_LIMIT:
        return UNKNOWN
    return next(iter(merged.values())) if len(merged) == 1 else Alternatives(frozenset(merged.values()))


@dataclass(frozen=True)
class Iteration(Value):
    """``enumerate(x)`` / ``zip(a, b)`` / ``d.items()``: what each step yields; ``length`` the number of
    steps where the code states it (``range(3744)``: ``np.array(range(n))`` has that many elements)."""

    element: Value
    length: Optional[int] = None
    items: tuple = field(default=(), repr=False)  # what each step yields, where the code says it (a dict's values)
    same: bool = False  # every step gives the same buffers (an iterator's `__next__` returning its own field)


@dataclass(frozen=True)
class GpuFlag(Value):
    """A boolean the code computes as "this run uses a GPU": ``device.type == "cuda"``, ``device !=
    "cpu"``, ``t.is_cuda``, ``torch.cuda.is_available()`` of a device nothing names. Passed as
    ``non_blocking=`` it makes the copy asynchronous in every run where the copy goes to a GPU (and
    where it does not, there is no copy to block); as ``pin_memory=`` it pins in every GPU run. An
    ``if`` on it still takes both arms (a CPU tensor's ``is_cuda`` is False in a GPU run too), but for
    one on ``torch.cuda.is_available()`` itself (``transfer._gpu_run_answer``)."""


ON_GPU = GpuFlag()


def true_in_gpu_runs(value: Value) -> bool:
    """``True``, or a flag that is true in every run that uses a GPU (``non_blocking=use_cuda``)."""
    return value == Const.of(True) or isinstance(value, GpuFlag)


@dataclass(frozen=True)
class Super(Value):
    """``super()`` inside a method: attribute lookups start after ``klass`` in the bases."""

    klass: ClassRef
    receiver: Value


# ------------------------------------------------------------------------------------ joins
_CONST_LIMIT = 8      # a join of more constants than this is widened to UNKNOWN
_DEPTH_LIMIT = 4      # containers nested deeper than this are widened to UNKNOWN


def _collated_batch(value: Value) -> bool:
    """A loader's batch the default collate function makes field by field (``effects._default_collated``):
    a tuple or dict of the loader's tensors."""
    fields = value.items if isinstance(value, Items) else [v for _, v in value.entries] \
        if isinstance(value, Mapping) and value.rest is None else ()
    return bool(fields) and all(isinstance(f, Host) and f.batch for f in fields)


def _maybe_unknown_batch(value: Value) -> Value:
    """The batch joined with a value nothing explains: each field is its tensor or unknown, as a
    batch that is one tensor is (``Host.maybe_unknown``)."""
    if isinstance(value, Items):
        return replace(value, items=tuple(replace(f, maybe_unknown=True) for f in value.items))
    return replace(value, entries=tuple((k, replace(f, maybe_unknown=True)) for k, f in value.entries))


def join(a: Value, b: Value) -> Value:
    if a is b or a == b:
        return a
    if isinstance(a, Host) and isinstance(b, Host):
        return Host(a.sites | b.sites, a.library if a.library == b.library else "numpy",
                    a.maybe_unknown or b.maybe_unknown, a.batch and b.batch, a.varies | b.varies,
                    a.contiguous if a.contiguous == b.contiguous else None, a.pointer and b.pointer,
                    _joined_ndim(a, b), sliced=a.sliced and b.sliced)
    # A buffer, a device array or None (`h = None` then `if ...: h = np.empty(n)`; a field None until a
    # method allocates it): what copies it, had it been None, would have failed, so where it runs the
    # value is the buffer. (Not a stream: `stream=None` is the default stream.) A memo guard on a
    # field (`if self.buf is None:` in the method that sets it) is told apart by the evaluator.
    # So is a tuple of them (`return None` when a ring is empty, else `return slot, ts`: the caller
    # unpacks it only past `if item is None: continue`).
    if isinstance(a, (Host, Seq, Device, Items)) and is_none(b):
        return a
    if isinstance(b, (Host, Seq, Device, Items)) and is_none(a):
        return b
    if isinstance(a, Host) and isinstance(b, Unknown):
        return replace(a, maybe_unknown=True)
    if isinstance(b, Host) and isinstance(a, Unknown):
        return replace(b, maybe_unknown=True)
    for whole, part in ((a, b), (b, a)):
        if isinstance(whole, Host) and whole.batch and whole.sites and isinstance(part, (Mapping, Seq, Items)) and \
                _only_its_tensors(part, whole.sites):
            # `sd = torch.load(p, map_location="cpu")`, then on one arm `sd = {k: v for k, v in sd.items()
            # if ...}`: a dict of the same restored tensors, whose items are still one of them (survey 57 GB)
            return whole
    if isinstance(b, Unknown) and _collated_batch(a):
        return _maybe_unknown_batch(a)  # a loader's batch, field by field, or something else
    if isinstance(a, Unknown) and _collated_batch(b):
        return _maybe_unknown_batch(b)
    if isinstance(a, Scalar) or isinstance(b, Scalar):
        kind = scalar_kind((a, b))
        bounds = (upper_bound(a), upper_bound(b))
        return Scalar(kind, bound=max(bounds) if None not in bounds and kind == "int" else None) if kind else UNKNOWN
    if isinstance(a, Const) and isinstance(b, Const):
        values = a.values | b.values
        return Const(values) if len(values) <= _CONST_LIMIT else UNKNOWN
    if isinstance(a, Device) and isinstance(b, Device) and a.library == b.library:
        return Device(a.library, a.stream if a.stream == b.stream else None,
                      a.chosen_by if a.chosen_by == b.chosen_by else None)
    if isinstance(a, Device) and isinstance(b, Device) and {a.library, b.library} <= _ARRAY_LIBRARIES:
        # `d = cuda.device_array(n)` under `if kind == "numba":`, `d = cp.empty(n)` under `if kind ==
        # "cupy":`: one of the two; a method only one of them has is that one's (the other would have
        # raised), as a benchmark comparing backends calls them under the same tests (survey 56 FE)
        return Alternatives(frozenset([_plain_device(a), _plain_device(b)]))
    if isinstance(a, DeviceSpec) and isinstance(b, DeviceSpec):
        if a.cuda == b.cuda and a.other == b.other:
            return DeviceSpec(a.cuda, a.other, a.of_data and b.of_data)
        return DeviceSpec(None)
    for one, many in ((a, b), (b, a)):
        if isinstance(one, Device) and isinstance(many, (Items, Seq)):
            # `return out[0] if len(out) == 1 else out`: one device array or a list of them; indexing
            # or iterating either gives a device array of that library (its copies and methods).
            element = element_of(many)
            if isinstance(element, Device) and element.library == one.library:
                return Device(one.library)
    if isinstance(a, Items) and isinstance(b, Items) and len(a.items) == len(b.items):
        return Items(tuple(join(x, y) for x, y in zip(a.items, b.items)), a.names if a.names == b.names else ())
    if isinstance(a, (Items, Seq)) and isinstance(b, (Items, Seq)):
        if isinstance(a, Items) and not a.items:
            return b if isinstance(b, Seq) else Seq(element_of(b))  # an empty list adds no element
        if isinstance(b, Items) and not b.items:
            return a if isinstance(a, Seq) else Seq(element_of(a))
        return Seq(join(element_of(a), element_of(b)))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        entries = dict(a.entries)
        for key, value in b.entries:
            entries[key] = join(entries[key], value) if key in entries else value
        rest = a.rest if b.rest is None else (b.rest if a.rest is None else join(a.rest, b.rest))
        # A key one side lacks may be absent (a read of it fails there, so a read still sees the value
        # set; but `f(**d)` then passes no such keyword).
        one_sided = set(entries) - (set(k for k, _ in a.entries) & set(k for k, _ in b.entries))
        return Mapping(_sorted_entries(entries), rest, a.optional | b.optional | frozenset(one_sided))
    if isinstance(a, Instance) and isinstance(b, Instance) and a.klass == b.klass:
        left, right = dict(a.fields), dict(b.fields)
        fields = {k: join(left[k], right[k]) if k in left and k in right else (left.get(k) or right.get(k))
                  for k in set(left) | set(right)}
        if left.get(PLACEMENT) != right.get(PLACEMENT):
            del fields[PLACEMENT]  # where a torch module is: known only where both paths agree (placement.py)
        return Instance(a.klass, tuple(sorted(fields.items())))
    if isinstance(a, Iteration) and isinstance(b, Iteration):
        return Iteration(join(a.element, b.element), a.length if a.length == b.length else None)
    if _has_library(a) and _stand_in(b):
        return a
    if _has_library(b) and _stand_in(a):
        return b
    if _definition(a) and _definition(b):
        return alternatives(a, b)
    if isinstance(a, (Instance, Alternatives)) and is_none(b) or isinstance(b, (Instance, Alternatives)) and is_none(a):
        # `loader = None`, then `if cfg.packing: loader = Packer(...)`: the object or None, which a
        # method call or an attribute read could not have run on (nanogpt-titans, survey 53 CC); a
        # test of `loader is None` still goes either way.
        return alternatives(a, b)
    if isinstance(a, Instance) and isinstance(b, Unknown) or isinstance(b, Instance) and isinstance(a, Unknown):
        # `self.norm = self.critic.v_out if popart else ValueNorm(dev)`: an object of the checked code
        # or something else; a method call on it runs the object's method where it is the object
        return Alternatives(frozenset([a, b]))
    if isinstance(a, Function) and isinstance(b, Unknown) or isinstance(b, Function) and isinstance(a, Unknown):
        # `def get_batch(split): ...` on one arm, `get_batch = lambda split: (x, y)` on the other (a
        # lambda computing nothing is unknown): calling it runs the function where it is the function
        # (nanoGPT's bench.py once its flags are the configurator's, survey 57 GC)
        return Alternatives(frozenset([a, b]))
    if isinstance(a, Loader) and isinstance(b, Loader):
        # `ld = DataLoader(a, ...) if cifar else DataLoader(b, ...)`: either; a batch is either's batch
        return alternatives(a, b)
    if _definition(a) and isinstance(b, Loader) or _definition(b) and isinstance(a, Loader):
        # `if use_prefetcher: loader = PrefetchLoader(loader)`: the DataLoader or the object of the
        # checked code wrapping it; iterating either runs what each does.
        return alternatives(a, b)
    if isinstance(a, Host) and a.sites and _torch_elsewhere(b) and a.library == "torch":
        # `t.pin_memory() if pin else t`, `t.pin_memory() if t.device.type == "cpu" else t`: these
        # buffers or a tensor (on the GPU), whose stores and escapes still follow these buffers
        return replace(a, maybe_unknown=True)
    if isinstance(b, Host) and b.sites and _torch_elsewhere(a) and b.library == "torch":
        return replace(b, maybe_unknown=True)
    if isinstance(a, (Tensor, Host)) and isinstance(b, (Tensor, Device)) and _torch(a) and _torch(b):
        return Tensor()
    if isinstance(b, (Tensor, Host)) and isinstance(a, (Tensor, Device)) and _torch(a) and _torch(b):
        return Tensor()
    return UNKNOWN


def _only_its_tensors(container: Value, sites: frozenset) -> bool:
    leaves = flatten([container])
    return bool(leaves) and all(isinstance(v, Host) and v.sites and v.sites <= sites for v in leaves)


def holds_memory(value: Value) -> bool:
    """A buffer or device array, or a container holding one (not a list of numbers or names)."""
    if isinstance(value, (Host, Device)):
        return True
    return any(isinstance(v, (Host, Device)) for v in flatten([value]))


def _torch_elsewhere(value: Value) -> bool:
    return isinstance(value, Tensor) or isinstance(value, Device) and value.library == "torch"


def _torch(value: Value) -> bool:
    return isinstance(value, Tensor) or getattr(value, "library", None) == "torch"


def widen(value: Value, depth: int = 0) -> Value:
    """Bound a value so a loop's fixpoint terminates: deep containers and long constant sets go."""
    if depth > _DEPTH_LIMIT:
        return UNKNOWN
    if isinstance(value, Items):
        return replace(value, items=tuple(widen(v, depth + 1) for v in value.items))
    if isinstance(value, Seq):
        return Seq(widen(value.element, depth + 1))
    if isinstance(value, Mapping):
        return Mapping(tuple((k, widen(v, depth + 1)) for k, v in value.entries),
                       widen(value.rest, depth + 1) if value.rest is not None else None, value.optional)
    if isinstance(value, Instance):
        return Instance(value.klass, tuple((k, widen(v, depth + 1)) for k, v in value.fields))
    if isinstance(value, Iteration):
        return Iteration(widen(value.element, depth + 1))
    if isinstance(value, Alternatives):
        return Alternatives(frozenset(widen(v, depth + 1) for v in value.options))
    return value


def widen_join(old: Value, new: Value) -> Value:
    """The join at a loop head after it has been visited a few times: constants that keep changing
    (a counter) become unknown at once instead of growing one value per pass."""
    joined = join(old, new)
    if joined != old and isinstance(joined, Const):
        return UNKNOWN
    return widen(joined)


# ------------------------------------------------------------------------------------ helpers
def element_of(value: Optional[Value]) -> Value:
    """What iterating ``value`` yields."""
    if isinstance(value, Loader):
        if value.batch is not None:
            return value.batch
        return Host(frozenset([value.site]), "torch", batch=True)
    if isinstance(value, Iteration):
        return value.element
    if isinstance(value, Seq):
        return value.element
    if isinstance(value, Items):
        if not value.items:
            return UNKNOWN
        element = value.items[0]
        for other in value.items[1:]:
            element = join(element, other)
        return element
    if isinstance(value, Host) and value.batch:
        return value  # `for t in batch`: the batch's tensors (or a tensor batch's rows), as `batch[0]` is
    if isinstance(value, Host) and not value.pointer and value.sites and (value.dimensions() or 0) >= 2:
        # The rows of a 2-D (or more) array: views of the same memory.
        return replace(value, ndim=value.dimensions() - 1)
    if isinstance(value, Host) and not value.pointer and value.sites and not value.maybe_unknown and \
            value.library == "numpy" and value.dimensions() == 1:
        # The elements of a 1-D NumPy array: numbers (`for i, a in enumerate(alphas_cumprod):` of a
        # respaced diffusion schedule, survey 52 BE)
        return Scalar("number")
    if isinstance(value, Device):
        return value
    if isinstance(value, Obj) and value.tag.startswith("table"):
        from .tabular import element
        return element(value)
    if isinstance(value, Alternatives):
        element = None
        for option in value.options:
            element = element_of(option) if element is None else join(element, element_of(option))
        return element
    return UNKNOWN


def add_element(container: Value, element: Value) -> Value:
    """The container after ``element`` is put in it (an empty list holds just that element)."""
    if isinstance(container, Items) and not container.items:
        return Seq(element)
    if isinstance(container, (Items, Seq)):
        return Seq(join(element_of(container), element))
    if isinstance(container, Mapping):
        return Mapping(container.entries, element if container.rest is None else join(container.rest, element),
                       container.optional)
    return Seq(element)


_APPENDED_ITEMS = 8  # a list of this many appends in straight-line code still has their count


def appended(container: Value, element: Value) -> Value:
    """The list after ``append(element)``: a list of known length one longer (``models = []`` and a
    loop over the one-item list its caller passes appends once: a one-item list, whose own loops run
    once), where a loop's head has not already joined its lengths into a list of any length."""
    if isinstance(container, Items) and not container.names and len(container.items) < _APPENDED_ITEMS:
        return Items(container.items + (element,))
    return add_element(container, element)


def iterated_as_views(value: Value) -> bool:
    """Iterating a torch tensor gives views of its rows (``Tensor.__iter__`` is ``unbind(0)``), even
    of a 1-D one (0-d tensors): nothing is read until a row is (aphrodite's
    ``list(t.to("cpu", non_blocking=True))``, read after an event's synchronize, survey 54 DF)."""
    return isinstance(value, Host) and value.library == "torch" and not value.maybe_unknown


def with_visits(element: Value, items: tuple, loop) -> Value:
    """``element`` (the join of ``items``) as the variable of ``loop`` over them: each of the items is
    taken in turn, so a copy on every iteration copies each (``Host.visits``)."""
    if len(items) < 2:
        return element
    if isinstance(element, Host):
        groups = tuple(frozenset(v.sites) for v in items if isinstance(v, Host) and v.sites and not v.maybe_unknown)
        return replace(element, visits=(loop, groups)) if groups else element
    if isinstance(element, Items) and all(isinstance(v, Items) and len(v.items) == len(element.items) for v in items):
        return replace(element, items=tuple(with_visits(part, tuple(v.items[i] for v in items), loop)
                                            for i, part in enumerate(element.items)))
    return element


def varying_in(value: Value, loop) -> Value:
    """The element a loop binds on each iteration of a container: a different buffer every time."""
    if isinstance(value, Host):
        return replace(value, varies=value.varies | {loop})
    if type(value) in _COMPOSITES and not any(type(leaf) is Host for leaf in _leaves(value)):
        return value  # no buffer in it (an object of many objects: rebuilding it was a cold run's cost)
    if isinstance(value, Items):
        return replace(value, items=tuple(varying_in(item, loop) for item in value.items))
    if isinstance(value, Instance):
        return Instance(value.klass, tuple((k, varying_in(v, loop)) for k, v in value.fields))
    if isinstance(value, Seq):
        return Seq(varying_in(value.element, loop))
    if isinstance(value, Mapping):
        return Mapping(tuple((k, varying_in(v, loop)) for k, v in value.entries),
                       varying_in(value.rest, loop) if value.rest is not None else None, value.optional)
    return value


def leaves(value) -> tuple:
    """The plain values a container or object holds, looked through to the bottom; a plain value is its
    own one leaf."""
    return _leaves(value) if type(value) in _COMPOSITES else (value,)


def _leaves(value) -> tuple:
    """The plain values inside a container or object, in order, kept on it (values are frozen, and
    an object's fields are looked through for nearly every call: recomputing them was a third of a
    cold run of a project whose objects hold objects)."""
    cached = value.__dict__.get("_leaves")
    if cached is not None:
        return cached
    kind = type(value)
    if kind is Items:
        children = value.items
    elif kind is Seq or kind is Iteration:
        children = (value.element,)
    elif kind is Mapping:
        children = value.values()
    else:
        children = [v for _, v in value.fields]
    out: list = []
    for child in children:
        if type(child) in _COMPOSITES:
            out.extend(_leaves(child))
        else:
            out.append(child)
    found = tuple(out)
    object.__setattr__(value, "_leaves", found)
    return found


def flatten(values) -> list:
    """Every value held in ``values``, looking inside containers and objects, in order."""
    out = []
    for value in values:
        if type(value) in _COMPOSITES:
            out.extend(_leaves(value))
        else:
            out.append(value)
    return out


def sites_of(value: Value) -> tuple[frozenset, bool]:
    if isinstance(value, Host):
        return value.sites, value.maybe_unknown
    return frozenset(), True


def interesting(value: Value) -> bool:
    """Whether a value carries anything a callee's analysis could use: a buffer, a device object, a
    stream, a definition of the checked code (an object counts by what its fields hold). Calls whose
    arguments are all uninteresting share one analysis of the callee."""
    kind = type(value)
    if kind is Alternatives:
        return any(interesting(option) for option in value.options)
    if kind not in _COMPOSITES:
        return isinstance(value, _INTERESTING)
    cached = value.__dict__.get("_interesting")
    if cached is None and kind is Instance and _unread_buffers(value):
        # a module's registered buffers read as unknown where nothing says where it is (placement.py):
        # they tell a callee nothing, and would make every method call on the module one of its own
        cached = any(interesting(v) for k, v in value.fields if not k.startswith(BUFFER))
        object.__setattr__(value, "_interesting", cached)
    if cached is None:
        cached = any(isinstance(item, _INTERESTING) or type(item) is Alternatives and interesting(item)
                     for item in _leaves(value))  # a field holding one of two loaders is interesting
        object.__setattr__(value, "_interesting", cached)
    return cached


def rebuild(value: Value, each) -> Value:
    """A container or object of the same shape as ``value`` with ``each`` applied to what it holds."""
    if isinstance(value, Items):
        return replace(value, items=tuple(each(v) for v in value.items))
    if isinstance(value, Seq):
        return Seq(each(value.element))
    if isinstance(value, Mapping):
        return Mapping(tuple((k, each(v)) for k, v in value.entries),
                       each(value.rest) if value.rest is not None else None, value.optional)
    if isinstance(value, Instance):
        return Instance(value.klass, tuple((k, each(v)) for k, v in value.fields))
    if isinstance(value, Iteration):
        return Iteration(each(value.element), value.length)
    raise TypeError(type(value).__name__)


def map_sites(value: Value, mapping_fn) -> Value:
    """``value`` with every host site replaced by ``mapping_fn(site)`` (same site when it returns it);
    the same object when no site changes."""
    if isinstance(value, Host):
        sites = frozenset(mapping_fn(s) for s in value.sites)
        return value if sites == value.sites else replace(value, sites=sites)
    if type(value) in _COMPOSITES:
        if all(mapping_fn(s) == s for s in all_sites(value)):
            return value
        return rebuild(value, lambda v: map_sites(v, mapping_fn))
    if isinstance(value, Loader):
        return Loader(mapping_fn(value.site), map_sites(value.batch, mapping_fn) if value.batch is not None else None)
    return value


def map_leaves(value: Value, mapping_fn) -> Value:
    """``value`` with every value that is not a container or an object replaced by
    ``mapping_fn(leaf)``, through containers, objects and alternatives."""
    if type(value) in _COMPOSITES:
        return rebuild(value, lambda v: map_leaves(v, mapping_fn))
    if isinstance(value, Alternatives):
        return Alternatives(frozenset(map_leaves(v, mapping_fn) for v in value.options))
    return mapping_fn(value)


def map_hosts(value: Value, mapping_fn) -> Value:
    """``value`` with every host buffer replaced by ``mapping_fn(host)``, through containers and objects."""
    return map_leaves(value, lambda leaf: mapping_fn(leaf) if isinstance(leaf, Host) else leaf)


def _leaf_sites(item, found: set) -> None:
    if isinstance(item, Host):
        found |= item.sites
    elif isinstance(item, Loader):
        found.add(item.site)
        if item.batch is not None:
            found |= all_sites(item.batch)


def all_sites(value: Value) -> frozenset:
    """The allocation sites of every buffer (and loader) inside ``value``."""
    if type(value) in _COMPOSITES:
        cached = value.__dict__.get("_sites")
        if cached is None:
            found: set = set()
            for item in _leaves(value):
                _leaf_sites(item, found)
            cached = frozenset(found)
            object.__setattr__(value, "_sites", cached)
        return cached
    found = set()
    _leaf_sites(value, found)
    return frozenset(found)


_COMPOSITES = frozenset((Items, Seq, Iteration, Mapping, Instance))
_INTERESTING = (Host, Device, Stream, Tensor, Loader, ClassRef, Function, DeviceSpec)
