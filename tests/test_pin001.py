"""PIN001 pageable-async-copy: a pageable host buffer in an asynchronous copy.

One section per library (CuPy, Numba, PyCUDA, cuda-python runtime / legacy cudart / driver, PyTorch),
each with H2D and D2H, positive and negative cases, under the import aliases users write; then the
analysis features PIN001 leans on (views, conversions, branches, class attributes, unknown values).
"""

from __future__ import annotations

import functools
import re

import textwrap

import pytest

import helpers
from helpers import codes, col_of, copy_kinds, findings, only, row_of, rows, source
from pinlint.settings import Settings


@pytest.fixture(autouse=True)
def _every_size(monkeypatch):
    """These tests are about which copies PIN001 means, written with small buffers; the size
    threshold (``pin001-min-bytes``) has its own tests in test_thresholds.py."""
    monkeypatch.setattr(helpers, "Settings", functools.partial(Settings, pin001_min_bytes=0))

# ===================================================================== CuPy
CUPY = """
import numpy as np
import cupy as cp
import cupyx
h = np.zeros(1 << 20, dtype=np.float32)
p = cupyx.empty_pinned(1 << 20, dtype=np.float32)
d = cp.empty(1 << 20, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
"""


def test_cupy_set_pageable_async_is_reported_at_the_copy_with_related_allocation():
    src = CUPY + "x = 1\nd.set(h, stream=s)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "d.set(h"), 1)
    assert (f.end_location.row, f.end_location.column) == (row_of(src, "d.set(h"), len("d.set(h, stream=s)") + 1)
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]
    assert f.related[0].location.column == col_of(src, "np.zeros")
    assert "host-to-device" in f.message and "np.zeros" in f.message
    assert f.filename == "t.py"


def test_cupy_set_pinned_async_is_clean():
    assert "PIN001" not in codes(CUPY + "d.set(p, stream=s)\n")


def test_cupy_set_positional_stream():
    assert codes(CUPY + "d.set(h, s)\n") == ["PIN001"]


def test_cupy_aliases_xp_and_empty_pinned_as_ep():
    src = """
    import numpy as onp
    import cupy as xp
    from cupyx import empty_pinned as ep
    pinned = ep(4096, dtype=onp.float32)
    pageable = onp.empty(4096, dtype=onp.float32)
    dev = xp.empty(4096, dtype=onp.float32)
    st = xp.cuda.Stream(non_blocking=True)
    dev.set(pinned, stream=st)
    dev.set(pageable, stream=st)
    """
    assert rows(src, "PIN001") == [row_of(src, "dev.set(pageable")]


def test_cupy_set_without_stream_is_synchronous():
    assert codes(CUPY + "d.set(h)\n") == []


def test_cupy_set_on_null_stream_is_synchronous():
    assert codes(CUPY + "d.set(h, stream=cp.cuda.Stream.null)\n") == []


def test_cupy_set_inside_with_stream_is_async():
    src = CUPY + "with s:\n    d.set(h)\nd.set(h)\n"
    assert rows(src, "PIN001") == [row_of(src, "    d.set(h)")]


def test_cupy_stream_non_blocking_keyword_alone_is_not_a_copy():
    assert codes(CUPY + "t = cp.cuda.Stream(non_blocking=True)\nx = h.sum()\n") == []


def test_cupy_get_into_pageable_out_with_blocking_false():
    src = CUPY + "d.get(stream=s, out=h, blocking=False)\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.get(")
    assert "device-to-host" in f.message
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


def test_cupy_get_positional_blocking_false():
    assert codes(CUPY + "d.get(s, 'C', h, False)\n") == ["PIN001"]


def test_cupy_get_into_pinned_out_is_clean():
    assert codes(CUPY + "d.get(stream=s, out=p, blocking=False)\n") == []


@pytest.mark.parametrize("call", ["d.get(stream=s, out=h)", "d.get(stream=s)", "d.get(s)",
                                  "d.get(stream=s, out=h, blocking=True)", "x = d.get()"])
def test_cupy_get_with_a_stream_but_blocking_is_not_async(call):
    # CuPy >= 13: get() synchronizes unless blocking=False.
    assert codes(CUPY + call + "\n") == []


def test_cupy_get_blocking_false_without_out_allocates_pageable_destination():
    src = CUPY + "y = d.get(stream=s, blocking=False)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "y = d.get"), 5)
    assert "allocates a pageable destination" in f.message
    assert f.related == ()


def test_cupy_asnumpy_blocking_false_without_out_is_reported():
    src = CUPY + "y = cp.asnumpy(d, stream=s, blocking=False)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "cp.asnumpy"), col_of(src, "cp.asnumpy"))
    assert "cupy.asnumpy" in f.message and "allocates a pageable destination" in f.message


def test_cupy_asnumpy_blocking_default_is_not_async():
    assert codes(CUPY + "y = cp.asnumpy(d, stream=s)\ny = cp.asnumpy(d)\n") == []


def test_cupy_asnumpy_out_pinned_is_clean_out_pageable_is_reported():
    src = CUPY + ("cp.asnumpy(d, stream=s, out=p, blocking=False)\n"
                  "cp.asnumpy(d, stream=s, out=h, blocking=False)\n")
    assert rows(src, "PIN001") == [row_of(src, "out=h")]


def test_cupy_alloc_pinned_memory_wrapped_by_frombuffer_is_pinned():
    src = """
    import numpy as np, cupy as cp
    mem = cp.cuda.alloc_pinned_memory(4096)
    h = np.frombuffer(mem, np.float32, 1024)
    d = cp.empty(1024, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    d.get(stream=s, out=h, blocking=False)
    """
    assert codes(src) == []


def test_cupy_frombuffer_of_unknown_memory_is_unknown():
    src = CUPY + "u = np.frombuffer(read_bytes(), np.float32)\nd.set(u, stream=s)\n"
    assert codes(src) == []


@pytest.mark.parametrize("flags", ["cupy.cuda.runtime.hostAllocWriteCombined", "cupy.cuda.runtime.hostAllocMapped",
                                   "cupy.cuda.runtime.hostAllocPortable", "0", "2 | 4"])
def test_cupy_pinned_memory_with_flags_is_pinned(flags):
    src = f"""
    import numpy as np, cupy
    m = cupy.cuda.PinnedMemory(4096, {flags})
    h = np.frombuffer(m, np.float32)
    d = cupy.empty(1024, dtype=np.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    """
    assert codes(src) == []


def test_cupy_runtime_host_alloc_is_pinned():
    src = CUPY + "m = cp.cuda.runtime.hostAlloc(4096, cp.cuda.runtime.hostAllocMapped)\n" \
                 "cp.cuda.runtime.memcpyAsync(d.data.ptr, m, 4096, cp.cuda.runtime.memcpyHostToDevice, s.ptr)\n"
    assert codes(src) == []


def test_cupy_asarray_of_pageable_is_not_pin001():
    # CuPy stages a pageable source through its own pinned pool.
    assert codes(CUPY + "x = cp.asarray(h)\ny = cp.asarray(h, blocking=False)\nz = cp.array(h)\n") == []


def test_cupy_memory_pointer_and_runtime_memcpy_async():
    src = CUPY + (
        "d.data.copy_from_host_async(h.ctypes.data, h.nbytes, s)\n"
        "d.data.copy_from_host_async(p.ctypes.data, p.nbytes, s)\n"
        "cp.cuda.runtime.memcpyAsync(d.data.ptr, h.ctypes.data, h.nbytes, cp.cuda.runtime.memcpyHostToDevice, s.ptr)\n"
        "cp.cuda.runtime.memcpyAsync(h.ctypes.data, d.data.ptr, h.nbytes, cp.cuda.runtime.memcpyDeviceToHost, s.ptr)\n"
        "cp.cuda.runtime.memcpyAsync(p.ctypes.data, d.data.ptr, p.nbytes, cp.cuda.runtime.memcpyDeviceToHost, s.ptr)\n")
    assert rows(src, "PIN001") == [row_of(src, "copy_from_host_async(h."), row_of(src, "h.ctypes.data, h.nbytes, cp"),
                                   row_of(src, "(h.ctypes.data, d.data.ptr")]


# ==================================================================== Numba
NUMBA = """
import numpy as np
from numba import cuda
s = cuda.stream()
h = np.zeros(1 << 20, dtype=np.float32)
p = cuda.pinned_array(1 << 20, dtype=np.float32)
"""


def test_numba_to_device_pageable_with_stream():
    src = NUMBA + "d = cuda.to_device(h, stream=s)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "cuda.to_device"), col_of(src, "cuda.to_device"))
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


def test_numba_to_device_pinned_with_stream_is_clean():
    assert codes(NUMBA + "d = cuda.to_device(p, stream=s)\nd = cuda.to_device(p, s)\n") == []


@pytest.mark.parametrize("call", ["cuda.to_device(h)", "cuda.to_device(h, stream=0)",
                                  "cuda.to_device(h, stream=cuda.default_stream())"])
def test_numba_to_device_without_a_real_stream_is_synchronous(call):
    assert codes(NUMBA + f"d = {call}\n") == []


def test_numba_copy_to_host_pageable_with_stream():
    src = NUMBA + "d = cuda.to_device(p, stream=s)\nd.copy_to_host(h, stream=s)\nd.copy_to_host(p, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "copy_to_host(h")]


def test_numba_alias_import_numba_cuda_as_nc():
    src = """
    import numpy as np
    import numba.cuda as nc
    s = nc.stream()
    h = np.empty(4096)
    p = nc.pinned_array(4096)
    a = nc.to_device(h, stream=s)
    b = nc.to_device(p, stream=s)
    """
    assert rows(src, "PIN001") == [row_of(src, "nc.to_device(h")]


def test_numba_remembered_stream_makes_copy_to_host_async():
    src = NUMBA + "d = cuda.to_device(p, stream=s)\nd.copy_to_host(h)\nd.copy_to_host(p)\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.copy_to_host(h)")
    assert "device-to-host" in f.message


def test_numba_device_array_made_on_default_stream_copies_synchronously():
    src = NUMBA + "d = cuda.to_device(p)\nd.copy_to_host(h)\ne = cuda.device_array(16)\ne.copy_to_host(h)\n"
    assert codes(src) == []


def test_numba_copy_to_host_without_ary_on_a_stream_allocates_pageable():
    src = NUMBA + "d = cuda.to_device(p, stream=s)\nout = d.copy_to_host()\n"
    f = only(src, "PIN001")
    assert "allocates a pageable destination" in f.message
    assert codes(NUMBA + "d = cuda.to_device(p)\nout = d.copy_to_host()\n") == []


@pytest.mark.parametrize("call, expected", [
    ("cuda.random.create_xoroshiro128p_states(64, seed=1, stream=s)", ["PIN001"]),
    ("cuda.random.create_xoroshiro128p_states(64, 1, 0, s)", ["PIN001"]),
    ("cuda.random.create_xoroshiro128p_states(64, seed=1)", []),
])
def test_numba_generator_states_remember_their_stream(call, expected):
    """The states are a device array Numba allocates on the stream it is given: their
    ``copy_to_host()`` without a destination is an asynchronous copy into a new pageable array."""
    assert codes(NUMBA + f"states = {call}\nout = states.copy_to_host()\n") == expected


def test_numba_copy_to_device_pageable_on_remembered_stream():
    src = NUMBA + "d = cuda.device_array(1 << 20, stream=s)\nd.copy_to_device(h)\nd.copy_to_device(p)\n"
    assert rows(src, "PIN001") == [row_of(src, "copy_to_device(h)")]


def test_numba_mapped_and_managed_are_not_pageable():
    src = NUMBA + "m = cuda.mapped_array(1024, wc=True)\ng = cuda.managed_array(1024)\n" \
                  "a = cuda.to_device(m, stream=s)\nb = cuda.to_device(g, stream=s)\n"
    assert codes(src) == []


def test_numba_with_pinned_pins_inside_the_block_only():
    src = NUMBA + "with cuda.pinned(h):\n    a = cuda.to_device(h, stream=s)\nb = cuda.to_device(h, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "b = cuda.to_device")]


def test_numba_with_mapped_binds_a_mapped_buffer():
    src = NUMBA + "with cuda.mapped(h) as m:\n    a = cuda.to_device(m, stream=s)\n    b = cuda.to_device(h, stream=s)\n"
    assert codes(src) == []


# =================================================================== PyCUDA
PYCUDA = """
import numpy as np
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
s = drv.Stream()
h = np.empty(4096, dtype=np.float32)
p = drv.pagelocked_empty(4096, np.float32)
d = drv.mem_alloc(h.nbytes)
g = gpuarray.empty(4096, dtype=np.float32)
"""


def test_pycuda_memcpy_htod_async_pageable():
    src = PYCUDA + "drv.memcpy_htod_async(d, h, s)\ndrv.memcpy_htod_async(d, p, s)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "(d, h, s)"), 1)
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.empty")]
    assert "host-to-device" in f.message


def test_pycuda_memcpy_dtoh_async_pageable():
    src = PYCUDA + "drv.memcpy_dtoh_async(h, d, s)\ndrv.memcpy_dtoh_async(p, d, s)\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "(h, d, s)")
    assert "device-to-host" in f.message


def test_pycuda_synchronous_memcpy_is_clean():
    assert codes(PYCUDA + "drv.memcpy_htod(d, h)\ndrv.memcpy_dtoh(h, d)\n") == []


def test_pycuda_get_async_without_ary_allocates_pageable():
    src = PYCUDA + "x = g.get_async(s)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "get_async"), 5)
    assert "GPUArray.get_async" in f.message and "allocates a pageable destination" in f.message


def test_pycuda_get_async_with_ary():
    src = PYCUDA + "g.get_async(s, p)\ng.get_async(stream=s, ary=p)\ng.get_async(stream=s, ary=h)\n"
    assert rows(src, "PIN001") == [row_of(src, "ary=h")]


def test_pycuda_to_gpu_async_and_set_async():
    src = PYCUDA + ("a = gpuarray.to_gpu_async(h, stream=s)\nb = gpuarray.to_gpu_async(p, stream=s)\n"
                    "g.set_async(h, s)\ng.set_async(p, s)\n")
    assert rows(src, "PIN001") == [row_of(src, "to_gpu_async(h"), row_of(src, "set_async(h")]


def test_pycuda_get_async_with_a_stream_on_a_receiver_nothing_explains():
    # `get_async(stream=...)` is PyCUDA's alone: without `ary=` its destination is new pageable memory.
    src = """
    def update(arrays, streams, out):
        for k in range(len(arrays)):
            out.append(arrays[k].get_async(stream=streams[k]))
            arrays[k].get_async(streams[k])          # positional: nothing says whose method it is
            arrays[k].get_async(stream=streams[k], ary=out[k])
    """
    assert rows(src, "PIN001") == [row_of(src, "out.append")]
    defined = textwrap.dedent(src) + "class Cache:\n    def get_async(self, stream=None):\n        return 1\n"
    assert codes(defined) == []  # the checked code has its own get_async


def test_pycuda_set_async_with_a_stream_on_a_receiver_nothing_explains():
    # `set_async(ary, stream=...)` is PyCUDA's alone: its source, when known, is what PIN001 looks at.
    src = """
    import numpy as np
    def step(dev, host, stream):
        dev.set_async(np.asarray(host).astype(np.float32), stream=stream)  # a new pageable array
        dev.set_async(np.asarray(host).astype(np.float32), stream)         # positional: whose method?
        dev.set_async(host, stream=stream)                                 # the source is unknown
    """
    assert rows(src, "PIN001") == [row_of(src, "# a new pageable array")]
    defined = textwrap.dedent(src) + "class Slot:\n    def set_async(self, ary, stream=None):\n        return 1\n"
    assert codes(defined) == []  # the checked code has its own set_async


def test_pycuda_get_and_set_with_async_flag():
    src = PYCUDA + "g.get(h, async_=True, stream=s)\ng.get(h)\ng.set(h)\ng.get(p, async_=True, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "g.get(h, async_")]


def test_pycuda_aligned_empty_is_pageable_pool_allocation_is_pinned():
    src = PYCUDA + ("import pycuda.tools\npool = pycuda.tools.PageLockedMemoryPool()\n"
                    "q = pool.allocate((4096,), np.float32)\na = drv.aligned_empty((4096,), np.float32)\n"
                    "drv.memcpy_htod_async(d, q, s)\ndrv.memcpy_htod_async(d, a, s)\n")
    assert rows(src, "PIN001") == [row_of(src, "(d, a, s)")]


def test_pycuda_pagelocked_write_combined_is_pinned():
    src = PYCUDA + "w = drv.pagelocked_empty(4096, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)\n" \
                   "drv.memcpy_htod_async(d, w, s)\n"
    assert codes(src) == []


def test_pycuda_register_host_memory_view_is_pinned():
    src = PYCUDA + "r = drv.register_host_memory(h)\ndrv.memcpy_htod_async(d, r, s)\n"
    assert set(codes(src)) <= {"PIN008"}  # pinned for its one copy: PIN008's finding


def test_pycuda_register_host_memory_pins_the_original_array_too():
    src = PYCUDA + "r = drv.register_host_memory(h)\ndrv.memcpy_htod_async(d, h, s)\n"
    assert set(codes(src)) <= {"PIN008"}  # pinned for its one copy: PIN008's finding


# ======================================================= cuda-python runtime
def _runtime(import_line: str, mod: str) -> str:
    return f"""
import numpy as np
{import_line}
h = np.zeros(256, dtype=np.float32)
err, dptr = {mod}.cudaMalloc(h.nbytes)
err, s = {mod}.cudaStreamCreate()
err, ph = {mod}.cudaMallocHost(1024)
"""


RUNTIMES = [
    pytest.param("from cuda.bindings import runtime as rt", "rt", id="bindings-as-rt"),
    pytest.param("from cuda.bindings import runtime", "runtime", id="bindings-runtime"),
    pytest.param("from cuda import cudart", "cudart", id="legacy-cudart"),
]


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_memcpy_async_h2d_pageable(import_line, mod):
    src = _runtime(import_line, mod) + \
        f"{mod}.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "cudaMemcpyAsync"), 1)
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]
    assert "host-to-device" in f.message


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_memcpy_async_d2h_pageable(import_line, mod):
    src = _runtime(import_line, mod) + \
        f"{mod}.cudaMemcpyAsync(h.ctypes.data, dptr, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyDeviceToHost, s)\n"
    f = only(src, "PIN001")
    assert "device-to-host" in f.message


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_cuda_python_memcpy_async_of_an_address_made_an_int_is_the_buffer(direction):
    # `int(h.ctypes.data)` is how cuda-python's cudaMemcpyAsync is often given a host address: the
    # same memory, so the same finding as without int() (tcar_pkg's camera input, survey 43).
    src = _runtime("from cuda import cudart", "cudart") + (
        "def upload(dev, host, stream):\n"
        "    cudart.cudaMemcpyAsync(dev, int(host.ctypes.data), host.nbytes,\n"
        "                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)\n"
        "upload(dptr, h, s)\n" if direction == "h2d" else
        "dst = int(h.ctypes.data)\n"
        "cudart.cudaMemcpyAsync(dst, dptr, h.nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, s)\n")
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "upload(dptr" if direction == "h2d" else "cudaMemcpyAsync(dst")
    assert [r.location.row for r in f.related][0] == row_of(src, "h = np.zeros")


def test_cuda_python_int_of_a_pinned_address_stays_pinned():
    src = _runtime("from cuda import cudart", "cudart") + (
        "cudart.cudaMemcpyAsync(dptr, int(ph), 1024, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n")
    assert codes(src) == []


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_memcpy_async_pinned_host_pointer_is_clean(import_line, mod):
    src = _runtime(import_line, mod) + (
        f"{mod}.cudaMemcpyAsync(dptr, ph, 1024, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n"
        f"{mod}.cudaMemcpyAsync(ph, dptr, 1024, {mod}.cudaMemcpyKind.cudaMemcpyDeviceToHost, s)\n"
        f"err, ha = {mod}.cudaHostAlloc(1024, {mod}.cudaHostAllocWriteCombined)\n"
        f"{mod}.cudaMemcpyAsync(dptr, ha, 1024, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n")
    assert codes(src) == []


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_synchronous_memcpy_is_clean(import_line, mod):
    src = _runtime(import_line, mod) + \
        f"{mod}.cudaMemcpy(dptr, h.ctypes.data, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice)\n"
    assert codes(src) == []


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_memcpy_default_kind_infers_direction(import_line, mod):
    src = _runtime(import_line, mod) + \
        f"{mod}.cudaMemcpyAsync(h.ctypes.data, dptr, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyDefault, s)\n"
    assert "device-to-host" in only(src, "PIN001").message


@pytest.mark.parametrize("import_line, mod", RUNTIMES)
def test_cuda_python_host_register_pins_the_buffer(import_line, mod):
    src = _runtime(import_line, mod) + (
        f"{mod}.cudaHostRegister(h.ctypes.data, h.nbytes, {mod}.cudaHostRegisterDefault)\n"
        f"{mod}.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n")
    assert set(codes(src)) <= {"PIN008"}  # pinned for its one copy: PIN008's finding


def test_cuda_python_host_register_only_pins_from_that_point_on():
    src = _runtime("from cuda.bindings import runtime as rt", "rt") + (
        "rt.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s)  # before\n"
        "rt.cudaHostRegister(h.ctypes.data, h.nbytes, 0)\n"
        "rt.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s)  # after\n")
    assert rows(src, "PIN001") == [row_of(src, "# before")]


@pytest.mark.parametrize("flags", ["rt.cudaHostRegisterPortable", "flags"])
def test_cuda_python_host_register_with_other_flags_is_not_pageable(flags):
    src = """
    import numpy as np
    from cuda.bindings import runtime as rt
    def upload(flags):
        h = np.zeros(256, dtype=np.float32)
        err, dptr = rt.cudaMalloc(h.nbytes)
        err, s = rt.cudaStreamCreate()
        rt.cudaHostRegister(h.ctypes.data, h.nbytes, FLAGS)
        rt.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s)
    """.replace("FLAGS", flags)
    assert set(codes(src)) <= {"PIN008"}  # pinned for its one copy: PIN008's finding


# ========================================================= cuda-python driver
DRIVERS = [
    pytest.param("from cuda.bindings import driver as cu", "cu", id="bindings-driver"),
    pytest.param("from cuda import cuda as cu", "cu", id="legacy-cuda"),
    pytest.param("from cuda import cuda", "cuda", id="legacy-cuda-plain"),
]


def _driver(import_line: str, mod: str) -> str:
    return f"""
import numpy as np
{import_line}
h = np.zeros(1024, dtype=np.float32)
err, dptr = {mod}.cuMemAlloc(4096)
err, s = {mod}.cuStreamCreate(0)
err, ph = {mod}.cuMemAllocHost(4096)
err, wc = {mod}.cuMemHostAlloc(4096, {mod}.CU_MEMHOSTALLOC_WRITECOMBINED)
"""


@pytest.mark.parametrize("import_line, mod", DRIVERS)
def test_driver_memcpy_htod_async(import_line, mod):
    src = _driver(import_line, mod) + (f"{mod}.cuMemcpyHtoDAsync(dptr, h.ctypes.data, 4096, s)\n"
                                       f"{mod}.cuMemcpyHtoDAsync(dptr, ph, 4096, s)\n"
                                       f"{mod}.cuMemcpyHtoDAsync(dptr, wc, 4096, s)\n")
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "h.ctypes.data, 4096")
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


@pytest.mark.parametrize("import_line, mod", DRIVERS)
def test_driver_memcpy_dtoh_async(import_line, mod):
    src = _driver(import_line, mod) + (f"{mod}.cuMemcpyDtoHAsync(h.ctypes.data, dptr, 4096, s)\n"
                                       f"{mod}.cuMemcpyDtoHAsync(ph, dptr, 4096, s)\n")
    assert rows(src, "PIN001") == [row_of(src, "(h.ctypes.data, dptr")]


@pytest.mark.parametrize("import_line, mod", DRIVERS)
def test_driver_synchronous_memcpy_is_clean(import_line, mod):
    src = _driver(import_line, mod) + (f"{mod}.cuMemcpyHtoD(dptr, h.ctypes.data, 4096)\n"
                                       f"{mod}.cuMemcpyDtoH(h.ctypes.data, dptr, 4096)\n")
    assert codes(src) == []


# ==================================================================== torch
TORCH = """
import torch as T
x = T.randn(1024, 1024)
p = T.empty(1024, 1024, pin_memory=True)
"""


def test_torch_to_cuda_non_blocking_pageable_alias_T():
    src = TORCH + "y = x.to('cuda', non_blocking=True)\n"
    f = only(src, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(src, "y = x.to"), 5)
    assert (f.end_location.row, f.end_location.column) == (row_of(src, "y = x.to"),
                                                           len("y = x.to('cuda', non_blocking=True)") + 1)
    assert [r.location.row for r in f.related] == [row_of(src, "x = T.randn")]
    assert f.related[0].location.column == col_of(src, "T.randn")
    assert "torch.randn" in f.message and "host-to-device" in f.message


@pytest.mark.parametrize("call", ["x.to('cuda', non_blocking=True)", "x.to('cuda:0', non_blocking=True)",
                                  "x.to(device='cuda', non_blocking=True)", "x.cuda(non_blocking=True)",
                                  "x.to(0, non_blocking=True)", "x.to(T.device('cuda'), non_blocking=True)"])
def test_torch_async_h2d_forms(call):
    assert codes(TORCH + f"y = {call}\n") == ["PIN001"]


@pytest.mark.parametrize("joined", ["T.stack([x, x], dim=1)", "T.cat([x, p])", "T.cat((p, p))",
                                    "T.stack([rows[i] for i in range(2)])", "T.cat(rows)"])
def test_torch_stack_and_cat_of_host_tensors_make_a_new_pageable_tensor(joined):
    src = TORCH + f"rows = [T.empty(1024) for _ in range(4)]\nb = {joined}\ny = b.to('cuda', non_blocking=True)\n"
    f = only(src, "PIN001")
    assert [r.location.row for r in f.related] == [row_of(src, "b = ")]


@pytest.mark.parametrize("joined", ["T.cat([x.cuda(), x.cuda()])", "T.cat(unknown)", "T.stack([unknown, unknown])"])
def test_torch_stack_and_cat_of_device_or_unknown_tensors_are_no_host_buffer(joined):
    # (`T.stack([x, unknown])` with `x` on the host is on the host: test_a_cat_with_one_tensor_surely_on_the_host...)
    src = TORCH + f"def f(unknown):\n    b = {joined}\n    y = b.to('cuda', non_blocking=True)\n"
    assert codes(src) == []


@pytest.mark.parametrize("call", ["p.to('cuda', non_blocking=True)", "p.cuda(non_blocking=True)",
                                  "x.pin_memory().to('cuda', non_blocking=True)", "p[:10].to('cuda', non_blocking=True)",
                                  "p.view(-1).to('cuda', non_blocking=True)", "p.T.to('cuda', non_blocking=True)"])
def test_torch_pinned_sources_are_clean(call):
    assert set(codes(TORCH + f"y = {call}\n")) <= {"PIN008"}  # pinned for its one copy


@pytest.mark.parametrize("call", ["x.to('cuda')", "x.cuda()", "x.to('cuda', non_blocking=False)",
                                  "x.to('cpu', non_blocking=True)", "x.to(T.device('cpu'), non_blocking=True)"])
def test_torch_blocking_or_cpu_targets_are_clean(call):
    assert codes(TORCH + f"y = {call}\n") == []


LOADED = """
import torch
dev = torch.device("cuda")
def restore(path, frames):
    ck = torch.load(path, LOCATION)
    USE
"""


@pytest.mark.parametrize("location", ['map_location="cpu"', "map_location=torch.device('cpu')",
                                      "map_location=lambda storage, loc: storage", '"cpu"'])
@pytest.mark.parametrize("use", ['return ck["feat"].to(dev, non_blocking=True)',
                                 "for k, v in ck.items():\n        ck[k] = v.cuda(non_blocking=True)",
                                 "return ck.to(dev, non_blocking=True)",
                                 "return torch.as_tensor(ck[0]).cuda(non_blocking=True)"])
def test_torch_load_to_the_cpu_gives_pageable_tensors(location, use):
    src = LOADED.replace("LOCATION", location).replace("USE", use)
    f = only(src, "PIN001")
    assert "allocated by `torch.load` at line 4" in f.message


@pytest.mark.parametrize("location", ["", 'map_location="cuda"', "map_location=dev", "map_location=remap",
                                      "**options"])
