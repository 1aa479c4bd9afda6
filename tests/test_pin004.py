"""PIN004 mapped-memory-reread: zero-copy mapped host memory read by kernels inside a loop.

Numba (``mapped_array``, ``with cuda.mapped(...)``, ``@cuda.jit`` with and without arguments, the
``numba.cuda as nc`` alias), PyCUDA (DEVICEMAP + ``get_device_pointer`` + ``SourceModule``), CuPy
(``hostAlloc`` mapped, its pointer passed to a ``RawKernel``), cuda-python (``cudaHostAlloc``
mapped + ``cudaHostGetDevicePointer`` into ``cuLaunchKernel``'s ``kernelParams``); and what stays quiet.
"""

from __future__ import annotations

import pytest

from helpers import codes, col_of, only, row_of, rows

# ===================================================================== Numba
NUMBA_KERNEL = {
    "plain": ("from numba import cuda", "@cuda.jit", "cuda"),
    "signature": ("from numba import cuda", "@cuda.jit('void(float32[:])')", "cuda"),
    "options": ("from numba import cuda", "@cuda.jit(device=False, fastmath=True)", "cuda"),
    "nc": ("import numba.cuda as nc", "@nc.jit", "nc"),
    "nc-signature": ("import numba.cuda as nc", "@nc.jit(['void(float32[:])'])", "nc"),
    "numba.cuda": ("import numba.cuda", "@numba.cuda.jit", "numba.cuda"),
}


def _numba(variant: str, tail: str) -> str:
    imports, decorator, mod = NUMBA_KERNEL[variant]
    return (f"import numpy as np\n{imports}\n{decorator}\ndef k(a):\n    a[0] = 1\n"
            + tail.replace("MOD", mod))


@pytest.mark.parametrize("variant", list(NUMBA_KERNEL))
@pytest.mark.parametrize("loop", ["for i in range(10):", "while running():"])
def test_numba_mapped_array_launched_in_a_loop_is_reported_at_the_launch(variant, loop):
    src = _numba(variant, f"h = MOD.mapped_array(1 << 20, dtype=np.float32)\n{loop}\n    k[4096, 256](h)\n")
    f = only(src, "PIN004")
    assert (f.location.row, f.location.column) == (row_of(src, "k[4096, 256](h)"), col_of(src, "k[4096, 256](h)"))
    assert "Kernel `k`" in f.message and "numba.cuda.mapped_array" in f.message
    assert f"at line {row_of(src, 'mapped_array(')}" in f.message
    assert [r.location.row for r in f.related] == [row_of(src, "mapped_array(")]


@pytest.mark.parametrize("variant", list(NUMBA_KERNEL))
def test_numba_mapped_array_launched_once_is_quiet(variant):
    src = _numba(variant, "h = MOD.mapped_array(1 << 20, dtype=np.float32)\nk[4096, 256](h)\n")
    assert codes(src) == []


def test_numba_mapped_array_like_with_stream_launch_and_extra_args():
    src = _numba("plain", "ref = np.zeros(1024, np.float32)\ns = cuda.stream()\nh = cuda.mapped_array_like(ref)\n"
                          "for i in range(10):\n    k[4, 256, s](h)\n")
    assert rows(src, "PIN004") == [row_of(src, "k[4, 256, s](h)")]


def test_numba_launch_of_a_view_of_mapped_memory_is_reported():
    src = _numba("plain", "h = cuda.mapped_array((64, 64), dtype=np.float32)\n"
                          "for i in range(10):\n    k[4, 256](h[0:32])\n    k[4, 256](h.T)\n")
    assert rows(src, "PIN004") == [row_of(src, "h[0:32]"), row_of(src, "h.T")]


def test_numba_nested_loops_report_once_per_launch():
    src = _numba("plain", "h = cuda.mapped_array(1024)\nfor e in range(3):\n    for i in range(10):\n"
                          "        k[4, 256](h)\n")
    assert rows(src, "PIN004") == [row_of(src, "k[4, 256](h)")]


def test_numba_device_arrays_in_the_loop_are_quiet():
    src = _numba("plain", "d = cuda.to_device(np.zeros(1024))\ne = cuda.device_array(1024)\n"
                          "for i in range(10):\n    k[4, 256](d)\n    k[4, 256](e)\n")
    assert codes(src) == []


