"""Across functions and modules: buffers through parameters, returns, holder objects, lists, dicts and
the checked tree's own imports, reported where the evidence meets with the path as a trace.

Each project of ``interproc_projects`` is written to a folder and checked as a whole with the command
line (in this process); ``# expect:`` lines must carry exactly the findings expected there, ``# via:``
lines must appear in a finding's trace, and nothing else may be reported.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from helpers import run_in_process, write, row_of, rows
from interproc_projects import PROJECTS

MARK = re.compile(r"#\s*(expect|via):\s*(PIN\d{3})")


def _write_project(root: Path, files: dict) -> dict:
    marks: dict = {"expect": set(), "via": set()}
    for relative, text in files.items():
        text = textwrap.dedent(text).lstrip("\n")
        write(root, relative, text)
        for row, line in enumerate(text.splitlines(), 1):
            for kind, code in MARK.findall(line):
                marks[kind].add((relative, row, code))
    return marks


def _check(monkeypatch, capsys, root: Path, *extra: str) -> list:
    code, out, err = run_in_process(monkeypatch, capsys, root, "check", "--no-cache", "--format", "json", *extra, ".")
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_project(name, tmp_path, monkeypatch, capsys):
    marks = _write_project(tmp_path, PROJECTS[name])
    found = _check(monkeypatch, capsys, tmp_path)
    reported = {(f["filename"], f["location"]["row"], f["code"]) for f in found}
    assert reported == marks["expect"], [(f["filename"], f["location"]["row"], f["code"], f["message"]) for f in found]
    traced = {(t["filename"], t["location"]["row"], f["code"]) for f in found for t in f.get("trace", [])}
    assert marks["via"] <= traced, (marks["via"] - traced, traced)


def test_the_trace_runs_from_the_allocation_to_the_copy(tmp_path, monkeypatch, capsys):
    _write_project(tmp_path, PROJECTS["helper-cross-module-pycuda"])
    [finding] = [f for f in _check(monkeypatch, capsys, tmp_path) if f["code"] == "PIN001"]
    steps = [(t["filename"], t["location"]["row"], t["message"]) for t in finding["trace"]]
    assert steps[0][:2] == ("main.py", 8) and "allocated" in steps[0][2]
    assert steps[1][:2] == ("main.py", 10) and "upload" in steps[1][2]
    assert steps[-1][:2] == ("helpers.py", 4) and "memcpy_htod_async" in steps[-1][2]
    assert "via `upload` (helpers.py:4)" in finding["message"]
    assert finding["related"][0]["location"]["row"] == 8


def test_text_output_names_the_function_the_copy_is_in(tmp_path, monkeypatch, capsys):
    _write_project(tmp_path, PROJECTS["helper-cross-module-pycuda"])
    code, out, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", ".")
    assert code == 1
    assert "main.py:10:5: PIN001" in out and "via `upload` (helpers.py:4)" in out


def test_a_fix_is_offered_where_the_allocation_is_in_the_reported_file(tmp_path, monkeypatch, capsys):
    _write_project(tmp_path, PROJECTS["param-helper-cupy"])
    [finding] = _check(monkeypatch, capsys, tmp_path)
    assert finding["fix"] is not None and "cupyx.zeros_pinned" in finding["fix"]["message"]


def test_noqa_at_the_reported_call_suppresses_it(tmp_path, monkeypatch, capsys):
    files = dict(PROJECTS["helper-cross-module-pycuda"])
    files["main.py"] = files["main.py"].replace("# expect: PIN001", "# noqa: PIN001")
    _write_project(tmp_path, files)
    assert [f["code"] for f in _check(monkeypatch, capsys, tmp_path)] == ["PIN008"]  # `good`: pinned for one copy


def test_a_file_that_names_no_gpu_library_is_checked_when_it_calls_code_that_copies(tmp_path, monkeypatch,
                                                                                      capsys):
    write(tmp_path, "gpu.py", "import cupy as cp\n\ndef push(d, h, s):\n    d.set(h, stream=s)\n")
    write(tmp_path, "app.py", "import numpy as np\nfrom gpu import push\n\n"
                              "def main(d, s):\n    h = np.zeros(1 << 20)\n    push(d, h, s)\n")
    # d and s are unknown here, so nothing is reported: but the file was analysed, not skipped.
    assert _check(monkeypatch, capsys, tmp_path, "app.py") == []
    write(tmp_path, "app.py", "import numpy as np\nimport cupy as cp\nfrom gpu import push\n\n"
                              "h = np.zeros(1 << 20)\npush(cp.empty(1 << 20), h, cp.cuda.Stream(non_blocking=True))\n")
    assert [f["location"]["row"] for f in _check(monkeypatch, capsys, tmp_path, "app.py")] == [6]


# ------------------------------------------------------------------ the cache follows the summaries
def test_the_cache_rechecks_callers_of_a_changed_module_and_nothing_else(tmp_path, monkeypatch, capsys):
    write(tmp_path, "helpers.py", "import pycuda.driver as cuda\n\n"
                                  "def upload(dev, host, stream):\n    cuda.memcpy_htod_async(dev, host, stream)\n")
    write(tmp_path, "main.py", "import numpy as np\nimport pycuda.driver as cuda\nfrom helpers import upload\n\n"
                               "h = np.zeros(1 << 20, np.float32)\nupload(cuda.mem_alloc(h.nbytes), h, cuda.Stream())\n")
    write(tmp_path, "other.py", "import pycuda.driver as cuda\nimport numpy as np\n\n"
                                "h = np.zeros(1 << 14)\ncuda.memcpy_htod_async(0, h, cuda.Stream())\n")
    first = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    assert sorted(f["filename"] for f in json.loads(first[1])) == ["main.py", "other.py"]

    import pinlint.engine as engine
    linted: list = []
    original = engine.lint_text

    def counting(text, filename, settings, result=None):
        linted.append(Path(filename).name)
        return original(text, filename, settings, result)
    monkeypatch.setattr(engine, "lint_text", counting)
    again = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    assert linted == [] and json.loads(again[1]) == json.loads(first[1])  # all from the cache

    # The helper now synchronizes first: the caller's finding goes; other.py is not checked again.
    write(tmp_path, "helpers.py", "import pycuda.driver as cuda\n\n"
                                  "def upload(dev, host, stream):\n    cuda.memcpy_htod(dev, host)\n")
    third = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    assert sorted(f["filename"] for f in json.loads(third[1])) == ["other.py"]
    assert sorted(linted) == ["helpers.py", "main.py"]


def test_the_cache_rechecks_a_script_when_a_module_it_finds_through_sys_path_changes(tmp_path, monkeypatch, capsys):
    # `sys.path.append("core")` then `from flowdata import make_loader` (SEA-RAFT, survey 52): the
    # script's result depends on core/flowdata.py, and pinning the loader there clears its finding.
    loader = ("from torch.utils import data\n\n"
              "def make_loader(ds):\n    return data.DataLoader(ds, batch_size=8{pin})\n")
    write(tmp_path, "core/flowdata.py", loader.format(pin=""))
    write(tmp_path, "train.py", "import sys\nsys.path.append('core')\n\nfrom flowdata import make_loader\n\n\n"
                                "def train(ds, net):\n    for x in make_loader(ds):\n"
                                "        net(x.cuda(non_blocking=True))\n")
    first = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    assert [f["filename"] for f in json.loads(first[1])] == ["train.py"]
    write(tmp_path, "core/flowdata.py", loader.format(pin=", pin_memory=True"))
    again = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    assert json.loads(again[1]) == []


def test_a_warm_run_answers_from_the_cache_without_a_worker_pool(tmp_path, monkeypatch, capsys):
    bad = "import numpy as np\nimport pycuda.driver as cuda\n\nh = np.zeros(1 << 20)\n" \
          "cuda.memcpy_htod_async(0, h, cuda.Stream())\n"
    for n in range(6):
        write(tmp_path, f"m{n}.py", bad)
    first = run_in_process(monkeypatch, capsys, tmp_path, "check", "--jobs", "1", "--format", "json", ".")
    assert len(json.loads(first[1])) == 6

    from pinlint import runner

    def no_pool(*args, **kwargs):
        raise AssertionError("a worker pool was started for files the cache answers")
    monkeypatch.setattr(runner, "ProcessPoolExecutor", no_pool)
    again = run_in_process(monkeypatch, capsys, tmp_path, "check", "--jobs", "2", "--format", "json", ".")
    assert json.loads(again[1]) == json.loads(first[1])
    # One file changed: it alone is checked (in this process: one file needs no pool).
    write(tmp_path, "m3.py", bad.replace("memcpy_htod_async(0, h, cuda.Stream())", "memcpy_htod(0, h)"))
    third = run_in_process(monkeypatch, capsys, tmp_path, "check", "--jobs", "2", "--format", "json", ".")
    assert sorted(f["filename"] for f in json.loads(third[1])) == [f"m{n}.py" for n in (0, 1, 2, 4, 5)]


# ------------------------------------------------------------------ the language server
def test_the_language_server_uses_the_project_s_modules_for_the_open_file(tmp_path):
    from pinlint.server import SettingsResolver, analyse
    write(tmp_path, "helpers.py", "import pycuda.driver as cuda\n\n"
                                  "def upload(dev, host, stream):\n    cuda.memcpy_htod_async(dev, host, stream)\n")
    # The open buffer names no GPU library itself, and is not saved yet.
    text = ("import numpy as np\nfrom helpers import upload\n\n"
            "def main(dev, stream):\n    h = np.zeros(1 << 20, np.float32)\n    upload(dev, h, stream)\n"
            "    upload(dev, h, make_stream())\n\ndef make_stream():\n    import pycuda.driver as cuda\n"
            "    return cuda.Stream()\n")
    path = write(tmp_path, "main.py", "")
    analysis = analyse(path.as_uri(), text, 1, SettingsResolver())
    # memcpy_htod_async is asynchronous on any stream it is given (unless it is 0 or None); the same
    # buffer at the same copy is one mistake, reported at the first call that reaches it.
    assert [(f.code, f.location.row) for f in analysis.findings] == [("PIN001", 6)]
    assert "via `upload` (helpers.py:4)" in analysis.findings[0].message


def _every_function(extra: str) -> list:
    """Every function definition of the fixtures, the interprocedural projects and ``extra``: the
    corpus the hand-written walks are compared with libcst's visitors on."""
    import libcst as cst

    class Functions(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.found: list = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.found.append(node)

    sources = [p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parent.parent / "fixtures").rglob("*.py"))]
    sources += [textwrap.dedent(text) for files in PROJECTS.values() for text in files.values()]
    functions = Functions()
    for source in sources + [extra]:
        cst.parse_module(source).visit(functions)
    return functions.found


