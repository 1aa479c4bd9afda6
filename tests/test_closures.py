"""Closures: lambdas and nested functions carry what they read from the function that makes them.

A lambda that calls something is a function of the checked code; a lambda or nested function keeps the
values of the enclosing function's variables that are bound once before it (and the constants of
parameters never rebound), so wherever it is called (by a timing helper, a retry wrapper) its body
runs on those buffers. A variable bound more than once (late binding: the closure reads it when it
runs) stays unknown.
"""

from __future__ import annotations

import functools

import pytest

import helpers
from helpers import codes, row_of, rows
from pinlint.settings import Settings


@pytest.fixture(autouse=True)
def _every_size(monkeypatch):
    monkeypatch.setattr(helpers, "Settings", functools.partial(Settings, pin001_min_bytes=0))


NUMBA = """
import numpy as np
from numba import cuda


def timed(fn):
    cuda.synchronize()
    fn()
    cuda.synchronize()


def download():
    d_out = cuda.device_array(1 << 20)
    res = {alloc}
    s = cuda.stream()
    {call}
    return res
"""

PAGEABLE = "np.empty(1 << 20)"
PINNED = "cuda.pinned_array(1 << 20)"


@pytest.mark.parametrize("call", [
    "timed(lambda: d_out.copy_to_host(res, stream=s))  # here",
    "f = lambda: d_out.copy_to_host(res, stream=s)\n    timed(f)  # here",
    "f = lambda: d_out.copy_to_host(res, stream=s)\n    f()  # here",
    "def go():\n        d_out.copy_to_host(res, stream=s)\n    timed(go)  # here",
])
def test_a_closure_called_by_a_helper_copies_the_buffer_it_captured(call):
    src = NUMBA.format(alloc=PAGEABLE, call=call)
    assert rows(src, "PIN001") == [row_of(src, "# here")], src
    assert "PIN001" not in codes(NUMBA.format(alloc=PINNED, call=call))


@pytest.mark.parametrize("call", [
    # bound again after the lambda is made: the copy reads whichever the name holds when it runs
    "f = lambda: d_out.copy_to_host(res, stream=s)\n    res = cuda.pinned_array(1 << 20)\n    timed(f)",
    # the loop's variable: each closure reads its last value
    "fs = []\n    for h in (res, res):\n        fs.append(lambda: d_out.copy_to_host(h, stream=s))\n"
    "    timed(fs[0])",
    # a nested function may rebind it
    "def go():\n        nonlocal res\n        res = cuda.pinned_array(1 << 20)\n"
    "        d_out.copy_to_host(res, stream=s)\n    timed(go)",
])
def test_a_variable_the_closure_may_see_rebound_is_not_captured(call):
    src = NUMBA.format(alloc=PAGEABLE, call=call)
    assert "PIN001" not in codes(src), src


def test_torch_lambda_through_a_retry_helper_in_another_function():
    src = """
import torch


def retry(fn, times=3):
    for _ in range(times):
        try:
            return fn()
        except RuntimeError:
            pass


def upload(device):
    host = torch.randn(1 << 20)
    return retry(lambda: host.to(device, non_blocking=True))  # here
"""
    assert rows(src, "PIN001") == [row_of(src, "# here")]


def test_a_lambda_that_calls_nothing_is_unknown_and_harmless():
    src = """
import torch


def order(batches, device):
    batches = sorted(batches, key=lambda b: b[0])
    pick = lambda b: b
    return [pick(b).to(device, non_blocking=True) for b in batches]
"""
    assert codes(src) == []
