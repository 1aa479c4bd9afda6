import numpy as np
try:
    import cupy as cp
except ImportError:
    pass


def work():
    h = np.empty(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
