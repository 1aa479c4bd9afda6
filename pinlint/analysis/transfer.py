"""Transfer functions of the control-flow graph's elements: what each statement does to the state.

``run_element`` is called by the solver once per element per visit; expressions are evaluated by the
``Evaluator``. Assignments bind names and attribute chains (``self.buf``) flow-sensitively; stores
into containers and objects update the container's value and count as escapes of the stored buffer
(it outlives the statement); ``with`` statements make streams current or register buffers for their
block and undo it on the way out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from ..imports import dotted
from ..model import EventType
from ..walk import code_nodes, has_own_continue, suite_body
from . import doubles
from .placement import unplaced
from .domain import (with_visits, UNKNOWN, Const, Context, Obj, Function, Device, Host, Instance, Items, Mapping, Seq, Stream, Tensor, Value,
                     add_element, element_of, iterated_as_views, join, merged, rebuild, varying_in)
from .state import BEFORE, ELEMENT_OF, GLOBAL, KEY_OF, MAYBE_NONE, MUTATED, PAIR_OF, PAIRED, REBOUND, RETURN, STREAM, iter_key, put


def run_element(ev, element) -> None:
    ev.element = element
    handler = _HANDLERS[element.kind]
    handler(ev, element)


# ------------------------------------------------------------------------------ statements
def _next_or_none(expr) -> bool:
    """``next(it, None)``: the iterator's next element, or None once it is spent."""
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "next" and \
        len(expr.args) == 2 and isinstance(expr.args[1].value, cst.Name) and expr.args[1].value.value == "None"


def _stmt(ev, element) -> None:
    node = element.node
    if isinstance(node, cst.Assign):
        value = ev.expr(node.value)
        derived = ev.derived(node.value) if ev.loops and len(node.targets) == 1 and \
            isinstance(node.targets[0].target, cst.Name) else None
        for target in node.targets:
            assign(ev, target.target, value)
            if isinstance(target.target, cst.Name) and _next_or_none(node.value):
                ev.state.env[MAYBE_NONE + target.target.value] = Const.of(True)
        if len(node.targets) == 1 and isinstance(node.value, cst.Subscript):
            _note_element(ev, node.targets[0].target, node.value.value)  # `sp = self.by_name[name]`
        if derived is not None:
            ev.state.env[derived[0] + node.targets[0].target.value] = derived[1]
        elif ev.loops and len(node.targets) == 1 and isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            _derive_unpacked(ev, node.targets[0].target, node.value)
    elif isinstance(node, cst.AnnAssign):
        if node.value is not None:
            value = ev.expr(node.value)
            if value is UNKNOWN:
                value = ev.calls.annotated(node.annotation, node.target)
            assign(ev, node.target, value)
    elif isinstance(node, cst.AugAssign):
        _augmented(ev, node)
    elif isinstance(node, cst.Expr):
        if isinstance(node.value, (cst.ListComp, cst.SetComp)):
            ev.discarded.add(node.value)  # a list built for its elements' side effects, then dropped
        ev.expr(node.value)
    elif isinstance(node, cst.Return):
        value = ev.expr(node.value) if node.value is not None else Const.of(None)
        ev.escape(node, [value])
        ev.state.env[RETURN] = value
    elif isinstance(node, cst.Raise):
        if node.exc is not None:
            ev.expr(node.exc)
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        slots = ev.module.none_slots if isinstance(node, cst.Global) else frozenset()
        for name in node.names:
            # A slot the module sets only to None, filled here (`global _client; if _client is None:
            # _client = Client(); return _client`): what this function makes of it is what it holds,
            # as on the first call; any other global may hold anything by now.
            held = UNKNOWN
            if isinstance(node, cst.Global) and not _rebinds(ev, node, name.name.value):
                # Only read here: what any function reading the global finds, its module value joined
                # with what the functions that rebind it leave there (`global pipe; pipe = Pipeline()`
                # in a startup hook, read through `global pipe` by the handlers).
                held = ev.module.global_value(name.name.value) or UNKNOWN
            elif name.name.value in slots:
                held = Const.of(None)
            ev.state.env[name.name.value] = held
            ev.state.env["$outer:" + name.name.value] = Const.of(True)
            if isinstance(node, cst.Global):
                ev.state.env[GLOBAL + name.name.value] = Const.of(True)
    elif isinstance(node, cst.Del):
        _forget(ev, node.target)
    elif isinstance(node, cst.Assert):
        ev.expr(node.test)
    elif isinstance(node, (cst.Import, cst.ImportFrom)):
        _import(ev, node)


def _import(ev, node) -> None:
    """An import of the checked code's own module or definition binds the name where it runs (so two
    alternative imports under an ``if`` give one or the other); library imports are the import map's."""
    top = ev.scope == "<module>"
    for local, qualified in ev.module.imports_in(node):
        if ev.tables.library_of(qualified) is not None:
            continue
        if top and local not in ev.module.top_level_names:
            # Nothing at the module's top level reads the name (its functions reach imports through
            # the import map, when they run), so the body's analysis need not load the module it
            # names: a package's __init__ importing its submodules made every analysis of a
            # module's globals load and analyse the whole package.
            continue
        value = ev.module.project.resolve(qualified, ev.module)
        if value is not UNKNOWN:
            ev.bind(local, value)


