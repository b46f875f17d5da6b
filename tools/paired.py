"""Checks after the A/B made the way the A/B was: fresh baseline-arm readings interleaved with the runs judged.

A check that compares runs taken now with readings from minutes earlier reads any change of the machine in
between — a neighbour's load, a cache gone cold — as a change of what it is checking. Interleaving the two
arms again (B A, A B, …) makes a neighbour's load move both, and the check judges the option's arm *against
the baseline arm beside it*: the post-stress ratio of the arms against the A/B's own ratio, each pair's ratio
as noisy as the A/B's pairs (`pair_noise`, per run; a pair's log ratio has √2 of it).

What pairing cannot see it says in words: both arms slower than at the end of the A/B is the whole machine
slower — a neighbour's load, or damage the revert does not undo (a leak the stress left in the server, say) —
which no comparison of the arms can attribute to the option, and none here does (`Shift`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from tools.noise import F_TEST_PAIRS, Band, Noise, band, calibration_against_pairs, delta_pct

# Pairs the post-stress check may grow to when its configured ones cannot see a loss below the rollback ceiling
# (as many runs as the unpaired check's 10 were).
POST_STRESS_MAX_PAIRS = 5


def rollback_pairs(verify_runs: int) -> int:
    """Pairs a rollback measures when its readings were slower than the baseline (agent/nodes/rollback.py)."""
    return max(2, verify_runs)


# A pair's ratio has two runs' noise: k standard errors of a per-run noise, times √2 (`band` takes per-run noise).
K = 3.0
PAIRED_K = K * math.sqrt(2)


def oriented(a: float, b: float, higher_is_better: bool) -> float:
    """A pair's ratio, positive = the option's arm better (as `tools.abstats.analyse` orients an A/B's ratios)."""
    return b / a if higher_is_better else a / b


def gmean_pct(ratios: Sequence[float]) -> float:
    return (math.exp(statistics.fmean(math.log(r) for r in ratios)) - 1) * 100


def pair_noise(calibration: Mapping[str, Any] | None, ratios: Sequence[float]) -> Noise:
    """The per-run noise a paired comparison is judged by: the A/A calibration with MIN_RUNS pairs or more
    unless the A/B's own pairs disagree with it beyond their sampling error (`tools.noise.disagreement`), else
    the spread of the A/B's own paired differences (per run: their SD over √2)."""
    logs = [math.log(r) for r in ratios if r and r > 0]
    own = statistics.stdev(logs) * 100 / math.sqrt(2) if len(logs) >= 2 else None
    pairs = Noise(sd_pct=own, runs=len(logs), source="pairs" if own is not None else "none")
    cal = calibration or {}
    if cal.get("sd_pct") is not None:
        calibrated = Noise(sd_pct=cal["sd_pct"] / math.sqrt(2), runs=int(cal.get("pairs", 0)), source="calibration")
        # Three pairs are few to estimate a noise from, but enough for the F test to see a calibration ten times
        # too wide (a sequential A/B may stop there); the test's own degrees of freedom say how sure it is.
        if pairs.thin and (calibrated.thin or len(logs) < F_TEST_PAIRS):
            return calibrated
        if not calibrated.thin:
            overruled = calibration_against_pairs(calibration, ratios)
            if overruled is None:
                return calibrated
            return pairs.model_copy(update={"overruled": overruled[1]})
    return pairs


class Shift(BaseModel):
    """The machine's level now against the end of the A/B: the baseline arm's change (nothing of the option is on
    in it), in % (positive = higher readings), the option arm's beside it, and whether both are slower — the
    baseline arm beyond its band."""

    pct: float
    b_pct: float
    band: Band
    slower: bool

    def describe(self) -> str:
        return (
            f"both arms read slower than at the end of the A/B (baseline arm {self.pct:+.1f}%, band "
            f"±{self.band.pct or 0:.1f}%; option arm {self.b_pct:+.1f}%): the whole machine is slower with the "
            "option on and off — a neighbour's load, or damage the revert does not undo; not the option's "
            "degradation, and the metric cannot tell which"
        )


def shift(
    pairs: Sequence[tuple[float, float]],
    *,
    recent_a: Sequence[float],
    recent_b: Sequence[float],
    noise: Noise,
    higher_is_better: bool,
    floor_pct: float,
    ceiling_pct: float,
) -> Shift | None:
    """How far the machine moved since the end of the A/B: the (A, B) pairs' baseline-arm readings against the
    A/B's recent ones, judged against a band of `noise` (None without readings). A loss in the option's arm alone
    is the option's (`post_stress`), not the machine's."""
    if not pairs or not recent_a or not recent_b:
        return None
    a_pct = delta_pct(recent_a, [a for a, _ in pairs])
    b_pct = delta_pct(recent_b, [b for _, b in pairs])
    b = band(noise, len(pairs), len(recent_a), floor_pct=floor_pct, ceiling_pct=ceiling_pct)
    sign = -1 if higher_is_better else 1
    slower = b.pct is not None and not b.too_noisy and sign * a_pct > b.pct and sign * b_pct > 0
    return Shift(pct=a_pct, b_pct=b_pct, band=b, slower=slower)


class PostStress(BaseModel):
    """The post-stress check's verdict on interleaved pairs: `degraded` only when the option's arm lost ground
    to the baseline arm beside it beyond the band."""

    outcome: str  # "ok" | "degraded"
    evidence: str
    pairs: int
    change_pct: float | None = None  # the arms' ratio now against the A/B's, positive = the option better
    band_pct: float | None = None
    too_noisy: bool = False
    machine: Shift | None = None


def post_stress(
    pairs: Sequence[tuple[float, float]],
    *,
    ab_ratios: Sequence[float],
    noise: Noise,
    higher_is_better: bool,
    floor_pct: float,
    ceiling_pct: float,
    tolerance_pct: float,
) -> PostStress:
    """Judge post-stress (A, B) pairs against the A/B's own oriented pair ratios (see the module's docstring)."""
    if not pairs:
        return PostStress(outcome="degraded", evidence="no valid benchmark pair after the stress tests", pairs=0)
    now = [oriented(a, b, higher_is_better) for a, b in pairs]
    now_pct, then_pct = gmean_pct(now), gmean_pct(ab_ratios)
    change = round(((1 + now_pct / 100) / (1 + then_pct / 100) - 1) * 100, 3)
    b = band(noise, len(now), len(ab_ratios), k=PAIRED_K, floor_pct=floor_pct, ceiling_pct=ceiling_pct)
    limit = b.pct if b.pct is not None else tolerance_pct
    said = (
        f"after stress the option's arm read {now_pct:+.1f}% against the baseline arm beside it ({change:+.1f}% "
        f"against the A/B's {then_pct:+.1f}%) over {len(now)} interleaved pair(s), "
        f"band {b.describe() if b.pct is not None else f'±{limit:g}% (fixed)'}"
    )
    out = PostStress(outcome="ok", evidence=said, pairs=len(now), change_pct=change, band_pct=limit)
    if -change > limit:  # only a loss of the option's ground is its degradation; beyond even a wide band it shows
        return out.model_copy(update={"outcome": "degraded", "evidence": f"the option lost ground: {said}"})
    if b.too_noisy:
        # Not a verdict either way: no power to see a loss smaller than the band.
        evidence = f"not judged, too noisy: {said}; only a slowdown beyond ±{limit:.0f}% could show"
        return out.model_copy(update={"evidence": evidence, "too_noisy": True})
    return out
