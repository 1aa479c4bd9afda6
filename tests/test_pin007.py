"""PIN007 pageable-transfer-in-loop: a pageable buffer allocated outside a loop, copied inside it.

Per library (H2D and D2H, sync copies), loop shapes (for, while, nested, comprehensions), allocation
placement, branches, class attributes, the size threshold and precedence of PIN001.
"""

from __future__ import annotations

import textwrap

import pytest

from helpers import codes, col_of, findings, only, row_of, rows, source
from pinlint.settings import Settings

BIG = "1 << 20"  # 4 MiB of float32: over the 64 KiB threshold


# =============================================================== per library
def test_cupy_asarray_of_pageable_in_loop_with_position_and_related():
    src = f"""
    import numpy as np
    import cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    for i in range(10):
        d = cp.asarray(h)
    """
    f = only(src, "PIN007")
    assert (f.location.row, f.location.column) == (row_of(src, "cp.asarray"), col_of(src, "cp.asarray"))
    assert (f.end_location.row, f.end_location.column) == (row_of(src, "cp.asarray"),
                                                           col_of(src, "cp.asarray") + len("cp.asarray(h)"))
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]
    assert f.related[0].location.column == col_of(src, "np.zeros")
    assert "outside the loop" in f.message and "host-to-device" in f.message and "cupy.asarray" in f.message


def test_cupy_asarray_blocking_false_of_pageable_in_loop_is_pin007_not_pin001():
    src = f"""
    import numpy as xp
    import cupy as cp
    h = xp.zeros({BIG}, dtype=xp.float32)
    for i in range(10):
        d = cp.asarray(h, blocking=False)
        e = cp.array(h)
    """
    assert codes(src) == ["PIN007", "PIN007"]


def test_cupy_asarray_of_pageable_outside_loop_is_clean():
    src = f"""
    import numpy as np, cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    d = cp.asarray(h)
    """
    assert codes(src) == []


def test_cupy_sync_set_and_get_out_in_loop():
    src = f"""
    import numpy as onp
    import cupy as xp
    h = onp.zeros({BIG}, dtype=onp.float32)
    o = onp.empty({BIG}, dtype=onp.float32)
    d = xp.empty({BIG}, dtype=onp.float32)
    for i in range(10):
        d.set(h)
        d.get(out=o)
        y = d.get()
    """
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == [("PIN007", row_of(src, "d.set(h)")),
                                                         ("PIN007", row_of(src, "d.get(out=o)"))]
    assert "device-to-host" in found[1].message
    assert [r.location.row for r in found[1].related] == [row_of(src, "o = onp.empty")]


def test_cupy_pinned_buffer_in_loop_is_clean():
    src = f"""
    import numpy as np, cupy as cp
    from cupyx import empty_pinned as ep
    h = ep({BIG}, dtype=np.float32)
    d = cp.empty({BIG}, dtype=np.float32)
    for i in range(10):
        x = cp.asarray(h)
        d.set(h)
        d.get(out=h)
    """
    assert codes(src) == []


@pytest.mark.parametrize("imports, mod", [("from numba import cuda", "cuda"), ("import numba.cuda as nc", "nc")])
def test_numba_to_device_and_copy_to_host_in_loop(imports, mod):
    src = f"""
    import numpy as np
    {imports}
    h = np.zeros({BIG}, dtype=np.float32)
    o = np.empty({BIG}, dtype=np.float32)
    for i in range(10):
        d = {mod}.to_device(h)
        d.copy_to_host(o)
    """
    assert [(f.code, f.location.row) for f in findings(src)] == [("PIN007", row_of(src, "to_device(h)")),
                                                                 ("PIN007", row_of(src, "copy_to_host(o)"))]


def test_numba_pinned_array_in_loop_is_clean():
    src = f"""
    import numpy as np
    from numba import cuda
    h = cuda.pinned_array({BIG}, dtype=np.float32)
    for i in range(10):
        d = cuda.to_device(h)
        d.copy_to_host(h)
        fresh = d.copy_to_host()
    """
    assert codes(src) == []


def test_numba_with_pinned_around_the_loop_is_clean_but_not_after_it():
    src = f"""
    import numpy as np
    from numba import cuda
    h = np.zeros({BIG}, dtype=np.float32)
    with cuda.pinned(h):
        for i in range(10):
            d = cuda.to_device(h)
    for i in range(10):
        e = cuda.to_device(h)
    """
    assert rows(src, "PIN007") == [row_of(src, "e = cuda.to_device")]


def test_pycuda_sync_memcpy_in_loop():
    src = f"""
    import numpy as np
    import pycuda.driver as drv
    h = np.empty({BIG}, dtype=np.float32)
    p = drv.pagelocked_empty({BIG}, np.float32)
    d = drv.mem_alloc(h.nbytes)
    for i in range(10):
        drv.memcpy_htod(d, h)
        drv.memcpy_dtoh(h, d)
        drv.memcpy_htod(d, p)
        drv.memcpy_dtoh(p, d)
    """
    assert rows(src, "PIN007") == [row_of(src, "memcpy_htod(d, h)"), row_of(src, "memcpy_dtoh(h, d)")]


@pytest.mark.parametrize("imports, mod", [("from cuda.bindings import runtime as rt", "rt"),
                                          ("from cuda import cudart", "cudart")])
def test_cuda_python_sync_memcpy_in_loop(imports, mod):
    src = f"""
    import numpy as np
    {imports}
    h = np.zeros({BIG}, dtype=np.float32)
    err, dptr = {mod}.cudaMalloc(h.nbytes)
    err, ph = {mod}.cudaMallocHost(h.nbytes)
    for i in range(10):
        {mod}.cudaMemcpy(dptr, h.ctypes.data, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice)
        {mod}.cudaMemcpy(h.ctypes.data, dptr, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyDeviceToHost)
        {mod}.cudaMemcpy(dptr, ph, h.nbytes, {mod}.cudaMemcpyKind.cudaMemcpyHostToDevice)
    """
    found = findings(src)
    assert [f.code for f in found] == ["PIN007", "PIN007"]
    assert ["host-to-device" in found[0].message, "device-to-host" in found[1].message] == [True, True]


@pytest.mark.parametrize("imports, mod", [("from cuda.bindings import driver as cu", "cu"), ("from cuda import cuda", "cuda")])
def test_driver_sync_memcpy_in_loop(imports, mod):
    src = f"""
    import numpy as np
    {imports}
    h = np.zeros({BIG}, dtype=np.float32)
    err, dptr = {mod}.cuMemAlloc(h.nbytes)
    for i in range(10):
        {mod}.cuMemcpyHtoD(dptr, h.ctypes.data, h.nbytes)
        {mod}.cuMemcpyDtoH(h.ctypes.data, dptr, h.nbytes)
    """
    assert codes(src) == ["PIN007", "PIN007"]


def test_torch_sync_copies_in_loop():
    src = """
    import torch as T
    x = T.zeros(1024, 1024)
    o = T.empty(1024, 1024)
    p = T.zeros(1024, 1024, pin_memory=True)
    for step in range(100):
        a = x.cuda()
        b = x.to("cuda")
        o.copy_(a)
        c = p.cuda()
        e = a.cpu()
    """
    assert rows(src, "PIN007") == [row_of(src, "x.cuda()"), row_of(src, 'x.to("cuda")'), row_of(src, "o.copy_(a)")]


def test_torch_dataloader_batches_are_fresh_each_iteration():
    src = """
    import torch
    from torch.utils.data import DataLoader
    for x, y in DataLoader(ds):
        x = x.to("cuda")
        y = y.cuda()
    """
    assert codes(src) == []


# ======================================================== allocation placement
def test_allocation_inside_the_loop_is_clean():
    src = f"""
    import numpy as np, cupy as cp
    for i in range(10):
        h = np.full({BIG}, i, dtype=np.float32)
        d = cp.asarray(h)
    """
    assert codes(src) == []


def test_nested_loops_allocation_in_outer_copy_in_inner():
    src = f"""
    import numpy as np, cupy as cp
    for epoch in range(3):
        h = np.zeros({BIG}, dtype=np.float32)
        for step in range(10):
            d = cp.asarray(h)
    """
    f = only(src, "PIN007")
    assert f.location.row == row_of(src, "cp.asarray")
    assert [r.location.row for r in f.related] == [row_of(src, "h = np.zeros")]


def test_nested_loops_allocation_and_copy_in_the_inner_loop_is_clean():
    src = f"""
    import numpy as np, cupy as cp
    for epoch in range(3):
        for step in range(10):
            h = np.zeros({BIG}, dtype=np.float32)
            d = cp.asarray(h)
    """
    assert codes(src) == []


def test_while_loop_in_a_function():
    src = f"""
    import numpy as np
    import pycuda.driver as drv
    def loop(d):
        h = np.empty({BIG}, dtype=np.float32)
        while True:
            drv.memcpy_dtoh(h, d)
            if h[0]:
                break
    """
    assert rows(src, "PIN007") == [row_of(src, "memcpy_dtoh")]


def test_comprehension_is_a_loop():
    src = f"""
    import numpy as np, cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    ds = [cp.asarray(h) for _ in range(10)]
    fresh = [cp.asarray(np.zeros({BIG})) for _ in range(10)]
    """
    assert rows(src, "PIN007") == [row_of(src, "ds = ")]


def test_module_global_copied_in_a_function_loop():
    src = f"""
    import numpy as np, cupy as cp
    H = np.zeros({BIG}, dtype=np.float32)
    def step():
        for i in range(10):
            d = cp.asarray(H)
    """
    f = only(src, "PIN007")
    assert [r.location.row for r in f.related] == [row_of(src, "H = np.zeros")]


def test_instance_attribute_copied_in_a_loop_in_another_method():
    src = f"""
    import numpy as np, cupy as cp
    class Runner:
        def __init__(self):
            self.h = np.zeros({BIG}, dtype=np.float32)
        def run(self, n):
            for i in range(n):
                d = cp.asarray(self.h)
    """
    f = only(src, "PIN007")
    assert f.location.row == row_of(src, "cp.asarray(self.h)")
    assert [r.location.row for r in f.related] == [row_of(src, "self.h = np.zeros")]


def test_unknown_buffer_in_loop_is_clean():
    src = """
    import cupy as cp
    def f(h, n):
        d = cp.empty(n)
        for i in range(10):
            d.set(h)
            x = cp.asarray(load(i))
    """
    assert codes(src) == []


# =================================================================== branches
def test_branch_pinned_or_pageable_before_loop_is_clean():
    src = f"""
    import numpy as np, cupy as cp, cupyx
    def f(flag):
        if flag:
            h = cupyx.empty_pinned({BIG}, dtype=np.float32)
        else:
            h = np.empty({BIG}, dtype=np.float32)
        for i in range(10):
            d = cp.asarray(h)
    """
    assert codes(src) == []


def test_branch_pageable_on_both_arms_before_loop_is_reported():
    src = f"""
    import numpy as np, cupy as cp
    def f(flag):
        if flag:
            h = np.zeros({BIG}, dtype=np.float32)
        else:
            h = np.ones({BIG}, dtype=np.float32)
        for i in range(10):
            d = cp.asarray(h)
    """
    f = only(src, "PIN007")
    assert [r.location.row for r in f.related] == [row_of(src, "np.zeros"), row_of(src, "np.ones")]


def test_rebinding_inside_the_loop_to_a_fresh_buffer_is_clean():
    src = f"""
    import numpy as np, cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    for i in range(10):
        d = cp.asarray(h)
        h = np.zeros({BIG}, dtype=np.float32)
    """
    assert codes(src) == []


