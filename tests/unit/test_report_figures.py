"""An option's one effect size and one noise figure (agent/report/figures.py), and `plain`: the reasons and
evidence a report quotes, without the figures of their own that the two stand for. The texts are made by
the real writers (the A/B's analysis and the rule brain's summary of it, the rollback verification, the
noise bands), so a change in their wording breaks these tests instead of leaking a second figure."""

from __future__ import annotations

import math
import random
import re
import statistics

import pytest

from agent.brain.rules import ab_summary
from agent.exec.verification import judge
from agent.models import RollbackSpec
from agent.report.figures import effect_of, noise_figure, other_figures, plain
from tools.abstats import BenchRun, analyse
from tools.noise import Noise, band, noise_of

# A figure the one noise figure stands for: a band, a per-run noise, what the pairs could have seen.
SECOND_NOISE = re.compile(r"±\d+(\.\d+)?%(?! ceiling)")


def runs(ratios: list[float], base: float = 1000.0) -> list[BenchRun]:
    out: list[BenchRun] = []
    for i, q in enumerate(ratios):
        out += [
            BenchRun(pair=i, arm="A", value=base, valid=True),
            BenchRun(pair=i, arm="B", value=base * q, valid=True),
        ]
    return out


def series(level: float, n: int, *, noise: float, seed: int, slope: float = 0.0) -> list[float]:
    r = random.Random(seed)
    return [(level + slope * i) * (1 + r.gauss(0, noise)) for i in range(n)]


RATIOS = [1.21, 1.24, 1.22, 1.25, 1.20, 1.23]


def test_the_effect_is_the_ab_gain_labelled_as_the_geometric_mean_of_the_paired_ratios() -> None:
    ab = analyse(runs(RATIOS), metric="output_tok_s").model_dump()
    effect = effect_of(ab)
    assert effect is not None and effect.pct == ab["effect_pct"]
    geometric = (math.exp(statistics.fmean(math.log(r) for r in RATIOS)) - 1) * 100
    assert effect.pct == pytest.approx(geometric, abs=1e-3)
    assert effect.line().startswith(f"gain {ab['effect_pct']:+.1f}% output_tok_s (geometric mean of the 6 paired ")
    assert f"95% CI {ab['ci_low']:+.1f}%…{ab['ci_high']:+.1f}%, paired t" in effect.line()
    assert effect.line().endswith("→ improved")
    # A latency: lower is better, and the ratio is the baseline's over the option's, so that + is better.
    slower = analyse(runs([0.8, 0.82, 0.79, 0.81, 0.8]), metric="p99_ms", higher_is_better=False).model_dump()
    latency = effect_of(slower)
    assert latency is not None and latency.pct > 0 and "baseline/option, the metric lower is better" in latency.label
    # A sweep's result is the one judged at its level, and says which.
    swept = effect_of({**ab, "level": 90}, var="concurrency")
    assert swept is not None and " output_tok_s at concurrency=90 (" in swept.line()
    assert effect_of(None) is None and effect_of({**ab, "effect_pct": None}) is None


def test_the_noise_is_the_spread_of_the_abs_own_pairs_else_the_calibration_and_says_which() -> None:
    ab = analyse(runs(RATIOS), metric="x").model_dump()
    noise = noise_figure(ab, {"sd_pct": 9.0, "pairs": 4})
    assert noise is not None and noise.source == "ab" and noise.pairs == 6
    assert noise.pct == pytest.approx(statistics.stdev(math.log(r) for r in RATIOS) * 100, abs=1e-3)
    assert noise.line() == f"noise ±{noise.pct:.1f}% (sd of the 6 paired differences in this A/B, log scale)"
    # An A/B without two pairs of its own (broken, or cut short): the A/A calibration, named as such.
    broken = analyse(runs([1.1]), metric="x").model_dump()
    fallback = noise_figure(broken, {"sd_pct": 9.0, "pairs": 4})
    assert fallback is not None and fallback.source == "calibration"
    assert fallback.line() == "noise ±9.0% (A/A calibration, 4 pairs; its A/B has fewer than 2 pairs of its own)"
    thin = noise_figure(analyse(runs([1.1, 1.2, 1.15]), metric="x").model_dump())
    assert thin is not None and thin.line().endswith("; only 3 pairs, a rough estimate)")
    # Never benchmarked (a no-go): nothing of it was measured, so no noise is its own.
    assert noise_figure(None, {"sd_pct": 9.0, "pairs": 4}) is None
    assert noise_figure(broken) is None


def test_the_other_figures_are_kept_for_the_detailed_report_each_named() -> None:
    ab = analyse(runs(RATIOS), metric="x").model_dump()
    named = {f["name"]: f for f in other_figures(ab, {"sd_pct": 2.2, "pairs": 4, "noise_floor_pct": 1.6})}
    assert {"ratio_of_means_pct", "detectable_pct", "calibration_sd_pct", "calibration_floor_pct"} <= set(named)
    assert named["detectable_pct"]["value"] == ab["detectable_pct"]
    assert all(f["label"] for f in named.values())


def test_the_rule_brains_ab_summary_leaves_only_what_the_figures_do_not_say() -> None:
    clear = analyse(runs(RATIOS), metric="output_tok_s").model_dump()
    said = ab_summary(clear)
    assert "could have seen ±" in said  # the brain's text, as journaled, has its own figures
    assert plain(said) == ""
    assert plain(f"kept by policy:keep-safe-win: {said}") == "kept by policy:keep-safe-win"
    # An inconclusive one keeps what the option's expected effect would need, and a change in spread.
    unclear = analyse(runs([1.05, 0.97, 1.06, 0.99, 1.04, 1.00]), metric="x", expected_pct=6).model_dump()
    left = plain(ab_summary(unclear))
    assert left.startswith("the expected +6% would need about") and not SECOND_NOISE.search(left)
    assert plain(ab_summary({**clear, "level": 60, "sweep": {"var": "concurrency"}})) == ""


