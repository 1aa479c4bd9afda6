"""Calls of the checked code's own functions, methods and classes: across functions and modules.

Each function has a context-free analysis (its parameters unknown, or what their annotations say):
that is its own file's finding, and its *baseline*. A call whose arguments carry something the
callee could use (a buffer, a device array, a stream, an object of the checked code), or made while
copies are in flight, analyses the callee again with those values (memoised per function and
abstract arguments, so a summary per calling context). What the callee then does that its baseline
did not (an asynchronous copy of the caller's pageable buffer, a read of a buffer still being copied
into) is *lifted* to the call: reported where the evidence meets, with the callee's steps as a trace.
What flows back (the returned value, arguments it changed, copies left in flight) has the buffers
the callee allocated renamed to the call ("allocated by `make()`"), since every call allocates anew.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

import libcst as cst

from ..imports import dotted
from ..model import Event, EventType, IssuedBy, Kind, PendingCopy, Site, TraceStep, first_site, scoped_registration, site_order
from ..walk import class_body_small, code_nodes, code_parts, small_statements, suite_body, target_names
from . import doubles
from .domain import (ANYTHING, LOADER_PART, holds_memory, UNKNOWN, ClassRef, Const, Device, DeviceSpec, Function, GpuFlag, Host, Instance, Items, LibraryRef, Loader, Mapping,
                     ModuleRef, Scalar, Seq, Stream, Super, Tensor, Value, interesting, leaves, map_sites, all_sites,
                     mapping, unknown_host, flatten)
from . import placement
from .facts import on_one_iteration
from .invariance import body_bindings, function_changes, invariant, loop_changes, same_on_every_call
from .state import STREAM, iter_key, merge_pending


@dataclass(frozen=True)
class Outcome:
    """What one analysis of a function found: its recorded events and what flows back to a caller."""

    returned: Value
    pending: frozenset
    stream: Value
    events: tuple
    params: tuple = ()            # ((parameter, value at exit), ...) for parameters whose object it changed
    kept: frozenset = frozenset()  # sites it stores beyond the call (a cache, an attribute, a global)
    reachable: bool = True
    inputs: frozenset = frozenset()       # sites the call was given (arguments, copies in flight)
    own_inputs: frozenset = frozenset()   # of those, the ones the caller did not pass as arguments
    rebound: tuple = ()           # ((global name, value bound to it on the paths that reach the exit), ...)


@dataclass
class Invocation:
    """The chain of calls a run belongs to: its depth, the functions on the stack, and the budget of
    callee analyses shared by everything one file's analysis starts."""

    depth: int = 0
    stack: tuple = ()
    function: Optional[Function] = None
    budget: list = field(default_factory=lambda: [0])

    def child(self, function: Function) -> "Invocation":
        return Invocation(self.depth + 1, self.stack + (function.node,), function, self.budget)


# ------------------------------------------------------------------------------ calls
def call(ev, fn: Function, args, node: cst.Call, receiver_expr) -> Value:
    if fn.node.asynchronous is not None and node not in ev.awaited:
        # A coroutine made here runs later (a task, gather), perhaps beside others made the same
        # way: its body is not this call's, nor this loop iteration's. Awaited at once, it is.
        ev.escape(node, args.values())
        return UNKNOWN
    if _rewrapped(fn):
        # `@batched def kernel(data)`: the call runs the decorator's wrapper, which hands the body
        # other arguments than these (holotomocupy's chunking): the wrapper the decorator makes of
        # the body is what runs, as for `kernel = batched(_kernel)`; a decorator that gives back no
        # function of the checked code leaves the call unknown.
        wrapper = _decorated(ev, fn, node)
        if wrapper is not None:
            return call(ev, wrapper, args, node, receiver_expr)
        ev.escape(node, args.values(), handed=True)
        return UNKNOWN
    if doubles.replaced(ev.state.env, fn.node.name.value):
        # a mock runs instead (`with patch.object(enc, "encode"):`), or the test expects the call to
        # fail (`with pytest.raises(E):`): the body is not what runs (doubles.py)
        ev.escape(node, args.values(), handed=True)
        return UNKNOWN
    if _fails_to_bind(fn, args):
        # `upload(a, b)` of `def upload(src, other, out, streams)`: Python raises TypeError at the
        # call and the body never runs (a stale test of QuaTrEx): nothing it would do happens.
        ev.escape(node, args.values(), handed=True)
        return UNKNOWN
    env, exprs = bind_parameters(ev, fn, args, receiver_expr)
    _note_stepping_arguments(ev, env, exprs)
    env.update(_closure(ev, fn, env))
    for name, value in fn.captured:
        env.setdefault(name, value)
    for name, value in fn.captured_now:
        env.setdefault(name, value)  # a lambda handed to a callee that calls it at once (_run_at_once)
    for name, value in list(env.items()):
        if isinstance(value, Function) and value.captured_now and \
                not (isinstance(exprs.get(name), cst.Lambda) and _only_calls(fn, name)):
            # a lambda written as this very argument, to a callee that only calls it, runs before its
            # variables can change; kept in a name first, or kept by the callee, it may run later
            env[name] = replace(value, captured_now=())
    outcome = _invoke(ev, fn, env, node)
    if outcome is None:
        ev.escape(node, args.values(), handed=True)  # beyond what the analysis follows: an unknown call
        return UNKNOWN
    if fn.node.name.value == "__init__" and fn.klass is not None:
        outcome = _with_constant_fields(fn, outcome, env)  # `super().__init__(engine)`, as construct() does
    rename = _renamer(ev, fn, node, outcome)
    _copy_back(ev, outcome, exprs, rename, fn)
    returned = map_sites(outcome.returned, rename)
    _announce_allocations(ev, node, returned, outcome, fn)
    _keep_what_it_keeps(ev, fn, node, outcome, rename, receiver_expr)
    if not _body_runs_per_call(ev.module.project, fn):
        _note_resumed_changes(ev, node, outcome)
    return returned if outcome.reachable else UNKNOWN


def _note_stepping_arguments(ev, env: dict, exprs: dict) -> None:
    """A parameter given a loop's variable (``self.block(i, x)`` in ``for i in range(n)``, or ``i * k``)
    follows that loop in the callee as well: ``slab[layer]`` there is another layer on each iteration
    of the caller's loop, as ``slab[i]`` is written in the loop (and so down a chain of calls)."""
    from .evaluator import LOOP_VARIABLE
    for name, expr in exprs.items():
        if name not in env or not isinstance(expr, cst.BaseExpression):
            continue
        loops = ev._stepping(expr)
        if len(loops) == 1:
            env[LOOP_VARIABLE + name] = Const.of(next(iter(loops)))


def _keep_what_it_keeps(ev, fn: Function, node, outcome: Outcome, rename, receiver_expr) -> None:
    """The buffers the callee keeps beyond the call (a cache on its object: ``self._sino =
    alloc_pinned(shape)`` under ``if self._sino is None``) are kept by this scope's call too: a caller of
    this scope sees a cache, not a buffer made on every call (model_mosaic's ``R()``, survey 34). On an
    object this loop makes anew each iteration (``op = Op(n)`` in the loop), the cache goes with the
    object: allocated by the call, each iteration."""
    # Its own buffers and its object's (a cache the class's fields already know of), not what the
    # caller handed over to keep (`obj.store(h)`: h was made where the caller made it).
    passed = outcome.inputs - outcome.own_inputs
    kept = frozenset(rename(s) for s in outcome.kept if s not in passed and s.scope != "<module>")
    if not kept:
        return
    if not _made_each_iteration(ev, receiver_expr):
        ev.event(EventType.ESCAPE, node, Host(kept, first_site(kept).library))
        return
    sites = frozenset(Site(kind=s.kind, library=s.library, api=f"{_call_name(fn)}()", node=node, loops=ev.loops,
                           nbytes=s.nbytes, max_nbytes=s.max_nbytes, pooled=s.pooled, scope=ev.scope,
                           via=frozenset([s]), variant="call",
                           module=ev.module.info) for s in kept)
    ev.event(EventType.ALLOC, node, Host(sites, first_site(sites).library), api=f"{_call_name(fn)}()")


def _made_each_iteration(ev, receiver_expr) -> bool:
    """The receiver is a name the body of the innermost loop around the call assigns (``op = Op(n);
    op.R(x)``), not the loop's own variable (``for m in models: m.load()`` walks objects made before)."""
    loop = ev.loops[-1] if ev.loops else None
    if not isinstance(receiver_expr, cst.Name) or not isinstance(loop, (cst.For, cst.While)):
        return False
    from .invariance import loop_changes
    targets = set(target_names(loop.target)) if isinstance(loop, cst.For) else set()
    name = receiver_expr.value
    return name in loop_changes(loop, ev.module.project.changes).bound - targets and not _kept_by_the_loop(loop, name)


def _kept_by_the_loop(loop, name: str) -> bool:
    """The loop's body keeps the object it made (``layers.append(layer)``, ``self.cache[k] = layer``):
    what the object holds outlives the iteration (UMbreLLa's offloaded layers, survey 20)."""
    for node in code_nodes(loop.body, into_definitions=False):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in ("append", "add", "insert", "appendleft", "put", "setdefault") and \
                any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in node.args):
            return True
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == name and \
                any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets):
            return True
    return False


def _note_resumed_changes(ev, node, outcome: Outcome) -> None:
    """A generator that changes objects (``self.state.pull()`` before each ``yield``): their classes,
    kept for the loop that iterates this call, where the changes happen again on every iteration."""
    classes = set()
    for _, value in outcome.params:
        todo = [value]
        while todo:
            item = todo.pop()
            if isinstance(item, Instance):
                # only an object the generator gave buffers it made itself (not one it was given)
                if any(isinstance(v, Host) and v.sites - outcome.inputs for _, v in item.fields):
                    classes.add(item.klass)
                todo.extend(v for _, v in item.fields)
    if classes:
        project = ev.module.project
        project.resumed_changes[node] = project.resumed_changes.get(node, frozenset()) | frozenset(classes)


_REWRAPPED: dict = {}


def _decorated(ev, fn: Function, node) -> Optional[Function]:
    """What ``@decorator`` made of ``fn``: the decorator (a function of the checked code, the only
    one on ``fn``) called with the undecorated body; None when that is no function of the checked code."""
    decorators = fn.node.decorators
    expression = decorators[0].decorator if len(decorators) == 1 else None
    from .effects import Args
    if isinstance(expression, cst.Call) and isinstance(expression.func, cst.Name) and \
            not any(arg.star for arg in expression.args):
        # `@staged(8)`: the factory, called with what the decorator line gives it, makes the decorator
        factory = _named_function(fn.module, expression.func.value)
        if not isinstance(factory, Function):
            return None
        given = Args(tuple((arg.value, literal(arg.value)) for arg in expression.args if arg.keyword is None),
                     {arg.keyword.value: (arg.value, literal(arg.value)) for arg in expression.args
                      if arg.keyword is not None}, False)
        decorator = call(ev, factory, given, node, None)
    elif isinstance(expression, cst.Name):
        decorator = _named_function(fn.module, expression.value)
    else:
        return None
    if not isinstance(decorator, Function):
        return None
    body = replace(fn, undecorated=True)
    made = call(ev, decorator, Args(((node, body),), {}, False), node, None)
    return made if isinstance(made, Function) and not made.undecorated and made.node is not fn.node else None


def _rewrapped(fn: Function) -> bool:
    """A function decorated by a plain decorator of the checked code whose wrapper does not pass its
    own arguments through to the function as they came (``return func(*args, **kwargs)`` does)."""
    node = fn.node
    if fn.undecorated or not isinstance(node, cst.FunctionDef) or not node.decorators:
        return False
    found = _REWRAPPED.get(node)
    if found is None:
        found = _REWRAPPED[node] = any(_rewraps(fn, d.decorator) for d in node.decorators)
    return found


def _rewraps(fn: Function, expression) -> bool:
    factory = isinstance(expression, cst.Call)
    if factory:
        expression = expression.func  # `@staged(8)`: the decorator is what the factory defines and returns
    if not isinstance(expression, cst.Name) or not hasattr(fn.module, "global_value"):
        return False
    decorator = _named_function(fn.module, expression.value)
    if not isinstance(decorator, Function) or not isinstance(decorator.node, cst.FunctionDef):
        return False
    node = decorator.node
    if factory:
        inner = _nested_functions(node)
        if len(inner) != 1:
            return False
        node = inner[0]
    return _wrapper_rewraps(node)


def _named_function(ctx, name: str) -> Optional[Value]:
    """What a decorator's name is in the module: a function it defines, or one of the checked code it
    imports (`from pkg.chunking import gpu_batch`)."""
    found = ctx.global_value(name)
    if found is None and ctx.imports.lookup(name) is not None:
        qualified = ctx.imports.qualify(cst.Name(name))
        if qualified is not None and ctx.tables.library_of(qualified) is None:
            found = ctx.project.resolve(qualified, ctx)
    return found


def _nested_functions(node: cst.FunctionDef) -> list:
    """The functions a function's own body defines (a decorator's wrapper, a factory's decorator)."""
    return [n for n in suite_body(node.body) if isinstance(n, cst.FunctionDef)]


def _wrapper_rewraps(decorator: cst.FunctionDef) -> bool:
    params = decorator.params.params
    if len(params) != 1:
        return False
    wrapped = params[0].name.value
    inner = _nested_functions(decorator)
    if len(inner) != 1:
        return False
    wrapper = inner[0]
    star = wrapper.params.star_arg.name.value if isinstance(wrapper.params.star_arg, cst.Param) else None
    stars = wrapper.params.star_kwarg.name.value if wrapper.params.star_kwarg is not None else None
    names = [p.name.value for p in wrapper.params.params]
    for call in _calls_of(wrapper, wrapped):
        passed = [(a.star, a.value.value if isinstance(a.value, cst.Name) else None) for a in call.args if a.keyword is None]
        expected = [("", n) for n in names] + ([("*", star)] if star else []) + ([("**", stars)] if stars else [])
        if passed == expected:
            return False  # passes its arguments through: the body runs with the caller's arguments
    return True


def _calls_of(function: cst.FunctionDef, name: str) -> list:
    found, todo = [], [function.body]
    while todo:
        item = todo.pop()
        if isinstance(item, cst.Call) and isinstance(item.func, cst.Name) and item.func.value == name:
            found.append(item)
        todo.extend(code_parts(item))
    return found


def construct(ev, cls: ClassRef, args, node: cst.Call) -> Value:
    project = ev.module.project
    info = project.class_info(cls)
    instance = Instance(cls, ())
    if doubles.replaced(ev.state.env, cls.node.name.value):
        ev.escape(node, args.values(), handed=True)  # a mock class, or a construction expected to fail
        return UNKNOWN
    init = info.lookup("__init__", record=False) if info is not None else None
    if init is None:
        loader = library_loader(ev, info, node, args)
        if loader is not None:
            return instance.with_fields({LOADER_PART: loader})
        if info is not None and info.fields is not None:
            # A dataclass or NamedTuple: the constructor stores its arguments in the fields.
            values = dict(zip(info.fields, (v for _, v in args.positional)))
            values.update({k: v for k, (_, v) in args.keywords.items() if k in info.fields})
            if not args.star:
                for name in info.fields:
                    if name not in values:  # left at its default (`Settings()`): the class body's constant
                        default = _read_class_attribute(ev, cls, name)
                        if isinstance(default, Const):
                            values[name] = default
            ev.escape(node, args.values(), into_object=True)
            return instance.with_fields(values)
        ev.escape(node, args.values())
        return instance
    fn = function_value(init, bound=instance)
    env, exprs = bind_parameters(ev, fn, args, None)
    outcome = _invoke(ev, fn, env, node)
    if outcome is None:
        ev.escape(node, args.values())
        return instance
    rename = _renamer(ev, fn, node, outcome)
    _copy_back(ev, outcome, exprs, rename, fn)
    self_name = _self_name(init.node)
    after = dict(outcome.params).get(self_name, instance) if self_name else instance
    if not isinstance(after, Instance):
        return instance
    return placement.made(ev, _constant_fields(map_sites(after, rename), init.node, self_name, env,
                                               _forwarded_fields(project, init.owner, init.node, self_name)))


