import math

import pytest

from tools.abstats import BenchRun, analyse, pair_order, paired_ci, within_band


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


def test_abba_order_and_band():
    assert [pair_order(i) for i in range(3)] == [("A", "B"), ("B", "A"), ("A", "B")]
    ok, delta = within_band([100.0, 101.0], [99.0, 100.0], 5.0)
    assert ok and math.isclose(delta, -0.995, abs_tol=0.01)
    assert not within_band([100.0], [90.0], 5.0)[0]
