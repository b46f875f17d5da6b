"""Interleaved A/B statistics: geometric-mean ratio of paired runs, paired-t CI on log ratios.

Design and thresholds follow `research/bench-stats.md` §2.3: pairs alternate AB, BA, AB, … so
drift cancels; d_i = ln(B_i / A_i); effect = exp(mean d) − 1; 95 % CI from Student t with n−1
degrees of freedom. τ (noise threshold) and δ (equivalence margin) are configurable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

Arm = Literal["A", "B"]
ABVerdict = Literal["improved", "regressed", "no_effect", "inconclusive"]

# Two-sided 95 % Student t quantiles t_{0.975, df}, df = 1..30 (as pyperf ships them).
_T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("need at least 2 pairs for a confidence interval")
    return _T975[df - 1] if df <= len(_T975) else 1.960


def pair_order(index: int) -> tuple[Arm, Arm]:
    """ABBA counterbalancing: pair 0 runs A then B, pair 1 runs B then A, …"""
    return ("A", "B") if index % 2 == 0 else ("B", "A")


class BenchRun(BaseModel):
    pair: int
    arm: Arm
    value: float | None  # the primary metric; None when the run is not a data point
    valid: bool
    reason: str | None = None
    exit_code: int | None = None
    duration_s: float = 0.0
    artifact: str | None = None
    guardrails: dict[str, float] = {}


class ABResult(BaseModel):
    metric: str
    higher_is_better: bool
    pairs: int
    ratios: list[float]
    effect_pct: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: ABVerdict
    reasons: list[str]
    invalid_runs: int
    noise_pct: float
    equivalence_pct: float
    a_mean: float | None = None
    b_mean: float | None = None
    guardrails: dict[str, float] = {}  # metric → upper CI bound of its ratio change, in %

    def summary(self) -> str:
        if self.effect_pct is None:
            return f"{self.metric}: no estimate ({'; '.join(self.reasons)})"
        return (
            f"{self.metric} {self.effect_pct:+.1f}% (95% CI {self.ci_low:+.1f}%…{self.ci_high:+.1f}%, "
            f"paired t on {self.pairs} interleaved pairs) → {self.verdict}"
        )


def paired_ci(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(effect, low, high) in percent for per-pair ratios B/A."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return (math.exp(mean) - 1) * 100, (math.exp(mean - half) - 1) * 100, (math.exp(mean + half) - 1) * 100


def _pairs(runs: Sequence[BenchRun]) -> dict[int, dict[Arm, BenchRun]]:
    by_pair: dict[int, dict[Arm, BenchRun]] = {}
    for run in runs:
        by_pair.setdefault(run.pair, {})[run.arm] = run
    return by_pair


def analyse(
    runs: Sequence[BenchRun],
    *,
    metric: str,
    higher_is_better: bool = True,
    min_pairs: int = 5,
    noise_pct: float = 1.0,
    equivalence_pct: float = 2.0,
    guardrail_pct: float = 5.0,
) -> ABResult:
    """Verdict from interleaved runs. A pair counts only when both of its runs are valid."""
    complete = [
        (p["A"], p["B"])
        for _, p in sorted(_pairs(runs).items())
        if "A" in p and "B" in p and p["A"].valid and p["B"].valid
    ]
    invalid = sum(1 for r in runs if not r.valid)
    reasons: list[str] = []
    if invalid:
        reasons.append(f"{invalid} run(s) excluded as invalid")
    # Orientation: a positive effect always means "better", whatever the metric's direction.
    ratios = [
        (b.value / a.value) if higher_is_better else (a.value / b.value)  # type: ignore[operator]
        for a, b in complete
    ]
    a_mean = statistics.fmean(a.value for a, _ in complete) if complete else None  # type: ignore[misc]
    b_mean = statistics.fmean(b.value for _, b in complete) if complete else None  # type: ignore[misc]
    base = dict(
        metric=metric,
        higher_is_better=higher_is_better,
        pairs=len(ratios),
        ratios=[round(r, 6) for r in ratios],
        invalid_runs=invalid,
        noise_pct=noise_pct,
        equivalence_pct=equivalence_pct,
        a_mean=a_mean,
        b_mean=b_mean,
    )
    if len(ratios) < max(min_pairs, 2):
        reasons.append(f"only {len(ratios)} valid pair(s); at least {max(min_pairs, 2)} needed")
        return ABResult(**base, effect_pct=None, ci_low=None, ci_high=None, verdict="inconclusive", reasons=reasons)
    effect, low, high = paired_ci(ratios)
    guardrails: dict[str, float] = {}
    for name in sorted({k for a, b in complete for k in a.guardrails if k in b.guardrails}):
        # Latency guardrails: lower is better, so B/A above 1 is a slowdown.
        g = [b.guardrails[name] / a.guardrails[name] for a, b in complete if a.guardrails[name] > 0]
        if len(g) >= 2:
            guardrails[name] = round(paired_ci(g)[2], 3)
    if low > noise_pct:
        verdict: ABVerdict = "improved"
    elif high < -noise_pct:
        verdict = "regressed"
    elif -equivalence_pct < low and high < equivalence_pct:
        verdict = "no_effect"
    else:
        verdict = "inconclusive"
        reasons.append(f"CI straddles the ±{noise_pct:g}% noise band")
    breached = [f"{k} +{v:.1f}%" for k, v in guardrails.items() if v > guardrail_pct]
    if verdict == "improved" and breached:
        verdict = "inconclusive"
        reasons.append(f"latency guardrail above +{guardrail_pct:g}%: {', '.join(breached)}")
    return ABResult(
        **base,
        effect_pct=round(effect, 3),
        ci_low=round(low, 3),
        ci_high=round(high, 3),
        verdict=verdict,
        reasons=reasons,
        guardrails=guardrails,
    )


def within_band(reference: Sequence[float], check: Sequence[float], tolerance_pct: float) -> tuple[bool, float]:
    """Is the mean of `check` within ±tolerance of the mean of `reference`? (delta in %)."""
    ref = statistics.fmean(reference)
    delta = (statistics.fmean(check) / ref - 1) * 100
    return abs(delta) <= tolerance_pct, round(delta, 3)