def test_tested_names_walk_statements_like_a_full_visitor():
    # tested_names walks statements only (for speed); it must find every `if` a visitor of the whole
    # body finds: elif chains, loops' and try's else/finally, handlers, with, match, nested defs.
    import libcst as cst

    from pinlint.analysis.interproc import tested_names

    class _Names(cst.CSTVisitor):  # the reference: libcst's own visitor, every Name under the node
        def __init__(self, names: set) -> None:
            super().__init__()
            self.names = names

        def visit_Name(self, name: cst.Name) -> None:
            self.names.add(name.value)

    class Everything(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: set = set()

            self.computed: dict = {}

        def visit_If(self, statement: cst.If) -> None:
            statement.test.visit(_Names(self.names))

        def visit_SimpleStatementLine(self, line: cst.SimpleStatementLine) -> None:
            # a conditional expression as a statement's value or its call's argument, and the
            # expressions assigned to plain names (the tested names are followed through them)
            for small in line.body:
                value = getattr(small, "value", None)
                if value is None:
                    continue
                tests = [value.test] if isinstance(value, cst.IfExp) else \
                    [a.value.test for a in value.args if isinstance(a.value, cst.IfExp)] if isinstance(value, cst.Call) else []
                for test in tests:
                    test.visit(_Names(self.names))
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    self.computed.setdefault(small.targets[0].target.value, []).append(value)

        def closed(self) -> frozenset:
            names, seen = set(self.names), set()
            while names - seen:
                name = (names - seen).pop()
                seen.add(name)
                for value in self.computed.get(name, ()):
                    value.visit(_Names(names))
            return frozenset(names)

    extra = textwrap.dedent("""
        def f(a, b, c=None):
            if a:
                pass
            elif b:
                for i in r:
                    while w:
                        pass
                    else:
                        if c: pass
            else:
                try:
                    if d: pass
                except E:
                    if e: pass
                else:
                    if g: pass
                finally:
                    if h: pass
            with m:
                if k: pass
            def inner():
                if n: pass
            match v:
                case 1:
                    if o: pass
    """)
    checked = 0
    for node in _every_function(extra):
        everything = Everything()
        node.body.visit(everything)
        assert tested_names(node) == everything.closed(), cst.Module([node]).code
        checked += bool(everything.names)
    assert checked > 30


def test_tested_names_follow_conditional_expressions_and_the_names_they_were_computed_from():
    import libcst as cst

    from pinlint.analysis.interproc import tested_names
    fn = cst.parse_module(textwrap.dedent("""
        def __init__(self, device="cuda", other=1):
            name = str(device)
            on_gpu = torch.cuda.is_available() and name.startswith("cuda")
            self.device = torch.device("cuda" if on_gpu else "cpu")
            self.other = other
    """)).body[0]
    tested = tested_names(fn)
    assert {"on_gpu", "name", "device"} <= tested
    assert "other" not in tested


def test_free_names_match_a_full_visitor():
    # free_names walks code fields by hand (for speed); a libcst visitor is the reference: every Name
    # read, less the parameters and plain assignment targets, nested functions left out.
    import libcst as cst

    from pinlint.analysis.interproc import free_names

    def reference(node: cst.FunctionDef) -> frozenset:
        loaded: set = set()
        bound = {p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)}
        bound |= {s.name.value for s in (node.params.star_arg, node.params.star_kwarg) if isinstance(s, cst.Param)}

        class Visitor(cst.CSTVisitor):
            def visit_Name(self, name: cst.Name) -> None:
                loaded.add(name.value)

            def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
                if isinstance(target.target, cst.Name):
                    bound.add(target.target.value)

            def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
                return False

        node.body.visit(Visitor())
        return frozenset(loaded - bound)

    extra = textwrap.dedent("""
        def outer(a, *rest, k=1, **kw):
            x = y = a
            (p, q) = rest
            z: int = w
            lam = lambda u: u + v
            out = [t for t in a if t > limit]
            @decorate(d)
            def inner(m):
                return m + hidden
            class K(Base):
                attr = field
            return obj.method(key=value), inner, K
    """)
    checked = 0
    for node in _every_function(extra):
        assert free_names(node) == reference(node), cst.Module([node]).code
        checked += 1
    assert checked > 100


