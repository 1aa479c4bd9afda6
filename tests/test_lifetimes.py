"""Device memory freed when its function returns: the free waits for the whole device.

PyCUDA frees a `mem_alloc` result (or a default-allocator `GPUArray`) when its last reference goes, with
cuMemFree, which waits for every stream (measured with `bench/free_sync.py`). A function that queues a
non-blocking device-to-host copy and returns, its device buffers held only by its own locals, has
finished the copy by the time its caller reads the destination. Anything that may keep the allocation
alive (a return, a holder object, a container from outside, a field, a project function, a pool
allocator, a generator) keeps the copy in flight. Numba's, CuPy's and PyTorch's frees do not wait, so
their functions stay racy.
"""

from __future__ import annotations

import libcst as cst
import pytest
from helpers import row_of, rows, source

from pinlint.analysis.lifetimes import drops_device_memory
from pinlint.apitables import default_tables
from pinlint.imports import collect_imports

HEAD = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.compiler import SourceModule

"""

CALLER = """

def caller(images):
    res = fetch(images)
    return np.allclose(res[0], images[0])  # read
"""

# Functions `fetch(images)` that queue D2H copies into pinned outputs and return them: the device
# buffers die at the return.
DIES = {
    "one-allocation": """
def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_htod(d, images[0])
    drv.memcpy_dtoh_async(out, d, s)
    return [out]
""",
    "list-comprehension-zip": """
def fetch(images):
    streams = [drv.Stream() for _ in images]
    outs = [drv.pagelocked_empty_like(img) for img in images]
    dev = [drv.mem_alloc(img.nbytes) for img in images]
    for img, d, s in zip(images, dev, streams):
        drv.memcpy_htod(d, img)
    for out, d, s in zip(outs, dev, streams):
        drv.memcpy_dtoh_async(out, d, stream=s)
    return outs
""",
    "slots-filled-in-a-loop-and-a-kernel": """
def fetch(images):
    mod = SourceModule("...")
    kernel = mod.get_function("k")
    n = len(images)
    streams = [drv.Stream() for _ in range(n)]
    outs = [drv.pagelocked_empty_like(img) for img in images]
    ins = [None] * n
    res = [None] * n
    for i in range(n):
        ins[i] = drv.mem_alloc(images[i].nbytes)
        res[i] = drv.mem_alloc(images[i].nbytes)
        drv.memcpy_htod_async(ins[i], images[i], stream=streams[i])
        kernel.prepared_async_call((1, 1), (1, 1, 1), streams[i], ins[i], res[i])
        kernel(ins[i], res[i], block=(1, 1, 1))
        drv.memcpy_dtoh_async(outs[i], res[i], stream=streams[i])
    return outs
""",
    "appended-gpuarray": """
def fetch(images):
    s = drv.Stream()
    outs = []
    gpus = []
    for img in images:
        gpus.append(gpuarray.to_gpu(img))
    for g in gpus:
        outs.append(g.get_async(stream=s, ary=drv.pagelocked_empty_like(images[0])))
        print(len(gpus), g.shape, int(g.gpudata))
    return outs
""",
}

# The same shape, but something may keep the device memory alive: the copies stay in flight.
KEPT = {
    "returned": """
def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    return [out], d
""",
    "holder-object": """
class Pair:
    def __init__(self, host, dev):
        self.host, self.dev = host, dev

def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    KEEP.append(Pair(images[0], d))
    return [out]

KEEP = []
""",
    "stored-on-a-field": """
class Cache:
    pass

CACHE = Cache()

def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    CACHE.dev = d
    drv.memcpy_dtoh_async(out, d, s)
    return [out]
""",
    "extended-into-a-parameter": """
def fetch(images, keep=[]):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    dev = [drv.mem_alloc(img.nbytes) for img in images]
    drv.memcpy_dtoh_async(out, dev[0], s)
    keep.extend(dev)
    return [out]
""",
    "pool-allocator": """
POOL = drv.DeviceMemoryPool()

def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    g = gpuarray.to_gpu(images[0], allocator=POOL.allocate)
    g.get_async(stream=s, ary=out)
    return [out]
""",
    "global": """
d = None

def fetch(images):
    global d
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    return [out]
""",
    "captured-by-a-closure": """
def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    CALLBACKS.append(lambda: d)
    return [out]

CALLBACKS = []
""",
    "stored-into-a-dict-from-outside": """