def test_torch_load_elsewhere_or_where_saved_is_unknown(location):
    src = LOADED.replace("LOCATION", location).replace("USE", 'return ck["feat"].to(dev, non_blocking=True)')
    assert "PIN001" not in codes(src.replace("ck = ", "remap, options = {}, {}\n    ck = "))


def test_torch_to_dtype_is_a_conversion_not_a_copy():
    assert codes(TORCH + "y = x.to(T.float16)\nz = p.to(T.float16)\n") == []


def test_torch_to_dtype_of_pinned_makes_pageable_memory():
    src = TORCH + "z = p.to(T.float16).to('cuda', non_blocking=True)\n"
    f = only(src, "PIN001")
    assert [r.location.row for r in f.related] == [row_of(src, "z = p.to")]


def test_torch_float_of_pinned_half_tensor_makes_pageable_memory():
    src = """
    import torch
    p = torch.empty(1024, dtype=torch.float16, pin_memory=True)
    y = p.float().to("cuda", non_blocking=True)
    w = p.to("cuda", non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "p.float()")]


def test_torch_float_of_float32_pinned_tensor_is_the_same_tensor():
    src = """
    import torch
    p = torch.empty(1024, pin_memory=True)
    y = p.float().to("cuda", non_blocking=True)
    """
    assert codes(src) == []


def test_torch_d2h_copy_into_pageable_non_blocking():
    src = """
    import torch
    d = torch.zeros(1024, device="cuda")
    h = torch.empty(1024)
    p = torch.empty(1024, pin_memory=True)
    h.copy_(d, non_blocking=True)
    p.copy_(d, non_blocking=True)
    h.copy_(d)
    r = d.to("cpu", non_blocking=True)
    c = d.cpu()
    """
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "h.copy_(d, non")
    assert "device-to-host" in f.message
    assert [r.location.row for r in f.related] == [row_of(src, "h = torch.empty")]


def test_torch_h2d_copy_into_device_non_blocking():
    src = """
    import torch
    d = torch.zeros(1024, device="cuda")
    h = torch.empty(1024)
    p = torch.empty(1024, pin_memory=True)
    d.copy_(h, non_blocking=True)
    d.copy_(p, non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "d.copy_(h")]


def test_torch_device_variable_cuda_if_available():
    src = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(1024)
    y = x.to(device, non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "y = x.to")]


def test_torch_dataloader_batches_are_pageable():
    src = """
    import torch
    from torch.utils.data import DataLoader
    def train(ds):
        loader = DataLoader(ds, batch_size=32)
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)
    """
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "x = x.to")
    assert [r.location.row for r in f.related] == [row_of(src, "DataLoader(ds")]


def test_torch_dataloader_pin_memory_true_is_clean():
    src = """
    import torch
    from torch.utils.data import DataLoader
    def train(ds):
        loader = DataLoader(ds, batch_size=32, pin_memory=True)
        for x, y in loader:
            x = x.to("cuda", non_blocking=True)
        for i, (x, y) in enumerate(loader):
            x = x.cuda(non_blocking=True)
    """
    assert codes(src) == []


@pytest.mark.parametrize("loop, copy", [
    ("for batch in loader:\n            for v in batch.values():", "v.to(device, non_blocking=True)"),
    ("for batch in loader:\n            for k, v in batch.items():", "v.to(device, non_blocking=True)"),
    ("for batch in loader:\n            if True:", "batch.get('x').to(device, non_blocking=True)"),
    ("for batch in loader:\n            if True:", "{k: v.to(device, non_blocking=True) for k, v in batch.items()}"),
])
@pytest.mark.parametrize("pinned", [False, True])
def test_torch_dataloader_dict_batches(loop, copy, pinned):
    """A batch collated into a dict: each of its values is a batch tensor, pinned as the loader pins."""
    src = f"""
    import torch
    from torch.utils.data import DataLoader
    def train(ds, device):
        loader = DataLoader(ds, batch_size=32{", pin_memory=True" if pinned else ""})
        {loop}
                out = {copy}
    """
    assert codes(src) == ([] if pinned else ["PIN001"])


@pytest.mark.parametrize("op", ["div(255.0)", "mul(2)", "add(1)", "sub(0.5)", "clamp(0, 1)", "true_divide(3)"])
@pytest.mark.parametrize("source, expected", [
    ("torch.from_numpy(np.zeros((1024, 1024), np.float32))", ["PIN001"]),   # a CPU tensor
    ("torch.empty(1 << 20, pin_memory=True)", ["PIN001"]),                # pinned, but the result is new memory
    ("torch.empty(1 << 20, device='cuda')", []),                          # on the GPU: no host memory at all
])
def test_torch_arithmetic_on_a_cpu_tensor_makes_a_new_pageable_tensor(op, source, expected):
    src = f"""
    import numpy as np
    import torch
    def step(device):
        t = {source}.{op}
        return t.to(device, non_blocking=True)
    """
    assert codes(src) == expected


def test_torch_dataloader_qualified_and_enumerate():
    src = """
    import torch
    def train(ds, flag):
        loader = torch.utils.data.DataLoader(ds, pin_memory=False)
        for i, batch in enumerate(loader):
            batch.cuda(non_blocking=True)
        for batch in torch.utils.data.DataLoader(ds, pin_memory=flag):
            batch.cuda(non_blocking=True)
    """
    # pin_memory=False is the default (pageable); pin_memory=<unknown> proves nothing.
    assert rows(src, "PIN001") == [row_of(src, "for i, batch") + 1]


def test_torch_from_numpy_keeps_the_kind():
    src = """
    import numpy as np, torch, cupyx
    h = np.zeros(1 << 20, dtype=np.float32)
    pn = cupyx.empty_pinned(1 << 20, dtype=np.float32)
    a = torch.from_numpy(h).to("cuda", non_blocking=True)
    b = torch.from_numpy(pn).to("cuda", non_blocking=True)
    """
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "a = torch")
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


