"""PIN005 async-d2h-read-before-sync: the CPU reads an async D2H destination before a covering sync.

For every library, a truly asynchronous device-to-host copy into pinned memory followed by a CPU read
(reported at the read), the same with each synchronization form in between (quiet), and the
control-flow cases: branches, exclusive arms, loops (the next iteration), ``with stream:`` blocks,
other streams, pageable destinations and blocking copies.
"""

from __future__ import annotations

import pytest

from helpers import codes, col_of, findings, only, row_of, rows

# Each library: (set-up ending in an async D2H into pinned `h`, text of the copy, copy api in the message)
CUPY = """
import numpy as np
import cupy as cp
import cupyx
s = cp.cuda.Stream(non_blocking=True)
d = cp.ones(1024, dtype=np.float32)
h = cupyx.empty_pinned(1024, dtype=np.float32)
"""
NUMBA = """
import numpy as np
from numba import cuda
s = cuda.stream()
d = cuda.device_array(1024, dtype=np.float32, stream=s)
h = cuda.pinned_array(1024, dtype=np.float32)
"""
PYCUDA = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
s = drv.Stream()
d = drv.mem_alloc(4096)
h = drv.pagelocked_empty(1024, np.float32)
"""
CUDA_PYTHON = """
import ctypes
import numpy as np
from cuda.bindings import runtime as rt
err, stream = rt.cudaStreamCreate()
err, dptr = rt.cudaMalloc(4096)
err, ptr = rt.cudaMallocHost(4096)
h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))
"""
TORCH = """
import torch
s = torch.cuda.Stream()
d = torch.ones(1024, device="cuda")
"""

ASYNC_D2H = [
    pytest.param(TORCH, 'h = d.to("cpu", non_blocking=True)', "Tensor.to", "s.synchronize()", id="torch-to-cpu"),
    pytest.param(TORCH, "h = d.to(device='cpu', non_blocking=True)", "Tensor.to", "torch.cuda.synchronize()",
                 id="torch-to-device-kw"),
    pytest.param(TORCH + "h = torch.empty(1024, pin_memory=True)\n", "h.copy_(d, non_blocking=True)", "Tensor.copy_",
                 "torch.cuda.current_stream().synchronize()", id="torch-copy_-into-pinned"),
    pytest.param(CUPY, "d.get(out=h, stream=s, blocking=False)", "cupy.ndarray.get", "s.synchronize()",
                 id="cupy-get"),
    pytest.param(CUPY, "d.get(s, 'C', h, False)", "cupy.ndarray.get", "s.synchronize()", id="cupy-get-positional"),
    pytest.param(CUPY, "cp.asnumpy(d, stream=s, out=h, blocking=False)", "cupy.asnumpy",
                 "cp.cuda.runtime.deviceSynchronize()", id="cupy-asnumpy"),
    pytest.param(CUPY + "mem = cp.cuda.alloc_pinned_memory(4096)\nh = np.frombuffer(mem, np.float32)\n",
                 "d.get(out=h, stream=s, blocking=False)", "cupy.ndarray.get", "cp.cuda.Device().synchronize()",
                 id="cupy-get-into-frombuffer"),
    pytest.param(CUPY, "cp.cuda.runtime.memcpyAsync(h.ctypes.data, d.data.ptr, 4096, "
                       "cp.cuda.runtime.memcpyDeviceToHost, s.ptr)",
                 "cupy.cuda.runtime.memcpyAsync", "cp.cuda.runtime.deviceSynchronize()", id="cupy-runtime-memcpyAsync"),
    pytest.param(NUMBA, "d.copy_to_host(h, stream=s)", "DeviceNDArray.copy_to_host", "s.synchronize()",
                 id="numba-copy_to_host-stream"),
    pytest.param(NUMBA, "d.copy_to_host(h)", "DeviceNDArray.copy_to_host", "cuda.synchronize()",
                 id="numba-remembered-stream"),
    pytest.param(NUMBA.replace("d = cuda.device_array(1024, dtype=np.float32, stream=s)",
                               "d = cuda.to_device(cuda.pinned_array(1024), stream=s)"),
                 "d.copy_to_host(h)", "DeviceNDArray.copy_to_host", "s.synchronize()",
                 id="numba-remembered-stream-to_device"),
    pytest.param(NUMBA.replace("from numba import cuda", "import numba.cuda as cuda"),
                 "d.copy_to_host(h, s)", "DeviceNDArray.copy_to_host", "cuda.synchronize()",
                 id="numba-nc-positional-stream"),
    pytest.param(PYCUDA, "drv.memcpy_dtoh_async(h, d, s)", "pycuda.driver.memcpy_dtoh_async", "s.synchronize()",
                 id="pycuda-memcpy_dtoh_async"),
    pytest.param(PYCUDA, "drv.memcpy_dtoh_async(h, d, s)", "pycuda.driver.memcpy_dtoh_async",
                 "drv.Context.synchronize()", id="pycuda-context-sync"),
    pytest.param(PYCUDA + "import pycuda.gpuarray as gpuarray\ng = gpuarray.zeros(1024, np.float32)\n",
                 "g.get_async(s, h)", "GPUArray.get_async", "pycuda.autoinit.context.synchronize()",
                 id="pycuda-get_async-ary"),
    pytest.param(CUDA_PYTHON, "err, = rt.cudaMemcpyAsync(ptr, dptr, 4096, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, "
                              "stream)",
                 "cuda.bindings.runtime.cudaMemcpyAsync", "rt.cudaStreamSynchronize(stream)", id="cuda-python-runtime"),
    pytest.param(CUDA_PYTHON.replace("from cuda.bindings import runtime as rt", "from cuda import cudart as rt"),
                 "rt.cudaMemcpyAsync(h.ctypes.data, dptr, 4096, rt.cudaMemcpyDeviceToHost, stream)",
                 "cuda.cudart.cudaMemcpyAsync", "rt.cudaDeviceSynchronize()", id="cuda-python-legacy-cudart"),
    pytest.param(CUDA_PYTHON.replace("from cuda.bindings import runtime as rt",
                                     "from cuda.bindings import runtime as rt, driver"),
                 "driver.cuMemcpyDtoHAsync(ptr, dptr, 4096, stream)", "cuda.bindings.driver.cuMemcpyDtoHAsync",
                 "driver.cuStreamSynchronize(stream)", id="cuda-python-driver"),
]


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_D2H)
def test_read_before_sync_is_reported_at_the_read(setup, copy, api, sync):
    src = setup + copy + "\nx = h[0]\n"
    f = only(src, "PIN005")
    assert (f.location.row, f.location.column) == (row_of(src, "x = h[0]"), col_of(src, "h[0]"))
    assert f"`{api}` at line {row_of(src, copy)}" in f.message
    assert "synchronize" in f.message
    assert f.related, "the allocation site of the destination is shown"


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_D2H)
def test_read_after_sync_is_quiet(setup, copy, api, sync):
    src = setup + copy + "\n" + sync + "\nx = h[0]\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_D2H)
def test_read_before_and_after_sync_reports_only_the_first(setup, copy, api, sync):
    src = setup + copy + "\nfirst = h.sum()\n" + sync + "\nsecond = h.sum()\n"
    assert rows(src, "PIN005") == [row_of(src, "first = h.sum()")]


# ============================================================== sync forms
@pytest.mark.parametrize("sync", [
    "s.synchronize()",
    "cp.cuda.Device().synchronize()",
    "cp.cuda.Device(0).synchronize()",
    "cp.cuda.runtime.deviceSynchronize()",
    "cp.cuda.runtime.streamSynchronize(s)",
    "e = s.record()\ne.synchronize()",
    "x = d.get()",
    "x = cp.asnumpy(d)",
    "x = d.get(stream=s)",
    "with s:\n    cp.cuda.get_current_stream().synchronize()",
])
def test_cupy_sync_forms_cover_the_copy(sync):
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\n" + sync + "\ntotal = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_cupy_event_synchronize_covers_the_copy():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\ne = cp.cuda.Event()\ne.record(s)\ne.synchronize()\n" \
                 "total = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_cupy_runtime_event_synchronize_covers_the_copy():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\ne = cp.cuda.Event()\ne.record(s)\n" \
                 "cp.cuda.runtime.eventSynchronize(e.ptr)\ntotal = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_cupy_stream_use_then_current_stream_synchronize():
    src = CUPY + "s.use()\nd.get(out=h, stream=s, blocking=False)\ncp.cuda.get_current_stream().synchronize()\n" \
                 "total = h.sum()\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("sync", [
    "s.synchronize()", "cuda.synchronize()", "e = cuda.event()\ne.record(s)\ne.synchronize()",
    "e = s.record()\ne.synchronize()",
])
def test_numba_sync_forms_cover_the_copy(sync):
    src = NUMBA + "d.copy_to_host(h, stream=s)\n" + sync + "\nx = h[0]\n"
    assert "PIN005" not in codes(src)


def test_numba_auto_synchronize_block_covers_the_copy():
    src = NUMBA + "with s.auto_synchronize():\n    d.copy_to_host(h, stream=s)\nx = h[0]\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("sync", [
    "torch.cuda.synchronize()", "e = torch.cuda.Event()\ne.record()\ne.synchronize()",
    "torch.cuda.current_stream().synchronize()", "torch.cuda.default_stream().synchronize()",
    "v = d.sum().item()", "v = d.tolist()",
])
def test_torch_sync_forms_cover_the_copy(sync):
    src = TORCH + 'h = d.to("cpu", non_blocking=True)\n' + sync + "\nprint(h.sum())\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("sync", ["s.synchronize()", "drv.Context.synchronize()",
                                  "pycuda.autoinit.context.synchronize()",
                                  "e = drv.Event()\ne.record(s)\ne.synchronize()",
                                  # cuMemFree waits for the whole device (bench/free_sync.py)
                                  "d.free()", "other = drv.mem_alloc(64)\nother.free()"])
def test_pycuda_sync_forms_cover_the_copy(sync):
    src = PYCUDA + "drv.memcpy_dtoh_async(h, d, s)\n" + sync + "\nx = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_pycuda_made_context_synchronize_covers_the_copy():
    src = PYCUDA + "ctx = drv.Device(0).make_context()\ndrv.memcpy_dtoh_async(h, d, s)\nctx.synchronize()\n" \
                   "x = h.sum()\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("sync", ["rt.cudaStreamSynchronize(stream)", "rt.cudaDeviceSynchronize()",
                                  "err, ev = rt.cudaEventCreate()\nrt.cudaEventRecord(ev, stream)\n"
                                  "rt.cudaEventSynchronize(ev)",
                                  # freeing device memory and unregistering host memory wait for the
                                  # whole device (bench/free_sync.py)
                                  "rt.cudaFree(dptr)", "err, other = rt.cudaMalloc(64)\nrt.cudaFree(other)",
                                  "a = np.empty(16)\nrt.cudaHostRegister(a.ctypes.data, 128, 0)\n"
                                  "rt.cudaHostUnregister(a.ctypes.data)"])
def test_cuda_python_sync_forms_cover_the_copy(sync):
    src = CUDA_PYTHON + "rt.cudaMemcpyAsync(ptr, dptr, 4096, rt.cudaMemcpyDeviceToHost, stream)\n" + sync + \
        "\nx = h[0]\n"
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("release", ["rt.cudaFreeAsync(dptr, stream)", "rt.cudaFreeHost(other)"])
def test_cuda_python_releases_that_do_not_wait_leave_the_copy_in_flight(release):
    """cudaFreeAsync is stream-ordered (measured: 0.02 ms, the stream still busy); cudaFreeHost is not
    measured here, so it stays a plain release."""
    src = CUDA_PYTHON + "err, other = rt.cudaMallocHost(64)\n" + \
        "rt.cudaMemcpyAsync(ptr, dptr, 4096, rt.cudaMemcpyDeviceToHost, stream)\n" + release + "\nx = h[0]\n"
    assert rows(src, "PIN005") == [row_of(src, "x = h[0]")]


# ============================================================== kinds of reads
@pytest.mark.parametrize("read, at", [
    ("x = h[0]", "h[0]"), ("x = h.sum()", "h.sum()"), ("x = h.mean()", "h.mean()"), ("x = h.copy()", "h.copy()"),
    ("x = h.tolist()", "h.tolist()"), ("print(h)", "print(h)"), ("x = float(h[1])", "h[1]"),
    ("x = np.sum(h)", "np.sum(h)"), ("x = h > 0", "h > 0"), ("x = h + 1", "h + 1"), ("h += 1", "h += 1"),
    ("x = bytes(h)", "bytes(h)"), ("x = h[2:4].max()", "h[2:4].max()"),
    ("d2 = cp.asarray(h)", None),
])
def test_kinds_of_reads_after_the_copy(read, at):
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\n" + read + "\n"
    found = [f for f in findings(src) if f.code == "PIN005"]
    if at is None:
        # Copying the destination back to the device is a GPU-side use on another stream, not a CPU read.
        assert found == []
        return
    assert [f.location.row for f in found] == [row_of(src, read)]
    assert found[0].location.column == col_of(src, at)


def test_iteration_is_a_read():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\nfor v in h:\n    pass\n"
    assert rows(src, "PIN005") == [row_of(src, "for v in h")]


@pytest.mark.parametrize("access", ["h[:] = 0", "h.fill(0)", "n = len(h)", "shape = h.shape",
                                    "np.copyto(h, np.zeros(1024, np.float32))"])
def test_writes_and_metadata_are_not_reads(access):
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\n" + access + "\n"
    assert "PIN005" not in codes(src)


def test_every_unsynchronized_read_is_reported():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\na = h[0]\nb = h.sum()\ns.synchronize()\nc = h[1]\n"
    assert rows(src, "PIN005") == [row_of(src, "a = h[0]"), row_of(src, "b = h.sum()")]


def test_read_of_a_view_of_the_destination():
    src = CUPY + "v = h.reshape(32, 32)\nd.get(out=h, stream=s, blocking=False)\nx = v[0, 0]\n"
    assert rows(src, "PIN005") == [row_of(src, "x = v[0, 0]")]


# ============================================================== control flow
def test_sync_in_only_one_branch_is_reported():
    src = CUPY + ("def f(c):\n    d.get(out=h, stream=s, blocking=False)\n    if c:\n        s.synchronize()\n"
                  "    x = h.sum()\n")
    assert rows(src, "PIN005") == [row_of(src, "x = h.sum()")]


@pytest.mark.parametrize("second", ["s.synchronize()", "cp.cuda.Device().synchronize()"])
def test_sync_in_both_branches_is_quiet(second):
    src = CUPY + ("def f(c):\n    d.get(out=h, stream=s, blocking=False)\n    if c:\n        s.synchronize()\n"
                  f"    else:\n        {second}\n    x = h.sum()\n")
    assert "PIN005" not in codes(src)


def test_sync_and_read_in_the_same_branch_is_quiet():
    src = CUPY + ("def f(c):\n    d.get(out=h, stream=s, blocking=False)\n    if c:\n        s.synchronize()\n"
                  "        x = h.sum()\n")
    assert "PIN005" not in codes(src)


def test_read_in_the_exclusive_branch_is_quiet():
    src = CUPY + ("def f(c):\n    if c:\n        d.get(out=h, stream=s, blocking=False)\n    else:\n"
                  "        x = h.sum()\n")
    assert "PIN005" not in codes(src)


def test_copy_in_a_branch_then_read_after_it_is_reported():
    src = CUPY + ("def f(c):\n    if c:\n        d.get(out=h, stream=s, blocking=False)\n    x = h.sum()\n")
    assert rows(src, "PIN005") == [row_of(src, "x = h.sum()")]


def test_early_return_before_the_read_path_with_sync():
    src = CUPY + ("def f(c):\n    d.get(out=h, stream=s, blocking=False)\n    if c:\n        return None\n"
                  "    s.synchronize()\n    return h.sum()\n")
    assert "PIN005" not in codes(src)


def test_sync_in_finally_covers_the_read_after_try():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\ntry:\n    pass\nfinally:\n    s.synchronize()\nx = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_loop_carried_read_at_the_top_of_the_next_iteration_is_reported():
    src = CUPY + ("for i in range(10):\n    total = h.sum()\n    d.get(out=h, stream=s, blocking=False)\n")
    f = only(src, "PIN005")
    assert f.location.row == row_of(src, "total = h.sum()")
    assert f"at line {row_of(src, 'd.get(')}" in f.message


def test_loop_with_sync_at_the_end_of_the_body_is_quiet():
    src = CUPY + ("for i in range(10):\n    total = h.sum()\n    d.get(out=h, stream=s, blocking=False)\n"
                  "    s.synchronize()\n")
    assert "PIN005" not in codes(src)


def test_loop_with_sync_at_the_top_of_the_body_is_quiet():
    src = CUPY + ("while True:\n    s.synchronize()\n    total = h.sum()\n    d.get(out=h, stream=s, blocking=False)\n")
    assert "PIN005" not in codes(src)


def test_loop_copy_then_read_in_the_same_iteration_is_reported():
    src = NUMBA + "for i in range(10):\n    d.copy_to_host(h, stream=s)\n    x = h[0]\n"
    assert rows(src, "PIN005") == [row_of(src, "x = h[0]")]


def test_read_after_the_loop_without_sync_is_reported():
    src = PYCUDA + "for i in range(10):\n    drv.memcpy_dtoh_async(h, d, s)\nx = h.sum()\n"
    assert rows(src, "PIN005") == [row_of(src, "x = h.sum()")]


def test_sync_after_the_loop_covers_the_read_after_it():
    src = PYCUDA + "for i in range(10):\n    drv.memcpy_dtoh_async(h, d, s)\ns.synchronize()\nx = h.sum()\n"
    assert "PIN005" not in codes(src)


def test_leaving_with_stream_does_not_synchronize():
    src = CUPY + "with s:\n    d.get(out=h, blocking=False)\ntotal = h.sum()\n"
    assert rows(src, "PIN005") == [row_of(src, "total = h.sum()")]


def test_read_inside_the_with_stream_block_is_reported():
    src = CUPY + "with s:\n    d.get(out=h, blocking=False)\n    total = h.sum()\n"
    assert rows(src, "PIN005") == [row_of(src, "total = h.sum()")]


def test_torch_leaving_stream_context_does_not_synchronize():
    src = TORCH + "with torch.cuda.stream(s):\n    h = d.to('cpu', non_blocking=True)\nprint(h)\n"
    assert rows(src, "PIN005") == [row_of(src, "print(h)")]


@pytest.mark.parametrize("setup, copy, other", [
    pytest.param(CUPY, "d.get(out=h, stream=s, blocking=False)", "s2 = cp.cuda.Stream(non_blocking=True)\ns2.synchronize()",
                 id="cupy"),
    pytest.param(CUPY, "d.get(out=h, stream=s, blocking=False)", "cp.cuda.Stream.null.synchronize()",
                 id="cupy-null-stream-vs-non-blocking"),
    pytest.param(NUMBA, "d.copy_to_host(h)", "s2 = cuda.stream()\ns2.synchronize()", id="numba-remembered"),
    pytest.param(PYCUDA, "drv.memcpy_dtoh_async(h, d, s)", "s2 = drv.Stream()\ns2.synchronize()", id="pycuda"),
    pytest.param(TORCH, "with torch.cuda.stream(s):\n    h = d.to('cpu', non_blocking=True)",
                 "s2 = torch.cuda.Stream()\ns2.synchronize()", id="torch"),
    pytest.param(CUDA_PYTHON, "rt.cudaMemcpyAsync(ptr, dptr, 4096, rt.cudaMemcpyDeviceToHost, stream)",
                 "err, s2 = rt.cudaStreamCreate()\nrt.cudaStreamSynchronize(s2)", id="cuda-python"),
])
def test_sync_on_a_different_known_stream_is_reported(setup, copy, other):
    src = setup + copy + "\n" + other + "\nx = h[0]\n"
    assert rows(src, "PIN005") == [row_of(src, "x = h[0]")]


# ============================================================== not async / not pinned
@pytest.mark.parametrize("setup, copy", [
    pytest.param(CUPY + "h = np.empty(1024, np.float32)\n", "d.get(out=h, stream=s, blocking=False)", id="cupy-get"),
    pytest.param(CUPY + "h = np.empty(1024, np.float32)\n", "cp.asnumpy(d, stream=s, out=h, blocking=False)",
                 id="cupy-asnumpy"),
    pytest.param(NUMBA + "h = np.empty(1024, np.float32)\n", "d.copy_to_host(h, stream=s)", id="numba"),
    pytest.param(PYCUDA + "h = np.empty(1024, np.float32)\n", "drv.memcpy_dtoh_async(h, d, s)", id="pycuda"),
    pytest.param(TORCH + "h = torch.empty(1024)\n", "h.copy_(d, non_blocking=True)", id="torch-copy_"),
    pytest.param(CUDA_PYTHON + "h = np.empty(1024, np.float32)\n",
                 "rt.cudaMemcpyAsync(h.ctypes.data, dptr, 4096, rt.cudaMemcpyDeviceToHost, stream)", id="cuda-python"),
])
def test_pageable_destination_is_pin001_not_pin005(setup, copy):
    src = setup + copy + "\nx = h[0]\n"
    assert codes(src) == ["PIN001"]


@pytest.mark.parametrize("setup, copy", [
    pytest.param(CUPY, "d.get(out=h, stream=s)", id="cupy-get-blocking-default"),
    pytest.param(CUPY, "d.get(out=h, stream=s, blocking=True)", id="cupy-get-blocking-true"),
    pytest.param(CUPY, "cp.asnumpy(d, stream=s, out=h)", id="cupy-asnumpy-blocking-default"),
    pytest.param(CUPY, "d.get(out=h)", id="cupy-get-no-stream"),
    pytest.param(NUMBA.replace(", stream=s)", ")"), "d.copy_to_host(h)", id="numba-default-stream"),
    pytest.param(NUMBA, "d.copy_to_host(h, stream=0)", id="numba-stream-0"),
    pytest.param(PYCUDA, "drv.memcpy_dtoh(h, d)", id="pycuda-sync"),
    pytest.param(TORCH, "h = d.to('cpu')", id="torch-to-cpu-blocking"),
    pytest.param(TORCH, "h = d.cpu()", id="torch-cpu"),
    pytest.param(TORCH, "h = d.to('cpu', non_blocking=False)", id="torch-non-blocking-false"),
    pytest.param(CUDA_PYTHON, "rt.cudaMemcpy(ptr, dptr, 4096, rt.cudaMemcpyDeviceToHost)", id="cuda-python-sync"),
])
def test_synchronous_copies_are_quiet(setup, copy):
    src = setup + copy + "\nx = h[0]\n"
    assert "PIN005" not in codes(src)


def test_unknown_destination_is_quiet():
    src = """
    import numpy as np
    import cupy as cp
    def f(d, out, s):
        d.get(out=out, stream=s, blocking=False)
        return out.sum()
    """
    assert codes(src) == []


def test_h2d_copy_is_not_pin005():
    src = CUPY + "d.set(h, stream=s)\nx = h[0]\n"
    assert "PIN005" not in codes(src)


# ------------------------------------------------------------------ where the evidence meets
RUNNER = """
import numpy as np
import pycuda.driver as cuda
class Runner:
    def __init__(self):
        self.stream = cuda.Stream()
        self.host = cuda.pagelocked_empty(4, np.float32)
        self.dev = cuda.mem_alloc(self.host.nbytes)
    def run(self):
        cuda.memcpy_dtoh_async(self.host, self.dev, self.stream)
        return int(np.argmax(self.host))
