"""The parent side of a trace: check that CUPTI can run, start the program with the bootstrap,
wait for it (its stdio and signals stay its own), and read back what every process recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .aggregate import Aggregator
from .child import ENV_DIR, ENV_KERNELS, RECORDER_FAILED

BOOT = Path(__file__).resolve().parent / "boot"
HOME = Path(__file__).resolve().parents[2]  # the folder holding the pinlint package

_PROBE = r"""
import json, sys
def out(problem):
    print(json.dumps({"problem": problem})); sys.exit(0)
try:
    from cupti import cupti
except ImportError as exc:
    out('CUPTI is not installed (pip install "cuda-pinlint[trace]"): ' + str(exc))
except OSError as exc:
    out("CUPTI could not be loaded: " + str(exc))
try:
    from cuda.bindings import driver
except ImportError as exc:
    out('cuda-bindings is not installed (pip install "cuda-pinlint[trace]"): ' + str(exc))
except OSError as exc:
    out("the CUDA driver library could not be loaded: " + str(exc))
(err,) = driver.cuInit(0)
if int(err) != 0:
    out("no usable CUDA GPU or driver (cuInit: " + getattr(err, "name", str(err)) + ")")
err, count = driver.cuDeviceGetCount()
if int(err) != 0 or count == 0:
    out("no CUDA device is visible")
try:
    cupti.activity_enable(cupti.ActivityKind.MEMCPY)
    keep = (lambda *a: None, object())
    handle = cupti.subscribe(keep[0], keep[1])
    cupti.unsubscribe(handle)
    cupti.activity_disable(cupti.ActivityKind.MEMCPY)
except cupti.cuptiError as exc:
    out("CUPTI cannot trace with this CUDA driver (" + str(exc) + ")")
out(None)
"""


class TraceError(Exception):
    """The trace could not be made; the message is one line (exit 2)."""


@dataclass
class TraceRun:
    command: list
    exit_code: int
    wall_s: float
    processes: list = field(default_factory=list)   # each process's file, as written
    aggregate: Aggregator = field(default_factory=Aggregator)
    executed: Optional[dict] = None                  # path -> set of lines, when line events were on
    notes: list = field(default_factory=list)

    @property
    def pinned(self) -> list:
        return [p["aggregate"]["pinned"] for p in self.processes if p.get("status") == "ok"]


def program_command(args: list) -> list:
    """``script.py ARGS`` and ``-m module ARGS`` run under this interpreter; anything else as given."""
    if not args:
        raise TraceError("no program to run (pinlint trace [OPTIONS] -- COMMAND [ARGS...])")
    first = args[0]
    if first == "-m" or first.endswith((".py", ".pyw")):
        return [sys.executable, *args]
    return list(args)


def preflight(timeout: float = 120) -> Optional[str]:
    """None when CUPTI can trace here, else why not (asked in a child process: this one stays
    free of CUDA)."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "checking for a GPU and CUPTI timed out"
    for line in reversed(done.stdout.splitlines()):
        try:
            return json.loads(line)["problem"]
        except (ValueError, KeyError, TypeError):
            continue
    last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    return f"checking for a GPU and CUPTI failed ({last[:160]})"


def environment(out_dir: str, kernels: bool) -> dict:
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOT) + (os.pathsep + old if old else "")
    env["PINLINT_TRACE_HOME"] = str(HOME)
    env[ENV_DIR] = out_dir
    env[ENV_KERNELS] = "1" if kernels else "0"
    return env


def run(command: list, kernels: bool = False) -> TraceRun:
    with tempfile.TemporaryDirectory(prefix="pinlint-trace-") as out_dir:
        started = time.perf_counter()
        code = _wait(command, environment(out_dir, kernels))
        wall = time.perf_counter() - started
        processes = _read(Path(out_dir))
    return collect(command, code, wall, processes)


def _wait(command: list, env: dict) -> int:
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        raise TraceError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    # Ctrl-C reaches the program directly (same process group); a SIGTERM to pinlint is passed on.
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)


def _read(out_dir: Path) -> list:
    found = []
    for path in sorted(out_dir.glob("*.json")):
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return found


def collect(command: list, code: int, wall: float, processes: list) -> TraceRun:
    """Merge the processes' files; raise TraceError when none of them recorded anything."""
    failed = [p for p in processes if p.get("status") != "ok"]
    recorded = [p for p in processes if p.get("status") == "ok"]
    root_failure = next((p for p in failed if p.get("root")), None)
    if root_failure is not None and (code == RECORDER_FAILED or not recorded):
        raise TraceError(f"the recorder could not start in the program: {root_failure.get('error')}")
    if not recorded:
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        raise TraceError(f"no process of the program wrote a trace ({how}); the recorder needs a Python program "
                         "that ends normally (not through os._exit or a signal, and not run with -E or -I)")
    run = TraceRun(list(command), code, wall, processes)
    executed: Optional[dict] = None
    for process in recorded:
        run.aggregate.merge_dict(process["aggregate"])
        if process.get("executed") is not None:
            executed = executed or {}
            for path, lines in process["executed"].items():
                executed.setdefault(path, set()).update(lines)
        for what, number in process.get("counts", {}).items():
            run.notes.append(f"pid {process['pid']}: {number} {what}")
        for error, number in process.get("callback_errors", {}).items():
            run.notes.append(f"pid {process['pid']}: {number} recorder error(s) inside CUPTI callbacks: {error}")
    run.executed = executed
    for process in failed:
        run.notes.append(f"pid {process.get('pid')} ran unrecorded: {process.get('error')}")
    for table in sorted(run.aggregate.capped):
        run.notes.append(f"more than {run.aggregate.max_lines} distinct {table} lines: the rest are pooled "
                         "under <other lines>")
    return run
