"""Device memory that dies when its function returns, and so synchronizes the device there.

PyCUDA frees a `DeviceAllocation` (a `mem_alloc` result, the memory of a `GPUArray` made with the
default allocator) the moment its last reference goes, with `cuMemFree`, and `cuMemFree` waits for the
whole device: measured with `bench/free_sync.py`, dropping the last reference with ~190 ms of copies
queued on another stream held the host 194 ms, and the stream had finished after it. So a function that
queues non-blocking device-to-host copies, keeps its device buffers only in its own locals and returns
has finished those copies before its caller reads them (CPython drops the locals at the return).

This module answers, from the function's text alone, whether a function is sure to drop such an
allocation when it returns. It errs towards "no": every use of the allocation must be one that keeps no
reference to it (a library call, a kernel launch, a method of its own, a comparison), and a use it does
not recognise (an assignment, a project function, a holder object, a return) keeps the copies in flight.
Other libraries do not free this way (measured in the same script): CuPy and PyTorch return memory to
their pools and Numba defers its frees, none of them waits for the device.
"""

from __future__ import annotations

import libcst as cst

from ..imports import dotted
from ..walk import target_names

# Methods that launch a PyCUDA kernel (`func.prepared_async_call(grid, block, stream, *args)`): they pass
# the allocations' addresses and keep nothing.
_LAUNCH_METHODS = frozenset({"prepared_async_call", "prepared_call", "prepared_timed_call"})
# Methods of a device allocation or array whose result holds none of its memory (a host copy, None).
_DETACHED_RESULTS = frozenset({"free", "get", "get_async", "set", "set_async", "fill", "copy_to_host", "synchronize"})
# Attributes of a device allocation that are the allocation itself rather than a number or a shape.
_SAME_MEMORY_ATTRIBUTES = frozenset({"gpudata", "base"})
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class _Scope(cst.CSTVisitor):
    """The function's own nodes with their parents; names used by nested scopes; whether it yields."""

    def __init__(self) -> None:
        self.parent: dict = {}
        self.stack: list = []
        self.loads: dict = {}       # name -> [Name nodes of its own scope]
        self.nested: set = set()    # names that appear inside a nested def, lambda or class
        self.declared: set = set()  # global / nonlocal names
        self.yields = False
        self.depth = 0              # > 0 inside a nested scope

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parent[node] = self.stack[-1]
        self.stack.append(node)
        if isinstance(node, _NESTED_SCOPES) and len(self.stack) > 1:
            self.depth += 1
        if isinstance(node, cst.Name):
            (self.nested.add(node.value) if self.depth else self.loads.setdefault(node.value, []).append(node))
        elif isinstance(node, (cst.Global, cst.Nonlocal)) and not self.depth:
            self.declared.update(n.name.value for n in node.names)
        elif isinstance(node, cst.Yield) and not self.depth:
            self.yields = True
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()
        if isinstance(original_node, _NESTED_SCOPES) and self.stack:
            self.depth -= 1