r = Runner()
for _ in range(3):
    label = r.run()
"""


def test_a_method_that_copies_and_reads_is_reported_inside_it_not_again_at_each_call():
    """The copy still in flight from the previous iteration's call is the one the method makes again
    before its read: the same copy and read, which the method's own analysis reports."""
    assert rows(RUNNER, "PIN005") == [row_of(RUNNER, "np.argmax(self.host)")]


def test_a_copy_made_by_the_caller_and_read_in_the_callee_is_reported_at_the_call():
    src = RUNNER.replace("        cuda.memcpy_dtoh_async(self.host, self.dev, self.stream)\n", "").replace(
        "for _ in range(3):\n    label = r.run()\n", "cuda.memcpy_dtoh_async(r.host, r.dev, r.stream)\nlabel = r.run()\n")
    assert rows(src, "PIN005") == [row_of(src, "label = r.run()")]


# ------------------------------------------------------------------ a move to the CPU the call decides
UNKNOWN_TENSOR = """
import torch
def fetch(t):
    out = t.to({target}, non_blocking={flag})
    {between}
    return out.sum().item()
"""


@pytest.mark.parametrize("target", ['"cpu"', "'cpu'", 'torch.device("cpu")', 'device="cpu"'])
def test_a_non_blocking_move_to_the_cpu_of_a_tensor_nothing_explains_is_a_device_to_host_copy(target):
    """Only a GPU tensor is moved asynchronously to the CPU: the call itself says what its receiver is."""
    src = UNKNOWN_TENSOR.format(target=target, flag="True", between="pass")
    f = only(src, "PIN005")
    assert f.location.row == row_of(src, "return out.sum()")
    assert "`Tensor.to`" in f.message


