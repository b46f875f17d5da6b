"""Load sweeps: whether an arm meets a latency SLO at a load level, the highest level it does (its
capacity), and the scaling model step time = a + b·load fitted to the sweep by least squares.

Every judgement here comes with its evidence and says when there is too little of it: an SLO is met
only when the upper 95 % bound of the arm's mean is inside it, failed only when the lower bound is
outside it, and `unclear` in between; a fit needs three readings over two levels and reports its
95 % confidence intervals.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from tools.abstats import t975

SloJudgement = Literal["meets", "fails", "unclear"]
_SLO = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*")


class Slo(BaseModel):
    """One service-level objective on a metric a benchmark run reports, e.g. `p99_tpot <= 50` (ms)."""

    metric: str
    op: Literal["<=", ">="]
    bound: float

    @classmethod
    def parse(cls, text: str) -> Slo:
        """`p99_tpot_ms <= 50`: a metric, `<=` or `>=` (`<`/`>` read the same on a continuous reading) and a
        number. A latency named with its `_ms` unit means the same metric (benchmarks report it in ms)."""
        m = _SLO.fullmatch(text)
        if not m:
            raise ValueError(f"{text!r} is not an SLO: write `METRIC <= NUMBER` or `METRIC >= NUMBER`")
        name, op, bound = m.groups()
        name = name.removesuffix("_ms")
        value = float(bound)
        if not math.isfinite(value):
            raise ValueError(f"{text!r}: the bound must be a finite number")
        return cls(metric=name, op="<=" if op in ("<=", "<") else ">=", bound=value)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


class SloCheck(BaseModel):
    """One SLO judged on one arm's runs at one level."""

    slo: str
    judgement: SloJudgement
    runs: int
    mean: float | None = None
    ci: list[float] | None = None  # 95 % CI of the mean
    why: str = ""


def judge_slo(values: Sequence[float], slo: Slo) -> SloCheck:
    """`meets` when the whole 95 % CI of the mean is on the right side of the bound, `fails` when it is
    wholly on the wrong side, `unclear` otherwise (or with fewer than two readings)."""
    vals = [v for v in values if math.isfinite(v)]
    if len(vals) < 2:
        return SloCheck(
            slo=str(slo), judgement="unclear", runs=len(vals), why=f"{len(vals)} reading(s); 2 needed to judge"
        )
    mean = statistics.fmean(vals)
    half = t975(len(vals) - 1) * statistics.stdev(vals) / math.sqrt(len(vals))
    low, high = mean - half, mean + half
    inside, outside = (high <= slo.bound, low > slo.bound) if slo.op == "<=" else (low >= slo.bound, high < slo.bound)
    judgement: SloJudgement = "meets" if inside else "fails" if outside else "unclear"
    why = f"mean {mean:.4g} (95% CI {low:.4g}…{high:.4g}) against {slo}"
    return SloCheck(slo=str(slo), judgement=judgement, runs=len(vals), mean=mean, ci=[low, high], why=why)


def combine(checks: Sequence[SloCheck]) -> SloJudgement:
    """Several SLOs: met when every one is, failed when any one is, else unclear."""
    if any(c.judgement == "fails" for c in checks):
        return "fails"
    if checks and all(c.judgement == "meets" for c in checks):
        return "meets"
    return "unclear"


def capacity(judged: Sequence[tuple[float, SloJudgement]]) -> float | None:
    """The highest level an arm meets its SLOs at, with no lower level failing them (past a failure, a
    level that meets again is noise or a different regime, not capacity). None: it meets none."""
    best = None
    for level, judgement in sorted(judged):
        if judgement == "fails":
            break
        if judgement == "meets":
            best = level
    return best


class LineFit(BaseModel):
    """y = intercept + slope·x by ordinary least squares, with 95 % CIs (t, n − 2 degrees of freedom)."""

    intercept: float
    slope: float
    intercept_ci: list[float]
    slope_ci: list[float]
    points: int
    levels: int
    r2: float
    residual_sd: float


class NoFit(BaseModel):
    """Too little to fit a line, and why."""

    reason: str
    points: int = 0
    levels: int = 0


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LineFit | NoFit:
    points = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(x) and math.isfinite(y)]
    levels = len({x for x, _ in points})
    if len(points) < 3 or levels < 2:
        return NoFit(
            reason=f"{len(points)} reading(s) at {levels} level(s); a fit with CIs needs 3 over 2 levels",
            points=len(points),
            levels=levels,
        )
    n = len(points)
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx
    intercept = my - slope * mx
    sse = sum((y - intercept - slope * x) ** 2 for x, y in points)
    syy = sum((y - my) ** 2 for _, y in points)
    s = math.sqrt(sse / (n - 2))
    t = t975(n - 2)
    se_slope = s / math.sqrt(sxx)
    se_intercept = s * math.sqrt(1 / n + mx**2 / sxx)
    return LineFit(
        intercept=intercept,
        slope=slope,
        intercept_ci=[intercept - t * se_intercept, intercept + t * se_intercept],
        slope_ci=[slope - t * se_slope, slope + t * se_slope],
        points=n,
        levels=levels,
        r2=1.0 - sse / syy if syy > 0 else 1.0,
        residual_sd=s,
    )


class SearchStep(BaseModel):
    """One probe of a capacity search: an arm measured at a level, and what the bracket became."""

    arm: Literal["A", "B"]
    level: float
    judgement: SloJudgement
    values: list[float] = Field(default_factory=list)
    passing: float | None = None  # the highest level known to meet the SLOs
    failing: float | None = None  # the lowest level known not to


