import numpy as np, cupy as cp
h = np.zeros(1 << 20, dtype=np.float32)
d = cp.empty(1 << 20, dtype=np.float32)
s = cp.cuda.Stream(non_blocking=True)
d.set(h, \
      stream=s)
d.set(h, stream=s); doc = """text
more"""