# ------------------------------------------------------------------ what a resolution loads
def _checked_in_a_run(root: Path, path: Path) -> tuple:
    """(the file's result, the run's project): the file checked as a run checks it."""
    from pinlint import engine
    from pinlint.settings import Settings

    project = engine.start_project(root)
    try:
        return engine.lint_bytes(path.read_bytes(), str(path), Settings()), project
    finally:
        engine.end_project()


def test_a_package_init_reexport_loads_only_the_module_the_name_comes_from(tmp_path):
    """`from pkg import f` reaches `pkg/a.py` through `pkg/__init__.py`'s `from .a import f` without
    analysing the package's body, so `pkg/b.py`, which the body imports but nothing reads, is never
    loaded (every module of a large package was: Lightning's cold run took 4x as long); the finding
    through `f` is still made."""
    write(tmp_path, "pkg/__init__.py", "from .a import f\nfrom .b import g\n")
    write(tmp_path, "pkg/a.py", "import cupy as cp\n\ndef f(h, s):\n    d = cp.empty(h.shape)\n    d.set(h, stream=s)\n")
    write(tmp_path, "pkg/b.py", "import cupy\n\ndef g():\n    return cupy.zeros(3)\n")
    main = write(tmp_path, "main.py", "import numpy as np\nimport cupy as cp\nfrom pkg import f\n\n\ndef run():\n"
                                      "    h = np.zeros(1 << 22, dtype=np.float32)\n"
                                      "    f(h, cp.cuda.Stream(non_blocking=True))\n")
    result, project = _checked_in_a_run(tmp_path, main)
    loaded = {p.name for p, ctx in project.by_path.items() if ctx is not None}
    assert [(f.code, f.location.row) for f in result.findings] == [("PIN001", 8)]
    assert "a.py" in loaded and "b.py" not in loaded


