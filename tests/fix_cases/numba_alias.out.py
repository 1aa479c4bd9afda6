import numpy as np
import numba.cuda as nc

s = nc.stream()
h = nc.pinned_array(1 << 16, dtype=np.float32)
h[:] = 2.0
d = nc.to_device(h, stream=s)
s.synchronize()
