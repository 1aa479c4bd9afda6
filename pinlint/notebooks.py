"""Jupyter notebooks: the code cells are linted as one program (cells run in order and share names),
findings name their cell and the line in it, and fixes are written back into the cells, leaving
outputs, metadata and the JSON layout as they were."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from .engine import fix_text, lint_text, names_gpu_library
from .fixes import unified_diff, write_atomically
from .model import Finding, Location

_MARKER = "# %%pinlint-cell {index}%%"
_MARKER_RE = re.compile(r"^# %%pinlint-cell (\d+)%%$")
_MAGIC_RE = re.compile(r"^\s*([%!]|\?|.*\?$)")
_MAGIC_TOKEN = "# %%pinlint-magic {index}%%"
_MAGIC_TOKEN_RE = re.compile(r"^(\s*)# %%pinlint-magic (\d+)%%$")
_PYTHON_CELL_MAGICS = frozenset({"%%time", "%%timeit", "%%capture", "%%prun"})


@dataclass
class Program:
    """The code cells joined into one Python text, and how to map it back."""

    text: str
    cells: list            # indices (in the notebook) of the code cells, in order
    starts: list           # first line (1-based) of each cell's code in ``text``
    magics: list           # original magic lines, by token index

    def locate(self, row: int) -> tuple:
        """(cell index in the notebook, 1-based line within the cell) of a program row."""
        position = max((i for i, start in enumerate(self.starts) if start <= row), default=0)
        return self.cells[position], row - self.starts[position] + 1


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def to_program(notebook: dict) -> Program:
    lines: list = []
    cells, starts, magics = [], [], []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        first = _source(cell).lstrip().split("\n", 1)[0]
        if first.startswith("%%") and first.split()[0] not in _PYTHON_CELL_MAGICS:
            continue  # %%bash, %%writefile...: not Python
        cells.append(index)
        lines.append(_MARKER.format(index=index))
        starts.append(len(lines) + 1)
        for line in _source(cell).split("\n"):
            if _MAGIC_RE.match(line):
                indent = line[:len(line) - len(line.lstrip())]
                lines.append(indent + _MAGIC_TOKEN.format(index=len(magics)))
                magics.append(line)
            else:
                lines.append(line)
    return Program("\n".join(lines) + "\n", cells, starts, magics)


def from_program(text: str, program: Program, notebook: dict) -> dict:
    """Split a (fixed) program back into its cells; magic lines come back as they were."""
    pieces: dict = {}
    current: Optional[int] = None
    for line in (text[:-1] if text.endswith("\n") else text).split("\n"):
        marker = _MARKER_RE.match(line)
        if marker:
            current = int(marker.group(1))
            pieces[current] = []
            continue
        token = _MAGIC_TOKEN_RE.match(line)
        if token:
            line = program.magics[int(token.group(2))]
        if current is not None:
            pieces[current].append(line)
    updated = json.loads(json.dumps(notebook))
    for index, cell_lines in pieces.items():
        cell = updated["cells"][index]
        code = "\n".join(cell_lines)
        original = notebook["cells"][index].get("source", "")
        if isinstance(original, list):
            cell["source"] = code.splitlines(keepends=True)
        else:
            cell["source"] = code
    return updated


def _dump(notebook: dict, original_text: str) -> str:
    """JSON as Jupyter writes it, with the original file's indentation."""
    match = re.search(r"\n( +)\"", original_text)
    indent = len(match.group(1)) if match else 1
    text = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return text + ("\n" if original_text.endswith("\n") else "")


def _relocate(finding: Finding, program: Program) -> Finding:
    cell, row = program.locate(finding.location.row)
    _, end_row = program.locate(finding.end_location.row)
    related = tuple(replace(r, location=Location(program.locate(r.location.row)[1], r.location.column),
                            end_location=Location(program.locate(r.end_location.row)[1], r.end_location.column))
                    for r in finding.related)
    # Fix edits are written against the joined program; in a notebook the fix applies through `--fix`.
    fix = None if finding.fix is None else replace(finding.fix, edits=())

    def cell_line(match) -> str:
        at_cell, at_row = program.locate(int(match.group(1)))
        return f"at cell {at_cell + 1} line {at_row}"

    message = re.sub(r"at line (\d+)", cell_line, finding.message)
    return replace(finding, message=message, location=Location(row, finding.location.column),
                   end_location=Location(end_row, finding.end_location.column), related=related, cell=cell + 1,
                   fix=fix)


def process_notebook(job, data: bytes):
    from .runner import DIFF, FIX, JobResult, LINT
    if not names_gpu_library(data):
        return JobResult()
    try:
        text = data.decode("utf-8-sig")
        notebook = json.loads(text)
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise ValueError("no cells")
    except (UnicodeDecodeError, ValueError) as exc:
        location = Location(1, 1)
        return JobResult(findings=[Finding("PIN000", f"Notebook is not valid JSON: {exc}", job.name, location,
                                           location)])
    program = to_program(notebook)
    if job.mode == LINT or job.mode not in (FIX, DIFF):
        result = lint_text(program.text, job.name, job.settings)
        return JobResult(findings=[_relocate(f, program) for f in result.findings],
                         errors=[result.error] if result.error else [])
    outcome = fix_text(program.text, job.name, job.settings, job.unsafe)
    findings = [_relocate(f, program) for f in (outcome.result.findings if outcome.result else [])]
    report = JobResult(findings=findings, errors=[outcome.error] if outcome.error else [])
    if outcome.text == program.text:
        return report
    new_text = _dump(from_program(outcome.text, program, notebook), text)
    report.applied, report.changed, report.fixed = outcome.applied, 1, outcome.fixed
    if job.mode == DIFF:
        report.diff = unified_diff(text, new_text, job.name)
        return report
    try:
        write_atomically(Path(job.path), (b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b"")
                         + new_text.encode("utf-8"), expected=data)
    except OSError as exc:
        return JobResult(findings=findings, errors=[f"{job.name}: could not write the fixed notebook ({exc})"])
    return report
