"""SARIF 2.1.0 (the OASIS standard), shaped for GitHub code scanning: rules with their documentation,
tags, precision and severity; results with a fingerprint, the allocation site linked from the message,
the interprocedural trace as a code flow, and fixes where a file's text edits are known."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional, TextIO
from urllib.parse import quote

from ..model import Finding
from ..report import ReportOptions
from .places import fingerprints, place
from .rules_meta import SYNTAX_ERROR, SYNTAX_ERROR_NAME, SYNTAX_ERROR_SUMMARY, plain_text, rule_meta, rule_url

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/cuda-pinlint/"
SRCROOT = "%SRCROOT%"
_DESCRIPTION_LIMIT = 1024  # GitHub shows at most this many characters of a description


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    json.dump(sarif_log(findings, options), out, indent=2)
    out.write("\n")


def sarif_log(findings: list, options: ReportOptions = ReportOptions(format="sarif")) -> dict:
    from .. import __version__
    rules = _rules()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    places = [place(f) for f in findings]
    results = [_result(f, where, fingerprint, index)
               for f, where, fingerprint in zip(findings, places, fingerprints(findings, places))]
    cwd = _directory_uri(os.getcwd())
    invocation = {"executionSuccessful": options.complete, "workingDirectory": {"uri": cwd}}
    notifications = [{"level": level, "message": {"text": text}} for level, text in options.notices]
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {"version": "2.1.0", "$schema": SCHEMA_URI, "runs": [{
        "tool": {"driver": {"name": "pinlint", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFORMATION_URI, "rules": rules}},
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": cwd}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }]}


# ---------------------------------------------------------------------------- rules
def _rules() -> list:
    from ..checks import ALL_RULES
    from ..rule_docs import RUNTIME_RULES, rule_doc
    entries = [(SYNTAX_ERROR, SYNTAX_ERROR_NAME, SYNTAX_ERROR_SUMMARY, "never")]
    entries += [(rule.code, rule.name, rule.summary, rule.fix_availability) for rule in (*ALL_RULES, *RUNTIME_RULES)]
    rules = []
    for code, name, summary, fix in entries:
        doc = rule_doc(code)
        markdown = doc.text or f"# {code}: {name}\n\n{summary}.\n"
        meta = rule_meta(code)
        descriptor = {
            "id": code, "name": name,
            "shortDescription": {"text": summary},
            "fullDescription": {"text": _limit(_one_paragraph(plain_text(doc.section("What it does"))) or summary)},
            "help": {"text": plain_text(markdown), "markdown": markdown},
            "defaultConfiguration": {"level": "error" if meta.severity == "error" else "warning"},
            "properties": {"tags": list(meta.tags), "precision": meta.precision, "problem.severity": meta.severity,
                           "fix": fix},
        }
        url = rule_url(code)
        if url is not None:
            descriptor["helpUri"] = url
        rules.append(descriptor)
    return rules


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


def _limit(text: str) -> str:
    return text if len(text) <= _DESCRIPTION_LIMIT else text[:_DESCRIPTION_LIMIT - 3].rstrip() + "..."


# ---------------------------------------------------------------------------- results
def _result(finding: Finding, where, fingerprint: str, index: dict) -> dict:
    in_notebook = finding.cell is not None
    related = [] if in_notebook else list(finding.related)  # a related row in a notebook has no cell (yet)
    result = {
        "ruleId": finding.code,
        "ruleIndex": index.get(finding.code, 0),
        "level": "error" if rule_meta(finding.code).severity == "error" else "warning",
        "message": {"text": where.prefix + _linked(finding.message, related)},
        "locations": [_location(finding.filename, where.start, where.end)],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
    }
    if related:
        result["relatedLocations"] = [_location(r.filename, r.location, r.end_location, r.message, id=i)
                                      for i, r in enumerate(related, start=1)]
    if finding.trace and not in_notebook:
        result["codeFlows"] = [{"threadFlows": [{"locations": [
            {"location": _location(step.filename, step.location, getattr(step, "end_location", None), step.message)}
            for step in finding.trace]}]}]
    edits = finding.fix.edits if finding.fix is not None and not in_notebook else ()
    if edits:  # a notebook's edits are in terms of its cells, not of the JSON file: --fix applies them
        result["fixes"] = [{
            "description": {"text": f"{finding.fix.message} ({finding.fix.applicability})"},
            "artifactChanges": [{"artifactLocation": _artifact(finding.filename), "replacements": [
                {"deletedRegion": _region(e.location, e.end_location), "insertedContent": {"text": e.content}}
                for e in edits]}],
        }]
    properties = {}
    if finding.fix is not None:
        properties["fix"] = {"applicability": finding.fix.applicability, "message": finding.fix.message}
    if in_notebook:
        properties["cell"] = finding.cell
        properties["cellLocation"] = {"row": finding.location.row, "column": finding.location.column}
    if properties:
        result["properties"] = properties
    return result


def _linked(message: str, related: list) -> str:
    """The message with each allocation site linked to its related location (SARIF's ``[text](id)``):
    the "at line N" that names it, else a link appended. Literal braces are doubled and a literal "](" is
    escaped, as SARIF's plain text messages require."""
    text = message.replace("{", "{{").replace("}", "}}").replace("](", "\\](")
    appended = []
    for number, site in enumerate(related, start=1):
        phrase = re.search(rf"\bat line {site.location.row}\b(?![^\[]*\]\()", text)
        if phrase is not None:
            text = f"{text[:phrase.start()]}[{phrase.group(0)}]({number}){text[phrase.end():]}"
        else:
            appended.append(f"[line {site.location.row}]({number})")
    if appended:
        text += f" (allocated at {', '.join(appended)})"
    return text


def _location(filename: str, start, end, message: Optional[str] = None, id: Optional[int] = None) -> dict:
    location: dict = {}
    if id is not None:
        location["id"] = id
    location["physicalLocation"] = {"artifactLocation": _artifact(filename), "region": _region(start, end or start)}
    if message:
        location["message"] = {"text": message}
    return location


def _region(start, end) -> dict:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _artifact(filename: str) -> dict:
    """Relative to the checkout (``%SRCROOT%``, the working directory) where the file is inside it, as
    code scanning expects; an absolute ``file:`` URI otherwise."""
    if os.path.isabs(filename):
        return {"uri": Path(filename).as_uri()}
    return {"uri": quote(filename.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def _directory_uri(path: str) -> str:
    uri = Path(path).resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"
