"""Loops that replace each element of a list once: ``for i in range(len(xs)): xs[i] = f(xs[i])``.

The idiom moves a list of host tensors to the GPU in place (``xs[i] = xs[i].cuda(non_blocking=True)``).
The list's value at the loop head joins what it held before the loop with what the body stored, so
``xs[i]`` would read "a host tensor or a device one" and the copy's pageable source would be lost.
But ``i`` takes a different value on each iteration and only ``xs[i]`` is stored, so a read of
``xs[i]`` that comes before the store in the body reads an element no earlier iteration replaced:
an element of the list as it was when the loop started.

The test is syntactic and strict (anything else keeps the joined value):
- the loop is ``for i in range(...)`` or ``for i, x in enumerate(...)``: ``i`` never repeats;
- the list is a plain local name that the body neither rebinds nor calls a method on other than
  ``append``/``extend`` (which leave the existing slots where they are), and the body never rebinds ``i``;
- every store into the list in the body is a statement of the body itself, or of an ``if`` arm in
  it (not in a nested loop or a ``try``), ``xs[i] = ...`` with exactly that ``i``;
- the read is in a statement before the first such store, or in that store's right-hand side, and
  not in a nested function or lambda (which may run later).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..walk import binding_targets, code_parts

_KEEPS_SLOTS = frozenset({"append", "extend"})
SLOTS = "$slots:"  # env key prefix: a list's value when such a loop started (per loop and name)


def slot_reads(loop, cache: dict) -> dict:
    """``{list name: ids of the Subscript reads that see the list as it was when the loop started}``
    for a loop of the idiom above (kept in ``cache``, the project's, by loop node)."""
    found = cache.get(loop)
    if found is None:
        found = cache[loop] = _slot_reads(loop)
    return found


def _slot_reads(loop) -> dict:
    index = _distinct_index(loop)
    if index is None or not isinstance(loop.body, cst.IndentedBlock):
        return {}
    statements = list(loop.body.body)
    first_store: dict = {}  # list name -> position of its first store statement
    for position, statement in enumerate(statements):
        for name in _direct_stores(statement, index):
            first_store.setdefault(name, position)
    if not first_store:
        return {}
    bound, called, stored_anywhere = _body_facts(loop.body, index)
    if index in bound:
        return {}
    found = {}
    for name, position in first_store.items():
        if name in bound or name in called or stored_anywhere.get(name, 0) != _direct_count(statements, name, index):
            continue
        reads: set = set()
        for statement in statements[:position]:
            _collect_reads(statement, name, index, reads)
        for value in _store_values(statements[position], name, index):
            _collect_reads(value, name, index, reads)
        if reads:
            found[name] = frozenset(reads)
    return found


def _distinct_index(loop) -> Optional[str]:
    """The loop variable that never repeats: ``i`` of ``for i in range(..)`` / ``for i, x in enumerate(..)``."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call) or \
            not isinstance(loop.iter.func, cst.Name):
        return None
    function = loop.iter.func.value
    if function == "range" and isinstance(loop.target, cst.Name):
        return loop.target.value
    if function == "enumerate" and isinstance(loop.target, (cst.Tuple, cst.List)) and loop.target.elements and \
            isinstance(loop.target.elements[0].value, cst.Name):
        return loop.target.elements[0].value.value
    return None


def _is_slot(node, name: str, index: str) -> bool:
    """``name[index]``, exactly."""
    return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and node.value.value == name and \
        len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and \
        isinstance(node.slice[0].slice.value, cst.Name) and node.slice[0].slice.value.value == index


def _assignments(statement):
    """The assignments of a statement of the body, and of the ``if`` arms it opens: a store an ``if``
    guards (``if use_gpu: xs[i] = xs[i].cuda()``) still replaces only slot ``i``, on the iterations
    that take the arm."""
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return [s for s in statement.body if isinstance(s, cst.Assign)]
    if isinstance(statement, (cst.If, cst.Else)):
        found = [a for inner in _arm(statement.body) for a in _assignments(inner)]
        other = getattr(statement, "orelse", None)
        if other is not None:
            found += _assignments(other)
        return found
    return []


def _arm(block) -> list:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [block]


def _direct_stores(statement, index: str) -> set:
    names = set()
    for assign in _assignments(statement):
        for target in assign.targets:
            node = target.target
            if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and \
                    _is_slot(node, node.value.value, index):
                names.add(node.value.value)
    return names


def _direct_count(statements: list, name: str, index: str) -> int:
    return sum(1 for statement in statements for assign in _assignments(statement) for target in assign.targets
               if _is_slot(target.target, name, index))


def _store_values(statement, name: str, index: str) -> list:
    return [assign.value for assign in _assignments(statement)
            if any(_is_slot(target.target, name, index) for target in assign.targets)]


def _body_facts(body, index: str) -> tuple:
    """(names the body binds, names it calls a method on that may move slots, list name -> number of
    subscript stores into it anywhere in the body)."""
    bound: set = set()
    called: set = set()
    stored: dict = {}
    stack = [body]
    while stack:
        node = stack.pop()
        targets = binding_targets(node)
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            bound.update(item.name.value for item in node.names)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                isinstance(node.func.value, cst.Name) and node.func.attr.value not in _KEEPS_SLOTS:
            called.add(node.func.value.value)
        for target in targets:
            _bind_target(target, bound, stored, isinstance(node, (cst.AugAssign, cst.Del)))
        stack.extend(code_parts(node))
    return bound, called, stored


def _bind_target(target, bound: set, stored: dict, rewrites: bool) -> None:
    if isinstance(target, cst.Name):
        bound.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bind_target(element.value, bound, stored, rewrites)
    elif isinstance(target, cst.StarredElement):
        _bind_target(target.value, bound, stored, rewrites)
    elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        # `xs[i] += 1`, `del xs[i]`: not the idiom (counted twice so the counts never match)
        stored[target.value.value] = stored.get(target.value.value, 0) + (2 if rewrites else 1)


def _collect_reads(node, name: str, index: str, reads: set) -> None:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue  # runs later, maybe after the store
        if _is_slot(item, name, index):
            reads.add(id(item))
        stack.extend(code_parts(item))


# ------------------------------------------------------------------------------ rotating slots
_WAITS = frozenset({"synchronize", "wait", "query"})


def rotating_slot(loop, index, cache: dict) -> bool:
    """``bufs[s]`` with ``s = k % m`` (or ``bufs[k % m]``), ``k`` the loop's counter, in a loop whose
    body also waits on something kept per slot (``done[s].synchronize()``): double buffering with a
    wait before a slot is reused. The copy still in flight when this iteration writes its slot is
    then the previous iteration's, of another slot (the wait covers the slot's own earlier copy, on
    the iterations that need it). Without such a wait a slot comes round again with its copy maybe
    still running, and stays one buffer for the race rules."""
    if not isinstance(loop, cst.For):
        return False
    slots = cache.get(loop)
    if slots is None:
        slots = cache[loop] = _rotating_slots(loop)
    if isinstance(index, cst.Name):
        return index.value in slots[0]
    return any(index.deep_equals(expression) for expression in slots[1])


def _rotating_slots(loop: cst.For) -> tuple:
    """(names bound once to ``counter % m`` in the body, ``counter % m`` expressions), of those the
    body also waits on per slot; ((), ()) when none."""
    counter = _distinct_index(loop)  # `k` of `for k in range(..)` / `for k, x in enumerate(..)`
    if counter is None:
        return frozenset(), ()
    named: dict = {}
    bindings: dict = {}
    waited_names: set = set()
    waited: list = []
    stack = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    bindings[target.target.value] = bindings.get(target.target.value, 0) + 1
                    if _modulo_of(node.value, counter):
                        named[target.target.value] = node.value
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name):
            bindings[node.target.value] = bindings.get(node.target.value, 0) + 2
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in _WAITS and isinstance(node.func.value, cst.Subscript) and \
                len(node.func.value.slice) == 1 and isinstance(node.func.value.slice[0].slice, cst.Index):
            slot = node.func.value.slice[0].slice.value
            if isinstance(slot, cst.Name):
                waited_names.add(slot.value)
            elif _modulo_of(slot, counter):
                waited.append(slot)
        stack.extend(code_parts(node))
    names = frozenset(n for n in named if bindings.get(n) == 1 and n in waited_names)
    return names, tuple(waited)


def _modulo_of(node, counter: str) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo) and \
        isinstance(node.left, cst.Name) and node.left.value == counter and \
        isinstance(node.right, (cst.Integer, cst.Name))
