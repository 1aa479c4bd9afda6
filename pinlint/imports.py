"""Import alias resolution in one pass over a module's import statements.

``import cupy as cp`` binds ``cp`` to ``cupy``; ``from numba import cuda`` binds ``cuda`` to
``numba.cuda``; ``from cuda.bindings import runtime as rt`` binds ``rt`` to ``cuda.bindings.runtime``.
This replaces libcst's QualifiedNameProvider, whose scope analysis costs about 20 ms a file
(DESIGN.md's speed notes): the interpreter already knows which names are local variables, so all
it needs from imports is this alias map. A name bound to two different modules is ambiguous and
resolves to nothing (precision first).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Union

import libcst as cst

from .walk import small_statements

_AMBIGUOUS = object()


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


class ImportMap:
    def __init__(self) -> None:
        self._bindings: dict[str, object] = {}

    def bind(self, name: str, target: str) -> None:
        previous = self._bindings.get(name)
        if previous is None or previous == target:
            self._bindings[name] = target
        else:
            self._bindings[name] = _AMBIGUOUS

    def lookup(self, name: str) -> Optional[str]:
        target = self._bindings.get(name)
        return target if isinstance(target, str) else None

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """Qualified name of a Name/Attribute chain whose root is an imported name."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.lookup(root)
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
    return imports