def library_loader(ev, info, node: cst.Call, args) -> Optional[Value]:
    """The DataLoader an object of a subclass of one (``class LoaderX(DataLoader)``, whose ``__init__``
    is the library's, or whose own ``__init__`` calls ``super().__init__(...)``) is, made from the
    arguments the library's ``__init__`` gets; None for a class with no DataLoader base."""
    api = _loader_base_api(ev, info)
    if api is None:
        return None
    from .effects import apply
    return apply(ev, api, node, None, args)


def _loader_base_api(ev, info):
    """The table entry of the DataLoader class among the library bases of a class, if any."""
    if info is None:
        return None
    for base in info.library_classes():
        api = ev.tables.functions.get(base)
        if api is not None and api.effect == "loader":
            return api
    return None


def _with_constant_fields(fn: Function, outcome: Outcome, env: dict) -> Outcome:
    """A base class's ``__init__`` run on the caller's object (``super().__init__(engine)``): the
    constants and objects it stores as given, as for a construction (``_constant_fields``)."""
    self_name = _self_name(fn.node)
    params = dict(outcome.params)
    after = params.get(self_name) if self_name else None
    if not isinstance(after, Instance):
        return outcome
    patched = _constant_fields(after, fn.node, self_name, env,
                               _forwarded_fields(fn.module.project, fn.klass, fn.node, self_name))
    if patched is after:
        return outcome
    params[self_name] = patched
    return replace(outcome, params=tuple(sorted(params.items(), key=lambda kv: kv[0])))


def _constant_fields(after: Instance, init: cst.FunctionDef, self_name: str, env: dict,
                     forwarded: Optional[dict] = None) -> Instance:
    """``Slot(n, writeback=False)``: a constant argument that ``__init__`` stores as it is in a field
    (``self.writeback = writeback``) is that constant in this object's field, and so is an object of the
    checked code (``Instance(handler)``, whose methods then call ``self.handler.predict(x)``). The constructor's
    analysis for its callers at large (used when none of its own tests depends on the argument,
    to spare analyses) only says "False or anything"."""
    updates = {}
    stored = dict(forwarded or {})
    stored.update(_stored_parameters(init, self_name))
    for field_name, param in stored.items():
        value = env.get(param)
        current = after.field(field_name)
        if isinstance(value, Const) and ANYTHING not in value.values and \
                (current is UNKNOWN or isinstance(current, Const) and ANYTHING in current.values):
            updates[field_name] = value
        elif isinstance(value, Instance) and current is UNKNOWN:
            updates[field_name] = value  # `Instance(handler)` keeping `self.handler = handler`: that object
        elif isinstance(value, (LibraryRef, ModuleRef)) and current is UNKNOWN:
            # `Lib("pycuda", drv)` keeping `self.mod = mod`: calls through `self.cu.mod` are that
            # library's (a multi-backend runner's holder, survey 57 GA)
            updates[field_name] = value
    return after.with_fields(updates) if updates else after


_STORED: dict = {}
_FORWARDED: dict = {}


def _forwarded_fields(project, klass, init: cst.FunctionDef, self_name: Optional[str], depth: int = 0) -> dict:
    """field -> parameter, for parameters ``__init__`` hands on as they are to its base class's
    ``__init__`` (``super().__init__(engine, count)``) that stores them in fields (``self.engine =
    engine``), down the bases."""
    if klass is None or self_name is None or depth > 4:
        return {}
    key = (init, klass)
    found = _FORWARDED.get(key)
    if found is not None:
        return found
    found = _FORWARDED[key] = {}
    info = project.class_info(klass)
    base_init = info.lookup("__init__", after_self=True, record=False) if info is not None else None
    call = _super_init_call(init, self_name)
    if base_init is None or call is None or base_init.kind != "method":
        return found
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    rebound = body_bindings(init)
    base_params = [p.name.value for p in (*base_init.node.params.posonly_params, *base_init.node.params.params)]
    base_self = base_params[0] if base_params else None
    given = _base_init_arguments(call, base_params)
    inner = dict(_forwarded_fields(project, base_init.owner, base_init.node, base_self, depth + 1))
    inner.update(_stored_parameters(base_init.node, base_self) if base_self else {})
    for field_name, base_param in inner.items():
        expr = given.get(base_param)
        if isinstance(expr, cst.Name) and expr.value in params and expr.value not in rebound:
            found[field_name] = expr.value
    return found


def _base_init_arguments(call: cst.Call, base_params: list) -> dict:
    """The base ``__init__``'s parameter -> the expression ``super().__init__(...)`` (or
    ``Base.__init__(self, ...)``) gives it."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if isinstance(call.func.value, cst.Name):
        positional = positional[1:]  # `Base.__init__(self, a)`: self given explicitly
    given = {name: arg.value for name, arg in zip(base_params[1:], positional)}
    given.update({arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None})
    return given


def _super_init_call(init: cst.FunctionDef, self_name: str) -> Optional[cst.Call]:
    """The ``super().__init__(...)`` (or ``super(C, self).__init__``, ``Base.__init__(self, ...)``)
    statement at the top level of ``__init__``'s body, if there is one."""
    for statement in suite_body(init.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            call = small.value if isinstance(small, cst.Expr) else None
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and
                    call.func.attr.value == "__init__"):
                continue
            owner = call.func.value
            if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value == "super":
                return call
            if isinstance(owner, cst.Name) and call.args and isinstance(call.args[0].value, cst.Name) and \
                    call.args[0].value.value == self_name:
                return call
    return None


def _stored_parameters(init: cst.FunctionDef, self_name: str) -> dict:
    """field -> parameter, for ``self.f = p`` statements at the top of ``__init__``'s body (on every
    path) of a parameter it never rebinds, and fields it assigns nowhere else in its body."""
    found = _STORED.get(init)
    if found is not None:
        return found
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    rebound = body_bindings(init)
    counts: dict = {}
    direct: dict = {}
    for small in small_statements(suite_body(init.body), into_definitions=True):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else []
        for target in targets:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == self_name:
                counts[target.attr.value] = counts.get(target.attr.value, 0) + 1
    for statement in suite_body(init.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Name):
                target = small.targets[0].target
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                        target.value.value == self_name and small.value.value in params and \
                        small.value.value not in rebound:
                    direct[target.attr.value] = small.value.value
    found = _STORED[init] = {f: p for f, p in direct.items() if counts.get(f) == 1}
    return found


def _invoke(ev, fn: Function, env: dict, node) -> Optional[Outcome]:
    project = ev.module.project
    if project._observing and type(fn.bound) is Instance:
        # A method run on an object as its class dispatches it (not a super() call, which goes where the
        # caller's class says): what the object's class resolves the name to matters (fields.py).
        name = fn.node.name.value
        info = project.class_info(fn.bound.klass)
        found = info.lookup(name, record=False) if info is not None else None
        if found is not None and (found.node is fn.node or found.setter is fn.node):
            project._observing[-1].add(("call", fn.bound.klass, name))
    stream = ev.state.env.get(STREAM)
    contextual = bool(ev.state.pending) or (isinstance(stream, Stream) and not stream.default) or \
        any(interesting(v) for v in env.values())
    patched = ev.state.env.get(doubles.PATCHED)
    if patched is not None:
        # what mocks replace stays replaced in the callee (`flow.emit(frames)` under a patch of the
        # encoder's `encode`, which `emit` calls): an analysis of its own
        env = {**env, doubles.PATCHED: patched}
        contextual = True
    baseline = project.baseline(fn, ev.invocation)
    if not contextual and _names_a_module_it_loads(fn, env):
        contextual = True  # _load("cuda.bindings.runtime") around importlib.import_module(name)
    if not contextual and _no_keywords_given(fn, env):
        # `mem.transfer_freqs_to_gpu()` into `def ...(self, **kwargs): f = kwargs.get("f", self.f)`:
        # with no keyword given, each `kwargs.get(key, default)` is its default. Every such call
        # gives the callee the same empty mapping, so this costs one analysis per callee at most
        # (with the other arguments as they are), and only for a callee that does something.
        contextual = baseline is None or not _does_nothing(baseline)
    if not contextual and _gives_a_deciding_keyword(fn, env):
        contextual = True
    if not contextual and _sizes_what_it_returns(fn, env, baseline):
        contextual = True
    if not contextual and _names_a_device(fn, env, baseline):
        contextual = True  # `render("cuda")` into `x.to(device)`: with the device named, the copy is one
    if not contextual and _dispatches_otherwise(ev, fn):
        contextual = True  # a base's `bench()` run on a subclass's object: its `self.prepare()` is the subclass's
    if not contextual and _makes_a_library_loader(ev, fn):
        contextual = True  # `super().__init__(dataset, **kwargs)`: the loader is made of what the call gives
    if not contextual and _looks_up_numbers(env, baseline):
        contextual = True
    if not contextual and any(isinstance(env.get(name), Instance) for name in _returned_parameters(fn)):
        contextual = True  # `net = wrap_for_ddp(net)`: hands back the object it was given
    if not contextual and _walks_one_item(fn, env):
        contextual = True  # `build([{"h": 200}])` looping over its parameter: one pass, one-item results
    if not contextual and _calls_its_methods(fn, env):
        contextual = True  # `validate(model, data)` calling `model.parse_batch(batch)`
    if not contextual and _decides_a_test(fn, env):
        # Leaving arms aside helps only a callee that does something the analysis follows: one whose
        # baseline has no event and gives back nothing of interest gives nothing more on fewer paths
        # (pytorch-lightning's tests call `Trainer(max_epochs=1, ...)` with a few hundred different
        # constants, and each analysed the trainer's set-up again: a third of its cold run).
        contextual = baseline is None or not _does_nothing(baseline) or _leaves_an_undecided_device(baseline) or \
            _builds_what_it_walks(fn, env)
    if not contextual:
        if baseline is None:
            return None
        if ev.emit:
            _lift_carried_copies(ev, fn, node, baseline)
        _apply_flow(ev, fn, node, baseline)
        return baseline
    outcome = project.invoke(fn, env, ev.state.pending, stream, ev.invocation)
    if outcome is None:
        if baseline is None or fn.node in ev.invocation.stack:
            return None
        _apply_flow(ev, fn, node, baseline)  # past the analysis budget: what the callee does anyway
        return baseline
    _lift(ev, fn, node, outcome, baseline)
    _apply_flow(ev, fn, node, outcome)
    return outcome


def _sizes_what_it_returns(fn: Function, env: dict, baseline: Optional[Outcome]) -> bool:
    """A constant integer argument given to a function that returns a buffer it allocates (or keeps it
    in an object it was given, a constructor's ``self``) of a size its analysis for callers at large
    cannot tell (``def _param(name, nbytes): return name,
    torch.zeros(nbytes)``): analysed with the constant, the buffer has its size, and PIN001's and
    PIN007's thresholds apply to it."""
    if baseline is None:
        return False
    constants = {name for name, v in env.items() if isinstance(v, Const) and v.values and
                 all(isinstance(n, int) and not isinstance(n, bool) for n in v.values) or _numbers(v)}
    if not constants or not constants & _body_names(fn):
        return False
    kept = [baseline.returned] + [value for _, value in baseline.params]  # returned, or kept in `self`
    # A buffer a helper further down made (`make_engine(max_seqs=1)` building `Engine(max_seqs=max_seqs)`,
    # or `np.array([lookup(c, table) ...])` two calls away) is sized by the same numbers, given on: its
    # calls are followed with them too.
    return any(site.nbytes is None and (not site.via or not site.python_numbers) for value in kept for site in all_sites(value))


_RETURNED_PARAMETERS: dict = {}


def _returned_parameters(fn: Function) -> frozenset:
    """Parameters the function returns as they are (`return module`), in a returned tuple (`return
    model, args`), or through a method that returns the object itself (`return model.cuda(gpu)`),
    never rebinding them: what a caller gives is what it gets back, which the analysis for callers at
    large cannot know (DepthContrast's `distribute_model_to_cuda`, survey 50 Y)."""
    found = _RETURNED_PARAMETERS.get(fn.node)
    if found is None:
        params = fn.node.params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        # methods of a library base class that return the object itself (python.toml's `returns_self`)
        self_returning = {m for methods in fn.module.tables.python.get("returns_self", {}).values() for m in methods}
        returned = set()
        for r in _returns(fn.node):
            values = [e.value for e in r.value.elements] if isinstance(r.value, cst.Tuple) else [r.value]
            for value in values:
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                        value.func.attr.value in self_returning:
                    value = value.func.value
                if isinstance(value, cst.Name):
                    returned.add(value.value)
        found = _RETURNED_PARAMETERS[fn.node] = frozenset((returned & names) - body_bindings(fn.node))
    return found


def _returns(node: cst.FunctionDef) -> list:
    """The function's own ``return`` statements (not its nested definitions')."""
    return [small for small in small_statements(suite_body(node.body)) if isinstance(small, cst.Return)]


def _looks_up_numbers(env: dict, baseline: Optional[Outcome]) -> bool:
    """A table of numbers given to a helper that, for callers at large, returns something unknown
    (``lookup(code, table)`` returning ``table["code2id"][code]``): with the table, it returns a
    number, and an array built of such numbers is one of Python numbers (small, whatever its count)."""
    return baseline is not None and baseline.returned is UNKNOWN and \
        any(isinstance(v, (Mapping, Items, Seq)) and _numbers(v) for v in env.values())


def _numbers(value) -> bool:
    """A number nothing pins down (``len(codes)``) or a container of numbers (a lookup table
    ``{"unk": len(codes), "code2id": {...}}``): what a callee builds from it is made of Python numbers."""
    if isinstance(value, Scalar):
        return True
    if isinstance(value, (Mapping, Items, Seq)):
        found = leaves(value)
        return bool(found) and all(isinstance(leaf, Scalar) or isinstance(leaf, Const) and leaf.values and
                                   all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in leaf.values)
                                   for leaf in found)
    return False


def _does_nothing(outcome: Outcome) -> bool:
    """Whether an analysis found nothing a caller could use: no event, no copy left in flight, no
    stream set, and nothing of interest returned or left in an argument."""
    return not outcome.events and not outcome.pending and not isinstance(outcome.stream, Stream) and \
        not interesting(outcome.returned) and not any(interesting(v) for _, v in outcome.params) and \
        not _picks_a_library(outcome.returned) and not any(_picks_a_library(v) for _, v in outcome.params)


def _picks_a_library(value: Value) -> bool:
    """A library module among what a call gives back (``xp = cupy if cuda else numpy``, kept in a
    field or returned): which one its arguments pick decides what the caller's `xp.asarray(h)` does,
    though no buffer is involved (radio-core's blocks, survey 51 AX)."""
    from .domain import Alternatives, LibraryRef
    return any(isinstance(leaf, LibraryRef) or isinstance(leaf, Alternatives) and
               any(isinstance(o, LibraryRef) for o in leaf.options) for leaf in leaves(value))


def _calls_its_methods(fn: Function, env: dict) -> bool:
    """An object of the checked code given for a parameter (not the method's own ``self``) on which
    the callee calls a method its class defines: what that method does with the callee's buffers is
    known only with the object (a `validate(model, ...)` whose loop runs `model.parse_batch(batch)`)."""
    called = _methods_called_on_parameters(fn)
    project = fn.module.project
    for name, methods in called.items():
        value = env.get(name)
        if not isinstance(value, Instance):
            continue
        info = project.class_info(value.klass)
        if info is not None and any(info.lookup(m, record=False) is not None for m in methods):
            return True
    return _calls_methods_of_its_fields(fn, env)


def _calls_methods_of_its_fields(fn: Function, env: dict) -> bool:
    """A method calling a method of an object its receiver holds in a field (``self.handler.predict(x)``)
    where what the field holds is known only from this receiver's construction (``Instance(handler)``:
    the class's fields, joined over every construction, do not tell it): the call runs with that object."""
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    if fn.klass is None or not params:
        return False
    receiver = env.get(params[0].name.value)
    if not isinstance(receiver, Instance) or not receiver.fields:
        return False
    called = _methods_called_on_fields(fn, params[0].name.value)
    if not called:
        return False
    project = fn.module.project
    summary = dict(project.class_fields(receiver.klass))
    for field_name, methods in called.items():
        value = receiver.field(field_name)
        if not isinstance(value, Instance) or summary.get(field_name) == value:
            continue
        info = project.class_info(value.klass)
        if info is not None and any(info.lookup(m, record=False) is not None for m in methods):
            return True
    return False


