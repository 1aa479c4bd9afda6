"""PIN006 async-h2d-source-overwritten."""

from __future__ import annotations

from typing import Iterator

from ..analysis import FileFacts
from ..model import EventType
from ..fixers import insert_sync
from .base import CheckContext, Report, Rule


class AsyncH2DSourceOverwritten(Rule):
    code = "PIN006"
    name = "async-h2d-source-overwritten"
    summary = "The CPU writes the pinned source of an async host-to-device copy before it is known complete"

    def check(self, facts: FileFacts, ctx: CheckContext) -> Iterator[Report]:
        for scope in facts.scopes:
            for copy, write in scope.races("h2d", EventType.WRITE):
                yield Report(write.node,
                             f"CPU write to the pinned source of the asynchronous host-to-device copy "
                             f"`{copy.api}` at {ctx.place(copy.node, copy.module)}{ctx.via(write.trace)} before any synchronization "
                             f"that covers it: the GPU may still be reading it; synchronize the stream "
                             f"(or record an event and wait on it) first", copy.sites,
                             ctx.plan(insert_sync, copy, write), trace=write.trace)

    VALID = (
        """
import numpy as np, cupy as cp, cupyx
s = cp.cuda.Stream(non_blocking=True)
h = cupyx.empty_pinned(1024, dtype=np.float32)
d = cp.empty(1024, dtype=np.float32)
for i in range(10):
    h[:] = i
    d.set(h, stream=s)
    s.synchronize()
""",
        # A pageable source: the copy is not really asynchronous (PIN001 instead).
        """
import torch
h = torch.zeros(1024)
d = h.to("cuda", non_blocking=True)
h.fill_(1.0)
""",
    )
    INVALID = (
        """
import torch
h = torch.zeros(1024, pin_memory=True)
d = h.to("cuda", non_blocking=True)
h.fill_(1.0)
""",
        # The write at the top of the next iteration races with the copy at the bottom of this one.
        """
import numpy as np, cupy as cp, cupyx
s = cp.cuda.Stream(non_blocking=True)
h = cupyx.empty_pinned(1024, dtype=np.float32)
d = cp.empty(1024, dtype=np.float32)
for i in range(10):
    h[:] = i
    d.set(h, stream=s)
""",
    )
