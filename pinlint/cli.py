"""The ``pinlint`` command line.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error (a one-line message
on stderr, never a traceback).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .checks import ALL_RULES, RULES_BY_CODE
from .discover import discover
from .engine import lint_bytes
from .report import FORMATS, display_path
from .settings import Settings, SettingsError, resolve_selection

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
REPORT_URL = "please report it with the file that triggered it"

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Find and fix host-memory-type mistakes (pageable, pinned, write-combined, mapped) "
                       "in CUDA Python code.")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"


def _error(message: str) -> None:
    typer.echo(f"pinlint: error: {message}", err=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pinlint {__version__}")
        raise typer.Exit(EXIT_CLEAN)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """pinlint: a linter for host-memory decisions in CUDA Python."""


@app.command()
def check(
    paths: Optional[List[str]] = typer.Argument(None, help="Files or folders to check (default: .)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Codes or prefixes to check (comma-separated)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Codes or prefixes to skip."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Codes to add to the selection."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="Output format."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings."),
    statistics: bool = typer.Option(False, "--statistics", help="Count findings per code (text format)."),
) -> None:
    """Check files for host-memory mistakes."""
    try:
        settings = Settings(select=resolve_selection(select, ignore, extend_select))
    except SettingsError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_ERROR)

    found = discover(paths or ["."])
    errors = list(found.errors)
    findings = []
    for path in found.files:
        name = display_path(str(path))
        try:
            data = path.read_bytes()
        except OSError as exc:
            errors.append(f"{name}: {exc.strerror or exc}")
            continue
        result = lint_bytes(data, name, settings)
        findings.extend(result.findings)
        if result.error:
            errors.append(result.error)

    findings.sort(key=lambda f: f.sort_key())
    if output_format is OutputFormat.text:
        if findings or not errors:  # no "All checks passed!" when something could not be checked
            FORMATS["text"](findings, sys.stdout, statistics=statistics)
    else:
        FORMATS[output_format.value](findings, sys.stdout)
    for message in errors:
        _error(message)
    if errors:
        raise typer.Exit(EXIT_ERROR)
    raise typer.Exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


@app.command()
def rule(code: Optional[str] = typer.Argument(None, help="A rule code, e.g. PIN001."),
         all_rules: bool = typer.Option(False, "--all", help="List every rule.")) -> None:
    """Explain a rule, or list them all."""
    if code is None or all_rules:
        for item in ALL_RULES:
            typer.echo(f"{item.code}  {item.name:<28} {item.summary}")
        raise typer.Exit(EXIT_CLEAN)
    item = RULES_BY_CODE.get(code.upper())
    if item is None:
        _error(f"unknown rule {code!r}; `pinlint rule --all` lists them")
        raise typer.Exit(EXIT_ERROR)
    from .apitables import rules_dir
    doc = rules_dir() / f"{item.code}.md"
    typer.echo(doc.read_text(encoding="utf-8") if doc.is_file() else f"{item.code} {item.name}: {item.summary}")


def main() -> None:
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback reaches the user
        _error(f"internal error: {type(exc).__name__}: {exc}; {REPORT_URL}")
        sys.exit(EXIT_ERROR)
