"""pinlint: find and fix host-memory-type mistakes in CUDA Python code."""

import sys as _sys

__version__ = "0.1.0"

# `python -m pinlint` puts the working folder first on the module path, so a checked project's own
# `typing.py` or `enum.py` would shadow the standard library pinlint imports (a traceback before any
# check ran). pinlint never imports the code it checks: while `-m` is still locating this package
# (argv[0] is "-m" then), that entry is dropped. The console script and in-process use are unaffected.
if _sys.argv[:1] == ["-m"] and _sys.path and _sys.path[0] in ("", __import__("os").getcwd()):
    del _sys.path[0]
