"""The ``pinlint`` command line.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error (a one-line message
on stderr, never a traceback).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .checks import ALL_RULES, RULES_BY_CODE
from .config import Config, find_config, load_config
from .discover import DEFAULT_EXCLUDE, discover
from .engine import fix_text, lint_bytes, read_source
from .runner import ADD_NOQA, DIFF, FIX, LINT, Cache, Job, allow_deep_recursion, default_workers, run_jobs
from .runner import clean as clean_cache
from .report import FORMATS, display_path
from .rule_docs import rule_doc
from .settings import Settings, SettingsError, resolve_selection

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
REPORT_URL = "please report it with the file that triggered it"

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Find and fix host-memory-type mistakes (pageable, pinned, write-combined, mapped) "
                       "in CUDA Python code.")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"
    sarif = "sarif"
    github = "github"


def _error(message: str) -> None:
    typer.echo(f"pinlint: error: {message}", err=True)


def _warning(message: str) -> None:
    typer.echo(f"pinlint: warning: {message}", err=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pinlint {__version__}")
        raise typer.Exit(EXIT_CLEAN)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """pinlint: a linter for host-memory decisions in CUDA Python."""


_PATHS = typer.Argument(None, help="Files or folders to check (default: .).")
_SELECT = typer.Option(None, "--select", help="Codes or prefixes to check (comma-separated).")
_IGNORE = typer.Option(None, "--ignore", help="Codes or prefixes to skip.")
_EXTEND = typer.Option(None, "--extend-select", help="Codes to add to the selection.")
_FORMAT = typer.Option(OutputFormat.text, "--format", help="Output format.")
_EXIT_ZERO = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings.")
_STATISTICS = typer.Option(False, "--statistics", help="Count findings per code (text format).")
_UNSAFE = typer.Option(False, "--unsafe-fixes", help="Also apply (or show) fixes that may change behaviour.")
_DIFF = typer.Option(False, "--diff", help="Print the fixes as a unified diff and change nothing.")
_CONFIG = typer.Option(None, "--config", help="Use this pyproject.toml or pinlint.toml instead of searching.")
_SHOW = typer.Option(False, "--show-settings", help="Print the resolved settings and exit.")
_JOBS = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (default: one per core).")
_NO_CACHE = typer.Option(False, "--no-cache", help="Neither read nor write .pinlint_cache/.")
_ADD_NOQA = typer.Option(False, "--add-noqa", help="Append `# noqa: CODE` to every line with a finding.")
_STDIN = typer.Option(None, "--stdin-filename", help="Read the source from stdin, reporting it under this name.")
_FORCE = typer.Option(False, "--force-exclude", help="Apply excludes to files named on the command line too "
                                                      "(for pre-commit, which names every staged file).")


@app.command()
def check(
    paths: Optional[List[str]] = _PATHS,
    select: Optional[List[str]] = _SELECT,
    ignore: Optional[List[str]] = _IGNORE,
    extend_select: Optional[List[str]] = _EXTEND,
    output_format: OutputFormat = _FORMAT,
    exit_zero: bool = _EXIT_ZERO,
    statistics: bool = _STATISTICS,
    fix: bool = typer.Option(False, "--fix", help="Apply safe fixes (and unsafe ones with --unsafe-fixes)."),
    unsafe_fixes: bool = _UNSAFE,
    diff: bool = _DIFF,
    config: Optional[str] = _CONFIG,
    show_settings: bool = _SHOW,
    force_exclude: bool = _FORCE,
    jobs: int = _JOBS,
    no_cache: bool = _NO_CACHE,
    add_noqa: bool = _ADD_NOQA,
    stdin_filename: Optional[str] = _STDIN,
) -> None:
    """Check files for host-memory mistakes."""
    _run(paths, select, ignore, extend_select, output_format, exit_zero, statistics, fix, unsafe_fixes, diff,
         config, show_settings, force_exclude, jobs, no_cache, add_noqa, stdin_filename)


@app.command(name="fix")
def fix_command(
    paths: Optional[List[str]] = _PATHS,
    select: Optional[List[str]] = _SELECT,
    ignore: Optional[List[str]] = _IGNORE,
    extend_select: Optional[List[str]] = _EXTEND,
    output_format: OutputFormat = _FORMAT,
    exit_zero: bool = _EXIT_ZERO,
    statistics: bool = _STATISTICS,
    unsafe_fixes: bool = _UNSAFE,
    diff: bool = _DIFF,
    config: Optional[str] = _CONFIG,
    show_settings: bool = _SHOW,
    force_exclude: bool = _FORCE,
    jobs: int = _JOBS,
    no_cache: bool = _NO_CACHE,
    add_noqa: bool = _ADD_NOQA,
    stdin_filename: Optional[str] = _STDIN,
) -> None:
    """Apply fixes (the same as `pinlint check --fix`)."""
    _run(paths, select, ignore, extend_select, output_format, exit_zero, statistics, True, unsafe_fixes, diff,
         config, show_settings, force_exclude, jobs, no_cache, add_noqa, stdin_filename)


def _resolve(paths, select, ignore, extend_select, config_file) -> tuple:
    """(config, settings) from the configuration file and the command line (which wins)."""
    if config_file is not None and not Path(config_file).is_file():
        raise SettingsError(f"--config: {config_file}: No such file")
    where = Path(config_file) if config_file else find_config(Path((paths or ["."])[0]))
    config = load_config(where)
    chosen = resolve_selection(list(select) if select else list(config.select),
                               [*config.ignore, *(ignore or [])], [*config.extend_select, *(extend_select or [])])
    return config, Settings(select=chosen, pin007_min_bytes=config.pin007_min_bytes)


def _run(paths, select, ignore, extend_select, output_format, exit_zero, statistics, fix, unsafe, diff,
         config_file=None, show_settings=False, force_exclude=False, jobs=0, no_cache=False, add_noqa=False,
         stdin_filename=None) -> None:
    try:
        config, settings = _resolve(paths if not stdin_filename else [stdin_filename], select, ignore,
                                    extend_select, config_file)
    except SettingsError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_ERROR)
    if show_settings:
        _print_settings(config, settings)
        raise typer.Exit(EXIT_CLEAN)
    if stdin_filename is not None or paths == ["-"]:
        raise typer.Exit(_run_stdin(stdin_filename or "-", config, settings, output_format, exit_zero, fix, unsafe))

    found = discover(paths or ["."], root=config.root,
                     exclude=[*(DEFAULT_EXCLUDE if config.exclude is None else config.exclude), *config.extend_exclude],
                     respect_gitignore=config.respect_gitignore, force_exclude=force_exclude)
    mode = ADD_NOQA if add_noqa else DIFF if diff else FIX if fix else LINT
    if output_format is OutputFormat.text or output_format is OutputFormat.github:
        settings = replace(settings, render_fixes=False)  # these formats show no edits
    work = []
    for path in found.files:
        ignored = config.ignored_codes(str(path))
        file_settings = replace(settings, select=settings.select - ignored) if ignored else settings
        work.append(Job(str(path), display_path(str(path)), file_settings, mode, unsafe))
    cache = None if (no_cache or mode != LINT) else Cache.open(config.root)
    results = run_jobs(work, jobs or default_workers(), cache)

    errors = list(found.errors)
    for warning in found.warnings:
        _warning(warning)
    findings: list = []
    for result in results:
        findings.extend(result.findings)
        errors.extend(result.errors)
        for warning in result.warnings:
            _warning(warning)
        if result.diff:
            sys.stdout.write(result.diff)
    applied = sum(r.applied for r in results)
    would_change = sum(r.changed for r in results)
    findings.sort(key=lambda f: f.sort_key())
    if add_noqa:
        typer.echo(f"Added {applied} noqa directive{'s' if applied != 1 else ''} in {would_change} "
                   f"file{'s' if would_change != 1 else ''}.")
    elif diff:
        # The diff is the output; the summary goes to stderr, as ruff does.
        if would_change:
            typer.echo(f"Would fix {applied} error{'s' if applied != 1 else ''} in {would_change} "
                       f"file{'s' if would_change != 1 else ''}.", err=True)
        else:
            typer.echo("No fixes available.", err=True)
    elif output_format is OutputFormat.text:
        if findings or applied or not errors:  # no "All checks passed!" when something could not be checked
            FORMATS["text"](findings, sys.stdout, statistics=statistics, fixed=applied if fix else None,
                            unsafe=unsafe)
    else:
        FORMATS[output_format.value](findings, sys.stdout)
    for message in errors:
        _error(message)
    if errors:
        raise typer.Exit(EXIT_ERROR)
    if add_noqa:
        raise typer.Exit(EXIT_CLEAN)
    if diff:
        raise typer.Exit(EXIT_FINDINGS if would_change and not exit_zero else EXIT_CLEAN)
    raise typer.Exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


def _run_stdin(name: str, config, settings, output_format, exit_zero, fix, unsafe) -> int:
    """Editors and scripts: lint the text on stdin as if it were `name`; with --fix, print the fixed text."""
    data = sys.stdin.buffer.read()
    ignored = config.ignored_codes(name)
    settings = replace(settings, select=settings.select - ignored) if ignored else settings
    if fix:
        try:
            source = read_source(data)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            sys.stdout.buffer.write(data)  # nothing pinlint can fix; the text passes through unchanged
            return EXIT_FINDINGS
        outcome = fix_text(source.text, name, settings, unsafe)
        sys.stdout.buffer.write(source.to_bytes(outcome.text))
        if outcome.result is not None and outcome.result.warning:
            _warning(outcome.result.warning)
        if outcome.error:
            _error(outcome.error)
            return EXIT_ERROR
        remaining = outcome.result.findings if outcome.result else []
        return EXIT_FINDINGS if remaining and not exit_zero else EXIT_CLEAN
    result = lint_bytes(data, name, settings)
    if output_format is OutputFormat.text:
        FORMATS["text"](result.findings, sys.stdout)
    else:
        FORMATS[output_format.value](result.findings, sys.stdout)
    if result.warning:
        _warning(result.warning)
    if result.error:
        _error(result.error)
        return EXIT_ERROR
    return EXIT_FINDINGS if result.findings and not exit_zero else EXIT_CLEAN


def _print_settings(config: Config, settings: Settings) -> None:
    typer.echo(f"config file: {config.path if config.path else '(none: defaults)'}")
    typer.echo(f"select: {', '.join(sorted(settings.select))}")
    typer.echo(f"per-file-ignores: {dict(config.per_file_ignores) or '{}'}")
    typer.echo(f"exclude: {', '.join(DEFAULT_EXCLUDE if config.exclude is None else config.exclude) or '(none)'}")
    typer.echo(f"extend-exclude: {', '.join(config.extend_exclude) or '(none)'}")
    typer.echo(f"respect-gitignore: {str(config.respect_gitignore).lower()}")
    typer.echo(f"pin007-min-bytes: {settings.pin007_min_bytes}")


@app.command()
def server() -> None:
    """Speak the Language Server Protocol over stdio: diagnostics and fixes in your editor."""
    from .server import serve
    serve()


@app.command()
def clean() -> None:
    """Remove the cache (.pinlint_cache/) of the project in the working directory."""
    where = find_config(Path("."))
    root = where.parent if where else Path(".")
    typer.echo("Removed .pinlint_cache/." if clean_cache(root) else "No cache to remove.")


@app.command()
def verify(
    paths: Optional[List[str]] = typer.Argument(None, help="Fixtures or folders of fixtures (default: the bundled ones)."),
    output_format: str = typer.Option("text", "--format", help="text, json or markdown."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Also draw bad vs fixed per fixture into this PNG."),
    repeats: int = typer.Option(5, "--repeats", min=1, help="Timed runs per process (after warm-up)."),
    processes: int = typer.Option(2, "--processes", min=1,
                                  help="Fresh processes per variant for speed claims, bad and fixed alternating."),
    warmup: int = typer.Option(1, "--warmup", min=0, help="Untimed runs per process first."),
    sizes: str = typer.Option("max", "--sizes", help="Which of a fixture's SIZES to run: min, max or all."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds before one process of a variant is an error."),
    estimate: Optional[str] = typer.Option(None, "--estimate", help="Measure what each finding in this file costs."),
    default_bytes: int = typer.Option(64 << 20, "--default-bytes", help="Buffer size when the code's is not constant."),
    recorder: Optional[bool] = typer.Option(None, "--recorder/--no-recorder",
                                            help="Judge copy and allocation claims by CUPTI's records "
                                                 "(default: where CUPTI is installed)."),
) -> None:
    """Run fixtures and their fixes on this machine's GPU and report the measured difference."""
    from .verify import commands
    raise typer.Exit(commands.run_verify(paths, output_format, plot, repeats, warmup, sizes, timeout, estimate,
                                         default_bytes, processes, recorder))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                "allow_interspersed_args": False})