@pytest.mark.parametrize("target, flag, between", [
    ('"cpu"', "True", "torch.cuda.synchronize()"),                  # synchronized before the read
    ('"cpu"', "True", "torch.cuda.current_stream().synchronize()"),
    ('"cpu"', "False", "pass"),                                    # a blocking move
    ("device", "True", "pass"),                                    # a target nothing names: to a GPU, if anywhere
    ('"cuda"', "True", "pass"),                                    # a host-to-device move of an unknown buffer
])
def test_moves_the_call_does_not_decide_or_that_are_synchronized_are_quiet(target, flag, between):
    src = UNKNOWN_TENSOR.format(target=target, flag=flag, between=between).replace("def fetch(t):",
                                                                                  "def fetch(t, device):")
    assert "PIN005" not in codes(src)


FOLLOWING_THE_INPUT = """
import torch
class Gather(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("idx", torch.arange(n))
    def forward(self, x):
        idx = self.idx.to(device={target}, non_blocking=True)
        return torch.index_select(x, 1, idx)
def run():
    g = Gather(8)
    x = torch.rand(4, 8)
    return g(x)
"""


@pytest.mark.parametrize("target", ["x.device", "dev"])
def test_a_move_to_the_device_of_a_cpu_input_is_no_download_of_a_tensor_nothing_places(target):
    """`idx.to(x.device)` follows the input's device: with a CPU `x` it is a CPU-to-CPU move of a tensor
    nothing places (a module's buffer in a module run on the CPU), not a download (ai2cm/ace's tests)."""
    src = FOLLOWING_THE_INPUT.format(target=target).replace(
        "        idx = self.idx", "        dev = x.device\n        idx = self.idx")
    assert "PIN005" not in codes(src)


