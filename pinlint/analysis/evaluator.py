"""Expressions: what each one evaluates to, and the events it emits on the way.

An ``Evaluator`` belongs to one run of one scope. The solver hands it a state and an element at a
time; during the fixpoint it only computes states (``emit`` off), and once the states have settled it
evaluates every element once more with ``emit`` on, which is when events are recorded. Calls are
resolved in ``calls.py``; what a library call does is in ``effects.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from ..imports import dotted
from ..model import Event, EventType, Kind, PendingCopy, Site
from .domain import (LABELLED_DATASET, LABELLED_ITEM, ANYTHING, module_stand_in, NDIM_UNKNOWN, ON_GPU, UNKNOWN, Alternatives, ClassRef, Const, Device, DeviceSpec, Function, Host, Instance, Items, Iteration, Loader,
                     GpuFlag, LibraryRef, Mapping, ModuleRef, Scalar, Seq, Stream, Super, Tensor, Value, element_of, flatten, join,
                     is_none, mapping, ordered, scalar_kind, sites_of, upper_bound, varying_in, with_visits)
from ..walk import code_parts, target_names
from .dtypes import element_total, elementwise_bound, elementwise_size, fold, named_dtype, python_number_operands, range_length, transposed
from .state import CAPTURING, DOTTED, ELEMENT_OF, KEY_OF, MAYBE_NONE, PAIR_OF, PAIRED, State, iter_key, put
from . import placement, tabular

_TRANSPOSING = frozenset({"T", "mT", "transpose", "swapaxes", "permute", "moveaxis", "rollaxis", "flip", "flipud",
                          "fliplr", "rot90"})
LOOP_VARIABLE = "$loop-variable:"  # env key prefix: this name is the variable of that loop
LOOP_DERIVED = "$loop-derived:"  # env key prefix: this name was computed from these loops' variables
_UNKNOWN_DTYPE = "dtype:?"  # `h.dtype` of an array whose dtype nothing tells
# Operators that map several values of a loop's variable to one (`i % 2`, `i // 2`, `i & 1`).
_COMING_ROUND = (cst.Modulo, cst.FloorDivide, cst.BitAnd, cst.RightShift)


# Attributes of a NumPy, CuPy or Numba array that are one number.
_SIZE_ATTRIBUTES = frozenset(("size", "ndim", "nbytes", "itemsize"))
_CONTIGUITY_FLAGS = frozenset(("c_contiguous", "contiguous"))


class Evaluator:
    def __init__(self, module, scope: str, invocation) -> None:
        from .calls import Calls  # calls needs the evaluator's type; imported here to keep modules acyclic
        self.module = module              # ModuleContext of the code being evaluated
        self.tables = module.tables
        self.scope = scope                # qualified name of the scope ("<module>", "f", "C.m")
        self.invocation = invocation      # call depth, stack and budget of this run
        self.state: State = State()
        self.element = None               # the cfg Element being evaluated
        self.inner_loops: list = []       # comprehensions around the expression being evaluated
        self.emit = False
        self.events: list[Event] = []
        # id(if test) -> its truth where the recording pass evaluated it (None: either), for `Event.decided`
        self.test_answers: dict = {}
        self.calls = Calls(self)
        self.awaited: set = set()         # calls awaited where they are made (`await f(x)`)
        self.discarded: set = set()       # comprehensions whose result a statement drops at once
        self.detached = False             # evaluating a call that runs beside this scope (a thread's target)
        self.yielded = None               # the join of what the scope's `yield`s give (a generator's elements)

    # ------------------------------------------------------------------ context
    @property
    def loops(self) -> tuple:
        if self.detached:
            return ()  # a thread's target runs beside the loops (statements or comprehensions) around its start
        outer = self.element.loops if self.element is not None else ()
        if outer:
            # A loop over one element (`for rx in [track]`, a helper's loop over the one-item list
            # its caller gave it) runs its body once: what the body does is in no loop.
            env = self.state.env
            once = [loop for loop in outer if _single_pass(env.get(iter_key(loop)))]
            if once:
                outer = tuple(loop for loop in outer if loop not in once)
        return outer + tuple(self.inner_loops) if self.inner_loops else outer

    @property
    def branch(self) -> tuple:
        return self.element.branch if self.element is not None else ()

    def lookup(self, key: str) -> Optional[Value]:
        return self.state.env.get(key)

    def bind(self, key: str, value: Value) -> None:
        env = self.state.env
        if "." not in key:
            # A name rebound: what was known of its attributes belonged to the old object. Only an
            # environment that ever held an attribute chain is searched (a module of 20,000
            # functions binds 20,000 names, each a search of all the others).
            if DOTTED in env:
                prefix = key + "."
                for stale in [k for k in env if k.startswith(prefix)]:
                    del env[stale]
            env.pop(LOOP_VARIABLE + key, None)
            env.pop(LOOP_DERIVED + key, None)
            env.pop(ELEMENT_OF + key, None)
            env.pop(KEY_OF + key, None)
            env.pop(MAYBE_NONE + key, None)
            env.pop(PAIR_OF + key, None)
            paired = env.pop(PAIRED + key, None)
            if paired is not None:
                env.pop(PAIR_OF + paired.single, None)  # the value rebound: the key tells nothing of it now
        put(env, key, value)

    def store(self, key: str, value: Value) -> None:
        """``key`` (a name or ``obj.attr``) now holds ``value``; an attribute store changes the object,
        which callers holding it see."""
        self.bind(key, value)
        if "." in key:
            from .state import MUTATED
            self.state.env[MUTATED + key.split(".")[0]] = Const.of(True)
            from .transfer import changed_element
            changed_element(self, key.split(".")[0])

    # ------------------------------------------------------------------ events and sites
    def event(self, type_: EventType, node: cst.CSTNode, value: Value = UNKNOWN, **kw) -> None:
        """Record an event (only in the final pass) and apply what it does to the copies in flight."""
        if type_ is EventType.READ and isinstance(value, Host) and value.pointer:
            return  # printing or comparing an address reads none of the memory behind it
        sites, maybe_unknown = sites_of(value)
        if type_ is EventType.SYNC:
            self.state.synchronize(kw.get("stream"))
        if not self.emit:
            return
        if type_ in (EventType.READ, EventType.WRITE) and "pending" not in kw:
            kw["pending"] = self.state.pending_on(sites)
        varies = value.varies if isinstance(value, Host) else frozenset()
        visits = self._visits(value) if type_ is EventType.COPY else ()
        self.events.append(Event(type=type_, node=node, loops=self.loops, branch=self.branch, sites=sites,
                                 maybe_unknown=maybe_unknown, varies_in=varies, scope=self.scope,
                                 module=self.module.info, visits=visits, decided=self._decided_tests(), **kw))

    def _decided_tests(self) -> frozenset:
        """The ``if`` nodes around the current element whose type test (``isinstance``, ``hasattr``,
        ``type(x) is``), in the state that reaches it, has a constant value that takes this arm. Only
        type tests: a join keeps a buffer's type, while it leaves out None where a buffer may be None
        (``domain.join``), so ``buf is None`` may read False before the arm only None takes."""
        found = set()
        for owner, arm in self.branch:
            if isinstance(owner, cst.If) and arm in (0, 1) and _type_test(owner.test):
                # as the test answered in the settled state before the `if`, not in the arm's own state,
                # which holds what the test said on whichever earlier visits reached the arm
                answer = self.test_answers.get(id(owner.test))
                if answer is not None and answer == (arm == 0):
                    found.add(owner)
        return frozenset(found)

    def _visits(self, value: Value) -> tuple:
        """A copy of a loop's element that runs on every iteration of that loop (no ``if`` between the
        two, or none yet known: a loop of a caller, checked where the event is lifted) copies each
        element in turn (``Host.visits``)."""
        if not isinstance(value, Host) or not value.visits:
            return ()
        loop = value.visits[0]
        if loop in self.loops:
            runs_each_time = len(self.branch) == self.module.project.loop_branch_depth.get(loop, 0) and \
                self.loops[-1] is loop
        else:
            runs_each_time = not self.branch and not self.loops
        return value.visits if runs_each_time else ()

    def copy_event(self, node: cst.CSTNode, host: Value, **kw) -> None:
        """A copy: a truly asynchronous one stays in flight until a synchronization covers it; a
        blocking one waits for the device (generously, for every stream)."""
        sites, maybe_unknown = sites_of(host)
        is_async = kw.get("is_async", False)
        if is_async and sites and not maybe_unknown:
            pinned = all(s.kind.is_pinned for s in sites)
            pageable = all(s.kind is Kind.PAGEABLE for s in sites)
            if pinned or pageable:
                self.state.add_pending(PendingCopy(
                    node=node, api=kw.get("api", ""), direction=kw.get("direction", ""), sites=sites,
                    stream=kw.get("stream"), library=kw.get("library", ""), stream_node=kw.get("stream_node"),
                    hypothetical=not pinned, family=kw.get("family", ""), module=self.module.info,
                    loops=self.loops, varies=host.varies if isinstance(host, Host) else frozenset(), scope=self.scope,
                    captured=self.state.env.get(CAPTURING) == Const.of(True)))
        elif not is_async:
            self.state.blocking_copy()
        self.event(EventType.COPY, node, host, **kw)

    def site(self, node: cst.CSTNode, kind: Kind, library: str, api: str, **kw) -> Site:
        return Site(kind=kind, library=library, api=api, node=node, loops=self.loops, scope=self.scope,
                    module=self.module.info, **kw)

    def escape(self, node: cst.CSTNode, values, handed: bool = False, into_object: bool = False) -> None:
        """The buffers in ``values`` may outlive this point: stored, returned, or (``handed``) passed
        to a call that nothing in the checked tree explains (``print(h)``, ``scipy.signal.detrend(h)``,
        ``logger.info(h)``). Such a call may keep them, but what this scope can read back on a later
        run of it is then the result of another unknown call, an unknown value: a buffer only handed
        on is still a new one on each run (``interproc._renamer``). A torch module among them may be
        moved by what keeps it: where it is is no longer known (``placement``)."""
        placement.forget_everywhere(self, values)
        for value in flatten(values):
            if isinstance(value, Host):
                self.event(EventType.ESCAPE, node, value, handed=handed, into_object=into_object)
            elif isinstance(value, Alternatives):
                self.escape(node, list(value.options), handed, into_object)  # one of two objects: either escapes

    def read_hosts(self, node: cst.CSTNode, values, api: str = "") -> None:
        for value in flatten(values):
            if isinstance(value, Host):
                self.event(EventType.READ, node, value, api=api)

    # ------------------------------------------------------------------ dispatch
    def expr(self, node: cst.BaseExpression) -> Value:
        method = getattr(self, "_expr_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.expr(child)
            elif isinstance(child, (cst.Arg, cst.Element, cst.DictElement, cst.StarredDictElement,
                                    cst.FormattedStringExpression)):
                for grandchild in child.children:
                    if isinstance(grandchild, cst.BaseExpression):
                        self.expr(grandchild)
        return UNKNOWN

    # ------------------------------------------------------------------ names
    def _expr_Name(self, node: cst.Name) -> Value:
        value = self.lookup(node.value)
        if value is not None:
            return value
        if node.value in ("True", "False", "None"):
            return Const.of({"True": True, "False": False, "None": None}[node.value])
        found = self.module.global_value(node.value)
        if found is not None:
            return found
        if node.value in self.tables.dtypes.get("python", {}) and self.module.imports.lookup(node.value) is None:
            return Const.of("pytype:" + node.value)  # `dtype=float`
        value = self.qualified_value(node)
        if value is UNKNOWN and not node.value.startswith("_") and self.module.star_sources and \
                self.module.imports.lookup(node.value) is None:
            return self._from_star_imports(node.value)
        return value

    def _from_star_imports(self, name: str) -> Value:
        """A name the module neither binds nor imports by name, from a project module it imports
        everything from (``from sdf.utils import *`` then ``Trainer(...)``)."""
        project = self.module.project
        for source in self.module.star_sources:
            if self.tables.library_of(source) is not None:
                continue
            found = project.resolve(f"{source}.{name}", self.module)
            if found is not UNKNOWN:
                return found
        return UNKNOWN

    def qualified_value(self, node: cst.BaseExpression) -> Value:
        """The value of an imported name: a library constant or stream, a dtype, or a definition of
        the checked code (a function, class, module or global of another module)."""
        qualified = self.module.imports.qualify(node)
        if qualified is None:
            return UNKNOWN
        value = self.named_value(qualified)
        if value == Const.of(None) and isinstance(node, cst.Attribute) and \
                isinstance(self.qualified_value(node.value), ModuleRef):
            # `global_var.AI_DEVICE` read through the module object sees what any module set there at
            # run time (`global_var.AI_DEVICE = get_device()`); None is only its value at load.
            return UNKNOWN
        return value

    def named_value(self, qualified: str, keep_library: bool = False) -> Value:
        """The value of a dotted name as ``qualified_value`` gives it; a library name that is neither
        a constant, a stream nor a dtype is unknown, or (``keep_library``) a ``LibraryRef`` to it."""
        tables = self.tables
        if qualified in tables.constants:
            return Const.of(tables.constants[qualified])
        if qualified in tables.null_streams:
            return Stream(origin=qualified, default=True)
        dtype = named_dtype(qualified, tables)
        if dtype is not None:
            return dtype
        if tables.library_of(qualified) is not None:
            # A function the tables describe, taken as a value (`checked(cudart.cudaMemcpyAsync, ...)`),
            # stays that function for the call that gets it (``Calls.call_value``).
            # A library's module itself (`return np`, `xp = cupy`) is that module: what its functions
            # do, and `xp is np`, are known for the name that holds it.
            # A class the tables know (`kind = torch.Tensor`) is that class, for `issubclass(kind, ...)`.
            return LibraryRef(qualified) if keep_library or qualified in tables.functions or \
                qualified in tables.modules or qualified in tables.module_paths or \
                qualified in tables.annotations or qualified in tables.python.get("index_grids", {}) else UNKNOWN
        found = self.module.project.resolve(qualified, self.module)
        if isinstance(found, LibraryRef):
            return self.named_value(found.name, keep_library=True)  # re-exported by the checked code
        return found

    def is_import_path(self, node: cst.BaseExpression) -> bool:
        """True when ``node`` is a module path (``cp.cuda``), not a local value."""
        name = dotted(node)
        if name is None:
            return False
        root = name.split(".")[0]
        if self.module.imports.lookup(root) is None:
            return False
        local = self.state.env.get(root)
        return (local is None or module_stand_in(local)) and self.module.global_value(root) is None

    def _expr_Attribute(self, node: cst.Attribute) -> Value:
        key = dotted(node)
        if key is not None:
            value = self.lookup(key)
            if value is not None:
                return value
            if self.is_import_path(node):
                return self.qualified_value(node)
            if node.attr.value in _CONTIGUITY_FLAGS and isinstance(node.value, cst.Attribute) and \
                    node.value.attr.value == "flags":
                # `if a.flags.c_contiguous:` in a helper: what the caller's array is, where it is known.
                owner = self.expr(node.value.value)
                if isinstance(owner, Host) and owner.library == "numpy" and not owner.maybe_unknown and \
                        owner.contiguous is not None:
                    return Const.of(owner.contiguous)
        base = self.expr(node.value)
        return self.attribute(base, node.attr.value, node)

    def attribute(self, base: Value, attr: str, node: cst.CSTNode) -> Value:
        if tabular.is_tabular(base):
            return tabular.attribute(self.tables.python, base, attr)
        if attr == "__dict__" and isinstance(base, Instance):
            from .calls import object_dict
            return object_dict(base)
        if attr == "shape" and isinstance(base, (Host, Device, Tensor, type(UNKNOWN))):
            # Every array library's shape is a tuple of ints (torch.Size, too); an object nothing
            # explains is taken at its word as well: that only ever bounds a literal's size.
            return Seq(Scalar("int"))
        if attr in _SIZE_ATTRIBUTES and (isinstance(base, Host) and base.library == "numpy" or
                                         isinstance(base, Device) and base.library != "torch"):
            if attr == "ndim" and isinstance(base, Host) and not base.maybe_unknown and base.dimensions() is not None:
                return Const.of(base.dimensions())  # `if a.ndim == 2:` in a helper, decided per caller
            return Scalar("int")  # h.size, d.nbytes (torch's size is a method)
        if attr in ("device", "is_cuda", "type"):
            found = _device_attribute(base, attr)
            if found is not None:
                return found
            if attr == "is_cuda" and (base is UNKNOWN or isinstance(base, Tensor)):
                return ON_GPU  # `non_blocking=x.is_cuda` of a tensor nothing places
        if attr == "dtype" and isinstance(base, Host):
            dtypes = {s.dtype for s in base.sites}
            return Const.of("dtype:" + dtypes.pop()) if len(dtypes) == 1 and None not in dtypes else \
                Const.of(_UNKNOWN_DTYPE)
        if isinstance(base, Host) and attr == "value" and base.pointer:
            return base  # `ctypes.c_void_p(h.ctypes.data).value`, `h.ctypes.data_as(c_void_p).value`: the address
        if isinstance(base, Host) and attr == "__array_interface__":
            # `h.__array_interface__["data"][0]`: the address of the buffer (and a read-only flag)
            return mapping({"data": Items((replace(base, pointer=True), Scalar("bool")))}, UNKNOWN)
        if isinstance(base, Host) and attr in self.tables.view_attributes:
            if attr in ("ctypes", "ptr"):
                return replace(base, pointer=True)  # h.ctypes.data, mem.ptr: addresses
            if attr == "contents":
                return _pointee(base)  # ctypes.cast(ptr, POINTER(c_float * n)).contents
            return transposed(base) if attr in _TRANSPOSING else base
        if isinstance(base, Device) and attr in self.tables.device_attributes:
            return base
        if isinstance(base, Tensor) and attr in ("data", "T", "mT"):
            return base  # `t.data` of a tensor nothing places: the same tensor, wherever it is
        if isinstance(base, (Instance, ClassRef, ModuleRef, Super)):
            return self.calls.member(base, attr, node)
        if isinstance(base, Items) and attr in base.names:
            return base.items[base.names.index(attr)]  # `slot.cpu` of a namedtuple
        if isinstance(base, LibraryRef):
            return self.named_value(f"{base.name}.{attr}", keep_library=True)
        if isinstance(base, Alternatives):
            # `self._hd.host` of a field None until a method builds the holder: reading an attribute of
            # None raises, so where the code goes on the holder is what the field holds.
            options = [option for option in ordered(base.options) if not is_none(option)] or ordered(base.options)
            found = [self.attribute(option, attr, node) for option in options]
            result = found[0]
            for other in found[1:]:
                result = join(result, other)
            return result
        return UNKNOWN

    # ------------------------------------------------------------------ literals
    def _expr_Integer(self, node: cst.Integer) -> Value:
        try:
            return Const.of(int(node.value.replace("_", ""), 0))
        except ValueError:
            return UNKNOWN

    def _expr_SimpleString(self, node: cst.SimpleString) -> Value:
        # Kept per node: libcst evaluates a string with ast.literal_eval, which compiles it, every time.
        literals = self.module.project.literals
        found = literals.get(node)
        if found is None:
            try:
                found = Const.of(node.evaluated_value)
            except Exception:  # noqa: BLE001 - odd prefixes stay unknown
                found = UNKNOWN
            literals[node] = found
        return found

    def _expr_Imaginary(self, node: cst.Imaginary) -> Value:
        try:
            return Const.of(complex(node.value.replace("_", "")))
        except ValueError:
            return UNKNOWN

    def _expr_Float(self, node: cst.Float) -> Value:
        try:
            return Const.of(float(node.value.replace("_", "")))
        except ValueError:
            return UNKNOWN

    def _elements(self, elements) -> list:
        values = []
        for element in elements:
            if isinstance(element, cst.StarredElement):
                values.append(("*", self.expr(element.value)))
            else:
                values.append(("", self.expr(element.value)))
        return values

    def _expr_Tuple(self, node) -> Value:
        values = self._elements(node.elements)
        if any(star for star, _ in values):
            element = UNKNOWN
            for star, value in values:
                item = element_of(value) if star else value
                element = item if element is UNKNOWN else join(element, item)
            return Seq(element)
        return Items(tuple(v for _, v in values))

    _expr_List = _expr_Tuple
    _expr_Set = _expr_Tuple

    def _expr_Dict(self, node: cst.Dict) -> Value:
        entries: dict = {}
        rest: Optional[Value] = None
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = self.expr(element.key)
                value = self.expr(element.value)
                if isinstance(key, Const) and key.single is not None:
                    entries[key.single] = value
                else:
                    rest = value if rest is None else join(rest, value)
            else:
                spread = self.expr(element.value)
                if isinstance(spread, Mapping):
                    entries.update(dict(spread.entries))
                    if spread.rest is not None:
                        rest = spread.rest if rest is None else join(rest, spread.rest)
                else:
                    rest = UNKNOWN
        return mapping(entries, rest)

    def _expr_FormattedString(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                value = self.expr(part.expression)
                if isinstance(value, Host):
                    self.event(EventType.READ, part.expression, value)  # f"{h}" formats every element
        return UNKNOWN

    def _expr_ConcatenatedString(self, node) -> Value:
        left, right = self.expr(node.left), self.expr(node.right)
        if isinstance(left, Const) and isinstance(right, Const) and len(left.values) == 1 and len(right.values) == 1:
            a, b = left.single, right.single
            if isinstance(a, (str, bytes)) and type(a) is type(b):
                return Const.of(a + b)  # `b"\x00\x81" b"\x82\x03"`: one literal, as Python joins it
        return UNKNOWN

    # ------------------------------------------------------------------ operators
    def _expr_IfExp(self, node: cst.IfExp) -> Value:
        from .solver import truthiness
        test = self.expr(node.test)
        truth = truthiness(test)
        if truth is not None:
            # `w.pin_memory() if self.pin else w` where the caller's object says `pin=False`: the
            # other arm never runs (it would pin, or copy, for nothing).
            return self.expr(node.body if truth else node.orelse)
        body, orelse = self._arm(node.test, True, node.body), self._arm(node.test, False, node.orelse)
        inner = node.test.expression if isinstance(node.test, cst.UnaryOperation) and \
            isinstance(node.test.operator, cst.Not) else None
        # (`not torch.cuda.is_available()`: evaluated again only where that can record nothing)
        negated = isinstance(inner, (cst.Name, cst.Attribute)) or isinstance(inner, cst.Call) and not inner.args and \
            isinstance(inner.func, cst.Attribute) and self.is_import_path(inner.func)
        negated = negated and isinstance(self.expr(inner), GpuFlag)
        if isinstance(test, GpuFlag) or negated:
            # `kind = "cuda" if "cuda" in device else "cpu"`: the GPU in every run that uses one, so
            # `pin_memory=(kind == "cuda")` pins there (nanochat-vl's loader, survey 53 CC)
            from .effects import device_of
            names = (device_of(body, self.tables), device_of(orelse, self.tables))
            if names == ((False, True) if negated else (True, False)):
                return DeviceSpec(None)
        return join(body, orelse)

    def _arm(self, test, truth: bool, expr) -> Value:
        """An arm of ``a if test else b``, with what ``test`` tells of its values there (as an ``if``
        statement's arm has: ``t.pin_memory().to(d, non_blocking=True) if d.type == "cuda" and
        t.device.type == "cpu" else t.to(d, non_blocking=True)`` copies no pageable tensor to a GPU)."""
        from .narrowing import narrowed
        arm = narrowed(self, self.state, ((test, truth),))
        if arm is self.state:
            return self.expr(expr)
        env = self.state.env
        told = {key: value for key, value in arm.env.items() if env.get(key) is not value}
        saved = {key: env.get(key) for key in told}
        env.update(told)
        try:
            return self.expr(expr)
        finally:
            for key, value in saved.items():
                if env.get(key) is told[key]:  # not rebound by the arm itself (a walrus)
                    if value is None:
                        env.pop(key, None)
                    else:
                        env[key] = value

    def _expr_NamedExpr(self, node: cst.NamedExpr) -> Value:
        from .transfer import assign
        value = self.expr(node.value)
        assign(self, node.target, value)
        return value

    def _expr_Yield(self, node: cst.Yield) -> Value:
        if isinstance(node.value, cst.BaseExpression):
            value = self.expr(node.value)
            self.escape(node, [value])
        elif node.value is not None:
            self.expr(node.value.item)
            value = UNKNOWN  # `yield from`: another iterator's elements
        else:
            value = Const.of(None)
        self.yielded = value if self.yielded is None else join(self.yielded, value)
        return UNKNOWN

    def _expr_Await(self, node: cst.Await) -> Value:
        if isinstance(node.expression, cst.Call):
            self.awaited.add(node.expression)
        return self.expr(node.expression)

    def _expr_Lambda(self, node: cst.Lambda) -> Value:
        """A lambda that calls something is a function of the checked code (``timed(lambda:
        d.copy_to_host(h, s))``): called, its body runs with what it captured. One that only computes
        (a sort key) stays unknown: nothing in it can copy or allocate."""
        if not _calls_something(node.body):
            return UNKNOWN
        from .transfer import captured_values
        fn = self.module.lambda_value(node, self.scope)
        captured, now = captured_values(self, fn.node)
        if captured or now:
            return replace(fn, captured=captured, captured_now=now)
        return fn

    def _expr_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        value = self.expr(node.expression)
        if isinstance(value, Const) and isinstance(value.single, (int, float)) and not isinstance(value.single, bool):
            if isinstance(node.operator, cst.Minus):
                return Const.of(-value.single)  # `offset = -0.5`: a number, as `0.5` is
            if isinstance(node.operator, cst.Plus):
                return value
            if isinstance(node.operator, cst.BitInvert) and isinstance(value.single, int):
                return Const.of(~value.single)
        if isinstance(node.operator, cst.Not):
            from .solver import truthiness
            truth = truthiness(value)
            return Const.of(not truth) if truth is not None else UNKNOWN
        return self.arithmetic(node, [value])

    def _expr_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        left, right = self.expr(node.left), self.expr(node.right)
        folded = fold(node.operator, left, right)
        if folded is not None:
            return folded
        if isinstance(node.operator, cst.Multiply) and isinstance(left, (Items, Seq)) and \
                not isinstance(right, (Host, Device, Tensor)):
            return Seq(element_of(left)) if not (isinstance(left, Items) and not left.items) else left  # [0] * n
        if isinstance(node.operator, cst.Add) and isinstance(left, (Items, Seq)) and isinstance(right, (Items, Seq)):
            self.escape(node, [left, right])  # bufs + [h]: kept in the new list
            if isinstance(left, Items) and isinstance(right, Items):
                return Items(left.items + right.items)
            return Seq(join(element_of(left), element_of(right)))
        return self.arithmetic(node, [left, right])

    def arithmetic(self, node: cst.CSTNode, operands: list, api: str = "arithmetic") -> Value:
        """An elementwise operation (``a * 2``, ``-a``, ``np.floor(a)``): a new pageable array when an
        operand is a host array, as large as that array (``elementwise_size``)."""
        shaped = [v for v in operands if tabular.several(v)]
        if shaped and all(tabular.several(v) or isinstance(v, (Const, Scalar)) for v in operands):
            return shaped[0]  # `~mask`, `df["a"] * 2`, `m1 & m2`: cells of the results, in the same shape
        kind = scalar_kind(operands)
        if kind is not None:
            divides = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)
            kind = "float" if divides and kind == "int" else kind
            # `len(reqs) + 1` (cu-lengths: one more than the requests): still a count of Python
            # objects, give or take a few
            counted = kind == "int" and isinstance(node, cst.BinaryOperation) and \
                isinstance(node.operator, (cst.Add, cst.Subtract)) and \
                any(isinstance(v, Scalar) and v.objects for v in operands) and \
                all(isinstance(v, Scalar) and v.objects or _small_int(v) for v in operands)
            return Scalar(kind, objects=counted, bound=_bounded(node, operands) if kind == "int" else None)
        hosts = [v for v in operands if isinstance(v, Host)]
        if hosts and all(h.pointer for h in hosts):
            if len(hosts) != 1:
                return UNKNOWN
            address = hosts[0]  # ptr + offset: an address into the same memory
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
                # h.ctypes.data + r * row in `for r in range(rows)`: another row on each iteration.
                for loop in self._stepping(node.right) | self._stepping(node.left):
                    address = varying_in(address, loop)
            return address
        if any(isinstance(v, (Device, Tensor)) for v in operands):
            for host in hosts:
                self.event(EventType.READ, node, host)
            return next(v for v in operands if isinstance(v, (Device, Tensor)))
        if hosts:
            for host in hosts:
                self.event(EventType.READ, node, host)
            library = "torch" if any(h.library == "torch" for h in hosts) else "numpy"
            # Arithmetic makes a new pageable buffer, whatever its operands were.
            divides = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)
            nbytes, dtype = elementwise_size(operands, library, divides, self.tables)
            numbers, bound = python_number_operands(operands, self.tables)
            most = elementwise_bound(operands, self.tables) if nbytes is None and bound is None else None
            site = self.site(node, Kind.PAGEABLE, library, api, nbytes=nbytes if nbytes is not None else bound,
                             dtype=dtype, python_numbers=numbers, max_nbytes=most, ndim=_broadcast_ndim(operands))
            return Host(frozenset([site]), library)
        return UNKNOWN

    def _stepping(self, expr) -> frozenset:
        """The loops whose variable ``expr`` follows one to one: the variable itself, or it times,
        plus or minus something that is no loop's variable (``i``, ``i * blk``, ``p0 + 1``). Not
        ``i % 2`` or ``i // 2``: those come round again (double buffering)."""
        if isinstance(expr, cst.Name):
            loop = self.state.env.get(LOOP_VARIABLE + expr.value)
            if isinstance(loop, Const):
                return frozenset([loop.single])
            # `while True: x = items[idx].cuda(); idx += 1`: a counter the loop steps on every pass
            for loop in reversed(self.loops):
                if isinstance(loop, cst.While) and expr.value in _counters(loop, self.module.project.while_counters):
                    return frozenset([loop])
            return frozenset()
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Add, cst.Subtract)):
            left, right = self._stepping(expr.left), self._stepping(expr.right)
            if left and not right and not self._mentions_loop_variable(expr.right):
                return left
            if right and not left and not self._mentions_loop_variable(expr.left) and \
                    not isinstance(expr.operator, cst.Subtract):
                return right
        return frozenset()

    def _mentions_loop_variable(self, expr) -> bool:
        todo = [expr]
        env = self.state.env
        while todo:
            item = todo.pop()
            if type(item) is cst.Name:
                if LOOP_VARIABLE + item.value in env or LOOP_DERIVED + item.value in env:
                    return True
            else:
                todo.extend(code_parts(item))
        return False

    def following(self, expr) -> frozenset:
        """The enclosing loops whose variable ``expr`` mentions, directly or through names computed
        from it (``start = stop - step``, ``e = picks[0, k].item()``)."""
        found = set()
        todo = [expr]
        env = self.state.env
        while todo:
            item = todo.pop()
            if type(item) is cst.BinaryOperation and isinstance(item.operator, _COMING_ROUND):
                return frozenset()  # `i % 2`, `i // 2`: the same elements come round again
            if type(item) is cst.Name:
                for prefix in (LOOP_VARIABLE, LOOP_DERIVED):
                    marker = env.get(prefix + item.value)
                    if isinstance(marker, Const):
                        found.update(marker.values)
            else:
                todo.extend(code_parts(item))
        return frozenset(loop for loop in self.loops if loop in found)

    def _rebinding_loops(self, node: cst.Subscript) -> list:
        """The enclosing loops whose body binds the name ``node`` is indexed by (``sd[k]``, ``k`` set
        in the loop): a key that may differ on every pass."""
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index) or \
                not isinstance(node.slice[0].slice.value, cst.Name) or not self.loops:
            return []
        from .invariance import loop_changes
        name = node.slice[0].slice.value.value
        return [loop for loop in self.loops if isinstance(loop, (cst.For, cst.While)) and
                name in loop_changes(loop, self.module.project.changes).bound]

    def _moving_bounds(self, node: cst.Subscript) -> frozenset:
        """The loops in which a slice of ``node`` moves: its lower bound steps with, or is computed from,
        the loop's variable (``h[p0:p0 + blk]``, ``h[:, st:end]`` with ``st, end = window(i)``)."""
        found: set = set()
        for element in node.slice:
            if not isinstance(element.slice, cst.Slice) or element.slice.lower is None:
                continue
            lower = element.slice.lower
            found.update(self._stepping(lower) or self.following(lower) or self._stepped_while(lower))
        return frozenset(found)

    def _stepped_while(self, expr) -> tuple:
        """The innermost ``while`` loop whose body steps a name ``expr`` computes with (``begin`` of
        ``begin = max(0, end - chunk); end = begin``), or the innermost ``for`` loop whose body moves it
        on (``idx[offset:offset + n]`` with ``offset += n``): another part on each iteration."""
        if expr is None or not self.loops:
            return ()
        from .invariance import advanced_names, arithmetic_names, stepped_names
        loop = self.loops[-1]
        if isinstance(loop, cst.While):
            return (loop,) if arithmetic_names(expr) & stepped_names(loop) else ()
        if isinstance(loop, cst.For):
            return (loop,) if arithmetic_names(expr) & advanced_names(loop) else ()
        return ()

    def derived(self, expr) -> Optional[tuple]:
        """What a name assigned ``expr`` in a loop is marked with (the marker's key prefix and value):
        one that follows the loop's variable one to one is stepped as the variable is (``start = stop -
        step`` in ``buf[start:stop]``); one computed from it in another way may repeat or not, so what
        it picks is another element on each iteration as far as the analysis can tell."""
        stepping = self._stepping(expr)
        if len(stepping) == 1:
            return LOOP_VARIABLE, Const.of(next(iter(stepping)))
        following = self.following(expr)
        return (LOOP_DERIVED, Const(frozenset(following))) if following else None

    def _expr_Comparison(self, node: cst.Comparison) -> Value:
        operands = [self.expr(node.left)] + [self.expr(c.comparator) for c in node.comparisons]
        identity = all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons)
        for value in operands:
            if isinstance(value, Host) and not identity:
                # `h is not None` looks at the Python object, never at the buffer's bytes.
                self.event(EventType.READ, node, value)
        if len(node.comparisons) == 1:
            operator = node.comparisons[0].operator
            exact = self._type_check(node.left, operator, node.comparisons[0].comparator)
            if exact is not None:
                return exact
            if isinstance(operator, (cst.Is, cst.IsNot)) and operands[1] == Const.of(None) and \
                    (self._memo_guard(node.left) or
                     isinstance(node.left, cst.Name) and MAYBE_NONE + node.left.value in self.state.env):
                # (`batch = next(it, None)`: None once the loader is spent, the loop's way out)
                return UNKNOWN
            module = self._same_module(operator, node.left, operands[0], node.comparisons[0].comparator, operands[1])
            if module is not None:
                return module
            if isinstance(operator, (cst.Equal, cst.NotEqual)) and isinstance(operands[0], Instance):
                decided = self.calls.equality(node, operands[0], operands[1], node.comparisons[0].comparator,
                                              isinstance(operator, cst.NotEqual))
                if decided is not None:
                    return decided
            compared = _compare(operator, operands[0], operands[1])
            if compared is UNKNOWN and not identity and any(tabular.several(v) for v in operands):
                # `df["label"] == 1`: a mask, a column (or table) of booleans
                return next(v for v in operands if tabular.several(v))
            if compared is UNKNOWN and _tests_for_a_gpu(operator, operands[0], operands[1]):
                return ON_GPU
            if compared is UNKNOWN and _elementwise_comparison(operator, operands[0], operands[1]):
                return self._mask(node, operands)
            return compared
        return UNKNOWN

    def _mask(self, node: cst.Comparison, operands: list) -> Value:
        """``h < kmax``, ``a == b`` of host arrays: a new boolean array (pageable), one byte an element."""
        hosts = [v for v in operands if isinstance(v, Host)]
        library = "torch" if any(h.library == "torch" for h in hosts) else "numpy"
        counts = {element_total(site, self.tables) for host in hosts for site in host.sites}
        nbytes = counts.pop() if len(counts) == 1 else None  # as many elements as the arrays compared
        site = self.site(node, Kind.PAGEABLE, library, "comparison", nbytes=nbytes, dtype="bool")
        return Host(frozenset([site]), library)

    def _same_module(self, operator, left_expr, left: Value, right_expr, right: Value) -> Optional[Value]:
        """``xp is np`` / ``get_array_module(u) is not np``: a module value against an imported module."""
        if not isinstance(operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)):
            return None
        names = []
        for expr, value in ((left_expr, left), (right_expr, right)):
            if isinstance(value, LibraryRef):
                names.append(value.name)
            elif self.is_import_path(expr):
                names.append(self.module.imports.qualify(expr))
            else:
                return None
        if None in names or not any(isinstance(v, LibraryRef) for v in (left, right)):
            return None
        tables = self.tables
        if not all(tables.library_of(name) is not None and "." not in name for name in names):
            return None  # whole library modules only (numpy, cupy): a submodule may be re-exported
        same = names[0] == names[1]
        return Const.of(same == isinstance(operator, (cst.Is, cst.Equal)))

    def _memo_guard(self, left) -> bool:
        """``self.x is None`` in a method that sets ``self.x`` (a lazy set-up, or a memo guard
        ``if self.x is not None: return``), where ``x`` may be None when a method runs (None in
        ``__init__`` or the class body, or set by no constructor): both arms can run, whatever the
        join of its assignments, which leaves None out, says."""
        fn = self.invocation.function
        if not (isinstance(left, cst.Attribute) and isinstance(left.value, cst.Name) and fn is not None and
                fn.klass is not None and fn.kind == "method"):
            return False
        params = [*fn.node.params.posonly_params, *fn.node.params.params]
        if not params or params[0].name.value != left.value.value:
            return False
        from .fields import field_stores
        attr = left.attr.value
        return attr in field_stores(fn.node, left.value.value)[0] and \
            attr in self.module.project.fields.may_be_none(fn.klass)

    def _type_check(self, left, operator, right) -> Optional[Value]:
        """``type(x) is GPUArray`` / ``type(x) != np.ndarray``: as ``isinstance`` (the tables' classes
        are the ones their libraries make; none of them is a subclass the checked code makes)."""
        if not (isinstance(operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)) and isinstance(left, cst.Call)
                and isinstance(left.func, cst.Name) and left.func.value == "type" and len(left.args) == 1
                and isinstance(left.args[0].value, (cst.Name, cst.Attribute)) and self.lookup("type") is None
                and self.module.global_value("type") is None):
            return None
        answer = self.calls.instance_check(self.expr(left.args[0].value), right)
        if not isinstance(answer, Const):
            return None
        negated = isinstance(operator, (cst.IsNot, cst.NotEqual))
        return Const.of(answer.single != negated)

    def _expr_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        from .solver import truthiness
        left = self.expr(node.left)
        truth = truthiness(left)
        conjunction = isinstance(node.operator, cst.And)
        if truth is not None and truth != conjunction:
            return left  # `False and ...`, `True or ...`: the right side never runs
        right = self.expr(node.right)
        if truth is not None:
            return right  # `True and x`, `x or default` where x is falsy: the right side's value
        if conjunction and (isinstance(left, GpuFlag) or isinstance(right, GpuFlag)) and truthiness(right) is None:
            # `device is not None and device.type == "cuda"`: true in GPU runs only
            return ON_GPU
        if truthiness(right) is (not conjunction):
            # `flag and False` is falsy, `flag or True` truthy, whatever flag is (as far as a test goes).
            return Const.of(not conjunction)
        if isinstance(left, Const) and isinstance(right, Const):
            return join(left, right)
        return UNKNOWN

    # ------------------------------------------------------------------ subscripts
    def _expr_Subscript(self, node: cst.Subscript) -> Value:
        constant = self._constant_item(node)
        if constant is not None:
            return constant
        base = self.expr(node.value)
        indexes = self.slices(node)
        if isinstance(base, LibraryRef) and base.name in self.tables.python.get("index_grids", {}):
            return self._grid(base.name, node)
        stored = last_stored_item(self, node, base)
        if stored is not None:
            return stored
        return self.subscript(self._unreplaced(node, base), node, indexes)

    def _grid(self, name: str, node: cst.Subscript) -> Value:
        """``np.mgrid[0:h, 0:w]`` (one new array of every coordinate) and ``np.ogrid[...]`` (one new
        array per dimension): new pageable memory, sized where every slice is constant (a complex
        step is a count of points, as in `linspace`)."""
        counts = [self._grid_count(element.slice) for element in node.slice]
        floats = any(isinstance(element.slice, cst.Slice) and any(
            isinstance(part, (cst.Float, cst.Imaginary)) for part in (element.slice.lower, element.slice.upper,
                                                                    element.slice.step)) for element in node.slice)
        dtype = "float64" if floats else "int64"
        dense = self.tables.python["index_grids"][name] == "dense"
        if None in counts:
            nbytes = None
        else:
            total = 1
            for count in counts:
                total *= count
            nbytes = (total * len(counts) if dense else max(counts)) * 8
        site = self.site(node, Kind.PAGEABLE, "numpy", name, nbytes=nbytes, dtype=dtype,
                         ndim=len(counts) + 1 if dense else len(counts))
        made = Host(frozenset([site]), "numpy")
        self.event(EventType.ALLOC, node, made, api=name)
        return made if dense else Seq(made)

    @staticmethod
    def _grid_count(part) -> Optional[int]:
        if not isinstance(part, cst.Slice):
            return None
        from .interproc import literal
        bounds = [literal(b) if b is not None else None for b in (part.lower, part.upper)]
        if isinstance(part.step, cst.Imaginary):
            try:
                return int(abs(complex(part.step.value.replace("_", ""))))
            except ValueError:
                return None
        step = literal(part.step) if part.step is not None else Const.of(1)
        lower = bounds[0] if bounds[0] is not None else Const.of(0)
        if bounds[1] is None or UNKNOWN in (lower, bounds[1], step):
            return None
        return range_length([lower, bounds[1], step])

    def _unreplaced(self, node: cst.Subscript, base: Value) -> Value:
        """``xs[i]`` read before ``xs[i] = ...`` in ``for i in range(len(xs))``: no iteration has replaced
        that element yet, so it is one of those ``xs`` held as the loop started (analysis/slots.py)."""
        index = node.slice[0].slice.value if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
            else None
        if not isinstance(index, cst.Name) or not isinstance(node.value, cst.Name):
            return base
        loop = self.state.env.get(LOOP_VARIABLE + index.value)
        if not isinstance(loop, Const) or not isinstance(loop.single, cst.For):
            return base
        from .slots import SLOTS, slot_reads
        reads = slot_reads(loop.single, self.module.project.slot_reads).get(node.value.value)
        if reads is None or id(node) not in reads:
            return base
        return self.state.env.get(f"{SLOTS}{id(loop.single)}:{node.value.value}", base)

    def _constant_item(self, node: cst.Subscript) -> Optional[Value]:
        """An item of a module's value that the tables fix (``sys.version_info[0]`` is 3: the checked
        code runs on Python 3, so ``if sys.version_info[0] == 2: range = xrange`` never runs)."""
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index) or \
                not isinstance(node.slice[0].slice.value, cst.Integer) or not self.is_import_path(node.value):
            return None
        qualified = self.module.imports.qualify(node.value)
        key = f"{qualified}[{node.slice[0].slice.value.evaluated_value}]" if qualified else None
        return Const.of(self.tables.constants[key]) if key in self.tables.constants else None

    def subscript(self, base: Value, node: cst.Subscript, indexes: list) -> Value:
        element = self._subscript(base, node, indexes)
        # weights[name], tables[i, j] with `name`, `i` a loop's variable: a different element on each
        # iteration of that loop; host[n_in + i] (one buffer per binding after the inputs) follows i as
        # host[i] does; so does a row of an array, `frames[i]`, another part of its memory each time.
        for index in _index_expressions(node):
            element = self.keyed_by(index, element)
        return element

    def keyed_by(self, key, element: Value) -> Value:
        """The element a container gives for ``key`` (an index, a dict's key): where ``key`` follows a
        loop's variable, a different element on each iteration of that loop."""
        for loop in self._stepping(key) or self._rotating(key) or self.following(key):
            element = varying_in(element, loop)
        return element

    def _rotating(self, index) -> tuple:
        """The innermost loop in which ``index`` picks a double buffer's slot (analysis/slots.py)."""
        if not self.loops:
            return ()
        from .slots import rotating_slot
        loop = self.loops[-1]
        return (loop,) if rotating_slot(loop, index, self.module.project.rotating_slots) else ()

    def _subscript(self, base: Value, node: cst.Subscript, indexes: list) -> Value:
        all_slices = all(isinstance(e.slice, cst.Slice) for e in node.slice)
        if isinstance(base, Instance) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            getter = self.calls.member(base, "__getitem__", node)
            if isinstance(getter, Function):
                # `image, label = test_set[i]` of a dataset class of the checked code: its `__getitem__`
                from .effects import Args
                return self.calls.call_value(getter, node, Args(((node.slice[0].slice.value, indexes[0]),), {}, False))
        if tabular.is_tabular(base):
            return tabular.subscript(base, node.slice, indexes)
        if base == LABELLED_DATASET and not all_slices:
            return LABELLED_ITEM  # `image, label = train_set[i]`
        if isinstance(base, Host):
            advanced = len(indexes) == 1 and _index_array(node.slice[0], indexes[0]) or \
                len(indexes) > 1 and any(_picks(element, value) for element, value in zip(node.slice, indexes))
            if base.batch and not advanced:
                # a batch's field is one of the batch's tensors; `batch[:, :, :2]` a view of one
                view = replace(base, sliced=True) if _leaves_out_inner(node.slice, indexes) else base
                if all_slices:
                    # `table[start:start + chunk]` of what `torch.load` restored: another part of it (or
                    # of the list it is) on each iteration of a loop moving the bounds (krasis, survey 56 FA)
                    for loop in self._moving_bounds(node):
                        view = varying_in(view, loop)
                for loop in self._rebinding_loops(node):
                    # `sd[k]` with `k` a name a loop binds anew on each pass (found by an inner search
                    # loop): another entry of the restored dict each time (litevLLM's loader, survey 57 GH)
                    view = varying_in(view, loop)
                return view
            if all_slices or all(isinstance(e.slice, cst.Slice) or isinstance(e.slice.value, (cst.Ellipsis,)) or
                                 v == Const.of(None)  # None, np.newaxis
                                 for e, v in zip(node.slice, indexes)) and \
                    any(isinstance(e.slice, cst.Index) for e in node.slice):
                sliced = base.sliced or _leaves_out_inner(node.slice, indexes, _ones(base))
                if not all_slices:
                    # h[:, None], h[..., :]: a view
                    return replace(base, contiguous=None, ndim=NDIM_UNKNOWN, sliced=sliced)
                # A slice is a view of the same memory; only a plain h[a:b] stays contiguous.
                plain = len(node.slice) == 1 and node.slice[0].slice.step is None
                view = base if plain else replace(base, contiguous=None, sliced=sliced)
                # h[p0:p0 + blk] in `for p0 in range(0, n, blk)`: another part of h on each iteration.
                for loop in self._moving_bounds(node):
                    view = varying_in(view, loop)
                return view
            if advanced:
                # h[[0, 2]], h[idx_list], h[mask]: advanced indexing copies what it picks into a new
                # (pageable) array, whatever memory h is in.
                self.event(EventType.READ, node, base)
                site = self.site(node, Kind.PAGEABLE, base.library, "advanced indexing")
                return Host(frozenset([site]), base.library)
            if len(indexes) == 1 and isinstance(indexes[0], Const) and indexes[0].single is None or \
                    any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis) for e in node.slice):
                return replace(base, ndim=NDIM_UNKNOWN)  # h[None], h[..., 0]: a view of other dimensions
            if len(node.slice) >= 2 and any(isinstance(e.slice, cst.Slice) for e in node.slice) and \
                    all(isinstance(e.slice, cst.Slice) or _integer(v) for e, v in zip(node.slice, indexes)):
                # h[:, i, :]: slices and integers are basic indexing, a view of h (one dimension
                # fewer per integer); in `for i in ...` another part of h on each iteration.
                dims = base.dimensions()
                integers = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
                view = replace(base, contiguous=None, sliced=base.sliced or _leaves_out_inner(node.slice, indexes),
                               ndim=dims - len(integers) if dims is not None and dims > len(integers) else NDIM_UNKNOWN)
                for index in integers:
                    for loop in self._stepping(index):
                        view = varying_in(view, loop)
                for loop in self._moving_bounds(node):
                    view = varying_in(view, loop)  # h[0, :, st:end] with st from the loop's variable
                return view
            if len(node.slice) == 1 and base.library == "torch" and (base.dimensions() or 0) < 2 and \
                    not base.pointer and not base.batch and not _integer(indexes[0]):
                # t[ids] of a tensor by an index nothing explains: an element (a 0-d tensor, a view) or
                # a gathered copy; either way the memory kind of a pageable t, and in `for ids in
                # sampler:` another one on each iteration
                self.event(EventType.READ, node, base)
                gathered = self.site(node, Kind.PAGEABLE, base.library, "advanced indexing")
                picked = replace(base, sites=base.sites | {gathered}, ndim=NDIM_UNKNOWN)
                index = node.slice[0].slice.value
                for loop in self._stepping(index) or self.following(index):
                    picked = varying_in(picked, loop)
                return picked
            if len(node.slice) == 1 and (base.dimensions() or 0) >= 2:
                row = replace(base, ndim=base.dimensions() - 1)  # A[0] of a 2-D array: a row, a view
                # A[i] in `for i in range(len(A))`: another row on each iteration.
                stepped = self._stepping(node.slice[0].slice.value)
                for loop in stepped:
                    row = varying_in(row, loop)
                if not _integer(indexes[0]):
                    # A[ids] of an index nothing explains (node ids from a graph library, or each
                    # element of a list nothing lays out, `for idx in blocks(n):` of index arrays): a
                    # row, or an array of indices that gathers the rows into a new pageable array on
                    # each use. Either way the memory kind of a pageable A; not for sure the same buffer.
                    self.event(EventType.READ, node, base)
                    gathered = self.site(node, Kind.PAGEABLE, base.library, "advanced indexing")
                    return replace(row, sites=row.sites | {gathered})
                return row
            if len(indexes) == 1 and isinstance(indexes[0], Const) and isinstance(indexes[0].single, str):
                return replace(base, ndim=NDIM_UNKNOWN)  # h["x"]: a field of a structured array (or an npz member)
            if len(node.slice) == 1 and base.library == "torch" and base.dimensions() is None and \
                    not base.pointer and base.sites and all(s.kind.is_pinned for s in base.sites) and \
                    (_integer(indexes[0]) or isinstance(indexes[0], Scalar) and indexes[0].kind == "int"):
                # t[0] of a pinned tensor of dimensions nothing tells: a row or a 0-d tensor, a view of t's
                # memory either way (torch never hands back a copy for an integer index), so storing it
                # keeps t alive (4K4D's per-frame pinned cache, survey 56 FD). (Of a pageable one it stays
                # unknown: a 0-d element of a few bytes is no transfer worth a finding.) Counted as a
                # read, as an element taken out is: its value is what the code is after
                self.event(EventType.READ, node, base)
                view = replace(base, ndim=NDIM_UNKNOWN)
                for loop in self._stepping(node.slice[0].slice.value):
                    view = varying_in(view, loop)
                return view
            if base.pointer and len(indexes) == 1 and indexes[0] == Const.of(0):
                # ctypes.cast(ptr, POINTER(c_float * n))[0]: the memory it points to (read, as it is
                # for a pointer to one float, which nothing here tells apart).
                self.event(EventType.READ, node, base)
                return _pointee(base)
            self.event(EventType.READ, node, base)
            return _element(base, indexes)
        if isinstance(base, Device) or isinstance(base, Tensor):
            return base if all_slices or isinstance(base, Device) else UNKNOWN
        index = indexes[0] if len(indexes) == 1 else UNKNOWN
        if isinstance(base, Items):
            if all_slices:
                part = _constant_slice(node, base)
                if part is not None:
                    return part  # `res = call[1:]` of cudart's (err, ptr): the items it keeps
                return Seq(element_of(base)) if base.items else base
            if isinstance(index, Const) and isinstance(index.single, int) and not isinstance(index.single, bool):
                position = index.single
                if -len(base.items) <= position < len(base.items):
                    return base.items[position]
            return element_of(base)
        if isinstance(base, Seq):
            return base if all_slices else base.element
        if isinstance(base, Mapping):
            from .transfer import keyed_entry
            entry = keyed_entry(self, node)
            if entry is not None:
                return entry
            if isinstance(index, Const) and index.single is not None:
                found = base.get(index.single)
                if found is not None:
                    return found
                return base.rest if base.rest is not None else UNKNOWN
            if isinstance(index, Const) and index.values and ANYTHING not in index.values:
                # `[table[k] for k in ("coords", "momentum")]`: one of those keys' entries
                found = [base.get(key) for key in index.values]
                if all(value is not None for value in found):
                    return element_of(Items(tuple(found)))
            return element_of(Items(tuple(base.values()))) if base.values() else UNKNOWN
        if isinstance(base, Loader):
            return UNKNOWN
        return UNKNOWN

    def slices(self, node: cst.Subscript) -> list:
        values = []
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                values.append(self.expr(element.slice.value))
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.expr(part)
                values.append(UNKNOWN)
        return values

    # ------------------------------------------------------------------ comprehensions
    def _comprehension(self, node) -> Value:
        """A comprehension is a loop inside an expression: its element runs once per item. A first
        silent pass finds the copies it leaves in flight; when there are new ones, the next item can
        race with them, so the recorded pass starts from that state (the loop-carried case)."""
        emit = self.emit
        if len(self.inner_loops) >= 2:  # deeply nested comprehensions: one pass
            return self._comprehension_pass(node)
        before = self.state.pending
        self.emit = False
        result = self._comprehension_pass(node)
        self.emit = emit
        if self.state.pending != before or emit:
            if self.state.pending == before:
                pass  # nothing left in flight: the recorded pass sees what the silent one saw
            result = self._comprehension_pass(node)
        return result

    def _comprehension_pass(self, node) -> Value:
        from .transfer import assign
        saved_env = self.state.env
        self.state.env = dict(saved_env)
        clauses = []
        clause = node.for_in
        while clause is not None:
            clauses.append(clause)
            clause = clause.inner_for_in
        entered = False
        try:
            first_iter = self._iterated(clauses[0].iter)  # the first iterable runs once, outside the loop
            self.inner_loops.append(node)
            entered = True
            steps = _known_steps(first_iter) if len(clauses) == 1 else None
            if steps is not None:
                return self._comprehension_unrolled(node, clauses[0], steps)
            for index, clause in enumerate(clauses):
                iter_value = first_iter if index == 0 else self._iterated(clause.iter)
                if isinstance(iter_value, Host) and not iter_value.batch:
                    self.event(EventType.READ, clause.iter, iter_value)
                assign(self, clause.target, _iteration_element(iter_value, node))
                for name in target_names(clause.target):
                    # `[sd[k].cuda() for k, _ in m.named_parameters()]`: another entry each time (mar's EMA)
                    self.state.env[LOOP_VARIABLE + name] = Const.of(node)
                for condition in clause.ifs:
                    self.expr(condition.test)
            # What a comprehension produces is collected into its result: it outlives the iteration.
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                value = self.expr(node.value)
                self.escape(node, [value])
                return mapping({}, value)
            element = self.expr(node.elt)
            if node not in self.discarded:
                # (`[t.pin_memory() for t in d.values()]` as a statement keeps nothing: nnU-Net's pins)
                self.escape(node, [element])
            if isinstance(node, cst.ListComp) and len(clauses) == 1 and not clauses[0].ifs and \
                    isinstance(first_iter, Items) and not first_iter.names and \
                    _UNROLLED_STEPS < len(first_iter.items) <= _COUNTED_ITEMS:
                # one item per item of a list the code lays out: as long as it (`[p(name) for p in
                # PROMPTS]` of 80 prompt templates, TinyCLIP's token rows, survey 52)
                return Items((element,) * len(first_iter.items))
            return Iteration(element) if isinstance(node, cst.GeneratorExp) else Seq(element)
        finally:
            if entered:
                self.inner_loops.pop()
            self.state.env = saved_env

    def _iterated(self, expr) -> Value:
        """What a comprehension walks: an object of the checked code runs its `__iter__` (or `__getitem__`),
        as a `for` statement's does."""
        value = self.expr(expr)
        return self.calls.iterate(value, expr) if isinstance(value, Instance) else value

    def _comprehension_unrolled(self, node, clause, steps: tuple) -> Value:
        """A comprehension over a container whose items are known one by one (``{k: send(v) for k, v in
        batch.items()}`` of a dict the code builds): its element runs once with each item, so a call
        in it sees that item, not the join of all of them (a tensor beside a NumPy array in one dict,
        uploaded by a helper that tests `torch.is_tensor`). The result keeps the items apart too."""
        from .transfer import assign
        keys, values, every_one = [], [], True
        for step in steps:
            # each item another buffer, as a loop over the container sees it (not one sent again)
            assign(self, clause.target, varying_in(step, node))
            for name in target_names(clause.target):
                self.state.env[LOOP_VARIABLE + name] = Const.of(node)
            taken = True
            for condition in clause.ifs:
                answer = self.expr(condition.test)
                if answer == Const.of(False) or answer == Const.of(None):
                    taken = False
                elif answer != Const.of(True):
                    every_one = False  # perhaps left out: the result's length is not known
            if not taken:
                continue
            if isinstance(node, cst.DictComp):
                keys.append(self.expr(node.key))
                values.append(self.expr(node.value))
            else:
                values.append(self.expr(node.elt))
            if node not in self.discarded or isinstance(node, cst.DictComp):
                self.escape(node, [values[-1]])
        if isinstance(node, cst.DictComp):
            entries, rest = {}, None
            for key, value in zip(keys, values):
                if isinstance(key, Const) and key.single is not None and every_one:
                    entries[key.single] = value
                else:
                    rest = value if rest is None else join(rest, value)
            return mapping(entries, rest)
        if not values:
            return Seq(UNKNOWN) if not isinstance(node, cst.GeneratorExp) else Iteration(UNKNOWN)
        element = values[0]
        for value in values[1:]:
            element = join(element, value)
        if isinstance(node, cst.GeneratorExp):
            return Iteration(element, items=tuple(values) if every_one else ())
        if isinstance(node, cst.ListComp) and every_one:
            return Items(tuple(values))
        return Seq(element)

    _expr_ListComp = _expr_SetComp = _expr_GeneratorExp = _expr_DictComp = _comprehension

    # ------------------------------------------------------------------ calls
    def _expr_Call(self, node: cst.Call) -> Value:
        if node.args and isinstance(node.args[0].value, cst.Call) and node.args[0].star == "" and \
                self._runs_coroutine(node.func):
            # `asyncio.run(self._gather(rows))`: the coroutine runs to its end here, as if awaited.
            self.awaited.add(node.args[0].value)
            return self.expr(node.args[0].value)
        if self._starts_with_cuda(node):
            return ON_GPU  # `pin_memory=device.startswith("cuda")` of a device nothing names
        return self.calls.call(node)

    def _starts_with_cuda(self, node: cst.Call) -> bool:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(node.args) == 1 and
                not node.args[0].keyword and not node.args[0].star and isinstance(node.args[0].value, cst.SimpleString)
                and node.args[0].value.evaluated_value in ("cuda", "cuda:")):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "str" and \
                len(receiver.args) == 1 and self.lookup("str") is None:
            receiver = receiver.args[0].value
        if not isinstance(receiver, (cst.Name, cst.Attribute)):
            return False
        return _tests_for_a_gpu(cst.In(), Const.of("cuda"), self.expr(receiver))

    def _runs_coroutine(self, func) -> bool:
        runners = self.tables.python.get("coroutine_runners", ())
        return bool(runners) and self.is_import_path(func) and self.module.imports.qualify(func) in runners


