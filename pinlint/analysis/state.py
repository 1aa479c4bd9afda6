"""The dataflow state at one point of a scope: the environment and the copies still in flight.

The environment maps names and attribute chains (``h``, ``self.buf``) to values; a few keys starting
with ``$`` hold what Python keeps elsewhere (the current stream, the value being returned, what a
``with`` statement saved). ``pending`` holds the asynchronous copies that may still be running: a
synchronization removes the ones it waits for, and a CPU access of their buffers is a race.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .domain import UNKNOWN, Const, Device, Host, Items, Seq, Value, is_none, join, widen_join
from ..model import PendingCopy

STREAM = "$stream"     # the current stream (None: the default stream)
CAPTURING = "$capturing"  # Const True between a stream capture's begin and end: copies are recorded, not run
RETURN = "$return"     # the value returned on the paths that reach the exit
ELEMENT_OF = "$element-of:"  # prefix: this name holds an element of that container expression (transfer.changed_element)
BEFORE = "$before:"  # prefix: what an object's field held before this path first stored into it (State.join)
MAYBE_NONE = "$maybe-none:"  # prefix: this name was bound by `next(it, None)` (None once the iterator is spent),
                             # or joined from None and a buffer on two paths (the join keeps the buffer)
KEY_OF = "$key-of:"  # prefix: this name is the variable of a loop over that dict's keys (see transfer._note_keys)
PAIR_OF = "$pair-of:"  # prefix: this name is the key variable of `for k, v in d.items()` over a dict of known
                      # entries: Items((name of v, the dict)); a test of k then says which entry v is (narrowing)
PAIRED = "$paired:"    # prefix: this name is the value variable of such a loop: Const(name of k)
MUTATED = "$mutated:"  # prefix: a parameter whose object the scope changed (appended to, stored into)
GLOBAL = "$global:"    # prefix: a name the scope declares ``global``
REBOUND = "$rebound:"  # prefix: what the scope last bound to that global on this path (Outcome.rebound)
DOTTED = "$dotted"     # present once the environment held an attribute chain (``obj.attr``): rebinding
                       # a name must then drop its chains (see ``Evaluator.bind``); set by ``put``
_HELD = Const.of(True)


def iter_key(loop) -> str:
    """The environment key of what a for loop's header evaluated its iterable to."""
    return f"$iter:{id(loop)}"


def put(env: dict, key: str, value: Value) -> None:
    """``env[key] = value``, marking an environment that now holds an attribute chain (``DOTTED``)."""
    if "." in key:
        env[DOTTED] = _HELD
    env[key] = value


