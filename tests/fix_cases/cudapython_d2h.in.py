# pinlint-fix: unsafe
import numpy as np
from cuda import cudart

err, stream = cudart.cudaStreamCreate()
err, dptr = cudart.cudaMalloc(4096)
err, hptr = cudart.cudaMallocHost(4096)
view = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 1024).from_address(hptr))
cudart.cudaMemcpyAsync(hptr, dptr, 4096, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)
print(view.sum())
