"""CUPTI-shaped inputs for the trace tests: API callback data, activity records, and a recorder
fed with them (no CUPTI, no GPU)."""

from __future__ import annotations

import itertools
import sys
from types import SimpleNamespace

from pinlint.trace.aggregate import Aggregator
from pinlint.trace.events import Copy, HostAlloc, HostFree, Site
from pinlint.trace.frames import Attributor
from pinlint.trace.recorder import ENTER, EXIT, Recorder

USER = Site("/proj/train.py", 12, "main", True)
OTHER = Site("/proj/train.py", 20, "main", True)


class Memory:
    """Out-parameters: ``pointers`` maps a ``void **`` address to what the call wrote there."""

    def __init__(self) -> None:
        self.pointers: dict = {}
        self.failed: set = set()

    def pointer(self, address: int) -> int:
        return self.pointers.get(address, 0)

    def status(self, address: int) -> int:
        return 1 if address in self.failed else 0


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Feed:
    """A recorder over an aggregator, and the CUPTI side of each call, step by step."""

    def __init__(self, sink=None, attributor=None, line_runs=None) -> None:
        self.sink = sink if sink is not None else Aggregator()
        self.memory = Memory()
        self.clock = Clock()
        self.params: dict = {}
        self.recorder = Recorder(self.sink, attributor or Attributor(roots=(), cwd="/"),
                                 params=lambda name, pointer: self.params.get(pointer), memory=self.memory,
                                 clock=self.clock, line_runs=line_runs)
        self._ids = itertools.count(1)

    def call(self, name: str, params=None, held_ns: int = 1000, frame=None, failed: bool = False) -> int:
        correlation = next(self._ids)
        pointer = 0x5000 + correlation if params is not None else 0
        if params is not None:
            self.params[pointer] = params
        if failed:
            self.memory.failed.add(pointer + 1)
        data = SimpleNamespace(callback_site=ENTER, function_name=name, correlation_id=correlation,
                               function_params=pointer, function_return_value=pointer + 1)
        frame = frame or sys._getframe(1)
        self.recorder.on_api(data, frame)
        self.clock.now += held_ns
        data.callback_site = EXIT
        self.recorder.on_api(data, frame)
        return correlation

    def record(self, correlation: int, direction: str = "h2d", host_kind: int = 1, nbytes: int = 1 << 20,
               device_ns: int = 100_000, stream: int = 13) -> None:
        self.recorder.on_activity(SimpleNamespace(
            kind=1, correlation_id=correlation, copy_kind=1 if direction == "h2d" else 2,
            src_kind=host_kind if direction == "h2d" else 3, dst_kind=3 if direction == "h2d" else host_kind,
            bytes=nbytes, start=5_000, end=5_000 + device_ns, stream_id=stream))


def copy(site=USER, api="cuMemcpyHtoDAsync_v2", direction="h2d", host_kind="pageable", nbytes=1 << 20,
         device_ns=100_000, host_ns=40_000_000, **more) -> Copy:
    return Copy(site, api, direction, host_kind, nbytes, device_ns, host_ns, **more)


def alloc(site=USER, nbytes=1 << 20, flags=0, host_ns=5_000_000, ptr=0x10000, **more) -> HostAlloc:
    return HostAlloc(site, "cuMemHostAlloc", nbytes, flags, host_ns, ptr, **more)


def free(site=USER, ptr=0x10000, host_ns=1_000_000, **more) -> HostFree:
    return HostFree(site, "cuMemFreeHost", ptr, host_ns, **more)


def aggregate(*events) -> Aggregator:
    agg = Aggregator()
    for event in events:
        agg.add(event)
    return agg
