"""``pinlint rule``: the rule documentation in ``rules/PINxxx.md`` is what the command prints, every doc
has the five sections, and its examples do what they say: the Example is reported (at the line its
comment marks) and the Use instead code, run in the Example's context, is not.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pinlint.checks import ALL_CODES, ALL_RULES, RULES_BY_CODE, RUNTIME_RULES
from pinlint.engine import lint_text
from pinlint.settings import Settings

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "rules"
SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")
CODES = [rule.code for rule in ALL_RULES]
RUNTIME = [rule.code for rule in RUNTIME_RULES]  # observed by `pinlint trace` only: no static example


def process(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def pinlint(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """In this process (``process`` for the one test of the real command)."""
    from helpers import pinlint_in_process
    return pinlint_in_process(cwd, *args)


def doc(code: str) -> str:
    return (RULES / f"{code}.md").read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no `## {title}` section"
    return match.group(1)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S)


def lint(program: str) -> list:
    result = lint_text(program, "example.py", Settings())
    assert result.error is None, result.error
    return list(result.findings)


# ------------------------------------------------------------------ pinlint rule CODE
def test_rule_prints_the_rule_doc(tmp_path):
    # Run outside the checkout: the docs come with the package, not from the working directory.
    proc = pinlint("rule", "PIN003", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.rstrip("\n") == doc("PIN003").rstrip("\n")
    assert proc.stdout.startswith("# PIN003: write-combined-cpu-read\n")


def test_rule_prints_exactly_the_rule_doc():
    assert process("rule", "PIN003").stdout == doc("PIN003")


@pytest.mark.parametrize("code", CODES + RUNTIME)
def test_rule_prints_each_doc_case_insensitively(code):
    proc = pinlint("rule", code.lower())
    assert proc.returncode == 0
    assert proc.stdout.rstrip("\n") == doc(code).rstrip("\n")


@pytest.mark.parametrize("code", ["PIN999", "PIN", "E501", "pin01"])
def test_unknown_rule_exits_2_with_one_line(code):
    proc = pinlint("rule", code)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and code in lines[0] and "rule --all" in lines[0]


# ------------------------------------------------------------------ pinlint rule --all
def _table(stdout: str) -> dict:
    lines = stdout.splitlines()
    assert lines[0].split()[:4] == ["code", "name", "fix", "default"]
    rows = {}
    for line in lines[1:]:
        code, name, fix, default, summary = line.split(None, 4)
        rows[code] = {"name": name, "fix": fix, "default": default, "summary": summary}
    return rows


def test_rule_all_lists_every_rule_with_name_fix_and_default_state():
    proc = pinlint("rule", "--all")
    assert proc.returncode == 0
    rows = _table(proc.stdout)
    assert list(rows) == ["PIN000", *CODES, *RUNTIME]  # PIN000, the order of ALL_RULES, the runtime rules
    assert rows["PIN000"]["default"] == "always" and rows["PIN000"]["fix"] == "never"
    for rule in RUNTIME_RULES:
        assert rows[rule.code] == {"name": rule.name, "fix": "never", "default": "trace", "summary": rule.summary}
        assert doc(rule.code).splitlines()[0] == f"# {rule.code}: {rule.name}"
    default = Settings().select
    for rule in ALL_RULES:
        row = rows[rule.code]
        assert row["name"] == rule.name
        assert row["fix"] == rule.fix_availability
        assert row["fix"] in ("always", "sometimes", "never")
        assert row["default"] == ("enabled" if rule.code in default else "disabled")
        assert row["summary"] == rule.summary
        # The name is the doc's title too.
        assert doc(rule.code).splitlines()[0] == f"# {rule.code}: {rule.name}"


def test_rule_without_a_code_lists_them_too():
    assert pinlint("rule").stdout == pinlint("rule", "--all").stdout


def test_every_rule_code_has_a_doc_and_every_doc_a_rule():
    assert {p.stem for p in RULES.glob("PIN*.md")} == set(CODES) | set(RUNTIME) | {"PIN000"}
    assert set(CODES) == set(ALL_CODES) - {"PIN000"} - set(RUNTIME)


# ------------------------------------------------------------------ the docs
@pytest.mark.parametrize("code", CODES + RUNTIME)
def test_doc_has_the_five_sections_in_order(code):
    headings = re.findall(r"^## (.+?)\s*$", doc(code), re.M)
    assert headings == list(SECTIONS), headings
    for title in SECTIONS:
        assert section(doc(code), title).strip(), f"{code}: `## {title}` is empty"


@pytest.mark.parametrize("code", CODES)
def test_example_is_reported_at_the_marked_line(code):
    [example] = python_blocks(section(doc(code), "Example"))
    marked = [i + 1 for i, line in enumerate(example.splitlines()) if re.search(rf"#\s*{code}\b", line)]
    assert len(marked) == 1, f"{code}: the Example should mark one line with `# {code}: ...`"
    rows = [f.location.row for f in lint(example) if f.code == code]
    assert rows == marked


@pytest.mark.parametrize("code", CODES)
def test_use_instead_is_clean(code):
    text = doc(code)
    [example] = python_blocks(section(text, "Example"))
    [use_instead] = python_blocks(section(text, "Use instead"))
    assert code not in [f.code for f in lint(use_instead)]
    # The snippet continues the Example (it uses the Example's imports and names): run it after the
    # Example, where the analysis knows every name, and require no finding of the rule in its lines.
    program = example.rstrip("\n") + "\n" + use_instead
    first = example.rstrip("\n").count("\n") + 2
    late = [f.location.row for f in lint(program) if f.code == code and f.location.row >= first]
    assert late == [], f"{code}: the Use instead code is reported at {late}"
    # Control: the same position does report the Example itself, so the check above can fail.
    twice = example.rstrip("\n") + "\n" + example
    assert [f for f in lint(twice) if f.code == code and f.location.row >= first]


@pytest.mark.parametrize("code", CODES)
def test_fix_availability_agrees_with_the_example(code):
    [example] = python_blocks(section(doc(code), "Example"))
    [finding] = [f for f in lint(example) if f.code == code]
    if RULES_BY_CODE[code].fix_availability == "never":
        assert finding.fix is None
        assert re.search(r"\bno (automatic )?fix\b", section(doc(code), "Fix safety"), re.I)
    elif finding.fix is not None:
        assert finding.fix.applicability in section(doc(code), "Fix safety").lower()
