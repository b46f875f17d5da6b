"""Load-sweep statistics on noisy data: SLO judgements that do not call a noisy mean met, capacities that
stop at the first failure, a least-squares fit whose CIs cover the truth as often as they say, and a
bounded capacity search."""

from __future__ import annotations

import math
import random

import pytest

from tools.sweep import Bracket, Slo, capacity, combine, fit_line, judge_slo


@pytest.mark.parametrize(
    ("text", "metric", "op", "bound"),
    [
        ("p99_tpot_ms <= 50", "p99_tpot", "<=", 50.0),
        ("p99_tpot<50", "p99_tpot", "<=", 50.0),
        ("  mean_ttft  <=  1.5e3 ", "mean_ttft", "<=", 1500.0),
        ("output_tok_s >= 700", "output_tok_s", ">=", 700.0),
    ],
)
def test_an_slo_reads_like_the_issue_writes_it(text: str, metric: str, op: str, bound: float) -> None:
    slo = Slo.parse(text)
    assert (slo.metric, slo.op, slo.bound) == (metric, op, bound)


@pytest.mark.parametrize("text", ["p99_tpot", "p99_tpot == 50", "<= 50", "p99_tpot <= fast", "p99 tpot <= 5", ""])
def test_a_malformed_slo_is_refused_with_the_form_to_use(text: str) -> None:
    with pytest.raises(ValueError, match="METRIC <= NUMBER"):
        Slo.parse(text)


def test_an_slo_is_met_only_when_the_whole_ci_is_inside_it() -> None:
    slo = Slo.parse("p99_tpot <= 100")
    assert judge_slo([90.0, 91.0, 89.5, 90.5], slo).judgement == "meets"
    assert judge_slo([110.0, 111.0, 109.0], slo).judgement == "fails"
    # A mean below the bound whose spread reaches past it is not evidence that it holds.
    noisy = judge_slo([80.0, 118.0, 95.0], slo)
    assert noisy.judgement == "unclear"
    assert noisy.ci is not None and noisy.ci[0] < 100 < noisy.ci[1]
    assert judge_slo([90.0], slo).judgement == "unclear"  # one reading: too little to judge
    assert "2 needed" in judge_slo([90.0], slo).why
    higher = Slo.parse("output_tok_s >= 700")
    assert judge_slo([750.0, 760.0, 755.0], higher).judgement == "meets"
    assert judge_slo([600.0, 610.0, 605.0], higher).judgement == "fails"


def test_on_a_noisy_server_at_its_limit_an_slo_is_called_met_rarely() -> None:
    """A true mean exactly at the bound, 5 % run-to-run noise: the 95 % rule calls it met in ≤ ~2.5 % of
    trials (one-sided), never in half of them as a bare mean would."""
    rng = random.Random(7)
    slo = Slo.parse("p99_tpot <= 100")
    trials = 2000
    met = sum(
        judge_slo([100.0 * math.exp(rng.gauss(0, 0.05)) for _ in range(4)], slo).judgement == "meets"
        for _ in range(trials)
    )
    assert met / trials < 0.05


def test_several_slos_combine_fail_first_then_unclear() -> None:
    slo = Slo.parse("p99_tpot <= 100")
    met, failed = judge_slo([90.0, 91.0, 90.0], slo), judge_slo([120.0, 121.0, 119.0], slo)
    unclear = judge_slo([90.0], slo)
    assert combine([met, met]) == "meets"
    assert combine([met, unclear]) == "unclear"
    assert combine([unclear, failed]) == "fails"
    assert combine([]) == "unclear"


def test_capacity_is_the_last_level_met_before_the_first_failure() -> None:
    assert capacity([(30, "meets"), (60, "meets"), (90, "fails")]) == 60
    assert capacity([(90, "fails"), (30, "meets"), (60, "meets")]) == 60  # order of the input does not matter
    # A level that meets again after a failure is noise or another regime, not capacity.
    assert capacity([(30, "meets"), (60, "fails"), (90, "meets")]) == 30
    assert capacity([(30, "unclear"), (60, "meets")]) == 60
    assert capacity([(30, "fails"), (60, "fails")]) is None


def test_the_fit_recovers_the_seed_step_time_model_and_its_cis_cover_it() -> None:
    """step = 18 ms + 1.05 ms × concurrency with 2 % noise, 5 runs at 30, 60, 90: the 95 % CIs of both
    coefficients cover the truth in about 95 % of simulated sweeps."""
    rng = random.Random(11)
    covered_a = covered_b = 0
    trials = 400
    for _ in range(trials):
        xs = [c for c in (30, 60, 90) for _ in range(5)]
        ys = [(18 + 1.05 * c) * math.exp(rng.gauss(0, 0.02)) for c in xs]
        fit = fit_line(xs, ys)
        assert not hasattr(fit, "reason")
        covered_a += fit.intercept_ci[0] <= 18 <= fit.intercept_ci[1]  # type: ignore[union-attr]
        covered_b += fit.slope_ci[0] <= 1.05 <= fit.slope_ci[1]  # type: ignore[union-attr]
    # Multiplicative noise is a little heteroscedastic; coverage stays close to nominal.
    assert 0.90 <= covered_a / trials <= 0.99
    assert 0.90 <= covered_b / trials <= 0.99


