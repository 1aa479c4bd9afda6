"""``pinlint check`` and ``pinlint fix``: from what the command line asked to the output and exit code.

Exit codes: 0 no findings, 1 findings (or, with ``--diff``, a fix would change a file), 2 usage,
configuration or internal error (a one-line message on stderr).
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, TextIO

from .config import Config, apply_overrides, find_config, load_config
from .discover import DEFAULT_EXCLUDE, discover, is_excluded
from .report import NEEDS_EDITS, STATISTICS_FORMATS, ReportOptions, display_path, write_report
from .runner import ADD_NOQA, DIFF, FIX, LINT
from .settings import Settings, SettingsError, resolve_selection, thresholds_of

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
WATCH_MISSING = '--watch needs the watchfiles package: pip install "cuda-pinlint[watch]"'


@dataclass(frozen=True)
class CheckRequest:
    """Every option of ``check`` (``fix`` is ``check --fix``), named as the command line names them."""

    paths: Optional[list] = None
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    fix_only: bool = False
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False
    select: Optional[list] = None
    ignore: Optional[list] = None
    extend_select: Optional[list] = None
    per_file_ignores: Optional[list] = None
    extend_per_file_ignores: Optional[list] = None
    exclude: Optional[list] = None
    extend_exclude: Optional[list] = None
    force_exclude: bool = False
    config: Optional[list] = None
    output_format: str = "text"
    output_file: Optional[str] = None
    statistics: bool = False
    show_files: bool = False
    show_settings: bool = False
    exit_zero: bool = False
    quiet: bool = False
    silent: bool = False
    color: str = "auto"
    ignore_noqa: bool = False
    add_noqa: bool = False
    stdin_filename: Optional[str] = None
    jobs: int = 0
    no_cache: bool = False
    cache_dir: Optional[str] = None
    watch: bool = False

    def __post_init__(self) -> None:
        for name in ("output_format", "color"):  # typer hands over enum members
            value = getattr(self, name)
            object.__setattr__(self, name, getattr(value, "value", value))

    @property
    def mode(self) -> str:
        if self.add_noqa:
            return ADD_NOQA
        if self.diff:
            return DIFF
        return FIX if self.fix or self.fix_only else LINT

    @property
    def reads_stdin(self) -> bool:
        return self.stdin_filename is not None or "-" in (self.paths or ())


@dataclass
class Outcome:
    """What a run found and did, before it is shown."""

    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    applied: int = 0          # findings the fixes resolved (or noqa comments added)
    changed: int = 0          # files rewritten (or that a fix would rewrite)
    diff: str = ""
    fixed_codes: tuple = ()   # ((filename, ((code, count), ...)), ...)
    fixed_text: Optional[bytes] = None  # stdin with --fix: the fixed source is the output


def error(message: str) -> None:
    print(f"pinlint: error: {message}", file=sys.stderr)


def warning(message: str) -> None:
    print(f"pinlint: warning: {message}", file=sys.stderr)


def run(request: CheckRequest) -> int:
    try:
        _refuse_conflicts(request)
        config, settings = resolve(request)
    except SettingsError as exc:
        error(str(exc))
        return EXIT_ERROR
    if request.show_settings:
        print_settings(config, settings)
        return EXIT_CLEAN
    if request.reads_stdin:
        return _check_stdin(request, config, settings)
    if request.show_files:
        return _show_files(request, config)
    if request.watch:
        return _watch(request)
    return _report(_check_files(request, config, settings), request)


def _refuse_conflicts(request: CheckRequest) -> None:
    """Options that cannot work together are refused with a message, never silently ignored."""
    fixing = [name for name, on in (("--fix", request.fix), ("--fix-only", request.fix_only),
                                    ("--diff", request.diff)) if on]
    if request.add_noqa and fixing:
        raise SettingsError(f"--add-noqa cannot be combined with {fixing[0]} (add the comments, then fix)")
    if request.statistics and (request.diff or request.add_noqa):
        raise SettingsError(f"--statistics counts findings; it cannot be combined with "
                            f"{'--diff' if request.diff else '--add-noqa'}")
    if request.statistics and request.output_format not in STATISTICS_FORMATS:
        raise SettingsError(f"--statistics prints text or JSON (--output-format {', '.join(STATISTICS_FORMATS)}), "
                            f"not {request.output_format}")
    if request.reads_stdin:
        others = [p for p in (request.paths or ()) if p != "-"]
        if others:
            raise SettingsError(f"stdin ('-' or --stdin-filename) cannot be combined with paths ({others[0]})")
        for name, on in (("--add-noqa", request.add_noqa), ("--watch", request.watch),
                         ("--show-files", request.show_files)):
            if on:
                raise SettingsError(f"{name} works on files; it cannot read stdin ('-' or --stdin-filename)")
    if request.watch and request.add_noqa:
        raise SettingsError("--watch cannot be combined with --add-noqa")


# ---------------------------------------------------------------------------- settings
def resolve(request: CheckRequest) -> tuple:
    """(config, settings) from the configuration file, ``--config KEY=VALUE`` and the other options
    (the command line wins)."""
    config_file, overrides = _config_arguments(request.config or ())
    start = request.stdin_filename or next((p for p in (request.paths or ()) if p != "-"), ".")
    config = load_config(Path(config_file) if config_file else find_config(Path(start)))
    if overrides:
        config = apply_overrides(config, overrides)
    config = _command_line_overrides(config, request)
    chosen = resolve_selection(list(request.select) if request.select else config.select,
                               [*config.ignore, *(request.ignore or [])],
                               [*config.extend_select, *(request.extend_select or [])])
    settings = Settings(select=chosen, **thresholds_of(config), ignore_noqa=request.ignore_noqa,
                        render_fixes=request.output_format in NEEDS_EDITS)
    return config, settings


def _config_arguments(values) -> tuple:
    """(configuration file or None, overrides) from the ``--config`` values: a file, or ``KEY = VALUE``
    in TOML (as ruff takes them: ``--config "select = ['PIN001']"``)."""
    from .config import tomllib
    config_file: Optional[str] = None
    overrides: dict = {}
    for value in values:
        if os.path.isfile(value):
            if config_file is not None:
                raise SettingsError(f"--config: only one configuration file can be used ({config_file}, {value})")
            config_file = value
            continue
        if "=" not in value:
            raise SettingsError(f"--config: {value}: No such file")
        try:
            table = tomllib.loads(value)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"--config: {value!r} is neither a file nor a TOML `KEY = VALUE` ({exc})")
        table = table.get("tool", {}).get("pinlint", table) if set(table) == {"tool"} else table
        _merge(overrides, table)
    return config_file, overrides


def _merge(into: dict, table: dict) -> None:
    for key, value in table.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _command_line_overrides(config: Config, request: CheckRequest) -> Config:
    if request.exclude is not None:
        config = apply_overrides(config, {"exclude": _split(request.exclude)}, "--exclude")
    if request.extend_exclude:
        config = apply_overrides(config, {"extend-exclude": [*config.extend_exclude, *_split(request.extend_exclude)]},
                                 "--extend-exclude")
    if request.per_file_ignores is not None:
        config = apply_overrides(config, {"per-file-ignores": _pattern_codes(request.per_file_ignores,
                                                                             "--per-file-ignores")},
                                 "--per-file-ignores")
    if request.extend_per_file_ignores:
        extra = apply_overrides(Config(), {"per-file-ignores": _pattern_codes(request.extend_per_file_ignores,
                                                                              "--extend-per-file-ignores")},
                                "--extend-per-file-ignores")
        config = replace(config, per_file_ignores=config.per_file_ignores + extra.per_file_ignores)
    return config


def _split(values) -> list:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _pattern_codes(values, option: str) -> dict:
    """``PATTERN:CODES`` pairs (``"tests/*.py:PIN001,PIN007"``) as a per-file-ignores table."""
    table: dict = {}
    for value in values:
        pattern, colon, codes = value.rpartition(":")
        if not colon or not pattern.strip():
            raise SettingsError(f"{option}: {value!r} is not PATTERN:CODES (e.g. 'tests/*.py:PIN001,PIN007')")
        table.setdefault(pattern.strip(), []).extend(_split([codes]))
    return table


def print_settings(config: Config, settings: Settings) -> None:
    print(f"config file: {config.path if config.path else '(none: defaults)'}")
    print(f"select: {', '.join(sorted(settings.select))}")
    print(f"per-file-ignores: {dict(config.per_file_ignores) or '{}'}")
    print(f"exclude: {', '.join(DEFAULT_EXCLUDE if config.exclude is None else config.exclude) or '(none)'}")
    print(f"extend-exclude: {', '.join(config.extend_exclude) or '(none)'}")
    print(f"respect-gitignore: {str(config.respect_gitignore).lower()}")
    for key, value in settings.thresholds().items():
        print(f"{key}: {value}")
    print(f"pin009-max-share: {config.pin009_max_share:g} (pinlint trace)")
    print(f"ignore-noqa: {str(settings.ignore_noqa).lower()}")


# ---------------------------------------------------------------------------- files
def _discover(request: CheckRequest, config: Config):
    exclude = DEFAULT_EXCLUDE if config.exclude is None else config.exclude
    return discover(request.paths or ["."], root=config.root, exclude=[*exclude, *config.extend_exclude],
                    respect_gitignore=config.respect_gitignore, force_exclude=request.force_exclude)


def _check_files(request: CheckRequest, config: Config, settings: Settings) -> Outcome:
    from .runner import Cache, Job, default_workers, run_jobs
    found = _discover(request, config)
    work = []
    for path in found.files:
        ignored = config.ignored_codes(str(path))
        file_settings = replace(settings, select=settings.select - ignored) if ignored else settings
        work.append(Job(str(path), display_path(str(path)), file_settings, request.mode, request.unsafe_fixes))
    cache = None
    if not request.no_cache and request.mode in (LINT, ADD_NOQA):
        cache = Cache.open(config.root, Path(request.cache_dir) if request.cache_dir else None)
    if request.mode == ADD_NOQA:
        work = _with_unreported(work, request, cache)
        cache = None
    results = run_jobs(work, request.jobs or default_workers(), cache)
    outcome = Outcome(errors=list(found.errors), warnings=list(found.warnings))
    for job, result in zip(work, results):
        outcome.findings.extend(result.findings)
        outcome.errors.extend(result.errors)
        outcome.warnings.extend(result.warnings)
        outcome.diff += result.diff
        outcome.applied += result.applied
        outcome.changed += result.changed
        if result.fixed:
            outcome.fixed_codes += ((job.name, tuple(sorted(result.fixed.items()))),)
    if request.mode != ADD_NOQA:
        outcome.findings = _defer_to_loops(outcome.findings, [r for result in results for r in result.reached])
    outcome.findings.sort(key=lambda f: f.sort_key())
    return outcome


def _with_unreported(work: list, request: CheckRequest, cache) -> list:
    """`--add-noqa` comments what a check of the same files reports: a PIN008 that the run drops for
    another file's PIN002 (``_defer_to_loops``) gets none. A check first (from the cache where it can),
    then the comments, only where such a PIN008 is found."""
    from .runner import default_workers, run_jobs
    linted = run_jobs([replace(job, mode=LINT) for job in work], request.jobs or default_workers(), cache)
    findings = [f for result in linted for f in result.findings]
    kept = set(map(id, _defer_to_loops(findings, [r for result in linted for r in result.reached])))
    dropped: dict = {}
    for f in findings:
        if id(f) not in kept:
            dropped.setdefault(os.path.normpath(f.filename), set()).add((f.code, f.location.row, f.location.column))
    return [replace(job, unreported=tuple(sorted(dropped.get(os.path.normpath(job.name), ())))) for job in work]


def _defer_to_loops(findings: list, reached_by_loops=()) -> list:
    """PIN008 at a pinning call that another file's loop reaches through its functions (a batch helper
    in `data.py` called from the training loop of `train.py`): that file's PIN002 at the loop reports
    it (or would: a `noqa` there silences the mistake, not the PIN008 in its place), and PIN008 says the
    pinning is reached from no loop, so a run checking both files reports the PIN002 only (a run given
    the helper's file alone cannot know its callers, and keeps the PIN008)."""
    reached = {(os.path.normpath(name), row, column) for name, row, column in reached_by_loops}
    if not reached:
        return findings
    return [f for f in findings if not (f.code == "PIN008" and f.cell is None and
                                        (os.path.normpath(f.filename), f.location.row, f.location.column) in reached)]


def _show_files(request: CheckRequest, config: Config) -> int:
    found = _discover(request, config)
    for path in found.files:
        print(display_path(str(path)))
    if not request.quiet and not request.silent:
        for message in found.warnings:
            warning(message)
    for message in found.errors:
        error(message)
    return EXIT_ERROR if found.errors else EXIT_CLEAN


# ---------------------------------------------------------------------------- stdin
def _check_stdin(request: CheckRequest, config: Config, settings: Settings) -> int:
    """Editors and scripts: the text on stdin, checked as if it were the file ``--stdin-filename``."""
    name = request.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    exclude = DEFAULT_EXCLUDE if config.exclude is None else config.exclude
    if request.force_exclude and request.stdin_filename and is_excluded(
            name, config.root, [*exclude, *config.extend_exclude], config.respect_gitignore):
        # An excluded file: nothing to report, and a fix leaves it as it is.
        outcome = Outcome(fixed_text=data if request.mode == FIX else None)
        return _report(outcome, request)
    ignored = config.ignored_codes(name)
    settings = replace(settings, select=settings.select - ignored) if ignored else settings
    return _report(_stdin_outcome(data, name, settings, request), request)


def _stdin_outcome(data: bytes, name: str, settings: Settings, request: CheckRequest) -> Outcome:
    from .engine import fix_text, lint_bytes, read_source
    if name.endswith(".ipynb"):
        return _stdin_notebook(data, name, settings, request)
    if request.mode == LINT:
        result = lint_bytes(data, name, settings)
        return Outcome(findings=list(result.findings), errors=[result.error] if result.error else [],
                       warnings=[result.warning] if result.warning else [])
    try:
        source = read_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        # Nothing pinlint can fix: the text passes through unchanged, and its PIN000 is what remains.
        result = lint_bytes(data, name, settings)
        return Outcome(findings=list(result.findings), fixed_text=data if request.mode == FIX else None)
    fixed = fix_text(source.text, name, settings, request.unsafe_fixes)
    outcome = Outcome(findings=list(fixed.result.findings) if fixed.result else [],
                      errors=[fixed.error] if fixed.error else [],
                      warnings=[fixed.result.warning] if fixed.result and fixed.result.warning else [])
    if fixed.text != source.text:
        outcome.applied, outcome.changed = fixed.applied, 1
        outcome.fixed_codes = ((name, tuple(sorted(fixed.fixed.items()))),) if fixed.fixed else ()
    if request.mode == DIFF:
        from .fixes import unified_diff
        outcome.diff = unified_diff(source.text, fixed.text, name) if outcome.changed else ""
    else:
        outcome.fixed_text = source.to_bytes(fixed.text)
    return outcome


def _stdin_notebook(data: bytes, name: str, settings: Settings, request: CheckRequest) -> Outcome:
    """A notebook's JSON on stdin: its cells are checked; with --fix the fixed notebook is the output
    (as ruff does), with --diff the difference of the JSON."""
    from .notebooks import check_notebook
    fixing = request.mode in (FIX, DIFF)
    checked = check_notebook(data, name, settings, fix=fixing, unsafe=request.unsafe_fixes)
    outcome = Outcome(findings=list(checked.findings), errors=list(checked.errors), warnings=list(checked.warnings))
    if checked.fixed is not None:
        outcome.applied, outcome.changed = checked.applied, 1
    if request.mode == DIFF:
        from .fixes import unified_diff
        outcome.diff = unified_diff(data.decode("utf-8-sig"), checked.fixed.decode("utf-8-sig"), name) \
            if checked.fixed is not None else ""
    elif request.mode == FIX:
        outcome.fixed_text = checked.fixed if checked.fixed is not None else data
    return outcome


# ---------------------------------------------------------------------------- output
def use_color(choice: str, output_file: Optional[str], stream: TextIO) -> bool:
    """--color: `always`, `never`, or (`auto`) on a terminal unless NO_COLOR is set; FORCE_COLOR forces it."""
    if choice in ("always", "never"):
        return choice == "always"
    if output_file or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def _report(outcome: Outcome, request: CheckRequest) -> int:
    """Show what the run found and did; the exit code it makes."""
    quiet = request.quiet or request.silent
    if not quiet:
        for message in outcome.warnings:
            warning(message)
    out = io.StringIO()
    options = ReportOptions(
        format=request.output_format, unsafe=request.unsafe_fixes, statistics=request.statistics,
        fixed=outcome.applied if request.mode == FIX else None, fixed_codes=outcome.fixed_codes, quiet=quiet,
        show_fixes=request.show_fixes, color=use_color(request.color, request.output_file, sys.stdout),
        complete=not outcome.errors,
        notices=tuple([("error", m) for m in outcome.errors] + [("warning", m) for m in outcome.warnings]))
    if request.mode == ADD_NOQA:
        if not quiet:
            out.write(f"Added {outcome.applied} noqa directive{'s' if outcome.applied != 1 else ''} in "
                      f"{outcome.changed} file{'s' if outcome.changed != 1 else ''}.\n")
    elif request.mode == DIFF:
        out.write(outcome.diff)
        if not quiet:  # the diff is the output; its summary goes to stderr, as ruff does
            print(f"Would fix {outcome.applied} error{'s' if outcome.applied != 1 else ''} in {outcome.changed} "
                  f"file{'s' if outcome.changed != 1 else ''}." if outcome.changed else "No fixes available.",
                  file=sys.stderr)
    elif outcome.fixed_text is not None:  # stdin --fix: the fixed source is the output, and nothing else
        if not _write_output(request, outcome.fixed_text):
            return EXIT_ERROR
        if request.show_fixes and outcome.applied and not quiet:
            from .formats.text import write_fix_only
            write_fix_only(outcome.findings, sys.stderr, replace(options, color=False))
    elif request.fix_only:
        if request.output_format == "text":
            if not quiet:
                from .formats.text import write_fix_only
                write_fix_only(outcome.findings, out, options)
        else:
            write_report([], out, replace(options, statistics=False))  # a valid, empty report
    else:
        write_report(outcome.findings, out, options)
    if outcome.fixed_text is None and not _write_output(request, out.getvalue()):
        return EXIT_ERROR
    for message in outcome.errors:
        error(message)
    return _exit_code(outcome, request)


def _write_output(request: CheckRequest, content) -> bool:
    """To --output-file (its folders made as needed), or to stdout: a report unless --silent, a fixed
    source from stdin always (it is the data an editor waits for, not a report)."""
    if request.output_file:
        path = Path(request.output_file)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        except OSError as exc:
            error(f"--output-file: cannot write {request.output_file} ({exc.strerror or exc})")
            return False
        return True
    if request.silent and not isinstance(content, bytes):
        return True
    if isinstance(content, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(content)
        sys.stdout.flush()
    return True


def _exit_code(outcome: Outcome, request: CheckRequest) -> int:
    if outcome.errors:
        return EXIT_ERROR
    if request.exit_zero or request.mode == ADD_NOQA:
        return EXIT_CLEAN
    fixed_files = request.exit_non_zero_on_fix and outcome.changed and request.mode == FIX
    if request.mode == DIFF:
        return EXIT_FINDINGS if outcome.changed else EXIT_CLEAN
    if request.fix_only:
        return EXIT_FINDINGS if fixed_files else EXIT_CLEAN
    return EXIT_FINDINGS if outcome.findings or fixed_files else EXIT_CLEAN


# ---------------------------------------------------------------------------- --watch
def _watch(request: CheckRequest) -> int:
    """Check, then check again each time a Python file, notebook or configuration file changes, until
    Ctrl-C (exit 0)."""
    try:
        import watchfiles
    except ImportError:
        error(WATCH_MISSING)
        return EXIT_ERROR
    paths = list(request.paths or ["."])
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        error(f"{missing[0]}: No such file or directory")
        return EXIT_ERROR
    talk = not (request.quiet or request.silent)
    watched = watchfiles.PythonFilter(extra_extensions=(".pyi", ".ipynb", ".toml"))
    try:  # Ctrl-C ends the watch, whether it comes while waiting (watchfiles stops) or while checking
        _check_once(request)
        if talk:
            print("pinlint: watching for file changes (Ctrl-C to stop)", file=sys.stderr)
        for changes in watchfiles.watch(*paths, watch_filter=watched, raise_interrupt=False):
            if talk:
                print(f"pinlint: {len(changes)} file change{'s' if len(changes) != 1 else ''}; checking again",
                      file=sys.stderr)
            _check_once(request)
    except KeyboardInterrupt:
        pass
    return EXIT_CLEAN


def _check_once(request: CheckRequest) -> None:
    """One round of --watch: the configuration is read again, so editing it takes effect."""
    try:
        config, settings = resolve(request)
    except SettingsError as exc:
        error(str(exc))
        return
    _report(_check_files(request, config, settings), request)
