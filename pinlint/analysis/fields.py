"""What ``self.x`` holds for a class of the checked code: the join of what its methods, and its
bases' methods, assign to it.

A class's fields are worked out by running every method that may set them (``may_set_fields``) with
``self`` an object of the class and nothing known of its fields yet. A base class's methods would
be run again for every subclass, and a test suite has hundreds of subclasses of one framework class
(``class TestModel(BoringModel)`` in pytorch-lightning, whose bases run dozens of methods): five of
every six scope analyses of a cold run there were these repeats. A base's methods give an object of
a subclass what they gave an object of another class unless the two classes resolve differently
something the run looked up on its object, so each run of one class's methods on an object of some
class is kept (a ``Share``), and a later class takes a kept one as it is when

- the same methods of the base may set fields under its method names (a base method calling
  ``self.hook()`` may set fields only once some class defines ``hook``);
- every attribute the run looked up on its object (``ClassInfo.lookup`` records them, and the kept
  analyses the run reused stand for theirs: ``Project._kept``) resolves to the same member from
  both classes (an override would run instead), except a method that the run only took as a value
  and never ran on the object (``_invoke`` records the runs): any method does there;
- no value in it holds an object of the class it ran on (on the later class's own run that would
  be the later class's object).

Otherwise the methods run on the later class's object, and that run is kept too.

Each method runs on an object with no fields yet, so a method that fills a field in place
(``self.inputs.append(HostDeviceMem(host, device))`` in ``allocate_buffers``, where ``__init__`` set
``self.inputs = []``: TensorRT's samples and the projects built on them) would add nothing. Such a
method runs once more, on an object holding just the fields it fills as the first runs left them,
and what they hold after it joins them (``_changed_in_place``); those runs are kept and shared the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from ..walk import class_body_small, code_nodes, code_parts, statements, suite_body
from .domain import (UNKNOWN, Alternatives, ClassRef, Function, Instance, Items, Iteration, Mapping, Seq, Super,
                     Value, is_none, join)
from .interproc import Invocation, context_free_env

MAX_SHARES = 16   # kept runs of one class's methods (on objects of different classes) tried for a new class


@dataclass(frozen=True)
class Share:
    """What one class's methods gave the fields of an object of class ``on``."""

    on: ClassRef
    methods: tuple      # the members run (the ones that may set fields), in class order
    fields: tuple       # ((name, value), ...)
    lookups: frozenset  # ("take" or "call", attribute): looked up (and run) on its object during the run


def field_join(a: Value, b: Value) -> Value:
    """Two values stored in one field. An object and None (`self._hd = None` in ``__init__``, a holder
    built in ``allocate()``) join to the object, as a buffer and None do (``domain.join``): reading
    ``self._hd.host`` of None would have raised, so where a method goes on the field holds the
    object; a method's own ``if self._hd is None:`` is told apart (``Evaluator._memo_guard``)."""
    if isinstance(a, Instance) and is_none(b):
        return a
    if isinstance(b, Instance) and is_none(a):
        return b
    return join(a, b)


