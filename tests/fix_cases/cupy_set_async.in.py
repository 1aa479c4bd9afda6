import numpy as np
import cupy as cp

n = 1 << 20
h = np.empty(n, dtype=np.float32)  # a comment that must survive
h[:] = 1.0
d = cp.empty(n, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
d.set(h, stream=s)
s.synchronize()