def test_numba_pinned_and_pageable_arrays_in_the_loop_are_not_pin004():
    src = _numba("plain", "p = cuda.pinned_array(1024)\nh = np.zeros(1024)\ng = cuda.managed_array(1024)\n"
                          "for i in range(10):\n    k[4, 256](p)\n    k[4, 256](h)\n    k[4, 256](g)\n")
    assert "PIN004" not in codes(src)


def test_numba_mapped_array_allocated_inside_the_loop_is_quiet():
    src = _numba("plain", "for i in range(10):\n    h = cuda.mapped_array(1024)\n    k[4, 256](h)\n")
    assert "PIN004" not in codes(src)
    assert "PIN002" in codes(src)  # the allocation itself is the problem there


def test_numba_a_different_mapped_buffer_each_iteration_is_quiet():
    src = _numba("plain", "a = cuda.mapped_array(1024)\nb = cuda.mapped_array(1024)\n"
                          "for h in (a, b):\n    k[4, 256](h)\n")
    assert codes(src) == []


def test_numba_mapped_array_passed_to_a_plain_function_in_a_loop_is_quiet():
    src = """
    import numpy as np
    from numba import cuda
    def host_side(a):
        a[0] = 1
    h = cuda.mapped_array(1024)
    for i in range(10):
        host_side(h)
        print(h[0])
    """
    assert "PIN004" not in codes(src)


def test_numba_unknown_kernel_object_is_quiet():
    src = """
    import numpy as np
    from numba import cuda
    kern = load_kernel()
    h = cuda.mapped_array(1024)
    for i in range(10):
        kern[4, 256](h)
    """
    assert "PIN004" not in codes(src)


@pytest.mark.parametrize("imports, mod", [("from numba import cuda", "cuda"), ("import numba.cuda as nc", "nc")])
def test_numba_with_mapped_around_a_loop_of_launches_is_reported(imports, mod):
    src = f"""
    import numpy as np
    {imports}
    @{mod}.jit
    def k(a):
        a[0] = 1
    x = np.zeros(1 << 20, dtype=np.float32)
    with {mod}.mapped(x) as d:
        for i in range(10):
            k[4096, 256](d)
    """
    f = only(src, "PIN004")
    assert f.location.row == row_of(src, "k[4096, 256](d)")
    assert "numba.cuda.mapped" in f.message
    assert [r.location.row for r in f.related] == [row_of(src, f"{mod}.mapped(x)")]


def test_numba_with_mapped_inside_the_loop_is_not_pin004():
    src = _numba("plain", "x = np.zeros(1024)\nfor i in range(10):\n    with cuda.mapped(x) as d:\n"
                          "        k[4, 256](d)\n")
    assert "PIN004" not in codes(src)


def test_numba_with_mapped_block_ends_before_the_loop():
    src = _numba("plain", "x = np.zeros(1024)\nwith cuda.mapped(x) as d:\n    k[4, 256](d)\n"
                          "for i in range(10):\n    k[4, 256](x)\n")
    assert "PIN004" not in codes(src)


def test_numba_launch_in_a_loop_inside_a_function_with_a_mapped_class_attribute():
    src = """
    import numpy as np
    from numba import cuda
    @cuda.jit
    def k(a):
        a[0] = 1
    class Solver:
        def __init__(self, n):
            self.h = cuda.mapped_array(n, dtype=np.float32)
        def run(self, steps):
            for i in range(steps):
                k[4, 256](self.h)
    """
    assert rows(src, "PIN004") == [row_of(src, "k[4, 256](self.h)")]