class FieldSolver:
    """The fields of every class of one project, each worked out once."""

    def __init__(self, project) -> None:
        self.project = project
        self.done: dict = {}           # ClassRef -> ((name, value), ...)
        self.running: set = set()      # classes whose fields are being worked out now
        self.shares: dict = {}         # ClassRef of the methods' class -> [Share, ...]
        self.again: dict = {}          # (method node, fields it starts with) -> [Share, ...]
        self.runs = 0                  # method runs made (for tests and the benchmark's curiosity)
        self._sets_fields: dict = {}   # (method node, self name, method names) -> may it set fields
        self.none_fields: dict = {}    # ClassRef -> the fields that may be None when a method runs
        self.tests_only: dict = {}     # ClassRef of a unittest class -> the methods only its tests run

    def may_be_none(self, cls: ClassRef) -> frozenset:
        """The fields of ``cls`` that may be None when one of its methods runs: set to None somewhere
        (``self.x = None``, a class attribute ``x = None``), or set by no constructor at all."""
        found = self.none_fields.get(cls)
        if found is not None:
            return found
        info = self.project.class_info(cls)
        constructed, assigned, none = set(), set(), set()
        for klass_info in (info.mro() if info is not None else []):
            for small in class_body_small(klass_info.cls.node):
                if isinstance(small, cst.Assign) and _is_none_literal(small.value):
                    none |= {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
            for name, member in klass_info.members.items():
                if member.kind != "method" or not [*member.node.params.posonly_params, *member.node.params.params]:
                    continue
                stored, to_none = field_stores(member.node, _self_name(member))
                assigned |= stored
                none |= to_none
                if name in _CONSTRUCTORS:
                    constructed |= stored
        found = self.none_fields[cls] = frozenset(none | (assigned - constructed))
        return found

    def of(self, cls: ClassRef) -> tuple:
        """The fields of ``cls`` (none while they are being worked out)."""
        found = self.done.get(cls)
        if found is not None:
            return found
        if cls in self.running:
            self.project._read_unfinished(cls)
            return ()
        self.running.add(cls)
        fields: dict = {}
        try:
            info = self.project.class_info(cls)
            names = _method_names(info) if info is not None else frozenset()
            for klass_info in (info.mro() if info is not None else []):
                for name, value in self._part(cls, info, klass_info, names):
                    fields[name] = field_join(fields[name], value) if name in fields else value
            if info is not None:
                self._changed_in_place(cls, info, names, fields)
        finally:
            self.running.discard(cls)
            self.project._settled()
        result = tuple(sorted(fields.items()))
        self.done[cls] = result
        return result

    def _part(self, cls: ClassRef, info, klass_info, names: frozenset) -> tuple:
        """What the methods ``klass_info`` defines give an object of ``cls`` (it or a subclass);
        ``names``: the method names of ``cls`` and its bases."""
        methods = self._methods(klass_info, names)
        if info is not None and klass_info is not info and _init_only_called_explicitly(info, klass_info):
            methods = tuple(m for m in methods if m.node.name.value != "__init__")
        if info is not None and info.runs_each_test_alone():
            per_test = _run_by_tests_only(info, self.tests_only)
            methods = tuple(m for m in methods if not m.node.name.value.startswith("test") and
                            m.node.name.value not in per_test)
        kept = self.shares.setdefault(klass_info.cls, [])
        for share in reversed(kept[-MAX_SHARES:]):
            if share.methods == methods and self._resolves_alike(info, share):
                return share.fields
        fields, lookups = self._run(cls, methods)
        if not any(holds(value, cls) for _, value in fields):
            kept.append(Share(cls, methods, fields, lookups))
        return fields

    def _changed_in_place(self, cls: ClassRef, info, names: frozenset, fields: dict) -> None:
        """A method that changes a field in place (``self.inputs.append(HostDeviceMem(h, d))``,
        ``self.buf[k] = h``, ``self.mem.host = h``) ran on an object with no fields yet, so when another
        method sets that field (``self.inputs = []`` in ``__init__``) the change was lost. Such a
        method runs once more on an object whose fields are those it changes in place, as found, and
        what it leaves in them joins them (its other stores were counted by the first run). These
        runs are kept and shared between classes as the first ones are (a subclass of a framework
        class that keeps a list in ``__init__`` and appends in ``setup`` runs ``setup`` once)."""
        known = {name for name, value in fields.items() if value is not UNKNOWN}
        if not known:
            return
        again = []
        for klass_info in info.mro():
            for member in self._methods(klass_info, names):
                changed = _changed_fields(member.node, _self_name(member)) & known
                if changed:
                    again.append((member, tuple(sorted((name, fields[name]) for name in changed))))
        for member, start in again:
            for name, value in self._run_again(cls, info, member, start):
                if name in fields:
                    fields[name] = field_join(fields[name], value)

    def _run_again(self, cls: ClassRef, info, member, start: tuple) -> tuple:
        """The fields of ``start`` after ``member`` ran on an object holding them."""
        kept = self.again.setdefault((member.node, start), [])
        for share in reversed(kept[-MAX_SHARES:]):
            if self._resolves_alike(info, share):
                return share.fields
        after, lookups = self._run(cls, (member,), start)
        changed = {name for name, _ in start}
        fields = tuple((name, value) for name, value in after if name in changed)
        if not any(holds(value, cls) for _, value in fields):
            kept.append(Share(cls, (member,), fields, lookups))
        return fields

    def _resolves_alike(self, info, share: Share) -> bool:
        return resolves_alike(self.project, info.cls, share.on, share.lookups)

    def _methods(self, klass_info, names: frozenset) -> tuple:
        found = []
        for member in klass_info.members.values():
            params = [*member.node.params.posonly_params, *member.node.params.params] \
                if member.kind in ("method", "class") else []
            if not params:
                continue
            if member.kind == "class":
                # `cls.img_data = np.zeros(...)` in a classmethod: a class attribute every object reads
                # as `self.img_data` (the stores only: what else it does is the class's business).
                if field_stores(member.node, params[0].name.value)[0]:
                    found.append(member)
                continue
            if may_set_fields(member.node, params[0].name.value, names, self._sets_fields):
                found.append(member)
        return tuple(found)

    def _run(self, cls: ClassRef, methods: tuple, start: tuple = ()) -> tuple:
        """Run ``methods`` (of one of ``cls``'s classes) on an object of ``cls`` with the fields
        ``start`` (none, but for ``_changed_in_place``): the fields they leave, and the attributes
        looked up on objects of ``cls`` meanwhile."""
        project = self.project
        fields: dict = {}
        project._observing.append(set())
        try:
            for member in methods:
                self.runs += 1
                self_name = _self_name(member)
                fn = Function(node=member.node, module=member.owner.module, name=member.qualified,
                              kernel=member.kernel, klass=member.owner, kind="method")
                env = context_free_env(project, fn, with_receiver=False)
                env[self_name] = Instance(cls, start)
                outcome = project.run(fn.module, fn.name, fn.node, env, frozenset(), None,
                                      Invocation(0, (fn.node,), fn))
                after = dict(outcome.params).get(self_name)
                if isinstance(after, Instance):
                    for name, value in after.fields:
                        fields[name] = field_join(fields[name], value) if name in fields else value
        finally:
            seen = project._observing.pop()
            if project._observing:
                project._observing[-1] |= seen
        lookups = frozenset((use, attr) for use, klass, attr in seen if klass == cls)
        return tuple(sorted(fields.items())), lookups


def _init_only_called_explicitly(info, base_info) -> bool:
    """Whether a base class's ``__init__`` runs on objects of ``info``'s class only where the code
    calls it by name: the class resolves ``__init__`` to a constructor of its own that hands on to no
    constructor of the checked code (``unittest.TestCase.__init__(self, *args)``, no ``super()``),
    so the base's runs only in ``setUp``'s ``BaseTestCase.__init__(self, params=[...])``, with the
    arguments given there, which the run of ``setUp`` follows (BEVFormer_tensorrt's test cases, whose
    base's ``__init__`` on its own takes a list of models of any length)."""
    if "__init__" not in base_info.members:
        return False
    own = info.lookup("__init__", record=False)
    if own is None or own.owner == base_info.cls or own.kind != "method":
        return False
    module = own.owner.module
    for node in code_nodes(own.node.body, into_definitions=False):
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name) and func.value == "super":
                return False
            if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
                target = func.value
                qualified = module.imports.qualify(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
                if qualified is None or isinstance(module.project.resolve(qualified, module), ClassRef):
                    return False  # a constructor of the checked code, or one it cannot tell
    return True


_CONSTRUCTORS = ("__init__", "__post_init__", "__new__")


_STORES: dict = {}


def field_stores(node: cst.FunctionDef, self_name: str) -> tuple:
    """(``self.x`` names a method binds anywhere in its body, those of them it sets to None)."""
    key = (node, self_name)
    found = _STORES.get(key)
    if found is None:
        found = _STORES[key] = stores_in(suite_body(node.body), self_name)
    return found


def stores_in(body, self_name: str) -> tuple:
    """(``self.x`` names a sequence of statements binds, those of them set to None), nested blocks
    included."""
    assigned, none = set(), set()
    for item in statements(body, into_definitions=False):
        if not isinstance(item, cst.SimpleStatementLine):
            continue
        for small in item.body:
            to_none = isinstance(small, (cst.Assign, cst.AnnAssign)) and _is_none_literal(small.value)
            for target in _targets(small):
                for part in (target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]):
                    part = part.value if isinstance(part, cst.Element) else part
                    if isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name) and \
                            part.value.value == self_name:
                        assigned.add(part.attr.value)
                        if to_none:
                            none.add(part.attr.value)
    return frozenset(assigned), frozenset(none)


