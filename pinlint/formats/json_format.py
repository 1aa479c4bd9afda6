"""JSON and JSON lines: ruff's keys (``cell``, ``code``, ``end_location``, ``filename``, ``fix``,
``location``, ``message``, ``noqa_row``, ``url``), so tools that read ruff's output read pinlint's, plus
``related`` (the buffer's allocation sites) and ``trace`` (the path across functions)."""

from __future__ import annotations

import json
from typing import TextIO

from ..model import Finding
from ..report import ReportOptions
from .rules_meta import rule_url


def _location(loc) -> dict:
    return {"row": loc.row, "column": loc.column}


def _step(step) -> dict:
    data = {"filename": step.filename, "location": _location(step.location), "message": step.message}
    end = getattr(step, "end_location", None)
    if end is not None:
        data["end_location"] = _location(end)
    if getattr(step, "cell", None) is not None:
        data["cell"] = step.cell  # a notebook's rows count from the top of this cell
    return data


def finding_to_json(finding: Finding) -> dict:
    fix = None
    if finding.fix is not None:
        fix = {"applicability": finding.fix.applicability, "message": finding.fix.message,
               "edits": [{"content": e.content, "location": _location(e.location),
                          "end_location": _location(e.end_location)} for e in finding.fix.edits]}
    return {
        "cell": finding.cell,  # notebooks: rows count from the top of this cell (1-based, every cell counted)
        "code": finding.code,
        "end_location": _location(finding.end_location),
        "filename": finding.filename,
        "fix": fix,
        "location": _location(finding.location),
        "message": finding.message,
        "noqa_row": finding.location.row,  # where a `# noqa: CODE` suppresses it
        "url": finding.url or rule_url(finding.code),
        "related": [_step(r) for r in finding.related],
        "trace": [_step(t) for t in finding.trace],
    }


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    if options.format == "json-lines":
        for finding in findings:
            out.write(json.dumps(finding_to_json(finding)) + "\n")
        return
    json.dump([finding_to_json(f) for f in findings], out, indent=2)
    out.write("\n")


def write_statistics(stats: list, findings: list, out: TextIO, options: ReportOptions) -> None:
    """``[{code, name, count, fixable, fixable_count}]``, as ruff's ``--statistics --output-format json``."""
    if options.format == "json-lines":
        for s in stats:
            out.write(json.dumps(s.to_json()) + "\n")
        return
    json.dump([s.to_json() for s in stats], out, indent=2)
    out.write("\n")
