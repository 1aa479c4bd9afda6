"""PIN006 async-h2d-source-overwritten: the CPU writes the pinned source of an async H2D copy too early.

For every library, a truly asynchronous host-to-device copy from pinned memory followed by a CPU write
of the source (reported at the write), the same with a synchronization in between (quiet), the
loop-carried race (write at the top of the next iteration), blocking copies and pageable sources.
"""

from __future__ import annotations

import pytest

from helpers import codes, col_of, findings, only, row_of, rows
from pinlint.settings import Settings

CUPY = """
import numpy as np
import cupy as cp
import cupyx
s = cp.cuda.Stream(non_blocking=True)
d = cp.empty(1024, dtype=np.float32)
h = cupyx.empty_pinned(1024, dtype=np.float32)
x = np.ones(1024, dtype=np.float32)
"""
NUMBA = """
import numpy as np
from numba import cuda
s = cuda.stream()
h = cuda.pinned_array(1024, dtype=np.float32)
x = np.ones(1024, dtype=np.float32)
"""
PYCUDA = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
s = drv.Stream()
d = drv.mem_alloc(4096)
h = drv.pagelocked_empty(1024, np.float32)
x = np.ones(1024, dtype=np.float32)
"""
CUDA_PYTHON = """
import ctypes
import numpy as np
from cuda.bindings import runtime as rt, driver
err, stream = rt.cudaStreamCreate()
err, dptr = rt.cudaMalloc(4096)
err, ptr = rt.cudaMallocHost(4096)
h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))
x = np.ones(1024, dtype=np.float32)
"""
TORCH = """
import torch
h = torch.zeros(1024, pin_memory=True)
x = torch.ones(1024)
"""

# (set-up, the async H2D copy from pinned `h`, api in the message, a sync that covers it)
ASYNC_H2D = [
    pytest.param(CUPY, "d.set(h, stream=s)", "cupy.ndarray.set", "s.synchronize()", id="cupy-set"),
    pytest.param(CUPY, "d.set(h, s)", "cupy.ndarray.set", "cp.cuda.Device().synchronize()", id="cupy-set-positional"),
    pytest.param(CUPY, "with s:\n    g = cp.asarray(h)", "cupy.asarray", "s.synchronize()", id="cupy-asarray-with-stream"),
    pytest.param(CUPY, "with s:\n    g = cp.array(h, blocking=False)", "cupy.array",
                 "cp.cuda.runtime.deviceSynchronize()", id="cupy-array-blocking-false"),
    pytest.param(CUPY, "d.data.copy_from_host_async(h.ctypes.data, h.nbytes, s)",
                 "cupy.ndarray.copy_from_host_async", "s.synchronize()", id="cupy-copy_from_host_async"),
    pytest.param(CUPY, "cp.cuda.runtime.memcpyAsync(d.data.ptr, h.ctypes.data, 4096, "
                       "cp.cuda.runtime.memcpyHostToDevice, s.ptr)",
                 "cupy.cuda.runtime.memcpyAsync", "cp.cuda.runtime.deviceSynchronize()", id="cupy-runtime-memcpyAsync"),
    pytest.param(NUMBA, "d = cuda.to_device(h, stream=s)", "numba.cuda.to_device", "s.synchronize()",
                 id="numba-to_device"),
    pytest.param(NUMBA.replace("from numba import cuda", "import numba.cuda as cuda"), "d = cuda.to_device(h, s)",
                 "numba.cuda.to_device", "cuda.synchronize()", id="numba-nc-positional"),
    pytest.param(NUMBA + "d = cuda.device_array(1024, dtype=np.float32, stream=s)\n", "d.copy_to_device(h)",
                 "DeviceNDArray.copy_to_device", "s.synchronize()", id="numba-copy_to_device-remembered"),
    pytest.param(PYCUDA, "drv.memcpy_htod_async(d, h, s)", "pycuda.driver.memcpy_htod_async", "s.synchronize()",
                 id="pycuda-memcpy_htod_async"),
    pytest.param(PYCUDA, "g = gpuarray.to_gpu_async(h, stream=s)", "pycuda.gpuarray.to_gpu_async",
                 "drv.Context.synchronize()", id="pycuda-to_gpu_async"),
    pytest.param(CUDA_PYTHON, "rt.cudaMemcpyAsync(dptr, ptr, 4096, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)",
                 "cuda.bindings.runtime.cudaMemcpyAsync", "rt.cudaStreamSynchronize(stream)", id="cuda-python-runtime"),
    pytest.param(CUDA_PYTHON, "rt.cudaMemcpyAsync(dptr, h.ctypes.data, 4096, rt.cudaMemcpyHostToDevice, stream)",
                 "cuda.bindings.runtime.cudaMemcpyAsync", "rt.cudaDeviceSynchronize()", id="cuda-python-ctypes-data"),
    pytest.param(CUDA_PYTHON, "driver.cuMemcpyHtoDAsync(dptr, ptr, 4096, stream)",
                 "cuda.bindings.driver.cuMemcpyHtoDAsync", "driver.cuStreamSynchronize(stream)", id="cuda-python-driver"),
    pytest.param(TORCH, "d = h.to('cuda', non_blocking=True)", "Tensor.to", "torch.cuda.synchronize()", id="torch-to"),
    pytest.param(TORCH.replace("import torch", "import torch as T").replace("torch.", "T."),
                 "d = h.to(device='cuda:0', non_blocking=True)", "Tensor.to", "T.cuda.synchronize()",
                 id="torch-T-to-device-kw"),
    pytest.param(TORCH, "d = h.cuda(non_blocking=True)", "Tensor.cuda",
                 "torch.cuda.current_stream().synchronize()", id="torch-cuda"),
    pytest.param(TORCH + "d = torch.empty(1024, device='cuda')\n", "d.copy_(h, non_blocking=True)", "Tensor.copy_",
                 "e = torch.cuda.Event()\ne.record()\ne.synchronize()", id="torch-device-copy_"),
]


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_H2D)
def test_write_before_sync_is_reported_at_the_write(setup, copy, api, sync):
    src = setup + copy + "\nh[:] = x\n"
    f = only(src, "PIN006")
    assert (f.location.row, f.location.column) == (row_of(src, "h[:] = x"), 1)
    assert f"`{api}` at line {row_of(src, copy.splitlines()[-1].strip())}" in f.message
    assert "synchronize" in f.message
    assert f.related


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_H2D)
def test_write_after_sync_is_quiet(setup, copy, api, sync):
    src = setup + copy + "\n" + sync + "\nh[:] = x\n"
    assert "PIN006" not in codes(src)


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_H2D)
def test_loop_carried_write_at_the_top_of_the_next_iteration_is_reported(setup, copy, api, sync):
    body = "".join("    " + line + "\n" for line in ("h[:] = x", *copy.splitlines()))
    src = setup + "for i in range(10):\n" + body
    f = only(src, "PIN006")
    assert (f.location.row, f.location.column) == (row_of(src, "h[:] = x"), 5)


@pytest.mark.parametrize("setup, copy, api, sync", ASYNC_H2D)
def test_loop_with_sync_at_the_end_of_the_body_is_quiet(setup, copy, api, sync):
    body = "".join("    " + line + "\n" for line in ("h[:] = x", *copy.splitlines(), *sync.splitlines()))
    src = setup + "while True:\n" + body
    assert "PIN006" not in codes(src)


# ================================================================ kinds of writes
@pytest.mark.parametrize("write, at", [
    ("h[:] = x", "h[:]"), ("h[0] = 1.0", "h[0]"), ("h[10:20] = 0", "h[10:20]"), ("h.fill(0)", "h.fill(0)"),
    ("np.copyto(h, x)", "np.copyto(h, x)"), ("h += 1", "h += 1"), ("h *= x", "h *= x"),
    ("h.put([0, 1], [2.0, 3.0])", "h.put"), ("h.reshape(32, 32)[0, :] = 1", "h.reshape(32, 32)[0, :]"),
    ("h.T[:] = 0", "h.T[:]"), ("h[...] = 0", "h[...]"),
])
def test_kinds_of_cpu_writes(write, at):
    src = CUPY + "d.set(h, stream=s)\n" + write + "\n"
    found = [f for f in findings(src) if f.code == "PIN006"]
    assert [f.location.row for f in found] == [row_of(src, write)]
    assert found[0].location.column == col_of(src, at)


@pytest.mark.parametrize("write", ["h.fill_(1.0)", "h.copy_(x)", "h[:] = x", "h.add_(1)", "h.zero_()", "h.mul_(2)",
                                   "h.uniform_()", "h += 1"])
def test_torch_in_place_writes(write):
    src = TORCH + "d = h.to('cuda', non_blocking=True)\n" + write + "\n"
    f = only(src, "PIN006")
    assert (f.location.row, f.location.column) == (row_of(src, write), 1)
    assert "`Tensor.to`" in f.message


def test_torch_write_through_a_numpy_view():
    src = TORCH + "v = h.numpy()\nd = h.to('cuda', non_blocking=True)\nv[:] = 0\n"
    assert rows(src, "PIN006") == [row_of(src, "v[:] = 0")]


@pytest.mark.parametrize("access", ["y = h.sum()", "print(h)", "n = len(h)", "y = h[0]", "z = h.copy()"])
def test_reads_are_not_writes(access):
    src = CUPY + "d.set(h, stream=s)\n" + access + "\n"
    assert "PIN006" not in codes(src)


def test_every_unsynchronized_write_is_reported():
    src = CUPY + "d.set(h, stream=s)\nh[0] = 1\nh.fill(2)\ns.synchronize()\nh[1] = 3\n"
    assert rows(src, "PIN006") == [row_of(src, "h[0] = 1"), row_of(src, "h.fill(2)")]


def test_writing_a_different_buffer_is_quiet():
    src = CUPY + "h2 = cupyx.empty_pinned(1024, dtype=np.float32)\nd.set(h, stream=s)\nh2[:] = x\n"
    assert "PIN006" not in codes(src)


# ================================================================ control flow
def test_sync_in_only_one_branch_is_reported():
    src = CUPY + "def f(c):\n    d.set(h, stream=s)\n    if c:\n        s.synchronize()\n    h[:] = x\n"
    assert rows(src, "PIN006") == [row_of(src, "    h[:] = x")]


def test_sync_in_both_branches_is_quiet():
    src = CUPY + ("def f(c):\n    d.set(h, stream=s)\n    if c:\n        s.synchronize()\n    else:\n"
                  "        cp.cuda.Device().synchronize()\n    h[:] = x\n")
    assert "PIN006" not in codes(src)


def test_write_in_the_exclusive_branch_is_quiet():
    src = CUPY + "def f(c):\n    if c:\n        d.set(h, stream=s)\n    else:\n        h[:] = x\n"
    assert "PIN006" not in codes(src)


def test_sync_on_a_different_known_stream_is_reported():
    src = CUPY + "s2 = cp.cuda.Stream(non_blocking=True)\nd.set(h, stream=s)\ns2.synchronize()\nh[:] = x\n"
    assert rows(src, "PIN006") == [row_of(src, "h[:] = x")]


def test_leaving_with_stream_does_not_synchronize():
    src = CUPY + "with s:\n    d.set(h)\nh[:] = x\n"
    assert rows(src, "PIN006") == [row_of(src, "h[:] = x")]


def test_loop_write_after_the_copy_in_the_same_iteration_is_reported_once():
    src = NUMBA + "for i in range(10):\n    d = cuda.to_device(h, stream=s)\n    h[:] = i\n"
    assert rows(src, "PIN006") == [row_of(src, "h[:] = i")]


def test_loop_with_sync_at_the_top_of_the_body_is_quiet():
    src = PYCUDA + "for i in range(10):\n    s.synchronize()\n    h[:] = i\n    drv.memcpy_htod_async(d, h, s)\n"
    assert "PIN006" not in codes(src)


def test_write_after_the_loop_without_sync_is_reported():
    src = CUPY + "for i in range(10):\n    d.set(h, stream=s)\n    s.synchronize()\n    d.set(h, stream=s)\nh[:] = 0\n"
    assert rows(src, "PIN006") == [row_of(src, "h[:] = 0")]


def test_double_buffering_with_a_sync_per_buffer_is_quiet():
    src = CUPY + (
        "a = cupyx.empty_pinned(1024, dtype=np.float32)\nb = cupyx.empty_pinned(1024, dtype=np.float32)\n"
        "for i in range(10):\n"
        "    a[:] = i\n"
        "    d.set(a, stream=s)\n"
        "    e = s.record()\n"
        "    b[:] = i\n"
        "    e.synchronize()\n")
    assert rows(src, "PIN006") == []


# ================================================================ blocking / pageable
@pytest.mark.parametrize("setup, copy", [
    pytest.param(CUPY, "with s:\n    g = cp.asarray(h, blocking=True)", id="cupy-asarray-blocking-true"),
    pytest.param(CUPY, "g = cp.array(h, blocking=True)", id="cupy-array-blocking-true"),
    pytest.param(CUPY, "d.set(h)", id="cupy-set-no-stream"),
    pytest.param(CUPY, "d.set(h, stream=cp.cuda.Stream.null)", id="cupy-set-null-stream"),
    pytest.param(NUMBA, "d = cuda.to_device(h)", id="numba-default-stream"),
    pytest.param(NUMBA, "d = cuda.to_device(h, stream=0)", id="numba-stream-0"),
    pytest.param(PYCUDA, "drv.memcpy_htod(d, h)", id="pycuda-sync"),
    pytest.param(PYCUDA, "g = gpuarray.to_gpu(h)", id="pycuda-to_gpu"),
    pytest.param(CUDA_PYTHON, "rt.cudaMemcpy(dptr, ptr, 4096, rt.cudaMemcpyHostToDevice)", id="cuda-python-sync"),
    pytest.param(TORCH, "d = h.to('cuda')", id="torch-blocking"),
    pytest.param(TORCH, "d = h.to('cuda', non_blocking=False)", id="torch-non-blocking-false"),
    pytest.param(TORCH, "d = h.cuda()", id="torch-cuda-blocking"),
])
def test_blocking_copies_are_quiet(setup, copy):
    src = setup + copy + "\nh[:] = x\n"
    assert "PIN006" not in codes(src)


PAGEABLE = "p = np.zeros(1 << 20, dtype=np.float32)\n"  # above pin001-min-bytes


@pytest.mark.parametrize("setup, copy", [
    pytest.param(CUPY + PAGEABLE, "d.set(p, stream=s)", id="cupy-set"),
    pytest.param(NUMBA + PAGEABLE, "d = cuda.to_device(p, stream=s)", id="numba"),
    pytest.param(PYCUDA + PAGEABLE, "drv.memcpy_htod_async(d, p, s)", id="pycuda"),
    pytest.param(CUDA_PYTHON + PAGEABLE,
                 "rt.cudaMemcpyAsync(dptr, p.ctypes.data, 4096, rt.cudaMemcpyHostToDevice, stream)", id="cuda-python"),
    pytest.param(TORCH + "p = torch.zeros(1 << 20)\n", "d = p.to('cuda', non_blocking=True)", id="torch"),
])
def test_pageable_source_is_pin001_not_pin006(setup, copy):
    src = setup + copy + "\np[:] = 1\n"
    assert codes(src) == ["PIN001"]


def test_torch_loader_batch_copied_into_a_pinned_staging_buffer_in_a_loop():
    src = """
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(dataset, batch_size=4)
    h = torch.empty(4, 3, pin_memory=True)
    for batch in loader:
        h.copy_(batch)
        d = h.to('cuda', non_blocking=True)
    """
    f = only(src, "PIN006")
    assert f.location.row == row_of(src, "h.copy_(batch)")
    assert f"at line {row_of(src, 'h.to(')}" in f.message


def test_cupy_asarray_of_pageable_source_is_staged_and_quiet():
    src = CUPY + "p = np.zeros(1024, dtype=np.float32)\nwith s:\n    g = cp.asarray(p)\np[:] = 1\n"
    assert codes(src) == []


def test_unknown_source_is_quiet():
    src = """
    import cupy as cp
    def f(d, buf, s):
        d.set(buf, stream=s)
        buf[:] = 0
    """
    assert codes(src) == []


def test_d2h_copy_is_not_pin006():
    src = CUPY + "d.get(out=h, stream=s, blocking=False)\nh[:] = x\n"
    assert "PIN006" not in codes(src)


def test_a_race_inside_a_called_function_gets_no_synchronize_before_the_call():
    # A synchronize before `step()` would run before the copy inside it: it fixes nothing, and the next
    # fix pass would add another.
    from pinlint.engine import fix_text
    src = """
