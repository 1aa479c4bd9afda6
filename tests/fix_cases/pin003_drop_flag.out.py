import numpy as np
import cupy
import pycuda.driver as drv
from cuda.bindings import runtime as cudart

a = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
print(a.sum())
mem = cupy.cuda.PinnedMemory(4096, cupy.cuda.runtime.hostAllocDefault)
b = np.frombuffer(mem, np.float32)
print(b.max())
err, ptr = cudart.cudaHostAlloc(4096, cudart.cudaHostAllocDefault)
c = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 1024).from_address(ptr))
total = c.sum()