def test_a_move_of_a_gpu_tensor_to_the_device_of_a_cpu_input_is_a_download():
    src = FOLLOWING_THE_INPUT.format(target="x.device").replace(
        "self.register_buffer(\"idx\", torch.arange(n))", "self.idx = torch.arange(n, device=\"cuda\")")
    assert rows(src, "PIN005") == [row_of(src, "return g(x)")]


def test_a_move_to_the_cpu_named_still_says_the_tensor_was_on_a_gpu():
    src = FOLLOWING_THE_INPUT.format(target='"cpu"')
    assert rows(src, "PIN005") == [row_of(src, "return torch.index_select")]


def test_a_move_without_the_keyword_is_not_decided_by_the_call():
    src = UNKNOWN_TENSOR.format(target='"cpu", True', flag="True", between="pass").replace(", non_blocking=True", "")
    assert "t.to(\"cpu\", True)" in src
    assert "PIN005" not in codes(src)


def test_a_project_method_named_to_turns_the_unknown_receiver_rule_off():
    src = UNKNOWN_TENSOR.format(target='"cpu"', flag="True", between="pass") + """
class Batch:
    def to(self, device, non_blocking=False):
        return self
"""
    assert "PIN005" not in codes(src)


def test_a_host_view_of_the_move_returned_to_the_caller_is_read_there():
    src = """
    import torch
    def fetch(t):
        out = t.to("cpu", non_blocking=True)
        return out.numpy()
    def main(model, x):
        values = fetch(model(x))
        return values.sum()
    """
    f = only(src, "PIN005")
    assert f.location.row == row_of(src, "return values.sum()")


