"""What the run showed, in pinlint's codes.

Problems (they make the exit status 1): PIN001, a pageable host buffer in an asynchronous copy
(an asynchronous driver call that the library did not make blocking, on any stream; the message
says when it was the default stream, where the static rule asks the code to show an
asynchronous intent); PIN007, pageable memory copied by a line that ran ``min_repeats`` times or more (one call
that copies many buffers, ``model.to("cuda")``, is one run); PIN002, pinned allocations or
registrations made by a line that ran ``min_repeats`` times or more. Where line events are not
available (Python < 3.12) the number of copies or allocations stands in for the runs. Copies smaller than ``min_bytes``
(median) are shown in the tables but not reported, as PIN007's static threshold does: they are
latency-bound and pinning buys little. PIN008, a pinned buffer (of ``pin008_min_bytes`` or more)
that took part in exactly one transfer before it was freed (or before the program ended), from a
line that did not pin repeatedly (that is PIN002); PIN009, a process whose peak of pinned host
memory (live allocations and registrations) exceeded ``max_pinned_share`` of physical memory,
reported at the line that held the most at the peak. Context (never a problem by itself): write-combined
allocations (PIN003: a CPU read of them is slow on most platforms) and mapped ones (PIN004), of
``min_bytes`` or more.
A ``# noqa: CODE`` on the line silences an observation as it silences a static finding.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Optional

from .aggregate import Aggregator, AllocLine
from .aggregate import site_from_json
from .events import DEVICEMAP, UNATTRIBUTED, WRITECOMBINED, Site, flag_names
from .units import duration, size

PROBLEMS = ("PIN001", "PIN002", "PIN007", "PIN008", "PIN009")


@dataclass(frozen=True)
class Observation:
    code: str
    site: Site
    message: str
    figures: dict = field(default_factory=dict)
    callers: frozenset = frozenset()  # (filename, line) of the user's frames further out

    @property
    def problem(self) -> bool:
        return self.code in PROBLEMS

    @property
    def lines(self) -> frozenset:
        """Every user line this observation can be matched to: its own and its callers'."""
        return frozenset({(self.site.filename, self.site.line)}) | self.callers


@dataclass(frozen=True)
class Thresholds:
    min_repeats: int = 3
    min_bytes: int = 64 * 1024          # pin007-min-bytes: PIN007, and the context of PIN003/PIN004
    pin001_min_bytes: int = 64 * 1024
    pin008_min_bytes: int = 16 << 20
    max_pinned_share: float = 0.25      # pin009-max-share, of physical memory


DEFAULT_THRESHOLDS = Thresholds()


def copy_figures(lines: list) -> dict:
    count = sum(l.count for l in lines)
    nbytes = sum(l.nbytes for l in lines)
    host = [v for l in lines for v in l.host_ns.sample]
    gbps = [v for l in lines for v in l.gbps.sample]
    return {"count": count, "bytes": nbytes, "median_bytes": nbytes // max(count, 1),
            "apis": sorted({l.api for l in lines}), "direction": lines[0].direction,
            "host_kinds": sorted({l.host_kind for l in lines}),
            "gbps_median": statistics.median(gbps) if gbps else None,
            "host_ns_total": sum(l.host_ns.total for l in lines),
            "host_ns_median": statistics.median(host) if host else None,
            "device_ns_total": sum(l.device_ns.total for l in lines),
            "buffers": max((len(l.buffers) for l in lines), default=0),
            "executions": executions(lines),
            "default_stream": all(l.default_stream for l in lines),
            "libraries": sorted({l.library for l in lines if l.library})}


def executions(lines: list):
    """How many times the line ran while making these records (None when not counted)."""
    if not lines or any(l.runs.executions is None for l in lines):
        return None
    return len(set().union(*(l.runs.ids for l in lines)))


def repeated(lines: list, thresholds: "Thresholds") -> bool:
    runs = executions(lines)
    return (runs if runs is not None else sum(l.count for l in lines)) >= thresholds.min_repeats


def alloc_figures(lines: list) -> dict:
    host = [v for l in lines for v in l.host_ns.sample]
    return {"count": sum(l.count for l in lines), "bytes": sum(l.nbytes for l in lines),
            "largest": max(l.largest for l in lines), "apis": sorted({l.api for l in lines}),
            "flags": sorted({l.flags for l in lines}), "registered": any(l.registered for l in lines),
            "host_ns_total": sum(l.host_ns.total for l in lines),
            "host_ns_median": statistics.median(host) if host else None,
            "freed": sum(l.freed for l in lines), "executions": executions(lines)}


