"""PIN002 pinned-alloc-in-loop: a pinned allocation or registration whose buffer lives for one iteration.

Every allocator and registration API of every library (under the aliases users write), inside ``for``
and ``while`` loops; then the set-up patterns that must stay quiet (hoisted, appended, stored, returned,
yielded, handed to unknown code, comprehensions, TensorRT's per-binding loop, the ``for``'s iterable,
lazy ``if buf is None:``, pageable memory); then one level of calls through module-local helpers.
"""

from __future__ import annotations

import pytest

from helpers import codes, col_of, findings, only, row_of, rows, source, write

# (imports, statements run each iteration -- the first line holds the allocation call --,
#  the text at which the finding starts, the api named in the message, pooled). PyTorch's
# `pin_memory=True` constructors and `.pin_memory()` both draw on its caching host allocator.
ALLOCATIONS = [
    # ------------------------------------------------------------------ CuPy
    pytest.param("import numpy as np\nimport cupyx",
                 "h = cupyx.empty_pinned(1 << 20, dtype=np.float32)\nh[:] = 0",
                 "cupyx.empty_pinned", "cupyx.empty_pinned", True, id="cupyx.empty_pinned"),
    pytest.param("import numpy as np\nimport cupyx",
                 "h = cupyx.zeros_pinned((256, 256), np.float32)\nx = h.sum()",
                 "cupyx.zeros_pinned", "cupyx.zeros_pinned", True, id="cupyx.zeros_pinned"),
    pytest.param("import numpy as np\nimport cupyx\nref = np.zeros(1024)",
                 "h = cupyx.empty_like_pinned(ref)\nh[:] = ref",
                 "cupyx.empty_like_pinned", "cupyx.empty_like_pinned", True, id="cupyx.empty_like_pinned"),
    pytest.param("import numpy as np\nfrom cupyx import zeros_like_pinned as zlp\nref = np.zeros(1024)",
                 "h = zlp(ref)\nh[:] = ref",
                 "zlp(ref)", "cupyx.zeros_like_pinned", True, id="cupyx.zeros_like_pinned-aliased"),
    pytest.param("import numpy as np\nimport cupy as cp",
                 "mem = cp.cuda.alloc_pinned_memory(4096)\nh = np.frombuffer(mem, np.float32, 1024)\nh[:] = 1",
                 "cp.cuda.alloc_pinned_memory", "cupy.cuda.alloc_pinned_memory", True,
                 id="cupy.cuda.alloc_pinned_memory"),
    pytest.param("import numpy as np\nimport cupy as cp",
                 "mem = cp.cuda.PinnedMemory(4096)\nh = np.frombuffer(mem, np.float32)\nh[:] = 1",
                 "cp.cuda.PinnedMemory", "cupy.cuda.PinnedMemory", False, id="cupy.cuda.PinnedMemory"),
    pytest.param("import cupy",
                 "ptr = cupy.cuda.runtime.hostAlloc(4096, 0)\ncupy.cuda.runtime.freeHost(ptr)",
                 "cupy.cuda.runtime.hostAlloc", "cupy.cuda.runtime.hostAlloc", False,
                 id="cupy.cuda.runtime.hostAlloc"),
    # --------------------------------------------------------------- Numba
    pytest.param("import numpy as np\nfrom numba import cuda",
                 "h = cuda.pinned_array(1 << 20, dtype=np.float32)\nd = cuda.to_device(h)",
                 "cuda.pinned_array", "numba.cuda.pinned_array", False, id="numba.pinned_array"),
    pytest.param("import numpy as np\nimport numba.cuda as nc",
                 "h = nc.mapped_array(1 << 20, dtype=np.float32)\nh[:] = 0",
                 "nc.mapped_array", "numba.cuda.mapped_array", False, id="numba.mapped_array-nc"),
    pytest.param("import numpy as np\nfrom numba import cuda\nref = np.zeros(1024)",
                 "h = cuda.pinned_array_like(ref)\nh[:] = ref",
                 "cuda.pinned_array_like", "numba.cuda.pinned_array_like", False, id="numba.pinned_array_like"),
    pytest.param("import numpy as np\nfrom numba import cuda\nref = np.zeros(1024)",
                 "h = cuda.mapped_array_like(ref)\nh[:] = ref",
                 "cuda.mapped_array_like", "numba.cuda.mapped_array_like", False, id="numba.mapped_array_like"),
    # -------------------------------------------------------------- PyCUDA
    pytest.param("import numpy as np\nimport pycuda.driver as drv",
                 "h = drv.pagelocked_empty(1 << 20, np.float32)\ndrv.memcpy_htod(0, h)",
                 "drv.pagelocked_empty", "pycuda.driver.pagelocked_empty", False, id="pycuda.pagelocked_empty"),
    pytest.param("import numpy as np\nimport pycuda.driver as drv",
                 "h = drv.pagelocked_zeros((64, 64), np.float32)\nx = h.sum()",
                 "drv.pagelocked_zeros", "pycuda.driver.pagelocked_zeros", False, id="pycuda.pagelocked_zeros"),
    pytest.param("import numpy as np\nimport pycuda.driver as drv\nref = np.zeros(1024)",
                 "h = drv.pagelocked_empty_like(ref)\nh[:] = ref",
                 "drv.pagelocked_empty_like", "pycuda.driver.pagelocked_empty_like", False,
                 id="pycuda.pagelocked_empty_like"),
    pytest.param("import numpy as np\nfrom pycuda import driver as cuda\nref = np.zeros(1024)",
                 "h = cuda.pagelocked_zeros_like(ref)\nh[:] = ref",
                 "cuda.pagelocked_zeros_like", "pycuda.driver.pagelocked_zeros_like", False,
                 id="pycuda.pagelocked_zeros_like"),
    pytest.param("import numpy as np\nfrom pycuda.tools import PageLockedMemoryPool\npool = PageLockedMemoryPool()",
                 "h = pool.allocate((1024,), np.float32)\nh[:] = 0",
                 "pool.allocate", "PageLockedMemoryPool.allocate", True, id="pycuda.PageLockedMemoryPool.allocate"),
    # --------------------------------------------------------- cuda-python
    pytest.param("from cuda.bindings import runtime as rt",
                 "err, ptr = rt.cudaHostAlloc(1 << 26, rt.cudaHostAllocDefault)\nrt.cudaFreeHost(ptr)",
                 "rt.cudaHostAlloc", "cuda.bindings.runtime.cudaHostAlloc", False, id="runtime.cudaHostAlloc"),
    pytest.param("from cuda.bindings import runtime as rt",
                 "err, ptr = rt.cudaMallocHost(1 << 26)\nrt.cudaFreeHost(ptr)",
                 "rt.cudaMallocHost", "cuda.bindings.runtime.cudaMallocHost", False, id="runtime.cudaMallocHost"),
    pytest.param("from cuda import cudart",
                 "err, ptr = cudart.cudaMallocHost(1 << 26)\ncudart.cudaFreeHost(ptr)",
                 "cudart.cudaMallocHost", "cuda.cudart.cudaMallocHost", False, id="legacy-cudart.cudaMallocHost"),
    pytest.param("from cuda import cudart",
                 "err, ptr = cudart.cudaHostAlloc(4096, cudart.cudaHostAllocPortable)\ncudart.cudaFreeHost(ptr)",
                 "cudart.cudaHostAlloc", "cuda.cudart.cudaHostAlloc", False, id="legacy-cudart.cudaHostAlloc"),
    pytest.param("from cuda.bindings import driver",
                 "err, ptr = driver.cuMemHostAlloc(4096, driver.CU_MEMHOSTALLOC_PORTABLE)\ndriver.cuMemFreeHost(ptr)",
                 "driver.cuMemHostAlloc", "cuda.bindings.driver.cuMemHostAlloc", False, id="driver.cuMemHostAlloc"),
    pytest.param("from cuda.bindings import driver",
                 "err, ptr = driver.cuMemAllocHost(4096)\ndriver.cuMemFreeHost(ptr)",
                 "driver.cuMemAllocHost", "cuda.bindings.driver.cuMemAllocHost", False, id="driver.cuMemAllocHost"),
    # --------------------------------------------------------------- torch
    pytest.param("import torch",
                 "x = torch.randn(1 << 20).pin_memory()\ny = x.to('cuda', non_blocking=True)",
                 "torch.randn(1 << 20).pin_memory()", "Tensor.pin_memory", True, id="torch.pin_memory"),
    pytest.param("import torch as T",
                 "x = T.empty(1 << 20, pin_memory=True)\ny = x.to('cuda', non_blocking=True)",
                 "T.empty", "torch.empty", True, id="torch.empty-pin_memory-T"),
    pytest.param("import torch",
                 "x = torch.zeros(1024, 1024, dtype=torch.float16, pin_memory=True)\nx.fill_(1)",
                 "torch.zeros", "torch.zeros", True, id="torch.zeros-pin_memory"),
    pytest.param("import torch",
                 "x = torch.tensor([1.0, 2.0], pin_memory=True)\ny = x.cuda(non_blocking=True)",
                 "torch.tensor", "torch.tensor", True, id="torch.tensor-pin_memory"),
]

REGISTRATIONS = [
    pytest.param("import numpy as np\nimport cupy as cp\nh = np.empty(1 << 20, np.float32)",
                 "cp.cuda.runtime.hostRegister(h.ctypes.data, h.nbytes, 0)\n"
                 "cp.cuda.runtime.hostUnregister(h.ctypes.data)",
                 "cp.cuda.runtime.hostRegister", "cupy.cuda.runtime.hostRegister", id="cupy.runtime.hostRegister"),
    pytest.param("import numpy as np\nimport pycuda.driver as drv\nh = np.empty(1 << 20, np.float32)",
                 "p = drv.register_host_memory(h)\ndrv.memcpy_htod(0, p)",
                 "drv.register_host_memory", "pycuda.driver.register_host_memory", id="pycuda.register_host_memory"),
    pytest.param("import numpy as np\nfrom cuda.bindings import runtime as rt\nh = np.empty(1 << 20, np.float32)",
                 "rt.cudaHostRegister(h.ctypes.data, h.nbytes, rt.cudaHostRegisterDefault)\n"
                 "rt.cudaHostUnregister(h.ctypes.data)",
                 "rt.cudaHostRegister", "cuda.bindings.runtime.cudaHostRegister", id="runtime.cudaHostRegister"),
    pytest.param("import numpy as np\nfrom cuda import cudart\nh = np.empty(1 << 20, np.float32)",
                 "cudart.cudaHostRegister(h.ctypes.data, h.nbytes, 0)\ncudart.cudaHostUnregister(h.ctypes.data)",
                 "cudart.cudaHostRegister", "cuda.cudart.cudaHostRegister", id="legacy-cudart.cudaHostRegister"),
    pytest.param("import numpy as np\nfrom numba import cuda\nh = np.empty(1 << 20, np.float32)",
                 "with cuda.pinned(h):\n    d = cuda.to_device(h)",
                 "cuda.pinned", "numba.cuda.pinned", id="numba.with-pinned"),
    pytest.param("import numpy as np\nimport numba.cuda as nc\nh = np.empty(1 << 20, np.float32)",
                 "with nc.mapped(h) as m:\n    x = m.sum()",
                 "nc.mapped", "numba.cuda.mapped", id="numba.with-mapped-nc"),
]

LOOPS = {"for": "for i in range(10):", "while": "while True:"}


def _in_loop(imports: str, body: str, loop: str) -> str:
    indented = "".join("    " + line + "\n" for line in body.splitlines())
    return f"{imports}\n{LOOPS[loop]}\n{indented}"


def _hoisted(imports: str, body: str) -> str:
    first, *rest = body.splitlines()
    indented = "".join("    " + line + "\n" for line in rest) or "    pass\n"
    return f"{imports}\n{first}\nfor i in range(10):\n{indented}"


@pytest.mark.parametrize("loop", ["for", "while"])
@pytest.mark.parametrize("imports, body, at, api, pooled", ALLOCATIONS)
def test_pinned_allocation_in_loop_is_reported_at_the_allocation(imports, body, at, api, pooled, loop):
    src = _in_loop(imports, body, loop)
    f = only(src, "PIN002")
    assert (f.location.row, f.location.column) == (row_of(src, at), col_of(src, at))
    assert f"Pinned allocation `{api}`" in f.message
    assert "inside a loop" in f.message and "before the loop" in f.message
    assert ("pooled" in f.message) is pooled
    assert [r.location.row for r in f.related] == [row_of(src, at)]


@pytest.mark.parametrize("imports, body, at, api, pooled", ALLOCATIONS)
def test_pinned_allocation_hoisted_before_the_loop_is_quiet(imports, body, at, api, pooled):
    assert "PIN002" not in codes(_hoisted(imports, body))


@pytest.mark.parametrize("loop", ["for", "while"])
@pytest.mark.parametrize("imports, body, at, api", REGISTRATIONS)
def test_registration_in_loop_is_reported_at_the_registration(imports, body, at, api, loop):
    src = _in_loop(imports, body, loop)
    f = only(src, "PIN002")
    assert (f.location.row, f.location.column) == (row_of(src, at), col_of(src, at))
    assert f"Pinned registration `{api}`" in f.message
    assert "pooled" not in f.message


@pytest.mark.parametrize("imports, body, at, api", REGISTRATIONS)
def test_registration_before_the_loop_is_quiet(imports, body, at, api):
    body_lines = body.splitlines()
    if body_lines[0].startswith("with "):
        # The whole loop inside the registered block.
        src = f"{imports}\n{body_lines[0]}\n    for i in range(10):\n" + \
              "".join("    " + line + "\n" for line in body_lines[1:])
    else:
        src = _hoisted(imports, body)
    assert "PIN002" not in codes(src)


def test_nested_loops_report_once():
    src = """
    import numpy as np
    from numba import cuda
    for epoch in range(3):
        for i in range(10):
            h = cuda.pinned_array(1024)
            d = cuda.to_device(h)
    """
    assert rows(src, "PIN002") == [row_of(src, "cuda.pinned_array")]


def test_allocation_in_outer_loop_used_in_inner_loop_is_reported_once():
    src = """
    import numpy as np
    from numba import cuda
    for epoch in range(3):
        h = cuda.pinned_array(1024)
        for i in range(10):
            d = cuda.to_device(h)
    """
    assert rows(src, "PIN002") == [row_of(src, "cuda.pinned_array")]


