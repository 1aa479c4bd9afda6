"""The ``pinlint`` command line.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error (a one-line message
on stderr, never a traceback).
"""

from __future__ import annotations

import inspect
import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .config import find_config
from .runner import allow_deep_recursion
from .runner import clean as clean_cache
from .rule_docs import RUNTIME_RULES, SYNTAX_ERROR, rule_doc
from .tableschema import TableError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
REPORT_URL = "please report it with the file that triggered it"

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Find and fix host-memory-type mistakes (pageable, pinned, write-combined, mapped) "
                       "in CUDA Python code.")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    json_lines = "json-lines"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"
    junit = "junit"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


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


# The options of `check` (and of `fix`, which is `check --fix`), grouped in --help as ruff groups them.
_FIXES, _RULES, _FILES, _CONFIGURATION = "Fixes", "Rule selection", "File selection", "Configuration"
_OUTPUT, _RUN = "Output", "Run"
_PATHS = typer.Argument(None, help="Files or folders to check (default: .); - reads stdin.")
_FIX = typer.Option(False, "--fix", help="Apply safe fixes (and unsafe ones with --unsafe-fixes).",
                    rich_help_panel=_FIXES)
_UNSAFE = typer.Option(False, "--unsafe-fixes", help="Also apply (or show) fixes that may change behaviour.",
                       rich_help_panel=_FIXES)
_DIFF = typer.Option(False, "--diff", help="Print the fixes as a unified diff and change nothing.",
                     rich_help_panel=_FIXES)
_FIX_ONLY = typer.Option(False, "--fix-only", help="Apply fixes; do not report or fail on what is left "
                                                   "(implies --fix).", rich_help_panel=_FIXES)
_SHOW_FIXES = typer.Option(False, "--show-fixes", help="List what --fix fixed, per file and rule (without "
                                                       "--fix: each finding's fix).", rich_help_panel=_FIXES)
_NON_ZERO_ON_FIX = typer.Option(False, "--exit-non-zero-on-fix", help="Exit 1 when a fix changed a file, even "
                                                                      "if nothing is left.", rich_help_panel=_FIXES)
_SELECT = typer.Option(None, "--select", help="Codes or prefixes to check (comma-separated).",
                       rich_help_panel=_RULES)
_IGNORE = typer.Option(None, "--ignore", help="Codes or prefixes to skip.", rich_help_panel=_RULES)
_EXTEND = typer.Option(None, "--extend-select", help="Codes to add to the selection.", rich_help_panel=_RULES)
_PER_FILE = typer.Option(None, "--per-file-ignores", metavar="PATTERN:CODES",
                         help="Rules to skip in matching files, replacing the configured table (repeatable).",
                         rich_help_panel=_RULES)
_EXTEND_PER_FILE = typer.Option(None, "--extend-per-file-ignores", metavar="PATTERN:CODES",
                                help="Like --per-file-ignores, added to the configured table.",
                                rich_help_panel=_RULES)
_IGNORE_NOQA = typer.Option(False, "--ignore-noqa", help="Report findings that `# noqa` comments suppress.",
                            rich_help_panel=_RULES)
_EXCLUDE = typer.Option(None, "--exclude", help="Globs never to check, replacing the configured exclude.",
                        rich_help_panel=_FILES)
_EXTEND_EXCLUDE = typer.Option(None, "--extend-exclude", help="Globs never to check, added to exclude.",
                               rich_help_panel=_FILES)
_FORCE = typer.Option(False, "--force-exclude", help="Apply excludes to files named on the command line too "
                                                      "(for pre-commit, which names every staged file).",
                      rich_help_panel=_FILES)
_STDIN = typer.Option(None, "--stdin-filename", help="Read the source from stdin, reporting it under this name.",
                      rich_help_panel=_FILES)
_SHOW_FILES = typer.Option(False, "--show-files", help="Print the files that would be checked and exit.",
                           rich_help_panel=_FILES)
_CONFIG = typer.Option(None, "--config", metavar="FILE|KEY=VALUE",
                       help="A pyproject.toml or pinlint.toml to use instead of searching, or one setting in TOML "
                            "(`--config \"select = ['PIN001']\"`), over the file's (repeatable).",
                       rich_help_panel=_CONFIGURATION)
_SHOW_SETTINGS = typer.Option(False, "--show-settings", help="Print the resolved settings and exit.",
                              rich_help_panel=_CONFIGURATION)
_FORMAT = typer.Option(OutputFormat.text, "--output-format", "--format", help="Output format.",
                       rich_help_panel=_OUTPUT)
_OUTPUT_FILE = typer.Option(None, "--output-file", "-o", help="Write the output to this file instead of stdout.",
                            rich_help_panel=_OUTPUT)
_STATISTICS = typer.Option(False, "--statistics", help="Print the number of findings per rule instead of the "
                                                       "findings.", rich_help_panel=_OUTPUT)
_EXIT_ZERO = typer.Option(False, "--exit-zero", "-e", help="Exit 0 even when there are findings.",
                          rich_help_panel=_OUTPUT)
_QUIET = typer.Option(False, "--quiet", "-q", help="Print the findings and nothing else.", rich_help_panel=_OUTPUT)
_SILENT = typer.Option(False, "--silent", "-s", help="Print nothing (the exit code still says what was found).",
                       rich_help_panel=_OUTPUT)
