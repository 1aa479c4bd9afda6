"""What ``pinlint trace`` costs a program (docs/trace.md, "Overhead"): run it plain and under the
trace, compare the printed times.

    python bench/trace_overhead.py            # plain
    pinlint trace -- python bench/trace_overhead.py

Three loops, each timed with the clock and a synchronize: N small pinned copies (every one is a
traced driver call and a CUPTI record), N kernel launches (not traced calls: CUPTI's callbacks are
enabled only for copies, pinned allocations and synchronizes), and N ``.item()`` calls in torch (a
copy and a synchronize each).
"""

import json
import time

import cupy as cp
import cupyx
import numpy as np

N = 20_000


def timed(action, n: int) -> float:
    for _ in range(200):
        action()
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    for _ in range(n):
        action()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    stream = cp.cuda.Stream(non_blocking=True)
    device = cp.empty(1024, dtype=cp.float32)
    pinned = cupyx.empty_pinned(1024, dtype=np.float32)
    results = {"pinned_copy_4KiB_us": timed(lambda: device.set(pinned, stream=stream), N),
               "cupy_kernel_us": timed(lambda: device.fill(1), N)}
    try:
        import torch
        scalar = torch.ones((), device="cuda")
        results["torch_item_us"] = timed(lambda: scalar.item(), N)
    except ImportError:
        pass
    print("PINLINT-OVERHEAD " + json.dumps(results))


if __name__ == "__main__":
    main()