# ================================================================== threshold
@pytest.mark.parametrize("alloc, reported", [
    ("np.zeros(1024, dtype=np.float32)", False),            # 4 KiB
    ("np.zeros((64, 64))", False),                          # 32 KiB of float64
    ("np.zeros(16383, dtype=np.float32)", False),           # 64 KiB - 4
    ("np.zeros(16384, dtype=np.float32)", True),            # exactly 64 KiB
    ("np.zeros((128, 129), np.float32)", True),             # over 64 KiB
    ("np.zeros(1 << 20, dtype=np.float32)", True),          # 4 MiB
    ("np.zeros(n, dtype=np.float32)", True),                # unknown size: reported
    ("np.zeros(1024, dtype='float32')", False),
    ("np.zeros(1024, dtype=np.uint8)", False),
    ("np.arange(0.0, 1.0, 1 / 4096)", False),                # 4,096 float64
    ("np.arange(0.0, 1.0, 1 / 8192)", True),                 # 8,192 float64 = 64 KiB
    ("np.arange(0, 8192, 1.0)", True),                       # a float step makes float64
    ("np.arange(0, 8191)", False),                           # 8,191 int64: 8 B under 64 KiB
    # Literals of numbers nothing states but that are numbers: one element each.
    ("np.array([img.shape[0], img.shape[1]])", False),
    ("np.array((len(img), 2), dtype=np.float32)", False),
    ("np.array([int(n), float(n) / 2, -img.shape[0] * 0.5])", False),
    ("np.array([np.empty(n).size, np.empty(n).ndim])", False),
    # beside a number, NumPy builds only from numbers (an array there is a ragged list: an error since
    # NumPy 1.24, an object array of two before): two elements
    ("np.array([n, 2])", False),
    ("np.array([abs(img), 1.0])", False),
    ("np.array([img.shape, 2])", False),  # a shape is a tuple of numbers: a handful, however many
    ("np.array([img.shape, img])", True),  # an array in the list: as big as it
])
def test_threshold_numpy(alloc, reported):
    src = f"""
    import numpy as np, cupy as cp
    def f(n, img):
        h = {alloc}
        for i in range(10):
            d = cp.asarray(h)
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("alloc, reported", [
    ("torch.zeros(64, 64)", False),                          # 16 KiB of float32
    ("torch.zeros((64, 64), dtype=torch.float64)", False),   # 32 KiB
    ("torch.zeros(128, 128)", True),                         # 64 KiB
    ("torch.zeros(1024, 1024)", True),
    ("torch.randint(0, 2, (5000,))", False),                  # 40,000 B of int64
    ("torch.randint(2, (5000,))", False),                     # randint(high, size)
    ("torch.randint(0, 2, size=(100000,))", True),
    ("torch.arange(5000, dtype=torch.float64)", False),       # 40,000 B
    ("torch.arange(0, 100000, 2)", True),                     # 50,000 x 8 B
    # Float bounds: ceil((end - start) / step) elements of the default dtype (float32).
    ("torch.arange(0.0, 1.0, 0.001)", False),                 # 1,000 x 4 B
    ("torch.arange(1 / 5000, 1 - 1 / 10000, 1 / 5000, dtype=torch.float64)", False),  # 4,999 x 8 B
    ("torch.arange(0, 1e6, 0.5)", True),                      # 2,000,000 x 4 B
    ("torch.arange(0.0, 20000.0)", True),                     # 20,000 x 4 B = 80,000 B
    ("torch.arange(0.0, 15000.0)", False),                    # 60,000 B
    ("torch.linspace(0, 1, 1000)", False),
    ("torch.linspace(0, 1, steps=100000)", True),
])
def test_threshold_torch(alloc, reported):
    src = f"""
    import torch
    x = {alloc}
    for step in range(100):
        y = x.cuda()
    """
    assert codes(src) == (["PIN007"] if reported else [])


def test_threshold_is_a_setting():
    src = """
    import numpy as np, cupy as cp
    h = np.zeros(1024, dtype=np.float32)
    for i in range(10):
        d = cp.asarray(h)
    """
    assert codes(src) == []
    assert codes(src, Settings(pin007_min_bytes=0)) == ["PIN007"]
    assert codes(src, Settings(pin007_min_bytes=4096)) == ["PIN007"]
    assert codes(src, Settings(pin007_min_bytes=4097)) == []


def test_threshold_takes_the_largest_possible_site():
    src = """
    import numpy as np, cupy as cp
    def f(flag):
        h = np.zeros(16, dtype=np.float32) if flag else np.zeros(1 << 20, dtype=np.float32)
        for i in range(10):
            d = cp.asarray(h)
    """
    assert codes(src) == ["PIN007"]


@pytest.mark.parametrize("dtype", ["'f4'", "float", "'<f8'"])
def test_threshold_understands_dtype_spellings(dtype):
    src = f"""
    import numpy as np, cupy as cp
    h = np.zeros(1024, dtype={dtype})
    for i in range(10):
        d = cp.asarray(h)
    """
    assert codes(src) == []


# ================================================================= precedence
def test_async_pageable_copy_in_a_loop_is_pin001_only():
    src = f"""
    import numpy as np, cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    d = cp.empty({BIG}, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    for i in range(10):
        d.set(h, stream=s)
        d.set(h)
    """
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == [("PIN001", row_of(src, "d.set(h, stream=s)")),
                                                         ("PIN007", row_of(src, "d.set(h)"))]


def test_torch_async_pageable_copy_in_a_loop_is_pin001_only():
    src = f"""
    import torch
    x = torch.zeros({BIG})
    for step in range(100):
        y = x.to("cuda", non_blocking=True)
    """
    assert codes(src) == ["PIN001"]


def test_dest_allocating_copy_in_loop_is_not_pin007():
    src = f"""
    import cupy as cp
    d = cp.zeros({BIG})
    for i in range(10):
        a = d.get()
        b = cp.asnumpy(d)
    """
    assert codes(src) == []


def test_a_conversion_keeps_the_element_count_so_the_size_threshold_applies():
    """`np.linspace(0, 1, 180).astype('float32')` is 720 bytes: below the size threshold, copied in a
    loop it is not reported; 64 MiB converted is (holotomocupy's angles, false before)."""
    src = """
import numpy as np
import cupy as cp
small = np.linspace(0, 1, 180).astype('float32')
big = np.zeros(1 << 24, np.float64).astype('float32')
d = cp.empty(1 << 24, dtype=cp.float32)
for i in range(4):
    cp.asarray(small)
    d.set(big)
"""
    from helpers import rows, row_of
    assert rows(src, "PIN007") == [row_of(src, "d.set(big)")]


def test_a_string_method_reads_a_buffer_and_keeps_none_of_it():
    """`logger.debug("x={}".format(h))` in a callee made its per-call buffer look shared with the
    caller (an escape), so a loop calling it reported the buffer as allocated outside the loop
    (hyperseti's dedoppler plan, false before)."""
    from helpers import rows
    src = """
import cupy as cp
import numpy as np
def plan(lo, hi):
    return np.arange(lo, hi + 1, dtype="int32")
def dedoppler(data, max_dd, name="optimal"):
    if max_dd == 0:
        shifts = np.array([0], dtype="int32")
    else:
        plans = {"optimal": plan}
        shifts = plans.get(name)(0, 1 << 22)
    print("shifts={}".format(shifts))
    return cp.asarray(shifts)
def main():
    data = cp.ones(1 << 22, dtype=cp.float32)
    for kernel in ("a", "b", "c"):
        dedoppler(data, 1.0)
"""
    assert rows(src, "PIN007") == []


_HANDED = """
import numpy as np
import scipy.signal
from numba import cuda
import logging
log = logging.getLogger(__name__)
CACHE = {{}}
def make(n):
    h = np.random.rand(n)
    {use}
    return h
def main(n):
    for i in range(10):
        cuda.to_device(make(n))
"""


@pytest.mark.parametrize("use, reported", [
    ("scipy.signal.detrend(h, overwrite_data=True)", False),   # a library the tables do not know
    ("log.debug(\"data %s\", h)", False),                      # an unknown object's method
    # Stored, but made anew on every call (no `if n not in CACHE:`): another buffer each iteration.
    ("CACHE[n] = h", False),
])
def test_a_buffer_only_handed_to_unknown_calls_is_new_on_each_call(use, reported):
    """A callee's buffer passed to a call nothing in the tree explains was taken as kept by the
    callee (a cache), so a loop calling it reported the buffer as allocated outside the loop. What
    a later call could read back from an unknown call is unknown, so only a store keeps it."""
    from helpers import rows, row_of
    src = _HANDED.format(use=use)
    assert rows(src, "PIN007") == ([row_of(src, "cuda.to_device(make(n))")] if reported else [])


def test_a_cache_in_a_field_or_a_module_dict_is_still_the_same_buffer_each_call():
    from helpers import rows, row_of
    src = """
import numpy as np
from numba import cuda
_cache = {}
def cached(n):
    if n not in _cache:
        _cache[n] = np.empty(n)
    return _cache[n]
class Pool:
    def __init__(self):
        self.buf = None
    def get(self, n):
        if self.buf is None:
            self.buf = np.empty(n)
            print(self.buf)
        return self.buf
def main(n):
    pool = Pool()
    for i in range(10):
        cuda.to_device(cached(n))
    for i in range(10):
        cuda.to_device(pool.get(n))
"""
    assert rows(src, "PIN007") == [row_of(src, "cuda.to_device(cached(n))"), row_of(src, "cuda.to_device(pool.get(n))")]


def test_a_call_that_copies_asynchronously_on_one_path_is_pin001_s_alone():
    """A helper copies with cudaMemcpyAsync or cudaMemcpy as a flag says (trtutils' engine), called in
    a loop with a buffer made before it: PIN001 takes precedence at the call, as it does for a copy
    that is asynchronous on every path; the call was reported twice, once per path."""
    src = """
import numpy as np
from cuda.bindings import runtime as cudart
def upload(dptr, host, stream, use_async):
    if use_async:
        cudart.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
    else:
        cudart.cudaMemcpy(dptr, host.ctypes.data, host.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
def bench(dptr, stream, use_async, sync_only):
    data = np.random.rand(1 << 24).astype(np.float32)
    for _ in range(100):
        upload(dptr, data, stream, use_async)
    for _ in range(100):
        upload(dptr, data, stream, False)
"""
    assert [(f.code, f.location.row) for f in findings(src) if f.code in ("PIN001", "PIN007")] == [
        ("PIN001", row_of(src, "upload(dptr, data, stream, use_async)")),
        ("PIN007", row_of(src, "upload(dptr, data, stream, False)"))]


@pytest.mark.parametrize("key, reported", [
    ("i, j", False),      # one array per (i, j), each sent once
    ("i", True),          # tables[i] sent again on every iteration of the inner loop
    ("0, j", True),       # tables[0, j] sent again on every iteration of the outer loop
    ("0, 0", True),       # the same array every time
    ("i, n + j", False),  # an offset key follows j as j does
    ("i, j % 2", True),   # two arrays, round and round
])
def test_a_container_keyed_by_the_loops_variables_holds_a_buffer_per_iteration(key, reported):
    src = f"""
    import numpy as np, cupy as cp
    def upload(n):
        tables = {{}}
        for i in range(n):
            for j in range(n):
                tables[i, j] = np.zeros(1 << 20)
        out = []
        for i in range(n):
            for j in range(n):
                out.append(cp.asarray(tables[{key}]))
        return out
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("part, reported", [
    ("g[p0:p0 + blk]", False),                 # another chunk on each iteration: g crosses once
    ("g[p0 * 2:p0 * 2 + blk]", False),
    ("g[0:blk]", True),                        # the same chunk every time
    ("g[p0 % 2 * blk:p0 % 2 * blk + blk]", True),  # two chunks, round and round
    ("g", True),
])
def test_a_chunk_that_follows_the_loop_is_another_part_of_the_buffer_each_time(part, reported):
    src = f"""
    import numpy as np, cupy as cp
    def upload(n, blk):
        g = np.random.rand(n, 3)
        parts = []
        for p0 in range(0, n, blk):
            parts.append(cp.asarray({part}))
        return parts
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("address, reported", [
    ("h.ctypes.data + r * row", False),        # one row per iteration
    ("h.ctypes.data", True),                   # the whole buffer every time
])
def test_a_pointer_that_follows_the_loop_is_another_row_each_time(address, reported):
    src = f"""
    import numpy as np, cupy as cp
    def upload_by_rows(h):
        d = cp.empty_like(h)
        row = h.strides[0]
        for r in range(h.shape[0]):
            cp.cuda.runtime.memcpy(d.data.ptr + r * row, {address}, row, cp.cuda.runtime.memcpyHostToDevice)
        return d

    def caller():
        upload_by_rows(np.random.rand(4096, 4096))
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("copied, reported", [
    ("dm[i]", False),        # another row of dm on each iteration: dm crosses once
    ("dm[0]", True),         # the same row every time
    ("dm", True),
])
def test_a_row_that_follows_the_loop_is_another_part_of_the_buffer_each_time(copied, reported):
    src = f"""
    import numpy as np, cupy as cp
    def f():
        dm = np.random.uniform(-2.0, 2.0, (4, 300, 300))
        out = []
        for i in range(dm.shape[0]):
            out.append(cp.asarray({copied}))
        return out
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("made, reported", [
    ("np.random.uniform(0.0, 1.0, 1000)", False),           # 8,000 B of float64
    ("np.random.uniform(0.0, 1.0, size=(512, 512))", True),
    ("np.random.normal(0.0, 1.0, (64, 64))", False),         # 32 KiB
    ("np.random.randint(0, 9, 100000)", True),               # 800 kB of int64
    ("np.random.randint(0, 9, 1000, dtype=np.int8)", False),
])
def test_numpy_random_sizes(made, reported):
    src = f"""
    import numpy as np, cupy as cp
    def f():
        h = {made}
        for _ in range(10):
            cp.asarray(h)
    """
    assert codes(src) == (["PIN007"] if reported else [])


# ------------------------------------------------------------------ made again on every iteration, or no copy
_MADE_BY_A_CALL = """
import torch

def get_data(shape):
    ids = torch.zeros(shape, dtype=torch.int64)
    mask = torch.ones(shape, dtype=torch.int64)
    return {ret}

def bench(data):
    return [data[k].cuda() for k in ("ids", "mask")]

def main(batch=64, seq=4096):
    shape = [batch, seq]
    {setup}
    for ratio in [0.5, 0.4, 0.3, 0.2]:
        bench({arg})
"""


@pytest.mark.parametrize("ret", ["dict(ids=ids, mask=mask)", "{'ids': ids, 'mask': mask}",
                                 "dict({'ids': ids}, mask=mask)"])
def test_buffers_a_call_in_the_loop_makes_are_new_on_every_iteration(ret):
    """`bench(get_data(shape))`: the dict the call returns (a display or `dict(k=v)`) holds buffers
    made on this iteration, not ones allocated before the loop."""
    assert "PIN007" not in codes(_MADE_BY_A_CALL.format(ret=ret, setup="pass", arg="get_data(shape)"))


@pytest.mark.parametrize("ret", ["dict(ids=ids, mask=mask)", "{'ids': ids, 'mask': mask}"])
def test_buffers_made_once_before_the_loop_are_still_pin007(ret):
    src = _MADE_BY_A_CALL.format(ret=ret, setup="data = get_data(shape)", arg="data")
    assert rows(src, "PIN007") == [row_of(src, "        bench(data)")]


@pytest.mark.parametrize("target", ['torch.device("meta")', '"meta"', '"mps"', "device='meta'"])
def test_a_move_to_a_device_that_is_neither_cpu_nor_cuda_is_no_transfer(target):
    src = f"""
import torch
args = dict(ids=torch.zeros(64, 4096, dtype=torch.int64))
for ratio in [0.5, 0.4, 0.3]:
    meta = {{k: v.to({target}) for k, v in args.items()}}
    empty = torch.empty(1 << 20, device="meta").to("cuda")
"""
    assert "PIN007" not in codes(src)


@pytest.mark.parametrize("n, reported", [(1000, False), (100_000, True)])
@pytest.mark.parametrize("length", ["len(betas) + 1", "int(len(betas)) + 1", "len((betas, betas)) * len(betas)"])
def test_len_of_a_buffer_of_known_size_is_that_size(n, reported, length):
    """`torch.linspace(0, 1, len(betas) + 1)` of a 1000-step schedule is 4 KB, under the threshold;
    of 100,000 steps, 400 KB, over it."""
    src = f"""
import torch
def sample(x, n={n}):
    betas = torch.linspace(1e-4, 2e-2, {n})
    t = torch.linspace(0.0, 1.0, {length})
    for _ in range(50):
        x = t.to("cuda")[:1] * x
    return x
"""
    assert bool(rows(src, "PIN007")) is reported


_DEVICES = """
import numpy as np
import cupy as cp

class Device{bases}:
    def __init__(self, id, name):
        self.id = id
        self.name = name

    def __eq__(self, other):
        if isinstance(other, int):
            return self.id == other
        return self.id == other.id

def to_device(input, device):
    if Device(-1, "host") == device:
        return input
    return cp.asarray(input)

def run(x):
    for _ in range(10):
        to_device(x, Device({id}, "cpu"))

run(np.zeros(1 << 20))
"""


@pytest.mark.parametrize("bases, id, reported", [
    ("", -1, False),           # the class's own __eq__ says the devices are the same: no copy
    ("(object)", -1, False),
    ("", 0, True),             # another device: the copy runs on every iteration
    ("(Base)", -1, True),      # a base the tree does not hold: isinstance(other, int) is not known
])
def test_equality_of_objects_of_the_checked_code_runs_their_eq(bases, id, reported):
    src = _DEVICES.format(bases=bases, id=id).replace("import cupy as cp\n", "import cupy as cp\nfrom lib import Base\n")
    assert bool(rows(src, "PIN007")) is reported


@pytest.mark.parametrize("index, reported", [
    ("n_in + i", False),   # one output buffer per binding, after the inputs: each crosses once
    ("i + n_in", False),
    ("2 * i + 1", False),
    ("n_in", True),        # the same buffer every time
    ("i % 2", True),
])
def test_a_list_index_that_follows_the_loop_is_another_element_each_time(index, reported):
    src = f"""
    import numpy as np
    from cuda.bindings import runtime as cudart
    def bindings(n_in, n_out):
        host = [np.random.rand(1 << 20).astype(np.float32) for _ in range(n_in)]
        for _ in range(n_out):
            host.append(np.empty(1 << 20, dtype=np.float32))
        dev = [cudart.cudaMalloc(h.nbytes)[1] for h in host]
        for i in range(n_out):
            cudart.cudaMemcpy(host[{index}].ctypes.data, dev[i], host[{index}].nbytes,
                              cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
    """
    assert codes(src) == (["PIN007"] if reported else [])


def test_a_loop_over_array_modules_runs_each_once():
    # `for xp in (numpy, cupy): a = xp.asarray(h)`: the upload happens on one iteration only.
    src = """
    import numpy
    import cupy
    def check(h):
        for xp in (numpy, cupy):
            a = xp.asarray(h)
            xp.linalg.cholesky(a)
    def test():
        check(numpy.ones((1024, 1024)))
    """
    assert "PIN007" not in codes(src)


def test_a_table_a_callee_re_copies_in_its_own_loop_names_that_loop():
    """A sampler called once per prompt builds a schedule whose table its solver copies on every step
    (ColossalAI's DPM solver, survey 16): the caller's loop makes a new table each time; the loop that
    re-copies one table is the solver's, and the message said "outside the loop" of the caller's."""
    src = """
import torch
class Schedule:
    def __init__(self, n):
        self.grid = torch.linspace(0.0, 1.0, n)
    def at(self, t):
        return self.grid.to(t.device) * t
def solve(x, n, steps):
    schedule = Schedule(n)
    for i in range(steps):
        x = x + schedule.at(x)
    return x
def generate(prompts, n):
    noise = torch.randn(16, device="cuda")
    return [solve(noise, n, 20) for p in prompts]
"""
    f = only(src, "PIN007")
    assert f.location.row == row_of(src, "solve(noise, n, 20)")
    step_loop = row_of(src, "for i in range(steps)")
    assert f"outside the loop at line {step_loop})" in f.message and "inside that loop" in f.message


@pytest.mark.parametrize("merge, reported", [
    ('kw |= {"use_gpu": False}', False),
    ('kw.update({"use_gpu": False})', False),
    ('kw.update(use_gpu=False)', False),
    ('kw |= {"use_gpu": True}', True),
    ('kw |= {"other": 1}', True),
])
def test_a_dict_merged_in_place_replaces_the_keys_it_sets(merge, reported):
    """`kw |= {"use_gpu": False}` (matvis' CPU test, survey 18: a false PIN007) and `kw.update(...)` set
    the key: the keyword a call then unpacks from the dict is False, not either."""
    from helpers import rows, row_of
    src = f"""
import cupy as cp
import numpy as np
def simulate(idx, freqs, use_gpu=True):
    out = []
    for _ in freqs:
        out.append(cp.asarray(idx) if use_gpu else idx.astype(np.uint64))
    return out
def test_cpu():
    kw = {{"freqs": [1.0, 2.0, 3.0], "use_gpu": True}}
    {merge}
    idx = np.zeros(100_000, dtype=np.int64)
    return simulate(idx, **kw)
"""
    assert rows(src, "PIN007") == ([row_of(src, "return simulate(idx, **kw)")] if reported else [])


_DECORATED = """
import functools
import cupy as cp
import numpy as np

def batched(func):
    def inner(*args):
        return func(cp.empty(args[0].shape, args[0].dtype))
    return inner

def timed(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper

@batched
def rewrapped(data):
    return float(cp.ascontiguousarray(data.T).sum())

@timed
def passed_through(data):
    return float(cp.ascontiguousarray(data.T).sum())

def main():
    host = np.empty((4096, 4096), np.float32)
    for k in range(8):
        rewrapped(host)
        passed_through(host)  # passed through
"""


def test_a_decorated_function_runs_with_the_arguments_its_wrapper_gives():
    """`@batched def kernel(data)` whose wrapper hands the body a device array it makes: the host
    array given to `kernel` never reaches the body's copy (streamtomocupy, survey 19: two false
    PIN007s). A wrapper that passes `*args, **kwargs` through is the body run as called."""
    from helpers import rows, row_of
    assert rows(_DECORATED, "PIN007") == [row_of(_DECORATED, "# passed through")]


def test_a_buffer_a_callee_returns_in_a_container_it_made_is_new_on_each_call():
    """`out = {}; out[n] = torch.empty(...); return out` in a method called on every iteration
    (SpecForge's capture test, survey 19: a false PIN007): the dict is made anew each call, so its
    tensors are too. A dict the object keeps (`self.cache[n] = ...`) is the same buffer again."""
    from helpers import rows, row_of
    src = """
import torch
class Store:
    def __init__(self):
        self.cache = {}
    def get(self, names):
        out = {}
        for n in names:
            out[n] = torch.empty((1024, 1024))
        return out
    def cached(self, names):
        for n in names:
            if n not in self.cache:
                self.cache[n] = torch.empty((1024, 1024))
        return self.cache
def main():
    store = Store()
    for i in range(8):
        store.get(["a"])["a"].cuda()
        store.cached(["a"])["a"].cuda()  # cached
"""
    assert rows(src, "PIN007") == [row_of(src, "# cached")]


def test_a_decorated_functions_wrapper_copies_what_the_caller_gives():
    """holotomocupy (survey 19): `@batched def forward(x)` whose wrapper uploads the caller's host
    array in chunks (`buf[:k].set(args[0][st:end])`) before running the body: a pageable array made
    outside the solver loop and handed to `forward` on every iteration is PIN007 through the wrapper."""
    from helpers import rows, row_of
    src = """
import cupy as cp
import numpy as np

def batched(func):
    def inner(*args):
        n = args[0].shape[0]
        buf = cp.empty((16, *args[0].shape[1:]), args[0].dtype)
        out = np.empty(args[0].shape, args[0].dtype)
        for st in range(0, n, 16):
            end = min(n, st + 16)
            buf[: end - st].set(args[0][st:end])
            out[st:end] = func(buf[: end - st]).get()
        return out
    return inner

@batched
def forward(x):
    return x * 2

def solve(niter):
    psi = np.ones((256, 1024, 1024), np.complex64)
    for _ in range(niter):
        psi += 0.1 * forward(psi)  # forward
    return psi
"""
    assert rows(src, "PIN007") == [row_of(src, "# forward")]


@pytest.mark.parametrize("alloc, arg, in_loop, reported", [
    # pycuda-euler (survey 24): the launch copies what drv.In/InOut/Out wrap, on every launch
    ("np.zeros(1 << 20, dtype=np.uint32)", "drv.In(labels)", True, True),
    ("np.zeros(1 << 20, dtype=np.uint32)", "drv.InOut(labels)", True, True),
    ("np.zeros(1 << 20, dtype=np.uint32)", "drv.Out(labels)", True, True),
    ("np.zeros(1 << 20, dtype=np.uint32)", "drv.In(labels)", False, False),     # launched once
    ("drv.pagelocked_zeros(1 << 20, dtype=np.uint32)", "drv.In(labels)", True, False),
])
def test_pycuda_kernel_argument_wrappers_copy_at_each_launch(alloc, arg, in_loop, reported):
    launch = f"touch({arg}, block=(256, 1, 1), grid=(4096, 1))  # launch"
    body = f"for _ in range(100):\n        {launch}" if in_loop else launch
    src = f"""
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
from pycuda.compiler import SourceModule

touch = SourceModule("__global__ void touch(unsigned int *a) {{}}").get_function("touch")

def run():
    labels = {alloc}
    {body}
"""
    assert (rows(src, "PIN007") == [row_of(src, "# launch")]) is reported, src


@pytest.mark.parametrize("index, reported", [
    ("ids", False),        # node ids nothing explains: a row, or rows gathered into a new tensor each time
    ("batch.ids", False),
    ("0", True),           # the same row on every iteration
])
def test_rows_picked_by_an_index_nothing_explains_may_be_a_new_gather(index, reported):
    # inference_helper (survey 25): features of the previous layer gathered by a loader's node ids
    src = f"""
import torch

def layer(loader, dev, n):
    feats = torch.zeros(n, 256)
    out = []
    for batch in loader:
        ids = batch.ids
        out.append(feats[{index}].to("cuda"))  # copy
    return out
"""
    assert (rows(src, "PIN007") == [row_of(src, "# copy")]) is reported


def test_a_gather_or_a_row_of_a_pageable_tensor_is_pageable_either_way():
    src = """
import torch

def layer(loader, dev, n):
    feats = torch.zeros(n, 256)
    for batch in loader:
        x = feats[batch.ids].to(dev, non_blocking=True)  # copy
        yield x
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


@pytest.mark.parametrize("fetch, reported", [
    ("groups[k]", False),
    ("groups.get(k)", False),         # the loop's own entry, as with a subscript
    ("groups.get(k, [])", False),
    ("groups.pop(k)", False),
    ("groups.get('first')", True),   # one entry, the same on every iteration
])
def test_a_dict_entry_fetched_by_the_loops_key_is_another_buffer_each_iteration(fetch, reported):
    """A fresh receive buffer cut into parts, filed per kind in lists, each kind's parts uploaded once
    (graphlearn-for-pytorch): no byte crosses the bus twice, whether the loop fetches its kind's list
    with a subscript or with `.get`/`.pop`."""
    src = f"""
    import torch

    def split(kinds):
        inbox = torch.zeros((len(kinds) * 4096, 256))
        groups = {{}}
        for k in kinds:
            groups[k] = []
        for j, k in enumerate(kinds):
            groups[k].append(inbox[j * 4096:(j + 1) * 4096])
        return groups

    def upload(parts):
        out = None
        for part in parts:
            out = part.to("cuda")
        return out

    def run(kinds):
        groups = split(kinds)
        done = {{}}
        for k in kinds:
            done[k] = upload({fetch})
        return done
    """
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("receivers, reported", [
    ("[track.astype(np.float32)]", False),             # one receiver: each array is copied once
    ("[track, track.astype(np.float32)]", True),         # two: the transmitters go up twice
])
def test_a_helpers_loop_over_the_one_item_list_its_caller_gives_runs_once(receivers, reported):
    """simulib: range profiles for a list of receivers and a list of transmitters; the transmitter
    arrays are copied inside the receiver loop. Called with one receiver, that loop runs once."""
    src = f"""
    import numpy as np
    from numba import cuda

    def profiles(tx_list, rx_list, n):
        outs = [[np.zeros(n, np.float32) for _ in tx_list] for _ in rx_list]
        for rx, row in zip(rx_list, outs):
            d_rx = cuda.to_device(rx)
            for tx, out in zip(tx_list, row):
                d_tx = cuda.to_device(tx)
                d_tx.copy_to_host(out)
        return outs

    def main(source):
        track = np.ascontiguousarray(source(), dtype=np.float32)
        return profiles([track.astype(np.float32)], {receivers}, 2048)
    """
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("loop, reported", [
    ("for rx in [h]:", False),
    ("for i in range(1):", False),
    ("for i, rx in enumerate([h]):", False),
    ("for rx in [h, h]:", True),
])
def test_a_loop_over_one_element_is_no_loop(loop, reported):
    src = f"""
    import numpy as np
    import cupy as cp
    h = np.zeros({BIG}, dtype=np.float32)
    for k in range(1):
        pass
    {loop}
        d = cp.asarray(h)
    """
    assert ("PIN007" in codes(src)) == reported


def test_a_helper_that_copies_the_callers_buffer_at_several_places_is_one_finding_per_buffer():
    """pycuda-euler: a helper's loop uploads and reads back the caller's arrays at a dozen places;
    31 findings stood at one call. One per buffer: the buffer to pin; the helper's other copies
    of it are related locations."""
    src = f"""
    import numpy as np
    import pycuda.autoinit
    import pycuda.gpuarray as gpuarray

    def label(parents, ranks, rounds):
        for r in range(rounds):
            d_p = gpuarray.to_gpu(parents)
            d_r = gpuarray.to_gpu(ranks)
            d_p.get(parents)
            d_q = gpuarray.to_gpu(parents)
        return parents

    def main(rounds):
        parents = np.zeros({BIG}, dtype=np.int32)
        ranks = np.zeros({BIG}, dtype=np.int32)
        return label(parents, ranks, rounds)
    """
    found = [f for f in findings(src) if f.code == "PIN007"]
    call = row_of(src, "return label(")
    assert [f.location.row for f in found] == [call, call]
    by_buffer = {f.related[0].location.row: f for f in found}
    parents, ranks = by_buffer[row_of(src, "parents = np.zeros")], by_buffer[row_of(src, "ranks = np.zeros")]
    assert parents.message.endswith("(and 2 more copies of it through this call)")
    assert sorted(r.location.row for r in parents.related[1:]) == [row_of(src, "d_p.get(parents)"),
                                                                    row_of(src, "d_q = gpuarray")]
    assert "through this call" not in ranks.message and len(ranks.related) == 1
    noqa = source(src).replace("return label(parents, ranks, rounds)", "return label(parents, ranks, rounds)  # noqa: PIN007")
    assert "PIN007" not in codes(noqa)


_SPECIES = """
import numpy as np
import cupy


class Species:
    def __init__(self, n):
        self.pos = np.random.rand(n)
        self.d_pos = None

    def upload(self):
        self.d_pos = cupy.asarray(self.pos)

    def download(self):
        self.pos = self.pos.get()

    def to_gpu(self):
        self.pos = cupy.asarray(self.pos)

    def scale(self):
        self.pos *= 2.0

{body}
"""


@pytest.mark.parametrize("body, reported", [
    # A method copies the object's own buffer; a loop calls it: the same buffer every iteration.
    ("sp = Species(1_000_000)\nfor it in range(100):\n    sp.upload()", True),
    # ... through a step function and a helper's loop over the objects (fbpic's shape, no round trip).
    ("def step(species):\n    for sp in species:\n        sp.scale()\n    for sp in species:\n        sp.upload()\n\n"
     "def run(species, n):\n    for it in range(n):\n        step(species)\n\nrun([Species(1_000_000)], 100)", True),
    # The buffer is replaced each iteration by what `.get()` allocates, then sent back (fbpic's
    # diagnostics: species in a list or in a dict): a new buffer each time.
    ("def dump(species):\n    for sp in species:\n        sp.download()\n    for sp in species:\n        sp.to_gpu()\n\n"
     "def run(species, n):\n    for sp in species:\n        sp.to_gpu()\n    for it in range(n):\n        dump(species)\n\n"
     "run([Species(1_000_000)], 100)", False),
    ("def dump(by_name):\n    for name in by_name:\n        sp = by_name[name]\n        sp.download()\n"
     "    for name in by_name:\n        sp = by_name[name]\n        sp.to_gpu()\n\n"
     "def run(sp, by_name, n):\n    sp.to_gpu()\n    for it in range(n):\n        dump(by_name)\n\n"
     "e = Species(1_000_000)\nrun(e, {'e': e}, 100)", False),
])
def test_a_method_that_copies_its_objects_buffer_called_in_a_loop(body, reported):
    """The callee's own analysis has the copy but no loop; the loop is some caller's, one or more
    calls up. An object taken out of a list or dict and changed in place (`sp.download()`) is the
    container's object: the next loop over the container sees the new buffer."""
    src = _SPECIES.format(body=body)
    assert ("PIN007" in codes(src)) == reported, src


@pytest.mark.parametrize("prepare, reported", [
    ("self.buf = np.random.rand(n)", False),                                   # a new buffer each call
    ("if self.buf is None:\n            self.buf = np.random.rand(n)", True),    # made once, a cache
])
def test_a_buffer_a_method_stores_on_its_object_each_call_is_new_each_iteration(prepare, reported):
    """`f.prepare(n)` then a copy of `f.buf` (directly or through `f.upload()`) in a loop: a method
    that stores a fresh buffer on every call gives a new buffer each iteration; a lazy cache, one
    buffer for all of them."""
    for copy in ("d = cupy.asarray(f.buf)", "f.upload()"):
        src = f"""
import numpy as np
import cupy

class Frame:
    def __init__(self):
        self.buf = None
        self.d = None

    def prepare(self, n):
        {prepare}

    def upload(self):
        self.d = cupy.asarray(self.buf)

f = Frame()
for it in range(100):
    f.prepare(1_000_000)
    {copy}
"""
        assert ("PIN007" in codes(src)) == reported, src


@pytest.mark.parametrize("body, code", [
    # A clone of a tensor whose device nothing tells is no new pageable array ...
    ("c = t.clone()\nfor i in range(10):\n    d.copy_(c)", None),
    ("c = t.clone()\nreturn c.cuda(non_blocking=True)", None),
    # ... and a blocking copy_ into such a tensor is no upload (pbg's CPU parameter server).
    ("c = torch.from_numpy(np.zeros(1 << 20))\nfor i in range(10):\n    t.copy_(c)", None),
    # Asked to be non-blocking, the copy is meant for a GPU.
    ("c = torch.zeros(1 << 20)\nt.copy_(c, non_blocking=True)", "PIN001"),
    # A tensor on a known device stays one (control).
    ("c = torch.from_numpy(np.zeros(1 << 20))\ng = torch.empty(1 << 20, device='cuda')\nfor i in range(10):\n    g.copy_(c)",
     "PIN007"),
])
def test_a_torch_tensor_parameter_is_on_no_known_device(body, code):
    src = ("import numpy as np\nimport torch\n\n\ndef f(t: torch.Tensor, d: torch.Tensor):\n    "
           + body.replace("\n", "\n    ") + "\n")
    found = [f.code for f in findings(src)]
    assert found == ([code] if code else []), (found, src)


@pytest.mark.parametrize("bound, reported", [
    ("start = stop - step", False),        # follows the loop's variable one to one: another chunk each time
    ("start = stop - step\n        start = max(start, 0)", False),  # computed from it in another way
    ("start = 0", True),                    # the same rows every time
    ("start = stop % 2", True),             # comes round again
])
def test_a_slice_bound_computed_from_the_loops_variable_is_another_chunk(bound, reported):
    src = f"""
import torch

def embed(rows, step=256):
    data = torch.rand(rows, 4096)
    out = []
    for stop in range(step, rows + step, step):
        {bound}
        out.append(data[start:stop].cuda())
    return out
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("key, reported", [
    ("picks[0, k].item()", False),  # computed from the loop's variable: may differ on each iteration
    ("k", False),
    ("0", True),                    # the same entry every time
    ("k // 2", True),               # comes round again
])
def test_a_dict_key_computed_from_the_loops_variable_picks_another_entry(key, reported):
    src = f"""
import torch

def reference(dev):
    table = {{}}
    for e in range(8):
        table[(0, e)] = torch.randn(2048, 1024)
    picks = torch.tensor([[2, 5]])
    sent = []
    for k in range(2):
        expert = {key}
        sent.append(table[(0, expert)].cuda())
    return sent
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("pull, reported", [
    ("self.state.pull()", False),   # the generator replaces the state's arrays before each yield
    ("self.count += 1", True),      # it changes only itself: the state's array is the one made before
    ("pass", True),
])
def test_a_loop_over_a_generator_that_replaces_an_objects_arrays(pull, reported):
    src = f"""
import numpy as np
from numba import cuda

class State:
    def __init__(self, n):
        self.pos = np.zeros((n, 3), dtype=np.float32)

    def push(self):
        self.d_pos = cuda.to_device(self.pos)

    def pull(self):
        self.pos = self.d_pos.copy_to_host()

class Runner:
    def __init__(self, state, blocks):
        self.state = state
        self.blocks = blocks
        self.count = 0

    def blocks_iter(self):
        self.state.push()
        for b in range(self.blocks):
            {pull}
            yield b

def compress(n, blocks):
    state = State(n)
    run = Runner(state, blocks)
    for b in run.blocks_iter():
        state.pos *= 0.99
        state.push()
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("make, reported", [
    ("np.asarray([int(n / 3), int(n / 5), int(n / 7)], dtype=np.int32)", False),  # 12 bytes: a list of numbers
    ("np.asarray([float(n), 2.0, 3.0], dtype=np.float64)", False),
    ("np.asarray(np.zeros(1 << 20))", True),                                     # a view of a large array
    ("np.asarray([np.zeros(1 << 20), np.zeros(1 << 20)])", True),                 # arrays, not numbers
])
def test_asarray_of_a_list_is_sized_like_array_of_it(make, reported):
    src = f"""
import numpy as np
from numba import cuda

def f(n, steps):
    small = {make}
    for i in range(steps):
        cuda.to_device(small)
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("call, reported", [
    ('run(8, device="cpu")', False),                 # fp8: the branch that moves to "cuda" cannot run
    ('run(8, device="cpu", primary="mxfp8")', True),  # mxfp8 on the CPU is moved to the GPU
])
def test_membership_in_a_tuple_of_constants_is_decided(call, reported):
    src = f"""
import torch

def run(n_layers, device=None, primary=None):
    fmt = primary if primary else "fp8"
    if fmt in ("mxfp8", "nvfp4") and device == "cpu":
        device = "cuda"
    calib = torch.randn(4096, 2048)
    out = []
    for i in range(n_layers):
        out.append(calib.to(device=device).sum().item())
    return out

def test():
    {call}
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("seqs, reported", [(1, False), (1 << 20, True)])
def test_a_size_given_on_through_a_helper_sizes_the_buffer(seqs, reported):
    src = f"""
import torch

class Engine:
    def __init__(self, max_seqs=32):
        self.lens_cpu = torch.zeros(max_seqs, dtype=torch.int32)
        self.lens_gpu = torch.zeros(max_seqs, dtype=torch.int32, device="cuda")

    def step(self):
        self.lens_gpu.copy_(self.lens_cpu)
        return self.lens_gpu.sum()

def make_engine(max_seqs=2):
    return Engine(max_seqs=max_seqs)

def test():
    eng = make_engine(max_seqs={seqs})
    for _ in range(50):
        eng.step()
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("step, reported", [
    ("begin = max(0, end - chunk)\n        d = cupy.asarray(idx[begin:end])\n        end = begin", False),
    ("d = cupy.asarray(idx[0:chunk])\n        end -= chunk", True),  # the same first chunk every time
])
def test_a_while_loop_walking_an_array_in_chunks_sends_each_once(step, reported):
    src = f"""
import cupy
import numpy as np

def upload(total, chunk):
    idx = np.zeros(total, dtype=np.int64)
    end = total
    while end > 0:
        {step}
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("make, reported", [("np.eye(4)", False), ("np.eye(1024, dtype=np.float32)", True),
                                            ("np.identity(2048)", True), ("np.eye(8, 16)", False),
                                            ("np.eye(8, 4096)", True)])
def test_identity_matrices_have_their_size(make, reported):
    src = f"""
import numpy as np
import cupy as cp

def f(n):
    m = {make}
    for i in range(n):
        cp.asarray(m)
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("mask, reported", [
    ("h[:, 0] < kmax", True),          # a comparison of a host array: a new boolean array, an advanced index
    ("(h[:, 0] >= 0.5)", True),
    ("h[:, 0] != h[:, 1]", True),
    ("np.arange(n) < kmax", True),
    ("slice(0, 16)", False),            # basic slicing: a view of h, made pinned below
])
def test_a_comparison_of_a_host_array_is_a_mask_whose_selection_is_a_new_array(mask, reported):
    src = f"""
import numpy as np
from numba import cuda
def run(kmax, n):
    h = cuda.pinned_array((n, 3), np.float32)
    sel = h[{mask}]
    for _ in range(n):
        cuda.to_device(sel)
"""
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("bounds, index, reported", [
    ("st, end = window(i, chunk)", "h[0, :, st:end]", False),      # a window that moves with i
    ("st, end = i * chunk, i * chunk + chunk", "h[:, st:end]", False),
    ("st, end = window(i, chunk)", "h[st:end]", False),
    ("st, end = window(0, chunk)", "h[0, :, st:end]", True),       # the same window every time
    ("st, end = window(i % 2, chunk)", "h[0, :, st:end]", True),   # two windows that come round
])
def test_a_window_computed_from_the_loops_variable_is_another_part_each_time(bounds, index, reported):
    # model_mosaic's gather (survey 34): per bin, the window `h[0, :, st:end]` where a helper works out
    # (st, end) from the bin's index.
    src = f"""
import numpy as np
import cupy as cp
def window(i, chunk):
    return max(0, i * chunk - 4), (i + 1) * chunk + 4
def gather(n, chunk):
    h = np.random.standard_normal((1, 2 * n, n + 1)).astype(np.complex64)
    for i in range(n // chunk):
        {bounds}
        d = cp.asarray({index})   # copy
"""
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("body, reported", [
    # Reallocated and uploaded together when the box changes: each upload sends a new buffer.
    ("if dim != self.dim:\n            self.dim = dim\n            self.cells = np.zeros(1 << 20, np.float32)\n"
     "            self.d_cells = cuda.to_device(self.cells)", False),
    # Made once (lazily), uploaded on every call: the same buffer again and again.
    ("if self.cells is None:\n            self.cells = np.zeros(1 << 20, np.float32)\n"
     "        self.d_cells = cuda.to_device(self.cells)", True),
])
def test_a_callee_uploading_the_buffer_it_just_made_repeats_nothing(body, reported):
    # pygamd's cell list (survey 31's tree): `calculate()` called in a loop reallocates its arrays
    # under an `if` and uploads them in the same arm.
    src = f"""
import numpy as np
from numba import cuda
class Cells:
    def __init__(self):
        self.dim = 0
        self.cells = None
        self.calculate(1)
    def calculate(self, dim):
        {body}
def run(steps):
    c = Cells()
    for i in range(steps):
        c.calculate(i)   # call
"""
    assert ("PIN007" in codes(src)) == reported


_REGROWN = """
import numpy as np
import torch

class Cache:
    def __init__(self, device):
        self.device = device
        self.map_cpu = None
        self.map_gpu = None
        self.dims = (0, 0)

    def _ensure(self, layer, expert):
        nl, ne = max(self.dims[0], layer + 1), max(self.dims[1], expert + 1)
        if self.map_cpu is None:
            self.map_cpu = np.full((nl, ne), -1, dtype=np.int32)
            self.map_gpu = torch.from_numpy(self.map_cpu).to(self.device)
            self.dims = (nl, ne)
        elif nl > self.map_cpu.shape[0] or ne > self.map_cpu.shape[1]:
            grown = np.full((nl, ne), -1, dtype=np.int32)
            grown[: self.dims[0], : self.dims[1]] = self.map_cpu
            self.map_cpu = grown
            self.map_gpu = torch.from_numpy(grown).to(self.device)
            self.dims = (nl, ne)
{tail}

    def allocate(self, layer, expert):
        self._ensure(layer, expert)
        self.map_cpu[layer, expert] = 1

class Loader:
    def __init__(self, cache):
        self.cache = cache

    def load(self, layer, expert):
        self.cache.allocate(layer, expert)

class Batcher:
    def __init__(self, loader):
        self.loader = loader

    def run(self, layer, groups):
        for expert, rows in groups.items():
            self.loader.load(layer, expert)

def main(groups):
    cache = Cache("cuda")
    cache.allocate(0, 0)  # made before the loop
    Batcher(Loader(cache)).run(0, groups)
"""


@pytest.mark.parametrize("tail, reported", [
    ("", False),
    # sent again on every call, whether or not it was regrown: the same buffer each iteration
    ("        self.map_gpu = torch.from_numpy(self.map_cpu).to(self.device)", True),
])
def test_a_buffer_regrown_and_sent_in_one_arm_is_sent_once_per_buffer_however_deep(tail, reported):
    """tinyserve's expert cache (survey 30): the slot map made, or regrown, and uploaded in the same
    arm, three calls below the batcher's loop. Each upload sends the buffer just made; the loop
    sends no buffer twice."""
    src = _REGROWN.format(tail=tail)
    assert bool(rows(src, "PIN007")) is reported, src


_ROWS = """
import io
import torch


def send(blob, n, epochs):
    dev = torch.device("cuda")
    frames = torch.load(io.BytesIO(blob), map_location="cpu")
    table = torch.zeros((64, 1 << 16))
    out = []
{body}
    return out
"""


@pytest.mark.parametrize("body, reported", [
    # Each row (a view, another part of the memory) crosses the bus once.
    ("    for row in table:\n        out.append(row.to(dev))", False),
    ("    for i in range(n):\n        out.append(table[i].to(dev))", False),
    # Saved frames walked one by one (RLinf's world-model state): each sent once.
    ("    for i in range(n):\n        for frame in frames[i]:\n            out.append(frame.to(dev))", False),
    # Every row again on each epoch, or a row that comes round again: re-sent.
    ("    for e in range(epochs):\n        for row in table:\n            out.append(row.to(dev))", True),
    ("    for i in range(n):\n        out.append(table[i % 2].to(dev))", True),
    ("    for i in range(n):\n        out.append(table.to(dev))", True),
])
def test_rows_of_a_buffer_walked_by_the_loop_are_sent_once(body, reported):
    src = _ROWS.format(body=body)
    assert ("PIN007" in codes(src)) == reported, src


def test_a_tensor_made_on_the_device_before_the_loop_is_not_re_sent_by_to_inside_it():
    # curobo (survey 39): `torch.as_tensor(seeds, device=device)` once, then `.to(device)` of that
    # device tensor in a helper called by a retry loop: a no-op, the host array crosses the bus once.
    src = """
import numpy as np
import torch


def make_seeds(n):
    pts = np.random.rand(n * 4, 3)
    return pts[np.argsort(-pts[:, 0])][:n]


def train(seeds, device):
    return seeds.to(device).float()


def fit(seeds, device):
    seeds_t = torch.as_tensor(seeds, dtype=torch.float32, device=device)
    for _ in range(3):
        out = train(seeds_t, device)
    return out


def top(n):
    return fit(make_seeds(n), torch.device("cuda", 0))
"""
    assert codes(src) == []
    # Without the device keyword the tensor is the host array's memory, re-sent on every iteration.
    assert codes(src.replace(", device=device)", ")")) == ["PIN007"]


_FRAME_HELPER = """
from dataclasses import dataclass
import numpy as np
import torch


@dataclass(frozen=True)
class Result:
    grid: np.ndarray | None = None


class Cache:
    pass


def make(n, feats):
    grid = None
    if feats is not None:
        grid = np.zeros(n, dtype=np.float16)
    {store}return Result(grid=grid)


def run(frames, n):
    for frame in frames:
        r = make(n, frame.feats)
        b = torch.from_numpy(r.grid).to(device="cuda")
"""


def test_a_buffer_a_helper_in_the_loop_makes_under_an_if_and_returns_in_an_object_is_new_each_iteration():
    # curobo (survey 39): `feature_grid = None; if features is not None: feature_grid = np.zeros(...)`,
    # returned in a dataclass by the helper the per-frame loop calls: a new array every frame.
    assert codes(_FRAME_HELPER.format(store="")) == []


def test_the_same_helper_keeping_the_object_for_later_is_a_cache():
    # Kept on a module object (a cache the helper may fill once): the loop re-sends what it keeps.
    src = _FRAME_HELPER.format(store="Cache.last = Result(grid=grid)\n    ")
    assert codes(src) == ["PIN007"]


@pytest.mark.parametrize("source", ["torch.cat(ids, dim=0)", "t"])
def test_a_blocking_copy_from_a_tensor_nothing_places_is_no_download(source):
    # exllamav3 (a regression of 6708be5): `batch_ids.copy_(torch.cat(input_ids_list))` of CPU id tensors
    # into a pageable buffer in the generation loop is a CPU copy as far as the code tells.
    src = f"""
import torch

def step(jobs, t: torch.Tensor, n):
    h = torch.empty((n, 1), dtype=torch.long)
    for _ in range(10):
        ids = [j.ids() for j in jobs]
        h.copy_({source})
"""
    assert codes(src) == []
    # Asked to be non-blocking, the copy is meant to come from a GPU: into pageable memory, PIN001.
    assert codes(src.replace(f"h.copy_({source})", f"h.copy_({source}, non_blocking=True)")) == ["PIN001"]


@pytest.mark.parametrize("mask, reported", [
    ("torch.ones(1, len(ids), dtype=torch.long)", False),   # one element per id: a token mask
    ("torch.ones((1, len(ids)))", False),
    ("torch.ones(len(frames), 3, 224, 224)", True),         # a list of images: no small tensor
    ("torch.ones(64, len(ids))", True),                     # 64 per id: no longer one per object
])
def test_a_tensor_sized_by_a_list_of_numbers_the_code_builds_is_small(mask, reported):
    # Hetero-KVCache-Optimizer (survey 40): an attention mask `torch.ones(1, len(all_ids))` beside the
    # token tensor `torch.tensor([all_ids])`, sent once per configuration in a loop.
    src = f"""
import torch

def build(n, frames):
    ids = []
    while len(ids) < n:
        ids.extend([101, 102, 103])
    return {mask}

def main(model, frames):
    m = build(4096, frames)
    for cfg in ("a", "b", "c"):
        model(m.to("cuda"))
"""
    assert ("PIN007" in codes(src)) == reported


@pytest.mark.parametrize("step, reported", [("offset += c", False), ("", True)])
def test_a_slice_at_an_offset_the_loop_moves_on_is_another_part_each_iteration(step, reported):
    # model_mosaic (a regression of 122cf36, which made np.argsort's result known): `idx[offset:offset
    # + nel]` with `offset += nel` at the end of the body sends each part of idx once.
    src = f"""
import numpy as np
import cupy as cp


def gather(n, counts):
    idx = np.argsort(np.random.rand(n))
    offset = 0
    for c in counts:
        d = cp.asarray(idx[offset : offset + c])
        {step}
"""
    assert ("PIN007" in codes(src)) == reported


def test_as_tensor_onto_the_gpu_in_a_loop_re_sends_the_host_array():
    # CV-CUDA's test helper (survey 36): `torch.as_tensor(host, device="cuda")` once per map kind.
    src = """
import numpy as np
import torch

def f(n):
    h = np.zeros((1024, 1024), dtype=np.float32)
    for _ in range(n):
        d = torch.as_tensor(h, device="cuda")
"""
    assert rows(src, "PIN007") == [row_of(src, "d = torch.as_tensor")]
    # and the prefilter of a real run does not skip a file whose only transfer is this call
    from pinlint.engine import lint_bytes
    found = lint_bytes(source(src).encode(), "t.py", Settings()).findings
    assert [f.code for f in found] == ["PIN007"]


RETRY = f"""
import numpy as np
from numba import cuda


def run(n, steps):
    h = np.random.rand({BIG}).astype(np.float32)
    block = 256
    {{loop}}
        try:
            d = cuda.to_device(h)
            {{leave}}
        except cuda.cudadrv.driver.CudaAPIError:
            block //= 2
            {{handled}}
    return d
"""


@pytest.mark.parametrize("loop, leave, handled, reported", [
    # a retry: the body comes round only after an error a handler took
    ("while True:", "break", "", False),
    ("for attempt in range(3):", "break", "continue", False),
    ("while True:", "return d", "", False),
    # no leaving statement, or a `continue` on the normal path: every iteration copies
    ("for attempt in range(3):", "pass", "", True),
    ("while True:", "continue", "", True),
])
def test_a_retry_loop_runs_its_body_once(loop, leave, handled, reported):
    src = RETRY.format(loop=loop, leave=leave, handled=handled)
    assert codes(src) == (["PIN007"] if reported else [])


def test_a_retry_with_else_break_runs_once_and_a_later_loop_still_counts():
    src = f"""
    import numpy as np
    from numba import cuda

    def run(steps):
        h = np.random.rand({BIG}).astype(np.float32)
        while True:
            try:
                d = cuda.to_device(h)
            except MemoryError:
                continue
            else:
                break
        for _ in range(steps):
            out = cuda.to_device(h)
        return d, out
    """
    assert rows(src, "PIN007") == [row_of(src, "out = cuda")]


CACHED_UPLOAD = f"""
import numpy as np
import cupy as cp


class Target:
    def __init__(self, n):
        self.w = np.random.rand({BIG})
        self.dev = None
        self._cache = {{{{}}}}

    def device_data(self):
        {{guard}}
            {{store}} = cp.asarray(self.w)
        return self.dev


def scan(t, steps):
    for _ in range(steps):
        a = t.device_data()
    return a


scan(Target(8), 10)
"""


@pytest.mark.parametrize("guard, store, reported", [
    # redrock's Target.gpu_spectral_data(): uploaded on the first call for each object, then cached
    ("if self.dev is None:", "self.dev", False),
    ("if not self.dev:", "self.dev", False),
    ("if 0 not in self._cache:", "self._cache[0]", False),
    ("if self.dev is None or self.other is None:", "self.dev", False),
    # a guard that is no cache of what the arm stores, or an arm storing elsewhere: every call copies
    ("if self.w is not None:", "self.dev", True),
    ("if self.dev is None:", "dev", True),
    ("if self.other is None:", "self.dev", True),
])
def test_an_upload_under_a_methods_cache_guard_is_not_repeated_by_a_callers_loop(guard, store, reported):
    src = CACHED_UPLOAD.format(guard=guard, store=store)
    assert codes(src) == (["PIN007"] if reported else [])


SIZED_TEST = """
import numpy as np
import cupy as cp
import pytest


{decorator}
def test_power({params}):
    {make}
    for _ in range(50):
        d = cp.array(mats, dtype=np.float64)
"""


@pytest.mark.parametrize("decorator, params, make, reported", [
    # ASPIRE's tests: an element count the code gives, a dtype from a fixture (at most 16 bytes an
    # element: 2700 elements are under 64 KiB whatever the dtype)
    ("", "dtype", "mats = np.zeros((300, 3, 3), dtype=dtype)", False),
    ("", "dtype", "mats = np.zeros((1 << 20, 3, 3), dtype=dtype)", True),
    ("", "dtype", "mats = np.random.rand(300, 3, 3).astype(dtype)", False),
    ("", "dtype", "mats = np.random.rand(1 << 20, 3).astype(dtype)", True),
    ("", "n", "mats = np.zeros((n, 3, 3), dtype=np.float32)", True),  # a count nothing gives
    # sizes and dtypes a parametrize decorator lists: the largest of them
    ('@pytest.mark.parametrize("n, dtype", [(3, np.float32), (20, np.float64)])', "n, dtype",
     "mats = np.random.rand(n * (n - 1) // 2, 3, 3).astype(dtype)", False),
    ('@pytest.mark.parametrize("n", [3, pytest.param(20, id="big")])', "n",
     "mats = np.zeros((n, 3, 3))", False),
    ('@pytest.mark.parametrize("n", [3, 1 << 20])', "n", "mats = np.zeros((n, 3, 3))", True),
    ('@pytest.mark.parametrize("n", [3, 20], indirect=True)', "n", "mats = np.zeros((n, 3, 3))", True),
    ('@pytest.mark.parametrize("n", [3, SIZE])', "n", "mats = np.zeros((n, 3, 3))", True),
])
def test_a_test_buffers_size_is_bounded_by_what_its_test_says(decorator, params, make, reported):
    src = SIZED_TEST.format(decorator=decorator, params=params, make=make)
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("literal, reported", [
    # pykilosort's parameter vector: beside numbers NumPy builds only from numbers (a ragged list
    # raises), so `rates[0]` is one more: 4 elements, whatever dtype
    ("np.array([256, 64, rates[0], 1], dtype=np.float64)", False),
    ("np.array([256, 64, rates[0], 1])", False),
    ("np.array([[1, 2], rates[0]])", True),      # a row beside a number: the shape is not known
    ("np.array([rates[0], rates[1]])", True),    # nothing says what the items are
])
def test_a_list_literal_of_numbers_and_unknown_items_has_a_known_length(literal, reported):
    src = f"""
    import numpy as np
    import cupy as cp

    def fit(n, rates):
        p = {literal}
        for k in range(n):
            d = cp.asarray(p)
    """
    assert codes(src) == (["PIN007"] if reported else [])


def test_a_mask_built_from_a_numpy_meshgrid_is_pageable_host_memory():
    src = f"""
    import numpy as np
    import cupy as cp

    def run(blocks, ny, nx):
        yy, xx = np.meshgrid(np.arange({BIG}), np.arange(4), indexing="ij")
        mask = np.exp(-yy) * xx
        for blk in blocks:
            d = cp.asarray(mask) * cp.asarray(blk)
    """
    assert rows(src, "PIN007") == [row_of(src, "d = cp.asarray(mask)")]


def test_a_helper_sized_by_a_parametrized_count_is_bounded_by_its_largest():
    """ASPIRE: `build_outer_products(n_img, dtype)` with n_img 3 or 20, `int(n * (n - 1) / 2)` pairs."""
    src = """
    import numpy as np
    import cupy as cp
    import pytest


    def build(n, dtype):
        pairs = int(n * (n - 1) / 2)
        return np.zeros((pairs, 3, 3), dtype=dtype)


    def sync(mats, iters=50):
        for _ in range(iters):
            d = cp.array(mats, dtype=np.float64)


    @pytest.mark.parametrize("n_img, dtype", [(3, np.float32), (20, np.float64)])
    def test_sync(n_img, dtype):
        mats = build(n_img, dtype)
        sync(mats.copy())


    def run_big():
        sync(build(1000, np.float32))
    """
    assert rows(src, "PIN007") == [row_of(src, "sync(build(1000")]


def test_a_cached_upload_two_calls_below_a_loop_is_not_repeated():
    """redrock: the redshift scan's `while not done:` calls calc_zchi2(targets), whose loop over the
    targets calls each one's cached gpu_spectral_data()."""
    src = CACHED_UPLOAD.format(guard="if self.dev is None:", store="self.dev").replace(
        "def scan(t, steps):\n    for _ in range(steps):\n        a = t.device_data()\n    return a",
        "def fit(targets):\n    return [t.device_data() for t in targets]\n\n\n"
        "def scan(t, steps):\n    for _ in range(steps):\n        a = fit([t])\n    return a")
    assert "def fit(targets)" in src
    assert codes(src) == []
    uncached = CACHED_UPLOAD.format(guard="if self.w is not None:", store="self.dev").replace(
        "def scan(t, steps):\n    for _ in range(steps):\n        a = t.device_data()\n    return a",
        "def fit(targets):\n    return [t.device_data() for t in targets]\n\n\n"
        "def scan(t, steps):\n    for _ in range(steps):\n        a = fit([t])\n    return a")
    assert codes(uncached) == ["PIN007"]


@pytest.mark.parametrize("second, allocated_by", [
    ("copy.deepcopy(first)", "`Plate()` at line 12, `copy.deepcopy` at line 13"),  # its own array, a copy
    ("copy.copy(first)", "`Plate()` at line 12, outside"),  # the same array as the first's
    ("Plate(rows, cols)", "`Plate()` at line 12, `Plate()` at line 13"),
])
def test_a_copied_object_holds_arrays_the_analysis_knows(second, allocated_by):
    # ENCCS' stencil (survey 43): two field objects, the second a deep copy of the first, swapped each
    # step, the device field copied back into the current object's pageable array every few steps.
    src = source(f"""
        import copy
        import numpy as np
        from numba import cuda


        class Plate:
            def __init__(self, rows, cols):
                self.data = np.zeros((rows + 2, cols + 2), dtype=np.float64)


        def solve(rows, cols, steps, every):
            first = Plate(rows, cols)
            second = {second}
            cur, prev = first, second
            cur.dev = cuda.to_device(cur.data)
            prev.dev = cuda.to_device(prev.data)
            for step in range(steps):
                if step % every == 0:
                    cur.dev.copy_to_host(cur.data)
                cur, prev = prev, cur
            return cur
        """)
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == [("PIN007", row_of(src, "cur.dev.copy_to_host"))]
    assert f"(allocated by {allocated_by}" in found[0].message


def test_a_deep_copy_of_something_unexplained_stays_unknown():
    src = source("""
        import copy
        from numba import cuda


        def solve(template, steps):
            cur = copy.deepcopy(template)
            cur.dev = cuda.to_device(cur.data)
            for step in range(steps):
                cur.dev.copy_to_host(cur.data)
        """)
    assert codes(src) == []


def test_a_pass_through_loader_hands_a_new_item_each_iteration():
    # cryodrgn (survey 44): `DataLoader(data, sampler=BatchSampler(...), batch_size=None)` hands on what
    # the dataset's __getitem__ makes, anew for every batch: no buffer made before the loop is re-sent.
    src = source("""
        import numpy as np
        import torch
        from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler


        class Particles(Dataset):
            def __init__(self, path):
                self.stack = np.load(path, mmap_mode="r")

            def __len__(self):
                return self.stack.shape[0]

            def __getitem__(self, idx):
                imgs = torch.from_numpy(np.asarray(self.stack[idx]))
                return {"y": (imgs - imgs.mean()) / imgs.std(), "index": idx}


        def encode_all(model, data, device):
            sampler = BatchSampler(SequentialSampler(data), batch_size=64, drop_last=False)
            for mb in DataLoader(data, sampler=sampler, batch_size=None):
                model(mb["y"].to(device))


        encode_all(torch.nn.Identity(), Particles("particles.npy"), torch.device("cuda"))
        """)
    assert rows(src, "PIN007") == []


def test_a_buffer_a_callees_loop_makes_each_step_and_keeps_is_new_on_every_call():
    # ElegantRL's agent (survey 44): explore() uploads its current state, steps the environment (a new
    # array each step) and keeps the last one on the object; the training loop calls explore() again,
    # so each upload is of another buffer, and the one reset() made before the loop crosses once.
    src = source("""
        import numpy as np
        import torch


        class Env:
            def __init__(self, n):
                self.prices = np.random.rand(1000, n).astype(np.float32)

            def obs(self, day):
                return np.hstack((self.prices[day], self.prices[day] * 0.5))

            def reset(self):
                return self.obs(0)

            def step(self, day):
                return self.obs(day), 1.0


        class Agent:
            def __init__(self):
                self.last = None

            def explore(self, env, horizon):
                s = self.last
                for day in range(horizon):
                    t = torch.as_tensor(s, dtype=torch.float32, device="cuda")
                    s, r = env.step(day)
                self.last = s


        def train():
            env = Env(16384)
            agent = Agent()
            agent.last = env.reset()
            for _ in range(10):
                agent.explore(env, 64)
        """)
    assert rows(src, "PIN007") == []


@pytest.mark.parametrize("modes, test, reported", [
    ('["gpu_filter", "constant", "prctile"]', 'method == "gpu_filter"', False),  # one iteration takes the arm
    ('["gpu_filter", "constant", "prctile"]', '"gpu_filter" == method', False),
    ('["gpu_filter", "gpu_filter"]', 'method == "gpu_filter"', True),            # not distinct: twice
    ('["gpu_filter", "constant", "prctile"]', 'method != "constant"', True),     # two of them take it
])
def test_a_copy_under_a_test_of_one_mode_of_a_mode_loop_runs_once(modes, test, reported):
    # suite2p's test-data script (survey 44): `for baseline in ['maximin', 'constant', ...]:` calling a
    # preprocessing helper that uploads only under `if baseline == "maximin":`.
    src = source(f"""
        import numpy as np
        import torch


        def smooth_gpu(traces, batch, device):
            out = np.zeros_like(traces)
            for b in range(0, traces.shape[0], batch):
                chunk = torch.from_numpy(traces[b:b + batch]).to(device)
                out[b:b + batch] = (chunk * 0.5).cpu().numpy()
            return out


        def baseline(traces, method, device):
            if {test}:
                traces = smooth_gpu(traces, 100, device)
            return traces


        def main():
            dev = torch.device("cuda")
            traces = np.load("traces.npy")
            for method in {modes}:
                np.save(f"{{method}}.npy", baseline(traces, method, dev))
        """)
    assert rows(src, "PIN007") == ([row_of(src, "np.save(")] if reported else [])


@pytest.mark.parametrize("top", ["global renderer", "renderer = None"])
def test_an_object_a_startup_hook_binds_to_a_global_is_what_readers_find(top):
    # FasterLivePortrait's API server (survey 45): `global pipe; pipe = Pipeline(...)` in a startup
    # coroutine, the handlers reading it through `global pipe`: the same pageable source re-sent on
    # every frame as with a local object.
    src = source(f"""
        import numpy as np
        import torch

        {top}


        class Renderer:
            def __init__(self):
                self.device = torch.device("cuda")
                self.sources = []

            def load_source(self, h, w):
                self.sources = [np.zeros((h, w, 3), dtype=np.uint8)]

            def render_step(self, motion, src):
                return torch.from_numpy(src).to(self.device).float() * motion


        async def startup():
            global renderer
            renderer = Renderer()


        def drive(frames):
            global renderer
            renderer.load_source(720, 1280)
            for k in range(frames):
                renderer.render_step(float(k), renderer.sources[0])
        """)
    assert rows(src, "PIN007") == [row_of(src, "renderer.render_step(")]



@pytest.mark.parametrize("table, read, change, reported", [
    ('MODES = ["maximin", "constant", "prctile"]', "MODES", "", False),      # a module's table
    ('MODES = ["maximin", "maximin"]', "MODES", "", True),
    ('MODES = ["maximin", "constant", "prctile"]', "Settings.MODES", "", False),
    ('TABLE = {"modes": ["maximin", "constant"], "n": 4}', 'Settings.TABLE["modes"]', "", False),
    ('MODES = ["maximin", "constant", "prctile"]', "Settings().MODES", "", False),    # through an object
    ('MODES = ["maximin", "maximin"]', "Settings.MODES", "", True),                  # not distinct
    ('MODES = ["maximin", "constant"]', "Settings.MODES", 'Settings.MODES.append("maximin")', True),
    ('MODES = ["maximin", "constant"]', "Settings.MODES", "Settings.MODES = modes_from_cli()", True),
    ('MODES = ["maximin", "constant"]', "Settings.MODES", 'Settings.MODES[1] = "maximin"', True),
])
def test_a_mode_loop_over_a_class_table_of_distinct_modes_runs_the_arm_once(table, read, change, reported):
    # suite2p's test-data script (survey 44): `for bv in TestDataConfigs.EXTRACTION['baseline_methods']:`,
    # a dict of settings in a class body that nothing in the tree changes.
    src = source(f"""
        import numpy as np
        import torch


        {table if "Settings" not in read else ""}

        class Settings:
            {table if "Settings" in read else "pass"}


        def preprocess(traces, baseline, device):
            if baseline == "maximin":
                for b in range(0, traces.shape[0], 100):
                    torch.from_numpy(traces[b:b + 100]).to(device)
            return traces


        def main():
            {change or "pass"}
            f = np.load("F.npy")
            for bv in {read}:
                np.save(f"{{bv}}.npy", preprocess(f, bv, torch.device("cuda")))
        """)
    assert rows(src, "PIN007") == ([row_of(src, "np.save(")] if reported else [])


@pytest.mark.parametrize("made, reported", [
    ("np.random.choice([False, True], (300, 800))", True),   # 240,000 elements
    ("np.random.choice([False, True], size=(300, 800))", True),
    ("np.random.poisson(3.0, (300, 800))", True),
    ("np.random.choice([False, True], (4, 4))", False),      # 16 elements, at most 256 bytes
])
def test_numpy_random_samplers_make_new_pageable_arrays(made, reported):
    # cchan's lattice Boltzmann (survey 46): `blocked = np.random.choice([False, True], (300, 800))` made
    # once and sent with `drv.In(blocked)` on every step.
    src = source(f"""
        import numpy as np
        import cupy as cp


        def run(steps):
            blocked = {made}
            d = cp.empty(blocked.shape, dtype=bool)
            for _ in range(steps):
                d.set(blocked)
        """)
    assert rows(src, "PIN007") == ([row_of(src, "d.set(blocked)")] if reported else [])


@pytest.mark.parametrize("made, reported", [
    # a PyCUDA volume renderer (survey 47): camera vectors joined into a 3x3 basis and re-sent per sample
    ("np.concatenate((a[np.newaxis], b[np.newaxis], a[np.newaxis]), axis=0)", False),   # 36 bytes
    ("np.stack([a, b])", False),
    ("np.vstack((a, b))", False),
    ("np.concatenate([a, np.zeros(1 << 20, np.float32)])", True),                         # 4 MiB + 12 bytes
    ("np.concatenate([a, frames])", True),                                                # a parameter: unknown
    ("np.concatenate(parts)", True),                                                      # a list nothing lays out
    ("np.copy(b)", False),
    ("np.copy(np.zeros(1 << 20))", True),
    ("np.cross(a, b)", False),                                                            # three elements
    ("np.concatenate((np.cross(a, b)[np.newaxis], a[np.newaxis]))", False),
    ("np.cross(np.zeros((1 << 16, 3)), b)", True),                                        # rows: no bound
])
def test_joined_arrays_are_as_large_as_the_arrays_joined(made, reported):
    src = source(f"""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule

        shade = SourceModule("__global__ void shade(float *b) {{}}").get_function("shade")


        def render(frames, parts, n):
            a = np.asarray([0.0, 1.0, 0.0], dtype=np.float32)
            b = np.asarray([2.0, 1.0, 3.0], dtype=np.float32) - a
            joined = {made}
            for _ in range(n):
                shade(drv.In(joined), block=(1, 1, 1))
        """)
    assert rows(src, "PIN007") == ([row_of(src, "shade(drv.In(joined)")] if reported else [])


@pytest.mark.parametrize("made, reported", [
    # the same renderer: `np.asarray([float(c) for c in cfg["eye"]]).astype(np.float32)`, a vector of
    # Python numbers the code lists, converted: still one element per number
    ("np.asarray([float(c) for c in cfg]).astype(np.float32)", False),
    ("np.asarray([1, h, w]).astype(np.float32)", False),          # three numbers, dtype not told: a bound
    ("np.asarray([1, h, w]).astype(np.float32) / 2.0", False),
    ("np.asarray(cfg).astype(np.float32)", True),                  # nothing tells what cfg holds
    ("np.zeros((h, w)).astype(np.float32)", True),
])
def test_a_conversion_of_a_small_array_of_python_numbers_stays_small(made, reported):
    src = source(f"""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule

        step = SourceModule("__global__ void step(float *v) {{}}").get_function("step")


        def render(cfg, h, w, n):
            v = {made}
            for _ in range(n):
                step(drv.In(v), block=(1, 1, 1))
        """)
    assert rows(src, "PIN007") == ([row_of(src, "step(drv.In(v)")] if reported else [])


@pytest.mark.parametrize("returned, reported", [
    ("self.buffer", True),                          # the buffer made once, on every step
    ("np.empty((2, self.n), dtype=np.int16)", False),  # a new one each step
])
def test_an_iterator_object_handing_back_its_own_buffer_repeats_it(returned, reported):
    # spcm's acquisition loop (survey 47 L): `for block in transfer:` whose `__next__` returns the
    # pageable buffer the object allocated in `__init__`, uploaded each step.
    src = source(f"""
        import numpy as np
        import cupy as cp


        class Acquisition:
            def __init__(self, n):
                self.n = n
                self.buffer = np.empty((2, n), dtype=np.int16)
                self.count = 0

            def __iter__(self):
                return self

            def __next__(self):
                if self.count >= 100:
                    raise StopIteration
                self.count += 1
                return {returned}


        def main():
            out = cp.empty((2, 1 << 20), dtype=cp.int16)
            for block in Acquisition(1 << 20):
                d = cp.asarray(block)
                cp.negative(d, out=out)
        """)
    assert rows(src, "PIN007") == ([row_of(src, "d = cp.asarray(block)")] if reported else [])


@pytest.mark.parametrize("call, reported", [
    ("self.block(i, x)", False),        # another layer of the slab on each iteration, two calls down
    ("self.block(i + 1, x)", False),
    ("self.block(i % 2, x)", True),     # two layers, each sent again and again
    ("self.block(0, x)", True),
])
def test_a_part_picked_by_a_loop_variable_passed_down_moves_with_the_loop(call, reported):
    # KVSWAP's offload engine (survey 47 M): `for i in range(layers): x = self.block(i, x)`, whose
    # cache fetches `self.slab[layer]`: each iteration sends another layer, not the same bytes.
    src = source(f"""
        import torch


        class HostCache:
            def __init__(self, layers, rows, cols):
                self.slab = torch.zeros(layers, rows, cols, device="cpu")

            def fetch(self, layer):
                return self.slab[layer].to("cuda")


        class Net:
            def __init__(self, layers):
                self.layers = layers
                self.cache = HostCache(layers, 4096, 1024)

            def block(self, layer, x):
                return x + self.cache.fetch(layer).sum()

            def forward(self, x):
                for i in range(self.layers):
                    x = {call}
                return x
        """)
    assert rows(src, "PIN007") == ([row_of(src, "x = self.block(")] if reported else [])


@pytest.mark.parametrize("empty", ["return None", "return"])
def test_a_tuple_result_that_may_be_none_is_the_tuple_where_the_caller_unpacks_it(empty):
    # an SDR ring buffer (survey 48 R): `pop()` returns None when the ring is empty, else
    # `(slot, timestamp)`; the caller skips None and uploads the slot, one of 16 reused pageable ones.
    src = source(f"""
        import numpy as np
        import cupy as cp


        def pop(slots, k, empty):
            if empty:
                {empty}
            return slots[k], 0.0


        def consume(steps):
            slots = [np.zeros(131072, dtype=np.complex64) for _ in range(16)]
            for i in range(steps):
                item = pop(slots, i % 16, i == 3)
                if item is None:
                    continue
                view, ts = item
                d = cp.asarray(view)
        """)
    assert rows(src, "PIN007") == [row_of(src, "d = cp.asarray(view)")]


@pytest.mark.parametrize("made, reported", [
    ("np.empty_like(a).astype(np.float32)", False),   # a new array on every call, stored back
    ("np.empty_like(a) * 1.0", False),
    ("np.empty_like(a)", False),
])
def test_a_new_array_a_step_stores_back_into_the_dict_it_is_given_is_new_each_call(made, reported):
    # pycuda-lstm's Adam step (survey 48 P): `m = np.empty_like(a).astype(np.float32)` filled by
    # `memcpy_dtoh`, then `moments["m"] = m`; the loop passes the dict in again.
    src = source(f"""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv


        def adam_step(moments, dev):
            a = moments["m"].astype(np.float32)
            drv.memcpy_htod(dev, a)
            m = {made}
            drv.memcpy_dtoh(m, dev)
            moments["m"] = m
            return moments


        dev = drv.mem_alloc(1 << 22)
        moments = {{"m": np.zeros(1 << 20, dtype=np.float32)}}
        for step in range(100):
            moments = adam_step(moments, dev)
        """)
    assert rows(src, "PIN007") == []


def test_a_cache_set_up_after_an_early_return_is_still_a_cache():
    src = source("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv


        class Holder:
            def __init__(self):
                self.buf = None

            def get(self, n):
                if self.buf is not None:
                    return self.buf
                self.buf = np.zeros(n).astype(np.float32)
                return self.buf


        def run(dev):
            h = Holder()
            for i in range(100):
                drv.memcpy_htod(dev, h.get(1 << 20))
        """)
    assert rows(src, "PIN007") == [row_of(src, "drv.memcpy_htod(dev, h.get(")]


def test_a_comprehension_over_varargs_sends_each_argument_once():
    # openpiv's test helper (survey 48 P): `[gpuarray.to_gpu(a) for a in arrays]` of `*arrays`.
    src = source("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.gpuarray as gpuarray


        def to_device(*arrays):
            return [gpuarray.to_gpu(a) for a in arrays]


        def test_axes(n):
            x = np.linspace(0.0, 1.0, 1 << 20).astype(np.float32)
            y = np.linspace(0.0, 2.0, 1 << 20).astype(np.float32)
            return to_device(x, y)
        """)
    assert rows(src, "PIN007") == []


def test_an_object_a_method_rebuilds_now_and_then_keeps_its_buffers_between_rebuilds():
    # Robot-Parallel-Motion-Planning's agents (corpus): `set_destination` builds a new planner (whose
    # constructor makes its arrays in straight-line code) only when a destination is reached; every
    # other iteration's `run_step` re-sends the planner's same pageable arrays.
    src = source("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.gpuarray as gpuarray


        class Planner:
            def __init__(self, n):
                self._cpu_init(n)

            def _cpu_init(self, n):
                self.cost = np.full(n, np.inf).astype(np.float32)

            def step(self):
                return gpuarray.to_gpu(self.cost)


        class Agent:
            def set_destination(self, n):
                self.planner = Planner(n)

            def run_step(self):
                return self.planner.step()


        def drive(steps, reached):
            agent = Agent()
            agent.set_destination(1 << 20)
            for i in range(steps):
                agent.run_step()
                if reached(i):
                    agent.set_destination(1 << 20)
        """)
    assert rows(src, "PIN007") == [row_of(src, "agent.run_step()")]


@pytest.mark.parametrize("guard, reported", [
    ("k == 0", False),              # the first iteration only
    ("0 == k", False),
    ("use_target and k == 0", False),
    ("k % 2 == 0", True),           # every other iteration
    ("k == 0 or use_target", True),
])
@pytest.mark.parametrize("helper", [False, True])
def test_a_copy_on_one_iteration_of_a_loop_is_not_repeated_by_it(guard, reported, helper):
    # BAZIQI's training step (survey 49 T): `if config.use_consistency and k == 0:` inside the unroll
    # loop uploads the next observations once per call.
    send = "up(\"next_obs\")" if helper else "torch.from_numpy(batch[\"next_obs\"]).to(device)"
    src = source(f"""
        import numpy as np
        import torch


        def step(batch, device, unroll, use_target):
            def up(key):
                return torch.from_numpy(batch[key]).to(device)

            x = torch.zeros(256, 64, 64, device=device)
            loss = 0.0
            for k in range(unroll):
                if {guard}:
                    target = {send}
                    loss = loss + (x - target).abs().mean()
                x = x * 0.5
            return loss


        def main(flag):
            b = {{"next_obs": np.zeros((256, 64, 64), dtype=np.float32)}}
            return step(b, torch.device("cuda"), 5, flag)
        """)
    assert rows(src, "PIN007") == ([row_of(src, "return step(")] if reported else [])


@pytest.mark.parametrize("walk, reported", [
    ("for idx in blocks(vol.shape[0], 32):", False),   # index arrays: each a new gathered copy
    ("for idx in order:", False),                       # a list nothing lays out: perhaps index arrays
    ("for idx in range(vol.shape[0]):", True),          # rows of vol, the same ones on every sweep
])
def test_a_block_picked_by_an_index_nothing_explains_is_perhaps_a_new_gathered_copy(walk, reported):
    # tomoalign's solvers (survey 49 V): `for ids in chunk(n, size): cp.array(g[ids])` where the
    # project's generator yields `np.array(...)` index arrays: NumPy gathers each block into new memory.
    src = source(f"""
        from itertools import islice

        import cupy as cp
        import numpy as np


        def blocks(n, size):
            it = iter(range(n))
            part = list(islice(it, size))
            while part:
                yield np.array(part)
                part = list(islice(it, size))


        def main(order):
            vol = np.random.rand(512, 256, 256).astype(np.float32)
            for sweep in range(10):
                {walk}
                    d = cp.array(vol[idx])
        """)
    assert rows(src, "PIN007") == ([row_of(src, "d = cp.array(vol[idx])")] if reported else [])


@pytest.mark.parametrize("prepare, reported", [
    ("image = np.tile(BASE, self.reps).astype(dtype)\n                self.host = image\n                self.dev = cp.asarray(image)", False),
    ("self.host = (np.tile(BASE, self.reps) * 2.0).astype(dtype)\n                self.dev = cp.asarray(self.host)", False),
    ("self.dev = cp.asarray(self.base)", True),     # the object's buffer made once, in __init__
    # each arm of a complete `if` makes the image (cuCIM's `set_args`: `np.kron` or `np.tile`)
    ("if dtype is np.float32:\n                    image = np.kron(BASE, np.ones(self.reps))\n"
     "                else:\n                    image = np.tile(BASE, self.reps)\n"
     "                self.host = image\n                self.dev = cp.asarray(image)", False),
    ("if dtype is np.float32:\n                    image = np.empty(self.reps, dtype)\n"
     "                elif dtype is np.float64:\n                    image = np.tile(BASE, self.reps)\n"
     "                else:\n                    raise ValueError(dtype)\n"
     "                self.dev = cp.asarray(image)", False),
    # an arm that makes nothing sends the buffer of an earlier call again
    ("if self.reps[0] > 500:\n                    self.host = np.tile(BASE, self.reps)\n"
     "                else:\n                    self.reps = self.reps[::-1]\n"
     "                self.dev = cp.asarray(self.host)", True),
    # no `else`: when the test fails, the buffer of an earlier call is sent again (a cache)
    ("if self.reps[0] > 500:\n                    self.host = np.tile(BASE, self.reps)\n"
     "                self.dev = cp.asarray(self.host)", True),
])
def test_a_method_that_remakes_its_buffer_before_copying_it_sends_a_new_one_each_call(prepare, reported):
    # cuCIM's benchmarks (survey 49 V): `set_args` builds an image, keeps it on `self`, uploads it.
    src = source(f"""
        import cupy as cp
        import numpy as np

        BASE = np.arange(32, dtype=np.int32).reshape(4, 8)


        class Bench:
            def __init__(self, reps):
                self.reps = reps
                self.dtypes = [np.float32, np.float64]
                self.base = np.tile(BASE, reps).astype(np.float32)

            def prepare(self, dtype):
                {prepare}

            def run(self):
                for dtype in self.dtypes:
                    self.prepare(dtype)
                    float(self.dev.sum())


        for reps in [(128, 64), (960, 270)]:
            b = Bench(reps)
            b.run()
        """)
    assert codes(src) == (["PIN007"] if reported else [])  # (and no syntax error)
    assert rows(src, "PIN007") == ([row_of(src, "self.prepare(dtype)")] if reported else [])


@pytest.mark.parametrize("made, reported", [
    ("d = dict()", False),
    ("d = {}", False),
    ("d = collections.OrderedDict()", False),
    ("d = defaultdict(list)", False),
])
def test_a_container_made_by_a_call_holds_new_buffers_that_go_where_it_goes(made, reported):
    # pycuda-lstm (survey 48 P): `lstm_activations = dict()` filled with each call's new gate arrays
    # and returned; the training loop uploads them on every step, each step's own arrays.
    src = source(f"""
        import collections
        from collections import defaultdict

        import numpy as np
        import pycuda.driver as cuda

        IsTraining = True


        def cell(x, w):
            if IsTraining:
                a = np.empty_like(x).astype(np.float32)
            else:
                a = np.tanh(np.matmul(x, w))
            {made}
            d['a'] = a
            return d


        def forward(batches, w):
            cache = dict()
            for i in range(len(batches)):
                cache['c' + str(i)] = cell(batches[i], w)
            return cache


        def error(acts):
            a = acts['a']
            g = cuda.mem_alloc(a.nbytes)
            cuda.memcpy_htod(g, a)


        def backward(cache):
            for i in range(len(cache), 0, -1):
                error(cache['c' + str(i)])


        def train(data, w):
            for step in range(100):
                cache = forward(data, w)
                backward(cache)
        """)
    assert rows(src, "PIN007") == ([row_of(src, "backward(cache)")] if reported else [])


@pytest.mark.parametrize("mesh, bench, reported", [
    ("self.L = np.zeros((self.n, self.n))", "self.mesh()", False),     # a new mesh before each upload
    ("self.L = np.zeros((self.n, self.n))", "pass", True),             # the mesh of the construction
    ("if self.L is None:\n                    self.L = np.zeros((self.n, self.n))", "self.mesh()", True),  # a cache
])
def test_a_helper_that_rebinds_a_field_before_the_upload_makes_a_new_buffer_each_call(mesh, bench, reported):
    # TPSolver's grid sweep (survey 50 X): `runBenchmark` calls `createComputationalMesh`, which
    # rebinds `self.L = np.zeros(...)`, then uploads `self.L`: a new array on every iteration.
    src = source(f"""
        import cupy as cp
        import numpy as np


        class Solver:
            def __init__(self, n):
                self.n = n
                self.L = None
                self.mesh()

            def mesh(self):
                {mesh}

            def bench(self):
                {bench}
                return cp.asarray(self.L)

            def sweep(self, reps):
                for _ in range(reps):
                    self.bench()
        """)
    assert rows(src, "PIN007") == ([row_of(src, "self.bench()")] if reported else [])


@pytest.mark.parametrize("check, reported", [
    ("if not phase:\n                    raise ValueError('empty phase')", False),  # an error exit leaves nothing behind
    ("pass", False),
])
def test_a_method_that_checks_its_argument_before_making_the_buffer_makes_it_each_call(check, reported):
    # GraphSAINT's minibatch set-up (survey 52 BF): `if ...: raise` before `self.norm = ....astype(...)`
    # and its upload, called once per phase of the training loop: a new array each time.
    src = source(f"""
        import numpy as np
        import torch


        class Batcher:
            def __init__(self, adj, use_gpu):
                self.use_gpu = use_gpu
                self.adj = adj

            def configure(self, phase):
                {check}
                self.weights = np.zeros(self.adj.shape[0])
                self.weights = torch.from_numpy(self.weights.astype(np.float32))
                if self.use_gpu:
                    self.weights = self.weights.cuda()


        def fit(phases, b):
            for phase in phases:
                b.configure(phase)


        if __name__ == "__main__":
            b = Batcher(load(1), True)
            fit([{{"k": 10}}, {{"k": 20}}], b)
        """)
    assert "PIN000" not in codes(src)
    assert rows(src, "PIN007") == ([row_of(src, "b.configure(phase)")] if reported else [])


@pytest.mark.parametrize("upload, reported", [
    # mar / rcg (survey 52 BE): each parameter's averaged tensor is uploaded once, by key
    ("[averaged[key].cuda() for key, _ in net.named_parameters()]", False),
    ("[averaged[key].cuda() for (key, _) in net.named_parameters()]", False),
    ("[averaged['w'].cuda() for key, _ in net.named_parameters()]", True),   # the same tensor every time
])
def test_a_comprehension_keyed_by_an_unpacked_loop_variable_sends_another_entry_each_time(upload, reported):
    src = f"""
import torch


def load_averaged(net, path):
    averaged = torch.load(path, map_location="cpu")["averaged"]
    return {upload}
"""
    assert rows(src, "PIN007") == ([row_of(src, "return")] if reported else [])


@pytest.mark.parametrize("download, reported", [
    # DUCATI's cache allocator (survey 52 BF): a download made once, re-sent on every iteration
    ("host = dev.cpu()", True),
    ("host = dev.to('cpu')", True),
    ("host = dev.cpu().pin_memory()", False),   # pinned: PIN008's and PIN001's business, not PIN007's
    # through a helper that downloads (chai-lab's low-memory trunk, survey 57 GD)
    ("host = to_host(dev)", True),
    ("host = to_host(dev).pin_memory()", False),
    ("host = fresh()", True),                    # a helper's own new tensor, made once: the same buffer
])
def test_a_download_re_sent_in_a_loop_is_the_same_pageable_buffer_each_time(download, reported):
    src = f"""
import torch


def to_host(t):
    return t.to(device=torch.device("cpu"))


def fresh():
    return torch.randn(1 << 22)


def reupload(rounds):
    dev = torch.zeros(1 << 22, device="cuda")
    {download}
    for _ in range(rounds):
        back = host.cuda()
"""
    assert rows(src, "PIN007") == ([row_of(src, "back = host.cuda()")] if reported else [])


def test_a_download_made_on_each_iteration_is_a_new_buffer_each_time():
    src = """
import torch


def roundtrip(rounds):
    dev = torch.zeros(1 << 22, device="cuda")
    for _ in range(rounds):
        host = dev.cpu()
        back = host.cuda()
"""
    assert rows(src, "PIN007") == []


@pytest.mark.parametrize("build, guard, reported", [
    # mcSIM (survey 52 BJ): a helper builds the object and sets its guesses on every iteration
    ("obj = Recon()\n    obj.set_guesses(weights)\n    return obj", "weights is not None", False),
    # the object's own state picks the arm; the arm still makes the array on each call
    ("obj = Recon()\n    obj.set_guesses(weights)\n    return obj", "self.gpu", False),
])
def test_an_object_rebuilt_in_a_loop_sends_a_new_array_each_time(build, guard, reported):
    src = f"""
import numpy as np
import cupy as cp


class Recon:
    def __init__(self):
        self.gpu = True
        self.w = None

    def set_guesses(self, weights):
        if {guard}:
            self.w = np.array(weights)
        else:
            self.w = np.ones(4096 * 64)

    def run(self):
        with cp.cuda.Device(0):
            return float(cp.asarray(self.w).sum())


def build(weights):
    {build}


def sweep(seed):
    for it in range(20):
        r = build(seed)
        r.run()  # run


def once(seed):
    r = build(seed)
    for it in range(20):
        r.run()  # again
"""
    # built once before the loop, the same array goes up on every iteration
    expected = [row_of(src, "r.run()  # again")] + ([row_of(src, "r.run()  # run")] if reported else [])
    assert sorted(rows(src, "PIN007")) == sorted(expected), src


def test_a_method_that_remakes_its_arrays_inside_a_with_block_sends_new_ones_each_call():
    # merfish3d-analysis (survey 52 BJ): `with cp.cuda.Device(0): self._decode()` remakes
    # `self.decoded = np.zeros(...)` before `_extract` uploads it, once per tile.
    src = """
import numpy as np
import cupy as cp


class Decoder:
    def __init__(self, n):
        self.n = n

    def _decode(self):
        self.decoded = np.zeros((self.n, 2048, 2048), dtype=np.int16)

    def _extract(self):
        return float(cp.asarray(self.decoded).sum())

    def decode_one_tile(self):
        with cp.cuda.Device(0):
            self._decode()
            return self._extract()


def worker(tiles):
    dec = Decoder(16)
    for t in tiles:
        dec.decode_one_tile()
"""
    assert rows(src, "PIN007") == []


@pytest.mark.parametrize("take, reported", [
    ("batch = next(data)", False),                 # the generator stacks a new batch at every resume
    ("batch = next(self_data[0])", False),         # the same generator, kept in a list
    ("batch = next(iter([fixed]))", True),         # a new iterator over one list: the same buffer each time
])
def test_next_of_a_kept_generator_in_a_loop_takes_a_new_batch_each_time(take, reported):
    # guided-diffusion's super-resolution sampler: `data = load_data_for_worker(...)`, a generator
    # that stacks each batch, then `model_kwargs = next(data)` inside the sampling loop (survey 53).
    src = f"""
import numpy as np
import torch

def dev():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")

def batches(path, size):
    images = np.load(path)
    buf = []
    while True:
        for i in range(len(images)):
            buf.append(images[i])
            if len(buf) == size:
                yield {{"x": torch.from_numpy(np.stack(buf))}}
                buf = []

def main(path, model):
    data = batches(path, 64)
    self_data = [data]
    fixed = {{"x": torch.from_numpy(np.load(path))}}
    for step in range(100):
        {take}
        batch = {{k: v.to(dev()) for k, v in batch.items()}}
        model(**batch)
"""
    assert bool(rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("rebuild, reported", [
    ("ring.recompute()", False),                          # a new array on every iteration
    ("if k % 5 == 0:\n        ring.recompute()", True),   # now and then: re-sent in between
    ("pass", True),
])
def test_a_method_whose_helper_stores_a_new_array_rebuilds_it_on_each_call(rebuild, reported):
    # longitudinal-tomography's calibration scripts (survey 53 CD): `machine.values_at_turns()` calls
    # `self._init_arrays()`, which stores new arrays on the object, before every upload.
    src = f"""
import numpy as np
import cupy as cp


class Ring:
    def __init__(self, nturns):
        self.nturns = nturns
        self.phase = None

    def recompute(self):
        self._alloc(self.nturns)

    def _alloc(self, n):
        self.phase = np.zeros(n)


ring = Ring(200_000)
ring.recompute()
for k in range(20):
    {rebuild}
    d_phase = cp.array(ring.phase, dtype=cp.float64)  # the copy
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("init, reported", [
    ("self.recompute()", False),                 # every construction makes the arrays
    ("pass", True),                              # the object is new, its arrays are the first Ring's
])
def test_an_object_built_in_the_loop_whose_constructor_fills_it_through_helpers(init, reported):
    src = f"""
import numpy as np
import cupy as cp


class Ring:
    def __init__(self, nturns):
        self.nturns = nturns
        {init}

    def recompute(self):
        self._alloc(self.nturns)

    def _alloc(self, n):
        self.phase = np.zeros(n)


first = Ring(200_000)
first.recompute()
for n in [200_000, 300_000]:
    for it in range(10):
        ring = Ring(n)
        if {init!r} == "pass":
            ring = first
        d_phase = cp.array(ring.phase, dtype=cp.float64)  # the copy
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("read, reported", [
    ('struct.unpack("i", fh.read(4))[0]', False),      # one Python int: a 3-number vector, 12 bytes
    ('struct.unpack_from("iii", header)[1]', False),
    ("fh.read(4)", True),                               # bytes: np.asarray of it is not three numbers
])
def test_numbers_read_with_struct_make_a_small_vector(read, reported):
    # pycuda-volumetric-renderer (survey 54 DD): the grid's extent, three ints unpacked from a file
    # header, is sent to a kernel with `drv.In` on every frame: 12 bytes, latency-bound.
    src = f"""
import struct

import numpy as np
import pycuda.driver as drv


def render(kernel, out_dev, path, header, frames):
    with open(path, "rb") as fh:
        nx = {read}
        ny = {read}
        nz = {read}
    extent = np.asarray([nx, ny, nz]).astype(np.float32)
    extent = extent / np.max(extent)
    for _ in range(frames):
        kernel(out_dev, drv.In(extent), block=(256, 1, 1), grid=(1, 1))  # the copy
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("body, reported", [
    # a new array on every step: each iteration of the training loops sends another one
    ("for k in range(n_mb):\n    idx = order[k * size:(k + 1) * size]\n    yield flat[idx], adv[idx]", False),
    ("for k in range(n_mb):\n    mb = np.ascontiguousarray(flat[k * size:(k + 1) * size] * 2.0)\n    yield mb, adv", False),
    # the rollout's own array, a view of it on every step: the same memory sent again each epoch
    ("for k in range(n_mb):\n    yield flat[k * size:(k + 1) * size], adv", True),
])
@pytest.mark.parametrize("kept", [False, True])
def test_a_generator_s_own_loop_makes_a_new_minibatch_on_each_step(body, reported, kept):
    # on-policy's MAPPO trainer (survey 54 DA, 10 false findings): `for sample in
    # buffer.feed_forward_generator(adv, n)` takes arrays the generator makes by fancy indexing on
    # each step; they were taken for buffers allocated once, before the epoch loop.
    loop = "        gen = store.minibatches(adv, 4)\n        for obs_mb, adv_mb in gen:" if kept else \
        "        for obs_mb, adv_mb in store.minibatches(adv, 4):"
    src = f"""
import numpy as np
import torch


class Rollouts:
    def __init__(self, steps, envs, dim):
        self.obs = np.zeros((steps, envs, dim), dtype=np.float32)
        self.ret = np.zeros((steps, envs, 1), dtype=np.float32)

    def minibatches(self, adv, n_mb):
        flat = self.obs.reshape(-1, self.obs.shape[-1])
        order = np.random.permutation(flat.shape[0])
        size = flat.shape[0] // n_mb
{textwrap.indent(body, " " * 8)}


def update(store, epochs):
    adv = (store.ret - store.ret.mean()).reshape(-1, 1)
    for _ in range(epochs):
{loop}
            o = torch.from_numpy(obs_mb).to("cuda")  # the copy
            (o.sum()).item()


update(Rollouts(256, 64, 32), 10)
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007") or
            row_of(src, "update(Rollouts") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("other, reported", [
    ("init_weights(nn.Linear(64, 1))", True),   # a library's module, or the project's normalizer
    ("make_norm(64)", True),                    # something nothing here tells
    ("IdentityNorm()", False),                  # both options are objects whose method sends nothing
])
def test_a_field_that_is_an_object_or_something_else_runs_the_object_s_method(other, reported):
    # on-policy's MAPPO (survey 54 DA, a miss): the value normalizer is the critic's output layer
    # (a module made through an init helper) or the project's ValueNorm, picked by a flag; the
    # call `self.norm.denorm(store.val[:-1])` was dropped, so the upload on every episode was not seen.
    src = f"""
import numpy as np
import torch
import torch.nn as nn
from normlib import make_norm


def init_weights(module, gain=1.0):
    nn.init.orthogonal_(module.weight, gain=gain)
    return module


class Head(nn.Linear):
    def denorm(self, x):
        return x


class IdentityNorm:
    def denorm(self, x):
        return x


class RunningNorm:
    def __init__(self, dev):
        self.dev = dev

    def denorm(self, x):
        t = torch.from_numpy(x).to(self.dev)
        return (t * 3.0).cpu().numpy()


class Learner:
    def __init__(self, use_popart, dev):
        if use_popart:
            self.norm = {other}
        else:
            self.norm = {"RunningNorm(dev)" if other != "IdentityNorm()" else "IdentityNorm()"}

    def train(self, store):
        return store.ret[:-1] - self.norm.denorm(store.val[:-1])


class Store:
    def __init__(self, steps, envs):
        self.val = np.zeros((steps + 1, envs, 1), dtype=np.float32)
        self.ret = np.zeros((steps + 1, envs, 1), dtype=np.float32)


def main(episodes, use_popart=False):
    store = Store(4096, 64)
    learner = Learner(use_popart, torch.device("cuda"))
    for ep in range(episodes):
        store.val[:] = ep
        learner.train(store)  # the call
"""
    assert (row_of(src, "# the call") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("callers, reported", [
    ("def run(f):\n    return solve(100000, 4, 10, f)", False),               # k = 4: 80 bytes
    ("def run(f):\n    return solve(100000, k=4, steps=10, reduce_into=f)", False),
    ("K = 3\n\n\ndef run(f):\n    return solve(100000, K, 10, f)", False),      # a module constant
    ("def run(f):\n    solve(100000, 4, 10, f)\n    solve(100000, 6, 10, f)", False),
    ("def run(f):\n    solve(100000, 4, 10, f)\n    solve(100000, 50000, 10, f)", True),  # 800 KB too
    ("def run(f, k):\n    return solve(100000, k, 10, f)", True),               # nothing here says
    ("def run(f, pool):\n    return pool.map(solve, [4, 4])", True),            # called elsewhere too
    ("", True),                                                                 # no call here
])
def test_a_size_every_call_in_the_module_gives(callers, reported):
    # parallel-krylov's s-step solver (survey 54 DH): a vector of 2k+2 reduction coefficients is
    # uploaded on every iteration; the module's only call passes k=4 (80 bytes, latency-bound).
    src = f"""
import cupy as cp
import numpy as np


def solve(n, k, steps, reduce_into):
    work = cp.zeros((k + 2, n), np.float64)
    coeff_host = np.zeros(2 * k + 2, np.float64)
    coeff = cp.zeros(2 * k + 2, np.float64)
    for _ in range(steps):
        reduce_into(coeff.get(), coeff_host)
        coeff = cp.asarray(coeff_host)  # the copy
        work[0] -= coeff[0] * work[1]
    return work


{callers}
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("made, launched, reported", [
    ("np.ones(N, dtype=np.float32)", "add[blocks, threads](a, b, out)", True),      # host arrays: copied each launch
    ("cuda.to_device(np.ones(N, dtype=np.float32))", "add[blocks, threads](a, b, out)", False),  # device arrays
    ("cuda.mapped_array(N, dtype=np.float32)", "add[blocks, threads](a, b, out)", False),      # read in place
    ("np.ones(N, dtype=np.float32)", "add[blocks, threads](cuda.to_device(a), cuda.to_device(b), out)", True),
])
def test_a_numba_kernel_given_host_arrays_copies_them_on_every_launch(made, launched, reported):
    # SURFsara's GPU tutorials (survey 54 DD): Numba copies a host NumPy array given to a kernel to the
    # device before the launch and back after it, on every launch (numba-cuda warns of it).
    src = f"""
import numpy as np
from numba import cuda

N = 10_000_000


@cuda.jit
def add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def run(steps, blocks, threads):
    a = {made}
    b = {made}
    out = {made}
    for _ in range(steps):
        {launched}  # the launch
"""
    assert (row_of(src, "# the launch") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("decorator, reported", [
    ("@vectorize(['f8(f8, f8)'], target='cuda')", True),            # a CUDA ufunc: copies its host arrays
    ("@numba.vectorize(['f8(f8, f8)'], target=\"cuda\")", True),
    ("@vectorize(['f8(f8, f8)'], target='parallel')", False),       # runs on the CPU: no copy
    ("@vectorize(['f8(f8, f8)'])", False),
])
def test_a_cuda_ufunc_given_host_arrays_copies_them_on_every_call(decorator, reported):
    # survey 55 ED: a `@vectorize(target="cuda")` ufunc called with host NumPy arrays copies them to the
    # device and its result back on every call, as a `@cuda.jit` kernel given host arrays does.
    src = f"""
import math

import numba
import numpy as np
from numba import vectorize


{decorator}
def decay(x, k):
    return x * math.exp(-k)


field = np.ones(4_000_000)
total = np.zeros(4_000_000)
for step in range(50):
    total += decay(field, 0.01 * step)  # the call
"""
    found = [f for f in findings(src) if f.code == "PIN007"]
    assert ([f.location.row for f in found] == [row_of(src, "# the call")]) is reported, src
    if reported:
        assert "`decay(...)`" in found[0].message


@pytest.mark.parametrize("picked, reported", [
    ("frames[3]", True),                                   # a row of the stack, the same every step
    ("frames[np.random.choice(train_ids)]", True),         # one random view: a row, sent again and again
    ("frames[np.random.randint(0, 100)]", True),
    ("frames[np.random.choice(train_ids, 4)]", False),     # an index array: a new gathered copy each step
    ("frames[step]", False),                               # another row on each step
])
def test_a_row_of_a_stack_made_before_the_loop(picked, reported):
    # nerf-pytorch and svox2 (survey 55 EG): one view of an image stack loaded once, re-sent every step;
    # a sampler without `size` gives one number, and `torch.from_numpy` keeps the array's dimensions.
    src = f"""
import numpy as np
import torch


def fit(steps):
    frames = torch.from_numpy(np.random.rand(100, 400, 400, 3).astype(np.float32))
    train_ids = np.arange(0, 100, 2)
    for step in range(steps):
        ref = {picked}.to("cuda")  # the copy
        print(float(ref.mean()))
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("wrapper_body, reported", [
    ("dev = cp.asarray(theta)\n            func(out, dev)", True),     # the wrapper uploads the caller's array
    ("func(out, cp.empty(8))", False),                              # the body gets device arrays only
])
def test_a_decorator_factory_s_wrapper_is_what_a_call_runs(wrapper_body, reported):
    # recon-stream's `@gpu_batch(chunk, ...)` (survey 55 EC): the decorator a factory makes wraps the body;
    # the call runs the wrapper, which hands the body device arrays (the body's `cp.ascontiguousarray`
    # of them is a device-side copy), and may upload the caller's host arrays itself.
    src = f"""
import numpy as np
import cupy as cp


def batched(n):
    def deco(func):
        def inner(out, theta):
            {wrapper_body}
        return inner
    return deco


@batched(4)
def reconstruct(out, theta):
    out[:] = cp.ascontiguousarray(theta).sum()


angles = np.load("theta.npy") / 180 * np.pi
result = np.empty_like(angles)
for k in range(3):
    reconstruct(result, angles)  # the call
"""
    assert (row_of(src, "# the call") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("step, reported", [
    ("idx += 1", False),                      # another item on every pass: each sent once
    ("if idx < 3:\n            idx += 1", True),  # a counter that may stay: the same item again
    ("idx += 1\n        idx = 0", True),      # rebound in the loop too: not a counter
])
def test_a_while_loop_walking_a_list_with_a_counter(step, reported):
    # zero-bubble's generation scripts (survey 55 EF): `while True: x = items[idx].cuda(); ...; idx += 1`.
    src = f"""
import numpy as np
import torch


def run(paths):
    items = []
    for p in paths:
        items.append(torch.from_numpy(np.load(p)).reshape(-1, 3, 448, 448))
    idx = 0
    while True:
        x = items[idx].cuda()  # the copy
        {step}
        if idx >= len(items):
            break
"""
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("arm, reported", [
    ("    if enabled:\n        frac = points - np.round(points)\n        frac = cp.asarray(frac)", False),
    ("    frac = points - np.round(points)\n    if enabled:\n        frac = cp.asarray(frac)", False),
    ("    if frac is None:\n        frac = points - np.round(points)\n    dev = cp.asarray(frac)", True),
])
def test_a_helper_uploading_what_it_just_made_in_an_arm(arm, reported):
    # pypty's `bfgs_update` (survey 55 EC): a global rebound to a new array and uploaded in the same arm,
    # on every call: each call sends a new buffer. Made once and kept (a cache), it is the same one.
    src = f"""
import numpy as np
import cupy as cp

frac = None


def refine(points, enabled):
    global frac
{arm}
    return frac


pts = np.random.rand(1 << 18, 2) * 100.0
for epoch in range(50):
    refine(pts, True)  # the call
"""
    assert (row_of(src, "# the call") in rows(src, "PIN007")) is reported, src


_FRAMES = """
import numpy as np
import torch


class Frames(torch.utils.data.Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.from_numpy(np.load(self.paths[i]).astype(np.float32))


def run(paths, net, steps):
    ds = Frames(paths)
{body}
"""


@pytest.mark.parametrize("body, reported", [
    ("    first = ds[0]\n    for _ in range(steps):\n        net(first.cuda())  # the copy", True),
    ("    pool = [x for x in ds]\n    for s in range(steps):\n        net(pool[s % 4].cuda())  # the copy", True),
    ("    for i in range(len(ds)):\n        net(ds[i].cuda())  # the copy", False),   # a new item each step
    ("    for x in ds:\n        net(x.cuda())  # the copy", False),
])
def test_items_of_a_dataset_class_of_the_checked_code(body, reported):
    # 4DGaussians' cameras (survey 55 EG): `__getitem__` of a project class, by index or by iterating
    # it (Python's sequence protocol); items taken once and sent again are re-sent at pageable speed.
    src = _FRAMES.format(body=body)
    assert (row_of(src, "# the copy") in rows(src, "PIN007")) is reported, src


@pytest.mark.parametrize("loop, part, reported", [
    ("for start in range(0, n, chunk):", "host[start:start + chunk]", False),
    ("for k in range(1, n // chunk + 1):", "host[k * chunk - chunk:k * chunk]", False),
    ("for k in range(n):", "host[0:chunk]", True),        # the same part every time
])
def test_a_moving_window_of_a_loaded_table_is_another_part_each_time(loop, part, reported):
    """What ``torch.load`` restored is handled as a batch (a tensor, or a container of them); a slice
    whose bounds move with the loop is another part on each iteration, as for a tensor the code made
    (krasis's expert weights, survey 56 FA)."""
    src = f"""
    import torch
    def upload(n, chunk):
        dev = torch.empty((chunk, 4096), device="cuda")
        host = torch.load("experts.pt", map_location="cpu")
        {loop}
            dev.copy_({part})
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("device, reported", [('"cuda"', True), ('"cuda:0"', True), ('torch.device("cuda")', True),
                                              ('"cpu"', False)])
def test_a_device_named_by_a_string_decides_the_callees_copies(device, reported):
    """A device written as a string in the call (the usual spelling in inference scripts) is the
    device the callee moves its buffer to, as a device object is (survey 56 FC)."""
    src = f"""
    import numpy as np
    import torch
    def render(device):
        noise = np.random.rand(2, 1_000_000).astype(np.float32)
        outs = []
        for step in range(50):
            x = torch.from_numpy(noise).to(device)
            outs.append(float(x.mean()) * step)
        return outs
    def main():
        render({device})
    """
    assert codes(src) == (["PIN007"] if reported else [])


@pytest.mark.parametrize("subclass, reported", [
    ("class TrtDetector(Detector):\n    def prepare(self):\n        self.gpu_in = cupy.asarray(self.frame)", True),
    ("class TrtDetector(Detector):\n    pass", False),              # the base's own hook: no copy
    ("class TrtDetector(Detector):\n    def other(self):\n        return cupy.asarray(self.frame)", False),
])
def test_a_base_class_loop_calling_a_hook_its_subclass_defines(subclass, reported):
    """yolo-inference's backends (survey 57 GA): the base class's benchmark loop calls ``self.prepare()``,
    which the TensorRT subclass defines as an upload of the frame read once before the loop."""
    src = f"""
import cv2
import cupy


class Detector:
    def prepare(self):
        pass

    def bench(self, path):
        self.frame = cv2.imread(path)
        for _ in range(1000):
            self.prepare()


{subclass}


TrtDetector().bench("bus.jpg")
"""
    assert rows(src, "PIN007") == ([row_of(src, 'TrtDetector().bench(')] if reported else [])


@pytest.mark.parametrize("copy, api", [
    ("gpu_field.copy_to_host(ary=readback)", "DeviceNDArray.copy_to_host"),
    ("gpu_field.get(out=readback)", "cupy.ndarray.get"),
    ("gpu_field.set(arr=field)", "cupy.ndarray.set"),
])
def test_a_device_array_of_one_of_two_libraries_copies_with_the_library_that_has_the_method(copy, api):
    """A benchmark comparing backends (survey 56 FE, HPC4WC): the device array is Numba's under one
    test and CuPy's under another; ``copy_to_host`` is Numba's, ``get``/``set`` CuPy's."""
    src = f"""
import numpy as np
import cupy as cp
from numba import cuda


def main(kind, edge):
    field = np.random.rand(edge, edge, edge)
    readback = np.empty(shape=field.shape, dtype=field.dtype)
    if kind == "numba":
        gpu_field = cuda.device_array(shape=field.shape, dtype=field.dtype)
    else:
        gpu_field = cp.empty(shape=field.shape, dtype=field.dtype)
    for rep in range(20):
        {copy}
"""
    (found,) = [f for f in findings(src) if f.code == "PIN007"]
    assert api in found.message


@pytest.mark.parametrize("pick, reported", [
    # a key an inner search loop finds anew for each module: another tensor each time
    ("for k in sd_keys:\n            if k.endswith(name):\n                found = sd[k]\n                break", False),
    ('found = sd["shared.weight"]', True),   # the same entry on every pass
])
def test_an_entry_of_a_restored_state_dict_picked_by_a_key_the_loop_rebinds(pick, reported):
    """litevLLM's weight loader (survey 57 GH): ``found = sd[k]`` with ``k`` found by an inner loop,
    uploaded once per module: each pass uploads another tensor of what ``load_file`` restored."""
    src = f"""
import torch
from safetensors.torch import load_file


def load(model, path):
    sd = load_file(path)
    sd_keys = list(sd.keys())
    for name, m in model.named_modules():
        found = None
        {pick}
        if found is None:
            continue
        m.weight = torch.nn.Parameter(found.to(device="cuda"))
"""
    assert ("PIN007" in codes(src)) == reported