def _index_array(element: cst.SubscriptElement, value: Value) -> bool:
    """The one index of ``h[idx]`` is an array of indices or a mask (advanced indexing, a copy): a
    list or array, not a tuple of slices built at run time (``h[tuple(slice(None, None, s) for s in
    steps)]`` is basic slicing, a view)."""
    if isinstance(value, Host):
        return True
    if isinstance(value, (Items, Seq)):
        items = value.items if isinstance(value, Items) else (value.element,)
        return isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.List) or \
            bool(items) and all(isinstance(i, (Const, Scalar, Host)) for i in items)
    return False


def _picks(element: cst.SubscriptElement, value: Value) -> bool:
    """One position of a multi-dimensional index that is an array of indices or a mask (``h[:, [0, 1,
    3]]``, ``h[:, cols]`` of a list or an array): NumPy's advanced indexing, a copy."""
    if not isinstance(element.slice, cst.Index):
        return False
    return isinstance(element.slice.value, cst.List) or isinstance(value, (Seq, Host)) or \
        isinstance(value, Items) and not isinstance(element.slice.value, cst.Tuple)


def _ones(base: Host) -> int:
    """Leading dimensions of size 1 every allocation of ``base`` has, where ``base`` is laid out as
    allocated (no reshape, transpose or slice since)."""
    if base.ndim is not None or base.contiguous is not True or base.sliced or not base.sites:
        return 0
    return min(s.leading_ones for s in base.sites)


