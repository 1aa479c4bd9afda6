"""What an if arm's tests tell of the values they look at (analysis/narrowing.py), and tests that
the tables' classes answer (`isinstance(x, GPUArray)`, `type(x) is np.ndarray`)."""

from __future__ import annotations

import pytest

from helpers import codes, findings, only, row_of, rows

GUARDED_COPY = """
import torch

def general_copy(dst, src):
    if {test}:
        dst.copy_(src, non_blocking=True)
"""


@pytest.mark.parametrize("test, reported", [
    ('src.device.type == "cpu" and dst.is_cuda and not src.is_pinned()', True),
    ('not src.is_pinned() and src.device.type != "cuda" and dst.device.type == "cuda"', True),
    ('not (src.is_pinned() or src.is_cuda or not dst.is_cuda)', True),
    # Each fact alone is not enough: a CUDA tensor is not pinned either, and a copy into a
    # destination of unknown place may be host to host.
    ('src.device.type == "cpu" and dst.is_cuda', False),
    ('dst.is_cuda and not src.is_pinned()', False),
    ('src.device.type == "cpu" and not src.is_pinned()', False),
    # `or` true, `and` false: neither side is known to hold.
    ('src.device.type == "cpu" or dst.is_cuda and not src.is_pinned()', False),
    ('src.is_pinned() and src.device.type == "cpu" and dst.is_cuda', False),
])
def test_a_helpers_own_tests_say_its_source_is_pageable(test, reported):
    src = GUARDED_COPY.format(test=test)
    assert codes(src) == (["PIN001"] if reported else [])


def test_the_finding_names_the_test_as_the_buffers_origin():
    src = GUARDED_COPY.format(test='src.device.type == "cpu" and dst.is_cuda and not src.is_pinned()')
    finding = only(src, "PIN001")
    assert finding.location.row == row_of(src, "dst.copy_")
    assert "the caller: `.is_pinned()` is False at line" in finding.message
    assert [r.location.row for r in finding.related] == [row_of(src, "if ")]


def test_the_other_arm_knows_nothing_more():
    src = """
    import torch

    def general_copy(dst, src):
        if src.device.type == "cpu" and dst.is_cuda and not src.is_pinned():
            src = src.pin_memory()
            dst.copy_(src, non_blocking=True)
        else:
            dst.copy_(src, non_blocking=True)
    """
    # The relay pins a new buffer on every call for one copy (PIN008); the else arm is silent.
    assert rows(src, "PIN008") == [row_of(src, "src.pin_memory()")]
    assert codes(src) == ["PIN008"]


def test_a_known_buffer_is_not_overridden_by_a_test():
    src = """
    import torch

    def f(dst):
        src = torch.empty(1 << 20, pin_memory=True)
        if dst.is_cuda and not src.is_pinned():
            dst.copy_(src, non_blocking=True)
    """
    assert codes(src) == []


def test_isinstance_narrows_an_unknown_parameter():
    src = """
    import numpy as np
    import cupy as cp

    def f(x, out):
        if isinstance(x, cp.ndarray):
            h = np.zeros(1 << 20)
            x.set(h, stream=cp.cuda.Stream(non_blocking=True))
    """
    assert codes(src) == ["PIN001"]


CALLEE_GUARD = """
import numpy as np
import pycuda.autoinit
import pycuda.gpuarray as gpuarray
import pycuda.driver as drv

def upload(x, stream):
    if {test}:
        x = gpuarray.to_gpu_async(x, stream=stream)
    return x

def run(n):
    s = drv.Stream()
    upload({argument}, s)
"""


@pytest.mark.parametrize("test", ["type(x) != gpuarray.GPUArray", "not isinstance(x, gpuarray.GPUArray)",
                                  "type(x) is not gpuarray.GPUArray",
                                  "not isinstance(x, (gpuarray.GPUArray, gpuarray.GPUArray))"])
@pytest.mark.parametrize("argument, reported", [
    ("gpuarray.empty((n,), dtype=np.float32)", False),   # the upload branch is dead for a GPUArray
    ("np.zeros((n, 1024), dtype=np.float32)", True),
])
def test_a_callees_type_test_decides_its_branch_for_each_caller(test, argument, reported):
    # Only a caller's context says what `x` is: a GPUArray never reaches the upload.
    src = CALLEE_GUARD.format(test=test, argument=argument)
    assert rows(src, "PIN001") == ([row_of(src, "upload(np.zeros")] if reported else [])


