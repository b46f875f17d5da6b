"""Failed requests judged as evidence: the one-sided Fisher exact test against known values, the arms' tallies,
and which benchmark runs stay data points."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from scipy.stats import fisher_exact

from tests.conftest import FIXTURES
from tools.abstats import BenchRun
from tools.benchparse import BenchRecord, parse
from tools.failures import LEVEL, Requests, compare, fisher_greater, hypergeom_sf, tally


def exact_tail(x: int, total: int, marked: int, drawn: int) -> Fraction:
    """P(X >= x) of the hypergeometric distribution, in exact rational arithmetic."""
    hi = min(drawn, marked)
    return sum(
        (Fraction(math.comb(marked, k) * math.comb(total - marked, drawn - k), math.comb(total, drawn))
         for k in range(x, hi + 1)),
        Fraction(0),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("option_failed", "option_total", "baseline_failed", "baseline_total", "p"),
    [
        (1, 80, 0, 80, Fraction(1, 2)),  # one flake, none on the baseline: a coin toss which arm it fell in
        (2, 4, 0, 4, Fraction(3, 14)),  # C(6,2) / C(8,4) = 15/70
        (0, 80, 0, 80, Fraction(1)),
        (0, 80, 3, 80, Fraction(1)),
        (1, 1, 0, 1, Fraction(1, 2)),
    ],
)
def test_the_tail_on_hand_computed_tables(option_failed, option_total, baseline_failed, baseline_total, p):
    assert fisher_greater(option_failed, option_total, baseline_failed, baseline_total) == pytest.approx(float(p))


def test_twenty_of_eighty_against_none_is_the_exact_hypergeometric_term():
    # With every failure in the option's arm the tail is a single term: C(80,20) / C(160,20).
    expected = Fraction(math.comb(80, 20), math.comb(160, 20))
    assert fisher_greater(20, 80, 0, 80) == pytest.approx(float(expected), rel=1e-10)
    assert float(expected) < 1e-6


def test_agrees_with_scipy_and_exact_arithmetic_over_random_tables():
    r = random.Random(7)
    for _ in range(400):
        option_total, baseline_total = r.randint(1, 600), r.randint(1, 600)
        small = r.random() < 0.7  # mostly the few-failures tables that matter, some anywhere
        option_failed = r.randint(0, min(option_total, 25) if small else option_total)
        baseline_failed = r.randint(0, min(baseline_total, 25) if small else baseline_total)
        p = fisher_greater(option_failed, option_total, baseline_failed, baseline_total)
        table = [[option_failed, option_total - option_failed], [baseline_failed, baseline_total - baseline_failed]]
        reference = float(fisher_exact(table, alternative="greater").pvalue)
        assert p == pytest.approx(reference, rel=1e-9, abs=1e-300), table
    for x, total, marked, drawn in [(3, 40, 7, 12), (9, 40, 7, 12), (5, 300, 20, 150), (1, 30, 29, 15)]:
        assert hypergeom_sf(x, total, marked, drawn) == pytest.approx(float(exact_tail(x, total, marked, drawn)))


def test_counts_out_of_range_are_refused_and_huge_ones_stay_fast():
    with pytest.raises(ValueError, match="between 0 and"):
        fisher_greater(81, 80, 0, 80)
    with pytest.raises(ValueError, match="between 0 and"):
        fisher_greater(1, 80, -1, 80)
    # A billion requests an arm: summed from the side away from the mode, a few thousand terms.
    assert fisher_greater(500_000_000, 10**9, 500_000_000, 10**9) == pytest.approx(0.5, abs=1e-3)
    # Beyond what the tail is summed for, a higher rate is taken at its word.
    huge = compare(Requests(attempted=3 * 10**9, failed=2), Requests(attempted=3 * 10**9, failed=1))
    assert huge.higher and not huge.exact and "plain rates" in huge.describe()


def test_one_flake_is_a_fact_and_many_failures_are_a_verdict():
    flake = compare(
        Requests(attempted=480, failed=1, runs=6, errors=["stream parse error: Expecting ',' delimiter"]),
        Requests(attempted=480, failed=0, runs=6),
    )
    assert not flake.higher and flake.p == pytest.approx(0.5) and flake.level == LEVEL == 0.05
    said = flake.describe()
    assert said.startswith("failed requests: 1 of 480 with the option, 0 of 480 on the baseline")
    assert "p=0.5" in said and "not credibly more" in said and "stream parse error" in said
    many = compare(Requests(attempted=80, failed=20, runs=1, errors=["e1", "e2", "e3", "e4"]), Requests(attempted=80))
    assert many.higher and many.p < 1e-6
    said = many.describe()
    assert "20 of 80 with the option, 0 of 80 on the baseline" in said and "p=2.5e-07" in said
    assert "'e3'" in said and "'e4'" not in said  # at most three error texts in a reason


def test_an_arms_tally_sums_the_runs_its_tool_counted_and_keeps_distinct_errors():
    runs = [
        BenchRun(pair=0, arm="B", value=1.0, valid=True, requests=80, failed_requests=1, errors=["boom\n  at x"]),
        BenchRun(pair=1, arm="B", value=1.0, valid=True, requests=80, failed_requests=2, errors=["boom at x", "other"]),
        BenchRun(pair=2, arm="B", value=None, valid=False, reason="benchmark exit 1"),  # no counts: a failed run
        BenchRun(pair=0, arm="A", value=1.0, valid=True, requests=80, failed_requests=0),
    ]
    b = tally(runs, "B")
    assert (b.attempted, b.failed, b.runs, b.errors) == (160, 3, 2, ["boom at x", "other"])
    a = tally(runs, "A")
    assert (a.attempted, a.failed, a.runs, a.errors) == (80, 0, 1, [])
    one = BenchRun(pair=0, arm="B", value=1.0, valid=True, requests=1, failed_requests=1, errors=["x" * 500])
    long = tally([one], "B")
    assert len(long.errors[0]) == 200


def test_a_run_with_a_few_failed_requests_stays_a_data_point_with_its_counts():
    r = parse("vllm-json", (FIXTURES / "vllm_result_detailed_failures.json").read_text(), expected=12)
    assert r.failed == 3 and r.requests() == (12, 3) and r.invalid_reason() is None
    assert r.error_samples


def test_a_run_where_most_requests_failed_or_that_sent_other_requests_is_not_a_data_point():
    most = BenchRecord(tool="vllm", expected=80, completed=30, failed=50, output_tok_s=100.0)
    assert most.invalid_reason() == "50 of 80 requests failed: the run measured the failures, not the server"
    half = BenchRecord(tool="vllm", expected=80, completed=40, failed=40, output_tok_s=100.0)
    assert half.invalid_reason() is None
    other = BenchRecord(tool="vllm", expected=80, completed=70, failed=0, output_tok_s=100.0)
    assert other.invalid_reason() == "completed 70 of 80 requests"
    assert BenchRecord(tool="generic", output_tok_s=5.0).requests() is None  # a tool that counts nothing
    data = json.loads((FIXTURES / "vllm_result.json").read_text())
    data.pop("failed")
    data["completed"] = 590
    legacy = parse("vllm-json", json.dumps(data), expected=600)  # no 'failed': derived from num_prompts
    assert legacy.requests() == (600, 10) and legacy.invalid_reason() is None
