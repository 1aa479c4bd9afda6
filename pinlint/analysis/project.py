"""The checked code as a whole: its modules, classes and functions, and the analyses of them.

A ``Project`` resolves the checked code's own imports (``from .utils import f``, ``import pkg.mod as
m``, a sibling script's ``import common``) to files of the tree, parses them on demand, and keeps
every analysis it made: a function's baseline (its context-free analysis) and its analyses per
calling context, a module's globals, a class's members and fields. One project serves every file a
process checks, so a helper module is parsed and analysed once. Library modules (the ones the API
tables describe) are never looked for in the tree: their behaviour is the tables'.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import libcst as cst

from ..imports import ImportMap, collect_imports, dotted
from ..modulefiles import _EXCLUDED_PARTS, is_file, module_files, path_additions, search_folders  # noqa: F401
from ..walk import LAMBDA_STAND_IN, class_body_small, code_nodes, suite_body, target_names
from . import cfg
from .doubles import decorated_patches, with_names
from .domain import (UNKNOWN, Alternatives, ClassRef, Const, Function, Instance, LibraryRef, ModuleRef, Seq, Value,
                     map_sites, module_stand_in)
from .fields import FieldSolver
from .interproc import Invocation, Outcome, context_free_env
from .solver import solve
from .state import MUTATED, REBOUND, RETURN, STREAM, State

MAX_DEPTH = 5            # calls followed below a function's own analysis
MAX_ANALYSES = 400       # callee analyses one call chain may start
MAX_SOLVES = 2_000       # scope analyses one file's check may make, all told (past it, calls are unknown)
SOLVES_PER_FUNCTION = 48  # ... or this many for each function the file defines, if that is more
_CUT = "a limit"          # what an analysis that stopped at a limit read unfinished (see Project._keep)
MAX_RECURSION = 2        # analyses of one function a call chain may hold at once (recursion with other arguments)
MAX_CONTEXTS = 48        # calling contexts of one function a file's check may ask for (past it, its baseline serves)
MAX_MODULE_BYTES = 2_000_000


class ModuleInfo:
    """A parsed module and where it came from; positions are resolved only when a report needs one."""

    def __init__(self, filename: str, module: cst.Module, path: Optional[Path] = None, text: str = "",
                 digest: str = "") -> None:
        self.filename = filename
        self.module = module
        self.path = path
        self.text = text
        self._digest = digest
        self._positions = None

    @property
    def digest(self) -> str:
        """sha256 of the file's bytes on disk, for caches whose entries rest on this module."""
        if not self._digest and self.path is not None:
            try:
                self._digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
            except OSError:
                self._digest = "unreadable"
        return self._digest

    @property
    def locator(self):
        """Positions and parents, per top-level statement and only for the nodes asked about."""
        if self._positions is None:
            from ..positions import Locator
            self._positions = Locator(self.module, self.text)
        return self._positions

    def position(self, node: cst.CSTNode):
        return self.locator.position(node)

    def __repr__(self) -> str:
        return f"ModuleInfo({self.filename!r})"


@dataclass(eq=False)
class Member:
    node: cst.CSTNode
    kind: str                 # "method", "static", "class", "property", "nested-class"
    owner: ClassRef
    qualified: str
    kernel: bool = False
    nested: Optional[ClassRef] = None
    setter: Optional[cst.FunctionDef] = None  # a property's setter: assigning the attribute calls it


@dataclass(eq=False)
class ClassInfo:
    cls: ClassRef
    members: dict
    bases: list
    fields: Optional[list] = None   # a dataclass's / NamedTuple's fields, in order
    project: object = None
    test_case: bool = False         # a base is unittest's TestCase
    library_bases: tuple = ()       # the library classes among its bases, qualified (`torch.nn.Module`)
    foreign_bases: bool = False     # a base that is neither a class of the checked code nor `object`

    _mro: Optional[list] = field(default=None, repr=False)

    def library_classes(self) -> frozenset:
        """The library classes it derives from, through its bases of the checked code too, and the
        library classes those derive from where the tables say (``transformers.PreTrainedModel`` is a
        ``torch.nn.Module``: calling the model runs its ``forward``)."""
        found = frozenset(base for info in self.mro() for base in info.library_bases)
        implied = self.project.tables.python.get("library_class_bases", {}) if self.project is not None else {}
        more = [parent for base in found for parent in implied.get(base, ())]
        return found | frozenset(more) if more else found

    def only_checked_code(self) -> bool:
        """Every class it derives from is a class of the checked code (or ``object``): its objects are
        no array, tensor or stream of any library."""
        return not any(info.foreign_bases for info in self.mro())

    def lookup(self, attr: str, after_self: bool = False, record: bool = True) -> Optional[Member]:
        if record and not after_self and self.project._observing:
            # On an object of the class: a subclass must resolve it alike to share a field analysis (fields.py).
            self.project._observing[-1].add(("take", self.cls, attr))
        for info in self.mro()[1 if after_self else 0:]:
            found = info.members.get(attr)
            if found is not None:
                return found
        return None

    def runs_each_test_alone(self) -> bool:
        """A unittest TestCase: each ``test*`` method runs on a new object after ``setUp``, so what
        one stores on ``self`` no other sees."""
        return any(info.test_case for info in self.mro())

    def mro(self) -> list:
        if self._mro is not None:
            return self._mro
        order, seen, todo = [], set(), [self]
        while todo:
            info = todo.pop(0)
            if info.cls in seen:
                continue
            seen.add(info.cls)
            order.append(info)
            todo.extend(b for b in (self.project.class_info(base) for base in info.bases) if b is not None)
        self._mro = order
        return order


