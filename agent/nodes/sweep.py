"""A load sweep's verdict: the A/B at each level, each arm's SLO capacity (from the levels, or from a
bounded search), the step-time model fitted per arm, and the level the goal is judged at.

The headline A/B — what the safety gate and the report call the option's gain — is the one at the goal's
level; the other levels can still take a win away (a guardrail breached at any level, when the sweep says
so) and the option losing the SLO where the baseline meets it is a regression of goodput.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agent.context import RunContext
from agent.journal import events as ev
from agent.models import SearchSpec
from tools.abstats import ABResult, Arm, BenchRun, breaches, pair_order
from tools.sweep import (
    Bracket,
    LevelResult,
    LineFit,
    NoFit,
    SearchStep,
    Slo,
    SloJudgement,
    SweepSummary,
    arm_at_level,
    capacity,
    capacity_gain_pct,
    combine,
    fit_line,
    judge_slo,
)


class ArmRunner(Protocol):
    def run(self, pair: int, arm: Arm, level: float | None, purpose: str = "ab") -> BenchRun: ...


def search_capacity(
    ctx: RunContext, arms: ArmRunner, search: SearchSpec, slos: Sequence[Slo], *, option: int
) -> dict[str, Any]:
    """Each arm's highest level meeting the SLOs, by bisection within `search.low`…`high`, at most `steps`
    probes an arm. The arms take turns (ABBA, like pairs) so that drift does not favour either; each probe
    is `runs` runs, judged on the 95 % CI of their mean, and journaled with the bracket it left."""
    brackets = {arm: Bracket(low=search.low, high=search.high, integer=search.integer) for arm in ("A", "B")}
    steps: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for turn in range(search.steps):
        for arm in pair_order(turn):
            bracket = brackets[arm]
            level = bracket.next_level()
            if level is None:
                continue
            runs = [arms.run(turn * search.runs + i, arm, level, purpose="search") for i in range(search.runs)]
            valid = [r for r in runs if r.valid]
            checks = [judge_slo([r.readings[s.metric] for r in valid if s.metric in r.readings], s) for s in slos]
            judgement = combine(checks)
            bracket.record(level, judgement)
            step = SearchStep(
                arm=arm,
                level=level,
                judgement=judgement,
                values=[r.value for r in valid if r.value is not None],
                passing=bracket.passing,
                failing=bracket.failing,
            )
            steps[arm].append(step.model_dump(mode="json"))
            why = "; ".join(c.why for c in checks)
            ctx.journal.append(ev.SweepSearchEvent(option=option, why=why, **step.model_dump(mode="json")))
    return {
        arm: {
            "capacity": b.passing,
            "failing": b.failing,
            "closed": b.next_level() is None,
            "probes": b.probes,
            "steps": steps[arm],
        }
        for arm, b in brackets.items()
    }


def summarize(
    ctx: RunContext,
    measured: dict[float | None, tuple[list[BenchRun], ABResult | None]],
    search: dict[str, Any] | None,
    *,
    analyse_runs: Callable[[list[BenchRun]], ABResult],
) -> dict[str, Any]:
    spec = ctx.campaign.benchmark
    sweep = spec.sweep
    assert sweep is not None
    slos = spec.slos()
    levels: list[LevelResult] = []
    for level, (runs, result) in measured.items():
        assert level is not None
        arms = {}
        for arm in ("A", "B"):
            valid = [r for r in runs if r.arm == arm and r.valid and r.value is not None]
            arms[arm] = arm_at_level([r.value for r in valid if r.value is not None], [r.readings for r in valid], slos)
        if result is None:
            levels.append(LevelResult(level=level, verdict="inconclusive", broken=True, arms=arms))
            continue
        levels.append(
            LevelResult(
                level=level,
                verdict=result.verdict,
                effect_pct=result.effect_pct,
                ci=[result.ci_low, result.ci_high]
                if result.ci_low is not None and result.ci_high is not None
                else None,
                pairs=result.pairs,
                detectable_pct=result.detectable_pct,
                breached=breaches(result.guardrail_effects, spec.guardrail_pct),
                arms=arms,
            )
        )
    reasons: list[str] = []
    caps: dict[str, float | None] = {"A": None, "B": None}
    source = None
    if slos:
        source = "levels"
        for arm in ("A", "B"):
            caps[arm] = capacity([(lv.level, lv.arms[arm].slo or "unclear") for lv in levels])
        if search is not None:
            source = "search"
            caps = {arm: search[arm]["capacity"] for arm in ("A", "B")}
    level = _judged_level(ctx, levels, reasons)
    fits: dict[str, dict[str, Any]] = {}
    if sweep.fit:
        everything = [r for runs, _ in measured.values() for r in runs if r.valid]
        for arm in ("A", "B"):
            mine = [r for r in everything if r.arm == arm and sweep.fit in r.readings and r.level is not None]
            fit: LineFit | NoFit = fit_line([r.level or 0.0 for r in mine], [r.readings[sweep.fit] for r in mine])
            fits[arm] = {"metric": sweep.fit, **fit.model_dump(mode="json")}
    return SweepSummary(
        var=sweep.var,
        values=list(sweep.values),
        level=level,
        at=ctx.campaign.goal.at,
        slo=[str(s) for s in slos],
        levels=levels,
        capacity=caps,
        capacity_source=source,
        capacity_gain_pct=capacity_gain_pct(caps["A"], caps["B"]),
        fit=fits,
        search=search,
        guardrails_at=sweep.guardrails_at,
        reasons=reasons,
    ).model_dump(mode="json")


def _judged_level(ctx: RunContext, levels: list[LevelResult], reasons: list[str]) -> float:
    sweep = ctx.campaign.benchmark.sweep
    assert sweep is not None
    at = ctx.campaign.goal.at
    if isinstance(at, int | float):
        return float(at)
    if at == "slo":
        judged: list[tuple[float, SloJudgement]] = [(lv.level, lv.arms["A"].slo or "unclear") for lv in levels]
        base = capacity(judged)
        if base is not None:
            reasons.append(
                f"judged at {sweep.var}={sweep.label(base)}: the highest level where the baseline meets the SLO"
            )
            return base
        reasons.append(
            f"the baseline meets the SLO at no level swept ({', '.join(f'{sweep.label(v)}: {j}' for v, j in judged)}); "
            f"judged at the lowest, {sweep.var}={sweep.label(levels[0].level)}"
        )
        return levels[0].level
    return levels[-1].level


def judged_at_level(result: ABResult, sweep: dict[str, Any]) -> ABResult:
    """The A/B at the goal's level, with what the other levels and the SLOs say about it: a win is not a
    win when a guardrail broke at another level (with `guardrails_at: all`), and an option that loses the
    SLO where the baseline meets it has lost goodput — a regression, whatever its raw throughput. What the
    sweep adds is also kept in `sweep["reasons"]`, which the assessment repeats."""
    level = sweep["level"]
    var = sweep["var"]
    verdict, added = result.verdict, []
    here = next(lv for lv in sweep["levels"] if lv["level"] == level)
    guarded = sweep["guardrails_at"]
    if guarded != "goal":
        others = [lv for lv in sweep["levels"] if lv["level"] != level and guarded in ("all", lv["level"])]
        elsewhere = [f"{var}={_label(lv['level'])}: {b}" for lv in others for b in lv["breached"]]
        if elsewhere:
            added.append(f"latency guardrail breached at another level of the sweep: {'; '.join(elsewhere)}")
            if verdict == "improved":
                verdict = "inconclusive"
    a, b = here["arms"]["A"], here["arms"]["B"]
    if a.get("slo") == "meets" and b.get("slo") == "fails":
        verdict = "regressed"
        added.append(f"goodput: the option breaks the SLO at {var}={_label(level)}, where the baseline meets it")
    elif b.get("slo") == "meets" and a.get("slo") == "fails":
        added.append(f"goodput: only the option meets the SLO at {var}={_label(level)}")
    regressed = [_label(lv["level"]) for lv in sweep["levels"] if lv["verdict"] == "regressed" and lv["level"] != level]
    if regressed:
        added.append(f"the option measured slower at {var}={', '.join(regressed)}")
    sweep["reasons"] = [*sweep["reasons"], *added]
    return result.model_copy(update={"verdict": verdict, "reasons": [*result.reasons, *sweep["reasons"]]})


def _label(level: float) -> str:
    return f"{level:g}"


def sweep_summary(sweep: dict[str, Any]) -> str:
    return SweepSummary.model_validate(sweep).describe()