def _leaves_out_inner(elements, indexes, ones: int = 0) -> bool:
    """Whether basic indexing leaves out part of a dimension after one it spans: `t[:, :2]`,
    `t[:, 0]`, `t[..., :2]`, `t[1:3, ::2]` are not dense (rows with gaps between them); `t[2]`,
    `t[0, :5]`, `t[:8, :]` are. A full `:` leaves nothing out; a leading integer picks one block;
    so does a `:` over one of the ``ones`` leading dimensions of size 1 (`kv[:, :n]` of a
    `[1, max_len, heads, dim]` cache is its first n rows)."""
    spanned = False
    for position, (element, value) in enumerate(zip(elements, indexes)):
        part = element.slice
        if position < ones and isinstance(part, cst.Slice) and part.step is None:
            continue  # a dimension of one: all of it or none
        if isinstance(part, cst.Slice):
            if spanned and (part.lower is not None or part.upper is not None or part.step is not None):
                return True
            spanned = True
        elif isinstance(part.value, cst.Ellipsis):
            spanned = True
        elif value == Const.of(None):
            continue  # np.newaxis: a dimension of one
        elif spanned:
            return True
    return False


def _integer(value: Value) -> bool:
    """A value that is an int for sure (a constant, a loop's counter, ``len(x)``): an index that picks
    along a dimension, not an array of indices (advanced indexing)."""
    if isinstance(value, Const):
        return bool(value.values) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values)
    return isinstance(value, Scalar) and value.kind == "int"


