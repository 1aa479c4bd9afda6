"""The text prefilter must be sound: it may only skip files that cannot have a finding."""

from __future__ import annotations

import sys
import textwrap

import pytest

from helpers import RULES_API, fixture_expectations
from pinlint.apitables import default_tables
from pinlint.checks import ALL_RULES
from pinlint.engine import lint_bytes, passes_prefilter
from pinlint.settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _invalid_programs():
    for rule in ALL_RULES:
        for index, program in enumerate(rule.INVALID):
            yield pytest.param(textwrap.dedent(program), id=f"{rule.code}-INVALID-{index}")


@pytest.mark.parametrize("program", list(_invalid_programs()))
def test_every_invalid_example_passes_the_prefilter(program):
    assert passes_prefilter(program.encode("utf-8"))


_EXPECTING = [(p, e) for p, e in fixture_expectations() if e]


def test_there_are_fixtures_expecting_codes():
    assert _EXPECTING


@pytest.mark.parametrize("path", [p for p, _ in _EXPECTING], ids=[f"{p.parent.name}/{p.name}" for p, _ in _EXPECTING])
def test_every_fixture_expecting_a_code_passes_the_prefilter(path):
    assert passes_prefilter(path.read_bytes())


def _table_modules() -> dict[str, str]:
    modules: dict[str, str] = {}
    for path in sorted(RULES_API.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for module in data.get("modules", []):
            modules[module] = data["library"]
    return modules


def test_the_tables_list_modules():
    modules = _table_modules()
    assert {"cupy", "cupyx", "numba", "pycuda", "cuda", "torch", "numpy"} <= set(modules)


@pytest.mark.parametrize("module", sorted(m for m, lib in _table_modules().items() if lib not in ("numpy", "python")))
def test_triggers_cover_every_gpu_module(module):
    triggers = default_tables().triggers
    assert any(trigger in module for trigger in triggers), (module, triggers)
    for statement in (f"import {module}\n", f"import {module} as m\n", f"from {module} import x\n"):
        assert passes_prefilter((statement + "d.set(h, stream=s)\n").encode())
        # Naming the library is not enough: some copy or pinnable allocation must be called.
        assert not passes_prefilter((statement + "print(1)\n").encode())


def test_numpy_alone_does_not_pass_the_prefilter():
    assert "numpy" not in default_tables().triggers
    assert not passes_prefilter(b"import numpy as np\nh = np.zeros(10)\n")
    assert not passes_prefilter(b"")


@pytest.mark.parametrize("text", [
    "import numpy as np\nx = np.zeros(3)\n",
    "print('hello')\n",
    "def f(:\n",           # would be PIN000 if parsed: skipped files are not parsed
])
def test_skipped_files_have_no_findings(text):
    result = lint_bytes(text.encode(), "plain.py", Settings())
    assert result.skipped
    assert result.findings == []


def test_passing_files_are_not_skipped():
    result = lint_bytes(b"import cupy\nd = cupy.asarray(h)\ndef f(:\n", "gpu.py", Settings())
    assert not result.skipped
    assert [f.code for f in result.findings] == ["PIN000"]


def test_a_library_of_the_tables_is_not_followed_into_the_tree(tmp_path):
    """In a library's own repository (cupy's: ``import cupy`` finds ``cupy/__init__.py``) the
    analysis still takes the library's names from the tables and never loads that package, so
    importing it does not make a file a caller of the tree's GPU code; a module of the tree that the
    analysis does load still does, and so does a relative import outside a library's package."""
    from pinlint.prefilter import reaches_gpu_code

    copies = b"import cupy\nimport numpy as np\ndef put(h, s):\n    d = cupy.empty(3)\n    d.set(h, stream=s)\n"
    (tmp_path / "cupy").mkdir()
    (tmp_path / "cupy" / "__init__.py").write_bytes(copies)
    (tmp_path / "cupy" / "_util.py").write_bytes(copies)
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_bytes(b"")
    (tmp_path / "mylib" / "upload.py").write_bytes(copies)
    caller = tmp_path / "caller.py"
    assert not reaches_gpu_code(b"import cupy\nfrom cupy import testing\n", caller)
    assert reaches_gpu_code(b"from mylib.upload import put\n", caller)
    inside_library = tmp_path / "cupy" / "core.py"
    assert not reaches_gpu_code(b"from ._util import put\n", inside_library)  # made absolute: cupy._util
    inside_package = tmp_path / "mylib" / "api.py"
    assert reaches_gpu_code(b"from .upload import put\n", inside_package)


def test_an_allocation_pinned_by_a_keyword_counts_only_where_the_keyword_is_written():
    """``torch.empty`` pins only with ``pin_memory=`` in the call or in a dict it unpacks: without
    either in the file it is a pageable buffer, which no rule reports without a copy, and the file
    is skipped; the analysis agrees. A ``**mapping`` may hold the keyword (made in another module):
    such a file is read."""
    from pinlint.engine import lint_text

    pinned = "import torch\nfor i in range(4):\n    h = torch.empty(1 << 20, pin_memory=True)\n    h.fill_(i)\n"
    plain = pinned.replace(", pin_memory=True", "")
    exponent = plain.replace("1 << 20", "2 **20")
    assert passes_prefilter(pinned.encode())
    assert [f.code for f in lint_text(pinned, "a.py", Settings()).findings] == ["PIN002"]
    for text in (plain, exponent):
        assert not passes_prefilter(text.encode())
        assert lint_text(text, "a.py", Settings()).findings == []
    unpacked = "import torch\nfrom .config import PINNED\nfor i in range(4):\n    h = torch.empty(1 << 20, **PINNED)\n    h.fill_(i)\n"
    assert passes_prefilter(unpacked.encode())
    assert passes_prefilter(unpacked.replace("1 << 20, **PINNED", "**dict(size=(8,), pin_memory=True)").encode())
    assert passes_prefilter(b"import torch\nh = torch.zeros(8)\nd = h.to('cuda', non_blocking=True)\n")  # the copy


def test_a_file_launching_a_numba_kernel_is_analysed():
    # A Numba kernel given host arrays copies them on every launch (PIN007), with no copy written.
    from pinlint.prefilter import passes_prefilter
    src = (b"import numpy as np\nfrom numba import cuda\n\n@cuda.jit\ndef k(a):\n    a[0] = 1\n\n"
           b"a = np.ones(1 << 24)\nfor _ in range(9):\n    k[1, 1](a)\n")
    assert passes_prefilter(src)
    assert not passes_prefilter(src.replace(b"@cuda.jit", b"@jit"))  # a CPU kernel of numba's: nothing to copy
    ufunc = src.replace(b"@cuda.jit", b"@vectorize(['f8(f8)'], target='cuda')")
    assert passes_prefilter(ufunc)  # a CUDA ufunc copies its host arrays too
    assert not passes_prefilter(ufunc.replace(b"'cuda'", b"'parallel'"))
