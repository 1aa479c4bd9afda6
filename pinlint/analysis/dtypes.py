"""Constant folding, shapes and dtypes: how big an allocation is, and what a conversion makes.

The facts (dtype sizes and spellings) live in ``rules/api/dtypes.toml``; this module only computes
with them.
"""

from __future__ import annotations

import math

from dataclasses import replace
from typing import Optional

import libcst as cst

from .domain import Const, Host, Items, Scalar, Value, upper_bound


def named_dtype(qualified: str, tables) -> Optional[Value]:
    """``numpy.float32``, ``torch.half``: the dtype constant a library name stands for, else None."""
    head, _, last = qualified.rpartition(".")
    dtypes = tables.dtypes
    if head.split(".")[0] in dtypes.get("modules", ()) and (last in dtypes.get("sizes", {}) or
                                                           last in dtypes.get("attributes", {})):
        return Const.of("dtype:" + last)
    return None


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


def widest_item(value: Value, tables) -> Optional[int]:
    """The largest item size of the dtypes a value may be (``dt`` of a test parametrized over
    ``[torch.float32, torch.bfloat16]``: 4), None unless every one of them is a dtype the tables size."""
    if not isinstance(value, Const) or not value.values:
        return None
    sizes = [item_size(canonical_dtype(Const.of(one), tables), tables) for one in value.values]
    return max(sizes) if sizes and None not in sizes else None


# The widest element a GPU library copies: complex128 (CuPy, Numba and PyTorch have no wider numeric
# type), the bound of an array whose element count is known and whose dtype is not.
WIDEST_ITEM = 16


def size_bound(count: Optional[int], size: Optional[int]) -> Optional[int]:
    """At most how many bytes ``count`` elements (at most that many) of ``size`` bytes, or of an
    unknown dtype, take; None where the count is not known."""
    return count * (size or WIDEST_ITEM) if count is not None else None


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


def element_bound(shape: Value) -> Optional[int]:
    """At most how many elements: ``element_count`` where each dimension may be one of several
    integers (a test parametrized over sizes: ``n`` is 3 or 20), the largest of them."""
    largest = upper_bound  # a bounded loop's variable (`np.zeros(m)` in `for m in range(k)`) too
    if isinstance(shape, (Const, Scalar)):
        return largest(shape)
    if isinstance(shape, Items):
        count = 1
        for item in shape.items:
            size = largest(item)
            if size is None:
                return None
            count *= size
        return count
    return None


def range_length(values: list) -> Optional[int]:
    """The element count of ``arange(*values)`` for constant numeric arguments: ``len(range(...))`` for
    integers, ``ceil((stop - start) / step)`` (at least 0) once one is a float, as NumPy and PyTorch count."""
    numbers = []
    for value in values:
        number = value.single if isinstance(value, Const) else None
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            return None
        numbers.append(number)
    if not 1 <= len(numbers) <= 3 or (len(numbers) == 3 and numbers[2] == 0):
        return None
    if all(isinstance(n, int) for n in numbers):
        return len(range(*numbers))
    start, stop, step = (0, numbers[0], 1) if len(numbers) == 1 else (numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 1)
    try:
        count = math.ceil((stop - start) / step)
    except (OverflowError, ValueError, ZeroDivisionError):  # inf or nan bounds say nothing
        return None
    return max(count, 0)


def range_bound(values: list) -> Optional[int]:
    """At most how many elements ``arange(*values)`` has where its bounds are integers that may each be
    one of a few, or a bounded number (``np.arange(1, 1 + n)`` of a parametrized ``n``): from the
    smallest start to the largest stop, by a constant positive step."""
    if not 1 <= len(values) <= 3:
        return None
    start, stop, step = (Const.of(0), values[0], Const.of(1)) if len(values) == 1 else \
        (values[0], values[1], values[2] if len(values) == 3 else Const.of(1))
    if not (isinstance(start, Const) and start.values and
            all(isinstance(v, int) and not isinstance(v, bool) for v in start.values)):
        return None
    if not (isinstance(step, Const) and isinstance(step.single, int) and not isinstance(step.single, bool)
            and step.single > 0):
        return None
    most = upper_bound(stop)
    if most is None:
        return None
    return max(0, -(-(most - min(start.values)) // step.single))


def has_float(values: list) -> bool:
    return any(isinstance(v, Const) and isinstance(v.single, float) for v in values)


def fold(operator, left: Value, right: Value) -> Optional[Value]:
    if not (isinstance(left, Const) and isinstance(right, Const)):
        return None
    if len(left.values) > 1 or len(right.values) > 1:
        return _fold_each(operator, left, right)
    a, b = left.single, right.single
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))) or isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, float) or isinstance(b, float) or isinstance(operator, cst.Divide):
        return _fold_float(operator, a, b)
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


