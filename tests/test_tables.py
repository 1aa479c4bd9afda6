"""The API tables have a schema, checked as they load; a new API that fits an existing effect is a
table row and nothing else."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import RULES_API, source
from pinlint.apitables import TableError, load_tables
from pinlint import tableschema


@pytest.fixture()
def tables_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "api"
    shutil.copytree(RULES_API, folder)
    return folder


def _edit(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_shipped_tables_load():
    tables = load_tables()
    assert tables.functions and tables.methods


def test_every_effect_has_a_handler_and_every_handler_an_effect():
    from pinlint.analysis.effects import EFFECTS
    assert set(EFFECTS) == set(tableschema.EFFECTS)


@pytest.mark.parametrize("file, old, new, expected", [
    # The example: a misspelled argument field loaded silently and made every set() synchronous.
    ("cupy.toml", 'host = { pos = 0, kw = "arr" }\nstream = { pos = 1, kw = "stream" }',
     'host = { pos = 0, kw = "arr" }\nstreem = { pos = 1, kw = "stream" }',
     r"rules/api/cupy\.toml: \[\[method\]\] 'set': unknown key 'streem' \(did you mean 'stream'\?\)"),
    ("cupy.toml", 'effect = "stream"\n', 'effect = "streams"\n',
     r"cupy\.toml: \[\[function\]\] 'cupy\.cuda\.Stream': unknown effect 'streams' \(did you mean 'stream'\?\)"),
    ("torch.toml", 'async = "non-blocking"', 'async = "nonblocking"',
     r"torch\.toml: .*async = 'nonblocking' is not one of .*\(did you mean 'non-blocking'\?\)"),
    ("numba.toml", 'on = "numba.device"', 'on = "numba.devise"',
     r"numba\.toml: \[\[method\]\] 'copy_to_host': unknown receiver 'numba.devise' \(did you mean 'numba.device'\?\)"),
    ("pycuda.toml", 'host = { pos = 1, kw = "src" }', 'host = { position = 1, kw = "src" }',
     r"pycuda\.toml: \[\[function\]\] 'pycuda\.driver\.memcpy_htod', host: unknown key 'position' "
     r"\(did you mean 'pos'\?\)"),
    ("numpy.toml", 'kind = "pageable"', 'kind = "pagable"',
     r"numpy\.toml: .*kind = 'pagable' is not one of .*\(did you mean 'pageable'\?\)"),
    ("numpy.toml", 'fix = "numpy-ctor"', 'fix = "numpy-ctr"',
     r"unknown fix family 'numpy-ctr' \(did you mean 'numpy-ctor'\?\)"),
    ("common.toml", '[cuda]', '[cudaa]', r"common\.toml: unknown key 'cudaa' \(did you mean 'cuda'\?\)"),
])
def test_a_misspelling_is_an_error_naming_file_entry_and_key(tables_copy, file, old, new, expected):
    _edit(tables_copy, file, old, new)
    with pytest.raises(TableError) as raised:
        load_tables(tables_copy)
    assert re.search(expected, str(raised.value)), str(raised.value)


def test_an_unknown_receiver_marker_needs_a_reason(tables_copy):
    _edit(tables_copy, "cupy.toml", 'requires_kw = ["blocking"]', 'requires_kw = ["blocking"]\nunknown_receiver = ""')
    with pytest.raises(TableError):
        load_tables(tables_copy)


def test_a_table_that_is_not_toml_names_its_file(tables_copy):
    (tables_copy / "broken.toml").write_text("library = \n", encoding="utf-8")
    with pytest.raises(TableError, match=r"rules/api/broken\.toml"):
        load_tables(tables_copy)


# ------------------------------------------------------------------ a new API is a row
NEW_LIBRARY_CALL = source("""
    import numpy as np
    import cupy as cp
    h = np.empty(1 << 20, dtype=np.float32)
    d = cp.empty(1 << 20, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync2D(d.data.ptr, 0, h.ctypes.data, 0, 0, 0, cp.cuda.runtime.memcpyHostToDevice, s)
    """)


def _lint_with(folder: Path, text: str) -> list:
    import libcst as cst
    from pinlint.analysis import Project, analyze
    from pinlint.checks import ALL_RULES, CheckContext
    tables = load_tables(folder)
    facts = analyze(cst.parse_module(text), project=Project(tables))
    ctx = CheckContext(line_of=lambda node: facts.info.position(node).start.line, module=facts.info)
    return [rule.code for rule in ALL_RULES for _ in rule.check(facts, ctx)]


def test_a_new_api_of_an_existing_library_is_added_by_a_table_row(tables_copy):
    assert "PIN001" not in _lint_with(tables_copy, NEW_LIBRARY_CALL)
    row = """
[[function]]
names = ["cupy.cuda.runtime.memcpy2DAsync", "cupy.cuda.runtime.memcpyAsync2D"]
effect = "copy"
direction = "kind-arg"
dst = { pos = 0, kw = "dst" }
src = { pos = 2, kw = "src" }
kind_arg = { pos = 6, kw = "kind" }
stream = { pos = 7, kw = "stream" }
async = "always"
"""
    with (tables_copy / "cupy.toml").open("a", encoding="utf-8") as table:
        table.write(row)
    assert "PIN001" in _lint_with(tables_copy, NEW_LIBRARY_CALL)
