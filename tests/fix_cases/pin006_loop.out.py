# pinlint-fix: unsafe
import numpy as np
import cupy as cp
import cupyx

s = cp.cuda.Stream(non_blocking=True)
h = cupyx.empty_pinned(1024, dtype=np.float32)
d = cp.empty(1024, dtype=np.float32)
for i in range(10):
    s.synchronize()
    h[:] = i
    d.set(h, stream=s)
