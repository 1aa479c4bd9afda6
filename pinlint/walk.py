"""Fast statement-level walks. libcst's visitors visit every node of the tree (about 40 ms for a
1,000-line file); imports and assignments are statements, so walking statement bodies is enough."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import libcst as cst


def suite_body(suite) -> Sequence[cst.CSTNode]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return getattr(suite, "body", ())


def child_blocks(node: cst.CSTNode) -> Iterator[Sequence[cst.CSTNode]]:
    """The statement blocks directly inside a compound statement."""
    if isinstance(node, cst.If):
        yield suite_body(node.body)
        if node.orelse is not None:
            yield [node.orelse] if isinstance(node.orelse, cst.If) else suite_body(node.orelse.body)
        return
    if isinstance(node, cst.Match):
        for case in node.cases:
            yield suite_body(case.body)
        return
    body = getattr(node, "body", None)
    if body is not None and not isinstance(node, cst.SimpleStatementLine):
        yield suite_body(body)
    for handler in getattr(node, "handlers", ()):
        yield suite_body(handler.body)
    for attr in ("orelse", "finalbody"):
        part = getattr(node, attr, None)
        if part is not None:
            yield suite_body(part.body)


def statements(body: Sequence[cst.CSTNode], into_definitions: bool = False) -> Iterator[cst.CSTNode]:
    """Every statement in ``body``, recursively; function and class bodies only when asked."""
    for node in body:
        yield node
        if isinstance(node, cst.SimpleStatementLine):
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and not into_definitions:
            continue
        for block in child_blocks(node):
            yield from statements(block, into_definitions)


_LEAVES = (cst.Break, cst.Return, cst.Raise)


def ends_by_leaving(body: Sequence[cst.CSTNode]) -> bool:
    """Whether a block's last statement always leaves it (`break`, `return`, `raise`)."""
    last = body[-1] if body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], _LEAVES)


def has_own_continue(body: Sequence[cst.CSTNode]) -> bool:
    """A `continue` in ``body`` that goes back to the loop ``body`` belongs to: not one inside a
    nested loop's body (its `else` is the outer loop's), function or class."""
    for node in body:
        if isinstance(node, cst.SimpleStatementLine):
            if any(isinstance(small, cst.Continue) for small in node.body):
                return True
        elif isinstance(node, (cst.For, cst.While)):
            if node.orelse is not None and has_own_continue(suite_body(node.orelse.body)):
                return True
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef)) and \
                any(has_own_continue(block) for block in child_blocks(node)):
            return True
    return False


# `lambda x: body` as the analysis runs it: `def lambda_(x): return body` (project.lambda_value).
LAMBDA_STAND_IN = "lambda_"


def code_node(node: cst.CSTNode) -> cst.CSTNode:
    """The node of the file a definition's position is that of: a lambda's stand-in `def` is no
    node of the file; its returned expression, the lambda's own body, is."""
    if isinstance(node, cst.FunctionDef) and node.name.value == LAMBDA_STAND_IN:
        return node.body.body[0].body[0].value
    return node


def class_body_small(node: cst.ClassDef) -> list:
    """The small statements directly in a class body (``x = None``, ``a: int``)."""
    return [small for statement in suite_body(node.body) if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body]


def small_statements(body: Sequence[cst.CSTNode], into_definitions: bool = False) -> Iterator[cst.BaseSmallStatement]:
    for node in statements(body, into_definitions):
        if isinstance(node, cst.SimpleStatementLine):
            yield from node.body


# Fields that hold layout only (whitespace, parentheses, punctuation): no name is in them.
_LAYOUT_FIELDS = frozenset({"lpar", "rpar", "comma", "leading_lines", "lines_after_decorators", "header", "footer",
                            "trailing_whitespace", "semicolon", "colon", "equal", "dot", "newline", "lines",
                            "whitespace_before", "whitespace_after", "operator"})
_CODE_FIELDS: dict = {}


def is_layout_field(name: str) -> bool:
    return name in _LAYOUT_FIELDS or name.startswith("whitespace")


def code_parts(node: cst.CSTNode) -> list:
    """The node's children that hold code, layout left out: for walks that look for names.
    ``node.children`` rebuilds its list through a visitor on every call, and ``positions.children``
    keeps the layout nodes that containment needs."""
    kind = type(node)
    names = _CODE_FIELDS.get(kind)
    if names is None:
        names = _CODE_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if not is_layout_field(f.name))
    out = []
    for name in names:
        value = getattr(node, name)
        if is_node(value):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out.extend(item for item in value if is_node(item))
    return out


def code_nodes(root: cst.CSTNode, into_definitions: bool = True) -> Iterator[cst.CSTNode]:
    """``root`` and every node of code under it (``code_parts``), in no particular order; with
    ``into_definitions`` False, a nested def, class or lambda is given but not walked into."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if into_definitions or not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(code_parts(node))


_NODE_TYPES: dict = {}


def is_node(value) -> bool:
    """``isinstance(value, cst.CSTNode)`` by a dict of types: ``CSTNode`` is an ABC, whose instance
    check costs several times a plain one, and the walks ask it of every field of every node."""
    kind = type(value)
    found = _NODE_TYPES.get(kind)
    if found is None:
        found = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return found


def target_names(target) -> list:
    """The names an assignment target binds: ``a``, ``a, (b, *c)``; none for ``x.attr`` or ``x[i]``."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def binding_targets(node) -> list:
    """The targets a node binds or unbinds: an assignment's, a ``for``'s (or a comprehension's), a
    walrus's, an ``as`` name's, a ``del``'s."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)):
        return [node.target]
    if isinstance(node, cst.AsName):
        return [node.name]
    return []
