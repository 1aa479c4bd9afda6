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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .model import Edit, Location

SAFE, UNSAFE, DISPLAY = "safe", "unsafe", "display-only"


@dataclass(frozen=True)
class Plan:
    applicability: str
    message: str
    replace: tuple = ()          # ((node, new node), ...)
    insert_before: tuple = ()    # ((statement, (new statements...)), ...)
    remove: tuple = ()           # (statement, ...)
    imports: tuple = ()          # ((module, name or None, asname or None), ...) for AddImportsVisitor
    group: object = None         # plans sharing a group apply one per pass (one sync per racing copy)

    def targets(self) -> list:
        return [n for n, _ in self.replace] + [s for s, _ in self.insert_before] + list(self.remove)


def applicable(plan: Optional[Plan], unsafe: bool) -> bool:
    return plan is not None and (plan.applicability == SAFE or (unsafe and plan.applicability == UNSAFE))


# ------------------------------------------------------------------ applying plans to a module
class _Apply(cst.CSTTransformer):
    def __init__(self, plans: Sequence[Plan]) -> None:
        super().__init__()
        self.replace: dict = {}
        self.before: dict = {}
        self.remove: set = set()
        for plan in plans:
            self.replace.update(dict(plan.replace))
            for statement, new in plan.insert_before:
                self.before.setdefault(statement, []).extend(new)
            self.remove.update(plan.remove)

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        if original in self.replace:
            return self.replace[original]
        if isinstance(updated, (cst.Module, cst.IndentedBlock)):
            body = []
            for old, new in zip(original.body, updated.body):
                inserted = list(self.before.get(old, ()))
                if inserted and hasattr(new, "leading_lines"):
                    # Blank lines above the anchor now go above what is inserted; its comments stay with it.
                    lines = list(new.leading_lines)
                    blanks = 0
                    while blanks < len(lines) and lines[blanks].comment is None:
                        blanks += 1
                    inserted[0] = inserted[0].with_changes(leading_lines=[*lines[:blanks], *inserted[0].leading_lines])
                    new = new.with_changes(leading_lines=lines[blanks:])
                body.extend(inserted)
                if old not in self.remove:
                    body.append(new)
            if not body and isinstance(updated, cst.IndentedBlock):
                body = [cst.SimpleStatementLine([cst.Pass()])]
            return updated.with_changes(body=body)
        return updated


def apply_plans(module: cst.Module, plans: Sequence[Plan]) -> str:
    fixed = module.visit(_Apply(plans))
    imports = [spec for plan in plans for spec in plan.imports]
    if imports:
        context = CodemodContext()
        for module_name, obj, asname in imports:
            AddImportsVisitor.add_needed_import(context, module_name, obj, asname)
        fixed = AddImportsVisitor(context).transform_module(fixed)
    return fixed.code


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


class ChangedWhileFixing(OSError):
    """The file on disk is no longer the text the fix was computed from (an editor saved it)."""


def write_atomically(path: Path, data: bytes, expected: Optional[bytes] = None) -> None:
    """Replace ``path`` with ``data`` so that any reader, or a crash at any moment, sees either the
    old or the new content. Keeps the file's permission bits. With ``expected``, the file is left
    alone (``ChangedWhileFixing``) unless it still holds those bytes (or already ``data``) just
    before the replace: a fix computed from older text must not undo an edit saved meanwhile."""
    named = str(path)  # what messages show
    path = Path(os.path.realpath(path))  # through a symbolic link: fix the file it points to, keep the link
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(13, "the file is read-only", named)
    fd, temporary = tempfile.mkstemp(prefix=".pinlint-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if expected is not None:
            current = path.read_bytes()
            if current == data:
                os.unlink(temporary)  # another run wrote the same fix meanwhile
                return
            if current != expected:
                raise ChangedWhileFixing(errno.EBUSY, "the file changed while it was being fixed", named)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


# ------------------------------------------------------------------ building blocks for rules' plans
def expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def statement(code: str) -> cst.SimpleStatementLine:
    parsed = cst.parse_statement(code)
    assert isinstance(parsed, cst.SimpleStatementLine)
    return parsed


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass
class Namer:
    """How to spell a qualified name in a file: through an existing import when there is one,
    else through an import the fix adds (with a local name not already used in the file)."""

    bindings: dict                 # local name -> qualified name (from the file's imports)
    code: str                      # the file's text, to see which names are taken
    added: list = field(default_factory=list)

    def spell(self, qualified: str, preferred_import: Optional[tuple] = None) -> tuple:
        """(expression text, imports to add) for ``qualified`` (e.g. "cupyx.empty_pinned")."""
        best = None
        for local, target in self.bindings.items():
            if qualified == target or qualified.startswith(target + "."):
                if best is None or len(target) > len(self.bindings[best]):
                    best = local
        if best is not None:
            rest = qualified[len(self.bindings[best]):]
            return best + rest, ()
        module, _, attr = qualified.rpartition(".")
        if preferred_import is not None:
            from_module, name, asname = preferred_import
            local = asname or name or from_module.split(".")[0]
            if not self._taken(local):
                spelled = local + qualified[len((from_module + "." + name) if name else from_module):]
                return spelled, (preferred_import,)
        root = qualified.split(".")[0]
        if self._taken(root) and self.bindings.get(root) != root:
            return None, ()  # the root name means something else here: no safe spelling
        return qualified, ((module, None, None),)

    def _taken(self, name: str) -> bool:
        """Bound by an import, or assigned, defined or used as a loop/with/except target anywhere."""
        if name in self.bindings:
            return True
        n = re.escape(name)
        pattern = (rf"(?<![.\w]){n}\s*(?:=(?!=)|:[^=\n]*=)|\b(?:def|class|as|for|global|nonlocal)\s+{n}\b"
                   rf"|(?<![.\w]){n}\s*,[^=\n]*=(?!=)")
        return re.search(pattern, self.code) is not None
