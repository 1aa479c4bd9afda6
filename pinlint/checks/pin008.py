"""PIN008 pinned-for-single-transfer."""

from __future__ import annotations

from typing import Iterator, Optional

from ..analysis import FileFacts
from ..fixes import DISPLAY, Plan
from ..model import Event, EventType, Site
from ..trace.units import size
from .base import CheckContext, Report, Rule, below

# Pinned allocations only. Registering memory that is already filled (`cudaHostRegister`,
# `with cuda.pinned(a):`, `register_host_memory`) measured cheap on the H200: 2.8 ms for 64 MiB and
# 10.9 ms for 256 MiB with numba's `cuda.pinned`, so registering and copying once (4.2 / 16 ms) beat
# the pageable copy (8.2 / 33 ms): the claim does not hold for registrations (docs/verification.md).
_PINNING = (EventType.ALLOC,)
ADVICE = ("Copy the pageable data directly (drop the pinning), or keep the pinned buffer and reuse it for "
          "every transfer")


def _pinned_here(site: Site) -> bool:
    """Pinned by this very call, once: not a project function's result (its own analysis reports
    it), not a fresh buffer per use (DataLoader batches)."""
    return site.kind.is_pinned and not site.via and not site.fresh_each_iteration and not site.loops


def _copy_key(copy: Event) -> tuple:
    """One copy call: a CFG may record a ``finally`` block's copy twice, and one call of a project
    function may hold several copies (told apart by where the trace ends)."""
    return (copy.node, copy.trace[-1].node if copy.trace else None)


def single_transfer(pinning: Event, events: list) -> Optional[Event]:
    """The one copy of the pinned buffer, when exactly one copy call may touch it, outside any loop,
    and no kernel is handed the buffer; else None."""
    copies: dict = {}
    for event in events:
        if not (event.sites & pinning.sites):
            continue
        if event.type is EventType.LAUNCH:
            return None  # a kernel reads it (zero-copy, or Numba's implicit transfers): not ours to judge
        if event.type is EventType.COPY:
            copies.setdefault(_copy_key(event), event)
    if len(copies) != 1:
        return None
    [copy] = copies.values()
    if copy.scope != "<module>" and all(site.scope == "<module>" for site in pinning.sites):
        # A module's buffer copied in one of its functions (`STAGE` reused by `upload`): that
        # function may run any number of times.
        return None
    return None if copy.loops else copy