_COLOR = typer.Option(Color.auto, "--color", help="Colour text output: auto (on a terminal, unless NO_COLOR is "
                                                  "set), always or never.", rich_help_panel=_OUTPUT)
_ADD_NOQA = typer.Option(False, "--add-noqa", help="Append `# noqa: CODE` to every line with a finding.",
                         rich_help_panel=_FIXES)
_WATCH = typer.Option(False, "--watch", "-w", help="Check again whenever a file changes (needs the `watch` "
                                                   "extra).", rich_help_panel=_RUN)
_JOBS = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes (default: one per core).",
                     rich_help_panel=_RUN)
_NO_CACHE = typer.Option(False, "--no-cache", help="Neither read nor write the cache.", rich_help_panel=_RUN)
_CACHE_DIR = typer.Option(None, "--cache-dir", envvar="PINLINT_CACHE_DIR",
                          help="Where the cache lives (default: .pinlint_cache/ in the project root).",
                          rich_help_panel=_RUN)


@app.command()
def check(
    paths: Optional[List[str]] = _PATHS,
    fix: bool = _FIX,
    unsafe_fixes: bool = _UNSAFE,
    diff: bool = _DIFF,
    fix_only: bool = _FIX_ONLY,
    show_fixes: bool = _SHOW_FIXES,
    exit_non_zero_on_fix: bool = _NON_ZERO_ON_FIX,
    select: Optional[List[str]] = _SELECT,
    ignore: Optional[List[str]] = _IGNORE,
    extend_select: Optional[List[str]] = _EXTEND,
    per_file_ignores: Optional[List[str]] = _PER_FILE,
    extend_per_file_ignores: Optional[List[str]] = _EXTEND_PER_FILE,
    ignore_noqa: bool = _IGNORE_NOQA,
    exclude: Optional[List[str]] = _EXCLUDE,
    extend_exclude: Optional[List[str]] = _EXTEND_EXCLUDE,
    force_exclude: bool = _FORCE,
    stdin_filename: Optional[str] = _STDIN,
    show_files: bool = _SHOW_FILES,
    config: Optional[List[str]] = _CONFIG,
    show_settings: bool = _SHOW_SETTINGS,
    output_format: OutputFormat = _FORMAT,
    output_file: Optional[str] = _OUTPUT_FILE,
    statistics: bool = _STATISTICS,
    exit_zero: bool = _EXIT_ZERO,
    quiet: bool = _QUIET,
    silent: bool = _SILENT,
    color: Color = _COLOR,
    add_noqa: bool = _ADD_NOQA,
    watch: bool = _WATCH,
    jobs: int = _JOBS,
    no_cache: bool = _NO_CACHE,
    cache_dir: Optional[str] = _CACHE_DIR,
) -> None:
    """Check files for host-memory mistakes."""
    options = dict(locals())
    from .check_command import CheckRequest, run
    raise typer.Exit(run(CheckRequest(**options)))


def _fix_command(command):
    """`pinlint fix`: the options of `check`, with --fix always on (so it is not an option there)."""
    signature = inspect.signature(command, eval_str=True)

    def fix(**options) -> None:
        command(fix=True, **options)

    fix.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "fix"])
    fix.__doc__ = "Apply fixes (the same as `pinlint check --fix`)."
    return fix


app.command(name="fix")(_fix_command(check))


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
    from .checks import ALL_RULES, RULES_BY_CODE
    if code is None or all_rules:
        typer.echo(f"{'code':<7} {'name':<29} {'fix':<10} {'default':<8} summary")
        for item in (SYNTAX_ERROR, *ALL_RULES, *RUNTIME_RULES):
            default = "always" if item is SYNTAX_ERROR else "trace" if item in RUNTIME_RULES else "enabled"
            typer.echo(f"{item.code:<7} {item.name:<29} {item.fix_availability:<10} {default:<8} {item.summary}")
        raise typer.Exit(EXIT_CLEAN)
    runtime = {rule.code: rule for rule in RUNTIME_RULES}
    item = SYNTAX_ERROR if code.upper() == SYNTAX_ERROR.code else RULES_BY_CODE.get(code.upper(), runtime.get(code.upper()))
    if item is None:
        _error(f"unknown rule {code!r}; `pinlint rule --all` lists them")
        raise typer.Exit(EXIT_ERROR)
    doc = rule_doc(item.code)
    if doc.text:
        typer.echo(doc.text, nl=not doc.text.endswith("\n"))
    else:
        typer.echo(f"{item.code} {item.name}: {item.summary}")


def entry() -> None:
    """The ``pinlint`` command: ``main``, then an exit that skips the interpreter's teardown. A run
    keeps every module it analysed (the other files' calls reach into them), and freeing those
    millions of objects one by one at exit took seconds on a large tree (3.5 s of a 26 s check of
    cupy); nothing is left to do by then: the output is flushed, the cache and any fixed file written
    as the run went."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`pinlint check | head`): nothing more to say
            pass
    os._exit(code or 0)


def main() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # file names that are not valid UTF-8
        except (AttributeError, ValueError):
            pass
    allow_deep_recursion()
    try:
        from .typer_light import lighten
        command = typer.main.get_command(app)
        lighten(command)
        command()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_ERROR)
    except TableError as exc:
        # A broken installation (or a hand-edited rules/api table): say which file, entry and key.
        _error(f"invalid API table: {exc}")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback reaches the user
        _error(f"internal error: {type(exc).__name__}: {exc}; {REPORT_URL}")
        sys.exit(EXIT_ERROR)
