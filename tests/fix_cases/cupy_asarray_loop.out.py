import numpy as onp
import cupy
import cupyx

frame = cupyx.zeros_like_pinned(onp.ones(1 << 20, dtype=onp.float32))
for step in range(10):
    frame[:] = step
    gpu = cupy.asarray(frame)
    total = float(gpu.sum())
