"""Runs one fixture variant in this (fresh) process and prints its timings and result as JSON.

    python -m pinlint.verify.runner PATH SIZE REPEATS WARMUP [--record] [--kernels]

With ``--record`` the CUPTI recorder of ``pinlint trace`` is installed before the fixture is
loaded, and each timed run's copies, pinned allocations, frees (and with ``--kernels`` kernels)
are printed with it, so the harness can judge a claim by the copy or allocation itself.

Kept free of pinlint imports beyond the standard library (and the recorder, which is standard
library plus CUPTI) so the measured process loads only the fixture's own libraries.
"""

from __future__ import annotations

import json
import os
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


class Collector:
    """The recorder's sink in verify: every event, kept raw (a fixture makes few), and split into
    timed runs afterwards. Copies and kernels fall into a run by their device start (CUPTI's
    clock), allocations and frees by the host clock at their end. Nothing is flushed between runs:
    a flush makes CUPTI ask for a new buffer inside the next CUDA call, which would add its
    allocation to that call's host time."""

    def __init__(self, program: str, cap: int = 100_000) -> None:
        self.program = os.path.realpath(program)
        self.cap = cap
        self.events: list = []

    def add(self, event) -> None:
        if len(self.events) < self.cap:
            self.events.append(event)

    def runs(self, windows: list) -> list:
        """One compact record per window ``((device start, end), (host start, end))``."""
        from pinlint.trace.events import Copy, HostAlloc, HostFree, Kernel

        def inside(value, window):
            return window[0] <= value <= window[1]

        line = lambda site: site.line if site.filename == self.program else 0  # noqa: E731
        out = []
        for device, host in windows:
            copies = [e for e in self.events if isinstance(e, Copy) and inside(e.start_ns, device)]
            kernels = [e for e in self.events if isinstance(e, Kernel) and inside(e.start_ns, device)]
            out.append({
                "copies": [[line(e.site), e.api, e.direction, e.host_kind, e.nbytes, e.device_ns, e.host_ns,
                            e.blocking] for e in copies],
                "allocs": [[line(e.site), e.api, e.nbytes, e.flags, e.host_ns, e.registered]
                           for e in self.events if isinstance(e, HostAlloc) and inside(e.t_ns, host)],
                "frees": [[line(e.site), e.host_ns] for e in self.events
                          if isinstance(e, HostFree) and inside(e.t_ns, host)],
                "kernels": [len(kernels), sum(e.device_ns for e in kernels)],
            })
        return out


def _recorder(path: str, kernels: bool):
    from pinlint.trace.cupti_glue import Hooks
    from pinlint.trace.recorder import Recorder

    collector = Collector(path)
    return collector, Hooks(Recorder(collector), kernels=kernels, flush_period_ms=None)


def main(argv) -> int:
    path, size, repeats, warmup = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    hooks = collector = None
    recorder_error = None
    if "--record" in argv[4:]:
        try:
            collector, hooks = _recorder(path, "--kernels" in argv[4:])
        except Exception as exc:  # noqa: BLE001 - timings still come back, without the recorder
            recorder_error = f"{type(exc).__name__}: {exc}"
    namespace = runpy.run_path(path, run_name="pinlint_fixture")
    run = namespace["run"]
    result = None
    for _ in range(warmup):
        result = run(size)
    times, windows = [], []
    for _ in range(repeats):
        device_start = hooks.timestamp() if hooks is not None else 0
        host_start = time.perf_counter_ns()
        start = time.perf_counter()
        result = run(size)  # fixtures synchronize before they return
        times.append((time.perf_counter() - start) * 1e3)
        windows.append(((device_start, hooks.timestamp() if hooks is not None else 0),
                        (host_start, time.perf_counter_ns())))
    data = {"times_ms": times, "result": summarize(result)}
    if hooks is not None:
        hooks.flush()  # once, after the timed runs
        data["runs"] = collector.runs(windows)
        errors = dict(hooks.recorder.errors)
        if errors:
            data["recorder_errors"] = errors
    if recorder_error:
        data["recorder_error"] = recorder_error
    print("PINLINT-RESULT " + json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