class State:
    __slots__ = ("env", "pending", "waited")

    def __init__(self, env: Optional[dict] = None, pending: frozenset = frozenset(),
                 waited: frozenset = frozenset()) -> None:
        self.env = env if env is not None else {}
        self.pending = pending
        self.waited = waited  # nodes of the copies a synchronization completed on some path to here

    def copy(self) -> "State":
        return State(dict(self.env), self.pending, self.waited)

    def __eq__(self, other) -> bool:
        return isinstance(other, State) and self.pending == other.pending and self.waited == other.waited and \
            self.env == other.env

    def __hash__(self):  # states are compared, never hashed
        raise TypeError("State is not hashable")

    def join(self, other: "State", widening: bool = False) -> "State":
        """Join two states: a name bound on one path only keeps its value (the other path would
        raise NameError on use, so that value is the only one a later use can see)."""
        combine = widen_join if widening else join
        env = dict(self.env)
        for key, value in other.env.items():
            if key in env:
                mine = env[key]
                if mine is not value and mine != value:
                    env[key] = combine(mine, value)
                    if not key.startswith("$") and "." not in key and _none_and_buffer(mine, value):
                        # `raw = None; if use_fft: raw = fft(x)`: the join keeps the array (a copy of
                        # None would have failed), but `if raw is None:` may still be taken
                        env[MAYBE_NONE + key] = Const.of(True)
            else:
                before = other.env.get(BEFORE + key)
                env[key] = value if before is None else combine(value, before)
        for key, value in self.env.items():
            if key not in other.env:
                # An object's field stored on this path only: on the other it still holds what it
                # held before (`if mode == "auto" and n == 1: self.mode = "cuda:0"`).
                before = self.env.get(BEFORE + key)
                if before is not None:
                    env[key] = combine(value, before)
        return State(env, merge_pending(self.pending | other.pending), self.waited | other.waited)

    # ------------------------------------------------------------------ the copies in flight
    def add_pending(self, copy: PendingCopy) -> None:
        self.pending = merge_pending(self.pending | {copy})

    def synchronize(self, stream) -> None:
        """A synchronization of ``stream`` (None: the whole device, or a stream the analysis cannot
        name) completes the copies on it. Precision first: an unknown barrier counts as covering."""
        if not self.pending:
            return
        if stream is None:
            self._complete(frozenset(p for p in self.pending if p.captured))  # recorded copies stay recorded
            return
        self._complete(frozenset(p for p in self.pending if p.captured or
                                 p.stream is not None and not _same_stream(p.stream, stream)))

    def blocking_copy(self) -> None:
        """A blocking copy waits for the device (counted generously: for every stream)."""
        self._complete(frozenset(p for p in self.pending if p.captured))

    def _complete(self, left: frozenset) -> None:
        done = self.pending - left
        if done:
            self.waited = self.waited | frozenset(p.node for p in done)
        self.pending = left

    def unwaited(self) -> frozenset:
        """The copies in flight at a function's exit that no path to it waited for. A copy some path
        waits for (``if launched: torch.cuda.synchronize()`` after a loop that may launch nothing, a
        read-back of the sampled token on one arm) is waited for where it matters: the path that
        skips the wait is one that issued no work depending on it, which the analysis cannot tell
        apart. Its callers do not see it in flight (exllamav3's generator step, survey 36)."""
        if not self.waited:
            return self.pending
        return frozenset(p for p in self.pending if p.node not in self.waited)

    def launch_graphs(self, stream) -> None:
        """A CUDA graph launched: the copies recorded into graphs run now, on ``stream`` when known
        (which graph holds which copy is not followed: every recorded copy counts)."""
        if any(p.captured for p in self.pending):
            self.pending = merge_pending(frozenset(
                replace(p, captured=False, stream=stream if stream is not None else p.stream) if p.captured else p
                for p in self.pending))

    def pending_on(self, sites: frozenset) -> frozenset:
        """The copies in flight whose buffers overlap ``sites`` (a copy recorded into a graph is not)."""
        if not self.pending or not sites:
            return frozenset()
        return frozenset(p for p in self.pending if p.sites & sites and not p.captured)


def _none_and_buffer(a: Value, b: Value) -> bool:
    buffers = (Host, Seq, Device, Items)
    return is_none(a) and isinstance(b, buffers) or is_none(b) and isinstance(a, buffers)


def merge_pending(pending: frozenset) -> frozenset:
    """One entry per copy (call, stream, whether it is truly asynchronous): the buffers it may have
    been copying are joined, so the set stays as small as the code, through loops and calls."""
    if len(pending) < 2:
        return pending
    groups: dict = {}
    for copy in pending:
        key = (copy.node, copy.direction, copy.stream, copy.hypothetical, copy.api, copy.captured)
        groups.setdefault(key, []).append(copy)
    if len(groups) == len(pending):
        return pending
    return frozenset(group[0] if len(group) == 1 else _merged(group) for group in groups.values())


def _merged(copies: list) -> PendingCopy:
    """One copy for several entries of it, the same whatever order the set gave them in (the entry
    kept used to be the first one met, so which loops its buffer varied in, and which path a
    finding named, came and went with the hash seed): the buffers of all, the loops in which every
    one of them varies, and the shortest path to it, the first of those in text order."""
    first = min(copies, key=_trace_order)
    sites = frozenset().union(*(c.sites for c in copies))
    varies = frozenset.intersection(*(c.varies for c in copies))
    calls = first.calls if all(c.calls == first.calls for c in copies) else ()  # issued through other calls: not known which
    return replace(first, sites=sites, varies=varies, calls=calls)


def _trace_order(copy: PendingCopy) -> tuple:
    return (len(copy.trace), len(copy.loops),
            tuple((getattr(step.module, "filename", ""), step.function, step.message) for step in copy.trace))


def _same_stream(a, b) -> bool:
    return a == b or (getattr(a, "default", False) and getattr(b, "default", False))


def same_stream(a, b) -> bool:
    return _same_stream(a, b)


def value_of(state: State, key: str, default: Value = UNKNOWN) -> Value:
    return state.env.get(key, default)