class _Judge:
    def __init__(self, scope: _Scope, qualify, tables, kernels: frozenset) -> None:
        self.scope, self.qualify, self.tables, self.kernels = scope, qualify, tables, kernels
        self.freeing = tables.frees_when_dropped
        self.harmless_builtins = frozenset(tables.python.get("non_retaining_builtins", ()))

    # ------------------------------------------------------------------ what makes an allocation
    def allocates(self, node) -> bool:
        """`mem_alloc(n)`, `gpuarray.to_gpu(a)`: an allocation of the default allocator."""
        if not isinstance(node, cst.Call):
            return False
        name = self.qualify(node.func)
        return name in self.freeing and not any(a.keyword is not None and a.keyword.value == "allocator"
                                                for a in node.args)

    def holds_allocations(self, value):
        """What a local name bound to `value` holds: "allocated" (one allocation, or a list of them),
        True (a list still empty or of `None`s, `[None] * n`, that allocations may fill), else False."""
        if self.allocates(value):
            return "allocated"
        if isinstance(value, cst.ListComp):
            return "allocated" if self.allocates(value.elt) else False
        if isinstance(value, cst.List):
            if not all(self.allocates(e.value) or _is_none(e.value) for e in value.elements):
                return False
            return "allocated" if any(self.allocates(e.value) for e in value.elements) else True
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply) and \
                any(isinstance(side, cst.List) and side.elements and all(_is_none(e.value) for e in side.elements)
                    for side in (value.left, value.right)):
            return True
        return False

    # ------------------------------------------------------------------ the decision
    def dies(self, name: str) -> bool | None:
        """True when every binding of `name` holds allocations and no use keeps a reference; None when
        `name` makes no allocation at all."""
        if name in self.scope.declared or name in self.scope.nested:
            return False
        allocated = False
        aliases = {name}
        pending = [name]
        while pending:
            current = pending.pop()
            for use in self.scope.loads.get(current, ()):
                verdict = self._use(use, current == name)
                if verdict is False:
                    return False
                if verdict == "allocated":
                    allocated = True
                elif isinstance(verdict, set):
                    for alias in verdict - aliases:
                        if alias in self.scope.declared or alias in self.scope.nested:
                            return False
                        aliases.add(alias)
                        pending.append(alias)
        return True if allocated else None

    def _use(self, node: cst.Name, is_root: bool):
        """What one occurrence of the name does: "allocated" (it is bound to allocations), True (keeps
        nothing), a set of loop names that take its elements, or False (may keep it)."""
        parent = self.scope.parent.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return True  # `x.name`: an attribute of the same spelling
        if isinstance(parent, (cst.Arg, cst.Param)) and (parent.keyword if isinstance(parent, cst.Arg) else None) is node:
            return True  # `f(name=...)`: a keyword
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign)) and parent.target is node:
            if not is_root:
                return True  # a loop variable bound again: the binding keeps nothing
            value = (self.scope.parent.get(parent) if isinstance(parent, cst.AssignTarget) else parent).value
            return self.holds_allocations(value) if value is not None else False
        binding = _binding_of(node, self.scope.parent)
        if isinstance(binding, (cst.For, cst.CompFor)):
            return True  # a loop variable's own binding: its uses are checked as an alias
        if binding is not None:  # `a, b = ...`: unpacked from something else
            return not is_root
        if isinstance(parent, (cst.Param, cst.AugAssign, cst.AsName, cst.ImportAlias)):
            return False
        if isinstance(parent, cst.Arg):
            names = self._loop_names(node)
            if names is not None:
                return names
        return self._value_use(node)

    def _value_use(self, expr: cst.CSTNode):
        """Follow the value up through subscripts, same-memory attributes and calls whose result may
        hold it (a view, a library object wrapping it) to where it is used."""
        parent = self.scope.parent.get(expr)
        while True:
            if isinstance(parent, cst.Subscript) and parent.value is expr:
                grand = self.scope.parent.get(parent)
                if isinstance(grand, cst.AssignTarget):  # `bufs[i] = mem_alloc(n)`
                    return "allocated" if self.allocates(self.scope.parent[grand].value) else False
                expr, parent = parent, grand  # `d[:n]`: a view of the same memory
                continue
            if isinstance(parent, cst.Attribute) and parent.value is expr:
                grand = self.scope.parent.get(parent)
                if parent.attr.value in _SAME_MEMORY_ATTRIBUTES:
                    expr, parent = parent, grand
                    continue
                if isinstance(grand, cst.Call) and grand.func is parent:
                    if parent.attr.value == "append":
                        return "allocated" if grand.args and self.allocates(grand.args[0].value) else False
                    if parent.attr.value in _DETACHED_RESULTS:
                        return True  # `d.free()`, `g.get_async(stream=s)`: the result holds no device memory
                    expr, parent = grand, self.scope.parent.get(grand)  # `g.reshape(n)`: maybe a view
                    continue
                if isinstance(grand, (cst.AssignTarget, cst.AugAssign)):
                    return False  # `d.attr = ...` changes the allocation object; keep it simple
                return True  # `d.nbytes`, `d.shape`, `d.ptr`: numbers
            if isinstance(parent, cst.Arg):
                call = self.scope.parent.get(parent)
                verdict = self._call_result(call) if isinstance(call, cst.Call) else False
                if verdict is None:  # the result may hold it: follow the call's own use
                    expr, parent = call, self.scope.parent.get(call)
                    continue
                return verdict
            break
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is expr:
            return set(target_names(parent.target))
        if isinstance(parent, cst.IfExp) and parent.test is expr:
            return True
        # A test or a statement of its own (`if d is None`, `not d`, `del d`, a call's result dropped):
        # nothing keeps the value. (`d or e` and `d if c else e` hand it on, so they are not here.)
        return isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.If, cst.While, cst.UnaryOperation,
                                   cst.Expr, cst.Del))

    def _loop_names(self, node):
        """The loop variables that take `node`'s elements in `for a, d in zip(A, node)` (or
        `enumerate(node)`), or None when `node` is not an argument of such a loop's iterable."""
        arg = self.scope.parent.get(node)
        call = self.scope.parent.get(arg)
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and
                call.func.value in ("zip", "enumerate", "reversed")):
            return None
        loop = self.scope.parent.get(call)
        if not (isinstance(loop, (cst.For, cst.CompFor)) and loop.iter is call):
            return None
        index = {"zip": call.args.index(arg), "enumerate": 1, "reversed": None}[call.func.value]
        target = loop.target
        if index is None or not isinstance(target, (cst.Tuple, cst.List)):
            return set(target_names(target))
        elements = target.elements
        if len(elements) != (len(call.args) if call.func.value == "zip" else 2) or \
                any(isinstance(e, cst.StarredElement) for e in elements):
            return set(target_names(target))
        return set(target_names(elements[index].value))

    def _call_result(self, call: cst.Call):
        """Given the allocation as an argument: True when the call keeps nothing and returns nothing
        that holds it (`int(d)`, `len(bufs)`), None when it keeps nothing but its result may hold it
        (a library call, a kernel launch: their results are followed), False when it may keep it (a
        function or class of the project, anything else)."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in self.harmless_builtins:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in _LAUNCH_METHODS or dotted(func) in self.kernels:
            return None
        qualified = self.qualify(func)
        return None if qualified is not None and self.tables.library_of(qualified) is not None else False


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _binding_of(node, parent):
    """The statement or loop that binds `node` when it is (part of) an assignment or loop target."""
    child, up = node, parent.get(node)
    while isinstance(up, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, up = up, parent.get(up)
    if isinstance(up, (cst.For, cst.CompFor)) and up.target is child:
        return up
    if isinstance(up, cst.AssignTarget) and up.target is child and child is not node:
        return up
    return None


def _kernel_names(fn: cst.FunctionDef) -> frozenset:
    """Names the function binds to `<module>.get_function(...)`: calling one launches a kernel."""
    found = set()
    for statement in fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
                        isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "get_function":
                    for target in small.targets:
                        name = dotted(target.target)
                        if name is not None:
                            found.add(name)
    return frozenset(found)


def drops_device_memory(fn: cst.FunctionDef, qualify, tables) -> bool:
    """Whether returning from `fn` drops the last reference to device memory that is freed at once."""
    if not tables.frees_when_dropped or not isinstance(fn, cst.FunctionDef):
        return False
    scope = _Scope()
    fn.body.visit(scope)
    if scope.yields:
        return False  # a generator's locals live on between its yields
    judge = _Judge(scope, qualify, tables, _kernel_names(fn))
    parameters = {p.name.value for p in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params)}
    for name in sorted(scope.loads):
        if name in parameters:
            continue
        if judge.dies(name):
            return True
    return False
