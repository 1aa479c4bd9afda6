"""The verification harness without a GPU: discovery, fixed variants, verdicts, reports, the runner."""

from __future__ import annotations

import io
import os
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pinlint.verify import harness, report
from pinlint.verify.commands import failed
from pinlint.verify.verdict import CONFIRMED, ERROR, NOT_REPRODUCED, Outcome, Verdict, judge, separated

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_discovery_finds_positive_fixtures_only():
    fixtures = harness.discover_fixtures([str(FIXTURES)])
    names = {f.path.name for f in fixtures}
    assert fixtures and all(f.codes for f in fixtures)
    assert not any(n.endswith(".fixed.py") or "_ok_" in n for n in names)
    assert {code for f in fixtures for code in f.codes} == {f"PIN00{i}" for i in range(1, 9)}  # PIN009 is runtime only


@pytest.mark.parametrize("fixture", harness.discover_fixtures([str(FIXTURES)]), ids=lambda f: f.path.name)
def test_every_fixture_has_a_fixed_variant_and_its_expected_codes(fixture, tmp_path):
    assert harness.check_expectations(fixture) is None
    program, how = harness.fixed_variant(fixture, tmp_path)
    assert program is not None, how
    assert how in ("autofix", "hand-written")
    assert harness.sizes_of(fixture.path, "all")
    fixed_codes = harness.read_header(program) if how == "hand-written" else None
    if how == "hand-written":
        assert fixed_codes == ()
    else:
        from pinlint.engine import lint_text
        from pinlint.settings import Settings
        remaining = {f.code for f in lint_text(program.read_text(), program.name, Settings()).findings}
        assert fixture.codes[0] not in remaining, "the autofix resolves the finding it is measured for"


def _outcome(times, value=1.0):
    return Outcome(tuple(times), {"value": value})


def test_faster_beyond_the_spread_is_confirmed():
    verdict = judge("PIN007", _outcome([10, 11, 10.5]), _outcome([2, 2.2, 2.1]))
    assert verdict.verdict == CONFIRMED and verdict.ratio == pytest.approx(10.5 / 2.1)


def test_difference_within_the_spread_is_not_reproduced_and_refutes():
    verdict = judge("PIN001", _outcome([10, 14, 12]), _outcome([9, 13, 11]))
    assert verdict.verdict == NOT_REPRODUCED and verdict.refuted


def test_platform_dependent_rule_not_reproduced_refutes_nothing():
    verdict = judge("PIN003", _outcome([10, 10.1, 10.2]), _outcome([10, 10.2, 10.1]))
    assert verdict.verdict == NOT_REPRODUCED and not verdict.refuted


def test_pooled_pin002_not_reproduced_is_explained_not_refuted():
    verdict = judge("PIN002", _outcome([10, 11, 12]), _outcome([10, 10.5, 11]), pooled=True)
    assert verdict.verdict == NOT_REPRODUCED and not verdict.refuted and "pooled" in verdict.detail
    assert judge("PIN002", _outcome([10, 11, 12]), _outcome([10, 10.5, 11])).refuted


def test_pooled_findings_are_known_to_the_harness():
    fixtures = {f.path.name: f for f in harness.discover_fixtures([str(FIXTURES / "PIN002")])}
    assert harness.pooled(fixtures["cupy_empty_pinned_loop.py"], "PIN002")
    assert not harness.pooled(fixtures["cupy_pinned_memory_loop.py"], "PIN002")


def test_races_are_judged_by_results():
    assert judge("PIN005", _outcome([1], 0.0), _outcome([1], 42.0)).verdict == CONFIRMED
    same = judge("PIN006", _outcome([1], 42.0), _outcome([1], 42.0))
    assert same.verdict == NOT_REPRODUCED and same.refuted


def test_a_fix_that_changes_the_result_is_an_error():
    verdict = judge("PIN007", _outcome([10], 1.0), _outcome([1], 2.0))
    assert verdict.verdict == ERROR and verdict.refuted


def test_exit_status_ignores_missing_libraries_only():
    row = harness.Row(harness.Fixture(Path("pycuda_x.py"), ("PIN001",)), "PIN001")
    row.verdict = Verdict(ERROR, "pycuda not installed")
    assert not failed(row)
    row.verdict = Verdict(ERROR, "exit 1: CUDA error")
    assert failed(row)