def test_allocation_in_loop_inside_a_function_and_a_method():
    src = """
    import cupyx
    def step(n):
        for i in range(n):
            h = cupyx.empty_pinned(n)
            h[:] = 0
    class Worker:
        def run(self, n):
            while n:
                h = cupyx.zeros_pinned(1 << 20)
                n -= 1
    """
    assert rows(src, "PIN002") == [row_of(src, "cupyx.empty_pinned"), row_of(src, "cupyx.zeros_pinned")]


@pytest.mark.parametrize("loop, size", [
    ("for n in sizes:", "n"),                                        # the loop's target
    ("for i in range(20):", "(1 << i,)"),
    ("for _ in range(20):\n        size *= 2", "size"),             # a size the body steps
    ("for _ in range(20):\n        size = size * 2", "size"),
    ("for _ in range(20):\n        size *= 2", "int(size)"),        # written as a number again
    ("for n in sizes:", "round(n * 1.5)"),
])
def test_a_size_sweep_has_no_one_buffer_to_hoist(loop, size):
    """A bandwidth probe: each iteration asks for another size, so the allocation cannot move before
    the loop (the sweep is the point)."""
    src = f"""
import torch
def probe(sizes, size=1024):
    for_each = None
    {loop}
        src = torch.ones({size}, dtype=torch.int8, pin_memory=True)
        src.to("cuda")
"""
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("size", ["1 << 20", "batch.shape", "n", "len(batch)"])
def test_a_size_the_loop_does_not_step_is_still_reported(size):
    src = f"""
import torch
def run(loader, n):
    for batch in loader:
        m = len(batch)
        h = torch.empty({size}, pin_memory=True)
        h.to("cuda", non_blocking=True)
"""
    assert rows(src, "PIN002") == [row_of(src, "h = torch.empty")]


def test_freed_each_iteration_raw_pointer():
    # The raw allocate-and-free-on-the-hot-path pattern (the pointer is used and freed).
    src = """
    from cuda.bindings import runtime as rt
    for i in range(8):
        err, ptr = rt.cudaMallocHost(1 << 26)
        rt.cudaMemcpy(ptr, 0, 1 << 26, rt.cudaMemcpyDeviceToHost)
        rt.cudaFreeHost(ptr)
    """
    assert rows(src, "PIN002") == [row_of(src, "rt.cudaMallocHost")]


# ===================================================== buffers that outlive the iteration
@pytest.mark.parametrize("keep", [
    pytest.param("bufs.append(h)", id="appended"),
    pytest.param("bufs[i] = h", id="stored-in-dict"),
    pytest.param("table['x%d' % i] = h", id="stored-in-dict-by-key"),
    pytest.param("bufs.extend([h])", id="extended"),
    pytest.param("bufs.append((h, cuda.to_device(h)))", id="appended-in-tuple"),
    pytest.param("register(h)", id="passed-to-unknown-function"),
    pytest.param("keep = Holder(h)", id="passed-to-unknown-constructor"),
])
def test_buffer_kept_beyond_the_iteration_is_quiet(keep):
    src = f"""
    import numpy as np
    from numba import cuda
    bufs = {{}}
    table = {{}}
    for i in range(4):
        h = cuda.pinned_array(1024, dtype=np.float32)
        {keep}
    """
    assert "PIN002" not in codes(src)


def test_stored_in_an_attribute_container_in_a_method_is_quiet():
    src = """
    import numpy as np
    import cupyx
    class Buffers:
        def __init__(self, n):
            self.bufs = {}
            for i in range(n):
                self.bufs[i] = cupyx.empty_pinned(1024, dtype=np.float32)
            self.one = None
            for i in range(n):
                self.one = cupyx.zeros_pinned(1024)
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("view", [
    pytest.param("np.ndarray(shape=(count,), buffer=ctypes.cast(ptr, arr_t)[0], dtype=np.float32)", id="pointer-index"),
    pytest.param("np.frombuffer(ctypes.cast(ptr, arr_t).contents, dtype=np.float32)", id="pointer-contents"),
    pytest.param("ctypes.cast(ptr, arr_t)[0]", id="ctypes-array"),
])
def test_a_pinned_block_kept_through_a_ctypes_view_of_it_is_quiet(view):
    # A per-binding set-up loop: each cudaHostAlloc block is seen as a NumPy array through ctypes and
    # the view is kept in a dict of the object: the block lives as long as the object.
    src = f"""
    import ctypes
    import numpy as np
    from cuda.bindings import runtime as cudart
    class Runner:
        def setup(self, shapes):
            self.buffer = {{}}
            count = 1 << 20
            for name in shapes:
                ptr = cudart.cudaHostAlloc(count * 4, cudart.cudaHostAllocDefault)[1]
                arr_t = ctypes.POINTER(ctypes.c_float * count)
                self.buffer[name] = [{view}, count * 4]
    """
    assert "PIN002" not in codes(src)
    # Freed at the end of the iteration, the same block is PIN002.
    freed = src.replace("self.buffer[name] = [", "view = [").rstrip() + (
        "\n                cudart.cudaMemcpy(ptr, 0, count * 4, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)"
        "\n                cudart.cudaFreeHost(ptr)\n")
    assert "PIN002" in codes(freed)


def test_returned_from_inside_the_loop_is_quiet():
    src = """
    import torch
    def first_ok(batches):
        for b in batches:
            h = torch.empty(1024, pin_memory=True)
            if b:
                return h
    """
    assert "PIN002" not in codes(src)


def test_yielded_from_the_loop_is_quiet():
    src = """
    import numpy as np
    import pycuda.driver as drv
    def staging(n):
        while True:
            h = drv.pagelocked_empty(n, np.float32)
            yield h
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("comprehension", [
    "bufs = [cupyx.empty_pinned(1 << 20) for _ in range(4)]",
    "bufs = {i: cupyx.zeros_pinned(1 << 20) for i in range(4)}",
    "bufs = list(cupyx.empty_pinned(1 << 20) for _ in range(4))",
    "bufs = [(cupyx.empty_pinned(n), n) for n in (1, 2, 3)]",
])
def test_comprehension_producing_buffers_is_quiet(comprehension):
    assert "PIN002" not in codes(f"import cupyx\n{comprehension}\n")


def test_tensorrt_per_binding_setup_is_quiet():
    src = """
    import numpy as np
    import pycuda.driver as cuda
    import pycuda.autoinit
    import tensorrt as trt

    class HostDeviceMem:
        def __init__(self, host_mem, device_mem):
            self.host = host_mem
            self.device = device_mem

    def allocate_buffers(engine):
        inputs, outputs, bindings = [], [], []
        stream = cuda.Stream()
        for binding in engine:
            size = trt.volume(engine.get_binding_shape(binding)) * engine.max_batch_size
            dtype = trt.nptype(engine.get_binding_dtype(binding))
            host_mem = cuda.pagelocked_empty(size, dtype)
            device_mem = cuda.mem_alloc(host_mem.nbytes)
            bindings.append(int(device_mem))
            if engine.binding_is_input(binding):
                inputs.append(HostDeviceMem(host_mem, device_mem))
            else:
                outputs.append(HostDeviceMem(host_mem, device_mem))
        return inputs, outputs, bindings, stream
    """
    assert codes(src) == []


def test_allocation_in_the_for_iterable_runs_once():
    src = """
    import numpy as np
    import cupyx
    from numba import cuda
    for x in cuda.pinned_array(16):
        pass
    for row in cupyx.zeros_pinned((4, 4)):
        pass
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("test", ["buf is None", "not initialized", "buf is None or buf.shape != shape"])
def test_lazy_allocation_under_an_if_in_the_loop_is_quiet(test):
    src = f"""
    import torch
    buf = None
    initialized = False
    shape = (1024,)
    for batch in range(10):
        if {test}:
            buf = torch.empty(shape, pin_memory=True)
            initialized = True
        buf.fill_(batch)
    """
    assert "PIN002" not in codes(src)


def test_loop_inside_an_if_is_still_reported():
    # The `if` is around the loop, not inside it: every iteration still allocates.
    src = """
    import cupyx
    debug = True
    if debug:
        for i in range(10):
            h = cupyx.empty_pinned(1024)
            h[:] = i
    """
    assert rows(src, "PIN002") == [row_of(src, "cupyx.empty_pinned")]


@pytest.mark.parametrize("test, reported", [
    ("use_pinned", True),                       # a parameter: the same arm on every iteration
    ("self.device == 'cuda'", True),            # a field nothing in the loop stores
    ("torch.cuda.is_available()", True),        # a library's argument-free query
    ("use_pinned and self.device != 'cpu'", True),
    ("i == 0", False),                          # the loop's own variable: a first-iteration set-up
    ("step % 10 == 0", False),                  # a counter the loop advances
    ("x.numel() > 0", True),                    # a filter on the element: every non-empty one is pinned
    ("x.numel() > step", False),                # ... on what the loop changes too
    ("ready(i)", False),
    ("not self.warm", False),                   # a field the loop stores
    ("key not in seen", False),                 # a set the loop adds to
])
def test_an_if_in_the_loop_that_answers_the_same_every_time_is_not_a_set_up(test, reported):
    """nanoTabPFN's loaders pin each batch under `if self.device == "cuda":`: an `if` whose test reads
    nothing the loop changes takes the same arm on every iteration, so what it pins is pinned on every
    one. An `if` on what the loop changes may be a lazy or first-iteration set-up, and stays quiet."""
    src = f"""
    import torch
    class Loader:
        def run(self, batches, use_pinned, seen):
            step = 0
            for i, (key, x) in enumerate(batches):
                if {test}:
                    h = torch.from_numpy(x).pin_memory()
                    y = h.to("cuda", non_blocking=True)
                self.warm = True
                seen.add(key)
                step += 1
    """
    assert rows(src, "PIN002") == ([row_of(src, ".pin_memory()")] if reported else [])


@pytest.mark.parametrize("test, stores, reported", [
    ("self.device == 'cuda'", "", True),
    ("self.device == 'cuda'", "self.device = 'cpu'", False),   # the callee changes the field
    ("n > 0", "", False),                                      # a parameter: may differ per call
    ("ready", "", True),                                       # a module name nothing stores
    ("torch.cuda.is_available()", "", True),                   # a library's argument-free query
    ("self.check()", "", False),                               # a method: may answer differently
])
def test_a_helper_pinning_under_an_if_that_every_call_takes_is_reported_at_the_call(test, stores, reported):
    """The loader's `_load` pins under `if self.device == "cuda":` and its caller's loop calls it for
    every batch (nanoTabPFN): each call takes the same arm, so each call pins a new buffer. A test on a
    parameter, or on a field the helper stores, may go either way from one call to the next."""
    src = f"""
    import torch
    ready = True
    class Loader:
        def _load(self, x, n):
            if {test}:
                h = torch.from_numpy(x).pin_memory()
                x = h.to("cuda", non_blocking=True)
            {stores or "pass"}
            return x
        def __iter__(self):
            for x in self.xs:
                yield self._load(x, len(x))
    """
    assert rows(src, "PIN002") == ([row_of(src, "yield self._load")] if reported else [])


def test_a_helper_pinning_under_an_if_on_a_field_the_caller_s_loop_stores_is_quiet():
    src = """
    import torch
    class Loader:
        def _load(self, x):
            if self.fresh:
                h = torch.from_numpy(x).pin_memory()
                x = h.to("cuda", non_blocking=True)
            return x
        def run(self, xs):
            for x in xs:
                out = self._load(x)
                self.fresh = False
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("alloc", [
    "np.empty(1 << 20, np.float32)", "np.zeros(1024)", "torch.empty(1024)", "torch.zeros(1024, pin_memory=False)",
    "drv.aligned_empty(1024, np.float32)", "cp.empty(1024)", "torch.empty(1024, device='cuda')",
    "cuda.device_array(1024)", "cuda.managed_array(1024)",
])
def test_pageable_and_device_allocations_in_loop_are_not_pin002(alloc):
    src = f"""
    import numpy as np
    import cupy as cp
    import torch
    import pycuda.driver as drv
    from numba import cuda
    for i in range(10):
        h = {alloc}
        h[:] = 0
    """
    assert "PIN002" not in codes(src)


def test_unknown_pin_memory_argument_is_quiet():
    src = """
    import torch
    def run(pin):
        for i in range(10):
            x = torch.empty(1024, pin_memory=pin)
            x.fill_(0)
    """
    assert "PIN002" not in codes(src)


def test_pin_memory_of_an_unknown_value_in_a_loop_is_reported():
    # `.pin_memory()` is PyTorch's alone (the table marks it unique): a pinned copy every iteration.
    src = """
    import torch
    for batch in loader():
        x = batch.pin_memory()
    """
    assert rows(src, "PIN002") == [row_of(src, "batch.pin_memory()")]


def test_pin_memory_is_not_torch_s_where_the_checked_code_defines_one():
    # A custom batch type with its own pin_memory (what DataLoader's pin_memory=True calls).
    src = """
    import torch
    class Batch:
        def pin_memory(self):
            self.x = self.x.pin_memory()
            return self
    for batch in loader():
        x = batch.pin_memory()
    """
    assert "PIN002" not in codes(src)


def test_pinned_dataloader_iteration_is_not_pin002():
    src = """
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    for batch in loader:
        x = batch.to('cuda', non_blocking=True)
    """
    assert "PIN002" not in codes(src)


# ================================================================== one level of calls
def test_helper_returning_pinned_memory_called_in_a_loop_is_reported_at_the_call():
    src = """
    import numpy as np
    import cupyx
    def staging(n):
        return cupyx.empty_pinned(n, dtype=np.float32)
    for i in range(10):
        h = staging(1 << 20)
        h[:] = i
    """
    f = only(src, "PIN002")
    assert (f.location.row, f.location.column) == (row_of(src, "h = staging"), col_of(src, "staging(1 << 20)"))
    assert "`staging()`" in f.message and "cupyx.empty_pinned" in f.message
    assert "pooled" in f.message
    assert [r.location.row for r in f.related] == [row_of(src, "h = staging")]


def test_helper_using_and_dropping_pinned_memory_called_in_a_loop_is_reported_at_the_call():
    src = """
    import numpy as np
    import pycuda.driver as drv
    def upload(d, x):
        h = drv.pagelocked_empty(x.shape, x.dtype)
        h[:] = x
        drv.memcpy_htod(d, h)
    d = drv.mem_alloc(4096)
    x = np.zeros(1024, np.float32)
    for i in range(10):
        upload(d, x)
    """
    f = only(src, "PIN002")
    assert f.location.row == row_of(src, "    upload(d, x)")
    assert f.location.column == col_of(src, "    upload(d, x)") + 4
    assert "`upload()`" in f.message and "pycuda.driver.pagelocked_empty" in f.message
    assert "pooled" not in f.message


