# pinlint-fix: unsafe
import numpy as np
from numba import cuda

h = cuda.pinned_array(1024, dtype=np.float32)
for i in range(10):
    h[:] = i
    d = cuda.to_device(h)