@pytest.mark.parametrize("value, cls, expected", [
    ("np.zeros(3)", "np.ndarray", True),
    ("np.zeros(3)", "cp.ndarray", False),
    ("cp.zeros(3)", "cp.ndarray", True),
    ("cp.zeros(3)", "np.ndarray", False),
    ("torch.zeros(3)", "torch.Tensor", True),
    ("torch.zeros(3)", "np.ndarray", False),
    ("[1, 2]", "np.ndarray", False),
    ("unknown()", "np.ndarray", None),
    ("np.zeros(3)", "SomeClass", None),
])
@pytest.mark.parametrize("spelling", ["isinstance(v, {cls})", "type(v) is {cls}", "type(v) == {cls}"])
def test_instance_checks_answer_from_provenance(value, cls, expected, spelling):
    # An arm the answer rules out is dead: its pageable async copy is not reported.
    def arms(negate: bool) -> bool:
        test = spelling.format(cls=cls)
        src = f"""
        import numpy as np
        import cupy as cp
        import torch

        class SomeClass:
            pass

        def f(unknown):
            v = {value}
            if {'not ' if negate else ''}{test}:
                h = np.zeros(1 << 20)
                d = cp.empty(1 << 20)
                d.set(h, stream=cp.cuda.Stream(non_blocking=True))
        """
        return codes(src) == ["PIN001"]
    assert (arms(False), arms(True)) == {True: (True, False), False: (False, True), None: (True, True)}[expected]


# ------------------------------------------------------------------ a tensor's device, from its memory
_MOVE = """
import torch

def move(t, device, non_blocking=False):
    device = torch.device(device)
    if t.device == device:
        return t
    if t.device.type == "cpu":
        return t.to(device, non_blocking=True)       # the CPU arm
    if device.type == "cpu":
        return t.to(device, non_blocking=True)       # device to host
    return t.to(device, non_blocking=True)           # device to device

def main():
    x = {alloc}
    return move(x, {target})
"""


@pytest.mark.parametrize("alloc, target, arm", [
    ("torch.randn(4096, 4096)", '"cuda:0"', "# the CPU arm"),       # one finding, not one per site
    ("torch.randn(4096, 4096)", '"cpu"', None),                      # t.device == device: returned as is
    ("torch.randn(4096, 4096, device='cuda')", '"cpu"', None),     # D2H of device memory: no PIN001
])
def test_a_tensors_device_decides_a_move_helpers_arms(alloc, target, arm):
    src = _MOVE.format(alloc=alloc, target=target)
    found = [f for f in findings(src) if f.code == "PIN001"]
    assert [f.location.row for f in found] == ([row_of(src, "move(x,")] if arm else [])
    if arm:
        assert f"line {row_of(src, arm)}" in found[0].message


@pytest.mark.parametrize("test, reported", [
    ("x.is_cuda", False),
    ("not x.is_cuda", True),
    ("x.device.type == 'cuda'", False),
    ("x.device.type != 'cuda'", True),
])
def test_a_known_cpu_tensors_device_tests(test, reported):
    src = f"""
    import torch
    def f():
        x = torch.randn(4096, 4096)
        if {test}:
            y = x.to("cuda", non_blocking=True)
    """
    assert codes(src) == (["PIN001"] if reported else [])


@pytest.mark.parametrize("made, reported", [
    ("np.random.rand(64, 64)", False),       # 2-D: the helper never loops
    ("np.random.rand(8, 64, 64)", True),     # a stack: one copy per matrix
    ("np.random.rand(64, 64)[None]", True),  # another ndim nothing here tells: both arms
    ("np.ravel(np.random.rand(64, 64))", True),
])
def test_an_arrays_ndim_decides_a_helpers_branch(made, reported):
    src = f"""
    import numpy as np, cupy as cp
    def contract(grid, dm):
        return cp.asarray(grid).sum() * cp.asarray(dm).sum()
    def contract_all(grid, dm):
        if dm.ndim == 2:
            return contract(grid, dm)
        return [contract(grid, dm[k]) for k in range(dm.shape[0])]
    def caller():
        grid = np.random.rand(200000, 3)
        contract_all(grid, {made})
    """
    assert bool(rows(src, "PIN007")) is reported


