"""What the recorder hands on: one small record per copy, pinned allocation or free, and kernel.

Numbers are CUPTI's (``CUpti_ActivityMemoryKind``, ``CUpti_ActivityMemcpyKind``) and the driver's
(``CU_MEMHOSTALLOC_*``), so recorded events and these constants need no CUPTI import to read.
"""

from __future__ import annotations

from dataclasses import dataclass

# CUpti_ActivityMemoryKind: the host side of a copy.
MEMORY_KINDS = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
                6: "device-static", 7: "managed-static"}
# CUpti_ActivityMemcpyKind: only host<->device copies are recorded.
DIRECTIONS = {1: "h2d", 2: "d2h"}
# CU_MEMHOSTALLOC_* (the runtime's cudaHostAlloc* flags have the same values).
PORTABLE, DEVICEMAP, WRITECOMBINED = 1, 2, 4
# Stream handles that name a default stream: NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD.
DEFAULT_STREAMS = frozenset({0, 1, 2})
# CUpti_ActivityKind values the recorder reads.
ACTIVITY_MEMCPY, ACTIVITY_CONCURRENT_KERNEL = 1, 10


def flag_names(flags: int) -> str:
    names = [name for bit, name in ((PORTABLE, "portable"), (DEVICEMAP, "mapped"),
                                    (WRITECOMBINED, "write-combined")) if flags & bit]
    return "+".join(names) or "default"


@dataclass(frozen=True)
class Site:
    """A source line that made a CUDA call: the innermost frame in the user's code, or, when no
    frame on the stack is the user's, the innermost library frame (``user`` False)."""

    filename: str
    line: int
    function: str = ""
    user: bool = True


UNATTRIBUTED = Site("<unattributed>", 0, "", False)


@dataclass(frozen=True)
class Copy:
    site: Site
    api: str            # the driver function, e.g. cuMemcpyHtoDAsync_v2
    direction: str      # "h2d" or "d2h"
    host_kind: str      # "pageable", "pinned", "managed", ...
    nbytes: int
    device_ns: int      # the copy's duration on the device
    host_ns: int        # how long the call held the calling thread
    stream: int = 0
    host_ptr: int = 0   # the host buffer's address, where the call's parameters name it
    library: str = ""   # top-level package of the Python frame the user called, when there is one
    callers: tuple = ()  # ((filename, line), ...): the user's frames further out, innermost first
    blocking: bool = False  # the same Python call synchronized right after (``get()``, ``.item()``)
    default_stream: bool = False  # issued on the default stream (NULL, legacy or per-thread): shown, not judged
    run: int = -1       # which execution of its line made it (-1: not counted)
    start_ns: int = 0   # when the copy started on the device (CUPTI's clock)

    @property
    def asynchronous(self) -> bool:
        """An asynchronous driver call that the library did not make blocking itself. On the
        default stream too: ``d.set(h)`` in CuPy and ``non_blocking=True`` in torch are
        asynchronous there, and from pageable memory they hold the host all the same."""
        return "Async" in self.api and not self.blocking


@dataclass(frozen=True)
class HostAlloc:
    """A pinned allocation (``cuMemHostAlloc``, ``cuMemAllocHost``) or registration (``cuMemHostRegister``)."""

    site: Site
    api: str
    nbytes: int
    flags: int
    host_ns: int
    ptr: int = 0
    registered: bool = False
    t_ns: int = 0       # host clock at the call's end (for live pinned bytes over time)
    library: str = ""
    callers: tuple = ()
    run: int = -1       # which execution of its line made it (-1: not counted)


@dataclass(frozen=True)
class HostFree:
    """``cuMemFreeHost`` or ``cuMemHostUnregister``."""

    site: Site
    api: str
    ptr: int
    host_ns: int
    t_ns: int = 0


@dataclass(frozen=True)
class Kernel:
    name: str
    device_ns: int
    start_ns: int = 0   # CUPTI's clock