def _methods_called_on_fields(fn: Function, receiver: str) -> dict:
    """{field: names of the methods the body calls on it} (``self.handler.predict(...)``)."""
    prefix = receiver + "."
    return {key[len(prefix):]: names for key, names in _method_calls(fn).items() if key.startswith(prefix)}


def _methods_called_on_parameters(fn: Function) -> dict:
    """{parameter: names of the methods the body calls on it} (``p.m(...)``), the first parameter of a
    method (its ``self`` or ``cls``) left out."""
    params = [p.name.value for p in (*fn.node.params.posonly_params, *fn.node.params.params,
                                     *fn.node.params.kwonly_params)]
    if params and fn.bound is not None or params and params[0] in ("self", "cls"):
        params = params[1:]
    calls = _method_calls(fn)
    return {name: calls[name] for name in params if name in calls}


def _method_calls(fn: Function) -> dict:
    """{receiver as written: names of the methods the body calls on it}, for ``p.m(...)`` and
    ``self.f.m(...)``; kept per function."""
    cache = fn.module.project.called_methods
    found = cache.get(fn.node)
    if found is None:
        found = {}
        for node in code_nodes(fn.node.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                receiver = node.func.value
                key = receiver.value if isinstance(receiver, cst.Name) else \
                    f"{receiver.value.value}.{receiver.attr.value}" if isinstance(receiver, cst.Attribute) and \
                    isinstance(receiver.value, cst.Name) else None
                if key is not None:
                    found.setdefault(key, set()).add(node.func.attr.value)
        cache[fn.node] = found
    return found


def _leaves_an_undecided_device(outcome: Outcome) -> bool:
    """An analysis that leaves in an object a device it could not decide (``self.device =
    torch.device("cuda" if on_gpu else "cpu")``, a GPU-run flag): the constant a caller passes may
    decide it (``Runner(device="cpu")``), and with it whether the object's methods copy at all."""
    def undecided(value) -> bool:
        if isinstance(value, Const):  # "cuda" or "cpu"
            names = [v for v in value.values if isinstance(v, str)]
            return any(v.startswith("cuda") for v in names) and not all(v.startswith("cuda") for v in names)
        return isinstance(value, GpuFlag) or isinstance(value, DeviceSpec) and value.cuda is None

    return any(isinstance(value, Instance) and any(undecided(v) for _, v in value.fields)
               for _, value in outcome.params)


_DEVICE_NAME = re.compile(r"(cuda|cpu)(:\d+)?\Z")


def _names_a_device(fn: Function, env: dict, baseline: Optional[Outcome]) -> bool:
    """A device written as a string (``"cuda"``, ``"cuda:0"``, ``"cpu"``) given to a parameter the
    callee moves data to (``x.to(device)``, ``device=device``): analysed with it, a blocking copy
    there is an upload (or none at all), as with ``torch.device("cuda")``, which is a device object
    and shares no analysis anyway. One analysis per device string and callee."""
    if baseline is None or _does_nothing(baseline):
        return False
    named = [name for name, v in env.items() if isinstance(v, Const) and isinstance(v.single, str) and
             _DEVICE_NAME.match(v.single)]
    return bool(named) and bool(set(named) & _device_parameters(fn))


def _dispatches_otherwise(ev, fn: Function) -> bool:
    """A method inherited from a base class of the checked code, run on an object of a subclass whose
    class resolves one of the method's ``self.name(...)`` calls to another method than the base's
    (a hook only the subclass defines, or overrides): the analysis for the base's objects does not
    say what it does here (a benchmark loop in the base calling the subclass's upload, survey 57 GA).
    One analysis per subclass."""
    bound = fn.bound
    if type(bound) is not Instance or fn.klass is None or fn.kind != "method" or bound.klass == fn.klass:
        return False
    project = ev.module.project
    key = (fn.node, bound.klass)
    found = project.subclass_dispatch.get(key)
    if found is None:
        found = project.subclass_dispatch[key] = _resolves_otherwise(project, fn, bound.klass)
    return found


def _resolves_otherwise(project, fn: Function, subclass) -> bool:
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    if not params:
        return False
    names = _method_calls(fn).get(params[0].name.value, ())
    sub, base = project.class_info(subclass), project.class_info(fn.klass)
    if sub is None or base is None:
        return False
    for name in names:
        mine, theirs = sub.lookup(name, record=False), base.lookup(name, record=False)
        if (mine.node if mine is not None else None) is not (theirs.node if theirs is not None else None):
            return True
    return False


def _makes_a_library_loader(ev, fn: Function) -> bool:
    """The ``__init__`` of a DataLoader subclass of the checked code: the library's loader it makes
    (``super().__init__(dataset, *args, **kwargs)``) takes its batch size, collate function and
    ``pin_memory`` from what each construction gives, which the analysis for callers at large leaves
    unknown (a mapping of unknown keys). One analysis per construction."""
    if fn.klass is None or fn.node.name.value != "__init__":
        return False
    return _loader_base_api(ev, ev.module.project.class_info(fn.klass)) is not None


def _device_parameters(fn: Function) -> frozenset:
    """The names the function's body moves data to: ``.to(name)``, ``.to(device=name)``, ``.cuda(name)``,
    or passes as ``device=name``."""
    cache = fn.module.project.device_parameters
    found = cache.get(fn.node)
    if found is None:
        names = set()
        for node in code_nodes(fn.node.body):
            if not isinstance(node, cst.Call):
                continue
            method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            for index, arg in enumerate(node.args):
                if not isinstance(arg.value, cst.Name):
                    continue
                if arg.keyword is not None and arg.keyword.value == "device" or \
                        arg.keyword is None and index == 0 and method in ("to", "cuda"):
                    names.add(arg.value.value)
        found = cache[fn.node] = frozenset(names)
    return found


def _names_a_module_it_loads(fn: Function, env: dict) -> bool:
    """A string argument naming a library module, given to a function that loads modules by name (a
    project's import shim): its analysis with the string gives the module back."""
    tables = fn.module.tables
    if not any(isinstance(v, Const) and isinstance(v.single, str) and tables.library_of(v.single) is not None
               for v in env.values()):
        return False
    return "import_module" in _body_names(fn)


def _no_keywords_given(fn: Function, env: dict) -> bool:
    """The call fills the callee's ``**kwargs`` with nothing, and the callee reads keys of it."""
    star = fn.node.params.star_kwarg
    if not isinstance(star, cst.Param):
        return False
    given = env.get(star.name.value)
    if not (isinstance(given, Mapping) and not given.entries and given.rest is None):
        return False
    return star.name.value in _body_names(fn)


def _body_names(fn: Function) -> frozenset:
    """Every name the function's body mentions (nested definitions too), kept per function."""
    cache = fn.module.project.body_names
    found = cache.get(fn.node)
    if found is None:
        names: set = set()
        _add_names(fn.node.body, names)
        found = cache[fn.node] = frozenset(names)
    return found


def _decides_a_test(fn: Function, env: dict) -> bool:
    """A constant argument that an if of the callee tests (``return_seg=False``): analysing the
    callee with it leaves the arms it rules out aside."""
    tested = tested_names(fn.node, fn.module.project.tested_names) | _tested_by_base_init(fn)
    if any(_decisive(v) and name in tested for name, v in env.items()):
        return True
    # `if not self.train:` in a method of an object built with `train=True` (a dataset's evaluation-only
    # return, HierSpeech++'s loader, survey 52 BC): the object's constant field decides it
    receiver = _self_name(fn.node) if fn.klass is not None and fn.kind == "method" else None
    obj = env.get(receiver) if receiver else None
    return isinstance(obj, Instance) and receiver in tested and \
        any(_decisive(v) and name in tested for name, v in obj.fields)


def _decisive(value) -> bool:
    """A constant that may rule out an arm: not "anything"."""
    return isinstance(value, Const) and ANYTHING not in value.values


_TESTED_BY_BASE: dict = {}


def _tested_by_base_init(fn: Function) -> frozenset:
    """Parameters of a constructor that it hands on as they are to its base class's ``__init__``
    (``super().__init__(cuda)``), which tests them, down the bases: the base picks its fields by them
    (radio-core's blocks: one ``cuda`` flag picks CuPy or NumPy in the base), so a constant given
    decides the object's fields as it would in the constructor's own test."""
    if fn.klass is None or fn.node.name.value != "__init__":
        return frozenset()
    return _handed_to_a_testing_base(fn.module.project, fn.node, fn.klass, 0)


def _handed_to_a_testing_base(project, init: cst.FunctionDef, klass, depth: int) -> frozenset:
    found = _TESTED_BY_BASE.get((init, klass))
    if found is not None:
        return found
    _TESTED_BY_BASE[(init, klass)] = frozenset()  # a cycle of bases gives nothing
    params = [p.name.value for p in (*init.params.posonly_params, *init.params.params)]
    self_name = params[0] if params else None
    info = project.class_info(klass) if self_name and depth <= 4 else None
    base_init = info.lookup("__init__", after_self=True, record=False) if info is not None else None
    call = _super_init_call(init, self_name) if base_init is not None and base_init.kind == "method" else None
    found = frozenset()
    if call is not None:
        base_params = [p.name.value for p in (*base_init.node.params.posonly_params, *base_init.node.params.params)]
        given = _base_init_arguments(call, base_params)
        base_tested = tested_names(base_init.node, project.tested_names) | \
            _handed_to_a_testing_base(project, base_init.node, base_init.owner, depth + 1)
        rebound = body_bindings(init)
        found = frozenset(expr.value for name, expr in given.items() if name in base_tested and
                          isinstance(expr, cst.Name) and expr.value not in rebound)
    _TESTED_BY_BASE[(init, klass)] = found
    return found


def _builds_what_it_walks(fn: Function, env: dict) -> bool:
    """A parameter left at None that the callee replaces and then loops over (``if loader is None:
    loader = get_loader()``, then ``for b in loader:``): its analysis for callers at large walks
    "the caller's or that one", which tells nothing; with None, the loop walks the one it builds
    (nfl2022's `extract_feats(..., loader=None)`, survey 50 AG)."""
    walked = _walked_parameters(fn)
    return any(env.get(name) == Const.of(None) for name in walked)


_WALKED: dict = {}


def _walked_parameters(fn: Function) -> frozenset:
    """Parameters the function rebinds and walks in a ``for`` loop of its own body."""
    found = _WALKED.get(fn.node)
    if found is None:
        node = fn.node
        params = {p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
                  if p.default is not None}
        walked = {part.iter.value for part in code_nodes(node.body, into_definitions=False)
                  if isinstance(part, cst.For) and isinstance(part.iter, cst.Name)} if params else set()
        found = _WALKED[fn.node] = frozenset(params & walked & body_bindings(node))
    return found


def _walks_one_item(fn: Function, env: dict) -> bool:
    """A one-item list given for a parameter the callee loops over (``for param in params:
    models.append(...)``) or hands on to a call as it is: its analysis for callers at large walks a list of any length and returns
    one; with this one, the loop runs once and what it builds has one item (BEVFormer_tensorrt's test
    cases, whose every loop over the models then runs once)."""
    cache = fn.module.project.walked_parameters
    walked = cache.get(fn.node)
    if walked is None:
        node = fn.node
        params = {p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)}
        found = set()
        for part in code_nodes(node.body, into_definitions=False):
            if isinstance(part, cst.For) and isinstance(part.iter, cst.Name):
                found.add(part.iter.value)
            elif isinstance(part, cst.Call):  # handed on as it is (`self.createModels(params, ...)`)
                found.update(arg.value.value for arg in part.args if isinstance(arg.value, cst.Name) and not arg.star)
        walked = cache[fn.node] = frozenset(found & params)
    from .evaluator import one_element
    return any(one_element(env.get(name)) for name in walked)


def _gives_a_deciding_keyword(fn: Function, env: dict) -> bool:
    """A constant argument the callee passes on as ``pin_memory=``, ``non_blocking=`` or ``blocking=``:
    its analysis for callers at large does not know what the library call makes or does, so its
    result says nothing of what this call gets (a ``create_loader(ds, 64)`` that leaves ``pin_memory``
    at False gets a pageable DataLoader, wrapped or not)."""
    from .domain import ANYTHING
    deciding = _deciding_names(fn)
    if not deciding:
        return False

    def decides(value) -> bool:
        return isinstance(value, Const) and ANYTHING not in value.values or \
            isinstance(value, DeviceSpec) and value.cuda is not None or isinstance(value, GpuFlag)
    for name in deciding:
        head, _, field_name = name.partition(".")
        value = env.get(head)
        if field_name:
            # `device=self.dev` of an object whose constructor stored the CPU (`Dev("cpu")`).
            value = value.field(field_name) if isinstance(value, Instance) else None
        if value is not None and decides(value):
            return True
    return False


def _deciding_names(fn: Function) -> frozenset:
    """Names the function passes as a keyword that decides what a library call makes or does
    (``DataLoader(ds, pin_memory=pin_memory)`` of a ``pin_memory=False`` parameter): a caller that
    leaves the parameter at its default gets the pageable loader, not "pinned or not"."""
    cache = fn.module.project.deciding_names
    found = cache.get(fn.node)
    if found is None:
        keywords = fn.module.tables.deciding_keywords
        names: set = set()
        stack = [fn.node.body]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in keywords:
                if isinstance(node.value, cst.Name):
                    names.add(node.value.value)
                elif isinstance(node.value, cst.Attribute) and isinstance(node.value.value, cst.Name):
                    names.add(f"{node.value.value.value}.{node.value.attr.value}")  # device=self.dev
            elif isinstance(node, cst.Call) and node.args and isinstance(node.args[0].value, cst.Name) and \
                    isinstance(node.func, (cst.Name, cst.Attribute)):
                api = fn.module.tables.functions.get(fn.module.imports.qualify(node.func) or "")
                if api is not None and api.effect == "device-spec":
                    names.add(node.args[0].value.value)  # torch.device(name): the device it names
            stack.extend(code_parts(node))
        found = cache[fn.node] = frozenset(names)
    return found


def tested_names(node: cst.FunctionDef, cache: Optional[dict] = None) -> frozenset:
    """Names the function's tests depend on: an ``if``'s test, or a conditional expression's that is a
    statement's value or an argument of its call (``torch.device("cuda" if on_gpu else "cpu")``), and
    the names the tested names were computed from (``on_gpu = name.startswith("cuda")``, ``name =
    str(device)``). Only statements are walked, and only the tests' and those assignments'
    expressions: a visitor over the whole body cost 5 ms a function, a fifth of a cold run."""
    from ..walk import statements, suite_body
    cache = {} if cache is None else cache
    found = cache.get(node)
    if found is None:
        names: set = set()
        computed: dict = {}  # name -> the expressions assigned to it
        for statement in statements(suite_body(node.body), into_definitions=True):
            if isinstance(statement, cst.If):
                _add_names(statement.test, names)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    value = getattr(small, "value", None)
                    if value is None:
                        continue
                    for test in _conditional_tests(value):
                        _add_names(test, names)
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                            isinstance(small.targets[0].target, cst.Name):
                        computed.setdefault(small.targets[0].target.value, []).append(value)
        todo = [name for name in names if name in computed]
        while todo:
            for value in computed.pop(todo.pop(), ()):
                before = set(names)
                _add_names(value, names)
                todo.extend(name for name in names - before if name in computed)
        found = cache[node] = frozenset(names)
    return found


def _conditional_tests(value) -> list:
    """The tests of a conditional expression that is ``value`` or one of its call's arguments."""
    if isinstance(value, cst.IfExp):
        return [value.test]
    if isinstance(value, cst.Call):
        return [a.value.test for a in value.args if isinstance(a.value, cst.IfExp)]
    return []


def _add_names(node: cst.CSTNode, names: set) -> None:
    """Every ``Name`` under ``node`` (nested definitions too)."""
    todo = [node]
    while todo:
        item = todo.pop()
        if type(item) is cst.Name:
            names.add(item.value)
        else:
            todo.extend(code_parts(item))