def test_torch_numpy_view_keeps_the_kind():
    src = """
    import torch, cupy as cp
    t = torch.empty(1024)
    p = torch.empty(1024, pin_memory=True)
    d = cp.empty(1024, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(t.numpy(), stream=s)
    d.set(p.numpy(), stream=s)
    b = torch.from_numpy(p.numpy()).to("cuda", non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "t.numpy()")]


# =========================================================== views / copies
def test_views_keep_the_pinned_kind():
    src = CUPY + ("n = 100\n"
                  "d.set(p[:n], stream=s)\n"
                  "d.set(p.reshape(1024, 1024), stream=s)\n"
                  "d.set(p.reshape(1024, 1024).T, stream=s)\n"
                  "d.set(p.view(np.int32), stream=s)\n"
                  "d.set(np.asarray(p), stream=s)\n"
                  "v = p[10:20]\nd.set(v, stream=s)\n")
    assert codes(src) == []


def test_views_keep_the_pageable_kind():
    src = CUPY + "d.set(h[:100], stream=s)\nd.set(h.reshape(1024, 1024).T, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "h[:100]"), row_of(src, ".T, stream")]
    for f in findings(src):
        assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


@pytest.mark.parametrize("expr, api", [("p.astype(np.float64)", "astype"), ("p.copy()", "copy"),
                                       ("p * 2", "arithmetic"), ("p + p", "arithmetic"), ("-p", "arithmetic"),
                                       ("p.flatten()", "flatten")])
def test_conversions_of_pinned_make_new_pageable_memory(expr, api):
    src = CUPY + f"c = {expr}\nd.set(c, stream=s)\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.set(c")
    assert api in f.message
    assert [r.location.row for r in f.related] == [row_of(src, "c = ")]
    assert f.related[0].location.column == 5


def test_astype_copy_false_same_dtype_is_the_same_buffer():
    assert codes(CUPY + "d.set(p.astype(np.float32, copy=False), stream=s)\n") == []


def test_ascontiguousarray_of_transposed_pinned_is_pageable():
    src = """
    import numpy as np, cupy as cp, cupyx
    p = cupyx.empty_pinned((1024, 512), dtype=np.float32)
    d = cp.empty((512, 1024), dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(np.ascontiguousarray(p.T), stream=s)
    """
    assert codes(src) == ["PIN001"]


@pytest.mark.parametrize("argument, expected", [
    ("[p]", ["PIN001"]),        # a list of arrays: NumPy builds a new (pageable) array from it
    ("(p, p)", ["PIN001"]),     # a tuple too
    ("p", []),                  # the pinned array itself, already contiguous: the same memory
])
def test_ascontiguousarray_of_a_list_is_a_new_pageable_array(argument, expected):
    src = f"""
    import numpy as np, cupy as cp, cupyx
    p = cupyx.empty_pinned((1024, 512), dtype=np.float32)
    d = cp.empty((2, 1024, 512), dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(np.ascontiguousarray({argument}), stream=s)
    """
    assert codes(src) == expected


@pytest.mark.parametrize("make, draw", [
    ("np.random.default_rng(0)", "rng.random((1 << 20,), dtype=np.float32)"),
    ("np.random.default_rng()", "rng.standard_normal(1 << 20)"),
    ("np.random.default_rng(seed=1)", "rng.integers(0, 10, size=1 << 20)"),
    ("np.random.RandomState(0)", "rng.randn(1 << 20)"),
    ("np.random.Generator(np.random.PCG64())", "rng.uniform(0.0, 1.0, 1 << 20)"),
])
def test_a_numpy_random_generator_draws_new_pageable_arrays(make, draw):
    src = CUPY + f"rng = {make}\nx = {draw}\nd.set(x, stream=s)\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.set(x")
    assert [r.location.row for r in f.related] == [row_of(src, "x = ")]


def test_a_generator_kept_on_the_object_draws_pageable_arrays_in_its_methods():
    src = CUPY + ("from functools import cached_property\n"
                  "class Warm:\n"
                  "    @cached_property\n"
                  "    def rng(self):\n"
                  "        return np.random.default_rng()\n"
                  "    def run(self):\n"
                  "        d.set(self.rng.random(1 << 20), stream=s)\n")
    assert rows(src, "PIN001") == [row_of(src, "d.set(self.rng")]


def test_random_on_an_unknown_object_is_not_a_numpy_draw():
    src = CUPY + "def draw(gen):\n    d.set(gen.random(1 << 20), stream=s)\n"
    assert codes(src) == []


# ================================================================= branches
@pytest.mark.parametrize("made, copied", [
    ("h = np.empty(1 << 20, np.float32)", "d.set(h, stream=s)"),
    ("h = [np.empty(1 << 20, np.float32) for _ in range(2)]", "d.set(h[0], stream=s)"),
])
def test_a_buffer_or_none_is_the_buffer_where_it_is_copied(made, copied):
    # a copy of None fails: where the copy runs, the value is the buffer
    src = CUPY + f"def f(cached):\n    h = None\n    if cached is None:\n        {made}\n    {copied}\n"
    assert rows(src, "PIN001") == [row_of(src, copied)]


def test_a_pinned_buffer_or_none_is_pinned():
    src = CUPY + ("def f(cached):\n    h = None\n    if cached is None:\n"
                  "        h = cupyx.empty_pinned(1 << 20, np.float32)\n    d.set(h, stream=s)\n")
    assert "PIN001" not in codes(src)


def test_branch_pinned_or_pageable_is_not_reported():
    src = """
    import numpy as np, cupy as cp, cupyx
    def f(flag):
        if flag:
            h = cupyx.empty_pinned(1024, dtype=np.float32)
        else:
            h = np.empty(1024, dtype=np.float32)
        d = cp.empty(1024, dtype=np.float32)
        s = cp.cuda.Stream(non_blocking=True)
        d.set(h, stream=s)
    """
    assert codes(src) == []


def test_branch_pageable_on_both_arms_is_reported_with_both_sites():
    src = """
    import numpy as np, cupy as cp
    def f(flag):
        if flag:
            h = np.zeros(1024, dtype=np.float32)
        else:
            h = np.empty(1024, dtype=np.float32)
        d = cp.empty(1024, dtype=np.float32)
        s = cp.cuda.Stream(non_blocking=True)
        d.set(h, stream=s)
    """
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.set(h")
    assert [r.location.row for r in f.related] == [row_of(src, "np.zeros"), row_of(src, "np.empty(1024")]


def test_branch_pageable_or_unknown_is_not_reported():
    src = """
    import numpy as np, cupy as cp
    def f(flag, buf):
        h = np.zeros(1024, dtype=np.float32)
        if flag:
            h = buf
        d = cp.empty(1024, dtype=np.float32)
        s = cp.cuda.Stream(non_blocking=True)
        d.set(h, stream=s)
    """
    assert codes(src) == []


def test_conditional_expression_joins_like_a_branch():
    src = CUPY + "c = p if s else h\nd.set(c, stream=s)\ne = h if s else h[:10]\nd.set(e, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "d.set(e")]


def test_rebinding_to_pinned_is_flow_sensitive():
    src = CUPY + "c = h\nd.set(c, stream=s)\nc = p\nd.set(c, stream=s)\n"
    assert rows(src, "PIN001") == [row_of(src, "c = h") + 1]


# ======================================================== class attributes
UPLOADER = """
import numpy as np, cupy as cp
class Uploader:
    def __init__(self, n):
        self.h = np.zeros(n, dtype=np.float32)
        self.d = cp.empty(n, dtype=np.float32)
        self.s = cp.cuda.Stream(non_blocking=True)

    def upload(self):
        self.d.set(self.h, stream=self.s)
"""


def test_instance_attribute_from_init_is_known_in_other_methods():
    f = only(UPLOADER, "PIN001")
    assert (f.location.row, f.location.column) == (row_of(UPLOADER, "self.d.set"), col_of(UPLOADER, "self.d.set"))
    assert [r.location.row for r in f.related] == [row_of(UPLOADER, "self.h = np.zeros")]
    assert f.related[0].location.column == col_of(UPLOADER, "np.zeros")


@pytest.mark.parametrize("rebind", ["self.h = buf", "self.h = load_somehow()", "self.h, self.n = buf"])
def test_instance_attribute_rebound_to_unknown_elsewhere_is_not_reported(rebind):
    src = UPLOADER + f"\n    def reset(self, buf):\n        {rebind}\n"
    assert codes(src) == []


def test_instance_attribute_rebound_to_pinned_elsewhere_is_not_reported():
    src = UPLOADER.replace("import numpy as np, cupy as cp", "import numpy as np, cupy as cp, cupyx") + \
        "\n    def pin(self, n):\n        self.h = cupyx.empty_pinned(n, dtype=np.float32)\n"
    assert codes(src) == []


def test_instance_attribute_pinned_in_init_is_clean():
    src = UPLOADER.replace("np.zeros(n", "cupyx.empty_pinned(n").replace("cupy as cp", "cupy as cp, cupyx")
    assert codes(src) == []


def test_instance_attribute_registered_in_another_method_is_not_pageable():
    src = """
    import numpy as np
    from cuda.bindings import runtime as rt
    class Buf:
        def __init__(self, n):
            self.h = np.empty(n, np.float32)
            err, self.d = rt.cudaMalloc(self.h.nbytes)
            err, self.s = rt.cudaStreamCreate()
        def pin(self):
            rt.cudaHostRegister(self.h.ctypes.data, self.h.nbytes, 0)
        def upload(self):
            rt.cudaMemcpyAsync(self.d, self.h.ctypes.data, self.h.nbytes,
                               rt.cudaMemcpyKind.cudaMemcpyHostToDevice, self.s)
    """
    assert codes(src) == []


# ========================================================== unknown values
def test_parameters_are_unknown():
    src = """
    import cupy as cp, torch
    def f(h, d, s, batch):
        d.set(h, stream=s)
        d2 = cp.empty(10)
        s2 = cp.cuda.Stream(non_blocking=True)
        d2.set(h, stream=s2)
        d2.get(stream=s2, out=h, blocking=False)
        return batch.to("cuda", non_blocking=True)
    """
    assert codes(src) == []


def test_values_from_unknown_calls_are_unknown():
    src = CUPY + ("u = load()\nd.set(u, stream=s)\nv = np.asarray(something())\nd.set(v, stream=s)\n"
                  "w = helper(h)\nd.set(w, stream=s)\n")
    assert codes(src) == []


def test_module_global_buffer_is_known_in_functions():
    src = """
    import numpy as np, cupy as cp
    H = np.zeros(1 << 20, dtype=np.float32)
    S = cp.cuda.Stream(non_blocking=True)
    def f():
        d = cp.empty(1 << 20, dtype=np.float32)
        d.set(H, stream=S)
    """
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "d.set(H")
    assert [r.location.row for r in f.related] == [row_of(src, "H = np.zeros")]


def test_module_global_assigned_twice_is_unknown_in_functions():
    src = """
    import numpy as np, cupy as cp, cupyx
    H = np.zeros(1 << 20, dtype=np.float32)
    H = cupyx.empty_pinned(1 << 20, dtype=np.float32)
    S = cp.cuda.Stream(non_blocking=True)
    def f():
        d = cp.empty(1 << 20, dtype=np.float32)
        d.set(H, stream=S)
    """
    assert codes(src) == []


def test_parameter_shadowing_an_import_alias_is_not_the_module():
    src = """
    import numpy as np, cupy as cp
    def f(cp):
        h = np.zeros(1 << 20, dtype=np.float32)
        s = cp.cuda.Stream(non_blocking=True)
        d = cp.empty(1 << 20)
        d.set(h, stream=s)
    """
    assert codes(src) == []


def test_no_gpu_import_means_no_finding():
    src = """
    import numpy as np
    h = np.zeros(1 << 20, dtype=np.float32)
    d = empty(1 << 20)
    s = Stream(non_blocking=True)
    d.set(h, stream=s)
    """
    assert codes(src) == []


# ================================================================ precedence
def test_pin001_wins_over_pin007_at_the_same_copy():
    src = CUPY + "for i in range(10):\n    d.set(h, stream=s)\n"
    assert codes(src) == ["PIN001"]
    assert only(src, "PIN001").location.row == row_of(src, "    d.set(h")


def test_async_pinned_copy_in_a_loop_is_clean():
    assert codes(CUPY + "for i in range(10):\n    d.set(p, stream=s)\n") == []


def test_one_finding_per_copy_even_when_reached_on_several_paths():
    src = CUPY + "if s:\n    c = h\nelse:\n    c = h[:10]\nd.set(c, stream=s)\n"
    assert codes(src) == ["PIN001"]


# ======================================= clean because pinned, not because unknown
KNOWN_KINDS = [
    pytest.param(CUPY + "d.set(p, stream=s)\n", "d.set(p", {"pinned"}, id="cupyx.empty_pinned"),
    pytest.param("""
import numpy as onp, cupy as xp
from cupyx import empty_pinned as ep, zeros_like_pinned
a = ep(16, dtype=onp.float32)
b = zeros_like_pinned(a)
d = xp.empty(16, dtype=onp.float32)
d.set(b, stream=xp.cuda.Stream(non_blocking=True))
""", "d.set(b", {"pinned"}, id="cupyx-aliases"),
    pytest.param("""
import numpy as np, cupy as cp
mem = cp.cuda.alloc_pinned_memory(4096)
h = np.frombuffer(mem, np.float32, 1024)
d = cp.empty(1024, dtype=np.float32)
d.set(h, stream=cp.cuda.Stream(non_blocking=True))
""", "d.set(h", {"pinned"}, id="alloc_pinned_memory+frombuffer"),
    pytest.param("""
import numpy as np, cupy
m = cupy.cuda.PinnedMemory(4096, cupy.cuda.runtime.hostAllocWriteCombined)
h = np.frombuffer(m, np.float32)
d = cupy.empty(1024, dtype=np.float32)
d.set(h, stream=cupy.cuda.Stream(non_blocking=True))
""", "d.set(h", {"pinned+write-combined"}, id="PinnedMemory-WC"),
    pytest.param("""
import numpy as np, cupy
m = cupy.cuda.PinnedMemory(4096, cupy.cuda.runtime.hostAllocMapped | cupy.cuda.runtime.hostAllocWriteCombined)
h = np.frombuffer(m, np.float32)
d = cupy.empty(1024, dtype=np.float32)
d.set(h, stream=cupy.cuda.Stream(non_blocking=True))
""", "d.set(h", {"mapped+write-combined"}, id="PinnedMemory-mapped-WC"),
    pytest.param(NUMBA + "d = cuda.to_device(p, stream=s)\n", "cuda.to_device(p", {"pinned"}, id="numba.pinned_array"),
    pytest.param(NUMBA + "m = cuda.mapped_array(8, wc=True)\nd = cuda.to_device(m, stream=s)\n", "cuda.to_device(m",
                 {"mapped"}, id="numba.mapped_array-wc-ignored"),
    pytest.param(NUMBA + "with cuda.pinned(h):\n    d = cuda.to_device(h, stream=s)\n", "cuda.to_device(h",
                 {"pinned"}, id="numba-with-pinned"),
    pytest.param(PYCUDA + "drv.memcpy_htod_async(d, p, s)\n", "(d, p, s)", {"pinned"}, id="pycuda.pagelocked_empty"),
    pytest.param(PYCUDA + "r = drv.register_host_memory(h)\ndrv.memcpy_htod_async(d, r, s)\n", "(d, r, s)",
                 {"pinned"}, id="pycuda.register_host_memory"),
    pytest.param(_runtime("from cuda import cudart", "cudart") +
                 "cudart.cudaMemcpyAsync(dptr, ph, 1024, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n",
                 "(dptr, ph", {"pinned"}, id="cudart.cudaMallocHost"),
    pytest.param(_runtime("from cuda.bindings import runtime as rt", "rt") +
                 "rt.cudaHostRegister(h.ctypes.data, h.nbytes, rt.cudaHostRegisterDefault)\n"
                 "rt.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s)\n",
                 "cudaMemcpyAsync", {"pinned"}, id="cudaHostRegister"),
    pytest.param(_driver("from cuda.bindings import driver as cu", "cu") + "cu.cuMemcpyHtoDAsync(dptr, wc, 4096, s)\n",
                 "(dptr, wc", {"pinned+write-combined"}, id="cuMemHostAlloc-WC"),
    pytest.param(TORCH + "y = p.to('cuda', non_blocking=True)\n", "y = p.to", {"pinned"}, id="torch-pin_memory=True"),
    pytest.param(TORCH + "y = x.pin_memory().to('cuda', non_blocking=True)\n", "y = x", {"pinned"}, id="torch.pin_memory()"),
    pytest.param("""
import torch
from torch.utils.data import DataLoader
for x in DataLoader(ds, pin_memory=True):
    y = x.to("cuda", non_blocking=True)
""", "y = x.to", {"pinned"}, id="DataLoader-pin_memory"),
]


@pytest.mark.parametrize("src, needle, expected", KNOWN_KINDS)
def test_clean_copies_are_known_pinned_not_unknown(src, needle, expected):
    assert copy_kinds(src, needle) == expected
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("src, needle", [
    pytest.param(CUPY + "d.set(load(), stream=s)\n", "d.set(load", id="unknown-call"),
    pytest.param("import cupy as cp\ndef f(h):\n    d = cp.empty(8)\n    d.set(h, stream=cp.cuda.Stream())\n",
                 "d.set(h", id="param"),
])
def test_unknown_buffers_are_unknown(src, needle):
    assert copy_kinds(src, needle) == {"unknown"}


@pytest.mark.parametrize("op", ["torch.repeat_interleave(t, 2)", "torch.clone(t)"])
@pytest.mark.parametrize("where, expected", [("", ["PIN001"]), (", device='cuda'", [])])
def test_a_new_tensor_made_from_a_tensor_is_where_its_input_is(op, where, expected):
    """torch's repeating and cloning functions make a new tensor on their input's device: from a CPU
    tensor, a new pageable one (its non-blocking upload is PIN001); from a GPU tensor, none."""
    src = f"""
    import torch
    def step(device, n):
        t = torch.zeros(1 << 20{where})
        return {op}.to(device, non_blocking=True)
    """
    assert codes(src) == expected


@pytest.mark.parametrize("view, expected", [
    ("img.transpose(2, 0, 1)", ["PIN001"]),     # HWC -> CHW: not contiguous, so NumPy copies
    ("img.transpose((2, 0, 1))", ["PIN001"]),
    ("img.swapaxes(0, 1)", ["PIN001"]),
    ("img[:, :, ::-1]", ["PIN001"]),            # BGR -> RGB: a negative step
    ("img", []),                                # unknown: it may be the same (pinned) memory
    ("img.transpose(0, 1, 2)", []),             # the identity order: the same array
    ("img[::1]", []),
    ("img.T", []),                              # the same array when it has one axis
])
def test_ascontiguousarray_of_a_strided_view_of_anything_is_a_new_pageable_array(view, expected):
    src = f"""
    import numpy as np
    import pycuda.driver as cuda
    def upload(img, d, s):
        cuda.memcpy_htod_async(d, np.ascontiguousarray({view}), s)
    """
    assert codes(src) == expected


@pytest.mark.parametrize("steps, expected", [
    ("x = np.transpose(img, (2, 0, 1))\n        x = np.expand_dims(x, axis=0)", ["PIN001"]),
    ("x = np.transpose(img, [1, 0])", ["PIN001"]),
    ("x = np.transpose(img, (0, 1, 2))", []),                 # the identity order
    ("x = np.transpose(img)", []),                            # no axes: one axis is the same array
    ("x = np.transpose(img, (2, 0, 1))\n        x = x.reshape(-1)", []),   # a reshape may copy: unknown
])
def test_a_transpose_of_anything_in_its_own_statement_is_copied_by_ascontiguousarray(steps, expected):
    src = f"""
    import numpy as np
    import pycuda.driver as cuda
    def upload(img, d, s):
        {steps}
        cuda.memcpy_htod_async(d, np.ascontiguousarray(x), s)
    """
    assert codes(src) == expected


# ===================================================================== found on real code (turn 8)
SHARED = """
import torch
dev = torch.device("cuda")
"""


@pytest.mark.parametrize("made", [
    "x = torch.empty(1 << 20).share_memory_()",
    "x = torch.empty(1 << 20, pin_memory=True).share_memory_()",        # moved out of pinned memory
    "x = torch.empty(1 << 20, pin_memory=True)\nx.share_memory_()",     # in place, as a statement
])
def test_share_memory_makes_new_pageable_memory_and_no_pinning_fix(made):
    """`share_memory_()` copies the storage into shared memory (pageable) and returns the tensor:
    the copy is PIN001 whatever the allocation was, and no `pin_memory=True` there would change it."""
    src = SHARED + made + "\nfor _ in range(4):\n    x.to(dev, non_blocking=True)\n"
    f = only(src, "PIN001")
    assert "share_memory_" in f.message
    assert f.fix is None


def test_share_memory_of_a_slice_leaves_the_name_of_the_whole_alone():
    src = SHARED + "y = torch.empty(1 << 20)\nz = y[0:10]\nz.share_memory_()\ny.to(dev, non_blocking=True)\n"
    assert "share_memory_" not in only(src, "PIN001").message  # y is torch.empty's pageable tensor


def test_buffers_appended_to_lists_kept_in_a_dict_are_its_elements():
    """`buffers[key].append(t)` on a dict of lists: the list in the dict holds t (a replay buffer
    made once and stacked per batch)."""
    src = SHARED + """
buffers = {"frame": [], "reward": []}
for key in buffers:
    for _ in range(8):
        buffers[key].append(torch.empty(80, 84, 84))
for _ in range(100):
    batch = {k: torch.stack([buffers[k][m] for m in range(4)]) for k in buffers}
    moved = {k: t.to(dev, non_blocking=True) for k, t in batch.items()}
"""
    assert rows(src, "PIN001") == [row_of(src, "t.to(dev")]
    pinned = src.replace("torch.empty(80, 84, 84)", "torch.empty(80, 84, 84).pin_memory()")
    # stack makes a new pageable tensor of pinned rows too: still PIN001, and a constant key reads them
    assert rows(pinned, "PIN001") == [row_of(src, "t.to(dev")]
    constant = SHARED + """
buffers = {"frame": [torch.empty(4).pin_memory()]}
for key in ["frame"]:
    buffers[key].append(torch.empty(1 << 20))
buffers["frame"][0].to(dev, non_blocking=True)
"""
    assert "PIN001" not in codes(constant)  # pinned or pageable: a maybe, which PIN001 leaves alone
    assert "PIN001" not in codes(constant.replace("torch.empty(4).pin_memory()", "torch.empty(4, pin_memory=True)"))


def test_a_stored_value_under_an_unknown_key_may_be_in_any_entry():
    src = SHARED + """
d = {"a": torch.empty(1 << 20, pin_memory=True)}
def put(k):
    d[k] = torch.empty(1 << 20)
put(input())
d["a"].to(dev, non_blocking=True)
"""
    assert "PIN001" not in codes(src)  # pinned or the pageable one: not a sure finding
    sure = SHARED + 'd = {"a": torch.empty(1 << 20)}\nk = input()\nd[k] = torch.empty(1 << 20)\nd["a"].to(dev, non_blocking=True)\n'
    assert codes(sure) == ["PIN001"]


THREAD = """
import threading
import torch
def worker(frame, stop):
    dev = torch.device("cuda")
    while not stop.is_set():
        frame.to(dev, non_blocking=True)
"""


@pytest.mark.parametrize("start", [
    "threading.Thread(target=worker, args=(frame, stop)).start()",
    "threading.Thread(None, worker, None, (frame, stop)).start()",
    "threading.Thread(target=worker, kwargs={'frame': frame, 'stop': stop}).start()",
    "threading.Timer(1.0, worker, (frame, stop)).start()",
])
def test_a_threads_target_runs_with_the_arguments_it_is_given(start):
    src = THREAD + f"\nstop = threading.Event()\nframe = torch.rand(1 << 20)\n{start}\n"
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, start.split(".start")[0][:20])
    assert "via `worker`" in f.message


@pytest.mark.parametrize("start", [
    "threading.Thread(target=worker, args=args).start()",          # not laid out: unknown
    "threading.Thread(target=worker, args=(frame, stop)).start()",  # a pinned frame
])
def test_a_threads_target_with_arguments_it_cannot_know_is_quiet(start):
    src = THREAD + f"\nstop = threading.Event()\nframe = torch.rand(1 << 20).pin_memory()\nargs = input()\n{start}\n"
    assert "PIN001" not in codes(src)


def test_threads_started_in_a_loop_are_not_the_loops_iterations():
    """A thread started per iteration runs beside the loop: the pinned buffer its target makes and
    keeps for its own loop is not PIN002's allocate-and-drop each iteration."""
    src = """
import threading
import torch
def worker(stop):
    buf = torch.empty(1 << 20, pin_memory=True)
    while not stop.is_set():
        buf.to("cuda", non_blocking=True)
stop = threading.Event()
for _ in range(4):
    threading.Thread(target=worker, args=(stop,)).start()
"""
    assert "PIN002" not in codes(src)
    inline = src.replace("threading.Thread(target=worker, args=(stop,)).start()", "worker(stop)")
    assert "PIN002" in codes(inline)  # called in the loop itself, it is one per iteration
    made = src.replace("for _ in range(4):\n    threading.Thread(target=worker, args=(stop,)).start()\n",
                       "threads = [threading.Thread(target=worker, args=(stop,)) for _ in range(4)]\n")
    assert made != src and "PIN002" not in codes(made)  # started from a comprehension (FlexLLMGen's copy threads)


CV2 = """
import cv2
import numpy as np
import pycuda.driver as cuda
stream = cuda.Stream()
dev = cuda.mem_alloc(3 * 640 * 640 * 4)
pinned = cuda.pagelocked_empty((640, 640, 3), np.uint8)
"""


@pytest.mark.parametrize("made", [
    "cv2.imread('a.jpg')",
    "cv2.resize(cv2.imread('a.jpg'), (640, 640))",
    "cv2.cvtColor(pinned, cv2.COLOR_BGR2RGB).transpose((2, 0, 1)).astype(np.float32)",
    "cv2.dnn.blobFromImage(pinned, 1 / 255.0)",
])
def test_opencv_returns_new_pageable_arrays(made):
    src = CV2 + f"img = {made}\ncuda.memcpy_htod_async(dev, img, stream)\n"
    assert codes(src) == ["PIN001"]


@pytest.mark.parametrize("call", [
    "cv2.resize(frame, (640, 640), dst=pinned)",
    "cv2.resize(frame, (640, 640), pinned)",
    "cv2.cvtColor(frame, cv2.COLOR_BGR2RGB, pinned)",
])
def test_opencv_writing_into_a_pinned_dst_returns_it(call):
    src = CV2 + f"frame = cv2.imread('a.jpg')\nimg = {call}\ncuda.memcpy_htod_async(dev, img, stream)\n"
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("call, expected", [
    ("torch.empty(1 << 20, **{'pin_memory': True})", []),
    ("torch.empty(1 << 20, **dict(pin_memory=True))", []),
    ("torch.empty(1 << 20, **options)", []),                       # keys nothing explains: unknown
    ("torch.empty(1 << 20, **dict(dtype=torch.float32))", ["PIN001"]),
    ("torch.empty(*shape)", ["PIN001"]),
    ("torch.empty(**maybe)", []),                                   # pin_memory set on one path only
    ("torch.empty(**specs[key])", ["PIN001"]),                      # each spec: size and dtype
])
def test_keywords_passed_through_a_mapping_are_the_mappings(call, expected):
    """`f(**mapping)` passes the mapping's keys: a pinning keyword in it pins, an unknown mapping may
    hold one, and a key only some paths set may be absent."""
    src = SHARED + """
options = input()
shape = (1 << 20,)
maybe = {"size": (1 << 20,)}
if input():
    maybe["pin_memory"] = True
specs = {"obs": dict(size=(8, 1 << 20), dtype=torch.float32), "act": {"size": (8, 6), "dtype": torch.int64}}
key = input()
""" + f"x = {call}\nx.to(dev, non_blocking=True)\n"
    assert codes(src) == expected


def test_no_pinning_keyword_is_added_to_a_call_passing_a_mapping():
    src = SHARED + "x = torch.empty(1 << 20, **dict(dtype=torch.float32))\nx.to(dev, non_blocking=True)\n"
    assert only(src, "PIN001").fix is None  # `**` may pass pin_memory already: twice is a TypeError


def test_a_field_holding_one_of_two_functions_calls_each():
    """`self.inference_fn = do_inference if old else do_inference_v2`, called with the object's
    buffers: whichever runs copies the pageable input (TensorRT demos pick the function by version)."""
    src = """
import numpy as np
import pycuda.driver as cuda
import tensorrt as trt
def v1(host, dev, stream, batch_size=1):
    cuda.memcpy_htod_async(dev, host, stream)
def v2(host, dev, stream):
    cuda.memcpy_htod_async(dev, host, stream)
class Runner:
    def __init__(self):
        self.infer = v1 if trt.__version__[0] < "7" else v2
        self.stream = cuda.Stream()
    def run(self, dev):
        self.infer(host=np.zeros(1 << 20, np.float32), dev=dev, stream=self.stream)
"""
    assert rows(src, "PIN001") == [row_of(src, "self.infer(host")] * 2  # one through each function
    pinned = src.replace("np.zeros(1 << 20, np.float32)", "cuda.pagelocked_empty(1 << 20, np.float32)")
    assert "PIN001" not in codes(pinned)


POOL = """
from concurrent.futures import ThreadPoolExecutor
import torch
def upload(frame, dev):
    return frame.to(dev, non_blocking=True)
dev = torch.device("cuda")
frames = [torch.rand(1 << 20) for _ in range(8)]
"""


@pytest.mark.parametrize("use", [
    "with ThreadPoolExecutor(4) as pool:\n    pool.submit(upload, frames[0], dev)\n",
    "pool = ThreadPoolExecutor()\npool.submit(upload, frame=frames[0], dev=dev)\n",
    "with ThreadPoolExecutor(4) as pool:\n    list(pool.map(upload, frames, [dev] * 8))\n",
])
def test_a_thread_pool_runs_its_tasks_with_their_arguments(use):
    src = POOL + use
    f = only(src, "PIN001")
    assert "via `upload`" in f.message
    assert f.location.row == row_of(src, "pool.submit" if "submit" in use else "pool.map")


def test_a_thread_pools_tasks_on_pinned_or_unknown_buffers_are_quiet():
    src = POOL + "pool = ThreadPoolExecutor()\npool.submit(upload, frames[0].pin_memory(), dev)\npool.submit(upload, input(), dev)\n"
    assert "PIN001" not in codes(src)
    other = POOL + "class Pool:\n    def submit(self, fn, *args):\n        pass\nPool().submit(upload, frames[0], dev)\n"
    assert "PIN001" not in codes(other)  # a class of the checked code with a method of that name


MAPPED = """
import numpy as np
import torch
def to_gpu(arr, name):
    return torch.as_tensor(arr).to("cuda", non_blocking=True)
def collate(n):
    obs = np.zeros((n, 4096), dtype=np.float32)
    act = np.zeros((n, 4096), dtype=np.float32)
    obs, act = USE
    return obs, act
"""


@pytest.mark.parametrize("use", [
    'tuple(map(lambda a, name: to_gpu(a, name), [obs, act], ["obs", "act"]))',
    'list(map(to_gpu, (obs, act), ("obs", "act")))',
    'map(lambda a: torch.from_numpy(a).cuda(non_blocking=True), [obs, act])',
])
def test_map_calls_its_function_with_each_element(use):
    src = MAPPED.replace("USE", use)
    f = only(src, "PIN001")
    assert "line 6" in f.message and "line 7" in f.message  # both arrays the map hands over
    assert f.location.row == 8


@pytest.mark.parametrize("use", [
    'tuple(map(lambda a, name: to_gpu(a, name), [obs.pin_memory() if False else torch.empty(4, pin_memory=True)] * 2, "ab"))',
    'tuple(map(lambda a: a * 2, [obs, act]))',        # computes only: nothing is copied
    'tuple(map(np.ascontiguousarray, [obs, act]))',   # no function of the checked code
])
def test_map_of_pinned_or_computing_functions_is_quiet(use):
    assert "PIN001" not in codes(MAPPED.replace("USE", use))


@pytest.mark.parametrize("conversion, expected", [
    ("h.type(torch.float32)", ["PIN001"]),     # a new pageable tensor, like .float()
    ("h.type(x.dtype)", ["PIN001"]),           # h itself or a new pageable tensor: pageable either way
    ("p.type(x.dtype)", []),                   # p itself (pinned) or a new pageable one: not sure
    ("p.type(torch.float32)", ["PIN001"]),
    ("h.type()", []),                          # the type's name, not a tensor
])
def test_tensor_type_converts_like_to_dtype(conversion, expected):
    src = SHARED + f"""
def up(x):
    h = torch.empty(1 << 20, dtype=torch.float64)
    p = torch.empty(1 << 20, dtype=torch.float64, pin_memory=True)
    c = {conversion}
    return c.to(x.device, non_blocking=True)
"""
    assert [c for c in codes(src) if c == "PIN001"] == expected


@pytest.mark.parametrize("where, expected", [
    ("", ["PIN001"]),                   # CPU grids: stack makes a new pageable tensor of them
    (", device='cuda'", []),            # on the GPU: no host memory at all
])
@pytest.mark.parametrize("grid", ["torch.meshgrid([a, b], indexing='ij')", "torch.meshgrid(a, b)"])
def test_meshgrid_gives_a_view_of_each_input(where, expected, grid):
    src = SHARED + f"""
def sample(x, H, W):
    a = torch.arange(H{where}) + 0.5
    b = torch.arange(W{where}) + 0.5
    g = torch.stack({grid})
    return g.to(x.device, non_blocking=True)
"""
    assert codes(src) == expected


def test_meshgrid_of_unknown_inputs_is_unknown():
    src = SHARED + "def f(x, a, b):\n    return torch.stack(torch.meshgrid(a, b)).to(x.device, non_blocking=True)\n"
    assert codes(src) == []


def test_a_device_array_field_that_starts_as_none_is_the_device_array_where_it_copies():
    """`self.out_g = None` in `__init__`, a GPU array in `allocate()`: a copy on it would fail on
    None, so where it runs the field is the GPU array (cuvarbase's PyCUDA memory classes)."""
    src = """
import numpy as np
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
class Memory:
    def __init__(self, stream):
        self.stream = stream
        self.out_c = cuda.aligned_zeros(shape=(1 << 22,), dtype=np.float32, alignment=4096)
        self.out_g = None
    def allocate(self):
        self.out_g = gpuarray.zeros(1 << 22, dtype=np.float32)
    def to_cpu(self):
        self.out_g.get_async(stream=self.stream, ary=self.out_c)
"""
    assert rows(src, "PIN001") == [row_of(src, "self.out_g.get_async")]
    pinned = src.replace("cuda.aligned_zeros(shape=(1 << 22,), dtype=np.float32, alignment=4096)",
                         "cuda.pagelocked_zeros((1 << 22,), np.float32)")
    assert "PIN001" not in codes(pinned)


@pytest.mark.parametrize("index, expected", [
    ("[1, 2, 3]", ["PIN001"]),   # advanced indexing: a new pageable array of what it picks
    ("picked", ["PIN001"]),
    ("1:4", []),                 # a slice: the pinned memory itself
])
def test_advanced_indexing_of_pinned_memory_is_a_new_pageable_array(index, expected):
    src = CUPY + f"picked = [0, 5]\nd.set(p[{index}], stream=s)\n"
    assert codes(src) == expected


def test_to_with_a_dtype_keyword_is_a_conversion_like_the_positional_dtype():
    """`t.to(dtype=torch.int32)` makes a new pageable tensor as `t.to(torch.int32)` does
    (modded-nanogpt's batches, missed before: the keyword was taken for no target at all)."""
    from helpers import rows, row_of
    src = """
import torch
def batch(n):
    counts = torch.full((n,), 4)
    pinned = torch.empty(n, pin_memory=True)
    a = counts.to(dtype=torch.int32).to(device="cuda", non_blocking=True)
    b = pinned.to(device="cuda", dtype=torch.float16, non_blocking=True)
    return a, b
"""
    assert rows(src, "PIN001") == [row_of(src, "a = counts")]


def test_a_library_copy_passed_as_a_value_to_a_checking_wrapper_is_that_copy():
    """`checked(cudart.cudaMemcpyAsync, dst, h.ctypes.data, ...)` whose body calls `fn(*args)`
    (triton-client's call_cuda_function): the wrapper makes the copy with the caller's buffer."""
    from helpers import rows, row_of
    src = """
import numpy as np
from cuda import cudart
def checked(fn, *args):
    res = fn(*args)
    if res[0] != cudart.cudaError_t.cudaSuccess:
        raise RuntimeError(res[0])
    return res[1] if len(res) == 2 else res[1:]
def upload(values, dev, stream):
    for v in values:
        flat = np.ascontiguousarray(v).flatten()
        checked(cudart.cudaMemcpyAsync, dev, flat.ctypes.data, flat.nbytes,
                cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
    checked(cudart.cudaStreamSynchronize, stream)
"""
    assert rows(src, "PIN001") == [row_of(src, "checked(cudart.cudaMemcpyAsync")]


@pytest.mark.parametrize("call", [
    "cp.cuda.Stream.null.use()",
    "cp.cuda.Stream.from_external(ptr)",
    "cp.cuda.Device.from_pci_bus_id('0000:00:00.0')",
])
def test_a_method_named_on_a_library_constructor_is_checked_and_the_file_is_not_skipped(call):
    """`cp.cuda.Stream.null.use()`: `cp.cuda.Stream` is a table function, so naming it gives itself
    back, and asking it for `null.use` built the same name again until Python's recursion limit; the
    whole file was skipped ("nested too deeply", two of cupy's test files) and its findings lost."""
    from helpers import lint
    src = f"""
import numpy as np
import cupy as cp
def run(ptr):
    {call}
    h = np.zeros(1 << 22, dtype=np.float32)
    cp.empty(1 << 22, dtype=np.float32).set(h, stream=cp.cuda.Stream(non_blocking=True))
"""
    result = lint(src)
    assert result.warning is None
    assert [(f.code, f.location.row) for f in result.findings] == [("PIN001", row_of(src, ".set(h"))]


@pytest.mark.parametrize("make, reported", [
    ("(ctypes.c_char * nbytes)()", True),
    ("(ctypes.c_uint8 * 4096)()", True),
    ("np.empty(nbytes, np.uint8)", True),
    ("cudart.cudaMallocHost(nbytes)[1]", False),
])
def test_a_ctypes_array_is_pageable_memory(make, reported):
    from helpers import rows
    src = f"""
import ctypes
import numpy as np
from cuda import cudart
def download(dev_ptr, nbytes, stream):
    host = {make}
    cudart.cudaMemcpyAsync(host, dev_ptr, nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)
    cudart.cudaStreamSynchronize(stream)
"""
    assert bool(rows(src, "PIN001")) is reported


@pytest.mark.parametrize("make, reported", [
    ('torch.empty_like(activation, pin_memory=True, device="cpu")', False),
    ('torch.zeros_like(activation, device="cpu", pin_memory=True)', False),
    ("torch.empty_like(activation, pin_memory=True)", False),          # pinned memory is CPU memory
    ('torch.empty_like(activation, pin_memory=self.use_pin, device="cpu")', False),  # unknown: unknown
    ('torch.empty_like(activation, device="cpu")', True),
    ('torch.empty_like(activation, pin_memory=False, device="cpu")', True),
])
def test_the_like_constructors_read_pin_memory(make, reported):
    """An activation offloader's D2H destination `torch.empty_like(x, pin_memory=True, device="cpu")`
    (torchtune) was taken for pageable memory: the `*_like` constructors' `pin_memory=` was ignored."""
    src = f"""
import torch
class Offloader:
    def __init__(self, use_pin=True):
        self.use_pin = use_pin
    def offload(self):
        activation = torch.randn(1 << 20, device="cuda")
        host = {make}
        host.copy_(activation, non_blocking=True)
        return host
"""
    assert rows(src, "PIN001") == ([row_of(src, "host.copy_")] if reported else [])


@pytest.mark.parametrize("held", ["Prep()", "Prep() if fast else Prep()"])
def test_an_object_held_in_a_field_and_called_runs_its_call_method(held):
    """`self._prep = Prep()` then `batch = self._prep(frames)` (trtutils' preprocessors): calling the
    field's object runs `Prep.__call__`, whose pageable result the caller then copies asynchronously.
    It was an unknown call; the same object made locally was followed."""
    src = f"""
import numpy as np
from cuda.bindings import runtime as cudart
class Prep:
    def __call__(self, frames):
        return np.concatenate([f.astype(np.float32) for f in frames], axis=0)
class Model:
    def __init__(self, fast=False):
        self._prep = {held}
    def run(self, dptr, stream, frames):
        batch = self._prep(frames)
        cudart.cudaMemcpyAsync(dptr, batch.ctypes.data, batch.nbytes,
                               cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
"""
    assert rows(src, "PIN001") == [row_of(src, "cudart.cudaMemcpyAsync(dptr, batch")]


# ------------------------------------------------------------------ the pieces of a split
@pytest.mark.parametrize("lib, alloc, split, copy", [
    ("numba", "np.random.rand(1 << 22)", "np.array_split({a}, 8)", "cuda.to_device({p}, stream=s)"),
    ("numba", "np.zeros((1 << 12, 1 << 10))", "np.split({a}, 4)", "cuda.to_device({p}, stream=s)"),
    ("numba", "np.zeros((1 << 12, 1 << 10))", "np.vsplit({a}, 4)", "cuda.to_device({p}, stream=s)"),
    ("torch", "torch.zeros(1 << 22)", "torch.chunk({a}, 4)", "{p}.to(dev, non_blocking=True)"),
    ("torch", "torch.zeros(1 << 22)", "{a}.split(1 << 16)", "{p}.to(dev, non_blocking=True)"),
    ("torch", "torch.zeros(64, 1 << 16)", "{a}.unbind(0)", "{p}.cuda(non_blocking=True)"),
    ("torch", "torch.from_numpy(np.zeros((64, 1 << 16), np.float32))", "torch.tensor_split({a}, 4)",
     "{p}.to(dev, non_blocking=True)"),
])
def test_each_piece_of_a_split_is_a_view_of_the_buffer_split(lib, alloc, split, copy):
    setup = ("import numpy as np\nfrom numba import cuda\n" if lib == "numba" else
             "import numpy as np\nimport torch\n")
    src = setup + f"""
def upload(data, s, dev):
    out = []
    for piece in {split.format(a="data")}:
        out.append({copy.format(p="piece")})
    return out

upload({alloc}, {"cuda.stream()" if lib == "numba" else "None"}, "cuda")
"""
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "upload(" + alloc)
    assert "via `upload`" in f.message


def test_the_pieces_of_a_pinned_buffer_are_pinned():
    src = """
import torch
def upload(n, dev):
    batch = torch.empty(n, 1 << 16, pin_memory=True)
    return [p.to(dev, non_blocking=True) for p in batch.split(16)]
"""
    assert codes(src) == []


def test_the_pieces_of_something_unknown_and_a_string_split_are_not_buffers():
    src = """
import numpy as np
from numba import cuda
def upload(data, line, s):
    for piece in np.array_split(data, 4):
        cuda.to_device(piece, stream=s)
    for word in line.split(","):
        cuda.to_device(word, stream=s)
"""
    assert codes(src) == []


# ------------------------------------------------------------------ a tensor made on a device nothing names
_CACHE = """
import torch

class Cache:
    def __init__(self, layers, shape, device):
        self.cpu = {{i: torch.zeros(shape{pin}) for i in range(layers)}}
        self.gpu = {{i: torch.zeros(shape, device={device}) for i in range(layers)}}

    def fetch(self, i):
        self.gpu[i].copy_(self.cpu[i]{flag})

    def offload(self, i):
        self.cpu[i].copy_(self.gpu[i]{flag})
"""


@pytest.mark.parametrize("device", ["device", "torch.device('cuda')"])
def test_a_non_blocking_copy_between_a_pageable_tensor_and_one_made_on_some_device_is_pin001(device):
    """A tensor made with `device=device` is a torch tensor whose device nothing names, as a
    `torch.Tensor` parameter is: a non-blocking copy_ with it moves data to or from a GPU."""
    src = _CACHE.format(pin="", device=device, flag=", non_blocking=True")
    assert rows(src, "PIN001") == [row_of(src, "self.gpu[i].copy_"), row_of(src, "self.cpu[i].copy_")]


@pytest.mark.parametrize("pin, device, flag", [
    (", pin_memory=True", "device", ", non_blocking=True"),  # pinned host side
    ("", "'cpu'", ", non_blocking=True"),                    # both on the CPU: no transfer at all
    ("", "device", ""),                                       # blocking copies
])
def test_copies_with_a_tensor_made_on_some_device_that_are_not_pin001(pin, device, flag):
    assert "PIN001" not in codes(_CACHE.format(pin=pin, device=device, flag=flag))


@pytest.mark.parametrize("made, reported", [
    ("torch.cumsum(lengths[a:b], dim=0, dtype=torch.int32)", True),   # a scan of a pinned slice: new pageable memory
    ("lengths[a:b].cumsum(0)", True),
    ("lengths.index_select(0, idx)", True),
    ("torch.flip(lengths, dims=(0,))", True),
    ("lengths[a:b]", False),                                           # a view of the pinned buffer
    ("torch.cumsum(lengths.cuda(), dim=0)", False),                     # on the GPU: no host memory
])
def test_a_scan_or_gather_of_a_cpu_tensor_is_new_pageable_memory(made, reported):
    src = f"""
    import torch
    def upload(a, b, idx):
        lengths = torch.zeros(1 << 20, dtype=torch.int32, pin_memory=True)
        out = torch.empty(1 << 20, dtype=torch.int32, device="cuda")
        starts = {made}
        out[: b - a].copy_(starts, non_blocking=True)
    """
    assert ("PIN001" in codes(src)) is reported


_COLLATE = """
import numpy as np
import torch
from torch.utils.data import DataLoader

def np_collate(rows):
    return {"x": np.stack([r for r in rows]).astype(np.float32), "n": len(rows)}

def tensor_collate(rows):
    return {"x": torch.from_numpy(np.stack([r for r in rows]))}

def mixed_collate(rows):
    return torch.stack(rows), np.zeros((len(rows), 1024), dtype=np.float32)

def train(ds):
    for b in DataLoader(ds, batch_size=8, collate_fn=np_collate, pin_memory=True):
        torch.from_numpy(b["x"]).to("cuda", non_blocking=True)  # numpy batch
    for b in DataLoader(ds, batch_size=8, collate_fn=tensor_collate, pin_memory=True):
        b["x"].to("cuda", non_blocking=True)  # pinned by the loader
    for b in DataLoader(ds, batch_size=8, collate_fn=tensor_collate):
        b["x"].to("cuda", non_blocking=True)  # not pinned
    for t, a in DataLoader(ds, batch_size=8, collate_fn=mixed_collate, pin_memory=True):
        t.to("cuda", non_blocking=True)  # pinned tensor
        torch.as_tensor(a).to("cuda", non_blocking=True)  # numpy half
    for b in DataLoader(ds, batch_size=8, collate_fn=lambda rows: rows, pin_memory=True):
        b.to("cuda", non_blocking=True)
"""


def test_a_collate_function_of_the_checked_code_says_what_a_batch_holds():
    """DataLoader(pin_memory=True) pins the tensors a batch holds, never a NumPy array: a collate
    function that returns arrays (nanotron's, survey 16) gives pageable batches, new on every batch;
    the tensors it returns are the loader's, pinned when it pins."""
    found = findings(_COLLATE)
    assert [(f.code, f.location.row) for f in found] == [
        ("PIN001", row_of(_COLLATE, "# numpy batch")), ("PIN001", row_of(_COLLATE, "# not pinned")),
        ("PIN001", row_of(_COLLATE, "# numpy half"))]
    assert "`np_collate()`" in found[0].message and "DataLoader" in found[1].message


_GUARDED_IMPORT = """
import numpy as np
try:
    import pycuda.driver as cuda
except ImportError:
    cuda = None

h = np.zeros((1 << 20,), np.float32)
d = cuda.mem_alloc(h.nbytes)
s = cuda.Stream()
cuda.memcpy_dtoh_async(h, d, s)  # module level

class Runner:
    def __init__(self, n):
        self.out = np.zeros(n, np.float32)
        self.d = cuda.mem_alloc(self.out.nbytes)
        self.stream = cuda.Stream()
    def infer(self):
        if cuda is None:
            return None
        cuda.memcpy_dtoh_async(self.out, self.d, self.stream)  # method
        self.stream.synchronize()
        return self.out

def local_stand_in(x):
    xp = None
    import cupy as xp
    return xp
"""


def test_a_module_imported_with_a_none_fallback_is_the_module_where_it_is_called():
    """`try: import pycuda.driver as cuda` / `except ImportError: cuda = None`: the single assignment
    made `cuda` a global holding None, so no copy through it was recognised (survey 17's
    yolov8-infer misses). A library call on None fails: where one runs, the name is the module."""
    assert rows(_GUARDED_IMPORT, "PIN001") == [row_of(_GUARDED_IMPORT, "# module level"),
                                               row_of(_GUARDED_IMPORT, "# method")]


def test_a_local_object_named_like_an_import_is_still_that_object():
    src = """
import numpy as np
from numba import cuda
class Fake:
    def to_device(self, h, stream=None):
        return h
def f(s):
    cuda = Fake()
    h = np.zeros(1 << 20)
    return cuda.to_device(h, stream=s)
"""
    assert codes(src) == []


_INDEX_TENSORS = """
import numpy as np
import torch

def attention(q, k, lengths):
    b, lq, lk = q.size(0), q.size(1), k.size(1)
    q_lens = torch.tensor([lq] * b, dtype=torch.int32).to(q.device, non_blocking=True)  # lens
    cu = torch.tensor([0] + [int(n) for n in lengths], dtype=torch.int32).to(q.device, non_blocking=True)  # cu
    keys = torch.from_numpy(np.array([k] * b)).to(q.device, non_blocking=True)  # unknown elements
    items = torch.tensor([r.size for r in lengths]).to(q.device, non_blocking=True)  # scalars
    big = torch.from_numpy(np.zeros((b, lq))).to(q.device, non_blocking=True)  # big
    return q_lens, cu, keys, big, items

def run(lengths):
    q = torch.randn(4, 128, device="cuda")
    return attention(q, q, lengths)
"""


def test_index_tensors_of_python_numbers_are_small_whatever_their_count():
    """`torch.tensor([lq] * b).to(dev, non_blocking=True)` (the Wan attention idiom, survey 17: 6
    findings in three repositories) copies one int per batch item: the driver stages so small a
    source at once, as PIN001's threshold says for constant sizes. A list of Python numbers the code
    builds is that small, and so is a list whose items torch.tensor turns into scalars; a list of things
    nothing explains given to np.array (which stacks arrays), or an array of unknown shape, is not."""
    default = Settings()  # this module's tests run with the threshold at 0
    assert rows(_INDEX_TENSORS, "PIN001", default) == [row_of(_INDEX_TENSORS, "# unknown elements"),
                                                       row_of(_INDEX_TENSORS, "# big")]
    assert len(rows(_INDEX_TENSORS, "PIN001", Settings(pin001_min_bytes=0))) == 5  # a threshold of 0 reports all


def test_index_tensors_of_python_numbers_are_small_in_a_loop_too():
    src = """
import torch
def f(q, steps):
    b = q.size(0)
    lens = torch.tensor([7] * b, dtype=torch.int32)
    table = torch.zeros(b * 1000)
    for _ in range(steps):
        lens.to("cuda")
        table.to("cuda")  # table
"""
    assert rows(src, "PIN007") == [row_of(src, "# table")]


def test_bytes_a_base64_decoder_returns_are_pageable_through_a_frombuffer_view():
    """A served tensor arrives as base64 text: `np.frombuffer(base64.b64decode(s))` is a view of a new
    Python bytes object, ordinary heap memory, copied non-blocking to the GPU (LightX2V's text-encoder
    client, survey 17). A decoder nothing in the tables names stays unknown."""
    src = """
import base64
import numpy as np
import torch
from somewhere import decode_payload

def decode(payload, device):
    raw = base64.b64decode(payload["data"])
    arr = np.frombuffer(raw, dtype=np.uint8).reshape(payload["shape"])
    other = np.frombuffer(decode_payload(payload), dtype=np.uint8)
    torch.from_numpy(other).to(device=device, non_blocking=True)
    return torch.from_numpy(arr).to(device=device, non_blocking=True)  # decoded
"""
    assert rows(src, "PIN001") == [row_of(src, "# decoded")]


_TRANSPOSED = """
import torch

def positions(device, n):
    pairs = [(d, None) for d in range(1, n)]
    pos, ptrs = zip(*pairs)
    return torch.tensor(pos).to(device=device, non_blocking=True)

def annotated(device, frame_idx: int):
    return torch.tensor([frame_idx - t for t in range(4)]).to(device=device, non_blocking=True)

def states(buffers, indices, device):
    joined = [torch.cat(ts, dim=1) for ts in zip(*[buffers[m] for m in indices])]
    return [t.to(device=device, non_blocking=True) for t in joined]

def main(n):
    bufs = [(torch.zeros(2, 1, 256), torch.zeros(2, 1, 256)) for _ in range(n)]
    states(bufs, list(range(n)), torch.device("cuda"))  # states
    positions("cuda", 16)
    annotated("cuda", 10)
"""


def test_zip_of_star_rows_transposes_them():
    """`pos, ptrs = zip(*pairs)` gives the first items of every pair (Python numbers: sam2's 16 object
    pointer positions, a false PIN001 in survey 18), and `for ts in zip(*buffers)` each group of
    tensors (torchbeast's LSTM states, concatenated into new pageable memory: a miss). An `int`
    annotation says a number too."""
    default = Settings()  # this module's tests run with the threshold at 0
    assert rows(_TRANSPOSED, "PIN001", default) == [row_of(_TRANSPOSED, "# states")]


def test_a_memory_mapped_file_is_pageable():
    """np.memmap is ordinary pageable memory, paged in from its file (sd-scripts' safetensors loader,
    survey 18): copied non-blocking to the GPU through torch.from_numpy, PIN001, with no fix offered."""
    src = """
import numpy as np
import torch
def load(path, n, device):
    mm = np.memmap(path, mode="r", dtype=np.float16, shape=(n,))
    return torch.from_numpy(mm).to(device, non_blocking=True)  # memmap
def main():
    return load("w.bin", 64 << 20, torch.device("cuda"))
"""
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == [("PIN001", row_of(src, "# memmap"))]
    assert found[0].fix is None


def test_an_element_of_a_literal_array_is_its_number():
    """`ghosts = np.array([2, 2, 2, 2])` then `(ny + ghosts[0] + ghosts[2], ...)`: the shape is constant,
    a 54 x 54 float32 grid of 11.7 kB, under the threshold (gpu-ocean's notebooks, survey 18: 23 false
    PIN001s). A literal of bigger numbers makes a grid over it."""
    src = """
import numpy as np
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
nx = ny = 50
def small(stream):
    ghosts = np.array([2, 2, 2, 2])
    shape = (ny + ghosts[0] + ghosts[2], nx + ghosts[1] + ghosts[3])
    return gpuarray.to_gpu_async(np.zeros(shape, dtype=np.float32), stream=stream)
def big(stream):
    ghosts = np.array([200, 200, 200, 200])
    shape = (ny + ghosts[0] + ghosts[2], nx + ghosts[1] + ghosts[3])
    return gpuarray.to_gpu_async(np.zeros(shape, dtype=np.float32), stream=stream)  # big
"""
    assert rows(src, "PIN001", Settings()) == [row_of(src, "# big")]


_TEST_CASE = """
import unittest
import numpy as np
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray

class Grid:
    def __init__(self, stream, data):
        self.data = gpuarray.to_gpu_async(data, stream=stream)

class GridTest({base}):
    def setUp(self):
        self.stream = cuda.Stream()
        self.eta0 = np.zeros((72, 52), dtype=np.float32)

    def test_bigger(self):
        self.eta0 = np.zeros((720, 520), dtype=np.float32)
        Grid(self.stream, self.eta0)  # bigger

    def test_upload(self):
        Grid(self.stream, self.eta0)  # setUp's
"""


@pytest.mark.parametrize("base, leaks", [("unittest.TestCase", False), ("object", True)])
def test_a_test_method_s_fields_are_its_own(base, leaks):
    """unittest runs each test method on a new object after setUp: the big grid one test stores on
    `self` is not what its siblings upload (gpu-ocean's scheme tests, survey 18: 16 false PIN001s).
    Any other class's fields are joined over all its methods, as before."""
    src = _TEST_CASE.format(base=base)
    expected = [row_of(src, "# bigger")] + ([row_of(src, "# setUp's")] if leaks else [])
    assert rows(src, "PIN001", Settings()) == expected


def test_a_class_attribute_a_classmethod_stores_is_what_objects_read():
    """`cls.img_data = np.zeros(...)` in a classmethod, read back as `self.img_data` and copied by a
    TensorRT helper (trtpyv1's calibration loader, survey 18: a miss)."""
    src = """
import numpy as np
import pycuda.driver as cuda
class Loader:
    @classmethod
    def prepare(cls, n):
        cls.data = np.zeros((n, 3, 224, 224), dtype=np.float32)
    @classmethod
    def make(cls):
        return cls()
    def load(self):
        return self.data
def upload(d, stream):
    Loader.prepare(64)
    cuda.memcpy_htod_async(d, Loader().load(), stream)  # upload
"""
    assert rows(src, "PIN001", Settings()) == [row_of(src, "# upload")]


def test_an_offset_into_a_cupy_pinned_block_is_the_same_pinned_memory():
    """`np.frombuffer(block + nbytes, ...)` of `block = cp.cuda.alloc_pinned_memory(...)`: the pointer
    plus an offset is an address in the same pinned block, not array arithmetic making pageable memory
    (streamtomocupy's double buffers, survey 19: two false PIN001s)."""
    src = """
import cupy as cp
import numpy as np
def pipeline(nchunks, n):
    block = cp.cuda.alloc_pinned_memory(8 * n)
    host_in = np.frombuffer(block + 0, np.float32, n)
    host_out = np.frombuffer(block + 4 * n, np.float32, n)
    d_in = cp.empty(n, np.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    for _ in range(nchunks):
        d_in.set(host_in, stream=stream)
        d_in.get(out=host_out, stream=stream, blocking=False)
        stream.synchronize()
    return host_out
"""
    assert codes(src) == []


def test_a_tensor_of_number_fields_is_small():
    """`torch.tensor([r.params.temperature for r in reqs])` (chitu's sampling parameters, survey 19: 3
    false PIN001s): torch turns each item into a Python scalar, and a dataclass field annotated
    `float` is a number whatever was stored in it."""
    src = """
from dataclasses import dataclass
import torch

@dataclass
class Params:
    temperature: float
    top_k: int

class Batch:
    def __init__(self, reqs, rank=0):
        self.temps = torch.tensor([r.temperature for r in reqs]).to(device=rank, non_blocking=True)
        first = reqs[0]
        self.k = torch.tensor([Params(first, 2).top_k] * len(reqs)).to(device=rank, non_blocking=True)
"""
    assert rows(src, "PIN001", Settings()) == []


def test_a_progress_bar_yields_the_loaders_batches_and_picking_rows_copies_them():
    """`for batch in tqdm(loader)` iterates the loader (SpecForge, survey 19: a miss), and
    `batch["x"][keep]` with a list of rows makes new pageable memory whether the loader pins or not:
    the fix is not `pin_memory=True` on the loader."""
    src = """
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

def run(dataset):
    for batch in tqdm(DataLoader(dataset, batch_size=16), desc="gen"):
        batch["x"].cuda(non_blocking=True)  # plain
    for batch in tqdm(DataLoader(dataset, batch_size=16, pin_memory=True)):
        keep = [i for i in range(batch["x"].size(0)) if i % 2 == 0]
        batch["x"][keep].cuda(non_blocking=True)  # picked
        batch["x"].cuda(non_blocking=True)
"""
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == [("PIN001", row_of(src, "# plain")),
                                                         ("PIN001", row_of(src, "# picked"))]
    assert "DataLoader" in found[0].message and "advanced indexing" in found[1].message
    assert found[1].fix is None


def test_a_device_a_constructor_stored_places_what_its_methods_allocate():
    """`Dev("cpu")` stores `torch.device(name)` (or the name) and its `allocate` makes
    `torch.empty(..., device=self.dev)`: CPU memory for that object (InfiniGen's KV cache, survey
    19: two misses). A device keyword is as deciding as `pin_memory=`."""
    src = """
import torch

class Dev:
    def __init__(self, name):
        self.dev = torch.device(name)

    def allocate(self, shape, pin_memory=None):
        return torch.empty(shape, dtype=torch.float16, pin_memory=pin_memory, device=self.dev)

def main():
    cache = Dev("cpu").allocate((4096, 32, 128), pin_memory=False)
    pinned = Dev("cpu").allocate((4096, 32, 128), pin_memory=True)
    buf = torch.empty((1024, 32, 128), dtype=torch.float16, device="cuda")
    for step in range(10):
        buf.copy_(cache[step * 8:step * 8 + 1024], non_blocking=True)  # pageable
        buf.copy_(pinned[step * 8:step * 8 + 1024], non_blocking=True)
"""
    assert rows(src, "PIN001", Settings()) == [row_of(src, "# pageable")]


@pytest.mark.parametrize("loader", ["np.loadtxt(path, dtype=np.float32)", "np.genfromtxt(path)",
                                    "np.fromiter(iter(range(1 << 20)), dtype=np.float32)"])
def test_arrays_read_from_text_or_an_iterator_are_pageable(loader):
    """np.loadtxt, np.genfromtxt and np.fromiter make new pageable arrays (survey 19's extra pattern)."""
    src = f"""
import numpy as np
import pycuda.driver as cuda
import pycuda.gpuarray as gpuarray
def upload(path, stream):
    h = {loader}
    d = gpuarray.empty(h.shape, h.dtype)
    d.set_async(h, stream=stream)  # upload
"""
    assert rows(src, "PIN001", Settings()) == [row_of(src, "# upload")]


# ===================================================================== NEP-18: NumPy functions of CuPy arrays
def test_numpy_like_of_a_cupy_array_is_a_cupy_array():
    # bead-trackers (survey 20): `np.zeros_like(d)` of a CuPy array dispatches to CuPy; its `.data.ptr`
    # in memcpyAsync is device memory, and a "pinned twin" fix would break the code
    src = """
        import numpy as np
        import cupy

        d = cupy.zeros((64, 2048), dtype=cupy.uint16)
        staging = np.{fn}
        s = cupy.cuda.Stream()
        cupy.cuda.runtime.memcpyAsync(d.data.ptr, staging.data.ptr, staging.nbytes,
                                      cupy.cuda.runtime.memcpyHostToDevice, s.ptr)  # copy
        """
    for fn in ("zeros_like(d)", "empty_like(d)", "concatenate([d, d])", "copy(d)"):
        assert findings(src.replace("{fn}", fn)) == [], fn
    host = src.replace("{fn}", "zeros_like(np.zeros((64, 2048), dtype=np.uint16))")
    assert rows(host, "PIN001") == [row_of(host, "cupy.cuda.runtime.memcpyAsync")]


def test_numpy_like_of_a_numba_device_array_is_a_host_copy():
    # Numba's device arrays do not dispatch: NumPy copies them to the host through __array__
    src = """
        import numpy as np
        from numba import cuda

        d = cuda.device_array(1 << 20, dtype=np.float32)
        h = np.zeros_like(d)
        s = cuda.stream()
        d.copy_to_host(h, stream=s)  # copy
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


def test_a_cupy_function_no_table_names_keeps_a_cupy_array_on_the_device():
    src = """
        import numpy as np
        import cupy

        frame = cupy.zeros((512, 512), dtype=cupy.uint16)
        stack = cupy.repeat(cupy.expand_dims(frame, axis=0), 8, axis=0)
        s = cupy.cuda.Stream()
        stack.set(np.zeros((8, 512, 512), dtype=np.uint16), stream=s)  # copy
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]
    # given no CuPy array (numbers only), nothing is known of what it returns
    assert rows(src.replace("cupy.expand_dims(frame, axis=0)", "3"), "PIN001") == []


