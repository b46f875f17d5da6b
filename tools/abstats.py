"""Interleaved A/B statistics: geometric-mean ratio of paired runs, paired-t CI on log ratios.

Design and thresholds follow `research/bench-stats.md` §2.3: pairs alternate AB, BA, AB, … so
drift cancels; d_i = ln(B_i / A_i); effect = exp(mean d) − 1; 95 % CI from Student t with n−1
degrees of freedom. τ (noise threshold) and δ (equivalence margin) are configurable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal, NamedTuple, TypedDict, cast

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
# One-sided 80 % quantiles t_{0.80, df}, df = 1..30 (80 % power), checked against scipy the same way.
_T80 = [
    1.376382, 1.060660, 0.978472, 0.940965, 0.919544, 0.905703, 0.896030, 0.888890, 0.883404, 0.879058,
    0.875530, 0.872609, 0.870152, 0.868055, 0.866245, 0.864667, 0.863279, 0.862049, 0.860951, 0.859964,
    0.859074, 0.858266, 0.857530, 0.856855, 0.856236, 0.855665, 0.855137, 0.854647, 0.854192, 0.853767,
]  # fmt: skip
_Z80 = 0.841621234
POWER = 0.8  # what "could have seen" means: found 80 % of the time at the measured noise


def t975(df: int) -> float:
    return _t(df, _T975, _Z975)


def t80(df: int) -> float:
    return _t(df, _T80, _Z80)


def _t(df: int, table: list[float], z: float) -> float:
    if df < 1:
        raise ValueError("need at least 2 pairs for a confidence interval")
    if df <= len(table):
        return table[df - 1]
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
    level: float | None = None  # a sweep's level this run was measured at
    readings: dict[str, float] = {}  # other metrics a sweep judges (SLOs) or fits (step time)
    stall: Literal["wedge", "saturated", "dead"] | None = None  # a run killed at its deadline: why it did not finish
    # The requests the load tool sent and saw fail in this run, and its error texts (None: it did not count them).
    requests: int | None = None
    failed_requests: int | None = None
    errors: list[str] = []


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
    # What this A/B could have seen: the smallest true effect (either way, %) that these pairs at this spread
    # find — CI clear of the noise band — 80 % of the time. None without an estimate.
    detectable_pct: float | None = None
    # For an inconclusive or no-effect result: pairs the option's expected effect would need (80 % power).
    expected_pct: float | None = None
    pairs_for_expected: int | None = None
    # Run-to-run spread of the candidate arm over the baseline arm's (log scale), and the Pitman–Morgan
    # test of paired variances: an option that doubles the spread changes something even at no effect.
    spread_ratio: float | None = None
    spread_p: float | None = None
    spread_changed: bool = False
    # Outlying pairs kept in the estimate (they agree with another pair's ratio, or read the same when measured
    # again), and the effect with its CI without them ([effect, low, high] in %; None with fewer than 2 left).
    flagged_pairs: list[int] = []
    without_flagged: list[float] | None = None
    # How the A/B ended (tools.sequential): why it stopped (improved, regressed, equivalent, guardrail, futile,
    # budget; fixed for fixed-N), in words, the pairs it measured and the benchmark runs it took (re-runs too),
    # and, for a sequential test, its always-valid 95% confidence sequence at the stop (%).
    stopped_by: str | None = None
    stop_reason: str | None = None
    pairs_run: int | None = None
    bench_runs: int | None = None
    cs_low: float | None = None
    cs_high: float | None = None

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


def detectable_pct(sd: float, n: int, noise_pct: float) -> float:
    """The smallest true effect (in %, either way) that `n` pairs with this spread of log ratios call
    improved or regressed — the CI clear of ±noise_pct — `POWER` of the time."""
    margin = math.log1p(noise_pct / 100)
    return round(math.expm1(margin + (t975(n - 1) + t80(n - 1)) * sd / math.sqrt(n)) * 100, 3)


def pairs_for_effect(effect_pct: float, sd: float, noise_pct: float) -> int | None:
    """Pairs a true effect of `effect_pct` needs to be found `POWER` of the time at this spread (None: it is
    within the noise band, so no number of pairs calls it, or more than PAIRS_LIMIT would be needed)."""
    target, margin = math.log1p(abs(effect_pct) / 100), math.log1p(noise_pct / 100)
    if target <= margin:
        return None
    for m in range(2, PAIRS_LIMIT + 1):
        if margin + (t975(m - 1) + t80(m - 1)) * sd / math.sqrt(m) <= target:
            return m
    return None


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| ≥ |t|) for Student's t with integer df, from the closed-form finite series."""
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    else:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    return min(1.0, max(0.0, 1.0 - inside))


