"""PIN005 async-d2h-read-before-sync."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..model import EventType
from ..fixers import insert_sync
from .base import CheckContext, Report, Rule


class AsyncD2HReadBeforeSync(Rule):
    code = "PIN005"
    name = "async-d2h-read-before-sync"
    summary = "The CPU reads the destination of an async device-to-host copy before a synchronization"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        for scope in facts.scopes:
            for copy, read in scope.races("d2h", EventType.READ):
                yield Report(read.node,
                             f"CPU read of the destination of the asynchronous device-to-host copy "
                             f"`{copy.api}` at {ctx.place(copy.node, copy.module)}{ctx.via(read.trace)} before any synchronization "
                             f"that covers it: the data may not have arrived; synchronize the stream first",
                             copy.sites, ctx.plan(insert_sync, copy, read), trace=read.trace)

    VALID = (
        """
import torch
d = torch.ones(1024, device="cuda")
h = d.to("cpu", non_blocking=True)
torch.cuda.synchronize()
print(h.sum())
""",
        """
import numpy as np, cupy as cp, cupyx
s = cp.cuda.Stream(non_blocking=True)
d = cp.ones(1024, dtype=np.float32)
h = cupyx.empty_pinned(1024, dtype=np.float32)
d.get(stream=s, out=h, blocking=False)
s.synchronize()
total = h.sum()
""",
        # A pageable destination: the copy blocks, so it cannot race (that is PIN001's finding).
        """
import numpy as np
from numba import cuda
s = cuda.stream()
d = cuda.device_array(1024, stream=s)
h = np.empty(1024)
d.copy_to_host(h, stream=s)
print(h[0])
""",
    )
    INVALID = (
        """
import torch
d = torch.ones(1024, device="cuda")
h = d.to("cpu", non_blocking=True)
print(h.sum())
""",
        """
import numpy as np
from numba import cuda
s = cuda.stream()
d = cuda.device_array(1024, stream=s)
h = cuda.pinned_array(1024)
d.copy_to_host(h, stream=s)
if h[0] > 0:
    s.synchronize()
""",
    )