def _pointee(pointer: Host) -> Host:
    """What a ctypes pointer to a block points to: the block itself, as a ctypes object of some shape
    (an array of the pointer's type), which ``np.frombuffer``/``np.ndarray(buffer=...)`` view."""
    if not pointer.pointer:
        return pointer
    return replace(pointer, pointer=False, contiguous=None, ndim=NDIM_UNKNOWN)


def _index_expressions(node: cst.Subscript) -> list:
    """The keys a subscript indexes by: ``d[k]`` gives k, ``d[i, j]`` (a tuple key) i and j."""
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        index = node.slice[0].slice.value
        if isinstance(index, cst.Tuple):
            return [e.value for e in index.elements]
        return [index]
    if all(isinstance(e.slice, cst.Index) for e in node.slice):  # d[i, j] parses as two indexes
        return [e.slice.value for e in node.slice]
    return []


def _bounded(node, operands: list) -> Optional[int]:
    """At most how large an integer sum, product, difference or floor quotient of bounded numbers is
    (``1 + m``, ``2 * m``, ``m - 1``, ``m // 2`` of ``m`` in ``range(k)``), for a size it makes."""
    if not isinstance(node, cst.BinaryOperation) or len(operands) != 2:
        return None
    left, right = (upper_bound(v) for v in operands)
    if left is None:
        return None
    if isinstance(node.operator, cst.Subtract) and upper_bound(operands[1]) is not None:
        return left  # minus a non-negative number: no larger
    if isinstance(node.operator, cst.FloorDivide) and isinstance(operands[1], Const) and \
            isinstance(operands[1].single, int) and operands[1].single > 0:
        return left // operands[1].single
    if right is None:
        return None
    if isinstance(node.operator, cst.Add):
        return left + right
    if isinstance(node.operator, cst.Multiply):
        return left * right
    return None


