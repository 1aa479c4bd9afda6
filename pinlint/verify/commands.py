"""The ``pinlint verify`` command: checks for a GPU, runs the harness, writes the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

import typer

from ..apitables import rules_dir
from ..engine import lint_bytes
from ..settings import Settings
from . import harness, report
from .verdict import CONFIRMED, NOT_REPRODUCED

EXIT_OK, EXIT_REFUTED, EXIT_ERROR = 0, 1, 2
_PROBE = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"


def gpu_problem() -> Optional[str]:
    """None when CuPy sees a CUDA device (asked in a child process, so this one stays CUDA-free)."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "probing for a CUDA device timed out"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        if "ModuleNotFoundError" in last:
            return 'CuPy is not installed (pip install "cuda-pinlint[gpu]")'
        return f"no CUDA device is usable ({last[:160]})"
    if done.stdout.strip() in ("", "0"):
        return "no CUDA device is visible"
    return None


def bundled_fixtures() -> Path:
    for candidate in (Path(__file__).resolve().parents[2] / "fixtures", rules_dir().parent / "fixtures"):
        if candidate.is_dir():
            return candidate
    return Path("fixtures")


def _error(message: str) -> int:
    typer.echo(f"pinlint: error: {message}", err=True)
    return EXIT_ERROR


def run_verify(paths, output_format, plot, repeats, warmup, sizes, timeout, estimate, default_bytes,
               processes: int = 2, recorder: Optional[bool] = None) -> int:
    """``recorder``: None uses the CUPTI recorder where it is installed, True requires it, False
    times whole runs only."""
    if output_format not in ("text", "json", "markdown"):
        return _error(f"--format must be text, json or markdown, not {output_format!r}")
    if sizes not in ("min", "max", "all"):
        return _error(f"--sizes must be min, max or all, not {sizes!r}")
    problem = gpu_problem()
    if problem is not None:
        return _error(f"pinlint verify needs a CUDA GPU: {problem}")
    if estimate is not None:
        return run_estimate(Path(estimate), repeats, default_bytes, output_format)
    available = harness.recorder_available()
    if recorder and not available:
        return _error('--recorder needs CUPTI (pip install "cuda-pinlint[trace]")')
    record = available if recorder is None else recorder
    fixtures = harness.discover_fixtures(paths or [str(bundled_fixtures())])
    if not fixtures:
        return _error("no fixtures found (a fixture starts with '# pinlint-expect: PINxxx')")

    def progress(row) -> None:
        # The figures too: a run stopped before the table is written still leaves its numbers here.
        detail = f" ({row.verdict.detail})" if row.verdict.detail else ""
        typer.echo(f"  {row.code} {row.fixture.path.name}: {row.verdict.verdict}{detail}", err=True)

    rows = harness.verify(fixtures, repeats, warmup, sizes, timeout, progress, processes, record)
    writer = {"text": report.write_table, "json": report.write_json, "markdown": report.write_markdown}[output_format]
    writer(rows, sys.stdout)
    if plot:
        try:
            report.write_plot(rows, plot)
        except ImportError:
            return _error('--plot needs matplotlib (pip install "cuda-pinlint[plot]")')
    return EXIT_REFUTED if any(failed(row) for row in rows) else EXIT_OK


def failed(row) -> bool:
    """A refuted claim, or a fixture that could not be run for a reason other than a missing library."""
    if row.verdict.refuted:
        return True
    return row.verdict.verdict not in (CONFIRMED, NOT_REPRODUCED) and "not installed" not in row.verdict.detail


def run_estimate(path: Path, repeats: int, default_bytes: int, output_format: str) -> int:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _error(f"{path}: {exc.strerror or exc}")
    findings = [f for f in lint_bytes(data, str(path), Settings()).findings if f.code != "PIN000"]
    if not findings:
        typer.echo("No findings: nothing to estimate.")
        return EXIT_OK
    results = []
    for finding in findings:
        nbytes = finding.nbytes or default_bytes
        command = [sys.executable, "-m", "pinlint.verify.micro", finding.code, finding.direction or "h2d",
                   str(nbytes), str(repeats)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        try:
            measured = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            measured = {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:200]}
        measured.update(code=finding.code, row=finding.location.row, assumed_size=finding.nbytes is None,
                        nbytes=nbytes)
        results.append(measured)
    if output_format == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    for item in results:
        size = f"{item['nbytes'] / (1 << 20):.1f} MiB" + (" (assumed: not a constant in the code)"
                                                          if item["assumed_size"] else "")
        where = f"{path}:{item['row']}: {item['code']}"
        if "error" in item:
            typer.echo(f"{where} error: {item['error']}")
        elif item.get("metric") == "none":
            typer.echo(f"{where} {item['note']}")
        else:
            typer.echo(f"{where} {item['metric']} at {size}: {item['bad']:.2f} {item['unit']} as written, "
                       f"{item['fixed']:.2f} {item['unit']} fixed ({item['bad'] / max(item['fixed'], 1e-9):.1f}x)")
    return EXIT_OK