def test_a_fit_says_when_it_has_too_little_to_fit() -> None:
    one_level = fit_line([90, 90, 90], [112.0, 113.0, 111.0])
    assert getattr(one_level, "reason", "").startswith("3 reading(s) at 1 level(s)")
    two_points = fit_line([30, 90], [50.0, 112.0])
    assert "needs 3 over 2 levels" in getattr(two_points, "reason", "")
    nan = fit_line([30, 60, float("nan")], [50.0, float("inf"), 80.0])
    assert hasattr(nan, "reason")  # non-finite readings are dropped, leaving too few


def test_a_perfect_line_fits_exactly() -> None:
    fit = fit_line([10, 20, 30, 40], [28.5, 39.0, 49.5, 60.0])
    assert fit.slope == pytest.approx(1.05)  # type: ignore[union-attr]
    assert fit.intercept == pytest.approx(18.0)  # type: ignore[union-attr]
    assert fit.r2 == pytest.approx(1.0)  # type: ignore[union-attr]


def _search(limit: float, steps: int, *, low: float = 16, high: float = 128, integer: bool = True) -> Bracket:
    bracket = Bracket(low=low, high=high, integer=integer)
    for _ in range(steps):
        level = bracket.next_level()
        if level is None:
            break
        bracket.record(level, "meets" if level <= limit else "fails")
    return bracket


@pytest.mark.parametrize("limit", [16, 17, 40, 76.3, 96.4, 127, 128])
def test_the_search_brackets_the_capacity_within_its_steps(limit: float) -> None:
    bracket = _search(limit, steps=20)
    assert bracket.next_level() is None  # closed
    assert bracket.passing == math.floor(limit)
    assert bracket.probes <= 2 + math.ceil(math.log2(128 - 16))


def test_the_search_stops_at_its_step_budget_with_an_honest_bracket() -> None:
    bracket = _search(76.3, steps=4)
    assert bracket.probes == 4
    assert bracket.passing is not None and bracket.failing is not None
    assert bracket.passing <= 76.3 < bracket.failing


def test_a_server_that_fails_at_the_bottom_has_no_capacity_in_range() -> None:
    bracket = _search(10, steps=10)
    assert bracket.passing is None and bracket.failing == 16 and bracket.probes == 2
    top = _search(500, steps=10)
    assert top.passing == 128 and top.probes == 1  # meets at the top: no search needed


def test_an_unclear_probe_is_not_evidence_of_capacity() -> None:
    bracket = Bracket(low=16, high=128)
    bracket.record(128, "fails")
    bracket.record(16, "meets")
    bracket.record(72, "unclear")
    assert bracket.failing == 72 and bracket.passing == 16


def test_a_continuous_search_stops_at_one_percent() -> None:
    bracket = _search(3.3, steps=30, low=0.5, high=8.0, integer=False)
    assert bracket.next_level() is None
    assert bracket.passing is not None and bracket.failing is not None
    assert bracket.passing <= 3.3 < bracket.failing
    assert bracket.failing - bracket.passing <= 0.08 + 1e-9


def test_check_counts_every_level_and_the_search_in_its_estimate() -> None:
    from agent.campaign import load_campaign
    from agent.run.dryrun import estimate
    from tests.conftest import DEMO_DIR

    campaign = load_campaign(DEMO_DIR / "sweep.yaml").campaign
    e = estimate(campaign)
    # 3 verify runs at setup; 3 options × (5 pairs × 2 arms × 3 levels + a search meeting at the top: 2 × 3 runs)
    assert e.benchmark_runs_min == 3 + 3 * (2 * 5 * 3 + 2 * 3)
    # … at most 6 pairs a level and 6 probes of 3 runs an arm, plus 3 + 6 rollback runs and 3 pairs measured paired;
    # and at the end, all three kept, the confirmation's 3 A/Bs (the final configuration, #2 and #3 alone) of 6 pairs
    assert e.benchmark_runs_max == 3 + 3 * (2 * 6 * 3 + 2 * 6 * 3 + 3 + 6 + 2 * 3) + 3 * 2 * 6


def test_a_run_at_another_load_than_the_level_asked_is_not_a_data_point() -> None:
    from agent.campaign import load_campaign
    from agent.nodes.benchmark import _off_level
    from tests.conftest import DEMO_DIR
    from tools.benchparse import BenchRecord

    spec = load_campaign(DEMO_DIR / "sweep.yaml").campaign.benchmark
    ran_at_90 = BenchRecord(tool="vllm", load={"concurrency": 90.0})
    assert _off_level(spec, ran_at_90, 90.0) is None
    assert _off_level(spec, ran_at_90, 30.0) == "the benchmark reports concurrency 90; the sweep asked for 30"
    assert _off_level(spec, BenchRecord(tool="generic"), 30.0) is None  # a tool that does not say: not checked
    assert _off_level(spec, ran_at_90, None) is None  # outside the sweep


