"""Jupyter notebooks: the code cells are linted as one program (cells run in order and share names),
findings name their cell and the line in it, and fixes are written back into the cells, leaving
outputs, metadata and the JSON layout as they were.

Two things here must never be fooled by what a user writes in a cell:
- Cell boundaries in the joined program are comment lines carrying a random token that occurs in no
  cell, so a cell containing ``# %%pinlint-cell 1%%`` (or anything else) is just text.
- IPython syntax (``!ls``, ``files = !ls``, ``%time f()``, ``x?``) is found by IPython's own
  ``TransformerManager`` when IPython is installed, else by a tokenizer-aware stand-in that looks
  only at the start of logical lines (a ``% n`` or ``!= b`` continuing a bracket is Python, and so
  is a ``?`` inside a string). Its lines become IPython's Python equivalent in the program and are
  written back exactly as they were; a fix that would touch them is not applied.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import secrets
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from .engine import fix_text, lint_text, names_gpu_library
from .fixes import unified_diff, write_atomically
from .model import Finding, Location

_PYTHON_CELL_MAGICS = frozenset({"%%time", "%%timeit", "%%capture", "%%prun"})


class NotebookError(ValueError):
    """The file is not a notebook pinlint can read: reported as PIN000 for that file."""


@dataclass
class _Cell:
    index: int                 # in the notebook
    lines: list                # program lines, as put into the joined program
    origin: list               # per program line: the IPython hunk it stands for, or None
    hunks: list                # original lines of each hunk of IPython syntax
    rows: list                 # per program line: the 1-based line in the cell it comes from


@dataclass
class Program:
    """The code cells joined into one Python text, and how to map it back."""

    text: str
    token: str
    cells: list = field(default_factory=list)   # _Cell, in order
    rows: list = field(default_factory=list)    # per program row (0-based): (notebook cell index, line in cell)
    legacy: bool = False                        # read from an nbformat 3 notebook: nothing is written back

    def locate(self, row: int) -> tuple:
        """(cell index in the notebook, 1-based line within the cell) of a program row."""
        if not self.rows:
            return 0, row
        return self.rows[min(max(row, 1), len(self.rows)) - 1]

    def marker(self, position: int) -> str:
        return f"# pinlint-cell-{self.token}-{position}"


# ---------------------------------------------------------------------------- reading the JSON
def read_notebook(data: bytes) -> dict:
    """The notebook, checked to have the shape pinlint reads (NotebookError with the reason if not)."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"Notebook is not UTF-8 text: {exc.reason}")
    except ValueError as exc:
        raise NotebookError(f"Notebook is not valid JSON: {exc}")
    except RecursionError:
        raise NotebookError("Notebook is not valid JSON: nested too deeply to read")
    if isinstance(notebook, dict) and not isinstance(notebook.get("cells"), list):
        notebook = _from_nbformat3(notebook)
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("Notebook has no list of cells")
    for number, cell in enumerate(notebook["cells"], 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type", None), str):
            raise NotebookError(f"Notebook cell {number} is not a cell (an object with a `cell_type`)")
        if cell["cell_type"] == "code":
            source = cell.get("source", "")
            if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
                raise NotebookError(f"Notebook cell {number}: `source` is neither text nor a list of text")
    return notebook


LEGACY = "_pinlint_nbformat3"  # set on the cells read from an nbformat 3 notebook (never written back)


_LEGACY_NOTE = ("{name}: an nbformat 3 notebook: its cells are checked but {what} not written into it "
                "(convert it with `jupyter nbconvert --to notebook --nbformat 4`)")


def _from_nbformat3(notebook: dict) -> dict:
    """An nbformat 3 notebook (before 2015: cells under ``worksheets[].cells``, a code cell's text in
    ``input``) as the cells pinlint reads; fixes and noqa comments are not written back into it, whose
    layout differs. Anything else is returned as it is."""
    worksheets = notebook.get("worksheets")
    if not isinstance(worksheets, list) or not all(isinstance(w, dict) and isinstance(w.get("cells", []), list)
                                                   for w in worksheets):
        return notebook
    cells = []
    for worksheet in worksheets:
        for cell in worksheet.get("cells", []):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                cell = {"cell_type": "code", "source": cell.get("input", "")}
            cells.append(cell)
    return {**notebook, "cells": cells, LEGACY: True}


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# ---------------------------------------------------------------------------- IPython syntax
def _transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except Exception:  # noqa: BLE001 - IPython is optional; any failure to import it means the stand-in
        return None
    return TransformerManager()


_TRANSFORMER: list = []


def to_python(source: str, use_ipython: Optional[bool] = None) -> str:
    """The cell as the Python IPython would run (IPython's own rules, or the stand-in)."""
    source = _automagic(_leading_indent(source))
    if use_ipython is not False:
        if not _TRANSFORMER:
            _TRANSFORMER.append(_transformer())
        manager = _TRANSFORMER[0]
        if manager is not None:
            try:
                return manager.transform_cell(source)
            except Exception:  # noqa: BLE001 - IPython gave up on this cell: the stand-in reads it
                pass
    return _standin(source)


def _leading_indent(source: str) -> str:
    """IPython's ``leading_indent`` clean-up: a cell whose first line is indented runs with that
    indentation taken off every line that starts with it (a snippet pasted from inside a block)."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return source
    indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
    if not indent:
        return source
    return "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines)


# Line magics IPython runs without their `%` (automagic, on by default) that notebooks write bare;
# `ls`, `cat` and friends are its shell aliases, which run the same way.
_AUTOMAGIC = frozenset({"pip", "conda", "mamba", "matplotlib", "load_ext", "reload_ext", "autoreload", "cd",
                        "pwd", "env", "time", "timeit", "run", "who", "whos", "ls", "ll", "mkdir", "rmdir",
                        "cat", "rm", "cp", "mv", "config", "pylab", "xmode", "precision", "reset", "history",
                        "store", "set_env", "pdb", "prun", "sx", "system", "bookmark", "dhist", "popd", "pushd"})


# What follows a name in Python, never a magic's arguments (IPython's automagic leaves such lines
# alone too): `time = f(`, `config.x`, `run(...)`, `time, n = ...`. (`cd ..` and `ls -la` are magics.)
_PYTHON_AFTER_A_NAME = re.compile(r"=(?!=)|[(\[,:;]|\.[A-Za-z_]")


def _automagic(source: str) -> str:
    """A line magic written without its ``%`` (``pip`` or ``conda`` with their arguments) alone on a
    logical line, which Python cannot parse: IPython's automagic runs it as the ``%`` form. A line
    Python parses (``time = 5``, ``cd(x)``) is Python."""
    lines = source.split("\n")
    out: list = []
    pending: list = []
    for line in lines:
        stripped = line.lstrip()
        word = stripped.split(None, 1)[0] if stripped else ""
        if not pending and word in _AUTOMAGIC and stripped[len(word):len(word) + 1] in (" ", "\t", "") and \
                not _PYTHON_AFTER_A_NAME.match(stripped[len(word):].lstrip()) and _complete(stripped + "\n") and \
                not _parses(stripped):
            out.append(line[:len(line) - len(stripped)] + "%" + stripped)
            continue
        pending.append(line)
        if _complete("\n".join(pending) + "\n"):
            out.extend(pending)
            pending = []
    out.extend(pending)
    return "\n".join(out)


def _parses(line: str) -> bool:
    try:
        compile(line, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _complete(text: str) -> bool:
    """The text ends a logical line: not inside brackets, a string or after a backslash."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except tokenize.TokenError as exc:
        return "EOF in multi-line" not in str(exc.args[0] if exc.args else exc)
    except (SyntaxError, IndentationError):
        return True
    return True


def _tokens(text: str) -> Optional[list]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


_QUIET = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)