@pytest.mark.parametrize("case", ["back", "own effect", "drifting", "noiseless"])
def test_a_rollbacks_detail_loses_its_bands_and_its_second_effect_and_keeps_the_rest(case: str) -> None:
    spec = RollbackSpec()
    reference = series(800, 3, noise=0.01, seed=1)
    a = series(800, 8, noise=0.01, seed=2)
    b = series(850, 8, noise=0.01, seed=3)
    after = series(800, 3, noise=0.01, seed=4)
    noise = noise_of(None, a, b)
    if case == "own effect":  # a noisy calibration: the option's own +6 % is below what the band resolves
        noise = Noise(sd_pct=2.5, runs=6, source="calibration")
    elif case == "drifting":  # the baseline arm slides; where its trend puts it now is judged too
        a = series(1000, 8, noise=0.005, seed=5, slope=-30)
        b = [x * 1.1 for x in a]
        after = series(1000 - 30 * 8.5, 3, noise=0.005, seed=6)
        noise = noise_of(None, a, b)
    elif case == "noiseless":
        noise = Noise(sd_pct=None, runs=0, source="none")
    v = judge(
        after, a_series=a, b_series=b, reference=reference, noise=noise, spec=spec, higher_is_better=True, state_ok=True
    )
    detail = v["detail"]
    assert SECOND_NOISE.search(detail), detail  # as the run wrote it
    shown = plain(detail)
    assert not SECOND_NOISE.search(shown), shown
    assert "per run (" not in shown and "(band" not in shown and not re.search(r"own effect \(", shown)
    assert shown.startswith("baseline ") and "vs the" in shown  # the comparisons themselves stay
    if case == "own effect":
        assert "the option's own effect is smaller than this comparison can resolve" in shown


def test_a_post_stress_band_and_a_bare_noise_description_are_cut_too() -> None:
    b = band(Noise(sd_pct=1.6, runs=15, source="spread"), 2, 4, floor_pct=1.0, ceiling_pct=20.0)
    said = f"after stress 848.3 vs 851.4 at the end of the A/B (-0.4%) over 2 run(s), band {b.describe()}"
    assert plain(said) == "after stress 848.3 vs 851.4 at the end of the A/B (-0.4%) over 2 run(s)"
    fixed = "after stress 848.3 vs 851.4 at the end of the A/B (-0.4%) over 2 run(s), band ±5% (fixed)"
    assert plain(fixed) == "after stress 848.3 vs 851.4 at the end of the A/B (-0.4%) over 2 run(s)"
    wide = f"not judged, too noisy: {said}; only a slowdown beyond ±22% could show"
    assert plain(wide).endswith("; only a larger slowdown could show") and "±" not in plain(wide)
    # Text without any such figure is left as it is (a stress run's own evidence, a blocker).
    assert plain("completed in 0.27s") == "completed in 0.27s"


@pytest.mark.parametrize(
    ("case", "state_ok", "by", "headline"),
    [
        ("back", True, ["check", "metric"], "verified by the check and the metric"),
        ("back", None, ["metric"], "verified by the metric (no check)"),
        ("own effect", True, ["check"], "verified by the option's check only (the metric cannot tell)"),
        ("own effect", None, [], "verified only loosely (no check, and the metric cannot tell the option apart)"),
    ],
)
def test_a_verified_rollback_says_what_verified_it(
    case: str, state_ok: bool | None, by: list[str], headline: str
) -> None:
    from agent.journal.events.option import rollback_verdict

    reference = series(800, 3, noise=0.01, seed=1)
    a, b = series(800, 8, noise=0.01, seed=2), series(850, 8, noise=0.01, seed=3)
    noise = noise_of(None, a, b)
    if case == "own effect":  # the option's own +6 % is below what the band resolves: the metric cannot tell
        noise = Noise(sd_pct=2.5, runs=6, source="calibration")
    v = judge(
        series(800, 3, noise=0.01, seed=4), a_series=a, b_series=b, reference=reference, noise=noise,
        spec=RollbackSpec(), higher_is_better=True, state_ok=state_ok,
    )  # fmt: skip
    assert v["verified_by"] == by
    assert rollback_verdict(v["verified"], v["verified_by"]) == headline
    assert rollback_verdict(True, None) == "verified"  # a journal from before `verified_by`: as it always said


def test_the_metric_is_not_claimed_where_it_only_saw_the_machine_or_could_not_tell() -> None:
    from agent.exec.verification import judge_paired

    # Faster than the baseline after the revert, the check saying it is off: "the machine, not the option".
    a, b = series(100, 8, noise=0.01, seed=2), series(80, 8, noise=0.01, seed=3)
    v = judge(
        series(130, 3, noise=0.01, seed=4), a_series=a, b_series=b, reference=[], noise=noise_of(None, a, b),
        spec=RollbackSpec(), higher_is_better=True, state_ok=True,
    )  # fmt: skip
    assert v["verified"] and v["verified_by"] == ["check"]
    # Paired, an option whose own effect (+1 %) this comparison cannot resolve: only the check speaks.
    pairs = [(100.0 + i % 3, 101.0 + i % 3) for i in range(6)]
    noise = Noise(sd_pct=1.0, runs=12, source="spread")
    v = judge_paired(
        pairs, ab_ratios=[1.01] * 6, noise=noise, level_noise=noise, recent_a=[100.0] * 6, reference=[],
        spec=RollbackSpec(), higher_is_better=True, state_ok=True,
    )  # fmt: skip
    assert v["verified"] and v["verified_by"] == ["check"], v["detail"]
