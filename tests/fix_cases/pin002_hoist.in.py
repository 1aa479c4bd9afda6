import numpy as np
import cupy as cp
import cupyx

d = cp.empty(1024, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
for i in range(10):
    staging = cupyx.empty_pinned(1024, dtype=np.float32)
    staging[:] = i
    d.set(staging, stream=s)
    s.synchronize()
