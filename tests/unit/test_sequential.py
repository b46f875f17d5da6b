"""The sequential A/B's decision loop (tools/sequential.py): Lai's t-mixture confidence sequence, each way an A/B
stops, honest outliers, fixed-N as it was, and the error rates by a moderate simulation."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

import pytest

from tools.abstats import ABResult, BenchRun, analyse, outlier_pairs, outliers, pair_order
from tools.sequential import (
    ALPHA,
    FUTILE_FROM,
    Design,
    Planner,
    conditional_power,
    confidence_sequence,
    drive,
    log_ratios,
    mixture_ratio,
)


class Scripted:
    """A target whose pair i reads B/A = ratios[i] (A = 1000, or `a[i]`), in the order pairs are asked for; an
    outlier pair measured again reads `again` (default: its ratio again)."""

    def __init__(self, ratios: Sequence[float], *, again: dict[int, float] | None = None, guard: float = 1.0) -> None:
        self.ratios, self.again, self.guard = list(ratios), again or {}, guard
        self.asked: list[int] = []

    def __call__(self, pair: int) -> list[BenchRun]:
        ratio = self.again.get(pair, self.ratios[pair]) if pair in self.asked else self.ratios[pair]
        self.asked.append(pair)
        value = {"A": 1000.0, "B": 1000.0 * ratio}
        tpot = {"A": 10.0, "B": 10.0 * self.guard * (1 + 0.001 * (pair % 3))}
        return [
            BenchRun(pair=pair, arm=arm, value=value[arm], valid=True, guardrails={"p99_tpot": tpot[arm]})
            for arm in pair_order(pair)
        ]


def judge(expected: float | None = None, *, min_pairs: int = 3, noise_pct: float = 1.0):
    def analyse_(runs: Sequence[BenchRun]) -> ABResult:
        return analyse(runs, metric="m", min_pairs=min_pairs, noise_pct=noise_pct, expected_pct=expected)

    return analyse_


def noisy(effect_pct: float, sd_pct: float, n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [math.exp(math.log1p(effect_pct / 100) + rng.gauss(0, sd_pct / 100)) for _ in range(n)]


def run(ratios: Sequence[float], design: Design | None = None, expected: float | None = None, **kw):
    design = design or Design()
    target = Scripted(ratios, **kw)
    min_pairs = design.first_look if design.sequential else min(5, design.pairs)
    runs, step = drive(Planner(design, judge(expected, min_pairs=min_pairs)), target)
    return runs, step, target


# ------------------------------------------------------------------ the confidence sequence


def test_the_sequence_is_where_the_mixture_ratio_stays_below_one_over_alpha():
    logs = [math.log(r) for r in noisy(5, 2, 8)]
    low, high = confidence_sequence(logs)
    assert low < statistics.fmean(logs) < high
    # Its ends are where Λ_n(μ0) = 1/α; inside it is below, outside above.
    assert mixture_ratio(logs, low) == pytest.approx(1 / ALPHA, rel=1e-6)
    assert mixture_ratio(logs, high) == pytest.approx(1 / ALPHA, rel=1e-6)
    assert mixture_ratio(logs, statistics.fmean(logs)) < 1 / ALPHA < mixture_ratio(logs, low - 0.01)
    # Wider than the fixed-sample t interval at the same n: the price of looking after every pair.
    sd = statistics.stdev(logs)
    assert high - low > 2 * 2.364624 * sd / math.sqrt(8)


def test_the_sequence_cannot_bound_two_pairs_nor_a_spread_of_zero_and_three_pairs_only_with_a_wide_mixture():
    assert confidence_sequence([0.1, 0.2]) == (-math.inf, math.inf)
    assert confidence_sequence([0.1, 0.1, 0.1, 0.1]) == (-math.inf, math.inf)
    three = [0.1, 0.2, 0.15]
    assert all(map(math.isfinite, confidence_sequence(three)))  # g = 30: 1 + 3g > 1/α
    assert confidence_sequence(three, g=10) == (-math.inf, math.inf)
    assert all(map(math.isfinite, confidence_sequence([*three, 0.12], g=10)))


def test_the_sequence_covers_the_true_mean_at_every_look_at_least_1_minus_alpha_of_the_time():
    rng = random.Random(7)
    misses, sims = 0, 1500
    for _ in range(sims):
        logs: list[float] = []
        for _ in range(30):
            logs.append(rng.gauss(0.05, 0.03))
            low, high = confidence_sequence(logs)
            if not low <= 0.05 <= high:
                misses += 1
                break
    # Ville: P(ever missing) ≤ α; 3 binomial SEs of simulation slack.
    assert misses / sims <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / sims)


def test_conditional_power_is_high_for_a_clear_trend_and_low_for_none():
    logs = [math.log(r) for r in noisy(20, 3, 5)]
    assert conditional_power(logs, statistics.fmean(logs), budget=10, margin=math.log(1.01)) > 0.99
    flat = [math.log(r) for r in noisy(0, 10, 5)]
    assert conditional_power(flat, 0.0, budget=10, margin=math.log(1.01)) < 0.05
    assert conditional_power(flat, 0.0, budget=5, margin=0.01) == 0.0  # nothing left to run


# ------------------------------------------------------------------ why an A/B stops


def test_a_clear_gain_stops_as_improved_before_pairs():
    runs, step, target = run(noisy(22, 1, 10))
    assert step.action == "stop" and step.stopped_by == "improved"
    result = step.result
    assert result is not None and result.verdict == "improved" and result.stopped_by == "improved"
    assert result.pairs_run == result.pairs == len(target.asked) < 6
    assert result.bench_runs == len(runs) == 2 * result.pairs
    assert result.cs_low is not None and result.cs_low > 1.0 and result.ci_low is not None
    assert result.cs_low < result.ci_low  # the always-valid sequence is the wider one
    assert "clears +1%" in step.reason and result.reasons[0].startswith(f"sequential: stopped after {result.pairs}")


def test_a_clear_loss_stops_as_regressed():
    _, step, _ = run(noisy(-20, 1, 10))
    assert step.stopped_by == "regressed" and step.result is not None and step.result.verdict == "regressed"
    assert step.result.pairs < 6


def test_an_effect_inside_the_equivalence_margin_stops_as_equivalent():
    _, step, _ = run(noisy(0, 0.1, 10, seed=3))
    assert step.stopped_by == "equivalent" and step.result is not None and step.result.verdict == "no_effect"
    assert "inside ±1%" in step.reason and step.result.pairs < 6


def test_a_gain_that_breaches_a_latency_guardrail_stops_there_not_as_a_win():
    _, step, _ = run(noisy(22, 1, 10), guard=1.3)
    assert step.stopped_by == "guardrail" and step.result is not None and step.result.verdict == "inconclusive"
    assert any(r.startswith("latency guardrail breached") for r in step.result.reasons)


def test_an_expected_gain_the_budget_cannot_show_is_futile():
    # ±14 % per pair: +10 % cannot clear the noise band within 10 pairs, even if it were there.
    _, step, _ = run(noisy(0, 14, 10, seed=5), expected=10)
    assert step.stopped_by == "futile" and step.result is not None and step.result.verdict == "inconclusive"
    assert step.result.pairs == FUTILE_FROM and "expected +10%" in step.reason
    assert "conditional power" in step.reason


def test_no_futility_before_five_pairs_nor_while_the_expected_gain_is_still_plausible():
    # A clear +8 % at low noise with +10 % expected: the sequence still holds +10 %, so it goes on and is a win.
    _, step, _ = run(noisy(8, 1, 10, seed=2), expected=10)
    assert step.stopped_by == "improved"


def test_without_an_expected_gain_a_flat_trend_is_futile_once_the_budget_cannot_clear_the_band():
    _, step, _ = run(noisy(0, 8, 10, seed=4))
    assert step.stopped_by == "futile" and "no expected gain" in step.reason


def test_the_fixed_sample_look_at_pairs_still_decides_as_fixed_n_would():
    # +6 % at ±3 %: the sequence is not clear at 5 pairs, the paired t at 6 is.
    ratios = noisy(6, 3, 10, seed=11)
    _, step, _ = run(ratios)
    assert analyse(_runs(ratios[:6]), metric="m").verdict == "improved"
    assert step.result is not None and step.result.verdict == "improved" and step.result.pairs == 6
    assert step.stopped_by == "improved" and "paired t at 6 pairs decides, as fixed-N would" in step.reason


def _runs(ratios: Sequence[float]) -> list[BenchRun]:
    target = Scripted(ratios)
    return [r for i in range(len(ratios)) for r in target(i)]


def test_an_undecided_ab_runs_to_its_budget_and_is_judged_there_by_the_paired_t():
    # +3 % at ±3 %: not clear at 6 pairs, a trend worth following, clear only at 10.
    ratios = noisy(3, 3, 10, seed=3)
    _, step, target = run(ratios, Design(pairs=6, max_pairs=10), expected=None)
    assert step.stopped_by == "budget" and len(target.asked) == 10
    assert step.result is not None and step.result.verdict == "improved" and step.result.cs_low is not None
    assert step.result.cs_low < 1.0  # the sequence alone would not have called it
    assert step.result is not None and step.result.verdict == analyse(_runs(ratios), metric="m").verdict
    assert "did not decide within the budget of 10 pairs" in step.reason


def test_a_benchmark_with_no_reading_in_either_arm_stops_as_broken_after_two_pairs():
    def broken(pair: int) -> list[BenchRun]:
        return [BenchRun(pair=pair, arm=arm, value=None, valid=False, reason="exit 1") for arm in pair_order(pair)]

    runs, step = drive(Planner(Design(), judge()), broken)
    assert step.stopped_by == "broken" and step.result is None and len(runs) == 4


# ------------------------------------------------------------------ fixed-N, as before


def test_fixed_n_runs_pairs_then_extends_once_when_inconclusive():
    clear = noisy(22, 1, 10)
    _, step, target = run(clear, Design(sequential=False))
    assert step.stopped_by == "fixed" and target.asked == list(range(6))
    assert step.result is not None and step.result.pairs == 6 and step.result.cs_low is None
    muddy = [1.03, 0.99, 1.04, 1.0, 1.02, 0.98, 1.05, 1.0, 1.03, 1.01]
    _, step, target = run(muddy, Design(sequential=False))
    assert target.asked == list(range(10)) and step.result is not None and step.result.pairs == 10
    assert step.stopped_by == "fixed" and not any(r.startswith("sequential") for r in step.result.reasons)
    # A person's retry (no extension) runs exactly its pairs.
    _, step, target = run(muddy, Design(pairs=8, max_pairs=8, sequential=False, extend=False))
    assert target.asked == list(range(8))


def test_fixed_n_measures_a_lone_outlier_pair_again_and_drops_its_first_reading():
    ratios = [1.05, 1.06, 1.04, 1.05, 1.055, 1.30]
    _, step, target = run(ratios, Design(sequential=False, max_pairs=6), again={5: 1.05})
    assert target.asked == [0, 1, 2, 3, 4, 5, 5]
    assert step.result is not None and max(step.result.ratios) < 1.1 and step.result.bench_runs == 14


# ------------------------------------------------------------------ honest outliers


def test_two_outlying_pairs_that_agree_are_flagged_not_measured_again():
    agree = [1.0, 1.65, 1.64, 1.01, 0.99, 1.0]
    runs = _runs(agree)
    assert outliers(runs).flagged == [1, 2] and outlier_pairs(runs) == []
    lone = _runs([1.05, 1.06, 1.04, 1.05, 1.055, 1.30])
    assert outliers(lone).rerun == [5] and outliers(lone).flagged == []
    for design in (Design(sequential=False, max_pairs=6), Design(max_pairs=6)):
        _, step, target = run(agree, design)
        assert len(set(target.asked)) == len(target.asked) >= 5  # nothing measured twice
        result = step.result
        assert result is not None and result.flagged_pairs == [1, 2]
        # The estimate keeps them; the CI without them is reported beside it.
        assert result.effect_pct is not None and result.effect_pct > 15
        assert result.without_flagged is not None and abs(result.without_flagged[0]) < 1
        assert any("without them" in r for r in result.reasons)


# ------------------------------------------------------------------ error control, by simulation


def test_false_keeps_stay_below_five_percent_and_wins_are_found_sooner():
    """600 A/Bs per true effect (normal noise 2-8 % per pair, seeded; about 2 s): sequential keeps no more than 5 % of
    options with no effect or a loss, and finds +20 % in fewer pairs than fixed-N's 6 on average."""
    rng = random.Random(2024)
    keeps = {0.0: 0, -2.0: 0}
    pairs_for_win: list[int] = []
    sims = 600
    for effect in (0.0, -2.0, 20.0):
        for i in range(sims):
            sd = (2, 4, 8)[i % 3]
            ratios = [math.exp(math.log1p(effect / 100) + rng.gauss(0, sd / 100)) for _ in range(10)]
            _, step, _ = run(ratios, expected=10)
            assert step.result is not None
            if effect <= 0:
                keeps[effect] += step.result.verdict == "improved"
            elif sd == 2:
                pairs_for_win.append(step.result.pairs_run or 0)
    for effect, kept in keeps.items():
        assert kept / sims <= 0.05, (effect, kept)
    assert statistics.fmean(pairs_for_win) < 5


def test_log_ratios_orient_lower_is_better_metrics():
    runs = _runs([1.1, 1.2])
    assert log_ratios(runs) == pytest.approx([math.log(1.1), math.log(1.2)])
    assert log_ratios(runs, higher_is_better=False) == pytest.approx([-math.log(1.1), -math.log(1.2)])


def test_a_fleet_does_not_stop_before_each_host_can_be_judged_nor_a_sweep_level_before_pairs():
    clear = noisy(22, 1, 10)
    fleet = Scripted(clear)

    def on_two_hosts(pair: int) -> list[BenchRun]:
        return [r.model_copy(update={"hosts": {"h1": r.value, "h2": r.value}}) for r in fleet(pair)]

    _, step = drive(Planner(Design(), judge()), on_two_hosts)
    assert step.stopped_by == "improved" and step.result is not None and step.result.pairs == 5
    _, step, target = run(clear, Design(first=6))  # a sweep's level: its runs fit a model too
    assert step.stopped_by == "improved" and len(target.asked) == 6
    _, step, target = run(clear)
    assert len(target.asked) == 3  # alone, three pairs of a clear +22 % are enough
