"""Fixes: plans over CST nodes, applied in one transform per pass, written atomically.

A rule attaches a ``Plan`` (what to replace, insert or remove, which imports to add) to a finding.
The engine turns a plan into ruff-style text edits for JSON output by applying it alone and diffing.
``fix_text`` applies every applicable plan, re-parses, re-lints and repeats until nothing changes;
``write_atomically`` replaces a file through a temporary file in the same folder, so a file is always
either its old or its new content.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from .model import Edit, Location
from .walk import small_statements, suite_body

SAFE, UNSAFE, DISPLAY = "safe", "unsafe", "display-only"


@dataclass(frozen=True)
class Plan:
    applicability: str
    message: str
    replace: tuple = ()          # ((node, new node), ...)
    insert_before: tuple = ()    # ((statement, (new statements...)), ...)
    remove: tuple = ()           # (statement, ...)
    imports: tuple = ()          # NewImport, ... (a plain (module, name, asname) goes to the module's top)
    group: object = None         # plans sharing a group apply one per pass (one sync per racing copy)

    def targets(self) -> list:
        return [n for n, _ in self.replace] + [s for s, _ in self.insert_before] + list(self.remove)


def applicable(plan: Optional[Plan], unsafe: bool) -> bool:
    return plan is not None and (plan.applicability == SAFE or (unsafe and plan.applicability == UNSAFE))


# ------------------------------------------------------------------ applying plans to a module
@dataclass(frozen=True)
class NewImport:
    """An import a fix adds, and where: in the scope and under the guard where the file already
    imports that library (DESIGN.md "Fixes"), so no module imports anything new at load time."""

    module: str
    name: Optional[str] = None
    asname: Optional[str] = None
    after: Optional[cst.CSTNode] = None    # a line importing the same library: the new one goes right below it
    before: Optional[cst.CSTNode] = None   # the first statement of a function: the new one goes above it
    # neither: the library is imported in the module's leading imports; libcst's AddImportsVisitor adds it there

    def code(self) -> str:
        if self.name is None:
            return f"import {self.module}" + (f" as {self.asname}" if self.asname else "")
        return f"from {self.module} import {self.name}" + (f" as {self.asname}" if self.asname else "")


def _new_imports(plans: Sequence[Plan]) -> list:
    out = []
    for plan in plans:
        for spec in plan.imports:
            out.append(spec if isinstance(spec, NewImport) else NewImport(*spec))
    return out


class _Apply(cst.CSTTransformer):
    def __init__(self, plans: Sequence[Plan]) -> None:
        super().__init__()
        self.replace: dict = {}
        self.before: dict = {}
        self.after: dict = {}
        self.remove: set = set()
        for plan in plans:
            self.replace.update(dict(plan.replace))
            for statement, new in plan.insert_before:
                self.before.setdefault(statement, []).extend(new)
            self.remove.update(plan.remove)
        placed: set = set()
        for spec in _new_imports(plans):
            anchor = spec.after if spec.after is not None else spec.before
            if anchor is None or (id(anchor), spec.code()) in placed:
                continue
            placed.add((id(anchor), spec.code()))
            line = cst.parse_statement(spec.code())
            (self.after if spec.after is not None else self.before).setdefault(anchor, []).append(line)

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        if original in self.replace:
            return self.replace[original]
        if isinstance(updated, (cst.Module, cst.IndentedBlock)):
            body = []
            for old, new in zip(original.body, updated.body):
                inserted = list(self.before.get(old, ()))
                if inserted and hasattr(new, "leading_lines"):
                    # What is above the anchor's last blank line (blank lines, a section's comment, a
                    # notebook's cell boundary) now goes above what is inserted; the comments right
                    # above the anchor stay with it.
                    lines = list(new.leading_lines)
                    split = max((i + 1 for i, line in enumerate(lines) if line.comment is None), default=0)
                    inserted[0] = inserted[0].with_changes(leading_lines=[*lines[:split], *inserted[0].leading_lines])
                    new = new.with_changes(leading_lines=lines[split:])
                body.extend(inserted)
                if old not in self.remove:
                    body.append(new)
                body.extend(self.after.get(old, ()))
            if not body and isinstance(updated, cst.IndentedBlock):
                body = [cst.SimpleStatementLine([cst.Pass()])]
            return updated.with_changes(body=body)
        return updated


def apply_plans(module: cst.Module, plans: Sequence[Plan]) -> str:
    fixed = module.visit(_Apply(plans))
    top = [spec for spec in _new_imports(plans) if spec.after is None and spec.before is None]
    if top:
        # libcst's codemod package (and the matchers it loads) costs more to import than a check of
        # most files: only a fix that adds an import at the module's top pays for it.
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor
        context = CodemodContext()
        for spec in top:
            AddImportsVisitor.add_needed_import(context, spec.module, spec.name, spec.asname)
        # Given the leading statements only (up to the last top-level import, where it puts what it
        # adds): it resolves metadata over all it is given.
        head = _import_head(fixed)
        added = AddImportsVisitor(context).transform_module(head)
        fixed = added if head is fixed else fixed.with_changes(body=[*added.body, *fixed.body[len(head.body):]],
                                                               header=added.header)
    return fixed.code


def plan_edits(module: cst.Module, text: str, plan: Plan, imports_done: dict, locator=None) -> tuple:
    """The edits of one plan applied alone, as ``edits_between(text, apply_plans(module, [plan]))``
    gives them. A plan that adds an import at the module's top would pay for libcst's import codemod
    (a copy and a walk of the whole module) once per finding, and a file's findings mostly add the
    same import: so the import's edits are made once per set of imports (``imports_done``, one per
    module) and joined with the plan's own, unless the two touch the same lines. With the module's
    ``positions.Locator``, the plan's own edits are made on the top-level statements it touches."""
    top = tuple(spec for spec in _new_imports([plan]) if spec.after is None and spec.before is None)
    if not top:
        return _own_edits(module, text, plan, locator)
    key = tuple(sorted({(spec.module, spec.name, spec.asname) for spec in top}, key=repr))
    if key not in imports_done:
        # libcst's import codemod resolves metadata over the module it is given (45 s for a
        # 20,000-line file): it is given the module's leading part, up to its last top-level import,
        # where it puts what it adds; that part's code is the start of the file's text.
        head = _import_head(module)
        imports_done[key] = edits_between(head.code if head is not module else text,
                                          apply_plans(head, [Plan(plan.applicability, "", imports=top)]))
    own = _own_edits(module, text, plan, locator)
    added = imports_done[key]
    if any(_touch(a, b) for a in own for b in added):
        return edits_between(text, apply_plans(module, [plan]))
    return tuple(sorted((*own, *added), key=lambda e: (e.location.row, e.end_location.row)))