def _bench(**fields: object) -> object:
    from agent.models import BenchSpec

    base = {"run": "bench -c {{concurrency}}", "sweep": {"var": "concurrency", "values": [8, 16]}}
    return BenchSpec.model_validate({**base, **fields})


def test_the_step_time_fit_defaults_to_mean_tpot_only_where_the_parser_reports_it() -> None:
    assert _bench(parser="vllm-json").sweep.fit == "mean_tpot"  # type: ignore[attr-defined]
    assert _bench(parser="sglang-jsonl").sweep.fit == "mean_tpot"  # type: ignore[attr-defined]
    regex = _bench(parser="regex", metric="rps", patterns={"rps": "rps: ([0-9]+)"})
    assert regex.sweep.fit is None  # type: ignore[attr-defined]
    off = _bench(parser="vllm-json", sweep={"var": "concurrency", "values": [8, 16], "fit": None})
    assert off.sweep.fit is None  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"declare step_ms there \(or drop sweep\.fit\)"):
        _bench(
            parser="regex",
            metric="rps",
            patterns={"rps": "rps: ([0-9]+)"},
            sweep={"var": "concurrency", "values": [8, 16], "fit": "step_ms"},
        )


def test_the_variables_value_outside_the_sweep_must_be_one_of_its_levels(tmp_path) -> None:
    import shutil

    from agent.campaign import load_campaign, outside_level
    from tests.conftest import DEMO_DIR

    shutil.copy(DEMO_DIR / "simserve.py", tmp_path / "simserve.py")
    text = (DEMO_DIR / "sweep.yaml").read_text()
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    assert outside_level(load_campaign(path).campaign) == 90  # at: slo → the highest level
    path.write_text(text.replace("vars:\n", "vars:\n  concurrency: '60'\n"))
    assert outside_level(load_campaign(path).campaign) == 60
    path.write_text(text.replace("vars:\n", "vars:\n  concurrency: '75'\n"))
    with pytest.raises(ValueError, match=r"campaign.yaml:\d+: vars.concurrency: '75' is not a level of the sweep"):
        load_campaign(path)


def _judged(guardrails_at: object, *, slo_a: str | None = None, slo_b: str | None = None) -> tuple[str, list[str]]:
    from agent.nodes.sweep import judged_at_level
    from tools.abstats import ABResult

    def level(value: float, verdict: str, breached: list[str], a: str | None = None, b: str | None = None) -> dict:
        return {
            "level": value,
            "verdict": verdict,
            "breached": breached,
            "arms": {"A": {"slo": a}, "B": {"slo": b}},
        }

    sweep = {
        "var": "concurrency",
        "level": 60.0,
        "guardrails_at": guardrails_at,
        "reasons": [],
        "levels": [
            level(30.0, "improved", ["p99_tpot +9.0% (95% CI +6.0%…+12.0%)"]),
            level(60.0, "improved", [], slo_a, slo_b),
            level(90.0, "regressed", []),
        ],
    }
    head = ABResult(
        metric="output_tok_s",
        higher_is_better=True,
        pairs=6,
        ratios=[],
        effect_pct=8.0,
        ci_low=5.0,
        ci_high=11.0,
        verdict="improved",
        reasons=[],
        invalid_runs=0,
        noise_pct=1.0,
        equivalence_pct=1.0,
    )
    result = judged_at_level(head, sweep)
    assert result.reasons[-len(sweep["reasons"]) :] == sweep["reasons"]  # what the assessment repeats
    return result.verdict, sweep["reasons"]


def test_a_guardrail_broken_at_another_level_takes_the_win_away_where_the_sweep_says_it_must_hold() -> None:
    verdict, reasons = _judged("all")
    assert verdict == "inconclusive"
    assert any("breached at another level of the sweep: concurrency=30: p99_tpot +9.0%" in r for r in reasons)
    assert any("measured slower at concurrency=90" in r for r in reasons)
    assert _judged("goal")[0] == "improved"
    assert _judged(30.0)[0] == "inconclusive"
    assert _judged(90.0)[0] == "improved"  # the named level held; 30 is not guarded


def test_losing_the_slo_where_the_baseline_meets_it_is_a_regression_of_goodput() -> None:
    verdict, reasons = _judged("goal", slo_a="meets", slo_b="fails")
    assert verdict == "regressed"
    assert any("the option breaks the SLO at concurrency=60" in r for r in reasons)
    verdict, reasons = _judged("goal", slo_a="fails", slo_b="meets")
    assert verdict == "improved" and any("only the option meets the SLO" in r for r in reasons)
    assert _judged("goal", slo_a="meets", slo_b="unclear")[0] == "improved"  # unclear is no evidence either way


def test_guardrails_at_must_name_a_level_of_the_sweep() -> None:
    with pytest.raises(ValueError, match=r"guardrails_at \(75\) is not one of the sweep's values \(8, 16\)"):
        _bench(parser="vllm-json", sweep={"var": "concurrency", "values": [8, 16], "guardrails_at": 75})
    assert _bench(parser="vllm-json", sweep={"var": "concurrency", "values": [8, 16], "guardrails_at": 16})
