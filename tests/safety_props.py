"""Properties every text pinlint writes must keep, measured with Python's own tools.

- ``unbound_names``: names a scope uses that nothing binds where Python would look for them
  (``symtable``: local, enclosing functions, module, builtins).
- ``load_time_imports``: the libraries a module imports when it loads (imports outside any
  function), each with the chain of guards around it (``try`` body, ``if`` branch...).
- ``string_values``: every string and bytes constant, docstrings included.

A fix may not add an unbound name, a load-time import of a library (or the same library under a
weaker guard), or lose a string value. Used by ``tests/test_safety.py`` and the fuzzer.
"""

from __future__ import annotations

import ast
import builtins
import collections
import symtable
from typing import Optional

_MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__",
                           "__builtins__", "__path__", "__annotations__", "__dict__", "__cached__",
                           "__debug__", "__build_class__", "__class__"})
_KNOWN = frozenset(dir(builtins)) | _MODULE_NAMES
_LIBRARY_OF_ROOT = {"cupyx": "cupy"}


def unbound_names(text: str) -> Optional[set]:
    """{(scope path, name)} for every name used where nothing binds it; None if the text does not
    compile or takes names from a star import (then nothing can be said)."""
    try:
        top = symtable.symtable(text, "<checked>", "exec")
    except SyntaxError:
        return None
    module_bound = {s.get_name() for s in top.get_symbols()
                    if s.is_assigned() or s.is_imported() or s.is_namespace() or s.is_parameter()}
    if "*" in module_bound or any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                                  for n in ast.walk(ast.parse(text))):
        return None
    found: set = set()

    def walk(table, path: tuple) -> None:
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if not symbol.is_referenced() or name in _KNOWN:
                continue
            if symbol.is_global() and name not in module_bound:
                found.add((path, name))
            elif table.get_type() == "module" and not (symbol.is_assigned() or symbol.is_imported()
                                                       or symbol.is_namespace()):
                found.add((path, name))
        for child in table.get_children():
            walk(child, (*path, child.get_name()))

    walk(top, ())
    return found


def new_unbound_names(old: str, new: str) -> set:
    before, after = unbound_names(old), unbound_names(new)
    if after is None:
        return set()
    return after - (before or set())


def library_of(module: str) -> str:
    root = module.split(".")[0]
    return _LIBRARY_OF_ROOT.get(root, root)


def load_time_imports(text: str) -> set:
    """{(library, guards)}: the imports that run when the module loads, with the compound
    statements around each (``("try.body",)``, ``("if.orelse", "try.handler")``...)."""
    found: set = set()

    def visit(body: list, guards: tuple) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update((library_of(a.name), guards) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if not node.level and node.module:
                    found.add((library_of(node.module), guards))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue  # runs when called, not when the module loads
            else:
                kind = type(node).__name__.lower()
                for part in ("body", "orelse", "finalbody"):
                    inner = getattr(node, part, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        visit(inner, (*guards, f"{kind}.{part}"))
                for handler in getattr(node, "handlers", ()):
                    visit(handler.body, (*guards, f"{kind}.handler"))
                for case in getattr(node, "cases", ()):
                    visit(case.body, (*guards, "match.case"))

    try:
        visit(ast.parse(text).body, ())
    except SyntaxError:
        return set()
    return found


def new_load_time_imports(old: str, new: str) -> set:
    return load_time_imports(new) - load_time_imports(old)


def string_values(text: str) -> collections.Counter:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return collections.Counter()
    return collections.Counter(repr(n.value) for n in ast.walk(tree)
                               if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)))


def lost_strings(old: str, new: str) -> collections.Counter:
    return string_values(old) - string_values(new)


def compiles(text: str) -> bool:
    try:
        compile(text, "<checked>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def broken(old: str, new: str) -> list:
    """What ``new`` (a text pinlint wrote from ``old``) breaks, as readable lines; [] when nothing."""
    if new == old:
        return []
    problems = []
    if compiles(old) and not compiles(new):
        return ["the written text does not compile"]
    for path, name in sorted(new_unbound_names(old, new)):
        problems.append(f"`{name}` is used unbound in {'.'.join(path) or 'the module'}")
    for library, guards in sorted(new_load_time_imports(old, new)):
        problems.append(f"new load-time import of {library}" + (f" under {' > '.join(guards)}" if guards else ""))
    for value, count in sorted(lost_strings(old, new).items()):
        problems.append(f"string value {value[:60]} lost ({count}x)")
    return problems