def test_a_module_global_that_is_not_assigned_once_does_not_analyse_the_module_body(tmp_path):
    from pinlint.analysis import Project
    from pinlint.apitables import default_tables
    from pinlint.parsing import parse

    text = "import os\nfrom json import dumps\nLIMIT = 4\n\ndef f():\n    return dumps(LIMIT)\n"
    project = Project(default_tables())
    ctx = project.add_module("m.py", parse(text).module, None, text)
    assert ctx.global_value("dumps") is None and ctx not in project._globals  # imports are not globals
    assert ctx.global_value("LIMIT") is not None and ctx in project._globals


def test_reexports_that_come_back_to_themselves_resolve_to_nothing_and_the_file_is_still_checked(tmp_path):
    """`a` re-exports `x` from `b` and `b` from `a`, and neither defines it: the name is unknown. It
    was followed until Python's recursion limit, and the whole importing file went unanalysed
    ("nested too deeply"), its real finding lost with it."""
    write(tmp_path, "pkg/__init__.py", "from .a import x\n")
    write(tmp_path, "pkg/a.py", "from .b import x\n")
    write(tmp_path, "pkg/b.py", "from .a import x\n")
    main = write(tmp_path, "main.py", "import numpy as np\nimport cupy as cp\nfrom pkg import x\n\n\ndef run():\n"
                                      "    x()\n    h = np.zeros(1 << 22, dtype=np.float32)\n"
                                      "    cp.empty(1 << 22, dtype=np.float32).set(h, stream=cp.cuda.Stream(non_blocking=True))\n")
    result, _ = _checked_in_a_run(tmp_path, main)
    assert result.warning is None
    assert [(f.code, f.location.row) for f in result.findings] == [("PIN001", 9)]


def test_the_trace_of_a_finding_is_the_same_on_every_run(tmp_path):
    """Two buffers come back from one call (a dict of two tensors): the trace names the one whose
    allocation comes first, every time. It named whichever a set gave first, which changed with
    where the interpreter put the nodes: half of the runs in one process disagreed."""
    from helpers import pinlint_in_process

    _write_project(tmp_path, PROJECTS["from-numpy-dict-helper-cross-module-torch"])
    outputs = set()
    for _ in range(6):
        done = pinlint_in_process(tmp_path, "check", "--no-cache", "--jobs", "1", "--output-format", "json", ".")
        outputs.add(done.stdout)
    assert len(outputs) == 1
    [finding] = json.loads(outputs.pop())
    assert finding["trace"][0]["message"] == "allocated here by `numpy.load`"


def test_file_lookups_are_remembered_within_a_run_only(tmp_path):
    # A run asks the disk once per candidate module file; the language server, between runs, each time.
    from pinlint import engine, modulefiles

    path = tmp_path / "late.py"
    engine.start_project(tmp_path)
    try:
        assert not modulefiles.is_file(path)
        path.write_text("x = 1\n", encoding="utf-8")
        assert not modulefiles.is_file(path)
    finally:
        engine.end_project()
    assert modulefiles.is_file(path)


_MANY_CALLS = """\
import numpy as np
from mem import h2d_async


class Model:
    def upload(self, dptrs, stream, images):
""" + "".join(f"        h2d_async(dptrs[{i}], np.zeros({i + 1}), stream, {i})\n" for i in range(30)) + """\
        sizes = np.zeros((len(images), 2048), dtype=np.int32)
        h2d_async(dptrs[99], sizes, stream, 99)
"""

_MEM = """\
from cuda.bindings import runtime as cudart


def h2d_async(dptr, host, stream, tag):
    cudart.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes,
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
"""


