"""The recorder: CUPTI's API callbacks and activity records in, events for a sink out.

An API callback on the calling thread sees the call enter and leave (how long it held the host,
which Python line made it, its parameters); the activity record, delivered later in a buffer,
says what the copy really was (memory kinds, bytes, device time, stream). The correlation id
joins the two. Nothing here imports CUPTI: ``cupti_glue`` wires a Recorder to it, and tests feed
CUPTI-shaped objects straight in.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable, Optional

from .events import (ACTIVITY_CONCURRENT_KERNEL, ACTIVITY_MEMCPY, DEFAULT_STREAMS, DIRECTIONS, MEMORY_KINDS,
                     UNATTRIBUTED, Copy, HostAlloc, HostFree, Kernel)
from .frames import Attributor

ENTER, EXIT = 0, 1  # CUpti_ApiCallbackSite
COPY, ALLOC, REGISTER, FREE, UNREGISTER, SYNC = "copy", "alloc", "register", "free", "unregister", "sync"
# Driver functions by name prefix; every library reaches the driver through one of these.
PREFIXES = (("cuMemcpy", COPY), ("cuMemHostAlloc", ALLOC), ("cuMemAllocHost", ALLOC),
            ("cuMemHostRegister", REGISTER), ("cuMemFreeHost", FREE), ("cuMemHostUnregister", UNREGISTER),
            ("cuStreamSynchronize", SYNC), ("cuCtxSynchronize", SYNC), ("cuEventSynchronize", SYNC))


def classify(function_name: str) -> Optional[str]:
    for prefix, kind in PREFIXES:
        if function_name.startswith(prefix):
            return kind
    return None


class _Memory:
    """Reads the call's out-parameters: a pointer written through ``void **``, a CUresult."""

    @staticmethod
    def pointer(address: int) -> int:
        import ctypes
        if not address:
            return 0
        return ctypes.c_void_p.from_address(address).value or 0

    @staticmethod
    def status(address: int) -> int:
        import ctypes
        return ctypes.c_int.from_address(address).value if address else 0