def _device_attribute(base: Value, attr: str) -> Optional[Value]:
    """What a tensor's memory tells of its device: ``t.device`` of a CPU tensor is the CPU, of a CUDA
    tensor a CUDA device; ``.type`` of a device is "cpu" or "cuda", ``t.is_cuda`` False or True
    (``if t.device.type == "cpu":`` in a move helper is decided for the tensor a caller passes)."""
    cuda = None
    if isinstance(base, Host) and not base.pointer and not base.maybe_unknown and \
            (base.library == "torch" or attr == "device"):
        cuda = False  # a CPU tensor; a NumPy array's `.device` (NumPy 2) is "cpu" too
    elif isinstance(base, Device) and base.library == "torch":
        cuda = True
    if attr == "device" and cuda is not None:
        return DeviceSpec(cuda, of_data=True)
    if attr == "is_cuda" and cuda is not None:
        return Const.of(cuda)
    if attr == "type" and isinstance(base, DeviceSpec) and base.cuda is not None:
        return Const.of("cuda" if base.cuda else "cpu")
    return None


def _tests_for_a_gpu(operator, left: Value, right: Value) -> bool:
    """``device == "cuda"``, ``device.type != "cpu"``, ``"cuda" in str(device)`` of a device nothing
    in the code names (what the comparison tells is then only "this run uses a GPU")."""
    from .domain import ANYTHING

    def unnamed(value: Value) -> bool:
        return value is UNKNOWN or isinstance(value, DeviceSpec) and value.cuda is None or \
            isinstance(value, Const) and ANYTHING in value.values

    def text(value: Value) -> Optional[str]:
        return value.single if isinstance(value, Const) and isinstance(value.single, str) else None

    if isinstance(operator, cst.In):
        return text(left) == "cuda" and unnamed(right)
    if not isinstance(operator, (cst.Equal, cst.NotEqual)):
        return False
    for named, other in ((right, left), (left, right)):
        word = text(named)
        if word is None or not unnamed(other):
            continue
        if isinstance(operator, cst.Equal) and (word == "cuda" or word.startswith("cuda:")):
            return True
        if isinstance(operator, cst.NotEqual) and word == "cpu":
            return True
    return False


