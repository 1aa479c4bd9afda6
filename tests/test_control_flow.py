"""Control flow is a graph: break, continue, return, raise, with, try and match are edges, loops run to
a fixpoint once whatever their nesting, and a jump never changes a verdict by dropping a path.

The first cases are the regressions of the first engine, which abandoned the state of a path that
jumped (so a trailing `continue` made PIN001 appear, and a `break` made PIN006 fire on a buffer that
was not the only one it could be), and re-ran inner loops inside every pass of the outer one (15
nested loops took 111 s).
"""

from __future__ import annotations

import time

import libcst as cst
import pytest

from helpers import codes, rows, row_of, source

CUPY = """
import numpy as np, cupy as cp, cupyx
s = cp.cuda.Stream(non_blocking=True)
d = cp.empty(1024, dtype=np.float32)
"""


# ------------------------------------------------------------------ jumps do not drop paths
@pytest.mark.parametrize("tail", ["", "    continue\n"])
def test_loop_rebinding_pinned_after_the_copy_is_the_same_with_or_without_continue(tail):
    # First iteration: pageable; later ones: pinned. The copy sees both: no definite finding.
    src = CUPY + ("h = np.empty(1024, dtype=np.float32)\n"
                  "for i in range(10):\n"
                  "    d.set(h, stream=s)\n"
                  "    h = cupyx.empty_pinned(1024, dtype=np.float32)\n") + tail
    assert "PIN001" not in codes(src)


@pytest.mark.parametrize("jump", ["", "        break\n"])
def test_write_after_a_loop_whose_break_rebinds_the_buffer_is_the_same_with_or_without_break(jump):
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "for i in range(10):\n"
                  "    d.set(h, stream=s)\n"
                  "    if i == 3:\n"
                  "        h = np.empty(1024, dtype=np.float32)\n") + jump + "h[:] = 0\n"
    assert "PIN006" not in codes(src)


@pytest.mark.parametrize("jump", ["continue", "pass"])
def test_continue_keeps_the_state_of_its_path(jump):
    # The pending copy survives the `continue`: the next iteration's write races with it.
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "for i in range(10):\n"
                  "    h[:] = i\n"
                  "    d.set(h, stream=s)\n"
                  f"    {jump}\n")
    assert rows(src, "PIN006") == [row_of(src, "h[:] = i")]


def test_break_path_reaches_the_code_after_the_loop():
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "while True:\n"
                  "    d.get(stream=s, out=h, blocking=False)\n"
                  "    break\n"
                  "total = h.sum()\n")
    assert rows(src, "PIN005") == [row_of(src, "total = h.sum()")]


def test_return_inside_a_loop_leaves_the_other_paths_alone():
    src = CUPY + ("def f(flag):\n"
                  "    h = np.empty(1024, dtype=np.float32)\n"
                  "    for i in range(3):\n"
                  "        if flag:\n"
                  "            return None\n"
                  "        h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "    d.set(h, stream=s)\n")
    # After the loop, h is pageable (zero iterations) or pinned: not definitely pageable.
    assert "PIN001" not in codes(src)


def test_code_after_raise_is_unreachable():
    src = CUPY + ("def f():\n"
                  "    h = np.empty(1024, dtype=np.float32)\n"
                  "    raise RuntimeError('no')\n"
                  "    d.set(h, stream=s)\n")
    assert codes(src) == []


@pytest.mark.parametrize("stop, reached", [("assert False", False), ("assert 0, 'disabled'", False),
                                           ("assert None", False), ("assert s is not None", True)])
def test_code_after_an_assert_that_always_fails_is_unreachable(stop, reached):
    """A function disabled by ``assert False`` at its top (kept for reference) runs nothing after it,
    as mypy and pyright read it; an assert of a condition may pass."""
    src = CUPY + ("def old_loop(batches):\n"
                  "    print('disabled')\n"
                  f"    {stop}\n"
                  "    for b in batches:\n"
                  "        h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "        d.set(h, stream=s)\n")
    assert codes(src) == (["PIN002"] if reached else [])


def test_a_synchronize_in_finally_covers_the_read_after_the_try():
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "try:\n"
                  "    d.get(stream=s, out=h, blocking=False)\n"
                  "finally:\n"
                  "    s.synchronize()\n"
                  "total = h.sum()\n")
    assert "PIN005" not in codes(src)


def test_finally_runs_on_the_return_path_too():
    src = CUPY + ("def f():\n"
                  "    h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "    try:\n"
                  "        d.get(stream=s, out=h, blocking=False)\n"
                  "        return h\n"
                  "    finally:\n"
                  "        s.synchronize()\n"
                  "x = f()\n"
                  "total = x.sum()\n")
    assert "PIN005" not in codes(src)


def test_except_handler_sees_the_state_after_the_copy():
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "try:\n"
                  "    d.get(stream=s, out=h, blocking=False)\n"
                  "    s.synchronize()\n"
                  "except RuntimeError:\n"
                  "    print(h[0])\n")
    # The synchronize may not have run when the handler reads h.
    assert rows(src, "PIN005") == [row_of(src, "print(h[0])")]