class ModuleContext:
    """One module as the analysis sees it: its imports, its definitions and its globals."""

    def __init__(self, project: "Project", info: ModuleInfo, name: Optional[str], is_package: bool = False) -> None:
        self.project = project
        self.info = info
        self.tables = project.tables
        self.name = name
        self.is_package = is_package
        self.folders = project.folders_from_root(info.path)
        self.imports = _imports_of(info.module, name, is_package, self.folders)
        self.imports.resolver = self._one_in_the_tree
        self._defs: Optional[dict] = None
        self._single: Optional[set] = None
        self._star_sources: Optional[tuple] = None
        self._none_slots: Optional[frozenset] = None
        self._rebinders: Optional[dict] = None
        self._top_names: Optional[frozenset] = None
        self.loads: dict = {}            # module name -> what Project.load found for this importer
        self._functions: dict = {}
        self._classes: dict = {}
        self._by_name: Optional[dict] = None

    def __repr__(self) -> str:
        return f"ModuleContext({self.info.filename!r})"

    def _one_in_the_tree(self, targets: frozenset) -> Optional[str]:
        """Of the modules imports under ``if``/``try`` bind one name to (``if open_source: from
        bench_utils import f`` / ``else: from internal.bench_utils import f``), the only one the
        checked tree holds, where none is a library's: the code the tree explains (FBGEMM's timing
        helper, survey 56 FF). None where none, or several, are in the tree."""
        if any(self.tables.library_of(target) is not None for target in targets):
            return None  # `try: import cupy as xp / except: import numpy as xp` is the tables' business
        inside = [target for target in sorted(targets)
                  if self.project.load(target, self) is not None or
                  "." in target and self.project.load(target.rpartition(".")[0], self) is not None]
        return inside[0] if len(inside) == 1 else None

    def names_library(self, name: str) -> bool:
        """Whether ``name`` is bound here to an import of a library the tables know (``torch``)."""
        qualified = self.imports.lookup(name)
        return qualified is not None and self.tables.library_of(qualified) is not None

    def enclosing(self, fn: Function) -> Optional[Function]:
        """The function a nested function is defined in (``C.run`` for ``C.run.<locals>.producer``)."""
        parent, marker, _ = fn.name.rpartition(".<locals>.")
        if not marker:
            return None
        if self._by_name is None:
            from . import functions_of
            self._by_name = {}
            for found in functions_of(self):
                self._by_name.setdefault(found.name, found)
        return self._by_name.get(parent)

    @property
    def defs(self) -> dict:
        if self._defs is None:
            self._defs = {}
            for node in _top_level_definitions(self.info.module.body):
                if isinstance(node, cst.FunctionDef):
                    self._defs[node.name.value] = self.function_value(node, "<module>")
                else:
                    self._defs[node.name.value] = self.class_value(node)
        return self._defs

    @property
    def top_level_names(self) -> frozenset:
        """Names read by the code that runs when the module loads: its top-level statements, and the
        decorators, defaults, annotations, bases and class-level statements of its definitions (not
        the bodies of its functions)."""
        if self._top_names is None:
            self._top_names = _names_run_at_load(self.info.module.body)
        return self._top_names

    @property
    def single_globals(self) -> set:
        """The names ``Project.module_globals`` can give (``single_assigned_globals``)."""
        if self._single is None:
            self._single = single_assigned_globals(self.info.module)
        return self._single

    @property
    def none_slots(self) -> frozenset:
        """Names the module's top level only ever sets to None (``_client = None``): slots its
        functions fill (``global _client; if _client is None: _client = Client()``)."""
        if self._none_slots is None:
            self._none_slots = none_slots(self.info.module)
        return self._none_slots

    @property
    def rebinders(self) -> dict:
        """Globals the module's functions rebind (``global _POOL; _POOL = [...]``) and the top level
        assigns at most once: name -> the functions (module-level, or methods of its top-level classes:
        ``(def node, class node or None)``) that bind it."""
        if self._rebinders is None:
            self._rebinders = rebinding_functions(self.info.module)
        return self._rebinders

    @property
    def star_sources(self) -> tuple:
        """The modules its top level imports everything from (``from .utils_class import *`` in a
        package's ``__init__``), absolute: a name the module does not define may come from them."""
        if self._star_sources is None:
            found = []
            for node in self.info.module.body:
                if isinstance(node, cst.SimpleStatementLine):
                    for small in node.body:
                        if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                            base = _absolute_from(small, self.name, self.is_package, self.folders)
                            if base:
                                found.append(base)
            self._star_sources = tuple(found)
        return self._star_sources

    def imports_in(self, node) -> list:
        """(local name, qualified name) pairs one import statement binds, relative ones made absolute."""
        pairs = []
        if isinstance(node, cst.Import):
            for alias in node.names:
                module = dotted(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    pairs.append((alias.asname.name.value, module))
                else:
                    pairs.append((module.split(".")[0], module.split(".")[0]))
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            base = _absolute_from(node, self.name, self.is_package, self.folders)
            if base is None:
                return pairs
            for alias in node.names:
                imported = dotted(alias.name) or ""
                local = alias.asname.name.value if alias.asname is not None and \
                    isinstance(alias.asname.name, cst.Name) else imported
                pairs.append((local, f"{base}.{imported}" if base else imported))
        return pairs

    def global_value(self, name: str) -> Optional[Value]:
        found = self.defs.get(name)
        if found is not None:
            return found
        if name in self.rebinders:
            # set at the top (`pipe = None`, at most once) and rebound by functions (`global pipe;
            # pipe = Pipeline()` in a startup hook): a reader finds either
            return self.project.rebound_global(self, name)
        if name not in self.single_globals:
            # The module's globals are its names assigned once: any other name is not among them,
            # so the module body is not analysed to find that out. (It was: every `from .x import y`
            # of a package's __init__ analysed x's body, and its imports theirs, down the whole
            # package: Lightning's cold run went from 5 s to 22 s.)
            return None
        globals_ = self.project.module_globals(self)
        value = globals_.get(name) if globals_ is not None else None
        if value is not None and module_stand_in(value) and self.imports.lookup(name) is not None:
            return None  # the imported module, where it is used as one (see domain.module_stand_in)
        return value

    def function_value(self, node: cst.FunctionDef, scope: str) -> Function:
        key = (node, scope)
        found = self._functions.get(key)
        if found is None:
            name = node.name.value if scope == "<module>" else f"{scope}.<locals>.{node.name.value}"
            found = Function(node=node, module=self, name=name, kernel=self.is_kernel(node))
            self._functions[key] = found
        return found

    def lambda_value(self, node: cst.Lambda, scope: str) -> Function:
        """A lambda as a function: ``def lambda_(params): return body``, the body the lambda's own
        expression (its events are at the lambda's calls and accesses, where the file's positions are)."""
        key = (node, scope)
        found = self._functions.get(key)
        if found is None:
            definition = cst.FunctionDef(
                name=cst.Name(LAMBDA_STAND_IN), params=node.params,
                body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(node.body)])]))
            name = "<lambda>" if scope == "<module>" else f"{scope}.<locals>.<lambda>"
            found = Function(node=definition, module=self, name=name)
            self._functions[key] = found
        return found

    def class_value(self, node: cst.ClassDef, prefix: str = "") -> ClassRef:
        found = self._classes.get(node)
        if found is None:
            found = ClassRef(node=node, module=self, name=prefix + node.name.value)
            self._classes[node] = found
        return found

    def is_kernel(self, node: cst.FunctionDef) -> bool:
        for decorator in node.decorators:
            expression = decorator.decorator
            call = expression if isinstance(expression, cst.Call) else None
            if call is not None:
                expression = call.func
            qualified = self.imports.qualify(expression)
            if qualified in self.tables.kernel_decorators:
                return True
            if call is not None and qualified in self.tables.cuda_target_decorators and _targets_cuda(call):
                return True  # `@vectorize(["f8(f8)"], target="cuda")`: a CUDA ufunc
        return False


def _targets_cuda(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == "target" and isinstance(arg.value, cst.SimpleString)
               and arg.value.evaluated_value == "cuda" for arg in call.args)