def _is_none_literal(expr) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def resolves_alike(project, cls: ClassRef, other_cls: ClassRef, lookups) -> bool:
    """Whether objects of ``cls`` and of ``other_cls`` give the same analysis, as far as the lookups
    (``("take" or "call", attribute)``) an analysis on an object of ``other_cls`` made can tell."""
    info, other = project.class_info(cls), project.class_info(other_cls)
    if info is None or other is None:
        return False
    for use, attr in lookups:
        mine, theirs = info.lookup(attr, record=False), other.lookup(attr, record=False)
        if mine is theirs:
            continue
        # A method taken as a value and never run (``hook_signature(self.training_step)``): any method
        # serves, unless the analysis kept it (then a value holds the object, and nothing is shared).
        if use == "call" or mine is None or theirs is None or mine.kind != "method" or theirs.kind != "method":
            return False
    return True


_SET_UP = frozenset({"setUp", "setUpClass", "asyncSetUp", "__init__", "setup_method", "setup_class"})


def _run_by_tests_only(info, cache: dict) -> frozenset:
    """Methods of a unittest class that only its tests call (``self.perturb()`` in a ``test_*``, and
    what those call): each test runs on a fresh object after ``setUp``, so what such a helper stores
    is that test's business, carried back to it by the call itself, and no field of the class at
    large (gpu-ocean: a helper scaling ``self.nx`` for one test made every test's grid look large).
    A method called from nowhere in the class, or reachable from the set-up, is not one of them."""
    found = cache.get(info.cls)
    if found is not None:
        return found
    calls: dict = {}
    for klass_info in info.mro():
        for name, member in klass_info.members.items():
            if member.kind == "method" and name not in calls and [*member.node.params.posonly_params,
                                                                  *member.node.params.params]:
                calls[name] = self_calls(member.node, _self_name(member))

    def reach(roots) -> set:
        seen, todo = set(), list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(calls.get(name, ()))
        return seen
    from_set_up = reach(n for n in calls if n in _SET_UP)
    from_tests = reach(n for n in calls if n.startswith("test")) - {n for n in calls if n.startswith("test")}
    called_elsewhere = {callee for name, callees in calls.items()
                        if not name.startswith("test") and name not in from_tests for callee in callees}
    found = cache[info.cls] = frozenset(from_tests - from_set_up - called_elsewhere)
    return found


