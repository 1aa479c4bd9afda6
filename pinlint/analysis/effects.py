"""One handler per table effect: what a library call does to host memory, streams and devices.

``EFFECTS`` maps each effect name of ``pinlint.tableschema`` to its handler; the two are checked
against each other when this module is imported, so a table can only name effects that exist.
A handler gets the evaluator, the table entry, the call node, the receiver (for methods) and the
evaluated arguments, and returns the call's value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

import libcst as cst

from .. import tableschema
from ..apitables import Api, ArgSpec
from ..imports import dotted
from ..model import EventType, Kind, first_site
from ..walk import code_nodes, small_statements, suite_body
from .domain import (LABELLED_DATASET, LABELLED_ITEM, ANYTHING, all_sites, map_sites, numeric_const, NDIM_UNKNOWN, ON_GPU, UNKNOWN, Const, Context, Device, DeviceSpec, Host, Items, Iteration, LibraryRef, Loader, Obj, Scalar, Seq, Stream,
                     Tensor, Value, element_of, flatten, join, unknown_host, Function, Instance, Mapping, rebuild,
                     true_in_gpu_runs, interesting, map_hosts, ClassRef, ModuleRef, Alternatives, ordered)
from .dtypes import canonical_dtype, common, element_bound, element_count, has_float, item_size, range_bound, range_length, size_bound, transposed, widest_item
from .state import CAPTURING, MUTATED, STREAM
from .tabular import GIVES, is_tabular

_TRANSPOSING = frozenset({"T", "mT", "transpose", "swapaxes", "permute", "moveaxis", "rollaxis", "flip", "flipud",
                          "fliplr", "rot90"})


@dataclass(frozen=True)
class Args:
    positional: tuple           # (expr, value)
    keywords: dict              # name -> (expr, value)
    star: bool                  # *args or **kwargs present: positions after them are unknown
    starred: tuple = ()         # values passed through *args / **kwargs (or after them)
    kwargs_unknown: bool = False  # a **mapping whose keys are not known: any keyword may be in it

    def get(self, spec: Optional[ArgSpec]) -> Optional[tuple]:
        if spec is None:
            return None
        if spec.kw is not None and spec.kw in self.keywords:
            return self.keywords[spec.kw]
        if spec.pos is not None and spec.pos < len(self.positional):
            return self.positional[spec.pos]
        return None

    def value(self, spec: Optional[ArgSpec], default: Value = UNKNOWN) -> Value:
        found = self.get(spec)
        if found is None and self.kwargs_unknown and spec is not None and spec.kw is not None:
            return UNKNOWN  # perhaps passed in the **mapping: not the default for sure
        return found[1] if found is not None else default

    def unsure(self, keyword: Optional[str]) -> bool:
        """Whether ``keyword`` may be passed without being written (in a ``**mapping``)."""
        return bool(keyword) and self.kwargs_unknown and keyword not in self.keywords

    def present(self, spec: Optional[ArgSpec]) -> bool:
        return self.get(spec) is not None

    def values(self) -> list:
        return [v for _, v in (*self.positional, *self.keywords.values())] + list(self.starred)


def apply(ev, api: Api, node: cst.Call, receiver: Optional[Value], args: Args) -> Value:
    if api.effect != "table" and _holds_a_table(args):
        # A table's cells handed to an array library (`torch.from_numpy(df.values)`, `np.asarray(col)`):
        # an array of them, which nothing here sizes, as any array nothing explains
        args = _tables_unknown(args)
    return EFFECTS[api.effect](ev, api, node, receiver, args)


def _holds_a_table(args: Args) -> bool:
    return any(is_tabular(v) for v in args.values())


def _tables_unknown(args: Args) -> Args:
    def plain(pair):
        return (pair[0], UNKNOWN) if is_tabular(pair[1]) else pair
    return replace(args, positional=tuple(plain(p) for p in args.positional),
                   keywords={k: plain(p) for k, p in args.keywords.items()},
                   starred=tuple(UNKNOWN if is_tabular(v) else v for v in args.starred))


def _arg_value(spec: Optional[ArgSpec], receiver: Optional[Value], args: Args) -> Value:
    if spec is None:
        return UNKNOWN
    if spec.is_self:
        return receiver if receiver is not None else UNKNOWN
    return args.value(spec)


def _err_tuple(api: Api, value: Value) -> Value:
    return Items((UNKNOWN, value)) if api.opt("returns") == "err-tuple" else value


def host_flavour(ev, api: Api, receiver: Optional[Value]) -> str:
    if isinstance(receiver, Host):
        return receiver.library
    return ev.tables.host_flavour.get(api.library, "numpy")


def display(ev, api: str, flavour: str) -> str:
    """Method names read as the receiver's class: a torch tensor's ``float`` is ``Tensor.float``."""
    host_class = ev.tables.receiver_class("host")
    if flavour == "torch" and api.startswith(host_class + "."):
        return ev.tables.receiver_class("torch.host") + api[len(host_class):]
    return api


# ------------------------------------------------------------------------------ devices & flags
def other_device(value: Value, tables) -> bool:
    """A device that is neither the CPU nor a CUDA GPU, named as such (``"meta"``, ``"mps"``,
    ``torch.device("meta")``): moving a tensor there copies nothing between host and GPU."""
    if isinstance(value, DeviceSpec):
        return value.other
    if isinstance(value, Const) and value.values:
        other = re.compile(tables.device_strings.get("other", r"^meta$"))
        return all(isinstance(option, str) and other.match(option) for option in value.values)
    return False


def device_of(value: Value, tables) -> Optional[bool]:
    """True for a CUDA device, False for the CPU, None when it cannot be told."""
    if isinstance(value, DeviceSpec):
        if value.other:
            return None
        return value.cuda if value.cuda is not None else True
    if isinstance(value, Const):
        cuda = re.compile(tables.device_strings.get("cuda", r"^cuda$"))
        cpu = re.compile(tables.device_strings.get("cpu", r"^cpu$"))
        answers = set()
        for option in value.values:
            if isinstance(option, bool) or option is ANYTHING:
                return None
            if isinstance(option, int):
                answers.add(True)
            elif isinstance(option, str) and cuda.match(option):
                answers.add(True)
            elif isinstance(option, str) and cpu.match(option):
                answers.add(False)
            else:
                return None
        # "cuda" if available else "cpu": the code's intent on a GPU machine is the CUDA path.
        return True if True in answers else (False if answers else None)
    return None


def _chosen_by(expr, value: Value, tables) -> Optional[str]:
    """The variable that placed an allocation when it holds the CPU or a GPU (``target = "cpu" if
    offload else "cuda"``): a test of it (``if target == "cpu":``) places the allocation again."""
    if not isinstance(value, Const) or len(value.values) < 2:
        return None
    places = {device_of(Const.of(option), tables) for option in value.values}
    return dotted(expr) if places == {True, False} else None


def placed(ev, value: Value) -> Value:
    """A tensor placed by a variable that holds the CPU's name here (``if target == "cpu":`` around a
    copy into ``torch.empty(n, device=target)``) is a CPU tensor whose memory nothing tells."""
    if isinstance(value, Device) and value.chosen_by is not None:
        place = ev.state.env.get(value.chosen_by)
        if isinstance(place, Const) and device_of(place, ev.tables) is False:
            return unknown_host(value.library)
    return value


def names_its_target(ev, api: Api, args: Args) -> bool:
    """On a receiver nothing explains, a move (torch's ``.to``) is a copy the call itself decides only
    when its target names the CPU: a move to a GPU of a tensor that may already be there is no copy,
    and of a host tensor nothing known, so it is left to the generic rule for unknown calls."""
    spec = api.arg("target_device")
    if spec is None:
        return True
    target = args.get(spec)
    return target is not None and device_of(target[1], ev.tables) is False and not _a_callers_choice(ev, target[0])


def _a_callers_choice(ev, expr) -> bool:
    """``w.to(dev, non_blocking=True)`` in a helper whose caller passes the CPU as ``dev``: the call is
    written for the GPU its other callers pass (a weight already on the CPU stays where it is), so
    it does not decide on its own that ``w`` is on a device (ai-toolkit's materialize helper). A
    parameter whose default is the CPU (``def offload(t, device="cpu")``) still does."""
    function = ev.invocation.function
    if function is None or not isinstance(expr, cst.Name) or not isinstance(function.node, cst.FunctionDef):
        return False
    params = function.node.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == expr.value:
            default = param.default
            return not (isinstance(default, cst.SimpleString) and
                        device_of(Const.of(default.evaluated_value), ev.tables) is False)
    return False


def apply_flags(tables, kind: Kind, flags: Value, registration: bool = False) -> Optional[Kind]:
    if not isinstance(flags, Const) or not all(isinstance(v, int) and not isinstance(v, bool) for v in flags.values):
        return None
    bits = "host_register_flags" if registration else "host_alloc_flags"
    mapped_bit = tables.flag_bit(bits, "mapped")
    wc_bit = tables.flag_bit(bits, "write_combined")
    results = set()
    for value in flags.values:
        mapped = bool(value & mapped_bit) or kind is Kind.MAPPED
        wc = bool(wc_bit) and bool(value & wc_bit)
        results.add({(False, False): Kind.PINNED, (False, True): Kind.PINNED_WC,
                     (True, False): Kind.MAPPED, (True, True): Kind.MAPPED_WC}[(mapped, wc)])
    return results.pop() if len(results) == 1 else None


# ------------------------------------------------------------------------------ allocations
def _joined_elements(value: Value) -> Value:
    """What ``torch.cat``/``stack`` take their device from: the tensors of a list or tuple (all on the
    host: a host tensor; all on a device: a device one); anything else as it is."""
    if isinstance(value, Items):
        elements = list(value.items)
    elif isinstance(value, Seq):
        elements = [value.element]
    else:
        return value
    if elements and all(isinstance(e, Host) for e in elements):
        return elements[0]
    if elements and all(isinstance(e, Device) for e in elements):
        return elements[0]
    return UNKNOWN


def _device_of_joined(value: Value) -> Value:
    """Where ``torch.cat``/``stack`` make their result: as ``_joined_elements``, and where one of the
    tensors is surely on the host and none is known to be elsewhere, on the host: they must all be on
    one device (SSL4EO's `torch.cat((x[:, :10], zeros, x[:, 10:]))` with a CPU `torch.zeros` band)."""
    joined = _joined_elements(value)
    if joined is not UNKNOWN or not isinstance(value, Items):
        return joined
    hosts = [e for e in value.items if isinstance(e, Host) and e.sites and not e.maybe_unknown and not e.pointer]
    if hosts and not any(isinstance(e, Device) or isinstance(e, Host) and e.maybe_unknown for e in value.items):
        return hosts[0]
    return joined


def written_into_out(ev, node, receiver, args: Args, api_name: str) -> Optional[Value]:
    """A computing call given ``out=`` (`torch.index_select(src, 0, idx, out=staging)`,
    `torch.cat(parts, out=buf)`, `torch.sigmoid(x, out=buf)`): no new memory; it reads the rest and
    writes into ``out``, which it returns. None without ``out=``."""
    out = args.keywords.get("out")
    if out is None:
        return None
    given = [*args.positional, *args.keywords.values()]
    ev.read_hosts(node, ([receiver] if receiver is not None else []) + [v for e, v in given if e is not out[0]],
                  api=api_name)
    for value in flatten([out[1]]):
        if isinstance(value, Host):
            ev.event(EventType.WRITE, node, value, api=api_name)
    return out[1]


def _sampled_scalar(kind: str, args: Args) -> Value:
    """What a NumPy sampler gives without ``size``: a scalar, an int where the table says so, or for
    ``choice`` (``kind`` "element") where it picks among ints (``np.random.choice(n)``, an int array)."""
    if kind == "element":
        pool = args.positional[0][1] if args.positional else args.keywords.get("a", (None, None))[1]
        ints = isinstance(pool, Const) and pool.values and all(isinstance(v, int) and not isinstance(v, bool)
                                                                for v in pool.values) or \
            isinstance(pool, Scalar) and pool.kind == "int" or \
            isinstance(pool, Host) and bool(pool.sites) and all(s.dtype and s.dtype.startswith(("int", "uint"))
                                                                for s in pool.sites)
        return Scalar("int" if ints else "number")
    return Scalar(kind)


def _alloc(ev, api: Api, node, receiver, args: Args) -> Value:
    written = written_into_out(ev, node, receiver, args, api.name) if api.opt("reads") else None
    if written is not None:
        return written
    if api.opt("same_if_pinned") and isinstance(receiver, Host):
        # `t.pin_memory()` of a tensor already pinned is the tensor itself: nothing allocated or copied
        # (of one that may be, such as a batch of a loader whose pin_memory= nothing here gives, unknown)
        if receiver.maybe_unknown and any(s.variant == LOADER_BATCH for s in receiver.sites):
            return UNKNOWN
        if receiver.sites and all(s.kind.is_pinned for s in receiver.sites):
            return receiver
    if api.opt("tensor_alias") and len(args.positional) == 1 and not args.star and not args.keywords:
        given = args.positional[0][1]
        if isinstance(given, Host) and given.library == "torch" or isinstance(given, (Device, Tensor)) and \
                getattr(given, "library", "torch") == "torch":
            return given  # `torch.Tensor(t)` of a tensor: an alias of t
    into = api.arg("into")
    if into is not None and args.present(into) and args.value(into) != Const.of(None):
        # `cv2.resize(img, size, dst=buf)`: it writes into the array it is given and returns it.
        target = args.value(into)
        if isinstance(target, Host):
            ev.event(EventType.WRITE, node, target, api=api.name)
        # `output=np.float32` names a dtype: a new array of it, whose kind this table does not say
        return target if isinstance(target, (Host, Device)) else UNKNOWN
    if api.library == "numpy" and receiver is None:
        # `np.zeros_like(d)`, `np.concatenate([d1, d2])` of CuPy arrays are CuPy arrays (NEP-18 dispatch)
        dispatched = {v.library for v in flatten(args.values()) if isinstance(v, Device)} & ev.tables.numpy_dispatch
        if len(dispatched) == 1:
            return Device(dispatched.pop())
    scalar = api.opt("scalar_without_size")
    if scalar and not args.star and not args.present(api.arg("shape")):
        return _sampled_scalar(scalar, args)  # `np.random.choice(ids)`: one number, no array
    kind = Kind(api.opt("kind"))
    device_kw = api.opt("device_kw")
    if args.unsure(device_kw) or args.unsure(api.opt("pin_kw")):
        return UNKNOWN  # `torch.empty(n, **options)`: pinned or on a device, perhaps
    if device_kw and device_kw in args.keywords:
        placed = _placement(ev, api.library, *args.keywords[device_kw])
        if placed is not None:
            return placed
    elif device_kw and api.library == "torch" and receiver is None and sets_default_device(ev.module.info):
        return UNKNOWN  # `torch.set_default_device("cuda")`: a factory's tensor is wherever that says
    elif device_kw and api.library == "torch" and api.arg("data") is not None and args.present(api.arg("data")) and \
            isinstance(args.value(api.arg("data")), Device) and args.value(api.arg("data")).library == "torch":
        return Device("torch")  # `torch.tensor(g)` of a CUDA tensor: a copy on its device
    pin_kw = api.opt("pin_kw")
    pinned_by_keyword = bool(pin_kw) and pin_kw in args.keywords and true_in_gpu_runs(args.keywords[pin_kw][1])
    like_device = api.arg("like_device")
    placed_elsewhere = unplaced = False
    if like_device is not None and not (device_kw and device_kw in args.keywords) and not pinned_by_keyword:
        prototype = _device_of_joined(_arg_value(like_device, receiver, args))
        if isinstance(prototype, Device):
            return Device(api.library)
        if not isinstance(prototype, Host):
            if api.library != "torch" or receiver is not None or kind is not Kind.PAGEABLE:
                return UNKNOWN
            # `torch.stack(frames)` of tensors nothing places: new memory where they are, a torch
            # tensor whose device is unknown (pageable were it on the CPU: Tensor.made).
            unplaced = True
        # these buffers or something else (a GPU tensor on another path: `t.pin_memory() if cpu else
        # t`): what is made like it may be on the GPU too (a host of unknown kind has no sites)
        placed_elsewhere = isinstance(prototype, Host) and prototype.maybe_unknown and bool(prototype.sites)
    if pin_kw and pin_kw in args.keywords:
        pinned = args.keywords[pin_kw][1]
        if true_in_gpu_runs(pinned):  # `pin_memory=use_cuda`: pinned in every GPU run
            kind = Kind.PINNED
        elif pinned != Const.of(False):
            return UNKNOWN
    flags = api.arg("flags")
    if flags is not None and args.present(flags):
        # Flags it cannot read: pinned for sure, write-combined or mapped perhaps (rules on those stay quiet).
        kind = apply_flags(ev.tables, kind, args.value(flags)) or Kind.PINNED
    if api.opt("reads"):
        # Copies and conversions read their source's data (a CPU read for PIN003/PIN005).
        ev.read_hosts(node, [receiver] + [v for _, v in args.positional], api=api.name)
    flavour = host_flavour(ev, api, receiver)
    nbytes, dtype, ndim, bound = _shape_info(ev, api, receiver, args)
    if isinstance(receiver, Host):
        dtype, ndim = common(s.dtype for s in receiver.sites), common(s.ndim for s in receiver.sites)
    pooled = bool(api.opt("pooled", False)) or (kind.is_pinned and bool(api.opt("pooled_when_pinned", False)))
    site = ev.site(node, kind, flavour, display(ev, api.name, flavour), nbytes=nbytes, pooled=pooled,
                   max_nbytes=bound if nbytes is None else None,
                   fix=api.opt("fix") if kind is Kind.PAGEABLE else None, dtype=dtype, ndim=ndim,
                   uninitialized=bool(api.opt("uninitialized", False)),
                   copies_data=bool(api.opt("copies_data", False)) or  # t.pin_memory(), torch.tensor(host)
                   (api.arg("data") is not None and isinstance(args.value(api.arg("data")), Host)),
                   from_values=(api.arg("data") is not None and args.present(api.arg("data"))
                                and not isinstance(args.value(api.arg("data")), Host))
                   or (isinstance(receiver, Host) and all(s.from_values for s in receiver.sites)),
                   values=_literal_values(args.value(api.arg("data"))) if api.arg("data") is not None and
                   not isinstance(receiver, Host) else None,
                   python_numbers=(api.arg("data") is not None and
                                   _python_numbers(args.value(api.arg("data")), bool(api.opt("scalar_items", False))))
                   or bool(api.opt("python_numbers", False)) and _from_python_values(args)
                   or not api.opt("grows", False) and _of_python_numbers(api, receiver, args)
                   or isinstance(_legacy_data(api, args), (Items, Seq)) and _python_numbers(_legacy_data(api, args), True)
                   or _copies_python_numbers(_legacy_data(api, args) if api.arg("data") is None else
                                             args.value(api.arg("data")))
                   or _sized_by_a_list_of_numbers(api, args),
                   leading_ones=_leading_ones(api, args))
    if unplaced:
        return Tensor(made=site)
    value = Host(frozenset([site]), flavour, pointer=bool(api.opt("pointer", api.opt("returns") == "err-tuple")),
                 maybe_unknown=placed_elsewhere)
    ev.event(EventType.ALLOC, node, value, api=site.api)
    return _err_tuple(api, value)


def _leading_ones(api: Api, args: Args) -> int:
    """How many leading dimensions of size 1 the shape spells out (``torch.empty([1, max_len, h, d])``,
    ``np.zeros((1, 1, n))``, ``torch.empty(1, n)``): a slice spanning them is still one dense block."""
    if args.star or api.arg("shape") is None and not api.opt("shape_varargs") or _legacy_data(api, args) is not None:
        return 0
    shape = _written_shape(api, args)
    dims = list(shape.items) if isinstance(shape, Items) else []
    count = 0
    for dim in dims[:-1]:  # (a shape of ones only is one block whatever is sliced)
        if dim != Const.of(1):
            break
        count += 1
    return count


def _literal_values(value: Value) -> Optional[tuple]:
    """The numbers of a short literal list (``[2, 2, 2, 2]``): an array of them answers ``a[0]``."""
    if not isinstance(value, Items) or not 0 < len(value.items) <= 32:
        return None
    numbers = []
    for item in value.items:
        if not (isinstance(item, Const) and item.single is not None and isinstance(item.single, (int, float))
                and not isinstance(item.single, bool)):
            return None
        numbers.append(item.single)
    return tuple(numbers)


def _of_python_numbers(api: Api, receiver, args: Args) -> bool:
    """The tensor this one is made from (the receiver of ``lengths.pin_memory()``, what ``np.cumsum(lengths)``
    or ``torch.cat([a, b])`` is made like) is one of Python numbers: so is this one, no larger (the
    table marks with ``grows`` the calls that make more elements, ``t.repeat_interleave(n)``)."""
    like = _arg_value(api.arg("like") or api.arg("like_device"), receiver, args)
    for source in (receiver, _joined_elements(like)):
        if isinstance(source, Host) and source.sites and all(s.python_numbers for s in source.sites):
            return True
    parts = like.items if isinstance(like, Items) else ()
    if parts and all(isinstance(p, Host) and p.sites and not p.maybe_unknown for p in parts) and \
            any(all(s.python_numbers for s in p.sites) for p in parts) and \
            all(s.python_numbers or s.nbytes is not None and s.nbytes <= _FEW_BYTES for p in parts for s in p.sites):
        # `torch.cat([torch.zeros(1), counts.cumsum(0)])`: a few numbers more (FBGEMM's offsets, survey 56 FF)
        return True
    # `np.cumsum(counts)` of the list of Python numbers itself (point-transformer's chunk offsets, survey 52)
    if api.arg("like") is not None and isinstance(like, (Items, Seq)) and _python_numbers(like):
        return True
    if api.arg("joined") is None or args.star:
        return False
    # `np.append(1.0, alphas[:-1])`, `np.concatenate([a, b])` of such arrays (and numbers): one too
    joined = _joined_value(api, args)
    items = joined.items if isinstance(joined, Items) else ()
    return any(isinstance(i, Host) and i.sites and all(s.python_numbers for s in i.sites) for i in items) and all(
        isinstance(i, Scalar) or numeric_const(i) is not None or
        isinstance(i, Host) and i.sites and not i.maybe_unknown and
        all(s.python_numbers or s.nbytes is not None and s.nbytes <= _FEW_BYTES for s in i.sites)
        for i in items)


_FEW_BYTES = 1024  # a tensor of a size the code fixes this small (`torch.zeros(1)`) adds a few numbers


def _copies_python_numbers(data: Optional[Value]) -> bool:
    """``torch.IntTensor(np.cumsum(counts))``, ``torch.tensor(offsets)``: a copy of an array of Python
    numbers the code lists is one as well."""
    return isinstance(data, Host) and bool(data.sites) and not data.maybe_unknown and \
        all(s.python_numbers for s in data.sites)


def _legacy_data(api: Api, args: Args) -> Optional[Value]:
    """The data a legacy typed constructor is given (``torch.LongTensor(lengths)``,
    ``torch.FloatTensor(array)``): its one positional argument when that is a list, tuple or array,
    not sizes (``torch.FloatTensor(2, 3)``)."""
    if not api.opt("legacy_data") or args.star or len(args.positional) != 1:
        return None
    value = args.positional[0][1]
    return value if isinstance(value, (Items, Seq, Host)) else None


def _from_python_values(args: Args) -> bool:
    """``np.fromiter(map(slot.get, reqs))`` of Python values the code hands it, one element each; not of
    a range (``np.fromiter(range(1 << 20))`` is as large as ``np.arange`` of it)."""
    return bool(args.positional) and not isinstance(args.positional[0][1], Iteration)


def _sized_by_a_list_of_numbers(api: Api, args: Args) -> bool:
    """``torch.ones(1, len(ids))`` of a list of numbers the code builds: one element per Python object,
    as the tensor of those numbers has (a token mask); the other dimensions a few constants."""
    if args.star or (api.arg("shape") is None and not api.opt("shape_varargs")):
        return False
    dims = [v for _, v in args.positional]
    if len(dims) == 1 and isinstance(dims[0], Items):
        dims = list(dims[0].items)
    counted = [d for d in dims if isinstance(d, Scalar) and d.objects]
    others = [d for d in dims if not (isinstance(d, Scalar) and d.objects)]
    product = 1
    for d in others:
        if not (isinstance(d, Const) and isinstance(d.single, int) and not isinstance(d.single, bool)):
            return False
        product *= d.single
    return bool(counted) and product <= 8


def _python_numbers(value: Value, scalar_items: bool = False, item: bool = False) -> bool:
    """A list (or tuple, nested, repeated, comprehended) of Python numbers the code builds: index and
    length tensors (`torch.tensor([lq] * b)`, cu_seqlens from a list of lengths), one element per
    Python object, however many the code does not say. ``scalar_items``: the API turns each item
    into a Python scalar (torch.tensor), so an item nothing explains is one too
    (`torch.tensor([r.params.temperature for r in reqs])`)."""
    if isinstance(value, Items):
        return bool(value.items) and all(_python_numbers(i, scalar_items, True) for i in value.items)
    if isinstance(value, Seq):
        return _python_numbers(value.element, scalar_items, True)
    if isinstance(value, Scalar) or scalar_items and item and value is UNKNOWN:
        return True
    if isinstance(value, Const):
        return bool(value.values) and all(isinstance(v, (int, float)) for v in value.values)
    return False


def _shape_info(ev, api: Api, receiver: Optional[Value], args: Args) -> tuple:
    """(nbytes, dtype, ndim, at most how many bytes) of an allocation, each None when not constant."""
    found = _shape_info_of(ev, api, receiver, args)
    return found if len(found) == 4 else found + (None,)


def _shape_info_of(ev, api: Api, receiver: Optional[Value], args: Args) -> tuple:
    if api.arg("pad") is not None:
        return _padded(args.value(api.arg("pad_of")), args.value(api.arg("pad")))
    if api.arg("joined") is not None:
        nbytes, dtype, ndim, bound = _joined(_joined_value(api, args), ev.tables)
        if api.arg("joined").is_all and len(args.positional) == 2 and "axis" not in args.keywords:
            ndim = 1  # `np.append(a, v)` without an axis flattens both
        return nbytes, dtype, ndim, bound
    if api.opt("cross"):
        return _crossed([v for _, v in args.positional[:2]], ev.tables)
    like = _arg_value(api.arg("like"), receiver, args)
    if isinstance(like, Host) and like.sites:
        # as large as the largest buffer it may be (`padded.copy()` of either of two arrays)
        sizes = [s.nbytes for s in like.sites]
        nbytes = None if None in sizes else max(sizes)
        bounds = [s.nbytes if s.nbytes is not None else s.max_nbytes for s in like.sites]
        bound = max(bounds) if nbytes is None and None not in bounds and not like.maybe_unknown else None
        return nbytes, common(s.dtype for s in like.sites), like.dimensions(), bound
    if api.opt("size"):
        return api.opt("size"), None, 0
    dtype_spec = api.arg("dtype")
    dtype = None
    if dtype_spec is not None:
        dtype = canonical_dtype(args.value(dtype_spec), ev.tables) if args.present(dtype_spec) else dtype_spec.default
    if api.arg("data") is not None:
        data = args.value(api.arg("data"))
        if isinstance(data, Host) and dtype_spec is not None and not args.present(dtype_spec):
            dtype = None  # `torch.tensor(table)` of an array keeps the array's dtype (the default is for numbers)
        return _data_shape(ev, data, dtype, scalar_items=api.opt("scalar_items", False))
    nbytes = args.value(api.arg("nbytes"))
    if isinstance(nbytes, Const) and isinstance(nbytes.single, int) and not isinstance(nbytes.single, bool):
        return nbytes.single, dtype, 1
    if api.opt("range_args"):
        bounds = [v for _, v in args.positional]
        count = range_length(bounds) if not args.star else None
        if api.opt("range_float_dtype") and has_float(bounds) and not (dtype_spec and args.present(dtype_spec)):
            dtype = api.opt("range_float_dtype")  # arange(0.0, 1.0, 0.1): the default float dtype
        size = item_size(dtype, ev.tables)
        most = count if count is not None or args.star else range_bound(bounds)
        return (count * size if count is not None and size else None), dtype, 1, size_bound(most, size)
    shape_spec = api.arg("shape")
    if shape_spec is None and not api.opt("shape_varargs"):
        return None, dtype, None
    legacy = _legacy_data(api, args)
    if legacy is not None:
        # `torch.LongTensor(lengths)`: the data's elements, of the constructor's type
        return _data_shape(ev, legacy, dtype, scalar_items=True)
    shape = _written_shape(api, args)
    if shape is None:
        return None, dtype, None  # np.random.randn(*shape) of a shape nothing here lays out
    ndim = len(shape.items) if isinstance(shape, Items) else (1 if isinstance(shape, (Const, Scalar)) else None)
    count = element_count(shape)
    size = item_size(dtype, ev.tables)
    widest = size or (widest_item(args.value(dtype_spec), ev.tables) if dtype_spec is not None and
                      args.present(dtype_spec) else None)  # one of several dtypes (a parametrized test's)
    return (count * size if count is not None and size else None), dtype, ndim, \
        size_bound(count if count is not None else element_bound(shape), widest)


def _written_shape(api: Api, args: Args) -> Optional[Value]:
    """The shape an allocation is given, as the call writes it (an Items of dimensions, one number, or
    unknown); None where a spread (`randn(*shape)`) hides it. For an API with a shape argument."""
    shape_spec = api.arg("shape")
    shape = args.value(shape_spec, Const.of(shape_spec.default) if shape_spec is not None and
                       shape_spec.default is not None else UNKNOWN)
    if api.opt("shape_varargs") and args.star:
        return None
    if api.opt("shape_last") and shape_spec.kw not in args.keywords:
        # torch.randint(high, size) and (low, high, size): the size is the last positional argument.
        shape = args.positional[-1][1] if len(args.positional) >= 2 and not args.star else UNKNOWN
    if api.opt("shape_varargs") and (shape_spec is None or shape_spec.kw not in args.keywords) and \
            (len(args.positional) > 1 or shape_spec is None):
        shape = Items(tuple(v for _, v in args.positional))  # torch.empty(2, 3), np.random.rand(2, 3)
    if api.opt("square") and isinstance(shape, (Const, Scalar)):
        # np.eye(n) is n by n; np.eye(n, m) n by m (M=None: square)
        columns = args.value(api.arg("columns"), Const.of(None)) if api.arg("columns") is not None else Const.of(None)
        shape = Items((shape, shape if columns == Const.of(None) else columns))
    return shape


def _padded(source: Value, width: Value) -> tuple:
    """(None, dtype, ndim, at most how many bytes) of ``np.pad(source, width)`` for constant widths. A
    dimension of s elements padded by p in all becomes s + p <= s * (1 + p) (s >= 1), so the result
    holds at most the source's elements times the product of (1 + p) over the dimensions."""
    if not isinstance(source, Host) or not source.sites or source.maybe_unknown or source.pointer:
        return None, None, None, None
    ndim = source.dimensions()
    sizes = [s.nbytes if s.nbytes is not None else s.max_nbytes for s in source.sites]
    dtype = common(s.dtype for s in source.sites)
    growth = _pad_growth(width, ndim)
    if None in sizes or growth is None:
        return None, dtype, ndim, None
    return None, dtype, ndim, max(sizes) * growth


def _joined_value(api: Api, args: Args) -> Value:
    """What a joining call joins: its list argument (`np.concatenate(arrays)`), or with ``joined =
    "all"`` its positional arguments (`np.append(a, v)`)."""
    spec = api.arg("joined")
    if spec.is_all:
        return UNKNOWN if args.star else Items(tuple(v for _, v in args.positional))
    return args.value(spec)


def _joined(arrays: Value, tables) -> tuple:
    """(None, dtype, None, at most how many bytes) of ``np.concatenate(arrays)`` and its kin: the
    elements of all the arrays, each at most its buffer's (a view is part of one). Arrays of one dtype
    keep it; of several, or of one nothing names, each element may be promoted to the widest."""
    if not isinstance(arrays, Items) or not arrays.items:
        return None, None, None, None
    sizes, dtypes = [], set()
    numbers = 0
    for item in arrays.items:
        if isinstance(item, Scalar) or numeric_const(item) is not None:
            numbers += 1  # `np.append(1.0, a[:-1])`: one more element, of a dtype it may promote to
            continue
        if not isinstance(item, Host) or not item.sites or item.maybe_unknown or item.pointer:
            return None, None, None, None
        for site in item.sites:
            dtypes.add(site.dtype)
        totals = [s.nbytes if s.nbytes is not None else s.max_nbytes for s in item.sites]
        if None in totals:
            return None, None, None, None
        sizes.append((max(totals), {item_size(s.dtype, tables) for s in item.sites}))
    dtype = dtypes.pop() if len(dtypes) == 1 else None
    if dtype is not None and item_size(dtype, tables) and not numbers:
        return None, dtype, None, sum(total for total, _ in sizes)
    # elements at most the bytes over the narrowest element each may have (one byte if unknown)
    count = numbers + sum(total // min(size or 1 for size in item_sizes) for total, item_sizes in sizes)
    return None, None, None, size_bound(count, None)


def _crossed(vectors: list, tables) -> tuple:
    """(None, dtype, 1, at most how many bytes) of ``np.cross(a, b)`` of two 1-D arrays: a vector of
    three elements at most (a number, for 2-element vectors); of anything else nothing is said."""
    if len(vectors) != 2 or not all(isinstance(v, Host) and v.sites and not v.maybe_unknown and not v.pointer
                                    and v.dimensions() == 1 for v in vectors):
        return None, None, None, None
    dtypes = {s.dtype for v in vectors for s in v.sites}
    dtype = dtypes.pop() if len(dtypes) == 1 else None
    return None, dtype, 1, size_bound(3, item_size(dtype, tables))


def _pad_growth(width: Value, ndim: Optional[int]) -> Optional[int]:
    """The product over the dimensions of (1 + what the widths add to it): ``2`` or ``(1, 2)`` for
    every dimension, ``((0, 0), (1, 1))`` one pair for each."""
    def number(value) -> Optional[int]:
        if isinstance(value, Const) and isinstance(value.single, int) and not isinstance(value.single, bool) \
                and value.single >= 0:
            return value.single
        return None

    def added(value) -> Optional[int]:
        if number(value) is not None:
            return 2 * number(value)
        if isinstance(value, Items) and len(value.items) in (1, 2):
            widths = [number(item) for item in value.items]
            if None in widths:
                return None
            return 2 * widths[0] if len(widths) == 1 else sum(widths)
        return None

    every = added(width)
    if every is not None:
        return (1 + every) ** ndim if ndim is not None else None
    if isinstance(width, Items) and width.items and (ndim is None or len(width.items) in (1, ndim)):
        per_dimension = [added(item) for item in width.items]
        if None in per_dimension:
            return None
        if len(per_dimension) == 1:
            return (1 + per_dimension[0]) ** ndim if ndim is not None else None
        growth = 1
        for extra in per_dimension:
            growth *= 1 + extra
        return growth
    return None


def _data_shape(ev, data: Value, dtype: Optional[str], scalar_items: bool = False) -> tuple:
    """(nbytes, dtype, ndim) of `np.array(data)`: from a literal's shape and element types, or from the
    single array it copies; None where the data says nothing constant. ``scalar_items``: an item of a
    literal list that is no list itself is one element whatever its value (``torch.tensor([-lr])``:
    torch converts each item to a Python scalar and fails on a tensor of more than one element)."""
    if isinstance(data, Host) and len(data.sites) == 1:
        site = next(iter(data.sites))
        same = dtype is None or dtype == site.dtype
        nbytes = site.nbytes
        if not same and nbytes is not None:
            # as many elements, each of the new type's size (`torch.tensor(betas, dtype=torch.float32)`)
            old, new = item_size(site.dtype, ev.tables), item_size(dtype, ev.tables)
            nbytes = nbytes // old * new if old and new else None
        return nbytes, (dtype or site.dtype), data.dimensions()
    element = element_of(data) if isinstance(data, (Seq, Items)) else None
    if isinstance(element, Host) and element.sites and element.dimensions() is not None and not scalar_items:
        # `np.array(frames)` of a list of 2-D frames: one more dimension (`stack[k]` is a whole frame)
        return None, dtype or common(s.dtype for s in element.sites), element.dimensions() + 1
    leaves: list = []

    def shape_of(value: Value, item: bool = False) -> Optional[tuple]:
        if isinstance(value, Const) and len(value.values) == 1:
            leaves.append(value.single)
            return ()
        if isinstance(value, Items):
            each = [shape_of(element, True) for element in value.items]
            if None in each and () in each and set(each) == {None, ()} and \
                    any(_a_number(element) for element in value.items) and \
                    all(_may_be_a_number(element) for element, shape in zip(value.items, each) if shape is None):
                # `np.array([256, 64, rates[0], 1])`: beside a number, NumPy builds only from numbers
                # (a ragged list raises), so each item the analysis cannot tell is one number too
                leaves.append(_SOME_NUMBER)
                each = [()] * len(each)
            shapes = set(each)
            if len(shapes) != 1 or None in shapes:
                return None if value.items else (0,)
            return (len(value.items),) + shapes.pop()
        if isinstance(value, Scalar):
            # h, w = img.shape[:2]; np.array([h, w]): one number each; `torch.tensor(label)` of a
            # number: a 0-d tensor of one
            leaves.append(value)
            return ()
        if isinstance(value, Iteration) and value.length is not None and isinstance(value.element, Scalar):
            leaves.append(value.element)  # np.array(range(n)): n numbers
            return (value.length,)
        if scalar_items and item and (value is UNKNOWN or isinstance(value, (Const, Host, Tensor, Device))):
            # (a tensor item too: torch converts it to a Python scalar, and fails on more than one element)
            return ()
        return None

    shape = shape_of(data)
    if shape is None and isinstance(data, Seq) and (isinstance(data.element, Scalar) or _a_number(data.element)):
        # a list of numbers the code appends to (a noise schedule built step by step): one dimension,
        # however long; `betas[1]` of it is one number
        return None, dtype, 1
    if shape is None:
        return None, dtype, None
    if dtype is None and leaves:
        # NumPy's result type for Python literals: the widest of bool < int < float < complex
        # (a number of unknown kind is at most a float's eight bytes: it is never complex).
        python = ev.tables.dtypes.get("python", {})
        order = ["bool", "int", "float", "complex"]
        names = {leaf.kind if isinstance(leaf, Scalar) else type(leaf).__name__ for leaf in leaves}
        if "number" in names and names <= {"number", "bool", "int", "float"}:
            names = (names - {"number"}) | {"float"}
        if names <= set(order):
            dtype = python.get(max(names, key=order.index))
    count = 1
    for extent in shape:
        count *= extent
    size = item_size(dtype, ev.tables)
    return (count * size if size else None), dtype, len(shape), size_bound(count, size)


_SOME_NUMBER = object()  # a leaf of a literal whose kind is not known (no dtype can be inferred)


def _a_number(value: Value) -> bool:
    return isinstance(value, Const) and len(value.values) == 1 and \
        isinstance(value.single, (int, float, complex)) and not isinstance(value.single, bool)


def _may_be_a_number(value: Value) -> bool:
    """An item nothing says is a sequence: unknown, a number, or an element of a host array."""
    return value is UNKNOWN or isinstance(value, (Scalar, Host, Tensor))


def _device(ev, api: Api, node, receiver, args: Args) -> Value:
    stream = args.value(api.arg("stream"))
    remembered = stream if isinstance(stream, Stream) and api.opt("remembers_stream") else None
    return _err_tuple(api, Device(api.opt("library", api.library), remembered))


def _view(ev, api: Api, node, receiver, args: Args) -> Value:
    if api.opt("each"):
        return _views_of_each(args)
    source = _arg_value(api.arg("arg"), receiver, args)
    moved = _placed_elsewhere(ev, api, node, source, args)
    if moved is not None:
        return moved
    dtype_spec = api.arg("dtype")
    if isinstance(source, Host) and dtype_spec is not None and args.present(dtype_spec):
        target = canonical_dtype(args.value(dtype_spec), ev.tables)
        # `torch.as_tensor(h, dtype=torch.float32)`: the same memory where h has that dtype already
        return convert(ev, node, source, target, api.name, always_copy=False, some_dtype=target is None,
                       library=api.opt("library"))
    result: Value = UNKNOWN
    if isinstance(source, Host):
        result = replace(source, library=api.opt("library") or source.library,
                         pointer=api.opt("pointer", source.pointer))
        if api.opt("shape_args"):
            shape = args.positional[0][1] if len(args.positional) == 1 else Items(tuple(v for _, v in args.positional))
            result = replace(result, ndim=len(shape.items) if isinstance(shape, Items) else
                             (1 if isinstance(shape, Const) else NDIM_UNKNOWN))
        if not api.opt("shape_args") and api.name.split(".")[-1] not in _KEEPING_NDIM:
            result = replace(result, ndim=NDIM_UNKNOWN)  # ravel, squeeze, expand_dims, atleast_2d: another ndim
        if api.name.split(".")[-1] == "permute" and result.dimensions() is None and args.positional and not args.star:
            # `t.permute(1, 0, 2, 3, 4)` names every dimension once: that many (FKD's stacked crops,
            # whose rows `views[k]` are then views of the same memory, survey 53 CB)
            axes = args.positional[0][1] if len(args.positional) == 1 else Items(tuple(v for _, v in args.positional))
            if isinstance(axes, Items) and axes.items or isinstance(axes, (Const, Scalar)):
                result = replace(result, ndim=len(axes.items) if isinstance(axes, Items) else 1)
        if api.opt("movable"):
            # A module's parameter: `model.cuda()` / `model.to(device)` moves it, wherever it was made
            # (its stores and escapes still follow these buffers; where it lives is not known).
            result = replace(result, maybe_unknown=True)
        if api.name.split(".")[-1] in _TRANSPOSING:
            result = transposed(result)
        elif result.contiguous is False and api.name.split(".")[-1] not in _KEEPING_STRIDES:
            result = replace(result, contiguous=None)  # reshape of a transpose may copy
    elif isinstance(source, Tensor) and api.opt("cpu_only"):
        # `torch.stack(frames).numpy()`: the stacked tensor is on the CPU, so it is the new pageable
        # memory the stack made; of any other tensor nothing places, host memory of unknown kind.
        return Host(frozenset([source.made]), "numpy") if source.made is not None else unknown_host("numpy")
    elif isinstance(source, (Device, Tensor)) and api.arg("arg") is not None and \
            (api.arg("arg").is_self or api.library == "torch"):
        result = source  # a view of a GPU tensor (nn.Parameter(d), torch.as_tensor(d)) is on the GPU
    elif source is UNKNOWN and api.opt("ndarray_arg") and (made_by := _made_by_numpy_method(ev, api, args)) is not None:
        made_api = f"numpy.ndarray.{made_by.func.attr.value}" if _a_new_numpy_array(ev, made_by) else \
            f"{(dotted(made_by.func) or 'call').rsplit('.', 1)[-1]}()"
        site = ev.site(made_by, Kind.PAGEABLE, api.opt("library") or "numpy", made_api)
        result = Host(frozenset([site]), api.opt("library") or "numpy")
        ev.event(EventType.ALLOC, node, result, api=site.api)
    elif api.opt("otherwise_like") and isinstance(source, (Items, Seq, Const)) and \
            api.opt("otherwise_like") in ev.tables.functions and not args.star:
        # `np.asarray([a, b, c], dtype=np.float32)`: a new array, as `np.array` of the list makes
        like = ev.tables.functions[api.opt("otherwise_like")]
        made = apply(ev, like, node, receiver, args)
        # named as written (`np.asarray`), not as the function it stands for
        made = map_sites(made, lambda s: replace(s, api=api.name) if s.node is node and s.api == like.name else s)
        return _err_tuple(api, made)
    elif api.opt("otherwise") == "pageable" and not isinstance(source, (Device, Tensor)) and \
            (isinstance(source, (Items, Seq, Const)) or api.library == "torch" or
             not args.present(api.arg("arg")) and not args.star and not args.unsure(api.arg("arg").kw)):
        # (`np.ndarray(shape, dtype)` with no buffer: a new array, as np.empty makes)
        flavour = api.opt("library") if api.opt("library") in ("torch",) else "numpy"
        site = ev.site(node, Kind.PAGEABLE, flavour, api.name)
        result = Host(frozenset([site]), flavour)
    elif source is UNKNOWN and api.library in ("numpy", "torch") and not api.opt("pointer") and not api.opt("pieces"):
        # NumPy's and torch's views of something unknown are host arrays of unknown kind: their
        # methods are NumPy's (astype, arithmetic make new pageable arrays), their kind unknown.
        result = unknown_host(ev.tables.host_flavour.get(api.opt("library") or api.library, "numpy"))
        if api.name == "numpy.transpose" and _reorders(args.get(ArgSpec(pos=1, kw="axes"))):
            # `np.transpose(img, (2, 0, 1))`: whatever `img` is, this view is not contiguous.
            result = replace(result, contiguous=False)
    if api.opt("pieces"):
        # np.array_split(a, n), t.chunk(n): a list of views of the argument, one for each piece (the
        # size of a piece is at most its allocation's); of anything else, nothing known.
        return Seq(result) if isinstance(result, (Host, Device, Tensor)) else UNKNOWN
    return _err_tuple(api, result)


# Views with the dimensions of their argument (the others' `ndim` is left unknown).
_KEEPING_NDIM = frozenset({"asarray", "asanyarray", "transpose", "swapaxes", "moveaxis", "rollaxis", "flip", "flipud",
                           "fliplr", "rot90", "__array__", "numpy", "detach",
                           "split", "array_split", "hsplit", "vsplit", "dsplit", "chunk", "tensor_split",
                           "permute", "narrow", "data_as", "frombuffer", "as_array", "ndarray", "byref", "pointer",
                           "addressof", "cast", "c_void_p", "intp", "uintp", "from_numpy"})


def _made_by_numpy_method(ev, api: Api, args: Args) -> Optional[cst.Call]:
    """The call of a NumPy method that always makes a new array (``x.astype(np.float32)`` without
    ``copy=``, ``x.copy()``) whose result the argument, which must be a NumPy array
    (``torch.from_numpy``), is; None when it is not known to be one."""
    found = args.get(api.arg("arg"))
    expr = found[0] if found is not None else None
    if isinstance(expr, cst.Name):
        # `ints = col.astype(np.int64)`, then `from_numpy(ints)`; or `w = (w / w.max()).astype(...)` right
        # before it, whatever `w` was bound to earlier
        expr = _single_binding(ev, expr.value) or _reaching_binding(ev, expr)
    if isinstance(expr, cst.Call) and _returns_new_numpy_arrays(ev, expr):
        return expr  # `w = make_weights(shape)` whose every return is `(...).astype(np.float32)`
    return expr if _a_new_numpy_array(ev, expr) else None


def _a_new_numpy_array(ev, expr) -> bool:
    """A call of a NumPy method that always makes a new array (``x.astype(t)`` without ``copy=``)."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
        return False
    method = ev.tables.methods.get(("host", expr.func.attr.value))
    if method is None or any(arg.keyword is not None and arg.keyword.value == "copy" for arg in expr.args):
        return False
    return method.effect == "convert" or method.effect == "alloc" and method.opt("kind") == "pageable"


def _returns_new_numpy_arrays(ev, call: cst.Call) -> bool:
    """A function of the tree whose every ``return`` hands back such a new array (MedNeXt's
    ``_get_gaussian``: ``return (g / g.max()).astype(np.float32)``)."""
    target = _called_function(ev, call.func)
    node = getattr(target, "node", None) if isinstance(target, Function) else None
    if not isinstance(node, cst.FunctionDef):
        return False
    returns = [small.value for small in small_statements(suite_body(node.body)) if isinstance(small, cst.Return)]
    return bool(returns) and all(_a_new_numpy_array(ev, value) for value in returns)


def _called_function(ev, func) -> Optional[Value]:
    """What ``func`` (a name, or a name's attribute) names, found without running anything: a
    property read through the attribute (``self.weights()`` where ``weights`` is one) stays unknown,
    as its getter would run a second time."""
    if isinstance(func, cst.Name):
        return ev.expr(func)
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return None
    base = ev.expr(func.value)
    klass = base.klass if isinstance(base, Instance) else base if isinstance(base, ClassRef) else None
    if klass is not None:
        info = ev.module.project.class_info(klass)
        member = info.lookup(func.attr.value, record=False) if info is not None else None
        if member is None or member.kind == "property":
            return None
    elif not isinstance(base, ModuleRef):
        return None
    return ev.expr(func)


def _reaching_binding(ev, use: cst.Name):
    """The value of the plain assignment to ``use``'s name that reaches it in straight-line code: the
    last such statement of the function's body before the statement holding ``use``, with nothing
    between (nor that statement itself) binding the name otherwise."""
    fn = ev.invocation.function
    node = getattr(fn, "node", None)
    if not isinstance(node, cst.FunctionDef):
        return None
    from .invariance import Changes, collect_changes
    body = list(suite_body(node.body))
    holder = next((i for i, statement in enumerate(body) if _holds(statement, use)), None)
    if holder is None:
        return None

    def binds(statement) -> bool:
        changes = Changes()
        collect_changes(changes, [statement])
        return use.value in changes.bound

    if not isinstance(body[holder], cst.SimpleStatementLine) and binds(body[holder]):
        return None
    for statement in reversed(body[:holder]):
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
                isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1:
            target = statement.body[0].targets[0].target
            if isinstance(target, cst.Name) and target.value == use.value:
                return statement.body[0].value
        if binds(statement):
            return None
    return None


def _holds(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, item: cst.CSTNode) -> bool:
            if item is node:
                found.append(item)
            return not found
    statement.visit(_Find())
    return bool(found)


def _single_binding(ev, name: str):
    """The expression the function being analysed assigns to ``name``, when that plain assignment,
    outside any loop, is the name's only binding there (not a parameter): a read of the name sees it."""
    fn = ev.invocation.function
    node = getattr(fn, "node", None)
    if not isinstance(node, cst.FunctionDef):
        return None
    from .invariance import bound_once
    params = node.params
    if name not in bound_once(node) or any(p.name.value == name for p in (*params.posonly_params, *params.params,
                                                                            *params.kwonly_params)):
        return None
    for small in small_statements(suite_body(node.body)):
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name:
            return small.value
    return None


def _placed_elsewhere(ev, api: Api, node, source: Value, args: Args) -> Optional[Value]:
    """``torch.as_tensor(x, device=d)``: a tensor on ``d`` (the data copied there, where it was not),
    unknown where ``d`` is not named; None where no device keyword moves it off the CPU."""
    keyword = api.opt("device_kw")
    if not keyword:
        return None
    if args.unsure(keyword):
        return UNKNOWN
    if keyword not in args.keywords or args.keywords[keyword][1] == Const.of(None):
        return None
    placed = _placement(ev, api.opt("library") or api.library, *args.keywords[keyword])
    if isinstance(placed, Device) and isinstance(source, Host):
        # the host array crosses the bus here, blocking (in a loop: PIN007's re-send)
        ev.copy_event(node, source, api=api.name, direction="h2d", is_async=False, stream=None,
                      library=api.library, family=api.family)
    return placed


def _placement(ev, library: str, expr, value: Value) -> Optional[Value]:
    """What a ``device=`` keyword makes of a new tensor: none on another backend (``"meta"``), a torch
    tensor nothing places where the device is not named, device memory on a GPU; None on the CPU."""
    if other_device(value, ev.tables):
        return UNKNOWN  # torch.empty(n, device="meta"): no memory at all
    device = device_of(value, ev.tables)
    if device is None:
        # `torch.zeros(n, device=device)` of a device nothing names: a torch tensor, on the CPU or
        # a GPU (as a `torch.Tensor` parameter is), its memory unknown.
        return Tensor() if library == "torch" else UNKNOWN
    return Device(library, chosen_by=_chosen_by(expr, value, ev.tables)) if device else None


def _views_of_each(args: Args) -> Value:
    """``torch.meshgrid(a, b)`` / ``torch.meshgrid([a, b])``: a tuple of views, one of each input
    (broadcast, so not contiguous); a host input gives a host view, anything else stays unknown."""
    values = [value for _, value in args.positional]
    if len(values) == 1 and isinstance(values[0], Items):
        values = list(values[0].items)
    if args.star or not values:
        return UNKNOWN
    return Items(tuple(replace(value, contiguous=False) if isinstance(value, Host) else UNKNOWN for value in values))


def convert(ev, node, source: Host, target: Optional[str], api: str, always_copy: bool,
            some_dtype: bool = False, library: Optional[str] = None) -> Value:
    """A dtype conversion: new pageable memory, unless nothing changes (then the same memory).
    ``some_dtype``: the target is a dtype nothing here names (``t.type(x.dtype)``): either.
    ``library``: the flavour of the result, where it is not the source's (``torch.as_tensor`` of a
    NumPy array is a tensor)."""
    if library is not None and library != source.library:
        source = replace(source, library=library)
    dtypes = {s.dtype for s in source.sites}
    if not always_copy and dtypes == {target} and target is not None:
        return source  # torch `.float()` of float32, `astype(same, copy=False)`: no copy is made
    if target is None and not always_copy and not some_dtype:
        return UNKNOWN
    maybe_same = not always_copy and (None in dtypes or target in dtypes or target is None)
    ev.event(EventType.READ, node, source, api=api)
    nbytes = _converted_size(ev, source, target)
    site = ev.site(node, Kind.PAGEABLE, source.library, display(ev, api, source.library), dtype=target,
                   ndim=source.dimensions(), nbytes=nbytes,
                   max_nbytes=_converted_size(ev, source, target, bound=True) if nbytes is None else None,
                   # `np.asarray([w, d, h]).astype(np.float32)`: still the numbers the code listed
                   python_numbers=bool(source.sites) and all(s.python_numbers for s in source.sites),
                   from_values=bool(source.sites) and all(s.from_values for s in source.sites))
    copied = Host(frozenset([site]), source.library)
    # A dtype it may already have: either the same memory or a new pageable tensor.
    return join(source, copied) if maybe_same else copied


def _converted_size(ev, source: Host, target: Optional[str], bound: bool = False) -> Optional[int]:
    """The bytes of ``source`` converted to ``target``: its element count (the same for every
    possible buffer) times the new element's size; None when either is not known. With ``bound``,
    at most how many bytes (the widest element for a ``target`` nothing names: ``astype(dtype)``
    of a fixture's dtype)."""
    counts = set()
    for site in source.sites:
        size = item_size(site.dtype, ev.tables)
        total = site.max_nbytes if site.nbytes is None and bound else site.nbytes
        if total is None or not size and not bound:
            return None
        counts.add(total // (size or 1))  # a bound: at least a byte an element of a dtype nothing names
    new_size = item_size(target, ev.tables)
    # a loader's batch field whose pinning alone is unknown (`pin_memory=cfg.pin`) is still that size
    fields = all(s.variant == LOADER_BATCH and (s.nbytes is not None or s.max_nbytes is not None) for s in source.sites)
    if not counts or source.maybe_unknown and not fields:
        return None
    if bound:
        return size_bound(max(counts), new_size)
    return counts.pop() * new_size if len(counts) == 1 and new_size is not None else None


def _convert(ev, api: Api, node, receiver, args: Args) -> Value:
    if api.arg("source") is not None:
        receiver = args.value(api.arg("source"))  # np.float32(img): the function form
    if isinstance(receiver, (Device, Tensor)):
        return receiver
    if not isinstance(receiver, Host):
        return UNKNOWN
    method = api.name.split(".")[-1]
    target = api.opt("targets", {}).get(method) or canonical_dtype(args.value(api.arg("dtype")), ev.tables)
    copy_spec = api.arg("copy")
    always_copy = api.opt("copies", False) or (copy_spec is not None and args.value(copy_spec, Const.of(True)) != Const.of(False))
    dtype_expr = args.get(api.arg("dtype"))
    some_dtype = target is None and dtype_expr is not None and isinstance(dtype_expr[0], cst.Attribute) and \
        dtype_expr[0].attr.value == "dtype"  # `t.type(x.dtype)`, `a.astype(b.dtype)`
    value = convert(ev, node, receiver, target, api.name, always_copy, some_dtype)
    if api.opt("in_place") and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        # The receiver's own name now holds the new memory (`t.share_memory_()` as a statement);
        # only a whole name or field: a slice's storage is its base's, whose value is not this one.
        owner = node.func.value
        whole = isinstance(owner, cst.Name) or (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name)
                                                and owner.value.value in ("self", "cls"))
        if whole:
            ev.store(_root_key(owner), value)
    return value


def _contiguous(ev, api: Api, node, receiver, args: Args) -> Value:
    source = _arg_value(api.arg("arg"), receiver, args)
    if isinstance(source, (Device, Tensor)):
        return source
    if source is UNKNOWN and api.library == "numpy" and _strided_view(args.get(api.arg("arg"))):
        # `np.ascontiguousarray(img.transpose(2, 0, 1))`, `(img[..., ::-1])`: whatever `img` is, that
        # view is not contiguous, so NumPy copies it into a new array (the HWC -> CHW step of every
        # image pipeline, which then replaces an engine's pinned input buffer).
        return _new_numpy_array(ev, api, node)
    if source is UNKNOWN and api.library in ("numpy", "torch"):
        return unknown_host(ev.tables.host_flavour.get(api.library, "numpy"))  # a host array, kind unknown
    if isinstance(source, (Seq, Items)) and api.library == "numpy":
        # A list or tuple (of arrays, of numbers) is never an array's memory: NumPy builds a new one.
        ev.read_hosts(node, [source])
        return _new_numpy_array(ev, api, node)
    if not isinstance(source, Host):
        return UNKNOWN
    if source.contiguous and not source.sliced:
        return source  # (a slice that is not dense, `b[:, :-1]` of a batch, is copied: survey 57 GC)
    ev.event(EventType.READ, node, source, api=api.name)
    site = ev.site(node, Kind.PAGEABLE, source.library, display(ev, api.name, source.library),
                   dtype=common(s.dtype for s in source.sites), ndim=common(s.ndim for s in source.sites))
    copied = Host(frozenset([site]), source.library)
    # Unknown layout: it is either the same memory or a new pageable copy.
    return copied if source.contiguous is False or source.sliced else \
        join(replace(source, contiguous=True), copied)


def _new_numpy_array(ev, api: Api, node) -> Host:
    """New pageable NumPy memory, made by this call."""
    return Host(frozenset([ev.site(node, Kind.PAGEABLE, "numpy", display(ev, api.name, "numpy"))]), "numpy")


# Views that keep the strides of what they view (a new axis of length 1 at most).
_KEEPING_STRIDES = frozenset({"expand_dims", "asarray", "asanyarray", "atleast_1d", "atleast_2d", "atleast_3d"})


def _reorders(argument: Optional[tuple]) -> bool:
    """Whether an ``axes`` argument is a literal order other than the identity (``(2, 0, 1)``)."""
    if argument is None or not isinstance(argument[0], (cst.Tuple, cst.List)):
        return False
    order = [e.value.value for e in argument[0].elements if isinstance(e.value, cst.Integer)]
    return len(order) == len(argument[0].elements) >= 2 and order != [str(i) for i in range(len(order))]


def _strided_view(argument: Optional[tuple]) -> bool:
    """Whether the argument expression is a view with its axes reordered or a step
    (``x.transpose(2, 0, 1)``, ``x.swapaxes(0, 1)``, ``x[:, ::-1]``): not contiguous for any array
    whose axes have more than one element. ``x.T`` is left out (the same array for one axis), and so
    are an identity order (``transpose(0, 1, 2)``) and a step of 1."""
    if argument is None:
        return False
    expr = argument[0]
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        name = expr.func.attr.value
        if name == "swapaxes":
            return True
        if name == "transpose" and expr.args:
            order = [arg.value.value for arg in expr.args if isinstance(arg.value, cst.Integer)]
            return order != [str(i) for i in range(len(expr.args))]
        return False
    if isinstance(expr, cst.Subscript):
        return any(isinstance(element.slice, cst.Slice) and element.slice.step is not None and
                   not (isinstance(element.slice.step, cst.Integer) and element.slice.step.value == "1")
                   for element in expr.slice)
    return False


def _register(ev, api: Api, node, receiver, args: Args) -> Value:
    kind = Kind(api.opt("kind", "pinned"))
    flags = api.arg("flags")
    if flags is not None and args.present(flags):
        # Registration never write-combines; flags it cannot read still leave the pages locked.
        kind = apply_flags(ev.tables, kind, args.value(flags), registration=True) or Kind.PINNED
    spec = api.arg("arg")
    targets = list(args.positional) if spec is not None and spec.is_all else \
        ([args.get(spec)] if args.get(spec) is not None else [])
    registered = []
    if spec is not None and spec.is_all and api.opt("context"):
        registered += _register_unpacked(ev, api, node, kind)
        unpacked = {id(arg.value) for arg in node.args if arg.star == "*" and isinstance(arg.value, cst.Name)}
        targets = [(expr, value) for expr, value in targets if id(expr) not in unpacked]
    for index, (expr, value) in enumerate(targets):
        root = _root_key(expr)
        if not isinstance(value, Host):
            if root is not None and not api.opt("context"):
                ev.store(root, UNKNOWN)  # pinned now, but what it holds is not known
            continue
        # A `with` block's registration ends with the block (``model.scoped_registration``).
        variant = f"with-reg{index}" if api.opt("context") else f"reg{index}"
        site = ev.site(node, kind, value.library, api.name, variant=variant)
        # The same buffers, pinned: another one on each iteration of the loops they varied in.
        new_value = Host(frozenset([site]), value.library, varies=value.varies)
        ev.event(EventType.REGISTER, node, new_value, api=api.name, replaced=value.sites)
        if root is not None:
            registered.append((root, new_value))
            if not api.opt("context"):
                pin_in_place(ev, value.sites, new_value, root)
    if api.opt("context"):
        waits = api.opt("waits") == "device"
        return Context(registered=tuple(registered), sync_node=node if waits else None,
                       sync_api="unregister" if waits else "")
    for root, new_value in registered:
        ev.store(root, new_value)  # registration pins the existing buffer in place
        ev.state.env[MUTATED + root.split(".")[0]] = Const.of(True)  # a caller's buffer given to it, too
    if api.opt("returns") == "view":
        return registered[0][1] if registered else UNKNOWN
    return UNKNOWN


def pin_in_place(ev, sites: frozenset, pinned: Host, root: Optional[str] = None) -> None:
    """Registration pins memory, not a name: every value this scope holds of that memory sees it
    pinned from here on: another name for it (`addr = host.ctypes.data; hostRegister(addr, ...)`),
    the list a loop took it from (`for t in tensors: cudaHostRegister(t.data_ptr(), ...)`), an
    object's field. A parameter holding it is changed, so the caller's values of it are too
    (``interproc._copy_back``)."""
    target = first_site(pinned.sites)

    def repin(host: Host) -> Host:
        if not host.sites & sites:
            return host
        return replace(host, sites=(host.sites - sites) | {target})

    env = ev.state.env
    for key, held in list(env.items()):
        if key == root or key.startswith("$") or isinstance(held, Const):
            continue
        changed = map_hosts(held, repin)
        if changed != held:
            env[key] = changed
            env[MUTATED + key.split(".")[0]] = Const.of(True)


def _register_unpacked(ev, api: Api, node, kind: Kind) -> list:
    """``with cuda.pinned(*arrs):`` of a list of buffers (a comprehension's, a literal's): for the
    block, ``arrs`` holds them registered, so ``for a in arrs: cuda.to_device(a, stream)`` copies
    page-locked memory."""
    registered = []
    for position, arg in enumerate(node.args):
        if arg.star != "*" or not isinstance(arg.value, cst.Name):
            continue
        value = ev.expr(arg.value)
        if isinstance(value, Seq) and isinstance(value.element, Host):
            pinned = Seq(_registered_host(ev, api, node, kind, value.element, f"reg*{position}"))
        elif isinstance(value, Items) and value.items and all(isinstance(i, Host) for i in value.items):
            pinned = Items(tuple(_registered_host(ev, api, node, kind, item, f"reg*{position}.{index}")
                                 for index, item in enumerate(value.items)))
        else:
            continue
        registered.append((arg.value.value, pinned))
    return registered


def _registered_host(ev, api: Api, node, kind: Kind, value: Host, variant: str) -> Host:
    site = ev.site(node, kind, value.library, api.name, variant="with-" + variant)
    registered = Host(frozenset([site]), value.library)
    ev.event(EventType.REGISTER, node, registered, api=api.name)
    return registered


def _root_key(node) -> Optional[str]:
    """``h`` for ``h``, ``h.ctypes.data``, ``h[:n]``, ``t.data_ptr()``; ``self.buf`` for
    ``self.buf.ctypes.data``."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and node.value.value in ("self", "cls"):
                return f"{node.value.value}.{node.attr.value}"
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value  # the address of the receiver's memory
        else:
            return None


LOADER_BATCH = "batch"  # the variant of a loader's site: its batches, pinned (or not) by the loader


_DEFAULT_DEVICE = re.compile(r"set_default_device\(\s*(?!['\"]cpu['\"])\S|set_default_tensor_type\(\s*['\"]?torch\.cuda\.")


def sets_default_device(info) -> bool:
    """Whether the module moves torch's default device off the CPU (``torch.set_default_device("cuda")``,
    ``torch.set_default_tensor_type(torch.cuda.FloatTensor)``): then ``torch.randn(n)`` and the
    batches a loader stacks from such tensors may be on the GPU (evox's tests, survey 50 AO)."""
    found = getattr(info, "_sets_default_device", None)
    if found is None:
        text = getattr(info, "text", "") or ""
        found = "set_default_" in text and bool(_DEFAULT_DEVICE.search(text))
        try:
            info._sets_default_device = found  # asked at every torch factory call of the module
        except AttributeError:
            pass
    return found


def _loader(ev, api: Api, node, receiver, args: Args) -> Value:
    if sets_default_device(ev.module.info):
        return UNKNOWN  # its batches are stacked on the default device
    if args.unsure(api.opt("pin_kw")):
        return UNKNOWN  # `DataLoader(ds, **cfg.dataloader)`: pin_memory may be among the options
    pin = args.keywords.get(api.opt("pin_kw"))
    unsure = False
    if pin is None or pin[1] == Const.of(False):
        kind = Kind.PAGEABLE
    elif true_in_gpu_runs(pin[1]):  # `pin_memory=torch.cuda.is_available()`: pinned in every GPU run
        kind = Kind.PINNED
    else:
        # `pin_memory=args.pin_memory` of a setting nothing here gives: its batches are pinned or not,
        # the loader's own tensors either way (`batch["ids"].pin_memory()` may copy nothing)
        kind, unsure = Kind.PAGEABLE, True
    # A dataset that moves data to a device in its own methods may hand out CUDA tensors: pinning such a
    # batch raises, so no `pin_memory=True` fix, and a field nothing here explains may be on the GPU
    moves = _dataset_moves_to_a_device(ev, args)
    site = ev.site(node, kind, "torch", api.name,
                   fix=api.opt("fix") if kind is Kind.PAGEABLE and not unsure and not moves else None,
                   fresh_each_iteration=True, variant=LOADER_BATCH)
    collate = args.keywords.get(api.opt("collate_kw")) if api.opt("collate_kw") else None
    if collate is not None and collate[1] == Const.of(None):
        collate = None  # `collate_fn=None`: the default collate function (VideoMamba's per-loader list of them)
    if collate is None and kind is Kind.PAGEABLE and not unsure and _hands_items_through(args):
        return Loader(site, _items_as_they_are(ev, node, args))
    batch = _collated(ev, node, collate[1], site, args) if collate is not None else None
    if collate is None:
        batch = _default_collated(ev, node, args, site, api, moves)
    if moves and batch is None:
        batch = Host(frozenset([site]), "torch", batch=True, maybe_unknown=True)
    if unsure:
        # pinned or not: what its fields are still says what converting one makes (`ids.long()` of an
        # int16 field is a new pageable tensor either way)
        made = {s for s in all_sites(batch)} if batch is not None else set()
        batch = map_hosts(batch if batch is not None else Host(frozenset([site]), "torch", batch=True),
                          lambda host: replace(host, maybe_unknown=True) if site in host.sites or host.sites & made
                          else host)
    return Loader(site, batch)


def _default_collated(ev, node, args: Args, site, api: Api, moves: bool) -> Optional[Value]:
    """A batch of the default collate function, field by field, where the dataset of the checked
    code says what an item holds (a dict or tuple of tensors, arrays and Python numbers) and the
    loader's ``batch_size`` is a constant: each field a tensor of ``batch_size`` items, of the item's
    size, in the loader's memory (SBGM's `{"img": ..., "label": torch.tensor(season)}`: a 16-element
    label, not a batch of images, survey 50 AL). None where the item says nothing that sizes a field."""
    if args.star or args.unsure("batch_size") or len(args.positional) > 2 or "batch_sampler" in args.keywords:
        return None
    # `DataLoader(ds, 8)`: the batch size is the second positional argument
    given = args.keywords.get("batch_size") or (args.positional[1] if len(args.positional) == 2 else None)
    count = 1 if given is None else given[1].single if isinstance(given[1], Const) else None
    if given is not None and given[1] == Const.of(None):
        return None  # no batching: the items as they are (`_hands_items_through`) or unknown
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        count = None  # a batch size nothing here gives: a field of Python numbers is still one per item
    state, emit = ev.state.copy(), ev.emit
    ev.emit = False
    try:
        items = _dataset_items(ev, node, args)
    finally:
        ev.state, ev.emit = state, emit
    item = items.element if isinstance(items, Seq) else None
    if _device_fields(item) and site.fix is not None:
        # `pin_memory=True` would raise on a batch holding a CUDA tensor ("cannot pin
        # 'torch.cuda.FloatTensor'"): no fix for any field of this loader
        site = replace(site, fix=None)
    generic = Host(frozenset([site]), "torch", batch=True)
    sized = []

    def stacked(**known) -> Host:
        made = ev.site(node, site.kind, "torch", api.name, fix=site.fix, fresh_each_iteration=True,
                       variant=LOADER_BATCH, **known)
        sized.append(made)
        return Host(frozenset([made]), "torch", batch=True)

    def field(value: Value) -> Value:
        if isinstance(value, Items) and value.items and not value.names:
            return Items(tuple(field(v) for v in value.items))  # nested: `(img, label), (ids, vals)`
        if isinstance(value, Host) and value.sites and not value.maybe_unknown and not value.pointer:
            sizes = {s.nbytes for s in value.sites}
            nbytes = sizes.pop() if len(sizes) == 1 else None
            # the item's element type, which the collated tensor keeps: `.long()` of an int16 field is
            # a new tensor (TinyViT's top-k ids, survey 52)
            dtype = common(s.dtype for s in value.sites)
            if (nbytes is None or count is None) and all(s.python_numbers for s in value.sites):
                return stacked(python_numbers=True)  # listed Python numbers (a prompt's token ids): one per item
            if nbytes is None or count is None:
                # a size nothing here gives, of an element type it may give
                return stacked(dtype=dtype) if dtype is not None else generic
            return stacked(nbytes=count * nbytes, dtype=dtype)
        if isinstance(value, Device):
            sized.append(site)
            return Device("torch")  # an item the dataset made on the GPU: stacked there
        number = isinstance(value, Scalar) or isinstance(value, Const) and len(value.values) == 1 and \
            isinstance(value.single, (int, float)) and not isinstance(value.single, bool)
        if not number and moves and not isinstance(value, Host):
            sized.append(site)  # a dataset that moves data to a device: what nothing explains may be there
            return replace(generic, maybe_unknown=True)
        if not number:
            return generic
        # a Python number: one int64 or float64 element per item
        kind = value.kind if isinstance(value, Scalar) else type(value.single).__name__
        return stacked(nbytes=8 * count if count is not None else None, python_numbers=count is None,
                       dtype={"int": "int64", "float": "float64"}.get(kind))
    if isinstance(item, Mapping) and item.entries and item.rest is None and not item.optional:
        batch = Mapping(tuple((key, field(value)) for key, value in item.entries))
    elif isinstance(item, Items) and item.items and not item.names:
        batch = Items(tuple(field(value) for value in item.items))
    elif isinstance(item, (Host, Scalar, Const)):
        # each item one tensor, or one Python number (a position found in the item's token ids,
        # Chinese-CLIP, survey 53 CF): the batch is those stacked
        batch = field(item)
    else:
        return None
    return batch if sized else None


def _dataset_argument(args: Args) -> Value:
    """The dataset a ``DataLoader(...)`` call is given (first positional, or ``dataset=``)."""
    return args.positional[0][1] if args.positional else \
        (args.keywords["dataset"][1] if "dataset" in args.keywords else UNKNOWN)


def _dataset_moves_to_a_device(ev, args: Args) -> bool:
    """Whether the loader's dataset is an object of the checked code whose class moves data to a
    device in its own methods (``x.cuda()``, ``x.to(self.device)``, ``x.to(device="cuda")``; not a
    ``.to(torch.float32)``): its items' fields that nothing explains may then be CUDA tensors
    (metavoice's speaker embedding, computed on the GPU in ``__getitem__``, survey 56 FC)."""
    dataset = _dataset_argument(args)
    if not isinstance(dataset, Instance):
        return False
    project = ev.module.project
    info = project.class_info(dataset.klass)
    if info is None:
        return False
    for owner in info.mro():
        found = project.moving_classes.get(owner.cls.node)
        if found is None:
            found = project.moving_classes[owner.cls.node] = any(_device_move(node) for node in code_nodes(owner.cls.node))
        if found:
            return True
    return False


def _device_move(node) -> bool:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    name = node.func.attr.value
    if name == "cuda":
        return True
    if name != "to":
        return False
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return not _names_the_cpu(arg.value)
        if arg.keyword is None and not arg.star:
            text = dotted(arg.value) or (arg.value.value if isinstance(arg.value, cst.SimpleString) else "")
            return "device" in text or "cuda" in text
    return False


def _names_the_cpu(expr) -> bool:
    """``"cpu"`` or ``torch.device("cpu")`` written out."""
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value == "cpu"
    return isinstance(expr, cst.Call) and len(expr.args) == 1 and isinstance(expr.args[0].value, cst.SimpleString) \
        and expr.args[0].value.evaluated_value == "cpu"


def _device_fields(item) -> bool:
    """Whether a dataset item holds a tensor on the GPU, or one whose device nothing tells (the
    output of a model the dataset runs on its device)."""
    todo, seen = [item], 0
    while todo and seen < 64:
        value = todo.pop()
        seen += 1
        if isinstance(value, (Device, Tensor)):
            return True
        if isinstance(value, Items):
            todo.extend(value.items)
        elif isinstance(value, Mapping):
            todo.extend(v for _, v in value.entries)
    return False


def _hands_items_through(args: Args) -> bool:
    """``DataLoader(ds, batch_size=None, pin_memory=False)`` in the main process: each batch is the
    dataset's item itself (the default conversion keeps tensors and views NumPy arrays), so its
    memory is whatever the dataset made (torchani's dataset pins its own tensors). Worker processes
    would send the items through shared memory instead."""
    if args.star or args.unsure("batch_size") or args.unsure("num_workers") or len(args.positional) > 1:
        return False
    batch_size = args.keywords.get("batch_size")
    workers = args.keywords.get("num_workers")
    return batch_size is not None and batch_size[1] == Const.of(None) and \
        (workers is None or workers[1] == Const.of(0))


def _items_as_they_are(ev, node, args: Args) -> Value:
    state, emit = ev.state.copy(), ev.emit
    ev.emit = False
    try:
        return _dataset_items(ev, node, args)  # an item nothing explains stays unknown
    finally:
        ev.state, ev.emit = state, emit


def _dataset_items(ev, node, args: Args) -> Value:
    """What the collate function is given: the items of a dataset of the checked code (its
    ``__getitem__``'s value) or of a library dataset the tables describe (``labelled-dataset``),
    one at a time with ``batch_size=None``, else a list of them."""
    dataset = _dataset_argument(args)
    if isinstance(dataset, Alternatives):
        # one loader built over each of several datasets (VideoMamba's image and video sets, survey 52
        # BI): an item of any of them
        found = [_item_of(ev, node, option) for option in ordered(dataset.options)]
        item = UNKNOWN if any(f is UNKNOWN for f in found) else found[0]
        for other in found[1:]:
            item = join(item, other)
    else:
        item = _item_of(ev, node, dataset)
    if item is UNKNOWN:
        return UNKNOWN
    batch_size = args.keywords.get("batch_size")
    return item if batch_size is not None and batch_size[1] == Const.of(None) else Seq(item)


def _item_of(ev, node, dataset: Value) -> Value:
    """One item of ``dataset``; unknown where nothing here says what its items are."""
    if dataset == LABELLED_DATASET:
        return LABELLED_ITEM
    if not isinstance(dataset, Instance):
        return UNKNOWN
    getter = ev.calls.member(dataset, "__getitem__", node)
    if isinstance(getter, Function):
        return ev.calls.call_value(getter, node, Args(((node, Scalar("int")),), {}, False))
    if isinstance(ev.calls.member(dataset, "__iter__", node), Function):
        # an IterableDataset: the loader takes what its `__iter__` yields, one item after another
        return element_of(ev.calls.iterate(dataset, node))
    return UNKNOWN


def _collated(ev, node, collate: Value, site, args: Args) -> Optional[Value]:
    """What each batch holds when a function of the checked code collates it: the loader pins the
    tensors it returns (in dicts, lists and tuples) when ``pin_memory`` is set, never a NumPy array,
    which stays the collate function's new pageable memory on every batch. None (the loader's own
    tensors) when it returns no NumPy array the analysis knows. What the collate function does to a
    dataset's items it is given (a non-blocking upload of pageable tensors, DLRM's) is reported here,
    where the loader joins them."""
    if not isinstance(collate, Function) or collate.kernel:
        return None
    state, emit, detached = ev.state.copy(), ev.emit, ev.detached
    ev.emit = False
    try:
        items = _dataset_items(ev, node, args)
    finally:
        ev.state, ev.emit = state.copy(), emit
    # It runs per batch, in the loader, not here: no events here, but for what it does to the items.
    ev.emit, ev.detached = emit and interesting(items), True
    try:
        made = ev.calls.call_value(collate, node, Args(((node, items),), {}, False))
    finally:
        ev.state, ev.emit, ev.detached = state, emit, detached
    arrays = []

    def per_batch(host: Host, unpinned: bool) -> Host:
        if not host.sites:
            return host  # an array nothing explains stays unknown
        fresh = replace(host, sites=frozenset(replace(s, fresh_each_iteration=True) for s in host.sites))
        if host.library == "torch" and not unpinned:
            if all(s.kind is not Kind.PAGEABLE for s in host.sites):
                return fresh  # pinned by the collate function itself
            # A tensor: the loader's batch memory, which it pins or not (``torch.from_numpy`` of the
            # collate function's array included: pinning copies it), as large as the collate
            # function's tensor where that is known (a label tensor of a few Python ints).
            sized = _sized_like(ev, node, site, host)
            if sized is not None:
                arrays.append(sized)
                return sized
            return Host(frozenset([site]), "torch")
        arrays.append(host)
        return fresh

    def walk(value: Value, unpinned: bool) -> Value:
        if isinstance(value, Host):
            return per_batch(value, unpinned)
        if (value is UNKNOWN or isinstance(value, Tensor)) and not unpinned:
            # a field nothing here places (`torch.cat` of loaded tensors): the loader's batch memory,
            # as the whole batch is where the collate function makes nothing the analysis sizes
            return Host(frozenset([site]), "torch", batch=True)
        if isinstance(value, Instance):
            # The loader's pinning thread pins tensors in mappings, sequences, namedtuples and objects
            # with a `pin_memory()` method; any other object (Deformable-DETR's NestedTensor) it
            # returns as it is, so the tensors it holds stay the collate function's memory.
            unpinned = unpinned or not _defines(ev, value, "pin_memory")
        if type(value) in (Items, Seq, Mapping, Instance, Iteration):
            return rebuild(value, lambda item: walk(item, unpinned))
        return value
    batch = walk(made, False)
    return batch if arrays else None


def _sized_like(ev, node, site, host: Host) -> Optional[Host]:
    """The loader's batch memory for one tensor the collate function makes, where its size is known:
    a constant size, a bound, or a tensor of Python numbers the code lists."""
    if host.maybe_unknown or host.pointer:
        return None
    sizes = {(s.nbytes, s.max_nbytes, s.python_numbers) for s in host.sites}
    if len(sizes) != 1:
        return None
    nbytes, bound, numbers = sizes.pop()
    if nbytes is None and bound is None and not numbers:
        return None
    made = ev.site(node, site.kind, "torch", site.api, fix=site.fix, fresh_each_iteration=True, variant=LOADER_BATCH,
                   nbytes=nbytes, max_nbytes=bound if nbytes is None else None, python_numbers=numbers and nbytes is None)
    return Host(frozenset([made]), "torch")


def _defines(ev, value: Instance, name: str) -> bool:
    info = ev.module.project.class_info(value.klass)
    return info is not None and info.lookup(name, record=False) is not None


# ------------------------------------------------------------------------------ copies
def _truthy_stream(value: Value) -> bool:
    """A stream argument that is not the default stream: an explicit request for an async copy."""
    if isinstance(value, Stream):
        return not value.default
    if isinstance(value, Const):
        return all(bool(v) for v in value.values)
    return True  # an unknown stream object passed on purpose


def _current_stream(ev) -> Optional[Stream]:
    current = ev.state.env.get(STREAM)
    return current if isinstance(current, Stream) else None


def is_async(ev, api: Api, receiver: Optional[Value], args: Args) -> tuple[bool, Optional[Stream]]:
    mode = api.opt("async", "never")
    spec = api.arg("stream")
    given = spec is not None and args.present(spec)
    stream = args.value(spec) if given else UNKNOWN
    current = _current_stream(ev)
    explicit = stream if isinstance(stream, Stream) else None
    remembered = receiver.stream if isinstance(receiver, Device) else None
    chosen = explicit or (remembered if mode == "stream-or-remembered" else None) or current
    if mode == "always":
        # An async API told to use the default stream (`stream=0`, `stream=None`) asks for no overlap.
        return not (given and not _truthy_stream(stream)), chosen
    if mode == "never":
        return False, chosen
    if mode in ("stream", "stream-or-remembered"):
        if given:
            return _truthy_stream(stream), chosen
        if mode == "stream-or-remembered" and remembered is not None:
            return not remembered.default, chosen
        return current is not None and not current.default, chosen
    if mode == "blocking-false":
        return args.value(api.arg("blocking")) == Const.of(False), chosen
    if mode == "unless-blocking-true":
        return args.value(api.arg("blocking")) != Const.of(True), chosen
    if mode == "non-blocking":  # `non_blocking=use_cuda`: asynchronous whenever it copies to a GPU
        return true_in_gpu_runs(args.value(api.arg("non_blocking"))), chosen
    if mode == "flag":
        return true_in_gpu_runs(args.value(api.arg("async_flag"))), chosen
    raise AssertionError(f"async mode {mode!r} passed the table schema but has no meaning here")


def _direction_from_kind(ev, kind: Value, src: Value, dst: Value) -> tuple[Optional[str], Value]:
    code = kind.single if isinstance(kind, Const) else None
    direction = ev.tables.memcpy_direction(code) if code is not None else "infer"
    if direction == "h2d":
        return "h2d", src
    if direction == "d2h":
        return "d2h", dst
    if direction == "infer":
        if isinstance(src, Host) and not isinstance(dst, Host):
            return "h2d", src
        if isinstance(dst, Host) and not isinstance(src, Host):
            return "d2h", dst
    return None, UNKNOWN


def _names_a_dtype(expr, value: Value) -> bool:
    """``x.dtype``, a ``dtype`` variable: a dtype whose value is not known (so no device)."""
    if isinstance(value, Const) and any(isinstance(v, str) and v.startswith("dtype:") for v in value.values):
        return True
    name = expr.attr.value if isinstance(expr, cst.Attribute) else (expr.value if isinstance(expr, cst.Name) else "")
    return "dtype" in name.lower()


def _copy(ev, api: Api, node, receiver, args: Args) -> Value:
    direction = api.opt("direction")
    if direction == "kind-arg":
        direction, host = _direction_from_kind(ev, args.value(api.arg("kind_arg")), args.value(api.arg("src")),
                                               args.value(api.arg("dst")))
        if direction is None:
            return UNKNOWN
    else:
        host = _arg_value(api.arg("host"), receiver, args)
    device_side = placed(ev, _arg_value(api.arg("device"), receiver, args))
    if direction == "d2h" and isinstance(device_side, Host):
        # host.copy_(other_host): a CPU copy between host buffers, not a transfer.
        ev.event(EventType.READ, node, device_side)
        ev.event(EventType.WRITE, node, host)
        return receiver if receiver is not None else UNKNOWN
    if api.opt("needs_device_side") and not isinstance(device_side, (Device, Tensor)):
        return receiver if receiver is not None else UNKNOWN  # copy_ from something not known to be on a GPU
    if api.opt("needs_device_side") and isinstance(device_side, Tensor):
        given = args.get(api.arg("non_blocking"))
        if given is None or given[1] == Const.of(False):
            # `h.copy_(torch.cat(ids))` of a tensor nothing places: a CPU copy, or a blocking download
            # that waits for the stream; no transfer to count (asked to be non-blocking, the copy is
            # meant to come from a GPU). As a synchronization it only removes race findings.
            ev.event(EventType.SYNC, node, api=api.name, stream=None)
            ev.event(EventType.WRITE, node, host)
            return receiver if receiver is not None else UNKNOWN
    target_spec = api.arg("target_device")
    if target_spec is not None:
        # torch .to(x): a copy only when x names a device; a dtype makes a converted copy.
        target_expr = args.get(target_spec)
        if target_expr is None and "dtype" in args.keywords:
            target_expr = args.keywords["dtype"]  # t.to(dtype=torch.int32): a conversion, as t.to(torch.int32)
        if target_expr is not None and other_device(target_expr[1], ev.tables):
            return UNKNOWN  # t.to("meta"): a tensor with no data, nothing copied
        if target_expr is not None and isinstance(target_expr[1], Host) and direction == "h2d" and \
                not target_expr[1].pointer:
            # t.to(ref) of a CPU tensor `ref`: its device and dtype, the CPU's; a conversion at most
            if isinstance(receiver, Host):
                return convert(ev, node, receiver, None, api.name, always_copy=False, some_dtype=True)
            return receiver if receiver is not None else UNKNOWN
        target = device_of(target_expr[1], ev.tables) if target_expr else None
        if target is None and target_expr is not None and isinstance(target_expr[1], Device) and \
                target_expr[1].library == "torch":
            target = True  # t.to(ref) of a CUDA tensor: onto its GPU
        if target_expr is not None and target is None:
            dtype = canonical_dtype(target_expr[1], ev.tables)
            if dtype is None and _names_a_dtype(target_expr[0], target_expr[1]):
                return receiver if receiver is not None else UNKNOWN  # t.to(other.dtype): a conversion
            if dtype is not None:
                if isinstance(receiver, Host):
                    return convert(ev, node, receiver, dtype, api.name, always_copy=False)  # t.to(torch.half)
                return receiver if receiver is not None else UNKNOWN
            # A device nothing names (a parameter): non_blocking only matters for a GPU target, so a
            # non-blocking move is taken to go to the GPU.
            if true_in_gpu_runs(args.value(api.arg("non_blocking"))) and direction == "h2d":
                target = True
        if target_expr is None or target is None:
            return UNKNOWN
        if direction == "h2d" and not target:
            return receiver if receiver is not None else UNKNOWN  # .to("cpu") of a host tensor
        if direction == "d2h" and target:
            return receiver if receiver is not None else UNKNOWN
        if direction == "d2h" and isinstance(target_expr[1], DeviceSpec) and target_expr[1].of_data and \
                not isinstance(device_side, Device):
            # idx.to(x.device) of a tensor nothing places, where x is on the CPU: code that follows
            # its input's device, run on the CPU here; no sign that idx is on a GPU.
            return UNKNOWN
    if api.arg("copy_flag") is not None and args.value(api.arg("copy_flag")) == Const.of(False):
        stream = args.value(api.arg("stream"))
        return Device(api.opt("library", api.library),
                      stream if isinstance(stream, Stream) and api.opt("remembers_stream") else None)
    if api.opt("host_from_sequence") and isinstance(host, (Items, Seq)):
        # A list or tuple is first made into a new NumPy array: pageable memory, then copied.
        site = ev.site(node, Kind.PAGEABLE, "numpy", api.name, variant="from-sequence")
        host = Host(frozenset([site]), "numpy")
    if api.opt("staged") and not isinstance(host, Host):
        # cupy.asarray of a device array, a Python list or a value nothing explains: the library's device
        # array, with no host buffer of the checked code's to speak of.
        return Device(api.opt("library", api.library))
    asynchronous, stream = is_async(ev, api, receiver, args)
    if direction == "h2d" and asynchronous and api.library == "torch" and _restrided(ev, api, host, args):
        host = _contiguous_source(ev, node, host)
    dest_allocated = False
    if api.opt("returns") == "host-dest":
        out_spec = api.arg("out")
        if out_spec is not None and args.present(out_spec):
            host = args.value(out_spec)
        elif api.arg("host") is None:
            # The API allocates its own destination: pageable (torch: pinned when non_blocking).
            kind = Kind(api.opt("dest_kind_when_async", "pageable")) if asynchronous else Kind.PAGEABLE
            flavour = ev.tables.host_flavour.get(api.library, "numpy")
            site = ev.site(node, kind, flavour, api.name, variant="dest", fresh_each_iteration=True)
            host = Host(frozenset([site]), flavour)
            dest_allocated = True
    stream_arg = args.get(api.arg("stream"))
    ev.copy_event(node, host, api=api.name, direction=direction, is_async=asynchronous, stream=stream,
                  dest_allocated=dest_allocated, staged=bool(api.opt("staged", False)), library=api.library,
                  family=api.family, stream_node=stream_arg[0] if stream_arg else None)
    returns = api.opt("returns")
    if returns == "device":
        remembered = stream if api.opt("remembers_stream") else None
        return Device(api.opt("library", api.library), remembered)
    if returns == "host-dest":
        return host
    if returns == "self" and receiver is not None:
        return receiver  # an in-place copy hands back its destination (`torch.empty(n).copy_(d)`)
    return UNKNOWN


def _restrided(ev, api: Api, host: Value, args: Args) -> bool:
    """Whether ATen's CUDA copy needs the source in another layout than the view's: ``dst.copy_(view)``
    into a device tensor of its own layout, or ``.to(device, dtype=other)``. A plain ``.to(device)`` /
    ``.cuda()`` makes the destination with the view's strides and copies a dense view as it is
    (measured: ``pinned.T.to("cuda", non_blocking=True)`` returns at once; ``bench/noncontiguous_pinned.py``)."""
    if not isinstance(host, Host):
        return False
    if host.sliced:
        return True  # not dense: the destination is made contiguous, the source staged into it
    if host.contiguous is not False:
        return False
    method = api.name.rsplit(".", 1)[-1]
    if method == "copy_":
        return True
    if method != "to":
        return False
    given = args.keywords.get("dtype") or (args.positional[1] if len(args.positional) >= 2 else None)
    if given is None:
        return False
    target = canonical_dtype(given[1], ev.tables)
    if target is None:
        return "dtype" in args.keywords  # a dtype nothing names (`dtype=x.dtype`): it may convert
    return {s.dtype for s in host.sites} != {target}


def _contiguous_source(ev, node, host: Value) -> Value:
    """What PyTorch copies to the GPU where the layout changes (``_restrided``): a non-contiguous host
    view (``pinned.T``, ``t.permute(...)``) is first copied by ``.contiguous()`` into a new CPU tensor,
    which is pageable whatever the view's memory is (ATen's ``copy_kernel_cuda``), so the pinning is
    wasted and the copy is staged."""
    if not isinstance(host, Host) or host.contiguous is not False and not host.sliced:
        return host
    ev.event(EventType.READ, node, host, api="torch.Tensor.contiguous")
    site = ev.site(node, Kind.PAGEABLE, "torch", "torch.Tensor.contiguous", variant="contiguous-copy",
                   dtype=common(s.dtype for s in host.sites), ndim=common(s.ndim for s in host.sites),
                   nbytes=common(s.nbytes for s in host.sites), fresh_each_iteration=True)
    return Host(frozenset([site]), "torch", maybe_unknown=host.maybe_unknown)  # (or not a host tensor at all)


# ------------------------------------------------------------------------------ streams & syncs
def _sync(ev, api: Api, node, receiver, args: Args) -> Value:
    target = api.opt("target", "device")
    stream = None
    if target == "self":
        stream = receiver if isinstance(receiver, Stream) else None
    elif target == "arg":
        value = args.value(api.arg("target_arg"))
        stream = value if isinstance(value, Stream) else None
    ev.event(EventType.SYNC, node, api=api.name, stream=stream)
    if api.opt("computes") and isinstance(receiver, (Device, Tensor)):
        return Device(receiver.library) if isinstance(receiver, Device) else Tensor()
    return UNKNOWN


def _stream(ev, api: Api, node, receiver, args: Args) -> Value:
    return _err_tuple(api, Stream(origin=node, default=False, library=api.library))


def _default_stream(ev, api: Api, node, receiver, args: Args) -> Value:
    return Stream(origin=node, default=True, library=api.library)


def _current(ev, api: Api, node, receiver, args: Args) -> Value:
    return _current_stream(ev) or Stream(origin=node, default=True, library=api.library)


def _stream_context(ev, api: Api, node, receiver, args: Args) -> Value:
    stream = args.value(api.arg("arg"))
    return Context(stream=stream) if isinstance(stream, Stream) else UNKNOWN


def _use_stream(ev, api: Api, node, receiver, args: Args) -> Value:
    if isinstance(receiver, Stream):
        ev.state.env[STREAM] = receiver  # current from here on (CuPy's current stream is global)
    return receiver if receiver is not None else UNKNOWN


def _sync_on_exit(ev, api: Api, node, receiver, args: Args) -> Value:
    return Context(sync_on_exit=receiver if isinstance(receiver, Stream) else None, sync_node=node)


# ------------------------------------------------------------------------------ the rest
def run_copy_object(ev, node: cst.Call, args: Args, source: Value, destination: Value) -> None:
    """``copy(stream)`` of a PyCUDA ``Memcpy2D`` whose host side ``set_src_host``/``set_dst_host``
    named: asynchronous when given a stream, blocking when called bare (or with ``aligned``)."""
    stream = args.positional[0][1] if args.positional else args.keywords.get("stream", (None, None))[1]
    asynchronous = stream is not None and not (isinstance(stream, Const) and
                                                all(isinstance(v, bool) for v in stream.values)) and \
        _truthy_stream(stream)
    chosen = stream if isinstance(stream, Stream) else None
    for host, direction in ((source, "h2d"), (destination, "d2h")):
        if isinstance(host, Host):
            ev.copy_event(node, host, api="pycuda.driver.Memcpy2D", direction=direction, is_async=asynchronous,
                          stream=chosen, library="pycuda", stream_node=args.positional[0][0] if args.positional else None)


def _same_items(ev, api: Api, node, receiver, args: Args) -> Value:
    """``tqdm(loader)``: iterating it yields what iterating ``loader`` does."""
    return args.value(api.arg("arg"))


def _table(ev, api: Api, node, receiver, args: Args) -> Value:
    """A table read from text, or a column, row or cell of one (``analysis/tabular.py``)."""
    return GIVES[api.opt("gives", "table")]


def _labelled_dataset(ev, api: Api, node, receiver, args: Args) -> Value:
    """A library dataset whose items are (sample, class index): the index a Python int, unless a
    ``target_transform`` (the entry's ``target_kw``) makes it something else."""
    spec = api.arg("target")
    if args.star or spec is not None and args.unsure(spec.kw):
        return UNKNOWN
    given = args.get(spec)
    if given is not None and given[1] != Const.of(None):
        return UNKNOWN
    return LABELLED_DATASET



def _object(tag: str):
    def handler(ev, api: Api, node, receiver, args: Args) -> Value:
        return Obj(tag)
    return handler


def _run_later(ev, api: Api, node, receiver, args: Args) -> Value:
    """``pool.submit(f, x)``, ``pool.map(f, xs)``: f runs beside the caller with the other arguments."""
    spec = api.arg("arg")
    callee = args.value(spec)
    rest = tuple(item for index, item in enumerate(args.positional) if index != spec.pos)
    keywords = {k: v for k, v in args.keywords.items() if k != spec.kw}
    if api.opt("each"):
        rest = tuple((expr, element_of(value)) for expr, value in rest)
    if api.opt("unpack"):
        # `pool.starmap(f, enumerate(items))`: each element is the tuple of f's arguments
        if len(rest) != 1 or not isinstance(rest[0][1], Items):
            ev.escape(node, args.values())
            return UNKNOWN
        expr = rest[0][0]
        rest = tuple((expr, item) for item in rest[0][1].items)
    if args.star:
        ev.escape(node, args.values())
        return UNKNOWN
    # The task keeps its arguments until it has run, iterations later perhaps (a writer pool whose
    # futures wait in a deque): they outlive this point, as a stored buffer does.
    ev.escape(node, [value for _, value in rest] + [value for _, value in keywords.values()])
    ev.calls.run_beside(node, callee, Args(rest, keywords, False), args)
    return UNKNOWN


def _launch(ev, api: Api, node, receiver, args: Args) -> Value:
    spec = api.arg("arg")
    values = [args.value(spec)] if spec else args.values()
    ev.calls.launch(node, "kernel", values)
    return UNKNOWN


def _device_spec(ev, api: Api, node, receiver, args: Args) -> Value:
    value = args.value(api.arg("arg"))
    if other_device(value, ev.tables):
        return DeviceSpec(None, other=True)
    return DeviceSpec(device_of(value, ev.tables))


def _free(ev, api: Api, node, receiver, args: Args) -> Value:
    if api.opt("waits") == "device":
        ev.event(EventType.SYNC, node, api=api.name, stream=None)
    return UNKNOWN


def _read(ev, api: Api, node, receiver, args: Args) -> Value:
    value = _arg_value(api.arg("arg"), receiver, args)
    if isinstance(value, Host):
        ev.event(EventType.READ, node, value, api=api.name)
        if api.opt("reduces") and _whole_reduction(api, args) and not value.pointer:
            # `h.max()`, `np.sum(h)`: one number (a 0-d tensor for torch, as small), so
            # `np.ones(shape) * np.max(h)` is as large as the ones
            return Scalar("number")
        if api.opt("reduces") and not value.pointer and "out" not in args.keywords and not args.star and \
                value.sites and not value.maybe_unknown:
            # `np.nanmean(table, axis=0)`, `t.sum(dim=1)`: a new array of the remaining axes, pageable
            # whatever the table's memory (its size is not followed)
            # A reduction of a tensor of Python numbers is one too, and no larger (FBGEMM's per-rank
            # batch sizes summed per feature, survey 56 FF)
            numbers = all(s.python_numbers for s in value.sites)
            site = ev.site(node, Kind.PAGEABLE, value.library, display(ev, api.name, value.library),
                           python_numbers=numbers)
            return Host(frozenset([site]), value.library)
    return UNKNOWN


_REDUCTION_KEYWORDS = frozenset({"dtype"})  # keywords that keep a reduction whole (not axis, dim, out, keepdims)


def _whole_reduction(api: Api, args: Args) -> bool:
    """A reduction over every element: nothing but the array itself (and a dtype) is passed."""
    spec = api.arg("arg")
    extra = len(args.positional) - (0 if spec is None or spec.is_self else 1)
    return extra == 0 and not args.star and set(args.keywords) <= _REDUCTION_KEYWORDS


def _write(ev, api: Api, node, receiver, args: Args) -> Value:
    spec = api.arg("arg")
    value = _arg_value(spec, receiver, args)
    # What the write takes its values from is read by it now: `m.add_(g)`, `v.addcmul_(g, g)`,
    # `np.copyto(dst, src)` (a CPU optimizer's step reading a gradient still being downloaded).
    written = None if spec is None or spec.is_self else args.get(spec)
    given = [*args.positional, *args.keywords.values()]
    ev.read_hosts(node, [v for argument, v in given if written is None or argument is not written[0]], api=api.name)
    if isinstance(value, Host):
        ev.event(EventType.WRITE, node, value, api=api.name)
    return receiver if receiver is not None else UNKNOWN


def _elementwise(ev, api: Api, node, receiver, args: Args) -> Value:
    operands = ([receiver] if receiver is not None else []) + [value for _, value in args.positional]
    out = args.keywords.get("out")
    if out is not None:
        ev.read_hosts(node, operands, api=api.name)
        for value in flatten([out[1]]):
            if isinstance(value, Host):
                ev.event(EventType.WRITE, node, value, api=api.name)
        return out[1]
    if args.star:
        ev.read_hosts(node, operands + list(args.starred), api=api.name)
        return UNKNOWN
    flavour = receiver.library if isinstance(receiver, Host) else "numpy"
    return ev.arithmetic(node, operands, api=display(ev, api.name, flavour))


def _array_module(ev, api: Api, node, receiver, args: Args) -> Value:
    """``cupy.get_array_module(x)``: NumPy for host arrays, CuPy once a CuPy array is among them, so
    a helper's ``if xp is np:`` / ``if get_array_module(u) is not np:`` is decided per caller."""
    values = flatten(args.values())
    if any(isinstance(v, Device) and v.library == api.library for v in values):
        return LibraryRef(api.opt("device_module"))
    if values and all(isinstance(v, Host) and not v.maybe_unknown and not v.pointer for v in values):
        return LibraryRef(api.opt("host_module"))
    return UNKNOWN


def _gpu_run(ev, api: Api, node, receiver, args: Args) -> Value:
    return ON_GPU


def _capture_begin(ev, api: Api, node, receiver, args: Args) -> Value:
    ev.state.env[CAPTURING] = Const.of(True)
    return UNKNOWN


def _capture_end(ev, api: Api, node, receiver, args: Args) -> Value:
    ev.state.env[CAPTURING] = Const.of(False)
    returns = api.opt("returns")
    if returns == "graph":
        return Obj("graph")
    return Items((UNKNOWN, Obj("graph"))) if returns == "err-graph" else UNKNOWN


def _graph_launch(ev, api: Api, node, receiver, args: Args) -> Value:
    stream = args.value(api.arg("stream")) if api.arg("stream") is not None else UNKNOWN
    if not isinstance(stream, Stream) and isinstance(receiver, Stream):
        stream = receiver
    ev.state.launch_graphs(stream if isinstance(stream, Stream) else None)
    return UNKNOWN


def _deserialize(ev, api: Api, node, receiver, args: Args) -> Value:
    """``torch.load(path, map_location="cpu")``: whatever was saved, its tensors restored into new
    pageable CPU memory. What it holds (a tensor, a dict of them, a module) is unknown, so the value is
    taken as a batch is: any item of it is one of these tensors (see ``element_of``). Restored to a
    GPU, or to where each was saved (no location given), nothing is known."""
    spec = api.arg("location")
    if args.star or args.unsure(spec.kw if spec is not None else None):
        return UNKNOWN
    found = args.get(spec)
    if found is None:
        on_cpu = bool(api.opt("default_cpu", False))
    else:
        expr, value = found
        on_cpu = _keeps_storage(expr) or device_of(value, ev.tables) is False
    if not on_cpu:
        return UNKNOWN
    site = ev.site(node, Kind.PAGEABLE, "torch", display(ev, api.name, "torch"))
    value = Host(frozenset([site]), "torch", batch=True)
    ev.event(EventType.ALLOC, node, value, api=site.api)
    return value


def _keeps_storage(expr) -> bool:
    """``map_location=lambda storage, loc: storage``: every storage stays where it was deserialized,
    on the CPU."""
    if not isinstance(expr, cst.Lambda):
        return False
    params = expr.params.params
    return bool(params) and isinstance(expr.body, cst.Name) and expr.body.value == params[0].name.value


EFFECTS = {
    "deserialize": _deserialize,
    "array-module": _array_module,
    "gpu-run": _gpu_run,
    "capture-begin": _capture_begin, "capture-end": _capture_end, "graph-launch": _graph_launch,
    "elementwise": _elementwise,
    "alloc": _alloc, "device": _device, "view": _view, "convert": _convert, "contiguous": _contiguous,
    "copy": _copy, "sync": _sync, "stream": _stream, "default-stream": _default_stream,
    "current-stream": _current, "stream-context": _stream_context, "use-stream": _use_stream,
    "sync-on-exit": _sync_on_exit, "event": _object("event"), "gpu-device": _object("gpu-device"),
    "pool": _object("pool"), "pinned-pool": _object("pinned-pool"), "copy-object": _object("copy-object"), "same-items": _same_items, "rng": _object("rng"), "executor": _object("executor"), "run-later": _run_later, "kernel": _object("kernel"), "kernel-module": _object("kernel-module"),
    "launch": _launch, "device-spec": _device_spec, "loader": _loader, "register": _register, "free": _free,
    "read": _read, "write": _write, "table": _table, "labelled-dataset": _labelled_dataset,
}

if set(EFFECTS) != set(tableschema.EFFECTS):  # pragma: no cover - a development error, caught by the tests too
    raise AssertionError(f"effects without handlers or handlers without schema: "
                         f"{sorted(set(EFFECTS) ^ set(tableschema.EFFECTS))}")

__all__ = ["Args", "EFFECTS", "apply", "convert", "device_of", "flatten", "is_async"]
