"""``--check``: the static findings of the files that ran, against what the run recorded.

Each static finding is *confirmed* (the run saw what it claims, with the cost), *contradicted*
(its line ran and the run saw otherwise: the buffer was pinned, the allocator reused its memory),
*not exercised* (its line never ran), or *not observable* (its claim is about something CUPTI does
not record: a CPU read, a race, CuPy's staging memcpy; the row says what was seen). Each observed
problem with no static finding of its kind on its line is *missed by the static analysis*.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from .aggregate import Aggregator
from .events import DEVICEMAP, WRITECOMBINED
from .observe import (DEFAULT_THRESHOLDS, Observation, Thresholds, alloc_figures, alloc_lines_at, copy_figures,
                      copy_lines_at, repeated)
from .units import duration, size

CONFIRMED = "confirmed"
CONTRADICTED = "contradicted"
NOT_EXERCISED = "not exercised"
NOT_OBSERVABLE = "not observable"
MISSED = "missed by the static analysis"
FAILING = (CONTRADICTED, MISSED)  # what makes ``--check`` exit 1
# A runtime observation matches a static finding of any of these codes (PIN001 wins over PIN007
# at the same copy, so either one covers a pageable copy the run saw).
MATCHES = {"PIN001": {"PIN001", "PIN007"}, "PIN007": {"PIN007", "PIN001"}, "PIN002": {"PIN002"}, "PIN008": {"PIN008"}}
# Observed with no static check behind them: never "missed by the static analysis".
RUNTIME_ONLY = frozenset({"PIN009"})


@dataclass(frozen=True)
class JoinRow:
    status: str
    code: str
    filename: str
    row: int
    column: int
    message: str                 # the static finding's message, or the observation's
    detail: str = ""             # what the run showed, in words
    figures: dict = field(default_factory=dict)

    @property
    def failing(self) -> bool:
        return self.status in FAILING


def join(findings: list, observations: list, aggregate: Aggregator, executed: Optional[dict],
         checked: set, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list:
    """``findings``: the static analysis of the files in ``checked`` (the user's files that ran)."""
    rows = [_judge(f, aggregate, executed, thresholds) for f in findings if f.code != "PIN000"]
    for observation in observations:
        if not observation.problem or not observation.site.user or observation.code in RUNTIME_ONLY:
            continue
        if observation.site.filename not in checked and not _in_checked(observation, checked):
            continue
        if not any(f.code in MATCHES[observation.code] and _span(f) & observation.lines for f in findings):
            detail = "no static finding on this line"
            if observation.code == "PIN001" and observation.figures.get("default_stream"):
                detail += ("; the copy ran on the default stream, and static PIN001 reports only a copy whose "
                           "code asks for asynchrony (a stream, non_blocking=True, blocking=False, *_async)")
            rows.append(JoinRow(MISSED, observation.code, observation.site.filename, observation.site.line, 1,
                                observation.message, detail, observation.figures))
    return sorted(rows, key=lambda r: (r.filename, r.row, r.code, r.status))


def _in_checked(observation: Observation, checked: set) -> bool:
    return any(filename in checked for filename, _ in observation.callers)


def _span(finding) -> set:
    rows = range(finding.location.row, max(finding.end_location.row, finding.location.row) + 1)
    return {(finding.filename, row) for row in rows}


def _ran(lines: set, executed: Optional[dict], recorded: bool) -> bool:
    if recorded:
        return True
    if executed is None:
        return False
    return any(row in executed.get(filename, ()) for filename, row in lines)


def _row(finding, status: str, detail: str, figures: Optional[dict] = None) -> JoinRow:
    return JoinRow(status, finding.code, finding.filename, finding.location.row, finding.location.column,
                   finding.message, detail, figures or {})


def _never_ran(finding, executed: Optional[dict]) -> JoinRow:
    why = "the line never ran" if executed is not None else \
        "no CUDA call was recorded from this line (which lines ran is known on Python 3.12+ only)"
    return _row(finding, NOT_EXERCISED, why)


def _judge(finding, aggregate: Aggregator, executed: Optional[dict], thresholds: Thresholds) -> JoinRow:
    lines = _span(finding)
    if finding.code in ("PIN001", "PIN007"):
        return _judge_copy(finding, lines, aggregate, executed)
    if finding.code == "PIN002":
        return _judge_alloc(finding, lines, aggregate, executed, thresholds)
    if finding.code in ("PIN003", "PIN004"):
        return _judge_flags(finding, aggregate, executed)
    if finding.code == "PIN008":
        return _judge_single_transfer(finding, lines, aggregate, executed)
    copies = copy_lines_at(aggregate, lines)
    if not _ran(lines, executed, bool(copies)):
        return _never_ran(finding, executed)
    return _row(finding, NOT_OBSERVABLE, "CUPTI records copies and allocations, not the CPU's reads and writes: "
                                         "`pinlint verify` shows this rule's effect with wrong data")


def _judge_copy(finding, lines: set, aggregate: Aggregator, executed: Optional[dict]) -> JoinRow:
    copies = copy_lines_at(aggregate, lines)
    if not _ran(lines, executed, bool(copies)):
        return _never_ran(finding, executed)
    if not copies:
        return _row(finding, CONTRADICTED, "the line ran but made no host<->device copy")
    pageable = [c for c in copies if c.host_kind == "pageable"]
    if pageable:
        figures = copy_figures(pageable)
        detail = (f"{figures['count']} pageable cop{'y' if figures['count'] == 1 else 'ies'}, "
                  f"{size(figures['bytes'])} at {_rate(figures)}, the calls held the host "
                  f"{duration(figures['host_ns_total'])}")
        if finding.code == "PIN001" and not any(c.asynchronous for c in pageable):
            detail += f"; the library made the copy blocking ({', '.join(figures['apis'])})"
        return _row(finding, CONFIRMED, detail, figures)
    figures = copy_figures(copies)
    kinds = ", ".join(figures["host_kinds"])
    if finding.code == "PIN007" and figures["direction"] == "h2d" and "cupy" in figures["libraries"] \
            and figures["host_kinds"] == ["pinned"]:
        return _row(finding, NOT_OBSERVABLE,
                    f"the DMA ran from pinned memory ({figures['count']} copies at {_rate(figures)}): CuPy staged "
                    "the pageable source through its pinned pool, and the CPU memcpy into it, which is what "
                    "this finding costs, is not a CUDA call", figures)
    return _row(finding, CONTRADICTED, f"the copy ran from {kinds} memory ({figures['count']} copies at "
                                       f"{_rate(figures)})", figures)


def _judge_alloc(finding, lines: set, aggregate: Aggregator, executed: Optional[dict],
                 thresholds: Thresholds) -> JoinRow:
    allocs = alloc_lines_at(aggregate, lines)
    if not _ran(lines, executed, bool(allocs)):
        return _never_ran(finding, executed)
    if not allocs:
        return _row(finding, CONTRADICTED, "the line ran without a pinned allocation or registration: "
                                           "the allocator served it from memory it already held")
    figures = alloc_figures(allocs)
    what = "registrations" if figures["registered"] else "allocations"
    if repeated(allocs, thresholds):
        return _row(finding, CONFIRMED, f"{figures['count']} pinned {what}, {size(figures['bytes'])}: "
                                        f"{duration(figures['host_ns_total'])} in the calls", figures)
    count = figures["count"]
    return _row(finding, CONTRADICTED, f"only {count} pinned {what[:-1] if count == 1 else what} on this line: the "
                                       "allocator reuses its memory (a pool or cache), or the loop ran fewer than "
                                       f"{thresholds.min_repeats} times", figures)


def _judge_single_transfer(finding, lines: set, aggregate: Aggregator, executed: Optional[dict]) -> JoinRow:
    allocs = alloc_lines_at(aggregate, lines)
    if not _ran(lines, executed, bool(allocs)):
        return _never_ran(finding, executed)
    if not allocs:
        return _row(finding, NOT_OBSERVABLE, "the line ran without a pinned allocation the run saw: a pool or "
                                             "cache handed back memory it had pinned before")
    figures = alloc_figures(allocs)
    buffers = sum((l.buffers_by_transfers() for l in allocs), Counter())
    figures["transfers_per_buffer"] = dict(sorted(buffers.items()))
    if buffers and set(buffers) == {1}:
        return _row(finding, CONFIRMED, f"{sum(buffers.values())} pinned buffer(s), {size(figures['largest'])}, "
                                        f"each used for one transfer: {duration(figures['host_ns_total'])} to pin",
                    figures)
    if any(count >= 2 for count in buffers):
        most = max(buffers)
        return _row(finding, CONTRADICTED, f"a buffer pinned here took part in {most}{'+' if most >= 10 else ''} "
                                           f"transfers", figures)
    return _row(finding, NOT_OBSERVABLE, "the run saw no transfer that named the pinned buffer's address", figures)


def _judge_flags(finding, aggregate: Aggregator, executed: Optional[dict]) -> JoinRow:
    """PIN003 and PIN004 are reported at the read or the kernel; the run sees their allocation."""
    related = {(r.filename, r.location.row) for r in finding.related} or _span(finding)
    allocs = alloc_lines_at(aggregate, related)
    if not _ran(related, executed, bool(allocs)):
        return _never_ran(finding, executed)
    if not allocs:
        return _row(finding, NOT_OBSERVABLE, "the allocation's line ran without a pinned allocation the run saw")
    figures = alloc_figures(allocs)
    bit, what = (WRITECOMBINED, "write-combined") if finding.code == "PIN003" else (DEVICEMAP, "mapped")
    if not any(flags & bit for flags in figures["flags"]):
        return _row(finding, CONTRADICTED, f"the buffer was allocated without the {what} flag "
                                           f"(flags {', '.join(hex(f) for f in figures['flags'])})", figures)
    seen = "CPU reads" if finding.code == "PIN003" else "which memory a kernel reads"
    return _row(finding, NOT_OBSERVABLE, f"the buffer was allocated {what} ({size(figures['bytes'])}); the premise "
                                         f"holds, but CUPTI does not record {seen}", figures)


def _rate(figures: dict) -> str:
    return f"{figures['gbps_median']:.1f} GB/s" if figures.get("gbps_median") is not None else "? GB/s"


def summary(rows: list) -> dict:
    counts = {status: 0 for status in (CONFIRMED, CONTRADICTED, NOT_EXERCISED, NOT_OBSERVABLE, MISSED)}
    for row in rows:
        counts[row.status] += 1
    return counts

