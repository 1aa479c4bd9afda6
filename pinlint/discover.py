"""Which files to check: recursive discovery of Python files, skipping tool and environment folders,
configured excludes and (by default) what .gitignore files ignore."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".env", ".tox", ".nox", ".eggs",
    "build", "dist", "node_modules", "site-packages", "__pypackages__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".pinlint_cache", ".ipynb_checkpoints", ".direnv", "*.egg-info",
)
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list = field(default_factory=list)    # Path objects, sorted, no duplicates
    errors: list = field(default_factory=list)   # one-line messages for paths that could not be used


class _Excluder:
    def __init__(self, root: Path, patterns: Iterable[str], respect_gitignore: bool) -> None:
        self.root = root.resolve()
        self.patterns = tuple(patterns)
        self.respect_gitignore = respect_gitignore
        self._gitignores: dict = {}

    def _spec(self, directory: Path):
        if directory not in self._gitignores:
            spec = None
            ignore_file = directory / ".gitignore"
            if ignore_file.is_file():
                import pathspec
                try:
                    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except Exception:  # noqa: BLE001 - a broken .gitignore excludes nothing
                    spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def excluded(self, path: Path, is_dir: bool) -> bool:
        resolved = path.resolve() if not path.is_symlink() else path.absolute()
        try:
            relative = resolved.relative_to(self.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        for pattern in self.patterns:
            if fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(relative, pattern) or \
                    fnmatch.fnmatch(relative, pattern.rstrip("/") + "/*"):
                return True
        if is_dir and (path / "pyvenv.cfg").is_file():
            return True  # a virtual environment, whatever its name
        if self.respect_gitignore:
            return self._gitignored(resolved, is_dir)
        return False

    def _gitignored(self, resolved: Path, is_dir: bool) -> bool:
        """Git's rule: every .gitignore from the repository's top down to the file's folder is read,
        and the deepest pattern that matches (a `!negation` too) decides."""
        folders = []
        for directory in [resolved.parent, *resolved.parent.parents]:
            folders.append(directory)
            if (directory / ".git").exists() or directory == directory.parent:
                break
        ignored = False
        for directory in reversed(folders):
            spec = self._spec(directory)
            if spec is None:
                continue
            sub = resolved.relative_to(directory).as_posix() + ("/" if is_dir else "")
            verdict = spec.check_file(sub).include
            if verdict is not None:
                ignored = verdict
        return ignored

    def under_root(self, path: Path) -> list:
        """The folders between the project root and ``path`` (the ones excludes apply to)."""
        resolved = path.resolve()
        return [p for p in resolved.parents if p != self.root and self.root in p.parents]


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
        path = Path(raw)
        if not path.exists():
            result.errors.append(f"{raw}: No such file or directory")
        elif path.is_file():
            # A file named explicitly is checked whatever its suffix, and (unless --force-exclude) its exclusion.
            if not (force_exclude and (excluder.excluded(path, False) or
                                       any(excluder.excluded(p, True) for p in excluder.under_root(path)))):
                add(path)
        elif path.is_dir():
            visited: set = set()
            for directory, dirs, files in os.walk(path, followlinks=True, onerror=lambda e: result.errors.append(
                    f"{e.filename}: {e.strerror}")):
                here = Path(directory)
                real = os.path.realpath(directory)
                if real in visited:  # a symlink loop
                    dirs[:] = []
                    continue
                visited.add(real)
                dirs[:] = sorted(d for d in dirs if not excluder.excluded(here / d, True))
                for name in sorted(files):
                    candidate = here / name
                    if name.endswith(PYTHON_SUFFIXES) and candidate.is_file() and \
                            not excluder.excluded(candidate, False):
                        add(candidate)
        else:
            result.errors.append(f"{raw}: not a regular file or directory")
    return result
