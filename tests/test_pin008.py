"""PIN008 pinned-for-single-transfer: a buffer pinned outside any loop, copied once, then dropped."""

from __future__ import annotations

import pytest

from pinlint.settings import Settings
from helpers import findings, only, row_of, rows, source

# ------------------------------------------------------------------ one bad and one good program per library
BAD = {
    "cupy": ("""
        import numpy as np, cupy as cp, cupyx
        def upload(data):
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            h[:] = data
            d = cp.asarray(h)
            return d
        """, "cupyx.empty_pinned", "cp.asarray(h)"),
    "cupy-raw": ("""
        import numpy as np, cupy as cp
        def upload():
            mem = cp.cuda.alloc_pinned_memory(1 << 26)
            h = np.frombuffer(mem, np.float32, 1 << 24)
            d = cp.empty(1 << 24, dtype=np.float32)
            d.set(h)
            return d
        """, "alloc_pinned_memory", "d.set(h)"),
    "numba-array": ("""
        import numpy as np
        from numba import cuda
        def download(d):
            h = cuda.pinned_array(1 << 24, dtype=np.float32)
            dev = cuda.device_array(1 << 24, dtype=np.float32)
            dev.copy_to_host(h)
            return float(h.sum())
        """, "cuda.pinned_array", "dev.copy_to_host(h)"),
    "pycuda": ("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        def upload(d):
            h = drv.pagelocked_empty(1 << 24, np.float32)
            h.fill(1)
            drv.memcpy_htod(d, h)
        """, "pagelocked_empty", "drv.memcpy_htod"),
    "cuda-python": ("""
        from cuda.bindings import runtime as rt
        def upload(dptr):
            err, h = rt.cudaMallocHost(1 << 26)
            rt.cudaMemcpy(dptr, h, 1 << 26, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)
            rt.cudaFreeHost(h)
        """, "cudaMallocHost", "rt.cudaMemcpy("),
    "torch": ("""
        import torch
        def upload():
            x = torch.randn(1 << 24)
            p = x.pin_memory()
            return p.to("cuda", non_blocking=True)
        """, "x.pin_memory()", 'p.to("cuda"'),
    "torch-constructor": ("""
        import torch
        def upload():
            t = torch.empty(1 << 24, pin_memory=True)
            t.uniform_()
            return t.cuda()
        """, "torch.empty", "t.cuda()"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_pinned_then_copied_once_is_reported_at_the_pinning_call(name):
    src, pinning, transfer = BAD[name]
    finding = only(src, "PIN008")
    assert finding.location.row == row_of(src, pinning)
    # The transfer is the related location, and the message names it.
    assert [r.location.row for r in finding.related] == [row_of(src, transfer)]
    assert f"line {row_of(src, transfer)}" in finding.message
    assert "single" in finding.message and "reuse" in finding.message
    # Display-only advice: offered, never applied.
    assert finding.fix is not None and finding.fix.applicability == "display-only" and finding.fix.edits == ()


# Registration then one copy: measured faster than the pageable copy on the H200 (registering filled
# memory is cheap: 2.8 ms for 64 MiB), so PIN008 leaves registrations alone (rules/PIN008.md).
REGISTERED = {
    "numba-pinned-context": ("""
        import numpy as np
        from numba import cuda
        def upload():
            a = np.ones(1 << 24, dtype=np.float32)
            with cuda.pinned(a):
                d = cuda.to_device(a)
            return d
        """, "cuda.pinned(a)", "cuda.to_device(a)"),
    "pycuda-register": ("""
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        def upload(d):
            a = np.ones(1 << 24, dtype=np.float32)
            h = drv.register_host_memory(a)
            drv.memcpy_htod(d, h)
        """, "register_host_memory", "drv.memcpy_htod"),
}


@pytest.mark.parametrize("name", list(REGISTERED))
def test_registered_then_copied_once_is_not_reported(name):
    src, _, _ = REGISTERED[name]
    assert rows(src, "PIN008") == []
    # The same program with a pinned allocation instead is reported.
    allocated = src.replace("with cuda.pinned(a):\n                d = cuda.to_device(a)",
                            "h = cuda.pinned_array(1 << 24, dtype=np.float32)\n            d = cuda.to_device(h)")
    allocated = allocated.replace("h = drv.register_host_memory(a)", "h = drv.pagelocked_empty(1 << 24, np.float32)")
    assert len(rows(allocated, "PIN008")) == 1, allocated


GOOD = {
    # The pinned buffer is reused by every iteration: what pinning is for.
    "cupy": """
        import numpy as np, cupy as cp, cupyx
        h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
        d = cp.empty(1 << 24, dtype=np.float32)
        for step in range(10):
            h[:] = step
            d.set(h)
        """,
    # Up and back down through the same buffer: two transfers.
    "numba": """
        import numpy as np
        from numba import cuda
        h = cuda.pinned_array(1 << 24, dtype=np.float32)
        d = cuda.to_device(h)
        d.copy_to_host(h)
        """,
    # Two copies in one with-block.
    "numba-with": """
        import numpy as np
        from numba import cuda
        a = np.ones(1 << 24, dtype=np.float32)
        b = np.ones(1 << 24, dtype=np.float32)
        with cuda.pinned(a):
            d = cuda.to_device(a)
            e = cuda.to_device(a)
        """,
    # The buffer is returned: the caller may copy it again.
    "pycuda": """
        import numpy as np
        import pycuda.autoinit
        import pycuda.driver as drv
        def staging(d):
            h = drv.pagelocked_empty(1 << 24, np.float32)
            drv.memcpy_htod(d, h)
            return h
        """,
    # Plain pageable copy: nothing pinned.
    "cuda-python": """
        import numpy as np
        from cuda.bindings import runtime as rt
        h = np.ones(1 << 24, dtype=np.float32)
        err, d = rt.cudaMalloc(h.nbytes)
        rt.cudaMemcpy(d, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)
        """,
    # DataLoader batches are a new buffer each time, reported (or not) elsewhere.
    "torch": """
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(range(10), pin_memory=True)
        batch = next(iter(loader))
        x = batch.to("cuda", non_blocking=True)
        """,
    # Pinned, never copied.
    "torch-unused": """
        import torch
        t = torch.empty(1 << 24, pin_memory=True)
        t.fill_(1)
        """,
}


@pytest.mark.parametrize("name", list(GOOD))
def test_reused_returned_or_unpinned_buffers_are_not_reported(name):
    assert rows(GOOD[name], "PIN008") == []


# ------------------------------------------------------------------ escapes
ESCAPES = {
    "returned": "    return h\n",
    "yielded": "    yield h\n",
    "stored on an object": "    obj.buf = h\n",
    "kept in a list": "    keep = [h]\n    obj.items = keep\n",
    "kept in a global dict": "    CACHE['h'] = h\n",
    "handed to unknown code": "    some_library.consume(h)\n",
}


@pytest.mark.parametrize("how", list(ESCAPES))
def test_a_buffer_that_escapes_is_not_reported(how):
    src = ("import numpy as np, cupy as cp, cupyx\nCACHE = {}\ndef f(obj):\n"
           "    h = cupyx.empty_pinned(1 << 24, dtype=np.float32)\n    d = cp.asarray(h)\n" + ESCAPES[how])
    assert rows(src, "PIN008") == []
    # Control: without the escape the same function is reported.
    assert rows(src.replace(ESCAPES[how], "    return d\n"), "PIN008") == [4]


def test_a_project_function_that_stores_the_buffer_is_an_escape_too():
    src = """
        import numpy as np, cupy as cp, cupyx
        def keep(buf, obj):
            obj.buf = buf
        def f(obj):
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            d = cp.asarray(h)
            keep(h, obj)
        """
    assert rows(src, "PIN008") == []


def test_a_module_buffer_copied_again_in_a_function_is_not_reported():
    src = """
        import numpy as np, cupy as cp, cupyx
        h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
        d = cp.asarray(h)
        def again():
            return cp.asarray(h)
        """
    assert rows(src, "PIN008") == []
    assert rows(src.replace("return cp.asarray(h)", "return 0"), "PIN008") == [2]


# ------------------------------------------------------------------ how many copies
def test_two_copies_on_one_path_or_on_two_branches_are_not_a_single_transfer():
    straight = """
        import numpy as np, cupy as cp, cupyx
        h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
        d = cp.asarray(h)
        e = cp.asarray(h)
        """
    branches = """
        import numpy as np, cupy as cp, cupyx
        def f(flag):
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            if flag:
                d = cp.asarray(h)
            else:
                d = cp.asarray(h[::2])
            return d
        """
    assert rows(straight, "PIN008") == []
    assert rows(branches, "PIN008") == []


def test_a_copy_in_a_finally_block_is_one_copy():
    src = """
        import numpy as np, cupy as cp, cupyx
        def f():
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            try:
                h[:] = 1
            finally:
                d = cp.asarray(h)
            return d
        """
    assert rows(src, "PIN008") == [row_of(src, "empty_pinned")]


def test_a_copy_inside_a_loop_reuses_the_buffer():
    src = """
        import numpy as np
        from numba import cuda
        h = cuda.pinned_array(1 << 24, dtype=np.float32)
        for i in range(4):
            d = cuda.to_device(h)
        """
    assert rows(src, "PIN008") == []


def test_pinning_inside_a_loop_is_pin002_not_pin008():
    src = """
        import numpy as np
        from numba import cuda
        for i in range(4):
            h = cuda.pinned_array(1 << 24, dtype=np.float32)
            d = cuda.to_device(h)
        """
    assert [f.code for f in findings(src)] == ["PIN002"]


def test_a_buffer_handed_to_a_kernel_is_not_judged():
    src = """
        import numpy as np
        from numba import cuda
        @cuda.jit
        def k(a):
            pass
        h = cuda.pinned_array(1 << 24, dtype=np.float32)
        k[64, 256](h)
        d = cuda.to_device(h)
        """
    assert rows(src, "PIN008") == []
    assert rows(src.replace("k[64, 256](h)", "pass"), "PIN008") == [row_of(src, "pinned_array")]


# ------------------------------------------------------------------ across functions
def test_a_copy_made_by_a_project_helper_counts():
    src = """
        import numpy as np, cupy as cp, cupyx
        def upload(buf):
            return cp.asarray(buf)
        def f():
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            return upload(h)
        """
    finding = only(src, "PIN008")
    assert finding.location.row == row_of(src, "empty_pinned")
    # The related location is the copy inside the helper, not the call.
    assert [r.location.row for r in finding.related] == [row_of(src, "cp.asarray(buf)")]


@pytest.mark.parametrize("helper", [
    "    a = cp.asarray(buf)\n    b = cp.asarray(buf)\n    return a\n",      # two copies inside
    "    for i in range(3):\n        a = cp.asarray(buf)\n    return a\n",  # a copy in the helper's loop
])
def test_a_helper_that_copies_more_than_once_is_not_a_single_transfer(helper):
    src = ("import numpy as np, cupy as cp, cupyx\ndef upload(buf):\n" + helper +
           "def f():\n    h = cupyx.empty_pinned(1 << 24, dtype=np.float32)\n    return upload(h)\n")
    assert rows(src, "PIN008") == []


def test_a_helper_that_pins_and_copies_is_reported_inside_the_helper_once():
    src = """
        import numpy as np, cupy as cp, cupyx
        def pin_and_copy():
            h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
            h[:] = 1
            return cp.asarray(h)
        a = pin_and_copy()
        b = pin_and_copy()
        """
    assert rows(src, "PIN008") == [row_of(src, "empty_pinned")]


# ------------------------------------------------------------------ the size threshold
SIZED = """
    import torch
    t = torch.empty({n}, dtype=torch.uint8, pin_memory=True)
    g = t.cuda()
    """


def test_threshold_default_is_16_mib():
    assert Settings().pin008_min_bytes == 16 << 20
    assert rows(SIZED.format(n=(16 << 20) - 1), "PIN008") == []
    assert rows(SIZED.format(n=16 << 20), "PIN008") == [2]


@pytest.mark.parametrize("threshold, reported", [(0, True), (4096, True), (4097, False)])
def test_threshold_is_configurable(threshold, reported):
    assert bool(rows(SIZED.format(n=4096), "PIN008", Settings(pin008_min_bytes=threshold))) is reported


def test_unknown_sizes_are_still_reported():
    src = """
        import numpy as np, pycuda.driver as drv
        def f(n, d, s):
            h = drv.pagelocked_empty(n, dtype=np.float32)
            drv.memcpy_htod_async(d, h, s)
        """
    assert rows(src, "PIN008", Settings(pin008_min_bytes=1 << 40)) == [3]


def test_a_pooled_tensor_made_from_python_values_of_unknown_size_is_not_reported():
    """Per-step metadata made from a list, pinned so that its copy does not wait (lightllm's sampling
    parameters): there is no pageable copy of the data to upload instead, and the pool hands the
    block back on every call. Made from a buffer, or of a known size, it is reported."""
    made = """
        import torch
        def f(reqs):
            values = []
            for r in reqs:
                values.append(r.temperature)
            t = torch.tensor(values, dtype=torch.float32, pin_memory=True)
            return t.cuda(non_blocking=True)
        """
    assert rows(made, "PIN008") == []
    then_pinned = made.replace("dtype=torch.float32, pin_memory=True)", "dtype=torch.float32).pin_memory()")
    assert rows(then_pinned, "PIN008") == []  # pinned after it was made from the values: the same
    given = "import torch\ndef f(ids):\n    return torch.tensor(ids, pin_memory=True).cuda(non_blocking=True)\n"
    assert rows(given, "PIN008") == []  # data nothing here explains: a list as likely as a buffer
    buffer = given.replace("torch.tensor(ids,", "torch.tensor(torch.from_numpy(ids.astype('f4')),")
    assert rows(buffer, "PIN008") == [3]  # a copy of a host buffer, which could have been uploaded itself
    not_values = made.replace("torch.tensor(values, dtype=torch.float32,", "torch.empty(len(values),")
    assert rows(not_values, "PIN008") == []  # a pool block for data built here: see the test below
    known = made.replace("torch.tensor(values,", "torch.tensor([0.5, 0.25],")
    assert rows(known, "PIN008", Settings(pin008_min_bytes=0)) == [6]  # a size it knows: the threshold decides


def test_the_message_gives_the_size_and_says_when_the_memory_is_pooled():
    finding = only(BAD["cupy"][0], "PIN008")
    assert "64.0 MiB" in finding.message and "pooled" in finding.message
    assert "pooled" not in only(BAD["pycuda"][0], "PIN008").message


def test_noqa_silences_it():
    src = BAD["torch"][0].replace("p = x.pin_memory()", "p = x.pin_memory()  # noqa: PIN008")
    assert rows(src, "PIN008") == []


def test_a_helper_that_pins_called_in_a_loop_is_pin002_at_the_call_only():
    src = """
        import numpy as np
        import pycuda.driver as cuda
        def upload(d, x, stream):
            h = cuda.pagelocked_empty(x.shape, x.dtype)
            h[:] = x
            cuda.memcpy_htod_async(d, h, stream)
            stream.synchronize()
        def run(batches):
            stream = cuda.Stream()
            d = cuda.mem_alloc(1 << 22)
            for x in batches:
                upload(d, x, stream)
        """
    assert [(f.code, f.location.row) for f in findings(src)] == [("PIN002", row_of(src, "    upload(d, x, stream)"))]
    # Called once instead: the helper's own pinning is PIN008's.
    once = source(src).replace("for x in batches:\n        upload(d, x, stream)", "upload(d, batches[0], stream)")
    assert once != source(src)
    assert rows(once, "PIN008") == [row_of(src, "pagelocked_empty")]


# ------------------------------------------------------------------ the fixtures
def test_every_pin008_fixture_has_a_hand_written_fix_with_one_pageable_copy_and_the_same_sizes():
    import ast

    from pinlint.engine import lint_bytes
    from fixture_catalog import FIXTURES, expected_codes

    bad = [p for p in sorted((FIXTURES / "PIN008").glob("*.py"))
           if not p.name.endswith(".fixed.py") and "PIN008" in expected_codes(p)]
    assert {p.name.split("_", 1)[0] for p in bad} == {"cudapython", "cupy", "numba", "pycuda", "torch"}

    def sizes(path):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        node = next(node for node in tree.body if isinstance(node, ast.Assign)
                    and any(getattr(t, "id", "") == "SIZES" for t in node.targets))
        return eval(compile(ast.Expression(node.value), str(path), "eval"), {})  # `1 << 24`: constants only

    for path in bad:
        fixed = path.with_name(path.name[:-3] + ".fixed.py")
        assert fixed.is_file(), f"{path.name}: PIN008's fix is display-only, so the fixture needs a .fixed.py"
        assert sizes(path) == sizes(fixed) == [1 << 24, 1 << 26]  # 64 MiB and 256 MiB of float32
        result = lint_bytes(fixed.read_bytes(), str(fixed), Settings(pin008_min_bytes=0))
        assert [f.code for f in result.findings] == []
        assert "pin" not in fixed.read_text(encoding="utf-8").split("def run", 1)[1].lower().replace("pinlint", "")


def test_a_pool_block_of_a_size_nothing_says_taken_in_a_function_for_new_data_is_not_reported():
    """`torch.empty(len(allocated), pin_memory=True)` filled with indices and uploaded once, in a
    helper (mini-sglang's page-table writer): PIN008's claim rests on page-locking, which PyTorch's
    pool does on its first request only, and the function may run on every step. A pinned copy of a
    tensor (`x.pin_memory()`) copies every time, a block at module level runs once, and a block of a
    size it knows is judged by the threshold: all reported."""
    src = """
        import numpy as np
        import torch
        def write(table, allocated, n):
            host = torch.empty(len(allocated), dtype=torch.int64, pin_memory=True)
            host.fill_(n)
            table[host.to(table.device, non_blocking=True)] = allocated
        """
    assert rows(src, "PIN008") == []
    copied = src.replace("torch.empty(len(allocated), dtype=torch.int64, pin_memory=True)",
                         "torch.from_numpy(np.arange(len(allocated))).pin_memory()")
    assert rows(copied, "PIN008") == [row_of(copied, "host =")]
    sized = src.replace("len(allocated)", "1 << 24")
    assert rows(sized, "PIN008") == [row_of(sized, "host =")]
    module = "import torch\nn = int(input())\nhost = torch.empty(n, pin_memory=True)\nd = host.to('cuda', non_blocking=True)\n"
    assert rows(module, "PIN008") == [3]


def test_a_module_buffer_a_function_copies_is_copied_each_time_it_runs():
    """A module-level pinned staging buffer that a helper fills and copies, called 8 times by a loop:
    8 transfers, not one (survey 19's staging variant). Copied once at the module's top level, it
    is one transfer."""
    from helpers import rows, row_of
    src = """
import cupy as cp
import cupyx
import numpy as np

STAGE = cupyx.empty_pinned((4096, 4096), np.float32)
ONCE = cupyx.empty_pinned((4096, 4096), np.float32)  # once

def upload(a):
    STAGE[...] = a
    return cp.asarray(STAGE)

d = cp.asarray(ONCE)
for k in range(8):
    upload(np.ones((4096, 4096), np.float32))
"""
    assert rows(src, "PIN008") == [row_of(src, "# once")]
