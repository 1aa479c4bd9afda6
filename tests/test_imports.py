"""Import aliases: a name bound to two modules by imports in different functions is each function's own."""

from __future__ import annotations

import textwrap

import libcst as cst

from helpers import codes, rows, row_of
from pinlint.imports import collect_imports

_TWO_FUNCTIONS = """
import numpy as np


def calibrate(n):
    import cuda.cudart as cuda
    err, ptr = cuda.cudaMalloc(n)
    return ptr


def benchmark(iters):
    import pycuda.driver as cuda
    d = cuda.mem_alloc(1 << 22)
    h = np.random.randn(1 << 20).astype(np.float32)
    stream = cuda.Stream()
    for _ in range(iters):
        cuda.memcpy_htod_async(d, h, stream)
        stream.synchronize()
"""


def _qualified_calls(src: str) -> list:
    module = cst.parse_module(textwrap.dedent(src))
    imports = collect_imports(module)
    found = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(imports.qualify(node.func))

    module.visit(_Calls())
    return found


def test_each_function_s_own_import_names_its_module():
    calls = _qualified_calls(_TWO_FUNCTIONS)
    assert "cuda.cudart.cudaMalloc" in calls and "pycuda.driver.memcpy_htod_async" in calls
    assert "pycuda.driver.cudaMalloc" not in calls and "cuda.cudart.memcpy_htod_async" not in calls


def test_a_pageable_copy_is_found_where_another_function_imports_another_module_under_the_name():
    assert rows(_TWO_FUNCTIONS, "PIN001") == [row_of(_TWO_FUNCTIONS, "cuda.memcpy_htod_async")]


def test_the_module_s_import_holds_outside_the_function_that_rebinds_the_name():
    src = """
    import numpy as np
    import pycuda.driver as cuda


    def other():
        import cuda.cudart as cuda
        return cuda.cudaMalloc(16)


    def send(d, stream):
        h = np.zeros(1 << 20, dtype=np.float32)
        cuda.memcpy_htod_async(d, h, stream)
    """
    calls = _qualified_calls(src)
    assert "cuda.cudart.cudaMalloc" in calls and "pycuda.driver.memcpy_htod_async" in calls
    assert codes(src) == ["PIN001"]


def test_two_modules_under_one_name_in_the_same_scope_stay_ambiguous():
    # `try: import cupy as cuda / except ImportError: import pycuda.driver as cuda`: either, so neither.
    src = """
    def f():
        try:
            import torch as xp
        except ImportError:
            import numpy as xp
        return xp.zeros(4)

    try:
        import cupy as xp
    except ImportError:
        import torch as xp
    a = xp.zeros(4)
    """
    assert _qualified_calls(src) == [None, None]


def test_a_gpu_module_with_its_cpu_fallback_is_the_gpu_module():
    # `try: import cupy as cp / except ImportError: import numpy as cp` (suite3d): where cp is NumPy
    # there is no transfer at all, so the copies are read as CuPy's, as a "this run uses a GPU" flag is
    src = """
    def f():
        try:
            from cupyx.scipy import ndimage
        except ImportError:
            from scipy import ndimage
        return ndimage.shift(4)

    try:
        import cupy as cp
    except ImportError:
        import numpy as cp
    a = cp.zeros(4)
    """
    assert _qualified_calls(src) == ["cupyx.scipy.ndimage.shift", "cupy.zeros"]


FALLBACK = """
import numpy as np

{imports}


def correlate(frames, ref):
    return cp.asarray(frames) * cp.asarray(ref)


def build(movie, n, chunks):
    ref = np.zeros((n, 512, 512), dtype=complex)
    for c in range(chunks):
        correlate(movie[c], ref)
"""


def test_an_upload_under_a_fallback_import_is_found():
    src = FALLBACK.format(imports="try:\n    import cupy as cp\nexcept ImportError:\n    import numpy as cp")
    assert rows(src, "PIN007") == [row_of(src, "correlate(movie[c], ref)")]


def test_a_module_import_and_a_functions_own_fallback_keep_their_scopes():
    # numpy at module level, cupy only inside one function: the module's uses are NumPy's
    src = FALLBACK.format(imports="import numpy as cp\n\ndef gpu():\n    import cupy as cp\n    return cp.zeros(4)")
    assert codes(src) == []
