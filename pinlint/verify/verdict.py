"""Verdict arithmetic on recorded samples: pure functions, tested without a GPU."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not reproduced on this platform"
ERROR = "error"

# Rules whose claim is correctness (wrong data before the fix), not speed.
RACE_RULES = frozenset({"PIN005", "PIN006"})
# Rules whose effect is known to depend on the platform: not reproducing them refutes nothing.
PLATFORM_DEPENDENT = frozenset({"PIN003"})
# Rules about the cost of pinned allocation: a pooling allocator hands back a cached block after the
# first run, so the warmed-up runs cannot show it (the rules say so themselves).
ALLOCATION_RULES = frozenset({"PIN002", "PIN008"})


@dataclass(frozen=True)
class Outcome:
    times_ms: tuple
    result: dict
    processes: int = 1  # fresh processes the timings come from
    runs: tuple = ()    # per timed run, what the recorder saw (copies, allocations, kernels), when it ran

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def spread(self) -> float:
        """Run-to-run spread: the range of all the timings, over every process. Host-memory speed
        drifts between processes by more than it varies within one (measured on the H200), so a
        margin taken inside one process can call a drift an effect."""
        return spread(self.times_ms)


    @property
    def process_medians(self) -> tuple:
        """The median of each process's timings (each process contributes as many as the others)."""
        per = len(self.times_ms) // max(self.processes, 1)
        if per == 0 or per * self.processes != len(self.times_ms):
            return (self.median,)
        return tuple(statistics.median(self.times_ms[i * per:(i + 1) * per]) for i in range(self.processes))


def combined(outcomes: list) -> Outcome:
    """One variant's outcomes from several processes as one; its result must be the same in each."""
    first = outcomes[0]
    if any(not same_result(first.result, other.result) for other in outcomes[1:]):
        raise RuntimeError("the variant returned different results in different processes")
    return Outcome(tuple(t for o in outcomes for t in o.times_ms), first.result,
                   sum(o.processes for o in outcomes), tuple(r for o in outcomes for r in o.runs))


# Fewest samples per variant for "every bad sample is worse than every fixed one" to count: with
# n and m samples, an ordering that separates them arises by chance with probability 1 / C(n+m, n)
# (exchangeable samples, an exact permutation test): 1/252 at 5 against 5, 1/12,870 at 8 against 8.
SEPARATED_MIN_SAMPLES = 5


def spread(values) -> float:
    """The range of a set of measurements (max - min); 0 for one."""
    return max(values) - min(values) if len(values) > 1 else 0.0


def separated(bad: tuple, fixed: tuple) -> bool:
    """Every bad measurement is worse than every fixed one, over enough samples of each."""
    return (len(bad) >= SEPARATED_MIN_SAMPLES and len(fixed) >= SEPARATED_MIN_SAMPLES
            and min(bad) > max(fixed))


def beyond_noise(bad: tuple, fixed: tuple, unit: str = "") -> Optional[str]:
    """How the bad variant is worse beyond the measurements' noise, in words, or None when it is not.

    Either the medians differ by more than the larger range (max - min) of the two sets, or the two
    sets do not overlap at all. The range alone let one slow outlier of the *bad* variant (a page
    fault storm in one pageable copy) hide a 50x effect whose samples never overlapped."""
    margin = max(spread(bad), spread(fixed))
    if statistics.median(bad) - statistics.median(fixed) > margin:
        return f"fixed is faster by more than the spread of all runs ({margin:.3g}{' ' + unit if unit else ''})"
    if separated(bad, fixed):
        return f"every one of {len(bad)} bad samples is worse than every one of {len(fixed)} fixed samples"
    return None


@dataclass(frozen=True)
class Verdict:
    verdict: str
    detail: str = ""
    ratio: Optional[float] = None
    refuted: bool = False  # a claim the measurement contradicts (exit 1)


def same_result(a: dict, b: dict, rel: float = 1e-6) -> bool:
    if "value" in a and "value" in b:
        x, y = a["value"], b["value"]
        if x != x and y != y:  # NaN in both: the same result
            return True
        return x == y or abs(x - y) <= rel * max(abs(x), abs(y))
    return a == b


def judge(code: str, bad: Outcome, fixed: Outcome, pooled: bool = False) -> Verdict:
    if code in RACE_RULES:
        if not same_result(bad.result, fixed.result):
            return Verdict(CONFIRMED, "the bad variant returned wrong data; the fixed one did not")
        return Verdict(NOT_REPRODUCED, "both variants returned the same data: the race did not show here",
                       refuted=code not in PLATFORM_DEPENDENT)
    ratio = bad.median / fixed.median if fixed.median > 0 else None
    if not same_result(bad.result, fixed.result):
        return Verdict(ERROR, "the fixed variant computes a different result", ratio, refuted=True)
    margin = max(bad.spread, fixed.spread)
    why = beyond_noise(bad.times_ms, fixed.times_ms, "ms")
    if why:
        return Verdict(CONFIRMED, why, ratio)
    detail = f"difference {bad.median - fixed.median:.2f} ms within the spread ({margin:.2f} ms)"
    if code in ALLOCATION_RULES and pooled:
        # The rule says so itself: a pooling allocator hands back a cached block, not a new cudaHostAlloc.
        return Verdict(NOT_REPRODUCED, detail + "; a pooled allocator amortizes the allocation", ratio)
    return Verdict(NOT_REPRODUCED, detail, ratio, refuted=code not in PLATFORM_DEPENDENT)


def judge_recorded(code: str, bad: Outcome, fixed: Outcome, measure, pooled: bool = False) -> Verdict:
    """A speed claim judged by the recorder's measure (``recorded.Measure``) instead of wall time."""
    if not same_result(bad.result, fixed.result):
        return Verdict(ERROR, "the fixed variant computes a different result", measure.ratio, refuted=True)
    figures = (f"{measure.metric}: {measure.bad_median:.3g} -> {measure.fixed_median:.3g} {measure.unit}, "
               f"spread {measure.margin:.3g} {measure.unit}" + (", no overlap" if measure.separated else "")
               + f"; {measure.detail}")
    if measure.confirmed:
        return Verdict(CONFIRMED, figures, measure.ratio)
    if code in ALLOCATION_RULES and pooled:
        return Verdict(NOT_REPRODUCED, figures + "; a pooled allocator amortizes the allocation", measure.ratio)
    return Verdict(NOT_REPRODUCED, figures, measure.ratio, refuted=code not in PLATFORM_DEPENDENT)
