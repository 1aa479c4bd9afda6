"""Closures: lambdas and nested functions carry what they read from the function that makes them.

A lambda that calls something is a function of the checked code; a lambda or nested function keeps the
values of the enclosing function's variables that are bound once before it (and the constants of
parameters never rebound), so wherever it is called (by a timing helper, a retry wrapper) its body
runs on those buffers. A variable bound more than once (late binding: the closure reads it when it
runs) stays unknown.
"""

from __future__ import annotations

import functools
import textwrap

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


_TIMED = """
import time
import numpy as np
from numba import cuda

LATER = []


def timed(fn):
    t0 = time.time()
    {use}
    cuda.synchronize()
    return time.time() - t0


def measure(n, split):
    src = np.random.rand(n).astype(np.float32)
    if not split:
        out = np.empty_like(src)
        d = cuda.to_device(src)
        s = cuda.stream()
        timed(lambda: d.copy_to_host(out, stream=s))
    else:
        out = cuda.pinned_array(n, dtype=np.float32)
        d = cuda.to_device(src)
        s = cuda.stream()
        timed(lambda: d.copy_to_host(out, stream=s))
"""


@pytest.mark.parametrize("use, reported", [
    ("fn()", True),               # called during the call: the variables as they are where it is made
    ("LATER.append(fn)", False),  # kept to run later, when they may hold something else
])
def test_a_lambda_over_variables_bound_twice_run_at_once_sees_them_as_they_are(use, reported):
    # median-cuda's timing helper (survey 45): `timed(lambda: d.copy_to_host(out, stream=s))` on each
    # arm of an `if`, each arm binding its own `out`: the pageable one is copied asynchronously.
    src = textwrap.dedent(_TIMED.format(use=use)).lstrip("\n")
    first = [i + 1 for i, line in enumerate(src.splitlines()) if "timed(lambda" in line][0]
    assert rows(src, "PIN001") == ([first] if reported else [])


def test_a_lambda_kept_in_a_name_reads_its_variables_when_it_runs():
    # `f = lambda: ...` then a rebinding, then `f()`: the lambda reads the pinned buffer bound last.
    src = textwrap.dedent("""
        import numpy as np
        from numba import cuda


        def download(n, d, s, pinned):
            res = np.empty(n, dtype=np.float32)
            if pinned:
                res = np.empty(n, dtype=np.float32)
            f = lambda: d.copy_to_host(res, stream=s)
            res = cuda.pinned_array(n, dtype=np.float32)
            f()
        """)
    assert rows(src, "PIN001") == []


_FACTORY = """
import numpy as np
import torch


def make_preprocessor(device):
    return lambda frame: {body}


def run():
    prep = make_preprocessor(torch.device("cuda"))
    frame = np.random.rand(4, 84, 84)
    for _ in range(100):
        state = prep(frame)
        print(state.shape)
"""


@pytest.mark.parametrize("body, where", [
    # a new pageable tensor it makes itself, copied asynchronously: its own finding, as in a `def`
    ("torch.tensor(frame).float().to(device, non_blocking=True)", "return lambda"),
    # what it is given: the call that passes the pageable frame, where the evidence meets
    ("torch.from_numpy(frame).to(device, non_blocking=True)", "state = prep(frame)"),
    ("torch.tensor(frame, pin_memory=True).to(device, non_blocking=True)", None),
    ("torch.tensor(frame).to(device)", None),
])
def test_a_returned_lambda_is_analysed_as_a_function_of_its_own(body, where):
    """A factory returns a lambda that is called per step (ReAgent's observation preprocessor, survey
    56 FB): the copy of memory the lambda allocates is reported in the lambda, as for a nested ``def``
    (the calls' analyses leave a callee's own buffers to it, and a lambda had no analysis of its own)."""
    src = _FACTORY.format(body=body)
    assert rows(src, "PIN001") == ([row_of(src, where)] if where else [])


def test_two_lambdas_of_one_function_each_report_their_own_copy_and_their_fix_is_not_safe():
    """Both are ``f.<locals>.<lambda>``: a fix cannot look the scope of a site up by that name, so it is
    offered as unsafe, never safe on the other lambda's facts."""
    src = """
import torch


def f(dev):
    a = lambda x: torch.tensor(x).to(dev, non_blocking=True)
    b = lambda y: torch.tensor(y * 2).to(dev, non_blocking=True)
    return a, b
"""
    found = helpers.findings(src)
    assert sorted(f.location.row for f in found if f.code == "PIN001") == [row_of(src, "a = lambda"),
                                                                           row_of(src, "b = lambda")]
    assert all(f.fix is None or f.fix.applicability != "safe" for f in found)


def test_a_module_level_lambda_that_only_names_other_things_is_not_analysed_alone():
    src = """
import torch

key = lambda item: len(item)
pick = lambda d, dev: d.to(dev, non_blocking=True)
"""
    assert codes(src) == []