def _import_head(module: cst.Module) -> cst.Module:
    """The module's statements up to its last top-level import (the whole module when that is the
    last statement, or when it has no import)."""
    last = None
    for index, statement in enumerate(module.body):
        if isinstance(statement, cst.SimpleStatementLine) and \
                any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body):
            last = index
    if last is None or last == len(module.body) - 1:
        return module
    return module.with_changes(body=module.body[:last + 1], footer=[], has_trailing_newline=True)


def _own_edits(module: cst.Module, text: str, plan: Plan, locator) -> tuple:
    """The edits of the plan's own changes (not the imports it adds at the module's top)."""
    local = _local_edits(plan, locator) if locator is not None else None
    return local if local is not None else edits_between(text, module.visit(_Apply([plan])).code)


def _local_edits(plan: Plan, locator) -> Optional[tuple]:
    """The plan's own edits made on each top-level statement it touches, written out alone, shifted
    to the file's rows: writing out and diffing the whole module per finding made a file's fixes
    cost (findings x file size), minutes for a 10,000-line file with a fix per function. None when
    a node cannot be placed (another module's, or the locator resolved the module whole)."""
    anchors = [spec.after if spec.after is not None else spec.before for spec in _new_imports([plan])]
    indices = set()
    for node in [*plan.targets(), *(anchor for anchor in anchors if anchor is not None)]:
        index = locator.top_level(node)
        if index is None:
            return None
        indices.add(index)
    edits: list = []
    for index in sorted(indices):
        alone, shift = locator.alone(index)
        for edit in edits_between(alone.code, alone.visit(_Apply([plan])).code):
            edit = Edit(edit.content, Location(edit.location.row + shift, 1), Location(edit.end_location.row + shift, 1))
            if edits and edits[-1].end_location.row == edit.location.row:
                # Statements next to each other: one diff of the file gives their edits as one hunk.
                previous = edits.pop()
                edit = Edit(previous.content + edit.content, previous.location, edit.end_location)
            edits.append(edit)
    return tuple(edits)


