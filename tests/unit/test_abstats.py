import math

import pytest

from tools.abstats import BenchRun, analyse, pair_order, paired_ci


def runs_from(a: list[float], b: list[float]) -> list[BenchRun]:
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        out.append(BenchRun(pair=i, arm="A", value=x, valid=True))
        out.append(BenchRun(pair=i, arm="B", value=y, valid=True))
    return out


A = [1912.4, 1930.8, 1898.1, 1921.5, 1905.9, 1926.7]
B = [2019.6, 2031.2, 1987.3, 2040.8, 2001.1, 2022.9]


def test_worked_example_matches_the_research_note():
    # research/bench-stats.md §2.3: +5.28% [+4.71%, +5.85%], cross-checked there with scipy ttest_rel.
    effect, low, high = paired_ci([b / a for a, b in zip(A, B, strict=True)])
    assert effect == pytest.approx(5.28, abs=0.01)
    assert low == pytest.approx(4.71, abs=0.01)
    assert high == pytest.approx(5.85, abs=0.01)
    result = analyse(runs_from(A, B), metric="output_tok_s")
    assert result.verdict == "improved" and result.pairs == 6


def test_lower_is_better_metrics_are_oriented_so_positive_means_better():
    result = analyse(runs_from(B, A), metric="p99_tpot", higher_is_better=False)
    assert result.effect_pct == pytest.approx(5.28, abs=0.01)
    assert result.verdict == "improved"


def test_regressed_no_effect_and_inconclusive():
    assert analyse(runs_from(B, A), metric="m").verdict == "regressed"
    flat = [x * (1 + 0.001 * (-1) ** i) for i, x in enumerate(A)]
    assert analyse(runs_from(A, flat), metric="m").verdict == "no_effect"
    noisy = [x * f for x, f in zip(A, [1.08, 0.95, 1.06, 0.97, 1.07, 0.96], strict=True)]
    result = analyse(runs_from(A, noisy), metric="m")
    assert result.verdict == "inconclusive"
    assert any("noise band" in r for r in result.reasons)


def test_invalid_runs_drop_their_pair_and_too_few_pairs_is_inconclusive():
    runs = runs_from(A, B)
    runs[1] = BenchRun(pair=0, arm="B", value=None, valid=False, reason="3 failed request(s)")
    result = analyse(runs, metric="m", min_pairs=5)
    assert result.pairs == 5 and result.invalid_runs == 1
    result = analyse(runs[:6], metric="m", min_pairs=5)
    assert result.verdict == "inconclusive" and result.effect_pct is None


def test_latency_guardrail_vetoes_an_improvement():
    runs = runs_from(A, B)
    for r in runs:
        r.guardrails = {"p99_tpot": 30.0 if r.arm == "A" else 33.0 + r.pair * 0.1}
    result = analyse(runs, metric="m", guardrail_pct=5.0)
    assert result.verdict == "inconclusive"
    assert result.guardrails["p99_tpot"] > 5.0


def test_abba_order():
    assert [pair_order(i) for i in range(3)] == [("A", "B"), ("B", "A"), ("A", "B")]


import scipy.stats as scipy_stats  # noqa: E402  (a dev dependency: the cross-checks must run, never skip)


def test_paired_t_ci_matches_scipy():
    import numpy as np

    rng = np.random.default_rng(7)
    for n in (2, 5, 6, 8, 10, 17, 31, 45):
        a = 800 * np.exp(rng.normal(0, 0.02, n))
        b = a * 1.05 * np.exp(rng.normal(0, 0.02, n))
        _effect, low, high = paired_ci(list(b / a))
        ci = scipy_stats.ttest_rel(np.log(b), np.log(a)).confidence_interval(0.95)
        assert low == pytest.approx((math.exp(ci.low) - 1) * 100, abs=1e-4)
        assert high == pytest.approx((math.exp(ci.high) - 1) * 100, abs=1e-4)


