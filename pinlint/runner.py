"""The per-file work of ``check``/``fix`` (lint, fix, diff, add-noqa), a result cache, and a process
pool over files that keeps output in the order of the files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from . import __version__
from .apitables import rules_dir
from .model import Edit, Finding, Fix, Location, Related
from .prefilter import might_report, names_gpu_library, passes_prefilter
from .settings import Settings
from .suppress import ALL, NOQA, read_lines, suppressed_codes

LINT, FIX, DIFF, ADD_NOQA = "lint", "fix", "diff", "add-noqa"

# The engine (libcst, the analysis, the rules) is imported only when a file passes the prefilter:
# a commit that touches no GPU file never loads it. A run's project starts with the first such file.
_PENDING_ROOT: list = []


def _engine():
    from . import engine
    if _PENDING_ROOT:
        engine.start_project(*_PENDING_ROOT.pop())
    return engine


def lint_bytes(data: bytes, filename: str, settings: Settings):
    return _engine().lint_bytes(data, filename, settings)


def write_atomically(path: Path, data: bytes, expected: Optional[bytes] = None) -> None:
    from .fixes import write_atomically as write
    write(path, data, expected=expected)


def _start_project(root: Optional[Path], trees: tuple = ()) -> None:
    from .apitables import default_tables
    default_tables()  # every file's prefilter needs them: a broken table is the run's error, not a file's
    _PENDING_ROOT[:] = [(root, trees)]


def _end_project() -> None:
    _PENDING_ROOT.clear()
    engine = sys.modules.get(f"{__package__}.engine")
    if engine is not None:
        engine.end_project()


@dataclass(frozen=True)
class Job:
    path: str
    name: str            # as displayed (relative to the working directory)
    settings: Settings
    mode: str = LINT
    unsafe: bool = False
    # --add-noqa: (code, row, column) of findings the run does not report for this file (PIN008 that a
    # PIN002 of another file's loop reports: check_command._defer_to_loops), which need no comment
    unreported: tuple = ()


@dataclass
class JobResult:
    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    applied: int = 0       # findings resolved by fixes (or noqa comments added)
    changed: int = 0       # 1 when the file was (or would be) rewritten
    diff: str = ""
    fixed: dict = field(default_factory=dict)  # code -> findings the fixes resolved (for --show-fixes)
    dependencies: tuple = ()  # (path, sha256) of the other files the findings rest on (for the cache)
    reached: tuple = ()       # pinning calls its PIN002 reach (engine.FileResult.reached)


# ---------------------------------------------------------------------------- one file
def process(job: Job, cache: Optional["Cache"] = None) -> JobResult:
    """One file's work; an unexpected failure is that file's error, and the run goes on."""
    try:
        return _process(job, cache)
    except Exception as exc:  # noqa: BLE001 - one file must never end the run
        return JobResult(errors=[f"{job.name}: internal error ({type(exc).__name__}: {exc}); please report it "
                                 f"with this file"])


def _process(job: Job, cache: Optional["Cache"]) -> JobResult:
    allow_deep_recursion()
    try:
        data = Path(job.path).read_bytes()
    except OSError as exc:
        return JobResult(errors=[f"{job.name}: {exc.strerror or exc}"])
    if job.path.endswith(".ipynb"):
        return _portable(_notebook(job, data, cache))
    if job.mode == LINT:
        return _portable(_lint(job, data, cache))
    if job.mode == ADD_NOQA:
        return _portable(_add_noqa(job, data))
    return _portable(_fix(job, data))


def allow_deep_recursion() -> None:
    """The analysis recurses once per level of expression nesting; long generated expressions
    (a few thousand terms) need more than Python's default 1,000 frames."""
    if sys.getrecursionlimit() < 20_000:
        sys.setrecursionlimit(20_000)


def _reported(result) -> JobResult:
    """A file's findings, error and warning as a job's result."""
    return JobResult(findings=result.findings, errors=[result.error] if result.error else [],
                     warnings=[result.warning] if result.warning else [], reached=getattr(result, "reached", ()))


