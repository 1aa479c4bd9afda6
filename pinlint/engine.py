"""Lint one file: prefilter, parse, analyse, run the selected rules, position and suppress findings."""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from .analysis import analyze
from .apitables import default_tables
from .checks import ALL_RULES, CheckContext
from .fixers import FixContext
from .fixes import Plan, SourceFile, applicable, apply_plans, edits_between, select_plans
from .imports import collect_imports
from .parsing import parse, syntax_error
from .model import Finding, Fix, Location, Related
from .settings import Settings
from .suppress import Suppressions



@dataclass
class FileResult:
    filename: str
    findings: list = field(default_factory=list)
    error: Optional[str] = None       # an internal error analysing this file (reported, exit 2)
    skipped: bool = False             # the prefilter showed it cannot have a finding
    warning: Optional[str] = None     # a file pinlint could not analyse fully (reported, exit code unchanged)
    module: Optional[cst.Module] = None  # the parsed module the findings' fix plans refer to
    span: Optional[Callable] = None      # node -> ((row, col), (row, col)), for choosing fixes that fit


def names_gpu_library(data: bytes) -> bool:
    """Every finding needs an import of a GPU library, so its name appears in the file."""
    return any(trigger.encode() in data for trigger in default_tables().triggers)


def calls_relevant_api(data: bytes) -> bool:
    """Every finding needs a call, by name, of a copy, registration or pinnable-allocation API."""
    return default_tables().call_pattern.search(data) is not None


def passes_prefilter(data: bytes) -> bool:
    """Both cheap, sound tests: a file that fails either cannot have a finding other than PIN000."""
    return names_gpu_library(data) and calls_relevant_api(data)


def decode(data: bytes) -> str:
    """Decode Python source as the interpreter would (BOM, coding cookie, default UTF-8)."""
    return read_source(data).text


