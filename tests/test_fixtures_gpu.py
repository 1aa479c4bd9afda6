"""On a GPU, every fixture runs to completion in a fresh process (the verification harness runs the
same programs and their fixes, so a fixture that cannot run is a broken promise)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from fixture_catalog import FIXTURES, fixture_files, library_of

_MODULES = {"cupy": "cupy", "numba": "numba.cuda", "pycuda": "pycuda", "cudapython": "cuda.bindings",
            "torch": "torch"}
_RUN = "import runpy, sys; m = runpy.run_path(sys.argv[1]); print('result', m['run'](min(m['SIZES'])))"


@pytest.mark.gpu
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_runs_on_gpu(path):
    module = _MODULES[library_of(path)]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed here")
    done = subprocess.run([sys.executable, "-c", _RUN, str(path)], capture_output=True, text=True,
                          timeout=300, cwd=FIXTURES)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "result" in done.stdout
