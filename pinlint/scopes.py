"""Which names each scope of a module binds, and which of those bindings are imports.

Fixes spell new names (``cupyx.empty_pinned``, ``drv.pagelocked_empty``) and sometimes add the
import that binds them. Python resolves a name by scope (local, enclosing functions, module,
builtins; class bodies are skipped by the functions inside them), so a binding counts only where it
is visible: ``import cupyx`` inside one function does not bind ``cupyx`` in another. The index is
built in one visit of the module, only for files where a fix needs a name.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Iterator, Optional

import libcst as cst

from .imports import dotted

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True, eq=False)
class Binding:
    name: str
    target: Optional[str]                       # the module or object an import binds; None otherwise
    statement: Optional[cst.SimpleStatementLine]  # the import's line, when it stands alone in a block
    in_handler: bool = False                    # inside an ``except`` handler (``except ImportError: cp = None``)
    type_checking: bool = False                 # under ``if TYPE_CHECKING:``: never runs


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode                           # Module, FunctionDef, ClassDef, Lambda or a comprehension
    parent: Optional["Scope"]
    names: dict = field(default_factory=dict)   # name -> [Binding]
    declared_global: set = field(default_factory=set)
    declared_nonlocal: set = field(default_factory=set)

    @property
    def is_module(self) -> bool:
        return isinstance(self.node, cst.Module)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, cst.ClassDef)

    def chain(self) -> Iterator["Scope"]:
        scope: Optional[Scope] = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def module(self) -> "Scope":
        return list(self.chain())[-1]


class ScopeIndex:
    """Scopes of one module, and the questions fixes ask of them."""

    def __init__(self, module: cst.Module, parents) -> None:
        self.module_node = module
        self._parents = parents                  # callable: () -> {node: parent}
        self._parent_map: Optional[dict] = None
        collector = _Collector(module)
        from .positions import visit_code
        visit_code(module, collector)  # libcst's visit order, without its copying or the layout nodes
        self.scopes: dict = collector.scopes     # scope node -> Scope
        self.module_scope: Scope = self.scopes[module]
        # Asked once per fix, each a walk of every scope (20,000 in a generated module): kept.
        self._imports: Optional[list] = None
        self._by_name: Optional[dict] = None

    # ---- tree navigation
    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parent_map is None:
            self._parent_map = self._parents()
        return self._parent_map.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The scope in which ``node`` is evaluated."""
        child, grandchild = node, None
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and child is current.body:
                return self.scopes[current]
            if isinstance(current, _COMPREHENSIONS) and not (
                    child is current.for_in and grandchild is current.for_in.iter):
                return self.scopes[current]
            grandchild, child, current = child, current, self.parent(current)
        return self.module_scope

    def function_of(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The nearest ``def`` whose body holds ``node``: where a function-local statement can go."""
        for scope in self.scope_of(node).chain():
            if isinstance(scope.node, cst.FunctionDef):
                return scope.node
        return None

    def dominates(self, statement: Optional[cst.CSTNode], node: cst.CSTNode) -> bool:
        """``statement`` runs before ``node`` whenever ``node`` runs: it comes earlier in a block that
        holds ``node`` (or one of its enclosing statements)."""
        if statement is None:
            return False
        block = self.parent(statement)
        current = node
        while current is not None:
            above = self.parent(current)
            if above is block and block is not None:
                body = list(block.body)
                return _index(body, statement) < _index(body, current)
            current = above
        return False

    # ---- names
    def resolve(self, name: str, scope: Scope) -> Optional[Scope]:
        """The scope whose binding ``name`` refers to at ``scope`` (None: a builtin or unbound)."""
        first = True
        for candidate in scope.chain():
            if not first and candidate.is_class:
                continue  # functions do not see the names of the class bodies around them
            if name in candidate.declared_global:
                return self.module_scope if name in self.module_scope.names else None
            if name in candidate.names and name not in candidate.declared_nonlocal:
                return candidate
            first = False
        return None

    def bindings_of(self, name: str) -> Iterator[Binding]:
        if self._by_name is None:
            by_name: dict = {}
            for scope in self.scopes.values():
                for key, bindings in scope.names.items():
                    by_name.setdefault(key, []).extend(bindings)
            self._by_name = by_name
        return iter(self._by_name.get(name, ()))

    def imports(self) -> Iterator[tuple]:
        """(scope, binding) of every import that runs (not under ``if TYPE_CHECKING:``)."""
        if self._imports is None:
            self._imports = [(scope, binding) for scope in self.scopes.values()
                             for bindings in scope.names.values() for binding in bindings
                             if binding.target is not None and not binding.type_checking]
        return iter(self._imports)

    def refers_to(self, name: str, target: str, node: cst.CSTNode) -> bool:
        """At ``node``, ``name`` is bound by an import of ``target`` that has run: in the scope that
        resolves the name, only such imports bind it (or, at module level, fallbacks in ``except``
        handlers), and in a function one of them comes before ``node``."""
        here = self.scope_of(node)
        owner = self.resolve(name, here)
        if owner is None:
            return False
        bindings = owner.names[name]
        runs = [b for b in bindings if b.target is not None and not b.type_checking]
        if not runs or any(b.target != target for b in runs):
            return False
        if any(b.target is None and not (owner.is_module and b.in_handler) for b in bindings):
            return False
        loads_with_module = self.function_of(node) is None
        if owner.is_module and not loads_with_module:
            return True  # functions run after the module's imports
        return any(self.dominates(b.statement, node) for b in runs)

    def free_for(self, name: str, target: str) -> bool:
        """``name`` may be bound to ``target`` by a new import: wherever the file binds it, it is an
        import of that same target, and it is no builtin the new binding would hide."""
        if name in _BUILTINS:
            return False
        return all(b.target == target for b in self.bindings_of(name))


def _index(body: list, node: cst.CSTNode) -> int:
    return next(i for i, item in enumerate(body) if item is node)


def _is_type_checking(test: cst.BaseExpression) -> bool:
    name = dotted(test)
    return name is not None and name.split(".")[-1] == "TYPE_CHECKING"


class _Collector(cst.CSTVisitor):
    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.scopes: dict = {module: Scope(module, None)}
        self.stack: list = [self.scopes[module]]
        self.line: Optional[cst.SimpleStatementLine] = None
        self.handlers = 0
        self.type_checking_blocks: set = set()
        self.type_checking = 0

    # ---- scopes
    def _push(self, node: cst.CSTNode) -> None:
        scope = Scope(node, self.stack[-1])
        self.scopes[node] = scope
        self.stack.append(scope)

    def _pop(self, node: cst.CSTNode) -> None:
        self.stack.pop()

    def _bind(self, name: str, target: Optional[str] = None, scope: Optional[Scope] = None,
              statement: Optional[cst.SimpleStatementLine] = None) -> None:
        scope = scope or self.stack[-1]
        scope.names.setdefault(name, []).append(Binding(name, target, statement, self.handlers > 0,
                                                        self.type_checking > 0))

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value)
        self._push(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value)
        self._push(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop(node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push(node)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._pop(node)

    def visit_ListComp(self, node) -> None:
        self._push(node)

    def leave_ListComp(self, node) -> None:
        self._pop(node)

    def visit_SetComp(self, node) -> None:
        self._push(node)

    def leave_SetComp(self, node) -> None:
        self._pop(node)

    def visit_DictComp(self, node) -> None:
        self._push(node)

    def leave_DictComp(self, node) -> None:
        self._pop(node)

    def visit_GeneratorExp(self, node) -> None:
        self._push(node)

    def leave_GeneratorExp(self, node) -> None:
        self._pop(node)

    # ---- where a binding sits
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.line = node

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.line = None

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.handlers += 1
        if node.name is not None:
            self._bind_target(node.name.name)

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.handlers -= 1

    def visit_If(self, node: cst.If) -> None:
        if _is_type_checking(node.test):
            self.type_checking_blocks.add(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if node in self.type_checking_blocks:
            self.type_checking += 1

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if node in self.type_checking_blocks:
            self.type_checking -= 1

    def visit_SimpleStatementSuite(self, node) -> None:
        self.line = None

    # ---- bindings
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, module, statement=self.line)
            else:
                root = module.split(".")[0]
                self._bind(root, root, statement=self.line)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self._bind("*")
            return
        module = None if node.relative or node.module is None else dotted(node.module)
        for alias in node.names:
            name = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                else name
            self._bind(local, f"{module}.{name}" if module else None, statement=self.line)

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        # An assignment expression in a comprehension binds in the scope around it (PEP 572).
        scope = next(s for s in reversed(self.stack) if not isinstance(s.node, _COMPREHENSIONS))
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, scope=scope)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_target(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.stack[-1].declared_global.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.stack[-1].declared_nonlocal.update(n.name.value for n in node.names)

    def visit_MatchAs(self, node) -> None:
        if node.name is not None:
            self._bind(node.name.value)

    def visit_MatchStar(self, node) -> None:
        if node.name is not None:
            self._bind(node.name.value)

    def visit_MatchMapping(self, node) -> None:
        if node.rest is not None:
            self._bind(node.rest.value)

    def visit_TypeAlias(self, node) -> None:
        self._bind(node.name.value)
