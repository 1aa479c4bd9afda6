"""The memory-kind interpreter: the one place where pinlint's dataflow lives.

For each scope (module body, function, method) it walks the statements in execution order with an
environment mapping names (and ``self.attr``) to abstract values, and emits ordered events:
allocations, registrations, host<->device copies (direction, host buffer, async-ness, stream), CPU
reads and writes of tracked buffers, synchronizations and loop boundaries. Branches are analysed
separately and joined; loops run to a fixpoint before their events are emitted once. Every API fact
comes from the tables in ``rules/api``; rules are short queries over the events.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Optional, Sequence

import libcst as cst

from .apitables import Api, ArgSpec, Tables, default_tables
from .imports import ImportMap, collect_imports, dotted
from .model import Event, EventType, Kind, Site
from .walk import child_blocks, small_statements, statements, suite_body as _body
from .values import (ANYTHING, UNKNOWN, Const, Context, Device, DeviceSpec, Host, Items, Iteration, Loader, Obj,
                     Function, Stream, Value, join, join_envs,
                     varying_in)

MAX_LOOP_PASSES = 4

ITEM_SIZES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
              "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "complex64": 8,
              "complex128": 16}
# NumPy/torch attribute names (np.float32, torch.half) -> canonical dtype.
_DTYPE_ATTRS = {**{name: name for name in ITEM_SIZES}, "half": "float16", "single": "float32",
                "double": "float64", "float_": "float64", "bool_": "bool", "intc": "int32", "short": "int16",
                "long": "int64", "int": "int32", "float": "float32", "cfloat": "complex64", "cdouble": "complex128",
                "byte": "int8", "ubyte": "uint8", "longlong": "int64"}
# NumPy dtype strings ("f4", "<f8", "float") -> canonical dtype.
_DTYPE_CODES = {"f2": "float16", "e": "float16", "f4": "float32", "f": "float32", "f8": "float64", "d": "float64",
                "i1": "int8", "b": "int8", "i2": "int16", "h": "int16", "i4": "int32", "i": "int32", "i8": "int64",
                "l": "int64", "q": "int64", "u1": "uint8", "B": "uint8", "u2": "uint16", "H": "uint16",
                "u4": "uint32", "I": "uint32", "u8": "uint64", "L": "uint64", "Q": "uint64", "c8": "complex64",
                "F": "complex64", "c16": "complex128", "D": "complex128", "?": "bool", "b1": "bool",
                "float": "float64", "int": "int64", "double": "float64", "single": "float32", "half": "float16",
                "complex": "complex128", "bool": "bool", **{name: name for name in ITEM_SIZES}}
_PY_TYPES = {"float": "float64", "int": "int64", "bool": "bool", "complex": "complex128"}
_TRANSPOSING = frozenset({"T", "mT", "transpose", "swapaxes", "permute", "moveaxis"})

# Builtins that read every element of a host buffer they are given.
_READING_BUILTINS = {"print", "float", "int", "bytes", "sum", "list", "tuple", "max", "min", "sorted",
                     "str", "repr", "bool", "any", "all", "complex", "bytearray", "format"}

_CUDA_DEVICE = re.compile(r"^(cuda|gpu)(:\d+)?$")


@dataclass
class ScopeFacts:
    name: str
    node: cst.CSTNode
    events: list[Event]
    if_arms: dict = field(default_factory=dict)  # shared with the file: if id -> number of arms

    def races(self, direction: str, access: EventType) -> Iterator[tuple]:
        """(copy, access) pairs: a truly asynchronous copy (pinned buffer, async API) in ``direction``
        and a CPU ``access`` of its buffer that no synchronization covering the copy precedes. A
        pageable buffer makes the copy blocking (PIN001's finding), so it cannot race."""
        for index, copy in enumerate(self.events):
            if copy.type is EventType.COPY and copy.direction == direction and copy.is_async and \
                    copy.definitely(lambda s: s.kind.is_pinned):
                for event in self.unsynchronized_accesses(index, access):
                    yield copy, event

    def escaped(self) -> frozenset:
        """Sites whose buffers are stored, returned or handed to unknown code somewhere in the scope."""
        return frozenset(s for e in self.events if e.type is EventType.ESCAPE for s in e.sites)

    def unsynchronized_accesses(self, copy_index: int, access: EventType) -> Iterator[Event]:
        """CPU accesses (``READ`` or ``WRITE``) of an async copy's host buffer that can run before any
        synchronization covering the copy: later in the scope, or earlier in an enclosing loop's body
        (the next iteration). Accesses in a branch exclusive with the copy's never follow it."""
        copy = self.events[copy_index]
        for index, event in enumerate(self.events):
            if event.type is not access or index == copy_index or _exclusive(copy, event):
                continue
            if not event.definitely(lambda s: s in copy.sites):
                continue
            if index > copy_index:
                between = self.events[copy_index + 1:index]
            else:
                shared = [loop for loop in copy.loops if loop in event.loops]
                if not shared:
                    continue
                loop = shared[-1]
                end = next(i for i in range(copy_index, len(self.events))
                           if self.events[i].type is EventType.LOOP_END and self.events[i].loops[-1] == loop)
                start = max(i for i in range(0, index)
                            if self.events[i].type is EventType.LOOP_START and self.events[i].loops[-1] == loop)
                between = self.events[copy_index + 1:end] + self.events[start + 1:index]
            barriers = [b for b in between if _waits_for(b, copy)]
            if not _on_every_path(barriers, set(copy.branch) | set(event.branch), self.if_arms):
                yield event


def _exclusive(a: Event, b: Event) -> bool:
    """True when the two events sit in different arms of the same ``if``: they never both run."""
    arms = dict(a.branch)
    return any(if_id in arms and arms[if_id] != arm for if_id, arm in b.branch)


def _waits_for(barrier: Event, copy: Event) -> bool:
    """A synchronization that waits for the copy. Unknown streams count (precision first)."""
    if barrier.type is EventType.COPY and not barrier.is_async:
        return True  # a blocking copy waits for the device (counted generously)
    if barrier.type is EventType.SYNC:
        return barrier.stream is None or copy.stream is None or same_stream(barrier.stream, copy.stream)
    return False


def _on_every_path(barriers: list, context: set, if_arms: dict) -> bool:
    """Whether every path through the branches between copy and access meets one of ``barriers``.
    ``context`` holds the branch arms the copy or the access sit in (every path takes those)."""
    if any(all(entry in context for entry in b.branch) for b in barriers):
        return True
    arms_of: dict = {}
    for barrier in barriers:
        outer = next(entry for entry in barrier.branch if entry not in context)
        arms_of.setdefault(outer[0], {}).setdefault(outer[1], []).append(barrier)
    for if_id, arms in arms_of.items():
        if len(arms) == if_arms.get(if_id, -1) and all(
                _on_every_path(inner, context | {(if_id, arm)}, if_arms) for arm, inner in arms.items()):
            return True  # synchronized in every arm of this if
    return False


def same_stream(a, b) -> bool:
    return a is b or (getattr(a, "default", False) and getattr(b, "default", False))


@dataclass
class FileFacts:
    module: cst.Module
    scopes: list[ScopeFacts]
    loop_branch_depth: dict = field(default_factory=dict)  # loop id -> number of ifs around the loop
    loop_nodes: dict = field(default_factory=dict)  # loop id -> the loop's node

    def events(self) -> Iterator[Event]:
        for scope in self.scopes:
            yield from scope.events

    def copies(self) -> Iterator[Event]:
        return (e for e in self.events() if e.type is EventType.COPY)

    def conditional_in_loop(self, event: Event) -> bool:
        """The event sits under an ``if`` inside its innermost loop (a lazy ``if buf is None:`` set-up)."""
        return bool(event.loops) and len(event.branch) > self.loop_branch_depth.get(event.loops[-1], 0)


@dataclass
class _FileContext:
    tables: Tables
    imports: ImportMap
    sites: dict = field(default_factory=dict)        # (call node, variant) -> Site, stable across loop passes
    streams: dict = field(default_factory=dict)      # call node -> Stream
    ids: dict = field(default_factory=dict)          # loop / if node -> small int
    module_globals: dict = field(default_factory=dict)
    summaries: dict = field(default_factory=dict)    # function node -> joined return value
    pinned_inside: dict = field(default_factory=dict)  # function node -> pinned sites it allocates and drops
    kept_inside: dict = field(default_factory=dict)    # function node -> sites it stores beyond the call
    if_arms: dict = field(default_factory=dict)        # if/match id -> number of arms (a missing else counts)
    loop_branch_depth: dict = field(default_factory=dict)

    def node_id(self, node: cst.CSTNode) -> int:
        return self.ids.setdefault(node, len(self.ids) + 1)


class _Stop(Exception):
    """Raised to abandon a path after ``return``/``raise``/``break``/``continue`` (its env is dropped)."""


@dataclass(frozen=True)
class _Args:
    positional: tuple           # (expr, value)
    keywords: dict              # name -> (expr, value)
    star: bool                  # *args or **kwargs present: positions after them are unknown

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
        return found[1] if found is not None else default

    def present(self, spec: Optional[ArgSpec]) -> bool:
        return self.get(spec) is not None


class _Interpreter:
    def __init__(self, ctx: _FileContext, name: str, env: dict) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
        self.name = name
        self.env: dict = env
        self.loops: list[int] = []
        self.branch: list[tuple[int, int]] = []
        self.current_stream: list[Stream] = []
        self.emit = True
        self.events: list[Event] = []
        self.returned: Optional[Value] = None  # join of the values this scope returns
        self.declared_outer: set = set()       # names declared `global`/`nonlocal`: stores there escape

    # ----------------------------------------------------------------- events
    def _event(self, type_: EventType, node: cst.CSTNode, value: Value = UNKNOWN, **kw) -> None:
        if not self.emit:
            return
        if type_ is EventType.READ and isinstance(value, Host) and value.pointer:
            return  # printing or comparing an address reads none of the memory behind it
        sites, maybe_unknown = _sites_of(value)
        varies = value.varies if isinstance(value, Host) else frozenset()
        self.events.append(Event(type=type_, node=node, loops=tuple(self.loops), branch=tuple(self.branch),
                                 sites=sites, maybe_unknown=maybe_unknown, varies_in=varies, scope=self.name,
                                 **kw))

    def _site(self, node: cst.CSTNode, kind: Kind, library: str, api: str, *, variant: str = "",
              nbytes: Optional[int] = None, pooled: bool = False, fix: Optional[str] = None,
              fresh_each_iteration: bool = False, via: frozenset = frozenset(), dtype: Optional[str] = None,
              ndim: Optional[int] = None) -> Site:
        key = (node, variant)
        site = self.ctx.sites.get(key)
        if site is None or site.kind is not kind:
            site = Site(kind=kind, library=library, api=api, node=node, loops=tuple(self.loops),
                        nbytes=nbytes, pooled=pooled, fix=fix, scope=self.name,
                        fresh_each_iteration=fresh_each_iteration, via=via, dtype=dtype, ndim=ndim)
            self.ctx.sites[key] = site
        return site

    # ------------------------------------------------------------- statements
    def run_block(self, statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(small)
        elif isinstance(node, cst.If):
            self.if_statement(node)
        elif isinstance(node, (cst.For, cst.While)):
            self.loop(node)
        elif isinstance(node, cst.With):
            self.with_statement(node)
        elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            self.try_statement(node)
        elif isinstance(node, cst.FunctionDef):
            # Analysed as a scope of its own; a kernel decorator (`@cuda.jit`) makes it a GPU kernel.
            self.env[node.name.value] = Function(node, node.name.value, self._is_kernel(node))
        elif isinstance(node, cst.ClassDef):
            self.env[node.name.value] = UNKNOWN
        elif isinstance(node, cst.Match):
            self.match_statement(node)
        elif isinstance(node, cst.IndentedBlock):
            self.run_block(node.body)

    def small_statement(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target.target, value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value))
        elif isinstance(node, cst.AugAssign):
            target = self.expr(node.target)
            value = self.expr(node.value)
            if not isinstance(target, Host):
                self._escape(node, [value])  # bufs += [h]
            if isinstance(target, Host):
                self._event(EventType.READ, node, target)
                self._event(EventType.WRITE, node, target)
            elif isinstance(node.target, (cst.Name, cst.Attribute)) and not isinstance(target, Device):
                key = _target_key(node.target)  # `d *= 2` keeps a device array a device array
                if key:
                    self.env[key] = UNKNOWN
        elif isinstance(node, cst.Expr):
            self.expr(node.value)
        elif isinstance(node, (cst.Return, cst.Raise)):
            if isinstance(node, cst.Return):
                value = self.expr(node.value) if node.value is not None else Const.of(None)
                self._escape(node, [value])
                self.returned = value if self.returned is None else join(self.returned, value)
            elif isinstance(node, cst.Raise) and node.exc is not None:
                self.expr(node.exc)
            raise _Stop()
        elif isinstance(node, (cst.Break, cst.Continue)):
            raise _Stop()
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for name in node.names:
                self.env[name.name.value] = UNKNOWN
                self.declared_outer.add(name.name.value)
        elif isinstance(node, cst.Del):
            self._forget(node.target)

    def _forget(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._forget(element.value)
            return
        key = _target_key(target)
        if key:
            self.env.pop(key, None)

    def assign(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Attribute) or (isinstance(target, cst.Name) and target.value in self.declared_outer):
            self._escape(target, [value])  # stored on an object or a global: it outlives this scope
        if isinstance(target, (cst.Name, cst.Attribute)):
            key = _target_key(target)
            if key:
                self.env[key] = value
                return
            if isinstance(target, cst.Attribute):
                self.expr(target.value)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e for e in target.elements]
            starred = any(isinstance(e, cst.StarredElement) for e in elements)
            items = value.items if isinstance(value, Items) and len(value.items) == len(elements) and not starred \
                else None
            for index, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    self.assign(element.value, UNKNOWN)
                elif items is not None:
                    self.assign(element.value, items[index])
                elif isinstance(value, Host) and value.batch:
                    self.assign(element.value, value)  # `x, y = batch`
                else:
                    self.assign(element.value, UNKNOWN)
            return
        if isinstance(target, cst.Subscript):
            base = self.expr(target.value)
            self._slices(target)
            if isinstance(base, Host):
                self._event(EventType.WRITE, target, base)
            else:
                self._escape(target, [value])  # stored in a container
            return
        if isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN)

    def _branches(self, node: cst.CSTNode, arms: Iterable[Optional[Sequence[cst.CSTNode]]]) -> None:
        """Run each arm from the same entry environment and join what falls through."""
        entry = self.env
        if_id = self.ctx.node_id(node)
        arms = list(arms)
        self.ctx.if_arms[if_id] = len(arms)
        results = []
        for arm_index, arm in enumerate(arms):
            self.env = dict(entry)
            self.branch.append((if_id, arm_index))
            try:
                if arm is not None:
                    self.run_block(arm)
                results.append(self.env)
            except _Stop:
                pass
            finally:
                self.branch.pop()
        if not results:
            self.env = entry
            raise _Stop()
        joined = results[0]
        for other in results[1:]:
            joined = join_envs(joined, other)
        self.env = joined

    def if_statement(self, node: cst.If) -> None:
        arms: list = []
        current: Optional[cst.BaseSuite] = node
        while isinstance(current, cst.If):
            self.expr(current.test)
            arms.append(_body(current.body))
            current = current.orelse
        if isinstance(current, cst.Else):
            arms.append(_body(current.body))
        else:
            arms.append(None)
        self._branches(node, arms)

    def match_statement(self, node: cst.Match) -> None:
        self.expr(node.subject)
        arms = [_body(case.body) for case in node.cases] + [None]
        self._branches(node, arms)

    def try_statement(self, node) -> None:
        entry = dict(self.env)
        try:
            self.run_block(_body(node.body))
            if node.orelse is not None:
                self.run_block(_body(node.orelse.body))
            after_body = self.env
        except _Stop:
            after_body = None
        outcomes = [after_body] if after_body is not None else []
        for handler in node.handlers:
            self.env = join_envs(entry, after_body) if after_body is not None else dict(entry)
            self.branch.append((self.ctx.node_id(handler), 0))
            try:
                if handler.name is not None:
                    self.assign(handler.name.name, UNKNOWN)
                self.run_block(_body(handler.body))
                outcomes.append(self.env)
            except _Stop:
                pass
            finally:
                self.branch.pop()
        if outcomes:
            joined = outcomes[0]
            for other in outcomes[1:]:
                joined = join_envs(joined, other)
            self.env = joined
        else:
            self.env = entry
        if node.finalbody is not None:
            self.run_block(_body(node.finalbody.body))
        if not outcomes:
            raise _Stop()

    def loop(self, node) -> None:
        loop_id = self.ctx.node_id(node)
        self.ctx.loop_branch_depth[loop_id] = len(self.branch)
        iter_value = self.expr(node.iter) if isinstance(node, cst.For) else None  # runs once, before the loop
        if isinstance(node, cst.For) and isinstance(iter_value, Host) and not iter_value.batch:
            self._event(EventType.READ, node.iter, iter_value)
        element = varying_in(_element_of(iter_value), loop_id) if iter_value is not None else UNKNOWN

        def one_pass(env: dict) -> Optional[dict]:
            self.env = dict(env)
            self.loops.append(loop_id)
            try:
                if isinstance(node, cst.For):
                    self.assign(node.target, element)
                else:
                    self.expr(node.test)
                self.run_block(_body(node.body))
                return self.env
            except _Stop:
                return None
            finally:
                self.loops.pop()

        entry = self.env
        state = dict(entry)
        emit = self.emit
        self.emit = False
        for _ in range(MAX_LOOP_PASSES):
            after = one_pass(state)
            new_state = join_envs(entry, after) if after is not None else state
            if new_state == state:
                break
            state = new_state
        self.emit = emit
        self.loops.append(loop_id)
        self._event(EventType.LOOP_START, node)
        self.loops.pop()
        after = one_pass(state)
        self.loops.append(loop_id)
        self._event(EventType.LOOP_END, node)
        self.loops.pop()
        self.env = join_envs(state, after) if after is not None else state
        if node.orelse is not None:
            self.run_block(_body(node.orelse.body))

    def with_statement(self, node: cst.With) -> None:
        saved: dict = {}
        entered_streams = 0
        exit_syncs: list = []
        for item in node.items:
            value = self.expr(item.item)
            if isinstance(value, Stream):
                value = Context(stream=value)
            if isinstance(value, Context):
                if value.sync_node is not None:
                    exit_syncs.append(value)
                if value.stream is not None:
                    self.current_stream.append(value.stream)
                    entered_streams += 1
                for name, registered in value.registered:
                    saved.setdefault(name, self.env.get(name))
                    self.env[name] = registered
                if item.asname is not None:
                    bound = value.registered[0][1] if len(value.registered) == 1 else \
                        (value.stream if value.stream is not None else UNKNOWN)
                    self.assign(item.asname.name, bound)
            elif item.asname is not None:
                self.assign(item.asname.name, UNKNOWN)
        try:
            self.run_block(_body(node.body))
            for context in exit_syncs:
                self._event(EventType.SYNC, context.sync_node, api="auto_synchronize", stream=context.sync_on_exit)
        finally:
            for _ in range(entered_streams):
                self.current_stream.pop()
            # Registration lasts for the block only: the buffers are pageable again afterwards.
            for name, previous in saved.items():
                if previous is None:
                    self.env.pop(name, None)
                else:
                    self.env[name] = previous

    # ------------------------------------------------------------ expressions
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

    def _is_kernel(self, node: cst.FunctionDef) -> bool:
        for decorator in node.decorators:
            expression = decorator.decorator
            if isinstance(expression, cst.Call):
                expression = expression.func
            if self.ctx.imports.qualify(expression) in self.tables.kernel_decorators:
                return True
        return False

    def _effect_kernel(self, api: Api, node, receiver, args: _Args) -> Value:
        return Obj("kernel")

    def _effect_kernel_module(self, api: Api, node, receiver, args: _Args) -> Value:
        return Obj("kernel-module")

    def _effect_launch(self, api: Api, node, receiver, args: _Args) -> Value:
        spec = api.arg("arg")
        self._launch(node, Obj("kernel"), _Args(((None, args.value(spec)),), {}, False) if spec else args)
        return UNKNOWN

    def _expr_Name(self, node: cst.Name) -> Value:
        if node.value in self.env:
            return self.env[node.value]
        if node.value in ("True", "False", "None"):
            return Const.of({"True": True, "False": False, "None": None}[node.value])
        if node.value in self.ctx.module_globals:
            return self.ctx.module_globals[node.value]
        if node.value in _PY_TYPES and self.ctx.imports.lookup(node.value) is None:
            return Const.of("pytype:" + node.value)  # `dtype=float`
        return self._qualified_value(node)

    def _qualified_value(self, node: cst.BaseExpression) -> Value:
        qualified = self.ctx.imports.qualify(node)
        if qualified is None:
            return UNKNOWN
        if qualified in self.tables.constants:
            return Const.of(self.tables.constants[qualified])
        if qualified in self.tables.null_streams:
            return Stream(origin=qualified, default=True)
        if qualified.startswith(("numpy.", "torch.")) and qualified.split(".")[-1] in _DTYPE_ATTRS:
            return Const.of("dtype:" + qualified.split(".")[-1])
        return UNKNOWN

    def _is_import_path(self, node: cst.BaseExpression) -> bool:
        """True when ``node`` is a module path (``cp.cuda``), not a local value."""
        name = dotted(node)
        if name is None:
            return False
        root = name.split(".")[0]
        return root not in self.env and root not in self.ctx.module_globals and \
            self.ctx.imports.lookup(root) is not None

    def _expr_Attribute(self, node: cst.Attribute) -> Value:
        key = _target_key(node)
        if key and key in self.env:
            return self.env[key]
        if self._is_import_path(node):
            return self._qualified_value(node)
        base = self.expr(node.value)
        attr = node.attr.value
        if isinstance(base, Host) and attr in self.tables.view_attributes:
            if attr in ("ctypes", "ptr"):
                return replace(base, pointer=True)  # h.ctypes.data, mem.ptr: addresses
            return _transposed(base) if attr in _TRANSPOSING else base
        if isinstance(base, Device) and attr in self.tables.device_attributes:
            return base
        if isinstance(base, Items) and attr in ("shape",):
            return UNKNOWN
        return UNKNOWN

    def _expr_Integer(self, node: cst.Integer) -> Value:
        try:
            return Const.of(int(node.value.replace("_", ""), 0))
        except ValueError:
            return UNKNOWN

    def _expr_SimpleString(self, node: cst.SimpleString) -> Value:
        try:
            return Const.of(node.evaluated_value)
        except Exception:  # noqa: BLE001 - odd prefixes stay unknown
            return UNKNOWN

    def _expr_Float(self, node: cst.Float) -> Value:
        return UNKNOWN

    def _expr_Tuple(self, node) -> Value:
        return Items(tuple(UNKNOWN if isinstance(e, cst.StarredElement) else self.expr(e.value)
                           for e in node.elements))

    _expr_List = _expr_Tuple

    def _expr_IfExp(self, node: cst.IfExp) -> Value:
        self.expr(node.test)
        return join(self.expr(node.body), self.expr(node.orelse))

    def _expr_NamedExpr(self, node: cst.NamedExpr) -> Value:
        value = self.expr(node.value)
        self.assign(node.target, value)
        return value

    def _expr_FormattedString(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                value = self.expr(part.expression)
                if isinstance(value, Host):
                    self._event(EventType.READ, part.expression, value)  # f"{h}" formats every element
        return UNKNOWN

    def _expr_Dict(self, node: cst.Dict) -> Value:
        values = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.expr(element.key)
            values.append(self.expr(element.value))
        return Items(tuple(values))  # {"host": h}: what it holds, for escapes

    def _expr_Set(self, node: cst.Set) -> Value:
        return Items(tuple(UNKNOWN if isinstance(e, cst.StarredElement) else self.expr(e.value)
                           for e in node.elements))

    def _expr_Yield(self, node: cst.Yield) -> Value:
        if isinstance(node.value, cst.BaseExpression):
            self._escape(node, [self.expr(node.value)])
        elif node.value is not None:
            self.expr(node.value.item)
        return UNKNOWN

    def _expr_Await(self, node: cst.Await) -> Value:
        return self.expr(node.expression)

    def _expr_Lambda(self, node: cst.Lambda) -> Value:
        return UNKNOWN

    def _expr_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        value = self.expr(node.expression)
        if isinstance(value, Const) and isinstance(value.single, int) and not isinstance(value.single, bool):
            if isinstance(node.operator, cst.Minus):
                return Const.of(-value.single)
            if isinstance(node.operator, cst.BitInvert):
                return Const.of(~value.single)
        if isinstance(node.operator, cst.Not):
            return UNKNOWN
        return self._arithmetic(node, [value])

    def _expr_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        left, right = self.expr(node.left), self.expr(node.right)
        folded = _fold(node.operator, left, right)
        if folded is not None:
            return folded
        return self._arithmetic(node, [left, right])

    def _arithmetic(self, node: cst.CSTNode, operands: list) -> Value:
        hosts = [v for v in operands if isinstance(v, Host)]
        if hosts and all(h.pointer for h in hosts):
            return hosts[0] if len(hosts) == 1 else UNKNOWN  # ptr + offset: an address into the same memory
        self._escape(node, [v for v in operands if isinstance(v, Items)])  # bufs + [h] keeps h
        if any(isinstance(v, Device) for v in operands):
            for host in hosts:
                self._event(EventType.READ, node, host)
            return next(v for v in operands if isinstance(v, Device))
        if hosts:
            for host in hosts:
                self._event(EventType.READ, node, host)
            library = "torch" if any(h.library == "torch" for h in hosts) else "numpy"
            # Arithmetic makes a new pageable buffer, whatever its operands were.
            site = self._site(node, Kind.PAGEABLE, library, "arithmetic")
            return Host(frozenset([site]), library)
        return UNKNOWN

    def _expr_Comparison(self, node: cst.Comparison) -> Value:
        operands = [self.expr(node.left)] + [self.expr(c.comparator) for c in node.comparisons]
        for value in operands:
            if isinstance(value, Host):
                self._event(EventType.READ, node, value)
        return UNKNOWN

    def _expr_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        left = self.expr(node.left)
        right = self.expr(node.right)
        return join(left, right) if isinstance(left, Const) and isinstance(right, Const) else UNKNOWN

    def _expr_Subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        indexes = self._slices(node)
        if isinstance(base, Host):
            if base.batch:
                return base  # a batch's field is one of the batch's tensors
            if all(isinstance(e.slice, cst.Slice) for e in node.slice):
                # A slice is a view of the same memory; only a plain h[a:b] stays contiguous.
                plain = len(node.slice) == 1 and node.slice[0].slice.step is None
                return base if plain else replace(base, contiguous=None)
            self._event(EventType.READ, node, base)
            return UNKNOWN
        if isinstance(base, Items) and len(indexes) == 1 and isinstance(indexes[0], Const):
            index = indexes[0].single
            if isinstance(index, int) and not isinstance(index, bool) and -len(base.items) <= index < len(base.items):
                return base.items[index]
        if isinstance(base, Device):
            if all(isinstance(e.slice, cst.Slice) for e in node.slice):
                return base
        return UNKNOWN

    def _slices(self, node: cst.Subscript) -> list:
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

    def _comprehension(self, node) -> Value:
        """Comprehensions are loops: their element runs once per item of the iterable."""
        loop_id = self.ctx.node_id(node)
        self.ctx.loop_branch_depth[loop_id] = len(self.branch)
        saved_env = self.env
        self.env = dict(saved_env)
        clauses = []
        clause = node.for_in
        while clause is not None:
            clauses.append(clause)
            clause = clause.inner_for_in
        self.loops.append(loop_id)
        try:
            for index, clause in enumerate(clauses):
                if index == 0:
                    self.loops.pop()
                    iter_value = self.expr(clause.iter)
                    self.loops.append(loop_id)
                else:
                    iter_value = self.expr(clause.iter)
                if isinstance(iter_value, Host) and not iter_value.batch:
                    self._event(EventType.READ, clause.iter, iter_value)
                self.assign(clause.target, varying_in(_element_of(iter_value), loop_id))
                for condition in clause.ifs:
                    self.expr(condition.test)
            # What a comprehension produces is collected into its result: it outlives the iteration.
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                self._escape(node, [self.expr(node.value)])
            else:
                self._escape(node, [self.expr(node.elt)])
        finally:
            self.loops.pop()
            self.env = saved_env
        return UNKNOWN

    _expr_ListComp = _expr_SetComp = _expr_GeneratorExp = _expr_DictComp = _comprehension

    # ------------------------------------------------------------------ calls
    def _expr_Call(self, node: cst.Call) -> Value:
        func = node.func
        receiver: Optional[Value] = None
        api: Optional[Api] = None
        if self._is_import_path(func):
            qualified = self.ctx.imports.qualify(func)
            api = self.tables.functions.get(qualified) if qualified else None
            if api is None and qualified and qualified.startswith("numpy."):
                self._read_host_args(node, self._arguments(node))
                return UNKNOWN
            if api is None and isinstance(func, cst.Attribute):
                receiver = self._qualified_value(func.value)  # e.g. cp.cuda.Stream.null.synchronize()
                api = self._method(receiver, func.attr.value)
        elif isinstance(func, cst.Attribute):
            receiver = self.expr(func.value)
            api = self._method(receiver, func.attr.value)
        callee: Value = UNKNOWN
        if isinstance(func, cst.Subscript):
            callee = self.expr(func.value)  # kernel[grid, block](...)
            self._slices(func)
        elif isinstance(func, cst.Name) and not self._is_import_path(func):
            callee = self.expr(func)
        args = self._arguments(node)
        if api is not None:
            return self._apply(api, node, receiver, args)
        if isinstance(receiver, Device):
            return Device(receiver.library)  # d.sum(), d.reshape(...): device work gives device arrays
        if (isinstance(callee, Function) and callee.kernel) or callee == Obj("kernel"):
            self._launch(node, callee, args)
            return UNKNOWN
        if isinstance(callee, Function) and isinstance(func, cst.Name):
            self._escape_args(node, args)  # the local function may keep what it is given
            return self._call_local(node, callee)
        if isinstance(func, cst.Name) and func.value not in self.env and func.value in _BUILTINS:
            if func.value not in _NON_STORING_BUILTINS:
                self._escape_args(node, args)  # setattr(obj, name, h), dict(h=h), ...
            return self._builtin(node, func.value, args)
        self._escape_args(node, args)  # an unknown call may store its arguments anywhere
        return UNKNOWN

    def _launch(self, node: cst.Call, callee: Value, args: _Args) -> None:
        name = callee.name if isinstance(callee, Function) else "kernel"
        for value in _flatten(v for _, v in (*args.positional, *args.keywords.values())):
            if isinstance(value, Host):
                self._event(EventType.LAUNCH, node, value, api=name)

    def _escape_args(self, node: cst.CSTNode, args: _Args) -> None:
        self._escape(node, [v for _, v in (*args.positional, *args.keywords.values())])

    def _escape(self, node: cst.CSTNode, values) -> None:
        for value in _flatten(values):
            if isinstance(value, Host):
                self._event(EventType.ESCAPE, node, value)

    def _call_local(self, node: cst.Call, callee: Function) -> Value:
        """One level of calls: a local function that allocates memory allocates it anew at every call,
        so the call is an allocation site (the callee's summary was computed first)."""
        inside = self.ctx.pinned_inside.get(callee.node)
        if inside:
            # Pinned memory the callee allocates and drops: every call pays for it.
            kinds = {s.kind for s in inside}
            site = self._site(node, kinds.pop() if len(kinds) == 1 else Kind.PINNED, "numpy", f"{callee.name}()",
                              variant="call-inside", pooled=all(s.pooled for s in inside), via=frozenset(inside))
            self._event(EventType.ALLOC, node, Host(frozenset([site])), api=site.api)
        summary = self.ctx.summaries.get(callee.node)
        if not isinstance(summary, Host) or summary.maybe_unknown or not summary.sites:
            return UNKNOWN
        inner = summary.sites
        if inner & self.ctx.kept_inside.get(callee.node, frozenset()):
            return summary  # it caches the buffer (a global, an attribute): the same one every call
        made_inside = [s.scope == callee.name for s in inner]  # summaries exist for module-level functions only
        if not all(made_inside):
            # It hands out buffers made elsewhere (a global): the same buffers, not new ones.
            return UNKNOWN if any(made_inside) else summary
        kinds = {s.kind for s in inner}
        if len(kinds) != 1:
            return UNKNOWN
        site = self._site(node, kinds.pop(), summary.library, f"{callee.name}()", variant="call",
                          pooled=all(s.pooled for s in inner), via=frozenset(inner))
        value = Host(frozenset([site]), summary.library)
        self._event(EventType.ALLOC, node, value, api=site.api)
        return value

    def _arguments(self, node: cst.Call) -> _Args:
        positional, keywords, star = [], {}, False
        for arg in node.args:
            value = self.expr(arg.value)
            if arg.star:
                star = True
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = (arg.value, value)
            elif not star:
                positional.append((arg.value, value))
        return _Args(tuple(positional), keywords, star)

    def _method(self, receiver: Value, name: str) -> Optional[Api]:
        for on in _receiver_types(receiver):
            api = self.tables.methods.get((on, name))
            if api is not None:
                return api
        return None

    def _builtin(self, node: cst.Call, name: str, args: _Args) -> Value:
        if name in _READING_BUILTINS:
            self._read_host_args(node, args)
            if any(isinstance(v, Device) for _, v in args.positional):
                # float(d.sum()), print(d): the value must come back first, a blocking copy.
                self._event(EventType.SYNC, node, api=name)
        if name in ("enumerate",) and args.positional:
            return Iteration(Items((UNKNOWN, _element_of(args.positional[0][1]))))
        if name == "zip":
            return Iteration(Items(tuple(_element_of(v) for _, v in args.positional)))
        if name in ("iter", "reversed") and args.positional:
            value = args.positional[0][1]
            return value if isinstance(value, (Loader, Iteration)) else UNKNOWN
        if name in ("range",):
            return UNKNOWN
        return UNKNOWN

    def _read_host_args(self, node: cst.Call, args: _Args) -> None:
        for value in _flatten(v for _, v in (*args.positional, *args.keywords.values())):
            if isinstance(value, Host):
                self._event(EventType.READ, node, value)

    # ---------------------------------------------------------------- effects
    def _apply(self, api: Api, node: cst.Call, receiver: Optional[Value], args: _Args) -> Value:
        handler = getattr(self, "_effect_" + api.effect.replace("-", "_"))
        return handler(api, node, receiver, args)

    def _arg_value(self, spec: Optional[ArgSpec], receiver: Optional[Value], args: _Args) -> Value:
        if spec is None:
            return UNKNOWN
        if spec.is_self:
            return receiver if receiver is not None else UNKNOWN
        return args.value(spec)

    @staticmethod
    def _host_library(receiver: Optional[Value], api: Api) -> str:
        if isinstance(receiver, Host):
            return receiver.library
        return "torch" if api.library == "torch" else "numpy"

    def _effect_alloc(self, api: Api, node: cst.Call, receiver: Optional[Value], args: _Args) -> Value:
        kind = Kind(api.opt("kind"))
        device_kw = api.opt("device_kw")
        if device_kw and device_kw in args.keywords:
            device = _device_of(args.keywords[device_kw][1])
            if device is None:
                return UNKNOWN
            if device:
                return Device(api.library)
        like_device = api.arg("like_device")
        if like_device is not None and not (device_kw and device_kw in args.keywords):
            prototype = args.value(like_device)
            if isinstance(prototype, Device):
                return Device(api.library)
            if not isinstance(prototype, Host):
                return UNKNOWN
        pin_kw = api.opt("pin_kw")
        if pin_kw and pin_kw in args.keywords:
            pinned = args.keywords[pin_kw][1]
            if pinned == Const.of(True):
                kind = Kind.PINNED
            elif pinned != Const.of(False):
                return UNKNOWN
        flags = api.arg("flags")
        if flags is not None and args.present(flags):
            # Flags it cannot read: pinned for sure, write-combined or mapped perhaps (rules on those stay quiet).
            kind = _apply_flags(kind, args.value(flags)) or Kind.PINNED
        if api.opt("reads"):
            # Copies and conversions read their source's data (a CPU read for PIN003/PIN005).
            for value in _flatten([receiver] + [v for _, v in args.positional]):
                if isinstance(value, Host):
                    self._event(EventType.READ, node, value, api=api.name)
        library = self._host_library(receiver, api)
        nbytes, dtype, ndim = self._shape_info(api, args)
        if receiver is not None and isinstance(receiver, Host):
            dtype, ndim = _common(s.dtype for s in receiver.sites), _common(s.ndim for s in receiver.sites)
        pooled = bool(api.opt("pooled", False)) or (kind.is_pinned and bool(api.opt("pooled_when_pinned", False)))
        site = self._site(node, kind, library, _display(api.name, library), nbytes=nbytes, pooled=pooled,
                          fix=api.opt("fix") if kind is Kind.PAGEABLE else None, dtype=dtype, ndim=ndim)
        value = Host(frozenset([site]), library, pointer=bool(api.opt("pointer", api.opt("returns") == "err-tuple")))
        self._event(EventType.ALLOC, node, value, api=site.api)
        if api.opt("returns") == "err-tuple":
            return Items((UNKNOWN, value))
        return value

    def _shape_info(self, api: Api, args: _Args) -> tuple:
        """(nbytes, dtype, ndim) of an allocation, each None when not constant."""
        like = args.value(api.arg("like"))
        if isinstance(like, Host) and len(like.sites) == 1:
            site = next(iter(like.sites))
            return site.nbytes, site.dtype, site.ndim
        dtype_spec = api.arg("dtype")
        dtype = None
        if dtype_spec is not None:
            dtype = canonical_dtype(args.value(dtype_spec)) if args.present(dtype_spec) else dtype_spec.default
        nbytes = args.value(api.arg("nbytes"))
        if isinstance(nbytes, Const) and isinstance(nbytes.single, int):
            return nbytes.single, dtype, 1
        shape_spec = api.arg("shape")
        if shape_spec is None:
            return None, dtype, None
        shape = args.value(shape_spec)
        if shape_spec.pos == 0 and shape_spec.kw not in args.keywords and len(args.positional) > 1 and \
                api.library == "torch":
            shape = Items(tuple(v for _, v in args.positional))  # torch.empty(2, 3)
        ndim = len(shape.items) if isinstance(shape, Items) else (1 if isinstance(shape, Const) else None)
        count = _element_count(shape)
        size = ITEM_SIZES.get(dtype) if dtype else None
        return (count * size if count is not None and size else None), dtype, ndim

    def _effect_device(self, api: Api, node, receiver, args: _Args) -> Value:
        stream = args.value(api.arg("stream"))
        value = Device(api.opt("library", api.library), stream if isinstance(stream, Stream) else None)
        return Items((UNKNOWN, value)) if api.opt("returns") == "err-tuple" else value

    def _effect_view(self, api: Api, node, receiver, args: _Args) -> Value:
        source = self._arg_value(api.arg("arg"), receiver, args)
        result: Value = UNKNOWN
        if isinstance(source, Host):
            result = replace(source, library=api.opt("library") or source.library,
                             pointer=api.opt("pointer", source.pointer))
            if api.name.split(".")[-1] in _TRANSPOSING:
                result = _transposed(result)
            elif result.contiguous is False:
                result = replace(result, contiguous=None)  # reshape of a transpose may copy
        elif api.opt("otherwise") == "pageable" and isinstance(source, (Items, Const)):
            site = self._site(node, Kind.PAGEABLE, "numpy", api.name)
            result = Host(frozenset([site]), "numpy")
        return Items((UNKNOWN, result)) if api.opt("returns") == "err-tuple" else result

    def _convert(self, node: cst.CSTNode, source: Host, target: Optional[str], api: str, always_copy: bool) -> Value:
        """A dtype conversion: new pageable memory, unless nothing changes (then the same memory)."""
        dtypes = {s.dtype for s in source.sites}
        if not always_copy and dtypes == {target} and target is not None:
            return source  # torch `.float()` of float32, `astype(same, copy=False)`: no copy is made
        if not always_copy and (target is None or None in dtypes or target in dtypes):
            return UNKNOWN  # it may or may not copy
        self._event(EventType.READ, node, source, api=api)
        site = self._site(node, Kind.PAGEABLE, source.library, _display(api, source.library), dtype=target,
                          ndim=_common(s.ndim for s in source.sites))
        return Host(frozenset([site]), source.library)

    def _effect_convert(self, api: Api, node, receiver, args: _Args) -> Value:
        if isinstance(receiver, Device):
            return receiver
        if not isinstance(receiver, Host):
            return UNKNOWN
        method = api.name.split(".")[-1]
        target = api.opt("targets", {}).get(method) or canonical_dtype(args.value(api.arg("dtype")))
        copy_spec = api.arg("copy")
        always_copy = copy_spec is not None and args.value(copy_spec, Const.of(True)) != Const.of(False)
        return self._convert(node, receiver, target, api.name, always_copy)

    def _effect_contiguous(self, api: Api, node, receiver, args: _Args) -> Value:
        source = self._arg_value(api.arg("arg"), receiver, args)
        if not isinstance(source, Host):
            return UNKNOWN
        if source.contiguous:
            return source
        self._event(EventType.READ, node, source, api=api.name)
        site = self._site(node, Kind.PAGEABLE, source.library, _display(api.name, source.library),
                          dtype=_common(s.dtype for s in source.sites), ndim=_common(s.ndim for s in source.sites))
        copied = Host(frozenset([site]), source.library)
        # Unknown layout: it is either the same memory or a new pageable copy.
        return copied if source.contiguous is False else join(replace(source, contiguous=True), copied)

    def _effect_use_stream(self, api: Api, node, receiver, args: _Args) -> Value:
        if isinstance(receiver, Stream):
            self.current_stream.append(receiver)  # current from here on, in this scope
        return receiver if receiver is not None else UNKNOWN

    def _effect_sync_on_exit(self, api: Api, node, receiver, args: _Args) -> Value:
        return Context(sync_on_exit=receiver if isinstance(receiver, Stream) else None, sync_node=node)

    def _effect_free(self, api: Api, node, receiver, args: _Args) -> Value:
        return UNKNOWN

    def _effect_read(self, api: Api, node, receiver, args: _Args) -> Value:
        value = self._arg_value(api.arg("arg"), receiver, args)
        if isinstance(value, Host):
            self._event(EventType.READ, node, value, api=api.name)
        return UNKNOWN

    def _effect_write(self, api: Api, node, receiver, args: _Args) -> Value:
        value = self._arg_value(api.arg("arg"), receiver, args)
        if isinstance(value, Host):
            self._event(EventType.WRITE, node, value, api=api.name)
        return receiver if receiver is not None else UNKNOWN

    def _stream_arg(self, api: Api, receiver, args: _Args) -> tuple[Value, bool]:
        spec = api.arg("stream")
        if spec is None or not args.present(spec):
            return UNKNOWN, False
        return args.value(spec), True

    def _is_async(self, api: Api, receiver: Optional[Value], args: _Args) -> tuple[bool, Optional[Stream]]:
        mode = api.opt("async", "never")
        stream, given = self._stream_arg(api, receiver, args)
        current = self.current_stream[-1] if self.current_stream else None
        explicit = stream if isinstance(stream, Stream) else None
        remembered = receiver.stream if isinstance(receiver, Device) else None
        chosen = explicit or (remembered if mode == "stream-or-remembered" else None) or current
        if mode == "always":
            # An async API told to use the default stream (`stream=0`) asks for no overlap.
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
        if mode == "non-blocking":
            return args.value(api.arg("non_blocking")) == Const.of(True), chosen
        if mode == "flag":
            return args.value(api.arg("async_flag")) == Const.of(True), chosen
        raise ValueError(f"unknown async mode {mode!r} in the API table entry {api.name}")

    def _effect_copy(self, api: Api, node: cst.Call, receiver: Optional[Value], args: _Args) -> Value:
        direction = api.opt("direction")
        if direction == "kind-arg":
            direction, host = _direction_from_kind(args.value(api.arg("kind_arg")), args.value(api.arg("src")),
                                                   args.value(api.arg("dst")))
            if direction is None:
                return UNKNOWN
        else:
            host = self._arg_value(api.arg("host"), receiver, args)
        if direction == "d2h" and isinstance(self._arg_value(api.arg("device"), receiver, args), Host):
            # host.copy_(other_host): a CPU copy between host buffers, not a transfer.
            self._event(EventType.READ, node, self._arg_value(api.arg("device"), receiver, args))
            self._event(EventType.WRITE, node, host)
            return receiver if receiver is not None else UNKNOWN
        target_spec = api.arg("target_device")
        if target_spec is not None:
            # torch .to(x): a copy only when x names a device; a dtype makes a converted copy.
            target_expr = args.get(target_spec)
            target = _device_of(target_expr[1]) if target_expr else None
            if target_expr is None or target is None:
                dtype = canonical_dtype(target_expr[1]) if target_expr is not None else None
                if dtype is not None and isinstance(receiver, Host):
                    return self._convert(node, receiver, dtype, api.name, always_copy=False)  # t.to(torch.half)
                return UNKNOWN
            if direction == "h2d" and not target:
                return receiver if receiver is not None else UNKNOWN  # .to("cpu") of a host tensor
            if direction == "d2h" and target:
                return receiver if receiver is not None else UNKNOWN
        if api.opt("staged") and not isinstance(host, Host):
            # cupy.asarray of a device array or a Python list: no host buffer to speak of.
            return Device(api.opt("library", api.library)) if isinstance(host, (Device, Items, Const)) else UNKNOWN
        is_async, stream = self._is_async(api, receiver, args)
        dest_allocated = False
        if api.opt("returns") == "host-dest":
            out_spec = api.arg("out")
            if out_spec is not None and args.present(out_spec):
                host = args.value(out_spec)
            elif api.arg("host") is None:
                # The API allocates its own destination: pageable (torch: pinned when non_blocking).
                kind = Kind(api.opt("dest_kind_when_async", "pageable")) if is_async else Kind.PAGEABLE
                library = "torch" if api.library == "torch" else "numpy"
                site = self._site(node, kind, library, api.name, variant="dest", fresh_each_iteration=True)
                host = Host(frozenset([site]), library)
                dest_allocated = True
        stream_arg = args.get(api.arg("stream"))
        self._event(EventType.COPY, node, host, api=api.name, direction=direction, is_async=is_async,
                    stream=stream, dest_allocated=dest_allocated, staged=bool(api.opt("staged", False)),
                    library=api.library, stream_node=stream_arg[0] if stream_arg else None)
        returns = api.opt("returns")
        if returns == "device":
            stream_value = stream if api.opt("library", api.library) == "numba" else None
            return Device(api.opt("library", api.library), stream_value)
        if returns == "host-dest":
            return host
        return UNKNOWN

    def _effect_sync(self, api: Api, node, receiver, args: _Args) -> Value:
        target = api.opt("target")
        stream = None
        if target == "self":
            stream = receiver if isinstance(receiver, Stream) else None
        elif isinstance(api.arg("target"), ArgSpec):
            value = args.value(api.arg("target"))
            stream = value if isinstance(value, Stream) else None
        self._event(EventType.SYNC, node, api=api.name, stream=stream)
        return UNKNOWN

    def _new_stream(self, node, default: bool) -> Stream:
        stream = self.ctx.streams.get(node)
        if stream is None:
            stream = self.ctx.streams[node] = Stream(origin=node, default=default)
        return stream

    def _effect_stream(self, api: Api, node, receiver, args: _Args) -> Value:
        stream = self._new_stream(node, default=False)
        return Items((UNKNOWN, stream)) if api.opt("returns") == "err-tuple" else stream

    def _effect_default_stream(self, api: Api, node, receiver, args: _Args) -> Value:
        return self._new_stream(node, default=True)

    def _effect_current_stream(self, api: Api, node, receiver, args: _Args) -> Value:
        return self.current_stream[-1] if self.current_stream else self._new_stream(node, default=True)

    def _effect_stream_context(self, api: Api, node, receiver, args: _Args) -> Value:
        stream = args.value(api.arg("arg"))
        return Context(stream=stream) if isinstance(stream, Stream) else UNKNOWN

    def _effect_event(self, api: Api, node, receiver, args: _Args) -> Value:
        return Obj("event")

    def _effect_gpu_device(self, api: Api, node, receiver, args: _Args) -> Value:
        return Obj("gpu-device")

    def _effect_pool(self, api: Api, node, receiver, args: _Args) -> Value:
        return Obj("pool")

    def _effect_device_spec(self, api: Api, node, receiver, args: _Args) -> Value:
        device = _device_of(args.value(api.arg("arg")))
        return DeviceSpec(device)

    def _effect_loader(self, api: Api, node, receiver, args: _Args) -> Value:
        pin = args.keywords.get(api.opt("pin_kw"))
        if pin is None or pin[1] == Const.of(False):
            kind = Kind.PAGEABLE
        elif pin[1] == Const.of(True):
            kind = Kind.PINNED
        else:
            return UNKNOWN
        site = self._site(node, kind, "torch", api.name, fix=api.opt("fix") if kind is Kind.PAGEABLE else None,
                          fresh_each_iteration=True)
        return Loader(site)

    def _effect_register(self, api: Api, node: cst.Call, receiver, args: _Args) -> Value:
        kind = Kind(api.opt("kind", "pinned"))
        flags = api.arg("flags")
        if flags is not None and args.present(flags):
            # Registration never write-combines (bit 4 means I/O memory there); flags it cannot read
            # still leave the pages locked.
            kind = _apply_flags(kind, args.value(flags), registration=True) or Kind.PINNED
        spec = api.arg("arg")
        targets = list(args.positional) if spec is not None and spec.is_all else \
            ([args.get(spec)] if args.get(spec) is not None else [])
        registered = []
        for index, (expr, value) in enumerate(targets):
            if not isinstance(value, Host):
                root = _root_name(expr)
                if root is not None and not api.opt("context"):
                    self.env[root] = UNKNOWN  # pinned now, but what it holds is not known
                continue
            site = self._site(node, kind, value.library, api.name, variant=f"reg{index}")
            new_value = Host(frozenset([site]), value.library)
            self._event(EventType.REGISTER, node, new_value, api=api.name)
            root = _root_name(expr)
            if root is not None:
                registered.append((root, new_value))
        if api.opt("context"):
            return Context(registered=tuple(registered))
        for root, new_value in registered:
            self.env[root] = new_value  # registration pins the existing buffer in place
        if api.opt("returns") == "view":
            return registered[0][1] if registered else UNKNOWN
        return UNKNOWN


# ---------------------------------------------------------------------- helpers
def _target_key(node: cst.BaseExpression) -> Optional[str]:
    """Environment key for a name or a ``self.attr`` chain."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return None


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """``h`` for ``h``, ``h.ctypes.data``, ``h[:n]``; ``self.buf`` for ``self.buf.ctypes.data``."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            key = _target_key(node)
            if key and isinstance(node.value, cst.Name) and node.value.value in ("self", "cls"):
                return key
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return None


def _sites_of(value: Value) -> tuple[frozenset, bool]:
    if isinstance(value, Host):
        return value.sites, value.maybe_unknown
    return frozenset(), True


def _common(values):
    """The single value all items share, else None."""
    found = set(values)
    return found.pop() if len(found) == 1 else None


def _display(api: str, library: str) -> str:
    """Method names read as the receiver's class: a torch tensor's ``float`` is ``Tensor.float``."""
    return "Tensor." + api.split(".", 1)[1] if library == "torch" and api.startswith("ndarray.") else api


def _transposed(value: Host) -> Host:
    ndims = {s.ndim for s in value.sites}
    contiguous = value.contiguous if ndims == {1} else (False if ndims and all(n and n >= 2 for n in ndims) else None)
    return replace(value, contiguous=contiguous)


def _flatten(values) -> Iterator[Value]:
    for value in values:
        if isinstance(value, Items):
            yield from _flatten(value.items)
        else:
            yield value


_BUILTINS = frozenset(dir(builtins))
# Builtins that do not keep a reference to their arguments.
_NON_STORING_BUILTINS = frozenset({
    "print", "len", "float", "int", "bool", "str", "repr", "isinstance", "issubclass", "range", "enumerate",
    "zip", "sum", "min", "max", "id", "type", "hash", "abs", "round", "sorted", "any", "all", "format", "iter",
    "next", "reversed", "callable", "hasattr", "getattr", "divmod", "pow", "bytes", "bytearray", "complex",
    "list", "tuple", "set", "frozenset", "ord", "chr", "hex", "oct", "bin", "ascii", "vars", "dir"})


def _receiver_types(value: Value) -> list[str]:
    if isinstance(value, Host):
        return (["torch.host", "host", "any"] if value.library == "torch" else ["host", "any"])
    if isinstance(value, Device):
        return [f"{value.library}.device", "device", "any"]
    if isinstance(value, Stream):
        return ["stream", "any"]
    if isinstance(value, Obj):
        return [value.tag, "any"]
    return ["any"]


def _element_of(value: Optional[Value]) -> Value:
    if isinstance(value, Loader):
        return Host(frozenset([value.site]), "torch", batch=True)
    if isinstance(value, Iteration):
        return value.element
    if isinstance(value, Items) and value.items:
        element = value.items[0]
        for other in value.items[1:]:
            element = join(element, other)
        return element
    return UNKNOWN


def _truthy_stream(value: Value) -> bool:
    """A stream argument that is not the default stream: an explicit request for an async copy."""
    if isinstance(value, Stream):
        return not value.default
    if isinstance(value, Const):
        return all(bool(v) for v in value.values)
    return True  # an unknown stream object passed on purpose


def _device_of(value: Value) -> Optional[bool]:
    """True for a CUDA device, False for the CPU, None when it cannot be told."""
    if isinstance(value, DeviceSpec):
        return value.cuda if value.cuda is not None else True
    if isinstance(value, Const):
        answers = set()
        for option in value.values:
            if isinstance(option, bool):
                return None
            if isinstance(option, int):
                answers.add(True)
            elif isinstance(option, str) and _CUDA_DEVICE.match(option):
                answers.add(True)
            elif option == "cpu":
                answers.add(False)
            else:
                return None
        # "cuda" if available else "cpu": the code's intent on a GPU machine is the CUDA path.
        return True if True in answers else (False if answers else None)
    return None


def _apply_flags(kind: Kind, flags: Value, registration: bool = False) -> Optional[Kind]:
    if not isinstance(flags, Const) or not all(isinstance(v, int) for v in flags.values):
        return None
    results = set()
    for value in flags.values:
        mapped = bool(value & 2) or kind is Kind.MAPPED
        wc = bool(value & 4) and not registration
        results.add({(False, False): Kind.PINNED, (False, True): Kind.PINNED_WC,
                     (True, False): Kind.MAPPED, (True, True): Kind.MAPPED_WC}[(mapped, wc)])
    return results.pop() if len(results) == 1 else None


def _direction_from_kind(kind: Value, src: Value, dst: Value) -> tuple[Optional[str], Value]:
    code = kind.single if isinstance(kind, Const) else None
    if code == 1:
        return "h2d", src
    if code == 2:
        return "d2h", dst
    if code in (4, None):
        if isinstance(src, Host) and not isinstance(dst, Host):
            return "h2d", src
        if isinstance(dst, Host) and not isinstance(src, Host):
            return "d2h", dst
    return None, UNKNOWN


def _fold(operator, left: Value, right: Value) -> Optional[Value]:
    if not (isinstance(left, Const) and isinstance(right, Const)):
        return None
    a, b = left.single, right.single
    if not (isinstance(a, int) and isinstance(b, int)) or isinstance(a, bool) or isinstance(b, bool):
        return None
    try:
        if isinstance(operator, cst.Add):
            return Const.of(a + b)
        if isinstance(operator, cst.Subtract):
            return Const.of(a - b)
        if isinstance(operator, cst.Multiply):
            return Const.of(a * b)
        if isinstance(operator, cst.FloorDivide):
            return Const.of(a // b)
        if isinstance(operator, cst.LeftShift) and b < 64:
            return Const.of(a << b)
        if isinstance(operator, cst.RightShift):
            return Const.of(a >> b)
        if isinstance(operator, cst.BitOr):
            return Const.of(a | b)
        if isinstance(operator, cst.BitAnd):
            return Const.of(a & b)
        if isinstance(operator, cst.Power) and 0 <= b < 64:
            return Const.of(a ** b)
    except ZeroDivisionError:
        return None
    return None


def _element_count(shape: Value) -> Optional[int]:
    if isinstance(shape, Const) and isinstance(shape.single, int) and not isinstance(shape.single, bool):
        return shape.single
    if isinstance(shape, Items):
        count = 1
        for item in shape.items:
            if not (isinstance(item, Const) and isinstance(item.single, int)):
                return None
            count *= item.single
        return count
    return None


def canonical_dtype(value: Value) -> Optional[str]:
    """``np.float32``, ``torch.half``, ``"f4"``, ``"<f8"``, ``float`` -> a canonical name, else None."""
    if not isinstance(value, Const) or not isinstance(value.single, str):
        return None
    text = value.single
    if text.startswith("dtype:"):
        return _DTYPE_ATTRS.get(text[6:])
    if text.startswith("pytype:"):
        return _PY_TYPES.get(text[7:])
    return _DTYPE_CODES.get(text.lstrip("<>=|"))


# ------------------------------------------------------------------- scopes
def _functions(body: Sequence[cst.CSTNode], prefix: str) -> Iterator[tuple[str, cst.FunctionDef, Optional[str]]]:
    """Every function in a block, depth first: (qualified name, node, enclosing class name)."""
    for statement in body:
        yield from _functions_in(statement, prefix, None)


def _functions_in(node: cst.CSTNode, prefix: str, klass: Optional[str]):
    if isinstance(node, cst.FunctionDef):
        name = f"{prefix}{node.name.value}"
        yield name, node, klass
        for child in _body(node.body):
            yield from _functions_in(child, f"{name}.<locals>.", None)
    elif isinstance(node, cst.ClassDef):
        name = f"{prefix}{node.name.value}"
        for child in _body(node.body):
            yield from _functions_in(child, f"{name}.", name)
    elif not isinstance(node, cst.SimpleStatementLine):
        for block in child_blocks(node):
            for child in block:
                yield from _functions_in(child, prefix, klass)


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


def _single_assigned_globals(module: cst.Module) -> set[str]:
    """Module-level names assigned exactly once and never declared ``global`` in a function."""
    counts: dict[str, int] = {}
    for node in statements(module.body):
        if isinstance(node, cst.For):
            for name in _target_names(node.target):
                counts[name] = counts.get(name, 0) + 2  # rebound every iteration
    for small in small_statements(module.body):
        targets: list = []
        weight = 1
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            targets = [small.target]
        elif isinstance(small, cst.AugAssign):
            targets, weight = [small.target], 2
        for target in targets:
            for name in _target_names(target):
                counts[name] = counts.get(name, 0) + weight
    declared_global = {name.name.value for small in small_statements(module.body, into_definitions=True)
                       if isinstance(small, cst.Global) for name in small.names}
    return {name for name, count in counts.items() if count == 1 and name not in declared_global}


def _parameters(node: cst.FunctionDef) -> list[str]:
    params = node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def _parameter_env(node: cst.FunctionDef) -> dict:
    """Parameters are unknown; one whose default is ``0``/``None``/``False`` may well be left at it,
    so it stays "that constant or anything" (a ``stream=0`` parameter is not an async request)."""
    env: dict = {}
    params = node.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        default = param.default
        env[param.name.value] = UNKNOWN
        if isinstance(default, cst.Name) and default.value in ("None", "False"):
            env[param.name.value] = Const(frozenset([None if default.value == "None" else False, ANYTHING]))
        elif isinstance(default, cst.Integer) and default.value == "0":
            env[param.name.value] = Const(frozenset([0, ANYTHING]))
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            env[star.name.value] = UNKNOWN
    return env


def _run_scope(ctx: _FileContext, name: str, node: cst.CSTNode, body: Sequence[cst.CSTNode], env: dict,
               emit: bool = True) -> tuple[ScopeFacts, dict, Optional[Value]]:
    interpreter = _Interpreter(ctx, name, env)
    interpreter.emit = emit
    try:
        interpreter.run_block(body)
    except _Stop:
        pass
    return ScopeFacts(name, node, interpreter.events, ctx.if_arms), interpreter.env, interpreter.returned



def _class_attributes(ctx: _FileContext, functions) -> dict[str, dict]:
    """``self.x`` facts per class: the join of what every method of the class assigns to ``self.x``.

    ``__init__`` usually makes the buffers, but setup methods (``allocate_buffers``) are common too;
    a value is known only when every assignment in the class is known, so a method that rebinds the
    attribute to a parameter or an unknown call's result makes it unknown (precision first).
    """
    by_class: dict[str, list] = {}
    for qualified, node, klass in functions:
        if klass is not None and not _is_static(node) and _parameters(node):
            by_class.setdefault(klass, []).append((qualified, node))
    result: dict[str, dict] = {}
    for klass, methods in by_class.items():
        attributes: dict = {}
        for qualified, node in methods:
            params = _parameters(node)
            _, final, _ = _run_scope(ctx, qualified, node, _body(node.body), _parameter_env(node),
                                     emit=False)
            # Every `self.x` the method binds, by assignment or by registering it in place.
            prefix = params[0] + "."
            for key, value in final.items():
                if key.startswith(prefix):
                    attr = key[len(prefix):]
                    attributes[attr] = join(attributes[attr], value) if attr in attributes else value
        result[klass] = attributes
    return result


def analyze(module: cst.Module, tables: Optional[Tables] = None, imports: Optional[ImportMap] = None) -> FileFacts:
    tables = tables or default_tables()
    imports = imports or collect_imports(module)
    ctx = _FileContext(tables, imports)
    scopes: list[ScopeFacts] = []

    # The module body runs twice: once for the globals functions see, once (below) with the
    # functions' summaries, so module-level calls of local functions are understood.
    _, module_env, _ = _run_scope(ctx, "<module>", module, module.body, {}, emit=False)
    single = _single_assigned_globals(module)
    ctx.module_globals = {name: value for name, value in module_env.items()
                          if "." not in name and (name in single or isinstance(value, Function))}

    functions = list(_functions(module.body, ""))
    # Summaries of module-level functions (callees see no summaries: one level of calls): what they
    # return, and the pinned memory they allocate and drop on every call.
    for qualified, node, klass in functions:
        if klass is None and "." not in qualified:
            facts, _, returned = _run_scope(ctx, qualified, node, _body(node.body), _parameter_env(node))
            if returned is not None:
                ctx.summaries[node] = returned
            kept = frozenset(s for e in facts.events if e.type is EventType.ESCAPE and not isinstance(e.node, cst.Return)
                             for s in e.sites)
            returned_sites = returned.sites if isinstance(returned, Host) else frozenset()
            ctx.kept_inside[node] = kept
            inside = frozenset(s for e in facts.events
                               if e.type in (EventType.ALLOC, EventType.REGISTER) and not e.loops and not e.branch
                               and e.definitely(lambda site: site.kind.is_pinned)
                               for s in e.sites if s not in kept and s not in returned_sites)
            if inside:
                ctx.pinned_inside[node] = inside
    module_facts, _, _ = _run_scope(ctx, "<module>", module, module.body, {})
    scopes.append(module_facts)
    attributes = _class_attributes(ctx, functions)
    for qualified, node, klass in functions:
        params = _parameters(node)
        env = _parameter_env(node)
        if klass is not None and params and not _is_static(node):
            for attr, value in attributes.get(klass, {}).items():
                env[f"{params[0]}.{attr}"] = value
        facts, _, _ = _run_scope(ctx, qualified, node, _body(node.body), env)
        scopes.append(facts)
    loop_nodes = {loop_id: node for node, loop_id in ctx.ids.items() if loop_id in ctx.loop_branch_depth}
    return FileFacts(module, scopes, ctx.loop_branch_depth, loop_nodes)


def _is_static(node: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
               for d in node.decorators)