@pytest.mark.parametrize("part, apis", [
    ("buf[:10]", ["cupy.ndarray.set"]),          # contiguous: the set() arm only
    ("buf.T", ["cupy.asarray"]),                 # a transpose: the asarray() arm only
    ("buf[::2]", ["cupy.asarray", "cupy.ndarray.set"]),  # nothing tells: both
])
def test_an_arrays_contiguity_decides_a_helpers_branch(part, apis):
    src = f"""
    import numpy as np, cupy as cp
    def fast_upload(a):
        if a.flags.c_contiguous:
            d = cp.empty_like(a)
            d.set(a)
            return d
        return cp.asarray(a)

    def caller():
        buf = np.empty((48, 100000))
        for step in range(9):
            buf[:] = step
            fast_upload({part})
    """
    # One finding for the buffer at the call; the helper's other copy of it is a related location.
    (found,) = [f for f in findings(src) if f.code == "PIN007"]
    texts = [found.message] + [r.message for r in found.related]
    assert sorted(api for api in ("cupy.asarray", "cupy.ndarray.set") for text in texts if f"`{api}`" in text) == apis
    assert ("(and 1 more copy of it through this call)" in found.message) == (len(apis) == 2)


def test_a_size_that_is_a_number_makes_a_one_dimensional_array():
    # np.random.uniform(..., grid.shape[0]): 1-D, so the helper's `charges.ndim == 1` arm is the one.
    src = """
    import numpy as np, cupy as cp
    def helper(grid, charges):
        if charges.ndim == 1:
            return cp.asarray(charges)
        return [cp.asarray(grid) for i in range(charges.shape[0])]
    def caller(grid):
        grid = np.random.rand(200000, 3)
        helper(grid, np.random.uniform(-2.0, 2.0, grid.shape[0]))
    """
    assert rows(src, "PIN007") == []


@pytest.mark.parametrize("test", [
    "cp.get_array_module(update) is not np",
    "not (cp.get_array_module(update) is np)",
    "cp.get_array_module(update, value) != np",
])
@pytest.mark.parametrize("update, reported", [
    ("np.random.rand(1024, 1024)", False),        # NumPy updates: the CuPy arm never runs
    ("cp.random.rand(1024, 1024)", True),         # a CuPy update moves the state to the GPU each time
])
def test_get_array_module_of_the_callers_arrays_decides_a_helpers_branch(test, update, reported):
    src = f"""
    import numpy as np
    import cupy as cp
    def push(update, value):
        if {test}:
            value = cp.array(value)
        return value
    def run():
        target = {update}
        state = np.random.rand(1024, 1024)
        for _ in range(100):
            push(target, state)
    """
    assert ("PIN007" in codes(src)) is reported


@pytest.mark.parametrize("test, reported", [
    ("on_gpu(u) and flag", False),     # False and ...: the right side never runs, the arm is dead
    ("flag and on_gpu(u)", False),
    ("not on_gpu(u) or flag", None),   # True or ...: the arm runs (for a NumPy u); whether flag is set is unknown
    ("on_gpu(u) or flag", None),
])
def test_and_or_of_a_decided_test_are_decided(test, reported):
    src = f"""
    import numpy as np
    import cupy as cp
    def on_gpu(a):
        return cp.get_array_module(a) is not np
    def push(u, state, flag):
        if {test}:
            state = cp.array(state)
        return state
    def run(flag):
        u = np.random.rand(1024, 1024)
        state = np.random.rand(1024, 1024)
        for _ in range(10):
            push(u, state, flag)
    """
    found = "PIN007" in codes(src)
    if reported is None:
        assert found    # the copy may run on every call
    else:
        assert found is reported


_PLACED = """
import torch

class Loader:
    def __init__(self, offload):
        self.offload = offload

    def distribute(self, shapes, target_device=None):
        target = "cpu" if self.offload else "cuda"
        out = {name: torch.empty(shape, device=target) for name, shape in shapes.items()}
        single = torch.empty(8, device=target)
        for name in sorted(shapes):
            if target == "cpu":
                gpu_t = torch.randn(shapes[name], device="cuda")
                out[name].copy_(gpu_t.cpu(), non_blocking=True)  # host to host
                single.copy_(gpu_t.cpu(), non_blocking=True)  # host to host too
            else:
                out[name].copy_(torch.randn(shapes[name]), non_blocking=True)  # to the GPU
        if "cuda" != target:
            single.copy_(torch.randn(8), non_blocking=True)
        return out
"""


def test_a_test_of_the_variable_that_placed_a_tensor_places_it_on_the_cpu():
    """`target = "cpu" if offload else "cuda"` places buffers with `device=target`, taken as the GPU's
    (the code's intent); inside `if target == "cpu":` they are CPU tensors, so `dst.copy_(t.cpu(),
    non_blocking=True)` is a host-to-host copy (LightX2V's rank-0 weight broadcast, survey 17: two
    false PIN001s), even after a loop joined them with what the arm made of them."""
    assert rows(_PLACED, "PIN001") == [row_of(_PLACED, "# to the GPU")]


