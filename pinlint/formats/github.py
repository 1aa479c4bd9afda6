"""GitHub Actions workflow commands: one ``::warning``/``::error`` annotation per finding, shown on the
pull request's changed lines (for a notebook: the line of the ``.ipynb`` that holds the source line)."""

from __future__ import annotations

from typing import TextIO

from ..report import ReportOptions
from .places import place
from .rules_meta import rule_meta


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    for finding in findings:
        where = place(finding)
        level = "error" if rule_meta(finding.code).severity == "error" else "warning"
        out.write(f"::{level} title={_escape_property('pinlint (' + finding.code + ')')},"
                  f"file={_escape_property(finding.filename)},line={where.start.row},col={where.start.column},"
                  f"endLine={where.end.row},endColumn={where.end.column}::"
                  f"{_escape_data(finding.code + ' ' + where.prefix + finding.message)}\n")