@pytest.mark.parametrize("wait, reported", [
    ("for s in streams:\n        s.synchronize()", False),            # every stream the copies went to
    ("for i in range(n):\n        streams[i].synchronize()", False),
    ("for s in others:\n        s.synchronize()", True),              # other streams: the copies may run on
    ("for s in streams:\n        s.synchronize()\n        print(s)", True),  # not a wait-only loop: left as it was
])
def test_a_loop_that_waits_on_each_stream_covers_the_copies_on_them(wait, reported):
    src = f"""
import numpy as np
from numba import cuda
def run(us):
    n = len(us)
    streams = [cuda.stream() for _ in range(n)]
    others = [cuda.stream() for _ in range(n)]
    results = []
    for i in range(n):
        y = cuda.pinned_array(us[i].shape, dtype=np.float32)
        d = cuda.to_device(us[i], stream=streams[i])
        d.copy_to_host(y, stream=streams[i])
        results.append(y)
    {wait}
    for r in results:
        print(r.sum())
"""
    assert ("PIN005" in codes(src)) is reported


@pytest.mark.parametrize("layers", [
    "[indices[:, i, :] for i in range(indices.shape[1])]",     # basic indexing: views of the CPU tensor
    "list(indices)",                                          # its rows
    "[indices[:, i, :] for i in range(indices.shape[1])] if torch.is_tensor(indices) else list(indices)",
])
def test_a_non_blocking_move_to_the_cpu_of_a_cpu_tensor_s_parts_copies_nothing(layers):
    # A tracer records each layer with `.to("cpu", non_blocking=True)`; its test passes a CPU tensor,
    # whose parts are already on the CPU: no copy, nothing in flight when they are read.
    src = f"""
import torch
def record(records, indices):
    per_layer = {layers}
    for layer in per_layer:
        records.append(layer.detach().to("cpu", torch.int32, non_blocking=True))
def test():
    records = []
    record(records, torch.arange(24, dtype=torch.int32).reshape(4, 3, 2))
    for r in records:
        print(r.tolist())
"""
    assert "PIN005" not in codes(src)
    # From a GPU tensor the same moves are copies in flight, read before any synchronize.
    assert "PIN005" in codes(src.replace("dtype=torch.int32).reshape", "dtype=torch.int32, device='cuda').reshape"))