def _apply_flow(ev, fn: Function, node, outcome: Outcome) -> None:
    """The caller's state after the call: the copies still in flight, the current stream."""
    rename = _renamer(ev, fn, node, outcome)
    here = IssuedBy(ev.scope, node, ev.loops, ev.module.info)
    before = ev.state.pending
    ev.state.pending = merge_pending(frozenset(_issued_here(_rename_pending(p, rename), here, before)
                                               for p in outcome.pending))
    if outcome.stream is not None and outcome.stream is not UNKNOWN:
        ev.state.env[STREAM] = outcome.stream
    _pinned_inside(ev, fn, node, outcome)


# ------------------------------------------------------------------------------ parameters
_SIGNATURE_KEEPING = frozenset({"staticmethod", "classmethod", "property", "abstractmethod", "override"})


def _fails_to_bind(fn: Function, args) -> bool:
    """Whether the call, as written, misses a parameter that has no default (or passes more
    positional arguments than the function takes): it raises TypeError instead of running the
    body. Only for calls that spell out every argument, of functions whose decorators keep the
    signature (a decorator may take or supply arguments)."""
    if args.star or not isinstance(fn.node, cst.FunctionDef) or fn.undecorated or fn.captured:
        return False
    for decorator in fn.node.decorators:
        expression = decorator.decorator
        name = expression.attr.value if isinstance(expression, cst.Attribute) else \
            expression.value if isinstance(expression, cst.Name) else None
        if name not in _SIGNATURE_KEEPING:
            return False
    params = fn.node.params
    ordered = [*params.posonly_params, *params.params]
    given = len(args.positional) + (1 if fn.bound is not None and fn.kind in ("method", "class", "property") else 0)
    if given > len(ordered) and not isinstance(params.star_arg, cst.Param):
        return True
    for index, param in enumerate(ordered):
        if index >= given and param.default is None and param.name.value not in args.keywords:
            return True
    return any(param.default is None and param.name.value not in args.keywords for param in params.kwonly_params)


def bind_parameters(ev, fn: Function, args, receiver_expr) -> tuple[dict, dict]:
    """Parameter -> value for this call, and parameter -> argument expression (for changes the
    callee makes to its arguments' objects, which the caller sees)."""
    params = fn.node.params
    ordered = [*params.posonly_params, *params.params]
    positional = [(expr, value) for expr, value in args.positional]
    if fn.bound is not None and fn.kind in ("method", "class", "property"):
        # A classmethod's `cls` is the class even when called through an object (`self._probe()`):
        # what it does to `cls` is not a change to the object the caller's `self` names.
        positional.insert(0, (receiver_expr if fn.kind != "class" else None, fn.bound))
    env: dict = {}
    exprs: dict = {}
    for index, param in enumerate(ordered):
        name = param.name.value
        if index < len(positional):
            exprs[name], env[name] = positional[index]
        elif name in args.keywords:
            exprs[name], env[name] = args.keywords[name]
        elif args.star:
            env[name] = UNKNOWN
        else:
            env[name] = default_value(fn, param.default) if param.default is not None else UNKNOWN
    extra = positional[len(ordered):]
    if isinstance(params.star_arg, cst.Param):
        env[params.star_arg.name.value] = _spread(args, extra) if args.star else Items(tuple(v for _, v in extra))
    for param in params.kwonly_params:
        name = param.name.value
        if name in args.keywords:
            exprs[name], env[name] = args.keywords[name]
        else:
            env[name] = UNKNOWN if args.star else \
                (default_value(fn, param.default) if param.default is not None else UNKNOWN)
    if isinstance(params.star_kwarg, cst.Param):
        taken = set(env)
        rest = {k: v for k, (_, v) in args.keywords.items() if k not in taken}
        env[params.star_kwarg.name.value] = mapping(rest, UNKNOWN if args.star else None)
    return env, exprs


def _spread(args, extra: list) -> Value:
    """A ``*args`` parameter given a list spread into the call (``upload_all(*chunks)``): a tuple of
    unknown length whose elements are the list's (or the other positional arguments left over). A
    ``**mapping`` of keys nothing says may fill any parameter: nothing is known then."""
    from .domain import element_of, join
    if args.kwargs_unknown:
        return Seq(UNKNOWN)
    element = None
    for value in [v for _, v in extra] + [element_of(v) for v in args.starred]:
        element = value if element is None else join(element, value)
    return Seq(element if element is not None else UNKNOWN)


def _closure(ev, fn: Function, env: dict) -> dict:
    """A nested function called from the function it is defined in sees that function's variables."""
    parent, marker, _ = fn.name.rpartition(".<locals>.")
    if not marker or parent != ev.scope:
        return {}
    return {name: ev.state.env[name] for name in free_names(fn.node) if name not in env and name in ev.state.env}


_FREE: dict = {}


def free_names(node: cst.FunctionDef) -> frozenset:
    """Names a function reads but never binds (its enclosing function's, or globals)."""
    found = _FREE.get(node)
    if found is not None:
        return found
    loaded: set = set()
    bound: set = {p.name.value for p in (*node.params.posonly_params, *node.params.params,
                                         *node.params.kwonly_params)}
    for star in (node.params.star_arg, node.params.star_kwarg):
        if isinstance(star, cst.Param):
            bound.add(star.name.value)

    # A walk over the code fields (``walk.code_parts``), not a libcst visitor (16x faster per function;
    # a seventh of a cold run under cProfile, though not measurable in a plain run). Nested functions
    # are not entered (their names are theirs); every Name is a load here, but a plain target binds.
    todo = list(code_parts(node.body))
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is cst.Name:
            loaded.add(item.value)
            continue
        if kind is cst.FunctionDef:
            continue
        if kind is cst.AssignTarget and type(item.target) is cst.Name:
            bound.add(item.target.value)
        todo.extend(code_parts(item))
    found = frozenset(loaded - bound)
    _FREE[node] = found
    return found


def literal(node) -> Value:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, (cst.Integer, cst.Float)):
        positive = literal(node.expression)  # `lo=-1.0`
        return Const.of(-positive.single) if isinstance(positive, Const) else UNKNOWN
    if isinstance(node, cst.Integer):
        try:
            return Const.of(int(node.value.replace("_", ""), 0))
        except ValueError:
            return UNKNOWN
    if isinstance(node, cst.Float):
        try:
            return Const.of(float(node.value.replace("_", "")))  # `hi=1.0`, `eps=1e-6`
        except ValueError:
            return UNKNOWN
    if isinstance(node, cst.SimpleString):
        try:
            return Const.of(node.evaluated_value)
        except Exception:  # noqa: BLE001 - odd prefixes stay unknown
            return UNKNOWN
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return Const.of({"True": True, "False": False, "None": None}[node.value])
    return UNKNOWN


def default_value(fn: Function, default) -> Value:
    """A parameter's default, where a call leaves it out: a literal, or a device the library names
    (``buffer_device=torch.device("cpu")``), read in the function's own module."""
    value = constant_in(fn.module, default)
    if value is UNKNOWN and isinstance(default, cst.Name) and "<locals>" not in fn.name and fn.module is not None:
        # `ctx=CONTEXT_LENGTH` of a module constant assigned once (TinyCLIP's tokenizer, survey 52); a
        # nested function's default may name its enclosing function's variable instead
        found = fn.module.global_value(default.value)
        return found if isinstance(found, Const) else UNKNOWN
    return value


def constant_in(module, default) -> Value:
    """What an expression evaluated once, in ``module``'s namespace, gives, as far as it can be told
    without running it: a literal, or a device the library names (``torch.device("cpu")``)."""
    constant = literal(default)
    if constant is not UNKNOWN or not isinstance(default, cst.Call) or not default.args:
        return constant
    qualified = module.imports.qualify(default.func) if module is not None else None
    api = module.project.tables.functions.get(qualified) if qualified else None
    if api is None or api.effect != "device-spec" or default.args[0].keyword is not None:
        return UNKNOWN
    from .effects import device_of
    named = literal(default.args[0].value)
    cuda = device_of(named, module.project.tables) if isinstance(named, Const) else None
    return DeviceSpec(cuda) if cuda is not None else UNKNOWN


def context_free_env(project, fn: Function, with_receiver: bool = True) -> dict:
    """A function's parameters when nothing is known of its callers: what the annotations say; a
    parameter defaulting to ``0``/``None``/``False`` may well be left at it, so it is "that constant
    or anything" (a ``stream=0`` parameter is not an async request); the receiver of a method is an
    object of its class, with the fields the class's methods give it."""
    params = fn.node.params
    env: dict = {}
    ordered = [*params.posonly_params, *params.params]
    for index, param in enumerate(ordered + list(params.kwonly_params)):
        name = param.name.value
        value: Value = UNKNOWN
        if param.annotation is not None:
            value = annotation_value(fn.module, param.annotation.annotation)
        default = param.default
        if default is not None and (value is UNKNOWN or isinstance(value, (Seq, Items, Mapping, Scalar)) and
                                    not holds_memory(value)):
            # (an annotation of numbers or names, `split_dims: Optional[List[int]] = None`, says
            # nothing of a default the caller may leave: None stays possible; one of buffers keeps
            # the buffer, as `h = None` then `h = np.empty(n)` does, survey 57 GB)
            constant = literal(default)
            if constant in (Const.of(None), Const.of(False), Const.of(0)) and \
                    (value is UNKNOWN or constant == Const.of(None)):
                value = Const(frozenset([constant.single, ANYTHING]))
        env[name] = value
    if fn.klass is not None and ordered and fn.kind in ("method", "property") and with_receiver:
        env[ordered[0].name.value] = Instance(fn.klass, project.class_fields(fn.klass))
    elif fn.klass is not None and ordered and fn.kind == "class":
        env[ordered[0].name.value] = fn.klass
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            env[star.name.value] = UNKNOWN
    if len(ordered) >= 2 and env.get(ordered[1].name.value) is UNKNOWN and _dataset_getter(project, fn):
        env[ordered[1].name.value] = Scalar("int")  # the loader's sampler gives an index
    for name, value in _parametrized(fn).items():
        if name in env and env[name] is UNKNOWN:  # a parameter (not a name a fixture takes)
            env[name] = value
    from .callers import caller_sizes
    for name, value in caller_sizes(project, fn).items():
        if name in env and (env[name] is UNKNOWN or isinstance(env[name], Const) and ANYTHING in env[name].values):
            env[name] = value  # `solve(100000, 4, 10)`, the module's only call: k is 4
    env.update(_enclosing_parameters(project, fn, env))
    return env


def _dataset_getter(project, fn: Function) -> bool:
    """``__getitem__`` of a subclass of torch's map-style ``Dataset``: a loader's sampler calls it with
    an index (an int), so an item holding it (`return image, idx`) collates into a tensor of numbers."""
    if fn.klass is None or fn.kind != "method" or fn.node.name.value != "__getitem__":
        return False
    info = project.class_info(fn.klass)
    return info is not None and any(base.startswith("torch.utils.data") and base.endswith("Dataset")
                                    for owner in info.mro() for base in owner.library_bases)


def _parametrized(fn: Function) -> dict:
    """A test's parameters as ``@pytest.mark.parametrize("n, dtype", [(3, np.float32), (20,
    np.float64)])`` lists them: each the constants it takes (sizes and dtypes, so a test buffer's bytes
    are known); a parameter with any other value, or an ``indirect`` one, stays unknown."""
    found: dict = {}
    for decorator in fn.node.decorators:
        call = decorator.decorator
        if not (isinstance(call, cst.Call) and len(call.args) >= 2 and
                fn.module.imports.qualify(call.func) == "pytest.mark.parametrize") or \
                any(arg.keyword is not None and arg.keyword.value == "indirect" for arg in call.args):
            continue
        names_arg, rows_arg = call.args[0].value, call.args[1].value
        if isinstance(names_arg, cst.SimpleString) and isinstance(names_arg.evaluated_value, str):
            names = [n.strip() for n in names_arg.evaluated_value.split(",") if n.strip()]
        elif isinstance(names_arg, (cst.List, cst.Tuple)) and all(isinstance(e.value, cst.SimpleString) for e in names_arg.elements):
            names = [e.value.evaluated_value for e in names_arg.elements]
        else:
            continue
        product = _product_columns(fn.module, rows_arg, len(names))
        if product is not None:
            found.update({name: column for name, column in zip(names, product) if column is not None})
            continue
        if not isinstance(rows_arg, (cst.List, cst.Tuple)) or not rows_arg.elements:
            continue
        columns: list = [set() for _ in names]
        for element in rows_arg.elements:
            row = element.value
            if isinstance(row, cst.Call) and fn.module.imports.qualify(row.func) == "pytest.param":
                items = [a.value for a in row.args if a.keyword is None and not a.star]  # its values, then marks
            elif len(names) == 1:
                items = [row]
            else:
                items = [e.value for e in row.elements] if isinstance(row, (cst.Tuple, cst.List)) else []
            if len(items) != len(names):
                columns = [None] * len(names)
                break
            for column, item in zip(columns, items):
                if column is not None:
                    value = _parameter_constant(fn.module, item)
                    column.add(value.single if isinstance(value, Const) and len(value.values) == 1 else ANYTHING)
        for name, column in zip(names, columns):
            if column and ANYTHING not in column and len(column) <= 8:  # as many as a join keeps
                found[name] = Const(frozenset(column))
    return found


def _product_columns(module, rows, width: int) -> Optional[list]:
    """``itertools.product([np.float32, np.float64], [2, 3, 6, 7])`` as a parametrize's rows: each
    parameter takes the constants of its own list (None for a list of anything else); None where the
    rows are not such a product."""
    if not (isinstance(rows, cst.Call) and module.imports.qualify(rows.func) == "itertools.product") or \
            len(rows.args) != width or any(a.keyword is not None or a.star for a in rows.args):
        return None
    columns: list = []
    for arg in rows.args:
        if not isinstance(arg.value, (cst.List, cst.Tuple)) or not arg.value.elements or \
                any(isinstance(e, cst.StarredElement) for e in arg.value.elements):
            columns.append(None)
            continue
        values = {_parameter_constant(module, e.value) for e in arg.value.elements}
        constants = {v.single for v in values if isinstance(v, Const) and len(v.values) == 1}
        known = all(isinstance(v, Const) and len(v.values) == 1 for v in values)
        columns.append(Const(frozenset(constants)) if known and len(constants) <= 8 else None)  # as many as a join keeps
    return columns


def _parameter_constant(module, node) -> Value:
    """A literal, or a dtype a library names (``np.float32``)."""
    value = literal(node)
    if value is not UNKNOWN or not isinstance(node, (cst.Name, cst.Attribute)):
        return value
    from .dtypes import named_dtype
    qualified = module.imports.qualify(node)
    return (named_dtype(qualified, module.project.tables) if qualified else None) or UNKNOWN


def _enclosing_parameters(project, fn: Function, env: dict) -> dict:
    """A nested function's free names that are parameters of the function it is defined in, never
    rebound there, are what they are in that function with nothing known of its callers: above all
    the enclosing method's ``self`` (a producer thread's target, a hook defined in a method, calling
    ``self._to_gpu(b)`` for every batch). Without it they were unknown in the nested function's own
    analysis, the only one that reports inside it."""
    outer = fn.module.enclosing(fn)
    if outer is None or not isinstance(outer.node, cst.FunctionDef):
        return {}
    free = free_names(fn.node) - set(env)
    if not free:
        return {}
    outer_env = context_free_env(project, outer)
    rebound = body_bindings(outer.node)
    return {name: outer_env[name] for name in free if name in outer_env and name not in rebound}


def kind_value(kind: str, origin) -> Value:
    """The value a class of the tables' ``[annotations]`` stands for (an annotation, a passed
    ``isinstance`` test): "host" a NumPy array of unknown kind, "device:L" library L's device array."""
    if kind == "host":
        return unknown_host("numpy")
    if kind == "torch-host":
        return unknown_host("torch")
    if kind == "tensor":
        return Tensor()
    if kind == "stream":
        return Stream(origin=origin, default=False)
    if kind.startswith("device:"):
        return Device(kind.split(":", 1)[1])
    return UNKNOWN


