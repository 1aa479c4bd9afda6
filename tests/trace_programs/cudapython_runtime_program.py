"""cuda-python, runtime API: one of each thing the recorder must attribute."""
import numpy as np
from cuda.bindings import runtime as rt


def ok(result):
    assert int(result[0]) == 0, result
    return result[1] if len(result) > 1 else None


N = 1 << 22
NBYTES = N * 4
H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
ok(rt.cudaFree(0))
s = ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
d = ok(rt.cudaMalloc(NBYTES))
h = np.ones(N, dtype=np.float32)
ok(rt.cudaMemcpyAsync(d, h.ctypes.data, NBYTES, H2D, s))  # @pageable
p = ok(rt.cudaMallocHost(NBYTES))
ok(rt.cudaMemcpyAsync(d, p, NBYTES, H2D, s))  # @pinned
ok(rt.cudaStreamSynchronize(s))
for i in range(3):
    q = ok(rt.cudaMallocHost(1 << 20))  # @loop-alloc
    ok(rt.cudaFreeHost(q))
w = ok(rt.cudaHostAlloc(1 << 20, getattr(rt, "cudaHostAllocWriteCombined", 4)))  # @wc
ok(rt.cudaFreeHost(w))