@pytest.mark.parametrize("arrays", ["[np.ones(1 << 20, np.float32) for _ in range(3)]",
                                    "[np.ones(1 << 20, np.float32), np.zeros(1 << 20, np.float32)]"])
def test_numba_pinned_of_an_unpacked_list_pins_its_elements_for_the_block(arrays):
    # howdoespycudawork (survey 20): `with cuda.pinned(*arrs):` of a comprehension's list
    src = f"""
        import numpy as np
        from numba import cuda

        def upload_all(arrs):
            s = cuda.stream()
            out = []
            with cuda.pinned(*arrs):
                for a in arrs:
                    out.append(cuda.to_device(a, s))  # inside
            for a in arrs:
                out.append(cuda.to_device(a, s))  # after
            return out

        upload_all({arrays})
        """
    # inside the block the elements are page-locked; after it they are pageable again: one finding,
    # at the call, and its message names the copy after the block
    assert rows(src, "PIN001") == [row_of(src, "upload_all([")]
    assert f"(line {row_of(src, '# after')})" in only(src, "PIN001").message
    assert rows(src.replace("            for a in arrs:\n                out.append(cuda.to_device(a, s))  # after\n", ""),
                "PIN001") == []


def test_one_device_array_or_a_list_of_them_indexes_to_a_device_array():
    # howdoespycudawork (survey 20): an uploader returns `out[0]` for one array, else the list
    src = """
        import numpy as np
        import cupy as cp

        def upload(arrs):
            out = [cp.asarray(a) for a in arrs]
            if len(out) == 1:
                return out[0]
            return out

        host = np.random.rand(4096, 512)
        dev = upload([np.empty_like(host), np.empty_like(host)])
        dev[0].set(host, cp.cuda.Stream(non_blocking=True))  # copy
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]
    # a device array or a list of host arrays: nothing known of what indexing gives
    mixed = src.replace("out = [cp.asarray(a) for a in arrs]", "out = list(arrs)").replace(
        "return out[0]", "return cp.asarray(out[0])")
    assert rows(mixed, "PIN001") == []


def test_an_item_stored_under_a_variable_key_is_read_back_as_stored():
    # PyHEADTAIL (survey 20): `coords[name] = getattr(beam, name); coords[name] = coords[name].get_async(stream=s)`
    src = """
        import pycuda.gpuarray

        def dump(beam, s):
            coords = {"px": None, "py": None}
            for name in coords:
                coords[name] = beam.fetch(name)
                coords[name] = coords[name].get_async(stream=s)  # copy
            return coords
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]
    # another key in between: the read is of whatever the dict holds there
    other = src.replace("                coords[name] = coords[name].get_async",
                        "                name = name.upper()\n                coords[name] = coords[name].get_async")
    assert rows(other, "PIN001") == []


_OBJECT_BATCH = """
import torch
from torch.utils.data import DataLoader


class Batch:
    def __init__(self, pixels):
        self.pixels = pixels

    def to(self, device, non_blocking=False):
        return Batch(self.pixels.to(device, non_blocking=non_blocking))
{pin_method}

def collate(items):
    pixels = torch.zeros(len(items), 3, 800, 1200)
    for k, item in enumerate(items):
        pixels[k].copy_(item)
    return Batch(pixels), [k for k in range(len(items))]


def train(ds):
    loader = DataLoader(ds, batch_size=4, collate_fn=collate, pin_memory=True)
    for batch, targets in loader:
        dev = batch.to("cuda", non_blocking=True)  # copy
"""


@pytest.mark.parametrize("pin_method, reported", [
    ("", True),  # Deformable-DETR's NestedTensor (survey 21): the loader leaves it unpinned
    ("\n    def pin_memory(self):\n        self.pixels = self.pixels.pin_memory()\n        return self\n", False),
])
def test_a_loader_pins_an_object_batch_only_through_its_pin_memory_method(pin_method, reported):
    src = _OBJECT_BATCH.replace("{pin_method}", pin_method)
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if reported else [])


@pytest.mark.parametrize("index, advanced", [
    ("[:, [0, 1, 3, 4, 6]]", True),   # OpenPCDet (survey 21): a column selection is a new array
    ("[:, cols]", True),
    ("[:, 2:5]", False),              # a view of the pinned array
    ("[:, 3]", False),
])
def test_advanced_indexing_in_one_dimension_makes_a_new_pageable_array(index, advanced):
    src = f"""
        import numpy as np
        from numba import cuda

        def upload(n):
            cols = [0, 1, 3]
            boxes = cuda.pinned_array((n, 7), dtype=np.float32)
            s = cuda.stream()
            return cuda.to_device(boxes{index}, s)  # copy
        """
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if advanced else [])


@pytest.mark.parametrize("guard", ["if sys.version_info[0] == 2:", "if sys.version_info.major < 3:", "if six.PY2:"])
def test_a_python_2_alias_of_range_never_runs(guard):
    # numbapro-examples (survey 21): `if sys.version_info[0] == 2: range = xrange` hid every loop's copies
    src = f"""
        import sys
        import six
        import numpy as np
        from numba import cuda

        {guard}
            range = xrange

        def step(grid):
            s = cuda.stream()
            for col in range(1, grid.shape[1]):
                dev = cuda.device_array(grid.shape[0], dtype=np.float64, stream=s)
                dev.copy_to_host(grid[:, col], stream=s)
            s.synchronize()

        step(np.zeros((1 << 20, 64), order="F"))  # call
        """
    assert rows(src, "PIN001") == [row_of(src, "# call")]


def test_a_destination_made_on_the_sources_device_is_no_host_to_device_copy():
    # nvmath-python (survey 22): `out = torch.empty(x.shape, device=x.device); out.copy_(x, non_blocking=True)`
    # of a NumPy or CPU-torch view: host-to-host; and a tuple of slices built at run time is a view
    src = """
        import numpy as np
        import torch

        def dense_copy(x):
            out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
            out.copy_(x, non_blocking=True)
            return out

        def check(kind, steps):
            base = np.ones((1024, 1024), np.float32) if kind == "numpy" else torch.rand(1024, 1024)
            view = base[tuple(slice(None, None, s) for s in steps)]
            return dense_copy(view)
        """
    assert rows(src, "PIN001") == []


def test_a_buffer_a_loop_leaves_is_known_after_an_if():
    # vissl (survey 22): a mask built in a loop, wrapped after it and copied inside `if self.use_gpu:`;
    # the loop's first block used to be analysed after the code behind the loop had seen it unbound
    src = """
        import numpy as np
        import torch

        def masks(flag, views):
            for v in range(views):
                parts = np.ones((4096, 4096))
            m = torch.from_numpy(parts - 1.0)
            if flag:
                m = m.cuda(non_blocking=True)  # copy
            return m
        """
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


def test_made_like_a_tensor_that_may_be_on_the_gpu_is_placed_nowhere_known():
    # UMbreLLa (survey 20, a regression found mid-turn): zeros_like of a layer weight that is on the
    # GPU on one path and in host memory on another
    src = """
        import torch

        def alloc(flag, dev):
            w = torch.ones(1 << 20)
            if flag:
                w = w.to(dev)
            z = torch.zeros_like(w)
            return z.to(dev, non_blocking=True)  # copy
        """
    assert rows(src, "PIN001") == []
    host_only = src.replace("            if flag:\n                w = w.to(dev)\n", "")
    assert rows(host_only, "PIN001") == [row_of(host_only, "# copy")]


@pytest.mark.parametrize("made, reported", [
    ("np.pad(img, 2, mode='reflect')", True),          # mantidimaging (survey 24)
    ("np.append(img, img)", True),
    ("np.fft.fft(img)", True),
    ("np.nan_to_num(img)", True),
    ("np.pad(cp.zeros((8, 8)), 2)", False),              # of a CuPy array: CuPy's pad (NEP-18)
    ("np.pad(cp.asarray(img), 2)", False),               # cupy.asarray of anything is a CuPy array
])
def test_numpy_functions_that_always_make_a_new_array(made, reported):
    src = f"""
import numpy as np
import cupy as cp

def upload(img, s):
    d = cp.empty(img.shape)
    h = {made}
    d.set(h, stream=s)  # copy
"""
    assert (rows(src, "PIN001") == [row_of(src, "# copy")]) is reported


@pytest.mark.parametrize("register", [
    # ChatLearn (survey 21 tree): PyTorch's own binding of the CUDA runtime, on the tensor's address
    "torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)",
    "cudart = torch.cuda.cudart()\n    cudart.cudaHostRegister(t.data_ptr(), t.nbytes, 0)",
    "runtime.cudaHostRegister(t.data_ptr(), t.nbytes, 0)",
])
@pytest.mark.parametrize("through_a_helper", [False, True])
def test_a_tensor_registered_in_place_is_pinned_for_its_callers_too(register, through_a_helper):
    body = "_pin(store)" if through_a_helper else re.sub(r"\bt\.", "store.", register)
    src = f"""
import torch
from cuda.bindings import runtime

def _pin(t):
    {register}

def offload(n):
    gpu = torch.zeros(n, device="cuda")
    store = torch.empty(n, device="cpu")
    {body}
    store.copy_(gpu, non_blocking=True)  # copy
    torch.cuda.synchronize()
    return store
"""
    assert "PIN001" not in codes(src), src
    unregistered = src.replace(f"    {body}\n", "")
    assert rows(unregistered, "PIN001") == [row_of(unregistered, "# copy")]


@pytest.mark.parametrize("options, reported", [
    ("batch_size=32", True),
    ("batch_size=32, **cfg.dataloader", False),     # diffusion_policy: pin_memory may be in the config
    ("**{'batch_size': 32}", True),                 # a mapping the code spells out, without it
    ("pin_memory=False, **cfg.dataloader", True),
])
def test_dataloader_options_from_a_mapping_may_pin(options, reported):
    src = f"""
import torch
from torch.utils.data import DataLoader

def train(ds, cfg, device):
    loader = DataLoader(ds, {options})
    for batch in loader:
        x = batch.to(device, non_blocking=True)  # copy
"""
    assert (rows(src, "PIN001") == [row_of(src, "# copy")]) is reported


@pytest.mark.parametrize("default, reported", [
    # makani (survey 26): a staging buffer on the parameter's default device, the CPU
    ('torch.device("cpu")', False),
    ('"cpu"', False),
    ('torch.device("cuda")', True),
    ('torch.device("cuda", 0)', True),
])
def test_a_device_parameter_left_at_its_default(default, reported):
    src = f"""
import torch

class TileStore:
    def __init__(self, n, buffer_device={default}):
        self.staging = torch.zeros((n, 3, 64, 64), device=buffer_device)

    def put(self, pred):
        self.staging[:2].copy_(pred * 2, non_blocking=True)  # copy

def run():
    store = TileStore(8)
    store.put(torch.zeros(2, 3, 64, 64))  # call
"""
    assert ("PIN001" in codes(src)) is reported


@pytest.mark.parametrize("convert, reported", [
    ("np.float32(frame)", True),                 # RetinaFace-TensorRT-Python (survey 26)
    ("np.uint8(frame)", True),
    ("np.float32(cuda.pagelocked_empty(n, np.uint8))", True),   # a converted copy of pinned memory is pageable
    ("np.float32(1.5)", False),                  # a number
])
def test_numpy_scalar_types_called_on_an_array_convert_it(convert, reported):
    src = f"""
import numpy as np
import pycuda.driver as cuda

def upload(n, dev, stream):
    frame = np.zeros((n, n, 3), dtype=np.uint8)
    x = {convert}
    cuda.memcpy_htod_async(dev, x, stream)  # copy
    stream.synchronize()
"""
    assert (rows(src, "PIN001") == [row_of(src, "# copy")]) is reported


@pytest.mark.parametrize("bind, rt", [
    ("rt = cudart", "rt"),                      # a local name for the runtime module
    ("self._rt = cudart", "self._rt"),          # kept on the object (survey 26)
    ("self._rt = runtime", "self._rt"),
])
def test_a_library_module_bound_to_a_name_is_that_module(bind, rt):
    src = f"""
import numpy as np
from cuda import cudart
from cuda.bindings import runtime

class Uploader:
    def __init__(self):
        {bind}

    def upload(self, host):
        {"rt = cudart" if rt == "rt" else ""}
        _, stream = {rt}.cudaStreamCreate()
        _, dev = {rt}.cudaMalloc(host.nbytes)
        {rt}.cudaMemcpyAsync(dev, host.ctypes.data, host.nbytes,
                             {rt}.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)  # copy

def run():
    Uploader().upload(np.zeros(1 << 20, dtype=np.float32))  # call
"""
    assert rows(src, "PIN001") == [row_of(src, "# call")], src


@pytest.mark.parametrize("move, pinned", [
    ("tuple(t.to(dev, non_blocking=True) for t in batch)", False),     # CLIP4Clip (survey 26)
    ("[t.cuda(non_blocking=True) for t in batch]", False),
    ("tuple(t.to(dev, non_blocking=True) for t in batch)", True),
])
def test_the_tensors_of_a_batch_iterated_one_by_one(move, pinned):
    src = f"""
import torch
from torch.utils.data import DataLoader

def train(ds, dev):
    loader = DataLoader(ds, batch_size=16, pin_memory={pinned})
    for batch in loader:
        moved = {move}  # copy
"""
    assert (rows(src, "PIN001") == [row_of(src, "# copy")]) is (not pinned)


def test_a_loader_batch_is_never_a_numpy_array():
    # torch-ngp (survey 26): a to-device helper's ndarray branch never runs for a loader's batch
    src = """
import numpy as np
import torch
from torch.utils.data import DataLoader

def to_dev(data, dev):
    if isinstance(data, np.ndarray):
        data = torch.from_numpy(data).to(dev, non_blocking=True)  # ndarray
    else:
        data = data.to(dev, non_blocking=True)  # tensor
    return data

def fit(ds):
    for data in DataLoader(ds, batch_size=1):
        data = to_dev(data, torch.device("cuda"))  # call
"""
    [finding] = [f for f in findings(src) if f.code == "PIN001"]
    assert finding.location.row == row_of(src, "# call")
    assert f"(line {row_of(src, '# tensor')})" in finding.message  # via the tensor branch, not the ndarray one


@pytest.mark.parametrize("second, reported", [
    ("DataLoader(ds, batch_size=256)", True),                    # pageable either way (survey 27 probe)
    ("DataLoader(ds, batch_size=256, pin_memory=True)", False),  # pinned on one path: unknown
])
def test_a_loader_made_on_two_branches(second, reported):
    src = f"""
import torch
from torch.utils.data import DataLoader

def pick(kind, ds):
    if kind == "cifar":
        ld = DataLoader(ds, batch_size=64)
    else:
        ld = {second}
    return ld

def train(net, kind, ds):
    for x, y in pick(kind, ds):
        net(x.cuda(non_blocking=True))  # copy
"""
    assert (rows(src, "PIN001") == [row_of(src, "# copy")]) is reported