class Project:
    def __init__(self, tables, root: Optional[Path] = None, screen: bool = True, trees: tuple = ()) -> None:
        self.tables = tables
        self.screen = screen             # skip the root analysis of inert functions (analysis/inert.py)
        self.runs_per_call: dict = {}    # function node -> interproc._body_runs_per_call's answer
        self.changes: dict = {}          # loop or function node -> what it binds or stores (invariance)
        self.element_stores: dict = {}   # for loop node -> its variable, where the body sets a field of it (transfer)
        self.slot_reads: dict = {}       # loop node -> reads of list slots it has not replaced yet (slots)
        self.rotating_slots: dict = {}   # loop node -> the double-buffer slot indexes it waits on (slots)
        self.root = root.resolve() if root is not None else None
        # Folders outside the root that hold checked files: their modules are the checked tree too.
        self.trees = tuple(Path(t).resolve() for t in trees)
        self.by_path: dict = {}          # resolved path -> ModuleContext (None: not loadable)
        self.by_name: dict = {}          # ModuleRef name -> ModuleContext
        self._lookups: dict = {}         # (module name, importing file's folder) -> ModuleContext or None
        self._attributes: dict = {}      # (ModuleRef name, attribute) -> value, once settled
        self.class_attributes: dict = {}  # (ClassRef, attribute) -> its class-body constant (interproc)
        self._attribute_running: set = set()  # (ModuleRef name, attribute) being resolved now
        self._graphs: dict = {}
        self._drops_device_memory: dict = {}  # function node -> whether returning frees device memory
        self.loop_branch_depth: dict = {}   # loop node -> if arms around it, over every graph built
        self._outcomes: dict = {}
        self._baselines: dict = {}
        self._baseline_running: set = set()
        self._running: set = set()  # calling contexts whose analysis is under way (invoke)
        self._rebinding_running: set = set()  # names a package's __init__ re-exports, being resolved
        self._globals: dict = {}
        self._globals_running: set = set()   # modules (and (module, name) of rebound globals) being worked out
        self._rebound: dict = {}             # (module, global name) -> Project.rebound_global
        self._classes: dict = {}
        self.fields = FieldSolver(self)
        self._fields_running = self.fields.running
        self.tested_names: dict = {}     # function node -> the names its ifs test
        self.body_names: dict = {}       # function node -> every name its body mentions
        self.deciding_names: dict = {}   # function node -> the names it passes as a deciding keyword
        self.baseline_places: dict = {}    # id(baseline) -> (it, its events' places and verdicts) (interproc)
        self.pinning_outcomes: dict = {}   # id(outcome) -> (it, whether it pins or registers anything) (interproc)
        self.argument_tests: dict = {}     # (if node, receiver) -> whether it tests only arguments (interproc)
        self.module_calls: dict = {}       # ModuleContext -> its calls of bare names (callers.py)
        self.caller_sizes: dict = {}       # function node -> integers its module's calls give it (callers.py)
        self.while_counters: dict = {}     # while loop node -> the names it steps on every pass (evaluator)
        self.device_parameters: dict = {}  # function node -> names its body moves data to (interproc)
        self.subclass_dispatch: dict = {}  # (method node, subclass) -> its self-calls resolve otherwise there (interproc)
        self.moving_classes: dict = {}     # class node -> whether its methods move data to a device (effects)
        self.module_classes: dict = {}     # ClassRef -> whether its objects keep registered buffers (placement)
        self.walked_parameters: dict = {}  # function node -> parameters a for loop of its body walks (interproc)
        self.called_methods: dict = {}   # function node -> {receiver as written (`p`, `self.f`): names of methods called on it}
        self.resumed_changes: dict = {}  # generator call node -> classes of the objects its body changes
        self.literals: dict = {}         # string node -> its value
        self._provisional_outcomes: dict = {}
        self._provisional_baselines: dict = {}
        self._observing: list = []        # a set per analysis under way: ("take" or "call", class, attribute)
        self._lookups_of: dict = {}       # looked up or called on objects; memo key -> its set
        self._unfinished_reads: list = []  # a set per analysis under way: unfinished classes/modules it read
        self._unfinished_of: dict = {}    # provisional memo key -> the same
        self.solves = 0                  # scope analyses since the current file's check began
        self.max_solves = MAX_SOLVES     # how many the current file's check may make (analysis.analyze)
        self.last_yielded = None         # what the scope just solved yields (a generator function's elements)
        self.contexts: dict = {}         # function node -> calling contexts asked of it for the current file
        self.method_names: set = set()
        self._visible_methods: dict = {}  # module path -> method names it and the modules it imports define
        self._file_methods: dict = {}     # resolved path -> method names the file defines
        self.imports_of: dict = {}       # ModuleContext -> the project modules its code resolved
        names = sorted(tables.unknown_methods)
        # An indented `def` (a method; a nested or conditional function too, counted to be safe): a
        # function at the top of a module is no attribute of an object (`s.synchronize()` of a stream
        # whatever `def synchronize(device=None):` the module defines beside it).
        self._method_pattern = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(" + "|".join(map(re.escape, names)) +
                                          r")[ \t]*\(", re.MULTILINE) if names else None

    # ------------------------------------------------------------------ modules
    def add_module(self, filename: str, module: cst.Module, path: Optional[Path] = None, text: str = "") -> ModuleContext:
        """The module being checked (already parsed by the engine)."""
        resolved = path.resolve() if path is not None else None
        known = self.by_path.get(resolved) if resolved is not None else None
        if known is not None and known.info.module is module:
            return known  # loaded for another file's analysis first (engine._already_parsed)
        name, is_package = self.module_name(resolved) if resolved is not None else (None, False)
        ctx = ModuleContext(self, ModuleInfo(filename, module, resolved, text), name, is_package)
        if resolved is not None:
            self.by_path[resolved] = ctx
        self._scan_methods(text or module.code)
        return ctx

    def _scan_methods(self, text: str) -> None:
        if self._method_pattern is not None:
            self.method_names.update(self._method_pattern.findall(text))

    def defines_method(self, name: str, ctx: Optional["ModuleContext"] = None) -> bool:
        """Whether the checked code that ``ctx`` can see defines a method of that name (then the name
        is not the library's): the module itself and the tree's modules it imports. Not every module
        the run happened to load: that made a file's findings depend on which paths were checked, and
        in what order (diffusers: a `pin_memory` method of training_utils.py hid a pinning loop in
        hooks/ only when the whole package was checked)."""
        if ctx is None or ctx.info.path is None:
            return name in self.method_names
        names = self._visible_methods.get(ctx.info.path)
        if names is None:
            from ..prefilter import imported_files
            text = ctx.info.text or ctx.info.module.code
            names = set(self._methods_in(text))
            for path in imported_files(text.encode("utf-8", "surrogatepass"), ctx.info.path):
                names |= self._methods_of_file(path)
            names = self._visible_methods[ctx.info.path] = frozenset(names)
        return name in names

    def _methods_in(self, text: str) -> list:
        return self._method_pattern.findall(text) if self._method_pattern is not None else []

    def _methods_of_file(self, path: Path) -> frozenset:
        try:
            key = path.resolve()
        except OSError:
            return frozenset()
        found = self._file_methods.get(key)
        if found is None:
            try:
                text = key.read_bytes().decode("utf-8", "replace")
            except OSError:
                text = ""
            found = self._file_methods[key] = frozenset(self._methods_in(text))
        return found

    def module_name(self, path: Path) -> tuple:
        """Dotted module name of a file from its package folders (those with ``__init__.py``)."""
        is_package = path.name == "__init__.py"
        parts = [] if is_package else [path.stem]
        folder = path.parent
        while is_file(folder / "__init__.py"):
            parts.insert(0, folder.name)
            if folder.parent == folder:
                break
            folder = folder.parent
        return ".".join(parts) or None, is_package

    def folders_from_root(self, path: Optional[Path]) -> tuple:
        """The folders from the checked tree's root down to a file's (``("app", "backends")``): where
        a relative import leaves the file's package (folders without ``__init__.py``, PEP 420
        namespace packages), Python resolves it through them when the root is on ``sys.path``."""
        if path is None or self.root is None:
            return ()
        try:
            return path.parent.relative_to(self.root).parts
        except ValueError:
            return ()

    def load(self, name: str, importer: ModuleContext) -> Optional[ModuleContext]:
        """The module of the checked tree an import names, or None (a library, or not in the tree)."""
        # Asked millions of times in a large package (every name of every module resolves through
        # here): the importer keeps its own answers, so a repeat costs one dict lookup, not the
        # hashing of a path.
        mine = importer.loads
        if name in mine:
            found = mine[name]
            if found is not None:
                self.imports_of.setdefault(importer, set()).add(found)
            return found
        found = self._load_from(name, importer)
        mine[name] = found
        return found

    def _load_from(self, name: str, importer: ModuleContext) -> Optional[ModuleContext]:
        where = importer.info.path.parent if importer.info.path is not None else None
        source = importer.info.text or None  # the file as parsed: not read again
        added = path_additions(importer.info.path, self.root, source)
        key = (name, where, added)  # files of one folder may add different folders to sys.path
        if key in self._lookups:
            found = self._lookups[key]
            if found is not None:
                self.imports_of.setdefault(importer, set()).add(found)
            return found
        found = None
        for candidate in module_files(name, importer.info.path, self.root, source):
            found = self._load_path(candidate)
            if found is not None:
                break
        self._lookups[key] = found
        if found is not None:
            self.imports_of.setdefault(importer, set()).add(found)
        return found

    def dependencies(self, ctx: ModuleContext) -> list:
        """The other modules of the tree whose code the analysis of ``ctx`` may have used: every
        module its code (or theirs, transitively) resolved an import to."""
        seen, todo = {ctx}, [ctx]
        while todo:
            for found in self.imports_of.get(todo.pop(), ()):
                if found not in seen:
                    seen.add(found)
                    todo.append(found)
        seen.discard(ctx)
        return sorted((c for c in seen if c.info.path is not None), key=lambda c: str(c.info.path))

    def loaded(self, path: Path) -> Optional[ModuleContext]:
        """The module of the tree at ``path`` if this project has parsed it already."""
        try:
            return self.by_path.get(path.resolve())
        except (OSError, RuntimeError):
            return None

    def _load_path(self, path: Path) -> Optional[ModuleContext]:
        from ..engine import read_source
        from ..parsing import parse
        resolved = path.resolve()
        if resolved in self.by_path:
            return self.by_path[resolved]
        self.by_path[resolved] = None
        if _EXCLUDED_PARTS & set(resolved.parts) or (self.root is not None and self.root not in resolved.parents and
                                                     not any(tree in resolved.parents for tree in self.trees)):
            return None
        try:
            data = resolved.read_bytes()
            if len(data) > MAX_MODULE_BYTES:
                return None
            text = read_source(data).text
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            return None
        parsed = parse(text)
        if parsed.module is None:
            return None
        name, is_package = self.module_name(resolved)
        digest = hashlib.sha256(data).hexdigest()
        ctx = ModuleContext(self, ModuleInfo(_display(resolved), parsed.module, resolved, text, digest), name,
                            is_package)
        self.by_path[resolved] = ctx
        self._scan_methods(text)
        return ctx

    def resolve(self, qualified: str, importer: ModuleContext) -> Value:
        """The definition an imported dotted name refers to: a function, class, module or global of
        the checked code; UNKNOWN for anything else."""
        parts = qualified.split(".")
        rebound = self._rebound_by_package(parts, importer)
        if rebound is not None:
            return rebound
        for cut in range(len(parts), 0, -1):
            ctx = self.load(".".join(parts[:cut]), importer)
            if ctx is None:
                continue
            value: Value = self._module_ref(ctx)
            for attr in parts[cut:]:
                value = self._attribute(value, attr, importer)
                if value is UNKNOWN:
                    return UNKNOWN
            return value
        return UNKNOWN

    def _rebound_by_package(self, parts: list, importer: ModuleContext) -> Optional[Value]:
        """``pkg.sub`` where ``pkg/__init__.py`` binds ``sub`` itself from elsewhere (``from .sub import
        sub``): importing the submodule set the package's ``sub`` to the module, and the import in
        ``__init__`` then set it to what it imports, which is what ``from pkg import sub`` finds."""
        if len(parts) < 2:
            return None
        package = self.load(".".join(parts[:-1]), importer)
        if package is None or package.info.path is None or package.info.path.name != "__init__.py" or \
                not package.imports.lookup(parts[-1]):
            return None
        bound = package.imports.qualify(cst.Name(parts[-1]))
        if bound is None or bound == ".".join(parts) or self.tables.library_of(bound) is not None or \
                self.load(bound, package) is not None:
            return None  # `from . import sub`: the submodule itself
        if bound in self._rebinding_running:
            return None  # packages re-exporting each other's names in a circle
        self._rebinding_running.add(bound)
        try:
            found = self.resolve(bound, package)
        finally:
            self._rebinding_running.discard(bound)
        return found if found is not UNKNOWN else None

    def _module_ref(self, ctx: ModuleContext) -> ModuleRef:
        key = str(ctx.info.path)
        self.by_name[key] = ctx
        return ModuleRef(key)

    def _attribute(self, value: Value, attr: str, importer: Optional[ModuleContext] = None) -> Value:
        if isinstance(value, ModuleRef):
            return self.module_attribute(value.name, attr)
        if isinstance(value, LibraryRef):
            return LibraryRef(f"{value.name}.{attr}")
        if isinstance(value, Alternatives) and all(isinstance(o, LibraryRef) for o in value.options):
            return Alternatives(frozenset(LibraryRef(f"{o.name}.{attr}") for o in value.options))
        if isinstance(value, ClassRef):
            info = self.class_info(value)
            member = info.lookup(attr, record=False) if info is not None else None
            if member is not None and member.kind == "nested-class":
                return member.nested
            if member is None and importer is not None:
                # `from settings import Settings as cfg; cfg.pinned` (a settings class's constant)
                from .interproc import class_attribute_read
                return class_attribute_read(self, importer, value, attr)
        return UNKNOWN

    def module_attribute(self, key: str, attr: str) -> Value:
        """``module.attr``. Kept once no module's globals are being worked out (until then an answer
        may see them incomplete): a package's ``__init__`` re-exports each name through a chain of
        modules, and Lightning's checks asked those chains 1.7 million times."""
        settled = not self._globals_running
        pair = (key, attr)
        if settled:
            found = self._attributes.get(pair)
            if found is not None:
                return found
        if pair in self._attribute_running:
            # Re-exports that come back to themselves (`from .a import x` in b and `from .b import x`
            # in a, with x defined in neither): nothing defines the name. Followed blindly, the
            # cycle hit Python's recursion limit and the whole file went unanalysed (397 files of
            # the surveyed repositories, 249 of Lightning's 424).
            return UNKNOWN
        self._attribute_running.add(pair)
        try:
            value = self._module_attribute(key, attr)
        finally:
            self._attribute_running.discard(pair)
        if settled and not self._globals_running:
            self._attributes[pair] = value
        return value

    def _module_attribute(self, key: str, attr: str) -> Value:
        ctx = self.by_name.get(key)
        if ctx is None:
            return UNKNOWN
        found = ctx.global_value(attr)
        if found is not None:
            if ctx in self._globals:  # the module's own globals are final: so is this answer
                self._attributes[(key, attr)] = found
            return found
        # `import pkg` then `pkg.sub.f()`: a submodule.
        if ctx.info.path is not None and ctx.info.path.name == "__init__.py":
            sub = None
            for candidate in (ctx.info.path.parent / f"{attr}.py", ctx.info.path.parent / attr / "__init__.py"):
                if is_file(candidate):
                    sub = self._load_path(candidate)
                    if sub is not None:
                        break
            if sub is not None:
                self.imports_of.setdefault(ctx, set()).add(sub)
                return self._module_ref(sub)
        qualified = ctx.imports.qualify(cst.Name(attr)) if ctx.imports.lookup(attr) else None
        if qualified is not None and self.tables.library_of(qualified) is None:
            return self.resolve(qualified, ctx)  # re-exported: `from .io import load` in __init__.py
        if qualified is not None:
            return LibraryRef(qualified)  # a library module or name the module imports, used from another
        if not attr.startswith("_"):
            for source in ctx.star_sources:
                if self.tables.library_of(source) is not None:
                    continue
                found = self.resolve(f"{source}.{attr}", ctx)  # `from .utils_class import *`
                if found is not UNKNOWN:
                    return found
        return UNKNOWN

    # ------------------------------------------------------------------ analyses
    def graph(self, node) -> cfg.Graph:
        found = self._graphs.get(node)
        if found is None:
            if isinstance(node, cst.Module):
                found = cfg.build(node.body, function=False)
            else:
                found = cfg.build(suite_body(node.body), function=True)
            self._graphs[node] = found
            self.loop_branch_depth.update(found.loop_branch_depth)
        return found

    def solve(self, ctx: ModuleContext, scope: str, node, env: dict, pending: frozenset, stream,
              invocation: Invocation) -> tuple:
        """Events and exit state (None when the exit is unreachable) of one analysis of a scope."""
        from .evaluator import Evaluator
        self.solves += 1
        evaluator = Evaluator(ctx, scope, invocation)
        state = State(dict(env), pending)
        state.env[STREAM] = stream
        if isinstance(node, cst.FunctionDef) and node.decorators:
            patched = decorated_patches(ctx, node)
            if patched:
                with_names(state.env, patched)  # `@patch.object(Encoder, "encode")` on a test
        events, exit_state = solve(self.graph(node), evaluator, state)
        self.last_yielded = evaluator.yielded
        return events, exit_state

    def run(self, ctx: ModuleContext, scope: str, node, env: dict, pending: frozenset, stream,
            invocation: Invocation) -> Outcome:
        events, exit_state = self.solve(ctx, scope, node, env, pending, stream, invocation)
        # A generator function's call returns at once, whatever its body does (`while True: yield
        # batch`): an iterator over what its `yield`s give, with the caller's arguments (DINO's
        # `metric_logger.log_every(loader, ...)` handing on each batch).
        yielded = self.last_yielded if isinstance(node, cst.FunctionDef) else None
        inputs, own = _inputs(node, env, pending)
        if yielded is not None:
            yielded = _made_between_yields(yielded, inputs)
        if exit_state is None and yielded is not None:
            return Outcome(Seq(yielded), frozenset(), stream, tuple(events), reachable=True, inputs=inputs,
                           own_inputs=own)
        if exit_state is None:
            return Outcome(UNKNOWN, frozenset(), stream, tuple(events), reachable=False, inputs=inputs, own_inputs=own)
        changed = []
        for key in exit_state.env:
            if key.startswith(MUTATED):
                name = key[len(MUTATED):]
                if name in env:
                    changed.append((name, folded(exit_state.env, name)))
        # Buffers the scope may keep for a later run of it (a cache): stored, not returned and not only
        # handed to unknown calls.
        # A store into a container the scope made itself (`out = {}`; `out[n] = t`, `outs.append(t)`)
        # keeps nothing beyond the run: that container goes where the scope sends it (returned); nor
        # does a store into the fields of an object it builds (`return Result(grid=grid)`).
        local = local_containers(node) if isinstance(node, cst.FunctionDef) else frozenset()
        kept = frozenset(s for e in events if e.type.value == "escape" and not e.handed and not e.into_object and
                         not isinstance(e.node, cst.Return) and not stored_into_local(e.node, local) for s in e.sites)
        returned = exit_state.env.get(RETURN, Const.of(None)) if yielded is None else Seq(yielded)
        if isinstance(returned, Instance):
            # `return self` after setting its fields (a builder: `Series(s).fill(b).upload()`): the
            # object returned holds what the scope set on it.
            for name in env:
                if exit_state.env.get(name) == returned:
                    returned = folded(exit_state.env, name)
                    break
        pending = exit_state.unwaited()
        if pending and self.drops_device_memory(ctx, node):
            pending = frozenset()  # the free at the return waits for the whole device
        rebound = tuple(sorted((key[len(REBOUND):], value) for key, value in exit_state.env.items()
                               if key.startswith(REBOUND)))
        return Outcome(returned, pending, exit_state.env.get(STREAM),
                       tuple(events), tuple(sorted(changed, key=lambda kv: kv[0])), kept, True, inputs, own, rebound)

    def drops_device_memory(self, ctx: ModuleContext, node) -> bool:
        """Whether returning from `node` drops device memory that is freed at once (lifetimes.py)."""
        found = self._drops_device_memory.get(node)
        if found is None:
            from .lifetimes import drops_device_memory
            found = self._drops_device_memory[node] = drops_device_memory(node, ctx.imports.qualify, self.tables)
        return found

    def invoke(self, fn: Function, env: dict, pending: frozenset, stream, invocation: Invocation) -> Optional[Outcome]:
        key = (fn.node, fn.module, fn.bound, frozenset(env.items()), pending, stream)
        # The contexts a file's check asks of a function are counted whether or not an earlier file's
        # check analysed them already: counting only new analyses made a file's findings depend on
        # which files were checked before it in the process (trtutils' detector: its copy helper's
        # thirteenth context was an analysis kept from another file, or past the limit when alone).
        asked = self.contexts.setdefault(fn.node, set())
        if key not in asked and len(asked) >= MAX_CONTEXTS:
            self._read_unfinished(_CUT)
            return None
        asked.add(key)
        found = self._kept(key, self._outcomes, self._provisional_outcomes)
        if found is not None:
            return found
        if invocation.depth >= MAX_DEPTH or not self._may_recurse(fn, key, invocation) or \
                invocation.budget[0] >= MAX_ANALYSES or self.solves >= self.max_solves:
            self._read_unfinished(_CUT)
            return None
        invocation.budget[0] += 1
        self._running.add(key)
        try:
            return self._keep(key, self._outcomes, self._provisional_outcomes,
                              lambda: self.run(fn.module, fn.name, fn.node, env, pending, stream, invocation.child(fn)))
        finally:
            self._running.discard(key)

    def _may_recurse(self, fn: Function, key, invocation: Invocation) -> bool:
        """A function already on the call stack is followed again only with other arguments than any
        analysis of it under way, and at most ``MAX_RECURSION`` times deep: a helper walking a nested
        container (`upload(v)` for each value of a dict) takes each value as it is."""
        if fn.node not in invocation.stack:
            return True
        return key not in self._running and invocation.stack.count(fn.node) < MAX_RECURSION

    # An analysis made while a class's fields or a module's globals are being worked out may see them
    # incomplete (the class's fields as none, the globals as unknown), or stop at a limit that the
    # same analysis made later, outside that work, would not reach: such an analysis is kept only
    # until that work ends. Which ones did is tracked rather than assumed: each analysis under way has
    # a set of the unfinished classes and modules whose state it read (``_read_unfinished``), passed
    # on to the analysis that used it; one that read none is kept for good. (All of them were kept
    # only until the work ended, and pytorch-lightning's cold run made two of every five analyses
    # again: 12,177 of 31,078, the same function with the same arguments.)
    def _kept(self, key, final: dict, provisional: dict):
        found = final.get(key)
        if found is None:
            found = provisional.get(key)
            if found is None:
                return None
            read = self._unfinished_of.get(key, frozenset())
            if not self._still_unfinished(read):
                # What it read unfinished is finished now (a class's fields worked out inside the
                # globals of a module that are still under way): made again, it would see them whole.
                del provisional[key]
                return None
            if self._unfinished_reads:
                self._unfinished_reads[-1] |= read
        if self._observing:
            self._observing[-1] |= self._lookups_of.get(key, frozenset())
        return found

    def _keep(self, key, final: dict, provisional: dict, compute):
        """``compute()``, kept under ``key``: for good, or while what it read unfinished is."""
        self._observing.append(set())
        self._unfinished_reads.append(set())
        try:
            outcome = compute()
        finally:
            # A lookup on an object it made: a later use of the kept result stands for it (fields.py).
            seen = self._observing.pop()
            read = self._unfinished_reads.pop()
            if self._observing:
                self._observing[-1] |= seen
            read = self._still_unfinished(read)
            if read and self._unfinished_reads:
                self._unfinished_reads[-1] |= read
        if seen:
            self._lookups_of[key] = frozenset(seen)
        if read:
            provisional[key] = outcome
            self._unfinished_of[key] = frozenset(read)
        else:
            final[key] = outcome
        return outcome

    def per_object(self, table: dict, obj, compute):
        """``compute(obj)``, kept in ``table`` for as long as ``obj`` is the object at that identity
        (outcomes are kept by the project; hashing one would walk all its events)."""
        kept = table.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        found = compute(obj)
        table[id(obj)] = (obj, found)
        return found

    def _still_unfinished(self, read) -> set:
        return {item for item in read if item in self._fields_running or item in self._globals_running or
                (item is _CUT and (self._fields_running or self._globals_running))}

    def _read_unfinished(self, item) -> None:
        """The analysis under way read the state of ``item`` (a class or module) before it was complete."""
        if self._unfinished_reads:
            self._unfinished_reads[-1].add(item)

    def _settled(self) -> None:
        if not self._globals_running and not self._fields_running:
            self._provisional_outcomes.clear()
            self._provisional_baselines.clear()
            self._unfinished_of.clear()

    def baseline(self, fn: Function, invocation: Optional[Invocation] = None) -> Optional[Outcome]:
        """The function analysed with nothing known of its callers: its own file's findings."""
        key = (fn.node, fn.module, fn.klass, fn.kind)
        found = self._kept(key, self._baselines, self._provisional_baselines)
        if found is not None:
            return found
        if key in self._baseline_running or self.solves >= self.max_solves:
            self._read_unfinished(_CUT)
            return None
        # The parameters first: a method's receiver has its class's fields, and working them out may run
        # a base method that calls this very method (``self.h = self.load()`` in ``Base.__init__``),
        # which must then find it analysable, not under way.
        self._unfinished_reads.append(set())
        try:
            env = context_free_env(self, fn)
        finally:
            read = self._unfinished_reads.pop()
        found = self._kept(key, self._baselines, self._provisional_baselines)
        if found is not None:
            return found
        self._baseline_running.add(key)
        try:
            budget = invocation.budget if invocation is not None else [0]

            def compute() -> Outcome:
                self._unfinished_reads[-1] |= read  # what its parameters read is its too
                return self.run(fn.module, fn.name, fn.node, env, frozenset(), None,
                                Invocation(0, (fn.node,), fn, budget))
            outcome = self._keep(key, self._baselines, self._provisional_baselines, compute)
        finally:
            self._baseline_running.discard(key)
        return outcome

    def module_globals(self, ctx: ModuleContext) -> Optional[dict]:
        """Names the module binds once at its top level, with their values, as its functions see them.
        While they are being computed, functions called from the module body see none."""
        if ctx in self._globals:
            return self._globals[ctx]
        if ctx in self._globals_running:
            self._read_unfinished(ctx)
            return None
        self._globals_running.add(ctx)
        try:
            _, exit_state = self.solve(ctx, "<module>", ctx.info.module, {}, frozenset(), None, Invocation())
            single = single_assigned_globals(ctx.info.module) | set(ctx.rebinders)
            env = exit_state.env if exit_state is not None else {}
            result = {name: value for name, value in env.items()
                      if name in single and not name.startswith("$") and "." not in name}
        finally:
            self._globals_running.discard(ctx)
            self._settled()
        self._globals[ctx] = result
        return result

    def rebound_global(self, ctx: ModuleContext, name: str) -> Optional[Value]:
        """What a global that functions rebind (``global _POOL; _POOL = [pinned ...]`` in ``init()``)
        holds when another function reads it: the join of its top-level value (if any) and of what
        each of those functions leaves in it, each analysed with nothing known of its callers; a
        function that cannot be analysed makes it unknown (None)."""
        key = (ctx, name)
        if key in self._rebound:
            return self._rebound[key]
        if key in self._globals_running:
            self._read_unfinished(key)
            return None
        from .fields import field_join
        self._globals_running.add(key)
        value: Optional[Value] = None
        try:
            top = (self.module_globals(ctx) or {}).get(name)
            values = [top] if top is not None else []
            for node, class_node in ctx.rebinders[name]:
                if class_node is None:
                    fn = ctx.function_value(node, "<module>")
                else:
                    klass = ctx.class_value(class_node)
                    fn = Function(node=node, module=ctx, name=f"{klass.name}.{node.name.value}",
                                  kernel=ctx.is_kernel(node), klass=klass, kind="method")
                outcome = self.baseline(fn)
                if outcome is None:
                    values = []
                    break
                bound = dict(outcome.rebound).get(name)
                if bound is not None:
                    values.append(bound)
            for one in values:
                value = one if value is None else field_join(value, one)
        finally:
            self._globals_running.discard(key)
            self._settled()
        if value is UNKNOWN:
            value = None
        self._rebound[key] = value
        return value

    def module_scope(self, ctx: ModuleContext) -> Outcome:
        """The module body's own analysis (its functions see the module's globals)."""
        self.module_globals(ctx)
        return self.run(ctx, "<module>", ctx.info.module, {}, frozenset(), None, Invocation())

    # ------------------------------------------------------------------ classes
    def class_info(self, cls: ClassRef) -> Optional[ClassInfo]:
        found = self._classes.get(cls)
        if found is not None or cls in self._classes:
            return found
        ctx = cls.module
        node = cls.node
        members: dict = {}
        fields: Optional[list] = None
        for statement in _class_body_statements(node):
            if isinstance(statement, cst.FunctionDef):
                kind = _method_kind(statement, ctx)
                name = statement.name.value
                if kind == "setter":
                    if name in members and members[name].kind == "property":
                        members[name].setter = statement
                    continue
                members[name] = Member(statement, kind, cls, f"{cls.name}.{name}", kernel=ctx.is_kernel(statement))
            elif isinstance(statement, cst.ClassDef):
                nested = ctx.class_value(statement, prefix=cls.name + ".")
                members[statement.name.value] = Member(statement, "nested-class", cls,
                                                       f"{cls.name}.{statement.name.value}", nested=nested)
        bases = []
        library_bases = []
        test_case = False
        foreign = False
        for base in node.bases:
            value = _base_value(ctx, base.value)
            if isinstance(value, ClassRef):
                bases.append(value)
                continue
            foreign = foreign or not (isinstance(base.value, cst.Name) and base.value.value == "object")
            qualified = ctx.imports.qualify(base.value) if isinstance(base.value, (cst.Name, cst.Attribute)) else None
            if qualified and (self.tables.library_of(qualified) is not None or
                              qualified in self.tables.python.get("library_class_bases", {})):
                library_bases.append(qualified)
            if _is_record_base(ctx, base.value):
                fields = fields or []
            elif qualified in ("unittest.TestCase", "unittest.case.TestCase"):
                test_case = True
        if _is_dataclass(ctx, node) or fields is not None:
            fields = [s.target.value for s in class_body_small(node)
                      if isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name)]
        info = ClassInfo(cls, members, bases, fields, self, test_case, tuple(library_bases), foreign)
        self._classes[cls] = info
        return info

    def class_fields(self, cls: ClassRef) -> tuple:
        """``self.x`` of the class: the join of what every method assigns to it (and its bases')."""
        return self.fields.of(cls)


