"""Attribution: which Python line made a CUDA call.

The line is the innermost frame in the user's code: not the standard library, not an installed
package (site-packages, dist-packages), not pinlint. A CUDA call made where no frame is the user's
(a library's own thread, an interpreter shutting down) goes to the innermost library frame instead,
marked as such.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from typing import Optional

from .events import UNATTRIBUTED, Site

_PINLINT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def library_roots() -> tuple:
    """Folders whose files are not the user's: the standard library, every site folder, any folder
    on sys.path that packages were installed into, pinlint."""
    roots = {_PINLINT}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(path)
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # some virtualenvs' site module
        pass
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        roots.add(user_site)
    roots.update(p for p in sys.path if _holds_installs(p))
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def _holds_installs(folder: str) -> bool:
    """A folder that pip filled (``--target`` of pip, a PYTHONPATH of wheels): it holds
    ``*.dist-info`` folders. A project's own checkout does not (editable installs put theirs in
    site-packages)."""
    try:
        return bool(folder) and any(name.endswith(".dist-info") for name in os.listdir(folder))
    except OSError:
        return False


class Attributor:
    """Finds the user's line on a stack; decisions are cached per file name (a dict lookup per frame)."""

    def __init__(self, roots: Optional[tuple] = None, max_callers: int = 4, cwd: Optional[str] = None) -> None:
        self.roots = library_roots() if roots is None else tuple(roots)
        self.max_callers = max_callers
        self.cwd = cwd or os.getcwd()  # relative code file names are relative to the start folder
        self._files: dict = {}    # co_filename -> absolute path, or None for library code
        self._sites: dict = {}    # (path, line, function, user) -> Site (one object per line)
        # `python -c CODE` and `python - < file` run the user's code as <string> and <stdin>; elsewhere
        # <string> is generated code (dataclasses, namedtuples), not the user's.
        main = sys.argv[0] if sys.argv else ""
        self.pseudo = {"-c": ("<string>",), "-": ("<stdin>",), "": ("<stdin>",)}.get(main, ())

    def user_file(self, filename: str) -> Optional[str]:
        """The absolute path of a user file, or None when ``filename`` is library code."""
        try:
            return self._files[filename]
        except KeyError:
            pass
        decision = self._classify(filename)
        self._files[filename] = decision
        return decision

    def _classify(self, filename: str) -> Optional[str]:
        if filename.startswith("<"):
            return filename if filename in self.pseudo else None
        path = os.path.realpath(os.path.join(self.cwd, filename))
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            return None
        if any(path.startswith(root) for root in self.roots):
            return None
        return path

    def site(self, path: str, line: int, function: str, user: bool) -> Site:
        key = (path, line, function, user)
        found = self._sites.get(key)
        if found is None:
            found = self._sites[key] = Site(path, line, function, user)
        return found

    def locate(self, frame) -> tuple:
        """(site, library, callers, user frame) for the stack that starts at ``frame`` (the innermost
        frame); the user frame is None when no frame is the user's."""
        innermost_library = None
        called = None  # the outermost library frame seen so far: the one the user's line called
        while frame is not None:
            code = frame.f_code
            path = self.user_file(code.co_filename)
            if path is not None:
                return (self.site(path, frame.f_lineno, code.co_name, True), _package(called),
                        self._callers(frame.f_back), frame)
            if innermost_library is None:
                innermost_library = frame
            called = frame
            frame = frame.f_back
        if innermost_library is None:
            return UNATTRIBUTED, "", (), None
        code = innermost_library.f_code
        return (self.site(code.co_filename, innermost_library.f_lineno, code.co_name, False),
                _package(innermost_library), (), None)

    def user_frame(self, frame):
        while frame is not None and self.user_file(frame.f_code.co_filename) is None:
            frame = frame.f_back
        return frame

    def _callers(self, frame) -> tuple:
        found = []
        while frame is not None and len(found) < self.max_callers:
            path = self.user_file(frame.f_code.co_filename)
            if path is not None:
                found.append((path, frame.f_lineno))
            frame = frame.f_back
        return tuple(found)


def _package(frame) -> str:
    if frame is None:
        return ""
    name = frame.f_globals.get("__name__") or ""
    return name.split(".", 1)[0]