# ==================================================================== PyCUDA
PYCUDA = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
from pycuda.compiler import SourceModule
mod = SourceModule("__global__ void k(float *a) {}")
k = mod.get_function("k")
"""


@pytest.mark.parametrize("flags", ["drv.host_alloc_flags.DEVICEMAP",
                                   "drv.host_alloc_flags.DEVICEMAP | drv.host_alloc_flags.PORTABLE",
                                   "drv.host_alloc_flags.DEVICEMAP | drv.host_alloc_flags.WRITECOMBINED", "2"])
def test_pycuda_devicemap_pointer_launched_in_a_loop(flags):
    src = PYCUDA + f"h = drv.pagelocked_empty(1 << 20, np.float32, mem_flags={flags})\n" \
                   "p = h.base.get_device_pointer()\nfor i in range(10):\n" \
                   "    k(p, block=(256, 1, 1), grid=(4096, 1))\n"
    f = only(src, "PIN004")
    assert (f.location.row, f.location.column) == (row_of(src, "    k(p,"), 5)
    assert "pycuda.driver.pagelocked_empty" in f.message


def test_pycuda_register_host_memory_devicemap_launched_in_a_loop():
    src = PYCUDA + "a = np.zeros(1 << 20, np.float32)\n" \
                   "h = drv.register_host_memory(a, drv.mem_host_register_flags.DEVICEMAP)\n" \
                   "p = h.base.get_device_pointer()\nwhile True:\n    k(p, block=(256, 1, 1), grid=(4096, 1))\n"
    assert rows(src, "PIN004") == [row_of(src, "    k(p,")]


def test_pycuda_devicemap_pointer_launched_once_is_quiet():
    src = PYCUDA + "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)\n" \
                   "p = h.base.get_device_pointer()\nk(p, block=(256, 1, 1), grid=(4, 1))\n"
    assert codes(src) == []


def test_pycuda_device_memory_and_plain_pinned_in_a_loop_are_quiet():
    src = PYCUDA + "d = drv.mem_alloc(4096)\nh = drv.pagelocked_empty(1024, np.float32)\n" \
                   "for i in range(10):\n    k(d, block=(256, 1, 1), grid=(4, 1))\n" \
                   "    k(drv.In(h), block=(256, 1, 1), grid=(4, 1))\n"
    assert codes(src) == []


def test_pycuda_devicemap_pointer_wrapped_in_np_intp():
    src = PYCUDA + "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)\n" \
                   "for i in range(10):\n    k(np.intp(h.base.get_device_pointer()), block=(256, 1, 1), grid=(4, 1))\n"
    assert rows(src, "PIN004") == [row_of(src, "np.intp")]


# ====================================================================== CuPy
def test_cupy_mapped_host_alloc_in_raw_kernel_loop():
    src = """
    import numpy as np
    import cupy as cp
    ker = cp.RawKernel(r'extern "C" __global__ void k(float* a) {}', "k")
    p = cp.cuda.runtime.hostAlloc(1 << 22, cp.cuda.runtime.hostAllocMapped)
    q = cp.cuda.runtime.hostAlloc(1 << 22, cp.cuda.runtime.hostAllocDefault)
    dptr = p  # unified addressing: the mapped host pointer is the device pointer (CuPy has no hostGetDevicePointer)
    for i in range(10):
        ker((4096,), (256,), (dptr, np.int32(1 << 20)))
        ker((4096,), (256,), (q, np.int32(1 << 20)))
    """
    f = only(src, "PIN004")
    assert f.location.row == row_of(src, "(dptr, np.int32")
    assert "cupy.cuda.runtime.hostAlloc" in f.message


# =============================================================== cuda-python
CUDA_PYTHON = """
import ctypes
import numpy as np
{imports}
err, h = {rt}.cudaHostAlloc(1 << 22, {rt}.cudaHostAllocMapped)
err, dptr = {rt}.cudaHostGetDevicePointer(h, 0)
err, stream = {drv}.cuStreamCreate(0)
"""
CUDA_PYTHON_IMPORTS = [
    pytest.param("from cuda.bindings import runtime as rt, driver", "rt", "driver", id="bindings"),
    pytest.param("from cuda import cudart, cuda", "cudart", "cuda", id="legacy"),
]


@pytest.mark.parametrize("imports, rt, drv", CUDA_PYTHON_IMPORTS)
def test_cuda_python_mapped_pointer_in_kernel_params_tuple_in_a_loop(imports, rt, drv):
    src = CUDA_PYTHON.format(imports=imports, rt=rt, drv=drv) + (
        "params = ((dptr, 1 << 20), (ctypes.c_void_p, ctypes.c_int))\n"
        "for i in range(10):\n"
        f"    err, = {drv}.cuLaunchKernel(kernel, 4096, 1, 1, 256, 1, 1, 0, stream, params, 0)\n")
    f = only(src, "PIN004")
    assert (f.location.row, f.location.column) == (row_of(src, "cuLaunchKernel"), col_of(src, f"{drv}.cuLaunchKernel"))
    assert f"cuda.{'bindings.runtime' if rt == 'rt' else 'cudart'}.cudaHostAlloc" in f.message


def test_cuda_python_kernel_params_keyword_in_a_while_loop():
    src = CUDA_PYTHON.format(imports="from cuda.bindings import runtime as rt, driver", rt="rt", drv="driver") + (
        "while True:\n"
        "    driver.cuLaunchKernel(kernel, 4096, 1, 1, 256, 1, 1, 0, stream, kernelParams=((dptr,), (None,)), extra=0)\n")
    assert rows(src, "PIN004") == [row_of(src, "cuLaunchKernel")]


def test_cuda_python_launch_once_and_default_flags_are_quiet():
    src = CUDA_PYTHON.format(imports="from cuda.bindings import runtime as rt, driver", rt="rt", drv="driver") + (
        "driver.cuLaunchKernel(kernel, 4096, 1, 1, 256, 1, 1, 0, stream, ((dptr,), (None,)), 0)\n"
        "err, q = rt.cudaMallocHost(1 << 22)\n"
        "for i in range(10):\n"
        "    driver.cuLaunchKernel(kernel, 4096, 1, 1, 256, 1, 1, 0, stream, ((q,), (None,)), 0)\n")
    assert codes(src) == []


@pytest.mark.xfail(strict=True, reason="not supported: kernel arguments packed into NumPy arrays of addresses "
                                       "(NVIDIA's cuda-python samples) lose track of the mapped pointer")
def test_cuda_python_kernel_params_packed_in_numpy_arrays():
    src = CUDA_PYTHON.format(imports="from cuda.bindings import runtime as rt, driver", rt="rt", drv="driver") + (
        "arg = np.array([int(dptr)], dtype=np.uint64)\n"
        "args = np.array([arg.ctypes.data], dtype=np.uint64)\n"
        "for i in range(10):\n"
        "    driver.cuLaunchKernel(kernel, 4096, 1, 1, 256, 1, 1, 0, stream, args.ctypes.data, 0)\n")
    assert rows(src, "PIN004") == [row_of(src, "cuLaunchKernel")]


_DEMOD = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

class Demod:
    def __init__(self, n):
        self.n = n
        {make}
        self.host = cuda.pagelocked_empty((n,), np.float32, mem_flags=cuda.host_alloc_flags.{flags})
        self.ptr = np.intp(self.host.base.get_device_pointer())
        self.out = cuda.mem_alloc(4 * n)

    def step(self):
        {launch}  # launch

def run(steps):
    d = Demod(1 << 22)
    for _ in range(steps):
        d.step()  # step
"""