def _counters(loop: cst.While, cache: dict) -> frozenset:
    """Names a ``while`` loop's body steps by a positive constant on every pass (``idx += 1`` as one of
    its own statements, not under an ``if``) and binds nowhere else in the loop."""
    found = cache.get(loop)
    if found is None:
        from ..walk import binding_targets, code_nodes, suite_body
        stepped = set()
        for statement in suite_body(loop.body):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                            isinstance(small.operator, cst.AddAssign) and isinstance(small.value, cst.Integer) and \
                            small.value.evaluated_value > 0:
                        stepped.add(small.target.value)
        bound: dict = {}
        for node in code_nodes(loop.body, into_definitions=False):
            for target in binding_targets(node):
                for name in target_names(target):
                    bound[name] = bound.get(name, 0) + 1
        found = cache[loop] = frozenset(name for name in stepped if bound.get(name) == 1)
    return found


def item_keys(node: cst.Subscript) -> Optional[tuple]:
    """(value key, holder key) under which ``d[k] = v`` remembers ``v`` for a read of ``d[k]`` with the
    same ``k`` before ``k`` or ``d`` changes: the keys start with ``k.``, so rebinding ``k`` (the next
    iteration of ``for k in d``) forgets them."""
    container = dotted(node.value)
    if container is None or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    index = node.slice[0].slice.value
    if isinstance(index, (cst.Integer, cst.SimpleString)):
        # `slots[0] = h`, `batch["x"] = h`: until the container changes again (the holder check) or
        # its name is rebound (the keys start with it)
        return f"{container}.$item[{index.value}]", f"{container}.$item-holder[{index.value}]"
    if not isinstance(index, cst.Name):
        return None
    # (and a third key starting with the container: rebinding either name forgets what was stored,
    # where the holder's value cannot tell, as for a dict nothing here made)
    return f"{index.value}.$item:{container}", f"{index.value}.$item-holder:{container}", \
        f"{container}.$item-key:{index.value}"


