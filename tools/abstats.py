"""Interleaved A/B statistics: geometric-mean ratio of paired runs, paired-t CI on log ratios.

Design and thresholds follow `research/bench-stats.md` §2.3: pairs alternate AB, BA, AB, … so
drift cancels; d_i = ln(B_i / A_i); effect = exp(mean d) − 1; 95 % CI from Student t with n−1
degrees of freedom. τ (noise threshold) and δ (equivalence margin) are configurable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal, TypedDict

from pydantic import BaseModel

Arm = Literal["A", "B"]
ABVerdict = Literal["improved", "regressed", "no_effect", "inconclusive"]

# Two-sided 95 % Student t quantiles t_{0.975, df}, df = 1..30, to 6 decimals (checked against scipy in
# the tests); beyond 30 the Cornish-Fisher expansion is good to 2e-6.
_T975 = [
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
    2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
    2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
]  # fmt: skip
_Z975 = 1.959963985


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("need at least 2 pairs for a confidence interval")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


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
    # A benchmark over several hosts: each host's reading (None: not a data point); `value` is their mean.
    hosts: dict[str, float | None] = {}


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
    wilcoxon_p: float | None = None  # exact signed-rank cross-check, with ≥ 6 pairs
    # metric → [change, CI low, CI high] in % (positive = slower): a breach is judged on the whole CI
    guardrail_effects: dict[str, list[float]] = {}
    # An inconclusive CI: about how many pairs would tell (None: it already tells, or not within PAIRS_LIMIT)
    pairs_needed: int | None = None

    def summary(self) -> str:
        if self.effect_pct is None:
            return f"{self.metric}: no estimate ({'; '.join(self.reasons)})"
        wilcoxon = f"; Wilcoxon p={self.wilcoxon_p:.3f}" if self.wilcoxon_p is not None else ""
        return (
            f"{self.metric} {self.effect_pct:+.1f}% (95% CI {self.ci_low:+.1f}%…{self.ci_high:+.1f}%, "
            f"paired t, {self.pairs} interleaved pairs{wilcoxon}) → {self.verdict}"
        )


class _Shared(TypedDict):
    """The `ABResult` fields every outcome of `analyse` has, estimate or not."""

    metric: str
    higher_is_better: bool
    pairs: int
    ratios: list[float]
    invalid_runs: int
    noise_pct: float
    equivalence_pct: float
    a_mean: float | None
    b_mean: float | None


def paired_ci(ratios: Sequence[float]) -> tuple[float, float, float]:
    """(effect, low, high) in percent for per-pair ratios B/A."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return (math.exp(mean) - 1) * 100, (math.exp(mean - half) - 1) * 100, (math.exp(mean + half) - 1) * 100