_KEPT_KERNELS = [
    ('self.k = SourceModule("__global__ void k(float *o, float *i, int n) {}").get_function("k")',
     "self.k(self.out, self.ptr, np.int32(self.n), block=(256, 1, 1), grid=(1, 1))"),
    ('self.k = SourceModule("__global__ void k(float *o, float *i, int n) {}").get_function("k").prepare("PPi")',
     "self.k.prepared_call((1, 1), (256, 1, 1), self.out, self.ptr, np.int32(self.n))"),
    ('self.k = SourceModule("__global__ void k(float *o, float *i, int n) {}").get_function("k").prepare("PPi")',
     "self.k.prepared_async_call((1, 1), (256, 1, 1), None, self.out, self.ptr, np.int32(self.n))"),
]


@pytest.mark.parametrize("make, launch", _KEPT_KERNELS)
def test_a_kernel_kept_on_the_object_launched_by_a_method_called_in_a_loop(make, launch):
    """pyCuSDR's demodulators (survey 36): kernels compiled in `__init__` and kept on the object
    (called directly or `.prepare`d and launched with `prepared_call`), reading a DEVICEMAP buffer
    of the object from a method a loop calls: every iteration reads it over the bus again."""
    src = _DEMOD.format(make=make, launch=launch, flags="DEVICEMAP")
    assert rows(src, "PIN004") == [row_of(src, "# step")], src
    # Plain page-locked memory (not mapped) is read by no kernel across the bus.
    plain = _DEMOD.format(make=make, launch=launch, flags="PORTABLE")
    assert rows(plain, "PIN004") == [], plain
    # Launched once, outside any loop, it is one pass.
    once = src.replace("    for _ in range(steps):\n        d.step()", "    d.step()")
    assert rows(once, "PIN004") == [], once
