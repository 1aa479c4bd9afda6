"""Which files to check: recursive discovery of Python files, skipping tool and environment folders."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".env", ".tox", ".nox", ".eggs",
    "build", "dist", "node_modules", "site-packages", "__pypackages__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".pinlint_cache", ".ipynb_checkpoints", ".direnv",
})
PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: list = field(default_factory=list)    # Path objects, sorted, no duplicates
    errors: list = field(default_factory=list)   # one-line messages for paths that could not be used


def _skip_dir(path: Path) -> bool:
    return path.name in SKIPPED_DIRS or path.name.endswith(".egg-info") or (path / "pyvenv.cfg").is_file()


def discover(paths: Iterable[str]) -> Discovery:
    result = Discovery()
    seen: set = set()

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
            add(path)  # a file named explicitly is checked whatever its suffix
        elif path.is_dir():
            for root, dirs, files in os.walk(path, onerror=lambda e: result.errors.append(
                    f"{e.filename}: {e.strerror}")):
                root_path = Path(root)
                dirs[:] = sorted(d for d in dirs if not _skip_dir(root_path / d))
                for name in sorted(files):
                    if name.endswith(PYTHON_SUFFIXES):
                        candidate = root_path / name
                        if candidate.is_file():
                            add(candidate)
        else:
            result.errors.append(f"{raw}: not a regular file or directory")
    return result
