"""Per-line aggregation in bounded memory, the pinned-memory ledger, and the file round trip
that carries a process's aggregate to the parent."""

from __future__ import annotations

import json

import pytest
from trace_helpers import OTHER, USER, aggregate, alloc, copy, free

from pinlint.trace import stats
from pinlint.trace.aggregate import OVERFLOW, Aggregator
from pinlint.trace.events import Kernel


def test_copies_fold_into_one_line_per_kind_with_totals_and_medians():
    agg = aggregate(copy(host_ns=10), copy(host_ns=30), copy(host_ns=20, nbytes=2 << 20),
                    copy(host_kind="pinned", host_ns=1), copy(site=OTHER))
    lines = {(l.site.line, l.host_kind): l for l in agg.copies.values()}
    pageable = lines[(12, "pageable")]
    assert pageable.count == 3 and pageable.nbytes == 4 << 20
    assert pageable.host_ns.total == 60 and pageable.host_ns.median == 20
    assert pageable.gbps.median == pytest.approx((1 << 20) / 100_000)  # bytes per ns is GB/s
    assert lines[(12, "pinned")].count == 1 and lines[(20, "pageable")].count == 1


def test_a_statistic_keeps_a_bounded_sample_and_exact_totals(monkeypatch):
    monkeypatch.setattr(stats, "SAMPLE", 100)
    stat = stats.Stat()
    for value in range(10_000):
        stat.add(float(value))
    assert len(stat.sample) == 100 and stat.count == 10_000 and stat.total == sum(range(10_000))
    assert (stat.low, stat.high) == (0, 9999) and not stat.exact
    assert 2500 < stat.median < 7500  # a uniform sample of 0..9999


def test_past_the_line_cap_the_rest_is_pooled_and_marked():
    agg = Aggregator(max_lines=2)
    for row in (1, 2, 3, 4):
        agg.add(copy(site=USER.__class__(USER.filename, row, "f", True)))
    assert len(agg.copies) == 3 and "copies" in agg.capped
    overflow = [l for l in agg.copies.values() if l.site == OVERFLOW]
    assert overflow and overflow[0].count == 2


def test_the_ledger_follows_live_pinned_bytes_peak_and_copies_per_buffer():
    agg = aggregate(alloc(ptr=0x1000, nbytes=100, t_ns=1), alloc(site=OTHER, ptr=0x2000, nbytes=50, t_ns=2),
                    free(ptr=0x1000, t_ns=3), alloc(ptr=0x3000, nbytes=10, t_ns=4))
    for pointer in (0x2000, 0x2010, 0x2031, 0x9999):  # the last is inside no live buffer
        agg.touched(pointer)
    pinned = agg.ledger.to_dict()
    assert pinned["peak_bytes"] == 150 and pinned["peak_t_ns"] == 2
    assert pinned["live_at_exit_bytes"] == 60 and pinned["live_at_exit_buffers"] == 2
    assert pinned["transfers_per_live_buffer"] == {"0": 1, "3": 1}
    assert [tuple(p) for p in pinned["timeline"]] == [(1, 100), (2, 150), (3, 50), (4, 60)]
    first = next(l for l in agg.allocs.values() if l.site == USER)
    assert first.count == 2 and first.freed == 1 and dict(first.transfers) == {0: 1}


def test_frees_and_kernels_are_counted():
    agg = aggregate(free(host_ns=7), free(host_ns=9), Kernel("k", 5), Kernel("k", 6), Kernel("j", 1))
    (line,) = agg.frees.values()
    assert line.count == 2 and line.host_ns.total == 16
    assert agg.kernel_count == 3 and agg.kernel_ns == 12 and agg.kernels_by_name["k"] == 11


def test_a_process_file_round_trips_and_processes_merge():
    one = aggregate(copy(host_ns=10, host_ptr=1, run=0), copy(host_ns=30, host_ptr=2, run=1),
                    alloc(run=0), Kernel("k", 5))
    other = aggregate(copy(host_ns=20, host_ptr=1, run=0), free())
    merged = Aggregator()
    for agg in (one, other):
        merged.merge_dict(json.loads(json.dumps(agg.to_dict())))
    (line,) = merged.copies.values()
    assert line.count == 3 and line.host_ns.total == 60 and line.host_ns.median == 20
    assert line.runs.executions == 3  # another process's runs are other runs
    assert len(line.buffers) == 2 and merged.kernel_count == 1
    assert next(iter(merged.allocs.values())).runs.executions == 1
    assert next(iter(merged.frees.values())).count == 1


def test_runs_are_unknown_when_any_event_was_not_counted():
    agg = aggregate(copy(run=0), copy(run=-1))
    assert next(iter(agg.copies.values())).runs.executions is None
    agg = aggregate(copy(run=4), copy(run=4), copy(run=5))
    assert next(iter(agg.copies.values())).runs.executions == 2
