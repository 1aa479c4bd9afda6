"""Whether an ``if`` inside a loop takes the same arm on every iteration.

PIN002 leaves alone a pinned allocation under an ``if`` in a loop when the ``if`` is a lazy set-up
(``if buf is None: buf = torch.empty(n, pin_memory=True)``): the buffer is made once and survives
the iterations. A test that reads nothing the loop changes (``if self.device == "cuda":``, ``if
use_pinned:``) is not such a set-up: its arm runs on every iteration or on none, and what it pins
per iteration is pinned on every one (nanoTabPFN's loaders). The test here is syntactic and errs
towards "changes": a name the loop binds, a bare name it mutates (``seen.add(k)``, ``cache[k] =
v``), an attribute name it stores or calls a method on (``self.ready = True``, ``self.pool.add``),
or a call in the test (other than a library's argument-free query such as
``torch.cuda.is_available()``) makes the ``if`` a possible set-up. A method call on ``self``
(``self._load(f)``) is not taken to change ``self.device``: only a store names the field it changes.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from ..imports import dotted
from ..walk import code_parts, target_names


class Changes:
    """What a loop's body (its target included) binds, mutates or stores, by name."""

    def __init__(self) -> None:
        self.bound: set = set()       # names (re)bound in the loop
        self.mutated_names: set = set()  # names whose object the loop may change in place
        self.attributes: set = set()  # attribute names stored, or called a method on, anywhere

    def target(self, node) -> None:
        if isinstance(node, cst.Name):
            self.bound.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self.target(element.value)
        elif isinstance(node, cst.StarredElement):
            self.target(node.value)
        elif isinstance(node, cst.Attribute):
            self.attributes.add(node.attr.value)
            self.mutated(node.value)
        elif isinstance(node, cst.Subscript):
            self.mutated(node.value)

    def without(self, names: set) -> "Changes":
        """These changes less the names given (ones that settle to the same value on every iteration)."""
        reduced = Changes()
        reduced.bound = self.bound - names
        reduced.mutated_names = self.mutated_names - names
        reduced.attributes = self.attributes
        return reduced

    def mutated(self, node) -> None:
        """``cache[k] = v``, ``seen.add(k)``, ``self.pool.buf = b``: the object named changes."""
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            if isinstance(node, cst.Attribute):
                self.attributes.add(node.attr.value)
            node = node.value
        if isinstance(node, cst.Name):
            self.mutated_names.add(node.value)


def loop_changes(loop, cache: Optional[dict] = None) -> Changes:
    """What a loop's body and target bind or store (kept in ``cache``, the project's, by node)."""
    found = cache.get(loop) if cache is not None else None
    if found is not None:
        return found
    changes = Changes()
    if isinstance(loop, cst.For):
        changes.target(loop.target)
    collect_changes(changes, [loop.body, loop.test] if isinstance(loop, cst.While) else [loop.body])
    if cache is not None:
        cache[loop] = changes
    return changes


def function_changes(function: cst.FunctionDef, cache: Optional[dict] = None) -> Changes:
    """What one call of the function binds (its parameters included) or stores (``same_on_every_call``)."""
    found = cache.get(function) if cache is not None else None
    if found is not None:
        return found
    changes = Changes()
    params = function.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        changes.bound.add(param.name.value)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            changes.bound.add(star.name.value)
    collect_changes(changes, [function.body])
    if cache is not None:
        cache[function] = changes
    return changes


def body_bindings(function: cst.FunctionDef) -> frozenset:
    """Names a function's body binds (its parameters rebound included, nested definitions' own not)."""
    found = _BINDINGS.get(function)
    if found is None:
        changes = Changes()
        collect_changes(changes, [function.body])
        found = _BINDINGS[function] = frozenset(changes.bound)
    return found


_BINDINGS: dict = {}


def _pairwise(targets: list, value) -> bool:
    """``inputs, outputs = [], []``: names given one display item each, as plain assignments would."""
    return len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and \
        isinstance(value, (cst.Tuple, cst.List)) and len(targets[0].elements) == len(value.elements) and \
        all(isinstance(e.value, cst.Name) for e in targets[0].elements) and \
        not any(isinstance(e, cst.StarredElement) for e in value.elements)


