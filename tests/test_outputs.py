"""Machine-readable outputs as CI and tools read them: SARIF 2.1.0 (checked against the official OASIS
schema, with the fields GitHub code scanning uses), JSON in ruff's shape, JSON lines and ``--statistics``.

They run pinlint's own entry point in this process (``helpers.run_in_process``); every SARIF log a test
produces goes through ``sarif_schema.validate_sarif``.
"""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
import urllib.parse
from pathlib import Path

import jsonschema
import pytest

from pinlint.checks import ALL_RULES, RULES_BY_CODE, RUNTIME_RULES
from pinlint.formats.sarif import sarif_log
from pinlint.model import Edit, Finding, Fix, Location, Related
from pinlint.report import ReportOptions, write_report

from helpers import BAD, run_in_process, write
from sarif_schema import schema_errors, validate_sarif

REPO = Path(__file__).resolve().parent.parent

# PIN004 (no fix) at 11:5, mapped buffer allocated at 8:5.
MAPPED = textwrap.dedent("""\
    import numpy as np
    from numba import cuda

    @cuda.jit
    def step(grid, out):
        pass

    h = cuda.mapped_array(1 << 20, dtype=np.float32)
    out = cuda.device_array(1 << 20, dtype=np.float32)
    for it in range(10):
        step[256, 256](h, out)
    """)

# PIN007 at 5:9 and PIN001 at 7:1: two findings from one allocation at line 3.
LOOP = textwrap.dedent("""\
    import numpy as np, cupy as cp
    from numba import cuda
    h = np.zeros(1 << 20, dtype=np.float32)
    for i in range(10):
        d = cuda.to_device(h)
    g = cp.empty(1 << 20, dtype=cp.float32)
    g.set(h, stream=cp.cuda.Stream(non_blocking=True))
    """)

BROKEN = "import cupy as cp\nd.set(h, stream=(s\n"  # PIN000: never closed (names a copy API,
# so it passes the prefilter)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path, "pkg/bad.py", BAD)
    write(tmp_path, "pkg/mapped.py", MAPPED)
    write(tmp_path, "loop.py", LOOP)
    write(tmp_path, "broken.py", BROKEN)
    return tmp_path


@pytest.fixture
def run(monkeypatch, capsys):
    """``run(cwd, "check", ...)`` -> (exit code, stdout, stderr), in this process, one worker."""
    def invoke(cwd: Path, *args: str) -> tuple:
        return run_in_process(monkeypatch, capsys, cwd, *args, "-j", "1")
    return invoke


@pytest.fixture
def sarif(run):
    def produce(cwd: Path, *args: str) -> dict:
        code, out, err = run(cwd, "check", "--output-format", "sarif", *args)
        assert code in (0, 1), err
        return validate_sarif(json.loads(out))
    return produce


@pytest.fixture
def json_findings(run):
    def produce(cwd: Path, *args: str) -> list:
        code, out, err = run(cwd, "check", "--output-format", "json", *args)
        assert code in (0, 1), err
        return json.loads(out)
    return produce


# ---------------------------------------------------------------------------------------- SARIF: schema
def test_official_schema_accepts_every_log_of_a_project(project, sarif):
    log = sarif(project, ".")
    assert len(log["runs"][0]["results"]) == 5
    sarif(project, ".", "--unsafe-fixes")
    sarif(project, "pkg/mapped.py")


def test_official_schema_rejects_what_sarif_forbids(project, sarif):
    """The check is not vacuous: the mistakes it must catch (an empty ``replacements``, as notebooks
    produced before, a bad level, a zero line, a result without a message) are rejected."""
    log = sarif(project, ".")
    fixed = next(r for r in log["runs"][0]["results"] if "fixes" in r)
    mutations = [
        lambda r: r["fixes"][0]["artifactChanges"][0].update(replacements=[]),
        lambda r: r.update(level="warn"),
        lambda r: r["locations"][0]["physicalLocation"]["region"].update(startLine=0),
        lambda r: r.pop("message"),
        lambda r: r.update(severity="high"),
    ]
    for mutate in mutations:
        broken = json.loads(json.dumps(log))
        mutate(next(r for r in broken["runs"][0]["results"] if r["locations"] == fixed["locations"]))
        assert schema_errors(broken), mutate
        with pytest.raises(jsonschema.ValidationError):
            validate_sarif(broken)


