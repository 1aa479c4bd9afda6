"""``pinlint server``: a Language Server Protocol server over stdio, built on pygls (>= 2).

What an editor gets:

* diagnostics for every open Python document, on open, change and save: source ``pinlint``, the
  rule code, Warning (Error for ``PIN000``, a file that does not parse), the allocation site(s) as
  related information, the rule's documentation as the code description, and
  ``data = {"fix": {"applicability", "message"} | None}``;
* quick fixes for the findings that carry one: ``pinlint: <fix message> (safe)`` of kind
  ``quickfix`` (preferred), and ``pinlint: <fix message> (unsafe)`` of kind
  ``quickfix.pinlint.unsafe`` (never preferred, so it is never applied automatically);
* ``pinlint: fix all safe fixes`` of kind ``source.fixAll.pinlint`` (a sub-kind of ``source.fixAll``,
  so ``"editor.codeActionsOnSave": {"source.fixAll": "explicit"}`` runs it): the whole document
  replaced by ``fix_text(..., unsafe=False)``, computed lazily through ``codeAction/resolve`` where
  the client supports it.

Settings are resolved as ``pinlint check`` resolves them for that file: the nearest ``pinlint.toml``
or ``pyproject.toml`` with ``[tool.pinlint]`` from the document's folder upwards, its
``per-file-ignores`` applied; documents that are not files (``untitled:``) get the defaults. A
configuration error is logged and shown (once per document while it lasts), and the defaults are used
until it is fixed. As on the command line, a document that names no GPU library (``cuda``, ``cupy``,
``torch``) cannot have a finding and is not parsed, so its syntax errors are left to other tools.

Nothing a document contains may take the server down: an internal error is logged through
``window/logMessage`` and the document gets an empty diagnostics list.

pygls is imported lazily, in :func:`serve`, so ``import pinlint.server`` works without it.
"""

from __future__ import annotations

import bisect
import re
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from . import __version__
from .config import Config, find_config, load_config
from .engine import fix_text, lint_text, names_gpu_library, reaches_gpu_code
from .fixes import applicable
from .model import Edit, Finding
from .settings import Settings, SettingsError, resolve_selection, thresholds_of

SOURCE = "pinlint"
SAFE_KIND = "quickfix"
UNSAFE_KIND = "quickfix.pinlint.unsafe"
FIX_ALL_KIND = "source.fixAll.pinlint"
FIX_ALL_TITLE = "pinlint: fix all safe fixes"
MISSING_PYGLS = "pinlint server needs pygls: pip install 'cuda-pinlint[lsp]'"
PYTHON_SUFFIXES = (".py", ".pyi")
PYTHON_LANGUAGES = ("python", "")

_NEWLINE = re.compile(r"\r\n|\r|\n")


# ------------------------------------------------------------------------------------ positions
def _units(text: str, encoding: str) -> int:
    """Length of ``text`` in the code units of an LSP position encoding (UTF-16 unless agreed)."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


Position = tuple  # (line, character): 0-based, character in the encoding's code units
Span = tuple      # (start Position, end Position)


class TextIndex:
    """Turns pinlint's positions in one text into LSP positions.

    Findings and fix edits carry 1-based rows of lines ending at ``\\n``, ``\\r\\n`` or ``\\r`` (the
    lines LSP counts; not ``str.splitlines``' lines, which also break at form feeds and other
    separators) and 1-based columns in code points; an edit's end may be one row past the last line.
    Both go through a character offset; LSP positions are 0-based with columns in the code units of
    the negotiated position encoding. Positions beyond a line or the text are clamped to it.
    """

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self._starts = [0] + [match.end() for match in _NEWLINE.finditer(text)]

    def _line_end(self, line: int) -> int:
        """Offset of the end of a line's content (before its terminator)."""
        if line + 1 >= len(self._starts):
            return len(self.text)
        end = self._starts[line + 1]
        return end - 2 if self.text.startswith("\r\n", end - 2) else end - 1

    def position_at(self, offset: int) -> Position:
        offset = min(max(offset, 0), len(self.text))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        return line, _units(self.text[start:min(offset, self._line_end(line))], self.encoding)

    def offset_of(self, row: int, column: int) -> int:
        """Offset of a finding position (1-based libcst row and code-point column)."""
        line = min(max(row - 1, 0), len(self._starts) - 1)
        start = self._starts[line]
        return min(start + max(column - 1, 0), self._line_end(line))

    def position(self, row: int, column: int) -> Position:
        return self.position_at(self.offset_of(row, column))

    def span(self, location, end_location) -> Span:
        start = self.position(location.row, location.column)
        end = self.position(end_location.row, end_location.column)
        return start, max(start, end)

    def _edit_offset(self, row: int, column: int) -> int:
        index = row - 1
        if index < 0:
            return 0
        if index >= len(self._starts):
            return len(self.text)
        return min(self._starts[index] + max(column - 1, 0), len(self.text))

    def edit_span(self, edit: Edit) -> Span:
        start = self._edit_offset(edit.location.row, edit.location.column)
        end = max(start, self._edit_offset(edit.end_location.row, edit.end_location.column))
        return self.position_at(start), self.position_at(end)

    def whole(self) -> Span:
        return (0, 0), self.position_at(len(self.text))