import numpy as np
import cupy as cp
import cupyx
h = cupyx.empty_pinned(1 << 20, dtype=np.float32)
d = cp.empty(1 << 20, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
def step():
    d.set(h, stream=s)
    h[:] = 1
step()
"""
    outcome = fix_text(src, "x.py", Settings(), unsafe=True)
    assert "synchronize" not in outcome.text.split("def step")[0] + outcome.text.split("step()")[-1]


def test_a_race_fix_does_not_name_another_function_s_stream():
    from pinlint.engine import fix_text
    src = """
import numpy as np
import cupy as cp
import cupyx
h = cupyx.empty_pinned(1 << 20, dtype=np.float32)
d = cp.empty(1 << 20, dtype=np.float32)
class Worker:
    def __init__(self):
        self.s = cp.cuda.Stream(non_blocking=True)
    def step(self):
        d.set(h, stream=self.s)
w = Worker()
w.step()
h[:] = 1
"""
    outcome = fix_text(src, "x.py", Settings(), unsafe=True)
    module_level = outcome.text.split("w.step()")[-1]
    assert "self." not in module_level


# ------------------------------------------------------------------ one buffer per iteration
_PER_ELEMENT = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv

def stage(arrays, n):
    stream = drv.Stream()
    hosts = [drv.pagelocked_empty(1 << 22, np.float32) for _ in range(n)]
    devs = [drv.mem_alloc(h.nbytes) for h in hosts]
    for i in range(n):
{body}
    stream.synchronize()
"""


@pytest.mark.parametrize("body, reported", [
    # hosts[i] written, then copied: the copy in flight is hosts[i - 1]'s, another buffer.
    ("        np.copyto(hosts[i], arrays[i])\n        drv.memcpy_htod_async(devs[i], hosts[i], stream)", False),
    # copied, then written in the same iteration: the GPU may still be reading it.
    ("        drv.memcpy_htod_async(devs[i], hosts[i], stream)\n        hosts[i][:] = 0", True),
    # one buffer for every iteration: the write races with the last iteration's copy.
    ("        np.copyto(hosts[0], arrays[i])\n        drv.memcpy_htod_async(devs[i], hosts[0], stream)", True),
    # the same element again in an inner loop.
    ("        for k in range(3):\n            np.copyto(hosts[i], arrays[k])\n"
     "            drv.memcpy_htod_async(devs[i], hosts[i], stream)", True),
])
def test_a_buffer_per_iteration_is_not_the_one_in_flight(body, reported):
    src = _PER_ELEMENT.format(body=body)
    assert bool(rows(src, "PIN006")) is reported


_FRESH = """
import torch

def stage(n, steps, dev):
    kept = None
    for i in range(steps):
{body}
    torch.cuda.synchronize()
"""


@pytest.mark.parametrize("body, reported", [
    # allocated in the loop, written, then copied: the copy in flight is of an earlier iteration's buffer.
    ("        buf = torch.empty(n, pin_memory=True)\n        buf.copy_(torch.randn(n))\n"
     "        buf.to(dev, non_blocking=True)", False),
    ("        buf = torch.empty(n, pin_memory=True)\n        buf.fill_(1.0)\n"
     "        buf.to(dev, non_blocking=True)", False),
    # written after its own copy in the same iteration: a race.
    ("        buf = torch.empty(n, pin_memory=True)\n        buf.to(dev, non_blocking=True)\n"
     "        buf.fill_(1.0)", True),
    # the write comes before this iteration's allocation: it is the last iteration's buffer, in flight.
    ("        if kept is not None:\n            kept.fill_(0.0)\n"
     "        kept = torch.empty(n, pin_memory=True)\n        kept.to(dev, non_blocking=True)", True),
])
def test_a_buffer_allocated_in_the_loop_before_the_write_is_not_the_one_in_flight(body, reported):
    src = _FRESH.format(body=body)
    assert bool(rows(src, "PIN006")) is reported


def test_a_helper_s_per_iteration_staging_is_no_race_at_its_caller():
    # A factory's worker pins a fresh staging buffer per iteration, fills it, then copies it on that
    # iteration's stream: the copy in flight at the fill is the previous iteration's, of another
    # buffer. Reached through the caller (pin_memory=True), it is no race there either.
    src = """
import numpy as np
from numba import cuda
def make(pin_memory=False):
    def run(us):
        streams = [cuda.stream() for _ in us]
        for i in range(len(us)):
            if pin_memory:
                u = cuda.pinned_array(us[i].shape, dtype=np.float32)
                np.copyto(u, us[i])
            else:
                u = np.array(us[i], dtype=np.float32)
            d = cuda.to_device(u, stream=streams[i])
        for s in streams:
            s.synchronize()
    return run
def main(data):
    make(pin_memory=True)(data)
"""
    assert "PIN006" not in codes(src)


def test_int_of_a_pycuda_allocation_is_its_address_not_a_synchronization():
    """A TensorRT loop passes `[int(d_in), int(d_out)]` as bindings: int() of a PyCUDA allocation is
    its address, not a value read back, so it waits for nothing (survey 17's jetson camera loop,
    whose PIN006 it hid). int() of a CuPy array still reads the value back: a synchronization."""
    from helpers import rows, row_of
    src = """
import numpy as np
import pycuda.driver as cuda
import cupy as cp
h_in = cuda.pagelocked_empty(1 << 22, np.float32)
d_in = cuda.mem_alloc(h_in.nbytes)
stream = cuda.Stream()
def engine_loop(context, frames):
    for frame in frames:
        np.copyto(h_in, frame)  # overwritten
        cuda.memcpy_htod_async(d_in, h_in, stream)
        context.execute_async_v2(bindings=[int(d_in)], stream_handle=stream.handle)
def counted_loop(frames):
    for frame in frames:
        np.copyto(h_in, frame)
        cuda.memcpy_htod_async(d_in, h_in, stream)
        total = int(cp.zeros(1))
"""
    assert rows(src, "PIN006") == [row_of(src, "# overwritten")]


@pytest.mark.parametrize("fill", [
    "self.workers.starmap(self._fill, enumerate(part))",
    "self.workers.map(self._fill_pair, enumerate(part))",
    "[self._fill(i, c) for i, c in enumerate(part)]",
])
def test_a_thread_pool_writing_the_pinned_source_before_the_sync_is_a_race(fill):
    # FastMOT (survey 21): a ThreadPool fills the pinned TensorRT input for batch k while the copy of
    # batch k-1 from it may still run; the stream is synchronized only after
    src = f"""
        from multiprocessing.pool import ThreadPool
        import cupy as cp
        import cupyx
        import numpy as np

        class Batcher:
            def __init__(self, batch):
                self.batch = batch
                self.host = cupyx.empty_pinned(batch * 1024, np.float32)
                self.slots = self.host.reshape(batch, 1024)
                self.dev = cp.empty(batch * 1024, np.float32)
                self.stream = cp.cuda.Stream()
                self.workers = ThreadPool()

            def _fill(self, slot, crop):
                self.slots[slot] = crop

            def _fill_pair(self, pair):
                self.slots[pair[0]] = pair[1]

            def run(self, crops):
                for start in range(0, len(crops), self.batch):
                    part = crops[start:start + self.batch]
                    {fill}  # fill
                    if start > 0:
                        self.stream.synchronize()
                    self.dev.set(self.host, stream=self.stream)
                self.stream.synchronize()
        """
    assert rows(src, "PIN006") == [row_of(src, "# fill")]


_CAPTURED = """
import ctypes
import numpy as np
from cuda.bindings import runtime as rt

N = 1 << 22
err, stream = rt.cudaStreamCreate()
err, hptr = rt.cudaMallocHost(N * 4)
host = np.ctypeslib.as_array(ctypes.cast(hptr, ctypes.POINTER(ctypes.c_float)), (N,))
err, dptr = rt.cudaMalloc(N * 4)

def run(frame):
    rt.cudaStreamBeginCapture(stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
    rt.cudaMemcpyAsync(dptr, hptr, N * 4, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
    err, graph = rt.cudaStreamEndCapture(stream)
    err, gexec = rt.cudaGraphInstantiate(graph, 0)
    np.copyto(host, frame)  # before launch
    rt.cudaGraphLaunch(gexec, stream)
    {after}
"""


@pytest.mark.parametrize("after, raced", [
    ("rt.cudaStreamSynchronize(stream)\n    np.copyto(host, frame)", False),
    ("np.copyto(host, frame)  # after launch", True),
])
def test_a_copy_recorded_into_a_cuda_graph_runs_when_the_graph_is_launched(after, raced):
    # tpv-insightface (survey 22): the write between the capture and the launch is no race; after the
    # launch, the recorded copy is in flight
    src = _CAPTURED.replace("{after}", after)
    assert rows(src, "PIN006") == ([row_of(src, "# after launch")] if raced else [])


def test_a_blocking_read_back_of_an_unknown_tensor_covers_the_previous_rounds_copy():
    # physicsnemo (survey 22): each round starts with `torch.topk(scores, k).indices.cpu()`, which
    # returns only once the stream (and the previous round's upload from the pinned buffer) is done
    src = """
        import numpy as np
        import torch

        def rounds(n, k):
            scores = torch.rand(n, device="cuda")
            staging = torch.empty((4096,), dtype=torch.int32, pin_memory=True)
            dev = torch.empty((4096,), device="cuda", dtype=torch.int32)
            for _ in range(k):
                cand = {readback}
                staging[0] = 1  # write
                dev.copy_(staging, non_blocking=True)
            return dev
        """
    assert rows(src.replace("{readback}", "torch.topk(scores, k=8).indices.cpu()"), "PIN006") == []
    raced = src.replace("{readback}", "torch.topk(scores, k=8).indices")
    assert rows(raced, "PIN006") == [row_of(raced, "# write")]


@pytest.mark.parametrize("store, reported", [
    # Pointcept (survey 24): the batch's entries replaced by their GPU copies, a dict store
    ("batch[name] = batch[name].cuda(non_blocking=True)", False),
    ("batch[name] = batch[name].float()", False),
    ('batch["coord"] = dev', False),
    ("batch[0] = dev", False),
    # a store into the elements of a tensor batch writes its memory
    ("batch[:, 0] = 0", True),
    ("batch[..., 1] = 1", True),
])
def test_replacing_an_entry_of_a_loader_batch_writes_no_memory(store, reported):
    src = f"""
import torch
from torch.utils.data import DataLoader

def run(dataset, model):
    loader = DataLoader(dataset, batch_size=4, pin_memory=True)
    for batch in loader:
        dev = batch.cuda(non_blocking=True)
        for name in list(model.keys):
            {store}  # store
        model(dev)
"""
    assert (rows(src, "PIN006") == [row_of(src, "# store")]) is reported, src


@pytest.mark.parametrize("dst_device, reported", [("device", False), ('"cuda"', False)])
def test_a_blocking_copy_into_a_tensor_on_a_device_from_outside_waits(dst_device, reported):
    """ATen's blocking host<->device copy synchronizes the stream: the next iteration's write to the
    pinned staging buffer comes after the upload that read it, wherever the device comes from."""
    src = f"""
import torch

class Engine:
    def __init__(self, n, device):
        self.idx_cpu = torch.zeros(n, dtype=torch.int32).pin_memory()
        self.idx_gpu = torch.zeros(n, dtype=torch.int32, device=device)
        self.lens_cpu = torch.zeros(64, dtype=torch.int32)
        self.lens_gpu = torch.zeros(64, dtype=torch.int32, device={dst_device})

    def step(self, ids):
        for i, s in enumerate(ids):
            self.idx_cpu[i] = s
        self.idx_gpu.copy_(self.idx_cpu, non_blocking=True)
        self.lens_gpu.copy_(self.lens_cpu)
        return self.idx_gpu.sum()

def run(dev):
    eng = Engine(1 << 20, dev)
    for _ in range(100):
        eng.step([1, 2, 3])
"""
    assert bool(rows(src, "PIN006")) is reported, src
    racy = src.replace("        self.lens_gpu.copy_(self.lens_cpu)\n", "")
    assert rows(racy, "PIN006"), racy


_ISSUED_THEN_WAITED = """
import torch

class Job:
    def __init__(self, dev):
        self.dev = dev
        self.mask = torch.empty((1, 32000), dtype=torch.half, pin_memory=True)
        self.dev_mask = None

    def prepare(self, banned):
        self.mask.zero_()  # write
        self.mask[:, banned] = float("-inf")
        self.dev_mask = self.mask.to(self.dev, non_blocking=True)

def step(job, logits, bounds, banned, flag):
    job.prepare(banned)
    launched = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a == b:
            continue
        launched.append(torch.argmax(logits[a:b] + job.dev_mask, dim=-1))
    {wait}
    return launched

def main(logits, flag):
    job = Job("cuda")
    for i in range(64):
        step(job, logits, [0, 1], [i], flag)
"""


@pytest.mark.parametrize("wait, reported", [
    ("if launched:\n        torch.cuda.synchronize()", False),   # skipped only where nothing was launched
    ("if len(launched) > 0:\n        torch.cuda.synchronize()", False),
    ("if flag:\n        torch.cuda.synchronize()", False),  # some path waits: its callers see no copy in flight
    ("pass", True),
])
def test_a_wait_skipped_only_where_nothing_was_issued_covers_the_copy(wait, reported):
    """exllamav3's generator step (survey 36): the mask uploaded, samples launched in a loop that may
    skip every job, then `if launched: torch.cuda.synchronize()`. The arm without the wait is the
    one with no work in flight that reads the mask, and the next step's write is no race; a step
    that never waits races with it."""
    src = _ISSUED_THEN_WAITED.format(wait=wait)
    assert bool(rows(src, "PIN006")) is reported, src


@pytest.mark.parametrize("wait, reported", [
    ("if launched:\n            torch.cuda.synchronize()", False),
    ("if flag:\n            torch.cuda.synchronize()", True),   # a flag's false arm issued work and skips the wait
    ("pass", True),
])
def test_in_one_function_only_a_wait_guarded_by_the_work_issued_counts_on_both_arms(wait, reported):
    src = f"""
import torch

def run(chunks, logits, flag):
    mask = torch.empty(32000, pin_memory=True)
    for c in chunks:
        mask.fill_(c)  # write
        dev = mask.to("cuda", non_blocking=True)
        launched = []
        for row in logits:
            if row is None:
                continue
            launched.append(row + dev)
        {wait}
"""
    assert (rows(src, "PIN006") == [row_of(src, "# write")]) is reported, src


_EACH_OBJECT_UPLOADS_ITS_OWN = """
import numpy as np
import pycuda.driver as cuda


class Mem:
    def __init__(self, n):
        self.host = cuda.pagelocked_empty(n, np.float32)
        self.device = cuda.mem_alloc(self.host.nbytes)

    def upload(self, stream):
        cuda.memcpy_htod_async(self.device, self.host, stream)


def put(arrays, ins, stream):
    for a, m in zip(arrays, ins):
        {body}
    stream.synchronize()


def main(arrays, stream):
    ins = []
    for _ in range(3):
        ins.append(Mem(1024))
    put(arrays, ins, stream)
"""


@pytest.mark.parametrize("body, reported", [
    # Each object's own pinned buffer, filled then uploaded by its method: the copy in flight at the
    # next write is the previous object's (ezvtuber-rt's TensorRT bindings).
    ("np.copyto(m.host, a)\n        m.upload(stream)", False),
    # This object's buffer written while its own upload runs.
    ("m.upload(stream)\n        np.copyto(m.host, a)", True),
    # One object for every item: the next write is to the buffer still being copied.
    ("np.copyto(ins[0].host, a)\n        ins[0].upload(stream)", True),
])
def test_a_copy_a_method_issues_in_a_loop_over_objects_is_of_that_iterations_object(body, reported):
    src = _EACH_OBJECT_UPLOADS_ITS_OWN.format(body=body)
    assert ("PIN006" in codes(src)) == reported, src


_TILES = """
import numpy as np
import pycuda.driver as cuda


def run(d_in, d_out, stream, tiles, ctx):
    h_in = cuda.pagelocked_empty(1 << 20, dtype=np.float32)
    h_out = cuda.pagelocked_empty(1 << 20, dtype=np.float32)
    for t in tiles:
{body}
"""


@pytest.mark.parametrize("body, reported", [
    # Every path that goes on normally waits; the one that skips the wait is an error's, whose work
    # is dropped (TensorRT-Tiling-Upscaler's tile loop).
    ("""        try:
            np.copyto(h_in, t.ravel())
            cuda.memcpy_htod_async(d_in, h_in, stream)
            ctx.execute_async_v3(stream_handle=stream.handle)
            cuda.memcpy_dtoh_async(h_out, d_out, stream)
            stream.synchronize()
        except Exception as e:
            print(e)""", False),
    # No wait at all: the next tile's write races on the normal path.
    ("""        try:
            np.copyto(h_in, t.ravel())
            cuda.memcpy_htod_async(d_in, h_in, stream)
            ctx.execute_async_v3(stream_handle=stream.handle)
        except Exception as e:
            print(e)""", True),
    # The copy issued before the try: the error does not drop it.
    ("""        np.copyto(h_in, t.ravel())
        cuda.memcpy_htod_async(d_in, h_in, stream)
        try:
            ctx.execute_async_v3(stream_handle=stream.handle)
            stream.synchronize()
        except Exception as e:
            print(e)""", True),
])
def test_copies_of_work_that_raised_are_dropped_with_it(body, reported):
    src = _TILES.format(body=body)
    assert ("PIN006" in codes(src)) == reported, src


_ONE_ITEM = """
import numpy as np
import pycuda.driver as cuda


def put(items, bufs, dev, stream):
    for a, h in zip(items, bufs):
        np.copyto(h, a)
        cuda.memcpy_htod_async(dev, h, stream)


def caller(imgs, img, dev, stream):
    h = cuda.pagelocked_empty(1024, np.float32)
{body}
"""


@pytest.mark.parametrize("body, reported", [
    # The helper's loop goes over the one item it is given: no second iteration meets the first's copy
    # (ezvtuber-rt's setImage: syncInfer([img])).
    ("    put([img], [h], dev, stream)\n    stream.synchronize()", False),
    # Called on every frame: the previous frame's copy is still in flight at the next write.
    ("    for x in imgs:\n        put([x], [h], dev, stream)", True),
    ("    for x in imgs:\n        for a in [x]:\n            np.copyto(h, a)\n"
     "            cuda.memcpy_htod_async(dev, h, stream)", True),
])
def test_a_loop_over_one_item_does_not_come_round(body, reported):
    src = _ONE_ITEM.format(body=body)
    assert ("PIN006" in codes(src)) == reported, src


@pytest.mark.parametrize("pinning, reported", [
    ("if torch.cuda.is_available():\n            staging = staging.pin_memory()", True),   # every GPU run pins it
    ("if not torch.cuda.is_available():\n            pass\n        else:\n            staging = staging.pin_memory()", True),
    ("if use_pinned:\n            staging = staging.pin_memory()", False),                   # a flag nothing explains
])
def test_a_buffer_pinned_whenever_a_gpu_exists_is_pinned_where_it_is_copied(pinning, reported):
    # nunif's desktop capture (survey 48 Q): the staging tensor pinned under
    # `if torch.cuda.is_available():`, rewritten each frame while the last upload may read it.
    src = f"""
    import numpy as np
    import torch


    def upload_frames(frames, device, use_pinned):
        side = torch.cuda.Stream(device=device)
        staging = torch.empty((3, 720, 1280), dtype=torch.uint8)
        {pinning}
        results = []
        for frame in frames:
            chw = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)
            with torch.cuda.stream(side):
                staging.copy_(chw)
                dev = staging.to(device, non_blocking=True)
                results.append(dev.float() / 255.0)
        return results
    """
    assert rows(src, "PIN006") == ([row_of(src, "staging.copy_(chw)")] if reported else [])


@pytest.mark.parametrize("fill, reported", [
    ("torch.index_select(src, 0, idx, out=staging)", True),   # writes the pinned buffer being uploaded
    ("torch.cat([src[idx], src[idx]], out=staging)", True),
    ("torch.sigmoid(src[idx], out=staging)", True),
    ("torch.index_select(src, 0, idx, out=other)", False),     # another buffer
])
def test_a_library_call_with_out_writes_that_buffer(fill, reported):
    # An embedding gather into a pinned staging buffer reused on every step while its last upload
    # may still read it.
    src = f"""
import torch


def gather(src, idx_batches, dev):
    staging = torch.empty((1024, 4096), pin_memory=True)
    other = torch.empty((1024, 4096))
    for idx in idx_batches:
        {fill}
        d = staging.to(dev, non_blocking=True)
        yield d
"""
    assert rows(src, "PIN006") == ([row_of(src, fill)] if reported else [])


@pytest.mark.parametrize("wait, reported", [
    ("if last[slot] is not None:\n            last[slot].synchronize()", False),
    ("pending = last[slot]\n        if pending is not None:\n            pending.synchronize()", False),
    ("pending = last[slot]", True),   # read, never waited on
])
def test_a_slot_s_event_waited_on_through_a_name_bound_to_it(wait, reported):
    """Double-buffered pinned staging (survey 57 GH, piper-offload): each slot's last event is waited on
    before the slot is refilled, also when read into a local first."""
    src = f"""
import torch


def stream_blocks(host_src, gpu_dst, ring, count):
    copy_stream = torch.cuda.Stream()
    last = [None] * len(ring)
    for step in range(count):
        slot = step % len(ring)
        {wait}
        ring[slot].copy_(host_src)  # refill
        with torch.cuda.stream(copy_stream):
            gpu_dst.copy_(ring[slot], non_blocking=True)
        last[slot] = copy_stream.record_event()
    copy_stream.synchronize()


def main():
    src = torch.empty(1 << 26, dtype=torch.uint8)
    dst = torch.empty(1 << 26, dtype=torch.uint8, device="cuda")
    ring = [torch.empty(1 << 26, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
    stream_blocks(src, dst, ring, 16)
"""
    assert ("PIN006" in codes(src)) == reported
