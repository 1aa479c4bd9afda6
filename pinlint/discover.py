"""Which files to check: recursive discovery of Python files, skipping tool and environment folders,
configured excludes and (by default) what .gitignore files ignore."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".env", ".tox", ".nox", ".eggs",
    "build", "dist", "node_modules", "site-packages", "__pypackages__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".pinlint_cache", ".ipynb_checkpoints", ".direnv", "*.egg-info",
)
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")
NO_FILES = "No Python files found under the given path(s)"


@dataclass
class Discovery:
    files: list = field(default_factory=list)    # Path objects, sorted, no duplicates
    errors: list = field(default_factory=list)   # one-line messages for paths that could not be used
    warnings: list = field(default_factory=list)  # files met while walking that were passed over


class _Excluder:
    """Exclude patterns (names like `build`, globs like `*.egg-info`, paths like `legacy/*.py`) and the
    .gitignore files of the repository, checked for each folder and file that discovery meets."""

    def __init__(self, root: Path, patterns: Iterable[str], respect_gitignore: bool) -> None:
        self.root = root.resolve()
        self.respect_gitignore = respect_gitignore
        patterns = [p.rstrip("/") for p in patterns if p.strip()]
        self.names = {p for p in patterns if not any(c in p for c in "*?[/")}
        self.name_regex = _compile(p for p in patterns if "/" not in p and p not in self.names)
        self.path_regex = _compile([*(p for p in patterns if "/" in p), *(p + "/*" for p in patterns if "/" in p)])
        self._specs: dict = {}
        self._chains: dict = {}

    def _spec(self, directory: Path):
        if directory not in self._specs:
            spec = None
            ignore_file = directory / ".gitignore"
            if ignore_file.is_file():
                import pathspec
                try:
                    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except Exception:  # noqa: BLE001 - a broken .gitignore excludes nothing
                    spec = None
            self._specs[directory] = spec
        return self._specs[directory]

    def _chain(self, directory: Path) -> list:
        """(folder, spec) for each .gitignore from the repository's top down to ``directory``."""
        if directory not in self._chains:
            if (directory / ".git").exists() or directory == directory.parent:
                above: list = []
            else:
                above = self._chain(directory.parent)
            spec = self._spec(directory)
            self._chains[directory] = above + [(directory, spec)] if spec is not None else above
        return self._chains[directory]

    def excluded(self, path: Path, is_dir: bool) -> bool:
        name = path.name
        if name in self.names or (self.name_regex is not None and self.name_regex.match(name)):
            return True
        located = _located(path)
        if self.path_regex is not None:
            try:
                relative = located.relative_to(self.root).as_posix()
            except ValueError:
                relative = path.as_posix()
            if self.path_regex.match(relative):
                return True
        if is_dir and _is_file(path / "pyvenv.cfg"):
            return True  # a virtual environment, whatever its name
        if self.respect_gitignore:
            return self._gitignored(located, is_dir)
        return False

    def _gitignored(self, resolved: Path, is_dir: bool) -> bool:
        """Git's rule: every .gitignore from the repository's top down to the file's folder is read,
        and the deepest pattern that matches (a `!negation` too) decides."""
        ignored = False
        for directory, spec in self._chain(resolved.parent):
            verdict = spec.check_file(resolved.relative_to(directory).as_posix() + ("/" if is_dir else "")).include
            if verdict is not None:
                ignored = verdict
        return ignored

    def under_root(self, path: Path) -> list:
        """The folders between the project root and ``path`` (the ones excludes apply to)."""
        resolved = path.resolve()
        return [p for p in resolved.parents if p != self.root and self.root in p.parents]


def _located(path: Path) -> Path:
    """The absolute path with its folders' links resolved but not its own name: git matches a
    symbolic link by the link's name, and a link that loops or points nowhere cannot be resolved."""
    absolute = path.absolute()
    if absolute.name in ("", ".", ".."):
        return absolute.resolve()
    return absolute.parent.resolve() / absolute.name


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # permission denied, a symlink loop: not a file we can use
        return False


def _unusable_link(path: Path) -> Optional[str]:
    """Why a symbolic link cannot be followed (a loop, a missing target), or None (also for a path
    that cannot even be looked at: an unreadable folder is reported where it is walked)."""
    try:
        if not path.is_symlink():
            return None
    except OSError:
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return "a symbolic link loop" if exc.errno == errno.ELOOP else f"a broken symbolic link ({exc.strerror})"
    return None


def _compile(patterns):
    patterns = list(patterns)
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)) if patterns else None


def discover(paths: Iterable[str], root: Optional[Path] = None, exclude: Iterable[str] = DEFAULT_EXCLUDE,
             respect_gitignore: bool = True, force_exclude: bool = False) -> Discovery:
    result = Discovery()
    seen: set = set()
    excluder = _Excluder(root or Path.cwd(), exclude, respect_gitignore)

    def add(path: Path) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            result.files.append(path)

    for raw in paths:
        try:
            _add_path(raw, result, excluder, add, force_exclude)
        except OSError as exc:  # a name too long, a folder that cannot be entered...
            result.errors.append(f"{raw}: {exc.strerror or exc}")
    if not result.files and not result.errors:
        result.warnings.append(NO_FILES)
    return result


def is_excluded(path: str, root: Optional[Path] = None, exclude: Iterable[str] = DEFAULT_EXCLUDE,
                respect_gitignore: bool = True) -> bool:
    """Whether excludes (and .gitignore) cover ``path`` or a folder above it (``--force-exclude`` for a
    name that need not exist, such as ``--stdin-filename``'s)."""
    excluder = _Excluder(root or Path.cwd(), exclude, respect_gitignore)
    candidate = Path(path)
    return excluder.excluded(candidate, False) or any(excluder.excluded(p, True) for p in excluder.under_root(candidate))


def _add_path(raw: str, result: Discovery, excluder: "_Excluder", add, force_exclude: bool) -> None:
    """One path named on the command line: a file, a folder walked for Python files, or an error."""
    path = Path(raw)
    broken = _unusable_link(path)
    if broken is not None:
        result.errors.append(f"{raw}: {broken}")
    elif not path.exists():
        result.errors.append(f"{raw}: No such file or directory")
    elif path.is_file():
        # A file named explicitly is checked whatever its suffix, and (unless --force-exclude) its exclusion.
        if not (force_exclude and (excluder.excluded(path, False) or
                                   any(excluder.excluded(p, True) for p in excluder.under_root(path)))):
            add(path)
    elif path.is_dir():
        _walk(path, result, excluder, add)
    else:
        result.errors.append(f"{raw}: not a regular file or directory")


def _walk(folder: Path, result: Discovery, excluder: "_Excluder", add) -> None:
    """Python files under a folder, each folder once however symbolic links loop."""
    visited: set = set()
    for directory, dirs, files in os.walk(folder, followlinks=True,
                                          onerror=lambda e: result.errors.append(f"{e.filename}: {e.strerror}")):
        here = Path(directory)
        real = os.path.realpath(directory)
        if real in visited:  # a symlink loop
            dirs[:] = []
            continue
        visited.add(real)
        dirs[:] = sorted(d for d in dirs if not excluder.excluded(here / d, True))
        for name in sorted(files):
            candidate = here / name
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            if _is_file(candidate):
                if not excluder.excluded(candidate, False):
                    add(candidate)
            elif (broken := _unusable_link(candidate)) is not None and not excluder.excluded(candidate, False):
                result.warnings.append(f"{candidate}: {broken}; skipped")
