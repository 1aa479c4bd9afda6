"""Test doubles: code a test replaces or expects to fail does not run as written.

Inside ``with patch.object(flow.encoder, "encode", return_value=4):`` (``unittest.mock``, also
``patch("pkg.codec.Encoder.encode")``, ``patch.multiple(obj, encode=...)``), after
``mocker.patch.object(...)`` (pytest-mock) or ``monkeypatch.setattr(obj, "encode", fake)`` (pytest),
and in a test decorated with ``@patch.object(...)``, a call that reaches a function or method of that
name in the checked code runs the mock, not the body: the body's copies are not this call's (survey 57
GH: a video pipeline's tests mocked the encoder and were reported for its upload). Inside ``with
pytest.raises(E):`` (or ``self.assertRaises(E)``) the test expects the call to fail: what a callee
of the checked code would do there is not followed either (a shape check that raises before the
upload, decided by a literal the analysis does not size).

Only names are recorded (the object a mock is set on is not resolved): a call of another object's
method of the same name in such a block is not followed either, which can only lose a finding.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..imports import dotted
from .domain import Const

PATCHED = "$patched"    # Const of the names mocks replace on this path (a call reaching one is not followed)
RAISING = "$raising"    # Const True inside a block that expects an exception

_PATCH_OBJECT = frozenset({"unittest.mock.patch.object", "mock.patch.object"})
_PATCH = frozenset({"unittest.mock.patch", "mock.patch"})
_PATCH_MULTIPLE = frozenset({"unittest.mock.patch.multiple", "mock.patch.multiple"})
_RAISES = frozenset({"pytest.raises"})
_ASSERT_RAISES = frozenset({"assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
# pytest fixtures, by the names pytest gives them: `mocker` (pytest-mock) and `monkeypatch`
_FIXTURE_PATCHERS = {"mocker.patch.object": "object", "mocker.patch": "path", "mocker.patch.multiple": "multiple",
                     "monkeypatch.setattr": "setattr"}


def patched_names(ctx, call: cst.Call) -> Optional[frozenset]:
    """The names a ``patch`` call (a context manager or decorator) replaces; None if it is none."""
    qualified = ctx.imports.qualify(call.func) if isinstance(call.func, (cst.Name, cst.Attribute)) else None
    if qualified in _PATCH_OBJECT:
        return _attribute_argument(call, 1)
    if qualified in _PATCH:
        return _path_argument(call)
    if qualified in _PATCH_MULTIPLE:
        return frozenset(a.keyword.value for a in call.args if a.keyword is not None)
    return None


def fixture_patched_names(call: cst.Call) -> Optional[frozenset]:
    """``mocker.patch.object(obj, "encode")``, ``monkeypatch.setattr(obj, "encode", fake)`` (or with
    a dotted path): the name replaced from there on; None for any other call."""
    how = _FIXTURE_PATCHERS.get(dotted(call.func) or "")
    if how == "object":
        return _attribute_argument(call, 1)
    if how == "path":
        return _path_argument(call)
    if how == "multiple":
        return frozenset(a.keyword.value for a in call.args if a.keyword is not None)
    if how == "setattr":
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) == 2:
            return _path_argument(call)  # `monkeypatch.setattr("pkg.codec.encode", fake)`
        return _attribute_argument(call, 1)
    return None


def expects_failure(ctx, call: cst.Call) -> bool:
    """``pytest.raises(E)`` or ``self.assertRaises(E)`` used as a context manager."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _ASSERT_RAISES and \
            isinstance(func.value, cst.Name) and func.value.value == "self":
        return True
    qualified = ctx.imports.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    return qualified in _RAISES


def decorated_patches(ctx, node: cst.FunctionDef) -> frozenset:
    """The names ``@patch.object(...)`` / ``@patch("...")`` decorators of a test replace."""
    names: frozenset = frozenset()
    for decorator in node.decorators:
        if isinstance(decorator.decorator, cst.Call):
            found = patched_names(ctx, decorator.decorator)
            if found:
                names |= found
    return names


def with_names(env: dict, names: frozenset) -> None:
    """Record ``names`` as replaced on this path."""
    held = env.get(PATCHED)
    before = frozenset(held.values) if isinstance(held, Const) else frozenset()
    env[PATCHED] = Const(before | names)


def replaced(env: dict, name: str) -> bool:
    """A call reaching a function of the checked code named ``name`` runs a mock or is expected to
    fail here: its body is not followed."""
    if RAISING in env:
        return True
    held = env.get(PATCHED)
    return isinstance(held, Const) and name in held.values


def _attribute_argument(call: cst.Call, index: int) -> Optional[frozenset]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    named = next((a for a in call.args if a.keyword is not None and a.keyword.value == "attribute"), None)
    arg = positional[index] if len(positional) > index else named
    value = _string(arg.value) if arg is not None else None
    return frozenset([value]) if value is not None and value.isidentifier() else None


def _path_argument(call: cst.Call) -> Optional[frozenset]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    named = next((a for a in call.args if a.keyword is not None and a.keyword.value == "target"), None)
    arg = positional[0] if positional else named
    value = _string(arg.value) if arg is not None else None
    if value is not None and "." in value:
        last = value.rsplit(".", 1)[1]
        return frozenset([last]) if last.isidentifier() else None
    return None


def _string(node) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