def annotation_value(module, annotation) -> Value:
    """The value a type annotation promises: ``cupy.ndarray`` is a CuPy device array, ``torch.Tensor``
    a tensor, ``np.ndarray`` a host array of unknown kind, a class of the checked code its object."""
    if isinstance(annotation, cst.SimpleString):
        try:
            text = annotation.evaluated_value
            annotation = cst.parse_expression(text) if isinstance(text, str) and len(text) < 200 else None
        except Exception:  # noqa: BLE001 - an annotation that is not an expression says nothing
            return UNKNOWN
        if annotation is None:
            return UNKNOWN
    if isinstance(annotation, cst.Subscript):
        head = module.imports.qualify(annotation.value) or dotted(annotation.value) or ""
        inner = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
        if head.split(".")[-1] in ("Optional", "Union", "Annotated") and inner:
            return annotation_value(module, inner[0])
        if head.split(".")[-1] in ("List", "list", "Sequence", "Tuple", "tuple") and inner:
            return Seq(annotation_value(module, inner[0]))  # `len(req_ids)`: one per Python object
        if head.split(".")[-1] == "Iterable" and inner:
            element = annotation_value(module, inner[0])
            return Seq(element) if element is not UNKNOWN else UNKNOWN
        return annotation_value(module, annotation.value) if head.endswith("NDArray") else UNKNOWN
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        left = annotation_value(module, annotation.left)
        return left if left is not UNKNOWN else annotation_value(module, annotation.right)
    qualified = module.imports.qualify(annotation) if isinstance(annotation, (cst.Name, cst.Attribute)) else None
    tables = module.tables
    if qualified is not None and qualified in tables.annotations:
        return kind_value(tables.annotations[qualified], annotation)
    if isinstance(annotation, cst.Name) and annotation.value in ("int", "float") and \
            module.global_value(annotation.value) is None and module.imports.lookup(annotation.value) is None:
        return Scalar(annotation.value)  # `frame_idx: int`: a number (it only ever bounds a size)
    if isinstance(annotation, cst.Name) and annotation.value in ("list", "tuple", "dict") and \
            module.global_value(annotation.value) is None and module.imports.lookup(annotation.value) is None:
        # `req_ids: list`: a Python container (whose `len` counts Python objects), of anything
        return Seq(UNKNOWN) if annotation.value != "dict" else Mapping((), UNKNOWN)
    if isinstance(annotation, cst.Name):
        found = module.global_value(annotation.value)
        if isinstance(found, ClassRef):
            return Instance(found, module.project.class_fields(found))
    if qualified is not None and tables.library_of(qualified) is None:
        found = module.project.resolve(qualified, module)
        if isinstance(found, ClassRef):
            return Instance(found, module.project.class_fields(found))
    return UNKNOWN


# ------------------------------------------------------------------------------ what flows back
def _internal(outcome: Outcome):
    """Buffers a call allocated itself (in the function or in what it calls), as opposed to the ones it
    was given and the module-level ones that every call shares."""
    def check(site: Site) -> bool:
        return site not in outcome.inputs and site.scope != "<module>"
    return check


def _owned_by_the_new_object(fn: Function, outcome: Outcome) -> frozenset:
    """Sites a constructor stores only on the object it builds (``self.host_ptr = ptr`` in
    ``__init__``): each construction allocates them anew, and they live as long as that object."""
    found = outcome.__dict__.get("_owned")
    if found is None:
        found = _find_owned(fn, outcome)
        object.__setattr__(outcome, "_owned", found)  # asked by every renaming of the same call
    return found


def _find_owned(fn: Function, outcome: Outcome) -> frozenset:
    if not fn.name.endswith(".__init__") or not isinstance(fn.node, cst.FunctionDef):
        return frozenset()
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    if not params:
        return frozenset()
    receiver = params[0].name.value
    on_receiver, elsewhere = set(), set()
    for event in outcome.events:
        if event.type is not EventType.ESCAPE or event.handed or isinstance(event.node, cst.Return):
            continue
        target = event.node
        while isinstance(target, cst.Subscript):
            target = target.value
        stored = isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
            target.value.value == receiver
        (on_receiver if stored else elsewhere).update(event.sites)
    return frozenset(on_receiver - elsewhere)


def _call_name(fn: Function) -> str:
    """How a call of ``fn`` is named in messages: ``upload`` or, for a constructor, the class
    (``HostDeviceMem``, not ``__init__``)."""
    parts = fn.name.rsplit(".", 2)
    return parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]


def _renamer(ev, fn: Function, node, outcome: Outcome):
    """Buffers the callee allocated on this call become allocations of the call itself (each call
    allocates anew); buffers it keeps (a cache) or got from elsewhere stay what they are."""
    internal = _internal(outcome)
    short = _call_name(fn)
    once = not _body_runs_per_call(ev.module.project, fn)
    owned = _owned_by_the_new_object(fn, outcome)
    # A buffer the callee keeps (stores on its object) is a cache when it may be made once (`if
    # self.buf is None:`); made on every call, outside any `if` or loop (`def prepare(self, n):
    # self.buf = np.random.rand(n)`), it is a new buffer each call like a returned one; so is one its
    # loop makes on every iteration and leaves there (`s = env.step(a)` per step, then `self.last = s`).
    # Such a buffer is the call's new one even where the object's field held one made by the same
    # statement on an earlier call (`def mesh(self): self.L = np.zeros(...)`, called again before
    # each upload: TPSolver's benchmark sweep, survey 50 X).
    every_call = frozenset(s for e in outcome.events if e.type is EventType.ALLOC and not e.branch
                           and not e.conditional for s in e.sites) if outcome.kept else frozenset()
    if outcome.kept and fn.klass is not None and fn.kind == "method":
        # An arm a test of the arguments picks (`if weights is not None: self.w = np.array(weights)
        # else: self.w = np.ones(n)`) makes its buffer on every call that takes it; only a test of the
        # object itself (`if self.w is None:`, `if key not in self.cache:`) can be a cache's guard
        # (mcSIM's guesses, rebuilt by a constructor called in a loop, survey 52 BJ).
        receiver = _self_name(fn.node)
        every_call |= frozenset(s for e in outcome.events if e.type is EventType.ALLOC and not e.loops and e.branch
                                and all(_tests_only_arguments(owner, receiver, ev.module.project.argument_tests)
                                        for owner, _ in e.branch)
                                for s in e.sites)
    if outcome.kept:
        # a conversion or arithmetic result (no allocation event of its own) in a statement of the
        # body outside any `if` or loop: `m = np.empty_like(a).astype(np.float32)` then
        # `moments["m"] = m` keeps a new buffer on each call, not a cache
        straight = _straight_line_nodes(fn.node)
        every_call |= frozenset(s for s in outcome.kept if s.node in straight and not s.via)
        # a buffer a call of its straight-line body made anew (renamed to that call) in the object it
        # returns: `obj = Recon(); obj.set_guesses(w); return obj` makes it on each call too (one kept
        # on the receiver may be a rebuild the caller runs now and then, as an agent's planner is)
        returned = all_sites(outcome.returned)
        every_call |= frozenset(s for s in outcome.kept if s.node in straight and s in returned and
                                s.variant in ("call", "construction"))
        if ev.loops and len(ev.branch) == ev.module.project.loop_branch_depth.get(ev.loops[-1], 0) or \
                not ev.loops and _on_the_new_object(ev, node):
            # called on every iteration of the caller's loop (no `if` between them), or by a
            # constructor on the object it builds, a method whose straight-line body calls a helper
            # that stores a new buffer on the object (`ring.recompute()` -> `self._alloc(n)` ->
            # `self.phase = np.zeros(n)`) rebuilds it each time; called now and then (`if step % k ==
            # 0: agent.replan()`) it stays the same buffer in between (longitudinal-tomography, survey 53 CD)
            every_call |= frozenset(s for s in outcome.kept if s.node in straight and s.via and
                                    s.variant in ("call", "construction"))

    passed = outcome.inputs - outcome.own_inputs  # what the caller gave as arguments

    def rename(site: Site) -> Site:
        if site in owned and site in passed and not ev.loops:
            return site  # what the caller handed over to keep (`Holder(x)`), outside a loop: its own allocation
        if site in owned:
            pass  # the new object's own: allocated by this construction (whatever the class's fields say)
        elif once or (not internal(site) and site not in every_call) or \
                (site in outcome.kept and site not in every_call) or \
                _via_depth(site) >= _VIA_LIMIT:
            return site
        return Site(kind=site.kind, library=site.library, api=f"{short}()", node=node, loops=ev.loops,
                    nbytes=site.nbytes, max_nbytes=site.max_nbytes, pooled=site.pooled, fix=None, scope=ev.scope,
                    fresh_each_iteration=site.fresh_each_iteration, via=frozenset([site]), dtype=site.dtype,
                    ndim=site.ndim, variant="construction" if fn.name.endswith(".__init__") else "call",
                    uninitialized=site.uninitialized, module=ev.module.info,
                    from_values=site.from_values, python_numbers=site.python_numbers, values=site.values,
                    copies_data=site.copies_data)  # what the buffer holds is what the callee made
    return rename


def _on_the_new_object(ev, node) -> bool:
    """``self.recompute()`` in ``__init__``: a method run on the object the constructor builds, new on
    every construction."""
    caller = ev.invocation.function if ev.invocation is not None else None
    if caller is None or not caller.name.endswith(".__init__") or not isinstance(caller.node, cst.FunctionDef):
        return False
    receiver = _self_name(caller.node)
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
        isinstance(node.func.value, cst.Name) and node.func.value.value == receiver


def _tests_only_arguments(owner, receiver: Optional[str], cache: dict) -> bool:
    key = (owner, receiver)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _find_tests_only_arguments(owner, receiver)
    return found


def _find_tests_only_arguments(owner, receiver: Optional[str]) -> bool:
    """An ``if`` that is no cache's guard: its test reads, of the object (``self``), only fields its
    arms do not set (`if self.mode == "lp":` around `self.decoded = np.zeros(...)`), and is no
    membership test and no call: it picks an arm by what the call was given or how the object is
    set up, and the arm makes its buffer each time it runs."""
    if not isinstance(owner, cst.If) or receiver is None:
        return False
    read = set()
    todo = [owner.test]
    while todo:
        item = todo.pop()
        if isinstance(item, cst.Attribute) and isinstance(item.value, cst.Name) and item.value.value == receiver:
            read.add(item.attr.value)
            continue
        if isinstance(item, cst.Name) and item.value == receiver:
            return False  # the object itself (`if self:`, `getattr(self, ...)`)
        if isinstance(item, cst.ComparisonTarget) and isinstance(item.operator, (cst.In, cst.NotIn)):
            return False  # `if key not in self.cache:`
        if isinstance(item, (cst.Lambda, cst.Call)):
            return False  # what a call tests (`self._ready()`, `cache.has(k)`) is not told here
        todo.extend(code_parts(item))
    if read & _fields_set_in([owner], receiver):
        return False
    # every arm (an `else` too) sets a field they all set: no call leaves an earlier buffer there
    arms, arm = [], owner
    while isinstance(arm, cst.If):
        arms.append(arm.body)
        arm = arm.orelse
    if not isinstance(arm, cst.Else):
        return False
    arms.append(arm.body)
    common = None
    for body in arms:
        fields = _fields_set_in(suite_body(body), receiver)
        common = fields if common is None else common & fields
    return bool(common)


def _fields_set_in(body, receiver: str) -> frozenset:
    """The receiver's fields a sequence of statements sets (an ``if`` statement with all its arms)."""
    from .fields import stores_in
    return stores_in(body, receiver)[0]


_STRAIGHT: dict = {}
_STATEMENT_OF: dict = {}
_ARMS: dict = {}