# ------------------------------------------------------------------------------ finding modules
# ------------------------------------------------------------------------------ helpers
def _inputs(node, env: dict, pending: frozenset) -> tuple:
    """(sites given to a call: through its arguments and the copies in flight; the ones of them that
    are not arguments' own: the receiver's and the copies')."""
    from .domain import all_sites
    inputs = set()
    for value in env.values():
        inputs |= all_sites(value)
    arguments = frozenset(inputs)
    for copy in pending:
        inputs |= copy.sites
    own: frozenset = frozenset(inputs - arguments)
    if isinstance(node, cst.FunctionDef):
        params = [*node.params.posonly_params, *node.params.params]
        if params and params[0].name.value in ("self", "cls"):
            own = own | all_sites(env.get(params[0].name.value, UNKNOWN))
    return frozenset(inputs), own


def _made_between_yields(yielded: Value, inputs: frozenset) -> Value:
    """What a generator yields, where its own loop makes it (`yield flat[idx]` for each minibatch of
    a PPO rollout, on-policy's feed-forward generator, survey 54 DA): a new buffer on every step, so on
    every iteration of the loop that takes it, and of the loops around that (each makes a new
    generator). A buffer made once before its loop, or one it was given, stays the same one."""
    return map_sites(yielded, lambda s: replace(s, fresh_each_iteration=True)
                     if s.loops and not s.fresh_each_iteration and s not in inputs else s)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def folded(env: dict, name: str) -> Value:
    """A parameter's value at the exit, with the attributes the scope set on its object folded in,
    and on the objects its fields hold (`self.optimizer.buf = cpu_grad`: memopt's offload hook,
    survey 50 AE), a few levels deep."""
    return _folded(env, name, env.get(name, UNKNOWN), 0)


