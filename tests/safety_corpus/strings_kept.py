"""A module docstring that mentions # noqa: PIN001 and cupyx.empty_pinned."""
import numpy as np
import cupy as cp

BANNER = """d.set(h, stream=s)  # noqa
"""


def work(n):
    h = np.zeros(n, dtype=np.float32)
    d = cp.empty(n, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s); note = """why?
    because"""
    d.set(h, \
          stream=s)
    s.synchronize()
    return note, BANNER
