"""Positions and parents of libcst nodes, computed for one top-level statement at a time.

libcst's PositionProvider and ParentNodeProvider resolve a whole module: on a 600 kB file with one
finding that was most of the run (bench/big_files.py). A finding needs the positions of a handful
of nodes, so a ``Locator`` finds the top-level statement that holds a node (a plain walk over the
node's fields, much cheaper than libcst's visitor), generates the code of that statement alone with
libcst's own position-recording state, and shifts the rows by where Python's ``ast`` says the
statement starts. The shift is checked: the statement's generated code must be, character for
character, the file's text at that row; where it is not (a file libcst does not write back exactly)
the whole module is resolved the old way, so positions are always libcst's.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Optional

import libcst as cst
from libcst._position import CodePosition, CodeRange

from .walk import is_layout_field, is_node

_NEWLINE = re.compile(r"\r\n?|\n")  # libcst's own line breaks (form feeds and the like are not)
_FIELDS: dict = {}


def _child_fields(kind: type) -> tuple:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


class _AttributeOrder(cst.CSTVisitor):
    """Records the order in which libcst's own traversal visits a node's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute not in self.names:
            self.names.append(attribute)


_ORDERED: dict = {}


def _ordered_fields(node: cst.CSTNode) -> tuple:
    kind = type(node)
    names = _ORDERED.get(kind)
    if names is None:
        recorder = _AttributeOrder()
        node._visit_and_replace_children(recorder)
        names = tuple(recorder.names) + tuple(n for n in _child_fields(kind) if n not in recorder.names)
        _ORDERED[kind] = names
    return names


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor that only reads: the same calls of ``on_visit`` and
    ``on_leave`` in the same order, without libcst rebuilding every node on the way back up."""
    _visit(node, visitor, _ordered_fields)


_CODE_ORDERED: dict = {}


def _ordered_code_fields(node: cst.CSTNode) -> tuple:
    kind = type(node)
    names = _CODE_ORDERED.get(kind)
    if names is None:
        names = _CODE_ORDERED[kind] = tuple(n for n in _ordered_fields(node) if not is_layout_field(n))
    return names


def visit_code(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``visit`` without the layout nodes (whitespace, parentheses, commas, operators: the fields
    ``walk.code_parts`` leaves out), for a visitor that has no method for any of them: the same calls
    for every other node, in the same order, over about half the nodes."""
    _visit(node, visitor, _ordered_code_fields)


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor, fields_of) -> None:
    if visitor.on_visit(node):
        for name in fields_of(node):
            value = getattr(node, name)
            if is_node(value):
                _visit(value, visitor, fields_of)
            elif type(value) in (tuple, list):
                for item in value:
                    if is_node(item):
                        _visit(item, visitor, fields_of)
    visitor.on_leave(node)


def children(node: cst.CSTNode):
    """The node's children, in field order (enough for parents and containment)."""
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if is_node(value):
            yield value
        elif type(value) in (tuple, list):
            for item in value:
                if is_node(item):
                    yield item


def contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    stack = [root]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(children(current))
    return False


def _parents_below(root: cst.CSTNode, into: dict) -> None:
    stack = [root]
    while stack:
        current = stack.pop()
        for child in children(current):
            into[child] = current
            stack.append(child)


class _Recorded:
    """What libcst's position-recording codegen state writes to (its ``provider``)."""

    __slots__ = ("_computed",)

    def __init__(self) -> None:
        self._computed: dict = {}


# Nodes whose positions a Locator keeps (a tuple each): past it, the statements resolved longest ago
# are forgotten (and resolved again if asked). A 100,000-line file with a finding in each function
# kept 6 million nodes' positions, 600 MB; this is about 20 MB.
MAX_KEPT_NODES = 200_000


