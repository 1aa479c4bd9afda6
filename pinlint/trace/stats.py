"""A running statistic with bounded memory: count, total, min, max and a uniform sample for medians.

Up to ``SAMPLE`` values are kept exactly; beyond that a reservoir sample (seeded, so a run is
reproducible) stands for them, and medians and percentiles come from the sample.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

SAMPLE = 2048


@dataclass
class Stat:
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")
    sample: list = field(default_factory=list)
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False, compare=False)

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value
        if len(self.sample) < SAMPLE:
            self.sample.append(value)
        else:
            slot = self._rng.randrange(self.count)
            if slot < SAMPLE:
                self.sample[slot] = value

    @property
    def median(self) -> float:
        return statistics.median(self.sample) if self.sample else 0.0

    def percentile(self, p: float) -> float:
        if not self.sample:
            return 0.0
        ordered = sorted(self.sample)
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]

    @property
    def exact(self) -> bool:
        return self.count == len(self.sample)

    def merge(self, other: "Stat") -> None:
        if not other.count:
            return
        if self.count + other.count <= SAMPLE:
            self.sample.extend(other.sample)
        else:  # each side keeps samples in proportion to how many values it stands for
            mine = round(SAMPLE * self.count / (self.count + other.count))
            self.sample = (_subsample(self.sample, mine, self._rng)
                           + _subsample(other.sample, SAMPLE - mine, self._rng))
        self.count += other.count
        self.total += other.total
        self.low = min(self.low, other.low)
        self.high = max(self.high, other.high)

    def to_dict(self) -> dict:
        return {"count": self.count, "total": self.total, "min": self.low if self.count else None,
                "max": self.high if self.count else None, "sample": self.sample}

    @classmethod
    def from_dict(cls, data: dict) -> "Stat":
        stat = cls(int(data["count"]), float(data["total"]))
        if stat.count:
            stat.low, stat.high = float(data["min"]), float(data["max"])
        stat.sample = [float(v) for v in data["sample"]][:SAMPLE]
        return stat


def _subsample(values: list, n: int, rng: random.Random) -> list:
    return list(values) if len(values) <= n else rng.sample(values, n)
