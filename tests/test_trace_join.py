"""What a run shows in pinlint's codes, and ``--check``: each static finding against the run."""

from __future__ import annotations

from trace_helpers import OTHER, USER, aggregate, alloc, copy

from pinlint.model import Finding, Location, Related
from pinlint.trace import join as J
from pinlint.trace.events import Site
from pinlint.trace.observe import Thresholds, observe

FILE = USER.filename


def codes(agg, **kw) -> list:
    return [(o.code, o.site.line) for o in observe(agg, **kw)]


def finding(code: str, row: int, end_row=None, related_row=None, filename: str = FILE) -> Finding:
    related = () if related_row is None else (Related("allocated here", filename, Location(related_row, 1),
                                                      Location(related_row, 9)),)
    return Finding(code, f"static {code}", filename, Location(row, 5), Location(end_row or row, 20), related=related)


# ---------------------------------------------------------------------------- observations
def test_a_pageable_asynchronous_copy_is_pin001_with_its_cost_and_a_pinned_one_is_nothing():
    agg = aggregate(copy(host_ns=44_000_000), copy(site=OTHER, host_kind="pinned", host_ns=30_000))
    (observation,) = observe(agg)
    assert (observation.code, observation.site, observation.problem) == ("PIN001", USER, True)
    assert "44.0 ms" in observation.message and "10.5 GB/s" in observation.message
    assert observation.figures["count"] == 1 and observation.figures["host_ns_total"] == 44_000_000


def test_blocking_and_small_copies_are_not_pin001_and_the_default_stream_is_said():
    assert codes(aggregate(copy(blocking=True))) == []          # get() that waits, .item()
    (observation,) = observe(aggregate(copy(default_stream=True)))  # torch non_blocking=True, CuPy d.set(h)
    assert "asynchronous host-to-device copy on the default stream" in observation.message
    (row,) = judge([], aggregate(copy(default_stream=True)))
    assert row.status == J.MISSED and "asks for asynchrony" in row.detail
    assert codes(aggregate(copy(nbytes=8))) == []               # latency-bound: below pin001-min-bytes
    assert codes(aggregate(copy(nbytes=8)), thresholds=Thresholds(pin001_min_bytes=1)) == [("PIN001", 12)]


def test_pin007_needs_a_line_that_ran_repeatedly_not_one_call_copying_many_buffers():
    loop = aggregate(*(copy(blocking=True, run=i, host_ptr=0x100) for i in range(3)))
    assert codes(loop) == [("PIN007", 12)]
    one_call = aggregate(*(copy(blocking=True, run=0, host_ptr=0x100 * i) for i in range(30)))  # model.to("cuda")
    assert codes(one_call) == []
    uncounted = aggregate(*(copy(blocking=True) for _ in range(3)))  # Python < 3.12: copies stand in for runs
    assert codes(uncounted) == [("PIN007", 12)]
    assert codes(loop, thresholds=Thresholds(min_repeats=4)) == []


def test_pin001_wins_over_pin007_at_the_same_line():
    agg = aggregate(*(copy(run=i) for i in range(5)))
    assert codes(agg) == [("PIN001", 12)]


def test_repeated_pinned_allocations_are_pin002_and_flags_are_context():
    agg = aggregate(*(alloc(ptr=0x1000 * (i + 1), run=i) for i in range(3)), alloc(site=OTHER, flags=4),
                    alloc(site=OTHER, flags=2, ptr=0x9000), alloc(site=Site(FILE, 30), flags=4, ptr=0xA000,
                                                                    registered=True))
    observed = observe(agg)
    assert [(o.code, o.site.line, o.problem) for o in observed] == [
        ("PIN002", 12, True), ("PIN003", 20, False), ("PIN004", 20, False)]  # bit 4 of a registration is I/O memory
    assert "3 pinned allocations on this line; the line ran 3 times" in observed[0].message
    assert codes(aggregate(alloc(flags=2, nbytes=4))) == []  # a 4-byte mapped flag buffer is no context


def test_noqa_silences_an_observation():
    agg = aggregate(copy())
    assert codes(agg, suppressed=lambda code, site: code == "PIN001" and site.line == 12) == []
    assert codes(agg, suppressed=lambda code, site: code == "PIN007") == [("PIN001", 12)]


# ---------------------------------------------------------------------------- the join
def judge(findings, agg, executed=None, checked=(FILE,)):
    return J.join(findings, observe(agg), agg, executed, set(checked))


def status(rows, code, row=None):
    return [(r.status, r.row) for r in rows if r.code == code and (row is None or r.row == row)]