def read_source(data: bytes) -> SourceFile:
    """The text of a source file and how to encode it back exactly (encoding, byte-order mark)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = encoding == "utf-8-sig"
    text = data.decode(encoding)
    return SourceFile(text, "utf-8" if bom else encoding, bom)


def _syntax_finding(filename: str, message: str, row: int = 1, column: int = 1) -> Finding:
    location = Location(row, column)
    return Finding(code="PIN000", message=message, filename=filename, location=location,
                   end_location=location, url=None)


def _syntax_error_finding(filename: str, error: SyntaxError) -> Finding:
    return _syntax_finding(filename, f"SyntaxError: {error.msg}", error.lineno or 1, max(error.offset or 1, 1))


def lint_bytes(data: bytes, filename: str, settings: Settings) -> FileResult:
    result = FileResult(filename)
    if not names_gpu_library(data):
        result.skipped = True
        return result
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        if "PIN000" in settings.select:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            result.findings.append(_syntax_finding(filename, f"File is not valid Python source text: {reason}"))
        return result
    if not calls_relevant_api(data):
        # No rule can report here; Python's own parser (about 8x faster than libcst) still checks
        # that the file parses, so PIN000 means the same for every file that names a GPU library.
        result.skipped = True
        error = syntax_error(text)
        if error is not None and "PIN000" in settings.select:
            result.findings.append(_syntax_error_finding(filename, error))
        return result
    return lint_text(text, filename, settings, result)


def lint_text(text: str, filename: str, settings: Settings, result: Optional[FileResult] = None) -> FileResult:
    result = result or FileResult(filename)
    parsed = parse(text)
    if parsed.skipped is not None:
        result.warning = f"{filename}: {parsed.skipped}"
        return result
    if parsed.error is not None:
        if "PIN000" in settings.select:
            result.findings.append(_syntax_error_finding(filename, parsed.error))
        return result
    try:
        result.findings.extend(_check_module(parsed.module, text, filename, settings, result))
    except RecursionError:
        # Valid Python, nested deeper than the analysis follows: say so, and let the run go on.
        result.warning = f"{filename}: nested too deeply to analyse; skipped"
    return result


def _check_module(module: cst.Module, text: str, filename: str, settings: Settings,
                  result: FileResult) -> list:
    rules = [rule for rule in ALL_RULES if rule.code in settings.select]
    if not rules:
        return []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    imports = collect_imports(wrapper.module)
    facts = analyze(wrapper.module, imports=imports)
    positions: dict = {}

    def position(node: cst.CSTNode):
        # Positions are resolved only when a rule reports: most files have no finding.
        if not positions:
            positions.update(wrapper.resolve(PositionProvider))
        return positions[node]

    fix_context = FixContext(wrapper.module, text, facts, default_tables(), imports.bindings(),
                             lambda: wrapper.resolve(ParentNodeProvider), imports.qualify)
    ctx = CheckContext(line_of=lambda node: position(node).start.line, pin007_min_bytes=settings.pin007_min_bytes,
                       fixes=fix_context, qualify=imports.qualify)
    suppressions = Suppressions(text)
    findings: dict = {}
    reproduced: Optional[bool] = None  # whether libcst writes this file back byte for byte, asked once if needed

    def fixable(plan: Optional[Plan]) -> Optional[Plan]:
        # Fixes are written through libcst's code generator: where it does not give this file back
        # exactly, a fix's edits would change more than its own lines, so none is offered.
        nonlocal reproduced
        if plan is not None and reproduced is None:
            reproduced = wrapper.module.code == text
            if not reproduced:
                result.warning = f"{filename}: no fixes offered: libcst does not write this file back exactly"
        return plan if reproduced else None

    for rule in rules:
        for report in rule.check(facts, ctx):
            span = position(report.node)
            rows = (span.start.line, span.end.line)
            if not settings.ignore_noqa and suppressions.suppressed(rule.code, rows):
                continue
            related = tuple(
                Related(message=f"buffer allocated here by `{site.api}`", filename=filename,
                        location=Location(position(site.node).start.line, position(site.node).start.column + 1),
                        end_location=Location(position(site.node).end.line, position(site.node).end.column + 1))
                for site in sorted(report.sites, key=lambda s: (position(s.node).start.line,
                                                                position(s.node).start.column)))
            plan = fixable(report.fix)
            finding = Finding(
                code=rule.code, message=report.message, filename=filename,
                location=Location(span.start.line, span.start.column + 1),
                end_location=Location(span.end.line, span.end.column + 1),
                fix=_rendered(wrapper.module, text, plan, settings.render_fixes), related=related, url=None,
                plan=plan, nbytes=max((s.nbytes for s in report.sites if s.nbytes), default=None),
                direction=report.direction, pooled=any(s.pooled for s in report.sites))
            # One finding per code and place: a copy reached on two paths is still one mistake.
            findings.setdefault((rule.code, finding.location), finding)
    result.module = wrapper.module
    result.span = lambda node: ((position(node).start.line, position(node).start.column),
                                (position(node).end.line, position(node).end.column))
    return sorted(findings.values(), key=Finding.sort_key)


def _rendered(module: cst.Module, text: str, plan: Optional[Plan], with_edits: bool) -> Optional[Fix]:
    """The plan as ruff-style edits: applied alone, then diffed against the original text. That costs
    a transform of the whole module, so text output (which shows only whether a fix exists) skips it."""
    if plan is None:
        return None
    if not with_edits:
        return Fix(plan.applicability, plan.message, ())
    try:
        fixed = apply_plans(module, [plan])
    except Exception:  # noqa: BLE001 - a plan that cannot be rendered is offered as no fix at all
        return None
    return Fix(plan.applicability, plan.message, edits_between(text, fixed))


# ---------------------------------------------------------------------------- fixing
MAX_FIX_PASSES = 10


@dataclass
class FixOutcome:
    text: str                 # the fixed text (the original when nothing applied or a pass failed)
    applied: int = 0          # fixes applied over all passes
    changed: int = 0          # 1 when the text differs from the original
    result: Optional[FileResult] = None  # the findings left in the final text
    error: Optional[str] = None
    fixed: dict = field(default_factory=dict)  # code -> findings of that code the fixes resolved


def fix_text(text: str, filename: str, settings: Settings, unsafe: bool) -> FixOutcome:
    """Apply fixes, re-parse and re-lint until none applies (bounded); never return text that does
    not parse: a pass whose output fails to parse is dropped with an error. ``applied`` counts the
    findings the fixes resolved (one fix can resolve several: PIN001 and PIN007 at one allocation)."""
    outcome = FixOutcome(text)
    initial: Optional[int] = None
    first: Counter = Counter()
    for _ in range(MAX_FIX_PASSES):
        result = lint_text(outcome.text, filename, settings)
        outcome.result = result
        if initial is None:
            initial, first = len(result.findings), Counter(f.code for f in result.findings)
        plans = [f.plan for f in result.findings if applicable(f.plan, unsafe)]
        if not plans or result.module is None:
            break
        chosen = select_plans(plans, _SpanMap(result.span))
        try:
            fixed = apply_plans(result.module, chosen)
            cst.parse_module(fixed)
        except Exception as exc:  # noqa: BLE001 - keep the last text that parsed
            outcome.error = f"{filename}: a fix produced invalid code and was not applied ({type(exc).__name__})"
            break
        if fixed == outcome.text:
            break
        outcome.text = fixed
    else:
        outcome.result = lint_text(outcome.text, filename, settings)
    if outcome.text != text:
        outcome.applied = max(1, initial - len(outcome.result.findings))
        outcome.fixed = dict(first - Counter(f.code for f in outcome.result.findings))
    return outcome


class _SpanMap:
    def __init__(self, span) -> None:
        self._span = span

    def __getitem__(self, node):
        return self._span(node)
