"""The paired checks' statistics (tools/paired.py, agent/exec/verification.judge_paired) and the calibration that
gives way to the data (tools/noise.disagreement), on synthetic readings with a neighbour's load in them."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from agent.exec.verification import judge_paired, slower
from agent.models import RollbackSpec
from agent.report.figures import plain
from tools.noise import Noise, calibration_against_pairs, disagreement, f_cdf, f_quantile, noise_of, successive_df
from tools.paired import pair_noise, post_stress, shift

SPEC = RollbackSpec()


def noisy(level: float, n: int, *, sd: float = 0.02, seed: int) -> list[float]:
    r = random.Random(seed)
    return [level * math.exp(r.gauss(0, sd)) for _ in range(n)]


def ab(n: int = 8, *, effect: float = 1.2, seed: int = 1) -> tuple[list[float], list[float], list[float]]:
    """An A/B's baseline and option readings (2 % noise) and its oriented pair ratios."""
    a, b = noisy(1000, n, seed=seed), noisy(1000 * effect, n, seed=seed + 100)
    return a, b, [y / x for x, y in zip(a, b, strict=True)]


# ------------------------------------------------------------------ the F test, without scipy in the package


def test_the_f_distribution_matches_scipy() -> None:
    r = random.Random(7)
    for _ in range(300):
        d1, d2, x = r.uniform(0.6, 60), r.uniform(0.6, 60), r.lognormvariate(0, 1.5)
        assert f_cdf(x, d1, d2) == pytest.approx(stats.f.cdf(x, d1, d2), abs=1e-10)
    for q in (0.025, 0.5, 0.975):
        assert f_quantile(q, 3, 7.1) == pytest.approx(stats.f.ppf(q, 3, 7.1), rel=1e-9)


def test_successive_differences_carry_two_thirds_of_their_degrees_of_freedom() -> None:
    # 2m²/(3m − 1) for m differences: 10 readings (m = 9) are worth about 6.2 df; two series add.
    assert successive_df([[1.0] * 10]) == pytest.approx(2 * 81 / 26)
    assert successive_df([[1.0] * 10, [2.0] * 10]) == pytest.approx(4 * 81 / 26)
    assert successive_df([[1.0]]) == 0


def test_a_calibration_and_a_spread_disagree_only_beyond_their_sampling_error() -> None:
    said = disagreement(16.0, 3, 1.5, 7.1)
    assert said is not None and "two-sided F test" in said and "on 3 and 7.1 df" in said
    assert "(" not in said  # a Noise's describe() keeps it in its own parentheses
    assert disagreement(2.5, 3, 1.5, 7.1) is None  # ×2.8 in variance on 3 df is within the sampling error
    assert disagreement(16.0, 0, 1.5, 7.1) is None  # nothing to test with


def test_a_calibration_taken_under_a_neighbours_load_gives_way_to_the_readings_own_spread() -> None:
    a, b, _ = ab()
    # One A/A pair's B run under a 60 % load: ±23 % for 4 pairs, while the readings spread 2 %.
    calibration = {"sd_pct": 33.0, "pairs": 4, "noise_floor_pct": 27.0}
    noise = noise_of(calibration, a, b)
    assert noise.source == "spread" and noise.sd_pct is not None and noise.sd_pct < 4
    assert noise.overruled is not None and noise.overruled.startswith("the A/A calibration's ±23.3% per run")
    assert "the readings' own spread is used" in noise.describe()
    assert noise.logged()["overruled"] == noise.overruled
    # An agreeing calibration is used as before, and its line has no `overruled`.
    agreeing = noise_of({"sd_pct": 3.0, "pairs": 6}, a, b)
    assert agreeing.source == "calibration" and "overruled" not in agreeing.logged()
    # A calibration far *quieter* than the readings gives way too (its bands would call noise a change).
    assert noise_of({"sd_pct": 0.1, "pairs": 8}, a, b).source == "spread"


def test_the_ab_pairs_overrule_a_calibration_that_disagrees_with_them() -> None:
    _, _, ratios = ab()
    own, why = calibration_against_pairs({"sd_pct": 33.0, "pairs": 4}, ratios) or (None, "")
    assert own is not None and own < 5 and "F test" in why
    assert calibration_against_pairs({"sd_pct": 3.0, "pairs": 4}, ratios) is None
    assert calibration_against_pairs({"sd_pct": 33.0, "pairs": 4, "warning": "thin"}, ratios) is None
    assert calibration_against_pairs({"sd_pct": 33.0, "pairs": 4}, ratios[:2]) is None  # one degree of freedom: no test
    assert pair_noise({"sd_pct": 33.0, "pairs": 4}, ratios).source == "pairs"
    assert pair_noise({"sd_pct": 3.0, "pairs": 4}, ratios).source == "calibration"
    assert pair_noise(None, ratios).describe().startswith("noise ±")


# ------------------------------------------------------------------ the post-stress check


def check(pairs: list[tuple[float, float]], ratios: list[float], noise: Noise):
    return post_stress(
        pairs, ab_ratios=ratios, noise=noise, higher_is_better=True, floor_pct=1.0, ceiling_pct=20.0, tolerance_pct=5.0
    )