def _run_in_order(root: Path, paths: list) -> dict:
    from pinlint import engine
    from pinlint.settings import Settings

    engine.start_project(root)
    try:
        return {p.name: [(f.code, f.location.row) for f in engine.lint_bytes(p.read_bytes(), str(p), Settings()).findings]
                for p in paths}
    finally:
        engine.end_project()


def test_a_helper_called_in_many_contexts_is_followed_in_each_and_the_result_does_not_hang_on_order(tmp_path):
    """A copy helper called from thirty places in one file (trtutils' detector): past twelve contexts
    its analysis was cut and the later calls' copies were lost; and the contexts were counted only
    when not already analysed for another file, so the finding came and went with which files were
    checked first in the process (`pinlint check .` against `pinlint check src`, one worker or two)."""
    write(tmp_path, "mem.py", _MEM)
    model = write(tmp_path, "model.py", _MANY_CALLS)
    other = write(tmp_path, "other.py", _MANY_CALLS.replace("class Model", "class Other"))
    last = _MANY_CALLS.splitlines().index("        h2d_async(dptrs[99], sizes, stream, 99)") + 1
    alone = _run_in_order(tmp_path, [model])["model.py"]
    assert ("PIN001", last) in alone
    assert _run_in_order(tmp_path, [other, model])["model.py"] == alone


# ------------------------------------------------------------------ a project's own method names
# (a loader nothing in the tree explains: `safetensors.torch.load_file` is known since turn 34, and its
# tensors' `pin_memory` is torch's by provenance, whatever else defines the name)
_LOADS = ("import torch\nfrom checkpoint_io import load_file\n{imports}\n\n"
          "def onload(path, targets):\n"
          "    tensors = load_file(path, device='cpu')\n"
          "    for name, param in targets.items():\n"
          "        staged = tensors[name].pin_memory()  # pinned per tensor\n"
          "        param.data = staged.to('cuda', non_blocking=True)\n")
_AVERAGER = "class Averager:\n    def pin_memory(self):\n        return self\n"


@pytest.mark.parametrize("imports, reported", [
    ("", True),                          # nothing it can see defines another pin_memory
    ("from pkg.ema import Averager", False),   # a module it imports does: the tensor may be one of those
])
def test_a_projects_own_method_shadows_a_unique_name_only_where_it_is_seen(tmp_path, imports, reported):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/ema.py", _AVERAGER)
    hooks = write(tmp_path, "pkg/hooks.py", _LOADS.format(imports=imports))
    # The same answer whether the run loaded pkg/ema.py first or not at all.
    alone, _ = _checked_in_a_run(tmp_path, hooks)
    from pinlint import engine
    from pinlint.settings import Settings
    engine.start_project(tmp_path)
    try:
        ema = tmp_path / "pkg" / "ema.py"
        engine.lint_bytes(ema.read_bytes(), str(ema), Settings())
        after = engine.lint_bytes(hooks.read_bytes(), str(hooks), Settings())
    finally:
        engine.end_project()
    for result in (alone, after):
        assert [f.code for f in result.findings] == (["PIN002"] if reported else [])


@pytest.mark.parametrize("call, reported", [
    ("up.send(d, s)", True),                  # no keyword: kwargs.get("h", default) is the default
    ("up.send(d, s, h=other)", False),        # a keyword nothing here explains
    ("up.send(d, s, **opts)", False),         # keywords from a dict nothing here lays out
])
def test_a_call_without_keywords_gives_a_kwargs_reader_its_defaults(call, reported):
    src = f"""
    import numpy as np
    import pycuda.autoinit
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray

    def make():
        return np.random.rand(100000).astype(np.float32)

    class Uploader:
        def send(self, d, s, **kwargs):
            h = kwargs.get("h", make())
            d.set_async(h, stream=s)

    def run(d, s, other, opts):
        up = Uploader()
        {call}  # call: nothing but the keywords (none) tells the callee more than its own analysis
    """
    assert rows(src, "PIN001") == ([row_of(src, "# call")] if reported else [])