def _portable(result: JobResult) -> JobResult:
    """Findings without their CST fix plans, so results can cross process boundaries and caches."""
    result.findings = [replace(f, plan=None) if f.plan is not None else f for f in result.findings]
    return result


def _lint(job: Job, data: bytes, cache: Optional["Cache"]) -> JobResult:
    key = cache.key(data, job.settings) if cache is not None else None
    if key is not None:
        hit = cache.entry(key, job.name)
        if hit is not None:
            return JobResult(findings=hit[0], reached=hit[1])
    if not might_report(data, job.name):
        if key is not None:
            cache.put(key, [], ())
        return JobResult()
    result = lint_bytes(data, job.name, job.settings)
    if key is not None and result.error is None and result.warning is None:
        cache.put(key, result.findings, result.dependencies, result.reached)
    return _reported(result)


def _notebook(job: Job, data: bytes, cache: Optional["Cache"]) -> JobResult:
    """A notebook, cached like a .py file when it is only linted (keyed by its bytes, so an edited
    cell or output makes a new entry, and by the files of the tree its findings rest on)."""
    from .notebooks import process_notebook
    key = cache.key(data, job.settings) if cache is not None and job.mode == LINT else None
    if key is not None:
        hit = cache.get(key, job.name)
        if hit is not None:
            return JobResult(findings=hit)
    result = process_notebook(job, data)
    if key is not None and not result.errors and not result.warnings:
        cache.put(key, result.findings, result.dependencies)
    return result


def _fix(job: Job, data: bytes) -> JobResult:
    if not passes_prefilter(data):
        return _reported(lint_bytes(data, job.name, job.settings))  # nothing to fix; PIN000 still reported
    from .engine import read_source
    from .fixes import ChangedWhileFixing, unified_diff
    try:
        source = read_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return _reported(lint_bytes(data, job.name, job.settings))  # reported as PIN000; nothing to fix
    outcome = _engine().fix_text(source.text, job.name, job.settings, job.unsafe)
    report = JobResult(findings=outcome.result.findings if outcome.result else [],
                       errors=[outcome.error] if outcome.error else [],
                       warnings=[outcome.result.warning] if outcome.result and outcome.result.warning else [],
                       reached=outcome.result.reached if outcome.result else ())
    if outcome.text == source.text:
        return report
    report.applied, report.changed, report.fixed = outcome.applied, 1, outcome.fixed
    if job.mode == DIFF:
        report.diff = unified_diff(source.text, outcome.text, job.name)
        return report
    try:
        write_atomically(Path(job.path), source.to_bytes(outcome.text), expected=data)
    except ChangedWhileFixing:
        return JobResult(errors=[f"{job.name}: changed on disk while it was being fixed; left as it is now "
                                 "(run the fix again)"])
    except (OSError, UnicodeEncodeError) as exc:
        original = lint_bytes(data, job.name, job.settings)
        return JobResult(findings=original.findings,
                         errors=[f"{job.name}: could not write the fixed file, left unchanged ({exc})"])
    return report


def add_noqa_text(text: str, findings: list) -> tuple:
    """(new text, codes added): ``# noqa: CODES`` where each reported line ends (the tokenizer's
    end of that line: past a backslash continuation or a string spanning lines, as ruff does),
    merged into a ``# noqa: ...`` comment already there; a bare ``# noqa`` already covers everything."""
    from .fixes import source_lines
    wanted: dict = {}
    lines_info = read_lines(text) if findings else None
    for finding in findings:
        if finding.code == "PIN000":
            continue
        row = lines_info.comment_row(finding.location.row)
        if row is not None:
            wanted.setdefault(row, set()).add(finding.code)
    comments = lines_info.comments if wanted else {}
    lines = source_lines(text)
    added = 0
    for row, codes in sorted(wanted.items()):
        if not 1 <= row <= len(lines):
            continue
        comment = comments.get(row, "")
        existing = suppressed_codes(comment) if comment else None
        if existing is ALL:
            continue
        new = codes - set(existing or ())
        if not new:
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        match = NOQA.search(body, body.rfind(comment) if comment else len(body))
        if match is not None and match.group("codes"):
            merged = ", ".join(sorted(set(c.strip().upper() for c in match.group("codes").split(",")) | new))
            body = body[:match.start()] + f"# noqa: {merged}" + body[match.end():]
        else:
            body = f"{body}  # noqa: {', '.join(sorted(new))}"
        lines[row - 1] = body + ending
        added += len(new)
    return "".join(lines), added


