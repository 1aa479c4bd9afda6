"""The README says what pinlint does: its example output is what `pinlint check` prints, its command-line
section lists every command and option the CLI has, its CI examples run as written, and no install hint
anywhere names the unrelated `pinlint` distribution."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from typer.main import get_command

from pinlint.cli import app

from helpers import BAD, write
from sarif_schema import validate_sarif
from test_ci_formats import GITLAB_CODE_QUALITY

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _example() -> tuple:
    section = _section("Example")
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n\$ pinlint check example.py\n(.*?)```", section, re.S).group(1)
    return program, shown


def test_readme_example_output_is_current(tmp_path):
    program, shown = _example()
    (tmp_path / "example.py").write_text(program, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pinlint", "check", "--no-cache", "example.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout == shown
    assert done.returncode == 1


# ---------------------------------------------------------------------------- the command-line section
def _command_blocks() -> dict:
    """{command: its lines in the README's command-line listing} (a block starts at `pinlint NAME`)."""
    listing = re.search(r"```text\n(.*?)```", _section("Command line"), re.S).group(1)
    blocks: dict = {}
    current = None
    for line in listing.splitlines():
        match = re.match(r"pinlint ([a-z][a-z-]*)", line)
        if match:
            current = match.group(1)
        blocks.setdefault(current, []).append(line)
    return {name: "\n".join(lines) for name, lines in blocks.items()}


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_readme_command_line_lists_every_command_and_option():
    """Held to the CLI itself: a new command or option without a line in the README fails here."""
    group = get_command(app)
    blocks = _command_blocks()
    listing = "\n".join(blocks.values())
    missing = [name for name in group.commands if name not in blocks]
    for name, command in group.commands.items():
        # `fix` takes check's options (test_cli holds it to that): they are documented under check.
        block = blocks.get(name, "") + ("\n" + blocks.get("check", "") if name == "fix" else "")
        for param in command.params:
            for option in (*param.opts, *param.secondary_opts):
                if option.startswith("-") and not _mentions(block, option):
                    missing.append(f"{name} {option}")
    for param in group.params:
        for option in (*param.opts, *param.secondary_opts):
            if not _mentions(listing, option):
                missing.append(option)
    assert not missing, f"not in the README's command-line section: {missing}"


def test_readme_lists_every_output_format():
    from pinlint.report import FORMATS
    line = next(l for l in _command_blocks()["check"].splitlines() if "--output-format" in l)
    assert [f for f in FORMATS if not _mentions(line, f)] == []


# ---------------------------------------------------------------------------- install hints
# `pinlint` on the package index is an unrelated project: every hint names the `cuda-pinlint`
# distribution (or installs the checkout itself, `pip install -e ".[...]"`).
_PLAIN_NAME = re.compile(r"""(?<![\w./-])pinlint(?=\[|\s*@|["'\s]*$|["']\s)""")


def _install_lines():
    for path in [REPO / "README.md", REPO / ".pre-commit-hooks.yaml", *REPO.glob("docs/*.md"),
                 *REPO.glob("rules/*.md"), *REPO.glob("bench/*.md"), *(REPO / "pinlint").rglob("*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "pip install" in line:
                yield f"{path.relative_to(REPO)}:{number}", line


def test_no_install_hint_names_the_unrelated_pinlint_distribution():
    hints = list(_install_lines())
    assert len(hints) >= 5  # the scan sees the hints (README, LSP, verify, watch...)
    wrong = [(where, line.strip()) for where, line in hints
             if _PLAIN_NAME.search(line.split("pip install", 1)[1])]
    assert not wrong, wrong
    assert all("cuda-pinlint" in line for where, line in hints if where.startswith("pinlint/"))


def test_the_plain_name_pattern_catches_what_it_must():
    for bad in ['pip install "pinlint[lsp]"', "pip install 'pinlint[gpu]'", "pip install pinlint",
                'pip install "pinlint @ git+https://x/pinlint@v1"']:
        assert _PLAIN_NAME.search(bad.split("pip install", 1)[1]), bad
    for good in ['pip install "cuda-pinlint[lsp]"', 'pip install -e ".[dev]"', "pip install matplotlib",
                 'pip install "cuda-pinlint @ git+https://github.com/your-org/pinlint@v0.1.0"']:
        assert not _PLAIN_NAME.search(good.split("pip install", 1)[1]), good


# ---------------------------------------------------------------------------- the CI examples, as written
def _ci_commands() -> list:
    """Every `pinlint ...` command of the README's CI workflows (GitHub `run:` steps, GitLab `script:`)."""
    commands = []
    for block in re.findall(r"```yaml\n(.*?)```", _section("CI"), re.S):
        for line in block.splitlines():
            match = re.match(r"\s*(?:-\s+)?(?:run:\s+)?(pinlint .*)$", line)
            if match:
                commands.append(match.group(1).split(" #")[0].strip())
    return commands


def test_readme_ci_examples_run_as_written(tmp_path):
    commands = _ci_commands()
    assert commands == ["pinlint check --output-format sarif -o pinlint.sarif --exit-zero",
                        "pinlint check --output-format github",
                        "pinlint check --output-format gitlab -o gl-code-quality-report.json --exit-zero",
                        "pinlint check --output-format junit -o pinlint-junit.xml"]
    checkout = tmp_path / "checkout"
    write(checkout, "src/upload.py", BAD)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = {}
    for command in commands:  # as a CI runner runs a step: a shell, in the checkout
        done[command] = subprocess.run(command, shell=True, cwd=checkout, env=env, capture_output=True,
                                       text=True, timeout=120)
        assert "Traceback" not in done[command].stderr
    sarif, github, gitlab, junit = (done[c] for c in commands)
    assert sarif.returncode == 0 and sarif.stdout == ""   # --exit-zero: the upload step still runs
    log = validate_sarif(json.loads((checkout / "pinlint.sarif").read_text(encoding="utf-8")))
    [result] = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/upload.py"
    assert github.returncode == 1 and github.stdout.startswith("::warning title=pinlint (PIN001),file=src/upload.py,")
    assert gitlab.returncode == 0
    issues = json.loads((checkout / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    jsonschema.validate(issues, GITLAB_CODE_QUALITY)
    assert [i["location"]["path"] for i in issues] == ["src/upload.py"]
    assert junit.returncode == 1  # this step fails the job on findings
    report = (checkout / "pinlint-junit.xml").read_text(encoding="utf-8")
    assert ET.fromstring(report.split("\n", 1)[1]).get("failures") == "1"


@pytest.mark.parametrize("section", ["Quick start", "Development"])
def test_readme_install_commands_name_the_checkouts_extras(section):
    """`pip install -e ".[EXTRAS]"` in the README names extras the project defines."""
    import tomllib
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
                 ["optional-dependencies"])
    named = {e for group in re.findall(r'pip install -e "\.\[([^\]]+)\]"', _section(section))
             for e in group.split(",")}
    assert named and named <= extras