def last_stored_item(ev, node: cst.Subscript, base: Value) -> Optional[Value]:
    """What ``d[k] = v`` stored, read back as ``d[k]`` with ``d`` and ``k`` unchanged since: exactly
    ``v``, where the container's value alone (``k`` one of several keys) joins every entry."""
    keys = item_keys(node)
    if keys is None:
        return None
    env = ev.state.env
    holder = env.get(keys[1])
    if holder is None or (holder is not base and holder != base):  # a join of the state copies equal values
        return None
    if len(keys) > 2 and keys[2] not in env:
        return None
    return env.get(keys[0])



def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(operator, left: Value, right: Value) -> Value:
    """``x is None``, ``mode == "fast"``: a constant when both sides are (for pruning if arms)."""
    from .domain import ANYTHING
    if isinstance(left, Const) and isinstance(right, Const) and left.single is not None or \
            isinstance(left, Const) and isinstance(right, Const) and left.is_exactly(None):
        if ANYTHING in left.values or ANYTHING in right.values or len(right.values) != 1 or \
                _UNKNOWN_DTYPE in left.values or _UNKNOWN_DTYPE in right.values:
            return UNKNOWN  # (`h.dtype != np.float32` of an array whose dtype nothing tells: either)
        b = right.single if not right.is_exactly(None) else None
        try:
            if isinstance(operator, (cst.Is, cst.Equal)):
                return Const(frozenset(a == b for a in left.values))
            if isinstance(operator, (cst.IsNot, cst.NotEqual)):
                return Const(frozenset(a != b for a in left.values))
            if isinstance(operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)) and \
                    all(_number(v) for v in left.values) and _number(b):
                order = {cst.LessThan: lambda x: x < b, cst.LessThanEqual: lambda x: x <= b,
                         cst.GreaterThan: lambda x: x > b, cst.GreaterThanEqual: lambda x: x >= b}[type(operator)]
                return Const(frozenset(order(a) for a in left.values))  # sys.version_info.major < 3
        except Exception:  # noqa: BLE001 - odd constants compare as unknown
            return UNKNOWN
    if isinstance(operator, (cst.In, cst.NotIn)) and isinstance(left, Const) and left.values and \
            ANYTHING not in left.values and isinstance(right, Items) and right.items and \
            all(isinstance(i, Const) and i.single is not None and ANYTHING not in i.values for i in right.items):
        # `fmt in ("mxfp8", "nvfp4")` of a constant: decided (a tuple or list display of constants)
        members = {i.single for i in right.items}
        try:
            inside = frozenset(a in members for a in left.values)
        except TypeError:  # noqa: BLE001 - unhashable odd constants compare as unknown
            return UNKNOWN
        return Const(inside if isinstance(operator, cst.In) else frozenset(not v for v in inside))
    if isinstance(left, DeviceSpec) and isinstance(right, DeviceSpec) and isinstance(operator, (cst.Equal, cst.NotEqual)) \
            and left.cuda is not None and right.cuda is not None and not (left.cuda and right.cuda):
        # cpu against cuda differ, cpu against cpu are the same; two CUDA devices may be different ones.
        return Const.of((left.cuda == right.cuda) == isinstance(operator, cst.Equal))
    if isinstance(operator, (cst.Is, cst.IsNot)) and isinstance(right, Const) and right.is_exactly(None) and \
            isinstance(left, (Host, Device, Tensor, Instance, Items, Seq, Mapping, Stream, DeviceSpec)):
        return Const.of(isinstance(operator, cst.IsNot))  # a buffer, a device or an object is not None
    return UNKNOWN


