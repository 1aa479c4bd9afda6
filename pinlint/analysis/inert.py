"""Which functions cannot have a finding of their own, so their root analysis is skipped.

Every event a rule reads starts at something the checked code names: a library API (through an
import), a definition or global of the checked tree, a field of ``self``, a parameter's annotation,
or one of the few method names the tables mark as identifying their library on any receiver. A
function that names none of these sees only unknown values and constants from start to end, so its
analysis with nothing known of its callers (its *baseline*, the only one that reports inside it)
has no event, and it has no finding. Issue 16's demand-driven analysis: in a cold run most of a
tree's functions are such (a compiler's internals, a test's arithmetic), and they are not analysed
unless a caller that can have a finding calls them (then their analysis in that calling context is
made on demand, as before).

The test is syntactic and errs one way only: a name it cannot explain makes the function
*relevant*. A function is **inert** when every name in it (decorators, annotations and defaults
included) is a builtin, a local, or bound at the module's top level only to inert things:

- an import of a library module with no table entry at or under it (``from numba.core import
  types``: the analysis treats library names it has no entry for as unknown values), or of a module
  outside the checked tree (found by the same file lookups the project uses); and, for a name bound
  only to an import of a library, each use of it through an attribute chain is judged by itself:
  ``torch.nn.functional.pad`` names nothing the tables know at or under it, so it is inert however
  much else ``torch`` has, while ``torch.zeros`` or ``torch.cuda`` are not;
- a top-level function or class of the same module that is itself inert (recursively; a cycle of
  definitions that names nothing else stays inert, as the analysis would find);
- a top-level assignment whose value names only inert things;

and it has no string annotation (the analysis parses those), no ``global``/``nonlocal``, no call of
a table's any-receiver method (``.pin_memory()``, ``.get(blocking=...)``), and no ``super()``
outside an inert class. A method also needs its class (and the classes of the module it derives
from) to be inert in every statement that can give ``self`` a field or a member: then ``self`` is an
object whose fields are unknown, as everything else it touches.

``tests/test_inert.py`` holds the screen to the analysis: on the fixtures, the rule examples, the
interprocedural projects, the safety corpus and generated programs, the findings (and their fixes)
with the screen are those without it.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..imports import dotted
from ..modulefiles import module_files
from ..walk import child_blocks, code_parts, suite_body
from .narrowing import narrows

_BUILTIN_SUPER = "super"


class Screen:
    """The inertness of one module's definitions (memoised; one per module context)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tables = ctx.tables
        self._bindings: Optional[dict] = None
        self._star = False
        self._memo: dict = {}        # class node -> (relevant by itself, names it refers to)
        self._names: dict = {}       # top-level name -> the same, for all its bindings
        self._verdicts: dict = {}    # top-level name -> whether something relevant is reachable from it
        self._classes: Optional[frozenset] = None
        self._qualified: dict = {}   # qualified import target -> inert
        self._scans: dict = {}       # (node, super allowed) -> _scan's answer
        self._libraries: Optional[dict] = None  # top-level name -> the library name it imports

    # ------------------------------------------------------------------ the module's top level
    def _module_bindings(self) -> dict:
        """name -> [(kind, node)] for every binding of the module's top level (kind: def, class,
        value, import, opaque)."""
        if self._bindings is not None:
            return self._bindings
        bindings: dict = {}

        def add(name: str, kind: str, node) -> None:
            bindings.setdefault(name, []).append((kind, node))

        def targets(target, kind="value", value=None) -> None:
            if isinstance(target, cst.Name):
                add(target.value, kind, value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    targets(element.value, "opaque")
            elif isinstance(target, cst.StarredElement):
                targets(target.value, "opaque")
            # attributes and subscripts bind no module name

        def block(body) -> None:
            for node in body:
                if isinstance(node, cst.FunctionDef):
                    add(node.name.value, "def", node)
                elif isinstance(node, cst.ClassDef):
                    add(node.name.value, "class", node)
                elif isinstance(node, cst.SimpleStatementLine):
                    for small in node.body:
                        small_statement(small)
                else:
                    if isinstance(node, cst.For):
                        targets(node.target, "opaque")
                    elif isinstance(node, (cst.With,)):
                        for item in node.items:
                            if item.asname is not None:
                                targets(item.asname.name, "opaque")
                    elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
                        for handler in node.handlers:
                            if handler.name is not None:
                                targets(handler.name.name, "opaque")
                    elif isinstance(node, cst.Match):
                        self._star = True  # capture patterns bind names: not worth following
                    for inner in child_blocks(node):
                        block(inner)

        def small_statement(small) -> None:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    targets(target.target, "value", small.value)
            elif isinstance(small, cst.AnnAssign):
                if small.value is not None:
                    targets(small.target, "value", small.value)
            elif isinstance(small, cst.AugAssign):
                targets(small.target, "value", small.value)
            elif isinstance(small, (cst.Import, cst.ImportFrom)):
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    self._star = True
                    return
                for local, qualified in self.ctx.imports_in(small):
                    add(local, "import", qualified)

        block(self.ctx.info.module.body)
        self._bindings = bindings
        return bindings

    def _unit(self, name: str) -> tuple:
        """(relevant by itself, module names it refers to) of a top-level name's bindings."""
        found = self._names.get(name)
        if found is not None:
            return found
        bindings = self._module_bindings()
        direct, refs = False, set()
        imported = self.ctx.imports.lookup(name)  # None also for a name bound to two modules: its
        if self._star:                             # bindings below are each checked
            direct = True
        elif imported is not None and not self.qualified_is_inert(imported):
            direct = True
        for kind, node in bindings.get(name, ()):
            if direct:
                break
            if kind == "opaque":
                direct = True
            elif kind == "import":
                direct = not self.qualified_is_inert(node)
            elif kind == "def":
                direct, more = self._scan(node, allow_super=False)
                refs |= more
            elif kind == "class":
                direct, more = self.class_scan(node)
                refs |= more
            elif kind == "value":
                direct, more = self._scan(node, allow_super=False)
                refs |= more
        if name == _BUILTIN_SUPER and not bindings.get(name):
            direct = True  # super() outside a method of a class shown inert
        refs.discard(name)
        found = (direct, frozenset(refs))
        self._names[name] = found
        return found

    def relevant(self, direct: bool, refs) -> bool:
        """Whether a relevant name is reachable: by itself, or through the names it refers to (a
        search of the module's name graph; a cycle that reaches nothing relevant stays inert)."""
        if direct:
            return True
        seen, todo = set(), list(refs)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            known = self._verdicts.get(name)
            if known is False:
                continue
            if known is True:
                return True
            own, more = self._unit(name)
            if own:
                self._verdicts[name] = True
                return True
            todo.extend(more)
        for name in seen:  # everything reachable from these was searched: all inert
            self._verdicts[name] = False
        return False

    def qualified_is_inert(self, qualified: str) -> bool:
        found = self._qualified.get(qualified)
        if found is None:
            found = self._qualified[qualified] = self._qualified_inert(qualified)
        return found

    def _qualified_inert(self, qualified: str) -> bool:
        tables = self.tables
        if tables.library_of(qualified) is not None:
            return not _touches_table(qualified, _table_keys(tables))
        # Not a library: the project resolves it when a module of the tree has that name.
        parts = qualified.split(".")
        if parts[0] == "importlib":
            return False  # it loads library modules by name (calls.named_call)
        path = self.ctx.info.path
        root = self.ctx.project.root
        for end in range(len(parts), 0, -1):
            found = module_files(".".join(parts[:end]), path, root, self.ctx.info.text or None)
            if next(iter(found), None) is not None:
                return False
        return True

    def _library_chain(self, node) -> Optional[bool]:
        """For ``torch.nn.functional.pad`` (a chain from a name the module binds only to an import
        of a library): True when the tables know the name or something under it (as for an import
        of it: ``qualified_is_inert``), False when they do not (the analysis then takes the whole chain as an unknown value: a use that can make no
        event, however much else the library has), None for any other expression. Every use is
        judged by itself: a framework's code names ``torch`` everywhere, mostly for what the
        tables never describe (``torch.nn.Module``, ``torch.no_grad``)."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        library = self._library_names().get(root)
        if library is None:
            return None
        qualified = f"{library}.{rest}" if rest else library
        return not self.qualified_is_inert(qualified)

    def _library_names(self) -> dict:
        """Top-level names bound only by imports, all to the same library module or name."""
        if self._libraries is None:
            found = {}
            if not self._star:
                for name, entries in self._module_bindings().items():
                    imported = self.ctx.imports.lookup(name)
                    if isinstance(imported, str) and self.tables.library_of(imported) is not None and \
                            all(kind == "import" and node == imported for kind, node in entries):
                        found[name] = imported
            self._libraries = found
        return self._libraries

    # ------------------------------------------------------------------ definitions
    def skippable(self, fn) -> bool:
        """Whether the function's baseline analysis cannot have an event (see the docstring): top-level
        functions and the methods of top-level classes only; nested functions may see their
        enclosing function's values, so they are always analysed."""
        if "<locals>" in fn.name:
            return False
        if fn.klass is None:
            if "." in fn.name:
                return False
            return not self.relevant(*self._scan(fn.node, allow_super=False))
        klass = fn.klass.node
        if "." in fn.klass.name or klass not in self._top_classes():
            return False
        return not self.relevant(*self.class_scan(klass)) and \
            not self.relevant(*self._scan(fn.node, allow_super=True))

    def lambda_relevant(self, fn) -> bool:
        """Whether a lambda analysed on its own (``analyze``) names anything that can make an event.
        What it captures is unknown there, so unlike a nested ``def`` it is screened."""
        return self.relevant(*self._scan(fn.node, allow_super=False))

    def _top_classes(self) -> frozenset:
        if self._classes is None:
            self._classes = frozenset(node for entries in self._module_bindings().values()
                                      for kind, node in entries if kind == "class")
        return self._classes

    def class_scan(self, node: cst.ClassDef) -> tuple:
        """Everything that can give an object of the class a field or a member: its bases,
        decorators, keywords, class-level statements and methods (``super()`` allowed in them)."""
        found = self._memo.get(node)
        if found is None:
            direct, refs = False, set()
            for part in [*node.bases, *node.keywords, *node.decorators, *suite_body(node.body)]:
                if isinstance(part, cst.ClassDef):
                    own, more = self.class_scan(part)
                else:
                    own, more = self._scan(part, allow_super=isinstance(part, cst.FunctionDef))
                direct = direct or own
                refs |= more
                if direct:
                    break
            found = (direct, frozenset(refs))
            self._memo[node] = found
        return found

    # ------------------------------------------------------------------ the walk
    def _scan(self, root, allow_super: bool) -> tuple:
        """(relevant by itself, the names it refers to) for everything under ``root``."""
        key = (root, allow_super)
        found = self._scans.get(key)
        if found is None:
            found = self._scans[key] = self._walk(root, allow_super)
        return found

    def _walk(self, root, allow_super: bool) -> tuple:
        unknown_methods = self.tables.unknown_methods
        refs: set = set()
        stack = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Name:
                if not (node.value == _BUILTIN_SUPER and allow_super):
                    refs.add(node.value)
                continue
            if kind is cst.Attribute:
                if node.attr.value in unknown_methods:
                    return True, frozenset()  # `f = x.pin_memory` and the like: the call is not seen here
                if narrows(node):
                    return True, frozenset()  # `if t.is_cuda:` tells what `t` is (analysis/narrowing.py)
                chain = self._library_chain(node)
                if chain is True:
                    return True, frozenset()
                if chain is None:
                    stack.append(node.value)
                continue
            if kind is cst.Call and type(node.func) is cst.Attribute:
                if narrows(node.func):
                    return True, frozenset()
                entries = unknown_methods.get(node.func.attr.value)
                if entries is not None:
                    keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
                    if any(api.identified_by(keywords) for api in entries) or \
                            any(arg.star == "**" for arg in node.args):
                        return True, frozenset()
                chain = self._library_chain(node.func)
                if chain is True:
                    return True, frozenset()
                if chain is None:
                    stack.append(node.func.value)
                stack.extend(node.args)
                continue
            if kind is cst.Annotation:
                if _has_string(node.annotation):
                    return True, frozenset()  # the analysis reads string annotations as expressions
                stack.append(node.annotation)
                continue
            if kind is cst.Global or kind is cst.Nonlocal:
                return True, frozenset()
            if kind is cst.Arg:
                stack.append(node.value)  # the keyword's own name is not a reference
                continue
            if kind is cst.Param:
                if node.annotation is not None:
                    stack.append(node.annotation)
                if node.default is not None:
                    stack.append(node.default)
                continue
            if kind is cst.Import or kind is cst.ImportFrom:
                if kind is cst.ImportFrom and isinstance(node.names, cst.ImportStar):
                    return True, frozenset()
                for _, qualified in self.ctx.imports_in(node):
                    if not self.qualified_is_inert(qualified):
                        return True, frozenset()
                continue
            stack.extend(code_parts(node))
        return False, frozenset(refs)


def _has_string(node) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        stack.extend(code_parts(item))
    return False


_KEYS: dict = {}


def _table_keys(tables) -> tuple:
    """Every qualified name the analysis looks up in the tables, and their dotted prefixes."""
    found = _KEYS.get(id(tables))
    if found is None:
        names = set(tables.functions) | set(tables.constants) | set(tables.null_streams) | \
            set(tables.annotations) | set(tables.kernel_decorators)
        prefixes = set()
        for name in names:
            parts = name.split(".")
            for end in range(1, len(parts)):
                prefixes.add(".".join(parts[:end]))
        found = (frozenset(names), frozenset(prefixes))
        _KEYS[id(tables)] = found
    return found


def _touches_table(qualified: str, keys: tuple) -> bool:
    names, prefixes = keys
    if qualified in names or qualified in prefixes:
        return True
    parts = qualified.split(".")
    return any(".".join(parts[:end]) in names for end in range(1, len(parts)))