def _touch(a: Edit, b: Edit) -> bool:
    """Whether two line edits overlap or meet (then one diff would join them into one hunk)."""
    return a.location.row <= b.end_location.row and b.location.row <= a.end_location.row


def select_plans(plans: Iterable[Plan], spans: dict) -> list:
    """Plans that can apply together: none touches a node inside (or around) another's target,
    and at most one per group. ``spans`` maps a node to its (start, end) offsets."""
    chosen: list = []
    taken: list = []  # ((start, end), node, replacement code)
    groups: set = set()
    for plan in plans:
        if plan.group is not None and plan.group in groups:
            continue
        ranges = [(spans[node], node, plan) for node in plan.targets()]
        conflict = False
        duplicate = True
        for (start, end), node, _ in ranges:
            for (other_start, other_end), other_node, other_plan in taken:
                if start < other_end and other_start < end or (start == other_start == end == other_end):
                    if other_node is node and other_plan.replace == plan.replace and other_plan.remove == plan.remove:
                        continue  # the same fix reached through two findings
                    conflict = True
            duplicate = duplicate and any(n is node for _, n, _ in taken)
        if conflict:
            continue
        if plan.group is not None:
            groups.add(plan.group)
        if not duplicate:
            chosen.append(plan)
            taken.extend(ranges)
    return chosen


# ------------------------------------------------------------------ edits for output
def edits_between(old: str, new: str) -> tuple:
    """Ruff-style edits (1-based rows and columns) turning ``old`` into ``new``, one per changed hunk."""
    a, b = source_lines(old), source_lines(new)
    # Fixes change a few places: lines equal at both ends need no diffing. An exact diff of a long
    # middle is quadratic in its repeated lines (20,000 of them took 31 s), so past a few thousand
    # lines difflib's heuristic for frequent lines is used; the edits are exact either way.
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle_a, middle_b = a[start:len(a) - end], b[start:len(b) - end]
    matcher = difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=len(middle_a) + len(middle_b) > 4000)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(Edit(content="".join(middle_b[j1:j2]), location=Location(start + i1 + 1, 1),
                          end_location=Location(start + i2 + 1, 1)))
    return tuple(edits)


def unified_diff(old: str, new: str, filename: str) -> str:
    return "".join(difflib.unified_diff(source_lines(old), source_lines(new),
                                        fromfile=f"a/{filename}", tofile=f"b/{filename}"))


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list:
    """Lines as Python and editors number them (ends kept): only \\n, \\r\\n and \\r end a line, not
    the form feeds and other separators ``str.splitlines`` also splits on."""
    return _LINE.findall(text)


