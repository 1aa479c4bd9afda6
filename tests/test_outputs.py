"""Machine-readable outputs, run as CI runs them: SARIF 2.1.0 (for code scanning), GitHub workflow
annotations, JSON lines and ``--statistics``.

No copy of the official SARIF schema ships with the test environment and nothing is downloaded: the
structure is checked field by field below, and (where ``jsonschema`` is installed) against
``SARIF_SUBSET_SCHEMA``, a hand-written JSON Schema that encodes what SARIF 2.1.0 requires of the
objects pinlint emits (required properties, enums, minimums, and the property names the official
schema allows on each object, which it closes with ``additionalProperties: false``).
"""

from __future__ import annotations

import io
import json
import re
import textwrap
import urllib.parse
from collections import Counter
from pathlib import Path

import pytest

from pinlint.checks import ALL_RULES, RULES_BY_CODE
from pinlint.model import Finding, Fix, Edit, Location
from pinlint.report import write_github

from helpers import pinlint, write, BAD

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


def json_findings(cwd: Path, *args: str) -> list:
    proc = pinlint(cwd, "check", "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def sarif(cwd: Path, *args: str) -> dict:
    proc = pinlint(cwd, "check", "--format", "sarif", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------- SARIF
def _closed(properties: dict, required=(), **extra) -> dict:
    """An object schema that, like the official one, allows only the properties it names."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = list(required)
    return schema


_ANY = {}
_STRING = {"type": "string"}
_INDEX = {"type": "integer", "minimum": -1}
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
_BAG = {"type": "object"}
_MULTIFORMAT = _closed({"text": _STRING, "markdown": _STRING, "properties": _BAG}, required=["text"])
_MESSAGE = _closed({"text": _STRING, "markdown": _STRING, "id": _STRING,
                    "arguments": {"type": "array", "items": _STRING}, "properties": _BAG},
                   anyOf=[{"required": ["text"]}, {"required": ["id"]}])
_POSITIVE = {"type": "integer", "minimum": 1}
_REGION = _closed({"startLine": _POSITIVE, "startColumn": _POSITIVE, "endLine": _POSITIVE, "endColumn": _POSITIVE,
                   "charOffset": _INDEX, "charLength": {"type": "integer", "minimum": 0}, "byteOffset": _INDEX,
                   "byteLength": {"type": "integer", "minimum": 0}, "snippet": _ANY, "message": _MESSAGE,
                   "sourceLanguage": _STRING, "properties": _BAG})
_ARTIFACT_LOCATION = _closed({"uri": _STRING, "uriBaseId": _STRING, "index": _INDEX, "description": _MESSAGE,
                              "properties": _BAG})
_PHYSICAL = _closed({"address": _ANY, "artifactLocation": _ARTIFACT_LOCATION, "region": _REGION,
                     "contextRegion": _REGION, "properties": _BAG},
                    anyOf=[{"required": ["address"]}, {"required": ["artifactLocation"]}])
_LOCATION = _closed({"id": _INDEX, "physicalLocation": _PHYSICAL, "logicalLocations": _ANY, "message": _MESSAGE,
                     "annotations": _ANY, "relationships": _ANY, "properties": _BAG})
_ARTIFACT_CONTENT = _closed({"text": _STRING, "binary": _STRING, "rendered": _MULTIFORMAT, "properties": _BAG})
_REPLACEMENT = _closed({"deletedRegion": _REGION, "insertedContent": _ARTIFACT_CONTENT, "properties": _BAG},
                       required=["deletedRegion"])
_ARTIFACT_CHANGE = _closed({"artifactLocation": _ARTIFACT_LOCATION,
                            "replacements": {"type": "array", "minItems": 1, "items": _REPLACEMENT},
                            "properties": _BAG}, required=["artifactLocation", "replacements"])
_FIX = _closed({"description": _MESSAGE,
                "artifactChanges": {"type": "array", "minItems": 1, "uniqueItems": True, "items": _ARTIFACT_CHANGE},
                "properties": _BAG}, required=["artifactChanges"])
_RESULT_KEYS = ("rule", "kind", "analysisTarget", "guid", "correlationGuid", "occurrenceCount",
                "partialFingerprints", "fingerprints", "stacks", "codeFlows", "graphs", "graphTraversals",
                "suppressions", "baselineState", "rank", "attachments", "hostedViewerUri", "workItemUris",
                "provenance", "taxa", "webRequest", "webResponse")
_RESULT = _closed({"ruleId": _STRING, "ruleIndex": _INDEX, "level": _LEVEL, "message": _MESSAGE,
                   "locations": {"type": "array", "items": _LOCATION},
                   "relatedLocations": {"type": "array", "uniqueItems": True, "items": _LOCATION},
                   "fixes": {"type": "array", "uniqueItems": True, "items": _FIX},
                   "properties": _BAG, **{key: _ANY for key in _RESULT_KEYS}}, required=["message"])
_CONFIGURATION = _closed({"enabled": {"type": "boolean"}, "level": _LEVEL,
                          "rank": {"type": "number", "minimum": -1, "maximum": 100}, "parameters": _BAG,
                          "properties": _BAG})
_DESCRIPTOR = _closed({"id": _STRING, "deprecatedIds": _ANY, "guid": _STRING, "deprecatedGuids": _ANY,
                       "name": _STRING, "deprecatedNames": _ANY, "shortDescription": _MULTIFORMAT,
                       "fullDescription": _MULTIFORMAT, "messageStrings": _ANY,
                       "defaultConfiguration": _CONFIGURATION, "helpUri": _STRING, "help": _MULTIFORMAT,
                       "relationships": _ANY, "properties": _BAG}, required=["id"])
_COMPONENT_KEYS = ("guid", "organization", "product", "productSuite", "shortDescription", "fullDescription",
                   "fullName", "dottedQuadFileVersion", "releaseDateUtc", "downloadUri", "globalMessageStrings",
                   "notifications", "taxa", "locations", "language", "contents", "isComprehensive",
                   "localizedDataSemanticVersion", "minimumRequiredLocalizedDataSemanticVersion",
                   "associatedComponent", "translationMetadata", "supportedTaxonomies")
_COMPONENT = _closed({"name": _STRING, "version": _STRING, "semanticVersion": _STRING, "informationUri": _STRING,
                      "rules": {"type": "array", "uniqueItems": True, "items": _DESCRIPTOR}, "properties": _BAG,
                      **{key: _ANY for key in _COMPONENT_KEYS}}, required=["name"])
_TOOL = _closed({"driver": _COMPONENT, "extensions": _ANY, "properties": _BAG}, required=["driver"])
_RUN_KEYS = ("invocations", "conversion", "language", "versionControlProvenance", "originalUriBaseIds",
             "artifacts", "logicalLocations", "graphs", "automationDetails", "runAggregates", "baselineGuid",
             "redactionTokens", "defaultEncoding", "defaultSourceLanguage", "newlineSequences",
             "externalPropertyFileReferences", "threadFlowLocations", "taxonomies", "addresses", "translations",
             "policies", "webRequests", "webResponses", "specialLocations")
_RUN = _closed({"tool": _TOOL, "results": {"type": "array", "items": _RESULT},
                "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]}, "properties": _BAG,
                **{key: _ANY for key in _RUN_KEYS}}, required=["tool"])
SARIF_SUBSET_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "The parts of SARIF 2.1.0 that pinlint emits (hand-written from the OASIS schema's constraints)",
    **_closed({"$schema": {"type": "string", "format": "uri"}, "version": {"enum": ["2.1.0"]},
               "runs": {"type": "array", "items": _RUN}, "inlineExternalProperties": _ANY, "properties": _BAG},
              required=["version", "runs"]),
}


def test_sarif_is_valid_against_the_hand_written_2_1_0_schema(project):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed; the structural checks "
                                                          "in the other SARIF tests still run")
    log = sarif(project, ".")
    assert log["runs"][0]["results"], "the project should produce results"
    jsonschema.Draft7Validator.check_schema(SARIF_SUBSET_SCHEMA)
    jsonschema.validate(log, SARIF_SUBSET_SCHEMA, cls=jsonschema.Draft7Validator)


def test_hand_written_schema_rejects_what_sarif_forbids():
    """The schema above is not vacuous: it rejects the mistakes it is meant to catch."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
        {"ruleId": "A", "message": {"text": "m"}, "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": "a.py"}, "region": {"startLine": 1, "startColumn": 1}}}]}]}]}
    jsonschema.validate(good, SARIF_SUBSET_SCHEMA)
    broken = [
        lambda log: log.update(version="2.0.0"),
        lambda log: log["runs"][0]["tool"]["driver"].pop("name"),
        lambda log: log["runs"][0]["results"][0].pop("message"),
        lambda log: log["runs"][0]["results"][0].update(level="warn"),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0),
        lambda log: log["runs"][0]["results"][0].update(severity="high"),
        lambda log: log["runs"][0]["results"][0].update(fixes=[{"description": {"text": "d"}}]),
    ]
    for mutate in broken:
        log = json.loads(json.dumps(good))
        mutate(log)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(log, SARIF_SUBSET_SCHEMA)


