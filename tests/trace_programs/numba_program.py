"""Numba: one of each thing the recorder must attribute. Numba has no write-combined allocation
that works (``mapped_array(wc=True)`` ignores ``wc``), so the flagged allocation is a mapped one."""
import numpy as np
from numba import cuda

N = 1 << 22
st = cuda.stream()
h = np.ones(N, dtype=np.float32)
d = cuda.to_device(h, stream=st)  # @pageable
p = cuda.pinned_array(N, dtype=np.float32)
p[:] = 1
d2 = cuda.to_device(p, stream=st)  # @pinned
st.synchronize()
for i in range(3):
    q = cuda.pinned_array(1 << 18, dtype=np.float32)  # @loop-alloc
    del q
w = cuda.mapped_array(1 << 18, dtype=np.float32, wc=True)  # @mapped
