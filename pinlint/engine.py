"""Lint one file: prefilter, parse, analyse, run the selected rules, position and suppress findings."""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

import libcst as cst

from .analysis import Project, analyze
from .apitables import default_tables
from .checks import ALL_RULES, CheckContext
from .fixers import FixContext
from .fixes import Plan, SourceFile, applicable, apply_plans, edits_between, plan_edits, select_plans  # noqa: F401
from .modulefiles import remember_files
from .parsing import Parsed, keep_trees, parse, syntax_error
from .prefilter import (_source_path, calls_relevant_api, imported_modules, names_gpu_library,  # noqa: F401
                        passes_prefilter, reaches_gpu_code)
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
    dependencies: tuple = ()          # (path, sha256) of the other files of the tree the findings rest on
    # (filename, row, column) of the pinning calls in other functions that this file's PIN002 reports
    # reach, suppressed ones too: a run drops PIN008 there (check_command._defer_to_loops)
    reached: tuple = ()
    module: Optional[cst.Module] = None  # the parsed module the findings' fix plans refer to
    span: Optional[Callable] = None      # node -> ((row, col), (row, col)), for choosing fixes that fit


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
    path = _source_path(filename)
    helpers = not passes_prefilter(data) and reaches_gpu_code(data, path)
    if not names_gpu_library(data) and not helpers:
        result.skipped = True
        return result
    try:
        text = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        if "PIN000" in settings.select:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            result.findings.append(_syntax_finding(filename, f"File is not valid Python source text: {reason}"))
        return result
    if not calls_relevant_api(data) and not helpers:
        # No rule can report here; Python's own parser (about 8x faster than libcst) still checks
        # that the file parses, so PIN000 means the same for every file that names a GPU library.
        result.skipped = True
        error = syntax_error(text)
        if error is not None and "PIN000" in settings.select:
            result.findings.append(_syntax_error_finding(filename, error))
        return result
    return lint_text(text, filename, settings, result)


# The project (modules of the checked tree, and the analyses made of them) shared by every file
# checked in this process during one run; None outside a run, where each call gets its own.
_PROJECT: Optional[Project] = None


def start_project(root: Optional[Path] = None, trees: tuple = ()) -> Project:
    """Share one project between the files this process checks from now on (a run, a worker)."""
    global _PROJECT
    _PROJECT = Project(default_tables(), root=root, trees=trees)
    keep_trees(True)
    remember_files(True)
    return _PROJECT


def end_project() -> None:
    global _PROJECT
    _PROJECT = None
    keep_trees(False)
    remember_files(False)


def _project() -> Project:
    return _PROJECT if _PROJECT is not None else Project(default_tables())


def lint_text(text: str, filename: str, settings: Settings, result: Optional[FileResult] = None) -> FileResult:
    result = result or FileResult(filename)
    parsed = _already_parsed(text, filename) or parse(text)
    if parsed.skipped is not None:
        result.warning = f"{filename}: {parsed.skipped}"
        return result
    if parsed.error is not None:
        if "PIN000" in settings.select:
            result.findings.append(_syntax_error_finding(filename, parsed.error))
        return result
    try:
        found = _check_module(parsed.module, text, filename, settings, result)
        if parsed.expanded is not None:
            found = [_in_file_columns(f, text, parsed.expanded) for f in found]
        result.findings.extend(found)
    except RecursionError:
        # Valid Python, nested deeper than the analysis follows: say so, and let the run go on.
        result.warning = f"{filename}: nested too deeply to analyse; skipped"
    return result


def _in_file_columns(finding: Finding, text: str, expanded: str) -> Finding:
    """A finding of a file analysed with its indentation's tabs expanded (``Parsed.expanded``), with
    the columns of its own lines counted in the file as written."""
    written, analysed = text.splitlines(), expanded.splitlines()

    def column(location: Location) -> Location:
        row = location.row - 1
        if not 0 <= row < min(len(written), len(analysed)) or written[row] == analysed[row]:
            return location
        shift = len(analysed[row]) - len(written[row])  # only the leading whitespace differs
        return Location(location.row, max(1, location.column - shift))

    def moved(entry):
        if entry.filename != finding.filename:
            return entry
        return replace(entry, location=column(entry.location), end_location=column(entry.end_location))

    return replace(moved(finding), related=tuple(moved(r) for r in finding.related),
                   trace=tuple(moved(t) for t in finding.trace))


def _already_parsed(text: str, filename: str) -> Optional[Parsed]:
    """The tree the run's project made of this very file when another file's analysis imported it:
    parsed and analysed again, a third of pytorch-lightning's checked files (195 of 519) cost twice,
    and its callers' analyses of it were not reused."""
    if _PROJECT is None:
        return None
    path = _source_path(filename)
    ctx = _PROJECT.loaded(path) if path is not None else None
    if ctx is None or ctx.info.text != text or ctx.info.filename != filename:
        return None
    return Parsed(module=ctx.info.module)