def test_sarif_log_header_and_driver(project):
    log = sarif(project, ".")
    assert log["version"] == "2.1.0"
    assert log["$schema"].startswith("https://") and "sarif" in log["$schema"] and "2.1.0" in log["$schema"]
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pinlint"
    assert isinstance(driver.get("version"), str) and driver["version"]
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_rules_carry_id_short_description_and_the_rule_doc_as_help(project):
    rules = sarif(project, ".")["runs"][0]["tool"]["driver"]["rules"]
    by_id = {rule["id"]: rule for rule in rules}
    assert len(by_id) == len(rules), "rule ids must be unique"
    assert {rule.code for rule in ALL_RULES} <= set(by_id)
    for rule in ALL_RULES:
        descriptor = by_id[rule.code]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        doc = (REPO / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
        assert descriptor["help"]["text"] == doc
        assert descriptor["help"].get("markdown", doc) == doc
        assert descriptor["fullDescription"]["text"] in doc
        assert descriptor["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
    assert by_id["PIN000"]["shortDescription"]["text"]


def test_sarif_results_point_at_the_finding_and_its_rule(project):
    findings = json_findings(project, ".")
    run = sarif(project, ".")["runs"][0]
    rules, results = run["tool"]["driver"]["rules"], run["results"]
    assert len(results) == len(findings) == 5  # bad: 1, mapped: 1, loop: 2, broken: 1 (PIN000)
    for result, finding in zip(results, findings):
        assert result["ruleId"] == finding["code"]
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == ("error" if finding["code"] == "PIN000" else "warning")
        assert result["message"]["text"] == finding["message"]
        [location] = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == finding["filename"]
        region = physical["region"]
        assert (region["startLine"], region["startColumn"]) == (finding["location"]["row"],
                                                                finding["location"]["column"])
        assert (region["endLine"], region["endColumn"]) == (finding["end_location"]["row"],
                                                            finding["end_location"]["column"])
        assert min(region.values()) >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])


