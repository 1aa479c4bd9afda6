"""Start-up budget (issue 16): what `pinlint check` imports for a file that names no GPU library,
and the shortcuts that make that possible keep behaviour: the rule codes without the rules, typer's
parameter values without pydantic."""

import json
import subprocess
import sys
import textwrap

import pytest
import typer

from pinlint import cli
from pinlint.codes import all_codes
from pinlint.typer_light import lighten

# Modules a check of a non-GPU file must not import: libcst and the analysis (only files that pass
# the prefilter need them), libcst's codemod and matchers (only a fix that adds an import), pydantic
# (typer's adapters), and the stacks of other commands (language server, verify, trace, plots,
# notebooks' IPython, --watch).
FORBIDDEN = ("libcst", "libcst.codemod", "libcst.matchers", "pinlint.engine", "pinlint.analysis", "pinlint.checks",
             "pinlint.fixes", "pydantic", "pygls", "lsprotocol", "pinlint.server", "pinlint.verify",
             "pinlint.trace", "matplotlib", "IPython", "watchfiles", "pinlint.notebooks")


def test_checking_a_file_without_gpu_code_imports_none_of_the_heavy_modules(tmp_path):
    (tmp_path / "plain.py").write_text("import os\nimport json\nfrom pathlib import Path\n\nprint(os.sep)\n")
    program = textwrap.dedent("""
        import json, sys
        sys.argv = ["pinlint", "check", "--no-cache", "plain.py"]
        from pinlint.cli import main
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    loaded = [name for name in report["modules"] if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == []


def test_the_rule_codes_known_without_the_rules_are_the_rules_codes():
    from pinlint.checks import ALL_CODES
    assert all_codes() == ALL_CODES


ARGUMENTS = [
    ["check"], ["check", "a.py", "b.py"], ["check", "--format", "json", "x.py"], ["check", "--output-format", "sarif"],
    ["check", "--select", "PIN001,PIN002", "--ignore", "PIN003", "--select", "PIN004"],
    ["check", "-j", "3", "--color", "never"], ["check", "--jobs", "0"], ["check", "--jobs", "-1"],
    ["check", "--jobs", "x"], ["check", "--color", "blue"], ["check", "--format", "JSON"],
    ["check", "--config", "select = ['PIN001']", "--config", "f.toml"], ["fix", "a.py", "--unsafe-fixes"],
    ["check", "--stdin-filename", "a.py", "-"], ["check", "--cache-dir", "/tmp/c", "-o", "out.txt", "--statistics"],
]


@pytest.mark.parametrize("arguments", ARGUMENTS, ids=" ".join)
def test_light_parameter_values_are_typers(arguments, monkeypatch):
    import pinlint.check_command as check_command
    seen = []
    monkeypatch.setattr(check_command, "run", lambda request: seen.append(request) or 0)

    def parsed(light: bool):
        seen.clear()
        command = typer.main.get_command(cli.app)
        if light:
            lighten(command)
        try:
            command.main(arguments, prog_name="pinlint", standalone_mode=False)
        except Exception as exc:  # noqa: BLE001 - a usage error must be typer's own, message and all
            return type(exc).__name__, str(exc)
        return seen[0]

    assert parsed(True) == parsed(False)