def _augmented(ev, node: cst.AugAssign) -> None:
    target = ev.expr(node.target)
    value = ev.expr(node.value)
    if isinstance(value, Host) and not isinstance(target, Device) and not value.pointer:
        # `w[rows] -= step` of a host array: a CPU kernel reads `step` (a tensor of unknown place
        # combined in place with a host tensor is on the CPU too: torch mixes devices for 0-d only,
        # and reads a 0-d one on the host; a Python number or list takes the array's values). So
        # whatever the target (`holder.table[rows] -= step_cpu` of an object nothing here tells,
        # RecStore's sparse optimizer, survey 54 DC), the host reads the right-hand side.
        ev.event(EventType.READ, node, value)
    if isinstance(target, Host):
        ev.event(EventType.READ, node, target)
        ev.event(EventType.WRITE, node, target)
        return
    if isinstance(target, (Items, Seq)) and isinstance(node.operator, cst.AddAssign):
        ev.escape(node, [value])  # bufs += [h]
        rebind(ev, node.target, add_element(target, element_of(value)), mutated=True)
        return
    if isinstance(target, Mapping) and isinstance(value, Mapping) and isinstance(node.operator, cst.BitOrAssign):
        ev.escape(node, [value])  # kw |= {"use_gpu": False}
        rebind(ev, node.target, merged(target, value), mutated=True)
        return
    ev.escape(node, [value])
    if isinstance(target, Device):
        return  # `d *= 2` keeps a device array a device array
    key = dotted(node.target)
    if key:
        put(ev.state.env, key, UNKNOWN)


def _forget(ev, target: cst.BaseExpression) -> None:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _forget(ev, element.value)
        return
    key = dotted(target)
    if key:
        ev.state.env.pop(key, None)


def rebind(ev, target: cst.BaseExpression, value: Value, mutated: bool = True) -> None:
    """A container or object changed in place: the name (or attribute chain) holding it now holds the
    new value, and a parameter that held it is marked changed so callers see the change too."""
    key = dotted(target)
    if key is None:
        return
    put(ev.state.env, key, value)
    if mutated:
        ev.state.env[MUTATED + key.split(".")[0]] = Const.of(True)
        changed_element(ev, key.split(".")[0])


# An object taken out of a container (`for sp in species:`, `sp = by_name[name]`) is one of the
# container's objects: changed in place (`sp.to_cpu()` sets its fields), the container holds the
# changed object too. Which element it was is not known, so each may be either (a weak update):
# a later loop over the container no longer sees only the objects as they were before.


def _note_element(ev, target, container) -> None:
    if isinstance(container, cst.Call) and isinstance(container.func, cst.Attribute) and not container.args:
        # `for s in slabs.values():`, `for k, s in slabs.items():`: `s` is one of the dict's values
        method = container.func.attr.value
        if method == "items" and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            target = target.elements[1].value
        elif method != "values":
            return
        container = container.func.value
    if isinstance(target, cst.Name) and dotted(container) is not None and \
            dotted(container).split(".")[0] != target.value:
        ev.state.env[ELEMENT_OF + target.value] = Const.of(container)


def changed_element(ev, name: str) -> None:
    """``name``'s object changed: the container it came from may hold the changed object."""
    marker = ev.state.env.get(ELEMENT_OF + name)
    if not isinstance(marker, Const) or marker.single is None:
        return
    from .project import folded
    container_expr = marker.single
    container = ev.expr(container_expr)
    if type(container) not in (Seq, Items, Mapping):
        return
    element = folded(ev.state.env, name)
    updated = rebuild(container, lambda held: join(held, element))
    if updated != container:
        rebind(ev, container_expr, updated)


def assign(ev, target: cst.BaseExpression, value: Value) -> None:
    env = ev.state.env
    if isinstance(value, Function) and value.captured_now:
        value = replace(value, captured_now=())  # kept in a name, the lambda may run after they change
    if isinstance(target, cst.Name):
        if "$outer:" + target.value in env:
            ev.escape(target, [value])  # a global or nonlocal: it outlives this scope
            if GLOBAL + target.value in env:
                env[REBOUND + target.value] = value  # what the module's other functions may see (Project.rebound_global)
        ev.bind(target.value, value)
        return
    if isinstance(target, cst.Attribute):
        _store_attribute(ev, target, value)
        return
    if isinstance(target, (cst.Tuple, cst.List)):
        _unpack(ev, target, value)
        return
    if isinstance(target, cst.Subscript):
        store_item(ev, target, value)
        return
    if isinstance(target, cst.StarredElement):
        assign(ev, target.value, Seq(element_of(value)) if value is not UNKNOWN else UNKNOWN)