# ---------------------------------------------------------------------------------------- SARIF: driver, rules
def test_sarif_log_header_and_driver(project, sarif):
    log = sarif(project, ".")
    assert log["version"] == "2.1.0"
    assert log["$schema"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pinlint"
    assert driver["informationUri"] == "https://pypi.org/project/cuda-pinlint/"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", driver["semanticVersion"])
    assert run["columnKind"] == "unicodeCodePoints"
    cwd = Path(os.getcwd()).resolve().as_uri() + "/"
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": cwd}}
    assert run["invocations"] == [{"executionSuccessful": True, "workingDirectory": {"uri": cwd}}]


def test_sarif_rules_carry_what_code_scanning_shows(project, sarif):
    rules = sarif(project, ".")["runs"][0]["tool"]["driver"]["rules"]
    # ruleIndex values are positions here; the runtime rules (PIN009) come last, with their docs
    assert [r["id"] for r in rules] == ["PIN000", *RULES_BY_CODE, *(r.code for r in RUNTIME_RULES)]
    for rule in RUNTIME_RULES:
        descriptor = rules[[r["id"] for r in rules].index(rule.code)]
        assert descriptor["name"] == rule.name and descriptor["properties"]["fix"] == "never"
        assert descriptor["help"]["markdown"] == (REPO / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        descriptor = rules[[r["id"] for r in rules].index(rule.code)]
        doc_path = REPO / "rules" / f"{rule.code}.md"
        doc = doc_path.read_text(encoding="utf-8")
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["markdown"] == doc
        text = descriptor["help"]["text"]
        assert "```" not in text and not re.search(r"^#", text, re.M) and "`" not in text
        assert "What it does" in text and rule.name in text
        assert 0 < len(descriptor["fullDescription"]["text"]) <= 1024
        assert descriptor["helpUri"] == doc_path.resolve().as_uri()
        props = descriptor["properties"]
        assert props["tags"] and all(isinstance(t, str) for t in props["tags"])
        assert props["precision"] in ("very-high", "high", "medium", "low")
        assert props["problem.severity"] in ("error", "warning", "recommendation")
    severity = {r["id"]: r["properties"]["problem.severity"] for r in rules}
    assert severity["PIN005"] == severity["PIN006"] == "error"  # races give wrong data
    assert severity["PIN001"] == "warning"
    pin000 = rules[0]
    assert pin000["name"] == "syntax-error" and pin000["shortDescription"]["text"]
    assert pin000["help"]["text"] and pin000["help"]["markdown"]
    assert pin000["defaultConfiguration"]["level"] == "error"


# ---------------------------------------------------------------------------------------- SARIF: results
def test_sarif_results_point_at_the_finding_and_its_rule(project, sarif, json_findings):
    findings = json_findings(project, ".")
    run = sarif(project, ".")["runs"][0]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    assert len(results) == len(findings) == 5  # bad: 1, mapped: 1, loop: 2, broken: 1 (PIN000)
    for result, finding in zip(results, findings):
        assert result["ruleId"] == finding["code"]
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == ("error" if finding["code"] == "PIN000" else "warning")
        [location] = result["locations"]
        physical = location["physicalLocation"]
        assert urllib.parse.unquote(physical["artifactLocation"]["uri"]) == finding["filename"]
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        region = physical["region"]
        assert (region["startLine"], region["startColumn"]) == (finding["location"]["row"],
                                                                finding["location"]["column"])
        assert (region["endLine"], region["endColumn"]) == (finding["end_location"]["row"],
                                                            finding["end_location"]["column"])


def test_sarif_message_links_the_allocation_site(project, sarif):
    results = sarif(project, ".")["runs"][0]["results"]
    by_key = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]): r for r in results}
    expected = {("pkg/bad.py", "PIN001"): (2, 5), ("pkg/mapped.py", "PIN004"): (8, 5),
                ("loop.py", "PIN007"): (3, 5), ("loop.py", "PIN001"): (3, 5)}
    for key, (line, column) in expected.items():
        result = by_key[key]
        [related] = result["relatedLocations"]
        assert related["physicalLocation"]["artifactLocation"]["uri"] == key[0]
        region = related["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (line, column)
        assert related["message"]["text"]
        # The message links it, SARIF's way: "[link text](id)" with the related location's id.
        links = re.findall(r"(?<!\\)\[([^\]]*)\]\((\d+)\)", result["message"]["text"])
        assert links == [(f"at line {line}", str(related["id"]))], result["message"]["text"]
    assert "relatedLocations" not in by_key[("broken.py", "PIN000")]


def test_sarif_message_escapes_braces_and_link_lookalikes():
    finding = Finding("PIN004", "kernel `step[256](h, out)` re-reads {mapped} memory", "a.py", Location(3, 1),
                      Location(3, 9), related=(Related("here", "a.py", Location(1, 1), Location(1, 5)),))
    log = validate_sarif(sarif_log([finding]))
    text = log["runs"][0]["results"][0]["message"]["text"]
    assert "{{mapped}}" in text                      # SARIF 3.11.5: literal braces are doubled
    assert "step[256\\](h, out)" in text             # not a link to location "h, out"
    assert text.endswith("(allocated at [line 1](1))")  # no "at line 1" to link: the link is added


def test_sarif_fingerprints_follow_the_line_not_its_number(tmp_path, sarif):
    write(tmp_path, "a.py", LOOP)
    first = sarif(tmp_path, "a.py")["runs"][0]["results"]
    write(tmp_path, "a.py", "# a comment\n\n" + LOOP)  # every finding moves down two lines
    moved = sarif(tmp_path, "a.py")["runs"][0]["results"]
    prints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in first]
    assert prints == [r["partialFingerprints"]["primaryLocationLineHash"] for r in moved]
    assert len(set(prints)) == len(prints)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in moved] == \
        [r["locations"][0]["physicalLocation"]["region"]["startLine"] + 2 for r in first]
    write(tmp_path, "b.py", LOOP.replace("h = np.zeros", "h2 = np.zeros").replace("(h", "(h2"))
    changed = sarif(tmp_path, "b.py")["runs"][0]["results"]
    assert not set(prints) & {r["partialFingerprints"]["primaryLocationLineHash"] for r in changed}


