"""The cheap, sound tests that decide whether a file can have a finding at all, before anything
heavier is imported: most files of a commit or a tree name no GPU library and stop here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from .apitables import default_tables
from .modulefiles import is_file, module_files


def names_gpu_library(data: bytes) -> bool:
    """Every finding needs an import of a GPU library, so its name appears in the file."""
    return any(trigger.encode() in data for trigger in default_tables().triggers)


def calls_relevant_api(data: bytes) -> bool:
    """A finding in the file's own code needs a call, by name, of a copy, a registration or an
    allocation that pins (one pinned by a keyword only where the keyword is written too); a file
    without one still counts when it imports GPU code of the tree (``reaches_gpu_code``)."""
    tables = default_tables()
    if tables.call_pattern.search(data) is not None or _NUMBA_KERNEL.search(data) is not None:
        return True
    keywords, pattern = tables.keyword_pins
    asked = any(keyword in data for keyword in keywords) or _UNPACKED_KEYWORDS.search(data) is not None
    return asked and pattern.search(data) is not None


# A Numba CUDA kernel (`@cuda.jit`, or a ufunc with `target="cuda"`): launched with host arrays it
# copies them to the device and back.
_NUMBA_KERNEL = re.compile(rb"\bcuda\s*\.\s*jit\b|\btarget\s*=\s*['\"]cuda['\"]")

# `f(n, **options)`: the keyword may come in a dict made elsewhere (exponentiation never follows
# an opening parenthesis or a comma).
_UNPACKED_KEYWORDS = re.compile(rb"[(,]\s*\*\*\s*[A-Za-z_({]")


def passes_prefilter(data: bytes) -> bool:
    """Both cheap, sound tests: a file that fails either cannot have a finding other than PIN000."""
    return names_gpu_library(data) and calls_relevant_api(data)


_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w., \t]*)|import[ \t]+([\w., \t]+))",
                          re.MULTILINE)
_REACHES: dict = {}


def imported_modules(data: bytes) -> list:
    """Module names a file's import statements name (``from . import x`` gives ``.x``)."""
    names = []
    for match in _IMPORT_LINE.finditer(data):
        source, imported, plain = match.groups()
        if plain is not None:
            names += [part.strip().split()[0] for part in plain.decode("ascii", "replace").split(",") if part.strip()]
        else:
            base = source.decode("ascii", "replace")
            names.append(base)
            for part in (imported or b"").decode("ascii", "replace").split(","):
                part = part.strip().split(" ")[0] if part.strip() else ""
                if part:
                    names.append(f"{base}.{part}" if not base.endswith(".") else base + part)
    return names


def reaches_gpu_code(data: bytes, path: Optional[Path], depth: int = 3) -> bool:
    """Whether the file imports a module of the checked tree that calls a GPU library's copy or
    pinning API (itself or through its own imports): then a call of that module's code can make a
    finding here, where the file's own buffers meet it."""
    if path is None or depth <= 0:
        return False
    return any(_reaches(candidate, depth - 1) for candidate in imported_files(data, path))


def imported_files(data: bytes, path: Optional[Path]) -> list:
    """The files of the checked tree that the file's import statements name (library modules left
    out: the analysis takes a library's names from its tables and never from the tree, even in the
    library's own repository, where `import cupy` would find cupy/__init__.py)."""
    if path is None:
        return []
    libraries = default_tables().modules
    in_library = None  # whether the file's own package is named like a library (computed once, if asked)
    found = []
    for name in imported_modules(data):
        relative = name.startswith(".")
        if not relative and name.split(".")[0] in libraries:
            continue
        if relative:
            if in_library is None:
                in_library = _top_package(path) in libraries
            if in_library:
                continue  # made absolute, a relative import in cupy/ names `cupy.…`: the tables'
            levels = len(name) - len(name.lstrip("."))
            folder = path.parent
            for _ in range(levels - 1):
                folder = folder.parent
            name = name.lstrip(".")
            candidates = [c for c in (folder / Path(*name.split(".")).with_suffix(".py") if name else None,
                                      folder / Path(*name.split(".")) / "__init__.py" if name else folder / "__init__.py")
                          if c is not None and c.is_file()]
        else:
            candidates = list(module_files(name, path, None, data))[:1]
        found += candidates
    return found


def _top_package(path: Path) -> Optional[str]:
    """The top-level package a file belongs to (the analysis names its modules the same way)."""
    folder, top = path.parent, None
    while is_file(folder / "__init__.py") and folder.parent != folder:
        top, folder = folder.name, folder.parent
    return top


def _reaches(path: Path, depth: int) -> bool:
    try:
        key = (path.resolve(), path.stat().st_mtime_ns, depth)
    except OSError:
        return False
    found = _REACHES.get(key)
    if found is None:
        _REACHES[key] = False  # an import cycle ends here
        try:
            data = path.read_bytes()
        except OSError:
            return False
        found = passes_prefilter(data) or reaches_gpu_code(data, path, depth)
        _REACHES[key] = found
    return found



def _source_path(filename: str) -> Optional[Path]:
    path = Path(filename)
    try:
        return path if path.suffix in (".py", ".pyi", ".ipynb") and path.is_file() else None
    except (OSError, ValueError):
        return None


def might_report(data: bytes, filename: str) -> bool:
    """Whether ``lint_bytes`` would look past the prefilter (its own first test, unchanged): a file that
    names no GPU library and imports no module of the tree that copies is skipped unparsed."""
    return names_gpu_library(data) or reaches_gpu_code(data, _source_path(filename))
