from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import cupyx  # noqa: F401


def work(n):
    import cupy as cp
    h = np.empty(n, dtype=np.float32)
    d = cp.empty(n, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    s.synchronize()
