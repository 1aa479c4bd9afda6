"""PyCUDA: one of each thing the recorder must attribute."""
import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv

N = 1 << 22
s = drv.Stream()
d = drv.mem_alloc(N * 4)
h = np.ones(N, dtype=np.float32)
drv.memcpy_htod_async(d, h, s)  # @pageable
p = drv.pagelocked_empty(N, dtype=np.float32)
p[:] = 1
drv.memcpy_htod_async(d, p, s)  # @pinned
s.synchronize()
for i in range(3):
    q = drv.pagelocked_empty(1 << 18, dtype=np.float32)  # @loop-alloc
    del q
w = drv.pagelocked_empty(1 << 18, dtype=np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)  # @wc
