import numpy as onp
import cupy

frame = onp.zeros_like(onp.ones(1 << 20, dtype=onp.float32))
for step in range(10):
    frame[:] = step
    gpu = cupy.asarray(frame)
    total = float(gpu.sum())