def _store_attribute(ev, target: cst.Attribute, value: Value) -> None:
    """``obj.attr = value``: a property setter runs where the class defines one; otherwise the field
    holds the value from here on (and, stored on an object, the value outlives this scope)."""
    from . import interproc
    attr = target.attr.value
    owner = ev.expr(target.value)
    setter = interproc.setter_of(ev, owner, attr)
    if setter is not None:
        if isinstance(target.value, cst.Name):
            # the object with what this scope stored on it (`self._stream = s` before `self.codebook =
            # cb`): the setter runs on it, and rebinding the name to what it leaves keeps them
            from .project import folded
            with_stores = folded(ev.state.env, target.value.value)
            own_setter = interproc.setter_of(ev, with_stores, attr)
            if own_setter is not None:
                # (a name this scope does not bind, a closure's `panel`, folds to nothing: the object
                # the expression gave stays the one the setter runs on)
                owner, setter = with_stores, own_setter
        updated = interproc.set_attribute(ev, setter, owner, value, target)
        _replace_object(ev, target.value, updated)
        return
    ev.escape(target, [value])
    value = unplaced(value)  # a module kept in a field may be moved by any method (placement.py)
    key = dotted(target)
    if key is not None:
        _note_before(ev, key, owner, attr)
        ev.store(key, value)
    elif isinstance(owner, Instance):
        _replace_object(ev, target.value, owner.with_fields({attr: value}))


def _note_before(ev, key: str, owner: Value, attr: str) -> None:
    """What the field held before this scope's first store into it, where the object says: a path
    that does not store keeps it (``State.join``)."""
    env = ev.state.env
    if key in env or BEFORE + key in env or not isinstance(owner, Instance):
        return
    before = owner.field(attr)
    if before is None:
        before = dict(ev.module.project.class_fields(owner.klass)).get(attr)
    if before is not None:
        put(env, BEFORE + key, before)


def _replace_object(ev, expr: cst.BaseExpression, value: Value) -> None:
    """The object ``expr`` names is now ``value``: a name or attribute chain is rebound; an element
    of a container (``inputs[0]``) is replaced in it (at a constant index: that element only)."""
    key = dotted(expr)
    if key is not None:
        ev.store(key, value)
        return
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        container = ev.expr(expr.value)
        index = ev.expr(expr.slice[0].slice.value)
        position = index.single if isinstance(index, Const) else None
        updated: Optional[Value] = None
        if isinstance(container, Items) and isinstance(position, int) and -len(container.items) <= position < \
                len(container.items):
            items = list(container.items)
            items[position] = value
            updated = replace(container, items=tuple(items))
        elif isinstance(container, Items) and position is None:
            # `holders[k].host = big` with `k` a variable: one of them changed (and a read of
            # `holders[k]` before `k` or the list changes is that one: `_remember_item`)
            updated = replace(container, items=tuple(join(item, value) for item in container.items))
        elif isinstance(container, Seq):
            # One element changed: at a constant index the line certainly meets the new value.
            updated = Seq(value if position is not None else join(container.element, value))
        elif isinstance(container, Mapping) and isinstance(index, Const) and index.single is not None:
            updated = container.with_entry(index.single, value)
        if updated is not None:
            rebind(ev, expr.value, updated)
            _remember_item(ev, expr, updated, value)


def _unpack(ev, target, value: Value) -> None:
    elements = list(target.elements)
    stars = [i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)]
    starred = bool(stars)
    items = value.items if isinstance(value, Items) and len(value.items) == len(elements) and not starred else None
    if isinstance(value, Items) and len(stars) == 1 and len(value.items) >= len(elements) - 1:
        # `framed, *meta = pad(img)` of `return board, w, h, side`: the names before and after the
        # star take the items at their places, the starred one a list of those between.
        star, after = stars[0], len(elements) - stars[0] - 1
        middle = value.items[star:len(value.items) - after]
        items = value.items[:star] + (Items(tuple(middle)),) + value.items[len(value.items) - after:]
        for element, item in zip(elements, items):
            assign(ev, element.value, item)
        return
    for index, element in enumerate(elements):
        if isinstance(element, cst.StarredElement):
            assign(ev, element.value, Seq(element_of(value)) if isinstance(value, (Items, Seq)) else UNKNOWN)
        elif items is not None:
            assign(ev, element.value, items[index])
        elif isinstance(value, Host) and value.batch:
            assign(ev, element.value, value)  # `x, y = batch`
        elif isinstance(value, Host) and not starred:
            # `row, = arr`: the rows of a 2-D (or more) array are views of its memory.
            row = element_of(value)
            assign(ev, element.value, row if isinstance(row, Host) else UNKNOWN)
        elif isinstance(value, Seq):
            assign(ev, element.value, value.element)
        elif isinstance(value, Device) and not starred:
            # `d_data, d_scratch = pair` of one device array or a list of them (`return out[0] if
            # len(out) == 1 else out`): either way each name is a device array of that library
            assign(ev, element.value, element_of(value))
        elif isinstance(value, Items) and not starred:
            assign(ev, element.value, UNKNOWN)
        else:
            assign(ev, element.value, UNKNOWN)


