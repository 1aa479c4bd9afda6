"""Where the checked tree keeps the module an import names: plain file-system lookups, shared by
the prefilter (which must stay cheap to import) and the project (which parses what it finds)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

_EXCLUDED_PARTS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".git", "node_modules", "build",
                             "dist", "__pycache__", ".tox", ".eggs"})


def search_folders(path: Optional[Path], root: Optional[Path]) -> list:
    """Where ``import name`` in the file at ``path`` may find a module of the tree: the folder holding
    the file's top package, the file's own folder and its parents (scripts run from there, and samples
    add `..` to sys.path), the project root and its ``src``."""
    if path is None:
        return [root] if root is not None else []
    folders = []
    top = path.parent
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    folders.append(top)
    folder = path.parent
    for _ in range(6):
        if folder not in folders:
            folders.append(folder)
        if root is not None and (folder == root or root not in folder.parents):
            break
        if folder.parent == folder:
            break
        folder = folder.parent
    if root is not None:
        folders += [f for f in (root, root / "src") if f not in folders]
    return folders


def module_files(name: str, importer: Optional[Path], root: Optional[Path]):
    """Candidate files for module ``name`` imported from the file ``importer``, best first."""
    parts = [p for p in name.split(".") if p]
    if not parts:
        return
    relative = Path(*parts)
    for base in search_folders(importer, root):
        for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
            if candidate.is_file() and not (_EXCLUDED_PARTS & set(candidate.parts)):
                yield candidate