def _straight_line_nodes(function: cst.FunctionDef) -> dict:
    """The calls and operations of the function's own simple statements that every call runs, each
    with its statement's index in ``_flat_statements``: no `if`, loop or `try` around them, and
    no statement before them that may leave the function with a value (`if self.buf is not None:
    return self.buf` makes what follows a cache's set-up). A check that raises (`if not phase: raise
    ValueError(...)`) leaves nothing behind: every call that goes on runs what follows (GraphSAINT's
    minibatch set-up, survey 52)."""
    found = _STRAIGHT.get(function)
    if found is None:
        found = {}
        for index, statement in enumerate(_flat_statements(function)):
            if not (isinstance(statement, cst.SimpleStatementLine) or _flattened(statement)):
                if any(isinstance(part, (cst.Return, cst.Yield)) for part in
                       code_nodes(statement, into_definitions=False)):
                    break
                continue
            for part in _own_parts(statement):
                if isinstance(part, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
                    found[part] = index
            if isinstance(statement, cst.SimpleStatementLine) and \
                    any(isinstance(small, (cst.Return, cst.Raise)) for small in statement.body):
                break
        _STRAIGHT[function] = found
    return found


_FLAT: dict = {}


def _flat_statements(function: cst.FunctionDef) -> list:
    """The function's body in order, a ``with`` block's statements after its header as the body's
    own (they run whenever the ``with`` statement does: `with cp.cuda.Device(0): self._decode();
    return self._extract()`, merfish3d's decoder, survey 52). A ``with`` stands for its header."""
    found = _FLAT.get(function)
    if found is None:
        found = []

        def add(body) -> None:
            for statement in suite_body(body):
                found.append(statement)
                if _flattened(statement):
                    add(statement.body)
        add(function.body)
        _FLAT[function] = found
    return found


def _own_parts(statement) -> list:
    """The code of one entry of ``_flat_statements``: a ``with`` block's header alone (its body's
    statements are entries of their own)."""
    if _flattened(statement):
        return [part for item in statement.items for part in code_nodes(item, into_definitions=False)]
    return list(code_nodes(statement, into_definitions=False))


def _flattened(statement) -> bool:
    return isinstance(statement, cst.With) and statement.asynchronous is None


def _complete_if_arms(function: cst.FunctionDef) -> dict:
    """The calls and operations of the simple statements in the arms of the function's top-level
    ``if`` statements that have an ``else`` (one of their arms runs on every call), each with
    ``(statement index, arm index, arms that go on past the if)``; arms that return or raise do
    not reach what follows. Only up to where ``_straight_line_nodes`` stops (an early exit makes
    what follows a cache's set-up)."""
    found = _ARMS.get(function)
    if found is None:
        found = {}
        body = _flat_statements(function)
        straight = _straight_line_nodes(function)
        last = max(straight.values(), default=-1)
        for index, statement in enumerate(body):
            if index > last + 1:
                break
            if not isinstance(statement, cst.If):
                continue
            arms, branch = [], statement
            while isinstance(branch, cst.If):
                arms.append(branch.body)
                branch = branch.orelse.body if isinstance(branch.orelse, cst.If) else branch.orelse
            if branch is None:
                continue  # no `else`: on some calls no arm runs
            arms.append(branch.body)
            going_on = []
            for arm, block in enumerate(arms):
                parts = {}
                exits = False
                for small in suite_body(block):
                    if not isinstance(small, cst.SimpleStatementLine):
                        continue  # may or may not run (or leave): the arm may go on without it
                    if any(isinstance(p, (cst.Return, cst.Raise)) for p in small.body):
                        exits = True
                        break
                    for part in code_nodes(small, into_definitions=False):
                        if isinstance(part, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
                            parts[part] = None
                if not exits:
                    going_on.append((arm, parts))
            reaching = frozenset(arm for arm, _ in going_on)
            for arm, parts in going_on:
                found.update((part, (index, arm, reaching)) for part in parts)
        _ARMS[function] = found
    return found


def _statement_of(function: cst.FunctionDef, node) -> Optional[int]:
    """The index of the statement of the function's body (``_flat_statements``) that holds ``node``
    (not in a nested definition); None when none does."""
    found = _STATEMENT_OF.get(function)
    if found is None:
        found = _STATEMENT_OF[function] = {}
        for index, statement in enumerate(_flat_statements(function)):
            for part in _own_parts(statement):
                found[id(part)] = index
    return found.get(id(node))


_VIA_LIMIT = 4  # a buffer returned through this many calls is named by the innermost four


def _via_depth(site: Site) -> int:
    depth = 0
    while site.via and depth < _VIA_LIMIT:
        site = first_site(site.via)
        depth += 1
    return depth


def _issued_here(pending: PendingCopy, here: IssuedBy, before: frozenset) -> PendingCopy:
    """A copy the callee issued and leaves in flight was issued, as far as this scope goes, at this
    call; one that was in flight before the call and that the callee did not touch keeps its place."""
    if pending in before or pending.scope == here.scope:
        return pending
    if pending.calls and pending.calls[-1].scope == here.scope:
        # merged in the callee with the one an earlier run of a call of this scope issued
        return pending if pending.calls[-1] == here else replace(pending, calls=pending.calls[:-1] + (here,))
    return replace(pending, calls=pending.calls + (here,))


def _rename_pending(pending: PendingCopy, rename) -> PendingCopy:
    sites = frozenset(rename(s) for s in pending.sites)
    return pending if sites == pending.sites else replace(pending, sites=sites)


def _copy_back(ev, outcome: Outcome, exprs: dict, rename, fn: Function) -> None:
    """A callee that changed an argument's object (appended to a list, set a field) changed the
    caller's object: the caller's name for it sees the new value."""
    from .transfer import rebind
    for name, value in outcome.params:
        expr = exprs.get(name)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super":
            # `super().__init__(engine)`: the base's method set fields on this method's own object
            current = ev.invocation.function
            receiver = _self_name(current.node) if current is not None and current.klass is not None else None
            expr = cst.Name(receiver) if receiver else None
            mine = ev.state.env.get(receiver) if receiver else None
            if isinstance(value, Instance) and isinstance(mine, Instance) and value.klass != mine.klass:
                # the fields the base's method set, on this object of this method's class (not the base's)
                value = Instance(mine.klass, value.fields)
        if expr is not None and dotted(expr) is not None:
            value = placement.copied_back(ev.state.env.get(dotted(expr)), value)
            rebind(ev, expr, map_sites(value, rename), mutated=True)
            if isinstance(value, Instance):
                _refresh_fields(ev, dotted(expr), map_sites(value, rename), _fields_it_sets(ev, fn, name))
        elif isinstance(expr, (cst.List, cst.Tuple)) and isinstance(value, Items) and \
                len(value.items) == len(expr.elements) and \
                not any(isinstance(e, cst.StarredElement) for e in expr.elements):
            # `lock_pages([self.table, self.ids])`: the list is new, its elements are the caller's
            # objects, changed in place by the callee (registered, a field set)
            for element, item in zip(expr.elements, value.items):
                if dotted(element.value) is not None:
                    rebind(ev, element.value, map_sites(item, rename), mutated=True)


def _refresh_fields(ev, key: str, value: Instance, stored: frozenset) -> None:
    """The caller's own record of the fields the callee set (``self.stream = None`` then
    ``self._setup()`` setting ``self.stream = cuda.Stream()``): those entries would hide what the
    callee left in them, so they take its values, and what the caller knew below them goes."""
    env = ev.state.env
    fields = dict(value.fields)
    for name in stored:
        field_key = f"{key}.{name}"
        if field_key not in env:
            continue
        below = field_key + "."
        for other in [k for k in env if k.startswith(below)]:
            del env[other]
        env[field_key] = fields.get(name, UNKNOWN)


_SETS_LIMIT = 32  # methods followed through `self.name()` calls when collecting the fields a call sets


def _fields_it_sets(ev, fn: Function, param: str) -> frozenset:
    """The fields of ``param``'s object that the function assigns (``param.x = ...``), and, for a
    method's receiver, those the methods it calls on it assign in turn."""
    from .fields import self_calls, field_stores
    if not isinstance(fn.node, cst.FunctionDef):
        return frozenset()
    klass = fn.bound.klass if isinstance(fn.bound, Instance) else None
    key = (fn.node, param, klass, fn.kind)
    cached = _FIELDS_SET.get(key)
    if cached is not None:
        return cached
    found = set(field_stores(fn.node, param)[0])
    info = ev.module.project.class_info(klass) if klass is not None else None
    if info is None or fn.kind != "method" or param != _self_name(fn.node):
        _FIELDS_SET[key] = frozenset(found)
        return _FIELDS_SET[key]
    seen, todo = {fn.node}, [fn.node]
    while todo and len(seen) <= _SETS_LIMIT:
        node = todo.pop()
        for name in self_calls(node, param if node is fn.node else _self_name(node) or param):
            member = info.lookup(name, record=False)
            if member is None or not isinstance(member.node, cst.FunctionDef) or member.node in seen:
                continue
            seen.add(member.node)
            todo.append(member.node)
            own = _self_name(member.node)
            if own:
                found |= field_stores(member.node, own)[0]
    _FIELDS_SET[key] = frozenset(found)
    return _FIELDS_SET[key]


_FIELDS_SET: dict = {}  # (function, parameter, class, kind) -> the fields a call of it sets


def _announce_allocations(ev, node, returned: Value, outcome: Outcome, fn: Function) -> None:
    """A call that returns fresh buffers is where they are allocated, as far as the caller goes. A
    DataLoader it returns allocates nothing there: its batches are made as it is iterated (and
    `pin_memory=True` pins them in its own thread), so building one is no pinned allocation."""
    loaders = frozenset(v.site for v in flatten([returned]) if isinstance(v, Loader))
    fresh = [site for site in all_sites(returned) - loaders
             if site.node is node and site.variant in _CALL_VARIANTS and not _deep_in_an_object(site)]
    if fresh and _returns_shared(fn):
        return  # `get_coordinator()` handing back the module's one object: what it holds is not made here
    for site in fresh:
        ev.event(EventType.ALLOC, node, Host(frozenset([site]), site.library), api=site.api)


_SHARED: dict = {}


def _returns_shared(fn: Function) -> bool:
    """Every ``return`` of the function hands back an object that outlives the call and is the same on
    every call: a module-level name (``return _COORD``) or an attribute of one or of the class
    (``return cls._instance``, a lazily made singleton), or of its object that it does not set itself
    (a property ``return self._dram.table``: what the object already holds), never a local or a
    parameter. An empty literal or a constant (``return {}`` when nothing is there yet) hands back
    no buffer."""
    found = _SHARED.get(fn.node)
    if found is None:
        method = fn.klass is not None and fn.kind in ("method", "property")
        found = _SHARED[fn.node] = _shared_returns(fn.node, method)
    return found


def _shared_returns(node: cst.FunctionDef, method: bool = False) -> bool:
    params = node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    classmethod_ = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod"
                       for d in node.decorators)
    returns = [r.value for r in _returns(node) if not _no_buffer(r.value)]
    declared = {n.name.value for small in small_statements(suite_body(node.body)) if isinstance(small, cst.Global)
                for n in small.names}  # `global _INSTANCE`: the module's
    local = (body_bindings(node) - declared) | frozenset(names)
    receiver = [*params.posonly_params, *params.params][0].name.value \
        if method and [*params.posonly_params, *params.params] else None
    if not returns:
        return False
    for value in returns:
        root, first = value, None
        while isinstance(root, cst.Attribute):
            root, first = root.value, root.attr.value
        if not isinstance(root, cst.Name):
            return False
        if root.value == receiver and root is not value and receiver not in body_bindings(node) and \
                not classmethod_ and first not in _fields_set(node, receiver):
            continue  # `return self._table` of a method that does not set it: the object's own
        if root.value in local and not (classmethod_ and names and root.value == names[0] and root is not value):
            return False
    return True


def _no_buffer(value) -> bool:
    """An empty literal or a constant: ``return {}``, ``return None``, ``return 0``."""
    if isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.Set)):
        return not value.elements
    if isinstance(value, cst.Name):
        return value.value in ("None", "True", "False")
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString))


def _fields_set(node: cst.FunctionDef, receiver: str) -> frozenset:
    from .fields import field_stores
    return field_stores(node, receiver)[0]


def _deep_in_an_object(site: Site) -> bool:
    """A buffer that constructors two or more levels down keep (``_build_engine()`` returning an engine
    whose context holds it, Megatron-LM's tests): the helper returns a composite object, not an
    allocation. A buffer its holder's own constructor makes (TensorRT's ``allocate_buffers()``
    returning ``HostDeviceMem`` objects) is allocated by the helper's call."""
    return sum(1 for inner in site.through() if inner.variant == "construction") >= 2


_CALL_VARIANTS = frozenset({"call", "construction"})  # sites a call of the checked code stands for


_MEMOIZERS = frozenset({"functools.lru_cache", "functools.cache"})


def _memoized(fn: Function) -> bool:
    """``@functools.lru_cache``/``@functools.cache``: a call with arguments seen before runs nothing
    and returns what the first one did, so what the body allocates is not allocated on each call
    (modded-nanogpt's pinned block-count helper, a false PIN002 before)."""
    decorators = getattr(fn.node, "decorators", ())
    if not decorators:
        return False
    imports = fn.module.imports
    for decorator in decorators:
        expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if imports.qualify(expr) in _MEMOIZERS:
            return True
    return False


def _body_runs_per_call(project, fn: Function) -> bool:
    """Whether a call of ``fn`` runs its body, so that what the body allocates is allocated by the
    call: not for a memoized function (``_memoized``), nor for a generator function, whose body runs
    as the generator is iterated, in its own loops (modded-nanogpt's data generator, made once per
    trial, loads pinned shards as it is iterated)."""
    found = project.runs_per_call.get(fn.node)
    if found is None:
        found = project.runs_per_call[fn.node] = not _memoized(fn) and not _yields(fn.node)
    return found


def _yields(function) -> bool:
    stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Yield):
            return True
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(code_parts(node))
    return False


def _pinned_inside(ev, fn: Function, node, outcome: Outcome) -> None:
    """Pinned memory the callee allocates and drops on every call: each call pays for it."""
    if not _body_runs_per_call(ev.module.project, fn) or not _pins_anything(ev.module.project, outcome):
        return
    from .project import local_containers, stored_into_local
    internal = _internal(outcome)
    returned = all_sites(outcome.returned)
    local = local_containers(fn.node)
    # Stored into a list or dict the call made and drops when it returns (`bufs.append(h)`): that is
    # no escape; it is where a set-up loop of the callee (which its own analysis leaves alone) puts them.
    escapes = [e for e in outcome.events if e.type is EventType.ESCAPE]
    escaped = outcome.kept | frozenset(s for e in escapes if not stored_into_local(e.node, local) for s in e.sites)
    # Memory it was given and registered in place (`for t in tensors: cudaHostRegister(...)`) is the
    # caller's buffer, now pinned: handed back through the changed parameter, not allocated here.
    handed_back = [h for _, value in outcome.params for h in flatten([value]) if isinstance(h, Host)]
    escaped |= frozenset(s for h in handed_back for s in h.sites)
    collected = frozenset(s for e in escapes if not e.handed and stored_into_local(e.node, local) for s in e.sites)
    owned = _owned_by_the_new_object(fn, outcome)
    rename = _renamer(ev, fn, node, outcome) if owned and ev.loops else None
    short = _call_name(fn)
    for event in outcome.events:
        if event.type not in (EventType.ALLOC, EventType.REGISTER):
            continue
        if event.type is EventType.REGISTER and event.sites and all(internal(s) for s in event.sites) and \
                event.sites <= escaped - outcome.kept:
            _registered_in_place(ev, fn, node, outcome, event, handed_back)
            continue
        # A loop of the callee's own: its PIN002, or a set-up whose buffers it keeps. Unless the
        # callee registers in its loop buffers only its callers explain (`for buf in bufs: with
        # cuda.pinned(buf):`, `bufs` a parameter): its own analysis does not see them, this call does.
        inner_loops = ()
        if event.loops and not (event.sites and event.sites <= collected):
            registers_for_caller = event.type is EventType.REGISTER and not _registers_alone(ev, fn, event.node) and \
                all(scoped_registration(s) for s in event.sites)
            if not registers_for_caller and not _only_in_this_context(ev, fn, event):
                continue
            inner_loops = event.loops
        if event.branch and not _every_call_takes(ev, fn, event.branch, node, event.decided):
            continue
        if event.conditional and not event.loops:
            continue  # under an `if` of a function it calls (a cache: `if self._buf is None:`)
        if owned and event.definitely(lambda s: s.kind.is_pinned and s in owned):
            # Pinned memory the new object holds: allocated by this construction, as long-lived as
            # the object, which the caller keeps (a list of bindings) or drops (one per iteration).
            # Only a construction written in a loop says so; one in a helper (a test's engine
            # built per configuration) is that helper's business.
            if rename is None:
                continue
            sites = frozenset(rename(s) for s in event.sites)
            ev.event(event.type, node, Host(sites, first_site(event.sites).library), api=f"{short}()")
            continue
        if not event.definitely(lambda s: s.kind.is_pinned and internal(s) and s not in escaped and
                                s not in returned):
            continue
        for inner in sorted(event.sites, key=site_order):  # in the code's order, not the hash seed's
            site = Site(kind=inner.kind, library=inner.library, api=f"{short}()", node=node,
                        loops=ev.loops + inner_loops, nbytes=inner.nbytes, max_nbytes=inner.max_nbytes,
                        pooled=inner.pooled, scope=ev.scope,
                        via=frozenset([inner]), variant="call-inside", module=ev.module.info)
            if inner_loops:
                if ev.emit:  # recorded in the final pass only, as ev.event does
                    lifted = _lifted(ev, fn, node, event, lambda _inner, made=site: made, frozenset())
                    ev.events.append(replace(lifted, api=site.api))
            else:
                ev.event(EventType.ALLOC, node, Host(frozenset([site]), inner.library), api=site.api)


def _pins_anything(project, outcome: Outcome) -> bool:
    """Whether an analysis has a registration or an allocation of pinned memory (kept per outcome):
    most calls have neither, and working out what the rest of ``_pinned_inside`` needs (every escape's
    buffers) for each call of a long helper was most of a test file's check (dgl-ke, survey 54 DC)."""
    return project.per_object(project.pinning_outcomes, outcome, lambda o: any(
        e.type is EventType.REGISTER or e.type is EventType.ALLOC and any(s.kind.is_pinned for s in e.sites)
        for e in o.events))


def _only_in_this_context(ev, fn: Function, event: Event) -> bool:
    """A pinning in a loop of the callee that its analysis for callers at large does not find (a helper
    of the loop pins under `if isinstance(off, np.ndarray):`, which only this caller's argument
    decides): the callee's own PIN002 cannot report it, so this call, where the evidence meets, does."""
    if event.type is not EventType.ALLOC:
        return False
    baseline = ev.module.project.baseline(fn, ev.invocation)
    if baseline is None:
        return False
    return verdict(event) not in _baseline_places(ev.module.project, baseline).get(_where(event), ())


def _baseline_places(project, baseline: Outcome) -> dict:
    """{place of an event (``_where``): the verdicts of the baseline's events there}, kept per
    baseline: asked for every pinning of every call, a scan of the whole baseline each time was
    quadratic (dgl-ke's top-k tests, survey 54 DC: 90 s of one file)."""
    def index(outcome: Outcome) -> dict:
        places: dict = {}
        for other in outcome.events:
            places.setdefault(_where(other), set()).add(verdict(other))
        return places
    return project.per_object(project.baseline_places, baseline, index)


def _registered_in_place(ev, fn: Function, node, outcome: Outcome, event: Event, handed_back: list) -> None:
    """The callee registered, on every call, memory its caller gave it (`lock_pages([self.table])`,
    `pin(x)`): the registration happens at this call, of the caller's buffer, as if written here. Every
    name the caller has for that memory now sees it pinned (the arguments themselves are rebound by
    ``_copy_back``); PIN002 decides, as for a registration written in the loop, whether the buffer
    outlives the iteration."""
    if event.conditional or (event.branch and not _every_call_takes(ev, fn, event.branch, node, event.decided)):
        return
    held = next((h for h in handed_back if h.sites & event.sites), None)
    if held is None:
        return
    rename = _renamer(ev, fn, node, outcome)
    if event.replaced:
        from .effects import pin_in_place
        pin_in_place(ev, event.replaced, Host(frozenset(rename(s) for s in event.sites), held.library))
    if ev.emit:
        lifted = _lifted(ev, fn, node, event, rename, frozenset())
        # (a callee's loop over the list it was given registers each element: that loop stays the
        # innermost, as for the registration written out, and is no condition on the registration)
        ev.events.append(replace(lifted, api=f"{_call_name(fn)}()", replaced=event.replaced,
                                 conditional=event.conditional or bool(event.branch), maybe_unknown=False))


def _registers_alone(ev, fn: Function, node) -> bool:
    """Whether the callee's analysis with nothing known of its callers registers at ``node`` too."""
    baseline = ev.module.project.baseline(fn, ev.invocation)
    return baseline is None or any(e.type is EventType.REGISTER and e.node is node for e in baseline.events)


