"""How noisy a benchmark is on this system, measured in this run, and the band two means must differ by
before the difference counts.

Every threshold that meets a measurement (rollback verification, post-stress degradation) is judged
against a `Noise`: the A/A calibration when there is one with enough pairs, otherwise the spread of
the readings themselves. The spread is estimated from *successive* differences (von Neumann's mean
square successive difference), so a machine that drifts slowly over the run — a real server's cache
warming, a neighbour's load — widens it far less than it would widen a plain standard deviation.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

# Below this many readings (or A/A pairs) an estimate of the noise is itself mostly noise: it is used,
# but every verdict that rests on it says so.
MIN_RUNS = 4

NoiseSource = Literal["calibration", "spread", "none"]


class Noise(BaseModel):
    """Per-run standard deviation of ln(metric), in percent, and what it rests on."""

    sd_pct: float | None
    runs: int
    source: NoiseSource

    @property
    def thin(self) -> bool:
        return self.sd_pct is None or self.runs < MIN_RUNS

    def describe(self) -> str:
        if self.sd_pct is None:
            return "no noise estimate"
        what = "A/A calibration" if self.source == "calibration" else "spread of this run's readings"
        unit = "pairs" if self.source == "calibration" else "readings"
        thin = f"; only {self.runs} {unit}, a rough estimate" if self.thin else ""
        return f"noise ±{self.sd_pct:.1f}% per run ({what}, {self.runs} {unit}{thin})"


def successive_sd(series: Sequence[Sequence[float]]) -> tuple[float | None, int]:
    """Pooled per-run SD of ln(value) from successive differences within each time-ordered series
    (e.g. a benchmark's A readings and its B readings); (None, n) when there are fewer than 2 in all."""
    squares, terms, n = 0.0, 0, 0
    for values in series:
        logs = [math.log(v) for v in values if v and v > 0]
        n += len(logs)
        for a, b in itertools.pairwise(logs):
            squares += (b - a) ** 2
            terms += 1
    if terms == 0:
        return None, n
    return math.sqrt(squares / (2 * terms)) * 100, n


def noise_of(calibration: dict | None, *series: Sequence[float]) -> Noise:
    """The noise to judge this run's comparisons by: a calibration with at least MIN_RUNS pairs, else the
    readings' own spread when it rests on more, else whichever exists (flagged thin)."""
    spread_sd, spread_n = successive_sd(series)
    spread = Noise(sd_pct=spread_sd, runs=spread_n, source="spread" if spread_sd is not None else "none")
    cal = calibration or {}
    if cal.get("sd_pct") is not None:
        # The A/A SD is of a pair's log ratio (two runs); one run's is that over √2.
        calibrated = Noise(sd_pct=cal["sd_pct"] / math.sqrt(2), runs=int(cal.get("pairs", 0)), source="calibration")
        if not calibrated.thin or spread.thin:
            return calibrated
    return spread


class Band(BaseModel):
    """How far apart two means may be and still be the same level, in percent."""

    pct: float | None  # None: no noise estimate to build a band from
    raw_pct: float | None  # before the floor
    too_noisy: bool  # the band is wider than the ceiling: this comparison cannot tell anything useful
    noise: Noise

    def describe(self) -> str:
        if self.pct is None:
            return self.noise.describe()
        floor = " (the floor)" if self.raw_pct is not None and self.raw_pct < self.pct else ""
        return f"±{self.pct:.1f}%{floor} from {self.noise.describe()}"


def band(noise: Noise, n1: int, n2: int, *, k: float = 3.0, floor_pct: float, ceiling_pct: float) -> Band:
    """k standard errors of the difference of two means of n1 and n2 runs (k = 3: a false alarm stops a
    campaign or throws a good option away, so they must be rare), never below the floor."""
    if noise.sd_pct is None or n1 < 1 or n2 < 1:
        return Band(pct=None, raw_pct=None, too_noisy=False, noise=noise)
    raw = k * noise.sd_pct * math.sqrt(1 / n1 + 1 / n2)
    pct = max(raw, floor_pct)
    return Band(pct=round(pct, 3), raw_pct=round(raw, 3), too_noisy=pct > ceiling_pct, noise=noise)


def runs_for(noise: Noise, n_other: int, *, k: float = 3.0, within_pct: float, limit: int) -> int | None:
    """How many runs against `n_other` bring the band inside `within_pct` (None: not within `limit`)."""
    if noise.sd_pct is None:
        return None
    for n in range(1, limit + 1):
        if k * noise.sd_pct * math.sqrt(1 / n + 1 / n_other) <= within_pct:
            return n
    return None


def trend_level(values: Sequence[float]) -> tuple[float, float] | None:
    """Where a drifting, time-ordered series is *now*: its log-linear trend extrapolated one step past the
    last reading, and the standard-error factor of that prediction (× the per-run SD). None under 3 readings."""
    n = len(values)
    if n < 3:
        return None
    logs = [math.log(v) for v in values]
    xbar = (n - 1) / 2
    sxx = sum((i - xbar) ** 2 for i in range(n))
    ybar = statistics.fmean(logs)
    slope = sum((i - xbar) * (y - ybar) for i, y in enumerate(logs)) / sxx
    predicted = math.exp(ybar + slope * (n - xbar))
    return predicted, math.sqrt(1 / n + (n - xbar) ** 2 / sxx)


def delta_pct(reference: Sequence[float], values: Sequence[float]) -> float:
    """Mean of `values` against mean of `reference`, in percent."""
    return round((statistics.fmean(values) / statistics.fmean(reference) - 1) * 100, 3)