# ------------------------------------------------------------------ encoding-preserving, atomic writes
@dataclass
class SourceFile:
    """A file's text and how to write it back as it was: encoding and byte-order mark."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def to_bytes(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return (b"\xef\xbb\xbf" + data) if self.bom else data


class _Stopped(BaseException):
    """The run stopped between writing a temporary file and renaming it."""


class ChangedWhileFixing(OSError):
    """The file on disk is no longer the text the fix was computed from (an editor saved it)."""


class _Stop:
    """Whether this process may still write: a pool worker whose run was stopped (SIGTERM, the
    parent gone) must not replace one more file. Set up by the runner in each worker."""

    alive: Optional[Callable[[], bool]] = None   # the parent is still there
    requested = False                            # a stop arrived during a write: finish it without replacing
    writing = False


def stop_writing_when(alive: Callable[[], bool]) -> None:
    _Stop.alive = alive


def request_stop() -> None:
    """A stop signal arrived: outside a write, end now; inside one, end before its rename."""
    if not _Stop.writing:
        os._exit(1)
    _Stop.requested = True


def _may_write() -> bool:
    return not _Stop.requested and (_Stop.alive is None or _Stop.alive())


def write_atomically(path: Path, data: bytes, expected: Optional[bytes] = None) -> None:
    if not _may_write():
        os._exit(1)  # the run was stopped: this worker writes nothing more
    _Stop.writing = True
    try:
        _write_atomically(path, data, expected)
    except _Stopped:
        os._exit(1)
    finally:
        _Stop.writing = False
        if _Stop.requested:
            os._exit(1)  # the signal came during the write: it is complete (or undone), so end now


def _write_atomically(path: Path, data: bytes, expected: Optional[bytes] = None) -> None:
    """Replace ``path`` with ``data`` so that any reader, or a crash at any moment, sees either the
    old or the new content. Keeps the file's permission bits. With ``expected``, the file is left
    alone (``ChangedWhileFixing``) unless it still holds those bytes (or already ``data``) just
    before the replace: a fix computed from older text must not undo an edit saved meanwhile.

    The new content is written into a file without a name (Linux ``O_TMPFILE``) where the file
    system allows it, and given a name only for the replace: a run killed without warning (SIGKILL,
    which no handler sees) while it writes leaves no temporary file behind."""
    named = str(path)  # what messages show
    path = Path(os.path.realpath(path))  # through a symbolic link: fix the file it points to, keep the link
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(13, "the file is read-only", named)
    unnamed = _unnamed_file(path.parent)
    if unnamed is None:
        fd, temporary = tempfile.mkstemp(prefix=".pinlint-", suffix=".tmp", dir=path.parent)
    else:
        fd, temporary = unnamed, None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            if expected is not None:
                current = path.read_bytes()
                if current == data:
                    return  # another run wrote the same fix meanwhile (the finally removes a named temporary)
                if current != expected:
                    raise ChangedWhileFixing(errno.EBUSY, "the file changed while it was being fixed", named)
            if not _may_write():
                raise _Stopped()  # stopped while writing the new content: the file stays as it was
            if temporary is None:
                temporary = _name_unnamed_file(handle.fileno(), path.parent)
            os.replace(temporary, path)
            temporary = None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _unnamed_file(folder: Path) -> Optional[int]:
    """A writable file without a name in ``folder``; None where the platform or file system has none."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not Path("/proc/self/fd").is_dir():
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY, 0o600)
    except OSError as error:
        if error.errno in _NO_UNNAMED_FILES:
            return None  # this file system (or an older kernel) cannot: a named temporary instead
        raise  # a full disk, a read-only folder: the write fails as it would with a named one


_NO_UNNAMED_FILES = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.ENOTSUP}


def _name_unnamed_file(fd: int, folder: Path) -> str:
    """Give the unnamed file ``fd`` a fresh temporary name in ``folder``, for the replace that follows at once."""
    folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for _ in range(100):
            name = f".pinlint-{os.getpid()}-{os.urandom(4).hex()}.tmp"
            try:
                # With a dir_fd os.link calls linkat(AT_SYMLINK_FOLLOW), which links what /proc's entry points to
                os.link(f"/proc/self/fd/{fd}", name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd,
                        follow_symlinks=True)
                return str(folder / name)
            except FileExistsError:
                continue
    finally:
        os.close(folder_fd)
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


# ------------------------------------------------------------------ building blocks for rules' plans
def expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def statement(code: str) -> cst.SimpleStatementLine:
    parsed = cst.parse_statement(code)
    assert isinstance(parsed, cst.SimpleStatementLine)
    return parsed


# The library a module belongs to, for placing its imports: `cupyx` ships with CuPy.
_LIBRARY_OF_ROOT = {"cupyx": "cupy"}


def library_of(qualified: str) -> str:
    root = qualified.split(".")[0]
    return _LIBRARY_OF_ROOT.get(root, root)


