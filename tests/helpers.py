"""Shared helpers: lint a small inline program and look at what came out.

Programs are written indented inside the tests; ``source`` dedents them and drops the newline after
the opening quotes, so row 1 is the program's first line. Rows and columns are those of that text:
use ``row_of`` / ``col_of`` rather than counting lines by hand.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

from pinlint.engine import FileResult, lint_text
from pinlint.model import Finding
from pinlint.settings import Settings

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
RULES_API = REPO / "rules" / "api"


def source(src: str) -> str:
    """The program as pinlint sees it: dedented, leading blank line removed."""
    return textwrap.dedent(src).lstrip("\n")


def lint(src: str, settings: Optional[Settings] = None) -> FileResult:
    return lint_text(source(src), "t.py", settings or Settings())


def findings(src: str, settings: Optional[Settings] = None) -> list[Finding]:
    result = lint(src, settings)
    assert result.error is None, result.error
    return list(result.findings)


def codes(src: str, settings: Optional[Settings] = None) -> list[str]:
    return [f.code for f in findings(src, settings)]


def only(src: str, code: str, settings: Optional[Settings] = None) -> Finding:
    """The single finding with ``code`` (fails when there are none or several)."""
    found = [f for f in findings(src, settings) if f.code == code]
    assert len(found) == 1, [(f.code, f.location, f.message) for f in findings(src, settings)]
    return found[0]


def rows(src: str, code: str, settings: Optional[Settings] = None) -> list[int]:
    return [f.location.row for f in findings(src, settings) if f.code == code]


def row_of(src: str, needle: str) -> int:
    """1-based row of the only line of the (dedented) program containing ``needle``."""
    lines = source(src).splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if needle in line]
    assert len(hits) == 1, f"{needle!r} occurs on rows {hits}"
    return hits[0]


def col_of(src: str, needle: str) -> int:
    """1-based column where ``needle`` starts on its (only) line."""
    line = source(src).splitlines()[row_of(src, needle) - 1]
    return line.index(needle) + 1


def fixture_expectations() -> list[tuple[Path, frozenset]]:
    """Every fixture with the codes its first line expects (empty for ``none``)."""
    out = []
    for path in sorted(FIXTURES.glob("PIN*/*.py")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# pinlint-expect:"), path
        raw = first.split(":", 1)[1].strip()
        expected = frozenset() if raw == "none" else frozenset(c.strip() for c in raw.split(","))
        out.append((path, expected))
    return out


def copy_kinds(src: str, needle: str) -> set[str]:
    """Memory kinds the analysis gives the host buffer of the copy on the line containing ``needle``.

    Tells "known pinned" from "unknown" (both are silent for PIN001), so a clean result cannot come
    from the analysis having lost track of the buffer. ``{"unknown"}`` when the buffer is not known.
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from pinlint.analysis import analyze

    wrapper = MetadataWrapper(cst.parse_module(source(src)), unsafe_skip_copy=True)
    facts = analyze(wrapper.module)
    positions = wrapper.resolve(PositionProvider)
    row = row_of(src, needle)
    kinds: set = set()
    seen = False
    for event in facts.copies():
        if positions[event.node].start.line == row:
            seen = True
            kinds |= {k.value for k in event.kinds}
            if event.maybe_unknown or not event.sites:
                kinds.add("unknown")
    assert seen, f"no copy event on row {row} ({needle!r})"
    return kinds


# ------------------------------------------------------------------ the command line, on files
# PIN001 at 5:1 (the buffer allocated at 2:5), with a safe fix: `cupyx.zeros_pinned`.
BAD = textwrap.dedent("""\
    import numpy as np, cupy as cp
    h = np.zeros(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d.set(h, stream=s)
    """)


def pinlint(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m pinlint ARGS`` in ``cwd``; never a traceback."""
    proc = subprocess.run([sys.executable, "-m", "pinlint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def pinlint_in_process(cwd: Path, *args: str, input: Optional[bytes] = None,
                       timeout: float = 120) -> subprocess.CompletedProcess:
    """What ``pinlint(cwd, ARGS)`` gives, from pinlint's entry point run in this process: a test of
    the options, configuration or output pays no interpreter start (one subprocess test per concern
    keeps the real process covered). ``timeout`` is accepted for the same signature."""
    import io
    import os

    from pinlint import cli

    def stream(data: bytes = b"") -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="backslashreplace", newline="")

    out, err, stdin = stream(), stream(), stream(input or b"")
    saved = (os.getcwd(), sys.argv, sys.stdout, sys.stderr, sys.stdin)
    os.chdir(cwd)
    sys.argv, sys.stdout, sys.stderr, sys.stdin = ["pinlint", *args], out, err, stdin
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved[0])
        sys.argv, sys.stdout, sys.stderr, sys.stdin = saved[1:]
    texts = []
    for captured in (out, err):
        captured.flush()
        texts.append(captured.buffer.getvalue().decode("utf-8", "backslashreplace"))
    assert "Traceback" not in texts[0] + texts[1], texts[0] + texts[1]
    return subprocess.CompletedProcess(["pinlint", *args], code, texts[0], texts[1])


def write(root: Path, relative: str, text, encoding: str = "utf-8") -> Path:
    """Write text (or bytes) to ``root/relative``, making its folders."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding=encoding)
    return path


def run_in_process(monkeypatch, capsys, cwd: Path, *args: str) -> tuple:
    """(exit code, stdout, stderr) of pinlint's own entry point, in this process (so monkeypatches
    hold); never a traceback."""
    import pytest

    from pinlint import cli

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["pinlint", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return (exited.value.code or 0), out, err


def default_sigint() -> None:
    """For a child that a test stops with SIGINT: a shell runs background jobs with SIGINT ignored, and
    Python keeps an ignored SIGINT ignored, so under `nohup pytest &` the child would never see it."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