def _folded(env: dict, name: str, value: Value, depth: int) -> Value:
    if not isinstance(value, Instance):
        return value
    prefix = name + "."
    updates, deeper = {}, set()
    for key, v in env.items():
        if key.startswith(prefix):
            rest = key[len(prefix):]
            if "." not in rest:
                updates[rest] = v
            elif depth < 2:
                deeper.add(rest.split(".", 1)[0])
    for head in deeper:
        inner = updates.get(head, value.field(head))
        if isinstance(inner, Instance):
            updates[head] = _folded(env, prefix + head, inner, depth + 1)
    return value.with_fields(updates) if updates else value


def _package_of(name: Optional[str], is_package: bool, levels: int, folders: tuple) -> Optional[list]:
    """The package a relative import of ``levels`` dots starts from: the module's own package, or,
    where that is too shallow (a folder without ``__init__.py`` above it), the folders from the
    tree's root down to the file; None where neither reaches that far."""
    package = (name.split(".") if is_package else name.split(".")[:-1]) if name is not None else []
    if levels - 1 <= len(package) and name is not None:
        return package
    if folders and levels - 1 <= len(folders) and not is_package:
        return list(folders)
    return None


def _imports_of(module: cst.Module, name: Optional[str], is_package: bool, folders: tuple = ()) -> ImportMap:
    """The import map, with relative imports made absolute from the module's own dotted name."""
    imports = collect_imports(module)
    if name is None:
        return imports
    from ..walk import small_statements
    for small in small_statements(module.body, into_definitions=True):
        if not isinstance(small, cst.ImportFrom) or not small.relative or isinstance(small.names, cst.ImportStar):
            continue
        levels = len(small.relative)
        package = _package_of(name, is_package, levels, folders)
        if package is None:
            continue
        base = package[:len(package) - (levels - 1)]
        if small.module is not None:
            base = base + (dotted(small.module) or "").split(".")
        for alias in small.names:
            imported = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                else imported
            target = ".".join(base + [imported]) if base else imported
            imports.bind(local, target)
    return imports