_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _elementwise_comparison(operator, left: Value, right: Value) -> bool:
    """A comparison that NumPy and torch do element by element (``norms < kmax``, ``a == b``): a host
    array (not an address, not a batch of unknown structure) against a number, another array or a value
    nothing explains (an array compared with anything but a device array compares its elements)."""
    if not isinstance(operator, _ORDERING + (cst.Equal, cst.NotEqual)):
        return False
    arrays = [v for v in (left, right) if isinstance(v, Host) and v.sites and not v.pointer and not v.batch]
    others = [v for v in (left, right) if not (isinstance(v, Host) and v in arrays)]
    numbers = all(v is UNKNOWN or isinstance(v, (Scalar, Host)) or isinstance(v, Const) and v.values and
                  all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values) for v in others)
    return bool(arrays) and numbers


def _constant_slice(node: cst.Subscript, base: Items) -> Optional[Items]:
    """``t[1:]``, ``t[:2]`` of a tuple of known items, with literal integer bounds: those items."""
    if len(node.slice) != 1:
        return None
    part = node.slice[0].slice
    bounds = []
    for bound in (part.lower, part.upper):
        if bound is None:
            bounds.append(None)
        elif isinstance(bound, cst.Integer):
            bounds.append(int(bound.value))
        elif isinstance(bound, cst.UnaryOperation) and isinstance(bound.operator, cst.Minus) and \
                isinstance(bound.expression, cst.Integer):
            bounds.append(-int(bound.expression.value))
        else:
            return None
    if part.step is not None:
        return None
    return Items(base.items[bounds[0]:bounds[1]])


def _element(base: Host, indexes: list) -> Value:
    """``ghosts[0]`` of ``ghosts = np.array([2, 2, 2, 2])``: that number, where every site says it
    (sizes computed from it are then constant); an element of another 1-D NumPy array is a number."""
    if len(indexes) != 1 or base.pointer or base.library != "numpy" or base.dimensions() != 1 or base.maybe_unknown:
        return UNKNOWN
    index = indexes[0]
    if isinstance(index, Const) and isinstance(index.single, int) and not isinstance(index.single, bool) and base.sites:
        found = set()
        for site in base.sites:
            if site.values is None or not -len(site.values) <= index.single < len(site.values):
                break
            found.add(site.values[index.single])
        else:
            return Const(frozenset(found))
    if _integer(index) or isinstance(index, Scalar) and index.kind == "int":
        return Scalar("number")  # `var[1]`: one element, a NumPy scalar
    return UNKNOWN


_TYPE_TESTS = frozenset({"isinstance", "hasattr", "callable"})


def _type_test(test) -> bool:
    """``isinstance(x, T)``, ``hasattr(x, "name")``, ``type(x) is T``, or ``not`` of one."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _type_test(test.expression)
    if isinstance(test, cst.Call):
        return isinstance(test.func, cst.Name) and test.func.value in _TYPE_TESTS
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left = test.left
        return isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "type"
    return False


def _single_pass(iterable: Optional[Value]) -> bool:
    """Whether a for loop's iterable (as its header evaluated it) has at most one element."""
    if isinstance(iterable, Items):
        return len(iterable.items) <= 1
    return isinstance(iterable, Iteration) and iterable.length is not None and iterable.length <= 1


def _small_int(value: Value) -> bool:
    return isinstance(value, Const) and bool(value.values) and \
        all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 8 for v in value.values)


def one_element(iterable: Optional[Value]) -> bool:
    """Whether a for loop's iterable (as its header evaluated it) has exactly one element."""
    if isinstance(iterable, Items):
        return len(iterable.items) == 1 and not iterable.names
    return isinstance(iterable, Iteration) and iterable.length == 1


def _broadcast_ndim(operands: list) -> Optional[int]:
    """The dimensions of an elementwise result of arrays whose dimensions are known and Python numbers
    (`-100 * labels`: the array's; arrays of several: the most, as broadcasting gives)."""
    dims = []
    for value in operands:
        if isinstance(value, Host):
            dims.append(value.dimensions())
        elif not (isinstance(value, Scalar) or isinstance(value, Const) and value.values and
                  all(isinstance(v, (int, float, complex)) for v in value.values)):
            return None
    return max(dims) if dims and None not in dims else None


_UNROLLED_STEPS = 16  # a comprehension over more known items than this joins them, as a loop does
_COUNTED_ITEMS = 4096  # up to this many, a list comprehension over them still has their count


def _known_steps(iterable: Value) -> Optional[tuple]:
    """What each step of iterating ``iterable`` gives, where the code lays every one out (a dict's
    known entries through ``.items()``/``.values()``, a tuple or list display); None otherwise."""
    if isinstance(iterable, Iteration) and iterable.items and len(iterable.items) <= _UNROLLED_STEPS:
        return iterable.items
    if isinstance(iterable, Items) and not iterable.names and 0 < len(iterable.items) <= _UNROLLED_STEPS:
        return iterable.items
    return None


def _iteration_element(iterable: Value, loop) -> Value:
    """What a loop over ``iterable`` binds: rows of an array are views of its memory, elements of a
    container are different buffers on each iteration."""
    element = element_of(iterable)
    if isinstance(element, Alternatives) and all(isinstance(o, LibraryRef) for o in element.options):
        # `for xp in (numpy, cupy):` runs the body once with each module, not with either on every
        # iteration: a copy through `xp` happens once, not once per iteration.
        return UNKNOWN
    if isinstance(iterable, Loader):
        # Each batch is made as the loader is iterated: by the loader, by the checked code's collate
        # function, or by the dataset's __getitem__ a pass-through loader (`batch_size=None`) hands on
        # as it is: a different buffer on every iteration, wherever the analysis saw it made.
        return varying_in(element, loop)
    if isinstance(iterable, Host):
        # A row of the array (a view), another part of its memory on each iteration: sent once
        # each, not the same bytes again (a file of saved frames loaded whole, walked frame by frame)
        return varying_in(element, loop) if isinstance(element, Host) else element
    if isinstance(iterable, Iteration) and iterable.same:
        return element
    items = iterable.items if isinstance(iterable, (Items, Iteration)) else ()
    return varying_in(with_visits(element, items, loop), loop)


iteration_element = _iteration_element
single_pass = _single_pass


def _calls_something(node) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if type(item) is cst.Call:
            return True
        if type(item) is not cst.Lambda:
            stack.extend(code_parts(item))
    return False