class Recorder:
    """Joins API calls with their activity records and hands each finished event to ``sink.add``."""

    def __init__(self, sink, attributor: Optional[Attributor] = None, params: Optional[Callable] = None,
                 memory=None, clock: Callable = time.perf_counter_ns, max_waiting: int = 200_000,
                 line_runs=None) -> None:
        self.sink = sink
        self.line_runs = line_runs    # .run_of(frame): which execution of its line a frame is in
        self.attributor = attributor or Attributor()
        self.params = params          # (function name, params pointer) -> the call's parameters, or None
        self.memory = memory or _Memory()
        self.clock = clock
        self.max_waiting = max_waiting
        self.lock = threading.RLock()
        self._entered: dict = {}      # correlation id -> host clock at entry
        self._waiting: dict = {}      # correlation id -> a finished copy call awaiting its record
        self._early: dict = {}        # correlation id -> a copy record that came before its call ended
        self._last_copy: dict = {}    # thread -> (waiting call, id of its Python frame, instruction)
        self.counts: Counter = Counter()  # other copies, failed calls, records lost to the cap
        self.errors: Counter = Counter()  # exceptions inside callbacks (CUPTI would swallow them)

    # ------------------------------------------------------------------ API callbacks
    def on_api(self, cbdata, frame) -> None:
        kind = classify(cbdata.function_name)
        if kind == SYNC:  # at entry, right after the copy it may belong to
            if cbdata.callback_site == ENTER:
                self._synchronized(frame)
            return
        if cbdata.callback_site == ENTER:
            self._entered[cbdata.correlation_id] = self.clock()  # last: our own work is not the call's
            return
        now = self.clock()
        started = self._entered.pop(cbdata.correlation_id, None)
        if started is None or kind is None:
            return
        if self.memory.status(cbdata.function_return_value) != 0:
            self.counts["failed calls"] += 1
            return
        site, library, callers, user = self.attributor.locate(frame)
        with self.lock:
            run = self.line_runs.run_of(user) if self.line_runs is not None and user is not None else -1
            if kind == COPY:
                self._copy_called(cbdata, now - started, site, library, callers, user, run)
            elif kind in (ALLOC, REGISTER):
                self._allocated(cbdata, kind, now - started, now, site, library, callers, run)
            else:
                params = self._params(cbdata)
                self.sink.add(HostFree(site, cbdata.function_name, getattr(params, "p", 0) or 0, now - started, now))

    def _params(self, cbdata):
        if self.params is None:
            return None
        return self.params(cbdata.function_name, cbdata.function_params)

    def _copy_called(self, cbdata, host_ns, site, library, callers, user, run) -> None:
        params = self._params(cbdata)
        h2d_ptr = _first(params, "src_host", "src")
        d2h_ptr = _first(params, "dst_host", "dst")
        stream = getattr(params, "h_stream", None)
        default_stream = stream is not None and int(stream) in DEFAULT_STREAMS
        call = [site, cbdata.function_name, host_ns, library, callers, h2d_ptr, d2h_ptr, False, default_stream, run]
        touched = getattr(self.sink, "touched", None)
        if touched is not None:  # now, while the buffer is live (its record may come after it is freed)
            for pointer in {h2d_ptr, d2h_ptr} - {0}:
                touched(pointer)
        if user is not None:
            self._last_copy[threading.get_ident()] = (call, _call_of(user))
        record = self._early.pop(cbdata.correlation_id, None)
        if record is not None:
            self._emit_copy(call, record)
            return
        if len(self._waiting) >= self.max_waiting:
            self._waiting.pop(next(iter(self._waiting)))
            self.counts["copies whose record never came (cap reached)"] += 1
        self._waiting[cbdata.correlation_id] = call

    def _synchronized(self, frame) -> None:
        """A synchronize made by the same call of the user's code as the copy just before it (the
        same frame at the same instruction) makes that copy blocking: CuPy's ``get()``, torch's
        ``.item()`` and ``.cpu()`` issue an asynchronous copy and wait for it themselves."""
        last = self._last_copy.pop(threading.get_ident(), None)
        if last is None:
            return
        user = self.attributor.user_frame(frame)
        if user is not None and last[1] == _call_of(user):
            last[0][7] = True

    def _allocated(self, cbdata, kind, host_ns, now, site, library, callers, run) -> None:
        params = self._params(cbdata)
        nbytes = getattr(params, "bytesize", 0) or 0
        flags = getattr(params, "flags_", 0) or 0
        if kind == ALLOC:
            ptr = self.memory.pointer(getattr(params, "pp", 0) or 0)
        else:
            ptr = getattr(params, "p", 0) or 0
        self.sink.add(HostAlloc(site, cbdata.function_name, nbytes, flags, host_ns, ptr, kind == REGISTER, now,
                                library, callers, run))

    # ------------------------------------------------------------------ activity records
    def on_activity(self, record) -> None:
        kind = record.kind
        if kind == ACTIVITY_MEMCPY:
            self._memcpy(record)
        elif kind == ACTIVITY_CONCURRENT_KERNEL:
            self.sink.add(Kernel(str(record.name), record.end - record.start, record.start))

    def _memcpy(self, record) -> None:
        fields = (record.correlation_id, record.copy_kind, record.src_kind, record.dst_kind, record.bytes,
                  record.end - record.start, record.stream_id, record.start)
        with self.lock:
            if fields[1] not in DIRECTIONS:
                self._waiting.pop(fields[0], None)
                self.counts["device-to-device and other copies"] += 1
                return
            call = self._waiting.pop(fields[0], None)
            if call is None and fields[0] in self._entered:
                self._early[fields[0]] = fields
                return
            self._emit_copy(call, fields)

    def _emit_copy(self, call, fields) -> None:
        _, copy_kind, src_kind, dst_kind, nbytes, device_ns, stream, start = fields
        direction = DIRECTIONS[copy_kind]
        host_kind = MEMORY_KINDS.get(src_kind if direction == "h2d" else dst_kind, "unknown")
        if call is None:  # no callback saw the call (a graph replay, a copy made before the recorder)
            self.sink.add(Copy(UNATTRIBUTED, "", direction, host_kind, nbytes, device_ns, 0, stream, start_ns=start))
            return
        site, api, host_ns, library, callers, h2d_ptr, d2h_ptr, blocking, default_stream, run = call
        self.sink.add(Copy(site, api, direction, host_kind, nbytes, device_ns, host_ns, stream,
                           h2d_ptr if direction == "h2d" else d2h_ptr, library, callers, blocking, default_stream,
                           run, start))

    def finish(self) -> None:
        """After the last flush: copies whose record never came are counted, early records kept."""
        with self.lock:
            if self._waiting:
                self.counts["copies whose record never came"] += len(self._waiting)
                self._waiting.clear()
            for fields in self._early.values():
                self._emit_copy(None, fields)
            self._early.clear()

    def guarded(self, method, *args) -> None:
        """Run a handler from a CUPTI callback: an exception there would vanish inside CUPTI's C
        caller (or kill the buffer thread), so it is counted and reported instead."""
        try:
            method(*args)
        except BaseException as exc:  # noqa: BLE001 - nothing may escape into CUPTI
            self.errors[f"{type(exc).__name__}: {exc}"[:200]] += 1


def _call_of(frame) -> tuple:
    """Which call a frame is making: the frame, its code and the instruction."""
    return (id(frame), frame.f_code, frame.f_lasti)


def _first(params, *names) -> int:
    for name in names:
        value = getattr(params, name, None)
        if value:
            return int(value)
    return 0