@pytest.mark.parametrize("value, uploaded, reported", [
    ("-0.125 - (gain * (0.2 - 0.125))", "np.array([offset])", False),   # a number: one float64
    ("-0.5", "np.array([offset])", False),
    ("+3", "np.array([offset])", False),
    ("-0.5", "np.zeros(1 << 20) + offset", True),
])
def test_an_array_of_one_module_level_number_is_small(value, uploaded, reported):
    """CUDA_PCIE_benchmarking uploads `numpy.array([x])` of a module-level float: 8 bytes. A negative
    literal was no number to the analysis, so the array's size was unknown."""
    src = f"""
    import numpy as np
    from numba import cuda

    gain = 0.8
    offset = {value}
    s = cuda.stream()
    for i in range(4):
        d = cuda.to_device({uploaded}, stream=s)
    """
    # The default threshold (this module's tests otherwise report buffers of any size).
    assert ("PIN001" in [f.code for f in findings(src, Settings())]) == reported


def test_a_call_that_misses_a_required_argument_runs_nothing():
    """A stale test calls a helper with two of its four required arguments: Python raises TypeError
    at the call, and the helper's asynchronous copies never run (QuaTrEx)."""
    src = """
    import numpy as np
    import cupy as cp

    def upload_on(src, other, out, streams):
        dev = cp.empty_like(src)
        dev.set(src, stream=streams[0])
        return dev

    def stale():
        a = np.empty((4096, 1024), dtype=np.complex128)
        return upload_on(a, a)

    def fixed(streams, out):
        a = np.empty((4096, 1024), dtype=np.complex128)
        return upload_on(a, a, out, streams)

    def by_keyword(streams, out):
        a = np.empty((4096, 1024), dtype=np.complex128)
        return upload_on(a, a, streams=streams, out=out)
    """
    assert rows(src, "PIN001") == [row_of(src, "return upload_on(a, a, out, streams)"),
                                   row_of(src, "return upload_on(a, a, streams=")]


@pytest.mark.parametrize("item, batch_size, pin, reported", [
    ("dense, dense[:, 0]", "None", "False", True),   # each item as the dataset makes it: pageable
    ("dense", "8", "False", True),                   # a list of such items
    ("dense, dense[:, 0]", "None", "True", True),    # the loader pins what collate returns, not its input
    ("dense, dense[:, 0]", "None", "False", False),  # a dataset nothing explains
])
def test_a_collate_function_that_uploads_the_datasets_items(item, batch_size, pin, reported):
    """DLRM: the loader's collate function uploads each batch non-blocking on a prefetch stream, and
    the dataset's __getitem__ builds the batch in pageable memory: every upload is staged and
    blocks. Reported at the loader, where the dataset and the collate function meet."""
    dataset = "Records(100)" if reported else "make_dataset()"
    src = f"""
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Records(Dataset):
        def __init__(self, count):
            self.count = count

        def __len__(self):
            return self.count

        def __getitem__(self, i):
            dense = torch.from_numpy(np.random.rand(4096, 13).astype(np.float32))
            return {item}

    def make_loader(make_dataset):
        def collate(parts):
            return [p.to("cuda", non_blocking=True) for p in parts]
        return DataLoader({dataset}, batch_size={batch_size}, pin_memory={pin}, collate_fn=collate)
    """
    assert rows(src, "PIN001") == ([row_of(src, "return DataLoader(")] if reported else [])


@pytest.mark.parametrize("device, reported", [("cpu", False), ("cuda", True), ("cuda:1", True)])
@pytest.mark.parametrize("decide", [
    'on_gpu = torch.cuda.is_available() and str(device).startswith("cuda")',
    'on_gpu = device.lower().startswith("cuda")',
    'name = str(device)\n        on_gpu = name == "cuda" or name.startswith("cuda:")',
])
def test_an_object_built_for_the_cpu_makes_no_copy(device, reported, decide):
    """The constructor decides its device from a string the caller passes; its analysis for callers at
    large cannot, so the call with a constant gets its own (yolov9001's trainer built for "cpu")."""
    src = f"""
import torch

class Runner:
    def __init__(self, device="cuda"):
        {decide}
        self.device = torch.device("cuda" if on_gpu else "cpu")

    def epoch(self, batch):
        if self.device.type == "cuda":
            return batch.to(self.device, non_blocking=True)
        return batch

def main():
    runner = Runner(device="{device}")
    runner.epoch(torch.randn(1000, 1000))
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("unpack, reported", [
    ("framed, *meta = pad(img)", True),          # before the star: the canvas
    ("*rest, side = pad(img)\n    framed = rest[0]", True),
    ("framed, w, h, side = pad(img)", True),     # control: plain unpacking
    ("_, *meta = pad(img)\n    framed = meta[0]", False),  # a number, not the canvas
])
def test_starred_unpacking_keeps_the_items_at_their_places(unpack, reported):
    src = f"""
import numpy as np
import pycuda.driver as cuda

def pad(img):
    board = np.zeros((512, 512, 3), np.float32)
    return board, img.shape[1], img.shape[0], 512

def send(img, d, stream):
    {unpack}
    cuda.memcpy_htod_async(d, framed, stream)
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("shape, reported", [("(1, 3, 608, 608)", True), ("(608,)", False)])
def test_unpacking_one_row_of_an_array_is_a_view_of_it(shape, reported):
    src = f"""
import numpy as np
import pycuda.driver as cuda

def prep():
    return np.zeros({shape}, np.float32)

def send(d, stream):
    row, = prep()
    cuda.memcpy_htod_async(d, row, stream)
"""
    assert bool(rows(src, "PIN001")) is reported, src


# A dataset of pageable tensors, for the prefetcher tests below.
_ITEMS = """
import torch
from torch.utils.data import DataLoader, Dataset

class Items(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, k):
        return torch.randn(3, 256, 256)
"""


@pytest.mark.parametrize("loop", ["for i, batch in enumerate(feeder):", "for batch in feeder:",
                                  "for batch, k in zip(feeder, range(10)):"])
def test_enumerate_of_a_prefetcher_runs_its_iter(loop):
    src = _ITEMS + f"""
class Feeder:
    def __init__(self, loader):
        self.loader = loader
        self.stream = torch.cuda.Stream()
    def __iter__(self):
        for batch in self.loader:
            with torch.cuda.stream(self.stream):
                yield batch.cuda(non_blocking=True)

def main():
    feeder = Feeder(DataLoader(Items(), batch_size=8))
    {loop}
        print(batch.shape)
"""
    assert rows(src, "PIN001"), src


_FEEDER = "import sys" + _ITEMS + """
class Feeder:
    def __init__(self, loader):
        self.loader = loader
        self.stream = torch.cuda.Stream()
    def __iter__(self):
        self.it = iter(self.loader)
        return self
    def __next__(self):
        batch = next(self.it)
        with torch.cuda.stream(self.stream):
            return batch.cuda(non_blocking=True)

def small():
    return Feeder(DataLoader(Items(), batch_size=8))

def large():
    return Feeder(DataLoader(Items(), batch_size=32))

FACTORIES = {"small": small, "large": large}
"""


@pytest.mark.parametrize("make", [
    'FACTORIES[kind]()',                                                   # a dict of factories, a key nothing names
    'small() if kind else large()',                                         # one of two objects
    'Feeder(DataLoader(Items(), batch_size=8) if kind else DataLoader(Items(), batch_size=32))',  # one of two loaders
    'FACTORIES["small"]()',                                                 # control: a named key
])
def test_a_wrapper_around_one_of_several_pageable_loaders_copies_pageable_batches(make):
    src = _FEEDER + f"""
def evaluate(kind):
    for x in {make}:
        print(x.shape)

evaluate(sys.argv[1])
"""
    assert rows(src, "PIN001"), src


@pytest.mark.parametrize("define, make, read, reported", [
    ('Slot = namedtuple("Slot", ("name", "cpu", "gpu"))', 'Slot("in", host, dev)', "slot.cpu", True),
    ('Slot = namedtuple("Slot", "name cpu gpu")', 'Slot(name="in", gpu=dev, cpu=host)', "slot.cpu", True),
    ('Slot = namedtuple("Slot", "name, cpu, gpu")', 'Slot("in", host, dev)', "slot[1]", True),
    ('Slot = collections.namedtuple("Slot", ["name", "cpu", "gpu"])', 'Slot("in", pinned, dev)._replace(cpu=host)',
     "slot.cpu", True),
    ('Slot = namedtuple("Slot", ("name", "cpu", "gpu"))', 'Slot("in", pinned, dev)', "slot.cpu", False),
    ('Slot = namedtuple("Slot", ("name", "cpu", "gpu"))', 'Slot("in", host, dev)._replace(cpu=pinned)', "slot.cpu",
     False),
    ('Slot = namedtuple("Slot", FIELDS)', 'Slot("in", host, dev)', "slot.cpu", False),  # names nothing spells out
])
def test_namedtuple_fields_hold_what_was_stored(define, make, read, reported):
    src = f"""
import collections
from collections import namedtuple
import numpy as np
import pycuda.driver as cuda

FIELDS = load_fields()
{define}

def build(n):
    host = np.empty(n, np.float32)
    pinned = cuda.pagelocked_empty(n, np.float32)
    dev = cuda.mem_alloc(host.nbytes)
    return [{make}]

def run(slots, stream):
    for slot in slots:
        cuda.memcpy_htod_async(slot.gpu if hasattr(slot, "gpu") else slot[2], {read}, stream)

run(build(1 << 20), cuda.Stream())
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("net, reported", [("Speaker()", True), ("Other()", False), ("unknown_model()", False)])
def test_a_method_of_an_object_given_as_a_parameter_runs_with_the_callees_buffers(net, reported):
    """validate(model, data) builds its own pageable loader and calls model.unpack(batch), whose
    non-blocking upload is PIN001 only for the object's class whose method does it."""
    src = f"""
import torch
from torch.utils.data import DataLoader

class Pad:
    def __call__(self, items):
        return torch.zeros(len(items), 80, 1000)

class Speaker:
    def unpack(self, batch):
        return batch.cuda(non_blocking=True)

class Other:
    def unpack(self, batch):
        return batch

def validate(model, dataset):
    loader = DataLoader(dataset, batch_size=16, collate_fn=Pad())
    for batch in loader:
        model.unpack(batch)

def main(dataset):
    validate({net}, dataset)
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("register, reported", [
    ("addr = host.ctypes.data\n        cp.cuda.runtime.hostRegister(addr, host.nbytes, 0)", False),
    ("cp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, 0)", False),
    ("addr = other.ctypes.data\n        cp.cuda.runtime.hostRegister(addr, other.nbytes, 0)", True),  # other memory
    ("pass", True),
])
def test_registering_the_address_a_local_holds_pins_the_array(register, reported):
    src = f"""
import cupy as cp
import numpy as np

class Pipeline:
    def __init__(self):
        self.stream = cp.cuda.Stream(non_blocking=True)

    def _lock(self, host, other):
        {register}
        return True

    def download(self, n):
        result = np.zeros((n, 1 << 16), dtype=np.complex64)
        other = np.zeros(16)
        self._lock(result, other)
        scratch = cp.empty((1 << 16,), dtype=np.complex64)
        for i in range(n):
            scratch.get(out=result[i], stream=self.stream, blocking=False)
        self.stream.synchronize()
        return result
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("make, reported", [
    ("np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)", True),
    ("np.frombuffer(os.pread(fd, 1 << 22, 0), dtype=np.float32)", True),
    ("np.frombuffer(cupy.cuda.alloc_pinned_memory(1 << 22), dtype=np.float32)", False),  # pinned memory
    ("np.frombuffer(source(), dtype=np.float32)", False),  # memory nothing explains
])
def test_frombuffer_over_file_memory_is_pageable(make, reported):
    src = f"""
import mmap
import os
import cupy
import numpy as np
from numba import cuda

def send(path, source):
    s = cuda.stream()
    fd = os.open(path, os.O_RDONLY)
    fh = open(path, "rb")
    h = {make}
    return cuda.to_device(h, stream=s)
"""
    assert bool(rows(src, "PIN001")) is reported, src


def test_a_dtype_nothing_tells_answers_a_dtype_test_either_way():
    src = """
import numpy as np
import torch

def infer(arr, dev_in, stream):
    if arr.dtype != np.float32:
        raise TypeError("float32 input expected")
    with torch.cuda.stream(stream):
        dev_in.copy_(torch.from_numpy(np.ascontiguousarray(arr)), non_blocking=True)

def main(picture):
    arr = np.asarray(picture, dtype=np.float32) / 255.0
    infer(arr, torch.empty(4, device="cuda"), torch.cuda.Stream())
"""
    assert rows(src, "PIN001"), src


@pytest.mark.parametrize("make, reported", [
    ("torch.LongTensor(np.zeros(1 << 20, dtype=np.int64))", True),  # a legacy constructor copies the data
    ("torch.FloatTensor(16, 80, 1000)", True),
    ("F.one_hot(torch.from_numpy(np.zeros((480, 854), np.int64)), num_classes=8).float()", True),
    ("torch.sigmoid(torch.zeros(1 << 20).pin_memory())", True),       # pointwise math: new memory even of pinned
    ("torch.flatten(torch.zeros(1 << 20).pin_memory())", False),      # may be a view of the pinned memory
    ("np.take_along_axis(np.zeros((4096, 64)), np.zeros((4096, 1), np.int64), axis=1)", True),
    ("np.where(np.zeros((4096, 64)) > 0.5, 0.0, np.zeros((4096, 64)))", True),
])
def test_new_cpu_tensors_and_arrays_made_from_pageable_ones(make, reported):
    src = f"""
import numpy as np
import torch
import torch.nn.functional as F

def send():
    h = {make}
    if not isinstance(h, torch.Tensor):
        h = torch.from_numpy(h)
    return h.cuda(non_blocking=True)
"""
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("index, reported", [("batch_nids", True), ("k", False)])
def test_a_tensor_indexed_by_ids_nothing_explains_is_pageable(index, reported):
    """labels[batch_nids] of a pageable tensor is an element or a gathered copy: pageable either way; an
    integer index gives a 0-d element of a few bytes."""
    src = f"""
import torch

def train(n, sampler, model):
    labels = torch.zeros(n, dtype=torch.int64)
    for k, batch_nids in enumerate(sampler):
        label = labels[{index}].cuda(non_blocking=True)
        model(label)
"""
    assert bool(rows(src, "PIN001")) is reported, src


def test_registering_each_value_of_a_dict_of_objects_pins_them():
    """onerl's shape: `for s in slabs.values(): s.register(dev)` page-locks each slab's tensor in place
    (cudaHostRegister of its data_ptr), so the later non-blocking copies read pinned memory."""
    src = """
import torch

class Slab:
    def __init__(self, n):
        self.t = torch.zeros(n, dtype=torch.float32)

    def register(self):
        torch.cuda.cudart().cudaHostRegister(self.t.data_ptr(), self.t.numel() * 4, 0)

class Mover:
    def __init__(self, slabs, dev):
        for s in slabs.values():
            s.register()
        self.src = {k: s.t for k, s in slabs.items()}
        self.dst = {k: torch.zeros_like(s.t, device=dev) for k, s in slabs.items()}

    def pull(self):
        for k, d in self.dst.items():
            d.copy_(self.src[k], non_blocking=True)

def main():
    Mover({"obs": Slab(1 << 20), "rew": Slab(1 << 20)}, torch.device("cuda")).pull()
"""
    assert rows(src, "PIN001") == []
    assert rows(src.replace("            s.register()\n", "            pass\n"), "PIN001")


@pytest.mark.parametrize("index", ["np.newaxis, :, :, :", "None, :, :, :", "np.newaxis", "np.newaxis, ..."])
def test_a_new_axis_is_a_view_of_the_same_pageable_memory(index):
    src = f"""
import numpy as np
import pycuda.driver as cuda
dev_in = cuda.mem_alloc(3 * 64 * 64 * 4)
s = cuda.Stream()
def detect():
    img = np.zeros((3, 64, 64), np.float32)
    nchw = img[{index}]
    cuda.memcpy_htod_async(dev_in, nchw, s)
"""
    assert rows(src, "PIN001") == [row_of(src, "cuda.memcpy_htod_async(dev_in, nchw")]


KEYED = """
import numpy as np
import torch
def upload(n):
    sample = {"heights": torch.from_numpy(np.zeros((n, 1), dtype=np.float32)), "ids": IDS}
    for key in LOOP:
        sample[key] = sample[key].cuda(non_blocking=True)   # copy
    return sample
"""


@pytest.mark.parametrize("loop", ["sample.keys()", "sample"])
@pytest.mark.parametrize("ids, reported", [
    ("torch.from_numpy(np.arange(n))", True),      # every entry pageable: each key's copy is
    ("torch.arange(n, pin_memory=True)", True),    # one pinned entry: the pageable one is copied on its turn
    ("torch.arange(n).cuda()", True),             # one on the GPU: likewise
])
def test_a_loop_over_a_dicts_keys_reads_each_entry_as_the_loop_found_it(loop, ids, reported):
    # `sample[key] = sample[key].cuda(...)` replaces the entries one by one; the read sees the
    # entry of this key, not what the loop stored under the keys before it (PointNeXt).
    src = KEYED.replace("IDS", ids).replace("LOOP", loop)
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if reported else [])
    pinned = src.replace("torch.from_numpy(np.zeros((n, 1), dtype=np.float32))", "torch.zeros(n, pin_memory=True)")
    assert rows(pinned, "PIN001") == ([row_of(src, "# copy")] if "from_numpy" in ids else [])


def test_a_key_of_another_dict_or_a_rebound_key_reads_as_before():
    src = KEYED.replace("IDS", "torch.from_numpy(np.arange(n))").replace("LOOP", "other.keys()").replace(
        "def upload(n):", "def upload(n, other):")
    assert "PIN001" not in codes(src)  # `other`'s keys may be anything: sample[key] of an unknown key


@pytest.mark.parametrize("base, reported", [("", True), ("(Base)", True), ("(np.ndarray)", False),
                                            ("(Unknown)", False)])
def test_an_object_of_the_checked_codes_own_class_is_no_array(base, reported):
    # A collate's `isinstance(first, np.ndarray)` arm is dead for an object of a class of the checked
    # code that derives from nothing else (torchsparse's SparseTensor, survey 33): only its own arm runs.
    src = f"""
import numpy as np
import torch
from elsewhere import Unknown
class Base:
    pass
class Cloud{base}:
    def __init__(self, feats):
        self.feats = feats
def collate(first):
    if isinstance(first, np.ndarray):
        return torch.zeros(3).cuda()
    return first.feats
def run():
    c = Cloud(torch.tensor(np.zeros((1000, 4))))
    return collate(c).to("cuda", non_blocking=True)   # copy
"""
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if reported else [])


MIXED = """
import numpy as np
import torch
def up(v):
    return v.cuda(non_blocking=True)
def run(n, flag):
    a = torch.empty(1 << 20, pin_memory=True)
    b = torch.zeros(1 << 20)
    d = {"a": a, "b": b}
    LOOP
"""


@pytest.mark.parametrize("loop, reported", [
    ("for t in [a, b]:\n        t.cuda(non_blocking=True)   # copy", True),
    ("for t in (a, b):\n        x = t.view(-1)\n        x.cuda(non_blocking=True)   # copy", True),
    ("for k, v in d.items():\n        v.to('cuda', non_blocking=True)   # copy", True),
    ("for v in d.values():\n        up(v)   # copy", True),
    ("for k in d:\n        d[k] = d[k].cuda(non_blocking=True)   # copy", True),
    # The copy may skip the pageable element: quiet.
    ("for t in (a, b):\n        if t.dim() > 3:\n            t.cuda(non_blocking=True)   # copy", False),
    ("for t in (a, b):\n        if flag:\n            break\n        t.cuda(non_blocking=True)   # copy", True),
    # Not a loop over the elements: one of them, either.
    ("first = next(iter(d.values()))\n    first.cuda(non_blocking=True)   # copy", False),
    ("t = a if flag else b\n    t.cuda(non_blocking=True)   # copy", False),
    ("for t in [a, a]:\n        t.cuda(non_blocking=True)   # copy", False),
])
def test_a_loop_copying_each_element_of_a_mixed_container_copies_its_pageable_ones(loop, reported):
    # sam3_trt's decoder inputs (survey 32): a dict of pinned encoder outputs and a pageable np.repeat
    # result, copied value by value; the pageable one is copied on its iteration.
    src = MIXED.replace("LOOP", loop)
    found = [f for f in findings(src) if f.code == "PIN001"]
    assert [f.location.row for f in found] == ([row_of(src, "# copy")] if reported else [])
    if reported:
        assert "torch.zeros" in found[0].message and "torch.empty" not in found[0].message


@pytest.mark.parametrize("arg, reported", [
    ("part.astype(np.float32)", True), ("part[:, 2:3].astype(np.float32)", True), ("part.copy()", True),
    ("part.astype(np.float32, copy=False)", False), ("part.transpose(2, 0, 1)", False), ("part", False)])
def test_from_numpy_of_what_a_numpy_method_makes_is_pageable(arg, reported):
    # torch.from_numpy takes a NumPy array only, and astype/copy always make a new one.
    src = f"""
import numpy as np
import torch
def up(part):
    return torch.from_numpy({arg}).cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


def test_a_keys_loop_reads_back_what_it_stored_under_the_key_this_iteration():
    src = """
import numpy as np
import torch
def pinned_first(n):
    d = {"a": torch.zeros(n), "b": torch.ones(n)}
    for k in d:
        d[k] = d[k].pin_memory()
        d[k].cuda(non_blocking=True)
def joined(n):
    d = {"a": [np.zeros(n)], "b": [np.ones(n)]}
    for k in d.keys():
        d[k] = np.concatenate(d[k])
        torch.from_numpy(d[k]).cuda(non_blocking=True)   # copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


@pytest.mark.parametrize("block", ["for stage in stages:", "with open('log') as log:", "while ready():"])
def test_helpers_a_script_defines_in_a_module_level_block_call_each_other(block):
    # XMem's train.py (survey 32): the script body runs in `for stage in ...:` and its nested helpers
    # call each other; `build` is the module's function where `renew` calls it.
    src = f"""
import numpy as np
import torch
stages = ["1", "2"]
def ready():
    return True
{block}
    def build(n):
        return torch.from_numpy(np.zeros((n, 1024), np.float32))
    def renew(n):
        return build(n)
    batch = renew(64)
    batch.cuda(non_blocking=True)   # copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


def test_a_property_setters_body_is_checked_as_a_method_is():
    # ChI-SOM's trainer (survey 34): the setter uploads a fresh pageable array on the object's stream.
    src = """
import numpy as np
from numba import cuda
class Trainer:
    def __init__(self):
        self._stream = cuda.stream()
    @property
    def codebook(self):
        return self._codebook
    @codebook.setter
    def codebook(self, cb):
        self._codebook = cuda.to_device(np.array(cb, dtype=np.float32), stream=self._stream)   # copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


@pytest.mark.parametrize("made, reported", [
    ("np.ndarray(shape=(n, 11), dtype=np.float32)", True),     # no buffer: a new array, as np.empty
    ("np.ndarray((n, 11), np.float32)", True),
    ("np.ndarray((n, 11), np.float32, buffer=cuda.pinned_array(n * 11, np.float32))", False),
    ("np.matmul(np.ones((n, 11), np.float32), np.eye(11, dtype=np.float32))", True),
    ("np.dot(w, w.T)", False),                                  # of values nothing explains
    ("np.linalg.inv(np.matmul(np.eye(11), np.eye(11)))", True),
])
def test_arrays_made_by_the_ndarray_constructor_and_products_are_pageable(made, reported):
    # MonteCarloRender's result arrays (survey 35); cuImageOps' np.matmul kernel weights.
    src = f"""
import numpy as np
from numba import cuda
def run(n, w):
    s = cuda.stream()
    h = {made}
    d = cuda.device_array((n, 11), np.float32, stream=s)
    d.copy_to_host(h, stream=s)   # copy
"""
    assert rows(src, "PIN001") == ([row_of(src, "# copy")] if reported else [])


_PAGE_LOCKED_BY_A_HELPER = """
import torch


def lock_one(t):
    torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)


def lock_all(tensors):
    rt = torch.cuda.cudart()
    for t in tensors:
        rt.cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)


class Staging:
    def __init__(self, n):
        self.buf = torch.zeros(n)
        {lock}

    def send(self, dev):
        return self.buf.to(dev, non_blocking=True)


def main(dev):
    s = Staging(1 << 20)
    for step in range(10):
        s.send(dev)
"""


@pytest.mark.parametrize("lock, reported", [
    ("lock_one(self.buf)", False),
    ("lock_all([self.buf])", False),
    ("lock_all((self.buf, torch.zeros(8)))", False),
    ("lock_all([torch.zeros(8)])", True),   # another buffer registered: this one stays pageable
    ("pass", True),
])
def test_a_buffer_a_helper_registers_in_place_is_pinned(lock, reported):
    """Registration pins the memory, whichever name reaches it: the list a helper loops over holds
    the caller's field, which is then page-locked (PQCache's slots). Reporting it pageable would
    offer a fix that allocates it pinned, and registering pinned memory fails."""
    src = _PAGE_LOCKED_BY_A_HELPER.format(lock=lock)
    assert ("PIN001" in codes(src)) == reported, src


_PINNED_ITEMS = """
import torch
from torch.utils.data import DataLoader, Dataset


class Chunks(Dataset):
    def __init__(self, n):
        self.items = [torch.randn(4096, 16).pin_memory() for _ in range(n)]

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def train(dev):
    loader = DataLoader(Chunks(8), {args})
    for x in loader:
        x = x.to(dev, non_blocking=True)
"""


@pytest.mark.parametrize("args, reported", [
    # One item per batch, no pinning, no workers: the batch is the dataset's own pinned tensor
    # (torchani's in-memory dataset).
    ("batch_size=None, pin_memory=False", False),
    ("batch_size=None, shuffle=True, num_workers=0", False),
    # Collated into new tensors, or sent from worker processes through shared memory: pageable.
    ("batch_size=4, pin_memory=False", True),
    ("batch_size=None, num_workers=2", True),
])
def test_a_loader_that_hands_the_datasets_items_through_keeps_their_memory(args, reported):
    src = _PINNED_ITEMS.replace("{args}", args)
    assert ("PIN001" in codes(src)) == reported, src


_STREAMED_ITEMS = """
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset


class Stream(IterableDataset):
    def __iter__(self):
        for _ in range(100):
            yield {item}


def train(dev):
    for x in DataLoader(Stream(), batch_size=None):
        x.to(dev, non_blocking=True)
"""


@pytest.mark.parametrize("item, reported", [
    ("torch.from_numpy(np.random.rand(4096, 512))", True),    # the-algorithm-ml's recap batches
    ("torch.randn(4096, 512).pin_memory()", False),
    ("torch.tensor([1, 2, 3])", False),                        # a few numbers, under the threshold
])
def test_an_iterable_datasets_items_are_what_its_iter_yields(item, reported):
    """A loader over an `IterableDataset` with `batch_size=None` hands on what `__iter__` yields."""
    src = _STREAMED_ITEMS.replace("{item}", item)
    assert [f.code for f in findings(src, Settings()) if f.code == "PIN001"] == (["PIN001"] if reported else [])


_FIELD_WALK = """
import dataclasses
import numpy as np
import torch


@dataclasses.dataclass
class Rows:
    dense: torch.Tensor
    ids: torch.Tensor

    def to(self, device, non_blocking=False):
        out = {}
        for k, v in {walk}.items():
            out[k] = v.to(device, non_blocking=non_blocking)
        return Rows(**out)


def send(device):
    rows = Rows(dense={made}, ids={made})
    return rows.to(device, non_blocking=True)
"""


@pytest.mark.parametrize("walk, made, origin", [
    ("vars(self)", "torch.zeros(1 << 20)", "`torch.zeros`"),
    ("self.__dict__", "torch.zeros(1 << 20)", "`torch.zeros`"),
    ("vars(self)", "torch.zeros(1 << 20, pin_memory=True)", None),
    # asdict deep-copies each field: new pageable tensors, whatever the originals were
    ("dataclasses.asdict(self)", "torch.zeros(1 << 20)", "`dataclasses.asdict`"),
    ("dataclasses.asdict(self)", "torch.zeros(1 << 20, pin_memory=True)", "`dataclasses.asdict`"),
])
def test_a_batch_class_moving_its_fields_one_by_one(walk, made, origin):
    """the-algorithm-ml's batch classes: `to()` walks the object's fields and moves each."""
    src = _FIELD_WALK.replace("{walk}", walk).replace("{made}", made)
    found = [f for f in findings(src) if f.code == "PIN001"]
    assert [f.location.row for f in found] == ([row_of(src, "return rows.to(")] if origin else [])
    if origin:
        assert f"allocated by {origin}" in found[0].message


