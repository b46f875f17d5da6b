"""The campaign's goal judged by a measurement, and whether kept options stack.

The confirmation A/B (agent/nodes/confirm.py) measures the configuration the campaign ended on against the one it
started from, interleaved like any A/B. Its paired log ratios give the gain with a Student-t CI (`tools.abstats`);
here that CI meets the goal's target:

- **met** when the whole CI clears the target, **not met** when the whole CI is below it, **unclear** otherwise;
- P(goal met) is the t distribution's mass above the target, centred on the estimate with the CI's standard error
  (the flat-prior posterior of the mean log ratio — a reading of the CI, not a new test);
- "pairs that would tell": at this spread and effect, the pairs whose CI would leave the target on one side.

An **interaction** compares the confirmed gain with the product of the kept options' single gains, each measured in
its own A/B: on the log scale the difference is `log(1 + together) − Σ log(1 + single_i)`, its standard error the
root sum of squares of the independent A/Bs' standard errors, and its degrees of freedom Welch–Satterthwaite's. It
is reported when its 95 % CI excludes zero: the options overlap (together less than the singles imply) or
compound (more).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from tools.abstats import PAIRS_LIMIT, t975, t_two_sided_p

GoalMet = Literal["met", "not met", "unclear", "no target"]


class GoalVerdict(BaseModel):
    """The goal against the confirmation A/B's CI."""

    met: GoalMet
    target_pct: float | None
    gain_pct: float
    ci_low: float
    ci_high: float
    pairs: int
    p_met: float | None  # P(true gain ≥ target) read off the CI; None without a target
    pairs_to_tell: int | None  # an unclear goal: about how many pairs put the target outside the CI (None: past limit)

    def words(self) -> str:
        ci = f"{self.gain_pct:+.1f}% (95% CI {self.ci_low:+.1f}%…{self.ci_high:+.1f}%, {self.pairs} pairs)"
        if self.target_pct is None:
            return f"measured {ci}; the goal names no target"
        said = {
            "met": f"met: the whole CI clears the {self.target_pct:+g}% target",
            "not met": f"not met: the whole CI is below the {self.target_pct:+g}% target",
            "unclear": f"unclear: the CI straddles the {self.target_pct:+g}% target",
        }[self.met]
        p = f", P(goal met) {self.p_met:.2f}" if self.p_met is not None else ""
        tell = ""
        if self.met == "unclear":
            tell = (
                f"; about {self.pairs_to_tell} pairs would tell"
                if self.pairs_to_tell
                else f"; more than {PAIRS_LIMIT} pairs would be needed: the gain is at the target"
            )
        return f"measured {ci} — {said}{p}{tell}"


def _log_stats(ratios: Sequence[float]) -> tuple[float, float, int]:
    """(mean, sd, n) of the log ratios."""
    logs = [math.log(r) for r in ratios]
    return statistics.fmean(logs), statistics.stdev(logs), len(logs)


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with integer df."""
    tail = t_two_sided_p(t, df) / 2
    return 1 - tail if t > 0 else tail


def judge_goal(ratios: Sequence[float], target_pct: float | None) -> GoalVerdict:
    """The goal from a confirmation A/B's per-pair ratios (final / start, oriented so that above 1 is better).
    Needs at least two ratios (a CI)."""
    if len(ratios) < 2:
        raise ValueError("the goal needs at least 2 confirmation pairs for a CI")
    mean, sd, n = _log_stats(ratios)
    se = sd / math.sqrt(n)
    half = t975(n - 1) * se
    gain, low, high = (math.expm1(x) * 100 for x in (mean, mean - half, mean + half))
    if target_pct is None:
        return GoalVerdict(
            met="no target", target_pct=None, gain_pct=round(gain, 3), ci_low=round(low, 3),
            ci_high=round(high, 3), pairs=n, p_met=None, pairs_to_tell=None,
        )  # fmt: skip
    goal = math.log1p(target_pct / 100)
    met: GoalMet = "met" if mean - half > goal else "not met" if mean + half < goal else "unclear"
    p_met = (1.0 if mean >= goal else 0.0) if se == 0 else t_cdf((mean - goal) / se, n - 1)
    to_tell = None
    if met == "unclear" and sd > 0:
        to_tell = next(
            (m for m in range(n + 1, PAIRS_LIMIT + 1) if abs(mean - goal) > t975(m - 1) * sd / math.sqrt(m)), None
        )
    return GoalVerdict(
        met=met,
        target_pct=target_pct,
        gain_pct=round(gain, 3),
        ci_low=round(low, 3),
        ci_high=round(high, 3),
        pairs=n,
        p_met=round(p_met, 4),
        pairs_to_tell=to_tell,
    )


class Single(BaseModel):
    """A kept option's own A/B: its gain and 95 % CI in %, and the pairs behind them."""

    option: int
    gain_pct: float
    ci_low: float
    ci_high: float
    pairs: int