def self_calls(node: cst.FunctionDef, self_name: str) -> frozenset:
    """Names of the methods ``node`` calls on its receiver (``self.name(...)``)."""
    names = set()
    todo = [node.body]
    while todo:
        item = todo.pop()
        if isinstance(item, cst.Call) and isinstance(item.func, cst.Attribute) and \
                isinstance(item.func.value, cst.Name) and item.func.value.value == self_name:
            names.add(item.func.attr.value)
        todo.extend(code_parts(item))
    return frozenset(names)


def _self_name(member) -> str:
    return [*member.node.params.posonly_params, *member.node.params.params][0].name.value


def _method_names(info) -> frozenset:
    """Every method name of the class and its bases (a call ``self.name()`` may reach one)."""
    return frozenset(name for klass_info in info.mro() for name in klass_info.members)


def holds(value: Value, cls: ClassRef) -> bool:
    """Whether an object of ``cls`` is anywhere inside ``value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is Instance:
            if item.klass == cls:
                return True
            stack.extend(v for _, v in item.fields)
        elif kind is Items:
            stack.extend(item.items)
        elif kind is Seq or kind is Iteration:
            stack.append(item.element)
        elif kind is Mapping:
            stack.extend(item.values())
        elif kind is Alternatives:
            stack.extend(item.options)
        elif kind is Function and item.bound is not None:
            stack.append(item.bound)
        elif kind is Super:
            stack.append(item.receiver)
    return False


# ------------------------------------------------------------------------------ which methods set fields
def may_set_fields(node: cst.FunctionDef, self_name: str, project_methods: frozenset, cache: dict) -> bool:
    """Whether running the method can change the fields of ``self``: it stores into ``self.x`` (or
    ``self.x[k]``, ``self.x.y``, deletes one, binds one in a ``for``/``with``), mutates one with a call
    (``self.x.append(h)``), hands ``self`` or a field to a call (``Base.__init__(self, h)``,
    ``cudaHostRegister(self.h.ctypes.data, ...)``, ``with cuda.pinned(self.h):``), or
    calls a method of the checked code through ``self`` or ``super()`` (which may store what it is
    given). Most methods of a test class do none of these, and the fields of a class are worked out
    by running every method that does: skipping the others halves a cold run's analyses. Statements
    only are walked, and in them the targets and the outermost calls."""
    key = (node, self_name, project_methods)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _sets_fields(node, self_name, project_methods)
    return found


def _rooted_at(expr, name: str) -> int:
    """How many attribute/subscript steps lead from the name ``name`` to ``expr`` (-1: not rooted there)."""
    depth = 0
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
        depth += 1
    return depth if isinstance(expr, cst.Name) and expr.value == name else -1


def _targets(statement) -> list:
    if isinstance(statement, cst.Assign):
        return [t.target for t in statement.targets]
    if isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        return [statement.target]
    if isinstance(statement, cst.Del):
        return [statement.target]
    return []


def _calls(statement) -> list:
    value = getattr(statement, "value", None)
    if isinstance(value, cst.Await):
        value = value.expression
    return [value] if isinstance(value, cst.Call) else []


def _sets_fields(node: cst.FunctionDef, self_name: str, project_methods: frozenset) -> bool:
    def stores(target) -> bool:
        if isinstance(target, (cst.Tuple, cst.List)):
            return any(stores(e.value) for e in target.elements)
        if isinstance(target, cst.StarredElement):
            return stores(target.value)
        return _rooted_at(target, self_name) >= 1

    def changes(call: cst.Call) -> bool:
        # self or one of its fields handed to a call (registered, pinned, filled, stored elsewhere)
        if any(_rooted_at(a.value, self_name) >= 0 or (isinstance(a.value, cst.Call) and changes(a.value))
               for a in call.args):
            return True
        func = call.func
        if isinstance(func, cst.Attribute):
            depth = _rooted_at(func, self_name)
            if depth >= 2 or (depth == 1 and func.attr.value in project_methods):
                return True
            if isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) and \
                    func.value.func.value == "super":
                return True
        return False

    for item in statements(suite_body(node.body), into_definitions=True):
        if isinstance(item, cst.SimpleStatementLine):
            if any(any(stores(t) for t in _targets(small)) or any(changes(c) for c in _calls(small))
                   for small in item.body):
                return True
        elif isinstance(item, (cst.For, cst.With)):
            targets = [item.target] if isinstance(item, cst.For) else \
                [i.asname.name for i in item.items if i.asname is not None]
            calls = [i.item for i in item.items if isinstance(i.item, cst.Call)] if isinstance(item, cst.With) else []
            if any(stores(t) for t in targets) or any(changes(c) for c in calls):
                return True
    return False


# Methods by which a list, dict or set takes what it is given (``self.x.append(h)``).
_FILLING = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def _changed_fields(node: cst.FunctionDef, self_name: str) -> frozenset:
    """The fields a method changes in place rather than rebinds: ``self.x.append(v)`` (a container
    filled by one of its own methods), stores into ``self.x[k]`` or ``self.x.y`` (and deeper)."""
    found = set()

    def field_of(expr) -> Optional[str]:
        # self.x... -> "x", for a chain at least two steps below self
        steps = []
        while isinstance(expr, (cst.Attribute, cst.Subscript)):
            steps.append(expr)
            expr = expr.value
        if not (isinstance(expr, cst.Name) and expr.value == self_name) or len(steps) < 2:
            return None
        first = steps[-1]
        return first.attr.value if isinstance(first, cst.Attribute) else None

    def targets(target) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                targets(element.value)
        elif isinstance(target, cst.StarredElement):
            targets(target.value)
        else:
            name = field_of(target)
            if name is not None:
                found.add(name)

    for item in statements(suite_body(node.body), into_definitions=True):
        if isinstance(item, cst.SimpleStatementLine):
            for small in item.body:
                for target in _targets(small):
                    targets(target)
                for call in _calls(small):
                    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _FILLING:
                        name = field_of(call.func)
                        if name is not None:
                            found.add(name)
        elif isinstance(item, cst.For):
            targets(item.target)
    return frozenset(found)