def _callers(lines: list) -> frozenset:
    return frozenset(c for l in lines for c in l.callers)


def physical_memory() -> int:
    """The machine's RAM in bytes (0 when the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def observe(aggregate: Aggregator, thresholds: Thresholds = DEFAULT_THRESHOLDS, suppressed=None,
            pinned: Optional[list] = None, ram_bytes: Optional[int] = None) -> list:
    """Observations sorted by file and line; ``suppressed(code, site)`` drops noqa'd ones. ``pinned``:
    each process's pinned-memory ledger (``PinnedLedger.to_dict()``; by default the aggregate's own),
    judged against ``ram_bytes`` of physical memory (by default this machine's)."""
    ledgers = pinned if pinned is not None else [aggregate.ledger.to_dict()]
    ram = physical_memory() if ram_bytes is None else ram_bytes
    found = _copy_observations(aggregate, thresholds) + _alloc_observations(aggregate, thresholds) + \
        _pinned_peaks(ledgers, ram, thresholds)
    if suppressed is not None:
        found = [o for o in found if not (o.site.user and suppressed(o.code, o.site))]
    return sorted(found, key=lambda o: (o.site.filename, o.site.line, o.code))


def _copy_observations(aggregate: Aggregator, thresholds: Thresholds) -> list:
    groups: dict = defaultdict(list)
    for line in aggregate.copies.values():
        if line.host_kind == "pageable":
            groups[(line.site, line.direction)].append(line)
    found = []
    for (site, _direction), lines in groups.items():
        asynchronous = [l for l in lines if l.asynchronous]
        if asynchronous and _large(asynchronous, thresholds.pin001_min_bytes):
            figures = copy_figures(asynchronous)
            found.append(Observation("PIN001", site, _pin001_message(figures), figures, _callers(asynchronous)))
            continue
        if repeated(lines, thresholds) and _large(lines, thresholds.min_bytes):
            figures = copy_figures(lines)
            found.append(Observation("PIN007", site, _pin007_message(figures), figures, _callers(lines)))
    return found


def _large(lines: list, min_bytes: int) -> bool:
    count = sum(l.count for l in lines)
    return count and sum(l.nbytes for l in lines) / count >= min_bytes


def _direction(figures: dict) -> str:
    return "host-to-device" if figures["direction"] == "h2d" else "device-to-host"


def _gbps(figures: dict) -> str:
    return f"{figures['gbps_median']:.1f} GB/s" if figures["gbps_median"] is not None else "? GB/s"


def _pin001_message(f: dict) -> str:
    where = " on the default stream" if f.get("default_stream") else ""
    return (f"pageable host memory in an asynchronous {_direction(f)} copy{where} ({', '.join(f['apis'])}): "
            f"{f['count']} cop{'y' if f['count'] == 1 else 'ies'}, {size(f['bytes'])}, {_gbps(f)}; "
            f"the call held the host {duration(f['host_ns_total'])} in all "
            f"({duration(f['host_ns_median'] or 0)} each)")


def _times(f: dict) -> str:
    runs = f.get("executions")
    return f"; the line ran {runs} times" if runs is not None else ""


def _pin007_message(f: dict) -> str:
    buffers = f" from {f['buffers']} distinct buffer{'s' if f['buffers'] != 1 else ''}" if f["buffers"] else ""
    return (f"pageable host memory copied {f['count']} times from this line ({_direction(f)}{buffers}{_times(f)}): "
            f"{size(f['bytes'])} at {_gbps(f)}, {duration(f['device_ns_total'])} of copy time, "
            f"the calls held the host {duration(f['host_ns_total'])}")


def _alloc_observations(aggregate: Aggregator, thresholds: Thresholds) -> list:
    by_site: dict = defaultdict(list)
    for line in aggregate.allocs.values():
        by_site[line.site].append(line)
    found = []
    for site, lines in by_site.items():
        figures = alloc_figures(lines)
        if repeated(lines, thresholds):
            found.append(Observation("PIN002", site, _pin002_message(figures), figures, _callers(lines)))
        elif single_transfer(lines) and figures["largest"] >= thresholds.pin008_min_bytes and not figures["registered"]:
            # Registrations are left out, as in the static rule: registering filled memory and copying
            # once measured faster than the pageable copy on the H200 (pinlint/checks/pin008.py).
            found.append(Observation("PIN008", site, _pin008_message(figures), figures, _callers(lines)))
        for code, wanted in (("PIN003", _write_combined), ("PIN004", _mapped)):
            # Context only where it could matter: torch keeps a 4-byte mapped flag buffer, for one.
            chosen = [l for l in lines if wanted(l) and l.largest >= thresholds.min_bytes]
            if chosen:
                f = alloc_figures(chosen)
                found.append(Observation(code, site, _context_message(code, f), f, _callers(chosen)))
    return found


def single_transfer(lines: list) -> bool:
    """Every buffer the lines pinned took part in exactly one transfer (freed or pinned at exit)."""
    buffers = sum((l.buffers_by_transfers() for l in lines), Counter())
    return bool(buffers) and set(buffers) == {1}


def _pin008_message(f: dict) -> str:
    what = "registration" if f["registered"] else "allocation"
    return (f"pinned {what} ({', '.join(f['apis'])}, {size(f['largest'])}) used for exactly one transfer: "
            f"{duration(f['host_ns_total'])} to pin it; a pageable copy would have cost less than the pinning")


def _pinned_peaks(ledgers: list, ram: int, thresholds: Thresholds) -> list:
    found = []
    for ledger in ledgers:
        peak = ledger.get("peak_bytes", 0)
        if not ram or peak <= thresholds.max_pinned_share * ram:
            continue
        holders = ledger.get("peak_holders", [])
        site = site_from_json(holders[0]["site"]) if holders else UNATTRIBUTED
        callers = frozenset((c[0], int(c[1])) for h in holders[:1] for c in h.get("callers", ()))
        figures = {"peak_bytes": peak, "ram_bytes": ram, "share": peak / ram,
                   "holders": [{"site": h["site"], "api": h["api"], "bytes": h["bytes"], "buffers": h["buffers"]}
                               for h in holders]}
        found.append(Observation("PIN009", site, _pin009_message(figures, thresholds), figures, callers))
    return found


def _pin009_message(f: dict, thresholds: Thresholds) -> str:
    held = "; ".join(f"{h['site'][0]}:{h['site'][1]} {size(h['bytes'])} in {h['buffers']} "
                     f"buffer{'s' if h['buffers'] != 1 else ''}" for h in f["holders"]) or "lines unknown"
    return (f"peak pinned host memory {size(f['peak_bytes'])}, {f['share']:.0%} of the machine's "
            f"{size(f['ram_bytes'])} (more than pin009-max-share, {thresholds.max_pinned_share:.0%}): "
            f"page-locked memory cannot be paged out; held at the peak by {held}")


def _write_combined(line: AllocLine) -> bool:
    return not line.registered and bool(line.flags & WRITECOMBINED)  # bit 4 of a registration is I/O memory


def _mapped(line: AllocLine) -> bool:
    return bool(line.flags & DEVICEMAP)


def _pin002_message(f: dict) -> str:
    what = "pinned registrations" if f["registered"] else "pinned allocations"
    return (f"{f['count']} {what} on this line{_times(f)} ({', '.join(f['apis'])}), {size(f['bytes'])} in all: "
            f"{duration(f['host_ns_total'])} in the calls ({duration(f['host_ns_median'] or 0)} each); "
            f"{f['freed']} freed during the run")


def _context_message(code: str, f: dict) -> str:
    flags = ", ".join(flag_names(x) for x in f["flags"])
    noun = f"{f['count']} allocation{'s' if f['count'] != 1 else ''} ({size(f['bytes'])}, flags {flags})"
    if code == "PIN003":
        return f"write-combined pinned memory: {noun}; CPU reads of it are slow on most platforms"
    return f"mapped (zero-copy) pinned memory: {noun}; every kernel pass over it crosses the bus"


def observation_for(observations: list, code: str, line: tuple) -> Optional[Observation]:
    return next((o for o in observations if o.code == code and line in o.lines), None)


def copy_lines_at(aggregate: Aggregator, lines: set) -> list:
    return [l for l in aggregate.copies.values() if _touches(l, lines)]


def alloc_lines_at(aggregate: Aggregator, lines: set) -> list:
    return [l for l in aggregate.allocs.values() if _touches(l, lines)]


def _touches(line, lines: set) -> bool:
    if (line.site.filename, line.site.line) in lines:
        return True
    return any(caller in lines for caller in line.callers)

