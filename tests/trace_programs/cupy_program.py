"""CuPy: one of each thing the recorder must attribute (tests/test_trace_gpu.py reads the tags)."""
import numpy as np
import cupy as cp
import cupyx

N = 1 << 22
s = cp.cuda.Stream(non_blocking=True)
d = cp.empty(N, dtype=cp.float32)
h = np.ones(N, dtype=np.float32)
d.set(h, stream=s)  # @pageable
p = cupyx.empty_pinned(N, dtype=np.float32)
p[:] = 1
d.set(p, stream=s)  # @pinned
s.synchronize()
for i in range(3):
    m = cp.cuda.PinnedMemory(1 << 20)  # @loop-alloc
    del m
w = cp.cuda.runtime.hostAlloc(1 << 20, cp.cuda.runtime.hostAllocWriteCombined)  # @wc
cp.cuda.runtime.freeHost(w)
