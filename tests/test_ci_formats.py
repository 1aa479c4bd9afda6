"""The CI formats: GitHub workflow annotations, GitLab code quality and JUnit XML, as their consumers
read them (in-process runs of pinlint's own entry point)."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from pinlint.model import Edit, Finding, Fix, Location
from pinlint.report import ReportOptions, write_report

from helpers import BAD, run_in_process, write
from test_outputs import LOOP, MAPPED, NOTEBOOK, BROKEN


@pytest.fixture
def project(tmp_path):
    write(tmp_path, "pkg/bad.py", BAD)
    write(tmp_path, "pkg/mapped.py", MAPPED)
    write(tmp_path, "loop.py", LOOP)
    write(tmp_path, "broken.py", BROKEN)
    return tmp_path


@pytest.fixture
def run(monkeypatch, capsys):
    def invoke(cwd, *args: str) -> tuple:
        return run_in_process(monkeypatch, capsys, cwd, *args, "-j", "1")
    return invoke


def _json(run, cwd, *args) -> list:
    code, out, err = run(cwd, "check", "--format", "json", *args)
    assert code in (0, 1), err
    return json.loads(out)


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


def test_github_one_annotation_per_finding(project, run):
    findings = _json(run, project, ".")
    code, out, _ = run(project, "check", "--format", "github", ".")
    assert code == 1
    annotations = _annotations(out)
    assert len(annotations) == len(findings) == 5
    for annotation, finding in zip(annotations, findings):
        assert annotation["level"] == ("error" if finding["code"] == "PIN000" else "warning")
        props = annotation["props"]
        assert set(props) == {"title", "file", "line", "col", "endLine", "endColumn"}
        assert props["file"] == finding["filename"]
        assert (int(props["line"]), int(props["col"])) == (finding["location"]["row"], finding["location"]["column"])
        assert (int(props["endLine"]), int(props["endColumn"])) == (finding["end_location"]["row"],
                                                                    finding["end_location"]["column"])
        assert props["title"] == f"pinlint ({finding['code']})"
        assert annotation["message"] == f"{finding['code']} {finding['message']}"


def test_github_annotation_of_a_notebook_lands_on_the_ipynb_line(tmp_path, run):
    text = json.dumps(NOTEBOOK, indent=1)
    write(tmp_path, "upload.ipynb", text)
    code, out, _ = run(tmp_path, "check", "--format", "github", "upload.ipynb")
    assert code == 1
    [annotation] = _annotations(out)
    props = annotation["props"]
    line = text.split("\n")[int(props["line"]) - 1]
    assert line[int(props["col"]) - 1:].startswith("d.set(h, stream=s)")
    assert annotation["message"].startswith("PIN001 cell 3, line 3: ")


def test_github_without_findings_prints_nothing(tmp_path, run):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    assert run(tmp_path, "check", "--format", "github", ".")[:2] == (0, "")


def test_github_escapes_percent_colon_comma_and_newline_in_file_names(tmp_path, run):
    name = "we:ird,na%me\nx.py"
    write(tmp_path, name, BAD)
    _, out, _ = run(tmp_path, "check", "--format", "github", ".")
    [line] = out.splitlines()  # the newline in the name does not split the command
    assert "file=we%3Aird%2Cna%25me%0Ax.py," in line
    assert _annotations(out)[0]["props"]["file"] == name


def test_github_escapes_message_data():
    finding = Finding(code="PIN001", message="50% of a: b, c\nsecond line\r", filename="a:b,c.py",
                      location=Location(3, 4), end_location=Location(5, 6),
                      fix=Fix("safe", "m", (Edit("x", Location(1, 1), Location(1, 1)),)))
    out = io.StringIO()
    write_report([finding], out, ReportOptions(format="github"))
    assert out.getvalue() == ("::warning title=pinlint (PIN001),file=a%3Ab%2Cc.py,line=3,col=4,endLine=5,"
                              "endColumn=6::PIN001 50%25 of a: b, c%0Asecond line%0D\n")


# ---------------------------------------------------------------------------------------- GitLab
# The fields of GitLab's code quality report, as documented (docs.gitlab.com/ci/testing/code_quality/,
# "Code Quality report format"): an array of objects with `description`, `check_name`, `fingerprint`,
# `severity` (info, minor, major, critical or blocker), `location.path` (relative to the repository, no
# leading "./") and the line as `location.lines.begin` or `location.positions.begin.line`.
_LINE = {"type": "integer", "minimum": 1}
GITLAB_CODE_QUALITY = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "pattern": r"^(?!\./)(?!/)\S"},
                    "lines": {"type": "object", "required": ["begin"], "properties": {"begin": _LINE}},
                    "positions": {"type": "object", "required": ["begin"], "properties": {
                        "begin": {"type": "object", "required": ["line"], "properties": {"line": _LINE}}}},
                },
                "anyOf": [{"required": ["lines"]}, {"required": ["positions"]}],
            },
        },
    },
}


def test_gitlab_report_has_the_documented_fields(project, run):
    findings = _json(run, project, ".")
    code, out, _ = run(project, "check", "--output-format", "gitlab", ".")
    assert code == 1
    issues = json.loads(out)
    jsonschema.validate(issues, GITLAB_CODE_QUALITY)
    assert len(issues) == len(findings) == 5
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # GitLab keeps one issue per fingerprint
    for issue, finding in zip(issues, findings):
        assert issue["check_name"] == finding["code"]
        assert issue["description"] == f"{finding['code']} {finding['message']}"
        assert issue["location"]["path"] == finding["filename"]
        assert issue["location"]["positions"]["begin"] == {"line": finding["location"]["row"],
                                                           "column": finding["location"]["column"]}
        assert issue["location"]["positions"]["end"] == {"line": finding["end_location"]["row"],
                                                         "column": finding["end_location"]["column"]}
    severity = {i["check_name"]: i["severity"] for i in issues}
    assert severity == {"PIN000": "critical", "PIN001": "major", "PIN004": "major", "PIN007": "major"}


def test_gitlab_fingerprints_survive_moved_lines(tmp_path, run):
    write(tmp_path, "a.py", LOOP)
    before = [i["fingerprint"] for i in json.loads(run(tmp_path, "check", "--format", "gitlab", ".")[1])]
    write(tmp_path, "a.py", "\n\n\n" + LOOP)
    after = json.loads(run(tmp_path, "check", "--format", "gitlab", ".")[1])
    assert [i["fingerprint"] for i in after] == before
    assert [i["location"]["positions"]["begin"]["line"] for i in after] == [8, 10]


def test_gitlab_notebook_issue_is_on_the_ipynb_line(tmp_path, run):
    text = json.dumps(NOTEBOOK, indent=1)
    write(tmp_path, "nb/upload.ipynb", text)
    [issue] = json.loads(run(tmp_path, "check", "--format", "gitlab", ".")[1])
    jsonschema.validate([issue], GITLAB_CODE_QUALITY)
    assert issue["location"]["path"] == "nb/upload.ipynb"
    line = text.split("\n")[issue["location"]["positions"]["begin"]["line"] - 1]
    assert "d.set(h, stream=s)" in line
    assert issue["description"].startswith("PIN001 cell 3, line 3: ")


def test_gitlab_without_findings_is_an_empty_array(tmp_path, run):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    assert run(tmp_path, "check", "--format", "gitlab", ".")[:2] == (0, "[]\n")


# ---------------------------------------------------------------------------------------- JUnit
def test_junit_report_has_a_failing_case_per_finding(project, run):
    findings = _json(run, project, ".")
    code, out, _ = run(project, "check", "--output-format", "junit", ".")
    assert code == 1
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("name") == "pinlint"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "5", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["broken.py", "loop.py", "pkg/bad.py", "pkg/mapped.py"]
    cases = [c for s in suites for c in s.findall("testcase")]
    for suite in suites:
        assert int(suite.get("tests")) == int(suite.get("failures")) == len(suite.findall("testcase"))
    for case, finding in zip(cases, findings):
        assert case.get("name") == f"pinlint.{finding['code']}"
        assert case.get("classname") == case.get("file") == finding["filename"]
        assert case.get("line") == str(finding["location"]["row"])
        [failure] = case.findall("failure")
        assert failure.get("message") == finding["message"] and failure.get("type") == finding["code"]
        assert failure.text.startswith(f"line {finding['location']['row']}, col {finding['location']['column']}: ")


def test_junit_without_findings_is_one_passing_case(tmp_path, run):
    write(tmp_path, "clean.py", "import cupy\nx = 1\n")
    code, out, _ = run(tmp_path, "check", "--format", "junit", ".")
    assert code == 0
    root = ET.fromstring(out.split("\n", 1)[1])
    [case] = root.iter("testcase")
    assert root.get("failures") == "0" and not list(case)
