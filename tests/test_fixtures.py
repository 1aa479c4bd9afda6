"""Every bundled fixture keeps the fixture contract, and pinlint reports exactly what its header says."""

from __future__ import annotations

import ast

import pytest

from pinlint.engine import lint_bytes
from pinlint.settings import Settings

from fixture_catalog import LIBRARIES, expected_codes, fixture_files, library_of

FILES = fixture_files()


def test_there_are_fixtures_for_every_library_and_rule():
    seen = {(path.parent.name, library_of(path)) for path in FILES if expected_codes(path)}
    for rule in ("PIN001", "PIN007", "PIN008"):
        for library in LIBRARIES:
            assert (rule, library) in seen, f"no positive {rule} fixture for {library}"
    negatives = {(path.parent.name, library_of(path)) for path in FILES if not expected_codes(path)}
    for rule in ("PIN001", "PIN007", "PIN008"):
        for library in LIBRARIES:
            assert (rule, library) in negatives, f"no negative {rule} fixture for {library}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_header_matches_findings(path):
    result = lint_bytes(path.read_bytes(), str(path), Settings())
    assert result.error is None
    assert {f.code for f in result.findings} == expected_codes(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_contract(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)}
    assert "run" in names, "fixtures define run(n)"
    assert "SIZES" in assigned, "fixtures define SIZES"
    assert ast.get_docstring(tree), "fixtures say what they show in a module docstring"
    assert any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body), \
        "fixtures run once under `if __name__ == '__main__':`"
    assert library_of(path) in LIBRARIES, "fixture names start with their library"