def bound_once(function: cst.FunctionDef) -> frozenset:
    """Names a function's body binds exactly once, by a plain assignment outside any loop, and that
    no nested function declares ``nonlocal``: a closure made after that assignment reads that value
    whenever it runs (``buf = torch.empty(..., pin_memory=True)``; ``hook = lambda m, x: buf.copy_(x)``)."""
    found = _ONCE.get(function)
    if found is not None:
        return found
    counts: dict = {}
    stack = [(function.body, False)]
    while stack:
        node, in_loop = stack.pop()
        names: list = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            weight = 2 if in_loop else 1
            names = [(n, weight) for target in targets for n in target_names(target)]
            if any(not isinstance(t, cst.Name) for t in targets) and not _pairwise(targets, node.value):
                names = [(n, 2) for n, _ in names]  # unpacking: leave it to the plain case
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName,
                               cst.Del)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            names = [(n, 2) for n in target_names(target)]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names = [(node.name.value, 2)]
            # what a nested definition binds is its own, but `nonlocal x` there rebinds ours
            for inner in _nonlocals(node):
                counts[inner] = counts.get(inner, 0) + 2
            continue
        elif isinstance(node, (cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)):
            names = [(n, 2) for n in _declared(node)]
        for name, weight in names:
            counts[name] = counts.get(name, 0) + weight
        loop = in_loop or isinstance(node, (cst.For, cst.While))
        stack.extend((part, loop) for part in code_parts(node))
    found = _ONCE[function] = frozenset(name for name, count in counts.items() if count == 1)
    return found


_ONCE: dict = {}




def _nonlocals(definition) -> list:
    found = []
    stack = [definition]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Nonlocal):
            found.extend(item.name.value for item in node.names)
        stack.extend(code_parts(node))
    return found


def _declared(node) -> list:
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [item.name.value for item in node.names]
    if isinstance(node.names, cst.ImportStar):
        return []
    return [((dotted(a.asname.name) if a.asname is not None else dotted(a.name)) or "").split(".")[0]
            for a in node.names]


def collect_changes(changes: Changes, stack: list) -> None:
    """Add what the nodes in ``stack`` (and their parts) bind, mutate or store to ``changes``."""
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign):
            for target in node.targets:
                changes.target(target.target)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            changes.target(node.target)
        elif isinstance(node, (cst.For, cst.CompFor)):
            changes.target(node.target)
        elif isinstance(node, cst.NamedExpr):
            changes.target(node.target)
        elif isinstance(node, cst.AsName):
            changes.target(node.name)
        elif isinstance(node, cst.Del):
            changes.target(node.target)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            changes.bound.add(node.name.value)
            continue  # what a nested definition binds is its own
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            changes.bound.update(item.name.value for item in node.names)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            changes.mutated(node.func.value)  # a method may change its receiver
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                changes.bound.add((dotted(bound) or "").split(".")[0])
        stack.extend(code_parts(node))


_PURE_BUILTINS = frozenset({"str", "isinstance"})
_PURE_LIBRARY_CALLS = frozenset({"device"})  # `torch.device(...)`, as the module is imported


def reads(test, is_library: Callable[[str], bool]) -> Optional[tuple]:
    """(bare names, roots of attribute chains, attribute names) the test reads, or None when it calls
    something that may answer differently each time (anything but an argument-free call of a dotted
    name rooted at a library import)."""
    names, roots, attributes = set(), set(), set()
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            names.add(node.value)
            continue
        if isinstance(node, cst.Attribute):
            while isinstance(node, cst.Attribute):
                attributes.add(node.attr.value)
                node = node.value
            if isinstance(node, cst.Name):
                roots.add(node.value)
            else:
                stack.append(node)
            continue
        if isinstance(node, cst.Call):
            name = dotted(node.func)
            if name in _PURE_BUILTINS or name is not None and name.split(".", 1)[-1] in _PURE_LIBRARY_CALLS and \
                    is_library(name.split(".")[0]):
                # torch.device(dev).type, str(dev): what they give depends on the arguments alone
                stack.extend(arg.value for arg in node.args)
                continue
            if node.args or name is None or not is_library(name.split(".")[0]):
                return None
            continue  # torch.cuda.is_available(): the same answer on every iteration
        if isinstance(node, (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.NamedExpr, cst.Await, cst.Yield)):
            return None
        stack.extend(code_parts(node))
    return names, roots, attributes


def invariant(test, changes: Changes, is_library: Callable[[str], bool]) -> bool:
    """Whether ``test`` gives the same answer on every iteration of the loop whose changes these are."""
    found = reads(test, is_library)
    if found is None:
        return False
    names, roots, attributes = found
    return not (names & (changes.bound | changes.mutated_names)) and not (roots & changes.bound) and \
        not (attributes & changes.attributes)


