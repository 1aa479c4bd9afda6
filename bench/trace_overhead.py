"""What ``pinlint trace`` costs a program (docs/trace.md, "Overhead"): run it plain and under the
trace, compare the printed times.

    python bench/trace_overhead.py            # plain
    pinlint trace -- python bench/trace_overhead.py

Four loops, each timed with the clock and a synchronize: N small pinned copies (every one is a
traced driver call and a CUPTI record), N kernel launches (not traced calls: CUPTI's callbacks are
enabled only for copies, pinned allocations and synchronizes), N ``.item()`` calls in torch (a copy
and a synchronize each), and a Python loop body of ten lines around one small copy (the function
that makes a copy is watched line by line, to count its lines' runs).
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


def loop_body(device, pinned, stream, n: int) -> float:
    """Ten lines of Python and one copy per iteration, all in one watched function."""
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    total = 0.0
    for i in range(n):
        a = i * 2
        b = a + 1
        c = b * b
        d = c - a
        e = d // 3
        f = e + b
        g = f % 7
        h = g + c
        total += h * 0.5
        device.set(pinned, stream=stream)
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    stream = cp.cuda.Stream(non_blocking=True)
    device = cp.empty(1024, dtype=cp.float32)
    pinned = cupyx.empty_pinned(1024, dtype=np.float32)
    results = {"pinned_copy_4KiB_us": timed(lambda: device.set(pinned, stream=stream), N),
               "cupy_kernel_us": timed(lambda: device.fill(1), N),
               "loop_body_with_copy_us": loop_body(device, pinned, stream, N)}
    try:
        import torch
        scalar = torch.ones((), device="cuda")
        results["torch_item_us"] = timed(lambda: scalar.item(), N)
    except ImportError:
        pass
    print("PINLINT-OVERHEAD " + json.dumps(results))


if __name__ == "__main__":
    main()
