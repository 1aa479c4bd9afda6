"""Constant folding, shapes and dtypes: how big an allocation is, and what a conversion makes.

The facts (dtype sizes and spellings) live in ``rules/api/dtypes.toml``; this module only computes
with them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from .domain import Const, Host, Items, Value


def canonical_dtype(value: Value, tables) -> Optional[str]:
    """``np.float32``, ``torch.half``, ``"f4"``, ``"<f8"``, ``float`` -> a canonical name, else None."""
    if not isinstance(value, Const) or not isinstance(value.single, str):
        return None
    dtypes = tables.dtypes
    text = value.single
    sizes = dtypes.get("sizes", {})
    if text.startswith("dtype:"):
        name = text[6:]
        return name if name in sizes else dtypes.get("attributes", {}).get(name)
    if text.startswith("pytype:"):
        return dtypes.get("python", {}).get(text[7:])
    code = text.lstrip("<>=|")
    return code if code in sizes else dtypes.get("codes", {}).get(code)


def item_size(dtype: Optional[str], tables) -> Optional[int]:
    return tables.dtypes.get("sizes", {}).get(dtype) if dtype else None


def element_count(shape: Value) -> Optional[int]:
    if isinstance(shape, Const) and isinstance(shape.single, int) and not isinstance(shape.single, bool):
        return shape.single
    if isinstance(shape, Items):
        count = 1
        for item in shape.items:
            if not (isinstance(item, Const) and isinstance(item.single, int) and not isinstance(item.single, bool)):
                return None
            count *= item.single
        return count
    return None


def range_length(values: list) -> Optional[int]:
    """len(range(*values)) for constant integer arguments (np.arange's element count)."""
    numbers = []
    for value in values:
        if not (isinstance(value, Const) and isinstance(value.single, int) and not isinstance(value.single, bool)):
            return None
        numbers.append(value.single)
    if not 1 <= len(numbers) <= 3 or (len(numbers) == 3 and numbers[2] == 0):
        return None
    return len(range(*numbers))


def fold(operator, left: Value, right: Value) -> Optional[Value]:
    if not (isinstance(left, Const) and isinstance(right, Const)):
        return None
    a, b = left.single, right.single
    if not (isinstance(a, int) and isinstance(b, int)) or isinstance(a, bool) or isinstance(b, bool):
        return None
    try:
        if isinstance(operator, cst.Add):
            return Const.of(a + b)
        if isinstance(operator, cst.Subtract):
            return Const.of(a - b)
        if isinstance(operator, cst.Multiply):
            return Const.of(a * b)
        if isinstance(operator, cst.FloorDivide):
            return Const.of(a // b)
        if isinstance(operator, cst.LeftShift) and 0 <= b < 64:
            return Const.of(a << b)
        if isinstance(operator, cst.RightShift) and b >= 0:
            return Const.of(a >> b)
        if isinstance(operator, cst.BitOr):
            return Const.of(a | b)
        if isinstance(operator, cst.BitAnd):
            return Const.of(a & b)
        if isinstance(operator, cst.Power) and 0 <= b < 64:
            return Const.of(a ** b)
    except ZeroDivisionError:
        return None
    return None


def transposed(value: Host) -> Host:
    ndims = {s.ndim for s in value.sites}
    contiguous = value.contiguous if ndims == {1} else (False if ndims and all(n and n >= 2 for n in ndims) else None)
    return replace(value, contiguous=contiguous)


def common(values):
    """The single value all items share, else None."""
    found = set(values)
    return found.pop() if len(found) == 1 else None
