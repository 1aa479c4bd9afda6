import numpy as np


def download(n):
    import cupy as cp
    import cupyx
    d = cp.ones(n, dtype=np.float32)
    h = cupyx.empty_pinned(n, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.get(out=h, stream=s, blocking=False)
    return h.sum()
