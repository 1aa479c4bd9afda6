import functools
import os
import sys

import pytest

# The suite runs pinlint in-process and, where the process is the point, as a subprocess: with
# PYTHONDONTWRITEBYTECODE set (as on some CI images) every one of them compiled pinlint's modules and
# every worker rewrote every test module again (about 0.1 s a process). The caches go to the
# checkout's ignored __pycache__ folders.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@functools.lru_cache(maxsize=1)
def gpu_reason():
    """None when a CUDA GPU is usable through CuPy, else why GPU tests are skipped."""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - any import failure means no usable GPU stack
        return f"CuPy is not importable ({type(exc).__name__}); GPU tests need `pip install -e .[gpu]` and a GPU"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device is visible"
    except Exception as exc:  # noqa: BLE001
        return f"no CUDA device is usable ({exc})"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and gpu_reason() is not None:
            item.add_marker(pytest.mark.skip(reason=gpu_reason()))