def _check_module(module: cst.Module, text: str, filename: str, settings: Settings,
                  result: FileResult) -> list:
    rules = [rule for rule in ALL_RULES if rule.code in settings.select]
    if not rules:
        return []
    project = _project()
    facts = analyze(module, project=project, filename=filename, path=_source_path(filename), text=text)
    info = facts.info
    module = facts.module
    imports = facts.context.imports

    def position(node: cst.CSTNode, where=None):
        # Positions are resolved only when a rule reports: most files have no finding.
        return (where or info).position(node)

    def location(node: cst.CSTNode, where=None) -> tuple:
        span = position(node, where)
        return Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1)

    fix_context = FixContext(module, text, facts, default_tables(), imports.bindings(),
                             info.locator.parents, imports.qualify)
    ctx = CheckContext(line_of=lambda node: position(node).start.line, pin001_min_bytes=settings.pin001_min_bytes,
                       pin007_min_bytes=settings.pin007_min_bytes, pin008_min_bytes=settings.pin008_min_bytes,
                       fixes=fix_context, qualify=imports.qualify, module=info)
    suppressions = Suppressions(text)
    findings: dict = {}
    imports_done: dict = {}  # the edits of the imports fixes add at the top, made once per set
    reproduced: Optional[bool] = None  # whether libcst writes this file back byte for byte, asked once if needed

    def fixable(plan: Optional[Plan]) -> Optional[Plan]:
        # Fixes are written through libcst's code generator: where it does not give this file back
        # exactly, a fix's edits would change more than its own lines, so none is offered.
        nonlocal reproduced
        if plan is not None and reproduced is None:
            reproduced = module.code == text
            if not reproduced:
                result.warning = f"{filename}: no fixes offered: libcst does not write this file back exactly"
        return plan if reproduced else None

    def related_of(report) -> tuple:
        entries = []
        for site in sorted(report.sites, key=lambda s: _site_order(s, position, info)):
            if report.related and site.node is report.node:
                continue  # PIN008: reported at the pinning call, related to its transfer instead
            start, end = location(site.node, site.module)
            entries.append(Related(message=f"buffer allocated here by `{site.api}`", filename=_filename(site.module, info, filename),
                                   location=start, end_location=end))
        for node, where, message in report.related:
            start, end = location(node, where)
            entries.append(Related(message=message, filename=_filename(where, info, filename), location=start,
                                   end_location=end))
        return tuple(entries)

    def origins_of(report) -> tuple:
        """The pinning calls a loop's call reaches in other functions (PIN008 defers to PIN002 there)."""
        found = set()
        for site in report.sites:
            if site.via:
                for origin in site.origins():
                    start, _ = location(origin.node, origin.module)
                    found.add((_filename(origin.module, info, filename), start.row, start.column))
        return tuple(sorted(found))

    def trace_of(report, here: tuple) -> tuple:
        """From the allocation to the finding, when the evidence crosses a function."""
        crossing = report.trace or any(s.via for s in report.sites)
        if not crossing:
            return ()
        steps = []
        def order(s) -> tuple:
            # Two sites at one call (one per buffer it returns) tie on place: the one whose own
            # allocation comes first leads, the same every run.
            return (_site_order(s, position, info), tuple(sorted(order(v) for v in s.via)))
        site = min(report.sites, key=order) if report.sites else None
        chain = []
        while site is not None:
            chain.append(site)
            # The earliest of the sites it came through, by place: not whichever a set gives first
            # (that varied with where the interpreter put the nodes, so the trace did).
            site = min(site.via, key=order) if site.via else None
        for depth, site in enumerate(reversed(chain)):
            start, end = location(site.node, site.module)
            if depth == 0:
                message = f"allocated here by `{site.api}`"
            elif site.variant == "call-inside":
                message = f"allocated inside `{site.api}`, which drops it"
            else:
                message = f"returned by `{site.api}`"
            steps.append(Related(message, _filename(site.module, info, filename), start, end))
        if report.trace:
            name = report.trace[0].function.rsplit(".", 1)[-1] or "a function"
            steps.append(Related(f"passed to `{name}` here", filename, here[0], here[1]))
            for step in report.trace:
                start, end = location(step.node, step.module)
                steps.append(Related(step.message, _filename(step.module, info, filename), start, end))
        return tuple(steps)

    reached: set = set()
    for rule, report, span in _first_of_each_mistake(rules, facts, ctx, position, info):
        rows = (span.start.line, span.end.line)
        if rule.code == "PIN002":
            reached.update(origins_of(report))  # (a PIN002 suppressed here still reports the pinning)
        if not settings.ignore_noqa and suppressions.suppressed(rule.code, rows):
            continue
        here = (Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1))
        plan = fixable(report.fix)
        finding = Finding(
            code=rule.code, message=report.message, filename=filename, location=here[0], end_location=here[1],
            fix=_rendered(module, text, plan, settings.render_fixes, imports_done, info.locator), related=related_of(report), url=None,
            trace=trace_of(report, here), plan=plan,
            nbytes=max((s.nbytes for s in report.sites if s.nbytes), default=None),
            direction=report.direction, pooled=any(s.pooled for s in report.sites))
        # One finding per code and place: a copy reached on two paths is still one mistake (but
        # two copies inside the functions one call reaches are two).
        where = (report.trace[-1].module.filename, report.trace[-1].module.position(report.trace[-1].node).start)\
            if report.trace else None
        key = (rule.code, finding.location, where)
        kept = findings.get(key)
        if kept is None or _evidence_order(finding) < _evidence_order(kept):
            # Of two reports of one mistake, the same one every run (which came first depended
            # on set order, so the trace shown varied between runs).
            findings[key] = finding
    result.module = module
    result.reached = tuple(sorted(reached))
    result.dependencies = tuple((str(dep.info.path), dep.info.digest) for dep in project.dependencies(facts.context))
    result.span = lambda node: ((position(node).start.line, position(node).start.column),
                                (position(node).end.line, position(node).end.column))
    return sorted(findings.values(), key=Finding.sort_key)