class PinnedForSingleTransfer(Rule):
    code = "PIN008"
    name = "pinned-for-single-transfer"
    summary = "Buffer allocated pinned outside a loop for a single transfer, then dropped: pinning costs more than it saves"
    fix_availability = "always"  # display-only advice: which remedy fits depends on the program

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        events = list(facts.events())
        # A module's buffer can be used by any of its functions: escapes and copies are counted file-wide.
        escaped = frozenset().union(*(scope.escaped() for scope in facts.scopes))
        # A function's pinning reached from a call inside a loop pins on every iteration: PIN002's
        # finding at the call, not this one.
        # The call may be several calls up (`serve` loops over `step`, which calls the allocating helper).
        in_loops = frozenset(inner for event in events if event.loops and event.type in _PINNING
                             for site in event.sites for inner in site.through())
        for event in events:
            if event.type not in _PINNING or event.loops or event.trace:
                continue
            if not event.definitely(_pinned_here) or any(site in escaped or site in in_loops for site in event.sites):
                continue
            if below(event.sites, ctx.pin008_min_bytes):
                continue  # pinning a small buffer once costs little
            if any(site.metadata_block for site in event.sites):
                continue  # per-step metadata from Python values (``Site.metadata_block``)
            if event.definitely(lambda s: s.fresh_pool_block and s.nbytes is None and s.scope != "<module>"):
                # A pool block of a size nothing says, taken in a function for data built there (a
                # scheduler's index tensor each step): the claim rests on page-locking it, which the
                # pool does on its first request only, and a function may run many times.
                continue
            copy = single_transfer(event, events)
            if copy is None:
                continue
            where = copy.trace[-1] if copy.trace else None
            node, module = (where.node, where.module) if where else (copy.node, copy.module)
            # The sites give the finding its size and pooled flag (verify reads them); the engine
            # shows no related location for a site at the reported call itself.
            yield Report(event.node, self._message(event, copy, ctx, ctx.place(node, module)), event.sites,
                         fix=Plan(DISPLAY, ADVICE), direction=copy.direction,
                         related=((node, module, f"the single transfer: `{copy.api}`"),))

    @staticmethod
    def _message(event: Event, copy: Event, ctx: CheckContext, place: str) -> str:
        what = "registration" if event.type is EventType.REGISTER else "allocation"
        sizes = [s.nbytes for s in event.sites]
        notes = ([size(max(sizes))] if sizes and all(sizes) else []) + \
            (["pooled: the pool keeps it pinned afterwards"] if any(s.pooled for s in event.sites) else [])
        noted = f" ({', '.join(notes)})" if notes else ""
        direction = "host-to-device" if copy.direction == "h2d" else "device-to-host"
        return (f"Pinned {what} `{event.api}`{noted} is used for a single {direction} transfer "
                f"(`{copy.api}` at {place}) and then dropped: pinning costs more than the copy saves (on an H200, "
                f"pinning 256 MiB held the host 75-132 ms; a pageable copy of it took 34-48 ms, a pinned one 5 ms); "
                f"copy the pageable data directly, or keep the pinned buffer and reuse it")

    VALID = (
        # Pinned once, reused by every iteration: what pinning is for.
        """
import numpy as np
from numba import cuda
h = cuda.pinned_array(1 << 24, dtype=np.float32)
for i in range(10):
    d = cuda.to_device(h)
""",
        # Two transfers: up, then the result back into the same buffer.
        """
import numpy as np, cupy as cp, cupyx
h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
d = cp.asarray(h)
d *= 2
d.get(out=h)
""",
        # The buffer is returned: the caller may copy it again.
        """
import torch
def staging(batch):
    p = batch.pin_memory()
    p.to("cuda", non_blocking=True)
    return p
""",
        # Plain pageable copy: nothing pinned.
        """
import numpy as np
import pycuda.autoinit
import pycuda.gpuarray as gpuarray
h = np.ones(1 << 24, dtype=np.float32)
d = gpuarray.to_gpu(h)
""",
        # A registration of filled memory for one copy: cheap (measured), so not this rule's.
        """
import numpy as np
from numba import cuda
a = np.ones(1 << 24, dtype=np.float32)
with cuda.pinned(a):
    d = cuda.to_device(a)
""",
        # A small constant-size buffer: pinning it once costs little.
        """
from cuda.bindings import runtime as rt
err, h = rt.cudaMallocHost(4096)
err, d = rt.cudaMalloc(4096)
rt.cudaMemcpy(d, h, 4096, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)
rt.cudaFreeHost(h)
""",
    )
    INVALID = (
        """
import numpy as np, cupy as cp, cupyx
h = cupyx.empty_pinned(1 << 24, dtype=np.float32)
h[:] = np.random.rand(1 << 24)
d = cp.asarray(h)
""",
        """
import torch
x = torch.randn(1 << 24)
y = x.pin_memory().to("cuda", non_blocking=True)
""",
        """
import numpy as np
from numba import cuda
h = cuda.pinned_array(1 << 24, dtype=np.float32)
h[:] = 1
d = cuda.to_device(h)
""",
        """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
h = drv.pagelocked_empty(1 << 24, np.float32)
h[:] = 1
d = drv.mem_alloc(h.nbytes)
drv.memcpy_htod(d, h)
""",
        """
from cuda.bindings import runtime as rt
err, h = rt.cudaMallocHost(1 << 26)
err, d = rt.cudaMalloc(1 << 26)
rt.cudaMemcpy(d, h, 1 << 26, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)
rt.cudaFreeHost(h)
""",
    )
