"""The worklist solver: states to a fixpoint over a control-flow graph, then one recording pass.

Blocks are processed in reverse postorder; a block's entry state is the join of what its
predecessors hand it, and a block is visited again only when that state changed. At a loop head,
after a few visits, the join widens (values that keep changing become unknown), so every loop
settles after a bounded number of visits whatever its nesting: the cost is linear in the size of
the code. Once the states are stable, every reachable block is evaluated once more with events on.
"""

from __future__ import annotations

import heapq
from typing import Optional

import libcst as cst

from .narrowing import narrowed
from .state import State, iter_key
from .transfer import run_element
from .evaluator import one_element, single_pass

WIDEN_AFTER = 2          # visits of a loop head before its join widens
MAX_VISITS_PER_BLOCK = 40  # a safety net: past it the solver stops and records what it has


def reverse_postorder(graph) -> list:
    order, seen = [], set()
    stack = [(graph.entry, iter(graph.entry.succs))]
    seen.add(graph.entry)
    while stack:
        block, successors = stack[-1]
        for succ in successors:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(succ.succs)))
                break
        else:
            stack.pop()
            order.append(block)
    order.reverse()
    return order


def feasible(state: State, conditions: tuple) -> bool:
    """False when a test the arm needs has a known constant value of the other truth."""
    from .transfer import TEST
    for test, truth in conditions:
        value = state.env.get(TEST + str(id(test)))
        if value is not None and truthiness(value) is (not truth):
            return False
    return True


def truthiness(value) -> Optional[bool]:
    from .domain import ANYTHING, Const
    if not isinstance(value, Const) or ANYTHING in value.values:
        return None
    answers = {bool(v) for v in value.values}
    return answers.pop() if len(answers) == 1 else None


def _successors(block, out: State) -> list:
    """Where ``block`` hands its state: a `for` loop over one item (`for x in [h]`, a helper's loop
    over the one-item list its caller passes) does not come round again, so the end of its body goes
    on to what follows the loop instead of back to its head (whose next iteration would meet the
    first one's copies still in flight: a race with nothing)."""
    succs = block.succs
    loop = block.loop_head
    if isinstance(loop, cst.For) and len(succs) == 2 and one_element(out.env.get(iter_key(loop))):
        # ... and a loop over exactly one item runs its body: not leaving at once, as an empty one
        # would (`out = []; for p in params: out.append(f(p))` gives a one-item list).
        return succs[:1]
    for index, succ in enumerate(succs):
        loop = succ.loop_head
        if loop is not None and block.depth >= succ.depth and isinstance(loop, cst.For) and \
                len(succ.succs) > 1 and single_pass(out.env.get(iter_key(loop))):
            return succs[:index] + succ.succs[1:] + succs[index + 1:]
    return succs


def solve(graph, ev, entry: State) -> tuple[list, Optional[State]]:
    # Deeper blocks first, then reverse postorder: an inner loop settles before the loop around
    # it runs again, so what it finds reaches the outer loop in one step, not one change at a time.
    postorder = reverse_postorder(graph)
    position = {block: index for index, block in enumerate(postorder)}
    order = sorted(postorder, key=lambda block: (-block.depth, position[block]))
    rank = {block: index for index, block in enumerate(order)}
    states: dict = {graph.entry: entry}
    visits: dict = {}
    queue = [rank[graph.entry]]
    queued = set(queue)
    budget = MAX_VISITS_PER_BLOCK * max(len(order), 1)
    ev.emit = False
    while queue and budget > 0:
        budget -= 1
        index = heapq.heappop(queue)
        queued.discard(index)
        block = order[index]
        ev.state = states[block].copy()
        for element in block.elements:
            run_element(ev, element)
        out = ev.state
        for succ in _successors(block, out):
            arm = out
            if succ in block.conditions:
                if not feasible(out, block.conditions[succ]):
                    continue  # an if arm its constant test rules out
                arm = narrowed(ev, out, block.conditions[succ])  # what the arm's tests say of its values
            old = states.get(succ)
            if old is None:
                new = arm.copy()
            else:
                visits[succ] = visits.get(succ, 0) + 1
                new = old.join(arm, widening=succ.loop_head is not None and visits[succ] > WIDEN_AFTER)
                if new == old:
                    continue
            states[succ] = new
            position = rank[succ]
            if position not in queued:
                queued.add(position)
                heapq.heappush(queue, position)
    # The recording pass: each reachable block once, from its settled state, in source order.
    ev.emit = True
    for block in sorted(states, key=lambda b: b.index):
        if block is graph.exit or block is graph.raise_exit:
            continue
        ev.state = states[block].copy()
        for element in block.elements:
            run_element(ev, element)
    ev.emit = False
    ev.element = None
    return ev.events, states.get(graph.exit)