def test_leaving_a_with_stream_block_by_return_restores_the_stream():
    src = CUPY + ("h = np.empty(1024, dtype=np.float32)\n"
                  "def f(flag):\n"
                  "    for i in range(2):\n"
                  "        with s:\n"
                  "            if flag:\n"
                  "                break\n"
                  "    d.set(h)\n")
    assert "PIN001" not in codes(src)  # outside the with block the default stream is current again


def test_match_arms_join():
    src = CUPY + ("def f(kind):\n"
                  "    match kind:\n"
                  "        case 'a':\n"
                  "            h = np.empty(1 << 20, dtype=np.float32)\n"
                  "        case _:\n"
                  "            h = np.zeros(1 << 20, dtype=np.float32)\n"
                  "    d.set(h, stream=s)\n")
    assert rows(src, "PIN001") == [row_of(src, "d.set(h, stream=s)")]


def test_while_else_runs_when_the_loop_ends_without_break():
    src = CUPY + ("h = cupyx.empty_pinned(1024, dtype=np.float32)\n"
                  "i = 0\n"
                  "while i < 3:\n"
                  "    i += 1\n"
                  "else:\n"
                  "    h = np.empty(1 << 20, dtype=np.float32)\n"
                  "d.set(h, stream=s)\n")
    assert rows(src, "PIN001") == [row_of(src, "d.set(h, stream=s)")]


# ------------------------------------------------------------------ nesting costs linear time
def _nested(depth: int) -> str:
    lines = ["import numpy as np, cupy as cp", "h = np.empty(1024)", "s = cp.cuda.Stream()",
             "d = cp.empty(1024)"]
    for level in range(depth):
        lines.append("    " * level + f"for i{level} in range(2):")
    lines.append("    " * depth + "d.set(h, stream=s)")
    lines.append("    " * depth + "h = h + 1")
    return "\n".join(lines) + "\n"


def _visits(depth: int) -> int:
    """Block visits the solver makes on ``depth`` nested loops (a count, not a time)."""
    from pinlint.analysis import solver
    counted = [0]
    original = solver.run_element

    def counting(ev, element):
        counted[0] += 1
        original(ev, element)
    solver.run_element = counting
    try:
        codes(_nested(depth))
    finally:
        solver.run_element = original
    return counted[0]


def test_work_grows_linearly_with_loop_nesting():
    small, large = _visits(10), _visits(20)
    assert large <= 2.5 * small, (small, large)


@pytest.mark.parametrize("depth", [15, 30])
def test_deeply_nested_loops_are_analysed_and_reported(depth):
    start = time.perf_counter()
    found = codes(_nested(depth))
    elapsed = time.perf_counter() - start
    # h is pageable on the first pass and an arithmetic result later: both pageable.
    assert found == ["PIN001"]
    assert elapsed < 30, elapsed  # a hang guard, not a speed target (bench/ measures speed)


def test_the_cfg_covers_every_statement_kind():
    from pinlint.analysis import cfg
    program = source("""
    import cupy as cp
    def f(x):
        for a in x:
            if a:
                continue
            elif a > 1:
                break
            else:
                pass
        else:
            y = 1
        while x:
            try:
                with cp.cuda.Stream() as s:
                    return s
            except (ValueError, KeyError) as e:
                raise
            else:
                x = 2
            finally:
                x = 3
        match x:
            case [a, *rest]:
                pass
            case {"k": v, **kw}:
                pass
        return [z for z in x if z]
    """)
    module = cst.parse_module(program)
    function = module.body[1]
    graph = cfg.build(function.body.body, function=True)
    kinds = {e.kind for b in graph.blocks for e in b.elements}
    assert {"stmt", "test", "iter", "bind", "enter", "exit", "handler", "case"} <= kinds
    assert sum(1 for b in graph.blocks if b.loop_head is not None) == 2


@pytest.mark.parametrize("test", ["result is None", "not (result is not None)"])
def test_a_fallback_arm_after_a_maybe_set_buffer_is_reachable(test):
    """``result = None; if want: result = cp.zeros(n)``: the join keeps the array (a copy of None
    would have failed), but the ``if result is None:`` fallback still runs when ``want`` is false
    (spyde's Numba fallback when CuPy is off, survey 56 FE)."""
    src = CUPY + f"""
from numba import cuda

def process(n, want):
    stream = cuda.stream()
    result = None
    if want:
        result = cp.zeros(n)
    if {test}:
        scale = np.zeros(n, np.float32)
        return cuda.to_device(scale, stream=stream)
    return result
"""
    assert rows(src, "PIN001") == [row_of(src, "cuda.to_device(scale")]


def test_a_buffer_bound_on_every_path_is_not_none():
    src = CUPY + """
from numba import cuda

def process(n, want):
    stream = cuda.stream()
    result = cp.ones(n) if want else cp.zeros(n)
    if result is None:
        scale = np.zeros(n, np.float32)
        return cuda.to_device(scale, stream=stream)
    return result
"""
    assert codes(src) == []