def _absolute_from(node: cst.ImportFrom, name: Optional[str], is_package: bool, folders: tuple = ()) -> Optional[str]:
    """The module a ``from ... import`` names, absolute (None: a relative import outside any package)."""
    module = dotted(node.module) if node.module is not None else ""
    if not node.relative:
        return module
    if name is None:
        return None
    levels = len(node.relative)
    package = _package_of(name, is_package, levels, folders)
    if package is None:
        return None
    base = package[:len(package) - (levels - 1)]
    return ".".join(base + ([module] if module else []))


def _top_level_definitions(body) -> list:
    found = []
    for node in body:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            found.append(node)
        elif isinstance(node, (cst.If, cst.Try, cst.For, cst.While, cst.With)) or type(node).__name__ == "TryStar":
            # (a script's body in `for stage in stages:` defines its helpers there: XMem's train.py)
            from ..walk import child_blocks
            for block in child_blocks(node):
                found.extend(_top_level_definitions(block))
    return found


def _class_body_statements(node: cst.ClassDef) -> list:
    return _top_level_definitions(suite_body(node.body))


def _method_kind(node: cst.FunctionDef, ctx: ModuleContext) -> str:
    for decorator in node.decorators:
        expression = decorator.decorator
        name = dotted(expression.func if isinstance(expression, cst.Call) else expression) or ""
        last = name.rsplit(".", 1)[-1]
        if last == "staticmethod":
            return "static"
        if last == "classmethod":
            return "class"
        if last in ("property", "cached_property"):
            return "property"
        if last == "setter" and name.count(".") == 1:
            return "setter"
    return "method"


