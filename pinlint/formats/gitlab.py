"""GitLab code quality: a JSON array of issues with GitLab's documented fields (``description``,
``check_name``, ``fingerprint``, ``severity``, ``location.path``, ``location.positions.begin.line``),
for ``artifacts: reports: codequality:``."""

from __future__ import annotations

import hashlib
import json
import os
from typing import TextIO

from ..report import ReportOptions
from .places import fingerprints, place
from .rules_meta import rule_meta

# SARIF's problem severity -> GitLab's scale (info, minor, major, critical, blocker)
_SEVERITY = {"error": "critical", "warning": "major", "recommendation": "minor"}


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    places = [place(f) for f in findings]
    issues = []
    for finding, where, line_hash in zip(findings, places, fingerprints(findings, places)):
        path = finding.filename.replace(os.sep, "/")
        path = path[2:] if path.startswith("./") else path
        unique = f"{path}\0{finding.code}\0{line_hash}"
        issues.append({
            "description": f"{finding.code} {where.prefix}{finding.message}",
            "check_name": finding.code,
            "fingerprint": hashlib.sha256(unique.encode("utf-8", "backslashreplace")).hexdigest()[:32],
            "severity": _SEVERITY[rule_meta(finding.code).severity],
            "location": {"path": path, "positions": {
                "begin": {"line": where.start.row, "column": where.start.column},
                "end": {"line": where.end.row, "column": where.end.column}}},
        })
    json.dump(issues, out, indent=2)
    out.write("\n")