def _fold_each(operator, left: Const, right: Const) -> Optional[Value]:
    """Numbers that may each be one of a few (a test parametrized over sizes): every result the
    pairs can give, a superset of what the code computes (``n * (n - 1)`` pairs each ``n`` with
    each), which is what bounds need."""
    if len(left.values) * len(right.values) > 16 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (*left.values, *right.values)):
        return None
    results = set()
    for a in left.values:
        for b in right.values:
            one = fold(operator, Const.of(a), Const.of(b))
            if not isinstance(one, Const) or not isinstance(one.single, (int, float)) or isinstance(one.single, bool):
                return None
            results.add(one.single)
    return Const(frozenset(results))


def _fold_float(operator, a, b) -> Optional[Value]:
    """Arithmetic of constants where one is a float or the operator divides (``w = 1 / 5000``,
    ``1 - w / 2``): the float, as Python computes it; anything odd stays unknown."""
    try:
        if isinstance(operator, cst.Add):
            result = a + b
        elif isinstance(operator, cst.Subtract):
            result = a - b
        elif isinstance(operator, cst.Multiply):
            result = a * b
        elif isinstance(operator, cst.Divide):
            result = a / b
        else:
            return None
    except (ZeroDivisionError, OverflowError):
        return None
    return Const.of(float(result)) if math.isfinite(result) else None


def element_total(site, tables) -> Optional[int]:
    """How many elements an allocation holds, where its size and dtype say it."""
    size = item_size(site.dtype, tables)
    return site.nbytes // size if site.nbytes is not None and size else None


def _arrays_and_numbers(operands: list) -> Optional[tuple]:
    """(sites, kinds of the Python numbers) of elementwise operands that are host arrays of one known
    allocation each and Python numbers; None for anything else (a list broadcasts, an unknown operand
    may be an array of any shape)."""
    sites = set()
    numbers = []
    for value in operands:
        if isinstance(value, Host):
            if value.maybe_unknown or value.pointer or len(value.sites) != 1:
                return None
            sites |= value.sites
        elif isinstance(value, Const) and value.values and \
                all(isinstance(v, (int, float, complex)) and not isinstance(v, bool) for v in value.values):
            numbers.append("complex" if any(isinstance(v, complex) for v in value.values) else
                           "float" if any(isinstance(v, float) for v in value.values) else "int")
        elif isinstance(value, Scalar):
            numbers.append(value.kind)
        else:
            return None
    return sites, numbers


def elementwise_size(operands: list, library: str, divides: bool, tables) -> tuple:
    """(nbytes, dtype) of an elementwise result, or (None, None): one host array of known size and
    dtype (or the same one several times), the rest Python numbers. The element count is the
    array's (its allocation's: a view's result is no larger); the dtype is the array's, but for an
    integer array divided or mixed with a float, which gives NumPy's float64 (torch's default float32)."""
    found = _arrays_and_numbers(operands)
    if found is None:
        return None, None
    sites, numbers = found
    counts = {element_total(site, tables) for site in sites}
    if not sites or len(counts) != 1 or None in counts:
        return None, None
    if len(sites) > 1 and any(site.ndim != 1 for site in sites):
        return None, None  # two arrays of one count may broadcast ((64, 1) * (1, 64)); 1-D ones of one length do not
    count = counts.pop()
    dtype = _promoted(sorted({site.dtype for site in sites}), numbers, divides, library)
    new_size = item_size(dtype, tables) if dtype else None
    return (count * new_size, dtype) if new_size else (None, None)