def test_a_buffer_handed_to_a_constructor_is_named_by_its_own_allocation():
    src = """
import torch

class Holder:
    def __init__(self, dense):
        self.dense = dense

def send(device):
    x = torch.zeros(1 << 20)
    holder = Holder(x)
    holder.dense.to(device, non_blocking=True)
"""
    f = only(src, "PIN001")
    assert f"allocated by `torch.zeros` at line {row_of(src, 'x = torch.zeros')}" in f.message


@pytest.mark.parametrize("made, reported", [
    ("    ints = col.astype(np.int64)\n", True),                     # a new NumPy array, named first
    ("    ints = col.astype(np.int64, copy=False)\n", False),        # may be `col` itself
    ("    ints = col.astype(np.int64)\n    if flag:\n        ints = col\n", False),  # bound twice
    ("", False),                                                    # `ints` is the caller's (a parameter)
])
def test_from_numpy_of_a_name_bound_once_to_a_new_numpy_array_is_pageable(made, reported):
    """earth2studio: `ints = table[...].values.astype(np.int64)` then `torch.from_numpy(ints).to(dev,
    non_blocking=True)`, as pageable as the same call written inline."""
    src = ("import numpy as np\nimport torch\n\n\ndef send(col, dev, flag" + ("" if made else ", ints") + "):\n" + made +
           "    return torch.from_numpy(ints).to(dev, non_blocking=True)\n")
    assert ("PIN001" in codes(src)) == reported, src


@pytest.mark.parametrize("view, copy", [
    ("h.T", 'v.to("cuda", dtype=torch.float16, non_blocking=True)'),   # converted: through a contiguous copy
    ("h.permute(1, 0)", "d.copy_(v, non_blocking=True)"),              # into a tensor of another layout
    ("h.transpose(0, 1)", "d.copy_(v, non_blocking=True)"),
])
def test_torch_non_contiguous_view_of_pinned_memory_is_staged_through_a_pageable_copy(view, copy):
    # ATen copies a non-contiguous CPU source with `.contiguous()` into a new (pageable) CPU tensor
    # first where the layout or dtype changes: the pinning is wasted, and the source itself is free
    # again when the call returns (measured on an H100: bench/noncontiguous_pinned.py).
    src = f"""
import torch
h = torch.empty((1024, 1024), pin_memory=True)
d = torch.empty((1024, 1024), device="cuda")
v = {view}
r = {copy}
h[0] = 1
"""
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "r = ") and "Non-contiguous host view" in f.message and "new pageable tensor" in f.message
    assert codes(src) == ["PIN001"]  # no PIN006: what the GPU reads is PyTorch's copy, not `h`


@pytest.mark.parametrize("copy", ['v.to("cuda", non_blocking=True)', "v.cuda(non_blocking=True)",
                                  'v.to("cuda", dtype=torch.float32, non_blocking=True)'])
def test_torch_moves_a_dense_transposed_view_of_pinned_memory_as_it_is(copy):
    # `.to(device)` makes the destination with the view's strides: the pinned storage is copied
    # asynchronously as it is (measured: the call returns at once and a later write changes what
    # arrives), so no PIN001, and writing `h` before a synchronization is a race.
    src = f"""
import torch
h = torch.empty((1024, 1024), pin_memory=True)
v = h.T
r = {copy}
h[0] = 1
"""
    assert codes(src) == ["PIN006"]


@pytest.mark.parametrize("view", ["h", "h[:512]", "h[3]", "h[0, :512]", "h[:512, :]", "h[:, :]", "h[None, :8]",
                                  "h.T.contiguous().pin_memory()", "h[:, :512].contiguous().pin_memory()"])
def test_torch_contiguous_pinned_memory_or_a_dense_view_of_it_is_not_staged(view):
    src = f"""
import torch
h = torch.empty((1024, 1024), pin_memory=True)
r = {view}.to("cuda", non_blocking=True)
"""
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("view", ["h[:, :512]", "h[:, 0]", "h[..., :2]", "h[2:4, ::2]", "h[:8][:, :2]"])
@pytest.mark.parametrize("copy", ['.to("cuda", non_blocking=True)', ".cuda(non_blocking=True)"])
def test_torch_view_that_leaves_out_part_of_an_inner_dimension_is_staged(view, copy):
    # Not dense, so `.to` makes the destination contiguous and ATen copies the source into a new
    # pageable tensor first (measured on an H100: `pinned[:, :k].to("cuda")` 204 ms with 200 ms of
    # GPU work queued, as a pageable source; bench/noncontiguous_pinned.py). GFNet's `grid[:, :, :2]`.
    src = f"""
import torch
h = torch.empty((1024, 1024), pin_memory=True)
r = {view}{copy}
"""
    f = only(src, "PIN001")
    assert "Non-contiguous host view" in f.message and "new pageable tensor" in f.message


@pytest.mark.parametrize("pinned, field, reported", [
    ("True", 'batch["grid"][:, :, :2]', True),      # a slice of a pinned batch's tensor: staged
    ("True", 'batch["grid"]', False),                # the pinned tensor itself
    ("True", 'batch["grid"][:2]', False),            # leading rows: dense
    ("False", 'batch["grid"]', True),                # pageable anyway
])
def test_a_slice_of_a_pinned_batch_is_staged_where_it_is_not_dense(pinned, field, reported):
    # GFNet (survey 50 Y): `grid[:, :, :2].cuda(non_blocking=True)` of a pin_memory=True loader's batch
    src = f"""
import torch
from torch.utils.data import DataLoader


def train(dataset):
    loader = DataLoader(dataset, batch_size=4, num_workers=4, pin_memory={pinned})
    for batch in loader:
        grid = {field}.cuda(non_blocking=True)
        print(grid.sum())
"""
    assert ("PIN001" in codes(src)) == reported


_STACKED = """
import numpy as np
import torch
import pycuda.driver as cuda


def send(frames, d, s):
    x = {made}
    h = {host}
    cuda.memcpy_htod_async(d, h, s)
"""


@pytest.mark.parametrize("made, host, origin", [
    ("torch.stack(frames, dim=1)", "x.unsqueeze(0).numpy()", "torch.stack"),   # on the CPU: the stack's memory
    ("torch.cat(frames)", "x.numpy()", "torch.cat"),
    ("torch.stack(frames)", "x.numpy().astype(np.float32)", "ndarray.astype"),  # astype copies whatever x is
])
def test_a_new_tensor_of_unplaced_tensors_is_pageable_once_numpy_shows_it_on_the_cpu(made, host, origin):
    # torch.stack/cat of tensors nothing places makes new memory on their device; `.numpy()` raises for
    # a GPU tensor, so where it runs that memory is pageable CPU memory.
    src = _STACKED.format(made=made, host=host)
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "cuda.memcpy_htod_async") and f"`{origin}`" in f.message


@pytest.mark.parametrize("made, host", [
    ("torch.stack(frames)", "x.pin_memory().numpy()"),        # pinned by the code
    ("frames[0]", "x.numpy()"),                               # a tensor nothing explains: kind unknown
    ("torch.stack(frames)", "x"),                             # a torch tensor on an unknown device
])
def test_unplaced_or_pinned_tensors_stay_quiet(made, host):
    assert "PIN001" not in codes(_STACKED.format(made=made, host=host))


def test_a_non_blocking_copy_of_a_stack_of_unplaced_tensors_is_not_reported():
    # On the CPU it would be pageable; on the GPU there is no transfer at all: nothing to report.
    src = """
    import torch
    def send(frames, device):
        return torch.stack(frames).to(device, non_blocking=True)
    """
    assert codes(src) == []


@pytest.mark.parametrize("made, expected", [
    ("torch.as_tensor(p, dtype=torch.float32)", ["PIN001"]),   # another dtype: a new pageable tensor
    ("torch.asarray(p, dtype=torch.float64)", []),             # the dtype it has: the same pinned memory
    ("torch.as_tensor(p)", []),
    ("torch.as_tensor(h)", ["PIN001"]),
    ("torch.as_tensor(h, dtype=torch.float32)", ["PIN001"]),   # a tensor (with torch's methods), new memory
    ("torch.as_tensor(h, device='cpu')", ["PIN001"]),
    ("torch.as_tensor(h, device='cuda')", []),                 # already on the GPU: no transfer here
    ("torch.as_tensor(h, device=dev)", []),                    # a device nothing names
])
def test_torch_as_tensor_is_a_view_only_without_another_dtype_or_device(made, expected):
    src = f"""
import numpy as np
import torch
def f(dev):
    h = np.zeros((1024, 1024), dtype=np.float64)
    p = torch.empty(1 << 20, dtype=torch.float64, pin_memory=True).numpy()
    t = {made}
    return t.to("cuda", non_blocking=True)
"""
    assert [c for c in codes(src) if c == "PIN001"] == expected


@pytest.mark.parametrize("made", ["torch.sigmoid(p)", "p.sigmoid()", "torch.relu(p)", "p.clamp(0, 1)",
                                  "torch.nn.functional.softmax(p, dim=0)"])
def test_pointwise_math_of_a_pinned_tensor_is_a_new_pageable_tensor(made):
    # GS-Scale (survey 39): `dst.copy_(torch.sigmoid(pinned), non_blocking=True)`.
    src = f"""
import torch
p = torch.empty(1 << 20, pin_memory=True)
r = {made}.to("cuda", non_blocking=True)
"""
    f = only(src, "PIN001")
    assert f.location.row == row_of(src, "r = ")


@pytest.mark.parametrize("made", ["torch.flatten(p)", "torch.squeeze(p)", "p.view(-1)"])
def test_functions_that_may_return_a_view_of_a_pinned_tensor_stay_quiet(made):
    src = f"""
import torch
p = torch.empty(1 << 20, pin_memory=True)
r = {made}.to("cuda", non_blocking=True)
"""
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("made, origin", [
    ("np.unique(cloud, axis=0)", "np.unique"),                 # FDTD_sim (survey 40)
    ("np.nanmean(cloud, axis=0)", "np.nanmean"),               # semiphore (survey 40): a reduction along an axis
    ("cloud.sum(axis=1)", "ndarray.sum"),
    ("np.argsort(cloud[:, 0])", "np.argsort"),
])
def test_numpy_results_that_are_new_arrays_are_pageable(made, origin):
    src = f"""
import numpy as np
from numba import cuda

def upload(count):
    lane = cuda.stream()
    cloud = np.random.rand(count, 3)
    d = cuda.to_device({made}, stream=lane)
    lane.synchronize()
    return d
"""
    f = only(src, "PIN001")
    assert f"`{origin}`" in f.message


@pytest.mark.parametrize("made", ["np.nanmean(x, axis=0)", "x.sum(axis=0)"])
def test_numpy_results_of_arrays_nothing_explains_stay_unknown(made):
    # (a CuPy array's reduction is CuPy's: only a known host array's is a new host array)
    src = f"""
import numpy as np
from numba import cuda

def upload(x, lane):
    return cuda.to_device({made}, stream=lane)
"""
    assert codes(src) == []


def test_entries_picked_by_a_loop_over_constant_keys_are_those_entries():
    # fast_htSNE (survey 40): `coords, momentum = [table[k] for k in ("coords", "momentum")]` of a dict
    # that also holds a stream: each is one of those two device arrays, not anything in the dict.
    src = """
import numpy as np
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray


def halve(table):
    coords, momentum = [table[name] for name in ("coords", "momentum")]
    values = coords.get() * 0.5
    momentum.set_async(values, stream=table["queue"])


def start(n):
    halve({"coords": gpuarray.to_gpu(np.zeros(n, np.float32)),
           "momentum": gpuarray.to_gpu(np.zeros(n, np.float32)), "queue": drv.Stream()})
"""
    assert codes(src) == ["PIN001"]


def test_a_frame_of_an_array_stacked_from_a_list_of_frames_is_a_whole_frame():
    # HandheldSR (survey 40): `np.array(pile)` of 2-D frames, then `cuda.to_device(stack[k], stream=s)`.
    src = """
import numpy as np
from numba import cuda


def gather(count, side):
    pile = []
    for _ in range(count):
        pile.append(np.ones((side, side), dtype=np.uint16))
    return np.array(pile)


def upload(count, side):
    stack = gather(count, side)
    stream = cuda.stream()
    cuda.to_device(stack[0], stream=stream)
"""
    assert rows(src, "PIN001") == [row_of(src, "cuda.to_device(stack[0]")]


@pytest.mark.parametrize("view", ["np.ndarray((n,), dtype=np.float32, buffer=block.buf)",
                                  "np.frombuffer(block.buf, dtype=np.float32)"])
def test_a_shared_memory_block_is_pageable(view):
    # fast_htSNE (survey 40): a GUI window over `SharedMemory(create=True).buf`, the destination of
    # `get_async(stream=s, ary=window)`: an ordinary memory map.
    src = f"""
from multiprocessing import shared_memory
import numpy as np
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

def publish(n):
    lane = drv.Stream()
    block = shared_memory.SharedMemory(create=True, size=n * 4)
    window = {view}
    state = gpuarray.to_gpu(np.zeros(n, np.float32))
    state.get_async(stream=lane, ary=window)
"""
    f = only(src, "PIN001")
    assert "SharedMemory" in f.message


@pytest.mark.parametrize("body, reported", [
    # MedNeXt: the name holding the `astype` result was bound before, to the external result it converts
    ("w = gaussian_filter(np.zeros(shape), 2.0)\n        w = (w / w.max()).astype(np.float32)", True),
    ("w = gaussian_filter(np.zeros(shape), 2.0)\n        w = w.astype(np.float32)\n        n = 3", True),
    # something between rebinds it otherwise: nothing known
    ("w = gaussian_filter(np.zeros(shape), 2.0)\n        w = w.astype(np.float32)\n        if shape:\n            w = external(w)", False),
    ("w = w0.astype(np.float32)\n        for w in external(w):\n            pass", False),
])
def test_a_numpy_conversion_reaching_from_numpy_through_a_rebound_name(body, reported):
    src = f"""
    import numpy as np
    import torch
    from scipy.ndimage import gaussian_filter
    from elsewhere import external

    def upload_weights(shape, w0):
        {body}
        return torch.from_numpy(w).cuda(0, non_blocking=True)
    """
    assert codes(src) == (["PIN001"] if reported else [])


@pytest.mark.parametrize("data, reported", [
    ('torch.randn(1024, 1024, device="cuda")', False),  # a copy on its device: nothing crosses the bus
    ("np.random.rand(1024, 1024)", True),
])
def test_torch_tensor_of_a_cuda_tensor_is_a_cuda_tensor(data, reported):
    src = f"""
    import numpy as np
    import torch

    def run(device):
        g = {data}
        return torch.tensor(g).to(device, non_blocking=True)
    """
    assert codes(src) == (["PIN001"] if reported else [])


@pytest.mark.parametrize("returns, reported", [
    ("return (w / w.max()).astype(np.float32)", True),   # MedNeXt's _get_gaussian
    ("if shape:\n            return w.astype(np.float32)\n        return w.copy()", True),
    ("if shape:\n            return w.astype(np.float32)\n        return w", False),  # w as given on one path
    ("return w.astype(np.float32, copy=False)", False),
])
def test_a_helper_returning_a_numpy_conversion_of_what_nothing_explains(returns, reported):
    src = f"""
    import numpy as np
    import torch
    from imaging import gaussian_filter  # a library nothing here explains

    def make_weights(shape):
        w = gaussian_filter(np.zeros(shape), 2.0)
        {returns}

    def predict(shape):
        w = make_weights(shape)
        return torch.from_numpy(w).cuda(0, non_blocking=True)
    """
    assert codes(src) == (["PIN001"] if reported else [])


@pytest.mark.parametrize("decorator, params, call", [
    ("", "self, shape", "self.weights(shape)"),
    ("@staticmethod", "shape", "Predictor.weights(shape)"),
    ("@staticmethod", "shape", "self.weights(shape)"),
])
def test_a_method_returning_a_numpy_conversion_of_what_nothing_explains(decorator, params, call):
    # MedNeXt's `self._get_gaussian(...)` (survey 42), as a method of the predicting object
    src = f"""
    import numpy as np
    import torch
    from imaging import gaussian_filter  # a library nothing here explains

    class Predictor:
        {decorator}
        def weights({params}):
            w = gaussian_filter(np.zeros(shape), 2.0)
            return (w / w.max()).astype(np.float32)

        def predict(self, shape):
            w = {call}
            return torch.from_numpy(w).cuda(0, non_blocking=True)
    """
    assert codes(src) == ["PIN001"]
    # the same helper returning the array it is given on one path: perhaps not new memory
    assert codes(src.replace("return (w / w.max())", "return w if shape else (w / w.max())")) == []


@pytest.mark.parametrize("call, reported", [
    ("gaussian_filter(w, 2.0)", True),
    ("ndimage.zoom(w, 2)", True),
    ("ndimage.filters.gaussian_filter(w, 2.0)", True),  # the old module path (nnFormer)
    ("gaussian_filter(w, 2.0, output=out)", False),   # written into the pinned array it is given
    ("gaussian_filter(w, 2.0, output=np.float32)", False),  # a dtype there: nothing the tables say
])
def test_a_scipy_filter_of_a_host_array_is_a_new_pageable_array(call, reported):
    # MedNeXt's importance map (survey 42): a helper's gaussian_filter of a NumPy array, cast with
    # astype and cached on the object, uploaded with non_blocking=True on every prediction.
    src = source(f"""
        import numpy as np
        import torch
        from scipy import ndimage
        from scipy.ndimage import gaussian_filter


        class Predictor:
            def __init__(self):
                self._weights = None

            @staticmethod
            def _make_weights(shape):
                w = np.zeros(shape)
                out = torch.empty(shape, dtype=torch.float64).pin_memory().numpy()
                w = {call}
                return w

            def predict(self, shape):
                if self._weights is None:
                    w = self._make_weights(shape)
                    self._weights = w
                else:
                    w = self._weights
                return torch.from_numpy(w).cuda(0, non_blocking=True)
        """)
    assert rows(src, "PIN001") == ([row_of(src, "torch.from_numpy(w)")] if reported else [])


def test_names_unpacked_from_one_device_array_or_a_list_of_them_are_device_arrays():
    # median-cuda's partition loop (survey 45): a helper returns `dev[0]` for one input and the list
    # otherwise; `d_data, d_scratch = pair` names device arrays either way, and `d_data.set(chunk, s)`
    # of a pageable chunk on a non-blocking stream is the async copy it is.
    src = source("""
        import numpy as np
        import cupy as cp


        def to_gpu(host_list):
            dev = [cp.asarray(h) for h in host_list]
            if len(dev) == 1:
                return dev[0]
            return dev


        def run(volume, n_parts, step):
            d_data, d_scratch = to_gpu([volume[:step], volume[:step]])
            for k in range(n_parts):
                s = cp.cuda.Stream(non_blocking=True)
                d_data.set(volume[k * step:(k + 1) * step], s)
                s.synchronize()


        run(np.random.rand(64, 512, 512).astype(np.float32), 4, 16)
        """)
    assert rows(src, "PIN001") == [row_of(src, "run(np.random")]  # where the pageable volume is made


# ------------------------------------------------------------------ survey 47 (turn 26)
@pytest.mark.parametrize("item, reported", [
    ('{"mask": mask, "preview": np.array(raw)}', True),   # a NumPy value beside the tensor
    ('{"mask": mask}', True),
    ('{"preview": np.array(raw)}', False),                # no tensor: the helper sends nothing
    ('{"mask": pinned}', False),
])
def test_a_recursive_upload_helper_sends_each_value_of_a_dict_as_it_is(item, reported):
    # semantic-segmentation-pytorch's `async_copy_to` (survey 47 K): a helper that calls itself on
    # each value of a dict and sends only the tensors (`torch.is_tensor`); the dict's values are
    # taken one by one, and the helper is followed into its own recursive call.
    src = f"""
    import collections.abc
    import numpy as np
    import torch


    def upload(obj, dev):
        if torch.is_tensor(obj):
            return obj.cuda(dev, non_blocking=True)
        if isinstance(obj, collections.abc.Mapping):
            return {{key: upload(val, dev) for key, val in obj.items()}}
        return obj


    def evaluate(gpu):
        raw = np.random.randint(0, 150, (512, 512), dtype=np.uint8)
        mask = torch.from_numpy(raw).long() - 1
        pinned = torch.empty(512, 512, pin_memory=True)
        feed = upload({item}, gpu)
    """
    assert rows(src, "PIN001") == ([row_of(src, "feed = upload(")] if reported else [])


def test_a_comprehension_over_a_known_dict_keeps_its_entries_apart():
    src = """
    import numpy as np
    import torch


    def send(batch, dev):
        return {k: v.to(dev, non_blocking=True) for k, v in batch.items() if torch.is_tensor(v)}


    def main():
        batch = {"x": torch.empty(8, 3, pin_memory=True), "y": torch.zeros(8), "meta": np.zeros(3)}
        out = send(batch, "cuda")
        return out["x"]
    """
    found = only(src, "PIN001")
    assert found.location.row == row_of(src, "out = send(")
    assert "torch.zeros" in found.message  # the pageable entry, not the pinned one


def test_a_dict_copy_of_a_pinned_loader_item_holds_the_same_pinned_tensors():
    # survey 47 K: `feed = batch[0].copy()` of a pinned loader's dict is no NumPy `.copy()`.
    src = """
    import torch
    from torch.utils.data import DataLoader, Dataset


    def as_list(items):
        return items


    class Frames(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return {"frame": torch.rand(3, 512, 512), "name": str(i)}


    def evaluate(gpu):
        loader = DataLoader(Frames(), batch_size=1, collate_fn=as_list, pin_memory=True)
        for batch in loader:
            feed = batch[0].copy()
            feed["frame"].cuda(gpu, non_blocking=True)
    """
    assert codes(src) == []
    assert codes(src.replace("pin_memory=True", "pin_memory=False")) == ["PIN001"]


@pytest.mark.parametrize("call, reported", [
    ("model(crops)", True),
    ("model.forward(crops)", True),
    ("plain(crops)", False),     # no forward: calling it runs no method of the checked code
])
def test_calling_a_module_of_the_checked_code_runs_its_forward(call, reported):
    # multi-crop SSL (survey 47 K): `torch.cat` of pinned crops is new pageable memory, sent
    # non-blocking in `forward`, which `model(crops)` runs (nn.Module.__call__).
    src = f"""
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def forward(self, crops):
            return torch.cat(crops).cuda(non_blocking=True)


    class Plain(nn.Module):
        def encode(self, crops):
            return torch.cat(crops).cuda(non_blocking=True)


    def train(n):
        model, plain = Encoder(), Plain()
        crops = [torch.empty(4, 3, pin_memory=True), torch.empty(4, 3, pin_memory=True)]
        out = {call}
    """
    assert rows(src, "PIN001") == ([row_of(src, "out = ")] if reported else [])


def test_a_collate_returning_a_tuple_of_its_list_keeps_the_items_in_place():
    # DETR-style collate (survey 47 K): `return tuple(cols)` of `[padded, targets]`; the padded
    # object has no `pin_memory()`, so the pinned loader hands it on as the collate made it.
    src = """
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Padded:
        def __init__(self, data):
            self.data = data

        def to(self, device, non_blocking=False):
            return Padded(self.data.to(device, non_blocking=non_blocking))


    def collate(items):
        cols = [Padded(torch.zeros(len(items), 3, 800, 800)), [it[1] for it in items]]
        return tuple(cols)


    class Boxes(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return torch.rand(3, 600, 700), torch.rand(5, 4)


    def train(device):
        loader = DataLoader(Boxes(), batch_size=4, collate_fn=collate, pin_memory=True)
        for samples, targets in loader:
            samples = samples.to(device, non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "samples = samples.to(")]


@pytest.mark.parametrize("made", ["-100 * torch.ones(3, n).long()", "torch.ones(3, n) * 5", "torch.ones(3, n) + torch.ones(1, n)"])
def test_a_row_of_an_arithmetic_result_is_part_of_its_pageable_memory(made):
    # swav's label table (survey 47 K): `(-100 * torch.ones(...).long())[h]` sent non-blocking.
    src = f"""
    import torch


    def train(n):
        labels = {made}
        for h in range(3):
            labels[h].cuda(non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "labels[h].cuda(")]


@pytest.mark.parametrize("view", ["np.moveaxis(scaled, 2, 0)", "np.swapaxes(scaled, 0, 2)", "np.rollaxis(scaled, 2)",
                                  "np.flip(scaled, 0)", "np.transpose(scaled, (2, 0, 1))"])
def test_numpy_axis_reordering_views_keep_the_arrays_memory(view):
    # NVIDIA's FCN-ResNet101 TensorRT sample, copied into dettrack (survey 47 J): `np.moveaxis` of a
    # pageable image, made contiguous and sent with `memcpy_htod_async`.
    src = f"""
    import numpy as np
    import pycuda.driver as cuda


    def upload(picture, dbuf, s):
        scaled = np.asarray(picture).astype(np.float32) / 255.0
        chw = np.ascontiguousarray({view})
        cuda.memcpy_htod_async(dbuf, chw, s)
    """
    assert rows(src, "PIN001") == [row_of(src, "cuda.memcpy_htod_async(")]


@pytest.mark.parametrize("host, reported", [
    ('torch.load("pair.pth", map_location="cpu")[0].cpu().numpy()', True),   # a CPU tensor's .cpu() is itself
    ("torch.zeros(1024, 1024).cpu().numpy()", True),
    ("torch.empty(1024, 1024, pin_memory=True).cpu().numpy()", False),       # pinned, still itself
    ("torch.cat([boxes, scores]).data.cpu().numpy()", True),                 # `.data`: the same tensor
])
def test_cpu_of_a_cpu_tensor_and_its_data_attribute_are_the_same_memory(host, reported):
    # dettrack (survey 47 J): `left.cpu().numpy()` of a tensor `torch.load` restored to the CPU,
    # `dets.data.cpu().numpy()` of a concatenation, both sent asynchronously.
    src = f"""
    import torch
    import pycuda.driver as cuda


    def send(dbuf, s, boxes, scores):
        host = {host}
        cuda.memcpy_htod_async(dbuf, host, s)
    """
    assert rows(src, "PIN001") == ([row_of(src, "cuda.memcpy_htod_async(")] if reported else [])


@pytest.mark.parametrize("wrap", [
    "from apex import amp\n        model, optimizer = amp.initialize(model, optimizer, opt_level='O2')",
    "from apex import amp\n        model = amp.initialize(model)",
    "model = torch.compile(model)",
])
def test_a_model_handed_back_by_a_mixed_precision_or_compile_wrapper_keeps_its_methods(wrap):
    # Tacotron 2 and its forks (mellotron, survey 47 K): `if fp16: model, optimizer =
    # amp.initialize(...)`, then `model.parse_batch(batch)` uploading the collate's pageable tensors.
    src = f"""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset


    def to_gpu(x):
        x = x.contiguous()
        if torch.cuda.is_available():
            x = x.cuda(non_blocking=True)
        return x


    class Collate:
        def __call__(self, items):
            out = torch.FloatTensor(len(items), 80, 400)
            out.zero_()
            return out


    class Net(nn.Module):
        def parse_batch(self, batch):
            return to_gpu(batch)


    class Clips(Dataset):
        def __len__(self):
            return 100

        def __getitem__(self, i):
            return torch.randn(80, 400)


    def train(fp16):
        model = Net().cuda()
        optimizer = torch.optim.Adam(model.parameters())
        if fp16:
            {wrap}
        loader = DataLoader(Clips(), batch_size=8, pin_memory=False, collate_fn=Collate())
        for batch in loader:
            x = model.parse_batch(batch)
    """
    assert rows(src, "PIN001") == [row_of(src, "x = model.parse_batch(")]


@pytest.mark.parametrize("made, reported", [
    ("np.cos(np.mgrid[0:400, 0:600][0] * 0.01)", True),
    ("np.mgrid[0:400, 0:600].astype(np.float32)", True),
    ("np.cos(np.ogrid[-3.0:3.0:400j, -3.0:3.0:600j][0]) * np.ones((400, 600))", True),
    ("np.ogrid[0:4, 0:4][0].astype(np.float32)", False),        # 4 elements: under the size threshold
])
def test_numpy_index_grids_are_new_pageable_arrays(made, reported, monkeypatch):
    # marching squares on cuda-python (survey 48 P): a field computed over `np.ogrid[...]` sent with
    # `cuMemcpyHtoDAsync`.
    monkeypatch.setattr(helpers, "Settings", Settings)   # the default size threshold
    src = f"""
    import numpy as np
    from cuda import cuda

    err, dev = cuda.cuMemAlloc(400 * 600 * 8)
    err, strm = cuda.cuStreamCreate(0)
    field = {made}
    cuda.cuMemcpyHtoDAsync(dev, field.ctypes.data, field.nbytes, strm)
    """
    assert rows(src, "PIN001") == ([row_of(src, "cuda.cuMemcpyHtoDAsync(")] if reported else [])