def test_wilcoxon_matches_scipy_exact():
    import numpy as np

    from tools.abstats import wilcoxon_p

    rng = np.random.default_rng(11)
    for n in (6, 7, 8, 10, 12):
        for _ in range(5):
            d = list(rng.normal(0.01, 0.02, n))
            assert wilcoxon_p(d) == pytest.approx(scipy_stats.wilcoxon(d, method="exact").pvalue, rel=1e-9)
    assert wilcoxon_p([math.log(b / a) for a, b in zip(A, B, strict=True)]) == pytest.approx(0.03125)


def test_report_line_names_the_method_and_the_cross_check():
    line = analyse(runs_from(A, B), metric="output_throughput").summary()
    assert line == (
        "output_throughput +5.3% (95% CI +4.7%…+5.9%, paired t, 6 interleaved pairs; Wilcoxon p=0.031) → improved"
    )


def _simulate(
    effect: float, *, design: str, reps: int, pairs: int = 8, cv: float = 0.015, drift: float = 0.04, seed: int = 1
) -> tuple[float, float]:
    """(CI coverage of the true effect, share of improved/regressed verdicts) under linear drift."""
    import random

    rng = random.Random(seed)
    covered = false = 0
    total_runs = 2 * pairs
    for _ in range(reps):
        if design == "interleaved":
            arms = [arm for i in range(pairs) for arm in pair_order(i)]
            pair_of = [i for i in range(pairs) for _ in range(2)]
        else:  # AAAA…BBBB: every A first, then every B
            arms = ["A"] * pairs + ["B"] * pairs
            pair_of = list(range(pairs)) * 2
        runs = []
        for t, (arm, p) in enumerate(zip(arms, pair_of, strict=True)):
            value = 800 * (1 + effect if arm == "B" else 1) * math.exp(drift * t / total_runs + rng.gauss(0, cv))
            runs.append(BenchRun(pair=p, arm=arm, value=value, valid=True))
        r = analyse(runs, metric="m")
        if r.ci_low is not None and r.ci_low <= effect * 100 <= r.ci_high:
            covered += 1
        if r.verdict in ("improved", "regressed") and effect == 0.0:
            false += 1
    return covered / reps, false / reps


def test_interleaving_keeps_coverage_and_false_verdicts_in_check_where_sequential_fails():
    coverage, _ = _simulate(0.05, design="interleaved", reps=400)
    _, false_rate = _simulate(0.0, design="interleaved", reps=400, seed=2)
    assert coverage >= 0.93
    assert false_rate <= 0.025
    seq_coverage, _ = _simulate(0.05, design="sequential", reps=400)
    _, seq_false = _simulate(0.0, design="sequential", reps=400, seed=2)
    assert seq_coverage < 0.5 and seq_false > 0.25


# ------------------------------------------------------------------ what a verdict could have seen


def test_t80_and_the_t_tail_match_scipy():
    from tools.abstats import t80, t_two_sided_p

    for df in (*range(1, 31), 31, 45, 100):
        assert t80(df) == pytest.approx(scipy_stats.t.ppf(0.8, df), abs=2e-6)
    for df in (1, 2, 3, 4, 7, 10, 29):
        for t in (0.0, 0.4, 1.3, 2.2, 6.0):
            assert t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(t, df), abs=1e-9)


def _runs_of(logs, base=1000.0):
    runs = []
    for i, d in enumerate(logs):
        runs += [
            BenchRun(pair=i, arm="A", value=base, valid=True),
            BenchRun(pair=i, arm="B", value=base * math.exp(d), valid=True),
        ]
    return runs


def test_an_effect_of_the_detectable_size_is_found_about_80_percent_of_the_time():
    import random

    from tools.abstats import detectable_pct

    sd, n, noise = 0.03, 5, 1.0
    effect = detectable_pct(sd, n, noise)
    r = random.Random(7)
    found = sum(
        analyse(
            _runs_of([math.log1p(effect / 100) + r.gauss(0, sd) for _ in range(n)]), metric="x", noise_pct=noise
        ).verdict
        == "improved"
        for _ in range(2000)
    )
    assert 0.75 < found / 2000 < 0.85, (effect, found)
    # Half the effect is mostly missed: the verdict says what it could not have seen.
    half = sum(
        analyse(
            _runs_of([math.log1p(effect / 200) + r.gauss(0, sd) for _ in range(n)]), metric="x", noise_pct=noise
        ).verdict
        == "improved"
        for _ in range(500)
    )
    assert half / 500 < 0.5