def test_sarif_uris_are_relative_with_forward_slashes(project):
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in sarif(project, ".")["runs"][0]["results"]}
    assert uris == {"pkg/bad.py", "pkg/mapped.py", "loop.py", "broken.py"}


def test_sarif_related_location_is_the_allocation_site(project):
    results = sarif(project, ".")["runs"][0]["results"]
    by_key = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]): r for r in results}
    expected = {("pkg/bad.py", "PIN001"): (2, 5), ("pkg/mapped.py", "PIN004"): (8, 5),
                ("loop.py", "PIN007"): (3, 5), ("loop.py", "PIN001"): (3, 5)}
    for key, (line, column) in expected.items():
        related = by_key[key]["relatedLocations"]
        assert len(related) == 1, related
        assert related[0]["physicalLocation"]["artifactLocation"]["uri"] == key[0]
        region = related[0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (line, column)
        assert related[0]["message"]["text"]
        assert isinstance(related[0]["id"], int) and related[0]["id"] >= 0
    assert "relatedLocations" not in by_key[("broken.py", "PIN000")]


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


def test_sarif_fixes_match_the_json_edits_and_reproduce_the_fix(project):
    results = sarif(project, ".")["runs"][0]["results"]
    findings = json_findings(project, ".")
    for result, finding in zip(results, findings):
        if finding["fix"] is None:
            assert "fixes" not in result, result
            continue
        [fix] = result["fixes"]
        assert fix["description"]["text"].startswith(finding["fix"]["message"])
        assert finding["fix"]["applicability"] in fix["description"]["text"]
        [change] = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == finding["filename"]
        assert len(change["replacements"]) == len(finding["fix"]["edits"])
        for replacement, edit in zip(change["replacements"], finding["fix"]["edits"]):
            region = replacement["deletedRegion"]
            assert (region["startLine"], region["startColumn"]) == (edit["location"]["row"],
                                                                    edit["location"]["column"])
            assert (region["endLine"], region["endColumn"]) == (edit["end_location"]["row"],
                                                                edit["end_location"]["column"])
            assert replacement["insertedContent"]["text"] == edit["content"]
    # Applying the SARIF fix of pkg/bad.py gives exactly what `pinlint fix` writes.
    [result] = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/bad.py"]
    patched = _apply(BAD, result["fixes"][0]["artifactChanges"][0]["replacements"])
    assert patched != BAD
    proc = pinlint(project, "fix", "pkg/bad.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "pkg" / "bad.py").read_text(encoding="utf-8") == patched


def test_sarif_finding_without_a_fix_has_no_fixes(project):
    results = sarif(project, "pkg/mapped.py")["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["PIN004"]
    assert "fixes" not in results[0]


def test_sarif_columns_count_code_points(tmp_path):
    write(tmp_path, "uni.py", 'import numpy as np, cupy as cp\nh = np.zeros(1 << 20, dtype=np.float32)\n'
                              'd = cp.empty(1 << 20, dtype=np.float32)\n'
                              'ü = "é"; d.set(h, stream=cp.cuda.Stream(non_blocking=True))\n')
    [result] = sarif(tmp_path, "uni.py")["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (4, 10)  # 12 in UTF-8 bytes


def test_sarif_without_findings_is_a_valid_empty_run_and_exits_0(tmp_path):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    proc = pinlint(tmp_path, "check", "--format", "sarif", ".")
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    assert log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) >= len(ALL_RULES)


def test_sarif_exit_zero_keeps_the_log_for_upload(project):
    proc = pinlint(project, "check", "--format", "sarif", "--exit-zero", ".")
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(json.loads(proc.stdout)["runs"][0]["results"]) == 5


def test_sarif_uri_is_percent_encoded(tmp_path):
    write(tmp_path, "my file%.py", BAD)
    [result] = sarif(tmp_path, ".")["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert " " not in uri
    assert urllib.parse.unquote(uri) == "my file%.py"


# ---------------------------------------------------------------------------------------- GitHub
ANNOTATION = re.compile(r"^::(?P<level>warning|error) (?P<props>[^:\n]*)::(?P<message>.*)$")


def _unescape_property(value: str) -> str:
    return (value.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%0D", "\r")
            .replace("%25", "%"))


def _annotations(stdout: str) -> list:
    out = []
    for line in stdout.splitlines():
        match = ANNOTATION.match(line)
        assert match, f"not a workflow command: {line!r}"
        props = dict(item.split("=", 1) for item in match["props"].split(","))
        out.append({"level": match["level"], "props": {k: _unescape_property(v) for k, v in props.items()},
                    "message": match["message"]})
    return out


def test_github_one_annotation_per_finding(project):
    findings = json_findings(project, ".")
    proc = pinlint(project, "check", "--format", "github", ".")
    assert proc.returncode == 1
    annotations = _annotations(proc.stdout)
    assert len(annotations) == len(findings)
    for annotation, finding in zip(annotations, findings):
        assert annotation["level"] == ("error" if finding["code"] == "PIN000" else "warning")
        props = annotation["props"]
        assert set(props) == {"title", "file", "line", "col", "endLine", "endColumn"}
        assert props["file"] == finding["filename"]
        assert (int(props["line"]), int(props["col"])) == (finding["location"]["row"], finding["location"]["column"])
        assert (int(props["endLine"]), int(props["endColumn"])) == (finding["end_location"]["row"],
                                                                    finding["end_location"]["column"])
        assert finding["code"] in props["title"] and "pinlint" in props["title"]
        assert annotation["message"] == f"{finding['code']} {finding['message']}"


def test_github_without_findings_prints_nothing(tmp_path):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    proc = pinlint(tmp_path, "check", "--format", "github", ".")
    assert proc.returncode == 0 and proc.stdout == ""


def test_github_escapes_percent_colon_comma_and_newline_in_file_names(tmp_path):
    name = "we:ird,na%me\nx.py"
    write(tmp_path, name, BAD)
    proc = pinlint(tmp_path, "check", "--format", "github", ".")
    [line] = proc.stdout.splitlines()  # the newline in the name does not split the command
    assert "file=we%3Aird%2Cna%25me%0Ax.py," in line
    assert _annotations(proc.stdout)[0]["props"]["file"] == name


def test_github_escapes_message_data():
    finding = Finding(code="PIN001", message="50% of a: b, c\nsecond line\r", filename="a:b,c.py",
                      location=Location(3, 4), end_location=Location(5, 6),
                      fix=Fix("safe", "m", (Edit("x", Location(1, 1), Location(1, 1)),)))
    out = io.StringIO()
    write_github([finding], out)
    assert out.getvalue() == ("::warning title=pinlint (PIN001),file=a%3Ab%2Cc.py,line=3,col=4,endLine=5,"
                              "endColumn=6::PIN001 50%25 of a: b, c%0Asecond line%0D\n")


# ---------------------------------------------------------------------------------------- JSON lines
def test_json_lines_is_one_json_object_per_finding(project):
    findings = json_findings(project, ".")
    proc = pinlint(project, "check", "--format", "json-lines", ".")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == len(findings) == 5
    assert [json.loads(line) for line in lines] == findings
    for item in findings:
        assert set(item) >= {"code", "message", "filename", "location", "end_location", "fix", "url", "related"}


def test_json_lines_without_findings_is_empty(tmp_path):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    proc = pinlint(tmp_path, "check", "--format", "json-lines", ".")
    assert proc.returncode == 0 and proc.stdout == ""


# ---------------------------------------------------------------------------------------- --statistics
STAT = re.compile(r"^\s*(\d+)\t(PIN\d{3})$")


def test_statistics_counts_findings_per_code(project):
    write(project, "more/bad2.py", BAD)
    findings = json_findings(project, ".")
    expected = Counter(f["code"] for f in findings)
    assert expected == {"PIN001": 3, "PIN004": 1, "PIN007": 1, "PIN000": 1}
    proc = pinlint(project, "check", "--statistics", ".")
    assert proc.returncode == 1
    rows = [STAT.match(line) for line in proc.stdout.splitlines()]
    counted = [(m[2], int(m[1])) for m in rows if m]
    assert dict(counted) == expected
    # Most frequent first, ties by code.
    assert counted == sorted(counted, key=lambda item: (-item[1], item[0]))
    assert f"Found {len(findings)} errors." in proc.stdout.splitlines()


def test_statistics_honours_selection(project):
    proc = pinlint(project, "check", "--statistics", "--select", "PIN007", ".")
    counted = [m.groups() for m in map(STAT.match, proc.stdout.splitlines()) if m]
    assert counted == [("1", "PIN000"), ("1", "PIN007")]  # broken.py: PIN000 cannot be deselected


def test_statistics_without_findings(tmp_path):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    proc = pinlint(tmp_path, "check", "--statistics", ".")
    assert proc.returncode == 0
    assert not [line for line in proc.stdout.splitlines() if STAT.match(line)]
    assert "All checks passed!" in proc.stdout


def test_every_rule_has_a_sarif_descriptor_index_in_order():
    """ruleIndex values are positions in driver.rules; the order is PIN000 then `rule --all`'s order."""
    from pinlint.report import sarif_log

    rules = sarif_log([])["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["PIN000", *RULES_BY_CODE]