@pytest.mark.parametrize("band, reported", [
    ("torch.zeros((x.shape[0], 1, 64, 64))", True),            # on the CPU: so is the whole result
    ('torch.zeros((x.shape[0], 1, 64, 64), device="cuda")', False),  # on the GPU: so is the result
    ("make_band(x)", False),                                     # nothing says where
])
def test_a_cat_with_one_tensor_surely_on_the_host_is_made_on_the_host(band, reported):
    # SSL4EO-S12 (survey 50 AG): a zero band made on the CPU spliced between a batch's bands; cat
    # needs all its tensors on one device, so the result is a new pageable CPU tensor.
    src = f"""
import torch
from bands import make_band


def pad(x):
    b = {band}
    y = torch.cat((x[:, :10], b, x[:, 10:]), dim=1)
    return y.cuda(non_blocking=True)
"""
    assert rows(src, "PIN001") == ([row_of(src, "return y.cuda")] if reported else [])


@pytest.mark.parametrize("wrap", ["each(loader)", "logger.log_every(loader, 20)", "forever(loader)", "loader"])
def test_a_generator_that_hands_on_a_loaders_batches_gives_those_batches(wrap):
    # DINO/MAE's `MetricLogger.log_every(data_loader, ...)` (SSL4EO-S12, survey 50 AG): a generator of
    # the tree that yields each batch as it is.
    src = f"""
import torch
from torch.utils.data import DataLoader


def each(iterable):
    for obj in iterable:
        yield obj


def forever(iterable):
    while True:
        for obj in iterable:
            yield obj


class MetricLogger:
    def log_every(self, iterable, print_freq):
        for i, obj in enumerate(iterable):
            if i % print_freq == 0:
                print(i)
            yield obj


def train(ds):
    logger = MetricLogger()
    loader = DataLoader(ds, batch_size=64, pin_memory=False)
    for images, target in {wrap}:
        images = images.cuda(non_blocking=True)
"""
    assert rows(src, "PIN001") == [row_of(src, "images = images.cuda")]


def test_what_a_generator_makes_on_each_step_is_new_on_each_iteration_of_its_consumer():
    src = """
import numpy as np
import cupy as cp


def frames(files):
    for f in files:
        yield np.load(f)


def main(files):
    for a in frames(files):
        d = cp.asarray(a)
"""
    assert codes(src) == []


@pytest.mark.parametrize("call, reported", [
    ('extract("cuda")', True),                         # loader left at None: the one extract builds
    ('extract("cuda", loader=pinned_loader())', False),  # the caller's, pinned
])
def test_a_loader_built_when_the_parameter_is_left_at_none_is_the_one_walked(call, reported):
    # nfl2022's extract_feats_for_all_train_data (survey 50 AG): `if loader is None: loader =
    # get_loader()`, then `for b in loader:` sending each batch with `.to(device, non_blocking=True)`.
    src = f"""
import torch
from torch.utils.data import DataLoader


def get_loader():
    return DataLoader(FRAMES, batch_size=8, pin_memory=False)


def pinned_loader():
    return DataLoader(FRAMES, batch_size=8, pin_memory=True)


def to_dev(batch, device):
    out = {{}}
    for k in batch.keys():
        out[k] = batch[k].to(device, non_blocking=True)
    return out


def extract(device, loader=None):
    if loader is None:
        loader = get_loader()
    res = []
    for b in loader:
        b = to_dev(b, device)
        res.append(b["x"].mean())
    return res


FRAMES = list(range(64))
{call}
"""
    assert rows(src, "PIN001") == ([row_of(src, call)] if reported else [])


@pytest.mark.parametrize("annotation, reported", [
    ("list[int]", False),            # Python numbers: a step's index metadata
    ("Optional[List[int]]", False),
    ("tuple[int, ...]", False),
    ("list", True),                  # nothing says what it holds
    ("np.ndarray", True),
])
def test_a_field_annotated_as_a_list_of_numbers_holds_python_numbers(annotation, reported):
    # tokasaurus (survey 50 AJ): a dataclass taken off a queue, `torch.tensor(inp.positions)` each step.
    src = f"""
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch


@dataclass
class StepInput:
    positions: {annotation}


def preprocess(q):
    inp: StepInput = q.get()
    positions = torch.tensor(inp.positions, dtype=torch.long)
    return positions.to("cuda", non_blocking=True)
"""
    assert ("PIN001" in codes(src, Settings())) == reported  # the default threshold: what the numbers are matters


@pytest.mark.parametrize("take", ['batch.pop("img")', 'batch["img"]', 'batch.get("img")'])
def test_a_tensor_popped_out_of_a_batch_is_the_batchs(take):
    # HCP-Diffusion (survey 50 AK): `data.pop('img').to(device, non_blocking=True)`.
    src = f"""
import torch
from torch.utils.data import DataLoader


def train(ds):
    for batch in DataLoader(ds, batch_size=8):
        img = {take}.to("cuda", non_blocking=True)
"""
    assert rows(src, "PIN001") == [row_of(src, "img = ")]


@pytest.mark.parametrize("made", ["torch.Tensor(x)", "torch.FloatTensor(x)", "torch.Tensor(4096, 1024)"])
def test_the_base_tensor_class_called_makes_a_new_pageable_tensor(made):
    # selene (survey 50 AM): `torch.Tensor(inputs).to("cuda", non_blocking=True)` every step.
    src = f"""
import numpy as np
import torch


def step(x):
    t = {made}
    return t.to("cuda", non_blocking=True)
"""
    assert rows(src, "PIN001") == [row_of(src, "return t.to")]


@pytest.mark.parametrize("made, reported", [
    ('latent.cpu().numpy().astype("float32")', True),          # a read-back's NumPy array, converted
    ('latent.detach().cpu().numpy().astype(np.float32)', True),
    ('latent.numpy().astype(np.float32)', False),              # `.numpy()` alone names no library
    ('latent.cpu().numpy()', False),                           # its memory: unknown
])
def test_a_read_back_tensors_numpy_array_converted_is_a_new_pageable_array(made, reported):
    # Self-Forcing's TensorRT VAE (survey 50 AK): `.cpu().numpy().astype(...)`, then memcpy_htod_async.
    src = f"""
import numpy as np
import pycuda.driver as cuda


def upload(latent, stream, dev):
    z = {made}
    cuda.memcpy_htod_async(dev, z, stream)
    stream.synchronize()
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("setting, reported", [
    ('torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")', False),
    ('torch.set_default_device("cuda")', False),
    ("torch.set_default_tensor_type(torch.cuda.FloatTensor)", False),
    ('torch.set_default_device("cpu")', True),   # still the CPU
    ("", True),
])
def test_a_module_that_moves_the_default_device_makes_its_tensors_there(setting, reported):
    # evox's tests (survey 50 AO): `torch.set_default_device("cuda")` first, then a TensorDataset of
    # `torch.randn` tensors batched by a DataLoader and sent with non_blocking=True: GPU to GPU.
    src = f"""
import torch
from torch.utils.data import DataLoader, TensorDataset


