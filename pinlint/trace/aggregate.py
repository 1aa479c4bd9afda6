"""Per-line aggregation as events arrive, in bounded memory.

Copies are kept per (line, driver function, direction, host memory kind, library); pinned
allocations per (line, function, registration or not, flags); frees per (line, function). Each
keeps counts, totals and bounded samples (``stats.Stat``). A ledger of live pinned buffers gives
the program's pinned bytes over time and, per buffer, how many copies used it (what PIN008 and
PIN009 read at run time). Past ``MAX_LINES`` distinct keys of one sort, the rest are pooled under
one ``<other lines>`` entry and the report says so.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from .events import Copy, HostAlloc, HostFree, Kernel, Site
from .stats import Stat

MAX_LINES = 20_000
MAX_SET = 16          # streams, callers per line
MAX_BUFFERS = 1024    # distinct host buffers counted per line
MAX_KERNEL_NAMES = 200
TIMELINE_POINTS = 2000
TRANSFERS_CAP = 10    # "10 or more" copies per buffer
PEAK_HOLDERS = 5      # lines named with the peak of pinned memory
EXACT_HOLDERS = 64    # up to this many holding lines the peak's holders are taken at every new peak;
PEAK_STEP = 1.01      # beyond, when the peak has grown by 1% since they were taken (bounded work)
OVERFLOW = Site("<other lines>", 0, "", False)


def site_to_json(site: Site) -> list:
    return [site.filename, site.line, site.function, site.user]


def site_from_json(data) -> Site:
    return Site(str(data[0]), int(data[1]), str(data[2]), bool(data[3]))


class Runs:
    """The distinct executions of a line that made its copies or allocations (``lines.LineRuns``);
    unknown where line events are not available."""

    def __init__(self) -> None:
        self.ids: set = set()
        self.known = True
        self.capped = False

    def add(self, run: int) -> None:
        if run < 0:
            self.known = False
        elif len(self.ids) < MAX_BUFFERS:
            self.ids.add(run)
        else:
            self.capped = self.capped or run not in self.ids

    @property
    def executions(self) -> Optional[int]:
        """How many times the line ran while it made copies (a lower bound past the cap), or None."""
        return len(self.ids) if self.known and self.ids else None

    def merge(self, other: "Runs") -> None:
        self.known = self.known and other.known
        offset = max(self.ids, default=-1) + 1  # another process's executions are other executions
        for run in other.ids:
            self.add(run + offset)

    @classmethod
    def from_executions(cls, executions) -> "Runs":
        runs = cls()
        if executions is None:
            runs.known = False
        else:
            runs.ids = set(range(int(executions)))
        return runs


@dataclass
class CopyLine:
    site: Site
    api: str
    direction: str
    host_kind: str
    library: str = ""
    blocking: bool = False  # the library synchronized inside the same call
    default_stream: bool = False
    count: int = 0
    nbytes: int = 0
    device_ns: Stat = field(default_factory=Stat)
    host_ns: Stat = field(default_factory=Stat)
    gbps: Stat = field(default_factory=Stat)
    streams: set = field(default_factory=set)
    callers: set = field(default_factory=set)
    buffers: set = field(default_factory=set)
    buffers_capped: bool = False
    runs: Runs = field(default_factory=lambda: Runs())

    @property
    def key(self) -> tuple:
        return (self.site, self.api, self.direction, self.host_kind, self.library, self.blocking, self.default_stream)

    @property
    def asynchronous(self) -> bool:
        return "Async" in self.api and not self.blocking

    def add(self, copy: Copy) -> None:
        self.count += 1
        self.nbytes += copy.nbytes
        self.device_ns.add(copy.device_ns)
        self.host_ns.add(copy.host_ns)
        if copy.device_ns > 0:
            self.gbps.add(copy.nbytes / copy.device_ns)  # bytes per ns = GB/s
        _bounded_add(self.streams, copy.stream)
        self.runs.add(copy.run)
        for caller in copy.callers:
            _bounded_add(self.callers, caller)
        if copy.host_ptr:
            if len(self.buffers) < MAX_BUFFERS:
                self.buffers.add(copy.host_ptr)
            elif copy.host_ptr not in self.buffers:
                self.buffers_capped = True

    def merge(self, other: "CopyLine") -> None:
        self.count += other.count
        self.nbytes += other.nbytes
        for mine, theirs in ((self.device_ns, other.device_ns), (self.host_ns, other.host_ns),
                             (self.gbps, other.gbps)):
            mine.merge(theirs)
        for mine, theirs in ((self.streams, other.streams), (self.callers, other.callers)):
            for item in theirs:
                _bounded_add(mine, item)
        self.buffers |= other.buffers  # addresses of different processes: an upper bound
        self.buffers_capped = self.buffers_capped or other.buffers_capped
        self.runs.merge(other.runs)

    def to_dict(self) -> dict:
        return {"site": site_to_json(self.site), "api": self.api, "direction": self.direction,
                "host_kind": self.host_kind, "library": self.library, "blocking": self.blocking,
                "default_stream": self.default_stream, "executions": self.runs.executions, "count": self.count, "bytes": self.nbytes,
                "device_ns": self.device_ns.to_dict(), "host_ns": self.host_ns.to_dict(),
                "gbps": self.gbps.to_dict(), "streams": sorted(self.streams),
                "callers": sorted([list(c) for c in self.callers]),
                "buffers": len(self.buffers), "buffers_capped": self.buffers_capped}

    @classmethod
    def from_dict(cls, data: dict) -> "CopyLine":
        line = cls(site_from_json(data["site"]), data["api"], data["direction"], data["host_kind"],
                   data.get("library", ""), bool(data.get("blocking")), bool(data.get("default_stream")),
                   int(data["count"]), int(data["bytes"]),
                   Stat.from_dict(data["device_ns"]), Stat.from_dict(data["host_ns"]), Stat.from_dict(data["gbps"]),
                   set(data.get("streams", ())), {(c[0], int(c[1])) for c in data.get("callers", ())})
        line.buffers = set(range(int(data.get("buffers", 0))))  # only the number survives the file
        line.buffers_capped = bool(data.get("buffers_capped"))
        line.runs = Runs.from_executions(data.get("executions"))
        return line


@dataclass
class AllocLine:
    site: Site
    api: str
    registered: bool
    flags: int
    library: str = ""
    count: int = 0
    nbytes: int = 0
    largest: int = 0
    host_ns: Stat = field(default_factory=Stat)
    freed: int = 0
    transfers: Counter = field(default_factory=Counter)  # copies per freed buffer (capped) -> buffers
    live_transfers: Counter = field(default_factory=Counter)  # the same for buffers still pinned at exit
    callers: set = field(default_factory=set)
    runs: Runs = field(default_factory=lambda: Runs())

    @property
    def key(self) -> tuple:
        return (self.site, self.api, self.registered, self.flags, self.library)

    def add(self, alloc: HostAlloc) -> None:
        self.count += 1
        self.nbytes += alloc.nbytes
        self.largest = max(self.largest, alloc.nbytes)
        self.host_ns.add(alloc.host_ns)
        self.runs.add(alloc.run)
        for caller in alloc.callers:
            _bounded_add(self.callers, caller)

    def merge(self, other: "AllocLine") -> None:
        self.count += other.count
        self.nbytes += other.nbytes
        self.largest = max(self.largest, other.largest)
        self.host_ns.merge(other.host_ns)
        self.freed += other.freed
        self.transfers.update(other.transfers)
        self.live_transfers.update(other.live_transfers)
        self.runs.merge(other.runs)
        for item in other.callers:
            _bounded_add(self.callers, item)

    def to_dict(self, live: Optional[Counter] = None) -> dict:
        """``live``: copies per buffer of this line still pinned when the process ends."""
        live = self.live_transfers + (live or Counter())
        return {"site": site_to_json(self.site), "api": self.api, "registered": self.registered, "flags": self.flags,
                "library": self.library, "count": self.count, "bytes": self.nbytes, "largest": self.largest,
                "host_ns": self.host_ns.to_dict(), "freed": self.freed, "executions": self.runs.executions,
                "transfers_per_buffer": {str(k): v for k, v in sorted(self.transfers.items())},
                "transfers_per_live_buffer": {str(k): v for k, v in sorted(live.items())},
                "callers": sorted([list(c) for c in self.callers])}

    @classmethod
    def from_dict(cls, data: dict) -> "AllocLine":
        line = cls(site_from_json(data["site"]), data["api"], bool(data["registered"]), int(data["flags"]),
                   data.get("library", ""), int(data["count"]), int(data["bytes"]), int(data.get("largest", 0)),
                   Stat.from_dict(data["host_ns"]), int(data.get("freed", 0)),
                   Counter({int(k): int(v) for k, v in data.get("transfers_per_buffer", {}).items()}),
                   {(c[0], int(c[1])) for c in data.get("callers", ())})
        line.live_transfers = Counter({int(k): int(v) for k, v in data.get("transfers_per_live_buffer", {}).items()})
        line.runs = Runs.from_executions(data.get("executions"))
        return line

    def buffers_by_transfers(self) -> Counter:
        """Copies per buffer (capped) -> buffers, freed or still pinned at the end."""
        return self.transfers + self.live_transfers


@dataclass
class FreeLine:
    site: Site
    api: str
    count: int = 0
    host_ns: Stat = field(default_factory=Stat)

    @property
    def key(self) -> tuple:
        return (self.site, self.api)

    def merge(self, other: "FreeLine") -> None:
        self.count += other.count
        self.host_ns.merge(other.host_ns)

    def to_dict(self) -> dict:
        return {"site": site_to_json(self.site), "api": self.api, "count": self.count,
                "host_ns": self.host_ns.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> "FreeLine":
        return cls(site_from_json(data["site"]), data["api"], int(data["count"]), Stat.from_dict(data["host_ns"]))


class PinnedLedger:
    """Live pinned buffers (allocated or registered): bytes over time, peak, copies per buffer."""

    def __init__(self) -> None:
        self.live: dict = {}      # address -> [nbytes, AllocLine, copies]
        self._starts: list = []   # sorted addresses of live buffers
        self.live_bytes = 0
        self.peak_bytes = 0
        self.peak_t_ns = 0
        self.timeline: list = []  # [(host ns, live bytes)], halved whenever it doubles its bound
        self.held: dict = {}      # id(AllocLine) -> [AllocLine, live bytes, live buffers]
        self.peak_holders: list = []  # [(AllocLine, bytes, buffers)], the largest holders at the peak
        self._holders_at = 0      # the peak the holders were taken at

    def allocated(self, ptr: int, nbytes: int, line: AllocLine, t_ns: int) -> None:
        if not ptr:
            return
        if ptr in self.live:  # an address handed out again without a free we saw
            self.freed(ptr, t_ns)
        self.live[ptr] = [nbytes, line, 0]
        bisect.insort(self._starts, ptr)
        holder = self.held.setdefault(id(line), [line, 0, 0])
        holder[1] += nbytes
        holder[2] += 1
        self._moved(nbytes, t_ns)

    def freed(self, ptr: int, t_ns: int) -> None:
        entry = self.live.pop(ptr, None)
        if entry is None:
            return
        del self._starts[bisect.bisect_left(self._starts, ptr)]
        nbytes, line, copies = entry
        line.freed += 1
        line.transfers[min(copies, TRANSFERS_CAP)] += 1
        holder = self.held[id(line)]
        holder[1] -= nbytes
        holder[2] -= 1
        if holder[2] == 0:
            del self.held[id(line)]
        self._moved(-nbytes, t_ns)

    def used(self, ptr: int) -> None:
        """A copy touched ``ptr``: count it for the live buffer that contains it."""
        index = bisect.bisect_right(self._starts, ptr) - 1
        if index < 0:
            return
        start = self._starts[index]
        entry = self.live[start]
        if ptr < start + max(entry[0], 1):
            entry[2] += 1

    def _moved(self, delta: int, t_ns: int) -> None:
        self.live_bytes += delta
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes, self.peak_t_ns = self.live_bytes, t_ns
            if len(self.held) <= EXACT_HOLDERS or self.peak_bytes >= self._holders_at * PEAK_STEP:
                self._take_holders()
        self.timeline.append((t_ns, self.live_bytes))
        if len(self.timeline) > 2 * TIMELINE_POINTS:
            self.timeline = self.timeline[::2]

    def _take_holders(self) -> None:
        largest = sorted(self.held.values(), key=lambda h: -h[1])[:PEAK_HOLDERS]
        self.peak_holders = [(line, nbytes, buffers) for line, nbytes, buffers in largest]
        self._holders_at = self.peak_bytes

    def live_transfers(self) -> dict:
        """id(AllocLine) -> Counter of copies per buffer still pinned now."""
        found: dict = {}
        for _, line, copies in self.live.values():
            found.setdefault(id(line), Counter())[min(copies, TRANSFERS_CAP)] += 1
        return found

    def to_dict(self) -> dict:
        at_exit = Counter(min(copies, TRANSFERS_CAP) for _, _, copies in self.live.values())
        return {"peak_bytes": self.peak_bytes, "peak_t_ns": self.peak_t_ns, "live_at_exit_bytes": self.live_bytes,
                "live_at_exit_buffers": len(self.live),
                "transfers_per_live_buffer": {str(k): v for k, v in sorted(at_exit.items())},
                "peak_holders": [{"site": site_to_json(line.site), "api": line.api, "bytes": nbytes, "buffers": buffers,
                                  "callers": sorted([list(c) for c in line.callers])}
                                 for line, nbytes, buffers in self.peak_holders],
                "timeline": [list(p) for p in self.timeline]}


class Aggregator:
    """The sink of a trace: every event folded into its line as it arrives."""

    def __init__(self, max_lines: int = MAX_LINES) -> None:
        self.max_lines = max_lines
        self.copies: dict = {}
        self.allocs: dict = {}
        self.frees: dict = {}
        self.kernel_count = 0
        self.kernel_ns = 0
        self.kernels_by_name: Counter = Counter()
        self.ledger = PinnedLedger()
        self.capped: set = set()   # which tables reached max_lines
        self.events = 0

    def add(self, event) -> None:
        self.events += 1
        if isinstance(event, Copy):
            key = (event.site, event.api, event.direction, event.host_kind, event.library, event.blocking,
                   event.default_stream)
            line = self._line(self.copies, key, "copies",
                              lambda site: CopyLine(site, event.api, event.direction, event.host_kind, event.library,
                                                    event.blocking, event.default_stream))
            line.add(event)
        elif isinstance(event, HostAlloc):
            key = (event.site, event.api, event.registered, event.flags, event.library)
            line = self._line(self.allocs, key, "allocations",
                              lambda site: AllocLine(site, event.api, event.registered, event.flags, event.library))
            line.add(event)
            self.ledger.allocated(event.ptr, event.nbytes, line, event.t_ns)
        elif isinstance(event, HostFree):
            line = self._line(self.frees, (event.site, event.api), "frees", lambda site: FreeLine(site, event.api))
            line.count += 1
            line.host_ns.add(event.host_ns)
            self.ledger.freed(event.ptr, event.t_ns)
        elif isinstance(event, Kernel):
            self.kernel_count += 1
            self.kernel_ns += event.device_ns
            name = event.name if (event.name in self.kernels_by_name
                                  or len(self.kernels_by_name) < MAX_KERNEL_NAMES) else "<other kernels>"
            self.kernels_by_name[name] += event.device_ns

    def touched(self, pointer: int) -> None:
        """A copy call named ``pointer``: one more transfer for the live pinned buffer holding it."""
        self.ledger.used(pointer)

    def _line(self, table: dict, key: tuple, what: str, make):
        line = table.get(key)
        if line is not None:
            return line
        if len(table) >= self.max_lines:
            self.capped.add(what)
            key = (OVERFLOW,) + key[1:]
            line = table.get(key)
            if line is not None:
                return line
        line = table[key] = make(key[0])
        return line

    # ------------------------------------------------------------------ files and merging
    def to_dict(self) -> dict:
        live = self.ledger.live_transfers()
        return {"copies": [l.to_dict() for l in self.copies.values()],
                "allocations": [l.to_dict(live.get(id(l))) for l in self.allocs.values()],
                "frees": [l.to_dict() for l in self.frees.values()],
                "kernels": {"count": self.kernel_count, "device_ns": self.kernel_ns,
                            "by_name": dict(self.kernels_by_name.most_common())},
                "pinned": self.ledger.to_dict(), "capped": sorted(self.capped), "events": self.events}

    @classmethod
    def from_dict(cls, data: dict) -> "Aggregator":
        agg = cls()
        agg.merge_dict(data)
        return agg

    def merge_dict(self, data: dict) -> None:
        """Fold another process's aggregate in (its pinned ledger stays that process's own)."""
        for table, cls, items in ((self.copies, CopyLine, data.get("copies", ())),
                                  (self.allocs, AllocLine, data.get("allocations", ())),
                                  (self.frees, FreeLine, data.get("frees", ()))):
            for item in items:
                line = cls.from_dict(item)
                if line.key in table:
                    table[line.key].merge(line)
                else:
                    table[line.key] = line
        kernels = data.get("kernels", {})
        self.kernel_count += int(kernels.get("count", 0))
        self.kernel_ns += int(kernels.get("device_ns", 0))
        self.kernels_by_name.update({k: int(v) for k, v in kernels.get("by_name", {}).items()})
        self.capped.update(data.get("capped", ()))
        self.events += int(data.get("events", 0))

    def copy_lines(self, where: Optional[Site] = None) -> list:
        return [l for l in self.copies.values() if where is None or l.site == where]


def _bounded_add(items: set, item) -> None:
    if len(items) < MAX_SET:
        items.add(item)
