"""Where the checked tree keeps the module an import names: plain file-system lookups, shared by
the prefilter (which must stay cheap to import) and the project (which parses what it finds)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

_EXCLUDED_PARTS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".git", "node_modules", "build",
                             "dist", "__pycache__", ".tox", ".eggs"})


# Within a run (``remember_files``), whether a path is a file is asked once: every import of every
# checked file looks for its module in up to eight folders, two candidates each (130,000 stat calls
# in a cold run of pytorch-lightning). Outside a run (the language server) the disk is asked each time.
_FILES: Optional[dict] = None
_FOUND: Optional[dict] = None  # (name, importer's folder, root) -> candidate files, within a run


_ADDED: Optional[dict] = None  # importer path -> folders it adds to sys.path, within a run


def remember_files(on: bool) -> None:
    global _FILES, _FOUND, _ADDED
    _FILES = {} if on else None
    _FOUND = {} if on else None
    _ADDED = {} if on else None


# `sys.path.append("core")`, `sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))`: a
# folder named by a literal, relative to the working directory or to the file's own folder.
_SYS_PATH_ADDITION = re.compile(
    rb"""sys\.path\.(?:append|insert)\(\s*(?:-?\d+\s*,\s*)?(?:"""
    rb"""[rR]?(['"])([^'"\n\\]+)\1"""
    rb"""|os\.path\.join\(\s*os\.path\.dirname\(\s*(?:os\.path\.(?:abspath|realpath)\(\s*)?__file__\s*\)?\s*\)"""
    rb"""\s*,\s*[rR]?(['"])([^'"\n\\]+)\3\s*\))\s*\)""")


def path_additions(importer: Optional[Path], root: Optional[Path], source=None) -> tuple:
    """The folders the importing file adds to ``sys.path`` by a literal name, where its later imports
    also find modules (SEA-RAFT's `sys.path.append('core')` before `from datasets import ...`, survey
    52): a relative name from the file's folder and from the project root (a script runs from either);
    one joined to the file's own folder from there. ``source``: the file's bytes or text where the
    caller has them already (the file is read otherwise)."""
    if importer is None:
        return ()
    key = (importer, root)
    if _ADDED is not None and key in _ADDED:
        return _ADDED[key]
    if source is None:
        try:
            source = importer.read_bytes()
        except OSError:
            source = b""
    elif isinstance(source, str):
        source = source.encode("utf-8", "surrogatepass") if "sys.path" in source else b""
    found = tuple(_added_folders(source, importer, root)) if b"sys.path" in source else ()
    if _ADDED is not None:
        _ADDED[key] = found
    return found


def _added_folders(source: bytes, importer: Path, root: Optional[Path]) -> list:
    folders = []
    for match in _SYS_PATH_ADDITION.finditer(source):
        literal, joined = match.group(2), match.group(4)
        try:
            name = (literal or joined).decode("utf-8")
        except UnicodeDecodeError:
            continue
        bases = [importer.parent] if joined else [importer.parent] + ([root] if root is not None else [])
        for base in bases:
            folder = Path(name) if Path(name).is_absolute() else base / name
            if folder not in folders and not (_EXCLUDED_PARTS & set(folder.parts)):
                folders.append(folder)
    return folders


def is_file(path: Path) -> bool:
    if _FILES is None:
        return path.is_file()
    found = _FILES.get(path)
    if found is None:
        found = _FILES[path] = path.is_file()
    return found


def search_folders(path: Optional[Path], root: Optional[Path]) -> list:
    """Where ``import name`` in the file at ``path`` may find a module of the tree: the folder holding
    the file's top package, the file's own folder and its parents (scripts run from there, and samples
    add `..` to sys.path), the project root and its ``src`` (without a root: each parent's ``src``)."""
    if path is None:
        return [root] if root is not None else []
    folders = []
    top = path.parent
    while is_file(top / "__init__.py") and top.parent != top:
        top = top.parent
    folders.append(top)
    folder = path.parent
    for _ in range(6):
        if folder not in folders:
            folders.append(folder)
        if root is None and folder / "src" not in folders:
            # No project root (the prefilter asks without one): a src/ layout may sit at any of
            # the parents (tests/test_mem.py importing the package that src/ holds).
            folders.append(folder / "src")
        if root is not None and (folder == root or root not in folder.parents):
            break
        if folder.parent == folder:
            break
        folder = folder.parent
    if root is not None:
        folders += [f for f in (root, root / "src") if f not in folders]
    return folders


def module_files(name: str, importer: Optional[Path], root: Optional[Path], source=None):
    """Candidate files for module ``name`` imported from the file ``importer`` (whose bytes or text,
    where the caller has them, are ``source``), best first. Within a run the answer is kept per importing folder
    and the folders it adds to ``sys.path``: the files of a package import the same modules (a cold run
    of pytorch-lightning made 250,000 paths for 14,500 questions)."""
    added = path_additions(importer, root, source)
    if _FOUND is None:
        return _module_files(name, importer, root, added)
    key = (name, importer.parent if importer is not None else None, root, added)
    found = _FOUND.get(key)
    if found is None:
        found = _FOUND[key] = tuple(_module_files(name, importer, root, added))
    return iter(found)


def _module_files(name: str, importer: Optional[Path], root: Optional[Path], added: tuple):
    parts = [p for p in name.split(".") if p]
    if not parts:
        return
    relative = Path(*parts)
    folders = search_folders(importer, root)
    for base in folders + [f for f in added if f not in folders]:
        for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
            if is_file(candidate) and not (_EXCLUDED_PARTS & set(candidate.parts)):
                yield candidate
