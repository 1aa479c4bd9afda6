"""Abstract values of the memory-kind interpreter and their join.

A host buffer is the set of allocation sites it may come from (a may-point-to set), so branch joins
fall out as set union: one kind when every site agrees, a "maybe" when they differ. ``UNKNOWN`` is
everything the analysis cannot see (parameters, unknown calls); rules never report on it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from .model import Kind, Site


class Value:
    __slots__ = ()


@dataclass(frozen=True)
class Unknown(Value):
    pass


UNKNOWN = Unknown()
# Inside a Const's set of values: "or any other value" (a parameter that defaults to 0).
ANYTHING = object()


@dataclass(frozen=True)
class Host(Value):
    """Host memory: a buffer, a view of one, or a raw pointer into one."""

    sites: frozenset
    library: str = "numpy"        # "numpy" or "torch": which methods apply
    maybe_unknown: bool = False   # joined with an unknown value on some path
    batch: bool = False           # a DataLoader batch: indexing picks a tensor, not an element
    varies: frozenset = frozenset()  # loops whose iterations each see a different buffer (`for a in arrays`)
    contiguous: Optional[bool] = True  # False after a transpose; None when it cannot be told
    pointer: bool = False         # a raw address (cudaHostAlloc's ptr, h.ctypes): arithmetic on it reads nothing

    def kinds(self) -> frozenset:
        return frozenset(s.kind for s in self.sites)


@dataclass(frozen=True)
class Device(Value):
    library: str
    stream: Optional["Stream"] = None   # Numba arrays remember the stream they were made on


@dataclass(frozen=True, eq=False)
class Stream(Value):
    """A stream object; identity is the creating call. ``default`` streams never make copies async."""

    origin: object = None
    default: bool = False


@dataclass(frozen=True)
class Const(Value):
    """A constant, or a small set of constants after a join (``"cuda" if ok else "cpu"``)."""

    values: frozenset

    @staticmethod
    def of(value) -> "Const":
        return Const(frozenset([value]))

    @property
    def single(self):
        return next(iter(self.values)) if len(self.values) == 1 else None

    def is_exactly(self, value) -> bool:
        return len(self.values) == 1 and next(iter(self.values)) == value


@dataclass(frozen=True)
class Items(Value):
    """A tuple or list literal, or a call returning ``(err, value)``."""

    items: tuple


@dataclass(frozen=True)
class DeviceSpec(Value):
    """A torch device: ``cuda`` True, False (cpu) or None (either)."""

    cuda: Optional[bool]


@dataclass(frozen=True)
class Loader(Value):
    """A torch DataLoader; iterating it yields batches allocated at ``site``."""

    site: Site


@dataclass(frozen=True)
class Obj(Value):
    """Objects whose methods matter: "event", "gpu-device", "pool"."""

    tag: str


@dataclass(frozen=True)
class Context(Value):
    """What a ``with`` statement enters: a stream made current, or registered (pinned/mapped) buffers."""

    stream: Optional[Stream] = None
    registered: tuple = ()  # ((root variable name, Host value), ...)
    sync_on_exit: Optional[Stream] = None  # the block ends with a synchronize of this stream
    sync_node: object = None


@dataclass(frozen=True, eq=False)
class Function(Value):
    """A function defined in this file; calling it applies its return summary."""

    node: object
    name: str
    kernel: bool = False


@dataclass(frozen=True)
class Iteration(Value):
    """``enumerate(x)`` / ``zip(a, b)``: what each step yields."""

    element: Value


def join(a: Value, b: Value) -> Value:
    if a == b:
        return a
    if isinstance(a, Host) and isinstance(b, Host):
        return Host(a.sites | b.sites, a.library if a.library == b.library else "numpy",
                    a.maybe_unknown or b.maybe_unknown, a.batch and b.batch, a.varies | b.varies,
                    a.contiguous if a.contiguous == b.contiguous else None, a.pointer and b.pointer)
    if isinstance(a, Host) and isinstance(b, Unknown):
        return replace(a, maybe_unknown=True)
    if isinstance(b, Host) and isinstance(a, Unknown):
        return join(b, a)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.values | b.values)
    if isinstance(a, Device) and isinstance(b, Device) and a.library == b.library:
        return Device(a.library, a.stream if a.stream == b.stream else None)
    if isinstance(a, DeviceSpec) and isinstance(b, DeviceSpec):
        return DeviceSpec(None)
    if isinstance(a, Items) and isinstance(b, Items) and len(a.items) == len(b.items):
        return Items(tuple(join(x, y) for x, y in zip(a.items, b.items)))
    return UNKNOWN


def join_envs(a: dict, b: dict) -> dict:
    """Join two environments; a name bound on one path only keeps its value (the other path would
    raise NameError on use, so the value is the only one a later use can see)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = join(out[key], value) if key in out else value
    return out


def is_pageable(site: Site) -> bool:
    return site.kind is Kind.PAGEABLE


def varying_in(value: Value, loop: int) -> Value:
    """The element a loop binds on each iteration: a different buffer every time round."""
    if isinstance(value, Host):
        return replace(value, varies=value.varies | {loop})
    if isinstance(value, Items):
        return Items(tuple(varying_in(item, loop) for item in value.items))
    return value
