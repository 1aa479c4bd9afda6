"""Import alias resolution in one pass over a module's import statements.

``import cupy as cp`` binds ``cp`` to ``cupy``; ``from numba import cuda`` binds ``cuda`` to
``numba.cuda``; ``from cuda.bindings import runtime as rt`` binds ``rt`` to ``cuda.bindings.runtime``.
This replaces libcst's QualifiedNameProvider, whose scope analysis costs about 20 ms a file
(DESIGN.md's speed notes): the interpreter already knows which names are local variables, so all
it needs from imports is this alias map. A name bound to two different modules is ambiguous and
resolves to nothing (precision first), except where the imports that bind it are in different
functions: a function's own import binds the name in that function (``import pycuda.driver as cuda``
in one, ``import cuda.cuda as cuda`` in another), and the module's imports bind it elsewhere; and
except a GPU module with its CPU fallback in one scope (``try: import cupy as cp / except
ImportError: import numpy as cp``), which is the GPU module.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Union

import libcst as cst

from .walk import child_blocks, small_statements

class _Ambiguous:
    """A name that imports bind to several modules; ``targets`` are their qualified names."""

    __slots__ = ("targets",)

    def __init__(self, targets: frozenset) -> None:
        self.targets = targets


_SETTLED = _Ambiguous(frozenset())  # an ambiguous name the resolver could not settle (asked once)


@lru_cache(maxsize=1 << 16)
def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None. Kept per node (libcst nodes hash by
    identity): the analysis asks it of the same nodes at every pass over a function, 700,000 times in
    a cold run of numba-cuda."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: Union[cst.Attribute, cst.Name]) -> str:
    return dotted(node) or ""


# A GPU library's module and the CPU module it stands in for (`try: import cupy as xp / except
# ImportError: import numpy as xp`): where the name is the CPU module there is no transfer at all, so
# the analysis reads it as the GPU one, as it reads a "this run uses a GPU" flag.
_CPU_EQUIVALENTS = (("cupyx.scipy", "scipy"), ("cupy", "numpy"))


def gpu_of_fallback(one: str, other: str) -> Optional[str]:
    """The GPU module of a pair that binds one name to a GPU module and to its CPU equivalent."""
    for gpu, cpu in _CPU_EQUIVALENTS:
        for first, second in ((one, other), (other, one)):
            if (first == gpu or first.startswith(gpu + ".")) and second == cpu + first[len(gpu):]:
                return first
    return None


class ImportMap:
    def __init__(self, fallbacks: bool = False) -> None:
        self._bindings: dict[str, object] = {}
        self._fallbacks = fallbacks  # one scope's imports: a GPU module and its CPU fallback are the GPU's
        # For a name bound to several modules by imports in different functions: each function's
        # uses of the name (Name nodes) -> what its own import binds, and the module's own binding.
        self._in_function: dict = {}
        self._outside: dict[str, str] = {}
        # Settles a name bound to several modules at the module's top level, once, when it is looked
        # up (set by the analysis: the one of them the checked tree holds, see ModuleContext).
        self.resolver = None

    def bind(self, name: str, target: str) -> None:
        previous = self._bindings.get(name)
        if previous is None or previous == target:
            self._bindings[name] = target
        elif self._fallbacks and isinstance(previous, str) and gpu_of_fallback(previous, target):
            self._bindings[name] = gpu_of_fallback(previous, target)
        else:
            earlier = previous.targets if isinstance(previous, _Ambiguous) else frozenset([previous])
            self._bindings[name] = _Ambiguous(earlier | {target})

    def lookup(self, name: str) -> Optional[str]:
        target = self._bindings.get(name)
        if isinstance(target, str):
            return target
        if target is None or target is _SETTLED:
            return None
        chosen = None
        if self.resolver is not None and not self._in_function and name not in self._outside:
            chosen = self.resolver(target.targets)
        self._bindings[name] = chosen if chosen is not None else _SETTLED
        return chosen

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """Qualified name of a Name/Attribute chain whose root is an imported name."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.lookup(root)
        if target is None:
            if root not in self._outside and not self._in_function:
                return None
            while isinstance(node, cst.Attribute):
                node = node.value
            target = self._in_function.get(node) or self._outside.get(root)
            if target is None:
                return None
        return f"{target}.{rest}" if rest else target

    def bindings(self) -> dict:
        """Local name -> qualified name, for every unambiguous import."""
        return {name: target for name, target in self._bindings.items() if isinstance(target, str)}

    def roots(self) -> set[str]:
        return {t.split(".")[0] for t in self._bindings.values() if isinstance(t, str)}


def _bind_import(imports: ImportMap, node: cst.Import) -> None:
    for alias in node.names:
        module = _module_name(alias.name)
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            imports.bind(alias.asname.name.value, module)
        else:
            # `import a.b.c` binds `a`; the chain a.b.c then qualifies to itself.
            root = module.split(".")[0]
            imports.bind(root, root)


def _bind_import_from(imports: ImportMap, node: cst.ImportFrom) -> None:
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return
    module = _module_name(node.module)
    for alias in node.names:
        name = _module_name(alias.name)
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        imports.bind(local, f"{module}.{name}")


def collect_imports(module: cst.Module) -> ImportMap:
    """Imports anywhere in the file (module level, functions, try/except fallbacks)."""
    imports = ImportMap()
    for small in small_statements(module.body, into_definitions=True):
        if isinstance(small, cst.Import):
            _bind_import(imports, small)
        elif isinstance(small, cst.ImportFrom):
            _bind_import_from(imports, small)
    if any(isinstance(target, _Ambiguous) for target in imports._bindings.values()):
        _scope_ambiguous(imports, module)
    return imports


def _scope_ambiguous(imports: ImportMap, module: cst.Module) -> None:
    """Names bound to several modules: where each function's own imports agree, the function's uses
    of the name are that module; where the module's own imports (outside functions) agree, so are
    the uses outside the functions that import the name themselves."""
    ambiguous = {name for name, target in imports._bindings.items() if isinstance(target, _Ambiguous)}
    outside = ImportMap(fallbacks=True)
    functions: list = []   # (def node, its own ImportMap), outer functions before inner ones

    def visit(body, own: ImportMap) -> None:
        for node in body:
            if isinstance(node, cst.SimpleStatementLine):
                for small in node.body:
                    if isinstance(small, cst.Import):
                        _bind_import(own, small)
                    elif isinstance(small, cst.ImportFrom):
                        _bind_import_from(own, small)
                continue
            if isinstance(node, cst.FunctionDef):
                mine = ImportMap(fallbacks=True)
                functions.append((node, mine))
                visit(node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body], mine)
                continue
            for block in child_blocks(node):
                visit(block, own)

    visit(module.body, outside)
    for name in ambiguous:
        target = outside.lookup(name)
        if target is not None:
            imports._outside[name] = target
    for node, own in functions:
        for name in ambiguous:
            target = own._bindings.get(name)
            if target is None:
                continue
            for found in _names(node, name):
                imports._in_function[found] = target if isinstance(target, str) else None


def _names(node: cst.CSTNode, name: str) -> list:
    """Every ``Name`` node spelling ``name`` inside ``node``."""
    found: list = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, item: cst.Name) -> None:
            if item.value == name:
                found.append(item)

    node.visit(_Collect())
    return found