def test_an_identity_test_of_the_destination_reads_nothing():
    """`if host is not None:` looks at the Python object, never at the bytes that may not have arrived
    (ai-toolkit's gradient offload, survey 18: two false PIN005s); `host.sum()` still reads them."""
    from helpers import rows, row_of
    src = """
import torch
def main(s, ev):
    g = torch.randn(4096, 4096, device="cuda")
    with torch.cuda.stream(s):
        host = g.to("cpu", non_blocking=True)
        ev.record()
    if host is not None:
        print(host.sum())  # read
    ev.synchronize()
"""
    assert rows(src, "PIN005") == [row_of(src, "# read")]


def test_a_move_to_the_cpu_a_caller_chose_does_not_say_the_tensor_was_on_a_device():
    """`w.to(dev, non_blocking=True)` in a helper written for the GPU, called once with the CPU for a
    weight already there (ai-toolkit's materialize, survey 18): no copy the call decides by itself.
    `t.to("cpu", non_blocking=True)` spelled at the call still is a device-to-host copy."""
    from helpers import rows, row_of
    src = """
import torch
def materialize(w, dev):
    wq = w.to(dev, non_blocking=True)
    return wq.float()
def run(w):
    materialize(w, torch.device("cpu"))
    h = w.to("cpu", non_blocking=True)
    print(h.sum())  # spelled
"""
    assert rows(src, "PIN005") == [row_of(src, "# spelled")]


def test_torch_functions_and_a_slice_store_read_the_destination():
    """`torch.sigmoid(h)`, `F.interpolate(h)` and `out[0:1] = h` run CPU work over a CPU tensor's bytes
    (sam2's offloaded masks, survey 18): reads, as `h.sum()` is. `torch.is_tensor(h)` is no read."""
    from helpers import rows, row_of
    src = """
import torch
import torch.nn.functional as F
def main(out):
    g = torch.randn(1, 1, 256, 256, device="cuda")
    a = g.to("cpu", non_blocking=True)
    b = g.to("cpu", non_blocking=True)
    c = g.to("cpu", non_blocking=True)
    torch.is_tensor(a)
    x = torch.sigmoid(a)  # sigmoid
    y = F.interpolate(b, size=(512, 512))  # interpolate
    out[0:1] = c  # store
    return x, y
def run():
    main(torch.empty(2, 1, 256, 256))
"""
    assert rows(src, "PIN005") == [row_of(src, "# sigmoid"), row_of(src, "# interpolate"), row_of(src, "main(torch.empty")]


_MEMCPY2D = """
import numpy as np
import pycuda.driver as cuda

def upload(stream, dev, host):
    copy = cuda.Memcpy2D()
    copy.set_src_host(host)
    copy.set_dst_device(dev)
    copy(stream)  # upload

def download(stream, dev, shape):
    host = cuda.pagelocked_empty(shape, np.float32)
    copy = cuda.Memcpy2D()
    copy.set_src_device(dev)
    copy.set_dst_host(host)
    copy(stream)
    return host

def blocking(dev, shape):
    host = np.empty(shape, np.float32)
    copy = cuda.Memcpy2D()
    copy.set_src_device(dev)
    copy.set_dst_host(host)
    copy(aligned=True)
    return host.sum()

def main(dev):
    stream = cuda.Stream()
    upload(stream, dev, np.ones((4096, 4096), dtype=np.float32))  # pageable
    h = download(stream, dev, (4096, 4096))
    print(h.sum())  # early
    blocking(dev, (4096, 4096))
"""


def test_a_pycuda_copy_object_copies_what_its_setters_named():
    """PyCUDA's Memcpy2D: `set_src_host(h)` / `set_dst_host(h)` name the host side, and calling it with
    a stream copies asynchronously (FiniteVolumeGPU's uploads and its autotuner's early read, survey
    18: two misses); called with `aligned=True` it blocks."""
    from helpers import findings, row_of
    found = [(f.code, f.location.row) for f in findings(_MEMCPY2D)]
    assert found == [("PIN001", row_of(_MEMCPY2D, "# pageable")), ("PIN005", row_of(_MEMCPY2D, "# early"))]


@pytest.mark.parametrize("use", ["weight -= step_dst", "weight[rows] -= step_dst", "weight += 2 * step_dst",
                                 "weight[rows] += step_dst"])
def test_an_augmented_assignment_reads_its_right_hand_side(use):
    # dgl's SparseAdam (survey 20): `emb.weight[idx] -= std_values_dst` right after a non-blocking D2H
    src = f"""
        import torch

        def update(grad, rows):
            weight = torch.zeros(1 << 16, 64)
            step = grad.cuda() * 0.01
            step_dst = step.to("cpu", non_blocking=True)
            {use}  # read
            return weight
        """
    assert rows(src, "PIN005") == [row_of(src, "# read")]
    synced = src.replace("            {use}".format(use=use), "            torch.cuda.synchronize()\n            " + use)
    assert rows(synced, "PIN005") == []


@pytest.mark.parametrize("between, synced", [
    ("picked = g.masked_select(g > 0)", True),     # the count comes back to the host: a stream wait
    ("picked = g.nonzero()", True),
    ("picked = g * 2", False),                      # queued like the copy: no wait
    ("picked = torch.ones(4).masked_select(torch.ones(4) > 0)", False),  # a CPU tensor: no stream at all
])
def test_a_data_dependent_size_on_the_gpu_waits_for_the_stream(between, synced):
    # lmdeploy's token dispatcher (survey 20): `.tolist()` of non-blocking D2H results after a masked_select
    src = f"""
        import torch

        def dispatch(x):
            g = x.cuda()
            splits = g.sum(dim=0).to("cpu", non_blocking=True)
            {between}
            return splits.tolist()  # read
        """
    assert rows(src, "PIN005") == ([] if synced else [row_of(src, "# read")])