def store_item(ev, target: cst.Subscript, value: Value) -> None:
    """``target`` (``container[index]``) holds ``value`` from here on."""
    base = ev.expr(target.value)
    indexes = ev.slices(target)
    if isinstance(base, (Host, Device, Tensor)) and isinstance(value, Host):
        ev.event(EventType.READ, target, value)  # `out[i:j] = h` copies h's bytes into the array
    if isinstance(base, Host):
        if base.batch and not _writes_elements(target):
            # `batch["image"] = batch["image"].cuda(non_blocking=True)`: a loader's batch is most often a
            # dict or a list of tensors, and such a store replaces an entry; no byte of a tensor is written.
            return
        ev.event(EventType.WRITE, target, base)
        return
    ev.escape(target, [value])  # stored in a container: it may outlive the statement
    index = indexes[0] if len(indexes) == 1 else UNKNOWN
    if isinstance(base, Mapping):
        if isinstance(index, Const) and index.single is not None:
            updated: Value = base.with_entry(index.single, value)
        else:
            # A key not known here may be any of those the dict holds, or another one.
            entries = tuple((key, join(old, value)) for key, old in base.entries)
            updated = Mapping(entries, value if base.rest is None else join(base.rest, value), base.optional)
            _remember_item(ev, target, updated, value)
        _changed(ev, target.value, updated)
    elif isinstance(base, (Items, Seq)):
        position = index.single if isinstance(index, Const) else None
        if isinstance(base, Items) and isinstance(position, int) and not isinstance(position, bool) and \
                -len(base.items) <= position < len(base.items):
            items = list(base.items)
            items[position] = value  # `slots[0] = h` of a list of known length: that item only
            updated: Value = Items(tuple(items))
        else:
            updated = add_element(base, value)
        _changed(ev, target.value, updated)
        _remember_item(ev, target, updated, value)
    elif base is UNKNOWN:
        # A dict nothing here made (an optimizer's `state[p]`): what `st[slot] = buf` put there is what
        # `st[slot]` reads back before `slot` or `st` changes (ms-swift's offload buffers, survey 55 EF).
        _remember_item(ev, target, base, value)


def _writes_elements(target: cst.Subscript) -> bool:
    """``x[a:b] = ...``, ``x[..., 0] = ...``, ``x[i, j] = ...``: a store only an array takes, into its
    elements (a dict or list entry is one key or position)."""
    if len(target.slice) != 1:
        return True
    part = target.slice[0].slice
    return isinstance(part, cst.Slice) or isinstance(part.value, (cst.Ellipsis, cst.Tuple))


def _remember_item(ev, target: cst.Subscript, container: Value, value: Value) -> None:
    """``d[k] = v`` with ``k`` a variable: a read of ``d[k]`` before ``k`` or ``d`` changes is ``v``
    (``coords[name] = getattr(beam, name); coords[name].get_async(stream=s)``)."""
    from .evaluator import item_keys
    keys = item_keys(target)
    if keys is not None and dotted(target.value) is not None:
        put(ev.state.env, keys[0], value)
        put(ev.state.env, keys[1], container)
        if len(keys) > 2:
            put(ev.state.env, keys[2], Const.of(True))


def _changed(ev, expr: cst.BaseExpression, value: Value) -> None:
    """The container ``expr`` names was changed in place and is now ``value``: a name or attribute
    chain is rebound; an element of another container (``self.inputs[0]['host'] = h``, a dict kept
    in a list) is replaced in it, as a field stored on it would be."""
    if dotted(expr) is not None:
        rebind(ev, expr, value, mutated=True)
    else:
        _replace_object(ev, expr, value)


# ------------------------------------------------------------------------------ other elements
TEST = "$test:"  # env key prefix: the constant an if test evaluated to, for the solver's arm pruning


def _test(ev, element) -> None:
    value = ev.expr(element.node)
    if isinstance(element.extra, cst.If) and element.node is element.extra.test:
        value = _gpu_run_answer(ev, element.node, value)
    key = TEST + str(id(element.node))
    if ev.emit:
        from .solver import truthiness
        ev.test_answers[id(element.node)] = truthiness(value) if isinstance(value, Const) else None
    if isinstance(value, Const) and isinstance(element.extra, cst.If):
        ev.state.env[key] = value
    else:
        ev.state.env.pop(key, None)
        if isinstance(element.extra, cst.If) and element.node is element.extra.test:
            _wait_of_what_was_issued(ev, element.extra)


def _gpu_run_answer(ev, test, value):
    """``if torch.cuda.is_available():`` (or ``not ...``) answers True in every run that has a GPU, the
    only runs with copies to report: the arm for a machine without one does not run there (a staging
    buffer pinned under it is pinned wherever it is copied)."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if not (isinstance(test, cst.Call) and not test.args):
        return value
    qualified = ev.module.imports.qualify(test.func)
    api = ev.tables.functions.get(qualified) if qualified else None
    if api is None or api.effect != "gpu-run":
        return value
    return Const.of(not negated)


def _rebinds(ev, statement: cst.Global, name: str) -> bool:
    """Whether the function whose ``global`` statement this is assigns the module global ``name``: it
    is one of the module's rebinders of the name (those that assign it, ``project.rebinding_functions``)."""
    key = (ev.module, name)
    found = _REBINDING_GLOBALS.get(key)
    if found is None:
        found = _REBINDING_GLOBALS[key] = frozenset(
            id(part) for function, _ in ev.module.rebinders.get(name, ())
            for part in code_nodes(function.body, into_definitions=False) if isinstance(part, cst.Global))
    return id(statement) in found