def test_a_static_pin001_is_confirmed_by_a_pageable_copy_on_its_line_with_the_cost():
    (row,) = judge([finding("PIN001", 12)], aggregate(copy()))
    assert row.status == J.CONFIRMED and "1 pageable copy" in row.detail and row.figures["count"] == 1
    assert not row.failing


def test_a_multi_line_call_matches_any_of_its_lines_and_a_helper_matches_through_its_caller():
    (row,) = judge([finding("PIN001", 11, end_row=13)], aggregate(copy()))
    assert row.status == J.CONFIRMED
    helper = Site(FILE, 40, "upload", True)
    (row,) = judge([finding("PIN001", 12)], aggregate(copy(site=helper, callers=((FILE, 12),))))
    assert row.status == J.CONFIRMED


def test_contradicted_when_the_copy_ran_pinned_or_made_no_copy():
    (row,) = judge([finding("PIN001", 12)], aggregate(copy(host_kind="pinned")))
    assert row.status == J.CONTRADICTED and "pinned" in row.detail and row.failing
    (row,) = judge([finding("PIN001", 12)], aggregate(), executed={FILE: {12}})
    assert row.status == J.CONTRADICTED and "made no host<->device copy" in row.detail


def test_not_exercised_when_the_line_never_ran():
    (row,) = judge([finding("PIN007", 50)], aggregate(), executed={FILE: {12}})
    assert row.status == J.NOT_EXERCISED and row.detail == "the line never ran" and not row.failing
    (row,) = judge([finding("PIN007", 50)], aggregate(), executed=None)
    assert row.status == J.NOT_EXERCISED and "Python 3.12" in row.detail


def test_cupy_staging_is_not_observable_rather_than_contradicted():
    staged = aggregate(*(copy(host_kind="pinned", library="cupy", run=i) for i in range(3)))
    (row,) = judge([finding("PIN007", 12)], staged)
    assert row.status == J.NOT_OBSERVABLE and "staged" in row.detail


def test_pin002_confirmed_by_repeated_allocations_contradicted_by_a_pool():
    looped = aggregate(*(alloc(ptr=0x1000 * (i + 1), run=i) for i in range(3)))
    assert status(judge([finding("PIN002", 12)], looped), "PIN002") == [(J.CONFIRMED, 12)]
    pooled = aggregate(alloc(run=0))
    (row,) = judge([finding("PIN002", 12)], pooled)
    assert row.status == J.CONTRADICTED and "only 1 pinned allocation" in row.detail
    (row,) = judge([finding("PIN002", 12)], aggregate(), executed={FILE: {12}})
    assert row.status == J.CONTRADICTED and "served it from memory it already held" in row.detail


def test_pin003_and_pin004_are_judged_at_their_allocation():
    wc = aggregate(alloc(site=Site(FILE, 5), flags=4))
    (row,) = judge([finding("PIN003", 30, related_row=5)], wc)
    assert row.status == J.NOT_OBSERVABLE and "write-combined" in row.detail and "premise holds" in row.detail
    (row,) = judge([finding("PIN004", 30, related_row=5)], wc)
    assert row.status == J.CONTRADICTED and "without the mapped flag" in row.detail


def test_races_are_not_observable_when_their_line_ran():
    (row,) = judge([finding("PIN005", 30)], aggregate(), executed={FILE: {30}})
    assert row.status == J.NOT_OBSERVABLE and "pinlint verify" in row.detail


def test_an_observed_problem_without_a_static_finding_is_missed():
    agg = aggregate(copy(), *(alloc(site=OTHER, ptr=0x1000 * (i + 1), run=i) for i in range(3)))
    rows = judge([], agg)
    assert [(r.status, r.code, r.row) for r in rows] == [(J.MISSED, "PIN001", 12), (J.MISSED, "PIN002", 20)]
    assert all(r.failing for r in rows)
    # A static PIN007 on the line covers an observed PIN001 (PIN001 takes precedence at one copy).
    assert status(judge([finding("PIN007", 12)], aggregate(copy())), "PIN001") == []
    # Library lines and files that were not checked are not the static analysis' to miss.
    assert judge([], agg, checked=()) == []


def test_the_summary_counts_every_status():
    rows = judge([finding("PIN001", 12), finding("PIN007", 50)], aggregate(copy(), copy(site=OTHER)),
                 executed={FILE: {12, 20}})
    counts = J.summary(rows)
    assert counts[J.CONFIRMED] == 1 and counts[J.NOT_EXERCISED] == 1 and counts[J.MISSED] == 1