def test_a_neighbour_slows_both_arms_and_the_paired_check_sees_the_machine_not_the_option() -> None:
    a, b, ratios = ab()
    noise = pair_noise(None, ratios)
    now = list(zip(noisy(700, 2, seed=5), noisy(840, 2, seed=6), strict=True))  # 30 % slower, both arms
    verdict = check(now, ratios, noise)
    assert verdict.outcome == "ok" and verdict.change_pct is not None and abs(verdict.change_pct) < 7
    machine = shift(
        now,
        recent_a=a[-4:],
        recent_b=b[-4:],
        noise=noise_of(None, a, b),
        higher_is_better=True,
        floor_pct=1.0,
        ceiling_pct=20.0,
    )
    assert machine is not None and machine.slower and machine.pct < -25
    assert "a neighbour's load, or damage the revert does not undo" in machine.describe()


def test_the_options_own_loss_is_degraded_and_not_the_machines() -> None:
    a, b, ratios = ab()
    now = list(zip(noisy(1000, 2, seed=5), noisy(840, 2, seed=6), strict=True))  # the option's arm alone
    verdict = check(now, ratios, pair_noise(None, ratios))
    assert verdict.outcome == "degraded" and verdict.evidence.startswith("the option lost ground")
    machine = shift(
        now, recent_a=a[-4:], recent_b=b[-4:], noise=noise_of(None, a, b), higher_is_better=True, floor_pct=1.0,
        ceiling_pct=20.0,
    )  # fmt: skip
    assert machine is not None and not machine.slower


def test_no_pair_after_the_stress_is_degraded_and_a_wide_band_is_not_judged() -> None:
    _, _, ratios = ab()
    assert check([], ratios, pair_noise(None, ratios)).outcome == "degraded"
    wild = Noise(sd_pct=12.0, runs=8, source="pairs")
    verdict = check([(1000.0, 1200.0)], ratios, wild)
    assert verdict.outcome == "ok" and verdict.too_noisy and verdict.evidence.startswith("not judged, too noisy")


# ------------------------------------------------------------------ the rollback, paired


def paired(pairs: list[tuple[float, float]], ratios: list[float], a: list[float], *, state_ok: bool | None):
    return judge_paired(
        pairs,
        ab_ratios=ratios,
        noise=pair_noise(None, ratios),
        level_noise=noise_of(None, a),
        recent_a=a[-4:],
        reference=a[:3],
        spec=SPEC,
        higher_is_better=True,
        state_ok=state_ok,
    )


def test_a_good_revert_under_a_neighbours_load_is_verified_with_the_machine_said() -> None:
    a, _, ratios = ab()
    now = list(zip(noisy(650, 3, seed=8), noisy(780, 3, seed=9), strict=True))
    v = paired(now, ratios, a, state_ok=True)
    assert v["verified"] is True and v["performance_ok"] is True and v["machine_pct"] < -30
    assert "both arms moved together: the machine" in v["detail"]
    assert paired(now, ratios, a, state_ok=None)["verified"] is True  # the option's effect is large: the ratio tells


def test_a_revert_that_leaves_the_option_on_gives_no_ratio_and_is_not_verified() -> None:
    a, _, ratios = ab()
    now = list(zip(noisy(780, 3, seed=8), noisy(780, 3, seed=9), strict=True))  # both arms the option's level
    v = paired(now, ratios, a, state_ok=None)
    assert v["verified"] is False and "the arms' ratio is not the A/B's" in v["detail"]
    assert paired(now, ratios, a, state_ok=False)["verified"] is False


def test_an_option_without_an_effect_leaves_the_ratio_to_the_check() -> None:
    a, _, ratios = ab(effect=1.0)
    now = list(zip(noisy(700, 3, seed=8), noisy(700, 3, seed=9), strict=True))
    assert paired(now, ratios, a, state_ok=None)["verified"] is False
    v = paired(now, ratios, a, state_ok=True)
    assert v["verified"] is True and "the check says it is off" in v["detail"]


def test_slower_reads_the_judges_own_yardsticks() -> None:
    assert slower({"delta_recent_pct": -30.0, "band_pct": 5.0}, True)
    assert not slower({"delta_recent_pct": 30.0, "band_pct": 5.0}, True)
    assert slower({"drift_pct": 30.0, "band_pct": 5.0}, False)
    assert not slower({"delta_recent_pct": -3.0, "drift_pct": None, "band_pct": 5.0}, True)


def test_a_report_quotes_the_paired_checks_without_restating_the_ab_gain() -> None:
    a, _, ratios = ab()
    then = f"{(math.exp(sum(math.log(r) for r in ratios) / len(ratios)) - 1) * 100:+.1f}%"
    now = list(zip(noisy(650, 3, seed=8), noisy(780, 3, seed=9), strict=True))
    for text in (
        check(now, ratios, pair_noise(None, ratios)).evidence,
        paired(now, ratios, a, state_ok=True)["detail"],
    ):
        assert then in text and then not in plain(text) and "against the A/B's)" in plain(text)
        assert "noise ±" not in plain(text)