def _rows():
    fixture = harness.Fixture(FIXTURES / "PIN007" / "cupy_asarray_loop.py", ("PIN007",))
    timed = harness.Row(fixture, "PIN007", 1 << 26, _outcome([30, 31, 32]), _outcome([10, 10.5, 11]))
    timed.verdict = judge("PIN007", timed.bad, timed.fixed)
    race = harness.Row(harness.Fixture(Path("cupy_get_read_before_sync.py"), ("PIN005",)), "PIN005", 1 << 20,
                       _outcome([1], 0.0), _outcome([1], 5.0))
    race.verdict = judge("PIN005", race.bad, race.fixed)
    broken = harness.Row(harness.Fixture(Path("pycuda_x.py"), ("PIN001",)), "PIN001")
    broken.verdict = Verdict(ERROR, "pycuda not installed")
    return [timed, race, broken]


def test_report_shapes():
    out = io.StringIO()
    report.write_table(_rows(), out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:4] == ["rule", "fixture", "size", "metric"]
    assert "confirmed" in lines[2] and "2.95x" in lines[2] and "64 Mi" in lines[2]
    assert "error (pycuda not installed)" in lines[4]
    md = io.StringIO()
    report.write_markdown(_rows(), md)
    assert md.getvalue().startswith("| rule | fixture |") and md.getvalue().count("\n") == 5
    data = json.loads(_json(_rows()))
    assert [d["verdict"] for d in data] == [CONFIRMED, CONFIRMED, ERROR]
    assert data[0]["bad_times_ms"] == [30, 31, 32] and data[0]["metric"] == "median run time (ms)"
    assert data[1]["metric"] == "result"


def _json(rows) -> str:
    out = io.StringIO()
    report.write_json(rows, out)
    return out.getvalue()