def _help_request(line: str) -> bool:
    """``obj?`` / ``obj??``: the logical line ends in ``?`` outside any string or comment."""
    stripped = line.rstrip()
    if not stripped.endswith("?"):
        return False
    tokens = _tokens(stripped.rstrip("?") + "\n")
    if not tokens:
        return False
    significant = [t for t in tokens if t.type not in _QUIET]
    return bool(significant) and significant[-1].type not in (tokenize.COMMENT, tokenize.STRING)


def _ipython_assignment(stripped: str) -> Optional[str]:
    """``files = !ls`` / ``t = %timeit f()``: the target, else None."""
    target, equal, value = stripped.partition("=")
    if not equal or not value.lstrip()[:1] in ("!", "%") or value.startswith("="):
        return None
    names = [part.strip() for part in target.split(",")]
    if not all(name.isidentifier() for name in names):
        return None
    return target.strip()


def _standin(source: str) -> str:
    """IPython's escapes (``!``, ``%``, ``?`` at the start of a logical line, ``x = !cmd``, ``x?``)
    replaced by a Python call, line for line; a line continuing a bracket, a string or a backslash
    is never one of them."""
    lines = source.split("\n")
    out: list = []
    pending: list = []       # the lines of an unfinished logical line
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if not pending and stripped[:1] in ("!", "%", "?") or not pending and _ipython_assignment(stripped):
            target = _ipython_assignment(stripped)
            out.append(indent + (f"{target} = get_ipython()" if target else "get_ipython()"))
            while line.rstrip().endswith("\\") and index + 1 < len(lines):  # IPython joins these lines
                index += 1
                line = lines[index]
                out.append("")
            index += 1
            continue
        pending.append(line)
        if _complete("\n".join(pending) + "\n"):
            if len(pending) == 1 and _help_request(line):
                out.append(indent + "get_ipython()")
            else:
                out.extend(pending)
            pending = []
        index += 1
    out.extend(pending)
    return "\n".join(out)