def _every_call_takes(ev, fn: Function, branch: tuple, node=None, decided: frozenset = frozenset()) -> bool:
    """Whether each ``if`` arm around a callee's allocation is taken on every call this caller makes:
    tests that read only the receiver's fields and module names nobody here stores (a loader's ``if
    self.device == "cuda":`` pinning each batch). Another arm (an ``except``, a ``match`` case) or a
    test on a parameter or a local may go either way from one call to the next."""
    if not isinstance(fn.node, cst.FunctionDef):
        return False
    cache = ev.module.project.changes
    changes = function_changes(fn.node, cache)
    params = fn.node.params.params
    receiver = params[0].name.value if fn.klass is not None and fn.kind == "method" and params else None
    caller_loop = ev.loops[-1] if ev.loops else None
    steady = _steady_parameters(ev, fn, node, caller_loop)
    if steady:
        # `prepare(batch, device=net.device)` in the loop, `if device.type != "cpu":` in the helper: the
        # parameter is what an expression the loop leaves alone gives, the same on every call
        changes = changes.without(steady)
    return all(owner in decided or isinstance(owner, cst.If) and
               same_on_every_call(owner.test, receiver, changes, caller_loop, fn.module.names_library, cache)
               for owner, _ in branch)


def _spelled_arguments(fn: Function, node) -> dict:
    """Parameter name -> the argument expression a call spells out for it (none for a call with
    ``*args`` or ``**kwargs``; a method's receiver is not among them)."""
    if not isinstance(node, cst.Call) or not isinstance(fn.node, cst.FunctionDef) or any(arg.star for arg in node.args):
        return {}
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    if fn.bound is not None and fn.kind in ("method", "class", "property"):
        params = params[1:]
    given = {}
    for index, arg in enumerate(node.args):
        if arg.keyword is not None:
            given[arg.keyword.value] = arg.value
        elif index < len(params):
            given[params[index].name.value] = arg.value
    return given


def _only_calls(fn: Function, name: str) -> bool:
    """Whether the function's body uses its parameter ``name`` only by calling it (``fn()``, never
    storing, returning or passing it on, nor in a nested function), and never rebinds it: what it is
    given runs during the call, if at all."""
    if not isinstance(fn.node, cst.FunctionDef) or name in body_bindings(fn.node):
        return False
    key = (fn.node, name)
    found = _ONLY_CALLS.get(key)
    if found is None:
        called, seen = set(), []
        stack = [fn.node.body]
        nested = False
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and \
                    any(isinstance(n, cst.Name) and n.value == name for n in code_nodes(node)):
                nested = True
                break
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
                called.add(id(node.func))
            if isinstance(node, cst.Name) and node.value == name:
                seen.append(node)
            stack.extend(code_parts(node))
        found = _ONLY_CALLS[key] = not nested and all(id(n) in called for n in seen)
    return found


_ONLY_CALLS: dict = {}


def _steady_parameters(ev, fn: Function, node, caller_loop) -> frozenset:
    """Parameters the body never rebinds whose argument at this call (spelled out, no ``*args``) reads
    only names and attributes the caller's innermost loop does not change."""
    if not isinstance(caller_loop, (cst.For, cst.While)):
        return frozenset()
    given = _spelled_arguments(fn, node)
    rebound = body_bindings(fn.node)
    outer = loop_changes(caller_loop, ev.module.project.changes)
    steady = {name for name, expr in given.items()
              if name not in rebound and invariant(expr, outer, ev.module.names_library)}
    if isinstance(node, cst.Call) and not any(arg.star for arg in node.args):
        # A parameter the call leaves at its default is the same on every call (`use_pin=True` of a
        # batch sampler pinning under `if use_pin and device == "cuda":`, assignment1-basics, survey 53)
        params = fn.node.params
        steady |= {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                   if p.default is not None and p.name.value not in given and p.name.value not in rebound}
    return frozenset(steady)


# ------------------------------------------------------------------------------ lifting
def verdict(event: Event) -> tuple:
    """What rules can conclude from an event, leaving out which particular buffer it is."""
    return (frozenset(event.kinds), bool(event.sites), event.maybe_unknown, event.direction, event.is_async,
            event.dest_allocated, event.staged, frozenset((p.direction, p.hypothetical) for p in event.pending))


_DESCRIBE = {EventType.COPY: "copied here by `{api}`", EventType.READ: "read here", EventType.WRITE: "written here",
             EventType.ESCAPE: "stored here", EventType.LAUNCH: "read by kernel `{api}` here",
             EventType.ALLOC: "allocated here by `{api}`", EventType.REGISTER: "registered here by `{api}`",
             EventType.SYNC: "synchronized here"}


def describe(event: Event) -> str:
    return _DESCRIBE.get(event.type, "here").format(api=event.api)


def _lift(ev, fn: Function, node, outcome: Outcome, baseline: Optional[Outcome]) -> None:
    """Events of this call's analysis of the callee that its baseline does not have: they depend on
    what the caller passed, so the caller is where they are reported."""
    if not ev.emit:
        return
    known, racing = _baseline_index(baseline)
    internal = _internal(outcome)
    made_here = _made_on_its_path(outcome, fn)
    outside = ev.state.pending  # copies in flight when the call was made

    def contextual(site: Site) -> Site:
        # A buffer the callee allocates on this call lives in the caller's loops too.
        return replace(site, loops=ev.loops + site.loops) if internal(site) and ev.loops else site

    passed = outcome.inputs - outcome.own_inputs  # what the caller passed, besides the receiver
    escaped: set = set()
    for event in outcome.events:
        if event.type is EventType.SYNC:
            continue
        if not event.sites and not event.pending:
            # an access, escape or copy of memory nothing explains, with no copy in flight: no rule or
            # fix reads it, and lifting it call after call made a large tree's events grow with its
            # call depth (cudf's utils: 1.6 million lifted events for one file, survey 57 GE)
            continue
        if event.type is EventType.ESCAPE and isinstance(event.node, cst.Return):
            continue  # what the callee returns comes back as the call's value: the caller decides its fate
        # What the caller passed in (an argument, a copy in flight) is where the evidence meets; the
        # callee's own buffers (allocated in it, or its object's) are its own analysis' business,
        # unless only this context shows what happens to them.
        # A copy in flight at the call that the callee makes again before this access (a loop
        # calling a method that copies and then reads without a synchronize) races here in the
        # callee's own analysis already: the same copy and access, reported there.
        given = bool(event.sites & passed) or any(p.node not in racing.get(_where(event), ())
                                                  for p in event.pending & outside)
        once = event.type is EventType.COPY and (_cache_guarded(fn, event) or _taken_for_one_value(ev, fn, node, event))
        if _carried_copy(event, internal) and not (event.sites & made_here(event)):
            ev.events.append(_lifted(ev, fn, node, event, contextual, frozenset(), once))
            continue
        if _sends_what_it_just_made(event, made_here):
            continue
        if not given and verdict(event) in known.get(_where(event), ()):
            continue
        if event.type in (EventType.ALLOC, EventType.REGISTER) and all(internal(s) for s in event.sites):
            continue  # the callee's own allocations: see _pinned_inside
        pending = event.pending
        if pending and event.type in (EventType.READ, EventType.WRITE):
            # Told where the access is, in the callee's own terms: an access to this iteration's
            # buffer while the copy of an earlier iteration's is in flight is no race.
            from .facts import other_iterations_element
            pending = frozenset(p for p in pending if not other_iterations_element(p, event))
        lifted = _lifted(ev, fn, node, event, contextual, pending, once)
        if lifted.type is EventType.ESCAPE:
            # escapes say only which buffers leave: one per set of buffers, loops and arms at this call
            key = (lifted.sites, lifted.loops, lifted.branch, lifted.conditional, lifted.once_per_object)
            if key in escaped:
                continue
            escaped.add(key)
        ev.events.append(lifted)


def _baseline_index(baseline: Optional[Outcome]) -> tuple:
    """(where -> verdicts, where -> copies in flight there) of a callee's baseline events, worked out
    once per baseline: a callee called from many places had them rebuilt at every call."""
    if baseline is None:
        return {}, {}
    found = baseline.__dict__.get("_lift_index")
    if found is None:
        known: dict = {}
        racing: dict = {}  # (type, node) -> the copies its baseline finds still in flight there
        for event in baseline.events:
            known.setdefault(_where(event), set()).add(verdict(event))
            if event.pending:
                racing.setdefault(_where(event), set()).update(p.node for p in event.pending)
        found = (known, racing)
        object.__setattr__(baseline, "_lift_index", found)
    return found


def _taken_for_one_value(ev, fn: Function, node, event: Event) -> bool:
    """A copy under ``if mode == "gpu":`` in the callee, whose ``mode`` this call binds to the variable of
    the caller's loop over a literal of distinct constants (``for mode in ["gpu", "cpu", "prctile"]:``):
    the arm runs on one iteration of that loop at most, which therefore does not repeat the copy."""
    loop = ev.loops[-1] if ev.loops else None
    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name) or not isinstance(node, cst.Call) or \
            not isinstance(fn.node, cst.FunctionDef):
        return False
    # what the loop walks, as its header evaluated it: a literal, or a class's table of modes
    # (`for bv in Configs.EXTRACTION["baseline_methods"]:`)
    walked = ev.state.env.get(iter_key(loop))
    values = list(walked.items) if isinstance(walked, Items) else []
    if not values or any(not isinstance(v, Const) or v.single is None for v in values) or \
            len({v.single for v in values}) != len(values):
        return False
    bound = {name for name, expr in _spelled_arguments(fn, node).items()
             if isinstance(expr, cst.Name) and expr.value == loop.target.value and name not in body_bindings(fn.node)}
    return bool(bound) and any(isinstance(owner, cst.If) and arm == 0 and _equals_a_constant(owner.test, bound)
                               for owner, arm in event.branch)


def _equals_a_constant(test, names: set) -> bool:
    """``name == "literal"`` (either side) for one of ``names``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or \
            not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    left, right = test.left, test.comparisons[0].comparator
    for one, other in ((left, right), (right, left)):
        if isinstance(one, cst.Name) and one.value in names and isinstance(literal(other), Const):
            return True
    return False


def _cache_guarded(fn: Function, event: Event) -> bool:
    """A copy under a method's cache guard (``if self.dev_w is None: self.dev_w = cp.asarray(w)``; ``if
    key not in self._cache:`` storing into it): it runs on the first call for each object only, so a
    caller's loop calling the method does not repeat it."""
    if fn.klass is None or fn.kind != "method":
        return False
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    receiver = params[0].name.value if params else None
    if receiver is None:
        return False
    for branch, arm in event.branch:
        if isinstance(branch, cst.If) and arm == 0:
            fields = _unset_fields(branch.test, receiver)
            if fields and fields & _stored_fields(branch, receiver):
                return True
    return False


def _unset_fields(test, receiver: str) -> frozenset:
    """Fields a cache test asks about: ``self.f is None``, ``not self.f``, ``k not in self.f``, and
    ``or`` of such tests."""
    def field(expr) -> Optional[str]:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == receiver:
            return expr.attr.value
        return None
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        left, right = _unset_fields(test.left, receiver), _unset_fields(test.right, receiver)
        return left | right if left and right else frozenset()
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        name = field(test.expression)
        return frozenset([name]) if name else frozenset()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if isinstance(comparison.operator, cst.Is) and isinstance(comparison.comparator, cst.Name) and \
                comparison.comparator.value == "None":
            name = field(test.left)
        elif isinstance(comparison.operator, cst.NotIn):
            name = field(comparison.comparator)
        else:
            name = None
        return frozenset([name]) if name else frozenset()
    return frozenset()


def _stored_fields(branch: cst.If, receiver: str) -> frozenset:
    """Fields the ``if``'s true arm sets: ``self.f = ...``, ``self.f[k] = ...``."""
    from .fields import field_stores
    stored = set(field_stores(branch, receiver)[0])
    for small in small_statements(suite_body(branch.body)):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        for target in targets:
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute) and \
                    isinstance(target.value.value, cst.Name) and target.value.value.value == receiver:
                stored.add(target.value.attr.value)
    return frozenset(stored)


def _where(event: Event) -> tuple:
    """An event's place as the callee's baseline knows it: the node in the callee and, for an event
    lifted from a call the callee makes, the node deepest in its trace (two copies reached through
    the same call, one pageable in the baseline, are two events: the other is not known by it)."""
    return event.type, event.node, event.trace[-1].node if event.trace else None


def _lifted(ev, fn: Function, node, event: Event, contextual, pending: frozenset, once: bool = False) -> Event:
    """The callee's event as the caller's, at the call: in the caller's loops too (unless ``once``: it
    runs on the first call only), with the step into the callee first on its path."""
    # An event the callee itself lifted from a call it makes is at that call: the step says so (the
    # copy is the next step, in the function it calls).
    said = f"calls `{event.trace[0].function.rsplit('.', 1)[-1]}` here" if event.trace else describe(event)
    step = TraceStep(event.module, event.node, said, fn.name)
    once = once or event.once_per_object  # a cached upload two calls down is no more repeated
    # the callee's loops, but for those it runs the event on one iteration of (`if k == 0:`): the arms
    # around it are the caller's from here on
    own_loops = tuple(loop for loop in event.loops if not on_one_iteration(event.branch, loop))
    return Event(
        type=event.type, node=node, loops=event.loops if once else ev.loops + own_loops, branch=ev.branch,
        sites=frozenset(contextual(s) for s in event.sites), maybe_unknown=event.maybe_unknown,
        varies_in=event.varies_in, api=event.api, direction=event.direction, is_async=event.is_async,
        stream=event.stream, dest_allocated=event.dest_allocated, staged=event.staged, library=event.library,
        family=event.family, stream_node=None, scope=ev.scope, pending=pending, trace=(step,) + event.trace,
        module=ev.module.info, visits=_lifted_visits(ev, event, contextual),
        conditional=event.conditional or bool(event.branch) or bool(event.loops), once_per_object=once)


def _lifted_visits(ev, event: Event, contextual) -> tuple:
    """A callee's copy of each element of a loop (``Event.visits``): of the callee's own loop, as it
    was; of a loop here, where this call runs on every iteration of it (the callee's copy ran on
    every call)."""
    if not event.visits:
        return ()
    loop, groups = event.visits
    if loop not in event.loops and not (ev.loops and ev.loops[-1] is loop and
                                        len(ev.branch) == ev.module.project.loop_branch_depth.get(loop, 0)):
        return ()
    return loop, tuple(frozenset(contextual(s) for s in group) for group in groups)


def _blocks(copy: Event) -> bool:
    """A copy that moves a pageable buffer at pageable bandwidth: blocking, or staged by the library
    (`cupy.asarray`); a truly asynchronous copy of a pageable buffer is PIN001's, at the copy."""
    return not copy.is_async or copy.staged


def _made_on_its_path(outcome: Outcome, fn: Optional[Function] = None):
    """Sites a call allocates before a given copy on the copy's own path (the allocation's ``if`` arms
    are the copy's too): such a copy sends the buffer that call made, however the object's field
    that holds it is shared with earlier calls (pygamd's cell list, reallocated and uploaded when the
    box changes). Conversions and arithmetic (no allocation event of their own) count where the
    function's own straight-line statements make them above the copy (`image = np.tile(b,
    reps).astype(t); self.host = image; self.dev = cp.asarray(image)`)."""
    allocations = [e for e in outcome.events if e.type is EventType.ALLOC and not e.loops]
    function = fn.node if fn is not None and isinstance(fn.node, cst.FunctionDef) else None
    straight = _straight_line_nodes(function) if function is not None else {}

    def made(event: Event) -> frozenset:
        found = frozenset(s for a in allocations if event.branch[:len(a.branch)] == a.branch for s in a.sites)
        if straight:
            # made by a statement before the one holding the copy
            where = _statement_of(function, event.node)
            found |= frozenset(s for s in event.sites if _made_by_this_body(s) and s.node in straight and
                               where is not None and straight[s.node] < where)
            found |= _made_in_every_arm(function, event, where)
        if function is not None:
            # made by an earlier simple statement of the copy's own block (`if enabled: frac = pts -
            # np.round(pts); d = cp.asarray(frac)`): reaching the copy, the call ran it (pypty, survey 55 EC)
            block = _block_positions(function)
            here = block.get(id(event.node))
            if here is not None:
                found |= frozenset(s for s in event.sites if _made_by_this_body(s) and
                                   block.get(id(s.node), (None,))[0] == here[0] and block[id(s.node)][1] < here[1])
        return found
    return made