def test_an_inconclusive_result_says_how_many_pairs_the_expected_effect_needs():
    from tools.abstats import detectable_pct, pairs_for_effect

    logs = [0.02, -0.03, 0.05, -0.01, 0.04, 0.0]
    res = analyse(_runs_of(logs), metric="x", noise_pct=1.0, expected_pct=5.0)
    assert res.verdict == "inconclusive" and res.detectable_pct and res.detectable_pct > 5
    needed = res.pairs_for_expected
    sd = __import__("statistics").stdev(logs)
    assert needed == pairs_for_effect(5.0, sd, 1.0) and needed > 6
    assert detectable_pct(sd, needed, 1.0) <= 5.0 < detectable_pct(sd, needed - 1, 1.0)
    assert any(x.startswith("the expected +5% would need about") for x in res.reasons)
    # An expected effect inside the noise band cannot be called by any number of pairs.
    assert pairs_for_effect(0.5, sd, 1.0) is None
    assert analyse(_runs_of(logs), metric="x", noise_pct=1.0, expected_pct=0.5).pairs_for_expected is None


def test_an_option_that_changes_the_spread_is_reported_and_common_drift_is_not_a_change():
    import random

    from tools.abstats import spread_change

    r = random.Random(3)
    drift = [1000 * (1 + 0.02 * i) for i in range(12)]  # both arms drift together: not a spread change
    a = [d * (1 + r.gauss(0, 0.01)) for d in drift]
    same = [d * 1.05 * (1 + r.gauss(0, 0.01)) for d in drift]
    wide = [d * 1.05 * (1 + r.gauss(0, 0.04)) for d in drift]
    ratio, p = spread_change(a, same)
    assert p > 0.05
    ratio, p = spread_change(a, wide)
    assert p < 0.05 and ratio > 1
    runs = []
    for i, (x, y) in enumerate(zip(a, wide, strict=True)):
        runs += [BenchRun(pair=i, arm="A", value=x, valid=True), BenchRun(pair=i, arm="B", value=y, valid=True)]
    res = analyse(runs, metric="x", noise_pct=1.0)
    assert res.spread_changed and any("changes the run-to-run spread" in x for x in res.reasons)
    assert spread_change(a[:3], wide[:3]) is None  # too few pairs to judge: says nothing
    # On a drifting machine with equal noise in both arms, a change is called about 5 % of the time.
    false = 0
    for _ in range(1000):
        base = [1000 * (1 + 0.03 * i) for i in range(8)]
        x = [d * (1 + r.gauss(0, 0.02)) for d in base]
        y = [d * 1.1 * (1 + r.gauss(0, 0.02)) for d in base]
        false += spread_change(x, y)[1] < 0.05  # type: ignore[index]
    assert false / 1000 < 0.08


def test_a_policy_can_read_what_the_ab_could_have_seen():
    from policies.engine import PolicyEngine
    from policies.load import load_policy_text
    from tests.conftest import SAFETY

    policy = load_policy_text(
        "version: 1\nname: p\ngates:\n  safety:\n    rules:\n"
        "      - {id: ask-on-spread, when: spread_changed, decide: ask}\n"
        "      - {id: skip-blind, when: 'ab_verdict == \"no_effect\" && detectable_pct > 5.0', decide: skip}\n"
    )
    engine = PolicyEngine(policy)
    assert engine.evaluate("safety", {**SAFETY, "spread_changed": True}).rule == "ask-on-spread"
    blind = {**SAFETY, "verdict": "safe", "ab_verdict": "no_effect", "detectable_pct": 8.0}
    assert engine.evaluate("safety", blind).rule == "skip-blind"
    # A gate recorded before these facts existed reads their defaults.
    assert engine.evaluate("safety", {**SAFETY, "verdict": "safe", "ab_verdict": "no_effect"}).action == "ask"