# Rules whose finding is about a copy and its buffer, wherever it is reached from.
_ONE_PER_COPY_AND_BUFFER = frozenset({"PIN001"})
# Rules whose finding is about a buffer copied again and again, whichever copy of a callee does it.
_ONE_PER_CALL_AND_BUFFER = frozenset({"PIN007"})


def _first_of_each_mistake(rules, facts, ctx, position, info) -> list:
    """Every rule's reports with their spans, in rule order; a copy inside a function of the
    project reached from several calls of one function with the same buffer (``pf.next()`` at each
    step of a loop and again before it, a prefetcher's constructor and its ``next``) is reported
    once, at the first of those calls: the mistake is the one buffer at the one copy, the trace
    shows the path, and one ``noqa`` there silences it. Calls that pass other buffers are other
    mistakes and keep their own reports, and so do the calls of other functions."""
    out = []
    first: dict = {}
    at_call: dict = {}  # PIN007 through a call: (place, buffers) -> [index in out, copies]
    for rule in rules:
        for report in rule.check(facts, ctx):
            span = position(report.node)
            key = None
            grouped = rule.code in _ONE_PER_CALL_AND_BUFFER or rule.code in _ONE_PER_COPY_AND_BUFFER
            origins = tuple(sorted(_site_order(o, position, info) for s in report.sites for o in s.origins())) \
                if grouped and report.trace and report.sites else ()
            if rule.code in _ONE_PER_CALL_AND_BUFFER and origins:
                # A helper whose loop copies the caller's buffer at several places (up, back, to
                # three kernels' inputs): one mistake at the call, one buffer to pin.
                group = (rule.code, span.start.line, span.start.column, origins)
                if group in at_call:
                    at_call[group][1].append(report)
                    continue
                at_call[group] = [len(out), []]
            if rule.code in _ONE_PER_COPY_AND_BUFFER and origins:
                last = report.trace[-1]
                key = (rule.code, report.scope, last.module.filename, last.module.position(last.node).start,
                       report.direction, origins)
                place = (span.start.line, span.start.column)
                if key in first and first[key][0] <= place:
                    continue
                if key in first:
                    out[first[key][1]] = None
                first[key] = (place, len(out))
            out.append((rule, report, span))
    for index, others in at_call.values():
        if others and out[index] is not None:
            rule, report, span = out[index]
            more = f" (and {len(others)} more cop{'y' if len(others) == 1 else 'ies'} of it through this call)"
            # Where the others are, as related locations: the last step of each one's path.
            also = tuple((other.trace[-1].node, other.trace[-1].module, "also " + other.trace[-1].message)
                         for other in others)
            out[index] = (rule, replace(report, message=report.message + more, related=report.related + also), span)
    return [entry for entry in out if entry is not None]


def _evidence_order(finding: Finding) -> tuple:
    def places(entries) -> tuple:
        return tuple((r.filename, r.location.row, r.location.column, r.message) for r in entries)
    return (finding.message, places(finding.trace), places(finding.related))


def _site_order(site, position, info) -> tuple:
    where = site.module or info
    span = where.position(site.node)
    return (where is not info, getattr(where, "filename", ""), span.start.line, span.start.column, site.api)


def _filename(module, info, filename: str) -> str:
    return filename if module is None or module is info else module.filename


def _rendered(module: cst.Module, text: str, plan: Optional[Plan], with_edits: bool,
              imports_done: dict, locator=None) -> Optional[Fix]:
    """The plan as ruff-style edits: applied alone to the top-level statements it touches (through
    the module's ``locator``), then diffed against their text. Text output (which shows only whether a
    fix exists) skips it."""
    if plan is None:
        return None
    if not with_edits:
        return Fix(plan.applicability, plan.message, ())
    try:
        edits = plan_edits(module, text, plan, imports_done, locator)
    except Exception:  # noqa: BLE001 - a plan that cannot be rendered is offered as no fix at all
        return None
    return Fix(plan.applicability, plan.message, edits)


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
