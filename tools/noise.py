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
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

# Below this many readings (or A/A pairs) an estimate of the noise is itself mostly noise: it is used,
# but every verdict that rests on it says so.
MIN_RUNS = 4

NoiseSource = Literal["calibration", "spread", "pairs", "none"]


class Noise(BaseModel):
    """Per-run standard deviation of ln(metric), in percent, and what it rests on."""

    sd_pct: float | None
    runs: int
    source: NoiseSource
    # Set when an A/A calibration was there but its noise and the readings' own spread disagree beyond their
    # sampling error, so the spread was used instead: what the calibration said and the test (see `disagreement`).
    overruled: str | None = None

    @property
    def thin(self) -> bool:
        return self.sd_pct is None or self.runs < MIN_RUNS

    def describe(self) -> str:
        if self.sd_pct is None:
            return "no noise estimate"
        what = {"calibration": "A/A calibration", "pairs": "spread of the A/B's paired differences"}.get(
            self.source, "spread of this run's readings"
        )
        unit = "pairs" if self.source in ("calibration", "pairs") else "readings"
        thin = f"; only {self.runs} {unit}, a rough estimate" if self.thin else ""
        overruled = f"; {self.overruled}" if self.overruled else ""
        return f"noise ±{self.sd_pct:.1f}% per run ({what}, {self.runs} {unit}{thin}{overruled})"

    def logged(self) -> dict[str, object]:
        """As a journal line keeps it (`overruled` only where it happened: older lines read as they did)."""
        return self.model_dump(exclude={"overruled"} if self.overruled is None else set())


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


def successive_df(series: Sequence[Sequence[float]]) -> float:
    """The degrees of freedom `successive_sd`'s variance is worth: for m successive differences of white noise
    Var(δ²/2) = σ⁴(3m − 1)/m² (von Neumann 1941), so it carries what a sample variance on 2m²/(3m − 1) degrees
    of freedom would (about two thirds of a plain SD's); summed over the series."""
    df = 0.0
    for values in series:
        m = sum(1 for v in values if v and v > 0) - 1
        if m >= 1:
            df += 2 * m * m / (3 * m - 1)
    return df


def noise_of(calibration: Mapping[str, Any] | None, *series: Sequence[float]) -> Noise:
    """The noise to judge this run's comparisons by: a calibration with at least MIN_RUNS pairs, else the
    readings' own spread when it rests on more, else whichever exists (flagged thin). A calibration that
    disagrees with a spread of MIN_RUNS or more readings beyond their sampling error (`disagreement`) is not
    used: the A/A pairs were taken once, at setup, perhaps under a neighbour's load that has gone (or before one
    came), and the readings being judged are what this comparison is made of."""
    spread_sd, spread_n = successive_sd(series)
    spread = Noise(sd_pct=spread_sd, runs=spread_n, source="spread" if spread_sd is not None else "none")
    cal = calibration or {}
    if cal.get("sd_pct") is not None:
        # The A/A SD is of a pair's log ratio (two runs); one run's is that over √2.
        calibrated = Noise(sd_pct=cal["sd_pct"] / math.sqrt(2), runs=int(cal.get("pairs", 0)), source="calibration")
        if spread.thin:
            return calibrated
        if not calibrated.thin:
            said = disagreement(calibrated.sd_pct, calibrated.runs - 1, spread_sd, successive_df(series))  # type: ignore[arg-type]
            if said is None:
                return calibrated
            return spread.model_copy(update={"overruled": said})
    return spread


def calibration_against_pairs(
    calibration: Mapping[str, Any] | None, ratios: Sequence[float]
) -> tuple[float, str] | None:
    """An A/B's own pairs against the A/A calibration, both spreads of a pair's log ratio: (the pairs' own SD in
    %, why the calibration is overruled) when they disagree beyond their sampling error (`disagreement`), else
    None — also when the calibration rests on fewer than MIN_RUNS pairs (a thin calibration is not used alone anyway)
    or the A/B on fewer than F_TEST_PAIRS."""
    cal = calibration or {}
    logs = [math.log(r) for r in ratios if r and r > 0]
    if (
        cal.get("sd_pct") is None
        or cal.get("warning")
        or int(cal.get("pairs", 0)) < MIN_RUNS
        or len(logs) < F_TEST_PAIRS
    ):
        return None
    own = statistics.stdev(logs) * 100
    said = disagreement(cal["sd_pct"] / math.sqrt(2), int(cal["pairs"]) - 1, own / math.sqrt(2), len(logs) - 1)
    return (own, said) if said is not None else None


# An A/B's pairs may overrule a calibration from this many on (2 degrees of freedom): few, but the F test's own
# sampling error is what decides, and a sequential A/B may stop at three pairs.
F_TEST_PAIRS = 3
# Two variance estimates disagree when the two-sided F test of their ratio rejects equality at this level.
DISAGREE_ALPHA = 0.05


def disagreement(cal_sd: float, cal_df: float, spread_sd: float, spread_df: float) -> str | None:
    """Why the calibration's per-run SD and the readings' own are not the same noise, or None when they agree
    within their sampling error: the two-sided F test of the variance ratio (cal/spread on cal_df and spread_df
    degrees of freedom) at DISAGREE_ALPHA, with the ratio's 95 % confidence interval (F / F₀.₉₇₅ … F / F₀.₀₂₅).
    Too few degrees of freedom on either side to test: None (nothing to overrule with)."""
    if cal_df < 1 or spread_df < 1 or cal_sd <= 0 or spread_sd <= 0:
        return None
    ratio = (cal_sd / spread_sd) ** 2
    cdf = f_cdf(ratio, cal_df, spread_df)
    p = min(1.0, 2 * min(cdf, 1 - cdf))
    if p >= DISAGREE_ALPHA:
        return None
    low = ratio / f_quantile(0.975, cal_df, spread_df)
    high = ratio / f_quantile(0.025, cal_df, spread_df)

    def g(x: float) -> str:
        return f"{x:.0f}" if x >= 10 else f"{x:.2g}"

    return (
        # no parentheses: a Noise's describe() keeps this inside its own (agent/report/figures.py cuts them whole)
        f"the A/A calibration's ±{cal_sd:.1f}% per run disagrees with these readings' own ±{spread_sd:.1f}% beyond "
        f"their sampling error: variance ratio {g(ratio)}, 95% CI {g(low)}–{g(high)}, two-sided F test "
        f"p={p:.2g} on {cal_df:.0f} and {spread_df:.1f} df; the readings' own spread is used"
    )


def f_cdf(x: float, d1: float, d2: float) -> float:
    """P(F ≤ x) for Snedecor's F on (d1, d2) degrees of freedom (real-valued), by the regularized incomplete
    beta function I_{d1x/(d1x+d2)}(d1/2, d2/2) (the package has no scipy; the tests check this against it)."""
    if x <= 0:
        return 0.0
    return _betainc(d1 / 2, d2 / 2, d1 * x / (d1 * x + d2))


def f_quantile(q: float, d1: float, d2: float) -> float:
    """The x with P(F ≤ x) = q, by bisection on log x (monotone; 200 halvings are far below float precision)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if f_cdf(math.exp(mid), d1, d2) < q:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b): the continued fraction by the modified Lentz method, on the side
    where it converges fast (Numerical Recipes §6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


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