class Namer:
    """How to spell a qualified name at a place in a file: through an import that is bound there,
    else through an import the fix adds in the scope and under the guard where the file imports
    that library (DESIGN.md "Fixes"); None when neither can be done safely."""

    def __init__(self, module: cst.Module, parents) -> None:
        self._module = module
        self._parents = parents   # callable: () -> {node: parent}
        self._index = None

    @property
    def index(self):
        if self._index is None:
            from .scopes import ScopeIndex
            self._index = ScopeIndex(self._module, self._parents)
        return self._index

    def spell(self, qualified: str, preferred_import: Optional[tuple] = None, at: Optional[cst.CSTNode] = None) -> tuple:
        """(expression text, imports to add) for ``qualified`` (e.g. "cupyx.empty_pinned") used at
        node ``at``; (None, ()) when it cannot be spelled there without risk."""
        index = self.index
        at = at if at is not None else self._module
        best = None
        for scope, binding in index.imports():
            target = binding.target
            if (qualified == target or qualified.startswith(target + ".")) and \
                    (best is None or len(target) > len(best.target)) and index.refers_to(binding.name, target, at):
                best = binding
        if best is not None:
            return best.name + qualified[len(best.target):], ()
        place = self._placement(library_of(qualified), at)
        if place is None:
            return None, ()
        after, before = place
        if preferred_import is not None:
            from_module, name, asname = preferred_import
            local = asname or name or from_module.split(".")[0]
            bound = (from_module + "." + name) if name else (from_module if asname else local)
            if (qualified == bound or qualified.startswith(bound + ".")) and index.free_for(local, bound):
                return local + qualified[len(bound):], (NewImport(from_module, name, asname, after, before),)
        root = qualified.split(".")[0]
        if not index.free_for(root, root):
            return None, ()  # the root name means something else here: no safe spelling
        return qualified, (NewImport(qualified.rpartition(".")[0] or root, None, None, after, before),)

    def _placement(self, library: str, at: cst.CSTNode) -> Optional[tuple]:
        """(after, before) for a new import of ``library`` used at ``at``: right below a line that
        imports the library where it is visible (the innermost function first), at the module's top
        when the library is among its leading imports, at the start of the function around ``at``
        when the file imports the library nowhere in sight (the function runs only once the library
        is loaded: it handles that library's arrays); None at module level without such an import."""
        index = self.index
        runs = [(s, b) for s, b in index.imports() if library_of(b.target) == library]
        if any(self._with_fallback(b) for _, b in runs):
            # `try: import cupy as cp / except ImportError: import numpy as cp`: the file runs without
            # the library, where a name the fix adds under the guard would be unbound
            return None
        function = index.function_of(at)
        for scope in index.scope_of(at).chain():
            if scope.is_module:
                break
            if not isinstance(scope.node, cst.FunctionDef):
                continue
            for owner, binding in runs:
                if owner is scope and index.dominates(binding.statement, at):
                    return binding.statement, None
        at_module = [b for s, b in runs if s.is_module and b.statement is not None and
                     (function is not None or index.dominates(b.statement, at))]
        leading = _leading_imports(self._module)
        if any(b.statement in leading for b in at_module):
            return None, None
        if at_module:
            unguarded = [b for b in at_module if index.parent(b.statement) is self._module]
            return (unguarded or at_module)[0].statement, None
        if function is None or not isinstance(function.body, cst.IndentedBlock):
            return None
        body = list(function.body.body)
        if _is_docstring(body[0]):
            return (body[0], None) if len(body) == 1 else (None, body[1])
        return None, body[0]


    def _with_fallback(self, binding) -> bool:
        """The import is in a ``try`` body whose handler imports the same name from another module."""
        index = self.index
        node = binding.statement
        while node is not None and not isinstance(node, cst.Try):
            node = index.parent(node)
        if node is None:
            return False
        for handler in node.handlers:
            for small in small_statements(suite_body(handler.body), into_definitions=False):
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar) and \
                        any((a.asname.name.value if a.asname is not None and isinstance(a.asname.name, cst.Name)
                             else (a.name.value if isinstance(a.name, cst.Name) else None)) == binding.name
                            for a in small.names):
                    return True
        return False


def _is_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
        isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, (cst.SimpleString,
                                                                                         cst.ConcatenatedString))


def _leading_imports(module: cst.Module) -> set:
    """The import lines where libcst's AddImportsVisitor adds imports: the module's first run of
    one-import lines, after a docstring."""
    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) and isinstance(body[0].body[0].value, cst.SimpleString) else 0
    leading: set = set()
    for statement in body[start:]:
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
                isinstance(statement.body[0], (cst.Import, cst.ImportFrom)):
            leading.add(statement)
        else:
            break
    return leading