def test_plot_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "v.png"
    report.write_plot(_rows(), str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runner_measures_a_program_in_a_fresh_process(tmp_path, monkeypatch):
    program = tmp_path / "plain_sum.py"
    program.write_text(textwrap.dedent("""
        SIZES = [1000]
        def run(n):
            return float(sum(range(n)))
    """))
    monkeypatch.chdir(tmp_path.parent)  # a path relative to the working directory, as users type them
    outcome = harness.measure(Path(tmp_path.name) / "plain_sum.py", 1000, repeats=3, warmup=1, timeout=60)
    assert len(outcome.times_ms) == 3 and all(t >= 0 for t in outcome.times_ms)
    assert outcome.result == {"value": 499500.0}


def test_runner_failure_is_reported_not_raised_through(tmp_path):
    program = tmp_path / "broken.py"
    program.write_text("SIZES = [1]\ndef run(n):\n    raise ValueError('boom')\n")
    with pytest.raises(RuntimeError, match="boom"):
        harness.measure(program, 1, 1, 0, 60)


@pytest.mark.slow
def test_runner_timeout_is_an_error(tmp_path):
    program = tmp_path / "slow.py"
    program.write_text("import time\nSIZES = [1]\ndef run(n):\n    time.sleep(30)\n")
    with pytest.raises(RuntimeError, match="timed out"):
        harness.measure(program, 1, 1, 0, 2)


def test_verify_without_a_gpu_says_so_and_exits_2(tmp_path):
    from conftest import gpu_reason
    if gpu_reason() is None:
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, "-m", "pinlint", "verify"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert "needs a CUDA GPU" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.gpu
def test_verify_on_the_gpu_confirms_a_transfer_fixture(tmp_path):
    # The fixture with the widest margin on the H200 (82 -> 24 ms, ranges under 7 ms over 2 processes).
    pytest.importorskip("numba.cuda", reason="the fixture needs numba-cuda")
    fixture = FIXTURES / "PIN001" / "numba_to_device_async.py"
    done = subprocess.run([sys.executable, "-m", "pinlint", "verify", str(fixture), "--repeats", "3", "--format", "json"],
                          capture_output=True, text=True, timeout=600)
    rows = json.loads(done.stdout)
    assert rows[0]["verdict"] == CONFIRMED, rows
    assert rows[0]["processes"] == 2 and len(rows[0]["bad_times_ms"]) == 6
    assert done.returncode == 0


# ------------------------------------------------------------------ several processes per variant
def _logging_program(folder: Path, name: str, body: str) -> Path:
    """A variant that appends its name and process id to a shared log, then runs ``body``."""
    program = folder / f"{name}.py"
    header = ("import os, time\n"
              "SIZES = [1]\n"
              "with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'log.txt'), 'a') as log:\n"
              f"    log.write('{name} ' + str(os.getpid()) + '\\n')\n"
              "def run(n):\n")
    program.write_text(header + textwrap.indent(textwrap.dedent(body).strip() + "\n", "    "))
    return program


def test_variants_alternate_over_fresh_processes(tmp_path):
    bad = _logging_program(tmp_path, "bad", "return 1.0")
    fixed = _logging_program(tmp_path, "fixed", "return 1.0")
    bad_outcome, fixed_outcome = harness.measure_pair(bad, fixed, 1, repeats=2, warmup=0, timeout=60, processes=3)
    log = [line.split() for line in (tmp_path / "log.txt").read_text().splitlines()]
    assert [name for name, _ in log] == ["bad", "fixed"] * 3
    assert len({pid for _, pid in log}) == 6, "every run in a process of its own"
    assert (len(bad_outcome.times_ms), bad_outcome.processes) == (6, 3)
    assert (len(fixed_outcome.times_ms), fixed_outcome.processes) == (6, 3)


def test_drift_between_processes_is_not_taken_for_an_effect(tmp_path):
    # The bad variant is slow in its first process only (the machine in a slow phase): measured in
    # one process it would look 2x slower than the fix; over two, the spread shows it is not.
    bad = _logging_program(tmp_path, "bad", """
        first = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "log.txt")).read().count("bad") == 1
        time.sleep(0.08 if first else 0.02)
        return 1.0
    """)
    fixed = _logging_program(tmp_path, "fixed", "time.sleep(0.04)\nreturn 1.0")
    one = judge("PIN001", *harness.measure_pair(bad, fixed, 1, repeats=3, warmup=0, timeout=60, processes=1))
    (tmp_path / "log.txt").unlink()
    two = judge("PIN001", *harness.measure_pair(bad, fixed, 1, repeats=3, warmup=0, timeout=60, processes=2))
    assert one.verdict == CONFIRMED
    assert two.verdict == NOT_REPRODUCED, two


def test_a_result_that_differs_between_processes_is_an_error(tmp_path):
    bad = _logging_program(tmp_path, "bad", "return float(os.getpid())")
    fixed = _logging_program(tmp_path, "fixed", "return 1.0")
    with pytest.raises(RuntimeError, match="different results in different processes"):
        harness.measure_pair(bad, fixed, 1, repeats=1, warmup=0, timeout=60, processes=2)


def test_races_are_run_once_and_speed_claims_in_several_processes(tmp_path, monkeypatch):
    body = "# pinlint-expect: {code}\nimport os\nSIZES = [1]\ndef run(n):\n    return 1.0\n"
    for code, name in (("PIN001", "toy_speed"), ("PIN005", "toy_race")):
        (tmp_path / f"{name}.py").write_text(body.format(code=code))
        (tmp_path / f"{name}.fixed.py").write_text(body.format(code=code))
    monkeypatch.setattr(harness, "library_available", lambda library: True)
    monkeypatch.setattr(harness, "check_expectations", lambda fixture: None)
    rows = harness.verify(harness.discover_fixtures([str(tmp_path)]), repeats=1, warmup=0, timeout=60, processes=3)
    processes = {row.fixture.path.name: (row.bad.processes, row.fixed.processes) for row in rows}
    assert processes == {"toy_speed.py": (3, 3), "toy_race.py": (1, 1)}
    assert json.loads(_json(rows))[0]["processes"] in (1, 3)


def test_reports_show_each_process_median():
    bad = Outcome((10.0, 12.0, 30.0, 32.0), {"value": 1.0}, processes=2)
    fixed = Outcome((5.0, 6.0, 7.0, 8.0), {"value": 1.0}, processes=2)
    assert bad.process_medians == (11.0, 31.0) and fixed.process_medians == (5.5, 7.5)
    row = harness.Row(harness.Fixture(Path("cupy_set_async.py"), ("PIN001",)), "PIN001", 1 << 26, bad, fixed)
    row.verdict = judge("PIN001", bad, fixed)
    out = io.StringIO()
    report.write_markdown([row], out)
    assert "21.00 ±22.00 (11.0 / 31.0)" in out.getvalue() and "6.50 ±3.00 (5.5 / 7.5)" in out.getvalue()
    data = json.loads(_json([row]))[0]
    assert data["bad_process_medians_ms"] == [11.0, 31.0] and data["processes"] == 2
    assert data["bad_result"] == {"value": 1.0}


def test_nan_results_are_the_same_result_in_every_process():
    from pinlint.verify.verdict import combined
    nan = float("nan")
    merged = combined([Outcome((1.0,), {"value": nan}), Outcome((2.0,), {"value": nan})])
    assert merged.processes == 2 and merged.times_ms == (1.0, 2.0)


# ---------------------------------------------------------------------------- judged by the recorder
from pinlint.verify import recorded  # noqa: E402
from pinlint.verify.verdict import judge_recorded  # noqa: E402


def _run(copies=(), allocs=(), frees=(), kernels=(0, 0)) -> dict:
    return {"copies": [list(c) for c in copies], "allocs": [list(a) for a in allocs],
            "frees": [list(f) for f in frees], "kernels": list(kernels)}


def _copy(line, host_ms, kind="pageable", api="cuMemcpyHtoDAsync_v2", direction="h2d", nbytes=1 << 24,
          device_ms=2.0):
    return [line, api, direction, kind, nbytes, int(device_ms * 1e6), int(host_ms * 1e6), False]


def test_pin001_is_judged_by_how_long_each_flagged_copy_held_the_host():
    bad = tuple(_run([_copy(39, ms, device_ms=2.2), _copy(50, 0.01, api="cuMemcpyDtoH_v2", direction="d2h")])
                for ms in (40, 44, 48))
    fixed = tuple(_run([_copy(41, ms, kind="pinned", device_ms=0.3)]) for ms in (0.03, 0.04, 0.05))
    measure = recorded.measure("PIN001", bad, fixed, {39})
    assert measure.metric == "host held per copy" and measure.bad == (40.0, 44.0, 48.0)
    assert measure.fixed == (0.03, 0.04, 0.05)  # the fixed copy moved to line 41: matched by API and direction
    assert measure.confirmed and measure.margin == 8.0
    assert "7.6 -> 55.9 GB/s (pageable -> pinned)" in measure.detail
    verdict = judge_recorded("PIN001", _outcome([1]), _outcome([1]), measure)
    assert verdict.verdict == CONFIRMED and verdict.ratio == pytest.approx(44 / 0.04)


def test_a_recorded_difference_within_the_spread_is_not_reproduced():
    bad = tuple(_run([_copy(39, ms)]) for ms in (10, 30))
    fixed = tuple(_run([_copy(39, ms, kind="pinned")]) for ms in (5, 12))
    measure = recorded.measure("PIN001", bad, fixed, {39})
    verdict = judge_recorded("PIN001", _outcome([1]), _outcome([1]), measure)
    assert verdict.verdict == NOT_REPRODUCED and verdict.refuted and "spread 20 ms" in verdict.detail


def test_samples_that_never_overlap_confirm_even_with_one_slow_outlier():
    # Measured on the H200: 8 pageable copies at 1.6 ms with two page-fault outliers at 7.5-7.8 ms,
    # 8 pinned copies at 0.03 ms. The range (6.2 ms) exceeds the medians' difference (1.6 ms), but no
    # bad sample is anywhere near a fixed one.
    bad = tuple(_run([_copy(39, ms)]) for ms in (7.8, 1.57, 1.62, 1.98, 7.48, 1.64, 1.67, 1.63))
    fixed = tuple(_run([_copy(39, ms, kind="pinned")]) for ms in (0.034, 0.034, 0.029, 0.039, 0.031, 0.029, 0.026, 0.027))
    measure = recorded.measure("PIN001", bad, fixed, {39})
    assert measure.bad_median - measure.fixed_median < measure.margin and measure.separated
    verdict = judge_recorded("PIN001", _outcome([1]), _outcome([1]), measure)
    assert verdict.verdict == CONFIRMED and "no overlap" in verdict.detail
    assert measure.as_dict()["separated"] is True


def test_separation_needs_five_samples_of_each_and_no_overlap_at_all():
    assert not separated((10, 11, 12, 13), (1, 2, 3, 4))            # 1 in 70 by chance: too few samples
    assert separated((10, 11, 12, 13, 14), (1, 2, 3, 4, 5))
    assert not separated((10, 11, 12, 13, 4.5), (1, 2, 3, 4, 5))    # one bad sample among the fixed ones
    wall = judge("PIN001", _outcome([30, 5.1, 5.2, 5.3, 5.4]), _outcome([1, 1.1, 1.2, 1.3, 1.4]))
    assert wall.verdict == CONFIRMED and "every one of 5 bad samples" in wall.detail
    overlap = judge("PIN001", _outcome([30, 5.1, 5.2, 5.3, 1.0]), _outcome([1, 1.1, 1.2, 1.3, 1.4]))
    assert overlap.verdict == NOT_REPRODUCED and overlap.refuted


def test_pin007_is_judged_by_the_flagged_copies_device_time_per_run():
    bad = tuple(_run([_copy(40, 1, device_ms=ms), _copy(40, 1, device_ms=ms)]) for ms in (30, 31))
    fixed = tuple(_run([_copy(40, 1, kind="pinned", device_ms=ms)] * 2) for ms in (5, 5.2))
    measure = recorded.measure("PIN007", bad, fixed, {40})
    assert measure.bad == (60.0, 62.0) and measure.fixed == (10.0, 10.4) and measure.confirmed
    assert measure.detail.startswith("2 copies per run; h2d")


def test_pin002_is_judged_by_time_in_pinned_allocation_per_run_and_explains_a_pool():
    alloc = lambda ms: [31, "cuMemHostAlloc", 1 << 24, 0, int(ms * 1e6), False]  # noqa: E731
    bad = tuple(_run(allocs=[alloc(6)] * 10, frees=[[31, int(1e6)]] * 10) for _ in range(3))
    fixed = tuple(_run(allocs=[alloc(6)]) for _ in range(3))
    measure = recorded.measure("PIN002", bad, fixed, {31})
    assert measure.bad == (70.0,) * 3 and measure.fixed == (6.0,) * 3 and measure.confirmed
    assert measure.detail == "10 -> 1 pinned allocations per run"
    pooled = recorded.measure("PIN002", fixed, fixed, {31})
    verdict = judge_recorded("PIN002", _outcome([1]), _outcome([1]), pooled, pooled=True)
    assert verdict.verdict == NOT_REPRODUCED and not verdict.refuted and "pooled" in verdict.detail


def test_pin004_needs_kernel_records_and_counts_kernels_plus_copies():
    bad = tuple(_run(kernels=(10, int(50e6))) for _ in range(2))
    fixed = tuple(_run([_copy(0, 5, kind="pinned", device_ms=4.7)], kernels=(10, int(1e6))) for _ in range(2))
    measure = recorded.measure("PIN004", bad, fixed, {44})
    assert measure.bad == (50.0, 50.0) and measure.fixed == (5.7, 5.7) and measure.confirmed
    assert "kernels 50.00 -> 1.00 ms" in measure.detail
    assert recorded.measure("PIN004", tuple(_run() for _ in range(2)), fixed, {44}) is None


def test_no_recorded_copy_on_the_flagged_line_falls_back_to_run_time_and_says_so():
    fixture = harness.Fixture(FIXTURES / "PIN001" / "cupy_set_async.py", ("PIN001",))
    row = harness.Row(fixture, "PIN001", 1 << 22,
                      Outcome((30.0, 31.0), {"value": 1.0}, runs=(_run(), _run())),
                      Outcome((10.0, 11.0), {"value": 1.0}, runs=(_run(), _run())))
    verdict = harness.judge_row(row, "PIN001", recording=True, is_pooled=False)
    assert verdict.verdict == CONFIRMED and "judged by run time" in verdict.detail and row.measure is None


def test_a_measured_row_shows_the_recorded_metric_in_every_format():
    fixture = harness.Fixture(FIXTURES / "PIN001" / "cupy_set_async.py", ("PIN001",))
    lines = harness.flagged_lines(fixture, "PIN001")
    bad = Outcome((30.0, 31.0), {"value": 1.0}, runs=tuple(_run([_copy(min(lines), ms)]) for ms in (40, 44)))
    fixed = Outcome((10.0, 11.0), {"value": 1.0},
                    runs=tuple(_run([_copy(min(lines), ms, kind="pinned")]) for ms in (0.03, 0.05)))
    row = harness.Row(fixture, "PIN001", 1 << 22, bad, fixed)
    row.verdict = harness.judge_row(row, "PIN001", recording=True, is_pooled=False)
    out = io.StringIO()
    report.write_markdown([row], out)
    assert "| host held per copy (ms) | 42 ±4 | 0.04 ±0.02 | 1050.00x | confirmed (2 vs 2 copies;" in out.getvalue()
    data = json.loads(_json([row]))[0]
    assert data["recorded"]["metric"] == "host held per copy" and data["recorded"]["bad"] == [40.0, 44.0]


def test_the_runner_splits_events_into_runs_by_device_and_host_clocks(tmp_path):
    from pinlint.trace.events import Copy, HostAlloc, HostFree, Kernel, Site
    from pinlint.verify.runner import Collector
    program = tmp_path / "f.py"
    collector = Collector(str(program))
    here, elsewhere = Site(str(program), 7), Site("/lib/x.py", 3, "", False)
    for event in (Copy(here, "cuMemcpyHtoDAsync_v2", "h2d", "pageable", 8, 2, 3, blocking=True, start_ns=150),
                  Copy(here, "cuMemcpyHtoDAsync_v2", "h2d", "pinned", 8, 2, 3, start_ns=50),  # a warm-up copy
                  HostAlloc(elsewhere, "cuMemHostAlloc", 16, 4, 5, t_ns=1500), HostFree(here, "cuMemFreeHost", 1, 6,
                                                                                          t_ns=2500),
                  Kernel("k", 9, 120), Kernel("k", 1, 180), Kernel("k", 4, 250)):
        collector.add(event)
    first, second = collector.runs([((100, 200), (1000, 2000)), ((200, 300), (2000, 3000))])
    assert first == {"copies": [[7, "cuMemcpyHtoDAsync_v2", "h2d", "pageable", 8, 2, 3, True]],
                     "allocs": [[0, "cuMemHostAlloc", 16, 4, 5, False]], "frees": [], "kernels": [2, 10]}
    assert second == {"copies": [], "allocs": [], "frees": [[7, 6]], "kernels": [1, 4]}


def test_the_runner_records_each_timed_run_with_the_recorder(tmp_path, monkeypatch):
    """A fresh process with the recorder over a stand-in CUPTI: the warm-up is left out and each
    timed run has its own copies, on the fixture's own line."""
    fake = Path(__file__).resolve().parent / "fake_cupti" / "site-packages"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), str(Path(harness.__file__).parents[2])]))
    program = tmp_path / "toy.py"
    program.write_text("from cupti import cupti as gpu\nSIZES = [2]\n"
                       "def run(n):\n"
                       "    for _ in range(n):\n"
                       "        gpu.fake_copy('h2d', 1, 4096, device_ns=500)\n"
                       "    return 1.0\n")
    outcome = harness.measure(program, 2, repeats=3, warmup=1, timeout=60, record=True)
    assert len(outcome.runs) == 3
    assert all([c[0] for c in run["copies"]] == [5, 5] for run in outcome.runs)
    assert outcome.runs[0]["copies"][0][3:6] == ["pageable", 4096, 500]


