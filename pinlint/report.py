"""Output formats: text (ruff-like lines and a summary) and JSON (ruff's shape plus ``related``)."""

from __future__ import annotations

import json
import os
from collections import Counter
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
    data = {
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
    if finding.trace:
        # The interprocedural path, from the allocation to the finding (DESIGN.md's JSON contract).
        data["trace"] = [{"message": t.message, "filename": t.filename, "location": _location(t.location),
                          "end_location": _location(t.end_location)} for t in finding.trace]
    if finding.cell is not None:
        data["cell"] = finding.cell  # notebooks: rows count from the top of this cell, as ruff reports them
    return data


def write_text(findings: list, out: TextIO, statistics: bool = False, fixed: Optional[int] = None,
               unsafe: bool = False) -> None:
    for f in findings:
        marker = "[*] " if f.fix is not None and f.fix.applicability == "safe" else ""
        where = f"{f.filename}:cell {f.cell}:" if f.cell is not None else f"{f.filename}:"
        out.write(f"{where}{f.location.row}:{f.location.column}: {f.code} {marker}{f.message}\n")
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


# ---------------------------------------------------------------------------- SARIF 2.1.0
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _region(start, end) -> dict:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _artifact(filename: str) -> dict:
    from urllib.parse import quote
    return {"uri": quote(filename.replace(os.sep, "/")), "uriBaseId": "%SRCROOT%"}


def sarif_log(findings: list) -> dict:
    from . import __version__
    from .checks import ALL_RULES
    from .rule_docs import rule_doc

    rules = [{"id": "PIN000", "name": "syntax-error",
              "shortDescription": {"text": "The file is not valid Python source"},
              "defaultConfiguration": {"level": "error"}}]
    for rule in ALL_RULES:
        doc = rule_doc(rule.code)
        rules.append({
            "id": rule.code, "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": doc.section("What it does") or rule.summary},
            "help": {"text": doc.text, "markdown": doc.text},
            "defaultConfiguration": {"level": "warning"},
            "properties": {"fix": rule.fix_availability},
        })
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for f in findings:
        result = {
            "ruleId": f.code, "ruleIndex": index.get(f.code, 0),
            "level": "error" if f.code == "PIN000" else "warning",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(f.filename),
                                                "region": _region(f.location, f.end_location)}}],
        }
        if f.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": _artifact(r.filename),
                                      "region": _region(r.location, r.end_location)}}
                for i, r in enumerate(f.related)]
        if f.fix is not None:
            result["fixes"] = [{
                "description": {"text": f"{f.fix.message} ({f.fix.applicability})"},
                "artifactChanges": [{
                    "artifactLocation": _artifact(f.filename),
                    "replacements": [{"deletedRegion": _region(e.location, e.end_location),
                                      "insertedContent": {"text": e.content}} for e in f.fix.edits],
                }],
            }]
        results.append(result)
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [{
        "tool": {"driver": {"name": "pinlint", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://pypi.org/project/pinlint/", "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }]}


def write_sarif(findings: list, out: TextIO) -> None:
    json.dump(sarif_log(findings), out, indent=2)
    out.write("\n")


# ---------------------------------------------------------------------------- GitHub workflow commands
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(findings: list, out: TextIO) -> None:
    for f in findings:
        level = "error" if f.code == "PIN000" else "warning"
        out.write(f"::{level} title={_escape_property('pinlint (' + f.code + ')')},"
                  f"file={_escape_property(f.filename)},line={f.location.row},col={f.location.column},"
                  f"endLine={f.end_location.row},endColumn={f.end_location.column}::"
                  f"{_escape_data(f.code + ' ' + f.message)}\n")


FORMATS.update({"sarif": write_sarif, "github": write_github})
