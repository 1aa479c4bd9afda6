"""``pinlint trace`` end to end on the CPU: a stand-in CUPTI (tests/fake_cupti) lets a real child
process run under the bootstrap, so the command line, the child's recorder, the files it writes
and the exit codes are tested as they run on a GPU. The child process is the point here."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pinlint import cli

FAKE = Path(__file__).resolve().parent / "fake_cupti" / "site-packages"
PROGRAM = """\
import sys
from cupti import cupti as gpu

def unused():
    import numpy as np
    import cupy as cp
    h = np.empty(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=cp.float32)
    d.set(h, stream=cp.cuda.Stream(non_blocking=True))  # @unused: a static PIN001 the run never reaches

for i in range(3):
    gpu.fake_copy("h2d", 1, 1 << 20)  # @pageable
    gpu.fake_copy("h2d", 2, 1 << 20)  # @pinned
print("the program's own output")
open("argv.json", "w").write(__import__("json").dumps(sys.argv))
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def pinlint(monkeypatch, capfd, cwd: Path, *args: str, fake: bool = True, preflight: bool = False) -> tuple:
    """(exit code, stdout, stderr) of ``pinlint ARGS`` in this process; the traced program is a
    real child, so its output is read from the file descriptors."""
    monkeypatch.chdir(cwd)
    if fake:
        monkeypatch.setenv("PYTHONPATH", str(FAKE))
    if not preflight:
        import pinlint.trace.session as session
        monkeypatch.setattr(session, "preflight", lambda timeout=120: None)
    monkeypatch.setattr(sys, "argv", ["pinlint", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err, err
    return exited.value.code or 0, out, err


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def rows(path: Path) -> dict:
    return {line.split("# @")[1].split(":")[0].strip(): n
            for n, line in enumerate(path.read_text().splitlines(), 1) if "# @" in line}


def test_a_traced_program_reports_its_pageable_copy_at_its_line(monkeypatch, capfd, program, tmp_path):
    code, out, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "--format", "json", "-o", "t.json",
                             "--check", "--", sys.executable, "prog.py", "0", "extra")
    assert code == 1, err
    assert "the program's own output" in out  # the program's stdout is its own
    assert json.loads((tmp_path / "argv.json").read_text()) == ["prog.py", "0", "extra"]
    data = json.loads((tmp_path / "t.json").read_text())
    line = rows(program)
    (observation,) = data["observations"]
    assert (observation["code"], observation["filename"], observation["location"]["row"]) == \
        ("PIN001", "prog.py", line["pageable"])
    kinds = {c["location"]["row"]: (c["host_kind"], c["count"]) for c in data["copies"]}
    assert kinds == {line["pageable"]: ("pageable", 3), line["pinned"]: ("pinned", 3)}
    statuses = {(r["code"], r["location"]["row"]): r["status"] for r in data["static"]["rows"]}
    assert statuses[("PIN001", line["pageable"])] == "missed by the static analysis"
    assert statuses[("PIN001", line["unused"])] == "not exercised"
    assert data["processes"][0]["status"] == "ok"


def test_script_shorthand_runs_this_interpreter(monkeypatch, capfd, program, tmp_path):
    code, out, _ = pinlint(monkeypatch, capfd, tmp_path, "trace", "prog.py")
    assert code == 1 and f"prog.py:{rows(program)['pageable']}: PIN001" in out
    assert "Observed 1 problem in the run" in out


def test_every_python_process_of_the_command_is_recorded(monkeypatch, capfd, program, tmp_path):
    shell = f'"{sys.executable}" prog.py && "{sys.executable}" prog.py'
    code, out, _ = pinlint(monkeypatch, capfd, tmp_path, "trace", "--format", "json", "--", "sh", "-c", shell)
    data = json.loads(out[out.index("{"):])
    assert code == 1 and len(data["processes"]) == 2
    assert {c["count"] for c in data["copies"]} == {6}  # three copies per line in each process


def test_a_program_that_fails_is_reported_and_exits_2(monkeypatch, capfd, program, tmp_path):
    code, out, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "prog.py", "3")
    assert code == 2 and "PIN001" in out  # the report covers what ran
    assert err.strip().splitlines()[-1] == \
        "pinlint: error: the program exited with code 3; the report shows what it did until then"


def test_a_program_without_cupti_does_not_run(monkeypatch, capfd, program, tmp_path):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    code, out, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "prog.py", fake=False)
    assert code == 2 and not (tmp_path / "argv.json").exists()
    (line,) = err.strip().splitlines()
    assert line.startswith("pinlint: error: the recorder could not start in the program: CUPTI is not installed")
    assert 'pip install "cuda-pinlint[trace]"' in line


