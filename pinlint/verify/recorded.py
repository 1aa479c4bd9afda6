"""Claims measured by the recorder: per copy or per run, from what CUPTI saw, not the wall clock.

- PIN001: how long each flagged copy held the host (ms per copy), with its GB/s;
- PIN007: the device time of the flagged copies per run (ms), with each direction's GB/s;
- PIN002: time spent in pinned allocation, registration and free per run (ms), with the count;
- PIN004: device time per run, kernels plus copies (ms): kernels over mapped memory against one
  copy and kernels over device memory;
- PIN008: host time per run spent pinning (allocation, registration and free) plus the time the
  copies held the host (ms): pin and copy once against one pageable copy.

A claim is confirmed when the bad variant's median is worse than the fixed one's by more than the
larger spread (max - min) of the two sets of measurements, or when the two sets do not overlap at all
over at least five samples each (``verdict.beyond_noise``). Pure functions over recorded runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

from .verdict import beyond_noise, separated, spread

# Indexes into the runner's compact records.
C_LINE, C_API, C_DIR, C_KIND, C_BYTES, C_DEVICE, C_HOST, C_BLOCKING = range(8)
A_LINE, A_API, A_BYTES, A_FLAGS, A_HOST, A_REGISTERED = range(6)
RECORDED = frozenset({"PIN001", "PIN002", "PIN004", "PIN007", "PIN008"})


@dataclass(frozen=True)
class Measure:
    metric: str
    bad: tuple
    fixed: tuple
    unit: str = "ms"
    detail: str = ""     # the other figures, in words

    @property
    def bad_median(self) -> float:
        return statistics.median(self.bad)

    @property
    def fixed_median(self) -> float:
        return statistics.median(self.fixed)

    spread = staticmethod(spread)

    @property
    def margin(self) -> float:
        return max(self.spread(self.bad), self.spread(self.fixed))

    @property
    def ratio(self) -> Optional[float]:
        return self.bad_median / self.fixed_median if self.fixed_median > 0 else None

    @property
    def confirmed(self) -> bool:
        return beyond_noise(self.bad, self.fixed) is not None

    @property
    def separated(self) -> bool:
        return separated(self.bad, self.fixed)

    def as_dict(self) -> dict:
        return {"metric": self.metric, "unit": self.unit, "bad_median": self.bad_median,
                "fixed_median": self.fixed_median, "bad_spread": self.spread(self.bad),
                "fixed_spread": self.spread(self.fixed), "separated": self.separated, "bad": list(self.bad), "fixed": list(self.fixed),
                "detail": self.detail}


def measure(code: str, bad_runs: tuple, fixed_runs: tuple, lines: set) -> Optional[Measure]:
    """The recorded measure of ``code``'s claim, or None when the runs hold nothing to judge it by."""
    if code not in RECORDED or not bad_runs or not fixed_runs:
        return None
    return {"PIN001": _pin001, "PIN007": _pin007, "PIN002": _pin002, "PIN004": _pin004, "PIN008": _pin008}[code](
        bad_runs, fixed_runs, lines)


def _flagged(bad_runs, fixed_runs, lines):
    """The bad variant's copies on the flagged lines, and the fixed variant's copies of the same
    driver function and direction (its lines may have moved)."""
    bad = [c for run in bad_runs for c in run["copies"] if c[C_LINE] in lines]
    keys = {(c[C_DIR], c[C_API]) for c in bad}
    fixed = [c for run in fixed_runs for c in run["copies"] if (c[C_DIR], c[C_API]) in keys]
    return bad, fixed, keys


def _gbps(copies) -> Optional[float]:
    rates = [c[C_BYTES] / c[C_DEVICE] for c in copies if c[C_DEVICE] > 0]
    return statistics.median(rates) if rates else None


def _kinds(copies) -> str:
    return "/".join(sorted({c[C_KIND] for c in copies})) or "none"


def _rate_words(bad, fixed, direction: Optional[str] = None) -> str:
    if direction is not None:
        bad = [c for c in bad if c[C_DIR] == direction]
        fixed = [c for c in fixed if c[C_DIR] == direction]
    b, f = _gbps(bad), _gbps(fixed)
    text = lambda v: f"{v:.1f}" if v is not None else "?"  # noqa: E731
    prefix = f"{direction} " if direction else ""
    return f"{prefix}{text(b)} -> {text(f)} GB/s ({_kinds(bad)} -> {_kinds(fixed)})"