def same_on_every_call(test, receiver: Optional[str], changes: Changes, caller_loop,
                       is_library: Callable[[str], bool], cache: Optional[dict] = None) -> bool:
    """Whether a callee's ``test`` answers the same on every call a caller's loop makes: it reads only
    fields of the receiver and module names, none of which the callee or the caller's loop stores
    (``if self.device == "cuda":`` in a loader's ``_load``); a parameter or a local may differ per call."""
    found = reads(test, is_library)
    if found is None:
        return False
    names, roots, attributes = found
    if names & changes.bound or (roots - {receiver}) & changes.bound or attributes & changes.attributes:
        return False
    if isinstance(caller_loop, (cst.For, cst.While)):
        outer = loop_changes(caller_loop, cache)  # the caller's receiver has its own name: fields by name
        return not (attributes & outer.attributes) and not (names & outer.bound)
    return True


_STEPPED: dict = {}


_ADVANCED: dict = {}


def advanced_names(loop: cst.For) -> frozenset:
    """Names the loop's body moves on by adding to or subtracting from them (``offset += n``), outside
    nested functions: an offset that only grows (or only shrinks) picks another part each time round.
    (A name wrapped round, ``slot = (slot + 1) % 2``, comes back: not one of them.)"""
    found = _ADVANCED.get(loop)
    if found is None:
        names = set()
        stack = [loop.body]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and \
                    isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
                names.add(node.target.value)
            stack.extend(code_parts(node))
        found = _ADVANCED[loop] = frozenset(names)
    return found


def stepped_names(loop) -> frozenset:
    """Names that take a new value on each iteration by the loop's own stepping: a ``for`` loop's
    target (``for size in sizes``, ``for i in range(n)``) and a name the body updates from itself
    (``size *= 2``, ``n = n * 2``). A plain binding (``n = len(batch)``) is not: its value may well
    be the same every time."""
    found = _STEPPED.get(loop)
    if found is not None:
        return found
    names: set = set()
    if isinstance(loop, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
        # a comprehension (a loop inside an expression): the targets of its `for` clauses
        changes = Changes()
        clause = loop.for_in
        while clause is not None:
            changes.target(clause.target)
            clause = clause.inner_for_in
        found = _STEPPED[loop] = frozenset(changes.bound)
        return found
    if isinstance(loop, cst.For):
        changes = Changes()
        changes.target(loop.target)
        names |= changes.bound
    stack = [loop.body]
    computed = []  # (name, value) of the body's plain bindings
    while stack:
        node = stack.pop()
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            names.add(node.target.value)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if name in names_read(node.value):
                names.add(name)
            computed.append((name, node.value))
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(code_parts(node))
    # Names the body computes from themselves through others (`begin = max(0, end - chunk); end =
    # begin` in a `while end > 0:`): each iteration's value comes from the last one's.
    reads: dict = {}
    for name, value in computed:
        reads.setdefault(name, set()).update(names_read(value))
    for name in reads:
        seen, todo = set(), list(reads[name])
        while todo:
            other = todo.pop()
            if other == name:
                names.add(name)
                break
            if other not in seen:
                seen.add(other)
                todo.extend(reads.get(other, ()))
    # A number computed from a stepped name (`rows = 4 ** level`) steps with it; not one read from an
    # object (`n = len(batch)`, `batch.shape[0]`), which `arithmetic_names` leaves out.
    grown = True
    while grown:
        grown = False
        for name, value in computed:
            if name not in names and arithmetic_names(value) & names:
                names.add(name)
                grown = True
    found = _STEPPED[loop] = frozenset(names)
    return found


_NUMBER_CASTS = frozenset({"int", "float", "round", "abs"})


def arithmetic_names(node) -> frozenset:
    """The names an expression computes with as numbers: bare, in arithmetic, in a tuple or list, or
    converted to a number (``n``, ``(1 << i, m)``, ``int(nbytes)``); not the objects it looks into
    (``batch.shape``, ``len(batch)``)."""
    found: set = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            found.add(item.value)
        elif isinstance(item, cst.Call) and isinstance(item.func, cst.Name) and item.func.value in _NUMBER_CASTS \
                and len(item.args) >= 1 and item.args[0].keyword is None and item.args[0].star == "":
            stack.append(item.args[0].value)
        elif isinstance(item, cst.BinaryOperation):
            stack += [item.left, item.right]
        elif isinstance(item, cst.UnaryOperation):
            stack.append(item.expression)
        elif isinstance(item, (cst.Tuple, cst.List)):
            stack += [element.value for element in item.elements]
    return frozenset(found)


def names_read(node) -> frozenset:
    """The bare names an expression reads (not attribute names, not nested definitions')."""
    found: set = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.Name):
            found.add(item.value)
        elif isinstance(item, cst.Attribute):
            stack.append(item.value)
        elif isinstance(item, cst.Arg):
            stack.append(item.value)
        elif not isinstance(item, (cst.Lambda, cst.FunctionDef)):
            stack.extend(code_parts(item))
    return frozenset(found)
