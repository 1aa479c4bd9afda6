import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as cuda

h = np.empty(1 << 16, np.float32)
h[:] = 3.0
d = cuda.mem_alloc(h.nbytes)
stream = cuda.Stream()
cuda.memcpy_htod_async(d, h, stream)
stream.synchronize()
