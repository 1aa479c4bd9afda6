"""PIN003 write-combined-cpu-read: the CPU reads memory allocated write-combined.

Write-combined allocations of every library (flags given directly, through expressions and through
variables; raw pointers wrapped by NumPy), each kind of CPU read and the accesses that are not reads;
Numba's ignored ``wc=True``, flags pinlint cannot read, and default/portable flags stay quiet.
"""

from __future__ import annotations

import pytest

from helpers import codes, col_of, findings, only, row_of, rows

# ================================================================ allocations
# (imports + allocation lines ending with a write-combined host array `h`, api named in the message)
WC_SOURCES = [
    pytest.param("import numpy as np\nimport pycuda.driver as drv\n"
                 "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)",
                 "pycuda.driver.pagelocked_empty", id="pycuda-kw"),
    pytest.param("import numpy as np\nimport pycuda.driver as drv\n"
                 "h = drv.pagelocked_zeros(1024, np.float32, 'C', drv.host_alloc_flags.WRITECOMBINED)",
                 "pycuda.driver.pagelocked_zeros", id="pycuda-positional-flags"),
    pytest.param("import numpy as np\nimport pycuda.driver as drv\n"
                 "flags = drv.host_alloc_flags.DEVICEMAP | drv.host_alloc_flags.WRITECOMBINED\n"
                 "h = drv.pagelocked_empty(1024, np.float32, mem_flags=flags)",
                 "pycuda.driver.pagelocked_empty", id="pycuda-flags-variable"),
    pytest.param("import numpy as np\nfrom pycuda import driver as cuda\nfrom pycuda.driver import host_alloc_flags as haf\n"
                 "ref = np.zeros(1024, np.float32)\n"
                 "h = cuda.pagelocked_empty_like(ref, mem_flags=haf.PORTABLE | haf.WRITECOMBINED)",
                 "pycuda.driver.pagelocked_empty_like", id="pycuda-like-aliased-flags"),
    pytest.param("import numpy as np\nimport cupy\n"
                 "mem = cupy.cuda.PinnedMemory(4096, cupy.cuda.runtime.hostAllocWriteCombined)\n"
                 "h = np.frombuffer(mem, np.float32)",
                 "cupy.cuda.PinnedMemory", id="cupy-PinnedMemory"),
    pytest.param("import numpy as np\nimport cupy as cp\n"
                 "WC = cp.cuda.runtime.hostAllocWriteCombined | cp.cuda.runtime.hostAllocPortable\n"
                 "mem = cp.cuda.PinnedMemory(4096, flags=WC)\n"
                 "h = np.frombuffer(mem, np.float32, 1024)",
                 "cupy.cuda.PinnedMemory", id="cupy-PinnedMemory-flags-variable"),
    pytest.param("import ctypes\nimport numpy as np\nimport cupy as cp\n"
                 "ptr = cp.cuda.runtime.hostAlloc(4096, 4)\n"
                 "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))",
                 "cupy.cuda.runtime.hostAlloc", id="cupy-runtime-hostAlloc-literal-4"),
    pytest.param("import ctypes\nimport numpy as np\nfrom cuda.bindings import runtime as rt\n"
                 "err, ptr = rt.cudaHostAlloc(4096, rt.cudaHostAllocWriteCombined)\n"
                 "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))",
                 "cuda.bindings.runtime.cudaHostAlloc", id="cuda-bindings-runtime"),
    pytest.param("import ctypes\nimport numpy as np\nfrom cuda import cudart\n"
                 "flags = cudart.cudaHostAllocMapped | cudart.cudaHostAllocWriteCombined\n"
                 "err, ptr = cudart.cudaHostAlloc(4096, flags)\n"
                 "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))",
                 "cuda.cudart.cudaHostAlloc", id="legacy-cudart-flags-variable"),
    pytest.param("import ctypes\nimport numpy as np\nfrom cuda.bindings import driver\n"
                 "err, ptr = driver.cuMemHostAlloc(4096, driver.CU_MEMHOSTALLOC_WRITECOMBINED)\n"
                 "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))",
                 "cuda.bindings.driver.cuMemHostAlloc", id="cuda-bindings-driver"),
    pytest.param("import ctypes\nimport numpy as np\nfrom cuda import cuda as cu\n"
                 "err, ptr = cu.cuMemHostAlloc(4096, cu.CU_MEMHOSTALLOC_DEVICEMAP | cu.CU_MEMHOSTALLOC_WRITECOMBINED)\n"
                 "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))",
                 "cuda.cuda.cuMemHostAlloc", id="legacy-driver"),
]


@pytest.mark.parametrize("setup, api", WC_SOURCES)
def test_write_combined_read_is_reported_at_the_read_for_every_allocator(setup, api):
    src = setup + "\nh[:] = 1.0\ntotal = h.sum()\n"
    f = only(src, "PIN003")
    assert (f.location.row, f.location.column) == (row_of(src, "total = h.sum()"), col_of(src, "h.sum()"))
    assert (f.end_location.row, f.end_location.column) == (f.location.row, col_of(src, "h.sum()") + len("h.sum()"))
    assert f"`{api}` at line" in f.message
    assert "write-combined" in f.message
    assert len(f.related) == 1