def _pin001(bad_runs, fixed_runs, lines) -> Optional[Measure]:
    bad, fixed, _ = _flagged(bad_runs, fixed_runs, lines)
    if not bad or not fixed:
        return None
    return Measure("host held per copy", tuple(c[C_HOST] / 1e6 for c in bad), tuple(c[C_HOST] / 1e6 for c in fixed),
                   detail=f"{len(bad)} vs {len(fixed)} copies; " + _rate_words(bad, fixed))


def _per_run(runs, pick) -> tuple:
    return tuple(pick(run) for run in runs)


def _pin007(bad_runs, fixed_runs, lines) -> Optional[Measure]:
    bad, fixed, keys = _flagged(bad_runs, fixed_runs, lines)
    if not bad or not fixed:
        return None
    bad_total = _per_run(bad_runs, lambda run: sum(c[C_DEVICE] for c in run["copies"] if c[C_LINE] in lines) / 1e6)
    fixed_total = _per_run(fixed_runs, lambda run: sum(c[C_DEVICE] for c in run["copies"]
                                                       if (c[C_DIR], c[C_API]) in keys) / 1e6)
    directions = sorted({c[C_DIR] for c in bad})
    words = "; ".join(_rate_words(bad, fixed, d) for d in directions)
    per_run = len(bad) // max(len(bad_runs), 1)
    return Measure("copy device time per run", bad_total, fixed_total,
                   detail=f"{per_run} copies per run; {words}")


def _alloc_time(run) -> float:
    return (sum(a[A_HOST] for a in run["allocs"]) + sum(f[1] for f in run["frees"])) / 1e6


def _pin002(bad_runs, fixed_runs, lines) -> Optional[Measure]:
    bad_count = statistics.median(len(run["allocs"]) for run in bad_runs)
    fixed_count = statistics.median(len(run["allocs"]) for run in fixed_runs)
    return Measure("pinned alloc+free time per run", _per_run(bad_runs, _alloc_time), _per_run(fixed_runs, _alloc_time),
                   detail=f"{bad_count:g} -> {fixed_count:g} pinned allocations per run")


def _device_time(run) -> float:
    return (run["kernels"][1] + sum(c[C_DEVICE] for c in run["copies"])) / 1e6


def _pin004(bad_runs, fixed_runs, lines) -> Optional[Measure]:
    if not any(run["kernels"][0] for run in bad_runs):
        return None  # kernels were not recorded
    kernel = lambda runs: statistics.median(run["kernels"][1] / 1e6 for run in runs)  # noqa: E731
    copy = lambda runs: statistics.median(sum(c[C_DEVICE] for c in run["copies"]) / 1e6 for run in runs)  # noqa: E731
    return Measure("device time per run (kernels + copies)", _per_run(bad_runs, _device_time),
                   _per_run(fixed_runs, _device_time),
                   detail=f"kernels {kernel(bad_runs):.2f} -> {kernel(fixed_runs):.2f} ms, "
                          f"copies {copy(bad_runs):.2f} -> {copy(fixed_runs):.2f} ms per run")


def _pinning_and_copies(run) -> float:
    return _alloc_time(run) + sum(c[C_HOST] for c in run["copies"]) / 1e6


def _pin008(bad_runs, fixed_runs, lines) -> Optional[Measure]:
    bad_copies = [c for run in bad_runs for c in run["copies"]]
    fixed_copies = [c for run in fixed_runs for c in run["copies"]]
    if not bad_copies or not fixed_copies:
        return None
    pinning = statistics.median(_alloc_time(run) for run in bad_runs)
    held = lambda runs: statistics.median(sum(c[C_HOST] for c in run["copies"]) / 1e6 for run in runs)  # noqa: E731
    return Measure("host time pinning + copying per run", _per_run(bad_runs, _pinning_and_copies),
                   _per_run(fixed_runs, _pinning_and_copies),
                   detail=f"pinning {pinning:.3g} ms, copies held the host {held(bad_runs):.3g} -> "
                          f"{held(fixed_runs):.3g} ms per run; " + _rate_words(bad_copies, fixed_copies))