def _add_noqa(job: Job, data: bytes) -> JobResult:
    if not might_report(data, job.name):
        return JobResult()  # the check would skip the file: no finding to suppress there
    from .engine import read_source
    from .parsing import syntax_error
    result = lint_bytes(data, job.name, job.settings)
    try:
        source = read_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return JobResult(findings=result.findings)
    findings = [f for f in result.findings if (f.code, f.location.row, f.location.column) not in job.unreported]
    text, added = add_noqa_text(source.text, findings)
    if not added:
        return JobResult()
    if syntax_error(text) is not None:  # a guard: a comment never breaks a file
        return JobResult(findings=result.findings,
                         errors=[f"{job.name}: a noqa comment would not parse here; left unchanged"])
    try:
        write_atomically(Path(job.path), source.to_bytes(text), expected=data)
    except (OSError, UnicodeEncodeError) as exc:
        return JobResult(errors=[f"{job.name}: could not write, left unchanged ({exc})"])
    return JobResult(applied=added, changed=1)


# ---------------------------------------------------------------------------- many files
def run_jobs(jobs: list, workers: int, cache: Optional["Cache"] = None) -> list:
    """Results in the order of ``jobs``. Small runs stay in this process (a pool costs ~100 ms).
    SIGTERM stops the run like Ctrl-C (KeyboardInterrupt): the workers stop first, a write in
    progress completes or is undone, and no worker outlives the run (they also die with this
    process if it is killed outright)."""
    try:
        with _terminate_as_interrupt():
            return _run(jobs, workers, cache)
    except KeyboardInterrupt:
        # Typer would turn this into a silent exit 130; pinlint says what happened and exits 2.
        print("pinlint: error: interrupted", file=sys.stderr, flush=True)
        if _Stopped.pool:
            # The workers are gone (_stop_pool waited for them); the executor's own threads, which the
            # interpreter joins at exit, can block for good once their workers were killed (seen under
            # load: a stopped `pinlint fix` that never ended). Nothing is left to write or to clean up.
            sys.stdout.flush()
            os._exit(2)
        raise SystemExit(2) from None


def _run(jobs: list, workers: int, cache: Optional["Cache"]) -> list:
    if cache is not None:
        # Answered from the cache here first: a warm run then starts no pool (and no worker imports
        # the analysis) unless enough files changed to need one.
        results = [_cached(job, cache) for job in jobs]
        misses = [index for index, result in enumerate(results) if result is None]
        if len(misses) < len(jobs):
            for index, result in zip(misses, _run_all([jobs[i] for i in misses], workers, cache)):
                results[index] = result
            return results
    return _run_all(jobs, workers, cache)


def _cached(job: Job, cache: "Cache") -> Optional[JobResult]:
    """The job's result from the cache, when it is a lint of an unchanged file (None otherwise)."""
    if job.mode != LINT:
        return None
    try:
        data = Path(job.path).read_bytes()
    except OSError:
        return None  # the job itself reports it
    hit = cache.entry(cache.key(data, job.settings), job.name)
    return JobResult(findings=hit[0], reached=hit[1]) if hit is not None else None


