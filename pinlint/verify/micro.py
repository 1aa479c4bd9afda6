"""Micro-benchmarks behind ``pinlint verify --estimate``: the pattern of one finding, measured with
CuPy at the finding's buffer size. Run in a fresh process:

    python -m pinlint.verify.micro RULE DIRECTION NBYTES REPEATS

and prints one JSON line: {"metric", "bad", "fixed", "unit"} (medians over REPEATS).
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def _median_ms(action, repeats: int) -> float:
    action()  # warm-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def copy_cost(direction: str, nbytes: int, repeats: int):
    import cupy as cp
    import cupyx
    import numpy as np

    n = max(nbytes // 4, 1)
    pageable = np.ones(n, dtype=np.float32)
    pinned = cupyx.empty_pinned(n, dtype=np.float32)
    pinned[:] = 1
    device = cp.empty(n, dtype=np.float32)
    stream = cp.cuda.Stream(non_blocking=True)

    def run(host):
        if direction == "d2h":
            device.get(stream=stream, out=host, blocking=False)
        else:
            device.set(host, stream=stream)
        stream.synchronize()

    bad = _median_ms(lambda: run(pageable), repeats)
    fixed = _median_ms(lambda: run(pinned), repeats)
    return "copy time", bad, fixed, "ms"


def alloc_cost(nbytes: int, repeats: int):
    import cupy as cp
    import numpy as np

    def pinned_alloc_free():
        ptr = cp.cuda.runtime.hostAlloc(nbytes, 0)
        cp.cuda.runtime.freeHost(ptr)

    buffer = np.empty(nbytes, dtype=np.uint8)

    def reuse():
        buffer[:1] = 0  # the hoisted buffer is already there

    return "allocate + free per iteration", _median_ms(pinned_alloc_free, repeats), _median_ms(reuse, repeats), "ms"


def wc_read_cost(nbytes: int, repeats: int):
    import ctypes
    import cupy as cp
    import numpy as np

    def host_array(flags):
        ptr = cp.cuda.runtime.hostAlloc(nbytes, flags)
        array = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr)).view(np.float32)
        array[:] = 1
        return array

    wc = host_array(cp.cuda.runtime.hostAllocWriteCombined)
    default = host_array(cp.cuda.runtime.hostAllocDefault)
    return "CPU read (sum)", _median_ms(lambda: wc.sum(), repeats), _median_ms(lambda: default.sum(), repeats), "ms"


def mapped_reread_cost(nbytes: int, repeats: int, passes: int = 10):
    import cupy as cp

    n = max(nbytes // 4, 1)
    # Under unified addressing mapped host memory has the same address on the device.
    host_ptr = cp.cuda.runtime.hostAlloc(n * 4, cp.cuda.runtime.hostAllocMapped)
    memory = cp.cuda.UnownedMemory(host_ptr, n * 4, None)
    mapped = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(memory, 0))
    mapped.fill(1)
    cp.cuda.Device().synchronize()

    def zero_copy():
        for _ in range(passes):
            mapped.sum()
        cp.cuda.Device().synchronize()

    def copy_once():
        local = mapped.copy()
        for _ in range(passes):
            local.sum()
        cp.cuda.Device().synchronize()

    return f"{passes} kernel passes", _median_ms(zero_copy, repeats), _median_ms(copy_once, repeats), "ms"


def main(argv) -> int:
    rule, direction, nbytes, repeats = argv[0], argv[1], int(argv[2]), int(argv[3])
    if rule in ("PIN001", "PIN007"):
        metric, bad, fixed, unit = copy_cost(direction, nbytes, repeats)
    elif rule == "PIN002":
        metric, bad, fixed, unit = alloc_cost(nbytes, repeats)
    elif rule == "PIN003":
        metric, bad, fixed, unit = wc_read_cost(nbytes, repeats)
    elif rule == "PIN004":
        metric, bad, fixed, unit = mapped_reread_cost(nbytes, repeats)
    else:
        print(json.dumps({"metric": "none", "note": "a race costs correctness, not time"}))
        return 0
    print(json.dumps({"metric": metric, "bad": bad, "fixed": fixed, "unit": unit, "nbytes": nbytes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
