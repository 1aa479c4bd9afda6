"""PIN001 pageable-async-copy."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..fixers import pin_allocation
from .base import CheckContext, Report, Rule, below, origins, is_pageable_async_copy, local_site, pageable


class PageableAsyncCopy(Rule):
    code = "PIN001"
    name = "pageable-async-copy"
    summary = "Pageable host buffer in an asynchronous copy: the copy blocks the host and cannot overlap"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        for copy in facts.copies():
            sites = copy.sites
            if not is_pageable_async_copy(copy):
                # A loop's copy of each element of a container holding pinned and pageable buffers (or
                # ones nothing explains): the pageable ones are copied on their iterations.
                sites = copy.visited(pageable) if copy.is_async and not copy.staged and not copy.dest_allocated \
                    else frozenset()
                if not sites:
                    continue
            if copy.direction == "h2d" and below(sites, ctx.pin001_min_bytes):
                # A small pageable source is staged and the call returns within microseconds; a
                # device-to-host copy into pageable memory waits for the copy (and the work queued
                # before it on the stream) whatever its size, so it is reported at every size.
                continue
            direction = "host-to-device" if copy.direction == "h2d" else "device-to-host"
            via = ctx.via(copy.trace)
            if copy.dest_allocated:
                message = (f"`{copy.api}`{via} allocates a pageable destination, so this asynchronous "
                           f"{direction} copy blocks the host; pass a pinned destination buffer")
            elif all(s.variant == "contiguous-copy" for s in sites):
                message = (f"Non-contiguous host view in asynchronous {direction} copy `{copy.api}`{via}: PyTorch "
                           f"first copies it into a new pageable tensor, so the call blocks the host and cannot "
                           f"overlap; copy from a contiguous pinned buffer (allocate it in the layout the device needs)")
            else:
                sources = origins(sites, ctx)
                message = (f"Pageable host buffer (allocated by {sources}) in asynchronous {direction} copy "
                           f"`{copy.api}`{via}: the call blocks the host and cannot overlap; allocate the buffer "
                           f"pinned")
            plan = None
            if not copy.dest_allocated and len(sites) == 1 and sites == copy.sites and local_site(next(iter(sites)), ctx):
                plan = ctx.plan(pin_allocation, next(iter(sites)), copy)
            yield Report(copy.node, message, sites if not copy.dest_allocated else frozenset(), plan,
                         copy.direction, copy.trace, scope=copy.scope)

    VALID = (
        # Pinned source: truly asynchronous.
        """
import cupy as cp, cupyx
h = cupyx.empty_pinned(1024, dtype='f4')
d = cp.empty(1024, dtype='f4')
s = cp.cuda.Stream(non_blocking=True)
d.set(h, stream=s)
""",
        # A synchronous copy of pageable memory outside a loop is fine.
        """
import numpy as np
from numba import cuda
h = np.zeros(1024)
d = cuda.to_device(h)
""",
        # Unknown buffer (a parameter): no finding.
        """
import torch
def upload(batch):
    return batch.to("cuda", non_blocking=True)
""",
        # cupy.asarray stages pageable memory through CuPy's pinned pool itself.
        """
import numpy as np, cupy as cp
h = np.ones(1 << 20, dtype=np.float32)
d = cp.asarray(h)
""",
    )
    INVALID = (
        """
import numpy as np, cupy as cp
h = np.zeros(1 << 20, dtype=np.float32)
d = cp.empty_like(h)
s = cp.cuda.Stream(non_blocking=True)
d.set(h, stream=s)
""",
        """
import torch as T
x = T.randn(1024, 1024)
y = x.to("cuda", non_blocking=True)
""",
        """
import numpy as np
import pycuda.driver as drv
h = np.empty(1 << 20, dtype=np.float32)
d = drv.mem_alloc(h.nbytes)
s = drv.Stream()
drv.memcpy_htod_async(d, h, s)
""",
        """
import numpy as np
from cuda.bindings import runtime as rt
h = np.zeros(1 << 20, dtype=np.float32)
err, dptr = rt.cudaMalloc(h.nbytes)
err, s = rt.cudaStreamCreate()
rt.cudaMemcpyAsync(dptr, h.ctypes.data, h.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s)
""",
        """
from numba import cuda
import numpy as np
s = cuda.stream()
d = cuda.device_array(1024, stream=s)
out = np.empty(1024)
d.copy_to_host(out)
""",
    )
