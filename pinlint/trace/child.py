"""Inside the traced program: start the recorder before the program's first line, write what it
saw when the program ends.

Started by ``boot/sitecustomize.py`` in every Python process of the traced command (children
inherit the environment). Each process writes ``<pid>.json`` into ``PINLINT_TRACE_DIR`` at exit. The
first process to start claims the run; if CUPTI cannot start there, the program is not run at all
(exit ``RECORDER_FAILED``), since a trace without a recorder would report a clean run it never
saw. A child process that cannot record runs unrecorded and says so in its file.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time

RECORDER_FAILED = 86
ENV_DIR = "PINLINT_TRACE_DIR"
ENV_KERNELS = "PINLINT_TRACE_KERNELS"

_active = None  # the running _Session: keeps the hooks (and what CUPTI points at) alive


class _Session:
    def __init__(self, out_dir: str, kernels: bool) -> None:
        from .aggregate import Aggregator
        from .cupti_glue import Hooks
        from .frames import Attributor
        from .lines import ExecutedLines, LineRuns
        from .recorder import Recorder

        self.out_dir = out_dir
        self.started_ns = time.perf_counter_ns()
        self.attributor = Attributor()
        self.aggregate = Aggregator()
        self.runs = LineRuns()
        self.recorder = Recorder(self.aggregate, self.attributor, line_runs=self.runs)
        self.hooks = Hooks(self.recorder, kernels=kernels)
        self.executed = ExecutedLines(self.attributor)
        self.executed.start()
        self.runs.start()

    def finish(self) -> None:
        self.executed.stop()
        self.runs.stop()
        self.hooks.close()
        write(self.out_dir, {"status": "ok", **self.summary()})

    def summary(self) -> dict:
        return {"pid": os.getpid(), "argv": list(sys.argv), "executable": sys.executable,
                "cwd": self.attributor.cwd, "wall_ns": time.perf_counter_ns() - self.started_ns,
                "executed": self.executed.to_dict(), "aggregate": self.aggregate.to_dict(),
                "counts": dict(self.recorder.counts), "callback_errors": dict(self.recorder.errors),
                "driver_callbacks": self.hooks.enabled}


def write(out_dir: str, data: dict) -> None:
    """Atomically: the parent never reads half a file."""
    target = os.path.join(out_dir, f"{os.getpid()}.json")
    partial = target + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(partial, target)


def _claims_run(out_dir: str) -> bool:
    try:
        os.close(os.open(os.path.join(out_dir, "root"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except OSError:
        return False


def start() -> None:
    """Called once per process at interpreter start; does nothing outside ``pinlint trace``."""
    global _active
    out_dir = os.environ.get(ENV_DIR)
    if not out_dir or _active is not None or not os.path.isdir(out_dir):
        return
    root = _claims_run(out_dir)
    try:
        _active = _Session(out_dir, os.environ.get(ENV_KERNELS) == "1")
    except Exception as exc:  # noqa: BLE001 - CuptiUnavailable, or CUPTI failing in its own way
        write(out_dir, {"status": "error", "pid": os.getpid(), "root": root, "argv": list(sys.argv),
                        "error": f"{exc}" or type(exc).__name__})
        if root:
            os._exit(RECORDER_FAILED)  # the program has not started: nothing of it is lost
        return
    atexit.register(_finish)  # registered first, so it runs last: after the program's own handlers
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)


def _finish() -> None:
    session = _active
    if session is None:
        return
    try:
        session.finish()
    except Exception as exc:  # noqa: BLE001 - a failed write must not change the program's exit
        try:
            write(session.out_dir, {"status": "error", "pid": os.getpid(), "root": False,
                                    "error": f"writing the trace failed: {type(exc).__name__}: {exc}"})
        except OSError:
            pass


def _forked() -> None:
    """A forked child starts its own tables (it inherits its parent's in memory) and writes its
    own file; CUPTI's callbacks stay installed in it."""
    session = _active
    if session is None:
        return
    from .aggregate import Aggregator
    session.aggregate = Aggregator()
    session.recorder.sink = session.aggregate
    session.recorder.counts.clear()
    session.started_ns = time.perf_counter_ns()
