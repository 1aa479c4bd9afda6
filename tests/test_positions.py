"""Positions and parents per top-level statement (pinlint.positions) are exactly libcst's
whole-module PositionProvider and ParentNodeProvider, for every node, on the fixtures, the rule
examples and files built to trip the shift (comments, decorators, semicolons, continuations, odd
line endings, no trailing newline); and they are computed for the statement asked about only."""

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from pinlint.positions import Locator, visit

ROOT = Path(__file__).resolve().parent.parent

TRICKY = {
    "comments and decorators": "# header\n\n\n@deco(\n    1)\n# between\n@other\ndef f(x):\n    return x  # t\n"
                               "\n# footer comment\n",
    "semicolons": "import numpy as np; import cupy as cp\na = 1; b = 2;\nif a: b = 3; c = 4\n",
    "continuations": "x = 1 + \\\n    2\ny = (\n  3,\n)\ns = '''a\nb\n'''\nz = s\n",
    "no trailing newline": "import cupy\n\ndef g():\n    return cupy.empty(3)",
    "crlf": "import cupy\r\n\r\ndef g():\r\n    return cupy.zeros(2)\r\n",
    "lone cr": "import cupy\rdef g():\r    return 1\r",
    "form feed": "import cupy\n\x0c\ndef g():\n    return 2\n",
    "class and async": "class A:\n    @property\n    def p(self):\n        return 1\n\n"
                       "async def h():\n    async with a as b:\n        pass\n",
    "tabs and unicode": "def f():\n\tname = 'é漢'; return name\n\nv = f()  # ünï\n",
    "empty": "",
    "only comments": "# one\n# two\n",
}


def _sources():
    for name, text in TRICKY.items():
        yield name, text
    for path in sorted((ROOT / "fixtures").rglob("*.py")) + [ROOT / "pinlint" / "fixes.py", ROOT / "pinlint" / "scopes.py"]:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name,text", list(_sources()), ids=[n for n, _ in _sources()])
def test_every_position_and_parent_is_libcsts(name, text):
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    locator = Locator(module, text)
    for node in reversed(list(expected)):  # last statement first: the search wraps around
        assert locator.position(node) == expected[node], (name, type(node).__name__)
        assert locator.parent(node) is parents.get(node)
    assert locator.parent(module) is None


def test_only_the_statement_asked_about_is_resolved():
    text = "import cupy\n" + "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(50))
    module = cst.parse_module(text)
    call = module.body[30].body.body[0].body[0].value  # the `x + 30` of f29
    locator = Locator(module, text)
    assert locator.position(call).start.line == 2 + 29 * 3 + 1
    assert locator._done == {30} and not locator._whole


def test_statements_resolved_long_ago_are_forgotten_and_resolved_again_alike(monkeypatch):
    from pinlint import positions
    monkeypatch.setattr(positions, "MAX_KEPT_NODES", 40)
    text = (ROOT / "pinlint" / "scopes.py").read_text(encoding="utf-8")
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    locator = Locator(module, text)
    body = set(module.body)

    def in_a_statement(node) -> bool:
        while node is not None and node not in body:
            node = parents.get(node)
        return node is not None
    nodes = [node for node in expected if in_a_statement(node)]
    for node in nodes + nodes[::7]:  # the second pass asks again about forgotten statements
        assert locator.position(node) == expected[node]
        assert locator.parent(node) is parents.get(node)
    # what is kept stays near the budget (one statement may hold more than all of it)
    assert locator._kept_nodes <= max(40, max(len(kept) for kept in locator._kept.values()))
    assert not locator._whole


def test_a_file_libcst_does_not_write_back_falls_back_to_whole_module_positions():
    text = "import cupy\n\ndef f():\n    return 1\n"
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locator = Locator(module, text.replace("1", "2"))  # the statement's code is not the text's
    node = module.body[1]
    assert locator.position(node) == expected[node] and locator._whole


def test_a_node_of_another_module_has_no_parent_and_no_position():
    module = cst.parse_module("x = 1\n")
    stranger = cst.parse_expression("y")
    locator = Locator(module, "x = 1\n")
    assert locator.parent(stranger) is None
    with pytest.raises(KeyError):
        locator.position(stranger)


def test_visit_calls_a_visitor_as_libcsts_traversal_does():
    class Record(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.calls = []

        def on_visit(self, node):
            self.calls.append(("visit", id(node)))
            return not isinstance(node, cst.Lambda)  # a visitor may prune a subtree

        def on_leave(self, node):
            self.calls.append(("leave", id(node)))

    for name, text in _sources():
        module = cst.parse_module(text)
        ours, theirs = Record(), Record()
        visit(module, ours)
        module.visit(theirs)
        assert ours.calls == theirs.calls, name


def test_visit_code_makes_the_same_calls_for_every_node_but_layout():
    from pinlint.positions import visit_code
    from pinlint.walk import code_parts

    class Record(cst.CSTVisitor):
        def __init__(self, keep):
            super().__init__()
            self.calls, self.keep = [], keep

        def on_visit(self, node):
            if self.keep(node):
                self.calls.append(("visit", id(node)))
            return not isinstance(node, cst.Lambda)

        def on_leave(self, node):
            if self.keep(node):
                self.calls.append(("leave", id(node)))

    visited = everything = 0
    for name, text in _sources():
        module = cst.parse_module(text)
        code_nodes = set()
        stack = [module]
        while stack:  # the nodes reachable through code fields only
            node = stack.pop()
            code_nodes.add(id(node))
            stack.extend(code_parts(node))
        ours, theirs, full = Record(lambda n: True), Record(lambda n: id(n) in code_nodes), Record(lambda n: True)
        visit_code(module, ours)
        visit(module, theirs)
        visit(module, full)
        assert ours.calls == theirs.calls, name
        visited, everything = visited + len(ours.calls), everything + len(full.calls)
    assert visited < 0.7 * everything  # the point: the layout nodes are most of a tree


def test_the_scope_index_is_the_same_from_the_code_nodes_alone():
    from pinlint.scopes import ScopeIndex, _Collector

    def summary(scopes) -> list:
        return [(type(node).__name__, sorted((n, [(b.target, b.type_checking, b.in_handler) for b in bindings])
                                             for n, bindings in scope.names.items()))
                for node, scope in scopes.items()]

    for name, text in _sources():
        module = cst.parse_module(text)
        index = ScopeIndex(module, lambda: {})
        full = _Collector(module)
        visit(module, full)
        assert summary(index.scopes) == summary(full.scopes), name