_BLOCKS: dict = {}


def _block_positions(function: cst.FunctionDef) -> dict:
    """id(node) -> (the block of simple statements it is in, the index of its statement there), for the
    calls and operations of the function's simple statements at any depth (not in nested definitions)."""
    found = _BLOCKS.get(function)
    if found is None:
        from ..walk import child_blocks
        found = _BLOCKS[function] = {}
        todo = [suite_body(function.body)]
        number = 0
        while todo:
            statements = todo.pop()
            number += 1
            for index, statement in enumerate(statements):
                if isinstance(statement, cst.SimpleStatementLine):
                    for part in code_nodes(statement, into_definitions=False):
                        found[id(part)] = (number, index)
                elif not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                    todo.extend(child_blocks(statement))
    return found


def _made_by_this_body(site: Site) -> bool:
    """A conversion or arithmetic result of the body's own statements, or the new buffer of a call
    that allocates anew on each call (a helper method that rebinds `self.L = np.zeros(...)`, called
    just before the copy: TPSolver's benchmark); not a construction's buffers, which the new object
    may share with others made the same way."""
    return not site.via or site.variant == "call"


def _made_in_every_arm(function: cst.FunctionDef, event: Event, where: Optional[int]) -> frozenset:
    """The copy's buffers when every one of them is made on this call before the copy: by the body's
    straight-line statements or in the arms of an ``if`` with an ``else``, each arm that goes on to
    the copy making one of them (cuCIM's `set_args`: `np.kron` in one arm, `np.tile` in the other).
    An arm that makes none sends something older (`else: image = self.base`)."""
    if where is None or not event.sites:
        return frozenset()
    arms = _complete_if_arms(function)
    straight = _straight_line_nodes(function)
    covered: dict = {}  # if statement index -> arms that make one of the buffers
    for site in event.sites:
        if not _made_by_this_body(site):
            return frozenset()
        if site.node in straight and straight[site.node] < where:
            continue
        at = arms.get(site.node)
        if at is None or at[0] >= where:
            return frozenset()
        covered.setdefault(at[0], (set(), at[2]))[0].add(at[1])
    if not covered or any(not going_on or not going_on <= made for made, going_on in covered.values()):
        return frozenset()
    return frozenset(event.sites)


def _sends_what_it_just_made(event: Event, made_here) -> bool:
    """A blocking copy, outside any loop of the callee's own, of pageable buffers it allocated on the
    copy's own path (a slot map regrown and uploaded in the same arm): one copy per new buffer, which
    no caller's loop moves again and no other rule is about, so no caller, however far up, sees it
    (tinyserve's expert cache, three calls below the batcher's loop, survey 30)."""
    return _blocking_pageable_copy(event) and event.sites <= made_here(event)


def _carried_copy(event: Event, internal) -> bool:
    """A blocking copy, outside any loop of the callee, of a pageable buffer the callee did not make
    (its object's, a global's, one it was given): a loop around some caller moves that same buffer
    on every iteration (`sp.upload()` copying `self.pos`, called from a step called in a loop),
    which neither the callee's own analysis nor one caller alone sees (PIN007). Carried up to each
    call, as the callee's own events are not; pinned buffers are left out (PIN008 counts their
    transfers)."""
    if event.type is EventType.LAUNCH:
        # A kernel reading mapped memory the callee did not make (its object's zero-copy buffer): a
        # loop around a caller re-reads it over the bus on every iteration (PIN004; pyCuSDR's
        # demodulator methods, survey 36).
        return not event.loops and bool(event.sites) and \
            all(s.kind is Kind.MAPPED and not internal(s) for s in event.sites)
    return _blocking_pageable_copy(event) and not any(internal(s) for s in event.sites)


def _blocking_pageable_copy(event: Event) -> bool:
    """A blocking copy of pageable buffers, outside any loop of the scope that made it, or inside
    loops that each copy another of them (`for o in self.outputs: memcpy_dtoh(o.host, o.dev)` in a
    TensorRT runner's `infer`): each call copies each of them once, and a caller's loop again."""
    return event.type is EventType.COPY and _blocks(event) and bool(event.sites) and \
        all(loop in event.varies_in for loop in event.loops) and all(s.kind is Kind.PAGEABLE for s in event.sites)


def _lift_carried_copies(ev, fn: Function, node, baseline: Outcome) -> None:
    """``_carried_copy`` events of a callee analysed as it is on its own, at this call."""
    internal = _internal(baseline)
    made_here = _made_on_its_path(baseline, fn)
    for event in baseline.events:
        if _carried_copy(event, internal) and not (event.sites & made_here(event)):
            ev.events.append(_lifted(ev, fn, node, event, lambda site: site, frozenset()))


# ------------------------------------------------------------------------------ members
def function_value(member, bound: Optional[Value] = None) -> Function:
    """A Function for a class member (see ``project.Member``), bound to ``bound`` where Python binds it."""
    if member.kind == "static":
        bound = None
    elif member.kind == "class":
        bound = member.owner
    return Function(node=member.node, module=member.owner.module, name=member.qualified, kernel=member.kernel,
                    bound=bound, klass=member.owner, kind=member.kind)


def member(ev, base: Value, attr: str, node) -> Value:
    project = ev.module.project
    if isinstance(base, Instance):
        value = base.field(attr)
        if value is None:
            value = placement.buffer(base, attr)  # `self.marker` of `register_buffer("marker", t)`
        if value is UNKNOWN or value is None:
            value = _annotated_number(base.klass, attr) or value
        if value is not None:
            return value
        info = project.class_info(base.klass)
        found = info.lookup(attr) if info is not None else None
        if found is not None:
            if found.kind == "nested-class":
                return found.nested
            fn = function_value(found, bound=base)
            if found.kind == "property":
                return call(ev, fn, _no_args(), node, None)
            return fn
        fields = project.class_fields(base.klass)
        for key, value in fields:
            if key == attr:
                return value
        if info is not None and info.fields is not None and attr in info.fields:
            # a dataclass field of an object nothing here says how it was built (`cfg: Settings`):
            # its default, or whatever the construction gave (`Settings(use_cuda=True)`)
            default = _read_class_attribute(ev, base.klass, attr)
            return Const(default.values | {ANYTHING}) if isinstance(default, Const) else UNKNOWN
        return _read_class_attribute(ev, base.klass, attr)
    if isinstance(base, ClassRef):
        info = project.class_info(base)
        found = info.lookup(attr, record=False) if info is not None else None
        if found is not None:
            if found.kind == "nested-class":
                return found.nested
            return function_value(found, bound=None if found.kind == "method" else base)
        return _read_class_attribute(ev, base, attr)
    if isinstance(base, ModuleRef):
        value = project.module_attribute(base.name, attr)
        if value == Const.of(None):
            # `global_var.AI_DEVICE` read through the module object sees what any module set there at
            # run time (`global_var.AI_DEVICE = get_device()`); None is only its value at load.
            return UNKNOWN
        return value
    if isinstance(base, Super):
        info = project.class_info(base.klass)
        found = info.lookup(attr, after_self=True) if info is not None else None
        if found is not None:
            return function_value(found, bound=base.receiver)
        return UNKNOWN
    return UNKNOWN


def _read_class_attribute(ev, klass: ClassRef, attr: str) -> Value:
    return class_attribute_read(ev.module.project, ev.module, klass, attr)


def class_attribute_read(project, reader, klass: ClassRef, attr: str) -> Value:
    """A class attribute read in the module ``reader``: the class body's constant (or table of
    constants) only where neither that module nor the class's changes it."""
    value = _class_attribute(project, klass, attr)
    if value is not UNKNOWN and (attr in changed_attributes(reader.info.module) or
                                 attr in changed_attributes(klass.module.info.module)):
        return UNKNOWN  # `Config.batch = args.batch` in a script: the class body's value is only the first
    return value


def _class_attribute(project, klass: ClassRef, attr: str) -> Value:
    """``device = torch.device("cpu")`` in a class body (a test double's), read through an object
    that no method gives that attribute: the class's value, found along its bases as Python does.
    Only a single unconditional assignment of a constant counts."""
    key = (klass, attr)
    found = project.class_attributes.get(key)
    if found is None:
        found = project.class_attributes[key] = _find_class_attribute(project, klass, attr)
    return found


def _find_class_attribute(project, klass: ClassRef, attr: str) -> Value:
    info = project.class_info(klass)
    for owner in (info.mro() if info is not None else []):
        if attr in owner.members:
            return UNKNOWN
        bound = [small for small in class_body_small(owner.cls.node)
                 if isinstance(small, (cst.Assign, cst.AnnAssign)) and attr in _assigned_names(small)]
        if not bound:
            if any(not isinstance(statement, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef))
                   for statement in suite_body(owner.cls.node.body)):
                return UNKNOWN  # perhaps bound under an `if` or a `for` of the class body
            continue
        if len(bound) > 1 or bound[0].value is None:
            return UNKNOWN
        value = constant_in(owner.cls.module, bound[0].value)
        if value is UNKNOWN and attr not in changed_attributes(owner.cls.module.info.module):
            # `baseline_methods = ["maximin", "constant"]` (a table of settings), which the class's module
            # neither rebinds nor changes in place (the modules reading it are checked by the caller)
            value = literal_display(bound[0].value)
        return value
    return UNKNOWN


def literal_display(node) -> Value:
    """A tuple, list or dict display of literals (nested ones too), as the evaluator would build it."""
    if isinstance(node, (cst.Tuple, cst.List)):
        items = [_literal_or_display(element.value) if isinstance(element, cst.Element) else UNKNOWN
                 for element in node.elements]
        return UNKNOWN if any(item is UNKNOWN for item in items) else Items(tuple(items))
    if isinstance(node, cst.Dict):
        entries = {}
        for element in node.elements:
            key = literal(element.key) if isinstance(element, cst.DictElement) else UNKNOWN
            value = _literal_or_display(element.value) if isinstance(key, Const) and key.single is not None else UNKNOWN
            if value is UNKNOWN:
                return UNKNOWN
            entries[key.single] = value
        return mapping(entries)
    return UNKNOWN


def _literal_or_display(node) -> Value:
    value = literal(node)
    return value if value is not UNKNOWN else literal_display(node)


_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
                       "discard", "sort", "reverse", "popitem", "__setitem__", "__delitem__"})
_CHANGED_ATTRIBUTES: dict = {}


def changed_attributes(module: cst.Module) -> frozenset:
    """Attribute names the module rebinds outside ``self`` (``Config.modes = ...``, ``cls.x += 1``) or
    whose value it changes in place (``Config.modes.append(m)``, ``cfg.table[k] = v``)."""
    found = _CHANGED_ATTRIBUTES.get(module)
    if found is not None:
        return found
    names = set()

    def attribute_name(node):
        return node.attr.value if isinstance(node, cst.Attribute) else None

    def store(target):
        if isinstance(target, cst.Attribute) and not (isinstance(target.value, cst.Name) and target.value.value == "self"):
            names.add(target.attr.value)
        elif isinstance(target, cst.Subscript) and attribute_name(target.value):
            names.add(attribute_name(target.value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                store(element.value)

    for part in code_nodes(module):
        if isinstance(part, cst.AssignTarget):
            store(part.target)
        elif isinstance(part, (cst.AugAssign, cst.AnnAssign)):
            store(part.target)
            if isinstance(part, cst.AugAssign) and attribute_name(part.target):
                names.add(attribute_name(part.target))  # `self.modes += [...]` changes a shared list
        elif isinstance(part, cst.Del):
            store(part.target)
        elif isinstance(part, cst.Call) and isinstance(part.func, cst.Attribute) and \
                part.func.attr.value in _MUTATORS and attribute_name(part.func.value):
            names.add(attribute_name(part.func.value))
        elif isinstance(part, cst.Call) and isinstance(part.func, cst.Name) and part.func.value in ("setattr", "delattr") \
                and len(part.args) >= 2:
            name = literal(part.args[1].value)
            if isinstance(name, Const) and isinstance(name.single, str):
                names.add(name.single)
    found = _CHANGED_ATTRIBUTES[module] = frozenset(names)
    return found


def _assigned_names(small) -> frozenset:
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    return frozenset(t.value for t in targets if isinstance(t, cst.Name))


_NUMBER_FIELDS: dict = {}


def _annotated_number(klass: ClassRef, attr: str) -> Optional[Value]:
    """``temperature: float`` in a class body (a dataclass's field): a number, whatever was stored;
    ``positions: list[int]``: a list of Python numbers (tokasaurus's step inputs, taken off a queue
    and made into index tensors each step, survey 50 AJ)."""
    from ..walk import class_body_small
    numbers = _NUMBER_FIELDS.get(klass.node)
    if numbers is None:
        numbers = _NUMBER_FIELDS[klass.node] = {
            small.target.value: found for small in class_body_small(klass.node)
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
            for found in [_numbers_annotation(small.annotation.annotation)] if found is not None}
    return numbers.get(attr)


_SEQUENCE_TYPES = frozenset({"list", "List", "Sequence", "tuple", "Tuple"})


def _numbers_annotation(annotation) -> Optional[Value]:
    """``int``/``float`` (a number), ``list[int]``, ``Sequence[float]``, ``tuple[int, ...]`` (a list of
    numbers), ``Optional`` of one of them; None for anything else. (The number cases of
    ``annotation_value``, read from the class body alone: that one resolves classes, whose fields
    may be what is being worked out here.)"""
    if isinstance(annotation, cst.Name) and annotation.value in ("int", "float"):
        return Scalar(annotation.value)
    if not isinstance(annotation, cst.Subscript):
        return None
    head = annotation.value.attr.value if isinstance(annotation.value, cst.Attribute) else \
        annotation.value.value if isinstance(annotation.value, cst.Name) else ""
    inner = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
    if head == "Optional" and len(inner) == 1:
        return _numbers_annotation(inner[0])
    if head not in _SEQUENCE_TYPES or not inner or \
            any(not (isinstance(e, cst.Name) and e.value in ("int", "float")) and not isinstance(e, cst.Ellipsis)
                for e in inner):
        return None
    element = inner[0]
    return Seq(Scalar(element.value)) if isinstance(element, cst.Name) else None


def setter_of(ev, instance: Value, attr: str):
    """The property setter ``obj.attr = value`` calls, if the object's class defines one."""
    if not isinstance(instance, Instance):
        return None
    info = ev.module.project.class_info(instance.klass)
    found = info.lookup(attr) if info is not None else None
    if found is None or found.kind != "property" or found.setter is None:
        return None
    return Function(node=found.setter, module=found.owner.module, name=found.qualified, bound=instance,
                    klass=found.owner, kind="method")


def set_attribute(ev, setter: Function, instance: Instance, value: Value, node) -> Value:
    """Run a property setter on ``instance``; the object as the setter leaves it."""
    from .effects import Args
    env, _ = bind_parameters(ev, setter, Args(((None, value),), {}, False), None)
    outcome = _invoke(ev, setter, env, node)
    if outcome is None:
        ev.escape(node, [value])
        return instance
    rename = _renamer(ev, setter, node, outcome)
    after = dict(outcome.params).get(_self_name(setter.node), instance)
    return map_sites(after, rename) if isinstance(after, Instance) else instance


def super_value(ev) -> Value:
    fn = ev.invocation.function
    if fn is None or fn.klass is None:
        return UNKNOWN
    params = [*fn.node.params.posonly_params, *fn.node.params.params]
    receiver = ev.state.env.get(params[0].name.value, UNKNOWN) if params else UNKNOWN
    return Super(fn.klass, receiver)


def _self_name(node: cst.FunctionDef) -> Optional[str]:
    params = [*node.params.posonly_params, *node.params.params]
    return params[0].name.value if params else None


def _no_args():
    from .effects import Args
    return Args((), {}, False)


__all__ = ["Invocation", "Outcome", "annotation_value", "bind_parameters", "call", "construct", "context_free_env",
           "describe", "function_value", "member", "super_value", "Kind", "Mapping"]