def test_without_cupti_here_the_preflight_says_so_in_one_line(monkeypatch, capfd, program, tmp_path):
    pytest.importorskip  # noqa: B018 - the check below is about this machine
    import importlib.util
    if importlib.util.find_spec("cupti") is not None:
        pytest.skip("CUPTI is installed here; the message for a machine without it is not reachable")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    code, out, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "prog.py", fake=False, preflight=True)
    assert code == 2 and out == "" and not (tmp_path / "argv.json").exists()
    assert err.strip() == ('pinlint: error: pinlint trace needs a CUDA GPU and CUPTI: CUPTI is not installed '
                           '(pip install "cuda-pinlint[trace]"): No module named \'cupti\'')


def test_a_program_that_ends_without_atexit_leaves_no_trace_and_says_why(monkeypatch, capfd, tmp_path):
    (tmp_path / "quit.py").write_text("import os\nos._exit(0)\n")
    code, _, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "quit.py")
    assert code == 2 and "no process of the program wrote a trace (exit code 0)" in err


@pytest.mark.parametrize("args, message", [
    (("trace",), "no program to run"),
    (("trace", "--format", "xml", "x.py"), "--format must be one of text, json, sarif, not 'xml'"),
    (("trace", "--", "/nonexistent/program"), "cannot run '/nonexistent/program'"),
])
def test_usage_errors_are_one_line(monkeypatch, capfd, tmp_path, args, message):
    code, _, err = pinlint(monkeypatch, capfd, tmp_path, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err


def test_options_after_the_program_are_the_programs(monkeypatch, capfd, program, tmp_path):
    code, _, _ = pinlint(monkeypatch, capfd, tmp_path, "trace", "prog.py", "0", "--check", "--format", "json")
    assert code == 1
    assert json.loads((tmp_path / "argv.json").read_text()) == ["prog.py", "0", "--check", "--format", "json"]


def test_the_bootstrap_leaves_sys_path_and_an_existing_sitecustomize_alone(monkeypatch, capfd, tmp_path):
    site_dir = tmp_path / "own_site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("import builtins\nbuiltins.OWN_SITECUSTOMIZE = True\n")
    (tmp_path / "show.py").write_text(
        "import json, sys, builtins\n"
        "json.dump({'own': getattr(builtins, 'OWN_SITECUSTOMIZE', False),"
        " 'boot': any('trace' in p and p.endswith('boot') for p in sys.path)}, open('seen.json', 'w'))\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE), str(site_dir)]))
    code, _, err = pinlint(monkeypatch, capfd, tmp_path, "trace", "show.py", fake=False)
    assert code == 0, err
    assert json.loads((tmp_path / "seen.json").read_text()) == {"own": True, "boot": False}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="line events (sys.monitoring) need Python 3.12")
def test_a_loop_of_copies_is_pin007_and_one_call_copying_many_buffers_is_not(monkeypatch, capfd, tmp_path):
    (tmp_path / "loop.py").write_text(
        "from cupti import cupti as gpu\n"
        "gpu.fake_copies(5, 'h2d', 1, 1 << 20, then_sync=True)  # one call, five buffers\n"
        "for i in range(3):\n"
        "    gpu.fake_copy('h2d', 1, 1 << 20, then_sync=True)  # three runs of one line\n")
    code, out, _ = pinlint(monkeypatch, capfd, tmp_path, "trace", "--format", "json", "--", sys.executable, "loop.py")
    data = json.loads(out)
    assert {c["location"]["row"]: (c["count"], c["executions"], c["blocking"]) for c in data["copies"]} == \
        {2: (5, 1, True), 4: (3, 3, True)}
    assert [(o["code"], o["location"]["row"]) for o in data["observations"]] == [("PIN007", 4)] and code == 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="line events (sys.monitoring) need Python 3.12")
def test_a_line_that_starts_copying_late_is_still_counted(monkeypatch, capfd, tmp_path):
    """Lines of a watched function that make no copy are switched off; one that starts copying in a
    later iteration is switched back on, so each of its runs counts."""
    (tmp_path / "late.py").write_text(
        "from cupti import cupti as gpu\n"
        "def f():\n"
        "    for i in range(4):\n"
        "        gpu.fake_copy('h2d', 2, 4096)\n"
        "        if i >= 2: gpu.fake_copy('d2h', 2, 4096)\n"
        "f()\n")
    code, out, _ = pinlint(monkeypatch, capfd, tmp_path, "trace", "--format", "json", "--", sys.executable, "late.py")
    data = json.loads(out)
    assert {c["location"]["row"]: (c["count"], c["executions"]) for c in data["copies"]} == {4: (4, 4), 5: (2, 2)}