def test_pin008_is_judged_by_host_time_pinning_plus_copying_per_run():
    # Bad: page-lock 256 MiB (100 ms), copy it pinned (0.04 ms held), free it (2 ms). Fixed: one
    # pageable copy that holds the host 40 ms.
    alloc = [31, "cuMemHostAlloc", 1 << 28, 0, int(100e6), False]
    bad = tuple(_run([_copy(33, 0.04, kind="pinned", nbytes=1 << 28, device_ms=4.9)], [alloc], [[31, int(2e6)]])
                for _ in range(3))
    fixed = tuple(_run([_copy(33, ms, nbytes=1 << 28, device_ms=40)]) for ms in (39, 40, 41))
    measure = recorded.measure("PIN008", bad, fixed, {31})
    assert measure.metric == "host time pinning + copying per run"
    assert measure.bad == (102.04,) * 3 and measure.fixed == (39.0, 40.0, 41.0) and measure.confirmed
    assert "pinning 102 ms" in measure.detail and "54.8 -> 6.7 GB/s (pinned -> pageable)" in measure.detail
    # Without copies on either side there is nothing to judge by.
    assert recorded.measure("PIN008", tuple(_run() for _ in range(2)), fixed, {31}) is None


def test_pin008_with_a_pooled_allocator_is_not_refuted():
    runs = tuple(_run([_copy(33, 0.04, kind="pinned")]) for _ in range(3))
    fixed = tuple(_run([_copy(33, 3.0)]) for _ in range(3))
    measure = recorded.measure("PIN008", runs, fixed, {31})
    assert not measure.confirmed
    verdict = judge_recorded("PIN008", _outcome([1]), _outcome([1]), measure, pooled=True)
    assert verdict.verdict == NOT_REPRODUCED and not verdict.refuted and "pooled" in verdict.detail
    assert judge_recorded("PIN008", _outcome([1]), _outcome([1]), measure).refuted