def _run_all(jobs: list, workers: int, cache: Optional["Cache"]) -> list:
    if not jobs:
        return []
    root = Path.cwd()
    trees = _trees_outside(jobs, root)
    if workers <= 1 or len(jobs) < 2 * workers:
        _start_project(root, trees)
        try:
            return [process(job, cache) for job in jobs]
        finally:
            _end_project()
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(os.getpid(), root, trees))
    try:
        futures = [pool.submit(_process_chunk, [(jobs[i], cache) for i in chunk]) for chunk in _chunks(jobs, workers)]
        results = [result for future in futures for result in future.result()]
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown()
    return results


def _trees_outside(jobs: list, root: Path) -> tuple:
    """The folders holding the checked files that lie outside the working directory (each file's top
    package's folder, where `import` finds its neighbours): their modules are the checked tree too, so
    `pinlint check ../project` follows calls into them as `pinlint check .` run there does."""
    from .modulefiles import search_folders
    found: dict = {}
    resolved_root = root.resolve()
    for job in jobs:
        try:
            path = Path(job.path).resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        if resolved_root in path.parents:
            continue
        folder = search_folders(path, None)[0]
        found.setdefault(folder, None)
    return tuple(found)


def _chunks(jobs: list, workers: int) -> list:
    """The jobs cut into runs of neighbouring files (a worker keeps the modules and analyses they
    share), the first runs large and each later one smaller, sized by bytes, so that the workers
    run out of work together: with equal runs of 64 files, one of two workers got 61% of cupy's
    bytes and the other sat idle at the end."""
    sizes = [_size(job) for job in jobs]
    total = sum(sizes) or 1
    smallest = total / (64 * workers)
    chunks, start, remaining = [], 0, total
    while start < len(jobs):
        target = max(remaining / (2 * workers), smallest)
        end, taken = start, 0
        while end < len(jobs) and (taken < target or end == start):
            taken += sizes[end]
            end += 1
        chunks.append(range(start, end))
        remaining -= taken
        start = end
    return chunks


def _size(job: Job) -> int:
    try:
        return max(os.stat(job.path).st_size, 1)
    except (OSError, ValueError):
        return 1


class _terminate_as_interrupt:
    """While a run lasts, SIGTERM raises KeyboardInterrupt in the main thread, so both end it the
    same clean way; the previous handler comes back afterwards."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt()


class _Stopped:
    pool = False  # a pool was stopped in this process: see run_jobs


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop every worker (each ends at once, or right after the write it is in) and wait for each of
    them, not for the executor: with its workers killed, its queue threads may never return."""
    _Stopped.pool = True
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for worker in workers:
        try:
            worker.terminate()
        except (OSError, AttributeError):
            pass
    # At once, as before waiting: the executor's thread then ends as shut down rather than failing the
    # futures map() has already cancelled (which raises InvalidStateError in that thread).
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        try:
            worker.join(timeout=10)
            if worker.is_alive():  # still inside a write after 10 s: it must not write again
                worker.kill()
                worker.join(timeout=5)
        except (OSError, AttributeError, ValueError):
            pass


def _init_worker(parent: int, root: Optional[Path] = None, trees: tuple = ()) -> None:
    """A pool worker: Ctrl-C goes to the whole process group, but the parent stops the run; SIGTERM
    (from the parent, or from the kernel when the parent dies) ends the worker without cutting a
    write short; and before each write the worker checks that its parent is still there. It keeps
    one project (the checked tree's modules and their analyses) for every file it is given."""
    from .fixes import request_stop, stop_writing_when
    _start_project(root, trees)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: request_stop())
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the line above took effect
    stop_writing_when(lambda: os.getppid() == parent)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM to this process when its parent dies (prctl)."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere the parent-liveness check before each write stops the writing
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _process_chunk(items: list) -> list:
    """A worker's run of jobs: ``[(job, cache), ...]``."""
    return [process(job, cache) for job, cache in items]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------- the cache
