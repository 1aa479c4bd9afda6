"""Lint one file: prefilter, parse, analyse, run the selected rules, position and suppress findings."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .analysis import analyze
from .apitables import default_tables
from .checks import ALL_RULES, CheckContext
from .model import Finding, Location, Related
from .settings import Settings
from .suppress import Suppressions



MAX_NESTING = 200
_BRACKETS = re.compile(r"[()\[\]{}]")


@dataclass
class FileResult:
    filename: str
    findings: list = field(default_factory=list)
    error: Optional[str] = None       # an internal error analysing this file (reported, exit 2)
    skipped: bool = False             # the prefilter showed it cannot have a finding


def passes_prefilter(data: bytes) -> bool:
    """Cheap substring test; sound because every finding needs an import of a GPU library."""
    return any(trigger.encode() in data for trigger in default_tables().triggers)


def decode(data: bytes) -> str:
    """Decode Python source as the interpreter would (BOM, coding cookie, default UTF-8)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def _syntax_finding(filename: str, message: str, row: int = 1, column: int = 1) -> Finding:
    location = Location(row, column)
    return Finding(code="PIN000", message=message, filename=filename, location=location,
                   end_location=location, url=None)


def lint_bytes(data: bytes, filename: str, settings: Settings) -> FileResult:
    result = FileResult(filename)
    if not passes_prefilter(data):
        result.skipped = True
        return result
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        if "PIN000" in settings.select:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            result.findings.append(_syntax_finding(filename, f"File is not valid Python source text: {reason}"))
        return result
    return lint_text(text, filename, settings, result)


def _python_syntax_error(text: str) -> Optional[Finding]:
    """Python's own verdict on a file libcst rejected: its message and position are the familiar ones."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc
    except (RecursionError, MemoryError, ValueError) as exc:
        return SyntaxError(f"{type(exc).__name__}: {exc}")
    return None


def _too_deep(text: str) -> bool:
    """Brackets nested deeper than CPython accepts (200) crash libcst's native parser: check first.
    Brackets inside strings are counted too, so a deep count is only a reason to ask ``ast``."""
    if sum(text.count(c) for c in "([{") <= MAX_NESTING:
        return False
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "([{" else -1
        deepest = max(deepest, depth)
    return deepest > MAX_NESTING and _python_syntax_error(text) is not None


def lint_text(text: str, filename: str, settings: Settings, result: Optional[FileResult] = None) -> FileResult:
    result = result or FileResult(filename)
    error: Optional[SyntaxError] = None
    if "\x00" in text:
        error = SyntaxError("source code cannot contain null bytes")
    elif _too_deep(text):
        error = _python_syntax_error(text)
    module = None
    if error is None:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            error = _python_syntax_error(text) or SyntaxError(exc.message, (filename, exc.editor_line,
                                                                             exc.editor_column, None))
        except (RecursionError, MemoryError, ValueError) as exc:
            error = SyntaxError(f"{type(exc).__name__} while parsing")
    if error is not None:
        if "PIN000" in settings.select:
            row = error.lineno or 1
            column = error.offset or 1
            result.findings.append(_syntax_finding(filename, f"SyntaxError: {error.msg}", row, max(column, 1)))
        return result
    try:
        result.findings.extend(_check_module(module, text, filename, settings))
    except RecursionError:
        result.error = f"{filename}: too deeply nested to analyse; skipped"
    return result


def _check_module(module: cst.Module, text: str, filename: str, settings: Settings) -> list:
    rules = [rule for rule in ALL_RULES if rule.code in settings.select]
    if not rules:
        return []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    facts = analyze(wrapper.module)
    positions: dict = {}

    def position(node: cst.CSTNode):
        # Positions are resolved only when a rule reports: most files have no finding.
        if not positions:
            positions.update(wrapper.resolve(PositionProvider))
        return positions[node]

    ctx = CheckContext(line_of=lambda node: position(node).start.line, pin007_min_bytes=settings.pin007_min_bytes)
    suppressions = Suppressions(text)
    findings: dict = {}
    for rule in rules:
        for report in rule.check(facts, ctx):
            span = position(report.node)
            rows = (span.start.line, span.end.line)
            if suppressions.suppressed(rule.code, rows):
                continue
            related = tuple(
                Related(message=f"buffer allocated here by `{site.api}`", filename=filename,
                        location=Location(position(site.node).start.line, position(site.node).start.column + 1),
                        end_location=Location(position(site.node).end.line, position(site.node).end.column + 1))
                for site in sorted(report.sites, key=lambda s: (position(s.node).start.line,
                                                                position(s.node).start.column)))
            finding = Finding(
                code=rule.code, message=report.message, filename=filename,
                location=Location(span.start.line, span.start.column + 1),
                end_location=Location(span.end.line, span.end.column + 1),
                fix=report.fix, related=related, url=None)
            # One finding per code and place: a copy reached on two paths is still one mistake.
            findings.setdefault((rule.code, finding.location), finding)
    return sorted(findings.values(), key=Finding.sort_key)