def _detrended(values: Sequence[float]) -> list[float]:
    """Log values less their least-squares line over the pair index: a machine drifting steadily moves both
    arms alike, and the spread that matters is the run-to-run noise around that."""
    logs = [math.log(x) for x in values]
    slope, intercept = statistics.linear_regression(range(len(logs)), logs)
    return [y - (intercept + slope * i) for i, y in enumerate(logs)]


def spread_change(a: Sequence[float], b: Sequence[float]) -> tuple[float, float] | None:
    """(sd_B / sd_A of the arms' run-to-run noise, two-sided p) by the Pitman–Morgan test for paired samples
    (equal variances make the pairs' sums and differences uncorrelated), on each arm's log values less its
    drift line. None with fewer than 5 pairs or no spread."""
    n = len(a)
    if n < 5 or len(b) != n or min(a) <= 0 or min(b) <= 0:
        return None
    la, lb = _detrended(a), _detrended(b)
    sd_a, sd_b = statistics.stdev(la), statistics.stdev(lb)
    if sd_a == 0 or sd_b == 0:
        return None
    sums, diffs = [x + y for x, y in zip(la, lb, strict=True)], [y - x for x, y in zip(la, lb, strict=True)]
    if statistics.stdev(sums) == 0 or statistics.stdev(diffs) == 0:
        return None
    r = statistics.correlation(sums, diffs)
    df = n - 3  # one more degree of freedom spent on each arm's drift line
    t = r * math.sqrt(df / max(1e-12, 1 - r * r))
    return sd_b / sd_a, t_two_sided_p(t, df)


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


class Outliers(NamedTuple):
    """Pairs whose log ratio is more than k robust SDs (1.4826·MAD) from the median: a lone one is measured again
    (`rerun`); one whose ratio agrees with another pair's is a second reading of the same thing, not an accident,
    and is kept and flagged (`flagged`)."""

    rerun: list[int]
    flagged: list[int]


# Two readings of the same ratio differ by more than 2·√2 robust SDs (their difference has √2 times the spread)
# about 5 % of the time: closer than that, an outlying pair agrees with the other.
AGREE_SDS = 2 * math.sqrt(2)


def outliers(runs: Sequence[BenchRun], *, k: float = 3.0) -> Outliers:
    """The outlying pairs among complete ones (at least 5): which to measure again and which agree with another
    pair's ratio (flag, don't drop: two pairs at 1.65× among 1.0× pairs are evidence, not two accidents)."""
    complete = {
        i: math.log(p["B"].value / p["A"].value)  # type: ignore[operator]
        for i, p in _pairs(runs).items()
        if "A" in p and "B" in p and p["A"].valid and p["B"].valid
    }
    if len(complete) < 5:
        return Outliers([], [])
    med = statistics.median(complete.values())
    mad = statistics.median(abs(d - med) for d in complete.values())
    if mad == 0:
        return Outliers([], [])
    sd = 1.4826 * mad
    far = sorted(i for i, d in complete.items() if abs(d - med) > k * sd)
    agreeing = [i for i in far if any(j != i and abs(complete[i] - d) <= AGREE_SDS * sd for j, d in complete.items())]
    return Outliers([i for i in far if i not in agreeing], agreeing)


def outlier_pairs(runs: Sequence[BenchRun], *, k: float = 3.0) -> list[int]:
    """Lone outlier pairs (more than k robust SDs from the median, agreeing with no other pair): measured again,
    the first measurement journaled, not dropped silently."""
    return outliers(runs, k=k).rerun