_REBINDING_GLOBALS: dict = {}  # (module, name) -> ids of the `global` statements of its rebinders


def _wait_of_what_was_issued(ev, node: cst.If) -> None:
    """``if launched: torch.cuda.synchronize()`` after a loop that fills ``launched`` with the work it
    issued; ``if ev is not None: ev.synchronize()`` on the event a copy recorded: the arm that skips
    the wait is the one where nothing was issued (no sample launched, no copy recorded its event), so
    the copies before it are waited for on either arm. The synchronize runs as the test is made.
    A flag (``if args.sync:``), a number or a value nothing explains decides no such thing."""
    if node.orelse is not None:
        return
    subject = _truth_tested(node.test)
    if subject is None:
        return
    waits = [small.value for statement in suite_body(node.body) if isinstance(statement, cst.SimpleStatementLine)
             for small in statement.body if _synchronize_call(small)]
    if not waits:
        return
    emit, ev.emit = ev.emit, False  # the test has read it already: no second read event
    try:
        value = ev.expr(subject)
    finally:
        ev.emit = emit
    issued = isinstance(value, (Seq, Mapping)) or isinstance(value, Items) and bool(value.items)
    # a slot's event, read directly (`last[k]`) or through a name bound to it (`pending = last[k]`,
    # piper-offload's double buffering, survey 57 GH)
    awaited = value == Obj("event") or value is UNKNOWN and \
        (isinstance(subject, cst.Subscript) or isinstance(subject, cst.Name) and ELEMENT_OF + subject.value in ev.state.env)
    for wait in waits:
        if issued or awaited and isinstance(wait.func, cst.Attribute) and wait.func.value.deep_equals(subject):
            ev.expr(wait)


def _synchronize_call(small) -> bool:
    """A statement `x.synchronize()` or `synchronize()` (torch.cuda.synchronize(device), s.synchronize())."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    func = small.value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name == "synchronize"


def _truth_tested(test) -> Optional[cst.BaseExpression]:
    """``x`` of ``if x:``, ``if x is not None:``, ``if len(x):`` and ``if len(x) > 0:``."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(operator, cst.IsNot) and isinstance(right, cst.Name) and right.value == "None":
            return _truth_tested(test.left)
        if isinstance(operator, cst.GreaterThan) and isinstance(right, cst.Integer) and right.value == "0":
            return _truth_tested(test.left)
        return None
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "len" and \
            len(test.args) == 1 and not test.args[0].star:
        return test.args[0].value
    if isinstance(test, (cst.Name, cst.Attribute, cst.Subscript)):
        return test
    return None


def _iter(ev, element) -> None:
    """A for loop's iterable runs once, before the loop."""
    loop = element.extra
    value = ev.calls.iterate(ev.expr(element.node), element.node)
    if isinstance(value, Host) and not value.batch and not iterated_as_views(value):
        ev.event(EventType.READ, element.node, value)
    ev.state.env[iter_key(loop)] = value
    _note_keys(ev, loop, element.node)
    _keep_slots(ev, loop)
    if _waits_on_each(loop):
        _wait_before(ev, loop, value)


def _keep_slots(ev, loop) -> None:
    """``for i in range(len(xs)): xs[i] = xs[i].cuda(...)``: what ``xs`` holds as the loop starts, for
    the reads of ``xs[i]`` that no iteration has replaced yet (analysis/slots.py)."""
    from .slots import SLOTS, slot_reads
    env = ev.state.env
    for name in slot_reads(loop, ev.module.project.slot_reads):
        before = env.get(name)
        key = f"{SLOTS}{id(loop)}:{name}"
        if before is None:
            env.pop(key, None)
        else:
            env[key] = before


def _waits_on_each(loop) -> bool:
    """``for s in streams: s.synchronize()`` / ``for i in range(n): streams[i].synchronize()``: a loop
    whose body only synchronizes, the idiom for waiting on every stream the copies went to."""
    if not isinstance(loop, cst.For) or loop.orelse is not None or not isinstance(loop.body, cst.IndentedBlock):
        return False
    for statement in loop.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and
                    isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "synchronize"):
                return False
    return True


def _wait_before(ev, loop, iterable) -> None:
    """The waits of such a loop, for an element of what it iterates, taken as done when it ends: were
    the container empty, no copy went to any of its streams either, so the path that skips the loop
    leaves no copy in flight that the loop would have waited for."""
    from .evaluator import iteration_element
    env = ev.state.env
    saved = {name: env.get(name) for name in _names(loop.target)}
    assign(ev, loop.target, iteration_element(iterable, loop))
    for statement in loop.body.body:
        for small in statement.body:
            ev.expr(small.value)
    for name, value in saved.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value


