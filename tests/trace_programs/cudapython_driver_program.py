"""cuda-python, driver API: one of each thing the recorder must attribute."""
import numpy as np
from cuda.bindings import driver as dr
from cuda.bindings import runtime as rt


def ok(result):
    assert int(result[0]) == 0, result
    return result[1] if len(result) > 1 else None


N = 1 << 22
NBYTES = N * 4
ok(rt.cudaFree(0))  # makes the primary context current for the driver calls below
s = ok(dr.cuStreamCreate(1))  # CU_STREAM_NON_BLOCKING
d = ok(dr.cuMemAlloc(NBYTES))
h = np.ones(N, dtype=np.float32)
ok(dr.cuMemcpyHtoDAsync(d, h.ctypes.data, NBYTES, s))  # @pageable
p = ok(dr.cuMemAllocHost(NBYTES))
ok(dr.cuMemcpyHtoDAsync(d, p, NBYTES, s))  # @pinned
ok(dr.cuStreamSynchronize(s))
for i in range(3):
    q = ok(dr.cuMemAllocHost(1 << 20))  # @loop-alloc
    ok(dr.cuMemFreeHost(q))
w = ok(dr.cuMemHostAlloc(1 << 20, 4))  # @wc (CU_MEMHOSTALLOC_WRITECOMBINED)
ok(dr.cuMemFreeHost(w))
