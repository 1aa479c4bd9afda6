"""pinlint trace's bootstrap: on PYTHONPATH only while ``pinlint trace`` runs a program.

It starts the recorder before the program's first line, then steps aside: it leaves ``sys.path``
as it found it and imports the ``sitecustomize`` it shadowed, if there is one.
"""

import os
import sys


def _boot():
    here = os.path.dirname(os.path.abspath(__file__))
    home = os.environ.get("PINLINT_TRACE_HOME")
    added = False
    try:
        import pinlint.trace.child as child  # noqa: F401
    except ImportError:  # another interpreter than pinlint's: borrow pinlint from where it lives
        if not home:
            return
        sys.path.append(home)
        added = True
        try:
            import pinlint.trace.child as child  # noqa: F401
        except ImportError:
            return
    finally:
        if added:
            sys.path.remove(home)
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    child.start()


_boot()
del _boot
_this = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # noqa: F401 - the one this file shadowed, if any
except ImportError:
    if _this is not None:  # the import system expects to find this module there when it ends
        sys.modules["sitecustomize"] = _this
