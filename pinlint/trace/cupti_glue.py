"""Wires a Recorder to CUPTI (``cupti-python``, the ``trace`` extra).

What works on the device (see cuda-memory-facts.md, "What CUPTI sees"): plain ``subscribe`` (not
``subscribe_v2``); callbacks *and* the userdata object kept referenced for as long as they are
registered (a temporary userdata crashed the process); driver-API callbacks, which see every
library's calls (the runtime's ``cudaMemcpyAsync`` arrives as ``cuMemcpyHtoDAsync_v2``); the call's
parameters through ``cupti.cuda_driver_api_params``. Only the driver functions the recorder reads
are enabled, one callback id at a time, so every other CUDA call costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Optional

from . import events
from .recorder import ENTER, EXIT, Recorder, classify

BUFFER_BYTES = 8 << 20
# CUPTI then hands over the records of a buffer at least once a second. The next record needs a new
# buffer, which CUPTI asks for inside whatever CUDA call comes next: that one call's host time grows
# by the allocation (about a millisecond; seen in verify, where a forced flush after every run did
# the same to every run's first copy). ``pinlint verify`` turns the period off.
FLUSH_PERIOD_MS = 1000


class CuptiUnavailable(RuntimeError):
    """CUPTI cannot trace here; the message is one line for the user."""


def _params_class_name(function_name: str) -> str:
    head, *tail = function_name.split("_")
    return head[0].upper() + head[1:] + "".join(part.capitalize() for part in tail) + "Params"


class Hooks:
    """The installed callbacks; holding this object keeps everything CUPTI points at alive."""

    def __init__(self, recorder: Recorder, kernels: bool = False,
                 flush_period_ms: Optional[int] = FLUSH_PERIOD_MS) -> None:
        try:
            from cupti import cupti
        except ImportError as exc:
            raise CuptiUnavailable(f'CUPTI is not installed (pip install "cuda-pinlint[trace]"): {exc}') from None
        except OSError as exc:  # libcupti missing or unloadable
            raise CuptiUnavailable(f"CUPTI could not be loaded: {exc}") from None
        self.cupti = cupti
        self.recorder = recorder
        self._classes: dict = {}
        self._params_module = _load_params_module()
        recorder.params = self.params if self._params_module is not None else None
        self._check_constants()
        self.kinds = [cupti.ActivityKind.MEMCPY] + ([cupti.ActivityKind.CONCURRENT_KERNEL] if kernels else [])
        # Bound methods stored on self: CUPTI holds borrowed pointers to them and to the userdata.
        self._requested = self._buffer_requested
        self._completed = self._buffer_completed
        self._callback = self._api_callback
        self._userdata = self
        try:
            for kind in self.kinds:
                cupti.activity_enable(kind)
            cupti.activity_register_callbacks(self._requested, self._completed)
            self.subscriber = cupti.subscribe(self._callback, self._userdata)
        except cupti.cuptiError as exc:
            raise CuptiUnavailable(f"CUPTI cannot trace with this driver: {exc}") from None
        self.enabled = 0
        for name, cbid in cupti.DriverApiTraceCbid.__members__.items():
            if classify(name) is not None:
                try:
                    cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.DRIVER_API, cbid)
                    self.enabled += 1
                except cupti.cuptiError:
                    pass  # a callback id this CUPTI lists but cannot enable
        if not self.enabled:
            raise CuptiUnavailable("CUPTI enabled none of the driver callbacks the recorder needs")
        if flush_period_ms:
            try:
                cupti.activity_flush_period(flush_period_ms)  # bounded waiting lists on long runs
            except cupti.cuptiError:
                pass

    def _check_constants(self) -> None:
        cupti = self.cupti
        if (int(cupti.ActivityKind.MEMCPY), int(cupti.ActivityKind.CONCURRENT_KERNEL),
                int(cupti.ApiCallbackSite.API_ENTER), int(cupti.ApiCallbackSite.API_EXIT)) != \
                (events.ACTIVITY_MEMCPY, events.ACTIVITY_CONCURRENT_KERNEL, ENTER, EXIT):
            raise CuptiUnavailable("this CUPTI numbers its activity kinds differently from what pinlint reads")

    def params(self, function_name: str, pointer: int):
        cls = self._classes.get(function_name, False)
        if cls is False:
            cls = self._classes[function_name] = getattr(self._params_module, _params_class_name(function_name), None)
        if cls is None or not pointer:
            return None
        return cls.from_ptr(pointer, readonly=True)

    # The three functions CUPTI calls. Nothing may raise out of them.
    @staticmethod
    def _buffer_requested():
        return BUFFER_BYTES, 0

    def _buffer_completed(self, activities) -> None:
        for record in activities:
            self.recorder.guarded(self.recorder.on_activity, record)

    def _api_callback(self, userdata, domain, cbid, cbdata) -> None:
        import sys
        try:
            frame = sys._getframe(1)
        except ValueError:  # called from a thread with no Python frames
            frame = None
        self.recorder.guarded(self.recorder.on_api, cbdata, frame)

    def timestamp(self) -> int:
        """CUPTI's clock, the one activity records are stamped with."""
        return int(self.cupti.get_timestamp())

    def flush(self) -> None:
        """Deliver every buffered record now (the recorder's lock must not be held here)."""
        try:
            self.cupti.activity_flush_all(1)
        except self.cupti.cuptiError as exc:
            self.recorder.errors[f"flush: {exc}"] += 1

    def close(self) -> None:
        self.flush()
        cupti = self.cupti
        for step in (lambda: cupti.unsubscribe(self.subscriber),
                     *(lambda kind=kind: cupti.activity_disable(kind) for kind in self.kinds)):
            try:
                step()
            except cupti.cuptiError:
                pass
        self.recorder.finish()


def _load_params_module() -> Optional[object]:
    try:
        return importlib.import_module("cupti.cuda_driver_api_params")
    except ImportError:
        return None
