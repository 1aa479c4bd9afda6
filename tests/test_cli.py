"""``pinlint check`` / ``pinlint fix`` as users run them.

Most tests run pinlint's own entry point in this process (``helpers.run_in_process``: the same
``main()``, argv and exit code, without an interpreter start per test); the few at the end start a real
process, where the process is the point (the installed ``pinlint`` command, a terminal, a pipe).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst
import pytest

from helpers import BAD, pinlint, run_in_process, write

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



def _fixed(text: str) -> str:
    from pinlint.engine import fix_text
    from pinlint.settings import Settings
    fixed = fix_text(text, "bad.py", Settings(), False).text
    assert "cupyx.zeros_pinned(1 << 20" in fixed and "np.zeros" not in fixed
    return fixed


FIXED_BAD = _fixed(BAD)  # what the engine's fix makes of BAD (its exact layout is the fixer's business)

LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<row>\d+):(?P<col>\d+): (?P<code>PIN\d{3}) (?P<message>.+)$")


def lines_of(stdout: str) -> list[dict]:
    return [m.groupdict() for m in map(LINE.match, stdout.splitlines()) if m]


@pytest.fixture
def run(monkeypatch, capsys):
    """``run(cwd, "check", ...)`` -> (exit code, stdout, stderr), in this process."""
    def invoke(cwd: Path, *args: str, stdin: bytes = None) -> tuple:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        return run_in_process(monkeypatch, capsys, cwd, *args)
    return invoke


@pytest.fixture
def both(tmp_path):
    write(tmp_path, "bad.py", BAD)
    write(tmp_path, "loop.py", LOOP)
    return tmp_path


# ---------------------------------------------------------------- exit codes and text output
def test_clean_file_exits_0(tmp_path, run):
    write(tmp_path, "clean.py", CLEAN)
    assert run(tmp_path, "check", "clean.py") == (0, "All checks passed!\n", "")


def test_findings_exit_1_with_text_lines_and_summary(tmp_path, run):
    write(tmp_path, "pkg/bad.py", BAD)
    code, out, _ = run(tmp_path, "check", "pkg")
    assert code == 1
    [line] = lines_of(out)
    assert (line["path"], line["row"], line["col"], line["code"]) == ("pkg/bad.py", "5", "1", "PIN001")
    assert "np.zeros" in line["message"] and "line 2" in line["message"]
    assert out.splitlines()[1:] == ["Found 1 error.", "[*] 1 fixable with the `--fix` option."]


def test_several_findings_are_sorted_and_the_default_path_is_the_working_directory(both, run):
    code, out, _ = run(both, "check")
    assert code == 1
    assert [(l["path"], l["row"], l["col"], l["code"]) for l in lines_of(out)] == \
        [("bad.py", "5", "1", "PIN001"), ("loop.py", "5", "9", "PIN007")]
    assert "Found 2 errors." in out.splitlines()


def test_paths_are_shown_relative_to_the_working_directory(tmp_path, run):
    bad = write(tmp_path, "pkg/bad.py", BAD)
    assert [l["path"] for l in lines_of(run(tmp_path, "check", str(bad.resolve()))[1])] == ["pkg/bad.py"]
    assert [l["path"] for l in lines_of(run(tmp_path / "pkg", "check", ".")[1])] == ["bad.py"]


def test_missing_path_next_to_a_bad_file_exits_2_and_still_reports(tmp_path, run):
    write(tmp_path, "bad.py", BAD)
    code, out, err = run(tmp_path, "check", "bad.py", "nope")
    assert code == 2
    assert err == "pinlint: error: nope: No such file or directory\n"
    assert [l["code"] for l in lines_of(out)] == ["PIN001"]
    assert "All checks passed!" not in out


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_rule_code_exits_2(tmp_path, run, option):
    write(tmp_path, "bad.py", BAD)
    code, out, err = run(tmp_path, "check", option, "PIN999", "bad.py")
    assert (code, out) == (2, "")
    assert "PIN999" in err and err.count("\n") == 1


def test_unknown_format_exits_2(tmp_path, run):
    write(tmp_path, "bad.py", BAD)
    code, out, err = run(tmp_path, "check", "--format", "yaml", "bad.py")
    assert code == 2 and out == "" and "yaml" in err


# ----------------------------------------------------------------- selection, exit codes
def test_select_ignore_lowercase_and_comma_separated(both, run):
    assert [l["code"] for l in lines_of(run(both, "check", "--ignore", "PIN001", ".")[1])] == ["PIN007"]
    assert [l["code"] for l in lines_of(run(both, "check", "--select", "PIN007", ".")[1])] == ["PIN007"]
    assert [l["code"] for l in lines_of(run(both, "check", "--select", "pin001,pin007", ".")[1])] == \
        ["PIN001", "PIN007"]
    assert run(both, "check", "--ignore", "PIN001,PIN007", ".")[:2] == (0, "All checks passed!\n")


@pytest.mark.parametrize("flag", ["--exit-zero", "-e"])
def test_exit_zero_still_prints_findings(both, run, flag):
    code, out, _ = run(both, "check", flag, ".")
    assert code == 0
    assert [l["code"] for l in lines_of(out)] == ["PIN001", "PIN007"]


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(tmp_path, run, flag):
    code, out, _ = run(tmp_path, "check", flag)
    assert code == 0 and "--output-format" in out and "--stdin-filename" in out
    code, out, _ = run(tmp_path, flag)
    assert code == 0 and "check" in out and "fix" in out


# ------------------------------------------------------------------- output
def test_output_format_is_an_alias_of_format(both, run):
    assert run(both, "check", "--output-format", "json", ".") == run(both, "check", "--format", "json", ".")


@pytest.mark.parametrize("flag", ["-o", "--output-file"])
def test_output_file_gets_the_report_and_stdout_stays_empty(both, run, flag):
    code, out, err = run(both, "check", "--format", "json", flag, "reports/pinlint.json", ".")
    assert (code, out, err) == (1, "", "")
    report = json.loads((both / "reports" / "pinlint.json").read_text(encoding="utf-8"))
    assert [f["code"] for f in report] == ["PIN001", "PIN007"]
    # Text to a file has no colour even when asked to colour a terminal.
    run(both, "check", "-o", "out.txt", ".")
    assert "\x1b[" not in (both / "out.txt").read_text(encoding="utf-8")


def test_output_file_that_cannot_be_written_exits_2(both, run):
    write(both, "taken", "a file, not a folder")
    code, out, err = run(both, "check", "-o", "taken/report.txt", ".")
    assert code == 2 and out == ""
    assert err.startswith("pinlint: error: --output-file: cannot write taken/report.txt")


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_prints_the_findings_and_nothing_else(both, run, flag):
    code, out, err = run(both, "check", flag, ".")
    assert code == 1 and err == ""
    assert len(out.splitlines()) == len(lines_of(out)) == 2
    write(both, "empty/README.txt", "no Python here")
    assert run(both, "check", flag, "empty") == (0, "", "")  # no summary, no warning


@pytest.mark.parametrize("flag", ["-s", "--silent"])
def test_silent_prints_nothing_but_keeps_the_exit_code(both, run, flag):
    assert run(both, "check", flag, ".") == (1, "", "")
    assert run(both, "check", flag, "--format", "json", ".") == (1, "", "")
    code, _, err = run(both, "check", flag, "nope")
    assert code == 2 and "nope" in err  # errors still say what went wrong


def test_colour(both, run, monkeypatch):
    code, out, _ = run(both, "check", "--color", "always", "bad.py")
    first = out.splitlines()[0]
    assert "\x1b[1m\x1b[31mPIN001\x1b[0m" in first and first.startswith("\x1b[1mbad.py\x1b[0m")
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == run(both, "check", "--color", "never", "bad.py")[1]
    assert "\x1b[" not in run(both, "check", "bad.py")[1]  # auto: stdout is not a terminal here
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(both, "check", "bad.py")[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(both, "check", "bad.py")[1]
    assert "\x1b[" in run(both, "check", "--color", "always", "bad.py")[1]


# ------------------------------------------------------------------- fixing
def test_show_fixes_lists_what_was_fixed(both, run):
    code, out, _ = run(both, "check", "--fix", "--show-fixes", ".")
    assert code == 1  # PIN007 in loop.py has no fix
    assert out.splitlines()[:4] == ["loop.py:5:9: PIN007 " + lines_of(out)[0]["message"], "Fixed 1 error:",
                                    "- bad.py:", "    1 \u00d7 PIN001 (pageable-async-copy)"]
    assert "Found 2 errors (1 fixed, 1 remaining)." in out.splitlines()
    assert (both / "bad.py").read_text(encoding="utf-8") == FIXED_BAD


def test_show_fixes_without_fix_shows_each_findings_fix(both, run):
    code, out, _ = run(both, "check", "--show-fixes", "bad.py")
    assert code == 1
    assert out.splitlines()[1] == "    fix (safe): Allocate it pinned: `cupyx.zeros_pinned`"
    assert (both / "bad.py").read_text(encoding="utf-8") == BAD


def test_fix_only_fixes_and_does_not_fail_on_what_is_left(both, run):
    code, out, _ = run(both, "check", "--fix-only", ".")
    assert (code, out) == (0, "Fixed 1 error.\n")
    assert (both / "bad.py").read_text(encoding="utf-8") == FIXED_BAD
    assert run(both, "check", "--fix-only", ".")[:2] == (0, "No errors fixed.\n")
    code, out, _ = run(both, "check", "--fix-only", "--format", "json", ".")
    assert (code, json.loads(out)) == (0, [])


def test_exit_non_zero_on_fix(tmp_path, run):
    write(tmp_path, "bad.py", BAD)
    assert run(tmp_path, "check", "--fix", "--exit-non-zero-on-fix", "bad.py")[0] == 1  # nothing left, but fixed
    assert run(tmp_path, "check", "--fix", "--exit-non-zero-on-fix", "bad.py")[0] == 0  # nothing to fix now
    write(tmp_path, "bad.py", BAD)
    assert run(tmp_path, "check", "--fix-only", "--exit-non-zero-on-fix", "bad.py")[0] == 1
    write(tmp_path, "bad.py", BAD)
    assert run(tmp_path, "fix", "bad.py")[0] == 0


def test_fix_command_takes_checks_options_except_fix(both, run):
    from typer.main import get_command

    from pinlint.cli import app
    commands = get_command(app).commands
    check = {opt for p in commands["check"].params for opt in p.opts + p.secondary_opts}
    fix = {opt for p in commands["fix"].params for opt in p.opts + p.secondary_opts}
    assert check - fix == {"--fix"} and fix <= check
    code, out, _ = run(both, "fix", "--format", "json", "--select", "PIN001", "-q", ".")
    assert (code, json.loads(out)) == (0, [])


def test_ignore_noqa_reports_suppressed_findings(tmp_path, run):
    write(tmp_path, "bad.py", BAD.replace("d.set(h, stream=s)", "d.set(h, stream=s)  # noqa: PIN001"))
    assert run(tmp_path, "check", "bad.py")[0] == 0
    code, out, _ = run(tmp_path, "check", "--ignore-noqa", "bad.py")
    assert code == 1 and [l["code"] for l in lines_of(out)] == ["PIN001"]
    assert run(tmp_path, "check", "bad.py")[0] == 0  # the cache keeps the two apart


# ------------------------------------------------------------------- configuration on the command line
def test_config_key_value_overrides_the_file(both, run):
    write(both, "pyproject.toml", '[tool.pinlint]\nselect = ["PIN007"]\n')
    assert [l["code"] for l in lines_of(run(both, "check", ".")[1])] == ["PIN007"]
    code, out, _ = run(both, "check", "--config", "select = ['PIN001']", ".")
    assert [l["code"] for l in lines_of(out)] == ["PIN001"]
    code, out, _ = run(both, "check", "--config", "pyproject.toml", "--config", "select=['PIN001','PIN007']",
                       "--config", "pin007-min-bytes = 100000000", ".")
    assert [l["code"] for l in lines_of(out)] == ["PIN001"]  # the loop's 4 MiB buffer is under the threshold
    code, out, _ = run(both, "check", "--config", 'per-file-ignores."bad.py" = ["PIN001"]', ".")
    assert [l["code"] for l in lines_of(out)] == ["PIN007"]


@pytest.mark.parametrize("value, message", [
    ("selct = ['PIN001']", "--config: unknown key `selct` (did you mean `select`?)"),
    ("select = 'PIN001'", "--config: `select` must be a list of rule codes, not 'PIN001'"),
    ("select = ['PIN01']", "--config: `select` names an unknown rule 'PIN01' (did you mean PIN001?)"),
    ("select = [", "--config: 'select = [' is neither a file nor a TOML `KEY = VALUE`"),
    ("missing.toml", "--config: missing.toml: No such file"),
])
def test_config_errors_exit_2_with_one_line(both, run, value, message):
    code, out, err = run(both, "check", "--config", value, ".")
    assert (code, out) == (2, "")
    assert err.startswith(f"pinlint: error: {message}") and err.count("\n") == 1


def test_exclude_extend_exclude_and_per_file_ignores(tmp_path, run):
    write(tmp_path, "src/bad.py", BAD)
    write(tmp_path, "legacy/old.py", BAD)
    write(tmp_path, "build/gen.py", BAD)
    write(tmp_path, "tests/test_x.py", LOOP)
    paths = lambda *args: sorted({l["path"] for l in lines_of(run(tmp_path, "check", *args, ".")[1])})
    assert paths() == ["legacy/old.py", "src/bad.py", "tests/test_x.py"]  # build/ is a default exclude
    assert paths("--extend-exclude", "legacy") == ["src/bad.py", "tests/test_x.py"]
    assert paths("--exclude", "legacy,tests") == ["build/gen.py", "src/bad.py"]  # replaces the defaults
    assert paths("--per-file-ignores", "tests/*.py:PIN007") == ["legacy/old.py", "src/bad.py"]
    write(tmp_path, "pyproject.toml", '[tool.pinlint.per-file-ignores]\n"legacy/*" = ["PIN001"]\n')
    assert paths() == ["src/bad.py", "tests/test_x.py"]
    assert paths("--per-file-ignores", "tests/*:PIN") == ["legacy/old.py", "src/bad.py"]  # replaces the table
    assert paths("--extend-per-file-ignores", "tests/*:PIN") == ["src/bad.py"]           # adds to it
    code, _, err = run(tmp_path, "check", "--per-file-ignores", "tests", ".")
    assert code == 2 and "--per-file-ignores: 'tests' is not PATTERN:CODES" in err


def test_show_files_lists_what_would_be_checked(tmp_path, run):
    write(tmp_path, "src/a.py", "x = 1\n")
    write(tmp_path, "src/b.ipynb", "{}")
    write(tmp_path, "build/c.py", "x = 1\n")
    write(tmp_path, "notes.txt", "")
    assert run(tmp_path, "check", "--show-files") == (0, "src/a.py\nsrc/b.ipynb\n", "")
    assert run(tmp_path, "check", "--show-files", "--extend-exclude", "b.ipynb", "src") == (0, "src/a.py\n", "")


def test_empty_folder_warns_no_python_files(tmp_path, run):
    write(tmp_path, "docs/index.md", "# nothing to check\n")
    code, out, err = run(tmp_path, "check", "docs")
    assert code == 0
    assert err == "pinlint: warning: No Python files found under the given path(s)\n"
    assert out == "All checks passed!\n"


def test_cache_dir_and_no_cache(tmp_path, run, monkeypatch):
    write(tmp_path, "bad.py", BAD)
    assert run(tmp_path, "check", "--no-cache", "bad.py")[0] == 1
    assert not (tmp_path / ".pinlint_cache").exists()
    assert run(tmp_path, "check", "--cache-dir", "elsewhere/cache", "bad.py")[0] == 1
    assert not (tmp_path / ".pinlint_cache").exists()
    entries = [p for p in (tmp_path / "elsewhere" / "cache").rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert len(entries) == 1
    monkeypatch.setenv("PINLINT_CACHE_DIR", str(tmp_path / "from-env"))
    assert run(tmp_path, "check", "bad.py")[0] == 1
    assert (tmp_path / "from-env").is_dir()
    # The cached answer is the same answer.
    assert run(tmp_path, "check", "bad.py") == run(tmp_path, "check", "--no-cache", "bad.py")


# ------------------------------------------------------------------- stdin
def test_stdin_lints_as_the_named_file(tmp_path, run):
    code, out, _ = run(tmp_path, "check", "--stdin-filename", "pkg/up.py", "-", stdin=BAD.encode())
    assert code == 1 and [(l["path"], l["code"]) for l in lines_of(out)] == [("pkg/up.py", "PIN001")]
    code, out, _ = run(tmp_path, "check", "-", stdin=BAD.encode())
    assert [l["path"] for l in lines_of(out)] == ["-"]


def test_stdin_fix_prints_the_fixed_text(tmp_path, run):
    code, out, _ = run(tmp_path, "check", "--fix", "--stdin-filename", "up.py", stdin=BAD.encode())
    assert (code, out) == (0, FIXED_BAD)
    assert run(tmp_path, "check", "--fix-only", "--stdin-filename", "up.py", stdin=LOOP.encode())[:2] == (0, LOOP)


def test_stdin_diff(tmp_path, run):
    code, out, err = run(tmp_path, "check", "--diff", "--stdin-filename", "up.py", "-", stdin=BAD.encode())
    assert code == 1
    assert out.startswith("--- a/up.py\n+++ b/up.py\n") and "+import cupyx\n" in out
    assert err == "Would fix 1 error in 1 file.\n"


def test_stdin_statistics_and_output_file(tmp_path, run):
    code, out, _ = run(tmp_path, "check", "--statistics", "-q", "--stdin-filename", "up.py", stdin=BAD.encode())
    assert (code, out) == (1, "1\tPIN001\t[*] pageable-async-copy\n")
    code, out, _ = run(tmp_path, "check", "--format", "json", "-o", "r.json", "--stdin-filename", "up.py",
                       stdin=BAD.encode())
    assert (code, out) == (1, "")
    assert [f["filename"] for f in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))] == ["up.py"]


@pytest.mark.parametrize("args, message", [
    (["--add-noqa"], "--add-noqa works on files; it cannot read stdin"),
    (["--watch"], "--watch works on files; it cannot read stdin"),
    (["--show-files"], "--show-files works on files; it cannot read stdin"),
    (["a.py"], "stdin ('-' or --stdin-filename) cannot be combined with paths (a.py)"),
])
def test_stdin_refuses_what_needs_files(tmp_path, run, args, message):
    code, out, err = run(tmp_path, "check", "--stdin-filename", "up.py", *args, stdin=BAD.encode())
    assert (code, out) == (2, "")
    assert err.startswith(f"pinlint: error: {message}")


def test_stdin_with_force_exclude_skips_an_excluded_name(tmp_path, run):
    write(tmp_path, "pyproject.toml", '[tool.pinlint]\nextend-exclude = ["vendor"]\n')
    args = ("check", "--force-exclude", "--stdin-filename", "vendor/up.py")
    assert run(tmp_path, *args, stdin=BAD.encode())[:2] == (0, "All checks passed!\n")
    assert run(tmp_path, *args, "--fix", stdin=BAD.encode())[:2] == (0, BAD)  # left as it is
    assert run(tmp_path, "check", "--stdin-filename", "vendor/up.py", stdin=BAD.encode())[0] == 1


@pytest.mark.parametrize("args", [["--add-noqa", "--fix"], ["--add-noqa", "--diff"]])
def test_add_noqa_refuses_to_fix_at_the_same_time(both, run, args):
    code, out, err = run(both, "check", *args, ".")
    assert (code, out) == (2, "")
    assert err.startswith("pinlint: error: --add-noqa cannot be combined with")
    assert (both / "bad.py").read_text(encoding="utf-8") == BAD


# ------------------------------------------------------------ broken sources
def test_syntax_error_is_pin000_and_the_run_goes_on(tmp_path, run):
    write(tmp_path, "a_broken.py", "import cupy\ndef f(:\n    pass\n")
    write(tmp_path, "b_bad.py", BAD)
    code, out, _ = run(tmp_path, "check", ".")
    assert code == 1
    assert [(l["path"], l["code"]) for l in lines_of(out)] == [("a_broken.py", "PIN000"), ("b_bad.py", "PIN001")]
    assert lines_of(out)[0]["message"].startswith("SyntaxError")


def test_non_utf8_file_is_pin000_and_a_coding_cookie_is_honoured(tmp_path, run):
    write(tmp_path, "latin.py", b"import cupy\nname = '\xe9t\xe9'\n")
    write(tmp_path, "cookie.py", b"# -*- coding: latin-1 -*-\nimport cupy\nname = '\xe9t\xe9'\n")
    assert [(l["path"], l["code"]) for l in lines_of(run(tmp_path, "check", ".")[1])] == [("latin.py", "PIN000")]


def test_bom_and_crlf_keep_positions(tmp_path, run):
    write(tmp_path, "bom.py", b"\xef\xbb\xbf" + BAD.replace("\n", "\r\n").encode())
    [obj] = json.loads(run(tmp_path, "check", "--format", "json", "bom.py")[1])
    assert obj["location"] == {"row": 5, "column": 1}
    assert obj["related"][0]["location"] == {"row": 2, "column": 5}
    write(tmp_path, "crlf.py", (BAD.rstrip("\n") + "  # noqa: PIN001\n").replace("\n", "\r\n").encode())
    assert run(tmp_path, "check", "crlf.py")[0] == 0


# ----------------------------------------------------------------- discovery
def test_discovery_skips_tool_and_environment_folders(tmp_path, run):
    write(tmp_path, "pkg/bad.py", BAD)
    for folder in (".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", "x.egg-info"):
        write(tmp_path, f"{folder}/bad.py", BAD)
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "myenv/lib/bad.py", BAD)
    write(tmp_path, "pkg/notes.txt", BAD)  # not a Python file
    assert [l["path"] for l in lines_of(run(tmp_path, "check")[1])] == ["pkg/bad.py"]


def test_discovery_finds_nested_and_pyi_files_and_named_files_anywhere(tmp_path, run):
    write(tmp_path, "a/b/c/deep.py", BAD)
    write(tmp_path, "stub.pyi", BAD)
    assert sorted(l["path"] for l in lines_of(run(tmp_path, "check", ".")[1])) == ["a/b/c/deep.py", "stub.pyi"]
    write(tmp_path, "build/bad.py", BAD)
    write(tmp_path, "scripts/run_upload", BAD)  # no suffix
    code, out, _ = run(tmp_path, "check", "build/bad.py", "scripts/run_upload", "./stub.pyi", "stub.pyi")
    assert [l["path"] for l in lines_of(out)] == ["build/bad.py", "scripts/run_upload", "stub.pyi"]


# ----------------------------------------------------------------- prefilter
NO_GPU = "import numpy as np\nh = np.zeros(10)\nd.set(h, stream=s)\ndef broken(:\n"


def test_prefilter_does_not_parse(tmp_path, monkeypatch):
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
    write(tmp_path, "plain.py", NO_GPU)  # does not even parse: it is never parsed

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


# ----------------------------------------------------------------- real processes
def test_installed_pinlint_command_comes_from_the_cuda_pinlint_distribution(tmp_path):
    """`pip install cuda-pinlint` gives the `pinlint` command and the `pinlint` package."""
    from importlib.metadata import distribution

    dist = distribution("cuda-pinlint")
    [script] = [e for e in dist.entry_points if e.group == "console_scripts"]
    assert (script.name, script.value) == ("pinlint", "pinlint.cli:entry")
    assert set(dist.metadata.get_all("Provides-Extra")) >= {"dev", "gpu", "lsp", "watch"}
    command = Path(sys.executable).with_name("pinlint")
    write(tmp_path, "bad.py", BAD)
    done = subprocess.run([str(command), "check", "--no-cache", "-q", "bad.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and done.stderr == ""
    assert [l["code"] for l in lines_of(done.stdout)] == ["PIN001"]


@pytest.mark.slow
def test_the_command_ends_without_teardown_yet_loses_no_output(tmp_path):
    """`pinlint` ends with os._exit (freeing a large run's trees one by one took seconds): every line
    of a long report still reaches a pipe, in order, with the documented exit code."""
    body = "".join(f"def f{i}(s):\n    h = numpy.zeros(1 << 20)\n    cupy.asarray(h).set(h, stream=s)\n"
                   f"    cupy.cuda.runtime.memcpyAsync(0, h.ctypes.data, h.nbytes, 1, s.ptr)\n" for i in range(25))
    write(tmp_path, "many.py", "import cupy\nimport numpy\n\n" + body)
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--no-cache", "--output-format", "json",
                           "many.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)
    assert len(findings) >= 25 and all(f["filename"].endswith("many.py") for f in findings)
    clean = subprocess.run([sys.executable, "-m", "pinlint", "check", "--no-cache", "missing.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert clean.returncode == 2 and "missing.py" in clean.stderr


def test_stdin_through_a_pipe(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--stdin-filename", "up.py", "--fix", "-"],
                          input=BAD.encode(), cwd=tmp_path, capture_output=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, FIXED_BAD.encode(), b"")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colour_on_a_terminal_unless_no_color(tmp_path):
    import pty

    write(tmp_path, "bad.py", BAD)

    def on_a_terminal(**env) -> str:
        leader, follower = pty.openpty()
        environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        with subprocess.Popen([sys.executable, "-m", "pinlint", "check", "--no-cache", "bad.py"], cwd=tmp_path,
                              stdout=follower, stderr=subprocess.DEVNULL, env={**environment, **env}) as proc:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed with the process
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            proc.wait(timeout=120)
        os.close(leader)
        return b"".join(chunks).decode()

    assert "\x1b[31mPIN001" in on_a_terminal()
    assert "\x1b[" not in on_a_terminal(NO_COLOR="1") and "PIN001" in on_a_terminal(NO_COLOR="1")


def test_pathologically_nested_file_does_not_crash_the_run(tmp_path):
    write(tmp_path, "a_deep.py", "import cupy\nx = " + "(" * 50000 + "1" + ")" * 50000 + "\n")
    write(tmp_path, "b_bad.py", BAD)
    proc = pinlint(tmp_path, "check", ".", timeout=60)
    assert proc.returncode in (1, 2), proc.returncode
    assert ("b_bad.py", "PIN001") in [(l["path"], l["code"]) for l in lines_of(proc.stdout)]


def test_python_m_pinlint_in_a_project_with_a_module_named_like_the_standard_library(tmp_path):
    """``python -m pinlint`` puts the working folder first on the module path; a project's own
    ``typing.py`` (darts has one) shadowed the standard library and the run died in a traceback
    (survey 57 GE). pinlint never imports the code it checks."""
    (tmp_path / "typing.py").write_text("raise RuntimeError('the project module ran')\n", encoding="utf-8")
    (tmp_path / "enum.py").write_text("raise RuntimeError('the project module ran')\n", encoding="utf-8")
    (tmp_path / "up.py").write_text("import numpy as np\nimport cupy as cp\n\n"
                                    "def f(n):\n    h = np.empty(n)\n    s = cp.cuda.Stream(non_blocking=True)\n"
                                    "    d = cp.empty(n)\n    d.set(h, stream=s)\n", encoding="utf-8")
    done = pinlint(tmp_path, "check", "--no-cache", "up.py")
    assert done.returncode == 1 and "PIN001" in done.stdout
