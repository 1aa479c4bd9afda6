"""Every rule's embedded VALID / INVALID programs (fixtures are checked in test_fixtures.py)."""

from __future__ import annotations

import textwrap

import pytest

from pinlint.checks import ALL_CODES, ALL_RULES
from pinlint.engine import lint_text
from pinlint.settings import Settings


def _cases(kind: str):
    for rule in ALL_RULES:
        for index, program in enumerate(getattr(rule, kind)):
            yield pytest.param(rule.code, program, id=f"{rule.code}-{kind}-{index}")


def _codes(program: str) -> list[str]:
    result = lint_text(textwrap.dedent(program), "example.py", Settings())
    assert result.error is None, result.error
    return [f.code for f in result.findings]


def test_every_rule_has_examples():
    assert ALL_RULES, "no rules registered"
    for rule in ALL_RULES:
        assert rule.VALID, f"{rule.code} has no VALID example"
        assert rule.INVALID, f"{rule.code} has no INVALID example"
        assert rule.code in ALL_CODES


@pytest.mark.parametrize("code, program", list(_cases("INVALID")))
def test_invalid_example_is_reported(code, program):
    assert code in _codes(program)


@pytest.mark.parametrize("code, program", list(_cases("VALID")))
def test_valid_example_is_clean(code, program):
    assert code not in _codes(program)


@pytest.mark.parametrize("code, program", list(_cases("INVALID")))
def test_invalid_example_is_reported_when_only_its_rule_is_selected(code, program):
    result = lint_text(textwrap.dedent(program), "example.py", Settings(select=frozenset([code])))
    assert [f.code for f in result.findings] and {f.code for f in result.findings} == {code}

