"""Output formats: text (ruff-like lines and a summary) and JSON (ruff's shape plus ``related``)."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict
from typing import Iterable, Optional, TextIO

from .model import Finding


def display_path(path: str) -> str:
    """Paths relative to the working directory when inside it, as ruff prints them."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith(os.pardir + os.sep) and os.path.isabs(path) else relative


def _location(loc) -> dict:
    return {"row": loc.row, "column": loc.column}


def finding_to_json(finding: Finding) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [{"content": e.content, "location": _location(e.location),
                       "end_location": _location(e.end_location)} for e in finding.fix.edits],
        }
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": finding.filename,
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": fix,
        "url": finding.url,
        "related": [{"message": r.message, "filename": r.filename, "location": _location(r.location),
                     "end_location": _location(r.end_location)} for r in finding.related],
    }


def write_text(findings: list, out: TextIO, statistics: bool = False, fixed: Optional[int] = None,
               unsafe: bool = False) -> None:
    for f in findings:
        marker = "[*] " if f.fix is not None and f.fix.applicability == "safe" else ""
        out.write(f"{f.filename}:{f.location.row}:{f.location.column}: {f.code} {marker}{f.message}\n")
    if statistics and findings:
        counts = Counter(f.code for f in findings)
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            out.write(f"{count:5d}\t{code}\n")
    total = len(findings) + (fixed or 0)
    if fixed:
        out.write(f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {len(findings)} remaining).\n")
    elif findings:
        out.write(f"Found {total} error{'s' if total != 1 else ''}.\n")
    else:
        out.write("All checks passed!\n")
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe")
    if safe:
        out.write(f"[*] {safe} fixable with the `--fix` option.\n")
    if hidden and not unsafe:
        out.write(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
                  f"`--unsafe-fixes` option.\n")
    elif hidden:
        out.write(f"[*] {hidden} fixable with `--fix --unsafe-fixes`.\n")


def write_json(findings: list, out: TextIO) -> None:
    json.dump([finding_to_json(f) for f in findings], out, indent=2)
    out.write("\n")


def write_json_lines(findings: Iterable[Finding], out: TextIO) -> None:
    for f in findings:
        out.write(json.dumps(finding_to_json(f)) + "\n")


FORMATS = {"text": write_text, "json": write_json, "json-lines": write_json_lines}