def test_noqa_at_the_first_call_silences_the_mistake_at_every_call_that_reaches_it(tmp_path, monkeypatch, capsys):
    files = dict(PROJECTS["other-buffers-at-one-copy-keep-their-reports-pycuda"])
    files["main.py"] = files["main.py"].replace("upload(dev, a, stream)  # expect: PIN001",
                                                "upload(dev, a, stream)  # noqa: PIN001")
    _write_project(tmp_path, files)
    found = _check(monkeypatch, capsys, tmp_path)
    # b's report stays; a's second call does not take over the suppressed report.
    assert [(f["location"]["row"], f["code"]) for f in found] == [(row_of(textwrap.dedent(files["main.py"]).lstrip("\n"),
                                                                           "upload(dev, b, stream)"), "PIN001")]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_tree_checked_from_another_folder_is_followed_as_from_its_own(tmp_path, monkeypatch, capsys, jobs):
    # `pinlint check ../project`: the checked files' modules are the checked tree, wherever the run starts.
    project_dir, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    marks = _write_project(project_dir, PROJECTS["param-helper-pycuda"])
    write(project_dir, "other.py", "import numpy as np\n")  # two jobs per worker with --jobs 2
    write(project_dir, "third.py", "import numpy as np\n")
    write(project_dir, "fourth.py", "import numpy as np\n")
    elsewhere.mkdir()
    code, out, err = run_in_process(monkeypatch, capsys, elsewhere, "check", "--no-cache", "--jobs", jobs,
                                    "--format", "json", str(project_dir))
    reported = {(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(out)}
    assert reported == {(Path(name).name, row, code) for name, row, code in marks["expect"]}


def test_the_same_copy_reached_from_two_functions_is_reported_in_each(tmp_path, monkeypatch, capsys):
    files = {"main.py": '''
import numpy as np
import pycuda.driver as cuda


def upload(dev, host, stream):
    cuda.memcpy_htod_async(dev, host, stream)


H = np.zeros(1 << 20, np.float32)


def warm_up(dev):
    upload(dev, H, cuda.Stream())
    upload(dev, H, cuda.Stream())


def step(dev):
    upload(dev, H, cuda.Stream())
'''}
    _write_project(tmp_path, files)
    text = textwrap.dedent(files["main.py"]).lstrip("\n")
    found = _check(monkeypatch, capsys, tmp_path)
    # One report per function: warm_up's two calls are one mistake there, step's call is step's.
    assert [f["location"]["row"] for f in found] == [row_of(text, "def warm_up(dev):") + 1,
                                                      row_of(text, "def step(dev):") + 1]


_SLOT = """\
AI_DEVICE = None
"""
_SETUP = """\
from pkg import global_var


def init(device):
    global_var.AI_DEVICE = device
"""
_MODEL = """\
import torch
from pkg import global_var
from pkg.global_var import AI_DEVICE


def rank_device():
    if global_var.AI_DEVICE is None:
        return torch.device("cpu")
    return torch.device(global_var.AI_DEVICE)


def load(keys):
    weights = {k: torch.randn(1 << 20, device="cuda") for k in keys}
    target = rank_device()
    out = {}
    for k in keys:
        out[k] = weights[k].to(target, non_blocking=True)
        print(out[k].sum())  # read
    return out


def at_import():
    host = torch.empty(1 << 20) if AI_DEVICE is None else torch.empty(1 << 20, device="cuda")
    return host.to("cuda", non_blocking=True)  # bound at import
"""


def test_a_module_slot_read_through_the_module_is_what_anyone_set_there(tmp_path):
    """`global_var.AI_DEVICE` is None at load and set by another module at run time (LightX2V's
    platform module): read through the module object, it is not None for sure, so `rank_device()`
    may be a GPU and the non-blocking `.to(target)` no D2H whose destination the print reads
    (survey 17: a false PIN005). `from pkg.global_var import AI_DEVICE` binds the load-time value."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/global_var.py", _SLOT)
    write(tmp_path, "pkg/setup.py", _SETUP)
    model = write(tmp_path, "pkg/model.py", _MODEL)
    found = _run_in_order(tmp_path, [model])["model.py"]
    assert found == [("PIN001", _MODEL.splitlines().index('    return host.to("cuda", non_blocking=True)  # bound at import') + 1)]


_READER = """\
import numpy as np


class Reader:
    def read(self, shape):
        return np.ones(shape, dtype=np.uint8).copy()


_reader = None
_counter = 0


def get_reader():
    global _reader
    if _reader is None:
        _reader = Reader()
    return _reader


def bump():
    global _counter
    _counter += 1
    return _counter
"""
_ENCODER = """\
import torch


def encode(shape, device):
    from .reader import get_reader
    arr = get_reader().read(shape)
    return torch.from_numpy(arr).to(device=device, non_blocking=True)


def run():
    return encode((4096, 4096), "cuda")
"""


def test_a_lazy_singleton_getter_gives_its_object(tmp_path):
    """`global _reader; if _reader is None: _reader = Reader(); return _reader` (LightX2V's shared-memory
    client, survey 17): the slot is only ever None at the module's top level, so the getter returns
    the Reader it makes, and the pageable array its method returns is found where it is copied."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/reader.py", _READER)
    encoder = write(tmp_path, "pkg/encoder.py", _ENCODER)
    found = _run_in_order(tmp_path, [encoder])["encoder.py"]
    copy = _ENCODER.splitlines().index("    return torch.from_numpy(arr).to(device=device, non_blocking=True)") + 1
    assert found == [("PIN001", copy)]