def test_helper_called_in_a_loop_from_inside_a_function():
    src = """
    import torch
    def make(n):
        return torch.empty(n, pin_memory=True)
    def train(steps):
        for step in range(steps):
            x = make(1024)
            y = x.to('cuda', non_blocking=True)
    """
    assert rows(src, "PIN002") == [row_of(src, "x = make(1024)")]


def test_helper_called_outside_a_loop_is_quiet():
    src = """
    import numpy as np
    import cupyx
    import pycuda.driver as drv
    def staging(n):
        return cupyx.empty_pinned(n, dtype=np.float32)
    def upload(d, x):
        h = drv.pagelocked_empty(x.shape, x.dtype)
        h[:] = x
        drv.memcpy_htod(d, h)
    h = staging(1 << 20)
    upload(0, np.zeros(4))
    for i in range(10):
        h[:] = i
    """
    assert "PIN002" not in codes(src)


def test_helper_storing_into_a_global_is_quiet():
    src = """
    import cupyx
    def stash(n):
        global BUF
        BUF = cupyx.empty_pinned(n)
    for i in range(10):
        stash(1024)
    """
    assert "PIN002" not in codes(src)


def test_helper_storing_into_a_global_and_returning_it_is_quiet():
    src = """
    import numpy as np
    import cupyx
    CACHE = None
    def staging(n):
        global CACHE
        CACHE = cupyx.empty_pinned(n, dtype=np.float32)
        return CACHE
    for i in range(10):
        h = staging(1 << 20)
    """
    assert "PIN002" not in codes(src)


def test_helper_storing_into_a_module_container_is_quiet():
    src = """
    import cupyx
    POOL = []
    def grow(n):
        h = cupyx.empty_pinned(n)
        POOL.append(h)
    for i in range(10):
        grow(1024)
    """
    assert "PIN002" not in codes(src)


def test_helper_handing_out_a_global_buffer_is_quiet():
    src = """
    import cupyx
    BUF = cupyx.empty_pinned(1 << 20)
    def get_buf():
        return BUF
    for i in range(10):
        h = get_buf()
        h[:] = i
    """
    assert "PIN002" not in codes(src)


def test_helper_result_appended_in_the_loop_is_quiet():
    src = """
    import cupyx
    def staging(n):
        return cupyx.empty_pinned(n)
    bufs = []
    for i in range(10):
        bufs.append(staging(1024))
    """
    assert "PIN002" not in codes(src)


def test_helper_with_a_lazy_allocation_is_quiet():
    src = """
    import cupyx
    _buf = {}
    def get(n):
        if n not in _buf:
            _buf[n] = cupyx.empty_pinned(n)
        return _buf[n]
    for i in range(10):
        h = get(1024)
    """
    assert "PIN002" not in codes(src)


def test_helper_returning_a_pageable_array_is_quiet():
    src = """
    import numpy as np
    def make(n):
        return np.empty(n)
    for i in range(10):
        h = make(1024)
    """
    assert "PIN002" not in codes(src)


def test_statement_shapes_inside_the_loop_body_are_still_reported():
    src = """
    import cupy as cp
    import cupyx
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.empty(1024)
    for i in range(10):
        with s:
            h1 = cupyx.empty_pinned(1024)
            d.set(h1)
        del h1
    for i in range(10):
        try:
            h2 = cupyx.empty_pinned(1024)
            h2[:] = 1
        except Exception:
            pass
    for i in range(10):
        h3 = cupyx.empty_pinned(1024)
        if i > 5:
            break
        h3 = None
    async def f(src):
        async for x in src:
            h4 = cupyx.empty_pinned(1024)
    """
    assert rows(src, "PIN002") == [row_of(src, "h%d = cupyx" % k) for k in (1, 2, 3, 4)]


def test_tensorrt_per_binding_setup_in_a_class_is_quiet():
    src = """
    import numpy as np
    import pycuda.driver as cuda
    import tensorrt as trt
    class TrtModel:
        def __init__(self, engine):
            self.inputs, self.outputs, self.bindings = [], [], []
            for binding in engine:
                size = trt.volume(engine.get_binding_shape(binding))
                host_mem = cuda.pagelocked_empty(size, np.float32)
                device_mem = cuda.mem_alloc(host_mem.nbytes)
                self.bindings.append(int(device_mem))
                self.inputs.append(HostDeviceMem(host_mem, device_mem))
    """
    assert codes(src) == []


@pytest.mark.parametrize("keep", ["inputs.append({'host': host_mem, 'device': device_mem})",
                                  "entry = {'host': host_mem}\n        inputs.append(entry)"])
def test_tensorrt_per_binding_setup_with_dicts_is_quiet(keep):
    src = f"""
    import numpy as np
    import pycuda.driver as cuda
    def allocate_buffers(engine):
        inputs = []
        for binding in engine:
            host_mem = cuda.pagelocked_empty(1024, np.float32)
            device_mem = cuda.mem_alloc(host_mem.nbytes)
            {keep}
        return inputs
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("keep", ["bufs += [h]", "bufs = bufs + [h]", "setattr(obj, 'b%d' % i, h)"])
def test_other_ways_of_keeping_the_buffer_are_quiet(keep):
    src = f"""
    import cupyx
    bufs = []
    obj = object()
    for i in range(4):
        h = cupyx.empty_pinned(1024)
        {keep}
    """
    assert "PIN002" not in codes(src)


@pytest.mark.parametrize("keep", ["bufs.insert(0, h)", "bufs[len(bufs):] = [h]", "obj.b = h", "bufs.append([h])",
                                  "bufs.append(h.reshape(32, 32))", "cache = bufs.setdefault(i, h)"])
def test_more_ways_of_keeping_the_buffer_are_quiet(keep):
    src = f"""
    import cupyx
    bufs = {{}}
    obj = object()
    for i in range(4):
        h = cupyx.empty_pinned(1024)
        {keep}
    """
    assert "PIN002" not in codes(src)


_COROUTINE = """
import asyncio
import numpy as np
from numba import cuda


async def roundtrip(value):
    stream = cuda.stream()
    h = cuda.pinned_array(1 << 20, dtype=np.float32)
    h[:] = value
    d = cuda.to_device(h, stream=stream)
    d.copy_to_host(h, stream=stream)
    await stream.async_done()
    return float(h[0])


