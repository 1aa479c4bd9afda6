"""The ``pinlint trace`` command: preflight, run, observe, optionally check, report, exit code.

Exit codes: 0 nothing observed (and, with ``--check``, nothing contradicted or missed); 1 a problem
observed, or a static finding contradicted or missed; 2 no GPU, no CUPTI, a program that could not
start, did not end normally or exited non-zero, or a bad option (one line on stderr).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif")


def _error(message: str) -> int:
    print(f"pinlint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _warning(message: str) -> None:
    print(f"pinlint: warning: {message}", file=sys.stderr)


def run_trace(args: list, check: bool = False, output_format: str = "text", output_file: Optional[str] = None,
              plot: Optional[str] = None, kernels: bool = False, min_repeats: int = 3) -> int:
    from .session import TraceError, preflight, program_command, run

    if output_format not in FORMATS:
        return _error(f"--format must be one of {', '.join(FORMATS)}, not {output_format!r}")
    if plot is not None and not _has_matplotlib():
        return _error('--plot needs matplotlib (pip install "cuda-pinlint[plot]")')
    try:
        command = program_command(list(args))
        config = _config()
    except (TraceError, ValueError) as exc:
        return _error(str(exc))
    problem = preflight()
    if problem is not None:
        return _error(f"pinlint trace needs a CUDA GPU and CUPTI: {problem}")
    try:
        traced = run(command, kernels=kernels)
    except TraceError as exc:
        return _error(str(exc))
    result = analyse(traced, config, check, min_repeats)
    try:
        _write(result, output_format, output_file)
        if plot is not None:
            from .plot import write_plot
            write_plot(result, plot)
    except OSError as exc:
        return _error(f"cannot write {exc.filename or output_file}: {exc.strerror or exc}")
    if traced.exit_code != 0:
        how = f"was ended by signal {-traced.exit_code}" if traced.exit_code < 0 else f"exited with code {traced.exit_code}"
        return _error(f"the program {how}; the report shows what it did until then")
    return EXIT_PROBLEMS if result.failing else EXIT_CLEAN


def analyse(traced, config, check: bool, min_repeats: int):
    """Observations (and the static join) from a finished trace."""
    from .join import join
    from .observe import Thresholds, observe
    from .report import Result

    suppressions = _Suppressions()
    thresholds = Thresholds(min_repeats=min_repeats, min_bytes=config.pin007_min_bytes,
                            pin001_min_bytes=config.pin001_min_bytes, pin008_min_bytes=config.pin008_min_bytes,
                            max_pinned_share=config.pin009_max_share)
    observations = observe(traced.aggregate, thresholds, suppressions, pinned=traced.pinned)
    rows = None
    if check:
        files = files_that_ran(traced)
        rows = join(static_findings(files, config), observations, traced.aggregate, traced.executed, set(files),
                    thresholds)
    return Result(traced, observations, rows)


def files_that_ran(traced) -> list:
    """The user's Python files the program executed (or, without line events, made CUDA calls from)."""
    files = set(traced.executed or ())
    for table in (traced.aggregate.copies, traced.aggregate.allocs):
        for line in table.values():
            if line.site.user:
                files.add(line.site.filename)
            files.update(f for f, _ in line.callers)
    return sorted(f for f in files if f.endswith(".py") and os.path.isfile(f))


def static_findings(files: list, config) -> list:
    from dataclasses import replace

    from ..engine import lint_bytes
    from ..settings import Settings, resolve_selection, thresholds_of

    settings = Settings(select=resolve_selection(config.select, list(config.ignore),
                                                 list(config.extend_select)), **thresholds_of(config))
    findings = []
    for path in files:
        ignored = config.ignored_codes(path)
        file_settings = replace(settings, select=settings.select - ignored) if ignored else settings
        try:
            result = lint_bytes(Path(path).read_bytes(), path, file_settings)
        except OSError as exc:
            _warning(f"{path}: not checked: {exc.strerror or exc}")
            continue
        if result.error:
            _warning(f"{path}: not checked: {result.error}")
        findings.extend(f for f in result.findings if f.code != "PIN000")
    return findings


def _config():
    from ..config import find_config, load_config
    from ..settings import SettingsError

    try:
        return load_config(find_config(Path.cwd()))
    except SettingsError as exc:
        raise ValueError(str(exc)) from None


class _Suppressions:
    """``# noqa`` on an observed line, read once per file."""

    def __init__(self) -> None:
        self._files: dict = {}

    def __call__(self, code: str, site) -> bool:
        from ..suppress import Suppressions
        found = self._files.get(site.filename, False)
        if found is False:
            try:
                found = Suppressions(Path(site.filename).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                found = None
            self._files[site.filename] = found
        return found is not None and found.suppressed(code, [site.line])


def _write(result, output_format: str, output_file: Optional[str]) -> None:
    from .report import WRITERS
    if output_file is None:
        WRITERS[output_format](result, sys.stdout)
        return
    with open(output_file, "w", encoding="utf-8") as handle:
        WRITERS[output_format](result, handle)


def _has_matplotlib() -> bool:
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None
