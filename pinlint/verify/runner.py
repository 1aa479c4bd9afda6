"""Runs one fixture variant in this (fresh) process and prints its timings and result as JSON.

    python -m pinlint.verify.runner PATH SIZE REPEATS WARMUP

Kept free of pinlint imports beyond the standard library so the measured process loads only the
fixture's own libraries.
"""

from __future__ import annotations

import json
import runpy
import sys
import time


def summarize(result):
    """A JSON-able fingerprint of a fixture's host result (a number or a numpy array)."""
    if isinstance(result, (int, float)):
        return {"value": float(result)}
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - every fixture has numpy
        return {"repr": repr(result)}
    array = np.asarray(result)
    return {"shape": list(array.shape), "sum": float(array.astype(np.float64).sum()),
            "hash": __import__("hashlib").sha256(np.ascontiguousarray(array).tobytes()).hexdigest()}


def main(argv) -> int:
    path, size, repeats, warmup = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    namespace = runpy.run_path(path, run_name="pinlint_fixture")
    run = namespace["run"]
    result = None
    for _ in range(warmup):
        result = run(size)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run(size)  # fixtures synchronize before they return
        times.append((time.perf_counter() - start) * 1e3)
    print("PINLINT-RESULT " + json.dumps({"times_ms": times, "result": summarize(result)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
