"""PIN007 pageable-transfer-in-loop."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..analysis.facts import on_one_iteration
from ..model import Event, Site, first_site
from ..fixers import pin_allocation
from .base import CheckContext, Report, Rule, below, origins, is_pageable_async_copy, local_site, pageable


def _reusing_loops(copy: Event, site: Site) -> list:
    """The loops around the copy that the allocation is not in and whose every iteration sees the same
    buffer (not `for a in arrays`, where each iteration copies a different one once)."""
    if site.fresh_each_iteration and not _downloaded(site):
        # A download's own destination (`host = dev.cpu()`) is new each time the download runs, which
        # its loops say; re-sent in a loop the download is outside of, it is the same buffer each time
        # (DUCATI's cache allocator, survey 52 BF); also when a helper downloads it (`return x.cpu()`,
        # chai-lab's low-memory trunk, survey 57 GD).
        return []
    return [loop for loop in copy.loops if loop not in site.loops and loop not in copy.varies_in
            and not on_one_iteration(copy.branch, loop)]


def _downloaded(site: Site, depth: int = 0) -> bool:
    """The destination a download allocated, or a call's buffer that is one (``to_host(d)``)."""
    if site.variant == "dest":
        return True
    return depth < 8 and site.variant == "call" and bool(site.via) and \
        all(_downloaded(inner, depth + 1) for inner in site.via)


def _allocated_outside(copy: Event, site: Site) -> bool:
    return bool(_reusing_loops(copy, site))


def _which_loop(copy: Event, ctx: CheckContext) -> str:
    """`the loop`, where a loop around the reported call re-copies the buffer; `the loop at
    schedule.py:24` where only a loop of a callee does (a sampler called once per prompt whose solver
    re-copies a table on every step: the caller's loop makes a new table each time)."""
    loops = [loop for site in copy.sites for loop in _reusing_loops(copy, site)]
    places = [ctx.enclosing_or_place(loop, copy.node, copy.trace) for loop in loops]
    if not places or any(place is None for place in places):
        return "the loop"
    return f"the loop at {places[-1]}"


class PageableTransferInLoop(Rule):
    code = "PIN007"
    name = "pageable-transfer-in-loop"
    summary = "Pageable buffer allocated outside a loop and transferred inside it, at pageable bandwidth"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        # A call that copies the buffer asynchronously on one path and synchronously on another (a
        # helper's `if use_async:`) is PIN001's there, which takes precedence: one finding per call.
        asynchronous: dict = {}
        for copy in facts.copies():
            if is_pageable_async_copy(copy):
                asynchronous.setdefault(copy.node, set()).update(copy.sites)
        for copy in facts.copies():
            if not copy.loops or copy.dest_allocated or is_pageable_async_copy(copy):
                continue
            if copy.sites & asynchronous.get(copy.node, set()):
                continue
            if not copy.definitely(lambda s: pageable(s) and _allocated_outside(copy, s)):
                continue
            if below(copy.sites, ctx.pin007_min_bytes):
                continue  # small constant-size transfers are latency-bound; pinning buys little
            direction = "host-to-device" if copy.direction == "h2d" else "device-to-host"
            sources = origins(copy.sites, ctx)
            site = first_site(copy.sites)
            loop = _which_loop(copy, ctx)
            inside = "inside a loop" if loop == "the loop" else "inside that loop"
            yield Report(copy.node,
                         f"Pageable host buffer (allocated by {sources}, outside {loop}) in {direction} copy "
                         f"`{copy.api}`{ctx.via(copy.trace)} {inside}: every iteration transfers at pageable "
                         f"bandwidth; allocate the buffer pinned", copy.sites,
                         ctx.plan(pin_allocation, site, copy) if len(copy.sites) == 1 and local_site(site, ctx)
                         else None, copy.direction, copy.trace)

    VALID = (
        # Pinned buffer reused in the loop.
        """
import numpy as np
from numba import cuda
h = cuda.pinned_array(1 << 20, dtype=np.float32)
for i in range(10):
    d = cuda.to_device(h)
""",
        # Allocated inside the loop: a fresh buffer each time (pinning it would cost more).
        """
import numpy as np, cupy as cp
for i in range(10):
    h = np.full(1 << 20, i, dtype=np.float32)
    d = cp.asarray(h)
""",
        # Each iteration copies a different buffer, once.
        """
import numpy as np
import pycuda.gpuarray as gpuarray
arrays = [np.ones(1 << 20), np.zeros(1 << 20)]
for a in arrays:
    d = gpuarray.to_gpu(a)
""",
        # Tiny buffers whose size the code spells out: a scalar array, a short literal, a ctypes int.
        """
import ctypes
import numpy as np, cupy as cp
d = cp.empty(1)
one = np.array(1.0)
pair = np.array([[1, 2], [3, 4]], dtype=np.float32)
flag = ctypes.c_int(0)
for i in range(10):
    d.set(one)
    e = cp.asarray(pair)
    cp.cuda.runtime.memcpy(d.data.ptr, ctypes.addressof(flag), 4, 1)
""",
        # Unknown buffer.
        """
import cupy as cp
def f(h, d):
    for i in range(10):
        d.set(h)
""",
    )
    INVALID = (
        # The element of the outer loop is copied again on every iteration of the inner loop.
        """
import numpy as np, cupy as cp
for a in [np.ones(1 << 20), np.zeros(1 << 20)]:
    for repeat in range(10):
        d = cp.asarray(a)
""",
        """
import numpy as np, cupy as cp
h = np.zeros(1 << 20, dtype=np.float32)
for i in range(10):
    d = cp.asarray(h)
""",
        # np.array of a big array is as big as it.
        """
import numpy as np, cupy as cp
h = np.array(np.zeros(1 << 20, dtype=np.float32))
for i in range(10):
    d = cp.asarray(h)
""",
        """
import torch
x = torch.zeros(1 << 20)
for step in range(100):
    y = x.cuda()
""",
        """
import numpy as np
import pycuda.driver as drv
def loop(d):
    h = np.empty(1 << 20, dtype=np.float32)
    while True:
        drv.memcpy_dtoh(h, d)
""",
    )
