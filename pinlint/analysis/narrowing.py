"""What an ``if`` arm may assume of the values its tests looked at.

The solver prunes an arm whose constant test rules it out; this module does the other half: inside
``if isinstance(x, cupy.ndarray):`` the parameter ``x`` is CuPy device memory, inside ``if not
src.is_pinned():`` a CPU tensor ``src`` is pageable, inside ``if dst.is_cuda:`` ``dst`` lives on the
GPU. Only a value nothing else explains is narrowed (an unknown value, a tensor of unknown device, a
host array of unknown kind): what the analysis knows already is never overridden by a test.

The facts come from the code itself, so a helper such as ``def general_copy(dst, src): if
src.device.type == "cpu" and dst.is_cuda and not src.is_pinned(): dst.copy_(src, non_blocking=True)``
is reported in its own analysis, whoever calls it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Optional

import libcst as cst

from ..imports import dotted
from ..model import Kind
from .domain import UNKNOWN, Const, Device, DeviceSpec, Host, Items, Tensor, Unknown, Value, join, unknown_host
from .effects import device_of
from .interproc import kind_value

# A fact about one value: "cuda" (a torch tensor on the GPU), "cpu" (a torch tensor in host memory),
# "pageable" (host memory that is not page-locked), or ("class", node) of an isinstance test.


def narrows(attribute: cst.Attribute) -> bool:
    """Whether an attribute is one a test narrows by (the inert screen's question: a function that
    tests ``t.is_cuda`` knows something of ``t`` although it names no library)."""
    name = attribute.attr.value
    return name in ("is_cuda", "is_pinned") or \
        (name == "type" and isinstance(attribute.value, cst.Attribute) and attribute.value.attr.value == "device")


def narrowed(ev, state, conditions: tuple):
    """The state an arm starts from: ``state`` itself when ``conditions`` ((test, truth) pairs the
    arm needs) tell nothing, else a copy with what they tell."""
    facts = [(test, target, fact) for test, truth in conditions
             for target, fact in _facts(test, truth, ev.tables, ev)]
    if not facts:
        return state
    # Where a value lives first, then whether it is pinned: `not src.is_pinned() and not src.is_cuda`.
    facts.sort(key=lambda item: item[2] == "pageable")
    saved, ev.state = ev.state, state.copy()
    for test, target, fact in facts:
        if fact == "event done":
            # `while cudaEventQuery(ev)[0] == cudaErrorNotReady: ...` left: the event, and everything
            # queued before it, has completed (the polling form of cudaEventSynchronize)
            from ..model import EventType
            ev.event(EventType.SYNC, test, api="event query")
            continue
        key = dotted(target)
        if key is None:
            continue
        if isinstance(fact, tuple) and fact[0] == "value":
            ev.bind(key, fact[1])  # what a test of a loop's key says its value is (`_pair_facts`)
            continue
        if fact == "placed on the cpu":
            _placed_on_the_cpu(ev, key)
            continue
        if fact == "no gpu device":
            current = ev.state.env.get(key, ev.expr(target))
            if current is UNKNOWN or isinstance(current, DeviceSpec) and current.cuda is None:
                ev.bind(key, DeviceSpec(False))  # `if device.type == "cuda": ... else:` the else arm
            continue
        current = ev.state.env.get(key)
        if current is None and "." in key:
            current = ev.expr(target)  # src.data: an attribute no statement stored
        if current is None:
            continue
        value = _refine(ev, current, fact, test)
        if value is not None and value != current:
            ev.bind(key, value)
    arm, ev.state = ev.state, saved
    return arm


def _facts(test, truth: bool, tables, ev=None) -> Iterator[tuple]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _facts(test.expression, not truth, tables, ev)
    elif isinstance(test, cst.BooleanOperation):
        # `a and b` true: both are; `a or b` false: neither is.
        if isinstance(test.operator, cst.And) and truth or isinstance(test.operator, cst.Or) and not truth:
            yield from _facts(test.left, truth, tables, ev)
            yield from _facts(test.right, truth, tables, ev)
        elif ev is not None:
            # `a and b` false where b is known true: a is false (`device.type == "cuda" and
            # t.device.type == "cpu"` of a CPU tensor t); `a or b` true where b is known false: a is true.
            holds = isinstance(test.operator, cst.And)  # what the other side must be known to be
            for one, other in ((test.left, test.right), (test.right, test.left)):
                if _known(ev, other) is holds:
                    yield from _facts(one, truth, tables, ev)
    elif isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and not test.args:
        if test.func.attr.value == "is_pinned" and not truth:
            yield test.func.value, "pageable"
    elif isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        yield test.value, "cuda" if truth else "cpu"
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        yield from _device_type_facts(test, truth, tables)
        yield from _device_name_facts(test, truth, tables)
        if ev is not None and _event_query_done(ev, test, truth):
            yield test, "event done"
        if ev is not None:
            yield from _pair_facts(ev, test, truth)
    elif isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance" \
            and len(test.args) == 2 and truth:
        yield test.args[0].value, ("class", test.args[1].value)


def _on_the_gpu(test: cst.Comparison, truth: bool, tables) -> Optional[tuple]:
    """(the side compared with a device string, whether the arm sees it on the GPU) for
    ``x == "cuda"``, ``"cpu" != x`` and the like; None for any other comparison."""
    comparison = test.comparisons[0]
    left, right = test.left, comparison.comparator
    if isinstance(left, cst.SimpleString):
        left, right = right, left
    if not isinstance(right, cst.SimpleString):
        return None
    cuda = device_of(Const.of(right.evaluated_value), tables)  # the tables' device strings
    if cuda is None:
        return None
    if isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
        truth = not truth
    elif not isinstance(comparison.operator, (cst.Equal, cst.Is)):
        return None
    return left, truth == cuda


def _device_type_facts(test: cst.Comparison, truth: bool, tables) -> Iterator[tuple]:
    """``t.device.type == "cpu"``, ``t.device.type != "cuda"``; ``device.type != "cuda"`` of a device."""
    found = _on_the_gpu(test, truth, tables)
    if found is None:
        return
    left, gpu = found
    if isinstance(left, cst.Attribute) and left.attr.value == "type" and isinstance(left.value, cst.Attribute) \
            and left.value.attr.value == "device":
        yield left.value.value, "cuda" if gpu else "cpu"
    elif isinstance(left, cst.Attribute) and left.attr.value == "type" and isinstance(left.value, cst.Name) \
            and not gpu:
        yield left.value, "no gpu device"


_EVENT_QUERIES = frozenset({"cudaEventQuery", "cuEventQuery", "eventQuery"})


def _event_query_done(ev, test: cst.Comparison, truth: bool) -> bool:
    """``cudaEventQuery(e)[0] == cudaErrorNotReady`` false (``!=`` true), or ``... == cudaSuccess``
    true: the arm where the runtime said the event has completed."""
    comparison = test.comparisons[0]
    query, status = test.left, comparison.comparator
    if isinstance(query, cst.Subscript):
        query = query.value
    if not (isinstance(query, cst.Call) and ev.is_import_path(query.func)):
        return False
    name = ev.module.imports.qualify(query.func) or ""
    if name.rpartition(".")[2] not in _EVENT_QUERIES or ev.tables.library_of(name) is None:
        return False
    word = status.attr.value if isinstance(status, cst.Attribute) else (status.value if isinstance(status, cst.Name) else "")
    if isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
        truth = not truth
    elif not isinstance(comparison.operator, (cst.Equal, cst.Is)):
        return False
    if word.endswith("NotReady"):
        return not truth
    return word.endswith("Success") and truth


def _known(ev, expr) -> Optional[bool]:
    """The truth of a test made of names, attributes, strings and comparisons of them (nothing that
    could read a buffer or run code), where the state decides it; else None."""
    from .solver import truthiness
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Comparison):
            stack.append(node.left)
            stack.extend(c.comparator for c in node.comparisons)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif not isinstance(node, (cst.Name, cst.SimpleString)):
            return None
    return truthiness(ev.expr(expr))


def _pair_facts(ev, test: cst.Comparison, truth: bool) -> Iterator[tuple]:
    """``name == "base"`` (``!=``, ``in``, ``not in`` a tuple of constants) of the key of ``for name, fn
    in table.items():`` over a dict of known entries: in the arm, ``fn`` is the entry (or one of the
    entries) whose key passes the test, and ``name`` one of those keys (a benchmark skipping its
    baseline allocator, survey 56 FG)."""
    from .state import PAIR_OF
    left = test.left
    if not isinstance(left, cst.Name):
        return
    marker = ev.state.env.get(PAIR_OF + left.value)
    if not isinstance(marker, Items):
        return
    operator = test.comparisons[0].operator
    compared = ev.expr(test.comparisons[0].comparator) if not isinstance(operator, (cst.In, cst.NotIn)) else None
    if isinstance(operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
        if not (isinstance(compared, Const) and compared.single is not None):
            return
        wanted = {compared.single}
        inside = isinstance(operator, (cst.Equal, cst.Is))
    elif isinstance(operator, (cst.In, cst.NotIn)):
        group = test.comparisons[0].comparator
        if not isinstance(group, (cst.Tuple, cst.List, cst.Set)):
            return
        values = [ev.expr(e.value) for e in group.elements]
        if not all(isinstance(v, Const) and v.single is not None for v in values):
            return
        wanted = {v.single for v in values}
        inside = isinstance(operator, cst.In)
    else:
        return
    if not truth:
        inside = not inside
    mapping = marker.items[1]
    kept = [(k, v) for k, v in mapping.entries if (k in wanted) == inside]
    if not kept or len(kept) == len(mapping.entries):
        return
    value = kept[0][1]
    for _, other in kept[1:]:
        value = join(value, other)
    yield cst.Name(marker.items[0].single), ("value", value)
    yield left, ("value", Const(frozenset(k for k, _ in kept)))


def _device_name_facts(test: cst.Comparison, truth: bool, tables) -> Iterator[tuple]:
    """``target == "cpu"`` (``!= "cuda"``) of a variable naming a device: the arm where it is the CPU."""
    found = _on_the_gpu(test, truth, tables)
    if found is not None and isinstance(found[0], (cst.Name, cst.Attribute)) and not found[1]:
        yield found[0], "placed on the cpu"


def _placed_on_the_cpu(ev, key: str) -> None:
    """Where the test says ``key`` names the CPU, it holds the CPU's name: what it placed is on the CPU
    there (``effects.placed``), however the values it placed were joined since."""
    current = ev.state.env.get(key)
    if isinstance(current, Const) and len(current.values) > 1:
        cpu = frozenset(v for v in current.values if device_of(Const.of(v), ev.tables) is False)
        if cpu:
            ev.bind(key, Const(cpu))


def _refine(ev, value: Value, fact, test) -> Optional[Value]:
    unexplained = isinstance(value, Unknown)
    if fact == "cuda":
        return Device("torch") if unexplained or isinstance(value, Tensor) else None
    if fact == "cpu":
        return unknown_host("torch") if unexplained or isinstance(value, Tensor) else None
    if fact == "pageable":
        if isinstance(value, Host) and not value.sites and value.maybe_unknown:
            # A host tensor of unknown kind that its own test says is not page-locked: pageable
            # memory from here on, made (as far as the analysis can tell) by the test.
            site = ev.site(test, Kind.PAGEABLE, value.library, "Tensor.is_pinned", variant="tested-pageable")
            return replace(value, sites=frozenset([site]), maybe_unknown=False)
        return None
    if isinstance(fact, tuple) and unexplained:
        kind = ev.calls.class_kind(fact[1])
        return kind_value(kind, test) if kind is not None else None
    return None