def _derive_unpacked(ev, target, value) -> None:
    """``st, end = window(i, chunk)``, ``a, b = i * k, i * k + k`` in a loop: each name computed from the
    loop's variable picks another part on each iteration, as a single such name does (``derived``)."""
    from .evaluator import LOOP_DERIVED
    pairs = zip(target.elements, value.elements) if isinstance(value, (cst.Tuple, cst.List)) and \
        len(value.elements) == len(target.elements) else ((element, None) for element in target.elements)
    whole = ev.following(value) if not isinstance(value, (cst.Tuple, cst.List)) else frozenset()
    for element, part in pairs:
        if not isinstance(element.value, cst.Name):
            continue
        following = ev.following(part.value) if part is not None else whole
        if following:
            ev.state.env[LOOP_DERIVED + element.value.value] = Const(frozenset(following))


def _note_keys(ev, loop, iterable) -> None:
    """``for key in d.keys():`` (or ``for key in d:``) of a dict whose entries are known: ``d[key]`` in
    the body is the entry of that key as the loop found it, though the body replaces the entries
    one by one (``d[key] = d[key].cuda(non_blocking=True)``, PointNeXt): a key comes once, so what
    the loop stored under the earlier keys is never what it reads."""
    container = _dict_of_method(iterable, "keys") or iterable
    name = dotted(container)
    found = _known_entries(ev, name)
    marker = KEY_OF + iter_key(loop)
    if found is not None:
        ev.state.env[marker] = Items((Const.of(name), found, Const.of(loop)))
    else:
        ev.state.env.pop(marker, None)


def _dict_of_method(call, method: str):
    """``d`` of ``d.keys()`` / ``d.items()`` (the method named), else None."""
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == method \
            and not call.args:
        return call.func.value
    return None


def _known_entries(ev, name: Optional[str]) -> Optional[Mapping]:
    """The dict ``name`` holds where every entry is known (no key nothing here gives)."""
    found = ev.lookup(name) if name is not None else None
    return found if isinstance(found, Mapping) and found.entries and found.rest is None else None


def keyed_entry(ev, node: cst.Subscript) -> Optional[Value]:
    """What ``d[key]`` reads where ``key`` is the variable of a loop over ``d``'s keys (``_note_keys``)."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index) or \
            not isinstance(node.slice[0].slice.value, cst.Name):
        return None
    marker = ev.state.env.get(KEY_OF + node.slice[0].slice.value.value)
    if not isinstance(marker, Items) or marker.items[0] != Const.of(dotted(node.value)):
        return None
    values = tuple(marker.items[1].values())
    return with_visits(element_of(Items(values)), values, marker.items[2].single)


def _bind(ev, element) -> None:
    from .evaluator import LOOP_VARIABLE, iteration_element
    loop = element.extra
    iterable = ev.state.env.get(iter_key(loop), UNKNOWN)
    _resume(ev, loop)
    assign(ev, element.node, iteration_element(iterable, loop))
    for name in _names(element.node):
        ev.state.env[LOOP_VARIABLE + name] = Const.of(loop)
    _note_element(ev, element.node, loop.iter)  # `for sp in self.species:`
    keys = ev.state.env.get(KEY_OF + iter_key(loop))
    if keys is not None and isinstance(element.node, cst.Name):
        ev.state.env[KEY_OF + element.node.value] = keys
    _note_pairs(ev, element.node, loop)


def _note_pairs(ev, target, loop) -> None:
    """``for name, fn in table.items():`` of a dict whose entries are all known: a test of ``name``
    (``if name == "base": continue``) says which entries ``fn`` can be past it (narrowing)."""
    if not (isinstance(target, cst.Tuple) and len(target.elements) == 2 and
            all(isinstance(e.value, cst.Name) for e in target.elements)):
        return
    container = _dict_of_method(loop.iter, "items")
    found = _known_entries(ev, dotted(container)) if container is not None else None
    if found is not None and not found.optional:
        key, value = (e.value.value for e in target.elements)
        ev.state.env[PAIR_OF + key] = Items((Const.of(value), found))
        ev.state.env[PAIRED + value] = Const.of(key)


# `for inp in inputs: inp.host = frame.astype(np.float32)`: every element of `inputs` has its field
# replaced once the loop has gone through them all (BEVFormer_tensorrt's evaluation, survey 53 CA), not
# only perhaps (`changed_element`'s weak update while the loop runs). What the loop variable's object
# holds at the end of each iteration (a path that stores nothing keeps the field's old value) is
# gathered under EACH_ELEMENT; a loop that ends by running out of elements ("done") leaves the
# container holding that. A body with a `continue` of its own may skip the store for some elements,
# which then keep their old fields: only the weak update holds there.
EACH_ELEMENT = "$each-element:"


def _element_stores(ev, loop) -> Optional[str]:
    """The loop variable, where the loop's body stores a field of it (``inp.host = ...``) and every
    iteration reaches the end of the body or leaves the loop (kept by the project, per loop)."""
    cache = ev.module.project.element_stores
    found = cache.get(loop, False)
    if found is False:
        from .fields import stores_in
        found = None
        body = suite_body(loop.body)
        if isinstance(loop.target, cst.Name) and not has_own_continue(body) and stores_in(body, loop.target.value)[0]:
            found = loop.target.value
        cache[loop] = found
    return found


def _next(ev, element) -> None:
    """A for loop's body ran to its end: what the loop variable's object holds joins what the other
    iterations left."""
    loop = element.extra
    name = _element_stores(ev, loop)
    if name is None:
        return
    from .project import folded
    env = ev.state.env
    key = EACH_ELEMENT + str(id(loop))
    left = _settled(folded(env, name), loop)
    gathered = env.get(key)
    env[key] = left if gathered is None or not isinstance(left, Instance) else join(gathered, left)


def _settled(value: Value, loop) -> Value:
    """``value`` as a container holds it after the loop: no longer another buffer on each iteration."""
    if isinstance(value, Host):
        return replace(value, varies=value.varies - {loop}) if loop in value.varies else value
    if isinstance(value, (Items, Seq, Mapping, Instance)):
        return rebuild(value, lambda v: _settled(v, loop))
    return value


def _done(ev, element) -> None:
    """A for loop went through every element: each element's fields are what the body left in them."""
    loop = element.extra
    gathered = ev.state.env.pop(EACH_ELEMENT + str(id(loop)), None)
    container_expr = loop.iter
    if not isinstance(gathered, Instance) or dotted(container_expr) is None:
        return
    container = ev.expr(container_expr)
    if isinstance(container, Seq) and isinstance(container.element, Instance) and \
            container.element.klass == gathered.klass:
        rebind(ev, container_expr, Seq(gathered))
    elif isinstance(container, Items) and not container.names and container.items and \
            all(isinstance(item, Instance) and item.klass == gathered.klass for item in container.items):
        rebind(ev, container_expr, replace(container, items=tuple(gathered for _ in container.items)))