def elementwise_bound(operands: list, tables) -> Optional[int]:
    """At most how many bytes an elementwise result of one host array (or 1-D arrays) and Python
    numbers takes, where ``elementwise_size`` cannot tell its dtype (a test's parametrized dtype): no
    more elements than the largest array has (no more than its bytes), each at most ``WIDEST_ITEM`` bytes."""
    found = _arrays_and_numbers(operands)
    if found is None or not found[0] or len(found[0]) > 1 and any(site.ndim != 1 for site in found[0]):
        return None  # 1-D arrays broadcast to the longest of them; others may make a larger grid
    counts = []
    for site in found[0]:
        count = element_total(site, tables)
        if count is None:
            count = site.nbytes if site.nbytes is not None else site.max_nbytes
        if count is None:
            return None
        counts.append(count)
    return size_bound(max(counts), None)


_KINDS = ("int", "float", "complex")


def _promoted(dtypes: list, numbers: list, divides: bool, library: str) -> Optional[str]:
    """NumPy's (and torch's) dtype of an elementwise result of arrays of ``dtypes`` and Python numbers
    of the kinds ``numbers``: the widest kind and size of the arrays; a Python number only raises the
    kind (NEP 50: `float32 * 2.0` stays float32, `float32 * 1j` is complex64)."""
    if len(dtypes) == 1 and dtypes[0].startswith("bfloat"):
        return dtypes[0] if all(kind != "complex" for kind in numbers) else None
    kinds, bits = [], []
    for dtype in dtypes:
        kind = next((k for k in _KINDS if dtype.startswith(k)), None)
        if kind is None or dtype.startswith("uint") and len(dtypes) > 1:
            return None  # bool arrays, mixed signedness: rules not worth following here
        digits = dtype[len(kind):]
        if not digits.isdigit():
            return None
        kinds.append(kind)
        bits.append(int(digits) // (2 if kind == "complex" else 1))  # a complex's precision: half its bits
    # a number of unknown kind (`h.max()`) counts as a float, as it did for an integer array
    kind = max(kinds + [k if k in _KINDS else "float" for k in numbers], key=_KINDS.index)
    if kind != "complex" and divides:
        kind = "float" if kind == "int" else kind
    precision = max(b for k, b in zip(kinds, bits) if k != "int") if any(k != "int" for k in kinds) else None
    if kind == "int":
        return dtypes[0] if len(dtypes) == 1 else None
    if precision is None:
        precision = 32 if library == "torch" else 64  # an integer array made float (or complex) by a number
    return f"{kind}{precision * (2 if kind == 'complex' else 1)}"


def python_number_operands(operands: list, tables) -> tuple:
    """(python_numbers, nbytes bound) of an elementwise result whose array operands include a tensor of
    Python numbers the code lists (``torch.from_numpy(np.array(lengths)) * scale - 1``, an index
    tensor shifted): its elements correspond to the operands' by broadcasting, so it is no larger
    than the largest operand. Every other operand is a number or an array of known size, which then
    bounds the result (at 8 bytes an element; None when every array is one of Python numbers)."""
    hosts = [v for v in operands if isinstance(v, Host)]
    if not hosts or any(not isinstance(v, (Host, Const, Scalar)) for v in operands) or \
            any(isinstance(v, Const) and not all(isinstance(x, (int, float)) for x in v.values) for v in operands):
        return False, None
    listed = [h for h in hosts if h.sites and all(s.python_numbers for s in h.sites)]
    if not listed or any(h.maybe_unknown or h.pointer or not h.sites for h in hosts):
        return False, None
    bounds = []
    for host in hosts:
        if host in listed:
            continue
        for site in host.sites:
            size = item_size(site.dtype, tables) if site.dtype else None
            if site.nbytes is None:
                return False, None
            bounds.append(site.nbytes // size * 8 if size else site.nbytes * 8)
    return True, (max(bounds) if bounds else None)


def transposed(value: Host) -> Host:
    ndims = {s.ndim for s in value.sites}
    contiguous = value.contiguous if ndims == {1} else (False if ndims and all(n and n >= 2 for n in ndims) else None)
    return replace(value, contiguous=contiguous)


def common(values):
    """The single value all items share, else None."""
    found = set(values)
    return found.pop() if len(found) == 1 else None