def _far(runs: Sequence[BenchRun], *, k: float = 3.0) -> list[int]:
    """Every outlying pair still in the estimate (flagged ones, and lone ones whose re-run read the same)."""
    found = outliers(runs, k=k)
    return sorted(found.rerun + found.flagged)


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
    expected_pct: float | None = None,
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
    # A valid run has a value, which the checker cannot see: the ignored division would leave the list unknown.
    ratios = cast(
        list[float],
        [
            (b.value / a.value) if higher_is_better else (a.value / b.value)  # type: ignore[operator]
            for a, b in complete
        ],
    )
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
    breached = breaches(guardrail_effects, guardrail_pct)
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
    logs = [math.log(r) for r in ratios]
    sd = statistics.stdev(logs)
    detectable = detectable_pct(sd, len(ratios), noise_pct)
    reasons.append(
        f"could have seen an effect of ±{detectable:g}% or more ({POWER:.0%} power at this noise, {len(ratios)} pairs)"
    )
    pairs_for_expected = None
    if verdict in ("inconclusive", "no_effect") and expected_pct:
        pairs_for_expected = pairs_for_effect(expected_pct, sd, noise_pct)
        reasons.append(
            f"the expected {expected_pct:+g}% would need about {pairs_for_expected} pairs"
            if pairs_for_expected
            else f"the expected {expected_pct:+g}% is within the ±{noise_pct:g}% noise band or past "
            f"{PAIRS_LIMIT} pairs: no A/B here can call it"
        )
    spread = spread_change([a.value for a, _ in complete], [b.value for _, b in complete])  # type: ignore[misc]
    spread_changed = bool(spread and spread[1] < 0.05)
    if spread and spread_changed:
        reasons.append(
            f"the option changes the run-to-run spread: ×{spread[0]:.2f} the baseline arm's "
            f"(Pitman–Morgan p={spread[1]:.3f})"
        )
    flagged = _far(runs)
    without = None
    if flagged:
        kept = [r for (a, _), r in zip(complete, ratios, strict=True) if a.pair not in flagged]
        shown = ", ".join(f"{p} (B/A ×{math.exp(_log_of(complete, p)):.2f})" for p in flagged)
        why = (
            "kept in the estimate, flagged: each agrees with another pair's ratio or read the same when measured again"
        )
        if len(kept) >= 2:
            w_effect, w_low, w_high = paired_ci(kept)
            without = [round(w_effect, 3), round(w_low, 3), round(w_high, 3)]
            reasons.append(
                f"outlying pair(s) {shown} {why}; without them: {w_effect:+.1f}% "
                f"(95% CI {w_low:+.1f}%…{w_high:+.1f}%, {len(kept)} pairs)"
            )
        else:
            reasons.append(f"outlying pair(s) {shown} {why}")
    return ABResult(
        **base,
        flagged_pairs=flagged,
        without_flagged=without,
        detectable_pct=detectable,
        expected_pct=expected_pct,
        pairs_for_expected=pairs_for_expected,
        spread_ratio=round(spread[0], 4) if spread else None,
        spread_p=round(spread[1], 4) if spread else None,
        spread_changed=spread_changed,
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


def _log_of(complete: Sequence[tuple[BenchRun, BenchRun]], pair: int) -> float:
    """A pair's log ratio B/A (as the outlier test sees it)."""
    a, b = next((a, b) for a, b in complete if a.pair == pair)
    return math.log(b.value / a.value)  # type: ignore[operator]


def breaches(guardrail_effects: dict[str, list[float]], guardrail_pct: float) -> list[str]:
    """Guardrails measurably slower than their margin: the CI clear of zero and the effect beyond it."""
    return [
        f"{k} {e:+.1f}% (95% CI {lo:+.1f}%…{hi:+.1f}%)"
        for k, (e, lo, hi) in guardrail_effects.items()
        if lo > 0 and e > guardrail_pct
    ]


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
