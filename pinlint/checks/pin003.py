"""PIN003 write-combined-cpu-read."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..model import EventType, first_site
from ..fixers import drop_write_combined
from .base import CheckContext, Report, Rule, origins, local_site


class WriteCombinedCpuRead(Rule):
    code = "PIN003"
    name = "write-combined-cpu-read"
    summary = "The CPU reads memory allocated write-combined"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        for event in facts.events():
            if event.type is EventType.READ and event.definitely(lambda s: s.kind.is_write_combined):
                sources = origins(event.sites, ctx)
                site = first_site(event.sites)
                yield Report(event.node,
                             f"CPU read of write-combined memory{ctx.via(event.trace)} (allocated by {sources}): "
                             f"write-combined memory is uncached for the CPU, so reads can be very slow; drop the "
                             f"write-combined flag unless the buffer is only ever written by the CPU", event.sites,
                             ctx.plan(drop_write_combined, site, ctx.qualify)
                             if len(event.sites) == 1 and local_site(site, ctx) else None, trace=event.trace)

    VALID = (
        # Written by the CPU, read by the GPU: what write-combining is for.
        """
import numpy as np
import pycuda.driver as drv
h = drv.pagelocked_empty(1024, np.float32, mem_flags=drv.host_alloc_flags.WRITECOMBINED)
h[:] = 1.0
drv.memcpy_htod(0, h)
""",
        # Numba ignores wc=True: the memory is plain mapped memory.
        """
from numba import cuda
h = cuda.mapped_array(1024, wc=True)
print(h.sum())
""",
        # Flags pinlint cannot read.
        """
import cupy
def f(flags):
    mem = cupy.cuda.PinnedMemory(4096, flags)
""",
    )
    INVALID = (
        """
import numpy as np
import pycuda.driver as drv
flags = drv.host_alloc_flags.DEVICEMAP | drv.host_alloc_flags.WRITECOMBINED
h = drv.pagelocked_empty(1024, np.float32, mem_flags=flags)
total = h.sum()
""",
        """
import numpy as np, cupy
mem = cupy.cuda.PinnedMemory(4096, cupy.cuda.runtime.hostAllocWriteCombined)
a = np.frombuffer(cupy.cuda.PinnedMemoryPointer(mem, 0), np.float32, 1024)
print(a[0])
""",
    )
