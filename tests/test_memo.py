"""What the analysis keeps of its analyses of a function (``Project.invoke`` / ``Project.baseline``),
and when a call is analysed again with its arguments (``interproc._invoke``).

Kept for good unless it read something unfinished: an analysis made while a class's fields are being
worked out that does not read them is the same analysis later, so making it again is waste; one
that read them is kept only until they are done (the misplaced report it would otherwise cause is
the ``engine-warmed-up-in-init-called-from-main`` project of ``interproc_projects.py``). A constant
argument that a callee's ``if`` tests is a reason to analyse the callee with it only when the callee
does something the analysis follows.
"""

from __future__ import annotations

import collections

import pytest

from helpers import rows, source

from pinlint import engine
from pinlint.analysis import project as project_module
from pinlint.settings import Settings


@pytest.fixture
def analyses(monkeypatch):
    """Analyses made per scope name while checking one program."""
    def count(src: str) -> collections.Counter:
        made: collections.Counter = collections.Counter()
        run = project_module.Project.run

        def counting(self, ctx, scope, *args):
            made[scope] += 1
            return run(self, ctx, scope, *args)
        monkeypatch.setattr(project_module.Project, "run", counting)
        engine.start_project()
        try:
            assert engine.lint_text(source(src), "t.py", Settings()).error is None
        finally:
            engine.end_project()
            monkeypatch.undo()
        return made
    return count


def _configured(count: int, with_copy: bool) -> str:
    """``count`` callers of ``configure`` with a different constant each; ``configure`` tests it and
    calls a helper, which copies a pageable buffer only when ``with_copy``."""
    work = "    d.set(np.empty(1 << 20, np.float32), stream=s)\n" if with_copy else "    return n * 2\n"
    lines = ["import numpy as np", "import cupy as cp", "", "d = cp.empty(1 << 20, cp.float32)",
             "s = cp.cuda.Stream(non_blocking=True)", "", "def helper(n):", work,
             "def configure(limit=None):", "    if limit:", "        helper(limit)", "    else:",
             "        helper(0)", ""]
    for n in range(count):
        lines += [f"def caller{n}():", "    x = cp.empty(4)", f"    configure(limit={n + 1})", ""]
    return "\n".join(lines) + "\n"


def test_a_tested_constant_does_not_analyse_a_callee_that_does_nothing_again(analyses):
    made = analyses(_configured(20, with_copy=False))
    assert made["caller0"] == made["caller19"] == 1
    assert made["configure"] == 1  # its baseline serves every constant


def test_a_tested_constant_still_analyses_a_callee_that_does_something(analyses):
    made = analyses(_configured(8, with_copy=True))
    assert made["configure"] == 9  # the baseline, and once per constant (up to MAX_CONTEXTS)
    assert rows(_configured(8, with_copy=True), "PIN001")


def test_an_analysis_made_while_fields_are_worked_out_is_kept_when_it_read_none_of_them(analyses):
    # Every class's field run calls keep(H) with the same pinned buffer: one analysis serves them all.
    classes = "\n".join(f"class C{n}:\n    def __init__(self):\n        self.h = keep(H)\n"
                        f"    def push(self):\n        d.set(self.h, stream=s)\n" for n in range(20))
    src = ("import cupy as cp\nimport cupyx\n\nH = cupyx.empty_pinned(1 << 20, cp.float32)\n"
           "d = cp.empty(1 << 20, cp.float32)\ns = cp.cuda.Stream(non_blocking=True)\n\n"
           "def keep(h):\n    return h\n\n" + classes)
    made = analyses(src)
    assert made["C0.__init__"] >= 1 and made["C19.push"] >= 1
    assert made["keep"] <= 2  # its baseline and its analysis with H
    assert rows(src, "PIN001") == []
