"""pinlint/analysis/inert.py: functions that name nothing that can make an event are not analysed
as roots. The screen must be sound: it never skips a function that has a finding. These tests hold it
to the analysis without it, on every program the suite has (fixtures, fix cases, rule examples, the
safety corpus, generated programs, the interprocedural projects), and pin its verdict on each kind
of name that can make a function relevant."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest

from pinlint import engine
from pinlint.analysis import Project, analyze
from pinlint.analysis import inert
from pinlint.apitables import default_tables
from pinlint.parsing import parse
from pinlint.settings import Settings

from fuzzing import ProgramGenerator, seed_corpus
from helpers import pinlint_in_process, write
from interproc_projects import PROJECTS

REPO = Path(__file__).resolve().parent.parent


def _seen(findings) -> list:
    return [(f.code, f.location, f.end_location, f.message, f.fix, f.related, f.trace) for f in findings]


@pytest.fixture
def skips(monkeypatch):
    """How many functions the screen let go unanalysed (so a comparison is not vacuous)."""
    counted = [0]
    original = inert.Screen.skippable

    def counting(self, fn):
        verdict = original(self, fn)
        counted[0] += verdict
        return verdict

    monkeypatch.setattr(inert.Screen, "skippable", counting)
    return counted


def _lint(text: str, name: str, screen: bool, monkeypatch) -> list:
    monkeypatch.setattr(engine, "_project", lambda: Project(default_tables(), screen=screen))
    return _seen(engine.lint_text(text, name, Settings()).findings)


def _corpus() -> list:
    programs = list(seed_corpus())
    programs += [(path.name, path.read_text(encoding="utf-8")) for path in sorted((REPO / "tests" / "safety_corpus").glob("*.py"))]
    rng = random.Random(1612)
    programs += [(f"generated_{i}.py", ProgramGenerator(rng).program()) for i in range(100)]
    # The speed benchmark's GPU modules: real-looking code where GPU templates sit next to plain
    # helpers (parsers, caches, dataclasses), as in a real tree.
    import sys
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from corpus import make_file
    finally:
        sys.path.remove(str(REPO / "bench"))
    programs += [(f"bench_{i}.py", make_file(7, i, gpu_fraction=1.0)[0]) for i in range(80)]
    return programs


@pytest.mark.slow
def test_the_screen_changes_no_finding_on_any_program_of_the_suite(monkeypatch, skips):
    programs = _corpus()
    assert len(programs) > 300
    reported = 0
    for name, text in programs:
        with_screen = _lint(text, name, True, monkeypatch)
        without = _lint(text, name, False, monkeypatch)
        assert with_screen == without, name
        reported += len(without)
    assert reported > 200 and skips[0] > 100  # findings were compared, and functions were skipped


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_the_screen_changes_no_finding_in_the_interprocedural_projects(tmp_path, monkeypatch, name):
    for path, text in PROJECTS[name].items():
        write(tmp_path, path, textwrap.dedent(text))
    runs = []
    for screen in (True, False):
        monkeypatch.setattr(Project.__init__, "__defaults__", (None, screen))
        done = pinlint_in_process(tmp_path, "check", "--no-cache", "--jobs", "1", "--output-format", "json", ".")
        assert done.returncode in (0, 1), done.stderr
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]


# ------------------------------------------------------------------ the verdicts, one kind of name each
def _verdicts(src: str, files: dict = None, tmp_path: Path = None) -> dict:
    """{function or Class.method: skipped} for the module ``src`` (with sibling ``files`` on disk)."""
    text = textwrap.dedent(src).lstrip("\n")
    path = None
    project = Project(default_tables(), root=tmp_path)
    if tmp_path is not None:
        for name, body in (files or {}).items():
            write(tmp_path, name, textwrap.dedent(body))
        path = write(tmp_path, "main.py", text)
    module = parse(text).module
    ctx = project.add_module(str(path or "main.py"), module, path, text)
    from pinlint.analysis import functions_of
    screen = inert.Screen(ctx)
    return {fn.name: screen.skippable(fn) for fn in functions_of(ctx)}


def test_arithmetic_and_libraries_without_table_entries_are_skipped():
    verdicts = _verdicts("""
        import os
        from numba.core import types
        LIMIT = 4

        def size(n):
            return max(n, LIMIT) * 2

        def kind(x):
            return types.int32 if os.environ.get("X") else x

        class Shape:
            def __init__(self, n):
                self.n = size(n)

            def area(self):
                return self.n * self.n
        """)
    assert verdicts == {"size": True, "kind": True, "Shape.__init__": True, "Shape.area": True}


def test_a_library_name_the_tables_do_not_describe_is_inert_where_it_is_used():
    """``torch`` has table entries, but ``torch.nn.functional.pad`` and ``torch.no_grad`` are none of
    them: the analysis takes such a chain as an unknown value, so using it makes nothing relevant."""
    verdicts = _verdicts("""
        import torch
        import torch.nn as nn
        from torch import nn as tnn

        def pad(x):
            with torch.no_grad():
                return torch.nn.functional.pad(x, (1, 1))

        def cast(x):
            return x.type(torch.float16)  # a constant: an event needs a call the tables know

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = tnn.Linear(4, 4)

            def forward(self, x):
                return self.layer(x)
        """)
    assert verdicts == {"pad": True, "cast": True, "Block.__init__": True, "Block.forward": True}


@pytest.mark.parametrize("line", [
    "import cupy\ndef f(n):\n    return cupy.zeros(n)\n",                        # a library with table entries
    "from numba import cuda\ndef f(h):\n    return cuda.to_device(h)\n",
    "import numpy as np\ndef f(n):\n    return np.zeros(n)\n",
    "def f(x):\n    return x.pin_memory()\n",                                       # an any-receiver method
    "def f(x):\n    return x.get(blocking=True)\n",
    "def f(x, **kw):\n    return x.get(**kw)\n",
    "def f(x: 'cupy.ndarray'):\n    return x.get()\n",                             # a string annotation
    "def f(n):\n    global BUF\n    return BUF\n",
    "from cupy import *\ndef f(n):\n    return zeros(n)\n",                         # a star import
    "import cupy\nBUF = cupy.zeros(4)\ndef f():\n    return BUF.get()\n",           # a global made by a library
    "import cupy\ndef g(n):\n    return cupy.zeros(n)\ndef f(n):\n    return g(n)\n",  # a relevant definition
    "def f(n):\n    import cupy\n    return cupy.zeros(n)\n",                      # an import inside
    "try:\n    import cupy\nexcept ImportError:\n    cupy = None\ndef f(n):\n    return cupy.zeros(n)\n",
    "for cupy in ():\n    pass\ndef f(n):\n    return cupy(n)\n",                  # a name bound by a loop
    "def f():\n    return super().x\n",                                            # super() outside a class
    "import torch\ndef f(n):\n    return torch.nn.functional.pad(torch.zeros(n), (1,))\n",  # a table name inside
    "import torch\ndef f(n):\n    m = torch.cuda\n    return m\n",                # a module holding entries
    "import torch\ndef f(x: torch.Tensor):\n    return x\n",                      # an annotation the tables know
    "import torch\ndef f(n):\n    lib = torch\n    return lib.zeros(n)\n",         # the library itself as a value
    "import torch\ntorch = None\ndef f(n):\n    return torch.nn.x(n)\n",          # a name bound to more than the import
])
def test_a_function_that_names_something_relevant_is_analysed(line):
    verdicts = _verdicts(line)
    assert verdicts["f"] is False, verdicts


def test_a_method_is_analysed_when_its_class_can_hold_a_relevant_field():
    verdicts = _verdicts("""
        import cupyx

        class Staging:
            def __init__(self, n):
                self.host = cupyx.empty_pinned(n)

            def first(self):
                return self.host[0]

        class Plain:
            def first(self):
                return 0
        """)
    assert verdicts == {"Staging.__init__": False, "Staging.first": False, "Plain.first": True}


def test_a_method_of_a_subclass_of_a_relevant_class_is_analysed():
    verdicts = _verdicts("""
        import cupy

        class Base:
            def __init__(self):
                self.d = cupy.zeros(4)

        class Child(Base):
            def read(self):
                return super().read()
        """)
    assert verdicts["Child.read"] is False


def test_a_cycle_of_definitions_that_names_nothing_else_is_skipped_and_one_that_does_is_not():
    verdicts = _verdicts("""
        import cupy

        def even(n):
            return n == 0 or odd(n - 1)

        def odd(n):
            return n != 0 and even(n - 1)

        def ping(n):
            return pong(n)

        def pong(n):
            return cupy.zeros(n) if n else ping(n)
        """)
    assert verdicts == {"even": True, "odd": True, "ping": False, "pong": False}


def test_a_name_of_the_checked_tree_makes_a_function_relevant(tmp_path):
    verdicts = _verdicts("""
        from helpers import stage
        import json

        def run(n):
            return stage(n)

        def dump(x):
            return json.dumps(x)
        """, {"helpers.py": "def stage(n):\n    return n\n"}, tmp_path)
    assert verdicts == {"run": False, "dump": True}


def test_nested_functions_are_always_analysed():
    verdicts = _verdicts("""
        def outer(n):
            def inner():
                return n
            return inner
        """)
    assert verdicts == {"outer": True, "outer.<locals>.inner": False}


def test_a_skipped_function_still_gets_its_analysis_when_a_relevant_caller_calls_it():
    """The screen only drops a root analysis: `relay` names nothing, yet the pageable buffer that
    passes through it into an asynchronous copy is still found where it is passed."""
    text = textwrap.dedent("""\
        import numpy as np
        import cupy as cp

        def relay(x):
            return x

        def upload():
            d = cp.empty(1 << 22, dtype=np.float32)
            s = cp.cuda.Stream(non_blocking=True)
            h = relay(np.zeros(1 << 22, dtype=np.float32))
            d.set(h, stream=s)
        """)
    project = Project(default_tables())
    module = parse(text).module
    facts = analyze(module, project=project, filename="t.py", text=text)
    assert [s.events for s in facts.scopes if s.name == "relay"] == [[]]  # skipped as a root
    result = engine.lint_text(text, "t.py", Settings())
    assert [f.code for f in result.findings] == ["PIN001"]
