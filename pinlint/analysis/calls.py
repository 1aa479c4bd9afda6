"""Call resolution: which API, project function or builtin a call is, by the provenance of its callee.

A library call resolves through the import map to a table entry; a method through the provenance of
its receiver (a CuPy device array's ``get``, a Numba ``DeviceNDArray``'s ``copy_to_host``). A method
on a receiver nothing explains matches only a table entry marked unique to one library, and only
when the checked code defines no method of that name itself: other projects have their own
``copy_to_host``, ``get`` and ``set``. Calls of the checked code's own functions, methods and classes
are analysed in ``interproc``.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import replace
from typing import Optional

import libcst as cst

from ..apitables import ArgSpec
from ..imports import dotted
from ..walk import code_nodes
from ..model import EventType, Kind
from . import doubles, effects, interproc, placement
from .domain import (ANYTHING, LOADER_PART, UNKNOWN, Alternatives, ClassRef, Const, Device, DeviceSpec, Function, Host, Instance, Items, Iteration, Loader, Mapping,
                     LibraryRef, ModuleRef, Obj, RecordType, Scalar, Seq, Stream, Super, Tensor, Value, add_element, appended, element_of, iterated_as_views, join,
                     flatten, is_none, mapping, merged, numeric_const, ordered, rebuild, scalar_kind, unknown_host, varying_in)
from .dtypes import common, item_size, range_length
from .state import STREAM
from .effects import Args

_BUILTINS = frozenset(dir(builtins))
_IMPORTERS = frozenset({"importlib.import_module"})  # load a module named by a string
_COPIERS = frozenset({"copy.copy", "copy.deepcopy"})
_DEEP_COPIED_DEVICES = frozenset({"cupy", "torch"})  # their arrays' __deepcopy__ copies on the device
_COPY_DEPTH = 4  # objects inside objects a deep copy follows
_COLLECTING = frozenset({"list", "tuple", "set", "frozenset"})  # builtins that only collect what they iterate
_ORDERING = frozenset({"sorted", "min", "max"})  # builtins that compare what they iterate (or what `key=` picks)
# Start a callable later, on another thread, with the arguments they are given: (callable, args, kwargs).
_STARTERS = {"threading.Thread": (ArgSpec(1, "target"), ArgSpec(3, "args"), ArgSpec(4, "kwargs")),
             "threading.Timer": (ArgSpec(1, "function"), ArgSpec(2, "args"), ArgSpec(3, "kwargs"))}
def _laid_out(node: cst.Call, passed: Optional[tuple]) -> tuple:
    """((expression, value), ...) of an ``args=(x, y)`` argument (a tuple of known items) given to a
    thread or process starter; the call itself stands for an item it does not spell out."""
    if passed is None:
        return ()
    exprs = passed[0].elements if isinstance(passed[0], (cst.Tuple, cst.List)) else ()
    return tuple((exprs[i].value if i < len(exprs) else node, value) for i, value in enumerate(passed[1].items))


def _across_processes(value: Value) -> Value:
    """What a spawned process receives of an argument: constants and numbers as they are, anything
    else (memory, objects) unknown."""
    return value if isinstance(value, (Const, Scalar)) else UNKNOWN


_BATCH_DICT_METHODS = frozenset({"values", "items", "get", "copy", "pop"})
# NumPy array methods a torch tensor lacks: on a value taken for a CPU tensor, the call says it is
# something else (a dict's `.copy()`), not a new array.
_NUMPY_ONLY_METHODS = frozenset({"astype", "byteswap", "copy", "itemset", "tobytes", "tofile", "fill", "data_as"})
_COPY_OBJECT_SETTERS = {"set_src_host": "$src_host", "set_dst_host": "$dst_host"}
# A torch tensor's counts: numbers, whatever its device (`q.size(0)`, `t.numel()`); `t.size()` is a shape.
_TORCH_COUNTS = frozenset({"size", "numel", "nelement", "dim", "ndimension", "element_size"})
_TORCH_NUMBERS = frozenset({"data_ptr", "stride", "storage_offset"})


def receiver_types(value: Value) -> list:
    """The table receivers a value's methods are looked up on, most specific first."""
    if isinstance(value, Host):
        return ["torch.host", "host"] if value.library == "torch" else ["host"]
    if isinstance(value, Device):
        return [f"{value.library}.device", "device"]
    if isinstance(value, Tensor):
        return ["torch.device", "torch.host", "host"]
    if isinstance(value, Stream):
        return ["stream"]
    if isinstance(value, Obj):
        return [value.tag]
    if isinstance(value, Loader):
        return ["loader"]
    return []


def _computes(qualified: str, python: dict) -> bool:
    """A torch function of a compute namespace (``torch.sigmoid``, ``torch.nn.functional.interpolate``):
    on CPU tensors, a CPU kernel over their bytes."""
    head = qualified.rpartition(".")[0]
    return head in python.get("torch_compute_namespaces", ())


def _cpu_result(ev, node, qualified: str, args: Args, python: dict) -> Optional[Value]:
    """``F.one_hot(m)``, ``torch.sigmoid(t)`` of pageable CPU tensors (and nothing placed elsewhere): a
    CPU tensor, a new one or a view of theirs, pageable either way. Of a pinned tensor a view would be
    pinned, so nothing is said there, except for the functions that always compute new memory
    (``torch_new_results``: ``torch.sigmoid(pinned)`` is a new pageable tensor)."""
    name = qualified.rpartition(".")[2]
    if name in python.get("torch_non_tensor_results", ()) or args.star:
        return None
    values = flatten(args.values())
    hosts = [v for v in values if isinstance(v, Host)]
    new_memory = name in python.get("torch_new_results", ())
    if not hosts or any(isinstance(v, (Device, Tensor)) for v in values) or \
            any(h.library != "torch" or h.pointer or h.maybe_unknown or not h.sites or
                not new_memory and any(s.kind is not Kind.PAGEABLE for s in h.sites) for h in hosts):
        return None
    api = f"torch.{name}" if qualified.startswith("torch.") else qualified
    if name in python.get("torch_same_size_results", ()) and len(hosts) == 1 and "dtype" not in args.keywords and \
            all(isinstance(v, Host) or _numbers_only(v) for v in values):
        # one tensor in, one of its shape out: as large as it is
        source = hosts[0]
        site = ev.site(node, Kind.PAGEABLE, "torch", api, nbytes=common(s.nbytes for s in source.sites),
                       dtype=common(s.dtype for s in source.sites), ndim=source.dimensions())
        return Host(frozenset([site]), "torch")
    site = ev.site(node, Kind.PAGEABLE, "torch", api)
    return Host(frozenset([site]), "torch")


def _read_back(expr) -> bool:
    """``x.cpu()``, ``x.detach().cpu()``: a tensor's read-back, whose ``.numpy()`` is a NumPy array."""
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "cpu" \
        and not expr.args


def _layer_class(head: str, name: str, python: dict) -> bool:
    """``torch.nn.Conv2d``, ``torch.nn.Sequential``: a layer class of the library (``torch_layer_namespaces``)."""
    return head in python.get("torch_layer_namespaces", ()) and name[:1].isupper() and \
        name not in python.get("torch_non_layers", ())


def _numbers_only(value: Value) -> bool:
    return isinstance(value, Scalar) or numeric_const(value) is not None


def _transposed(rows: Value) -> Value:
    """``zip(*rows)``: the first items of every row, then the second ones: ``positions, ptrs =
    zip(*pairs)``, ``for states in zip(*buffers)``."""
    row = element_of(rows)
    if isinstance(row, Items) and row.items:
        return Items(tuple(Seq(item) for item in row.items))
    if isinstance(row, Seq):
        return Iteration(Seq(row.element))
    return UNKNOWN