def _tables_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted((rules_dir() / "api").glob("*.toml")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_DIGESTS: dict = {}  # (path, mtime, size) -> sha256 of a file other files' entries rest on


def _digest(path: str) -> Optional[str]:
    """A file's sha256, hashed once while it is unchanged (a framework module is a dependency of
    hundreds of entries: a warm run of pytorch-lightning hashed it for each)."""
    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        found = _DIGESTS.get(key)
        if found is None:
            found = _DIGESTS[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return found
    except OSError:
        return None


@dataclass(frozen=True)
class Cache:
    """Findings per file content, keyed by the content hash, the settings, pinlint's version and its
    API tables: ``.pinlint_cache/`` in the project root. Entries are written atomically, so concurrent
    runs at worst compute the same entry twice."""

    directory: Path
    fingerprint: str

    @staticmethod
    def open(root: Path, folder: Optional[Path] = None) -> "Cache":
        """The cache in ``folder`` (--cache-dir), by default ``.pinlint_cache/`` in the project root."""
        directory = (folder if folder is not None else root / ".pinlint_cache") / __version__
        return Cache(directory, f"{__version__}:{_tables_fingerprint()}")

    def key(self, data: bytes, settings: Settings) -> str:
        digest = hashlib.sha256(data)
        digest.update(f"|{self.fingerprint}|{sorted(settings.select)}|{settings.thresholds()}|"
                      f"{settings.render_fixes}|{settings.ignore_noqa}".encode())
        return digest.hexdigest()

    def get(self, key: str, filename: str) -> Optional[list]:
        """The findings stored for this content, if every other file they rest on is unchanged."""
        found = self.entry(key, filename)
        return found[0] if found is not None else None

    def entry(self, key: str, filename: str) -> Optional[tuple]:
        """(findings, pinning calls its PIN002 reach) stored for this content, if every other file
        they rest on is unchanged."""
        try:
            entry = json.loads((self.directory / key[:2] / key).read_text(encoding="utf-8"))
            for path, digest in entry["dependencies"]:
                if _digest(path) != digest:
                    return None
            return ([_finding_from_json(item, filename) for item in entry["findings"]],
                    tuple(tuple(r) for r in entry.get("reached", ())))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, findings: list, dependencies: tuple = (), reached: tuple = ()) -> None:
        from .report import finding_to_json
        folder = self.directory / key[:2]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._ignore_file()
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"findings": [_finding_extra(finding_to_json(f), f) for f in findings],
                           "dependencies": [list(d) for d in dependencies],
                           "reached": [list(r) for r in reached]}, handle)
            os.replace(temporary, folder / key)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def _ignore_file(self) -> None:
        marker = self.directory.parent / ".gitignore"
        if not marker.exists():
            marker.write_text("# Created by pinlint\n*\n", encoding="utf-8")


def _finding_extra(data: dict, finding: Finding) -> dict:
    data["_extra"] = {"nbytes": finding.nbytes, "direction": finding.direction, "pooled": finding.pooled}
    return data


def _location(data: dict) -> Location:
    return Location(data["row"], data["column"])


def _finding_from_json(data: dict, filename: str) -> Finding:
    fix = None
    if data["fix"] is not None:
        fix = Fix(data["fix"]["applicability"], data["fix"]["message"], tuple(
            Edit(e["content"], _location(e["location"]), _location(e["end_location"])) for e in data["fix"]["edits"]))
    related = tuple(Related(r["message"], r.get("filename", filename), _location(r["location"]),
                            _location(r["end_location"]), cell=r.get("cell")) for r in data.get("related", []))
    trace = tuple(Related(t["message"], t.get("filename", filename), _location(t["location"]),
                          _location(t["end_location"]), cell=t.get("cell")) for t in data.get("trace", []))
    extra = data.get("_extra", {})
    return Finding(code=data["code"], message=data["message"], filename=filename, location=_location(data["location"]),
                   end_location=_location(data["end_location"]), fix=fix, related=related, url=data.get("url"),
                   trace=trace, cell=data.get("cell"),
                   nbytes=extra.get("nbytes"), direction=extra.get("direction", ""), pooled=extra.get("pooled", False))


def clean(root: Path) -> bool:
    import shutil
    target = root / ".pinlint_cache"
    if target.is_dir():
        shutil.rmtree(target)
        return True
    return False
