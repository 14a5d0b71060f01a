"""Medians and percentiles over repetitions (nearest-rank, no numpy)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Latency:
    """Latencies (seconds) pooled over repetitions, with the spread of per-repetition p99s."""

    samples: tuple[float, ...]
    rep_p50: tuple[float, ...]
    rep_p99: tuple[float, ...]

    @classmethod
    def of(cls, reps: Sequence[Sequence[float]]) -> Latency:
        pooled = tuple(v for rep in reps for v in rep)
        return cls(
            pooled,
            tuple(percentile(rep, 50) for rep in reps),
            tuple(percentile(rep, 99) for rep in reps),
        )

    @property
    def p50(self) -> float:
        return percentile(self.samples, 50)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    @property
    def max(self) -> float:
        return max(self.samples) if self.samples else math.nan

    def ms(self) -> str:
        return (
            f"p50 {self.p50 * 1e3:.2f} ms, p99 {self.p99 * 1e3:.2f} ms "
            f"(n={len(self.samples)}, {len(self.rep_p99)} reps, per-rep p99 "
            f"{min(self.rep_p99) * 1e3:.2f}-{max(self.rep_p99) * 1e3:.2f} ms)"
        )


@dataclass(frozen=True)
class Rates:
    """A throughput (per second) measured once per repetition: median and worst repetition."""

    per_rep: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.per_rep)

    @property
    def worst(self) -> float:
        return min(self.per_rep)

    def text(self, unit: str = "events/s") -> str:
        return (
            f"median {self.median:,.0f} {unit}, worst {self.worst:,.0f} {unit} "
            f"({len(self.per_rep)} reps)"
        )


@dataclass(frozen=True)
class Timings:
    """Durations (seconds) of repeated calls: median and p99."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    def ms(self) -> str:
        return (
            f"median {self.median * 1e3:.2f} ms, p99 {self.p99 * 1e3:.2f} ms "
            f"(n={len(self.samples)})"
        )