@pytest.mark.parametrize("setup, api", WC_SOURCES)
def test_write_combined_only_written_by_the_cpu_is_quiet(setup, api):
    src = setup + "\nh[:] = 1.0\nh.fill(0)\n"
    assert "PIN003" not in codes(src)


# ====================================================================== reads
WC = """
import numpy as np
import pycuda.driver as drv
h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)
x = np.ones(1024, np.float32)
"""


@pytest.mark.parametrize("line, at", [
    ("y = h[0]", "h[0]"),
    ("y = h[1, 2]", "h[1, 2]"),
    ("y = h[[1, 2]]", "h[[1, 2]]"),
    ("y = h.sum()", "h.sum()"),
    ("y = h.mean()", "h.mean()"),
    ("y = h.max()", "h.max()"),
    ("y = h.min(axis=0)", "h.min(axis=0)"),
    ("y = h.copy()", "h.copy()"),
    ("y = h.tolist()", "h.tolist()"),
    ("y = h.item()", "h.item()"),
    ("y = h.tobytes()", "h.tobytes()"),
    ("y = h.astype(np.float64)", "h.astype(np.float64)"),
    ("y = np.sum(h)", "np.sum(h)"),
    ("y = np.mean(h)", "np.mean(h)"),
    ("y = np.array(h)", "np.array(h)"),
    ("y = np.concatenate([h, x])", "np.concatenate([h, x])"),
    ("print(h)", "print(h)"),
    ("y = float(h[0])", "h[0]"),
    ("y = bytes(h)", "bytes(h)"),
    ("y = list(h)", "list(h)"),
    ("y = sum(h)", "sum(h)"),
    ("y = f'{h}'", "h}"),
    ("y = str(h)", "str(h)"),
    ("h += 1", "h += 1"),
    ("h *= x", "h *= x"),
    ("y = h > 0", "h > 0"),
    ("ok = 0 < h[3]", "h[3]"),
    ("y = h * 2", "h * 2"),
    ("y = -h", "-h"),
    ("y = h.T.sum()", "h.T.sum()"),
    ("y = h[:10].sum()", "h[:10].sum()"),
    ("y = h.reshape(32, 32)[0, 1]", "h.reshape(32, 32)[0, 1]"),
])
def test_each_kind_of_cpu_read_is_reported(line, at):
    src = WC + line + "\n"
    found = [f for f in findings(src) if f.code == "PIN003"]
    assert found, line
    assert {f.location.row for f in found} == {row_of(src, line)}
    if at is not None:
        assert found[0].location.column == col_of(src, at)


def test_iteration_is_a_read_reported_at_the_iterable():
    src = WC + "for v in h:\n    pass\n"
    f = only(src, "PIN003")
    assert (f.location.row, f.location.column) == (row_of(src, "for v in h"), col_of(src, "h:"))


@pytest.mark.parametrize("line", ["ys = [v * 2 for v in h]", "total = sum(v for v in h)"])
def test_comprehension_over_the_buffer_is_a_read(line):
    src = WC + line + "\n"
    assert rows(src, "PIN003") == [row_of(src, line)]


@pytest.mark.parametrize("line", [
    "h[:] = x",
    "h[0] = 1.0",
    "h[:512] = x[:512]",
    "h.fill(0)",
    "np.copyto(h, x)",
    "n = len(h)",
    "shape = h.shape",
    "nbytes = h.nbytes",
    "dtype = h.dtype",
    "drv.memcpy_htod(d, h)",
    "drv.memcpy_htod_async(d, h, s)",
    "p = h.base.get_device_pointer()",
    "ptr = h.ctypes.data",
    "v = h[2:4]",
    "r = h.reshape(32, 32)",
])
def test_writes_transfers_and_metadata_are_not_reads(line):
    src = WC + "s = drv.Stream()\nd = drv.mem_alloc(4096)\n" + line + "\n"
    assert "PIN003" not in codes(src)


def test_gpu_copies_from_write_combined_memory_are_quiet_in_every_library():
    src = """
    import ctypes
    import numpy as np
    import cupy as cp
    from cuda.bindings import runtime as rt
    mem = cp.cuda.PinnedMemory(4096, cp.cuda.runtime.hostAllocWriteCombined)
    h = np.frombuffer(mem, np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.empty(1024, dtype=np.float32)
    h[:] = 3.0
    d.set(h, stream=s)
    e = cp.asarray(h)
    err, ptr = rt.cudaHostAlloc(4096, rt.cudaHostAllocWriteCombined)
    rt.cudaMemcpyAsync(d.data.ptr, ptr, 4096, rt.cudaMemcpyHostToDevice, 0)
    """
    assert "PIN003" not in codes(src)


def test_every_read_of_the_buffer_is_reported_separately():
    src = WC + "a = h[0]\nb = h.sum()\nprint(h)\n"
    assert rows(src, "PIN003") == [row_of(src, "a = h[0]"), row_of(src, "b = h.sum()"), row_of(src, "print(h)")]