def test_sarif_uri_of_a_file_outside_the_working_directory_is_absolute(tmp_path, sarif):
    outside = write(tmp_path, "elsewhere/bad.py", BAD)
    (tmp_path / "repo").mkdir()
    [result] = sarif(tmp_path / "repo", str(outside))["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": outside.resolve().as_uri()}  # no %SRCROOT%: it is not under it
    assert result["relatedLocations"][0]["physicalLocation"]["artifactLocation"] == location
    assert result["fixes"][0]["artifactChanges"][0]["artifactLocation"] == location


def _apply(text: str, replacements: list) -> str:
    """Apply SARIF replacements (1-based lines, 1-based code-point columns, end exclusive)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1

    spans = sorted(((offset(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
                     offset(r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"]),
                     r.get("insertedContent", {}).get("text", "")) for r in replacements), reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def test_sarif_fixes_match_the_json_edits_and_reproduce_the_fix(project, sarif, json_findings, run):
    results = sarif(project, ".")["runs"][0]["results"]
    findings = json_findings(project, ".")
    for result, finding in zip(results, findings):
        if finding["fix"] is None:
            assert "fixes" not in result, result
            continue
        [fix] = result["fixes"]
        assert fix["description"]["text"] == f"{finding['fix']['message']} ({finding['fix']['applicability']})"
        assert result["properties"]["fix"]["applicability"] == finding["fix"]["applicability"]
        [change] = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == finding["filename"]
        assert [(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"], r["insertedContent"]["text"])
                for r in change["replacements"]] == \
            [(e["location"]["row"], e["location"]["column"], e["content"]) for e in finding["fix"]["edits"]]
    # Applying the SARIF fix of pkg/bad.py gives exactly what `pinlint fix` writes.
    [result] = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/bad.py"]
    patched = _apply(BAD, result["fixes"][0]["artifactChanges"][0]["replacements"])
    assert patched != BAD
    code, out, err = run(project, "fix", "pkg/bad.py")
    assert code == 0, out + err
    assert (project / "pkg" / "bad.py").read_text(encoding="utf-8") == patched


def test_sarif_columns_count_code_points(tmp_path, sarif):
    write(tmp_path, "uni.py", 'import numpy as np, cupy as cp\nh = np.zeros(1 << 20, dtype=np.float32)\n'
                              'd = cp.empty(1 << 20, dtype=np.float32)\n'
                              'ü = "é"; d.set(h, stream=cp.cuda.Stream(non_blocking=True))\n')
    [result] = sarif(tmp_path, "uni.py")["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (4, 10)  # 12 in UTF-8 bytes


def test_sarif_without_findings_is_a_valid_empty_run_and_exits_0(tmp_path, run):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    code, out, _ = run(tmp_path, "check", "--format", "sarif", ".")
    assert code == 0
    log = validate_sarif(json.loads(out))
    assert log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) == len(ALL_RULES) + len(RUNTIME_RULES) + 1


def test_sarif_says_when_a_path_could_not_be_checked(project, run):
    code, out, err = run(project, "check", "--format", "sarif", ".", "missing.py")
    assert code == 2 and "missing.py" in err
    [invocation] = validate_sarif(json.loads(out))["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert [n["level"] for n in invocation["toolExecutionNotifications"]] == ["error"]
    assert "missing.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_exit_zero_keeps_the_log_for_upload(project, run):
    code, out, err = run(project, "check", "--format", "sarif", "--exit-zero", ".")
    assert code == 0 and err == ""
    assert len(validate_sarif(json.loads(out))["runs"][0]["results"]) == 5


def test_sarif_uri_is_percent_encoded(tmp_path, sarif):
    write(tmp_path, "my file%.py", BAD)
    [result] = sarif(tmp_path, ".")["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert " " not in uri
    assert urllib.parse.unquote(uri) == "my file%.py"


# ---------------------------------------------------------------------------------------- interprocedural trace
TRACED = Finding(
    "PIN001", "Pageable host buffer passed to `upload` at line 9", "app.py", Location(9, 1), Location(9, 12),
    related=(Related("buffer allocated here by `numpy.empty`", "app.py", Location(8, 5), Location(8, 17)),),
    trace=(Related("allocated by `numpy.empty`", "app.py", Location(8, 5), Location(8, 17)),
           Related("passed as `host` to `upload`", "app.py", Location(9, 1), Location(9, 12)),
           Related("copied asynchronously by `cupy.ndarray.set`", "util.py", Location(3, 5), Location(3, 25))))


def test_trace_is_a_sarif_code_flow():
    [result] = validate_sarif(sarif_log([TRACED]))["runs"][0]["results"]
    [flow] = result["codeFlows"]
    [thread] = flow["threadFlows"]
    steps = [(s["location"]["physicalLocation"]["artifactLocation"]["uri"],
              s["location"]["physicalLocation"]["region"]["startLine"], s["location"]["message"]["text"])
             for s in thread["locations"]]
    assert steps == [(t.filename, t.location.row, t.message) for t in TRACED.trace]


def test_trace_is_a_json_list_of_filename_location_message():
    out = io.StringIO()
    write_report([TRACED], out, ReportOptions(format="json"))
    [data] = json.loads(out.getvalue())
    assert [(s["filename"], s["location"], s["message"]) for s in data["trace"]] == \
        [(t.filename, {"row": t.location.row, "column": t.location.column}, t.message) for t in TRACED.trace]
    assert "codeFlows" not in validate_sarif(sarif_log([Finding("PIN001", "m", "a.py", Location(1, 1),
                                                                Location(1, 2))]))["runs"][0]["results"][0]


# ---------------------------------------------------------------------------------------- notebooks
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Upload\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import numpy as np, cupy as cp\n", "h = np.zeros(1 << 20, dtype=np.float32)\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["d.set(h, stream=s)\n"]}],
         "source": ["d = cp.empty(1 << 20, dtype=np.float32)\n", "s = cp.cuda.Stream(non_blocking=True)\n",
                    "d.set(h, stream=s)"]},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


def test_notebook_sarif_points_at_the_ipynb_line_with_the_source(tmp_path, sarif):
    text = json.dumps(NOTEBOOK, indent=1)
    write(tmp_path, "upload.ipynb", text)
    [result] = sarif(tmp_path, "upload.ipynb")["runs"][0]["results"]  # valid: no empty replacements
    region = result["locations"][0]["physicalLocation"]["region"]
    line = text.split("\n")[region["startLine"] - 1]
    assert line[region["startColumn"] - 1:].startswith("d.set(h, stream=s)")
    assert region["endLine"] == region["startLine"]
    assert line[region["endColumn"] - 1] == '"'  # the end of the call is the end of that source string
    assert '"source"' in "\n".join(text.split("\n")[:region["startLine"]][-4:])  # not the output's copy
    assert result["message"]["text"].startswith("cell 3, line 3: Pageable host buffer")
    assert result["properties"]["cell"] == 3
    assert result["properties"]["cellLocation"] == {"row": 3, "column": 1}
    assert "fixes" not in result  # cell edits are not edits of the JSON file; --fix applies them


def test_notebook_json_has_the_cell_and_in_cell_rows(tmp_path, json_findings):
    write(tmp_path, "upload.ipynb", json.dumps(NOTEBOOK, indent=1))
    write(tmp_path, "bad.py", BAD)
    by_file = {f["filename"]: f for f in json_findings(tmp_path, ".")}
    assert by_file["upload.ipynb"]["cell"] == 3
    assert by_file["upload.ipynb"]["location"] == {"row": 3, "column": 1}
    assert by_file["bad.py"]["cell"] is None


# ---------------------------------------------------------------------------------------- JSON
RUFF_KEYS = {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}


def test_json_has_ruffs_keys_plus_related_and_trace(project, json_findings):
    findings = json_findings(project, ".")
    assert findings
    for item in findings:
        assert set(item) == RUFF_KEYS | {"related", "trace"}
        assert set(item["location"]) == set(item["end_location"]) == {"row", "column"}
        assert item["trace"] == []
        if item["fix"] is not None:
            assert set(item["fix"]) == {"applicability", "message", "edits"}
            for edit in item["fix"]["edits"]:
                assert set(edit) == {"content", "location", "end_location"}


def test_json_url_is_the_rules_documentation(project, json_findings):
    for item in json_findings(project, "."):
        if item["code"] == "PIN000" and not (REPO / "rules" / "PIN000.md").exists():
            assert item["url"] is None
            continue
        assert item["url"].startswith("file:///")
        doc = Path(urllib.parse.unquote(urllib.parse.urlparse(item["url"]).path))
        assert doc.read_text(encoding="utf-8").startswith(f"# {item['code']}")


def test_json_noqa_row_is_where_a_noqa_comment_suppresses_the_finding(tmp_path, json_findings, run):
    source = BAD.replace("d.set(h, stream=s)", "d.set(h,\n      stream=s)")
    write(tmp_path, "bad.py", source)
    [item] = json_findings(tmp_path, "bad.py")
    lines = source.splitlines()
    lines[item["noqa_row"] - 1] += f"  # noqa: {item['code']}"
    write(tmp_path, "bad.py", "\n".join(lines) + "\n")
    assert json_findings(tmp_path, "bad.py") == []


def test_json_lines_is_one_json_object_per_finding(project, run, json_findings):
    findings = json_findings(project, ".")
    code, out, _ = run(project, "check", "--format", "json-lines", ".")
    assert code == 1
    assert [json.loads(line) for line in out.splitlines()] == findings


# ---------------------------------------------------------------------------------------- --statistics
STAT = re.compile(r"^\s*(\d+)\t(PIN\d{3})\s*\t(\[[*~ ]\]) ([a-z0-9-]+)$")


def test_statistics_prints_the_table_and_the_summary_only(project, run, json_findings):
    write(project, "more/bad2.py", BAD)
    findings = json_findings(project, ".")
    code, out, _ = run(project, "check", "--statistics", ".")
    assert code == 1
    lines = out.splitlines()
    rows = [STAT.match(line) for line in lines[:4]]
    assert all(rows), out
    counted = [(m[2], int(m[1])) for m in rows]
    assert counted == [("PIN001", 3), ("PIN000", 1), ("PIN004", 1), ("PIN007", 1)]  # most first, ties by code
    assert {m[2]: (m[3], m[4]) for m in rows} == {
        "PIN001": ("[*]", "pageable-async-copy"), "PIN000": ("[ ]", "syntax-error"),
        "PIN004": ("[ ]", "mapped-memory-reread"), "PIN007": ("[ ]", "pageable-transfer-in-loop")}
    assert lines[4:] == [f"Found {len(findings)} errors.", "[*] 3 fixable with the `--fix` option."]
    assert not any(f["message"] in out for f in findings)  # no finding lines


def test_statistics_as_json(project, run):
    code, out, _ = run(project, "check", "--statistics", "--output-format", "json", ".")
    assert code == 1
    assert json.loads(out) == [
        {"code": "PIN001", "name": "pageable-async-copy", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "PIN000", "name": "syntax-error", "count": 1, "fixable": False, "fixable_count": 0},
        {"code": "PIN004", "name": "mapped-memory-reread", "count": 1, "fixable": False, "fixable_count": 0},
        {"code": "PIN007", "name": "pageable-transfer-in-loop", "count": 1, "fixable": False, "fixable_count": 0}]


def test_statistics_honours_selection_and_quiet(project, run):
    code, out, _ = run(project, "check", "--statistics", "--select", "PIN007", "-q", ".")
    assert code == 1
    # broken.py's PIN000 cannot be deselected (issue 14): ruff reports syntax errors whatever is selected.
    assert out == "1\tPIN000\t[ ] syntax-error\n1\tPIN007\t[ ] pageable-transfer-in-loop\n"


def test_statistics_without_findings(tmp_path, run):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    assert run(tmp_path, "check", "--statistics", ".")[:2] == (0, "All checks passed!\n")
    assert run(tmp_path, "check", "--statistics", "--format", "json", ".")[:2] == (0, "[]\n")


@pytest.mark.parametrize("other", [["--format", "sarif"], ["--diff"], ["--add-noqa"]])
def test_statistics_refuses_what_it_cannot_count(project, run, other):
    code, out, err = run(project, "check", "--statistics", *other, ".")
    assert code == 2 and out == ""
    assert err.startswith("pinlint: error: --statistics") and err.count("\n") == 1


def test_statistics_marks_rules_fixable_in_part():
    fixed = Fix("safe", "m", (Edit("x", Location(1, 1), Location(1, 2)),))
    unsafe = Fix("unsafe", "m", (Edit("x", Location(1, 1), Location(1, 2)),))
    findings = [Finding("PIN001", "m", "a.py", Location(1, 1), Location(1, 2), fix=fixed),
                Finding("PIN001", "m", "a.py", Location(2, 1), Location(2, 2)),
                Finding("PIN005", "m", "a.py", Location(3, 1), Location(3, 2), fix=unsafe)]
    out = io.StringIO()
    write_report(findings, out, ReportOptions(statistics=True, quiet=True))
    assert out.getvalue() == "2\tPIN001\t[~] pageable-async-copy\n1\tPIN005\t[ ] async-d2h-read-before-sync\n"
    out = io.StringIO()
    write_report(findings, out, ReportOptions(statistics=True, quiet=True, unsafe=True))
    assert out.getvalue().splitlines()[1] == "1\tPIN005\t[*] async-d2h-read-before-sync"


def test_the_cache_keeps_the_trace(tmp_path):
    from pinlint.runner import Cache
    from pinlint.settings import Settings
    cache = Cache.open(tmp_path)
    key = cache.key(b"program", Settings())
    cache.put(key, [TRACED])
    [restored] = cache.get(key, "app.py")
    assert restored.trace == TRACED.trace and restored.related == TRACED.related
