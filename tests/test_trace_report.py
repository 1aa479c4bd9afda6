"""``pinlint trace``'s formats over a recorded run: the text table, JSON, SARIF, the plot."""

from __future__ import annotations

import io
import json

import pytest
from trace_helpers import OTHER, USER, aggregate, alloc, copy

from pinlint.trace import join as J
from pinlint.trace.observe import observe
from pinlint.trace.report import Result, as_json, sarif, write_text
from pinlint.trace.session import TraceRun
from test_trace_join import finding


def result(check: bool = True) -> Result:
    agg = aggregate(copy(host_ns=44_000_000), copy(site=OTHER, host_kind="pinned", host_ns=30_000, blocking=True),
                    *(alloc(site=OTHER, ptr=0x1000 * (i + 1), run=i, flags=4) for i in range(3)))
    run = TraceRun(["python", "train.py"], 0, 1.5, [{"status": "ok", "pid": 7, "aggregate": agg.to_dict()}], agg,
                   {USER.filename: {12, 20, 30}}, ["pid 7: 2 device-to-device and other copies"])
    observations = observe(agg)
    rows = J.join([finding("PIN001", 12), finding("PIN005", 30)], observations, agg, run.executed,
                  {USER.filename}) if check else None
    return Result(run, observations, rows)


def test_text_has_the_tables_the_observations_and_the_join():
    out = io.StringIO()
    write_text(result(), out)
    text = out.getvalue()
    assert text.startswith("pinlint trace: `python train.py` exited 0 after 1.50 s; 1 process recorded, "
                           "2 host<->device copies, 3 pinned allocations")
    assert "/proj/train.py:12  cuMemcpyHtoDAsync_v2             h2d  pageable  1" in text
    assert "cuMemcpyHtoDAsync_v2 (blocking)" in text and "0x4" in text
    assert "note: pid 7: 2 device-to-device and other copies" in text
    assert "/proj/train.py:12: PIN001 pageable host memory" in text
    assert "/proj/train.py:20: PIN003 (context) write-combined" in text
    assert "Observed 2 problems in the run (1 PIN001, 1 PIN002)." in text
    assert "/proj/train.py:12:5: PIN001 confirmed: 1 pageable copy" in text
    assert "/proj/train.py:30:5: PIN005 not observable:" in text
    assert "/proj/train.py:20:1: PIN002 missed by the static analysis" in text
    assert "Static check: 1 confirmed, 0 contradicted, 0 not exercised, 1 not observable, " \
           "1 missed by the static analysis." in text


def test_text_without_check_or_problems():
    empty_run = aggregate()
    empty = Result(TraceRun(["python", "x.py"], 0, 0.1, [{"status": "ok", "aggregate": empty_run.to_dict()}],
                            empty_run), [], None)
    out = io.StringIO()
    write_text(empty, out)
    assert out.getvalue().rstrip().endswith("No problems observed in the run.")
    assert "Static findings" not in out.getvalue() and not empty.failing


def test_json_carries_every_table_and_the_join():
    data = json.loads(json.dumps(as_json(result())))
    assert data["version"] == 1 and data["command"] == ["python", "train.py"] and data["exit_code"] == 0
    pin001 = next(o for o in data["observations"] if o["code"] == "PIN001")
    assert pin001["location"] == {"row": 12, "column": 1} and pin001["problem"]
    assert pin001["figures"]["host_ns_total"] == 44_000_000
    pageable = next(c for c in data["copies"] if c["host_kind"] == "pageable")
    assert pageable["asynchronous"] and pageable["host_ns"]["median"] == 44_000_000 and pageable["count"] == 1
    (allocs,) = data["allocations"]
    assert allocs["count"] == 3 and allocs["flags"] == 4 and allocs["executions"] == 3
    assert data["static"]["summary"][J.CONFIRMED] == 1
    assert {r["status"] for r in data["static"]["rows"]} == {J.CONFIRMED, J.NOT_OBSERVABLE, J.MISSED}
    assert as_json(result(check=False))["static"] is None


def test_sarif_has_observations_as_results_with_figures_and_is_valid():
    log = sarif(result())
    results = log["runs"][0]["results"]
    observed = [r for r in results if r["properties"].get("observed")]
    assert {r["ruleId"] for r in observed} == {"PIN001", "PIN002", "PIN003"}
    pin002 = next(r for r in observed if r["ruleId"] == "PIN002")
    assert pin002["properties"]["static"] == J.MISSED and pin002["level"] == "warning"
    assert next(r for r in observed if r["ruleId"] == "PIN003")["level"] == "note"
    static = [r for r in results if not r["properties"].get("observed")]
    assert {r["properties"]["static"] for r in static} == {J.CONFIRMED, J.NOT_OBSERVABLE}
    assert log["runs"][0]["invocations"][0]["commandLine"] == "python train.py"
    jsonschema = pytest.importorskip("jsonschema")
    from sarif_schema import validate_sarif
    validate_sarif(log)  # the official SARIF 2.1.0 schema


def test_plot_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    from pinlint.trace.plot import write_plot
    target = tmp_path / "trace.png"
    write_plot(result(), str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