class Calls:
    def __init__(self, ev) -> None:
        self.ev = ev

    # ------------------------------------------------------------------ arguments
    def arguments(self, node: cst.Call) -> Args:
        positional, keywords, star, starred, kwargs_unknown = [], {}, False, [], False
        for arg in node.args:
            value = self.ev.expr(arg.value)
            if arg.star == "**" and _spelled_out(value):
                # `f(**dict(size=n, dtype=t))`, a dict of constant keys every path set: its keywords.
                for key, item in value.entries:
                    keywords[key] = (arg.value, UNKNOWN if key in value.optional else item)
            elif arg.star == "*" and isinstance(value, Items) and not star:
                positional += [(arg.value, item) for item in value.items]  # `torch.empty(*shape)`
            elif arg.star:
                star = True  # positions after a *args, and keywords in a **kwargs, are unknown
                kwargs_unknown = kwargs_unknown or arg.star == "**"
                starred.append(value)
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = (arg.value, value)
            elif not star:
                positional.append((arg.value, value))
            else:
                starred.append(value)
        return Args(tuple(positional), keywords, star, tuple(starred), kwargs_unknown)

    # ------------------------------------------------------------------ calls
    def call(self, node: cst.Call) -> Value:
        ev = self.ev
        func = node.func
        if ev.is_import_path(func):
            return self._qualified_call(node, func)
        if isinstance(func, cst.Attribute):
            if _fixture_rooted(func):
                names = doubles.fixture_patched_names(node)
                if names:
                    doubles.with_names(ev.state.env, names)  # `mocker.patch.object(enc, "encode")`
            receiver = ev.expr(func.value)
            return self.method_call(receiver, func.attr.value, node, func.value)
        if isinstance(func, cst.Name) and func.value in _BUILTINS and ev.lookup(func.value) is None and \
                ev.module.global_value(func.value) is None and ev.module.imports.lookup(func.value) is None:
            return self.builtin(node, func.value, self.arguments(node))
        if isinstance(func, cst.BinaryOperation) and isinstance(func.operator, cst.Multiply):
            array = self._ctypes_array(node, func)
            if array is not None:
                return array
        if isinstance(func, cst.Subscript):
            callee = ev.expr(func.value)  # kernel[grid, block](...)
            indexes = ev.slices(func)
            if isinstance(callee, (Mapping, Items, Seq)):
                # FACTORIES["one"]["train"](8): a function kept in a dict or list, called
                callee = ev.subscript(callee, func, indexes)
        else:
            callee = ev.expr(func)
        return self.call_value(callee, node, self.arguments(node))

    def _ctypes_array(self, node: cst.Call, func: cst.BinaryOperation) -> Optional[Value]:
        """``(ctypes.c_char * n)()``: a ctypes array, ``n`` elements of ordinary pageable memory
        (triton-client's download buffer, in an async device-to-host copy)."""
        ev = self.ev
        if not ev.is_import_path(func.left):
            return None
        api = ev.tables.functions.get(ev.module.imports.qualify(func.left) or "")
        if api is None or api.effect != "alloc" or not api.opt("size"):
            return None
        count = ev.expr(func.right)
        self.arguments(node)  # the initial values: read, not kept
        n = count.single if isinstance(count, Const) and isinstance(count.single, int) else None
        flavour = effects.host_flavour(ev, api, None)
        site = ev.site(node, Kind(api.opt("kind")), flavour, f"{api.name} array",
                       nbytes=n * api.opt("size") if n is not None else None)
        value = Host(frozenset([site]), flavour)
        ev.event(EventType.ALLOC, node, value, api=site.api)
        return value

    def _qualified_call(self, node: cst.Call, func) -> Value:
        ev = self.ev
        qualified = ev.module.imports.qualify(func)
        if qualified and ev.tables.functions.get(qualified) is None and ev.tables.library_of(qualified) is None:
            target = ev.module.project.resolve(qualified, ev.module)
            if isinstance(target, (Function, ClassRef)):
                return self.call_value(target, node, self.arguments(node))
            if isinstance(target, LibraryRef):
                qualified = target.name  # a library name the checked code re-exports
            elif isinstance(target, Alternatives) and isinstance(func, cst.Attribute):
                return self.method_call(ev.qualified_value(func.value), func.attr.value, node, None)
            elif target is UNKNOWN and isinstance(func, cst.Attribute):
                owner = ev.module.project.resolve(qualified.rpartition(".")[0], ev.module)
                if isinstance(owner, ClassRef):
                    # `Field.like(f)` of a class imported from another module of the tree: its static
                    # or class method, as for a class of this module
                    return self.method_call(owner, func.attr.value, node, None)
        return self.named_call(node, qualified)

    def named_call(self, node: cst.Call, qualified: Optional[str]) -> Value:
        """A call of the library (or unknown) function ``qualified``."""
        ev = self.ev
        api = ev.tables.functions.get(qualified) if qualified else None
        if api is not None:
            return effects.apply(ev, api, node, None, self.arguments(node))
        if qualified in _IMPORTERS:
            return self._import_module(node)
        if qualified in _COPIERS:
            return self._copied(node, qualified, self.arguments(node))
        if qualified == "dataclasses.asdict":
            return self._as_dict(node, self.arguments(node))
        module = ev.tables.python.get("library_modules", {}).get(qualified) if qualified else None
        if module is not None:
            self.arguments(node)
            return LibraryRef(module)  # torch.cuda.cudart(): PyTorch's CUDA runtime module
        handed_back = ev.tables.python.get("returns_arguments", {}).get(qualified) if qualified else None
        if handed_back is not None:
            return _handed_back(self.arguments(node), handed_back)
        kind = ev.tables.type_predicates.get(qualified) if qualified else None
        if kind is not None:
            args = self.arguments(node)
            answer = instance_of(args.positional[0][1], kind) if len(args.positional) == 1 else None
            return Const.of(answer) if answer is not None else UNKNOWN  # torch.is_tensor(x)
        python = ev.tables.python
        if qualified in python.get("dict_types", ()):
            return self.builtin(node, "dict", self.arguments(node))  # OrderedDict(): a dict
        if qualified in python.get("dict_types_with_factory", ()):
            args = self.arguments(node)  # defaultdict(list, ...): a dict, whatever its factory makes
            return self.builtin(node, "dict", Args(args.positional[1:], args.keywords, args.star, args.starred,
                                                   args.kwargs_unknown))
        if qualified in python.get("record_factories", ()):
            return _record_type(self.arguments(node))  # namedtuple("Slot", ("cpu", "gpu"))
        if qualified in _STARTERS:
            return self._start_thread(node, *_STARTERS[qualified])
        if qualified in python.get("process_spawners", ()):
            return self._spawn(node)
        if qualified and qualified.rpartition(".")[0] in python.get("number_modules", ()):
            self.arguments(node)
            return Scalar("number")  # `math.cos(t)`: a Python number
        if qualified in python.get("number_tuple_functions", ()):
            self.arguments(node)
            return Seq(Scalar("number"))  # `struct.unpack("iii", header)`: Python numbers
        library = ev.tables.library_of(qualified) if qualified else None
        head, _, attr = (qualified or "").rpartition(".")
        if head and library not in (None, "numpy"):
            receiver = ev.named_value(head)  # e.g. cp.cuda.Stream.null.synchronize()
            # A table function named as a value is itself (a LibraryRef of ``head``): asking again
            # would build this same name and never end.
            if receiver is not UNKNOWN and receiver != LibraryRef(head):
                return self.method_call(receiver, attr, node, None)
        args = self.arguments(node)
        if library == "torch" and _layer_class(head, attr, python):
            ev.escape(node, args.values(), handed=True)
            return _LAYER  # nn.Conv2d(3, 8, 3): called later on tensors
        device = _device_array_result(ev.tables, qualified, library, args.values())
        if library == "numpy" or library == "torch" and _computes(qualified, python):
            # np.sum(h), torch.sigmoid(h), F.interpolate(h): a CPU kernel reads what it is given.
            written = effects.written_into_out(ev, node, None, args, qualified)
            if written is not None:
                return written
            ev.read_hosts(node, args.values())
            if device is None and library == "torch":
                made = _cpu_result(ev, node, qualified, args, python)
                if made is not None:
                    return made
                if attr not in python.get("torch_non_tensor_results", ()) and not args.star:
                    # `F.relu(conv(x.cuda()))`: computed where its tensors are, on the GPU (a model's
                    # layer-wise inference into a host table, survey 54 DC)
                    placed = gpu_result(args.values())
                    device = placed if placed is not UNKNOWN else None
            return device or UNKNOWN
        ev.escape(node, args.values(), handed=True)  # an unknown call may store its arguments anywhere
        return device or UNKNOWN

    def _copied(self, node: cst.Call, qualified: str, args: Args, deep: Optional[bool] = None) -> Value:
        """``copy.deepcopy(plate)`` of an object of the checked code: an object of its class whose
        NumPy arrays are new pageable arrays like the originals (``ndarray.__deepcopy__`` copies the
        data), its CuPy and torch device arrays new ones on the device, its containers new ones
        holding such copies, its constants the same. ``copy.copy`` copies only the top: an array's
        data, or an object whose fields are the same objects. Anything else stays unknown."""
        ev = self.ev
        if args.star or args.keywords or len(args.positional) != 1:
            ev.escape(node, args.values(), handed=True)
            return UNKNOWN
        array_copy = replace(ev.tables.functions["numpy.copy"], name=qualified)

        def copied(value: Value, deep: bool, depth: int) -> Value:
            if isinstance(value, Host):
                if value.library not in ("numpy", "torch") or value.pointer or not value.sites or value.maybe_unknown:
                    return UNKNOWN
                # a CPU tensor's deep copy clones its storage into new pageable memory, pinned or not
                # (`copy.deepcopy(t.pin_memory()).is_pinned()` and `dataclasses.asdict`'s copy: False,
                # torch 2.11 on the device machine, this session)
                api = replace(array_copy, library=value.library)
                made = effects.apply(ev, api, node, None, Args(((None, value),), {}, False))
                return replace(made, library=value.library) if isinstance(made, Host) else made
            if isinstance(value, Device):
                return Device(value.library) if value.library in _DEEP_COPIED_DEVICES else UNKNOWN
            if isinstance(value, (Const, Scalar)):
                return value
            if type(value) in (Items, Seq, Mapping, Instance):
                if not deep:
                    return value  # a new container or object holding the same things
                if depth >= _COPY_DEPTH:
                    return UNKNOWN
                return rebuild(value, lambda held: copied(held, True, depth + 1))
            return UNKNOWN

        value = args.positional[0][1]
        result = copied(value, qualified == "copy.deepcopy" if deep is None else deep, 0)
        if result is UNKNOWN:
            ev.escape(node, args.values(), handed=True)
        return result

    def _as_dict(self, node: cst.Call, args: Args) -> Value:
        """``dataclasses.asdict(obj)`` of an object of a dataclass of the checked code: a dict of its
        fields, each deep-copied (a batch class whose ``to`` walks ``asdict(self).items()``)."""
        value = args.positional[0][1] if len(args.positional) == 1 and not args.star and not args.keywords else UNKNOWN
        info = self.ev.module.project.class_info(value.klass) if isinstance(value, Instance) else None
        names = info.fields if info is not None else None
        if not names or any(value.field(name) is None for name in names):
            self.ev.escape(node, args.values(), handed=True)  # not a dataclass, or a field nothing sets
            return UNKNOWN
        fields = mapping({name: value.field(name) for name in names})
        return self._copied(node, "dataclasses.asdict", Args(((None, fields),), {}, False), deep=True)

    def _import_module(self, node: cst.Call) -> Value:
        """``importlib.import_module("cuda.bindings.runtime")``: the library module (or the checked
        code's module) a literal names; anything else is unknown."""
        ev = self.ev
        args = self.arguments(node)
        name = args.positional[0][1] if args.positional else None
        if not (isinstance(name, Const) and isinstance(name.single, str)) or name.single.startswith("."):
            ev.escape(node, args.values())
            return UNKNOWN
        if ev.tables.library_of(name.single) is not None:
            return LibraryRef(name.single)
        return ev.module.project.resolve(name.single, ev.module)

    def _start_thread(self, node: cst.Call, target: ArgSpec, positional: ArgSpec, keywords: ArgSpec) -> Value:
        """``threading.Thread(target=f, args=(x,), kwargs={...})``: f runs with those arguments, as a
        call made here (what it copies is the caller's buffers), but beside the caller rather than
        in its loop: the caller's loops are not the callee's iterations (``Evaluator.detached``)."""
        ev = self.ev
        args = self.arguments(node)
        callee = args.value(target)
        passed = args.get(positional)
        named = args.value(keywords, Mapping())
        laid_out_args = passed is None or isinstance(passed[1], Items)
        if not laid_out_args or not isinstance(named, Mapping) or named.rest is not None:
            ev.escape(node, args.values())  # arguments the analysis cannot lay out one by one
            return UNKNOWN
        laid_out = _laid_out(node, passed)
        kwargs = {key: (node, value) for key, value in named.entries if isinstance(key, str)}
        ev.escape(node, [value for _, value in laid_out] + [value for _, value in kwargs.values()])  # the thread keeps them
        self.run_beside(node, callee, Args(laid_out, kwargs, False), args)
        return UNKNOWN

    def _spawn(self, node: cst.Call) -> Value:
        """``torch.multiprocessing.spawn(fn, args=(2, rows), nprocs=2)``: each process runs ``fn(rank,
        2, rows)``. Numbers and settings arrive as given (a test's sizes: survey 57 GC); memory does
        not (a tensor is pickled into the child, not the caller's buffer): it is unknown there."""
        ev = self.ev
        args = self.arguments(node)
        callee = args.value(ArgSpec(0, "fn"))
        passed = args.get(ArgSpec(1, "args"))
        if passed is not None and not isinstance(passed[1], Items) or args.star:
            ev.escape(node, args.values())
            return UNKNOWN
        laid_out = tuple((expr, _across_processes(value)) for expr, value in _laid_out(node, passed))
        ev.escape(node, args.values())
        self.run_beside(node, callee, Args(((node, Scalar("int")),) + laid_out, {}, False), args)
        return UNKNOWN

    def run_beside(self, node: cst.Call, callee: Value, given: Args, written: Args) -> None:
        """Call ``callee`` with ``given`` as a call made at ``node`` that runs beside this scope (a
        thread's target, a pool's task); ``written`` are the arguments of the call as written, which
        escape when the callee is not a function of the checked code."""
        ev = self.ev
        if not isinstance(callee, (Function, Alternatives)):
            ev.escape(node, written.values())
            return
        before, ev.detached = ev.detached, True
        try:
            self.call_value(callee, node, given)
        finally:
            ev.detached = before

    def _each(self, options: "Alternatives", apply) -> Value:
        """Apply to every alternative from the same state; the states after them join."""
        ev = self.ev
        entry = ev.state.copy()
        result, joined = None, None
        for option in ordered(options.options):
            ev.state = entry.copy()
            value = apply(option)
            result = value if result is None else join(result, value)
            joined = ev.state if joined is None else joined.join(ev.state)
        ev.state = joined if joined is not None else entry
        return result if result is not None else UNKNOWN

    def method_call(self, receiver: Value, name: str, node: cst.Call, receiver_expr) -> Value:
        ev = self.ev
        if isinstance(receiver, LibraryRef):
            return self.named_call(node, f"{receiver.name}.{name}")
        if isinstance(receiver, Alternatives):
            args = self.arguments(node)
            if any(is_none(option) for option in receiver.options):
                # a method of None would have raised: where the call runs, the receiver is the object
                options = frozenset(option for option in receiver.options if not is_none(option))
                if len(options) == 1:
                    return self.method_call(next(iter(options)), name, node, receiver_expr)
                receiver = Alternatives(options)
            return self._each(receiver, lambda option: self._method_with_args(option, name, node, receiver_expr, args))
        if isinstance(receiver, (Instance, ClassRef, ModuleRef, Super)):
            if isinstance(receiver, Instance):
                receiver = self._with_stored_fields(receiver, receiver_expr)
            member = self.member(receiver, name, node)
            args = self.arguments(node)
            if isinstance(member, (Function, ClassRef)) or _callables(member) or self._called_object(member, node) or \
                    member in (_KERNEL, _LAYER):
                return self.call_value(member, node, args, receiver_expr)
            if isinstance(receiver, Super) and member is UNKNOWN and name in ("__init__", "__iter__"):
                made = self._loader_base(receiver, name, node, args)
                if made is not None:
                    return made
            if isinstance(receiver, Instance) and member is UNKNOWN and placement.is_module(ev, receiver):
                if self._registers_buffer(receiver, name, args, receiver_expr):
                    ev.escape(node, args.values(), into_object=True)
                    return Const.of(None)
                receiver = self._placed_after(receiver, name, args, receiver_expr)
            if isinstance(receiver, Instance) and member is UNKNOWN and self._returns_itself(receiver, name):
                return receiver  # `Model(cfg).cuda()`: nn.Module's method hands the module back
            ev.escape(node, args.values())
            return UNKNOWN
        args = self.arguments(node)
        if isinstance(receiver, Items) and receiver.names and name == "_replace" and not args.positional and \
                not args.star and all(k in receiver.names for k in args.keywords):
            # `t._replace(cpu=h)`: the same record with those fields changed
            return replace(receiver, items=tuple(args.keywords[n][1] if n in args.keywords else item
                                                 for n, item in zip(receiver.names, receiver.items)))
        if isinstance(receiver, (Mapping, Seq, Items, Iteration)):
            result = self.container_method(receiver, name, node, args, receiver_expr)
            if result is not None:
                return result
        if isinstance(receiver, Host) and receiver.batch and name in _BATCH_DICT_METHODS:
            # A loader's batch collated into a dict: each of its values is a batch tensor, as each
            # element is for `x, y = batch`.
            if name in ("get", "copy", "pop"):
                # `batch.copy()`: a dict's shallow copy holds the same tensors; `batch.pop("img")` one of them
                return receiver
            return Iteration(receiver if name == "values" else Items((UNKNOWN, receiver)))
        if name in ("index", "count") and receiver is UNKNOWN and isinstance(receiver_expr, cst.Call) and \
                isinstance(receiver_expr.func, cst.Attribute) and receiver_expr.func.attr.value == "tolist" and \
                not receiver_expr.args:
            # `ids.numpy().tolist().index(SEP)`: a position in a Python list, one int (Chinese-CLIP's
            # end-of-text index, survey 53 CF)
            return Scalar("int")
        receiver = effects.placed(ev, receiver)
        if name == "numpy" and receiver is UNKNOWN and not args.positional and _read_back(receiver_expr):
            # `latent.cpu().numpy()`, `t.detach().cpu().numpy()`: a NumPy array on the host (its
            # memory unknown), so that what converts it (`.astype("float32")`) is a new pageable one
            return unknown_host("numpy")
        if receiver == Obj("copy-object") and name in _COPY_OBJECT_SETTERS and args.positional:
            key = dotted(receiver_expr) if receiver_expr is not None else None
            if key is not None:  # copy.set_src_host(h): what calling `copy` will copy
                ev.bind(f"{key}.{_COPY_OBJECT_SETTERS[name]}", args.positional[0][1])
            return UNKNOWN
        if name in _TORCH_COUNTS and (isinstance(receiver, Tensor) or isinstance(receiver, (Host, Device))
                                      and receiver.library == "torch"):
            return Scalar("int") if name != "size" or args.positional or args.keywords else Seq(Scalar("int"))
        if name in _TORCH_NUMBERS and (isinstance(receiver, Tensor) or isinstance(receiver, Device) and
                                       receiver.library == "torch"):
            # `ptrs.append(x.data_ptr())` of a tensor nothing places, or of a device one: a Python int (of
            # a host tensor it is its address, which the tables follow to the memory)
            return Scalar("int") if name != "stride" or args.positional else Seq(Scalar("int"))
        if name == "size" and receiver is UNKNOWN and len(args.positional) == 1 and not args.keywords:
            # `q.size(1)` of a tensor parameter: a number, if anything (it only ever bounds a size).
            return Scalar("int")
        api = self.table_method(receiver, name, args)
        if api is not None:
            return effects.apply(ev, api, node, receiver, args)
        if isinstance(receiver, Tensor) and self._unplaced_blocking_copy(name, args):
            # `dst.copy_(h)` of a host tensor into a tensor whose device nothing tells: no upload as far as
            # PIN007 goes, but where dst is on a GPU it waits for the stream (ATen's copy and
            # synchronize); counted as a synchronization, which only removes race findings.
            ev.event(EventType.SYNC, node, api=f"Tensor.{name}", stream=None)
        if isinstance(receiver, (Device, Tensor)):
            return receiver if isinstance(receiver, Tensor) else Device(receiver.library)  # device work
        if isinstance(receiver, Function) and receiver.kernel:
            return receiver  # kernel.forall(n), kernel.configure(...): still the kernel
        if isinstance(receiver, Const) and receiver.values and all(isinstance(v, str) for v in receiver.values):
            # "n={}".format(h), ", ".join(names): a string method reads what it is given and keeps none
            # of it (an escape here made a callee's buffer look like one the caller shares).
            ev.read_hosts(node, args.values())
            folded = _string_method(receiver, name, args)
            return folded if folded is not None else UNKNOWN
        if name not in ev.tables.python.get("copying_methods", ()):
            ev.escape(node, args.values(), handed=True)
        return gpu_result(args.values() + [receiver])

    def _loader_base(self, receiver: Super, name: str, node, args: Args) -> Optional[Value]:
        """``super().__init__(ds, batch_size=8, pin_memory=True)`` in a DataLoader subclass's own
        ``__init__``: the object is that DataLoader (kept in its ``LOADER_PART`` field); then
        ``super().__iter__()`` in its ``__iter__`` yields that loader's batches."""
        ev = self.ev
        if name == "__iter__":
            kept = receiver.receiver.field(LOADER_PART) if isinstance(receiver.receiver, Instance) else None
            return kept if isinstance(kept, Loader) else None
        loader = interproc.library_loader(ev, ev.module.project.class_info(receiver.klass), node, args)
        fn = ev.invocation.function
        params = [*fn.node.params.posonly_params, *fn.node.params.params] if fn is not None else []
        if loader is None or not params:
            return None
        ev.store(f"{params[0].name.value}.{LOADER_PART}", loader)
        return Const.of(None)

    def _run_by_library_call(self, callee: Instance, node) -> Optional[Value]:
        """The method a library base class's ``__call__`` runs (python.toml's `call_runs`: calling a
        `torch.nn.Module` runs its `forward`), where the checked code's class defines it."""
        table = self.ev.tables.python.get("call_runs", {})
        info = self.ev.module.project.class_info(callee.klass) if table else None
        if info is None:
            return None
        for base in info.library_classes():
            name = table.get(base)
            if name is not None and info.lookup(name, record=False) is not None:
                return self.member(callee, name, node)
        return None

    def _returns_itself(self, receiver: Instance, name: str) -> bool:
        """A method of a library base class that returns the object itself (python.toml's
        `returns_self`: `torch.nn.Module`'s `cuda`, `to`, `train`, `eval`, ...)."""
        table = self.ev.tables.python.get("returns_self", {})
        if not table:
            return False
        info = self.ev.module.project.class_info(receiver.klass)
        return info is not None and any(name in table.get(base, ()) for base in info.library_classes())

    def _registers_buffer(self, receiver: Instance, name: str, args: Args, receiver_expr) -> bool:
        """``self.register_buffer("marker", t)``: the object keeps ``t`` as a buffer that moves with it
        (``placement``), read back as ``self.marker``."""
        table = self.ev.tables.python.get("buffer_registrars", {})
        info = self.ev.module.project.class_info(receiver.klass)
        if info is None or name not in {table[base] for base in info.library_classes() if base in table}:
            return False
        key = dotted(receiver_expr) if receiver_expr is not None else None
        label, tensor = (args.value(ArgSpec(pos=index, kw=keyword), None)
                         for index, keyword in ((0, "name"), (1, "tensor")))
        if key is None or args.star or tensor is None or not isinstance(label, Const) or \
                not isinstance(label.single, str):
            return False
        self.ev.store(f"{key}.{placement.BUFFER}{label.single}", tensor)
        return True

    def _placed_after(self, receiver: Instance, name: str, args: Args, receiver_expr) -> Instance:
        """``acc.cpu()``, ``acc.cuda()``, ``acc.to(device)`` on a module: where its buffers are now, for
        every name holding it."""
        moved = placement.after_method(self.ev, receiver, name, args)
        if moved is receiver:
            return receiver
        placement.forget_everywhere(self.ev, [receiver])
        key = dotted(receiver_expr) if receiver_expr is not None else None
        if key is not None and moved.field(placement.PLACEMENT) is not None:
            self._rebind(receiver_expr, moved)
        return moved

    def _with_stored_fields(self, receiver: Instance, receiver_expr) -> Instance:
        """``self.loader = iter(loader)`` then ``self.preload()`` in ``__init__``: the method runs on the
        object with the fields this scope has set on it so far (kept as ``self.loader`` in the state)."""
        name = dotted(receiver_expr) if receiver_expr is not None else None
        if name is None:
            return receiver
        prefix = name + "."
        updates = {key[len(prefix):]: value for key, value in self.ev.state.env.items()
                   if key.startswith(prefix) and "." not in key[len(prefix):]}
        return receiver.with_fields(updates) if updates else receiver

    def _method_with_args(self, receiver: Value, name: str, node, receiver_expr, args: Args) -> Value:
        if isinstance(receiver, LibraryRef):
            return self.named_call(node, f"{receiver.name}.{name}")
        if isinstance(receiver, (Instance, ClassRef, ModuleRef, Super)):
            member = self.member(receiver, name, node)
            if isinstance(member, (Function, ClassRef)) or _callables(member) or self._called_object(member, node) or \
                    member in (_KERNEL, _LAYER):
                return self.call_value(member, node, args, receiver_expr)
        if isinstance(receiver, Device):
            # one of two libraries' arrays (domain.join): its own method, where it has one; a method
            # only the other library has would have raised on this one
            api = self.table_method(receiver, name, args)
            if api is not None:
                return effects.apply(self.ev, api, node, receiver, args)
            return UNKNOWN
        self.ev.escape(node, args.values())
        return UNKNOWN

    def _called_object(self, member: Value, node) -> bool:
        """A field holding an object of a class of the checked code with a ``__call__`` (``self._prep =
        Prep()`` then ``self._prep(frames)``, trtutils' preprocessors): calling it runs that method."""
        return isinstance(member, Instance) and isinstance(self.member(member, "__call__", node), Function)

    def _unplaced_blocking_copy(self, name: str, args: Args) -> bool:
        """A blocking copy method of a device tensor (a `device_receiver` entry) given a host buffer."""
        api = self.ev.tables.methods.get(("torch.device", name))
        if api is None or not api.opt("device_receiver") or _non_blocking(api, args):
            return False
        host = args.get(api.arg("host"))
        return host is not None and isinstance(host[1], Host)

    def table_method(self, receiver: Value, name: str, args: Args):
        tables = self.ev.tables
        kinds = receiver_types(receiver)
        for on in kinds:
            api = tables.methods.get((on, name))
            if api is not None:
                if on == "host" and name in _NUMPY_ONLY_METHODS and (isinstance(receiver, Tensor) or
                                                                    isinstance(receiver, Host) and receiver.library == "torch"):
                    return None
                if isinstance(receiver, Tensor) and (on == "host" and api.effect == "alloc" or
                                                     api.opt("device_receiver") and not _non_blocking(api, args)):
                    # A tensor whose device nothing tells: `t.clone()` is no new pageable array, and
                    # a blocking `t.copy_(h)` no upload (a CPU tensor's copy_ is neither); asked to be
                    # non-blocking, the copy is meant for a GPU.
                    return None
                return api
        if kinds or not _unexplained(receiver):
            return None
        # Nothing explains the receiver: only a signature one library alone has identifies it.
        for api in tables.unknown_methods.get(name, ()):
            if api.identified_by(args.keywords) and effects.names_its_target(self.ev, api, args) \
                    and not self.ev.module.project.defines_method(name, self.ev.module):
                return api
        return None

    def call_value(self, callee: Value, node: cst.Call, args: Args, receiver_expr=None) -> Value:
        ev = self.ev
        if isinstance(callee, Alternatives):
            return self._each(callee, lambda option: self.call_value(option, node, args, receiver_expr))
        if isinstance(callee, Function):
            if callee.kernel:
                self.launch(node, callee.name, args.values())
                self._copied_by_the_launch(node, callee, args)
                return UNKNOWN
            return interproc.call(ev, callee, args, node, receiver_expr)
        if isinstance(callee, ClassRef):
            return interproc.construct(ev, callee, args, node)
        if isinstance(callee, RecordType) and not args.star:
            record = callee.build([v for _, v in args.positional], {k: v for k, (_, v) in args.keywords.items()})
            if record is not None:
                return record  # Slot(name, shape, host, dev): a tuple whose items have names
        if isinstance(callee, LibraryRef):
            # A library function passed as a value and called (`checked(cudart.cudaMemcpyAsync, *args)`
            # calling `fn(*args)`): the call it stands for, with the arguments as laid out here.
            api = ev.tables.functions.get(callee.name)
            if api is not None and not args.star:
                return effects.apply(ev, api, node, None, args)
        if isinstance(callee, Instance):
            method = self.member(callee, "__call__", node)  # an object called: its __call__
            if not isinstance(method, Function):
                method = self._run_by_library_call(callee, node)
            if isinstance(method, Function):
                return interproc.call(ev, method, args, node, None)
        if callee == Obj("kernel"):
            self.launch(node, "kernel", args.values())
            return UNKNOWN
        if callee == _LAYER:
            # a library layer called: on CPU tensors, CPU kernels read them now (its result is its own)
            ev.read_hosts(node, args.values())
            return gpu_result(args.values())
        if callee == Obj("copy-object"):
            key = dotted(node.func)
            if key is not None:
                effects.run_copy_object(ev, node, args, ev.lookup(f"{key}.$src_host"), ev.lookup(f"{key}.$dst_host"))
            return UNKNOWN
        ev.escape(node, args.values(), handed=True)  # an unknown call may store its arguments anywhere
        return gpu_result(args.values())

    def _copied_by_the_launch(self, node: cst.Call, kernel: Function, args: Args) -> None:
        """A Numba kernel given a host array (``add[blocks, threads](a, b, out)`` of NumPy arrays)
        copies it to the device before the launch and back after it, synchronously, on every launch
        (Numba's documented automatic transfer; numba-cuda warns "Host array used in CUDA kernel will
        incur copy overhead"). Mapped and managed memory the device reads in place."""
        hosts = [value for value in args.values() if isinstance(value, Host) and not value.pointer and value.sites
                 and all(s.kind is Kind.PAGEABLE or s.kind is Kind.PINNED for s in value.sites)]
        if hosts:
            copied = hosts[0]
            for other in hosts[1:]:
                copied = join(copied, other)  # one launch, one finding naming every array it copies
            called = "[...]" if isinstance(node.func, cst.Subscript) else "(...)"  # a kernel, or a CUDA ufunc
            self.ev.copy_event(node, copied, api=f"{kernel.name.rsplit('.', 1)[-1]}{called}", direction="h2d",
                               is_async=False, library="numba", stream=None)

    def launch(self, node: cst.Call, name: str, values) -> None:
        from .domain import flatten
        for value in flatten(values):
            if isinstance(value, Host):
                self.ev.event(EventType.LAUNCH, node, value, api=name)

    # ------------------------------------------------------------------ members
    def member(self, base: Value, attr: str, node) -> Value:
        return interproc.member(self.ev, base, attr, node)

    # ------------------------------------------------------------------ builtins
    def builtin(self, node: cst.Call, name: str, args: Args) -> Value:
        ev = self.ev
        python = ev.tables.python
        if name == "exec" and ev.scope == "<module>":
            _exec_may_rebind_globals(ev.state.env)
        if name in python.get("reading_builtins", ()):
            positional = [v for _, v in args.positional]
            if name in _COLLECTING or name in _ORDERING and "key" in args.keywords:
                # (`sorted(d.items(), key=lambda kv: kv[0])` compares only what the key picks)
                # tuple(h) iterates an array's elements; tuple(x.cpu() for x in pair) only collects
                # references to the buffers a container or generator holds.
                positional = [v for v in positional if isinstance(v, Host)]
                if name in _COLLECTING:
                    # list(t) of a torch tensor: its rows (unbind), views that nothing has read yet
                    positional = [v for v in positional if not iterated_as_views(v)]
            ev.read_hosts(node, positional)
            addresses = python.get("device_address_libraries", ()) if name == "int" else ()
            if any(isinstance(v, Tensor) or isinstance(v, Device) and v.library not in addresses
                   for _, v in args.positional):
                # float(d.sum()), print(d): the value must come back first, a blocking copy. Not
                # int(d_in) of a PyCUDA allocation: its address.
                ev.event(EventType.SYNC, node, api=name)
        elif name not in python.get("non_storing_builtins", ()) and not (name == "dict" and _spelled_dict(args)):
            # setattr(obj, name, h), ...; `dict(ids=ids)` keeps its values in the mapping it returns,
            # which the analysis follows as it follows a `{...}` display.
            ev.escape(node, args.values())
        if name in ("enumerate", "zip") and any(isinstance(v, (Instance, Alternatives)) for _, v in args.positional):
            # `enumerate(prefetcher)`: iterating it runs the object's `__iter__` as `for b in prefetcher` does
            args = replace(args, positional=tuple((expr, self.iterate(v, node)) for expr, v in args.positional))
        first = args.positional[0][1] if args.positional else UNKNOWN
        if name == "map" and len(args.positional) >= 2 and not args.star and not args.keywords:
            return self._mapped(node, first, args.positional[1:])
        if name == "enumerate" and args.positional:
            return Iteration(Items((Scalar("int"), element_of(first))), _count(first))
        if name == "range":
            # `for i in range(n)`: i is an int (h[:, i, :] is a view)
            plain = not args.starred and not args.keywords
            return Iteration(Scalar("int", bound=_range_top([v for _, v in args.positional]) if plain else None),
                             range_length([v for _, v in args.positional]) if plain else None)
        if name == "zip":
            if not args.positional and len(args.starred) == 1 and not args.keywords:
                return _transposed(args.starred[0])  # zip(*pairs)
            lengths = [n for n in (_count(v) for _, v in args.positional) if n is not None]
            return Iteration(Items(tuple(element_of(v) for _, v in args.positional)), min(lengths) if lengths else None)
        if name == "iter" and isinstance(first, (Instance, Alternatives)):
            return self.iterate(first, node)  # of one of two loaders: either's iterator
        if name in ("iter", "reversed"):
            return first if isinstance(first, (Loader, Iteration, Seq, Items)) else UNKNOWN
        if name == "vars" and len(args.positional) == 1 and not args.star and isinstance(first, Instance):
            return object_dict(first)  # the object's own dict: its fields, the same objects
        if name == "next":
            return self._next_element(node, first)
        if name == "open" and not args.star:
            return Obj("file")  # its `read()` gives new bytes (python.toml)
        if name in ("list", "tuple") and isinstance(first, Host) and not first.pointer and \
                (first.dimensions() or 0) >= 2 and len(args.positional) == 1:
            return Seq(element_of(first))  # list(h) of a 2-D (or more) array: its rows, views of it
        if name in ("list", "tuple", "set", "sorted", "frozenset"):
            if name in ("list", "tuple") and len(args.positional) == 1 and not args.star and \
                    isinstance(first, Const) and len(first.values) == 1 and isinstance(first.single, bytes):
                # `list(b"\x00\x81...")`: one small int per byte (a lookup table the code spells out)
                data = first.single
                return Items(tuple(Const.of(b) for b in data)) if len(data) <= _SPELLED_BYTES else Seq(Scalar("int"))
            if name in ("list", "tuple") and len(args.positional) == 1 and not args.star:
                if isinstance(first, Items) and not first.names:
                    return first  # tuple(cols) of a list the code lays out: the same items, in order
                if isinstance(first, Iteration) and first.items:
                    return Items(first.items)  # list(d.values()) of a dict whose entries are known
            if isinstance(first, (Items, Seq, Iteration, Mapping)):
                return Seq(element_of(first)) if not isinstance(first, Mapping) else UNKNOWN
            return UNKNOWN if args.positional else Items(())
        if name == "dict":
            entries = {key: value for key, (_, value) in args.keywords.items()}
            if isinstance(first, Host) and first.batch and not entries and len(args.positional) == 1:
                return first  # `dict(sd)` of what torch.load restored: the same tensors
            if isinstance(first, Mapping):
                return mapping({**dict(first.entries), **entries}, first.rest)
            pair = element_of(first) if len(args.positional) == 1 and not args.star else None
            if isinstance(pair, Items) and len(pair.items) == 2 and not pair.names:
                # `dict(zip(names, loaders))`: some key for each pair, each value one of the pairs' values
                # (VideoMamba's loaders by task name, survey 52 BI)
                return mapping(entries, pair.items[1])
            return mapping(entries, None if not args.positional else UNKNOWN)
        if name == "super":
            return interproc.super_value(ev)
        if name == "isinstance" and len(args.positional) == 2 and len(node.args) == 2:
            return self.instance_check(first, node.args[1].value)
        if name == "hasattr" and len(args.positional) == 2 and not args.keywords and not args.star:
            return _has_attribute(first, args.positional[1][1])
        if name == "issubclass" and len(args.positional) == 2 and len(node.args) == 2:
            return self.subclass_check(first, node.args[1].value)
        if name == "len" and len(args.positional) == 1 and not args.keywords and not args.star:
            length = _length(first, ev.tables)
            if length is not None:
                return Const.of(length)
        number = _number(name, [v for _, v in args.positional], args)
        if number is not None:
            return number
        if name == "str" and len(args.positional) == 1 and not args.keywords and isinstance(first, Const) and \
                first.values and all(isinstance(v, str) for v in first.values):
            return first  # str(device) of a device string
        if name == "getattr" and len(args.positional) >= 2 and isinstance(args.positional[1][1], Const) and \
                isinstance(args.positional[1][1].single, str):
            return ev.attribute(first, args.positional[1][1].single, node)
        return UNKNOWN

    def _next_element(self, node: cst.Call, iterator: Value) -> Value:
        """``batch = next(batches)`` in a loop, of an iterator kept in a variable or a field: the
        iterator moves on at every call, so each iteration takes another element (a generator's new
        batch), as ``for batch in batches:`` does. ``next(iter(samples))`` starts a new iterator each
        time, and takes the same first element (a loader's is still a new batch: its own sites say so)."""
        element = element_of(iterator)
        kept = node.args and isinstance(node.args[0].value, (cst.Name, cst.Attribute, cst.Subscript)) and \
            not any(isinstance(part, cst.Call) for part in code_nodes(node.args[0].value))
        if not kept or not self.ev.loops or isinstance(iterator, Iteration) and iterator.same:
            return element
        for loop in self.ev.loops:
            element = varying_in(element, loop)
        return element

    def _mapped(self, node: cst.Call, callee: Value, iterables: tuple) -> Value:
        """``map(f, xs, ys)``: ``f`` called with an element of each iterable, as the comprehension
        ``[f(x, y) for x, y in zip(xs, ys)]`` calls it (``tuple(map(lambda a: a.to(dev,
        non_blocking=True), [obs, act]))``, linesight's replay-buffer collate). A function the checked
        code does not define, or a library function the tables do not name, gives an unknown result."""
        known = isinstance(callee, (Function, Alternatives, Instance)) or \
            isinstance(callee, LibraryRef) and callee.name in self.ev.tables.functions
        if not known:
            return UNKNOWN
        given = Args(tuple((expr, element_of(value)) for expr, value in iterables), {}, False)
        result = self.call_value(callee, node, given)
        return Seq(result) if result is not UNKNOWN else UNKNOWN

    def instance_check(self, value: Value, classes) -> Value:
        """``isinstance(x, GPUArray)``, ``type(x) is np.ndarray``: a constant where the tables say
        what the class is and the value's provenance answers (a callee's `if not isinstance(x,
        GPUArray): x = to_gpu_async(x)` is dead where its caller passes a GPUArray), else unknown."""
        nodes = [e.value for e in classes.elements] if isinstance(classes, (cst.Tuple, cst.List)) else [classes]
        answers = set()
        for class_node in nodes:
            kind = self.class_kind(class_node)
            device = self._device_object(value, class_node)
            answer = device if device is not None else instance_of(value, kind) if kind is not None else \
                self._container_of(value, class_node) if isinstance(value, (Items, Seq, Mapping)) else \
                self._library_object_of(value, class_node) if isinstance(value, (Loader, Host, Device, Stream)) else \
                self._object_of(value, class_node)
            if answer is None:
                return UNKNOWN
            answers.add(answer)
        return Const.of(True in answers)

    def _device_object(self, value: Value, class_node) -> Optional[bool]:
        """``isinstance(device, torch.device)``: False of a device written as a string (or None), True
        of a device object, where the class named is torch's (a constructor normalizing its ``device``
        argument, FBGEMM's embedding tables built with ``device="cpu"``, survey 56 FF); else None."""
        if not isinstance(class_node, (cst.Name, cst.Attribute)) or \
                self.ev.module.imports.qualify(class_node) != "torch.device":
            return None
        if isinstance(value, DeviceSpec):
            return True
        if isinstance(value, Const) and value.values and all(v is None or isinstance(v, str) for v in value.values):
            return False
        return None

    def subclass_check(self, value: Value, class_node) -> Value:
        """``issubclass(kind, torch.Tensor)`` where ``kind`` is a class the tables know (MONAI's
        dispatch on `kind = torch.Tensor`): the same class, or classes of different kinds (a torch
        tensor is no CuPy array), answer; anything else is unknown."""
        if not isinstance(value, LibraryRef) or isinstance(class_node, (cst.Tuple, cst.List)):
            return UNKNOWN
        qualified = self.ev.module.imports.qualify(class_node) if isinstance(class_node, (cst.Name, cst.Attribute)) else None
        if qualified is not None and qualified == value.name:
            return Const.of(True)
        mine, theirs = self.ev.tables.annotations.get(value.name), self.class_kind(class_node)
        if mine is None or theirs is None:
            return UNKNOWN
        return Const.of(False) if mine != theirs else UNKNOWN

    _BUILTIN_TYPES = frozenset({"int", "float", "complex", "bool", "str", "bytes", "list", "tuple", "dict", "set",
                                "frozenset"})

    def _container_of(self, value: Value, class_node) -> Optional[bool]:
        """``isinstance(texts, str)`` of a list or tuple the code builds: False (TinyCLIP's tokenizer
        given its list of prompts, survey 52); a dict is a dict. Which of list and tuple it is stays
        unknown, and so does a class other than a builtin type."""
        if not self._builtin_type(class_node):
            return None
        name = class_node.value
        if isinstance(value, Mapping):
            return name == "dict"
        return None if name in ("list", "tuple", "set", "frozenset") else False

    def _library_object_of(self, value: Value, class_node) -> Optional[bool]:
        """``isinstance(self.loader, list)`` of a DataLoader (deepinv's trainer taking one loader or a
        list of them, survey 54 DG), of an array or a stream: no builtin type (False); anything else
        unknown."""
        if isinstance(value, Host) and (value.maybe_unknown or not value.sites):
            return None
        return False if self._builtin_type(class_node) else None

    def _builtin_type(self, class_node) -> bool:
        ev = self.ev
        return isinstance(class_node, cst.Name) and class_node.value in self._BUILTIN_TYPES and \
            ev.lookup(class_node.value) is None and ev.module.global_value(class_node.value) is None and \
            ev.module.imports.lookup(class_node.value) is None

    def _object_of(self, value: Value, class_node) -> Optional[bool]:
        """``isinstance(obj, Device)`` of an object of a class of the checked code: whether that class
        or one it derives from is the one named; of a builtin type (``int``), False. Unknown for a
        class with a base the tree does not hold (it may derive from anything)."""
        if not isinstance(value, Instance):
            return None
        ev = self.ev
        if self._builtin_type(class_node):
            return False if self._all_bases_known(value) else None
        named = ev.expr(class_node) if isinstance(class_node, (cst.Name, cst.Attribute)) else None
        if not isinstance(named, ClassRef):
            return None
        info = ev.module.project.class_info(value.klass)
        if info is None:
            return None
        if any(ancestor.cls == named for ancestor in info.mro()):
            return True
        return False if self._all_bases_known(value) else None

    def _all_bases_known(self, value: Instance) -> bool:
        """Every class the object's class derives from is the checked code's (or ``object``)."""
        info = self.ev.module.project.class_info(value.klass)
        if info is None:
            return False
        for ancestor in info.mro():
            written = [base.value for base in getattr(ancestor.cls.node, "bases", ())
                       if not (isinstance(base.value, cst.Name) and base.value.value == "object")]
            if getattr(ancestor.cls.node, "keywords", ()) or len(written) != len(ancestor.bases):
                return False  # a base the tree does not hold, or a metaclass
        return True

    def equality(self, node, left: Value, right: Value, right_expr, negated: bool) -> Optional[Value]:
        """``a == b`` of an object of the checked code whose class defines ``__eq__``: what that method
        returns for these two (sigpy's ``Device(-1) == Device(-1)``, deciding a helper's no-copy arm)."""
        if not isinstance(left, Instance):
            return None
        member = self.member(left, "__eq__", node)
        if not isinstance(member, Function):
            return None
        ev = self.ev
        env, _ = interproc.bind_parameters(ev, member, Args(((right_expr, right),), {}, False), None)
        # Analysed with these two objects, whatever they hold: their fields decide the answer, and
        # constants in fields make no calling context of their own (interproc._invoke).
        outcome = ev.module.project.invoke(member, env, ev.state.pending, ev.state.env.get(STREAM), ev.invocation)
        from .solver import truthiness
        truth = truthiness(outcome.returned) if outcome is not None and outcome.reachable else None
        return Const.of(truth != negated) if truth is not None else None

    def class_kind(self, node) -> Optional[str]:
        """The tables' kind of a class the code names (``gpuarray.GPUArray``: "device:pycuda")."""
        qualified = self.ev.module.imports.qualify(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if qualified is None:
            found = self.ev.expr(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            qualified = found.name if isinstance(found, LibraryRef) else None
        return self.ev.tables.annotations.get(qualified) if qualified is not None else None

    # ------------------------------------------------------------------ containers
    def container_method(self, receiver: Value, name: str, node, args: Args, receiver_expr) -> Optional[Value]:
        """Lists and dicts hold what is put in them: ``inputs.append(mem)`` makes ``inputs`` a list of
        such values (the stored buffer escapes the statement, as any store does)."""
        ev = self.ev
        values = [v for _, v in args.positional]
        mutators = ev.tables.python.get("container_mutators", ())
        if name in mutators:
            if name in ("append", "appendleft") and values:
                updated = appended(receiver, values[0]) if name == "append" else add_element(receiver, values[0])
            elif name == "add" and values:
                updated = add_element(receiver, values[0])  # a set: the same value twice is one element
            elif name == "insert" and len(values) >= 2:
                updated = add_element(receiver, values[1])
            elif name in ("extend", "extendleft") and values:
                updated = add_element(receiver, element_of(values[0])) if not _empty(values[0]) else receiver
            elif name == "update" and isinstance(receiver, Mapping):
                other = values[0] if values else mapping({k: v for k, (_, v) in args.keywords.items()})
                updated = merged(receiver, other) if isinstance(other, Mapping) else Mapping(receiver.entries, UNKNOWN)
            elif name == "setdefault" and isinstance(receiver, Mapping) and values:
                key = values[0]
                default = values[1] if len(values) > 1 else Const.of(None)
                if isinstance(key, Const) and key.single is not None and receiver.get(key.single) is None:
                    updated = receiver.with_entry(key.single, default)
                else:
                    updated = receiver
                ev.escape(node, values[1:])
                self._rebind(receiver_expr, updated)
                return receiver.get(key.single) if isinstance(key, Const) and receiver.get(key.single) is not None \
                    else default
            else:
                return None
            ev.escape(node, values)
            self._rebind(receiver_expr, updated)
            return Const.of(None)
        known = receiver.rest is None if isinstance(receiver, Mapping) else False  # every entry's value known
        if name in ("values",) and isinstance(receiver, Mapping):
            return Iteration(element_of(Items(tuple(receiver.values()))),
                             items=tuple(receiver.values()) if known else ()) if receiver.values() else Iteration(UNKNOWN)
        if name == "items" and isinstance(receiver, Mapping):
            element = element_of(Items(tuple(receiver.values()))) if receiver.values() else UNKNOWN
            return Iteration(Items((UNKNOWN, element)),
                             items=tuple(Items((Const.of(k), v)) for k, v in receiver.entries) if known else ())
        if name == "keys" and isinstance(receiver, Mapping):
            return Iteration(UNKNOWN)
        if name == "get" and isinstance(receiver, Mapping) and values:
            key = values[0]
            default = values[1] if len(values) > 1 else Const.of(None)
            found = receiver.get(key.single) if isinstance(key, Const) and key.single is not None else None
            if found is not None:
                return found
            candidates = receiver.values()
            # `by_kind.get(k)` in `for k in kinds`: each iteration's own entry, as `by_kind[k]` is.
            found = ev.keyed_by(node.args[0].value, element_of(Items(tuple(candidates)))) if candidates else None
            return join(found, default) if found is not None else default
        if name in ("pop", "popleft", "popitem") and isinstance(receiver, (Seq, Items, Mapping)):
            if isinstance(receiver, Mapping):
                key = values[0] if values else UNKNOWN
                found = receiver.get(key.single) if isinstance(key, Const) and key.single is not None else None
                if found is not None:
                    return found
                element = element_of(Items(tuple(receiver.values())))
                return ev.keyed_by(node.args[0].value, element) if values else element
            return element_of(receiver)
        if name == "copy":
            return receiver
        if name in ("index", "count") and not isinstance(receiver, Mapping):
            return Scalar("int")  # a position or a count: one Python int
        if name in ("clear", "remove", "sort", "reverse", "discard"):
            return UNKNOWN
        return None

    def _rebind(self, receiver_expr, value: Value) -> None:
        from .transfer import rebind
        if isinstance(receiver_expr, cst.IfExp):
            # (a if c else b).append(x): one of the two got it.
            for branch in (receiver_expr.body, receiver_expr.orelse):
                before = self.ev.expr(branch)
                rebind(self.ev, branch, join(before, value) if before is not UNKNOWN else value)
        elif isinstance(receiver_expr, cst.Subscript):
            # `buffers[key].append(t)`: the list kept in a dict (or a list) now holds t there too.
            from .transfer import store_item
            store_item(self.ev, receiver_expr, value)
        elif receiver_expr is not None:
            rebind(self.ev, receiver_expr, value)

    # ------------------------------------------------------------------ annotations, with
    def annotated(self, annotation: cst.Annotation, target=None) -> Value:
        return interproc.annotation_value(self.ev.module, annotation.annotation)

    def iterate(self, value: Value, node) -> Value:
        """``for x in obj`` / ``iter(obj)`` of an object of the checked code whose class defines
        ``__iter__``: that method runs on it there (a prefetching loader wrapping a DataLoader, whose
        generator copies each batch non-blocking). What a generator yields stays unknown."""
        if isinstance(value, Alternatives):
            return self._each(value, lambda option: self.iterate(option, node))
        if isinstance(value, Instance):
            method = self.member(value, "__iter__", node)
            if isinstance(method, Function):
                iterator = interproc.call(self.ev, method, Args((), {}, False), node, None)
                if isinstance(iterator, Instance):
                    # `__iter__` returning an object with `__next__` (often itself): each step runs
                    # `__next__`, which is where a prefetcher's copies often are. Analysed once, here.
                    step = self.member(iterator, "__next__", node)
                    if isinstance(step, Function):
                        element = interproc.call(self.ev, step, Args((), {}, False), node, None)
                        # `return self.buffer`: the buffer the object made once, on every step
                        kept = isinstance(element, Host) and any(element == v for _, v in iterator.fields)
                        return Iteration(element, same=kept)
                return iterator
            loader = value.field(LOADER_PART)
            if isinstance(loader, Loader):
                return loader  # a DataLoader subclass that keeps the library's `__iter__`
            getter = self.member(value, "__getitem__", node)
            if isinstance(getter, Function):
                # no `__iter__`: Python calls `__getitem__(0)`, `(1)`, ... (`[cam for cam in train_cams]` of
                # a dataset of the checked code, 4DGaussians, survey 55 EG): another item each step
                return Iteration(interproc.call(self.ev, getter, Args(((node, Scalar("int")),), {}, False), node, None))
        return value

    def enter_context(self, value: Value, node) -> Value:
        if value in (Obj("executor"), Obj("file")):
            return value  # `with ThreadPoolExecutor() as pool:`, `with open(path, "rb") as f:`
        if isinstance(value, Instance):
            entered = self.member(value, "__enter__", node)
            if isinstance(entered, Function):
                return interproc.call(self.ev, entered, Args((), {}, False), node, None)
            return value
        return UNKNOWN


def _handed_back(args: Args, names: list) -> Value:
    """What a library function that returns the objects it is given returns (python.toml's
    `returns_arguments`: `model = torch.compile(model)`, `model, opt = amp.initialize(model, opt)`): the
    first alone when no other is given, else all of them in order."""
    if args.star or args.kwargs_unknown:
        return UNKNOWN
    given = []
    for index, name in enumerate(names):
        if index < len(args.positional):
            given.append(args.positional[index][1])
        elif name in args.keywords:
            given.append(args.keywords[name][1])
        else:
            given.append(None)
    if given[0] is None:
        return UNKNOWN
    rest = [g for g in given[1:] if g is not None and g != Const.of(None)]
    return given[0] if not rest else Items(tuple(g if g is not None else Const.of(None) for g in given))


def _spelled_dict(args: Args) -> bool:
    """``dict(k=v, ...)`` or ``dict(mapping, k=v)``: every value ends up in the mapping made."""
    return not args.star and (not args.positional or len(args.positional) == 1 and
                              isinstance(args.positional[0][1], Mapping))


def _device_array_result(tables, qualified: Optional[str], library: Optional[str], values) -> Optional[Device]:
    """What a library function no table entry describes returns when given a device array: one of
    the same library from the library's own array modules (``cupy.repeat(d, n)``). None otherwise
    (NumPy's functions of CuPy arrays are the allocation entries' business: an unknown NumPy name
    may be no array function at all)."""
    if not qualified or library is None:
        return None
    owner = tables.array_namespaces.get(qualified.rpartition(".")[0])
    if owner is None:
        return None
    return Device(owner) if any(isinstance(v, Device) and v.library == owner for v in flatten(values)) else None


def gpu_result(values) -> Value:
    """What an unknown callable returns when it is given torch tensors on a GPU (a model, a loss, an
    op of some library): a tensor on the GPU. Anything else: unknown."""
    from .domain import flatten
    return Device("torch") if any(isinstance(v, Device) and v.library == "torch" for v in flatten(values)) \
        else UNKNOWN


# Device arrays of these libraries carry the CUDA array interface (a PyCUDA allocation may be a raw
# `DeviceAllocation`, which does not; a torch tensor has it only on the GPU).
_CUDA_INTERFACE_LIBRARIES = frozenset({"cupy", "numba", "torch"})


def _has_attribute(value: Value, name: Value) -> Value:
    """``hasattr(x, "__cuda_array_interface__")``, the usual test of "is this on the GPU": True of a
    device array of CuPy, Numba or torch, False of a NumPy array or a CPU tensor the code made (not of
    mapped memory: Numba's mapped arrays are device arrays too); unknown otherwise, and for any other
    attribute."""
    if not (isinstance(name, Const) and name.single == "__cuda_array_interface__"):
        return UNKNOWN
    if isinstance(value, Device) and value.library in _CUDA_INTERFACE_LIBRARIES:
        return Const.of(True)
    if isinstance(value, Host) and value.sites and not (value.maybe_unknown or value.pointer or value.batch) and \
            value.library in ("numpy", "torch") and not any(s.kind.is_mapped or s.kind is Kind.MANAGED for s in value.sites):
        return Const.of(False)
    return UNKNOWN


def instance_of(value: Value, kind: str) -> Optional[bool]:
    """Whether a value of this provenance is an instance of a class the tables describe as ``kind``
    (their ``[annotations]``: "host" is numpy.ndarray, "tensor" torch.Tensor, "device:L" library
    L's device array); None where the provenance does not tell (an unknown value, a raw pointer)."""
    if kind == "pinned-memory":
        # `is_memory_pinned(a.ctypes.data)`: what the memory behind the address (or array) is
        if not isinstance(value, Host) or value.maybe_unknown or not value.sites:
            return None
        if all(s.kind.is_pinned for s in value.sites):
            return True
        return False if all(s.kind is Kind.PAGEABLE for s in value.sites) else None
    if isinstance(value, (Const, Items, Seq, Mapping)):
        return False
    if isinstance(value, Host):
        if value.batch and value.library == "torch" and kind == "host":
            return False  # a loader's batch holds tensors (a tensor, a dict or a list of them), never an ndarray
        if value.pointer or value.batch:
            return None
        if kind == "host":
            return value.library == "numpy"
        if kind in ("tensor", "torch-host"):
            return value.library == "torch"
        return False
    if isinstance(value, Device):
        if kind.startswith("device:"):
            return value.library == kind.split(":", 1)[1]
        if kind == "tensor":
            return value.library == "torch"
        return False
    if isinstance(value, Tensor):
        return kind == "tensor"
    if isinstance(value, Stream):
        return None if kind == "stream" else False  # which library's stream class is not kept
    if isinstance(value, Instance):
        # An object of a class of the checked code that derives from nothing else (`class Cloud:`) is
        # no ndarray or tensor: a collate's `isinstance(first, np.ndarray)` arm is dead for it.
        info = value.klass.module.project.class_info(value.klass)
        return False if info is not None and info.only_checked_code() else None
    return None


def _length(value: Value, tables) -> Optional[int]:
    """``len(x)`` where the code says it: a tuple or list display, or a 1-D host buffer of a size and
    type the analysis knows (``len(betas)`` of ``torch.linspace(a, b, 1000)``, for a size threshold)."""
    if isinstance(value, Items):
        return len(value.items)
    if isinstance(value, Host) and len(value.sites) == 1 and not value.maybe_unknown and not value.pointer \
            and value.ndim is None:
        site = next(iter(value.sites))
        size = item_size(site.dtype, tables)
        if site.ndim == 1 and site.nbytes is not None and size:
            return site.nbytes // size
    return None


# String methods whose result the analysis computes when the string and the arguments are constants
# (`str(device).startswith("cuda")` of `device="cpu"` decides which branch runs).
_STRING_METHODS = {"startswith": str.startswith, "endswith": str.endswith, "lower": str.lower, "upper": str.upper,
                   "strip": str.strip, "lstrip": str.lstrip, "rstrip": str.rstrip, "casefold": str.casefold}


def _string_method(receiver: Const, name: str, args: Args) -> Optional[Value]:
    method = _STRING_METHODS.get(name)
    if method is None or args.keywords or args.star or len(args.positional) > 1:
        return None
    options = [()]
    for _, value in args.positional:
        if not (isinstance(value, Const) and value.values and all(isinstance(v, str) for v in value.values)):
            return None
        options = [chosen + (v,) for chosen in options for v in value.values]
    results = frozenset(method(text, *chosen) for text in receiver.values for chosen in options)
    return Const(results)


def _record_type(args: Args) -> Value:
    """``namedtuple(typename, field_names)`` with names the code spells out: ``"a b"``, ``"a, b"`` or a
    list or tuple of strings."""
    given = args.positional[1][1] if len(args.positional) > 1 else args.keywords.get("field_names", (None, None))[1]
    if isinstance(given, Const) and isinstance(given.single, str):
        names = tuple(given.single.replace(",", " ").split())
    elif isinstance(given, Items) and all(isinstance(i, Const) and isinstance(i.single, str) for i in given.items):
        names = tuple(i.single for i in given.items)
    else:
        return UNKNOWN
    if not names or not all(n.isidentifier() for n in names) or len(set(names)) != len(names):
        return UNKNOWN  # rename=True and other spellings: not followed
    return RecordType(names)


def _number(name: str, values: list, args: Args) -> Optional[Value]:
    """What a numeric builtin gives: ``len`` and ``int`` an int, ``float`` a float, whatever their
    argument (or they raise); ``round``, ``abs``, ``min`` and ``max`` a number only of numbers (of an
    array, ``round`` and ``abs`` give an array)."""
    if args.star or (args.keywords and name not in ("min", "max")):
        return None
    if name == "len" and len(values) == 1:
        # `len(ids)` of a list (a dict, a set) the code holds: as many as Python objects (a mask
        # `torch.ones(1, len(ids))` is no larger than the token tensor of those ids; `np.zeros(len(reqs))`
        # one number per request)
        listed = isinstance(values[0], (Items, Seq, Mapping))
        return Scalar("int", objects=listed)
    if name == "int" and len(values) == 1 and isinstance(values[0], Const) and values[0].values and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in values[0].values):
        return values[0]  # int(len(x)), int(n) of an int the code names
    if name == "int" and len(values) == 1 and isinstance(values[0], Const) and values[0].values and \
            all(isinstance(v, float) and math.isfinite(v) for v in values[0].values):
        return Const(frozenset(int(v) for v in values[0].values))  # int(n * (n - 1) / 2), int(n_in / 16 * 2)
    if name == "int" and len(values) == 1 and isinstance(values[0], Host) and values[0].pointer:
        # `int(arr.ctypes.data)`, `int(ptr)` of cudaHostAlloc's pointer: the same address, as a
        # Python int (how cuda-python's cudaMemcpyAsync and ctypes' from_address take it)
        return values[0]
    if name in ("int", "float") and values:
        return Scalar(name)
    if name in ("round", "abs", "min", "max") and values and \
            (name not in ("min", "max") or len(values) >= 2):
        kind = scalar_kind(values[:1] if name == "round" else values)
        if kind is not None:
            return Scalar("int" if name == "round" and len(values) == 1 else kind)
    return None


_LAYER = Obj("torch-layer")  # an object of a torch.nn layer class (`nn.Linear(4, 2)`): calling it reads its inputs
_KERNEL = Obj("kernel")  # a compiled kernel kept on an object (`self.k = mod.get_function("k")`): calling it launches


def _unexplained(value: Value) -> bool:
    """A value nothing in the checked code explains (as opposed to a constant, a container, a
    function or an object of the checked code, which are not library objects)."""
    return value is UNKNOWN


def _callables(value: Value) -> bool:
    """A field or attribute holding one of several functions or classes (``self.infer = f if new else
    g``): each is called, and the states after them join."""
    return isinstance(value, Alternatives) and all(isinstance(o, (Function, ClassRef, Instance)) for o in value.options) \
        and any(isinstance(o, (Function, ClassRef)) or _has_call(o) for o in value.options)


def _has_call(value: Value) -> bool:
    info = value.klass.module.project.class_info(value.klass) if isinstance(value, Instance) else None
    return info is not None and info.lookup("__call__", record=False) is not None


def _exec_may_rebind_globals(env: dict) -> None:
    """``exec(open("configurator.py").read())`` at a module's top level (nanoGPT's idiom: settings
    from the command line): the code it runs may set any global, so each constant the module bound
    before it is that constant or anything (`profile = False` no longer prunes `if profile:`; survey
    57 GC). Names bound after it keep their values."""
    for key, value in list(env.items()):
        if not key.startswith("$") and "." not in key and isinstance(value, Const) and value.values and \
                ANYTHING not in value.values:
            env[key] = Const(value.values | {ANYTHING})


_SPELLED_BYTES = 4096  # bytes of a literal `list(b"...")` kept as items (each a number the code spells out)


def _fixture_rooted(func: cst.Attribute) -> bool:
    """``mocker.…`` or ``monkeypatch.…``: a call of one of pytest's patching fixtures (doubles.py)."""
    root = func.value
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and root.value in ("mocker", "monkeypatch")


def _spelled_out(value: Value) -> bool:
    """A mapping whose keys are all known strings (a key some path did not set is passed as unknown)."""
    return isinstance(value, Mapping) and value.rest is None and all(isinstance(k, str) for k, _ in value.entries)


def _empty(value: Value) -> bool:
    return isinstance(value, Items) and not value.items


__all__ = ["Calls", "receiver_types"]


def _count(value: Value) -> Optional[int]:
    """How many steps iterating ``value`` takes, where the code states it."""
    if isinstance(value, Items):
        return len(value.items)
    return value.length if isinstance(value, Iteration) else None


def _non_blocking(api, args) -> bool:
    """Whether the call asks for a non-blocking copy (`non_blocking=True`, or a flag that may be true)."""
    given = args.get(api.arg("non_blocking"))
    return given is not None and given[1] != Const.of(False)


def _range_top(bounds: list) -> Optional[int]:
    """The largest number ``range(*bounds)`` may give, where its stop is bounded and its step (if any)
    a positive constant: what a size made from its variable is at most (``np.zeros(m)``)."""
    from .domain import upper_bound
    if not 1 <= len(bounds) <= 3 or len(bounds) == 3 and not (
            isinstance(bounds[2], Const) and isinstance(bounds[2].single, int) and bounds[2].single > 0):
        return None
    stop = upper_bound(bounds[0] if len(bounds) == 1 else bounds[1])
    return max(stop - 1, 0) if stop is not None else None


def object_dict(obj: Instance) -> Value:
    """``vars(obj)`` / ``obj.__dict__`` of an object of the checked code: its fields by name (the
    ones the analysis knows of it), the very objects it holds."""
    if not obj.fields:
        return UNKNOWN
    return mapping(dict(obj.fields))