def test_read_inside_a_function_of_a_class_attribute_allocated_in_init():
    src = """
    import numpy as np
    import pycuda.driver as drv
    class Staging:
        def __init__(self, n):
            self.h = drv.pagelocked_empty(n, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)
        def check(self):
            return self.h.sum()
    """
    assert rows(src, "PIN003") == [row_of(src, "self.h.sum()")]


def test_torch_view_of_write_combined_memory_is_read():
    src = """
    import numpy as np
    import torch
    import cupy as cp
    mem = cp.cuda.PinnedMemory(4096, cp.cuda.runtime.hostAllocWriteCombined)
    t = torch.from_numpy(np.frombuffer(mem, np.float32))
    y = t.sum()
    """
    assert rows(src, "PIN003") == [row_of(src, "t.sum()")]


# ============================================================== quiet allocations
def test_numba_mapped_array_wc_true_is_not_write_combined():
    src = """
    import numpy as np
    from numba import cuda
    import numba.cuda as nc
    a = cuda.mapped_array(1024, dtype=np.float32, wc=True)
    b = nc.mapped_array(1024, wc=True, portable=True)
    print(a.sum(), b[0])
    """
    assert "PIN003" not in codes(src)


def test_unknown_flags_are_not_reported():
    src = """
    import ctypes
    import numpy as np
    import cupy
    import pycuda.driver as drv
    from cuda.bindings import runtime as rt
    def f(flags, n):
        mem = cupy.cuda.PinnedMemory(4096, flags)
        a = np.frombuffer(mem, np.float32)
        h = drv.pagelocked_empty(n, np.float32, mem_flags=flags)
        err, ptr = rt.cudaHostAlloc(4096, flags)
        c = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(ptr))
        return a.sum() + h.sum() + c.sum()
    """
    assert "PIN003" not in codes(src)


def test_write_combined_on_one_branch_only_is_not_reported():
    # "maybe write-combined" after a join: rules treat it conservatively.
    src = """
    import numpy as np
    import pycuda.driver as drv
    def f(fast):
        if fast:
            h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)
        else:
            h = drv.pagelocked_empty(1024, np.float32)
        return h.sum()
    """
    assert "PIN003" not in codes(src)


@pytest.mark.parametrize("alloc", [
    "h = drv.pagelocked_empty(1024, np.float32)",
    "h = drv.pagelocked_empty(1024, np.float32, mem_flags=0)",
    "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.PORTABLE)",
    "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)",
    "h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.PORTABLE | drv.host_alloc_flags.DEVICEMAP)",
    "h = np.frombuffer(cp.cuda.PinnedMemory(4096), np.float32)",
    "h = np.frombuffer(cp.cuda.PinnedMemory(4096, cp.cuda.runtime.hostAllocDefault), np.float32)",
    "h = np.frombuffer(cp.cuda.PinnedMemory(4096, cp.cuda.runtime.hostAllocPortable), np.float32)",
    "h = np.frombuffer(cp.cuda.PinnedMemory(4096, cp.cuda.runtime.hostAllocMapped), np.float32)",
    "h = np.frombuffer(cp.cuda.alloc_pinned_memory(4096), np.float32)",
    "h = cupyx.empty_pinned(1024)",
    "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(rt.cudaHostAlloc(4096, rt.cudaHostAllocPortable)[1]))",
    "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(rt.cudaMallocHost(4096)[1]))",
    "h = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(cp.cuda.runtime.hostAlloc(4096, 0)))",
    "h = torch.empty(1024, pin_memory=True)",
    "h = np.zeros(1024)",
    "h = cuda.pinned_array(1024)",
])
def test_default_portable_and_mapped_flags_are_not_reported(alloc):
    src = f"""
    import ctypes
    import numpy as np
    import cupy as cp
    import cupyx
    import torch
    import pycuda.driver as drv
    from numba import cuda
    from cuda.bindings import runtime as rt
    {alloc}
    y = h.sum()
    print(h[0])
    """
    assert "PIN003" not in codes(src)


def test_registered_memory_is_never_write_combined():
    src = """
    import numpy as np
    import pycuda.driver as drv
    a = np.zeros(1024, np.float32)
    h = drv.register_host_memory(a, drv.mem_host_register_flags.DEVICEMAP)
    y = h.sum()
    """
    assert "PIN003" not in codes(src)


def test_a_copy_of_write_combined_memory_is_ordinary_memory():
    src = WC + "c = h.copy()\ny = c.sum()\n"
    # The copy itself reads the write-combined buffer; the copy's own reads are cheap.
    assert rows(src, "PIN003") == [row_of(src, "c = h.copy()")]


@pytest.mark.parametrize("line", ["addr = int(ptr)", "second = ptr + 4096", "failed = ptr == 0"])
def test_pointer_arithmetic_on_a_write_combined_pointer_is_not_a_read(line):
    src = f"""
    from cuda.bindings import runtime as rt
    err, ptr = rt.cudaHostAlloc(1 << 22, rt.cudaHostAllocWriteCombined)
    {line}
    """
    assert "PIN003" not in codes(src)