class Locator:
    """Positions (libcst's ``CodeRange``) and parents of the nodes of one module, on demand."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self.module = module
        self.text = text
        self._positions: dict = {}       # node -> (row, column, end row, end column), or a CodeRange
        self._parents: dict = {}         # node -> parent, likewise
        self._done: set = set()          # indices of the statements resolved
        self._kept: "collections.OrderedDict" = collections.OrderedDict()  # index -> its nodes, oldest first
        self._kept_nodes = 0
        self._anchors: Optional[list] = None  # per top-level statement: the row of its first token
        self._line_starts: Optional[list] = None
        self._cursor = 0                 # where the last search ended: reports come in file order
        self._whole = False              # the whole module was resolved the old way
        self._shifts: dict = {}          # index -> rows between the statement alone and in the file
        self._indices: Optional[dict] = None  # id of a top-level statement -> its index

    # ---- public
    def position(self, node: cst.CSTNode) -> CodeRange:
        found = self._positions.get(node)
        if found is None:
            self._resolve(node)
            found = self._positions[node]
        if type(found) is tuple:
            return CodeRange(CodePosition(found[0], found[1]), CodePosition(found[2], found[3]))
        return found

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if node is self.module:
            return None
        if node not in self._parents:
            try:
                self._resolve(node)
            except KeyError:
                return None  # not a node of this module: it has no parent here
        return self._parents.get(node)

    def parents(self) -> "_ParentView":
        """A mapping-like view (``get``, ``[]``, ``in``) for code that wants ``{node: parent}``."""
        return _ParentView(self)

    def top_level(self, node: cst.CSTNode) -> Optional[int]:
        """The index of the top-level statement holding ``node``, where ``alone`` can write it out
        on its own; None for a node of another module or once the whole module was resolved at once."""
        if self._whole:
            return None
        try:
            self.position(node)
        except KeyError:
            return None
        if self._whole:
            return None
        current = node
        while True:
            parent = self._parents.get(current)
            if parent is None:
                return None
            if parent is self.module:
                break
            current = parent
        if self._indices is None:
            self._indices = {id(statement): i for i, statement in enumerate(self.module.body)}
        index = self._indices.get(id(current))
        return index if index in self._shifts else None

    def alone(self, index: int) -> tuple:
        """Top-level statement ``index`` as a module of its own (its code is the file's text from its
        leading lines to its end) and the rows to add to its rows for the file's: a fix's edits are
        made on the statements it touches, not by writing out the whole module per finding."""
        return self._alone(index), self._shifts[index]

    def _alone(self, index: int) -> cst.Module:
        module = self.module
        last = index == len(module.body) - 1
        return cst.Module(body=[module.body[index]], header=[], footer=[], encoding=module.encoding,
                          default_indent=module.default_indent, default_newline=module.default_newline,
                          has_trailing_newline=module.has_trailing_newline or not last)

    # ---- resolution
    def _resolve(self, node: cst.CSTNode) -> None:
        if self._whole:
            raise KeyError(node)
        index = self._statement_of(node)
        if index is None or not self._resolve_statement(index):
            self._resolve_whole()

    def _statement_of(self, node: cst.CSTNode) -> Optional[int]:
        """The top-level statement holding ``node``, searched outwards from the last one found:
        reports come in file order within a rule, and each rule starts again from the top, so a
        search forward only would cross the whole file once per report of the next rule (a 100k-line
        file spent 25 s here)."""
        body = self.module.body
        count = len(body)
        cursor = self._cursor
        for step in range(count):
            for index in ((cursor + step, cursor - step) if step else (cursor,)):
                if 0 <= index < count and index not in self._done and contains(body[index], node):
                    self._cursor = index
                    return index
        return None

    def _resolve_statement(self, index: int) -> bool:
        anchors = self._top_level_rows()
        if anchors is None:
            return False
        statement = self.module.body[index]
        alone = self._alone(index)
        recorded = _Recorded()
        from libcst.metadata.position_provider import PositionProvidingCodegenState
        state = PositionProvidingCodegenState(default_indent=alone.default_indent,
                                              default_newline=alone.default_newline, provider=recorded)
        alone._codegen(state)
        code = "".join(state.tokens)
        shift = anchors[index] - recorded._computed[statement].start.line
        if shift < 0 or not self._text_matches(shift, code):
            return False
        self._shifts[index] = shift
        positions = self._positions
        for node, span in recorded._computed.items():
            start, end = span.start, span.end
            positions[node] = (start.line + shift, start.column, end.line + shift, end.column)
        self._parents[statement] = self.module
        _parents_below(statement, self._parents)
        self._done.add(index)
        nodes = list(recorded._computed)
        self._kept[index] = nodes
        self._kept_nodes += len(nodes)
        while self._kept_nodes > MAX_KEPT_NODES and len(self._kept) > 1:
            self._forget(*self._kept.popitem(last=False))
        return True

    def _forget(self, index: int, nodes: list) -> None:
        self._kept_nodes -= len(nodes)
        self._done.discard(index)
        for node in nodes:
            self._positions.pop(node, None)
            self._parents.pop(node, None)

    def _text_matches(self, shift: int, code: str) -> bool:
        starts = self._line_starts
        if starts is None:
            starts = self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(self.text))]
        if shift >= len(starts):
            return False
        begin = starts[shift]
        return self.text.startswith(code, begin)

    def _top_level_rows(self) -> Optional[list]:
        """The row of each top-level libcst statement's first token (after its leading comment
        lines and decorators, where libcst's position of the statement starts), from ``ast``."""
        if self._anchors is None:
            self._anchors = _anchors(self.module, self.text)
        return self._anchors or None

    def _resolve_whole(self) -> None:
        from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self._positions = dict(wrapper.resolve(PositionProvider))
        self._parents = dict(wrapper.resolve(ParentNodeProvider))
        self._whole = True


def _anchors(module: cst.Module, text: str) -> list:
    """[] when Python's statements cannot be matched one to one with libcst's."""
    from .parsing import top_level_rows
    statements = top_level_rows(text)
    if statements is None:
        return []
    rows, at = [], 0
    for statement in module.body:
        if at >= len(statements):
            return []
        rows.append(statements[at])
        at += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return rows if at == len(statements) else []


class _ParentView:
    __slots__ = ("_locator",)

    def __init__(self, locator: Locator) -> None:
        self._locator = locator

    def get(self, node, default=None):
        parent = self._locator.parent(node)
        return default if parent is None else parent

    def __getitem__(self, node):
        parent = self._locator.parent(node)
        if parent is None:
            raise KeyError(node)
        return parent

    def __contains__(self, node) -> bool:
        return self._locator.parent(node) is not None