@pytest.mark.parametrize("dst, reported", [
    ("torch.as_tensor(img)", False),   # a tensor: the torch arm, never CuPy's upload
    ("other", True),                   # nothing says: every arm
])
def test_a_dispatch_on_the_class_of_a_known_value_takes_its_arm(dst, reported):
    """MONAI converts a helper's array to "the type of" a destination: `isinstance` picks a class,
    then `issubclass` of that class picks the conversion. The destination is a tensor, so the CuPy
    arm, a re-upload of the same pageable array on each iteration, never runs."""
    src = f"""
    import numpy as np
    import cupy as cp
    import torch

    def convert(data, output_type):
        if issubclass(output_type, torch.Tensor):
            return torch.as_tensor(data)
        elif issubclass(output_type, cp.ndarray):
            return cp.asarray(data)
        raise ValueError(output_type)

    def like(src, dst):
        if isinstance(dst, torch.Tensor):
            kind = torch.Tensor
        elif isinstance(dst, np.ndarray):
            kind = np.ndarray
        else:
            kind = type(dst)
        return convert(src, kind)

    def run(keys, img, other, n):
        t = {dst}
        pts = np.copy(np.linspace(0, 1, n))
        for k in keys:
            like(pts, t)
    """
    assert ("PIN007" in [f.code for f in findings(src)]) == reported


# A project's own "is this on the GPU" predicate, guarded by a try whose body cannot raise (mri-nufft's
# `is_cuda_array`): the dispatch it drives is decided by what the caller passes.
CUDA_PREDICATE = """
import numpy as np
import cupy as cp


def is_cuda_array(var) -> bool:
    try:
        return {check}
    except Exception:
        return False


class Op:
    def __init__(self, n):
        self.n = n

    def _adj_host(self, coeffs):
        img = np.zeros((4, self.n), dtype=np.complex64)
        cp.cuda.runtime.hostRegister(img.ctypes.data, img.nbytes, 0)
        return img

    def _adj_device(self, coeffs):
        return cp.zeros((4, self.n), dtype=np.complex64)

    def adj_op(self, coeffs):
        if is_cuda_array(coeffs):
            f = self._adj_device
        else:
            f = self._adj_host
        return f(coeffs)


def pipe(n, iters=10):
    op = Op(n)
    d = {data}
    for _ in range(iters):
        s = op.adj_op(d).sum()
    return s
"""


@pytest.mark.parametrize("data, reported", [
    ("cp.ones(n, dtype=np.complex64)", False),   # a CuPy array: the device arm only
    ("np.ones(n, dtype=np.complex64)", True),    # a NumPy array: the host arm registers every call
])
def test_a_cuda_interface_predicate_decides_the_dispatch(data, reported):
    src = CUDA_PREDICATE.format(check='hasattr(var, "__cuda_array_interface__")', data=data)
    assert codes(src) == (["PIN002"] if reported else [])


def test_a_predicate_whose_try_body_may_raise_keeps_its_handler():
    # `var.__cuda_array_interface__ is not None` may raise: the handler's False joins, the test is
    # unknown, and both arms stay (the host arm's registration in the loop is reported)
    src = CUDA_PREDICATE.format(check='var.__cuda_array_interface__ is not None',
                                data="cp.ones(n, dtype=np.complex64)")
    assert codes(src) == ["PIN002"]


@pytest.mark.parametrize("check", [
    'hasattr(x, "__cuda_array_interface__")',
    'isinstance(x, (cupy.ndarray, numpy.ndarray)) and x is not None',
])
def test_cannot_raise_accepts_only_plain_tests(check):
    import libcst as cst
    from pinlint.analysis.cfg import cannot_raise
    assert cannot_raise(cst.parse_module(f"return {check}\n").body)
    for body in ("return x.cache\n", "unicode\n", "return f(x)\n", "return x == y\n", "y = x[0]\n",
                 "return x.a is None\n", "return isinstance(x.a, np.ndarray)\n", "x = y\n", "return y\n"):
        assert not cannot_raise(cst.parse_module(body).body), body


def test_a_try_probing_a_name_keeps_its_name_error_handler():
    src = """
    import numpy as np
    import cupy as cp

    def load(n, steps):
        h = np.zeros(1 << 24, dtype=np.float32)
        try:
            ok = isinstance(h, np.ndarray)
        except NameError:
            for _ in range(steps):
                d = cp.asarray(h)
        return ok
    """
    assert codes(src) == ["PIN007"]