def fetch(images, cache=None):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    if cache is not None:
        cache["dev"] = d
    return [out]
""",
    "handed-to-a-project-function": """
KEPT = []

def remember(x):
    KEPT.append(x)

def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    remember(d)
    return [out]
""",
}


@pytest.mark.parametrize("name", sorted(DIES))
def test_returning_frees_the_device_memory_and_the_caller_reads_finished_copies(name):
    assert rows(HEAD + DIES[name] + CALLER, "PIN005") == []


@pytest.mark.parametrize("name", sorted(KEPT))
def test_device_memory_that_may_live_on_keeps_the_copy_in_flight(name):
    src = HEAD + KEPT[name] + CALLER
    assert rows(src, "PIN005") == [row_of(src, "# read")]


def test_a_read_inside_the_function_before_it_returns_still_races():
    src = HEAD + """
def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    return out.sum()  # read
"""
    assert rows(src, "PIN005") == [row_of(src, "# read")]


def test_a_generator_keeps_its_locals_between_yields():
    assert not _drops(HEAD + """
def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = drv.mem_alloc(images[0].nbytes)
    drv.memcpy_dtoh_async(out, d, s)
    yield out
""")


@pytest.mark.parametrize("setup, alloc, copy", [
    pytest.param("from numba import cuda\n", "d = cuda.device_array(1024, np.float32)",
                 "d.copy_to_host(out, stream=s)", id="numba-deferred-free"),
    pytest.param("import cupy as cp\nimport cupyx\n", "d = cp.zeros(1024, cp.float32)",
                 "d.get(out=out, stream=s, blocking=False)", id="cupy-pool"),
    pytest.param("import torch\n", "d = torch.zeros(1024, device='cuda')", "out.copy_(d, non_blocking=True)",
                 id="torch-caching-allocator"),
])
def test_other_libraries_do_not_wait_when_their_memory_dies(setup, alloc, copy):
    """Measured with bench/free_sync.py: dropping the last reference held the host under 0.2 ms and the
    stream was still busy (Numba defers its frees; CuPy and PyTorch keep the memory in their pools)."""
    pinned = {"numba": "cuda.pinned_array(1024, np.float32)", "cupy": "cupyx.empty_pinned(1024, np.float32)",
              "torch": "torch.empty(1024, pin_memory=True)"}
    library = setup.split()[-1] if "torch" in setup else ("numba" if "numba" in setup else "cupy")
    stream = {"numba": "cuda.stream()", "cupy": "cp.cuda.Stream(non_blocking=True)",
              "torch": "torch.cuda.Stream()"}[library]
    body = f"""
import numpy as np
{setup}
def fetch(images):
    s = {stream}
    out = {pinned[library]}
    {alloc}
    {"with torch.cuda.stream(s):" + chr(10) + "        " if library == "torch" else ""}{copy}
    return [out]
""" + CALLER
    src = body
    assert rows(src, "PIN005") == [row_of(src, "# read")]


def _drops(src: str, function: str = "fetch") -> bool:
    module = cst.parse_module(source(src))
    fn = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function)
    return drops_device_memory(fn, collect_imports(module).qualify, default_tables())


@pytest.mark.parametrize("name", sorted(DIES))
def test_drops_device_memory_recognises_each_dying_shape(name):
    assert _drops(HEAD + DIES[name])


@pytest.mark.parametrize("name", sorted(KEPT))
def test_drops_device_memory_refuses_each_kept_shape(name):
    assert not _drops(HEAD + KEPT[name])


def test_a_function_without_device_memory_drops_nothing():
    assert not _drops(HEAD + "def fetch(images):\n    out = drv.pagelocked_empty_like(images[0])\n    return out\n")


@pytest.mark.parametrize("use", [
    "return [out], d.reshape(-1)",                       # a view of the allocation, returned
    "VIEWS.append(d[:16])",                              # a slice kept in a global list
    "return [out], gpuarray.GPUArray((16,), np.float32, gpudata=d)",  # a library object wrapping it
])
def test_views_and_wrappers_of_the_allocation_keep_it_alive(use):
    body = HEAD + f"""
VIEWS = []

def fetch(images):
    s = drv.Stream()
    out = drv.pagelocked_empty_like(images[0])
    d = gpuarray.zeros(16, np.float32)
    d.get_async(stream=s, ary=out)
    {use}
    return [out]
"""
    assert not _drops(body)