class Bracket(BaseModel):
    """Where a capacity search stands for one arm: it meets at `passing`, not at `failing`."""

    low: float
    high: float
    integer: bool = True
    passing: float | None = None
    failing: float | None = None
    probes: int = 0

    def next_level(self) -> float | None:
        """The next level to probe: the top of the range first (a server that meets the SLO there needs
        no search), then the bottom, then halfway across the bracket; None when it is closed."""
        if self.passing is None and self.failing is None:
            return self.high
        if self.passing is None:
            if self.failing is not None and self.failing <= self.low:
                return None  # it fails at the bottom of the range: no capacity in it
            return self.low if self.probes == 1 else self._mid(self.low, self.failing or self.high)
        top = self.failing if self.failing is not None else self.high
        if self.passing >= top:
            return None
        return self._mid(self.passing, top)

    def _mid(self, low: float, high: float) -> float | None:
        if self.integer:
            mid = float((int(low) + int(high)) // 2)
            return None if mid <= low or mid >= high else mid
        mid = (low + high) / 2
        return None if (high - low) <= max(abs(high), 1.0) * 0.01 else mid

    def record(self, level: float, judgement: SloJudgement) -> None:
        """A level that meets raises `passing`; one that fails — or is unclear, which is not evidence that
        it meets — lowers `failing`."""
        self.probes += 1
        if judgement == "meets":
            self.passing = level if self.passing is None else max(self.passing, level)
        else:
            self.failing = level if self.failing is None else min(self.failing, level)


class ArmAtLevel(BaseModel):
    """One arm at one level: its mean, its SLO checks and its goodput there."""

    runs: int
    mean: float | None = None
    slo: SloJudgement | None = None  # None: the campaign has no SLO
    checks: list[SloCheck] = Field(default_factory=list)
    goodput: float | None = None  # the mean where the SLOs are met, 0 where they fail, None when unclear


class LevelResult(BaseModel):
    """The A/B at one level of a sweep."""

    level: float
    verdict: str
    effect_pct: float | None = None
    ci: list[float] | None = None
    pairs: int = 0
    detectable_pct: float | None = None
    breached: list[str] = Field(default_factory=list)  # guardrails slower beyond their margin here
    arms: dict[str, ArmAtLevel] = Field(default_factory=dict)
    broken: bool = False  # no run gave a reading in either arm here


def arm_at_level(values: Sequence[float], readings: Sequence[dict[str, float]], slos: Sequence[Slo]) -> ArmAtLevel:
    """`values`: the arm's valid metric readings at the level; `readings`: the same runs' other metrics."""
    mean = statistics.fmean(values) if values else None
    if not slos:
        return ArmAtLevel(runs=len(values), mean=mean)
    checks = [judge_slo([r[s.metric] for r in readings if s.metric in r], s) for s in slos]
    judgement = combine(checks)
    goodput = (mean if judgement == "meets" else 0.0 if judgement == "fails" else None) if mean is not None else None
    return ArmAtLevel(runs=len(values), mean=mean, slo=judgement, checks=checks, goodput=goodput)


def capacity_gain_pct(base: float | None, option: float | None) -> float | None:
    """How much more load the option carries within the SLOs, in % (None unless both arms have a capacity)."""
    if base is None or option is None or base <= 0:
        return None
    return round((option / base - 1.0) * 100.0, 3)


class SweepSummary(BaseModel):
    """A sweep's outcome for one option, as the journal and the report keep it."""

    var: str
    values: list[float]
    level: float  # where the goal is judged: the headline A/B
    at: float | str | None = None  # what the campaign asked for (`goal.at`)
    slo: list[str] = Field(default_factory=list)
    levels: list[LevelResult]
    capacity: dict[str, float | None] = Field(default_factory=dict)  # arm → highest level meeting the SLOs
    capacity_source: Literal["levels", "search"] | None = None
    capacity_gain_pct: float | None = None
    fit: dict[str, dict[str, Any]] = Field(default_factory=dict)  # arm → LineFit or NoFit, with its metric
    search: dict[str, Any] | None = None
    guardrails_at: str | float = "all"
    reasons: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        """One line: each level's verdict, the level judged, the capacities and the fits."""
        var = self.var
        parts = [
            f"{var}={lv.level:g}: {lv.verdict}" + (f" {lv.effect_pct:+.1f}%" if lv.effect_pct is not None else "")
            for lv in self.levels
        ]
        line = "; ".join(parts) + f" — judged at {var}={self.level:g}"
        if self.slo:
            shown = {arm: (f"{c:g}" if c is not None else "none") for arm, c in self.capacity.items()}
            line += f"; capacity within {' and '.join(self.slo)}: baseline {shown.get('A')}, option {shown.get('B')}"
            if self.capacity_gain_pct is not None:
                line += f" ({self.capacity_gain_pct:+.1f}%)"
        for arm, fit in self.fit.items():
            who = "baseline" if arm == "A" else "option"
            if "slope" in fit:
                low, high = fit["slope_ci"]
                line += (
                    f"; {who} {fit['metric']} = {fit['intercept']:.1f} + {fit['slope']:.3f}×{var} "
                    f"(per-{var} 95% CI {low:.3f}…{high:.3f})"
                )
        return line
