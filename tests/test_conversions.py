"""Conversions: a new pageable buffer when they copy, the same memory when they provably do not."""

from __future__ import annotations

import textwrap

import pytest

from pinlint.engine import lint_text
from pinlint.settings import Settings

HEAD = """
import numpy as np, cupy as cp, cupyx, torch
d = cp.empty(1024, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
p = cupyx.empty_pinned(1024, dtype=np.float32)
t = torch.empty(1024, pin_memory=True)
"""


def codes(tail: str) -> list:
    # Which conversions make new pageable memory, written with small buffers: the size thresholds
    # (which now see a conversion's size) have their own tests.
    settings = Settings(pin001_min_bytes=0, pin007_min_bytes=0)
    return [f.code for f in lint_text(HEAD + textwrap.dedent(tail), "t.py", settings).findings]


@pytest.mark.parametrize("expression, reported", [
    ("p.astype(np.float32)", True),                    # astype copies by default, even to the same dtype
    ("p.astype(np.float64)", True),
    ("p.astype('f4', copy=False)", False),             # same dtype, copy=False: the pinned buffer itself
    ("p.astype(np.float16, copy=False)", True),        # a real conversion copies
    ("np.random.rand(1024).astype(dtype=np.float32)", True),
    ("np.ascontiguousarray(p)", False),                # already contiguous: the same memory
    ("np.ascontiguousarray(p[::2])", False),           # layout unknown: maybe a copy, maybe not (quiet)
])
def test_numpy_conversions(expression, reported):
    assert ("PIN001" in codes(f"d.set({expression}, stream=s)\n")) is reported


@pytest.mark.parametrize("expression, reported", [
    ("t.float()", False),            # float32 already: torch returns the tensor itself
    ("t.half()", True),
    ("t.to(torch.float32)", False),
    ("t.to(torch.float16)", True),
    ("t.double()", True),
])
def test_torch_conversions(expression, reported):
    assert ("PIN001" in codes(f"y = {expression}.to('cuda', non_blocking=True)\n")) is reported