def trace(
    ctx: typer.Context,
    check: bool = typer.Option(False, "--check", help="Also lint the files that ran and join both: each static "
                                                      "finding confirmed, contradicted or not exercised."),
    output_format: str = typer.Option("text", "--format", help="text, json or sarif."),
    output_file: Optional[str] = typer.Option(None, "--output-file", "-o", help="Write the report here, not to stdout."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Draw host-held time and GB/s per line into this PNG."),
    kernels: bool = typer.Option(False, "--kernels", help="Also record kernels (count and device time)."),
    min_repeats: int = typer.Option(3, "--min-repeats", min=2,
                                    help="Copies or pinned allocations from one line that count as repeated "
                                         "(PIN007, PIN002)."),
) -> None:
    """Run a program under CUPTI: every copy and pinned allocation it made, per source line.

    pinlint trace [OPTIONS] -- COMMAND [ARGS...]   (or: pinlint trace script.py ARGS)
    """
    from .trace.command import run_trace
    raise typer.Exit(run_trace(list(ctx.args), check, output_format, output_file, plot, kernels, min_repeats))


@app.command()
def rule(code: Optional[str] = typer.Argument(None, help="A rule code, e.g. PIN001."),
         all_rules: bool = typer.Option(False, "--all", help="List every rule.")) -> None:
    """Explain a rule, or list them all."""
    if code is None or all_rules:
        typer.echo(f"{'code':<7} {'name':<29} {'fix':<10} {'default':<8} summary")
        for item in ALL_RULES:
            typer.echo(f"{item.code:<7} {item.name:<29} {item.fix_availability:<10} {'enabled':<8} {item.summary}")
        raise typer.Exit(EXIT_CLEAN)
    item = RULES_BY_CODE.get(code.upper())
    if item is None:
        _error(f"unknown rule {code!r}; `pinlint rule --all` lists them")
        raise typer.Exit(EXIT_ERROR)
    doc = rule_doc(item.code)
    if doc.text:
        typer.echo(doc.text, nl=not doc.text.endswith("\n"))
    else:
        typer.echo(f"{item.code} {item.name}: {item.summary}")


def main() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # file names that are not valid UTF-8
        except (AttributeError, ValueError):
            pass
    allow_deep_recursion()
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback reaches the user
        _error(f"internal error: {type(exc).__name__}: {exc}; {REPORT_URL}")
        sys.exit(EXIT_ERROR)