def test_loader():
    {setting}
    data = TensorDataset(torch.randn(4096, 1024), torch.randint(0, 10, (4096,)))
    for x, y in DataLoader(data, batch_size=256):
        x = x.to("cuda:0", non_blocking=True)
    h = torch.randn(4096, 1024)
    d = h.to("cuda:0", non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("case, reported", [
    ("case StepInput():\n            inp = command", False),       # Python numbers: the metadata idiom
    ("case StepInput() as inp:\n            pass", False),
    ("case _:\n            inp = command", True),                 # nothing says what it is
])
def test_a_class_pattern_of_a_match_narrows_its_subject(case, reported):
    # tokasaurus's workers (survey 50 AJ): `match command: case ModelInput(): inp = command`.
    src = f"""
from dataclasses import dataclass

import torch


@dataclass
class StepInput:
    positions: list[int]


def step(q):
    command = q.get()
    match command:
        {case}
    positions = torch.tensor(inp.positions, dtype=torch.long)
    return positions.to("cuda", non_blocking=True)
"""
    assert ("PIN001" in codes(src, Settings())) == reported


@pytest.mark.parametrize("helper, call", [
    ("def place(model, gpu):\n    return model.cuda(gpu)", "model = place(Model(), 0)"),
    ("def place(model, args):\n    return model, args", "model, args = place(Model(), None)"),
    ("def place(model, args):\n    return model.cuda().train(), args", "model, args = place(Model(), None)"),
])
def test_a_model_handed_back_by_a_helper_is_the_callers(helper, call):
    # DepthContrast (survey 50 Y): `model, args = main_utils.distribute_model_to_cuda(model, args)`
    # returning `model.cuda(gpu)`; its forward sends a pageable loader's batch with non_blocking=True.
    src = f"""
import torch
from torch.utils.data import DataLoader


class Model(torch.nn.Module):
    def forward(self, batch):
        return batch["points"].cuda(non_blocking=True)


{helper}


def main(ds):
    {call}
    for sample in DataLoader(ds, batch_size=8, pin_memory=False):
        model(sample)
"""
    assert rows(src, "PIN001") == [row_of(src, "model(sample)")]


_LABELLED_BAGS = """
import torch
from torch.utils.data import DataLoader, Dataset


class Bags(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.load(f"bag_{{i}}.pt"), {label}


def bag_collate(items):
    feats = torch.cat([it[0] for it in items], dim=0)
    target = {target}
    return [feats, target]


def evaluate(dev, bs):
    loader = DataLoader(Bags(), batch_size={batch}{collate})
    for feats, target in loader:
        feats = feats.to(dev, non_blocking=True)  # feats
        target = target.to(dev, non_blocking=True)  # target
"""


@pytest.mark.parametrize("label, target, batch, collate, reported", [
    # a collate function's label tensor of Python ints is small; the features stay the loader's (CLAM)
    ("i % 2", "torch.LongTensor([it[1] for it in items])", "1", ", collate_fn=bag_collate", ["# feats"]),
    ("i % 2", "torch.zeros(1 << 20)", "1", ", collate_fn=bag_collate", ["# feats", "# target"]),
    # the default collate turns the dataset's index into a tensor of batch-size numbers (HIPT)
    ("i", "None", "bs", "", ["# feats"]),
    ("i", "None", "8", "", ["# feats"]),
    ("torch.zeros(1 << 20)", "None", "bs", "", ["# feats", "# target"]),
])
def test_small_fields_of_a_collated_batch_stay_small(label, target, batch, collate, reported):
    src = _LABELLED_BAGS.format(label=label, target=target, batch=batch, collate=collate)
    found = [f.location.row for f in findings(src, Settings()) if f.code == "PIN001"]  # the default threshold
    assert found == [row_of(src, marker) for marker in reported], src


@pytest.mark.parametrize("made", ["dict(zip(names, loaders))", "dict(list(zip(names, loaders)))",
                                  "dict([(n, l) for n, l in zip(names, loaders)])"])
@pytest.mark.parametrize("pin, reported", [("False", True), ("True", False)])
def test_a_dict_of_loaders_built_from_pairs_hands_out_their_batches(made, pin, reported):
    # VideoMamba (survey 52 BI): the loaders of each task kept as `dict(list(zip(names, loaders)))`
    # and drawn by name in the training loop.
    src = f"""
import torch
from torch.utils.data import DataLoader


def train(ds, names, dev):
    loaders = [DataLoader(ds, batch_size=8, pin_memory={pin}) for _ in names]
    by_name = {made}
    for name in names:
        for clip in by_name[name]:
            clip = clip.to(dev, non_blocking=True)
"""
    assert ("PIN001" in codes(src, Settings())) == reported


_HOLDERS_REFILLED = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv


class Slot:
    def __init__(self, tag, host, dev):
        self.tag = tag
        self.host = host
        self.dev = dev


def make_slots(sizes):
    slots = []
    for tag, n in sizes.items():
        h = drv.pagelocked_empty(n, np.float32)
        slots.append(Slot(tag, h, drv.mem_alloc(h.nbytes)))
    return slots


def infer(frame, sizes, stream):
    slots = make_slots(sizes)
    pixels = np.ascontiguousarray(frame.transpose(2, 0, 1), dtype=np.float32)
    for s in slots:
{refill}
    for s in slots:
        drv.memcpy_htod_async(s.dev, s.host, stream)  # the copy
    stream.synchronize()


infer(np.random.rand(480, 800, 3), {{"pixels": 3 * 480 * 800}}, drv.Stream())
"""


@pytest.mark.parametrize("refill, reported", [
    # every holder's pinned buffer swapped for the new pageable array (BEVFormer_tensorrt, survey 53 CA)
    ("        s.host = pixels.reshape(-1)", True),
    ("        if s.tag == 'pixels':\n            s.host = pixels.reshape(-1)\n        else:\n"
     "            raise KeyError(s.tag)", True),
    # only some holders swapped: the others still copy pinned memory
    ("        if s.tag == 'pixels':\n            s.host = pixels.reshape(-1)", False),
    ("        if s.tag != 'pixels':\n            continue\n        s.host = pixels.reshape(-1)", False),
    ("        s.host = pixels.reshape(-1)\n        break", False),
    # filled in place: the pinned buffers stay
    ("        np.copyto(s.host, pixels.reshape(-1))", False),
])
def test_a_loop_that_sets_a_field_of_each_holder_changes_every_holder(refill, reported):
    src = _HOLDERS_REFILLED.format(refill=refill)
    assert bool(rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("shape", ["unsqueeze_(0)", "squeeze_()", "t_()", "transpose_(0, 1)", "detach_()",
                                   "unsqueeze(0)"])
def test_an_in_place_shape_change_is_the_same_pageable_tensor(shape):
    # SRGAN-PyTorch's inference (survey 53 CB): `image_to_tensor(img).unsqueeze_(0).to(dev, non_blocking=True)`
    src = f"""
import numpy as np
import torch

def send(dev):
    raw = np.random.randint(0, 255, size=(1080, 1920, 3), dtype=np.uint8)
    t = torch.from_numpy(raw.astype(np.float32) / 255.0).{shape}
    return t.to(dev, non_blocking=True)  # the copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# the copy")]


@pytest.mark.parametrize("found, reported", [
    ("ids.numpy().tolist().index(SEP)", False),    # a position in a list: one int per item
    ("list(range(52)).count(3)", False),
    ("ids.numpy().astype(np.int64)", True),        # the token ids themselves
])
def test_a_position_found_in_a_list_is_one_number_per_item(found, reported):
    # Chinese-CLIP (survey 53 CF): each item's end-of-text position, found with `list.index`, is
    # collated into a tensor of batch-size ints.
    src = f"""
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader

SEP = 102


class Pairs(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        ids = torch.randint(0, 1000, (52,))
        return {found}


def train(rank):
    for pos in DataLoader(Pairs(), batch_size=2048, pin_memory=False):
        pos = pos.cuda(rank, non_blocking=True)  # the copy
"""
    assert bool(rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("walk", [
    "it = iter(loader)\n    while True:\n        batch = next(it, None)\n        if batch is None:\n            break\n"
    "        feats.append(model(batch.cuda()).cpu())",
    "it = iter(loader)\n    while True:\n        batch = next(it, None)\n        if batch is not None:\n"
    "            feats.append(model(batch.cuda()).cpu())\n        else:\n            break",
    "for batch in loader:\n        feats.append(model(batch.cuda()).cpu())",
])
def test_a_loader_walked_with_next_and_a_none_default_ends_its_loop(walk):
    # open_clip's evaluation (survey 53 CF) walks the loader with `batch = next(it, None)` and leaves at
    # `if batch is None: break`; the features it downloads are then joined and uploaded again.
    src = f"""
import torch
from torch.utils.data import DataLoader

def evaluate(model, ds, device):
    loader = DataLoader(ds, batch_size=256, pin_memory=True)
    feats = []
    {walk}
    joined = torch.cat(feats)
    return joined.to(device, non_blocking=True)  # the copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# the copy")], src


@pytest.mark.parametrize("order, reported", [
    ("permute(1, 0, 2, 3, 4)", True),      # five dimensions: views[k] is a 4-D view of the stack
    ("permute((1, 0, 2, 3, 4))", True),
    ("permute(0)", False),                 # one dimension: views[k] is one number
])
def test_a_row_of_a_permuted_stack_is_a_view_of_it(order, reported):
    # FKD's soft-label generation (survey 53 CB): the loader's crops are stacked, reordered to one
    # row per sample, and each sample's crops `views[k]` sent non-blocking.
    src = f"""
import torch

def label(crops, net, gpu):
    views = torch.stack(crops, dim=0).{order}
    for k in range(views.size(0)):
        x = views[k].cuda(gpu, non_blocking=True)
        net(x)

label([torch.rand(32, 3, 224, 224) for _ in range(4)], None, 0)  # the call
"""
    # (the crops come from the call: reported there, where the evidence meets)
    assert (row_of(src, "# the call") in rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("read, reported", [
    ("raw = f.read(n)", True),                 # new bytes each frame: a pageable array over them
    ("raw = os.read(fd, n)", True),
    ("raw = reader.read(n)", False),           # `read` of an object nothing explains
])
def test_a_frame_read_from_a_file_object_is_pageable(read, reported):
    # Poser2's raw-video reader (survey 53 CE): `np.frombuffer(f.read(n), np.uint8)` per frame, uploaded
    # non-blocking on a side stream.
    src = f"""
import os
import numpy as np
import torch

def play(path, reader, h, w):
    side = torch.cuda.Stream()
    n = h * w * 3
    fd = os.open(path, os.O_RDONLY)
    with open(path, "rb") as f:
        while True:
            {read}
            if not raw:
                break
            frame = np.frombuffer(raw, np.uint8).reshape(h, w, 3)
            with torch.cuda.stream(side):
                torch.from_numpy(frame).cuda(non_blocking=True)  # the copy
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001")) is reported, src


@pytest.mark.parametrize("made, named", [("np.asarray", "np.asarray"), ("np.asanyarray", "np.asanyarray"),
                                         ("np.array", "np.array")])
def test_a_list_made_into_an_array_is_named_as_written(made, named):
    # survey 54 DB (espnet-trt): `np.asarray([...])` was reported as "allocated by `np.array`".
    src = f"""
import cupy as cp
import numpy as np


def run(a, b, c):
    v = {made}([a, b, c] * 200000, dtype=np.float32)
    d = cp.empty(v.shape, dtype=v.dtype)
    d.set(v, stream=cp.cuda.Stream(non_blocking=True))
"""
    assert f"(allocated by `{named}` at line 6)" in only(src, "PIN001").message


@pytest.mark.parametrize("made, reported", [
    # one Python number per request: an index or length array, small whatever the batch
    ("np.fromiter(map(slot_of.get, order), dtype=np.int32, count=len(order))", False),
    ("np.zeros(len(req_ids), dtype=np.int32)", False),
    ("np.empty(len(req_ids) + 1, dtype=np.int32)", False),
    ("np.zeros(len(slot_of), dtype=np.int32)", False),
    ("np.zeros(n_tokens, dtype=np.int32)", True),        # a count nothing here ties to Python objects
    ("np.zeros(len(features), dtype=np.int32)", True),   # the length of an array: its rows
])
def test_per_request_index_arrays_are_small(made, reported):
    # aphrodite-engine's model runner (survey 54 DF): per-request slots, lengths and cu-lengths are
    # built from Python values and uploaded with non_blocking=True each step.
    src = f"""
import numpy as np
import torch


def prepare(req_ids: list, slot_of: dict, features: np.ndarray, n_tokens, dev):
    order = sorted(slot_of)
    arr = {made}
    dst = torch.empty(arr.shape, dtype=torch.int32, device=dev)
    dst.copy_(torch.from_numpy(arr), non_blocking=True)  # the copy
    return dst
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("loader, reported", [
    ("from torch_geometric.loader import DataLoader", True),
    ("from torch_geometric.data import DataLoader", True),    # its older place
    ("from torch.utils.data import DataLoader", True),
    ("from mygraphs.loading import DataLoader", False),        # nothing here tells what it is
])
def test_a_graph_loader_s_unpinned_batches_are_pageable(loader, reported):
    # SevenNet's trainer (survey 54 DG): PyTorch Geometric's DataLoader, a torch DataLoader whose
    # pin_memory is left at False, and each graph batch copied with non_blocking=True.
    src = f"""
import torch
{loader}


def epoch(net, graphs, device):
    for batch in DataLoader(graphs, batch_size=8, shuffle=True):
        batch = batch.to(device, non_blocking=True)  # the copy
        net(batch.pos).sum().backward()
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("loaders, reported", [
    ("[self.loader] if not isinstance(self.loader, list) else self.loader", True),
    ("self.loader if isinstance(self.loader, (list, tuple)) else [self.loader]", True),
    ("[self.loader]", True),
])
def test_one_loader_or_a_list_of_them(loaders, reported):
    # deepinv's Trainer (survey 54 DG, a miss): one DataLoader or a list of them, a list of their
    # iterators, `next(its[0])`, and each batch copied with non_blocking=True; `isinstance(loader,
    # list)` of a DataLoader is False, so the list holds the loader.
    src = f"""
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader


@dataclass
class Fitter:
    net: torch.nn.Module
    loader: DataLoader
    device: str = "cuda"

    def fit(self, epochs):
        loaders = {loaders}
        for _ in range(epochs):
            its = [iter(dl) for dl in loaders]
            for _ in range(len(loaders[0])):
                x, y = next(its[0])
                self.net(x.to(self.device, non_blocking=True), y)


pairs = [(torch.randn(3, 256, 256), torch.randn(3, 256, 256)) for _ in range(64)]
Fitter(torch.nn.Bilinear(256, 256, 1).cuda(), DataLoader(pairs, batch_size=8)).fit(3)  # the call
"""
    assert (row_of(src, "# the call") in rows(src, "PIN001", Settings())) is reported, src


_BUFFER_MODULE = """
import torch
from torch import nn
from torch.utils.data import DataLoader


class Stacker(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("marker", torch.zeros(1))
        self.total = torch.zeros(8)  # a plain field: stays on the CPU whatever happens to the module

    def where(self):
        return self.marker.device

    def add_all(self, frames, workers):
        total = 0
        for batch in DataLoader(frames, batch_size=8, num_workers=workers, pin_memory=workers > 0):
            total = total + batch.to(self.where(), non_blocking=True).sum()  # the copy
        return total


class Holder:
    def __init__(self):
        self.stacker = Stacker()

    def run(self, frames):
        return self.stacker.add_all(frames, 0)  # through a field


def place(module):
    module.cuda()


def test(frames, device):
{body}
"""


@pytest.mark.parametrize("body, reported", [
    ("    acc = Stacker()\n    acc.add_all(frames, 0)  # the call", False),
    ("    acc = Stacker()\n    acc.to(device='cpu')\n    acc.add_all(frames, 0)  # the call", False),
    ("    acc = Stacker().cpu()\n    acc.eval()\n    acc.add_all(frames, 0)  # the call", False),
    ("    acc = Stacker()\n    acc.cuda()\n    acc.add_all(frames, 0)  # the call", True),
    ("    acc = Stacker()\n    acc.to(device)\n    acc.add_all(frames, 0)  # the call", True),
    ("    acc = Stacker()\n    other = acc\n    other.cuda()\n    acc.add_all(frames, 0)  # the call", True),
    ("    acc = Stacker()\n    place(acc)\n    acc.add_all(frames, 0)  # the call", True),
    ("    acc = Stacker()\n    torch.compile(acc)\n    acc.add_all(frames, 0)  # the call", False),
    ("    acc = Stacker()\n    wrap_for_devices(acc)\n    acc.add_all(frames, 0)  # the call", True),
    ("    accs = [Stacker()]\n    for a in accs:\n        a.cuda()\n    accs[0].add_all(frames, 0)  # the call", True),
    ("    acc = Stacker() if device == 'cpu' else Stacker().cuda()\n    acc.add_all(frames, 0)  # the call", True),
])
def test_a_registered_buffer_is_where_the_code_put_its_module(body, reported):
    # cryoPARES (survey 54 DG, 13 false findings): a module asks where it runs with the device of a
    # registered buffer; its tests construct it and never move it, so the copy there is CPU to CPU.
    # A buffer moves with `module.cuda()` / `.to(device)`; code nothing here explains
    # (`wrap_for_devices`), a field, or another name holding the module may move it.
    src = _BUFFER_MODULE.format(body=body)
    assert (row_of(src, "# the call") in rows(src, "PIN001", Settings())) is reported, src


def test_a_module_never_constructed_here_keeps_its_buffer_device_unknown():
    # On an object nothing here says where it is, a buffer's device is unknown: a GPU, as before.
    src = _BUFFER_MODULE.format(body="    pass") + """

def test_given(acc: Stacker, frames):
    acc.add_all(frames, 0)  # the call
"""
    found = rows(src, "PIN001", Settings())
    assert row_of(src, "# the call") in found, src
    # a module kept in a field may be moved by any method: its buffers' device is unknown there
    assert row_of(src, "# through a field") in found, src


@pytest.mark.parametrize("copied, reported", [
    ("holders[k].host", True),   # what the loop just stored at that index
    ("holders[j].host", False),  # another index: one of them was changed, maybe this one
])
def test_a_holder_picked_by_a_loop_index_holds_what_the_loop_stored_there(copied, reported):
    # sam-hq-tensorrt's runner (survey 55 EB): `for k in range(len(self.inputs)): self.inputs[k].host =
    # feeds[k]` then `memcpy_htod_async(..., self.inputs[k].host, stream)`.
    src = f"""
import numpy as np
import pycuda.driver as drv


class Holder:
    def __init__(self, host, dev):
        self.host = host
        self.dev = dev


def run(feeds, j):
    q = drv.Stream()
    pinned = drv.pagelocked_empty(1 << 20, np.float32)
    holders = [Holder(pinned, drv.mem_alloc(pinned.nbytes)), Holder(pinned, drv.mem_alloc(pinned.nbytes))]
    big = np.zeros((1, 1, 1024, 1024), dtype=np.float32)
    for k in range(len(holders)):
        holders[k].host = big
        drv.memcpy_htod_async(holders[k].dev, {copied}, q)  # the copy
    q.synchronize()
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("call, reported", [
    ("upload_all(*chunks)", True),            # a list spread into the *args parameter
    ("upload_all(first, *chunks)", True),
    ("upload_all(*pinned)", False),           # pinned tensors: the copies overlap
    ("upload_all(*chunks, **options)", False),  # a mapping nothing spells out may fill any parameter
])
def test_a_list_spread_into_star_args_is_what_the_loop_walks(call, reported):
    # PyTorch's pinned-memory tutorial (survey 55 EH): `def upload_all(*chunks)` copying each with
    # non_blocking=True, called with a list of pageable tensors spread into it.
    src = f"""
import torch


def upload_all(*chunks, device="cuda:0"):
    out = []
    for c in chunks:
        out.append(c.to(device, non_blocking=True))
    torch.cuda.synchronize()
    return out


def main(options):
    chunks = [torch.rand(1 << 20) for _ in range(64)]
    pinned = [torch.rand(1 << 20).pin_memory() for _ in range(64)]
    first = chunks[0]
    return {call}  # the call
"""
    assert (row_of(src, "# the call") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("made, reported", [
    ('w.detach().to("cpu", copy=True)', True),    # PyTorch's: a new CPU tensor in ordinary memory
    ('w.detach().to("cpu")', False),              # the tensor itself if it is on the CPU: memory unknown
    ('w.to("m", copy=True)', False),               # not a device: another library's `to` (a unit)
])
def test_a_cpu_copy_of_a_tensor_nothing_places_is_pageable(made, reported):
    # ComfyUI-DGLS (survey 55 EA): each weight's CPU master, uploaded with non_blocking=True when its
    # layer is swapped in.
    src = f"""
import torch


def stage(w):
    master = {made}
    slot = torch.empty(1 << 20, device="cuda")
    slot.copy_(master, non_blocking=True)  # the copy
    return slot
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("between, reported", [
    ("", True),                           # read back at the same key: the buffer just stored
    ("slot = other_slot", False),         # another key: whatever the dict holds there
    ("st = other_state", False),          # another dict
])
def test_a_buffer_stored_in_a_dict_nothing_here_made_is_read_back_at_its_key(between, reported):
    # ms-swift's optimizer-state offload (survey 55 EF): `st[slot] = torch.empty_like(v, device="cpu")`
    # in an optimizer's own state dict, then `st[slot].copy_(v, non_blocking=True)`.
    src = f"""
import torch


def offload(optimizer, other_slot, other_state):
    for st in optimizer.state.values():
        for name, val in list(st.items()):
            slot = f"{{name}}_cpu_copy"
            st[slot] = torch.empty_like(val, device="cpu")
            {between}
            st[slot].copy_(val.cuda(), non_blocking=True)  # the copy
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


@pytest.mark.parametrize("view", ["pos.unsqueeze(0).expand_as(tokens)", "pos.view_as(tokens)",
                                  "pos.broadcast_to((4, 8192))", "pos.movedim(0, -1)"])
def test_a_broadcast_view_of_a_pageable_tensor_is_that_memory(view):
    # Megatron's position ids (Pai-Megatron-Patch, survey 55 EF): `arange(seq).unsqueeze(0).expand_as(tokens)`
    # sent with `.cuda(non_blocking=True)`.
    src = f"""
import torch


def make_batch():
    tokens = torch.zeros((4, 8192), dtype=torch.long)
    pos = torch.arange(8192, dtype=torch.long)
    return {view}.cuda(non_blocking=True)  # the copy
"""
    assert rows(src, "PIN001", Settings()) == [row_of(src, "# the copy")], src


@pytest.mark.parametrize("number", ["xs[i].data_ptr()", "xs[i].stride(0)", "xs[i].storage_offset()"])
def test_a_tensor_of_a_tensor_s_addresses_is_python_numbers(number):
    # torchft's pointer table (survey 55 EF): `torch.tensor([t.data_ptr() for each input])` is a few
    # Python ints, as a table of row counts is, even where the inputs are annotated as tensors.
    src = f"""
import torch


def pack(xs: list[torch.Tensor]):
    ptrs = []
    for i in range(len(xs)):
        ptrs.append({number})
    d = torch.empty(len(xs), dtype=torch.int64, device="cuda")
    d.copy_(torch.tensor(ptrs), non_blocking=True)  # the copy
    return d
"""
    assert rows(src, "PIN001", Settings()) == [], src


@pytest.mark.parametrize("calls, reported", [
    ('time_forward(shape, net, torch.device("cpu"))', False),   # the only call times the CPU
    ('host = torch.device("cpu")\n    time_forward(shape, net, host)', False),
    ('time_forward(shape, net, "cpu")', False),
    ('time_forward(shape, net, torch.device("cpu"))\n    time_forward(shape, net, torch.device("cuda:0"))', True),
    ('time_forward(shape, net, dev)', True),                     # a device nothing names: a GPU
    ('host = torch.device("cpu")\n    host = dev\n    time_forward(shape, net, host)', True),
])
def test_a_device_every_call_in_the_module_names_as_the_cpu(calls, reported):
    # ZCls's benchmark (survey 55 EE): the timing helper's only caller passes the CPU (the GPU call is
    # commented out), so `x.to(device=dev, non_blocking=True)` moves nothing to a GPU.
    src = f"""
import time
import torch


def time_forward(shape, net, dev):
    total = 0.0
    for step in range(50):
        x = torch.randn(shape)
        t0 = time.time()
        net(x.to(device=dev, non_blocking=True))  # the copy
        total += time.time() - t0
    return total / 50


def run(shape, dev):
    net = torch.nn.Conv2d(3, 8, 3).eval()
    {calls}
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN001", Settings())) is reported, src


def test_a_buffer_registered_by_keywords_is_followed_too():
    src = _BUFFER_MODULE.replace('self.register_buffer("marker", torch.zeros(1))',
                                 'self.register_buffer(name="marker", tensor=torch.zeros(1))').format(
        body="    acc = Stacker()\n    acc.add_all(frames, 0)  # the call")
    assert row_of(src, "# the call") not in rows(src, "PIN001", Settings()), src


# ------------------------------------------------------------ DataLoader subclasses of the checked code
_LOADER_DATASET = """
import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader
from prefetch_generator import BackgroundGenerator

class Clips(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.from_numpy(np.load("clip%d.npy" % i))
"""


@pytest.mark.parametrize("body, pinned", [
    ("pass", False),
    ("pass", True),
    # the common "DataLoaderX": batches made in a background thread are the same tensors
    ("def __iter__(self):\n        return BackgroundGenerator(super().__iter__())", False),
    ("def __iter__(self):\n        return BackgroundGenerator(super().__iter__())", True),
    ("def __iter__(self):\n        return super().__iter__()", False),
])
def test_dataloader_subclass_batches_are_the_loaders(body, pinned):
    """A subclass of DataLoader that keeps the library's ``__init__`` is a DataLoader of the
    arguments it is built with; its batches are pinned as those arguments say."""
    src = _LOADER_DATASET + f"""
class LoaderX(DataLoader):
    {body}

def train(dev):
    loader = LoaderX(Clips(), batch_size=4, num_workers=2{", pin_memory=True" if pinned else ""})
    for batch in loader:
        batch.to(dev, non_blocking=True)
"""
    found = findings(src)
    assert [f.code for f in found] == ([] if pinned else ["PIN001"])
    if not pinned:
        assert found[0].location.row == row_of(src, "batch.to(dev")
        assert [r.location.row for r in found[0].related] == [row_of(src, "loader = LoaderX")]


@pytest.mark.parametrize("pin, expected", [("False", ["PIN001"]), ("True", []), ("flag", [])])
def test_dataloader_subclass_with_its_own_init_is_the_loader_super_init_makes(pin, expected):
    src = _LOADER_DATASET + f"""
flag = bool(int(input()))

class LoaderX(DataLoader):
    def __init__(self, dataset, batch_size):
        super().__init__(dataset, batch_size=batch_size, num_workers=4, pin_memory={pin})

    def __iter__(self):
        return super().__iter__()

def train(dev):
    for batch in LoaderX(Clips(), 4):
        batch.to(dev, non_blocking=True)
"""
    assert codes(src) == expected


def test_dataloader_subclass_converted_batch_is_a_new_pageable_tensor():
    """Pinned batches of a DataLoaderX, converted before the copy: PIN001 on the new tensor only."""
    src = _LOADER_DATASET + """
class LoaderX(DataLoader):
    def __iter__(self):
        return BackgroundGenerator(super().__iter__())

def train(dev):
    for batch in LoaderX(Clips(), batch_size=4, pin_memory=True):
        batch.to(dev, non_blocking=True)
        x = batch.float() / 255.0
        x.to(dev, non_blocking=True)
"""
    assert rows(src, "PIN001") == [row_of(src, "x.to(dev")]


@pytest.mark.parametrize("signature, forward", [
    ("*args, **kwargs", "*args, **kwargs"),
    ("dataset, **kwargs", "dataset, **kwargs"),
    ("dataset, batch_size, **kwargs", "dataset, batch_size=batch_size, **kwargs"),
])
@pytest.mark.parametrize("pinned", [False, True])
def test_dataloader_subclass_forwarding_its_arguments_is_the_loader_each_construction_makes(
        signature, forward, pinned):
    """``super().__init__(*args, **kwargs)``: the loader is made of what each construction gives, so
    ``pin_memory=True`` there pins the batches and its absence leaves them pageable (the usual
    DataLoader subclass; before, the forwarded mapping was unknown and both were quiet)."""
    src = _LOADER_DATASET + f"""
class LoaderX(DataLoader):
    def __init__(self, {signature}):
        super().__init__({forward})

def train(dev):
    for batch in LoaderX(Clips(), batch_size=4{", pin_memory=True" if pinned else ""}):
        batch.to(dev, non_blocking=True)
"""
    assert codes(src) == ([] if pinned else ["PIN001"])


def test_dataloader_subclass_forwarding_an_unknown_mapping_proves_nothing():
    """A construction that itself passes ``**options`` of unknown keys may pass ``pin_memory=True``."""
    src = _LOADER_DATASET + """
class LoaderX(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

def train(dev, options):
    for batch in LoaderX(Clips(), batch_size=4, **options):
        batch.to(dev, non_blocking=True)
"""
    assert codes(src) == []


def test_a_subclass_of_another_library_class_is_no_loader():
    src = _LOADER_DATASET + """
class Holder(torch.nn.Module):
    pass

def train(dev):
    for batch in Holder():
        batch.to(dev, non_blocking=True)
"""
    assert codes(src) == []


_GPU_DATASET = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

class Embedded(Dataset):
    def __init__(self, device):
        self.device = device
        self.enc = torch.nn.Linear(80, 256).to(device)
    def __len__(self):
        return 64
    def __getitem__(self, i):
        feats = torch.from_numpy(np.random.rand(50, 80).astype(np.float32)).to(self.device)
        codes = torch.from_numpy(np.load("codes%d.npy" % i).astype(np.int64))
        return {"emb": EMB, "codes": codes}

def run(device="cuda"):
    for batch in DataLoader(Embedded(device), batch_size=2):
        e = batch["emb"].to(device, non_blocking=True)
        c = batch["codes"].to(device, non_blocking=True)
"""


@pytest.mark.parametrize("positional", [False, True])
@pytest.mark.parametrize("emb", ["self.enc(feats).mean(dim=0)", "feats", "feats.cuda()"])
def test_a_dataset_that_computes_on_the_gpu_gives_batches_that_may_be_there(emb, positional):
    """A dataset whose own methods move data to a device (a speaker encoder run in ``__getitem__``,
    metavoice, survey 56 FC): a field nothing explains may be a CUDA tensor, so its copy is not
    reported; its pageable field still is, but with no ``pin_memory=True`` fix, which would raise
    on a batch holding a CUDA tensor."""
    src = _GPU_DATASET.replace("EMB", emb)
    if positional:  # `DataLoader(ds, 2)`: the batch size given by position
        src = src.replace("batch_size=2", "2")
    found = findings(src)
    assert [f.location.row for f in found if f.code == "PIN001"] == [row_of(src, "c = batch")]
    assert all(f.fix is None for f in found)


@pytest.mark.parametrize("loader", ["DataLoader(Embedded(device), 2, shuffle=True)",
                                    "DataLoader(Embedded(device), batch_size=2, sampler=None, batch_sampler=sampler)"])
def test_a_dataset_that_moves_data_gives_no_fix_whatever_the_loader_says_of_its_batches(loader):
    """Where the batch is not worked out field by field (a batch sampler), a dataset that moves data to
    a device still makes its batches maybe-on-the-GPU, with no fix."""
    src = _GPU_DATASET.replace("EMB", "feats").replace("DataLoader(Embedded(device), batch_size=2)", loader)
    src = src.replace("def run(device=\"cuda\"):", "def run(device=\"cuda\", sampler=None):")
    found = findings(src)
    assert all(f.fix is None for f in found)
    assert row_of(src, "e = batch") not in [f.location.row for f in found]


def test_a_dataset_that_only_converts_dtypes_keeps_its_batches_pageable():
    src = _GPU_DATASET.replace(".to(self.device)", ".to(torch.float32)").replace(
        "self.enc = torch.nn.Linear(80, 256).to(device)", "pass").replace("EMB", "feats")
    found = findings(src)
    assert [f.location.row for f in found if f.code == "PIN001"] == [row_of(src, "e = batch"), row_of(src, "c = batch")]
    assert all(f.fix is not None for f in found)


@pytest.mark.parametrize("made, expected", [
    ("torch.zeros([64, 1024], pin_memory=True)", []),                 # an alias of pinned memory
    ("torch.zeros([64, 1024])", ["PIN001"]),                          # an alias of pageable memory
    ("np.zeros([64, 1024], np.float32)", ["PIN001"]),                 # a new tensor of the array's data
])
def test_torch_Tensor_of_a_tensor_is_an_alias(made, expected):
    """``torch.Tensor(t)`` of a tensor returns ``t.alias()`` (no new memory); of anything else it
    makes a new pageable tensor (Sparse-KVCache's pinned codes, survey 56 FA)."""
    src = f"""
    import numpy as np
    import torch
    def upload(device):
        host = {made}
        return torch.Tensor(host).to(device, non_blocking=True)
    """
    assert codes(src) == expected


@pytest.mark.parametrize("device, reported", [('"cpu"', False), ('torch.device("cpu")', False),
                                              ('"cuda"', True), ("None", True)])
def test_a_constructor_normalizing_its_device_follows_the_one_it_is_given(device, reported):
    """``if device is None: ... elif isinstance(device, torch.device): ... else: torch.device(device)``:
    a string is no ``torch.device``, a device object is never None; so a module built on the CPU
    keeps its marker buffer there and its inputs are never copied (FBGEMM's inference tables, survey
    56 FF: 17 false PIN001)."""
    src = f"""
    import torch

    def move_inputs(ids, marker):
        non_blocking = marker.device.type != "cpu"
        if ids.device != marker.device:
            ids = ids.to(marker.device, non_blocking=non_blocking)
        return ids

    class Table(torch.nn.Module):
        def __init__(self, rows, device=None):
            super().__init__()
            if device is None:
                self.where = torch.device(torch.cuda.current_device())
            elif isinstance(device, torch.device):
                self.where = device
            else:
                self.where = torch.device(device)
            self.register_buffer("marker", torch.tensor([0], device=self.where, dtype=torch.int64))

        def forward(self, ids):
            return move_inputs(ids, self.marker).sum()

    table = Table(1000, device={device})
    ids = torch.randint(0, 1000, (1 << 20,))
    out = table(ids.int())
    """
    assert codes(src) == (["PIN001"] if reported else [])


@pytest.mark.parametrize("wrap", ["iter(itertools.cycle(loader))", "itertools.cycle(loader)",
                                  "iter(itertools.islice(loader, 10))"])
def test_itertools_around_a_loader_hand_out_its_batches(wrap):
    """``iter(itertools.cycle(loader))`` then ``next(...)`` each step (metavoice's fine-tuning loop,
    survey 56 FC): the loader's batches, pageable without ``pin_memory=True``."""
    src = f"""
    import itertools
    import torch
    from torch.utils.data import DataLoader
    def train(ds, dev, steps):
        loader = DataLoader(ds, batch_size=8)
        stream = {wrap}
        for _ in range(steps):
            batch = next(stream)
            batch.to(dev, non_blocking=True)
    """
    assert rows(src, "PIN001") == [row_of(src, "batch.to(dev")]
    assert codes(src.replace("batch_size=8", "batch_size=8, pin_memory=True")) == []


@pytest.mark.parametrize("shape, view, reported", [
    ("[1, 32768, 8, 128]", "h[:, :n]", False),        # the leading dimension is one: the first n rows
    ("(1, 1, 32768, 128)", "h[:, :, :n]", False),
    ("1, 32768, 128", "h[:, :n]", False),             # torch.empty(1, L, D)
    ("[2, 32768, 8, 128]", "h[:, :n]", True),         # two blocks with a gap between them
    ("[1, 32768, 8, 128]", "h[:, :, :4]", True),      # a gap inside each row
    ("[1, 32768, 8, 128]", "h.view(32768, 1024)[:, :n]", True),   # reshaped: the allocation's ones are gone
])
def test_a_slice_over_leading_dimensions_of_one_is_dense(shape, view, reported):
    """``kv[:, :n]`` of a ``[1, max_len, heads, dim]`` pinned cache is its first n rows, one dense
    block, copied as it is (Sparse-KVCache's offloaded keys, survey 56 FA)."""
    src = f"""
import torch
h = torch.empty({shape}, dtype=torch.float16, pin_memory=True)
def fetch(n):
    return {view}.cuda(non_blocking=True)
"""
    assert ("PIN001" in codes(src)) == reported


@pytest.mark.parametrize("imports, base, reported", [
    ("from transformers import PreTrainedModel", "PreTrainedModel", True),
    ("import transformers", "transformers.modeling_utils.PreTrainedModel", True),
    ("import pytorch_lightning as pl", "pl.LightningModule", True),
    ("import lightning as L", "L.LightningModule", True),
    ("from torch import nn", "nn.Sequential", True),
    ("from somewhere import Model", "Model", False),  # nothing says calling it runs `forward`
])
def test_calling_a_model_built_on_a_library_module_class_runs_its_forward(imports, base, reported):
    """A Hugging Face or Lightning model is a ``torch.nn.Module`` (python.toml's `library_class_bases`):
    ``model(x)`` runs the subclass's ``forward``, and ``model.to("cuda")`` hands the model back
    (survey 57 GD: bionemo's AMPLIFY keeps a pageable rotary table it uploads in ``forward``)."""
    src = f"""
import torch
{imports}


class Encoder({base}):
    def __init__(self):
        super().__init__()
        self.table = torch.randn(4096, 64)

    def forward(self, ids):
        self.table = self.table.to(ids.device, non_blocking=True)
        return self.table[: ids.shape[1]]


def run():
    model = Encoder().to("cuda")
    return model(torch.zeros(1, 16, dtype=torch.long, device="cuda"))
"""
    assert rows(src, "PIN001") == ([row_of(src, "return model(")] if reported else [])


@pytest.mark.parametrize("address, reported", [
    ("frame.ctypes.data", True),
    ("ctypes.addressof(ctypes.c_char.from_buffer(frame))", True),
    ("ctypes.addressof((ctypes.c_char * SIZE).from_buffer(frame))", True),
    ('frame.__array_interface__["data"][0]', True),
    ("frame.ctypes.data_as(ctypes.c_void_p).value", True),
    ("ctypes.c_void_p(frame.ctypes.data).value", True),
    ("ctypes.c_size_t(SIZE).value", False),   # a number, not the buffer's address
    ('frame.__array_interface__["shape"][0]', False),
])
def test_the_address_of_a_pageable_buffer_in_a_raw_async_copy(address, reported):
    """The spellings of a NumPy buffer's address that code filling buffers from sockets and database
    streams gives ``memcpyAsync`` (survey 57 GE): each is the buffer, so its copy is PIN001."""
    src = f"""
import ctypes

import cupy as cp
import numpy as np

SIZE = 64 << 20


def upload(dst):
    st = cp.cuda.Stream(non_blocking=True)
    frame = np.empty(SIZE, dtype=np.uint8)
    cp.cuda.runtime.memcpyAsync(dst.data.ptr, {address}, SIZE, cp.cuda.runtime.memcpyHostToDevice, st.ptr)
    st.synchronize()
"""
    assert rows(src, "PIN001") == ([row_of(src, "memcpyAsync(")] if reported else [])


@pytest.mark.parametrize("annotation, reported", [
    (": Optional[List[int]] = None", True),
    (": list | None = None", True),
    (" = None", True),
    (": List[int] = [3]", False),   # a list, never None: the other arm runs
])
def test_a_parameter_annotated_with_numbers_may_still_be_left_at_none(annotation, reported):
    """``split_dims: Optional[List[int]] = None`` stored on the object: a construction that leaves it
    at None takes the ``is None`` arm (survey 57 GB: the annotation made ``self.split_dims is None``
    false, and the upload in that arm was lost)."""
    src = f"""
from typing import List, Optional

import torch


class Adapter:
    def __init__(self, name, split_dims{annotation}):
        self.name = name
        self.split_dims = split_dims

    def fold(self, sd, device):
        if self.split_dims is None:
            return sd["lora_down.weight"].to(device, non_blocking=True)
        return None


def main(path):
    weights = torch.load(path, map_location="cpu")
    Adapter("x").fold(weights, torch.device("cuda"))
"""
    assert rows(src, "PIN001") == ([row_of(src, 'Adapter("x").fold')] if reported else [])


@pytest.mark.parametrize("declaration, reported", [
    ("global host_out", True),        # declared to be read: the module's buffer
    ("pass", True),
    ("global host_out\n        host_out = cuda_pinned()", False),  # rebound to pinned memory first
])
def test_a_module_buffer_read_through_a_global_statement(declaration, reported):
    """DeepSparkInference's BERT scripts (survey 57 GA): ``global h_output`` in the function that copies
    into the module's pageable buffer; the declaration alone made the module value unknown."""
    src = f"""
import numpy as np
from cuda import cuda

err, stream = cuda.cuStreamCreate(0)
host_out = np.empty((64, 384, 2), dtype=np.float32)
err, dev_out = cuda.cuMemAlloc(host_out.nbytes)


def cuda_pinned():
    err, ptr = cuda.cuMemAllocHost(64 * 384 * 2 * 4)
    return np.ctypeslib.as_array(ctypes_cast(ptr), shape=(64, 384, 2))


def run_all(batches):
    for _ in batches:
        {declaration}
        err, = cuda.cuMemcpyDtoHAsync(host_out, dev_out, host_out.nbytes, stream)
        err, = cuda.cuStreamSynchronize(stream)
"""
    assert rows(src, "PIN001") == ([row_of(src, "cuMemcpyDtoHAsync(")] if reported else [])


@pytest.mark.parametrize("held", [
    'Lib("pycuda", drv)',
    'Lib(kind="pycuda", mod=drv)',
])
def test_a_library_module_kept_on_a_holder_object_calls_that_library(held):
    """A multi-backend TensorRT runner keeps the CUDA module on a small holder (``self.cu =
    Lib("pycuda", drv)``) and copies through ``self.cu.mod.memcpy_htod_async`` (survey 57 GA)."""
    src = f"""
import numpy as np


class Lib:
    def __init__(self, kind, mod):
        self.kind = kind
        self.mod = mod


def pick():
    import pycuda.driver as drv
    return {held}


class Runner:
    def __init__(self, n):
        self.cu = pick()
        self.stream = self.cu.mod.Stream()
        self.h_in = np.empty(n, dtype=np.float32)
        self.d_in = self.cu.mod.mem_alloc(self.h_in.nbytes)

    def run(self, x):
        np.copyto(self.h_in, x)
        self.cu.mod.memcpy_htod_async(self.d_in, self.h_in, self.stream)
        self.stream.synchronize()
"""
    assert rows(src, "PIN001") == [row_of(src, "memcpy_htod_async(")]


@pytest.mark.parametrize("table, reported", [
    ('(b"\\x00\\x81\\x82\\x03" b"\\x84\\x05\\x06\\x87")', False),   # 8 numbers the code spells out
    ('b"\\x00\\x81\\x82\\x03"', False),
    ("open('lut.bin', 'rb').read()", True),                         # bytes nothing sizes
])
def test_a_lookup_table_of_a_bytes_literal_is_small(table, reported):
    """``torch.tensor(list(SIGN_TABLE))`` of a 128-byte literal (survey 57 GH, litevLLM): a tensor of
    numbers the code spells out, under the size threshold."""
    src = f"""
import torch

SIGN_TABLE = {table}


def device_sign_lut(device):
    lut = torch.tensor(list(SIGN_TABLE), dtype=torch.uint8)
    return lut.to(device=device, non_blocking=True)
"""
    assert rows(src, "PIN001", Settings()) == ([row_of(src, "return lut.to")] if reported else [])


@pytest.mark.parametrize("load, reported", [
    ("load_file(adapter_path)", True),
    ('load_file(adapter_path, device="cpu")', True),
    ('load_file(adapter_path, device="cuda:0")', False),   # loaded to the GPU: nothing uploads
])
def test_weights_loaded_by_safetensors_are_pageable_cpu_tensors(load, reported):
    """``safetensors.torch.load_file`` gives ordinary CPU tensors, as ``torch.load(map_location="cpu")``
    does (survey 57 GB: LoRA factors uploaded non-blocking in seven generate scripts)."""
    src = f"""
import torch
from safetensors.torch import load_file


def fold_in(adapter_sd, device):
    down = adapter_sd["lora_down.weight"].to(device, dtype=torch.float32, non_blocking=True)
    return down


def main(adapter_path):
    adapter_sd = {load}
    return fold_in(adapter_sd, torch.device("cuda"))
"""
    assert rows(src, "PIN001") == ([row_of(src, "return fold_in(")] if reported else [])


@pytest.mark.parametrize("filtered", [
    '{name: t for name, t in sd.items() if "single_blocks" not in name}',
    "dict(sd)",
    "{k: sd[k] for k in list(sd)[:3]}",
])
def test_a_restored_state_dict_filtered_on_one_arm_still_holds_its_tensors(filtered):
    """H1111's LoRA merge (survey 57 GB): ``sd`` is rebound to a filtered copy of itself under an
    ``if``; after the arms meet it still holds the restored pageable tensors."""
    src = f"""
import torch


def main(path, keep_single_blocks):
    sd = torch.load(path, map_location="cpu")
    if not keep_single_blocks:
        sd = {filtered}
    return sd["proj.lora_down.weight"].to("cuda", non_blocking=True)
"""
    assert rows(src, "PIN001") == [row_of(src, "return sd[")]


@pytest.mark.parametrize("view, message", [
    ("b[:, :-1].contiguous()", "allocated by `Tensor.contiguous`"),   # a slice that is not dense: copied
    ("b[:-1].contiguous()", None),                                   # rows of a pinned batch: dense, kept
])
def test_contiguous_of_a_slice_of_a_pinned_batch(view, message):
    """``b[:, :-1].contiguous()`` of a pinned loader batch copies the slice into a new pageable tensor
    (survey 57 GC, a llama trainer): its upload is PIN001 of that allocation, not a "non-contiguous
    view"."""
    src = f"""
import torch
from torch.utils.data import DataLoader, IterableDataset


class Counting(IterableDataset):
    def __iter__(self):
        k = 0
        while True:
            yield torch.arange(k, k + 4096, dtype=torch.long)
            k += 1


def train(steps):
    it = iter(DataLoader(Counting(), batch_size=8, pin_memory=True))
    for _ in range(steps):
        b = next(it)
        head = {view}
        head.to("cuda", non_blocking=True)
"""
    found = [f for f in findings(src) if f.code == "PIN001"]
    if message is None:
        assert found == []
    else:
        assert len(found) == 1 and message in found[0].message


@pytest.mark.parametrize("spawn, reported", [
    ("mp.spawn(_worker, args=(2,), nprocs=2)", False),         # 2 x 5 int64: 80 bytes
    ("mp.spawn(_worker, args=(1 << 16,), nprocs=2)", True),     # 2.5 MiB
    ("mp.spawn(_worker, args=(rows,), nprocs=2)", True),        # nothing sizes it
])
def test_a_worker_spawned_with_sizes_the_call_spells_out(spawn, reported):
    """``torch.multiprocessing.spawn(fn, args=(2,))`` runs ``fn(rank, 2)`` in each process: the worker's
    tensors are sized by what the call gives, as for a direct call (survey 57 GC, LLaMA-Factory's
    tests)."""
    src = f"""
import torch
import torch.multiprocessing as mp


def _worker(rank, rows):
    ids = torch.arange(1, rows * 5 + 1, dtype=torch.long).view(rows, 5)
    ids.to(rank, non_blocking=True)


def main(rows):
    {spawn}
"""
    assert rows(src, "PIN001", Settings()) == ([row_of(src, "ids.to(rank")] if reported else [])


@pytest.mark.parametrize("walked", ["extra + built", "built + extra", "built"])
def test_objects_of_a_list_joined_to_an_empty_one_run_their_methods_in_a_pool(walked):
    """H1111's LoRA merge (survey 57 GB): ``for piece in extra + built: pool.submit(piece.push, t,
    device)`` where ``extra`` is empty: each submitted method uploads the pageable tensor."""
    src = f"""
import torch
from concurrent.futures import ThreadPoolExecutor


class Piece:
    def push(self, t, device):
        return t.to(device, non_blocking=True)


def make_pieces(n):
    out = []
    for _ in range(n):
        out.append(Piece())
    return out


def merge_all(extra, built, t, device):
    with ThreadPoolExecutor(max_workers=2) as pool:
        for piece in {walked}:
            pool.submit(piece.push, t, device)


def main(path):
    t = torch.load(path, map_location="cpu")
    merge_all([], make_pieces(4), t, torch.device("cuda"))
"""
    assert rows(src, "PIN001") == [row_of(src, "merge_all([]")]


def test_a_tensor_parameter_defaulting_to_none_is_still_a_tensor():
    """``offsets: Optional[torch.Tensor] = None``: the annotation still says a tensor (its ``size(0)``
    is a number), so ``torch.tensor(offsets.size(0) - 1)`` is one small number (generative-recommenders,
    survey 56 FF; turn 34's None default of annotated numbers must not take that away)."""
    src = """
from typing import Optional

import torch


def last_index(offsets: Optional[torch.Tensor] = None):
    idx = torch.tensor(offsets.size(0) - 1).to(offsets.device, non_blocking=True)
    return offsets.index_select(dim=0, index=idx)
"""
    assert rows(src, "PIN001", Settings()) == []