def overlaps(a: Span, b: Span) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


# ----------------------------------------------------------------------------------- documents
def uri_to_path(uri: str) -> Optional[Path]:
    """The file a ``file:`` URI names; None for other schemes (``untitled:``, ...)."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file":
        return None
    path = url2pathname(unquote(parsed.path))
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"  # a UNC path
    return Path(path) if path else None


def is_python(uri: str, language_id: Optional[str]) -> bool:
    if (language_id or "") in PYTHON_LANGUAGES:
        return True
    path = urlparse(uri).path
    return path.endswith(PYTHON_SUFFIXES)


class SettingsResolver:
    """Settings for a document as ``pinlint check`` resolves them for that file; configurations are
    cached per file until it changes on disk."""

    def __init__(self) -> None:
        self._configs: dict = {}

    def _load(self, where: Optional[Path]) -> Config:
        if where is None:
            return load_config(None)
        try:
            info = where.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        cached = self._configs.get(where)
        if cached is not None and stamp is not None and cached[0] == stamp:
            return cached[1]
        config = load_config(where)
        self._configs[where] = (stamp, config)
        return config

    def resolve(self, path: Optional[Path]) -> tuple:
        """(settings, problem): ``problem`` is a message when the configuration could not be used."""
        if path is None:
            return Settings(), None
        try:
            config = self._load(find_config(path))
            chosen = resolve_selection(config.select, list(config.ignore), list(config.extend_select))
            settings = Settings(select=chosen, **thresholds_of(config))
            ignored = config.ignored_codes(str(path))
        except (SettingsError, OSError) as exc:
            return Settings(), f"pinlint: configuration error: {exc}; using the default settings"
        if ignored:
            settings = replace(settings, select=settings.select - ignored)
        return settings, None


@dataclass
class Analysis:
    """One version of one document and its findings."""

    uri: str
    version: Optional[int]
    text: str
    filename: str
    settings: Settings
    index: TextIndex
    findings: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # (level, message): "error" / "warning" / "info"

    def span(self, finding: Finding) -> Span:
        return self.index.span(finding.location, finding.end_location)

    @property
    def has_safe_fix(self) -> bool:
        return any(applicable(f.plan, False) for f in self.findings)


def analyse(uri: str, text: str, version: Optional[int], resolver: SettingsResolver,
            encoding: str = "utf-16") -> Analysis:
    path = uri_to_path(uri)
    settings, problem = resolver.resolve(path)
    analysis = Analysis(uri, version, text, str(path) if path is not None else uri, settings,
                        TextIndex(text, encoding))
    if problem:
        analysis.problems.append(("error", problem))
    data = text.encode("utf-8", "surrogatepass")
    if not names_gpu_library(data) and not reaches_gpu_code(data, path):
        return analysis  # nothing here, nor in what it imports from the project, can report
    result = lint_text(text, analysis.filename, settings)
    analysis.findings = list(result.findings)
    if result.error:
        analysis.problems.append(("warning", f"pinlint: {result.error}"))
    if result.warning:
        analysis.problems.append(("info", f"pinlint: {result.warning}"))
    return analysis


def fix_all(analysis: Analysis) -> tuple:
    """(fixed text or None when nothing changes, error message or None)."""
    outcome = fix_text(analysis.text, analysis.filename, analysis.settings, unsafe=False)
    return (outcome.text if outcome.text != analysis.text else None), outcome.error


def rule_doc_uri(code: str) -> Optional[str]:
    try:
        from .apitables import rules_dir
        path = rules_dir() / f"{code}.md"
        return path.resolve().as_uri() if path.is_file() else None
    except Exception:  # noqa: BLE001 - documentation links are a nicety
        return None


# ---------------------------------------------------------------------------------- the server
def _encoding_name(value) -> str:
    value = getattr(value, "value", value)
    return str(value) if value else "utf-16"


def create_server():
    """The pygls ``LanguageServer`` with pinlint's features registered (needs pygls >= 2)."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    server = LanguageServer("pinlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    resolver = SettingsResolver()
    analyses: dict = {}          # uri -> the Analysis last published
    shown: set = set()           # (uri, level, message): problems already reported
    levels = {"error": types.MessageType.Error, "warning": types.MessageType.Warning,
              "info": types.MessageType.Info}

    def log(level: str, message: str) -> None:
        try:
            server.window_log_message(types.LogMessageParams(type=levels[level], message=message))
        except Exception:  # noqa: BLE001 - the client is gone; nothing else to tell
            pass

    def internal_error(what: str) -> None:
        log("error", f"pinlint: internal error {what}:\n{traceback.format_exc()}")

    def report(analysis: Analysis) -> None:
        """Log a document's problems (and show errors) once while they last, not on every keystroke."""
        current_problems = {(analysis.uri, level, message) for level, message in analysis.problems}
        shown.difference_update({key for key in shown if key[0] == analysis.uri} - current_problems)
        for key in sorted(current_problems - shown):
            shown.add(key)
            _, level, message = key
            log(level, message)
            if level == "error":
                try:
                    server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                                       message=message))
                except Exception:  # noqa: BLE001
                    pass

    def encoding() -> str:
        return _encoding_name(server.workspace.position_encoding)

    def capability(*names, default=None):
        value = server.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return default
        return value

    def lsp_range(span: Span) -> types.Range:
        (l1, c1), (l2, c2) = span
        return types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l2, character=c2))

    def diagnostic(analysis: Analysis, finding: Finding) -> types.Diagnostic:
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=analysis.uri if site.filename == analysis.filename else Path(site.filename).resolve().as_uri(),
                    range=lsp_range(analysis.index.span(site.location, site.end_location))),
                message=site.message)
            for site in finding.related]
        href = rule_doc_uri(finding.code)
        fix = finding.fix
        return types.Diagnostic(
            range=lsp_range(analysis.span(finding)),
            message=finding.message,
            severity=types.DiagnosticSeverity.Error if finding.code == "PIN000" else types.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source=SOURCE,
            related_information=related or None,
            data={"fix": {"applicability": fix.applicability, "message": fix.message} if fix else None},
        )

    def workspace_edit(uri: str, version: Optional[int], edits: list) -> types.WorkspaceEdit:
        if capability("workspace", "workspace_edit", "document_changes", default=False):
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def current(uri: str) -> Optional[Analysis]:
        """The analysis of the document as it is now (re-linted when the last one is stale)."""
        document = server.workspace.get_text_document(uri)
        cached = analyses.get(uri)
        if cached is not None and cached.version == document.version and cached.text == document.source:
            return cached
        analysis = analyse(uri, document.source, document.version, resolver, encoding())
        report(analysis)
        analyses[uri] = analysis
        return analysis

    def lint_and_publish(uri: str) -> None:
        diagnostics: list = []
        version = None
        try:
            document = server.workspace.get_text_document(uri)
            version = document.version
            if is_python(uri, document.language_id):
                analysis = analyse(uri, document.source, version, resolver, encoding())
                analyses[uri] = analysis
                report(analysis)
                diagnostics = [diagnostic(analysis, finding) for finding in analysis.findings]
        except Exception:  # noqa: BLE001 - never crash on a document
            analyses.pop(uri, None)
            internal_error(f"while checking {uri}")
            diagnostics = []
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        lint_and_publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        lint_and_publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        lint_and_publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        analyses.pop(params.text_document.uri, None)
        shown.difference_update({key for key in shown if key[0] == params.text_document.uri})
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    def fix_all_edit(analysis: Analysis) -> Optional[types.WorkspaceEdit]:
        fixed, error = fix_all(analysis)
        if error:
            log("warning", f"pinlint: {error}")
        if fixed is None:
            return None
        return workspace_edit(analysis.uri, analysis.version,
                              [types.TextEdit(range=lsp_range(analysis.index.whole()), new_text=fixed)])

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, UNSAFE_KIND, FIX_ALL_KIND], resolve_provider=True))
    def code_action(params: types.CodeActionParams):
        try:
            return code_actions(params)
        except Exception:  # noqa: BLE001
            internal_error(f"while computing code actions for {params.text_document.uri}")
            return None

    def code_actions(params: types.CodeActionParams) -> Optional[list]:
        uri = params.text_document.uri
        document = server.workspace.get_text_document(uri)
        if not is_python(uri, document.language_id):
            return None
        analysis = current(uri)
        only = [str(getattr(kind, "value", kind)) for kind in (params.context.only or [])]

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(k + ".") for k in only)

        requested = ((params.range.start.line, params.range.start.character),
                     (params.range.end.line, params.range.end.character))
        in_context = {(d.code, (d.range.start.line, d.range.start.character), (d.range.end.line, d.range.end.character))
                      for d in params.context.diagnostics if d.source == SOURCE}
        actions: dict = {}
        for finding in analysis.findings:
            fix = finding.fix
            if fix is None or not fix.edits or fix.applicability not in ("safe", "unsafe"):
                continue
            span = analysis.span(finding)
            if not overlaps(span, requested) and (finding.code, *span) not in in_context:
                continue
            safe = fix.applicability == "safe"
            kind = SAFE_KIND if safe else UNSAFE_KIND
            if not wanted(kind):
                continue
            edits = [types.TextEdit(range=lsp_range(analysis.index.edit_span(edit)), new_text=edit.content)
                     for edit in fix.edits]
            title = f"pinlint: {fix.message} ({fix.applicability})"
            key = (title, tuple((e.range.start.line, e.range.start.character, e.range.end.line,
                                 e.range.end.character, e.new_text) for e in edits))
            if key in actions:  # one fix for several findings (PIN001 and PIN007 at one allocation)
                actions[key].diagnostics.append(diagnostic(analysis, finding))
                continue
            actions[key] = types.CodeAction(
                title=title, kind=kind, diagnostics=[diagnostic(analysis, finding)], is_preferred=safe,
                edit=workspace_edit(uri, analysis.version, edits))
        result = list(actions.values())
        if wanted(FIX_ALL_KIND) and analysis.has_safe_fix:
            action = types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND,
                                      data={"uri": uri, "version": analysis.version})
            lazy = "edit" in (capability("text_document", "code_action", "resolve_support", "properties",
                                         default=()) or ()) \
                and capability("text_document", "code_action", "data_support", default=False)
            if not lazy:
                action.edit = fix_all_edit(analysis)
            if lazy or action.edit is not None:
                result.append(action)
        return result

    @server.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        if action.title != FIX_ALL_TITLE or not isinstance(uri, str) or action.edit is not None:
            return action
        try:
            action.edit = fix_all_edit(current(uri))
        except Exception:  # noqa: BLE001
            internal_error(f"while fixing {uri}")
        return action

    return server


def serve() -> None:
    """Run the language server on stdin/stdout until the client says exit (``pinlint server``)."""
    from .runner import allow_deep_recursion
    allow_deep_recursion()
    try:
        import lsprotocol.types  # noqa: F401
        import pygls
    except ImportError:
        print(MISSING_PYGLS, file=sys.stderr)
        sys.exit(2)
    try:
        import pygls.lsp.server  # noqa: F401 - pygls 2 API
    except ImportError:
        try:
            from importlib.metadata import version
            found = version("pygls")
        except Exception:  # noqa: BLE001
            found = "an older version"
        print(f"{MISSING_PYGLS} (pygls >= 2 is needed, found {found})", file=sys.stderr)
        sys.exit(2)
    server = create_server()
    # stdout carries the protocol: anything else printed by accident must not corrupt it.
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    server.start_io(stdin, stdout)
    sys.exit(0 if getattr(server.protocol, "_shutdown", True) else 1)