def _base_value(ctx: ModuleContext, expression) -> Value:
    if isinstance(expression, cst.Name):
        found = ctx.global_value(expression.value) if expression.value in ctx.defs else None
        if found is not None:
            return found
    qualified = ctx.imports.qualify(expression) if isinstance(expression, (cst.Name, cst.Attribute)) else None
    if qualified is not None and ctx.tables.library_of(qualified) is None:
        return ctx.project.resolve(qualified, ctx)
    return UNKNOWN


def _is_record_base(ctx: ModuleContext, expression) -> bool:
    name = ctx.imports.qualify(expression) if isinstance(expression, (cst.Name, cst.Attribute)) else None
    return name in ("typing.NamedTuple",)


def _is_dataclass(ctx: ModuleContext, node: cst.ClassDef) -> bool:
    for decorator in node.decorators:
        expression = decorator.decorator
        expression = expression.func if isinstance(expression, cst.Call) else expression
        name = ctx.imports.qualify(expression) or dotted(expression) or ""
        if name.rsplit(".", 1)[-1] in ("dataclass", "define", "frozen", "attrs", "s"):
            return True
    return False


def _names_run_at_load(body) -> frozenset:
    from ..walk import code_parts
    names: set = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            names.add(node.value)
        elif kind is cst.Import or kind is cst.ImportFrom:
            continue  # what an import binds is not a read
        elif kind is cst.FunctionDef:
            stack.extend(node.decorators)
            stack.append(node.params)
            if node.returns is not None:
                stack.append(node.returns)
        else:
            stack.extend(code_parts(node))  # a lambda's body too: read later, but kept on the safe side
    return frozenset(names)


