"""Run every bundled fixture of one library once, each as its own ``__main__``, in this process,
for ``pinlint trace --check`` (docs/trace.md):

    pinlint trace --check --format json -o cupy.json -- python bench/trace_fixtures.py cupy

A fixture that fails is reported on stderr and the next one runs.
"""

import glob
import os
import runpy
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixtures")


def main(library: str) -> int:
    failed = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "PIN*", f"{library}_*.py"))):
        if path.endswith(".fixed.py"):
            continue
        try:
            runpy.run_path(path, run_name="__main__")
        except BaseException as exc:  # noqa: BLE001 - one broken fixture must not hide the others
            failed += 1
            print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