def wilcoxon_p(diffs: Sequence[float]) -> float:
    """Exact two-sided Wilcoxon signed-rank p-value (zero differences dropped, ties get mid-ranks).

    The null distribution is the sum over subsets of ranks, counted by dynamic programming on doubled
    ranks so that mid-ranks (x.5) stay integers.
    """
    d = [x for x in diffs if x != 0.0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    ranks2 = [0] * n  # twice the rank
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2  # 2 × mean of ranks i+1 … j+1
        i = j + 1
    w_plus = sum(r for r, x in zip(ranks2, d, strict=True) if x > 0)
    total = sum(ranks2)
    counts = [0] * (total + 1)
    counts[0] = 1
    for r in ranks2:
        for s_ in range(total, r - 1, -1):
            counts[s_] += counts[s_ - r]
    extreme = min(w_plus, total - w_plus)
    tail = sum(counts[: extreme + 1])
    return min(1.0, 2 * tail / 2**n)


def outlier_pairs(runs: Sequence[BenchRun], *, k: float = 3.0) -> list[int]:
    """Pairs whose log ratio is more than k robust SDs (1.4826·MAD) from the median: re-run, not dropped."""
    complete = {
        i: math.log(p["B"].value / p["A"].value)  # type: ignore[operator]
        for i, p in _pairs(runs).items()
        if "A" in p and "B" in p and p["A"].valid and p["B"].valid
    }
    if len(complete) < 5:
        return []
    med = statistics.median(complete.values())
    mad = statistics.median(abs(d - med) for d in complete.values())
    if mad == 0:
        return []
    return sorted(i for i, d in complete.items() if abs(d - med) > k * 1.4826 * mad)


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
    equivalence_pct: float | None = None,
    noise_floor_pct: float | None = None,
    max_pairs: int | None = None,
    guardrail_pct: float = 5.0,
) -> ABResult:
    """Verdict from interleaved runs. A pair counts only when both of its runs are valid.

    `equivalence_pct` (τ) defaults to max(`noise_floor_pct`, 1 %): effects the calibration says cannot be
    told from zero at `max_pairs` are not worth telling apart."""
    if equivalence_pct is None:
        equivalence_pct = round(max(noise_floor_pct or 0.0, 1.0), 3)
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
    base = _Shared(
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
    guardrail_effects: dict[str, list[float]] = {}
    for name in sorted({k for a, b in complete for k in a.guardrails if k in b.guardrails}):
        # Latency guardrails: lower is better, so B/A above 1 is a slowdown. Only pairs where both runs
        # have the metric count (a caller may hand over runs that lack it).
        g = [
            b.guardrails[name] / a.guardrails[name]
            for a, b in complete
            if a.guardrails.get(name, 0) > 0 and name in b.guardrails
        ]
        if len(g) >= 2:
            g_effect, g_low, g_high = paired_ci(g)
            guardrails[name] = round(g_high, 3)
            guardrail_effects[name] = [round(g_effect, 3), round(g_low, 3), round(g_high, 3)]
    if low > noise_pct:
        verdict: ABVerdict = "improved"
    elif high < -noise_pct:
        verdict = "regressed"
    elif -equivalence_pct < low and high < equivalence_pct:
        verdict = "no_effect"
    else:
        verdict = "inconclusive"
        reasons.append(
            f"CI {low:+.1f}%…{high:+.1f}% is neither clear of the ±{noise_pct:g}% noise band nor inside the "
            f"±{equivalence_pct:g}% equivalence margin"
        )
    pairs_needed = None
    if verdict == "inconclusive":
        logs = [math.log(r) for r in ratios]
        pairs_needed = pairs_to_tell(logs, noise_pct=noise_pct, equivalence_pct=equivalence_pct)
        reasons.append(
            f"about {pairs_needed} pairs would tell" if pairs_needed else
            f"more than {PAIRS_LIMIT} pairs would be needed to tell: the effect is at the level of the noise"
        )  # fmt: skip
    elif verdict == "no_effect":
        reasons.append(f"no effect: the whole CI {low:+.1f}%…{high:+.1f}% lies within ±{equivalence_pct:g}%")
    p_value = None
    if len(ratios) >= 6:
        p_value = round(wilcoxon_p([math.log(r) for r in ratios]), 4)
        if verdict in ("improved", "regressed") and p_value >= 0.05:
            verdict = "inconclusive"
            reasons.append(
                f"the paired t says {('better' if low > 0 else 'worse')}, but the Wilcoxon signed-rank "
                f"test does not agree (p={p_value:.3f})"
            )
    # A breach is a slowdown beyond the guardrail that the noise cannot explain (CI clear of zero); a CI
    # that only reaches past the guardrail is said, and does not by itself throw a gain away.
    breached = [
        f"{k} {e:+.1f}% (95% CI {lo:+.1f}%…{hi:+.1f}%)"
        for k, (e, lo, hi) in guardrail_effects.items()
        if lo > 0 and e > guardrail_pct
    ]
    unclear = [
        f"{k} up to {hi:+.1f}%"
        for k, (e, lo, hi) in guardrail_effects.items()
        if hi > guardrail_pct and not (lo > 0 and e > guardrail_pct)
    ]
    if verdict == "improved" and breached:
        verdict = "inconclusive"
        reasons.append(f"latency guardrail breached (slower by more than {guardrail_pct:g}%): {', '.join(breached)}")
    if unclear:
        reasons.append(
            f"a latency slowdown beyond {guardrail_pct:g}% cannot be ruled out at this noise: {', '.join(unclear)}"
        )
    return ABResult(
        **base,
        effect_pct=round(effect, 3),
        ci_low=round(low, 3),
        ci_high=round(high, 3),
        verdict=verdict,
        reasons=reasons,
        guardrails=guardrails,
        guardrail_effects=guardrail_effects,
        wilcoxon_p=p_value,
        pairs_needed=pairs_needed,
    )


PAIRS_LIMIT = 200


def pairs_to_tell(logs: Sequence[float], *, noise_pct: float, equivalence_pct: float) -> int | None:
    """About how many pairs, at this spread and effect, give a CI that is either clear of the noise band
    (improved/regressed) or inside the equivalence margin (no effect)."""
    n = len(logs)
    if n < 2:
        return None
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    effect = abs(math.exp(mean) - 1) * 100
    if sd == 0:
        return n + 1
    for m in range(n + 1, PAIRS_LIMIT + 1):
        half = (math.exp(t975(m - 1) * sd / math.sqrt(m)) - 1) * 100
        if effect - half > noise_pct or effect + half < equivalence_pct:
            return m
    return None