def single_assigned_globals(module: cst.Module) -> set:
    """Module-level names assigned exactly once and never declared ``global`` in a function."""
    from ..walk import small_statements, statements
    counts: dict = {}
    # What a type checker alone sees (`if TYPE_CHECKING: cudart = None` over `else: cudart = _load(...)`)
    # never runs: it does not count as a second assignment.
    checker_only = {id(small) for node in statements(module.body)
                    if isinstance(node, cst.If) and dotted(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                    for small in small_statements(suite_body(node.body))}
    for node in statements(module.body):
        if isinstance(node, cst.For):
            for name in target_names(node.target):
                counts[name] = counts.get(name, 0) + 2  # rebound every iteration
    for small in small_statements(module.body):
        if id(small) in checker_only:
            continue
        targets: list = []
        weight = 1
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            targets = [small.target]
        elif isinstance(small, cst.AugAssign):
            targets, weight = [small.target], 2
        for target in targets:
            for name in target_names(target):
                counts[name] = counts.get(name, 0) + weight
    return {name for name, count in counts.items() if count == 1 and name not in _rebound_in_functions(module)}


def _rebound_in_functions(module: cst.Module) -> frozenset:
    """Names a function declares ``global`` and assigns (or deletes). A function that declares a global
    only to read it (`global h_output` before copying into it) leaves its module value as it is."""
    from ..walk import small_statements, statements
    if not any(isinstance(small, cst.Global) for small in small_statements(module.body, into_definitions=True)):
        return frozenset()
    found: set = set()
    for function in statements(module.body, into_definitions=True):
        if not isinstance(function, cst.FunctionDef):
            continue
        own = list(small_statements(suite_body(function.body)))
        declared = {name.name.value for small in own if isinstance(small, cst.Global) for name in small.names}
        if not declared:
            continue
        deleted = {name for small in own if isinstance(small, cst.Del) for name in target_names(small.target)}
        found |= declared & (assigned_names(function) | deleted)
    return frozenset(found)


def stored_into_each(node) -> frozenset:
    """The names a store is rooted at: ``out`` of ``out[n] = t``, ``out.append(t)``, ``out.x = t``; ``ins``
    and ``outs`` of ``(ins if i == 0 else outs).append(t)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    if isinstance(node, cst.IfExp):
        body, orelse = stored_into_each(node.body), stored_into_each(node.orelse)
        return body | orelse if body and orelse else frozenset()
    return frozenset([node.value]) if isinstance(node, cst.Name) else frozenset()


def stored_into_local(node, local: frozenset) -> bool:
    """The store is into containers of ``local_containers`` only."""
    roots = stored_into_each(node)
    return bool(roots) and roots <= local


_LOCAL_CONTAINERS: dict = {}


def local_containers(function: cst.FunctionDef) -> frozenset:
    """Names the function binds once, to a literal container (``out = {}``, ``outs = []``), never
    declared global or nonlocal: what is stored in them lives as long as they do, and where a
    container goes (returned, stored on ``self``, handed to a call) its own escape says."""
    found = _LOCAL_CONTAINERS.get(function)
    if found is None:
        found = _LOCAL_CONTAINERS[function] = _find_local_containers(function)
    return found


def _find_local_containers(function: cst.FunctionDef) -> frozenset:
    from ..walk import small_statements
    from .invariance import bound_once
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    outer = {n.name.value for small in small_statements(function.body.body, into_definitions=False)
             if isinstance(small, (cst.Global, cst.Nonlocal)) for n in small.names}
    made = set()
    for small in small_statements(function.body.body):
        if isinstance(small, cst.Assign) and (isinstance(small.value, (cst.Dict, cst.List, cst.Tuple, cst.DictComp,
                                                                        cst.ListComp)) or _empty_container_call(small.value)):
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    made.add(target.target.value)
                elif isinstance(target.target, (cst.Tuple, cst.List)) and isinstance(small.value, (cst.Tuple, cst.List)) \
                        and len(target.target.elements) == len(small.value.elements):
                    # `inputs, outputs, bindings = [], [], []` (TensorRT's helpers): one literal each
                    made.update(element.value.value for element, value in zip(target.target.elements, small.value.elements)
                                if isinstance(element.value, cst.Name) and
                                isinstance(value.value, (cst.Dict, cst.List, cst.DictComp, cst.ListComp)))
    # Bound once: a name later rebound to another container (`bufs = self.bufs`) holds that one's
    # contents, which live as long as it does.
    return frozenset(name for name in made if name not in params and name not in outer) & bound_once(function)


_CONTAINER_TYPES = frozenset({"dict", "list", "OrderedDict", "defaultdict"})


def _empty_container_call(value) -> bool:
    """``dict()``, ``list()``, ``collections.OrderedDict()``, ``defaultdict(list)``: a new, empty
    container, as a literal ``{}`` is (pycuda-lstm's `lstm_activations = dict()`)."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) and \
        isinstance(func.value, cst.Name) and func.value.value == "collections" else None
    if name not in _CONTAINER_TYPES:
        return False
    if name == "defaultdict":
        return len(value.args) <= 1 and not any(a.keyword or a.star for a in value.args)
    return not value.args


def rebinding_functions(module: cst.Module) -> dict:
    """Names that module-level functions, or methods of top-level classes, declare ``global`` and
    bind, where the top level assigns the name at most once: name -> ((def node, class node or None), ...)."""
    from ..walk import small_statements
    found: dict = {}
    functions = [(node, None) for node in module.body if isinstance(node, cst.FunctionDef)]
    for node in module.body:
        if isinstance(node, cst.ClassDef):
            functions += [(item, node) for item in suite_body(node.body) if isinstance(item, cst.FunctionDef)]
    for node, class_node in functions:
        declared = {name.name.value for small in small_statements(suite_body(node.body))
                    if isinstance(small, cst.Global) for name in small.names}
        if not declared:
            continue
        for name in declared & assigned_names(node):
            found.setdefault(name, []).append((node, class_node))
    if not found:
        return {}
    counts: dict = {}
    for small in small_statements(module.body):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else []
        for target in targets:
            for name in target_names(target):
                counts[name] = counts.get(name, 0) + 1
    return {name: tuple(where) for name, where in found.items() if counts.get(name, 0) <= 1}


def assigned_names(function: cst.FunctionDef) -> frozenset:
    """Names the function's own body assigns (targets, ``as`` names, imports, nested definitions), not
    those it only declares ``global`` and reads (`global pipe; pipe.run()`)."""
    found = _ASSIGNED.get(function)
    if found is None:
        names = set()
        for part in code_nodes(function.body, into_definitions=False):
            if isinstance(part, cst.AssignTarget) or isinstance(part, (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)):
                names.update(target_names(part.target))
            elif isinstance(part, cst.AsName):
                names.update(target_names(part.name))
            elif isinstance(part, (cst.Import, cst.ImportFrom)) and not isinstance(part.names, cst.ImportStar):
                for alias in part.names:
                    if alias.asname is not None:
                        names.update(target_names(alias.asname.name))
                    else:
                        names.add((dotted(alias.name) or "").split(".")[0])
            elif isinstance(part, (cst.FunctionDef, cst.ClassDef)) and part is not function:
                names.add(part.name.value)
        found = _ASSIGNED[function] = frozenset(names)
    return found


_ASSIGNED: dict = {}


def none_slots(module: cst.Module) -> frozenset:
    """Top-level names every top-level assignment of which is ``name = None``."""
    from ..walk import small_statements
    seen: dict = {}
    for small in small_statements(module.body):
        if isinstance(small, cst.Assign):
            for target in small.targets:
                for name in target_names(target.target):
                    none = isinstance(small.value, cst.Name) and small.value.value == "None" and \
                        isinstance(target.target, cst.Name)
                    seen[name] = seen.get(name, True) and none
        elif isinstance(small, cst.AnnAssign):  # `_client: Optional[Client] = None`
            none = isinstance(small.value, cst.Name) and small.value.value == "None"
            for name in target_names(small.target):
                seen[name] = seen.get(name, True) and none
        elif isinstance(small, cst.AugAssign):
            for name in target_names(small.target):
                seen[name] = False
    return frozenset(name for name, only_none in seen.items() if only_none)




__all__ = ["ClassInfo", "Member", "ModuleContext", "ModuleInfo", "Project", "single_assigned_globals", "field"]
