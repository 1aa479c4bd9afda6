import numpy as np
import cupy as cp
import cupyx as cx
from cupyx import empty_pinned as ep

a = ep(1 << 20, dtype=np.float32)
b = cx.zeros_pinned((512, 512), np.float64)
d = cp.empty(1 << 20, dtype=np.float32)
e = cp.empty((512, 512))
s = cp.cuda.Stream()
d.set(a, stream=s)
e.set(b, stream=s)
s.synchronize()
