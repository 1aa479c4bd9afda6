"""Output: the formats by name, what a run tells them besides its findings, and the helpers every format
shares (display paths, per-code statistics). Each format lives in ``pinlint.formats`` and is imported only
when it is the one asked for."""

from __future__ import annotations

import importlib
import os
from collections import Counter
from dataclasses import dataclass
from typing import Optional, TextIO

from .model import Finding

# format name -> module in pinlint.formats (each has `write(findings, out, options)`)
FORMATS = {
    "text": "text",
    "json": "json_format",
    "json-lines": "json_format",
    "sarif": "sarif",
    "github": "github",
    "gitlab": "gitlab",
    "junit": "junit",
}
NEEDS_EDITS = frozenset({"json", "json-lines", "sarif"})  # formats that show each fix's text edits
STATISTICS_FORMATS = ("text", "json", "json-lines")


@dataclass(frozen=True)
class ReportOptions:
    """What a format may show besides the findings."""

    format: str = "text"
    unsafe: bool = False             # --unsafe-fixes: unsafe fixes count as available
    fixed: Optional[int] = None      # findings fixed in this run (None when the run fixes nothing)
    fixed_codes: tuple = ()          # ((filename, ((code, count), ...)), ...): what --fix fixed, per file
    statistics: bool = False
    quiet: bool = False              # findings only: no summary lines
    show_fixes: bool = False
    color: bool = False
    complete: bool = True            # False when a file could not be checked (no "All checks passed!")
    notices: tuple = ()              # (("error" | "warning", message), ...) from the run, for SARIF


def write_report(findings: list, out: TextIO, options: ReportOptions) -> None:
    module = importlib.import_module(f"pinlint.formats.{FORMATS[options.format]}")
    if options.statistics:
        module.write_statistics(statistics(findings, options.unsafe), findings, out, options)
    else:
        module.write(findings, out, options)


def display_path(path: str) -> str:
    """Paths relative to the working directory when inside it, as ruff prints them."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith(os.pardir + os.sep) and os.path.isabs(path) else relative


def fix_available(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.applicability == "safe" or
                                        (unsafe and finding.fix.applicability == "unsafe"))


@dataclass(frozen=True)
class Statistic:
    code: str
    name: str
    count: int
    fixable_count: int

    @property
    def fixable(self) -> bool:
        return self.fixable_count > 0

    def to_json(self) -> dict:
        return {"code": self.code, "name": self.name, "count": self.count, "fixable": self.fixable,
                "fixable_count": self.fixable_count}


def statistics(findings: list, unsafe: bool = False) -> list:
    """Findings per code, most frequent first (ties by code), as ruff's --statistics counts them."""
    from .formats.rules_meta import rule_name
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if fix_available(f, unsafe))
    return [Statistic(code, rule_name(code), count, fixable[code])
            for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def finding_to_json(finding: Finding) -> dict:
    """A finding as ruff's JSON shape plus pinlint's ``related`` and ``trace`` (the cache stores this too)."""
    from .formats.json_format import finding_to_json as convert
    return convert(finding)


def sarif_log(findings: list, options: Optional[ReportOptions] = None) -> dict:
    """The SARIF log of ``findings`` as a dict (for callers that add to it before writing)."""
    from .formats.sarif import sarif_log as build
    return build(findings, options or ReportOptions(format="sarif"))
