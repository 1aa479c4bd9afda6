"""On a GPU with CUPTI: ``pinlint trace`` on one small program per library (tests/trace_programs/)
attributes each copy and pinned allocation to its tagged line with the right memory kind, and
reports the pageable asynchronous copy as PIN001. The trace itself runs the program in a child
process, which is the point, so these tests run ``pinlint`` as a subprocess."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parent / "trace_programs"
MODULES = {"cupy": "cupy", "numba": "numba", "pycuda": "pycuda", "cudapython_runtime": "cuda.bindings",
           "cudapython_driver": "cuda.bindings", "torch": "torch"}


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def tags(path: Path) -> dict:
    """``# @tag`` comment -> the row it is on."""
    found = {}
    for row, line in enumerate(path.read_text().splitlines(), 1):
        if "# @" in line:
            found[line.split("# @", 1)[1].split()[0]] = row
    return found


def trace(path: Path, tmp_path: Path) -> dict:
    report = tmp_path / "trace.json"
    done = subprocess.run([sys.executable, "-m", "pinlint", "trace", "--format", "json", "-o", str(report), "--",
                           sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])  # the pageable copy is a problem
    return json.loads(report.read_text())


def at(items: list, path: Path, row: int) -> list:
    return [i for i in items if i["location"]["row"] == row and Path(i["filename"]).name == path.name]


@pytest.mark.gpu
@pytest.mark.parametrize("library", sorted(MODULES))
def test_each_copy_and_allocation_lands_on_its_line(library, tmp_path):
    if not _have("cupti"):
        pytest.skip('CUPTI is not installed (pip install "cuda-pinlint[trace]")')
    if not _have(MODULES[library]):
        pytest.skip(f"{MODULES[library]} is not installed here")
    path = PROGRAMS / f"{library}_program.py"
    rows = tags(path)
    data = trace(path, tmp_path)

    pageable = at(data["copies"], path, rows["pageable"])
    assert pageable and {c["host_kind"] for c in pageable} == {"pageable"}, pageable
    assert all(c["asynchronous"] and c["direction"] == "h2d" and c["bytes"] == 16 << 20 for c in pageable)
    assert [o["code"] for o in at(data["observations"], path, rows["pageable"])] == ["PIN001"]

    pinned = at(data["copies"], path, rows["pinned"])
    assert pinned and {c["host_kind"] for c in pinned} == {"pinned"}, pinned
    assert not at(data["observations"], path, rows["pinned"])
    # The pinned copy did not hold the host the way the pageable one did.
    assert max(c["host_ns"]["max"] for c in pinned) < min(c["host_ns"]["min"] for c in pageable)

    looped = at(data["allocations"], path, rows["loop-alloc"])
    count = sum(a["count"] for a in looped)
    if library == "torch":
        assert count >= 1  # torch's caching host allocator reuses the freed block
    else:
        assert count == 3, looped
        assert [o["code"] for o in at(data["observations"], path, rows["loop-alloc"])] == ["PIN002"]

    if "wc" in rows:
        wc = at(data["allocations"], path, rows["wc"])
        assert wc and all(a["flags"] & 4 for a in wc), wc
        assert "PIN003" in [o["code"] for o in at(data["observations"], path, rows["wc"])]
    if "mapped" in rows:
        mapped = at(data["allocations"], path, rows["mapped"])
        assert mapped and all(a["flags"] & 2 for a in mapped), mapped