def _resume(ev, loop) -> None:
    """``for b in sim.run_blocks():`` of a generator of the checked code that changes objects between
    its yields (replacing their arrays with fresh ones): on every iteration, what objects of those
    classes hold may be new, so their buffers count as another buffer each iteration."""
    classes = ev.module.project.resumed_changes.get(getattr(loop, "iter", None))
    if not classes:
        return
    env = ev.state.env
    for key, value in list(env.items()):
        if key.startswith("$"):
            continue
        owner = env.get(key.split(".")[0]) if "." in key else value  # `state.pos`: a field set here
        if isinstance(owner, Instance) and owner.klass in classes:
            env[key] = varying_in(value, loop)


def _names(target) -> list:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names(e.value)]
    return []


def _enter(ev, element) -> None:
    item, (with_node, index) = element.node, element.extra
    env = ev.state.env
    value = ev.expr(item.item)
    prefix = f"$with:{id(with_node)}:{index}:"
    if isinstance(item.item, cst.Call):
        _enter_double(ev, item.item, prefix)
    if isinstance(value, Stream):
        value = Context(stream=value)
    if isinstance(value, Context):
        env[prefix + "context"] = value
        if value.stream is not None:
            env[prefix + "stream"] = env.get(STREAM, Const.of(None))
            env[STREAM] = value.stream
        for key, registered in value.registered:
            env[prefix + "saved:" + key] = env.get(key, Const.of("$unbound"))
            put(env, key, registered)
        if item.asname is not None:
            bound = value.registered[0][1] if len(value.registered) == 1 else \
                (value.stream if value.stream is not None else UNKNOWN)
            assign(ev, item.asname.name, bound)
    elif item.asname is not None:
        entered = ev.calls.enter_context(value, item.item)
        assign(ev, item.asname.name, entered)


def _enter_double(ev, call: cst.Call, prefix: str) -> None:
    """``with patch.object(obj, "encode"):`` / ``with pytest.raises(E):``: recorded for the block
    (doubles.py), with what held before, which the exit puts back."""
    env = ev.state.env
    names = doubles.patched_names(ev.module, call)
    if names:
        env[prefix + "patched"] = env.get(doubles.PATCHED, _NOTHING)
        doubles.with_names(env, names)
    elif doubles.expects_failure(ev.module, call):
        env[prefix + "raising"] = env.get(doubles.RAISING, _NOTHING)
        env[doubles.RAISING] = Const.of(True)


_NOTHING = Const.of("$unbound")  # as _exit marks a name a block bound first


def _exit_double(env: dict, prefix: str) -> None:
    for saved, key in ((prefix + "patched", doubles.PATCHED), (prefix + "raising", doubles.RAISING)):
        if saved in env:
            before = env.pop(saved)
            if before == _NOTHING:
                env.pop(key, None)
            else:
                env[key] = before


def _exit(ev, element) -> None:
    with_node = element.node
    env = ev.state.env
    for index in reversed(range(len(with_node.items))):
        prefix = f"$with:{id(with_node)}:{index}:"
        _exit_double(env, prefix)
        context = env.pop(prefix + "context", None)
        if not isinstance(context, Context):
            continue  # entered on one path only, or joined with something else: nothing to undo
        if context.sync_node is not None:
            ev.event(EventType.SYNC, context.sync_node, api=context.sync_api or "auto_synchronize",
                     stream=context.sync_on_exit)
        if prefix + "stream" in env:
            previous = env.pop(prefix + "stream")
            env[STREAM] = previous
        # Registration lasts for the block only: the buffers are pageable again afterwards.
        for key in [k for k in env if k.startswith(prefix + "saved:")]:
            name = key[len(prefix + "saved:"):]
            previous = env.pop(key)
            if previous == Const.of("$unbound"):
                env.pop(name, None)
            else:
                put(env, name, previous)