class Interaction(BaseModel):
    """The confirmed gain of options together against the product of their single gains."""

    options: list[int]
    together_pct: float
    together_ci: list[float]
    implied_pct: float  # the product of the single gains
    interaction_pct: float  # (1 + together) / (1 + implied) − 1
    ci_low: float
    ci_high: float
    kind: Literal["overlap", "compound", "none"]

    def words(self) -> str:
        named = " and ".join(f"#{o}" for o in self.options)
        together = f"together {self.together_pct:+.0f}% [{self.together_ci[0]:+.0f}, {self.together_ci[1]:+.0f}]"
        if self.kind == "none":
            return (
                f"{named} stack: {together}, as the {self.implied_pct:+.0f}% their single gains imply "
                f"(interaction {self.interaction_pct:+.1f}%, 95% CI {self.ci_low:+.1f}%…{self.ci_high:+.1f}%)"
            )
        how = "not" if self.kind == "overlap" else "more than"
        verb = "overlap" if self.kind == "overlap" else "compound"
        return (
            f"{named} {verb}: {together}, {how} the {self.implied_pct:+.0f}% their single gains imply "
            f"(interaction {self.interaction_pct:+.1f}%, 95% CI {self.ci_low:+.1f}%…{self.ci_high:+.1f}%)"
        )


def _se_of(single: Single) -> tuple[float, float, int]:
    """(log mean, standard error, df) of a single option's gain, read back from its CI."""
    lo, hi = math.log1p(single.ci_low / 100), math.log1p(single.ci_high / 100)
    df = max(single.pairs - 1, 1)
    return math.log1p(single.gain_pct / 100), (hi - lo) / 2 / t975(df), df


def interaction(ratios: Sequence[float], singles: Sequence[Single]) -> Interaction:
    """The confirmation's ratios (these options together against none of them) against their single A/Bs."""
    if len(ratios) < 2 or len(singles) < 2:
        raise ValueError("an interaction needs a confirmation CI and at least two single gains")
    mean, sd, n = _log_stats(ratios)
    se_c = sd / math.sqrt(n)
    parts = [_se_of(s) for s in singles]
    implied = sum(m for m, _, _ in parts)
    d = mean - implied
    variances = [(se_c**2, n - 1), *((se**2, df) for _, se, df in parts)]
    var = sum(v for v, _ in variances)
    # Welch–Satterthwaite degrees of freedom (with no spread at all, the confirmation's own)
    df = max(1, math.floor(var**2 / sum(v**2 / k for v, k in variances if v > 0))) if var else max(n - 1, 1)
    half = t975(df) * math.sqrt(var)
    low, high = d - half, d + half
    kind: Literal["overlap", "compound", "none"] = "overlap" if high < 0 else "compound" if low > 0 else "none"
    half_c = t975(n - 1) * se_c
    return Interaction(
        options=[s.option for s in singles],
        together_pct=round(math.expm1(mean) * 100, 3),
        together_ci=[round(math.expm1(mean - half_c) * 100, 3), round(math.expm1(mean + half_c) * 100, 3)],
        implied_pct=round(math.expm1(implied) * 100, 3),
        interaction_pct=round(math.expm1(d) * 100, 3),
        ci_low=round(math.expm1(low) * 100, 3),
        ci_high=round(math.expm1(high) * 100, 3),
        kind=kind,
    )