def _split(source: str, use_ipython: Optional[bool]) -> Optional[tuple]:
    """(program lines, origins, hunks, rows) of one cell; None for a cell that is not Python."""
    original = source.split("\n")
    # (Colab puts its form annotations, `# @title ...`, above a cell magic: comments do not count)
    first = next((i for i, line in enumerate(original) if line.strip() and not line.lstrip().startswith("#")), None)
    lines: list = []
    origin: list = []
    hunks: list = []
    rows: list = []
    start = 0
    if first is not None and original[first].lstrip().startswith("%%"):
        if original[first].split()[0] not in _PYTHON_CELL_MAGICS:
            return None  # %%bash, %%writefile...: not Python
        hunks.append(original[:first + 1])  # the magic's line stands in the program as a blank one
        lines.append("")
        origin.append(0)
        rows.append(first + 1)
        start = first + 1
    body = original[start:]
    python = to_python("\n".join(body), use_ipython).split("\n")
    if python[-1:] == [""] and body[-1:] != [""]:
        python.pop()  # IPython ends what it returns with a newline
    matcher = difflib.SequenceMatcher(a=body, b=python, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                lines.append(body[i1 + offset])
                origin.append(None)
                rows.append(start + i1 + offset + 1)
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            # Line for line (a cell IPython dedents, a magic without its `%`): each keeps its own row.
            for offset in range(i2 - i1):
                hunks.append([body[i1 + offset]])
                lines.append(python[j1 + offset])
                origin.append(len(hunks) - 1)
                rows.append(start + i1 + offset + 1)
            continue
        hunks.append(body[i1:i2])
        for line in python[j1:j2] or [""]:
            lines.append(line)
            origin.append(len(hunks) - 1)
            rows.append(start + i1 + 1)
    return lines, origin, hunks, rows


# ---------------------------------------------------------------------------- joining and splitting
def to_program(notebook: dict, use_ipython: Optional[bool] = None) -> Program:
    sources = [_source(c) for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    token = secrets.token_hex(8)
    while any(token in s for s in sources):
        token = secrets.token_hex(8)
    program = Program("", token, legacy=bool(notebook.get(LEGACY)))
    text: list = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code" or not _python_cell(cell):
            continue
        split = _split(_source(cell), use_ipython)
        if split is None:
            continue
        lines, origin, hunks, rows = split
        # The marker and a blank line: what a fix inserts above the cell's first statement goes below
        # them (fixes.py keeps what lies above a blank line apart from the statement), so in this cell.
        text += [program.marker(len(program.cells)), ""]
        program.rows += [(index, 1), (index, 1)]
        program.cells.append(_Cell(index, lines, origin, hunks, rows))
        text += lines
        program.rows += [(index, row) for row in rows]
    program.text = "\n".join(text) + "\n"
    return program


def _python_cell(cell: dict) -> bool:
    """A code cell that VS Code marks as another language (`"metadata": {"vscode": {"languageId":
    "shellscript"}}`: a shell command kept in a notebook) is not Python, as a `%%bash` cell is not."""
    metadata = cell.get("metadata")
    vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = vscode.get("languageId") if isinstance(vscode, dict) else None
    return not isinstance(language, str) or language.lower() in ("python", "ipython")


_SCRIPT_MAGICS = frozenset({"%%writefile", "%%file"})


def scripts(notebook: dict) -> list:
    """The Python scripts a notebook writes with ``%%writefile name.py`` (and runs with ``!python
    name.py``): each one a program of its own, not part of the kernel's, its rows in its cell."""
    found = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        lines = _source(cell).split("\n")
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first is None:
            continue
        head = lines[first].split()
        if head[0] not in _SCRIPT_MAGICS or len(head) < 2 or not head[-1].endswith(".py"):
            continue
        body = lines[first + 1:]
        found.append(Program("\n".join(body) + "\n", "", rows=[(index, first + 2 + i) for i in range(len(body))]))
    return found


def from_program(text: str, program: Program, notebook: dict) -> Optional[dict]:
    """The notebook with its cells' code taken from a (fixed) program; IPython lines come back as
    they were. None when the program no longer maps onto the cells (a marker moved or went, a fix
    touched IPython syntax): then nothing may be written."""
    if notebook.get(LEGACY):
        return None  # an nbformat 3 notebook: its cells are read, not rewritten
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    at = []
    for position in range(len(program.cells)):
        found = [i for i, line in enumerate(lines) if line == program.marker(position)]
        if len(found) != 1 or (at and found[0] <= at[-1]):
            return None
        at.append(found[0])
    if at and any(line.strip() for line in lines[:at[0]]):
        return None  # code above the first cell
    updated = json.loads(json.dumps(notebook))
    for position, cell in enumerate(program.cells):
        end = at[position + 1] if position + 1 < len(at) else len(lines)
        new = lines[at[position] + 1:end]
        if new[:1] == [""]:
            new = new[1:]
        if new == cell.lines:
            continue  # unchanged: the cell keeps its source exactly
        code = _restore(cell, new)
        if code is None:
            return None
        original = notebook["cells"][cell.index].get("source", "")
        updated["cells"][cell.index]["source"] = code.splitlines(keepends=True) if isinstance(original, list) \
            else code
    return updated


def _restore(cell: _Cell, new: list) -> Optional[str]:
    """The cell's source from its fixed program lines: hunks of IPython syntax must come through
    untouched, and are written as they were."""
    out: list = []
    emitted: set = set()
    matcher = difflib.SequenceMatcher(a=cell.lines, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                hunk = cell.origin[i1 + offset]
                if hunk is None:
                    out.append(new[j1 + offset])
                elif hunk not in emitted:
                    emitted.add(hunk)
                    out.extend(cell.hunks[hunk])
            continue
        if any(cell.origin[i] is not None for i in range(i1, i2)):
            return None  # a fix changed a line standing for IPython syntax
        out.extend(new[j1:j2])
    if len(emitted) != len(cell.hunks):
        return None
    return "\n".join(out)


def _written(notebook: dict, original: bytes) -> bytes:
    """The notebook's bytes as the file had them: its indentation, final newline and BOM."""
    bom = b"\xef\xbb\xbf" if original.startswith(b"\xef\xbb\xbf") else b""
    return bom + _dump(notebook, original.decode("utf-8-sig")).encode("utf-8")


def _dump(notebook: dict, original_text: str) -> str:
    """JSON as Jupyter writes it, with the original file's indentation."""
    match = re.search(r"\n( +)\"", original_text)
    indent = len(match.group(1)) if match else 1
    text = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return text + ("\n" if original_text.endswith("\n") else "")


def _relocate(finding: Finding, program: Program) -> Finding:
    cell, row = program.locate(finding.location.row)
    _, end_row = program.locate(finding.end_location.row)

    def in_cells(entry):
        # Locations in this notebook move to their cell; ones in other files stay as they are.
        if entry.filename != finding.filename:
            return entry
        at_cell, at_row = program.locate(entry.location.row)
        return replace(entry, location=Location(at_row, entry.location.column), cell=at_cell + 1,
                       end_location=Location(program.locate(entry.end_location.row)[1], entry.end_location.column))
    related = tuple(in_cells(r) for r in finding.related)
    trace = tuple(in_cells(t) for t in finding.trace)
    # Fix edits are written against the joined program; in a notebook the fix applies through `--fix`.
    fix = None if finding.fix is None or program.legacy else replace(finding.fix, edits=())

    def cell_line(match) -> str:
        at_cell, at_row = program.locate(int(match.group(2)))
        return f"{match.group(1)}cell {at_cell + 1} line {at_row}"

    # "at line 12", a SyntaxError's "on line 12" and a trace's "via `f` (line 12)": lines of the joined
    # program, said in cells.
    message = re.sub(r"(at |on |\()line (\d+)", cell_line, finding.message)
    return replace(finding, message=message, location=Location(row, finding.location.column),
                   end_location=Location(end_row, finding.end_location.column), related=related, trace=trace,
                   cell=cell + 1, fix=fix)


# ---------------------------------------------------------------------------- linting and fixing
@dataclass
class NotebookOutcome:
    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    fixed: Optional[bytes] = None     # the fixed notebook's bytes, when a fix changed it
    applied: int = 0
    fixed_codes: dict = field(default_factory=dict)  # findings fixed per code (for --show-fixes)
    dependencies: tuple = ()          # (path, sha256) of the tree's files the findings rest on (for the cache)


def _python_kernel(notebook: dict) -> bool:
    """Whether the notebook's kernel runs Python: its metadata's ``language_info.name`` or
    ``kernelspec.language``; a notebook that names neither is taken to be Python."""
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        entry = metadata.get(key)
        language = entry.get(field_name) if isinstance(entry, dict) else None
        if isinstance(language, str) and language.strip():
            return language.strip().lower() in ("python", "python3", "python2", "ipython", "ipython3")
    return True


def _unreadable(name: str, error: NotebookError) -> NotebookOutcome:
    location = Location(1, 1)
    return NotebookOutcome(findings=[Finding("PIN000", str(error), name, location, location)])


def check_notebook(data: bytes, name: str, settings, fix: bool = False, unsafe: bool = False) -> NotebookOutcome:
    """Lint (and with ``fix``, fix) a notebook's bytes."""
    try:
        notebook = read_notebook(data)
    except NotebookError as exc:
        return _unreadable(name, exc)
    if not _python_kernel(notebook):
        return NotebookOutcome(findings=[])  # a Bash, R or Julia notebook: not Python to check (as ruff)
    program = to_program(notebook)
    if not fix:
        result = lint_text(program.text, name, settings)
        findings = result.findings
        if any(f.code == "PIN000" for f in findings):
            findings = _around_broken_cells(program, name, settings) or findings
        report = NotebookOutcome([_relocate(f, program) for f in findings],
                                 [result.error] if result.error else [], [result.warning] if result.warning else [],
                                 dependencies=result.dependencies)
        return _with_scripts(report, notebook, name, settings)
    if program.legacy:
        report = check_notebook(data, name, settings)
        if any(f.code != "PIN000" for f in report.findings):
            report.warnings.append(_LEGACY_NOTE.format(name=name, what="fixes are"))
        return report
    outcome = fix_text(program.text, name, settings, unsafe)
    result = outcome.result
    report = NotebookOutcome([_relocate(f, program) for f in (result.findings if result else [])],
                             [outcome.error] if outcome.error else [],
                             [result.warning] if result is not None and result.warning else [])
    report = _with_scripts(report, notebook, name, settings)  # reported; their cells are not rewritten
    if outcome.text == program.text:
        return report
    updated = from_program(outcome.text, program, notebook)
    if updated is None:
        report.errors.append(f"{name}: the fixes could not be mapped back onto the cells; left unchanged")
        return report
    report.fixed = _written(updated, data)
    report.applied = outcome.applied
    report.fixed_codes = getattr(outcome, "fixed", {})
    return report


def _around_broken_cells(program: Program, name: str, settings) -> list:
    """An exercise notebook's placeholder cells (`x = # TODO`) do not parse: each is PIN000 at its
    own error, and the other cells are checked as if those were empty, as running the notebook would
    run them. Empty when no single cell is to blame (a statement spread over cells): the joined
    program's own PIN000 stands then."""
    from .parsing import syntax_error
    lines = program.text.split("\n")
    spans, row = [], 0
    for cell in program.cells:
        row += 2  # the cell's marker and a blank line
        spans.append((row, row + len(cell.lines)))
        row += len(cell.lines)
    broken = [(start, end) for start, end in spans if syntax_error("\n".join(lines[start:end]) + "\n") is not None]
    if not broken:
        return []
    findings = []
    for start, end in broken:
        alone = [line if start <= i < end else "" for i, line in enumerate(lines)]
        findings += [f for f in lint_text("\n".join(alone), name, settings).findings if f.code == "PIN000"]
    rest = ["" if any(start <= i < end for start, end in broken) else line for i, line in enumerate(lines)]
    result = lint_text("\n".join(rest), name, settings)
    if any(f.code == "PIN000" for f in result.findings):
        return []
    # `--fix` leaves a notebook that does not parse as it is: no finding here offers a fix
    return sorted(findings + [replace(f, fix=None) for f in result.findings], key=Finding.sort_key)


def _with_scripts(report: NotebookOutcome, notebook: dict, name: str, settings) -> NotebookOutcome:
    """The findings of the scripts the notebook writes, in their cells, added to the report."""
    dependencies = list(report.dependencies)
    for script in scripts(notebook):
        result = lint_text(script.text, name, settings)
        report.findings.extend(_relocate(f, script) for f in result.findings)
        report.errors.extend([result.error] if result.error else [])
        report.warnings.extend([result.warning] if result.warning else [])
        dependencies.extend(d for d in result.dependencies if d not in dependencies)
    report.findings.sort(key=Finding.sort_key)
    report.dependencies = tuple(dependencies)
    return report


def _imports_gpu_code(data: bytes, path: str) -> bool:
    """A notebook that names no GPU library can still call a sibling module's copying code."""
    from pathlib import Path
    from .engine import reaches_gpu_code
    try:
        program = to_program(read_notebook(data))
    except (NotebookError, RecursionError, ValueError, TypeError):
        return False
    return reaches_gpu_code(program.text.encode("utf-8", "surrogatepass"), Path(path))


def add_noqa_notebook(data: bytes, name: str, settings) -> NotebookOutcome:
    """``--add-noqa`` on a notebook: the comments appended to the lines of its cells that have a
    finding, as in a .py file; the notebook's other bytes (outputs, metadata, IPython lines) as they
    were. A cell where the comments do not map back (a finding on an IPython line) is left alone
    with an error saying so."""
    from .parsing import syntax_error
    from .runner import add_noqa_text
    try:
        notebook = read_notebook(data)
    except NotebookError as exc:
        return _unreadable(name, exc)
    if not _python_kernel(notebook):
        return NotebookOutcome()
    program = to_program(notebook)
    result = lint_text(program.text, name, settings)
    findings = [_relocate(f, program) for f in result.findings]
    if program.legacy:
        return NotebookOutcome(findings, warnings=[_LEGACY_NOTE.format(name=name, what="noqa comments are")]
                               if findings else [])
    text, added = add_noqa_text(program.text, result.findings)
    if not added:
        return NotebookOutcome(findings)
    updated = from_program(text, program, notebook) if syntax_error(text) is None else None
    if updated is None:
        return NotebookOutcome(findings, [f"{name}: the noqa comments could not be mapped onto the cells; left unchanged"])
    return NotebookOutcome(fixed=_written(updated, data), applied=added)


def process_notebook(job, data: bytes):
    from .runner import ADD_NOQA, DIFF, FIX, JobResult
    if not names_gpu_library(data) and not _imports_gpu_code(data, job.path):
        return JobResult()
    if job.mode == ADD_NOQA:
        outcome = add_noqa_notebook(data, job.name, job.settings)
        if outcome.fixed is None:
            return JobResult(findings=outcome.findings, errors=outcome.errors, warnings=outcome.warnings)
        try:
            write_atomically(Path(job.path), outcome.fixed, expected=data)
        except OSError as exc:
            return JobResult(errors=[f"{job.name}: could not write, left unchanged ({exc})"])
        return JobResult(applied=outcome.applied, changed=1)
    fixing = job.mode in (FIX, DIFF)
    outcome = check_notebook(data, job.name, job.settings, fix=fixing, unsafe=job.unsafe)
    report = JobResult(findings=outcome.findings, errors=outcome.errors, warnings=outcome.warnings,
                       dependencies=outcome.dependencies)
    if outcome.fixed is None:
        return report
    report.applied, report.changed, report.fixed = outcome.applied, 1, outcome.fixed_codes
    if job.mode == DIFF:
        report.diff = unified_diff(data.decode("utf-8-sig"), outcome.fixed.decode("utf-8-sig"), job.name)
        return report
    try:
        write_atomically(Path(job.path), outcome.fixed, expected=data)
    except OSError as exc:
        return JobResult(findings=outcome.findings, errors=[f"{job.name}: could not write the fixed notebook ({exc})"])
    return report