def _handler(ev, element) -> None:
    handler = element.node
    if handler.type is not None:
        ev.expr(handler.type)
    if handler.name is not None:
        assign(ev, handler.name.name, UNKNOWN)


def _handled(ev, element) -> None:
    """An exception caught after the try body issued asynchronous copies (a tile whose inference
    raised), the handler done: that work failed and is dropped; what its copies read or write
    belongs to it alone, and the next copy on the stream waits for them. What runs after the try on
    this path is no race with them (the handler's own body, reading the buffer, still is)."""
    if ev.state.pending:
        _abandon_failed_work(ev, element.extra)


def _abandon_failed_work(ev, try_node) -> None:
    from ..positions import contains
    from .facts import issued_at

    def issued_in_body(copy) -> bool:
        place = issued_at(copy, ev.scope)
        return place is not None and place[2] is ev.module.info and contains(try_node.body, place[0])

    ev.state.pending = frozenset(p for p in ev.state.pending if not issued_in_body(p))


def _def(ev, element) -> None:
    node = element.node
    fn = ev.module.function_value(node, ev.scope)
    captured, _ = captured_values(ev, node)  # a def is kept in its name: it may run after they change
    ev.bind(node.name.value, replace(fn, captured=captured) if captured else fn)


def captured_values(ev, node) -> tuple:
    """(captured, now) of a nested function (or lambda), as its variables are in this analysis of the
    enclosing function. ``captured``: what it reads wherever it is later called: the constants and
    functions of parameters the enclosing function never rebinds (the function made by
    ``make_worker(pin_memory=False)`` runs with ``pin_memory`` False), and the buffers, objects and
    constants of its variables bound once, before this point (``buf = torch.empty(n,
    pin_memory=True)``; ``timed(lambda: d.copy_to_host(buf, s))``): the closure reads a variable when it
    runs, and that is then still this value. ``now``: those of its variables bound more than once, what
    it reads if it runs before any of them is bound again (``interproc`` keeps them only for a lambda
    written as the argument of a callee that just calls it)."""
    from .domain import ANYTHING, interesting
    from .interproc import free_names
    from .invariance import body_bindings, bound_once
    outer = ev.invocation.function
    if outer is None or not isinstance(outer.node, cst.FunctionDef):
        return (), ()
    params = outer.node.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    free = free_names(node)
    wanted = (free & names) - body_bindings(outer.node)
    once = bound_once(outer.node)
    locals_ = (free & once) - names
    captured, now = [], []
    for name in sorted(wanted | (free - names)):
        value = ev.state.env.get(name)
        if value is None:
            continue
        constant = isinstance(value, Const) and ANYTHING not in value.values
        if name in wanted or name in locals_:
            if constant or isinstance(value, Function) or name in locals_ and interesting(value):
                captured.append((name, value))
        elif constant or interesting(value):
            now.append((name, value))
    return tuple(captured), tuple(now)


def _class(ev, element) -> None:
    node = element.node
    ev.bind(node.name.value, ev.module.class_value(node))


def _case(ev, element) -> None:
    case = element.node
    for name in _pattern_names(case.pattern):
        ev.bind(name, UNKNOWN)
    _narrow_by_class_pattern(ev, case, element.extra)
    if case.guard is not None:
        ev.expr(case.guard)


def _narrow_by_class_pattern(ev, case, subject) -> None:
    """``match command:`` / ``case ModelInput():`` (or ``case ModelInput() as inp:``) of a class of the
    checked code: in that arm the subject is an object of that class, as an annotation says
    (tokasaurus's worker loop taking its inputs off a queue, survey 50 AJ)."""
    from .interproc import annotation_value
    pattern = case.pattern
    alias = None
    if isinstance(pattern, cst.MatchAs) and pattern.pattern is not None:
        alias = pattern.name.value if pattern.name is not None else None
        pattern = pattern.pattern
    if not isinstance(pattern, cst.MatchClass):
        return
    value = annotation_value(ev.module, pattern.cls)
    if not isinstance(value, Instance):
        return
    if isinstance(subject, cst.Name) and ev.expr(subject) is UNKNOWN:
        ev.bind(subject.value, value)
    if alias is not None:
        ev.bind(alias, value)


def _pattern_names(pattern) -> list:
    names: list = []

    class Visitor(cst.CSTVisitor):
        def visit_MatchAs(self, node) -> None:
            if node.name is not None:
                names.append(node.name.value)

        def visit_MatchStar(self, node) -> None:
            if node.name is not None:
                names.append(node.name.value)

        def visit_MatchMapping(self, node) -> None:
            if node.rest is not None:
                names.append(node.rest.value)

    pattern.visit(Visitor())
    return names


def _return_none(ev, element) -> None:
    ev.state.env[RETURN] = Const.of(None)


_HANDLERS = {
    "stmt": _stmt, "test": _test, "iter": _iter, "bind": _bind, "next": _next, "done": _done, "enter": _enter, "exit": _exit,
    "handler": _handler, "handled": _handled, "def": _def, "class": _class, "case": _case, "return-none": _return_none,
}