async def main(values):
{body}
"""


@pytest.mark.parametrize("body", [
    "    tasks = [asyncio.create_task(roundtrip(v)) for v in values]\n    return await asyncio.gather(*tasks)",
    "    return await asyncio.gather(*(roundtrip(v) for v in values))",
    "    pending = []\n    for v in values:\n        pending.append(roundtrip(v))\n    return await asyncio.gather(*pending)",
])
def test_coroutines_made_in_a_loop_run_side_by_side_and_each_needs_its_buffer(body):
    # Calling an async function makes a coroutine; its body runs later, beside the others.
    assert "PIN002" not in codes(_COROUTINE.format(body=body))


def test_a_coroutine_awaited_in_each_iteration_allocates_in_that_iteration():
    src = _COROUTINE.format(body="    for v in values:\n        await roundtrip(v)")
    assert rows(src, "PIN002") == [row_of(src, "await roundtrip(v)")]


@pytest.mark.parametrize("decorator, reported", [
    ("@functools.lru_cache(1)", False),
    ("@functools.lru_cache", False),
    ("@cache", False),
    ("", True),
])
def test_a_memoized_helper_does_not_pin_on_every_call(decorator, reported):
    """A pinned tensor made in an `lru_cache`d helper is made once per distinct argument, not per
    iteration (modded-nanogpt's block-count helper: three false PIN002s before)."""
    from helpers import rows, row_of
    src = f"""
import functools
from functools import cache
import torch
{decorator}
def blocks_on_gpu(blocks):
    return torch.full((1 << 20,), blocks, dtype=torch.int32, pin_memory=True).cuda(non_blocking=True)
def train(model, total):
    for step in range(total):
        model(blocks_on_gpu(1 + step * 13 // total))
"""
    assert rows(src, "PIN002") == ([row_of(src, "model(blocks_on_gpu(")] if reported else [])



def test_a_generator_allocates_as_it_is_iterated_not_when_it_is_called():
    """Calling a generator function runs none of its body: a generator made once per trial that
    pins a shard as it starts is not a pinned allocation of the trial loop's call (modded-nanogpt's
    data generator); the one it pins in its own loop is reported there, and a plain helper called
    in a loop still is at the call."""
    from helpers import rows, row_of
    src = """
import torch
def shard():
    return torch.empty(1 << 20, pin_memory=True)
def batches(n):
    t = shard()
    while True:
        yield t.to("cuda", non_blocking=True)
        u = shard()
        yield u.to("cuda", non_blocking=True)
def per_call():
    t = shard()
    return t.to("cuda", non_blocking=True)
for trial in range(3):
    loader = batches(4)
    for step in range(10):
        x = next(loader)
for step in range(10):
    y = per_call()
"""
    assert rows(src, "PIN002") == [row_of(src, "u = shard()"), row_of(src, "y = per_call()")]


@pytest.mark.parametrize("start", [
    "threading.Thread(target=producer, daemon=True).start()",
    "producer()",
    "return producer",
])
def test_a_function_nested_in_a_method_sees_the_method_s_self(start):
    """A producer thread defined in a loader's method pins each batch through `self._to_gpu(b)`
    (nanoTabPFN): `self` is the enclosing method's receiver, not unknown, in the nested function's
    own analysis, however the method starts it (a thread, a call, handing it back)."""
    src = f"""
    import threading
    import torch
    class Loader:
        def _to_gpu(self, b):
            x = torch.from_numpy(b).pin_memory()
            return x.to("cuda", non_blocking=True)
        def run(self, batches):
            def producer():
                for b in batches:
                    out = self._to_gpu(b)
            {start}
    """
    assert rows(src, "PIN002") == [row_of(src, "out = self._to_gpu")]


def test_a_nested_function_s_self_is_unknown_when_the_method_rebinds_it():
    src = """
    import torch
    class Loader:
        def _to_gpu(self, b):
            x = torch.from_numpy(b).pin_memory()
            return x.to("cuda", non_blocking=True)
        def run(self, batches, other):
            self = other
            def producer():
                for b in batches:
                    out = self._to_gpu(b)
            return producer
    """
    assert "PIN002" not in codes(src)


def test_per_step_metadata_pinned_from_python_values_is_not_pin002():
    """`torch.tensor(lengths, pin_memory=True).cuda(non_blocking=True)` each step (nano-vllm's and
    mini-sglang's schedulers): the idiom for an asynchronous upload of values built in Python, from
    the pool, of a size that changes each step; there is no buffer to hoist. A pinned copy of a
    tensor (`.pin_memory()`) each step stays reported, as does a block of a size the code fixes."""
    src = """
    import torch
    class Runner:
        def prepare(self, lengths):
            return torch.tensor(lengths, dtype=torch.int32, pin_memory=True).cuda(non_blocking=True)
        def run(self, lengths):
            return (self.prepare(lengths) * 2).tolist()
    class Engine:
        def __init__(self):
            self.runner = Runner()
        def generate(self, batches):
            out = []
            for lengths in batches:
                out.extend(self.runner.run(lengths))
            for lengths in batches:
                t = torch.tensor(lengths, pin_memory=True).cuda(non_blocking=True)
            return out
    """
    assert "PIN002" not in codes(src)
    copied = src.replace("torch.tensor(lengths, pin_memory=True)", "torch.tensor(lengths).pin_memory()")
    assert rows(copied, "PIN002") == [row_of(copied, "t = torch.tensor")]


@pytest.mark.parametrize("data, reported", [
    ("[parts[r].numel()]", False),         # the loop's values: per-step metadata, nothing to hoist
    ("(len(ids), r)", False),
    ("[total, len(parts)]", True),         # the same numbers every step: one tensor before the loop
    ("[4, 8]", True),
])
def test_pinned_literal_of_the_loops_values_is_per_step_metadata(data, reported):
    src = f"""
    import torch
    def send_counts(parts, world, device, total):
        out = [None] * world
        for r in range(world):
            ids = parts[r]
            out[r] = torch.tensor({data}, dtype=torch.int32, pin_memory=True).to(device, non_blocking=True)
        return out
    """
    assert codes(src) == (["PIN002"] if reported else [])


def test_pinned_buffer_filled_by_copy_and_stored_is_no_pin002():
    """``copy_`` hands back its destination: a pinned buffer filled from the GPU and stored in a list
    the function returns outlives the iteration (SALIENT++'s index downloads, survey 56 FH)."""
    src = """
    import torch
    def download(per_rank, world, cutoff):
        host = [None] * world
        for r in range(world):
            shifted = (per_rank[r] - cutoff.cuda()).long()
            host[r] = torch.empty(shifted.numel(), dtype=torch.int64, pin_memory=True).copy_(shifted, non_blocking=True)
        return host
    """
    assert codes(src) == []
    dropped = src.replace("host[r] = torch.empty", "dropped = torch.empty")
    assert codes(dropped) == ["PIN002"]


@pytest.mark.parametrize("size, reported", [("n", False), ("sum(lengths)", False), ("1 << 20", True)])
def test_a_helper_taking_a_pool_block_of_a_size_it_works_out_is_not_pin002_at_the_loop(size, reported):
    """A scheduler step builds index metadata in `torch.empty(sum(lengths), pin_memory=True)` and
    uploads it (mini-sglang's `_make_positions`, several calls below the serving loop): the pool hands
    the block back for the next call, and the loop has no buffer to hoist. A block of a size the
    helper fixes could be made once by the caller, and is reported at the call in the loop."""
    src = f"""
    import torch
    def make_positions(lengths, n, device):
        host = torch.empty({size}, dtype=torch.int32, pin_memory=True)
        host.fill_(0)
        return host.to(device, non_blocking=True)
    class Scheduler:
        def step(self, lengths):
            self.positions = make_positions(lengths, len(lengths), "cuda")
        def serve(self, requests):
            while True:
                self.step(requests.next())
    """
    assert rows(src, "PIN002") == ([row_of(src, "self.step(requests")] if reported else [])
    assert "PIN008" not in codes(src)  # a pinning reached from a loop, however many calls up, is not a one-off


@pytest.mark.parametrize("helper, step", [
    ("    h = torch.empty(1 << 20, pin_memory=True)\n    return h.to('cuda', non_blocking=True)",
     "allocated inside `upload()`, which drops it"),
    ("    return torch.empty(1 << 20, pin_memory=True)", "returned by `upload()`"),
])
def test_the_trace_says_whether_the_call_drops_or_returns_the_pinned_buffer(helper, step):
    """A helper that pins and drops a buffer was traced as "returned by" (nano-vllm's scheduler: the
    helpers returned the device tensor, a list, or None, never the pinned one)."""
    src = "import torch\ndef upload():\n" + helper + "\nfor _ in range(8):\n    d = upload()\n"
    [finding] = [f for f in findings(src) if f.code == "PIN002"]
    assert [s.message for s in finding.trace] == ["allocated here by `torch.empty`", step]


# ------------------------------------------------------------------ a pinned copy chosen by a flag
_ROW_CACHES = """
import torch

class RowCache:
    def __init__(self, weight: torch.Tensor, pin{default}):
        self.pin = pin
        self.weight = weight.pin_memory() if self.pin else weight

class Tables:
    def __init__(self, weights, pin):
        self.tables = []
        for w in weights:
            self.tables.append(RowCache(w{given}))
"""


@pytest.mark.parametrize("default, given", [
    ("=False", ""),           # the flag is off for every object made: nothing is pinned
    ("", ", pin"),            # a flag nothing names: what is pinned is kept in the object, in a list
    ("=True", ""),            # pinned, and kept in the object the loop stores
])
def test_a_pinned_copy_chosen_by_a_flag_and_kept_in_the_object_is_not_pin002(default, given):
    assert "PIN002" not in codes(_ROW_CACHES.format(default=default, given=given))


@pytest.mark.parametrize("flag, reported", [("True", True), ("False", False)])
def test_a_conditional_expression_with_a_known_test_runs_one_arm(flag, reported):
    src = f"""
import torch
def step(ts, dev):
    for t in ts:
        h = t.pin_memory() if {flag} else t
        h.to(dev, non_blocking=True)
"""
    assert bool(rows(src, "PIN002")) is reported


@pytest.mark.parametrize("use, reported", [
    ("tgt[begin:begin + 1024].copy_(tmp)", True),   # copies tmp's data, keeps no reference to it
    ("tgt.index_copy_(0, piece, tmp)", True),
    ("tgt.keep(tmp)", False),                       # a method nothing explains may keep it
])
def test_a_pinned_copy_per_iteration_handed_to_an_in_place_copy_is_pin002(use, reported):
    src = f"""
import torch
def index_copy(src, idx, tgt, chunk=50_000):
    for begin in range(0, idx.numel(), chunk):
        piece = idx.narrow(0, begin, chunk)
        tmp = src.index_select(0, piece).pin_memory()
        {use}
"""
    assert bool(rows(src, "PIN002")) is reported


@pytest.mark.parametrize("loop", [
    "for ds in datasets:\n        loader = make_loader(ds)\n        for batch in loader:\n            batch.cuda()",
    "loaders = tuple(make_loader(ds) for ds in datasets)",
    "for _ in range(3):\n        run(make_loader(datasets[0]))",
    "for _ in range(3):\n        embed(datasets[0])",   # a warm-up: the callee builds the loader and runs it
])
def test_building_a_pinning_dataloader_is_no_pinned_allocation(loop):
    # DataLoader(pin_memory=True) pins each batch in its own thread as it is iterated: a helper that
    # builds one, called in a loop (a warm-up, one loader per split), allocates nothing pinned there.
    src = f"""
    import torch
    from torch.utils.data import DataLoader
    def make_loader(ds):
        return DataLoader(ds, batch_size=8, pin_memory=True)
    def run(loader):
        for batch in loader:
            batch.cuda(non_blocking=True)
    def embed(ds):
        loader = make_loader(ds)
        return run(loader)
    def main(datasets):
        {loop}
    """
    assert "PIN002" not in codes(src)


def test_a_helper_returning_a_pinned_tensor_in_a_loop_still_is():
    src = """
    import torch
    def make_staging():
        return torch.empty(1 << 20, pin_memory=True)
    def main(steps):
        for _ in range(steps):
            h = make_staging()
            h.cuda(non_blocking=True)
    """
    assert rows(src, "PIN002") == [row_of(src, "h = make_staging()")]


def test_a_warm_up_loop_over_a_method_that_builds_and_runs_a_pinning_loader_is_quiet():
    src = """
    import torch
    from torch.utils.data import DataLoader
    def plain_loader(dataset, batch_size):
        return DataLoader(dataset, batch_size=batch_size, pin_memory=True)
    def run_loader(model, loader):
        outs = []
        for batch in loader:
            outs.append(model(batch.cuda()))
        return torch.cat(outs)
    class Embedder:
        def __init__(self, model):
            self.model = model
        def embed_dataset(self, dataset):
            loader = plain_loader(dataset, 8)
            return run_loader(self.model, loader)
        def warm_up(self, dataset):
            for _ in range(3):
                self.embed_dataset(dataset)
    """
    assert "PIN002" not in codes(src)


def test_a_pinned_copy_of_a_gather_of_a_tensor_nothing_places_is_per_iteration():
    # `src.index_select(...)` of a `torch.Tensor` parameter lives where src does (nothing says where):
    # its `.pin_memory()` copy in the chunk loop is still a pinned allocation per chunk.
    src = """
    import torch
    def copy_chunks(src: torch.Tensor, tgt: torch.Tensor, index, chunk):
        for begin in range(0, index.numel(), chunk):
            piece = index.narrow(0, begin, chunk)
            host = src.index_select(0, piece).pin_memory()
            tgt[begin:begin + chunk].copy_(host, non_blocking=True)
    """
    assert rows(src, "PIN002") == [row_of(src, "host = src.index_select")]


@pytest.mark.parametrize("loop, reported", [
    ("for fp8 in [True, False]:", False),          # a run per configuration: no one buffer to hoist
    ("for fp8 in (\"e4m3\", \"e5m2\"):", False),
    ("for fp8 in flags:", True),                   # what the loop goes over is not a list of settings
    ("for _ in range(4):", True),
    # nanoGPT's evaluation (survey 55 EE): a loop inside the configuration's repeats the call
    ("for fp8 in [True, False]:\n          for _ in range(200):", True),
    ("for fp8 in [True, False]:\n          for mode in ['a', 'b']:", False),
])
def test_a_helper_run_once_per_configuration_is_no_allocation_to_hoist(loop, reported):
    src = f"""
    import torch
    def export(weights, fp8):
        out = torch.empty(1 << 20, dtype=torch.uint8, pin_memory=True)
        out.copy_(weights, non_blocking=True)
        return out
    def test(weights, flags, fp8=False):
        {loop}
            result = export(weights, fp8)
            assert result.sum() > 0
    """
    assert ("PIN002" in codes(src)) is reported


_HANDED_TO_A_TASK = """
import collections
import threading
from concurrent.futures import ThreadPoolExecutor
import torch

def to_host(frames, stream):
    host = torch.empty(frames.shape, pin_memory=True)
    with torch.cuda.stream(stream):
        host.copy_(frames, non_blocking=True)
    return host

def write(host):
    return int(host.sum())

def pooled(stream, n):
    pending = collections.deque()
    with ThreadPoolExecutor(1) as pool:
        for _ in range(n):
            host = to_host(torch.rand(16, 720, device="cuda"), stream)
            pending.append(pool.submit(write, host))

def threaded(stream, n):
    for _ in range(n):
        host = to_host(torch.rand(16, 720, device="cuda"), stream)
        threading.Thread(target=write, args=(host,)).start()

def dropped(stream, n):
    for _ in range(n):
        host = to_host(torch.rand(16, 720, device="cuda"), stream)  # dropped
        stream.synchronize()
        write(host)
"""


def test_a_pinned_block_handed_to_a_task_outlives_its_iteration():
    """A per-chunk pinned block handed to a writer pool (`pool.submit(write, host)`, the futures kept
    in a deque: LightX2V's video writer, survey 17) or a thread is read iterations later: one
    hoisted buffer could not replace it. Dropped at the end of the iteration, it is PIN002."""
    assert rows(_HANDED_TO_A_TASK, "PIN002") == [row_of(_HANDED_TO_A_TASK, "# dropped")]


def test_a_tuple_sliced_with_constant_bounds_keeps_its_items():
    """TensorRT's cuda-python `cuda_call` returns `res[0] if len(res) == 1 else res` of `res =
    call[1:]`: a slice of cudart's `(err, ptr)` is `(ptr,)`, so the pinned pointer stays known, and
    the buffer appended to the returned list outlives the loop (segtrt, survey 18: a false PIN002).
    A per-iteration buffer dropped at the end of the iteration is still reported."""
    src = """
import numpy as np
from cuda import cudart
def cuda_call(call):
    err, res = call[0], call[1:]
    if err != cudart.cudaError_t.cudaSuccess:
        raise RuntimeError(f"CUDA error {err}")
    return res[0] if len(res) == 1 else res
class Pinned:
    def __init__(self, nbytes):
        self.ptr = cuda_call(cudart.cudaMallocHost(nbytes))
def allocate(specs):
    kept = []
    for size in specs:
        kept.append(Pinned(size))
    return kept
def churn(specs):
    for size in specs:
        ptr = cuda_call(cudart.cudaMallocHost(1 << 24))  # dropped
        cudart.cudaFreeHost(ptr)
"""
    assert rows(src, "PIN002") == [row_of(src, "# dropped")]


_OWNED = '''
import numpy as np
import pycuda.driver as cuda


class HostDeviceMem:
    def __init__(self, n):
        self.host = cuda.pagelocked_empty(n, np.float32)
        self.device = cuda.mem_alloc(self.host.nbytes)


class Engine:
    def __init__(self, sizes):
        self.inputs = []
        for n in sizes:
            self.inputs.append(HostDeviceMem(1 << 20))
        self.ring = [HostDeviceMem(1 << 20) for _ in range(4)]
        self.by_name = {}
        for name in ("a", "b"):
            self.by_name[name] = HostDeviceMem(1 << 20)


def allocate_buffers(names):
    inputs = []
    for name in names:
        mem = HostDeviceMem(1 << 20)
        inputs.append(mem)
    return inputs


def churn(frames, stream):
    for f in frames:
        mem = HostDeviceMem(1 << 20)  # per frame
        cuda.memcpy_htod_async(mem.device, mem.host, stream)
        stream.synchronize()


def run_once(stream):
    engine = HostDeviceMem(1 << 20)
    cuda.memcpy_htod_async(engine.device, engine.host, stream)
    stream.synchronize()


def per_configuration(configs, stream):
    for c in configs:
        run_once(stream)

'''


def test_pinned_memory_a_new_object_holds_lives_as_long_as_the_object():
    """A constructor that pins a buffer and keeps it on `self` (TensorRT's HostDeviceMem): built once
    per frame and dropped, it pins per frame (birefnet-trt, survey 18: a miss); appended, kept in a
    comprehension or stored in a dict, the objects outlive the loop (the binding set-up idiom). Built
    by a helper the loop calls (a test's engine per configuration: Megatron-LM), it is the helper's."""
    assert rows(_OWNED, "PIN002") == [row_of(_OWNED, "# per frame")]


def test_a_helper_built_engine_keeps_its_context_s_pinned_memory_its_own():
    """A test builds an inference engine per group through helpers (`_run_simple` -> `_build_engine`
    -> `Context(...)` pinning in its constructor, the context held by the engine): the construction
    is not written in the loop, so its pinned buffers stay the context's. (A guard: Megatron-LM's own
    test, where the per-object rule made a PIN002 mid-turn, needs more of its structure to show it;
    it was checked on the file itself.)"""
    src = """
import torch

class Context:
    def __init__(self, n):
        self.staging = torch.empty(n, pin_memory=True)

class Engine:
    def __init__(self, context):
        self.context = context

def build_engine(n):
    context = Context(n)
    return Engine(context)

def run_simple(n):
    engine = build_engine(n)
    return engine.context.staging.sum()

def test_groups(groups):
    for g in groups:
        run_simple(1 << 20)
"""
    assert rows(src, "PIN002") == []


def test_a_pinned_copy_of_a_tensor_of_python_numbers_each_step_is_not_pin002():
    # torchrec's _pin_and_move (survey 20): `move(torch.tensor([len(n) for n in names]), dev)` per
    # shard, the helper pinning with `.pin_memory()`; one number per Python object, from the pool
    src = """
    import numpy as np
    import torch

    def move(t, device):
        return t.pin_memory().to(device=device, non_blocking=True)

    def per_shard(shards, dev, arrays):
        out = []
        for names in shards:
            out.append(move(torch.tensor([len(n) for n in names]), dev))
        for a in arrays:
            out.append(move(torch.from_numpy(np.ones(1 << 20, np.float32)), dev))  # data
        return out
    """
    assert rows(src, "PIN002") == [row_of(src, "# data")]


def test_a_pinned_copy_kept_in_a_returned_dict_on_one_arm_of_a_device_test_is_not_pin002():
    # LightX2V's LoRA loader: `weights[name] = t.pin_memory() if t.device.type == "cpu" else t`, the
    # dict returned; on the else arm the tensor is on the GPU, and either way the buffers outlive the loop
    src = """
    import torch

    def load(names, alpha, device):
        weights = {}
        for name in names:
            t = torch.tensor(alpha, dtype=torch.float16, device=device)
            weights[name] = t.pin_memory() if t.device.type == "cpu" else t
        return weights

    def load_dropped(names, alpha, device):
        for name in names:
            t = torch.tensor(alpha, dtype=torch.float16, device=device)
            w = t.pin_memory() if t.device.type == "cpu" else t  # dropped
            w.to("cuda", non_blocking=True)
    """
    assert rows(src, "PIN002") == [row_of(src, "# dropped")]


_PER_CALL_BUFFERS = """
import numpy as np
from cuda import cudart


class HostDeviceMem:
    def __init__(self, nbytes):
        err, self.host_ptr = cudart.cudaMallocHost(nbytes)
        err, self.device = cudart.cudaMalloc(nbytes)
        self.nbytes = nbytes

    def free(self):
        cudart.cudaFreeHost(self.host_ptr)
        cudart.cudaFree(self.device)


def allocate_buffers(sizes):
    bufs = []
    for n in sizes:
        bufs.append(HostDeviceMem(n))
    return bufs


def run_one(sizes, stream):
    bufs = allocate_buffers(sizes)
    cudart.cudaMemcpyAsync(bufs[0].device, bufs[0].host_ptr, bufs[0].nbytes,
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
    cudart.cudaStreamSynchronize(stream)
    {after}


class Engine:
    def __init__(self):
        self.kept = []

    def main(self, images):
        err, stream = cudart.cudaStreamCreate()
        for image in images:
            run_one([3 << 22, 1 << 22], stream)  # per image
"""


@pytest.mark.parametrize("after, reported", [
    ("for b in bufs:\n        b.free()", True),     # birefnet (survey 18): made and freed per image
    ("return None", True),                          # dropped: a new pinned set per image all the same
    ("return bufs", True),                          # handed back to a caller that drops them
    ("ENGINE.kept.append(bufs)", False),            # kept beyond the iteration
])
def test_buffers_a_helper_returns_inside_objects_are_allocated_per_call(after, reported):
    src = "ENGINE = None\n" + _PER_CALL_BUFFERS.replace("{after}", after)
    found = rows(src, "PIN002")
    assert found == ([row_of(src, "# per image")] if reported else []), found


def test_pinned_allocations_inside_a_comprehension_in_a_loop():
    # nnU-Net (survey 22): `[t.pin_memory() for t in d.values()]` as a statement in a while loop keeps
    # nothing; a comprehension inside a loop used to stop the check with an internal error
    src = """
    import torch

    def batches(q):
        while not q.empty():
            d = q.get()
            [t.pin_memory() for t in d.values()]  # dropped
            yield d

    def uploads(ts, steps):
        for i in range(steps):
            out = [t.pin_memory().cuda(non_blocking=True) for t in ts]  # per step
        return out

    def kept(ts):
        return [t.pin_memory() for t in ts]
    """
    assert rows(src, "PIN002") == [row_of(src, "# dropped"), row_of(src, "# per step")]
    # no hoisting fix is offered inside a comprehension
    assert all(f.fix is None for f in findings(src) if f.code == "PIN002")


def test_an_engine_built_per_configuration_whose_parts_hold_pinned_memory_is_not_pin002():
    # Megatron-LM's prefix-caching test (survey 16): `_build_engine()` per group returns an engine whose
    # context's constructor pins its buffers; the helper returns a composite object, not an allocation
    src = """
    import torch

    class Context:
        def __init__(self, n):
            self.staging = torch.empty(n, pin_memory=True)

    class Engine:
        def __init__(self, n):
            self.context = Context(n)

    def build_engine(n):
        return Engine(n)

    def run_groups(groups):
        for g in groups:
            engine = build_engine(1 << 20)
            engine.context.staging.fill_(g)
    """
    assert rows(src, "PIN002") == []


@pytest.mark.parametrize("setup, loop, reported", [
    # FlexKV (survey 23): a module's list of sizes, the size reaching the helper through an object
    ("", "for blocks in BLOCK_COUNTS:\n        layout = Layout(blocks)", False),
    ("", "for blocks in BLOCK_COUNTS:\n        n = blocks * 2\n        layout = Layout(n)", False),
    ("", "for blocks in [64, 128]:\n        layout = Layout(blocks)", False),
    # a loop over data: the same size on each iteration, a buffer to hoist
    ("", "for blocks in batches:\n        layout = Layout(64)", True),
    ("", "for batch in batches:\n        layout = Layout(batch)", True),
    # the module's name is rebound elsewhere: not a fixed list of settings
    ("BLOCK_COUNTS = load()\n", "for blocks in BLOCK_COUNTS:\n        layout = Layout(blocks)", True),
])
def test_a_helper_run_per_configuration_through_an_object_made_from_it(setup, loop, reported):
    src = f"""
import torch

BLOCK_COUNTS = [64, 128, 256]
{setup}

class Layout:
    def __init__(self, blocks):
        self.shape = (8, blocks, 128)


def make_host_kv(layout):
    return torch.empty(layout.shape, dtype=torch.float16, pin_memory=True)


def bench(batches):
    {loop}
        host = make_host_kv(layout)  # call
        torch.empty(host.shape, device="cuda").copy_(host, non_blocking=True)
"""
    assert (rows(src, "PIN002") == [row_of(src, "# call")]) is reported, src



_COORDINATOR = """
import torch

def make_chunks(numel, count):
    return [torch.empty(numel, dtype=torch.float16, pin_memory=True) for _ in range(count)]

def make_blocks(numel, count):
    if numel == 0:
        return [torch.empty(0, pin_memory=True) for _ in range(count)]
    return make_chunks(numel, count)

class Coordinator:
    def __init__(self):
        self._ready = False

    def setup(self, like):
        if self._ready:
            return
        self._ready = True
        self.host_ckpt = make_blocks(like.numel(), 4)

class Eager(Coordinator):
    def __init__(self):
        super().__init__()
        self.host_ckpt = make_chunks(1 << 20, 4)

_COORD = Coordinator()
_LAZY = None

def get_coordinator():
    {getter}
"""

_BENCH = """
{imports}
def bench(step, iters):
    for _ in range(iters):
        out = step()
        get_coordinator().setup(out)  # call
"""


@pytest.mark.parametrize("getter, reported", [
    # FlexTrain (survey 25): the module's one coordinator, whose set-up pinned its buffers once
    ("return _COORD", False),
    ("global _LAZY\n    if _LAZY is None:\n        _LAZY = Eager()\n    return _LAZY", False),
    # a new coordinator per call, pinning in its constructor: per iteration
    ("return Eager()", True),
])
@pytest.mark.parametrize("modules", [1, 2])
def test_a_getter_of_a_module_level_object_allocates_nothing(tmp_path, getter, reported, modules):
    from test_interprocedural import _run_in_order
    library = _COORDINATOR.format(getter=getter)
    if modules == 1:
        src = library + _BENCH.format(imports="")
        path = write(tmp_path, "bench.py", src)
    else:
        write(tmp_path, "coord.py", library)
        src = _BENCH.format(imports="from coord import get_coordinator")
        path = write(tmp_path, "bench.py", src)
    found = [row for code, row in _run_in_order(tmp_path, [path])["bench.py"] if code == "PIN002"]
    call = path.read_text().splitlines().index("        get_coordinator().setup(out)  # call") + 1
    assert (found == [call]) is reported


_SWAP = """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

class Bench:
    def swap(self, n, n_stack=5):
        stream = drv.Stream()
        bufs = []
        for j in range(n_stack):
            bufs.append(drv.pagelocked_empty((16, n, n), np.complex64))
            bufs[-1][:] = 1
        dev = gpuarray.empty((16, n, n), np.complex64)
        for j in range(n_stack):
            drv.memcpy_htod_async(dev.gpudata, bufs[j], stream=stream)
        {end}

def main(bench):
    bench = Bench()
    for k in range(4):
        bench.swap(1024)  # call
"""


@pytest.mark.parametrize("end, pin002", [
    # PyNX (survey 25): five page-locked buffers collected in a local list, dropped at the return
    ("stream.synchronize()", True),
    ("pass", True),
    # returned, and dropped by the caller: allocated by the call, per iteration
    ("return bufs", True),
    # kept on the object: outliving the call (a cache the next call replaces)
    ("self.bufs = bufs", False),
])
def test_buffers_a_callee_collects_in_a_local_list_die_with_the_call(end, pin002):
    src = _SWAP.format(end=end)
    assert (rows(src, "PIN002") == [row_of(src, "# call")]) is pin002
    if end != "self.bufs = bufs":
        # each call writes buffers it has just allocated: no copy of an earlier call can be reading them
        assert "PIN006" not in codes(src)


@pytest.mark.parametrize("wrap", [
    "{}",
    "nn.Parameter({}.requires_grad_(True))",        # CLM (survey 26): the new parameter's storage
    "torch.nn.Parameter({})",
])
def test_a_pinned_tensor_kept_as_an_optimizer_parameter_outlives_the_loop(wrap):
    pinned = wrap.format('group["params"][0][keep].pin_memory()')
    src = f"""
import torch
from torch import nn

def shrink(opt, keep):
    kept = {{}}
    for group in opt.param_groups:
        group["params"][0] = {pinned}
        kept[group["name"]] = group["params"][0]
    return kept
"""
    assert "PIN002" not in codes(src), src
    dropped = src.replace('group["params"][0] = ', "tmp = ").replace('kept[group["name"]] = group["params"][0]', "print(tmp.shape)")
    assert rows(dropped, "PIN002") == [row_of(dropped, "tmp = ")], dropped


def test_a_parameter_of_a_gpu_tensor_is_on_the_gpu():
    src = """
import torch
from torch import nn

def init(n):
    w = nn.Parameter(torch.zeros(n, device="cuda"))
    h = torch.empty(n, pin_memory=True)
    h.copy_(w, non_blocking=True)
    print(h.sum())  # read
"""
    assert rows(src, "PIN005") == [row_of(src, "# read")]


@pytest.mark.parametrize("other, reported", [
    # lanenet_torch_onnx_trt (survey 26): the video loop's `if ret: ... else: break`
    ("else:\n            break", True),
    ("else:\n            print('done')\n            return", True),
    ("else:\n            raise StopIteration", True),
    # the iterations that skip the arm go on: it may be a set-up
    ("else:\n            continue", False),
    ("", False),
])
def test_an_if_whose_other_arm_leaves_the_loop_runs_on_every_iteration(other, reported):
    src = f"""
import numpy as np
import pycuda.driver as cuda

def frames(cap, n, dev):
    while cap.isOpened():
        ok, img = cap.read()
        if ok:
            res = cuda.pagelocked_empty(n, np.float32)  # pin
            cuda.memcpy_dtoh(res, dev)
            print(float(res.max()))
        {other}
"""
    assert (rows(src, "PIN002") == [row_of(src, "# pin")]) is reported


@pytest.mark.parametrize("loop, reported", [
    # makani (survey 26 tree): a test run once per (file, mode) pair
    ("for path, streaming in [(out_a, True), (out_b, False)]:", False),
    ("for path, streaming in pairs:", True),          # what the loop goes over is not a list of settings
])
def test_a_helper_run_once_per_tuple_of_settings(loop, reported):
    src = f"""
import torch

def make_buffer(path, streaming):
    store = torch.zeros(1 << 20, pin_memory=True)
    store.copy_(torch.ones(1 << 20, device="cuda"), non_blocking=True)
    return store.sum()

def test(out_a, out_b, pairs):
    {loop}
        total = make_buffer(path, streaming)  # call
"""
    assert (rows(src, "PIN002") == [row_of(src, "# call")]) is reported



_ONCE = """
import numpy as np
from numba import cuda

pairs = [np.full(1 << 16, k, np.float32) for k in range(16)]
for k in range(len(pairs)):
    left = pairs[k]
{skip}    with cuda.pinned(left):
        back = cuda.to_device(left).copy_to_host()
{tail}"""


@pytest.mark.parametrize("skip, tail, reported", [
    ("", "    break\n", False),                                  # one batch: the body never comes round
    ("", "    raise SystemExit(0)\n", False),
    ("", "    if k > 2:\n        break\n", True),                 # leaves only sometimes
    ("    if k == 0:\n        continue\n", "    break\n", True),  # a `continue` goes round again
    ("    for j in range(2):\n        continue\n", "    break\n", False),  # an inner loop's own
    ("", "", True),
])
def test_a_loop_whose_body_always_leaves_runs_it_once(skip, tail, reported):
    """A smoke test that registers one batch and breaks (a notebook of cosine-similarity): the
    registration happens once, as in straight-line code. A `continue` that goes back to the head
    makes it a loop again."""
    src = _ONCE.format(skip=skip, tail=tail)
    assert ("PIN002" in codes(src)) == reported, src


_EACH_OF_A_LIST = """
import numpy as np
from numba import cuda
import pycuda.driver as drv

def upload_all(bufs):
    for buf in bufs:
        {register}
            d = cuda.to_device(buf)

bufs = [np.random.rand(50000, 3).astype(np.float32) for _ in range(4)]
{caller}
"""


@pytest.mark.parametrize("register, caller, reported", [
    # Page-locked for one iteration each, on every call: at the call (the callee alone does not know
    # `bufs`), whether the call is in a loop or not.
    ("with cuda.pinned(buf):", "for frame in range(200):\n    upload_all(bufs)", True),
    ("with cuda.pinned(buf):", "upload_all(bufs)", True),
    ("with cuda.pinned(buf):", "for group in [bufs[:2], bufs[2:]]:\n    upload_all(group)", True),
    # Registered once each and kept registered: a set-up.
    ("drv.register_host_memory(buf)\n        if True:", "upload_all(bufs)", False),
    ("drv.register_host_memory(buf)\n        if True:", "for frame in range(200):\n    upload_all(bufs)", False),
])
def test_a_helper_that_registers_each_buffer_of_a_list_for_one_iteration(register, caller, reported):
    """simulib's frame loop calls a helper that does `with cuda.pinned(pts):` for each array of the
    same list: the arrays are page-locked and unlocked again on every call. The registration's
    argument follows the loop, as a size sweep's size does, which hid it."""
    src = _EACH_OF_A_LIST.format(register=register, caller=caller)
    found = findings(src)
    pin002 = [f for f in found if f.code == "PIN002"]
    assert bool(pin002) == reported, src
    if reported:
        calls = [i + 1 for i, line in enumerate(source(src).splitlines()) if "upload_all(" in line and "def " not in line]
        assert [f.location.row for f in pin002] == calls
        assert "register it once before the loop" in pin002[0].message


def test_a_with_block_registration_of_each_buffer_in_a_loop_is_reported_where_it_is():
    src = """
    import numpy as np
    from numba import cuda

    BUFS = [np.random.rand(50000, 3).astype(np.float32) for _ in range(4)]

    def upload_all():
        for buf in BUFS:
            with cuda.pinned(buf):
                d = cuda.to_device(buf)

    for frame in range(3):
        upload_all()
    """
    assert rows(src, "PIN002") == [row_of(src, "with cuda.pinned(buf)")]


@pytest.mark.parametrize("run, reported", [
    ("asyncio.run(self._gather(rows))", True),     # runs the coroutine to its end, now
    ("self._gather(rows)", False),                 # a coroutine made and not run here
])
def test_a_coroutine_run_to_its_end_allocates_at_the_runner(run, reported):
    """annbatch: each batch's rows are gathered by a coroutine into a fresh pinned buffer, run at once
    by a runner; the buffer is uploaded and dropped. As with a plain function, PIN002 at the call."""
    src = f"""
    import asyncio
    import cupy as cp
    import cupyx
    import numpy as np

    class Batches:
        def __init__(self, n):
            self.n = n

        async def _gather(self, rows):
            buf = cupyx.empty_pinned((len(rows), 16), np.float32)
            buf[:] = rows[:, None]
            return buf

        def __iter__(self):
            for rows in np.array_split(np.arange(self.n), 32):
                host = {run}
                yield cp.asarray(host)
    """
    assert (rows(src, "PIN002") == [row_of(src, "host = ")]) == reported


def test_asking_cupy_whether_memory_is_pinned_keeps_no_reference():
    """byteqc's shape: a pinned block made each iteration, handed to a helper that asks
    is_memory_pinned(a.ctypes.data) (a query, not a store) and uploads it: PIN002 at the allocation."""
    src = """
import cupy
import cupyx
import numpy as np

def host_view(a):
    if not cupy.cuda.pinned_memory.is_memory_pinned(a.ctypes.data):
        staged = cupyx.empty_pinned(a.shape, dtype=a.dtype)
        staged[...] = a
        return staged
    return a

def realify(groups, table):
    out = []
    for cols in groups:
        block = cupyx.empty_pinned((table.shape[0], 64), dtype=np.complex128)
        block[:] = table[:, cols]
        out.append(float(cupy.asarray(host_view(block)).sum()))
    return out
"""
    assert rows(src, "PIN002") == [row_of(src, "block = cupyx.empty_pinned")]


@pytest.mark.parametrize("make, reported", [("np.zeros(1 << 20)", False), ("cupyx.empty_pinned(1 << 20)", True)])
def test_is_memory_pinned_is_answered_from_what_the_memory_is(make, reported):
    """Only pinned memory takes the branch that uploads it asynchronously: with a pageable array the
    branch is dead, so there is no PIN001 there."""
    src = f"""
import cupy
import cupyx
import numpy as np

def send():
    d = cupy.empty(1 << 20)
    s = cupy.cuda.Stream(non_blocking=True)
    h = {make}
    if cupy.cuda.pinned_memory.is_memory_pinned(h.ctypes.data):
        d.set(h, stream=s)
        return True
    return False
"""
    assert ("PIN001" in codes(src)) is False
    assert bool(rows(src.replace("is_memory_pinned(h.ctypes.data)", "is_memory_pinned(h.ctypes.data) or True"),
                     "PIN001")) is not reported


@pytest.mark.parametrize("pick, reported", [
    ('device=f"cuda:{g}"', False),        # a buffer per GPU (and its memory node): nothing to hoist
    ("device=g", False),
    ('device="cuda"', True),              # the same device every time
])
def test_a_loop_over_gpus_gives_each_its_own_pinned_buffer(pick, reported):
    src = f"""
import torch

def h2d_per_gpu(gpu_ids, n, reps):
    res = {{}}
    for g in gpu_ids:
        src = torch.empty(n, dtype=torch.float32).pin_memory()
        dst = torch.empty(n, dtype=torch.float32, {pick})
        for _ in range(reps):
            dst.copy_(src, non_blocking=True)
        res[g] = float(dst[0])
    return res
"""
    assert bool(rows(src, "PIN002")) is reported, src


def test_a_wrapper_of_one_of_two_classes_kept_with_setattr_is_set_up():
    src = """
import torch

class WrappedCPU(torch.nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base
        self.x_cpu = torch.empty((1024, 64), pin_memory=True)

class WrappedGPU(torch.nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base

def wrap_all(model, mode):
    Layer = WrappedCPU if mode == "cpu" else WrappedGPU
    ops = ["q", "k", "v"]
    for layer in model.layers:
        for op in ops:
            setattr(layer, op, Layer(getattr(layer, op)))
    return model
"""
    assert rows(src, "PIN002") == []


@pytest.mark.parametrize("flag, reported", [
    ('lf = fmt\n        is_mx = lf == "mx"', True),     # settles to the same answer on every iteration
    ("is_mx = first\n        first = False", False),     # a flag the loop turns off after its test: set-up
])
def test_a_flag_the_loop_sets_from_an_unchanging_value_before_its_test(flag, reported):
    src = f"""
import torch

def convert_file(keys, fmt, first=True):
    out = {{}}
    for k in keys:
        {flag}
        t = torch.randn(4096, 4096)
        if is_mx:
            out[k] = t.pin_memory().to("cuda", non_blocking=True).sum().item()
    return out
"""
    assert bool(rows(src, "PIN002")) is reported, src


@pytest.mark.parametrize("size, reported", [
    ("rows = 4 ** lev", False),                 # a number computed from the loop's variable: a sweep
    ("rows = int(2 ** lev) * 3", False),
    ("rows = len(levels[lev])", True),          # read from data: the same size as far as the code says
    ("rows = 1024", True),
])
def test_a_size_computed_from_the_loops_variable_is_a_sweep(size, reported):
    src = f"""
import cupy
import cupyx

def sweep(levels, lo, hi, width):
    for lev in range(lo, hi + 1):
        {size}
        host = cupyx.zeros_pinned((rows, width))
        host[:] = cupy.zeros((rows, width)).get()
"""
    assert bool(rows(src, "PIN002")) is reported, src


_FILTERED = """
import torch
def run(names, loader, frames):
    cache, last, buf = {}, None, None
    LOOP
"""


@pytest.mark.parametrize("loop, reported", [
    # A filter on the element: the body under it runs for every matching element.
    ("for name in names:\n        if name.endswith('.png'):\n            h = torch.empty(1 << 20, pin_memory=True)"
     "\n            h.cuda(non_blocking=True)", True),
    ("for i, f in enumerate(frames):\n        if f.shape[0] > 3 and len(f) < 9:\n"
     "            h = torch.empty(1 << 20, pin_memory=True)\n            h.cuda(non_blocking=True)", True),
    # Lazy or one-time set-ups: the test reads what the set-up changes, or a counter.
    ("for i, batch in enumerate(loader):\n        if i == 0:\n            buf = torch.empty(1 << 20, pin_memory=True)"
     "\n        buf.copy_(batch)", False),
    ("for name in names:\n        if name not in cache:\n            cache[name] = torch.empty(1 << 20, pin_memory=True)",
     False),
    ("for it in frames:\n        if it != last:\n            last = it\n            h = torch.empty(1 << 20, pin_memory=True)"
     "\n            h.cuda(non_blocking=True)", False),
    ("for name in names:\n        if keep(name):\n            h = torch.empty(1 << 20, pin_memory=True)"
     "\n            h.cuda(non_blocking=True)", False),  # a function of the code: it may keep state
])
def test_a_filter_on_the_loops_element_is_no_lazy_set_up(loop, reported):
    src = _FILTERED.replace("LOOP", loop) + "def keep(name):\n    return name.startswith('a')\n"
    assert ("PIN002" in codes(src)) == reported


@pytest.mark.parametrize("made", ["    ins = []\n    outs = []\n", "    ins, outs = [], []\n",
                                  "    ins, outs, bindings = [], [], []\n"])
def test_holders_collected_in_lists_made_by_one_unpacking_are_the_calls_own(made):
    # TensorRT's `inputs, outputs, bindings = [], [], []`: lists the helper makes and returns, as
    # `inputs = []` is; a helper building them for every frame pins on every frame (survey 33).
    src = f"""
import numpy as np
import pycuda.driver as cuda

class Pair:
    def __init__(self, host, dev):
        self.host = host
        self.dev = dev

def make_io(n):
{made}    for i in range(2):
        h = cuda.pagelocked_empty(n, np.float32)
        (ins if i == 0 else outs).append(Pair(h, cuda.mem_alloc(h.nbytes)))
    return ins, outs

def main(frames, s):
    for f in frames:
        ins, outs = make_io(1 << 20)   # per frame
        cuda.memcpy_htod_async(ins[0].dev, ins[0].host, s)
        s.synchronize()
"""
    assert rows(src, "PIN002") == [row_of(src, "# per frame")]


@pytest.mark.parametrize("use, reported", [
    ("for img in images:\n            np.copyto(h, img)\n            cuda.memcpy_htod_async(d, h, s)", False),
    ("np.copyto(h, images[0])\n        cuda.memcpy_htod_async(d, h, s)", True),
])
def test_a_buffer_pinned_per_iteration_and_copied_in_an_inner_loop_is_spread_over_it(use, reported):
    # One pinning per model, sized by that model, a transfer per image (Ensemble-Model-Inference,
    # survey 33): the pinning's cost is spread over the inner loop's transfers. One transfer per
    # pinning stays reported.
    src = f"""
import numpy as np
import pycuda.driver as cuda
def main(models, images, s, d):
    for m in models:
        n = m.volume()
        h = cuda.pagelocked_empty(n, np.float32)   # pinned
        {use}
        s.synchronize()
"""
    assert rows(src, "PIN002") == ([row_of(src, "# pinned")] if reported else [])
    # Of the same making on every iteration (`pinned_array(1024)` per epoch), or sized by the iteration's
    # data rather than an object it builds (sam3_trt's per-batch outputs, survey 32): it could be made once.
    for same in (src.replace("cuda.pagelocked_empty(n, np.float32)", "cuda.pagelocked_empty(1 << 20, np.float32)"),
                 src.replace("n = m.volume()", "n = m['volume']")):
        assert rows(same, "PIN002") == [row_of(same, "# pinned")]


_CACHED = """
import numpy as np
import cupy as cp

def alloc_pinned(n):
    mem = cp.cuda.alloc_pinned_memory(n * 4)
    return np.frombuffer(mem, np.float32, n)

class Op:
    def __init__(self, n):
        self.n = n
        self._buf = None
    def _get(self, n):
        if GUARD:
            self._buf = alloc_pinned(n)
        return self._buf
    def run(self, x):
        buf = self._get(x.shape[0])
        buf[:] = x
        return buf

def main(xs, n):
    OUTSIDE
    for x in xs:
        INSIDE
        y = op.run(x)   # call
"""


def test_objects_made_in_a_loop_and_kept_keep_what_their_methods_pinned():
    # Sequoia's offload engine (survey 28's tree): `layer = Layer(i); layer.load(w); layers.append(layer)`.
    src = _CACHED.replace("GUARD", "self._buf is None").replace("OUTSIDE", "ops = []").replace(
        "INSIDE", "op = Op(n)").replace("        y = op.run(x)   # call", "        y = op.run(x)   # call\n        ops.append(op)")
    assert rows(src, "PIN002") == []


@pytest.mark.parametrize("guard", ["self._buf is None", "self._buf is None or self._buf.shape[0] != n"])
@pytest.mark.parametrize("made_in_loop", [False, True])
def test_a_cache_a_method_keeps_on_its_object_lives_as_long_as_the_object(guard, made_in_loop):
    # model_mosaic's operator (survey 34): built once before the loop, its method hands back a pinned
    # buffer cached on the object: no allocation per iteration. Built anew in the loop, the cache
    # goes with each object: pinned on every iteration.
    src = _CACHED.replace("GUARD", guard)
    src = src.replace("OUTSIDE", "pass" if made_in_loop else "op = Op(n)").replace(
        "INSIDE", "op = Op(n)" if made_in_loop else "pass")
    assert rows(src, "PIN002") == ([row_of(src, "# call")] if made_in_loop else [])


def test_an_object_the_loop_keeps_keeps_what_its_methods_pinned_even_after_it_moves():
    # UMbreLLa's layers (survey 20's tree): `layer.init_parameters(w)` pins the weights, `layer.to(dev)`
    # moves them, then `layers.append(layer)`: the object, and what it pinned, outlive the loop.
    src = """
import torch

class Layer:
    def __init__(self, i):
        self.i = i
        self.w = None
    def init_parameters(self, w):
        self.w = w.detach().pin_memory()
    def to(self, dev):
        self.w_dev = self.w.to(dev, non_blocking=True)
        self.w = None

def build(weights, dev):
    layers = []
    for i, w in enumerate(weights):
        layer = Layer(i)
        layer.init_parameters(w)   # call
        layer.to(dev)
        KEEP
    return layers
"""
    kept = src.replace("KEEP", "layers.append(layer)")
    assert rows(kept, "PIN002") == []
    dropped = src.replace("KEEP", "pass")
    assert rows(dropped, "PIN002") == [row_of(dropped, "# call")]


_REGISTERED_BY_A_HELPER = """
import numpy as np
from cuda.bindings import runtime as rt


def lock_each(arrays):
    for a in arrays:
        rt.cudaHostRegister(a.ctypes.data, a.nbytes, 0)


def lock(a):
    rt.cudaHostRegister(a.ctypes.data, a.nbytes, 0)


def work(n, stream):
    kept = np.empty(n, np.float32)
    held = []
    for i in range(100):
        {body}
        rt.cudaMemcpyAsync(0, x.ctypes.data, x.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
"""


@pytest.mark.parametrize("body, reported", [
    # A new buffer each iteration, page-locked in place by a helper given it (or a list holding it):
    # registered at the call, for one iteration.
    ("x = np.empty(n, np.float32)\n        lock(x)", True),
    ("x = np.empty(n, np.float32)\n        lock_each([x])", True),
    # Registered again on every iteration, as the same call written in the loop is reported.
    ("x = kept\n        lock(x)", True),
    # Kept beyond the iteration: a set-up.
    ("x = np.empty(n, np.float32)\n        lock(x)\n        held.append(x)", False),
    ("x = np.empty(n, np.float32)\n        lock_each([x])\n        held.append(x)", False),
])
def test_a_helper_that_registers_the_callers_buffer_in_place(body, reported):
    """`cudaHostRegister(a.ctypes.data, ...)` in a helper pins the caller's array, not memory of the
    helper's own: the registration is the caller's, at the call, of the buffer it made."""
    src = _REGISTERED_BY_A_HELPER.format(body=body)
    pin002 = [f for f in findings(src) if f.code == "PIN002"]
    assert bool(pin002) == reported, src
    if reported:
        assert "registration" in pin002[0].message and "lock" in pin002[0].message
        assert source(src).splitlines()[pin002[0].location.row - 1].strip().startswith("lock")


def test_objects_a_comprehension_builds_whose_constructor_registers_their_fields_are_kept():
    """A pool of slots built by a comprehension and kept, each slot's constructor page-locking its
    tensors through a helper looping over a list of them (PQCache's shared-memory sets): a set-up that
    runs once per slot, not a registration per use."""
    src = """
    import torch


    def lock_pages(tensors):
        rt = torch.cuda.cudart()
        for t in tensors:
            rt.cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)


    class Slot:
        def __init__(self, rows):
            self.table = torch.zeros([rows, 256], dtype=torch.float16).share_memory_()
            lock_pages([self.table])
            self.ids = torch.zeros([rows], dtype=torch.int64).share_memory_()
            lock_pages([self.ids])


    class Pool:
        def __init__(self, count, rows):
            self.slots = [Slot(rows) for _ in range(count)]

        def upload(self, i, dev):
            return self.slots[i].table.to(dev, non_blocking=True)


    pool = Pool(4, 1 << 14)
    for step in range(100):
        pool.upload(step % 4, "cuda")
    """
    assert codes(src) == []


def test_a_call_that_pins_several_buffers_for_the_iteration_is_one_finding():
    """cuda_sandbox's clean(): each call registers the arrays it is given and pins one of its own;
    called in a loop, that is one mistake at the call, naming how many buffers."""
    src = """
    import numpy as np
    import pycuda.driver as drv


    def clean(res, ker):
        res_pin = drv.register_host_memory(res)
        ker_pin = drv.register_host_memory(ker)
        out = drv.pagelocked_empty(res.shape, res.dtype)
        drv.memcpy_htod(0, res_pin)
        drv.memcpy_htod(0, ker_pin)
        drv.memcpy_dtoh(out, 0)
        return float(out[0])


    img = np.zeros(1 << 20, np.float32)
    ker = np.zeros(1 << 20, np.float32)
    for i in range(12):
        clean(img, ker)
    """
    pin002 = [f for f in findings(src) if f.code == "PIN002"]
    assert len(pin002) == 1
    assert "(and 2 more pinned buffers through this call)" in pin002[0].message
    assert source(src).splitlines()[pin002[0].location.row - 1].strip() == "clean(img, ker)"


_ACCESSOR = """
import torch


class Storage:
    def __init__(self):
        self._table = {{}}

    def store(self, key, k):
        self._table[key] = k.cpu().pin_memory()

    @property
    def table(self):
        return self._table

    def snapshot(self, key, k):
        return {{key: k.cpu().pin_memory()}}


class Manager:
    def __init__(self):
        self._dram = Storage()

    def offload(self, key, k):
        self._dram.store(key, k)

    @property
    def _dram_table(self):
        return self._dram.table


class Cache:
    def __init__(self):
        self._manager = None

    def _ensure_manager(self):
        if self._manager is not None:
            return self._manager
        self._manager = Manager()
        return self._manager

    def update(self, key, k):
        self._ensure_manager().offload(key, k)

    @property
    def dram_table(self):
        if self._manager is None:
            return {{}}
        return self._manager._dram_table


class Engine:
    def __init__(self, model, cache: Cache):
        self.model = model
        self.cache = cache

    def prefill(self, x, chunks, storage: Storage):
        for part in chunks:
            self.model(part, self.cache)
            print(len(self.cache.dram_table))
            {extra}
"""


def test_a_property_handing_back_what_its_object_holds_allocates_nothing_at_the_call():
    # Hetero-KVCache-Optimizer (survey 40): `len(self.cache.dram_table)` in a chunk loop, a @property chain
    # returning the storage's dict of pinned entries, was a pinned allocation "used for one iteration only".
    assert codes(_ACCESSOR.format(extra="")) == []


def test_a_method_returning_a_new_pinned_buffer_each_call_is_still_one():
    src = _ACCESSOR.format(extra="s = storage.snapshot(0, x)\n        s[0].to('cuda', non_blocking=True)")
    assert rows(src, "PIN002") == [row_of(src, "s = storage.snapshot")]


def test_a_call_pinning_several_buffers_names_the_same_one_whatever_order_they_come_in(monkeypatch):
    """The events of one call come in an order that followed the hash seed (survey 41: the same
    finding named `DataLoader` in one run and `make_loaders()` in the next): the message names the
    first pinning in the code."""
    from pinlint.checks.pin002 import PinnedAllocInLoop
    src = """
    import numpy as np
    import pycuda.driver as drv


    def clean(res):
        res_pin = drv.register_host_memory(res)
        out = drv.pagelocked_empty(res.shape, res.dtype)
        drv.memcpy_htod(0, res_pin)
        drv.memcpy_dtoh(out, 0)
        return float(out[0])


    img = np.zeros(1 << 20, np.float32)
    for i in range(12):
        clean(img)
    """
    found = PinnedAllocInLoop._found
    messages = []
    for order in (list, lambda items: list(reversed(items))):
        monkeypatch.setattr(PinnedAllocInLoop, "_found", lambda self, facts, ctx, order=order: iter(order(list(found(self, facts, ctx)))))
        messages.append([f.message for f in findings(src) if f.code == "PIN002"])
    assert len(messages[0]) == 1 and "(and 1 more pinned buffer through this call)" in messages[0][0]
    assert messages[0] == messages[1]


_LOADER_HELPER = """
import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(3, 256, 256), torch.rand(1, 256, 256)


class Trainer:
    def __init__(self):
        {setup}

    def make_loaders(self):
        self.main = DataLoader(Frames(), batch_size=8, pin_memory=True)
        self.extra = DataLoader(Frames(), batch_size=8, pin_memory=True)

    def next_extra(self):
        try:
            batch = next(self.extra_iter)
        except StopIteration:
            self.extra_iter = iter(self.extra)
            batch = next(self.extra_iter)
        return batch

    def train(self):
        for x, y in self.main:
            {fetch}
            (x.to("cuda", non_blocking=True) * y.to("cuda", non_blocking=True)).sum()


Trainer().train()
"""


@pytest.mark.parametrize("setup", ["self.make_loaders()", "self.make_loaders(); self.extra_iter = iter(self.extra)"])
def test_a_loader_batch_handed_on_by_a_helper_is_no_pinning_of_the_call(setup):
    """RobustVideoMatting: loaders made in a method `__init__` calls, a batch fetched through a helper's
    `next()`: the loader pinned it, as in `for x, y in loader`."""
    assert codes(_LOADER_HELPER.format(setup=setup, fetch="x, y = self.next_extra()")) == []


def test_a_helper_pinning_a_batch_itself_is_still_reported():
    # Of a loader that leaves its batches pageable, `x.pin_memory()` copies each one into a new pinned
    # block; of one that pins them (pin_memory=True), PyTorch returns the tensor as it is.
    src = _LOADER_HELPER.format(setup="self.make_loaders()",
                                fetch="x, y = self.next_extra(); x = x.pin_memory()")
    pageable = src.replace("self.extra = DataLoader(Frames(), batch_size=8, pin_memory=True)",
                           "self.extra = DataLoader(Frames(), batch_size=8)")
    assert codes(pageable) == ["PIN002"]
    assert codes(src) == []


def test_pinned_memory_kept_through_an_int_address_is_not_dropped():
    # A helper pins with cudaHostAlloc, hands back `int(ptr)`, and the set-up loop views it as an array
    # (`from_address`) kept in a dict on the object: nothing is dropped per iteration (YoloPX_ros2's
    # runner, survey 43: int() lost the address's memory, and each call looked like a pinned drop).
    src = source("""
        import ctypes
        import numpy as np
        from cuda import cudart


        def pin_bytes(nbytes):
            err, raw = cudart.cudaHostAlloc(nbytes, 0)
            return int(raw)


        def pinned_vector(count):
            nbytes = count * 4
            addr = pin_bytes(nbytes)
            block = (ctypes.c_uint8 * nbytes).from_address(addr)
            return np.ctypeslib.as_array(block).view(np.float32), addr


        class Bindings:
            def __init__(self, names, count):
                self.host = {}
                self.addrs = {}
                for name in names:
                    vec, addr = pinned_vector(count)
                    self.host[name] = vec
                    self.addrs[name] = addr
        """)
    assert codes(src) == []
    dropped = src.replace("self.addrs[name] = addr", "pass").replace("self.host[name] = vec", "print(vec.sum())")
    assert codes(dropped) == ["PIN002"]


@pytest.mark.parametrize("pin, reported", [
    ("", True),                              # pageable batches: each step pins a copy
    ("pin_memory=False, ", True),
    ("pin_memory=True, ", False),            # already pinned: `.pin_memory()` is the tensor itself
    ("pin_memory=args.pin_memory, ", False),  # pinned or not: nothing here says
])
def test_pin_memory_of_a_loader_batch_copies_only_what_the_loader_left_pageable(pin, reported):
    # unsloth-zoo's training step (survey 43): `batch["input_ids"].pin_memory()` of a loader whose
    # pin_memory= comes from the caller's training arguments (Hugging Face's default is True).
    src = source(f"""
        import torch
        from torch.utils.data import DataLoader


        def train(model, dataset, collate, args, opt):
            it = iter(DataLoader(dataset, batch_size=8, {pin}collate_fn=collate))
            for step in range(args.steps):
                batch = next(it)
                ids = batch["input_ids"].pin_memory().to("cuda:0", non_blocking=True)
                model(ids).sum().backward()
        """)
    assert rows(src, "PIN002") == ([row_of(src, ".pin_memory()")] if reported else [])


@pytest.mark.parametrize("argument, reported", [
    ("net.device", True),          # the same device on every call of the loop
    ("devices[start % 2]", False),  # another device from one iteration to the next
    ("None if start else net.device", False),
])
def test_a_helper_pinning_under_a_test_of_a_parameter_the_loop_passes_unchanged(argument, reported):
    # facemap's pose batches (survey 44): `prepare(im, device=net.device)` per batch, the helper pinning
    # under `if device is not None:` / `if device.type != "cpu":`; the test answers alike on every call.
    src = source(f"""
        import numpy as np
        import torch


        def prepare(im, device=None):
            if device is not None:
                im = torch.from_numpy(im)
                if device.type != "cpu":
                    im = im.pin_memory()
                im = im.to(device, dtype=torch.float32)
            return im


        def run(net, reader, total, batch, devices):
            start = 0
            while start != total:
                end = min(start + batch, total)
                imall = np.array([reader.read(i) for i in range(start, end)])
                x = prepare(imall, device={argument})
                net(x)
                start = end
        """)
    assert rows(src, "PIN002") == ([row_of(src, "x = prepare")] if reported else [])


@pytest.mark.parametrize("test, argument, reported", [
    ('"cuda" in torch.device(device).type', "device", True),   # llm-baselines' get_batch (survey 51 AW)
    ('torch.device(device).type == "cuda"', "device", True),
    ('str(device) == "cuda"', "device", True),
    ('"cuda" in torch.device(device).type', "devices[step % 2]", False),  # another device each time
    ('"cuda" in pick(device).type', "device", False),  # a function of the code: it may keep state
])
def test_a_pure_call_on_a_parameter_the_loop_passes_unchanged_answers_alike(test, argument, reported):
    src = source(f"""
        import numpy as np
        import torch


        def pick(device):
            return torch.device(device)


        def get_batch(data, device="cpu"):
            x = torch.from_numpy(data[:64].astype(np.int64))
            if {test}:
                x = x.pin_memory().to(device, non_blocking=True)
            return x


        def train(data, device, devices):
            for step in range(1000):
                x = get_batch(data, device={argument})
        """)
    assert rows(src, "PIN002") == ([row_of(src, "x = get_batch")] if reported else [])


@pytest.mark.parametrize("offsets, reported", [
    ("np.zeros((1000, 64))", True),    # a NumPy array: every call takes the arm and pins a slice
    ("torch.zeros(1000, 64)", False),  # a tensor: the arm is never taken
])
def test_a_pinning_only_the_callers_argument_decides_is_reported_at_the_caller(offsets, reported):
    # suite2p's registration (survey 44): a helper of the batch loop pins its argument under
    # `if isinstance(off, np.ndarray):`; only the caller's argument says the arm is taken, on every call.
    src = source(f"""
        import numpy as np
        import torch


        def apply_shifts(frames, off, device):
            if isinstance(off, np.ndarray):
                off = torch.from_numpy(off).pin_memory().to(device)
            return frames + off.mean()


        def shift_all(movie, offsets, batch, device):
            for t0 in range(0, 1000, batch):
                apply_shifts(movie, offsets[t0:t0 + batch], device)


        def register(movie, device):
            offsets = {offsets}
            shift_all(movie, offsets, 100, device)
        """)
    found = findings(src)
    assert [(f.code, f.location.row) for f in found] == \
        ([("PIN002", row_of(src, "shift_all(movie, offsets, 100"))] if reported else [])
    if reported:
        assert "and 1 more" not in found[0].message


@pytest.mark.parametrize("made, reported", [
    ("np.random.rand(1000, 1000)", True),  # always an array: the test takes its arm on every iteration
    ("frames[i]", False),                  # anything: perhaps a lazy set-up
])
def test_an_if_the_analysis_finds_constant_in_the_loop_runs_every_iteration(made, reported):
    src = source(f"""
        import numpy as np
        import torch


        def run(frames, device):
            for i in range(100):
                x = {made}
                if isinstance(x, np.ndarray):
                    x = torch.from_numpy(x).pin_memory()
                y = x.to(device, non_blocking=True)
        """)
    assert rows(src, "PIN002") == ([row_of(src, ".pin_memory()")] if reported else [])


def test_a_lazy_set_up_behind_a_type_test_stays_quiet():
    # `if not isinstance(buf, torch.Tensor):` with `buf = None` before the loop: the first iteration
    # allocates, the others find the tensor; the arm's own state remembers only the first iteration.
    src = source("""
        import torch


        def run(frames, device):
            buf = None
            for i in range(100):
                if not isinstance(buf, torch.Tensor):
                    buf = torch.empty(1000, 1000, pin_memory=True)
                buf.copy_(frames[i])
                y = buf.to(device, non_blocking=True)
        """)
    assert rows(src, "PIN002") == []


@pytest.mark.parametrize("test, reset, reported", [
    ("self.msg is not None", "self.msg = None", True),     # a polling loop: each new frame pins anew
    ("self.ready", "self.ready = False", True),
    ("self.msg is not None", "self.count += 1", True),     # the loop never changes the test: every time
    ("self.msg is None", "self.msg = 0", False),           # a set-up's flag, set the other way once
])
def test_a_polling_arm_that_clears_its_flag_runs_on_every_frame(test, reset, reported):
    # depth_anything_ros (survey 50 AH): `while not rospy.is_shutdown(): if self.image_msg is not
    # None: ...pagelocked_empty... ; self.image_msg = None`, the callback setting it for each frame.
    src = f"""
import numpy as np
import pycuda.driver as cuda


class Node:
    def __init__(self):
        self.msg = None
        self.ready = False
        self.count = 0

    def spin(self, d_in):
        while True:
            if {test}:
                h_in = cuda.pagelocked_empty(1 << 22, dtype=np.float32)
                np.copyto(h_in, np.asarray(self.msg, dtype=np.float32).ravel())
                cuda.memcpy_htod(d_in, h_in)
                {reset}

    def on_image(self, m):
        self.msg = m
        self.ready = True
"""
    assert rows(src, "PIN002") == ([row_of(src, "h_in = cuda.pagelocked_empty")] if reported else [])


@pytest.mark.parametrize("pool", ["cp.get_default_pinned_memory_pool()", "cp.cuda.PinnedMemoryPool()"])
def test_a_block_of_cupys_pinned_pool_taken_per_iteration_is_pin002(pool):
    # learning_tools (survey 50 Z): `cp.get_default_pinned_memory_pool().malloc(nbytes)`, the call
    # `alloc_pinned_memory` makes, viewed with np.frombuffer.
    src = f"""
import numpy as np
import cupy as cp

N = 4096
d = cp.empty((N, N), dtype=cp.float64)
s = cp.cuda.Stream(non_blocking=True)
pool = {pool}
for i in range(10):
    mem = pool.malloc(N * N * 8)
    h = np.frombuffer(mem, dtype=np.float64, count=N * N).reshape(N, N)
    h[:] = i
    d.set(h, stream=s)
    s.synchronize()
"""
    f = only(src, "PIN002")
    assert f.location.row == row_of(src, "mem = pool.malloc") and "`PinnedMemoryPool.malloc`" in f.message


@pytest.mark.parametrize("body, reported", [
    ("x = torch.randn(n, 1024)\n        p = x.pin_memory()", False),    # a size sweep: no one buffer to hoist
    ("p = torch.randn(n, 1024).pin_memory()", False),
    ("x = torch.randn(4096, 1024)\n        p = x.pin_memory()", True),  # the same size every time
])
def test_pin_memory_of_a_tensor_sized_by_the_sweep_is_no_buffer_to_hoist(body, reported):
    # thesis's transfer benchmark (survey 49 U): `for n in sizes: x = torch.randn(n, d); x.pin_memory()`.
    src = f"""
import torch


def bench(sizes):
    for n in sizes:
        {body}
        d = p.cuda(non_blocking=True)
        torch.cuda.synchronize()
"""
    assert ("PIN002" in codes(src)) == reported


@pytest.mark.parametrize("call, reported", [
    ("sample(self.tokens, 32, 256, device=str(self.device))", True),            # use_pin left at True
    ("sample(self.tokens, 32, 256, device=str(self.device), use_pin=True)", True),
    ("sample(self.tokens, 32, 256, device=str(self.device), use_pin=False)", False),
    ("sample(self.tokens, 32, 256, device=str(self.device), use_pin=flags[k])", False),  # may change per call
])
def test_a_flag_left_at_its_default_is_the_same_on_every_call(call, reported):
    # assignment1-basics (survey 53 CC): a batch sampler pins under `if use_pin and device == "cuda":`,
    # `use_pin=True` by default, and the evaluation loop leaves it out.
    src = f"""
import numpy as np
import torch


def sample(tokens, rows, width, device="cuda", use_pin: bool = True):
    xb = np.empty((rows, width), dtype=np.int64)
    if use_pin and device == "cuda":
        out = torch.from_numpy(xb).pin_memory().to(device=device, non_blocking=True)
    else:
        out = torch.from_numpy(xb).to(device=device)
    return out


class Evaluator:
    def __init__(self, path, device):
        self.tokens = np.load(path, mmap_mode="r")
        self.device = torch.device(device)

    def evaluate(self, net, n, flags):
        total = 0.0
        for k in range(n):
            xb = {call}  # the call
            total += net(xb).float().mean().item()
        return total / n
"""
    assert (row_of(src, "# the call") in rows(src, "PIN002")) is reported, src


@pytest.mark.parametrize("bind, reported", [
    ("loader = None\n    if packing:\n        loader = Packer(rows, width)", True),
    ("loader = Packer(rows, width) if packing else None", True),
    ("loader = Packer(rows, width)", True),
    ("loader = None", False),
])
def test_an_object_or_none_runs_its_methods_where_they_are_called(bind, reported):
    # nanogpt-titans (survey 53 CC): the packing loader is None unless a setting asks for it, and
    # the training loop calls `loader.get_batch()`, which pins a new tensor each step.
    src = f"""
import torch


class Packer:
    def __init__(self, rows, width):
        self.rows, self.width = rows, width

    def get_batch(self):
        ids = torch.zeros(self.rows, self.width, dtype=torch.long)
        return ids.pin_memory().to("cuda", non_blocking=True)


def main(net, packing, rows, width):
    {bind}
    for _ in range(100):
        ids = loader.get_batch()  # the call
        if loader is not None:
            net(ids).sum().backward()
"""
    assert (row_of(src, "# the call") in rows(src, "PIN002")) is reported, src


@pytest.mark.parametrize("given, reported", [
    ('[{"height": 200}]', False),                      # one item: every loop over what it builds runs once
    ('[{"height": 200}, {"height": 100}]', True),
    ("settings", True),                                # a list nothing here sizes
])
@pytest.mark.parametrize("inline", [False, True])
def test_a_list_built_from_a_one_item_list_has_one_item(given, reported, inline):
    # BEVFormer_tensorrt's plugin tests (survey 53 CA): a helper appends one model per entry of the
    # one-item parameter list its caller gives; each test then loops over the models, allocating
    # pinned output buffers on each (once, as there is one).
    build = f"""
    models = []
    for param in {given}:
        models.append({{"param": param}})
""" if inline else f"""
    models = build({given})
"""
    src = f"""
import numpy as np
import pycuda.driver as cuda


def build(params):
    out = []
    for p in params:
        out.append({{"param": p}})
    return out


def run(settings):
{build}
    for m in models:
        out = cuda.pagelocked_empty((1024, 1024), np.float32)  # the allocation
        cuda.memcpy_dtoh(out, m["param"])
"""
    assert (row_of(src, "# the allocation") in rows(src, "PIN002")) is reported, src


@pytest.mark.parametrize("own_init, params, reported", [
    ("unittest.TestCase.__init__(self, *args, **kwargs)", '[{"height": 200}]', False),
    ("unittest.TestCase.__init__(self, *args, **kwargs)", '[{"height": 200}, {"height": 100}]', True),
    # handed on to the base's constructor (the next in the order), which then also runs with no list
    ("super().__init__(*args, **kwargs)", '[{"height": 200}]', True),
    (None, '[{"height": 200}]', True),             # the base's constructor is the class's own
])
def test_a_base_constructor_run_only_by_name_runs_with_what_it_is_given(own_init, params, reported):
    # BEVFormer_tensorrt's plugin tests (survey 53 CA, 47 of its false findings): each test class's own
    # constructor calls only unittest's, and `setUp` runs the base's `__init__` by name with a one-item
    # list of parameters; the base's `__init__` on its own (params=None gives [{}], any list otherwise)
    # is not what the test objects got.
    init = f"""
    def __init__(self, *args, **kwargs):
        {own_init}
""" if own_init else ""
    src = f"""
import unittest

import numpy as np
import pycuda.driver as cuda


class BaseCase:
    def __init__(self, name, params=None):
        if params is None:
            params = [{{}}]
        self.name = name
        self.models = self.create_models(params)

    def create_models(self, params):
        models = []
        for param in params:
            models.append({{"param": param}})
        return models

    def engine_forward(self, dic):
        out = cuda.pagelocked_empty((1024, 1024), np.float32)
        cuda.memcpy_dtoh(out, dic["param"])
        return out


class GridCase(BaseCase, unittest.TestCase):
{init}
    def setUp(self):
        BaseCase.__init__(self, "grid", params={params})

    def test_fp32(self):
        for dic in self.models:
            out = self.engine_forward(dic)  # the call
            self.assertTrue(out.any())
"""
    assert (row_of(src, "# the call") in rows(src, "PIN002")) is reported, src


@pytest.mark.parametrize("kept", ["host[0]", "keep(host[0])", "torch.as_tensor(host[i])"])
def test_a_kept_row_of_a_pinned_tensor_keeps_it_alive(kept):
    """``t[0]`` of a torch tensor is a view (a row, or a 0-d tensor) whatever its dimensions: storing
    it keeps the pinned block (4K4D's per-frame pinned cache, survey 56 FD)."""
    src = f"""
    import torch
    from torch import nn
    def keep(t):
        return nn.Parameter(torch.as_tensor(t), requires_grad=False)
    class FrameCache(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.store = [None for _ in range(n)]
        def fill(self, frames):
            for i in range(len(self.store)):
                host = frames[i].cpu().pin_memory()
                self.store[i] = {kept}
    """
    assert codes(src) == []
    assert codes(src.replace(f"self.store[i] = {kept}", "print(host[0])")) == ["PIN002"]


def test_a_non_blocking_download_a_helper_returns_is_no_pinned_allocation_of_the_code():
    """``t.to("cpu", non_blocking=True)`` makes its own pinned destination (PyTorch's host pool),
    in a helper as inline (mini-sglang's overlap scheduler, survey 56 FA: 3 false PIN002)."""
    src = """
    import torch
    def fetch(x):
        return (x * 2).to("cpu", non_blocking=True)
    def with_helper(n):
        x = torch.randn(1024, device="cuda")
        for _ in range(n):
            y = fetch(x)
            torch.cuda.synchronize()
            print(y.sum())
    def inline(n):
        x = torch.randn(1024, device="cuda")
        for _ in range(n):
            y = (x * 2).to("cpu", non_blocking=True)
            torch.cuda.synchronize()
            print(y.sum())
    """
    assert codes(src) == []
    pinned = src.replace('return (x * 2).to("cpu", non_blocking=True)', 'return (x * 2).cpu().pin_memory()')
    assert rows(pinned, "PIN002") == [row_of(pinned, "y = fetch(x)")]


@pytest.mark.parametrize("skip, reported", [
    ('if name == "pinned": continue', False),      # the only pinning entry is skipped
    ('if name != "pinned": continue', True),       # only the pinning entry runs
    ('if name in ("pinned",): continue', False),
    ('if name == "other": continue', True),
    ("pass", True),
])
def test_a_test_of_a_loops_key_says_which_entry_its_value_is(skip, reported):
    """``for name, alloc in allocators.items(): if name == "pinned": continue`` (a benchmark skipping
    its baseline, survey 56 FG): past the test, ``alloc`` is one of the other entries."""
    src = f"""
    import torch
    def pinned(shape):
        return torch.zeros(shape, pin_memory=True)
    def plain(shape):
        return torch.zeros(shape)
    def measure(alloc, shape, rounds=5):
        for _ in range(rounds):
            buf = alloc(shape)
            buf.to("cuda")
            torch.cuda.synchronize()
    def main():
        allocators = {{"pinned": pinned, "other": plain}}
        for name, alloc in allocators.items():
            {skip}
            measure(alloc, (1024, 1024, 256))
    """
    assert codes(src) == (["PIN002"] if reported else [])


@pytest.mark.parametrize("made", ["[torch.tensor([i, n], pin_memory=True) for i in range(n)]",
                                  "{i: torch.tensor([i], pin_memory=True) for i in range(n)}",
                                  "sum(torch.tensor([i], pin_memory=True).sum() for i in range(n))"])
def test_a_pinned_literal_in_a_comprehension_is_checked_without_error(made):
    """A comprehension is a loop too (the list-display check once read a `for` statement's body)."""
    src = f"""
    import torch
    def make(n):
        return {made}
    """
    codes(src)  # analysed without an internal error


@pytest.mark.parametrize("override, reported", [
    ('exec(open("configurator.py").read())', True),   # may set use_trace = True
    ("", False),                                       # False: the arm never runs
])
def test_a_module_flag_a_configurator_may_override(override, reported):
    """nanoGPT's configurator idiom (survey 57 GC, Adam-mini's bench.py): ``exec(open(...).read())``
    after the module's settings may set any of them, so ``use_trace = False`` prunes no arm."""
    src = f"""
import torch

steps = 10
use_trace = False
{override}


def next_pair(n):
    a = torch.randint(0, 50000, (n, n))
    return a.pin_memory().to("cuda", non_blocking=True)


if use_trace:
    for i in range(steps):
        u = next_pair(512)  # traced
else:
    for i in range(steps):
        v = next_pair(512)  # plain
"""
    expected = [row_of(src, "# traced")] if reported else []
    assert rows(src, "PIN002") == expected + [row_of(src, "# plain")]


def test_a_function_or_a_lambda_that_computes_nothing_is_still_the_function_where_called():
    """``def get_batch`` on one arm, ``get_batch = lambda split: (x, y)`` on the other: a call in a loop
    runs the function's pinning on the path where it is the function (nanoGPT's bench.py)."""
    src = """
import sys
import torch

if sys.argv[1] == "real":
    def get_batch(n):
        x = torch.randint(0, 5, (n, n))
        return x.pin_memory().to("cuda", non_blocking=True)
else:
    x0 = torch.zeros(3, device="cuda")
    get_batch = lambda n: x0

for k in range(10):
    X = get_batch(512)
"""
    assert rows(src, "PIN002") == [row_of(src, "X = get_batch(512)")]


@pytest.mark.parametrize("binding, reported", [
    ("    sweep = [32, 64, 128, 256]", False),          # a sweep list bound in the script's main block
    ("    if torch.cuda.is_available():\n        sweep = [32, 64, 128, 256]\n    else:\n        print('no GPU')", False),
    ("    sweep = [32, 64, 128, 256]\n    sweep = json.load(f)", True),   # bound twice: nothing says which
    ("    sweep = json.load(f)", True),
])
def test_a_size_sweep_list_bound_in_the_main_block(binding, reported):
    """Sparse-vLLM's bandwidth probe (survey 57 GH): ``sweep = [32, 64, ...]`` inside ``if __name__ ==
    "__main__":``, then ``for mb in sweep: probe(size_mb=mb)``: one run per configuration."""
    src = f"""
import json
import torch

f = open("sizes.json")


def probe(size_mb=256):
    count = size_mb * (1 << 20) // 4
    host = torch.randn(count, dtype=torch.float32).pin_memory()
    dst = torch.empty(count, dtype=torch.float32, device="cuda")
    dst.copy_(host, non_blocking=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
{binding}
    for mb in sweep:
        probe(size_mb=mb)
"""
    assert ("PIN002" in codes(src)) == reported