@pytest.mark.parametrize("wait, synced", [
    ("while cudart.cudaEventQuery(done)[0] == cudart.cudaError_t.cudaErrorNotReady:\n    time.sleep(0)", True),
    ("while cudart.cudaEventQuery(done)[0] != cudart.cudaError_t.cudaSuccess:\n    time.sleep(0)", True),
    ("while cudart.cudaEventQuery(done)[0] != cudart.cudaError_t.cudaErrorNotReady:\n    time.sleep(0)", False),
    ("status = cudart.cudaEventQuery(done)", False),
])
def test_polling_an_event_until_it_completes_is_a_synchronization(wait, synced):
    # tinynav (survey 21): an asyncio loop polls cudaEventQuery instead of blocking in cudaEventSynchronize
    src = """
import ctypes
import time
import numpy as np
from cuda.bindings import runtime as cudart

N = 1 << 20
_, stream = cudart.cudaStreamCreate()
_, hptr = cudart.cudaMallocHost(N * 4)
host = np.ctypeslib.as_array((ctypes.c_float * N).from_address(hptr))
_, dptr = cudart.cudaMalloc(N * 4)
cudart.cudaMemcpyAsync(host.ctypes.data, dptr, N * 4, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)
_, done = cudart.cudaEventCreate()
cudart.cudaEventRecord(done, stream)
""" + wait + """
total = host.sum()  # read
"""
    assert rows(src, "PIN005") == ([] if synced else [row_of(src, "# read")])


@pytest.mark.parametrize("use, reported", [
    # InfLLM (survey 26): the offloaded pair kept as a tuple, read only after a synchronize
    ("tuple(x.to('cpu', non_blocking=True) for x in pair)", False),
    ("list([x.to('cpu', non_blocking=True) for x in pair])", False),
    # adding them up reads every element
    ("sum(x.to('cpu', non_blocking=True) for x in pair)", True),
    # a tuple of a tensor's elements: views of its rows (`Tensor.__iter__` is `unbind(0)`), read later
    ("tuple(pair[0].to('cpu', non_blocking=True))", False),
])
def test_collecting_copies_in_flight_into_a_tuple_reads_nothing(use, reported):
    src = f"""
import torch

def offload(k, v):
    pair = (k.cuda(), v.cuda())
    host = {use}  # use
    torch.cuda.synchronize()
    return host
"""
    assert (rows(src, "PIN005") == [row_of(src, "# use")]) is reported


def test_a_module_parameter_may_have_been_moved_to_the_gpu():
    # SimpleTuner (survey 21 tree): `temb.to(device=self.table.device, non_blocking=True)` where the
    # table is an nn.Parameter made on the CPU: the module is moved with `.to(device)` before use
    src = """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.table = nn.Parameter(torch.randn(1, 6, dim) / dim ** 0.5)

    def forward(self, temb):
        temb = temb.to(device=self.table.device, non_blocking=True)
        return self.table + temb
"""
    assert "PIN005" not in codes(src)


def test_numba_pinned_block_end_unregisters_and_waits_for_the_device():
    """Numba unregisters at the block's end at once, and cuMemHostUnregister waits for the whole device
    (bench/free_sync.py): a copy queued before the block has finished after it."""
    src = NUMBA + "d.copy_to_host(h, stream=s)\na = np.zeros(16)\nwith cuda.pinned(a):\n    pass\nx = h[0]\n"
    assert "PIN005" not in codes(src)
    racy = NUMBA + "d.copy_to_host(h, stream=s)\na = np.zeros(16)\nwith cuda.pinned(a):\n    x = h[0]\n"
    assert rows(racy, "PIN005") == [row_of(racy, "x = h[0]")]


@pytest.mark.parametrize("ordering, reported", [
    ("sorted(groups.items(), key=lambda kv: kv[0])", False),   # compares the int keys only
    ("sorted(groups.values())", True),                         # compares the tensors' values
])
def test_sorting_a_container_of_results_in_flight_by_their_keys_reads_no_result(ordering, reported):
    # hip-attention's cache-policy test (survey 47 M): results of non-blocking downloads gathered in
    # a dict of lists, ordered by key before the synchronize that precedes their reads.
    src = f"""
    import torch

    scores = torch.rand(64, 64, device="cuda")
    groups = {{}}
    for i in range(64):
        vals = groups.get(i % 4, [])
        vals.append((scores[i, 0] * 100).to("cpu", non_blocking=True))
        groups[i % 4] = vals
    ordered = {ordering}
    torch.cuda.synchronize()
    print(ordered)
    """
    assert rows(src, "PIN005") == ([row_of(src, "ordered = ")] if reported else [])


@pytest.mark.parametrize("layer, reported", [
    ("nn.Conv2d(3, 8, 3)", True),
    ("torch.nn.Sequential(nn.Flatten(), nn.Linear(12, 2))", True),
    ("nn.ModuleList([nn.Linear(12, 2)])", False),   # not called on tensors: nothing it reads
    ("make_layer()", False),                         # nothing in the tree says what it is
])
def test_a_library_layer_called_on_the_destination_reads_it(layer, reported):
    # ultramotion's CPU fallback (survey 50 W): `frame_cpu = frame.to("cpu", non_blocking=True)`, then
    # `cpu_model(frame_cpu)`: the layer's CPU kernels read the tensor before the copy has landed.
    src = f"""
import torch
import torch.nn as nn
from layers import make_layer

cpu_model = {layer}


def fallback(frame_gpu):
    frame_cpu = frame_gpu.detach().to("cpu", non_blocking=True)
    return cpu_model(frame_cpu)
"""
    assert rows(src, "PIN005") == ([row_of(src, "return cpu_model(frame_cpu)")] if reported else [])


def test_a_layer_kept_on_the_object_reads_what_forward_gives_it():
    src = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, feats_gpu):
        feats = feats_gpu.to("cpu", non_blocking=True)
        return self.fc(feats)
"""
    assert rows(src, "PIN005") == [row_of(src, "return self.fc(feats)")]


@pytest.mark.parametrize("use", [
    "m.add_(g_cpu, alpha=0.1)",
    "m.mul_(0.9).add_(g_cpu)",
    "v.addcmul_(g_cpu, g_cpu, value=0.001)",
    "m.lerp_(g_cpu, 0.1)",
    "np.copyto(m.numpy(), g_cpu.numpy())",
])
def test_an_in_place_operation_reads_the_tensors_it_takes_its_values_from(use):
    # memopt's CPU Adam (survey 50 AE): moments updated in place from a gradient whose download, on a
    # side stream, nothing has waited for.
    src = f"""