_GRID = """\
import numpy as np
import pycuda.gpuarray


class Array2D:
    def __init__(self, stream, data, double_precision=False):
        host = data if double_precision else self.as_float32(data)
        self.data = pycuda.gpuarray.to_gpu_async(host, stream=stream)

    @staticmethod
    def as_float32(data):
        if not np.issubdtype(data.dtype, np.float32) or np.isfortran(data):
            return data.astype(np.float32, order="C")
        return data
"""
_SCHEME = """\
import numpy as np
from grid import Array2D


class Scheme:
    def __init__(self, stream, depth, eta, nx, ny):
        if depth.shape == (ny, nx):  # re-pad an array given without its ghost cells
            padded = np.ones((ny + 2, nx + 2), dtype=np.float32) * np.max(depth)
            padded[:ny, :nx] = depth.copy()
            depth = padded.copy()
        self.depth = Array2D(stream, depth)
        self.eta = Array2D(stream, eta)
"""
_SCHEME_TEST = """\
import unittest
import numpy as np
import pycuda.driver as cuda
from scheme import Scheme


class SchemeTest(unittest.TestCase):
    def setUp(self):
        self.nx, self.ny = {nx}, 70
        self.ghosts = [1, 1, 1, 1]
        self.depth = self.eta = None
        self.stream = cuda.Stream()

    def make_host_data(self):
        shape = (self.ny + self.ghosts[0] + self.ghosts[2], self.nx + self.ghosts[1] + self.ghosts[3])
        self.depth = np.ones(shape, dtype=np.float32) * 60
        self.eta = np.zeros(shape, dtype=np.float32)

    def test_run(self):
        self.make_host_data()
        self.scheme = Scheme(self.stream, self.depth, self.eta, self.nx, self.ny)  # construct
"""


@pytest.mark.parametrize("nx, reported", [(50, False), (5000, True)])
def test_sizes_a_test_states_reach_a_constructor_three_calls_down(tmp_path, nx, reported):
    """gpu-ocean (survey 18): a test states a 50 x 70 grid; the scheme re-pads it (`np.ones(...) *
    np.max(h)`, `.copy()`) and hands it to a class that converts and uploads it with to_gpu_async.
    15 KB is under PIN001's threshold; the same code with a 5000-cell side is reported."""
    write(tmp_path, "grid.py", _GRID)
    write(tmp_path, "scheme.py", _SCHEME)
    test = write(tmp_path, "test_scheme.py", _SCHEME_TEST.format(nx=nx))
    found = _run_in_order(tmp_path, [test])["test_scheme.py"]
    assert found == ([("PIN001", row_of(_SCHEME_TEST.format(nx=nx), "# construct"))] if reported else [])


def test_a_class_from_a_star_import_of_a_project_module_is_followed(tmp_path):
    # torch-ngp (survey 26): `from sdf.utils import *` then `Trainer(...)`; a library's star import
    # (`from numpy import *`) gives nothing of the project's
    write(tmp_path, "sdf/__init__.py", "")
    write(tmp_path, "sdf/utils.py", """
import torch

class Trainer:
    def __init__(self):
        self.dev = torch.device("cuda")

    def fit(self, loader):
        for data in loader:
            for k, v in data.items():
                data[k] = v.to(self.dev, non_blocking=True)
""")
    main = write(tmp_path, "main.py", """
from torch.utils.data import DataLoader
from sdf.utils import *

def run(ds):
    loader = DataLoader(ds, batch_size=1)
    Trainer().fit(loader)  # call
""")
    found = _run_in_order(tmp_path, [main])["main.py"]
    assert found == [("PIN001", main.read_text().splitlines().index("    Trainer().fit(loader)  # call") + 1)]


@pytest.mark.parametrize("table, call", [
    # CLIP4Clip (survey 26): loader factories kept in a dict of dicts, filled at the module's top level
    ('FACTORIES = {}\nFACTORIES["msrvtt"] = {"train": make_loader}', 'FACTORIES["msrvtt"]["train"](8)'),
    ('FACTORIES = [make_loader]', 'FACTORIES[0](8)'),
])
def test_a_function_kept_in_a_container_is_called(table, call):
    src = f"""
import torch
from torch.utils.data import DataLoader

def make_loader(bs):
    return DataLoader(range(64), batch_size=bs)

{table}

def consume(loader, dev):
    for batch in loader:
        batch.to(dev, non_blocking=True)

def run():
    consume({call}, torch.device("cuda"))  # call
"""
    assert rows(src, "PIN001") == [row_of(src, "# call")]


@pytest.mark.parametrize("make", [
    "Speaker().cuda()",                     # tacotron2 (survey 27): nn.Module.cuda() returns the module
    "Speaker().to('cuda').train()",
    "wrap(Speaker())",                      # a helper that hands its module back
])
def test_a_module_handed_back_keeps_its_methods(make):
    src = f"""
import torch
from torch.utils.data import DataLoader

class Speaker(torch.nn.Module):
    def unpack(self, batch):
        return batch.cuda(non_blocking=True)

def wrap(module):
    module.ready = True
    return module

def train(ds):
    net = {make}
    for batch in DataLoader(ds, batch_size=16):
        net.unpack(batch)  # copy
"""
    assert rows(src, "PIN001") == [row_of(src, "# copy")]


def test_a_method_of_a_plain_class_is_not_taken_to_return_itself():
    src = """
import torch
from torch.utils.data import DataLoader

class Speaker:
    def unpack(self, batch):
        return batch.cuda(non_blocking=True)

def train(ds):
    net = Speaker().cuda()   # not an nn.Module: nothing says what this returns
    for batch in DataLoader(ds, batch_size=16):
        net.unpack(batch)
"""
    assert rows(src, "PIN001") == []


