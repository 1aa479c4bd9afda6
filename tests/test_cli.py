"""The ``pinlint check`` command line, run as users run it (a fresh interpreter, ``python -m pinlint``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import libcst
import pytest

from helpers import pinlint, write, BAD


LOOP = textwrap.dedent("""\
    import numpy as np
    from numba import cuda
    h = np.zeros(1 << 20, dtype=np.float32)
    for i in range(10):
        d = cuda.to_device(h)
    """)  # PIN007 at 5:9

CLEAN = textwrap.dedent("""\
    import numpy as np, cupy as cp, cupyx
    h = cupyx.empty_pinned(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    d.set(h, stream=cp.cuda.Stream(non_blocking=True))
    """)

LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<row>\d+):(?P<col>\d+): (?P<code>PIN\d{3}) (?P<message>.+)$")


def lines_of(stdout: str) -> list[dict]:
    return [m.groupdict() for m in map(LINE.match, stdout.splitlines()) if m]


# ---------------------------------------------------------------- exit codes
def test_clean_file_exits_0(tmp_path):
    write(tmp_path, "clean.py", CLEAN)
    proc = pinlint(tmp_path, "check", "clean.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "All checks passed!"


def test_findings_exit_1_with_text_lines_and_summary(tmp_path):
    write(tmp_path, "pkg/bad.py", BAD)
    proc = pinlint(tmp_path, "check", "pkg")
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert lines_of(proc.stdout) == [{"path": "pkg/bad.py", "row": "5", "col": "1", "code": "PIN001",
                                      "message": lines_of(proc.stdout)[0]["message"]}]
    assert "np.zeros" in out[0] and "line 2" in out[0]
    assert "Found 1 error." in out


def test_several_findings_summary_is_plural_and_sorted(tmp_path):
    write(tmp_path, "b.py", BAD)
    write(tmp_path, "a.py", LOOP)
    proc = pinlint(tmp_path, "check", ".")
    assert proc.returncode == 1
    assert [(l["path"], l["row"], l["col"], l["code"]) for l in lines_of(proc.stdout)] == \
        [("a.py", "5", "9", "PIN007"), ("b.py", "5", "1", "PIN001")]
    assert "Found 2 errors." in proc.stdout.splitlines()


def test_default_path_is_the_working_directory(tmp_path):
    write(tmp_path, "sub/bad.py", BAD)
    proc = pinlint(tmp_path, "check")
    assert proc.returncode == 1
    assert [l["path"] for l in lines_of(proc.stdout)] == ["sub/bad.py"]


def test_paths_are_shown_relative_to_the_working_directory(tmp_path):
    bad = write(tmp_path, "pkg/bad.py", BAD)
    proc = pinlint(tmp_path, "check", str(bad.resolve()))
    assert [l["path"] for l in lines_of(proc.stdout)] == ["pkg/bad.py"]
    proc = pinlint(tmp_path / "pkg", "check", ".")
    assert [l["path"] for l in lines_of(proc.stdout)] == ["bad.py"]


def test_missing_path_exits_2_with_message_on_stderr(tmp_path):
    proc = pinlint(tmp_path, "check", "does_not_exist.py")
    assert proc.returncode == 2
    assert "does_not_exist.py" in proc.stderr
    assert "PIN" not in proc.stdout


def test_missing_path_next_to_a_bad_file_still_exits_2(tmp_path):
    write(tmp_path, "bad.py", BAD)
    proc = pinlint(tmp_path, "check", "bad.py", "nope")
    assert proc.returncode == 2
    assert "nope" in proc.stderr
    assert [l["code"] for l in lines_of(proc.stdout)] == ["PIN001"]


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_rule_code_exits_2(tmp_path, option):
    write(tmp_path, "bad.py", BAD)
    proc = pinlint(tmp_path, "check", option, "PIN999", "bad.py")
    assert proc.returncode == 2
    assert "PIN999" in proc.stderr
    assert lines_of(proc.stdout) == []


def test_unknown_format_exits_2(tmp_path):
    write(tmp_path, "bad.py", BAD)
    proc = pinlint(tmp_path, "check", "--format", "yaml", "bad.py")
    assert proc.returncode == 2


# ----------------------------------------------------------------- selection
@pytest.fixture
def both(tmp_path):
    write(tmp_path, "bad.py", BAD)
    write(tmp_path, "loop.py", LOOP)
    return tmp_path


def test_ignore_pin001(both):
    proc = pinlint(both, "check", "--ignore", "PIN001", ".")
    assert proc.returncode == 1
    assert [l["code"] for l in lines_of(proc.stdout)] == ["PIN007"]


def test_select_pin007(both):
    proc = pinlint(both, "check", "--select", "PIN007", ".")
    assert [l["code"] for l in lines_of(proc.stdout)] == ["PIN007"]


def test_select_lowercase_and_comma_separated(both):
    proc = pinlint(both, "check", "--select", "pin001,pin007", ".")
    assert sorted(l["code"] for l in lines_of(proc.stdout)) == ["PIN001", "PIN007"]


def test_ignore_everything_passes(both):
    proc = pinlint(both, "check", "--ignore", "PIN001,PIN007", ".")
    assert proc.returncode == 0
    assert proc.stdout.strip() == "All checks passed!"


def test_exit_zero_still_prints_findings(both):
    proc = pinlint(both, "check", "--exit-zero", ".")
    assert proc.returncode == 0
    assert sorted(l["code"] for l in lines_of(proc.stdout)) == ["PIN001", "PIN007"]
    assert "Found 2 errors." in proc.stdout.splitlines()


# ------------------------------------------------------------------- formats
KEYS = {"code", "message", "filename", "location", "end_location", "fix", "url", "related"}


def _check_json_object(obj: dict) -> None:
    assert set(obj) == KEYS
    assert set(obj["location"]) == {"row", "column"} and set(obj["end_location"]) == {"row", "column"}
    fix = obj["fix"]
    if fix is not None:
        assert set(fix) == {"applicability", "message", "edits"}
        assert fix["applicability"] in ("safe", "unsafe", "display-only")
        assert isinstance(fix["message"], str) and fix["edits"]
        for e in fix["edits"]:
            assert set(e) == {"content", "location", "end_location"}
            assert e["location"]["row"] >= 1 and e["location"]["column"] >= 1
    assert obj["url"] is None or isinstance(obj["url"], str)
    assert isinstance(obj["related"], list)
    for value in (obj["location"], obj["end_location"]):
        assert value["row"] >= 1 and value["column"] >= 1


def test_json_format(both):
    proc = pinlint(both, "check", "--format", "json", ".")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and len(data) == 2
    for obj in data:
        _check_json_object(obj)
    pin001 = next(o for o in data if o["code"] == "PIN001")
    assert pin001["filename"] == "bad.py"
    assert pin001["location"] == {"row": 5, "column": 1}
    assert pin001["end_location"] == {"row": 5, "column": len("d.set(h, stream=s)") + 1}
    assert [r["location"] for r in pin001["related"]] == [{"row": 2, "column": 5}]
    assert pin001["related"][0]["filename"] == "bad.py"
    pin007 = next(o for o in data if o["code"] == "PIN007")
    assert pin007["location"] == {"row": 5, "column": 9}
    assert [r["location"]["row"] for r in pin007["related"]] == [3]


def test_json_format_without_findings_is_an_empty_array(tmp_path):
    write(tmp_path, "clean.py", CLEAN)
    proc = pinlint(tmp_path, "check", "--format", "json", ".")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []


def test_json_lines_format(both):
    proc = pinlint(both, "check", "--format", "json-lines", ".")
    assert proc.returncode == 1
    objects = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert sorted(o["code"] for o in objects) == ["PIN001", "PIN007"]
    for obj in objects:
        _check_json_object(obj)


# ------------------------------------------------------------ broken sources
def test_syntax_error_is_pin000_and_the_run_goes_on(tmp_path):
    write(tmp_path, "a_broken.py", "import cupy\ndef f(:\n    pass\n")
    write(tmp_path, "b_bad.py", BAD)
    proc = pinlint(tmp_path, "check", ".")
    assert proc.returncode == 1
    found = [(l["path"], l["code"]) for l in lines_of(proc.stdout)]
    assert found == [("a_broken.py", "PIN000"), ("b_bad.py", "PIN001")]
    assert lines_of(proc.stdout)[0]["message"].startswith("SyntaxError")


def test_non_utf8_file_is_pin000(tmp_path):
    write(tmp_path, "latin.py", b"import cupy\nname = '\xe9t\xe9'\n")
    write(tmp_path, "z_bad.py", BAD)
    proc = pinlint(tmp_path, "check", ".")
    assert proc.returncode == 1
    assert [(l["path"], l["code"]) for l in lines_of(proc.stdout)] == [("latin.py", "PIN000"), ("z_bad.py", "PIN001")]


def test_coding_cookie_is_honoured(tmp_path):
    write(tmp_path, "latin.py", b"# -*- coding: latin-1 -*-\nimport cupy\nname = '\xe9t\xe9'\n")
    proc = pinlint(tmp_path, "check", "latin.py")
    assert proc.returncode == 0, proc.stdout


def test_bom_and_crlf_keep_positions(tmp_path):
    data = b"\xef\xbb\xbf" + BAD.replace("\n", "\r\n").encode()
    write(tmp_path, "bom.py", data)
    proc = pinlint(tmp_path, "check", "--format", "json", "bom.py")
    [obj] = json.loads(proc.stdout)
    assert obj["location"] == {"row": 5, "column": 1}
    assert obj["related"][0]["location"] == {"row": 2, "column": 5}


def test_crlf_noqa_suppresses(tmp_path):
    write(tmp_path, "crlf.py", (BAD.rstrip("\n") + "  # noqa: PIN001\n").replace("\n", "\r\n").encode())
    assert pinlint(tmp_path, "check", "crlf.py").returncode == 0


def test_pathologically_nested_file_does_not_crash_the_run(tmp_path):
    write(tmp_path, "a_deep.py", "import cupy\nx = " + "(" * 50000 + "1" + ")" * 50000 + "\n")
    write(tmp_path, "b_bad.py", BAD)
    proc = subprocess.run([sys.executable, "-m", "pinlint", "check", "."], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode in (1, 2), proc.returncode
    assert "Traceback" not in proc.stderr
    assert ("b_bad.py", "PIN001") in [(l["path"], l["code"]) for l in lines_of(proc.stdout)]


# ----------------------------------------------------------------- discovery
def test_discovery_skips_tool_and_environment_folders(tmp_path):
    write(tmp_path, "pkg/bad.py", BAD)
    for folder in (".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", "x.egg-info"):
        write(tmp_path, f"{folder}/bad.py", BAD)
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "myenv/lib/bad.py", BAD)
    write(tmp_path, "pkg/notes.txt", BAD)  # not a Python file
    proc = pinlint(tmp_path, "check")
    assert [l["path"] for l in lines_of(proc.stdout)] == ["pkg/bad.py"]


def test_discovery_finds_nested_and_pyi_files(tmp_path):
    write(tmp_path, "a/b/c/deep.py", BAD)
    write(tmp_path, "stub.pyi", BAD)
    proc = pinlint(tmp_path, "check", ".")
    assert sorted(l["path"] for l in lines_of(proc.stdout)) == ["a/b/c/deep.py", "stub.pyi"]


def test_explicitly_named_file_is_checked_even_in_a_skipped_folder(tmp_path):
    write(tmp_path, "build/bad.py", BAD)
    write(tmp_path, "scripts/run_upload", BAD)  # no suffix
    proc = pinlint(tmp_path, "check", "build/bad.py", "scripts/run_upload")
    assert proc.returncode == 1
    assert [l["path"] for l in lines_of(proc.stdout)] == ["build/bad.py", "scripts/run_upload"]


def test_same_file_named_twice_is_reported_once(tmp_path):
    write(tmp_path, "bad.py", BAD)
    proc = pinlint(tmp_path, "check", "bad.py", "./bad.py", ".")
    assert len(lines_of(proc.stdout)) == 1


# ----------------------------------------------------------------- prefilter
NO_GPU = "import numpy as np\nh = np.zeros(10)\nd.set(h, stream=s)\ndef broken(:\n"


def test_prefilter_skips_files_without_gpu_library_cli(tmp_path):
    write(tmp_path, "plain.py", NO_GPU)  # does not even parse: it is never parsed
    proc = pinlint(tmp_path, "check", "plain.py")
    assert proc.returncode == 0
    assert proc.stdout.strip() == "All checks passed!"


def test_prefilter_does_not_parse_in_process(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pinlint.cli import app
    from pinlint.engine import lint_bytes
    from pinlint.settings import Settings

    calls: list = []
    original = libcst.parse_module

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", spy)
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "plain.py", NO_GPU)

    result = lint_bytes(NO_GPU.encode(), "plain.py", Settings())
    assert result.skipped and result.findings == [] and calls == []

    run = CliRunner().invoke(app, ["check", "plain.py"])
    assert run.exit_code == 0, run.output
    assert "All checks passed!" in run.output
    assert calls == []

    # Control: a file naming a GPU library is parsed (so the spy does see parses).
    write(tmp_path, "gpu.py", BAD)
    run = CliRunner().invoke(app, ["check", "gpu.py"])
    assert run.exit_code == 1
    assert len(calls) == 1