import numpy as np
import torch


def step(g_dev, m, v):
    m = torch.zeros(4096, 4096)
    v = torch.zeros(4096, 4096)
    g_cpu = g_dev.to("cpu", non_blocking=True)
    {use}
    return m, v
"""
    assert rows(src, "PIN005") == [row_of(src, use)]


def test_an_in_place_write_into_the_destination_is_no_read_of_it():
    src = """
import numpy as np
import torch


def step(g_dev):
    g_cpu = g_dev.to("cpu", non_blocking=True)
    np.copyto(g_cpu.numpy(), np.zeros((4096, 4096), np.float32))
    torch.cuda.synchronize()
    return g_cpu
"""
    assert "PIN005" not in codes(src)


@pytest.mark.parametrize("between, reported", [("", True), ("torch.cuda.synchronize()", False)])
def test_a_helper_storing_the_destination_on_an_object_its_receiver_holds(between, reported):
    # memopt (survey 50 AE): a gradient offload stores its non-blocking download on the optimizer the
    # trainer holds (`self.optimizer.buf = cpu_grad`); the optimizer's step reads it.
    src = f"""
import torch


class Opt:
    def __init__(self):
        self.buf = None

    def step(self):
        return self.buf * 0.1


class Trainer:
    def __init__(self):
        self.optimizer = Opt()

    def offload(self, grad):
        cpu_grad = grad.to("cpu", non_blocking=True)
        self.optimizer.buf = cpu_grad

    def step(self, g):
        self.offload(g)
        {between}
        return self.optimizer.step()


Trainer().step(torch.randn(4096, 4096, device="cuda"))
"""
    assert rows(src, "PIN005") == ([row_of(src, "return self.optimizer.step()")] if reported else [])


@pytest.mark.parametrize("act", [
    "F.relu(conv(feats.cuda()))",          # a library function of what a model gives on the GPU
    "torch.sigmoid(conv(feats.cuda()))",
    "F.relu(feats.cuda())",
    "conv(feats.cuda())",
])
def test_a_torch_function_of_a_gpu_tensor_computes_on_the_gpu(act):
    # GNN layer-wise inference (survey 54 DC): `y[seeds] = F.relu(h).to(y.device, non_blocking=True)`
    # into a CPU table; the relu lost the tensor's place, so the racing read was not seen.
    src = f"""
import torch
import torch.nn.functional as F


def infer(conv, loader, num_nodes, width):
    table = torch.empty((num_nodes, width))
    for seeds, feats in loader:
        act = {act}
        table[seeds] = act.to(table.device, non_blocking=True)  # the read
    return table
"""
    assert rows(src, "PIN005") == [row_of(src, "# the read")], src


@pytest.mark.parametrize("target", ["holder.table[rows]", "table[rows]", "total"])
def test_an_in_place_update_reads_its_host_right_hand_side_whatever_the_target(target):
    # RecStore's sparse Adagrad (survey 54 DC): the step comes back with a non-blocking copy and only
    # an event wait (the stream's, not the host's) comes before `holder.table[rows] -= step_cpu`.
    src = f"""
import torch


def sparse_step(holder, table, total, rows, grad, lr):
    step = lr * grad.cuda() / (grad.cuda() * grad.cuda() + 1e-10).sqrt()
    step_cpu = step.to("cpu", non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    done.wait()
    {target} -= step_cpu  # the read
"""
    assert rows(src, "PIN005") == [row_of(src, "# the read")], src


@pytest.mark.parametrize("use, reported", [
    ("return list(host)", False),                 # the rows, views nothing has read yet
    ("return tuple(host)", False),
    ("out = []\n    for r in host:\n        out.append(r)\n    return out", False),
    ("return host.tolist()", True),               # every value read back now
    ("return sum(host)", True),
])
def test_collecting_a_tensor_s_rows_reads_nothing(use, reported):
    # aphrodite-engine's sampled-token rows (survey 54 DF): `list(t.to("cpu", non_blocking=True))`
    # hands back row views; the caller synchronizes an event before reading them.
    src = f"""
import torch


def to_host_rows(dev_out):
    host = dev_out.to("cpu", non_blocking=True)
    {use}  # the use


rows = to_host_rows(torch.randn(8, 1024, device="cuda"))
"""
    assert (rows(src, "PIN005") == [row_of(src, "# the use")]) is reported, src
    assert reported or rows(src, "PIN005") == [], src


@pytest.mark.parametrize("use, reported", [
    ("keys.gather(-1, idx)", True),            # a CPU tensor's method reads the tensors it is given
    ("torch.gather(keys, -1, idx)", True),
    ("keys.gather(-1, idx.clone())", True),    # the clone reads it
    ("keys.sum()", False),                     # reads nothing the copy writes
])
def test_a_cpu_tensors_method_reads_its_tensor_arguments(use, reported):
    """A non-blocking download's destination handed to a CPU tensor's own method before any
    synchronize (SparQ's top-k indices, survey 56 FA)."""
    src = f"""
    import numpy as np
    import torch
    def score(query_gpu):
        keys = torch.from_numpy(np.load("keys.npy"))
        idx = query_gpu.topk(16, dim=-1).indices.to("cpu", non_blocking=True)
        out = {use}
        torch.cuda.synchronize()
        return out, idx
    """
    assert codes(src) == (["PIN005"] if reported else [])


@pytest.mark.parametrize("read, reported", [
    ("Image.fromarray(pixels.numpy()).save('preview.png')", True),
    ("torch.cuda.synchronize()\n    Image.fromarray(pixels.numpy()).save('preview.png')", False),
    ("Image.open('preview.png')", False),
])
def test_an_image_made_from_the_destination_reads_it(read, reported):
    """ComfyUI's latent preview (survey 57 GB): ``Image.fromarray`` copies (or maps) the pixels of the
    pinned destination of a non-blocking download that may still be in flight."""
    src = f"""
import torch
from PIL import Image


def preview():
    x = torch.rand(512, 512, 3, device="cuda")
    pixels = x.mul(255).to(device="cpu", dtype=torch.uint8, non_blocking=True)
    {read}
"""
    assert codes(src) == (["PIN005"] if reported else [])