def test_two_copies_through_one_call_are_judged_apart_against_the_callee_s_own_analysis(tmp_path, monkeypatch,
                                                                                        capsys):
    # fast_htSNE (survey 40): through `self.fit_with_gui(...)` the callee's own analysis finds one
    # pageable upload (a buffer it makes); a second upload is pageable only with the caller's array.
    # The second was dropped at the caller because the first had the same verdict at the same call.
    files = {"lib.py": '''
import numpy as np
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray


class Model:
    def fit(self, x):
        self.x = x
        dev = gpuarray.to_gpu(np.zeros(1 << 20, np.float32))
        self.step(dev, drv.Stream())

    def step(self, dev, stream):
        scratch = dev.get() * 0.5
        dev.set_async(scratch, stream=stream)
        shifted = (self.x * 2.0).astype(np.float32)
        dev.set_async(shifted, stream=stream)
''', "main.py": '''
import numpy as np
from lib import Model

Model().fit(np.random.rand(1 << 20))  # expect the second upload here
'''}
    for name, text in files.items():
        write(tmp_path, name, text)
    found = _check(monkeypatch, capsys, tmp_path)
    places = sorted((Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in found)
    assert places == [("lib.py", 11, "PIN001"), ("main.py", 5, "PIN001")], places


def test_a_settings_class_imported_from_another_module_gives_its_constants(tmp_path, monkeypatch, capsys):
    # Tacotron2-PyTorch (survey 48 O): `from hparams import hparams as hps` then
    # `.cuda(non_blocking=hps.pin_mem)`, a class body's `pin_mem = True`.
    files = {
        "settings.py": "class Settings:\n    use_gpu = True\n    pinned_loader = True\n",
        "main.py": textwrap.dedent("""
            import torch
            from settings import Settings as cfg


            def move(t):
                if cfg.use_gpu:
                    t = t.cuda(non_blocking=cfg.pinned_loader)
                return t


            def length_mask(n):
                positions = torch.arange(0, 100000, out=torch.LongTensor(100000))
                return move(positions)
            """),
    }
    _write_project(tmp_path, files)
    found = _check(monkeypatch, capsys, tmp_path)
    assert [(f["code"], f["location"]["row"]) for f in found] == [("PIN001", 13)]
    # a script that changes the setting: the class body's value is only the first
    (tmp_path / "main.py").write_text(files["main.py"] + "\ncfg.pinned_loader = False\n")
    assert _check(monkeypatch, capsys, tmp_path) == []


def test_a_trace_step_at_a_call_says_it_calls_the_function_that_copies():
    # Lidar_AI_Solution's cuOSD test (survey 54 DE): the copy is in a nested timing function the
    # helper calls; the step at that call named the copy ("copied here by ..."), which is one line on.
    from helpers import findings
    src = """
import numpy as np
import pycuda.driver as drv


def draw_on(img):
    stream = drv.Stream()
    dmem = drv.mem_alloc(img.nbytes)

    def timed():
        drv.memcpy_dtoh_async(img, dmem, stream)
        stream.synchronize()

    timed()


def main():
    frame = np.zeros((1080, 1920, 3), dtype=np.uint8)
    draw_on(frame.copy())
"""
    [finding] = [f for f in findings(src) if f.code == "PIN001"]
    assert [(step.location.row, step.message) for step in finding.trace][-2:] == [
        (row_of(src, "    timed()"), "calls `timed` here"),
        (row_of(src, "drv.memcpy_dtoh_async"), "copied here by `pycuda.driver.memcpy_dtoh_async`")]


def test_pin008_in_a_helper_defers_to_the_loop_of_a_checked_caller_from_the_cache_too(tmp_path, monkeypatch, capsys):
    # The helper's own check cannot see its callers: alone it keeps PIN008; checked with the file whose
    # loop calls it, the run reports that file's PIN002 only, from a warm cache as from a cold one.
    _write_project(tmp_path, PROJECTS["pin008-defers-to-a-loop-in-another-file"])
    alone = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--format", "json", "batches.py")
    assert [f["code"] for f in json.loads(alone[1])] == ["PIN008"]
    cold = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    warm = run_in_process(monkeypatch, capsys, tmp_path, "check", "--format", "json", ".")
    for run in (cold, warm):
        assert [(f["filename"], f["code"]) for f in json.loads(run[1])] == [("train.py", "PIN002")], run


def test_add_noqa_comments_what_the_run_reports_and_no_deferred_pin008(tmp_path, monkeypatch, capsys):
    # The helper's PIN008 is dropped for the training loop's PIN002: `--add-noqa` comments the PIN002
    # alone, and the check that follows is clean.
    _write_project(tmp_path, PROJECTS["pin008-defers-to-a-loop-in-another-file"])
    before = (tmp_path / "batches.py").read_text()
    code, _, err = run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--add-noqa", ".")
    assert code == 0, err
    assert (tmp_path / "batches.py").read_text() == before
    assert "# noqa: PIN002" in (tmp_path / "train.py").read_text()
    assert json.loads(run_in_process(monkeypatch, capsys, tmp_path, "check", "--no-cache", "--format", "json",
                                     ".")[1]) == []
