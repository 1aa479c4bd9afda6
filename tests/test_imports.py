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
    # `try: import cupy as xp / except ImportError: import numpy as xp`: either, so neither.
    src = """
    def f():
        try:
            import cupy as xp
        except ImportError:
            import numpy as xp
        return xp.zeros(4)

    try:
        import cupy as xp
    except ImportError:
        import numpy as xp
    a = xp.zeros(4)
    """
    assert _qualified_calls(src) == [None, None]
