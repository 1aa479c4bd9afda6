"""``pinlint trace`` and pinned memory over time: PIN009 (too much pinned at the peak) and PIN008 seen
at run time (a pinned buffer used for exactly one transfer), from recorded events (no GPU)."""

from __future__ import annotations

from trace_helpers import OTHER, USER, alloc, free

from pinlint.model import Finding, Location
from pinlint.trace import join as J
from pinlint.trace.aggregate import Aggregator
from pinlint.trace.observe import Thresholds, observe

MiB, GiB = 1 << 20, 1 << 30


def feed(*steps) -> Aggregator:
    """Events in order; an int is a copy that names that host address (the recorder's ``touched``)."""
    agg = Aggregator()
    for step in steps:
        if isinstance(step, int):
            agg.touched(step)
        else:
            agg.add(step)
    return agg


def finding_like(code: str, row: int) -> Finding:
    return Finding(code, f"static {code}", USER.filename, Location(row, 5), Location(row, 20))


def codes(agg, **kw) -> list:
    return [(o.code, o.site.line) for o in observe(agg, **kw)]


# ---------------------------------------------------------------------------- PIN009
def _three_buffers() -> Aggregator:
    # 256 MiB at USER, then 64 MiB at OTHER: the peak (320 MiB) is while both are live.
    return feed(alloc(USER, 256 * MiB, ptr=0x1000_0000, t_ns=1), alloc(OTHER, 64 * MiB, ptr=0x9000_0000, t_ns=2),
                free(ptr=0x1000_0000, t_ns=3), alloc(OTHER, 8 * MiB, ptr=0x2000_0000, t_ns=4))


def test_the_ledger_keeps_the_peak_and_the_lines_holding_it():
    ledger = _three_buffers().ledger.to_dict()
    assert ledger["peak_bytes"] == 320 * MiB and ledger["peak_t_ns"] == 2
    holders = [(h["site"][1], h["bytes"], h["buffers"]) for h in ledger["peak_holders"]]
    assert holders == [(USER.line, 256 * MiB, 1), (OTHER.line, 64 * MiB, 1)]  # largest first, at the peak


def test_a_peak_above_the_share_of_ram_is_pin009_at_the_largest_holder():
    [observation] = [o for o in observe(_three_buffers(), ram_bytes=GiB) if o.code == "PIN009"]
    assert (observation.site.filename, observation.site.line) == (USER.filename, USER.line)
    assert observation.problem
    assert "peak pinned host memory 320.0 MiB, 31% of the machine's 1.0 GiB" in observation.message
    assert f"{USER.filename}:{USER.line} 256.0 MiB in 1 buffer; {OTHER.filename}:{OTHER.line} 64.0 MiB" \
        in observation.message
    assert observation.figures["share"] == 320 / 1024


def test_pin009_follows_the_configured_share_and_needs_to_know_the_ram():
    assert "PIN009" not in [c for c, _ in codes(_three_buffers(), ram_bytes=2 * GiB)]  # 16%: under 25%
    assert "PIN009" not in [c for c, _ in codes(_three_buffers(), ram_bytes=GiB,
                                                thresholds=Thresholds(max_pinned_share=0.5))]
    assert "PIN009" not in [c for c, _ in codes(_three_buffers(), ram_bytes=0)]  # unknown RAM: no judgement


def test_pin009_reads_each_process_ledger_as_written_to_its_file():
    # After a trace the parent merges the processes' tables; each ledger stays its process's own.
    ledger = _three_buffers().ledger.to_dict()
    merged = Aggregator.from_dict(_three_buffers().to_dict())
    found = [o for o in observe(merged, pinned=[ledger, {"peak_bytes": 10 * MiB}], ram_bytes=GiB)
             if o.code == "PIN009"]
    assert [(o.site.line, o.figures["peak_bytes"]) for o in found] == [(USER.line, 320 * MiB)]


def test_pin009_is_never_missed_by_the_static_analysis():
    agg = _three_buffers()
    rows = J.join([], observe(agg, ram_bytes=GiB), agg, None, {USER.filename})
    assert all(row.code != "PIN009" for row in rows)


def test_many_holding_lines_keep_the_holders_within_one_percent_of_the_peak():
    from pinlint.trace.events import Site
    steps = [alloc(Site("/proj/many.py", line, "f", True), MiB, ptr=0x100_0000 * (line + 1), t_ns=line)
             for line in range(1, 200)]
    ledger = feed(*steps).ledger.to_dict()
    assert ledger["peak_bytes"] == 199 * MiB
    assert len(ledger["peak_holders"]) == 5 and all(h["bytes"] == MiB for h in ledger["peak_holders"])


# ---------------------------------------------------------------------------- PIN008 at run time
BUF = 0x4000_0000


def test_a_pinned_buffer_freed_after_one_transfer_is_pin008():
    agg = feed(alloc(USER, 64 * MiB, ptr=BUF, host_ns=40_000_000), BUF + 4096, free(ptr=BUF))
    [observation] = observe(agg)
    assert (observation.code, observation.site.line) == ("PIN008", USER.line) and observation.problem
    assert "used for exactly one transfer" in observation.message and "40.0 ms to pin it" in observation.message


def test_two_transfers_no_transfer_or_a_small_buffer_are_not_pin008():
    assert codes(feed(alloc(USER, 64 * MiB, ptr=BUF), BUF, BUF, free(ptr=BUF))) == []
    assert codes(feed(alloc(USER, 64 * MiB, ptr=BUF), free(ptr=BUF))) == []  # a kernel's mapped buffer, say
    small = feed(alloc(USER, 1 * MiB, ptr=BUF), BUF, free(ptr=BUF))
    assert codes(small) == []
    assert codes(small, thresholds=Thresholds(pin008_min_bytes=MiB)) == [("PIN008", USER.line)]


def test_a_line_that_pins_repeatedly_is_pin002_not_pin008():
    steps = []
    for run in range(3):
        steps += [alloc(USER, 64 * MiB, ptr=BUF, run=run), BUF, free(ptr=BUF)]
    assert codes(feed(*steps)) == [("PIN002", USER.line)]


def test_a_buffer_still_pinned_at_exit_after_one_transfer_counts_and_survives_the_file():
    agg = feed(alloc(USER, 64 * MiB, ptr=BUF), BUF)  # a pool or cache keeps it pinned
    merged = Aggregator.from_dict(agg.to_dict())
    assert codes(merged, pinned=[]) == [("PIN008", USER.line)]


def test_check_confirms_or_contradicts_a_static_pin008_finding():
    once = feed(alloc(USER, 64 * MiB, ptr=BUF), BUF, free(ptr=BUF))
    twice = feed(alloc(USER, 64 * MiB, ptr=BUF), BUF, BUF, free(ptr=BUF))
    static = finding_like("PIN008", USER.line)
    [row] = J.join([static], observe(once), once, None, {USER.filename})
    assert row.status == J.CONFIRMED and "each used for one transfer" in row.detail
    [row] = J.join([static], observe(twice), twice, None, {USER.filename})
    assert row.status == J.CONTRADICTED and "2 transfers" in row.detail
    # The run's PIN008 with no static finding on its line is a miss.
    [row] = J.join([], observe(once), once, None, {USER.filename})
    assert (row.status, row.code) == (J.MISSED, "PIN008")
