# pinlint-fix: unsafe
import numpy as np
import cupy as cp
import cupyx
import torch


def cupy_case():
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.ones(1024, dtype=np.float32)
    h = cupyx.empty_pinned(1024, dtype=np.float32)
    d.get(stream=s, out=h, blocking=False)
    s.synchronize()
    if h[0] > 0:
        print(h.sum())


def torch_case(d):
    out = torch.ones(8, device="cuda").to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    return out.tolist()
