"""Interleaved A/B benchmark of the current option against the baseline.

Pairs alternate AB, BA, AB, … (ABBA counterbalancing) and the option is toggled with its own
apply/revert commands between arms, so drift cancels out. When to stop is `tools.sequential`'s: after every
pair from the first look (sequential, the default), or `pairs` and one extension to `max_pairs` (fixed-N).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Literal, Protocol

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.campaign import outside_level
from agent.context import RunContext
from agent.errors import CommandRefused, MutationInDoubt
from agent.exec.execute import run_effect, run_spec
from agent.journal import events as ev
from agent.ledger import Effect
from agent.models import BenchSpec, CommandSpec, Option
from agent.nodes.liveness import liveness
from agent.nodes.sweep import judged_at_level, search_capacity, summarize, sweep_summary
from agent.state import State, current
from tools.abstats import ABResult, Arm, BenchRun, analyse, pair_order, t975
from tools.benchparse import BenchParseError, BenchRecord, parse
from tools.failures import counted, one_line
from tools.noise import calibration_against_pairs
from tools.sequential import BROKEN_AFTER_PAIRS, FIRST_LOOK, Design, Planner, Step, drive
from tools.stress import Stall, stall
from tools.transport import CommandResult


def bench_once(
    ctx: RunContext,
    *,
    pair: int,
    arm: Arm,
    option: int | None,
    approved: list[str],
    purpose: str = "ab",
    restart: bool = True,
    only: list[str] | None = None,
    level: float | None = None,
) -> BenchRun:
    """One benchmark run of one arm (after the campaign's restart and warm-up), journaled; `level`: the sweep's
    level it runs at (None: the variable's value outside the sweep)."""
    spec = ctx.campaign.benchmark
    levels = {spec.sweep.var: spec.sweep.label(level)} if spec.sweep is not None and level is not None else None
    for step, command in (("restart", spec.restart if restart else None), ("warmup", spec.warmup)):
        if command:  # the same preparation in both arms, before every run
            prep = CommandSpec(run=command, on=spec.on, timeout=spec.timeout)
            prepared = run_spec(
                ctx,
                prep,
                purpose=f"{step}:{arm}",
                option=option,
                approved=approved,
                only=only,
                levels=levels,
                reads_only=step == "warmup",  # a warm-up only sends requests; a restart restarts
            )
            if not all(r.ok for r in prepared):
                run = BenchRun(
                    pair=pair, arm=arm, value=None, valid=False, reason=f"{step} command failed", level=level
                )
                ctx.journal.append(ev.BenchRunEvent(option=option, purpose=purpose, **_logged(run)))
                return run
    results = run_spec(
        ctx, spec, purpose=f"bench:{arm}", option=option, approved=approved, only=only, levels=levels, reads_only=True
    )
    stalls = {r.host: _stall(ctx, r, option=option, approved=approved) for r in results if r.timed_out}
    readings = [_reading(ctx, r, stalls.get(r.host), level=level) for r in results]
    if len(results) == 1:
        (result,), ((value, reason, guard, extra, counts),) = results, readings
        run = BenchRun(
            pair=pair,
            arm=arm,
            value=value if reason is None else None,
            valid=reason is None,
            reason=reason,
            exit_code=result.exit_code,
            duration_s=result.duration_s,
            artifact=result.artifact,
            guardrails=guard,
            readings=extra,
            level=level,
            stall=stalls[result.host][0] if result.host in stalls else None,
            **_requests([counts]),
        )
    else:
        run = _fleet_run(results, readings, pair=pair, arm=arm, level=level)
        run.stall = next((stalls[r.host][0] for r in results if r.host in stalls), None)
    ctx.journal.append(ev.BenchRunEvent(option=option, purpose=purpose, **_logged(run)))
    return run


def _logged(run: BenchRun) -> dict[str, Any]:
    """A run as the journal keeps it: a sweep's level and readings only where there are some (the lines of a
    campaign without a sweep read as they always have)."""
    data = run.model_dump(mode="json")
    for name in ("level", "readings", "stall"):
        if not data[name]:
            del data[name]
    if not run.failed_requests:  # the counts go on the line when a request failed (the arm's totals are on the
        for name in ("requests", "failed_requests", "errors"):  # assessment)
            del data[name]
    return data


# A host's requests in one run as its tool counted them: (attempted, failed, error texts); None when not counted.
Counts = tuple[int, int, list[str]] | None
Reading = tuple[float | None, str | None, dict[str, float], dict[str, float], Counts]


def _requests(counts: list[Counts]) -> dict[str, Any]:
    """A run's request counts over its hosts (the fields of BenchRun; none when no host's tool counted)."""
    known = [c for c in counts if c is not None]
    if not known:
        return {}
    errors = [e for _, _, es in known for e in es]
    return {"requests": sum(c[0] for c in known), "failed_requests": sum(c[1] for c in known), "errors": errors[:10]}


def _stall(ctx: RunContext, result: CommandResult, *, option: int | None, approved: list[str]) -> tuple[Stall, str]:
    """A benchmark run that overran its deadline: wedged, saturated or dead (tools/stress.py), from its
    output's last stretch and the campaign's health (and alive) checks on the host, once the client is gone."""
    health, process = liveness(ctx, result.host, purpose="health:benchmark", option=option, approved=approved)
    return stall(result, ctx.campaign.benchmark.timeout, alive=health, process=process)


def _reading(
    ctx: RunContext, result: CommandResult, stalled: tuple[Stall, str] | None = None, *, level: float | None = None
) -> Reading:
    """One host's benchmark output → (primary metric, why it is not a data point, guardrail metrics, the
    metrics a sweep's SLOs and fit read)."""
    spec = ctx.campaign.benchmark
    if result.timed_out:
        kind, why = stalled or ("wedge", "no progress seen")
        return None, f"benchmark exceeded its {spec.timeout:g}s deadline (killed): {kind.upper()} — {why}", {}, {}, None
    if result.exit_code != 0:
        return None, f"benchmark exit {result.exit_code}", {}, {}, None
    text = result.stdout_tail
    if result.stdout_truncated and result.artifact:
        text = ctx.artifacts.read(result.artifact)  # the result line may be beyond the in-memory tail
    try:
        record = parse(spec.parser, text, expected=spec.num_prompts, paths=spec.paths, patterns=spec.patterns)
    except BenchParseError as exc:
        return None, f"unreadable benchmark output: {exc}", {}, {}, None
    value, unusable = record.usable(spec.metric)
    guard = {g: v for g in spec.guardrails if (v := record.metric(g)) is not None}
    slo_metrics = [s.metric for s in spec.slos()]
    wanted = [*slo_metrics, *([spec.sweep.fit] if spec.sweep and spec.sweep.fit else [])]
    extra = {m: v for m in wanted if (v := record.metric(m)) is not None}
    # A run without a guardrail or SLO metric the campaign names cannot show that latency held: not a data point.
    no_guard = [g for g in spec.guardrails if g not in guard]
    no_slo = [m for m in dict.fromkeys(slo_metrics) if m not in extra and m not in no_guard]
    lacking = "; ".join(
        [
            *([f"the output has no guardrail metric {', '.join(no_guard)}"] if no_guard else []),
            *([f"the output has no SLO metric {', '.join(no_slo)}"] if no_slo else []),
        ]
    )
    reason = record.invalid_reason() or unusable or lacking or _off_level(spec, record, level)
    counts = record.requests()
    # A tool's error texts can be anything (a whole HTML error page): each is kept on one line and clipped.
    tally = (counts[0], counts[1], [one_line(e) for e in record.error_samples[:10]]) if counts is not None else None
    return (value if reason is None else None), reason, guard, extra, tally


def _off_level(spec: BenchSpec, record: BenchRecord, level: float | None) -> str | None:
    """A sweep run whose tool says it ran at another load than the level asked for (a hard-coded
    --max-concurrency, a variable that never reached the command) measured the wrong thing."""
    if level is None or spec.sweep is None or (ran := record.load.get(spec.sweep.var)) is None:
        return None
    if abs(ran - level) > 1e-9 * max(abs(level), 1.0):
        return f"the benchmark reports {spec.sweep.var} {ran:g}; the sweep asked for {spec.sweep.label(level)}"
    return None


def _fleet_run(
    results: list[CommandResult],
    readings: list[Reading],
    *,
    pair: int,
    arm: str,
    level: float | None = None,
) -> BenchRun:
    """A benchmark over many hosts: each host's reading kept, the run's value their mean. The run is a
    data point only when every host's is (a mean over whichever hosts answered would compare
    different fleets in A and B)."""
    hosts = {r.host: value for r, (value, _, _, _, _) in zip(results, readings, strict=True)}
    bad = [f"{r.host}: {reason}" for r, (_, reason, _, _, _) in zip(results, readings, strict=True) if reason]
    guard: dict[str, float] = {}
    for name in {g for _, _, gs, _, _ in readings for g in gs}:
        values = [gs[name] for _, _, gs, _, _ in readings if name in gs]
        guard[name] = statistics.fmean(values)
    extra: dict[str, float] = {}
    for name in {m for _, _, _, ms, _ in readings for m in ms}:
        extra[name] = statistics.fmean(ms[name] for _, _, _, ms, _ in readings if name in ms)
    ok = not bad
    return BenchRun(
        pair=pair,
        arm=arm,  # type: ignore[arg-type]
        value=statistics.fmean(v for v in hosts.values() if v is not None) if ok else None,
        valid=ok,
        reason=None if ok else f"{len(bad)} of {len(results)} hosts gave no reading ({'; '.join(bad[:3])})",
        exit_code=max((r.exit_code or 0 for r in results), default=0) if ok else None,
        duration_s=max(r.duration_s for r in results),
        artifact=None,
        guardrails=guard,
        hosts=hosts,
        readings=extra,
        level=level,
        **_requests([counts for *_, counts in readings]),
    )


class ABArms(Protocol):
    """The two arms of an interleaved A/B, as `measure_level` drives them: one option (`Arms`) or two configurations
    of the kept options (agent/nodes/confirm.py)."""

    option_id: int | None  # the option the runs' events name; None: no one option

    def set(self, arm: str) -> None: ...

    def run(self, pair: int, arm: Arm, level: float | None, purpose: str = "ab") -> BenchRun: ...


class Arms:
    """The option between the two arms of an A/B: the apply node left it on (arm B); each switch runs its
    apply or revert commands."""

    def __init__(self, ctx: RunContext, option: Option, approved: list[str]) -> None:
        self.ctx, self.option, self.approved = ctx, option, approved
        self.option_id: int | None = option.id
        self.applied = True
        # Every A/B run, an outlier pair's first measurement too: its requests were sent and their failures are
        # evidence even when the pair's throughput is measured again (a pair with failures reads low).
        self.ab_runs: list[BenchRun] = []

    def set(self, arm: str) -> None:
        want = arm == "B"
        if want == self.applied:
            return
        effect: Effect = "apply" if want else "revert"
        for results in run_effect(self.ctx, self.option, effect, purpose="toggle", approved=self.approved):
            if not all(r.ok for r in results):
                raise RuntimeError(f"could not switch to arm {arm}: {results[0].command!r} failed")
        self.applied = want

    def run(self, pair: int, arm: Arm, level: float | None, purpose: str = "ab") -> BenchRun:
        self.set(arm)
        run = bench_once(
            self.ctx, pair=pair, arm=arm, option=self.option.id, approved=self.approved, level=level, purpose=purpose
        )
        if purpose == "ab":  # not a capacity search's runs: each arm's are at its own levels
            self.ab_runs.append(run)
        return run


def measure_level(
    ctx: RunContext, state: State, arms: ABArms, level: float | None, target: int, *, sequential: bool | None = None
) -> tuple[list[BenchRun], ABResult | None]:
    """The interleaved A/B at one level, run by `tools.sequential.Planner` to its verdict: sequential (the default)
    looks after every pair from min(`target`, 3) on and stops when the verdict is decided, fixed-N
    (`benchmark.sequential: false`) runs `target` pairs and one extension when inconclusive; both measure a lone
    outlier pair again. `max_pairs` is the budget (`target` on a person's retry). None for the result when the
    first pairs gave no reading in either arm. `sequential` overrides the campaign's choice (the goal's confirmation
    is judged against a target the stopping rule does not know: fixed-N)."""
    spec = ctx.campaign.benchmark
    sequential = spec.sequential if sequential is None else sequential
    option = arms.option_id
    at: dict[str, Any] = {"level": level} if level is not None else {}  # no `level` on an unswept line
    retry = bool(state.get("retry_pairs"))
    design = Design(
        pairs=target,
        max_pairs=target if retry else max(target, spec.max_pairs),
        sequential=sequential,
        extend=not retry,
        # A sweep's level also fits the step-time model and judges SLOs from its runs: at least `pairs` of them.
        first=target if spec.sweep is not None else FIRST_LOOK,
    )
    # A sequential look may judge from its first look on: the always-valid sequence, not a minimum count, guards
    # the early verdicts.
    min_pairs = design.first_look if sequential else None
    planner = Planner(
        design, lambda rs: _analyse(ctx, list(rs), state, min_pairs=min_pairs), higher_is_better=spec.higher_is_better
    )

    def measure(pair: int) -> list[BenchRun]:
        return [arms.run(pair, arm, level) for arm in pair_order(pair)]

    def note(step: Step, runs: list[BenchRun]) -> None:
        if step.action == "pair":
            ctx.journal.append(ev.BenchProgressEvent(option=option, pair=step.pair + 1, of=step.of, **at))
        elif step.action == "rerun":
            # An outlier pair is measured again and the first measurement kept in the journal, not dropped.
            ctx.journal.append(
                ev.BenchOutlierEvent(option=option, pair=step.pair, values=step.old, action="re-run", **at)
            )
        elif step.action == "extend":
            ctx.journal.append(
                ev.BenchExtendedEvent(option=option, from_pairs=target, to_pairs=step.of, reason=step.reason, **at)
            )
        elif step.result is not None and sequential and step.stopped_by is not None:
            r = step.result
            ctx.journal.append(
                ev.BenchStoppedEvent(
                    option=option,
                    pairs=r.pairs_run or 0,
                    valid_pairs=r.pairs,
                    runs=r.bench_runs,
                    max_pairs=design.budget,
                    stopped_by=step.stopped_by,
                    verdict=r.verdict,
                    reason=step.reason,
                    cs_low=r.cs_low,
                    cs_high=r.cs_high,
                    **at,
                )
            )

    runs, step = drive(planner, measure, note)
    return runs, step.result


def benchmark(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["stress", "assess", "rollback", "rollback_gate"]]:
    ctx = runtime.context
    spec = ctx.campaign.benchmark
    option = ctx.campaign.option(current(state))
    key = str(option.id)
    approved = state.get("approved", [])
    target = state.get("retry_pairs") or spec.pairs
    ctx.journal.append(ev.PhaseEvent(phase="benchmark", option=option.id, pairs=target))
    arms = Arms(ctx, option, approved)
    levels: list[float | None] = list(spec.sweep.values) if spec.sweep else [None]
    measured: dict[float | None, tuple[list[BenchRun], ABResult | None]] = {}
    search = None
    try:
        for level in levels:
            if level is not None:
                ctx.journal.append(ev.PhaseEvent(phase="benchmark.level", option=option.id, pairs=target, level=level))
            measured[level] = measure_level(ctx, state, arms, level, target)
        if spec.sweep is not None and spec.sweep.search is not None:
            search = search_capacity(ctx, arms, spec.sweep.search, spec.slos(), option=option.id)
        arms.set("B")  # stress tests run against the candidate
    except MutationInDoubt as exc:
        from agent.nodes.apply import in_doubt

        ctx.journal.append(ev.BenchAbortedEvent(option=option.id, reason=str(exc)))
        return Command(goto="rollback_gate", update=in_doubt(key, exc))
    except (CommandRefused, RuntimeError) as exc:
        ctx.journal.append(ev.BenchAbortedEvent(option=option.id, reason=str(exc)))
        return Command(goto="rollback", update={"options": {key: {"outcome": "untested", "reasons": [str(exc)]}}})
    sweep = summarize(ctx, measured, search, analyse_runs=lambda rs: _analyse(ctx, rs, state)) if spec.sweep else None
    level = sweep["level"] if sweep else None
    runs, result = measured[level]
    if result is None:
        # Straight to the assessment: stressing an option nobody could measure proves nothing either.
        return Command(goto="assess", update=_broken(ctx, state, option.id, runs))
    if sweep is not None:
        result = judged_at_level(result, sweep)
    # A failed run of the option counts at every level of a sweep (a crash at 90 matters when judged at 60).
    every = [r for rs, _ in measured.values() for r in rs]
    # The readings the rollback, post-stress and kept-baseline checks compare with are those at the level
    # they run at (campaign.outside_level; the headline level may be another).
    outside = measured[outside_level(ctx.campaign)][0] if sweep is not None else runs
    ab = {
        **result.model_dump(mode="json"),
        "failed_candidate_runs": sum(1 for r in every if r.arm == "B" and not r.valid),
        "failed_baseline_runs": sum(1 for r in every if r.arm == "A" and not r.valid),
        "baseline_runs": sum(1 for r in every if r.arm == "A"),
        "a_values": [r.value for r in outside if r.arm == "A" and r.valid],
        "b_values": [r.value for r in outside if r.arm == "B" and r.valid],
        "invalid": [{"pair": r.pair, "arm": r.arm, "reason": r.reason, **_at(r)} for r in every if not r.valid],
        **_arm_requests(arms.ab_runs),
    }
    for arm, name in (("B", "candidate_stalls"), ("A", "baseline_stalls")):
        kinds = [r.stall for r in every if r.arm == arm and r.stall]
        if kinds:  # runs killed at their deadline, by why (wedge, saturated, dead), at every level
            ab[name] = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    hosts = per_host(ctx, runs, state)
    if hosts and outside is not runs:
        for name, values in per_host(ctx, outside, state).items():
            hosts[name].update(a_values=values["a_values"], b_values=values["b_values"])
    if hosts:
        ab["hosts"] = hosts
    extra: dict[str, Any] = {"hosts": hosts} if hosts else {}
    if sweep is not None:
        ab["sweep"] = sweep
        ab["level"] = level
        extra["level"] = level
        ctx.journal.append(ev.SweepResultEvent(option=option.id, summary=sweep_summary(sweep), **sweep))
    fields = {"option": option.id, "summary": result.summary(), **result.model_dump(mode="json"), **extra}
    ctx.journal.append(ev.ABResultEvent.model_validate(fields))
    return Command(goto="stress", update={"ab": {key: ab}})


def _arm_requests(runs: list[BenchRun]) -> dict[str, Any]:
    """Each arm's requests over its runs (every level of a sweep), for the assessment to compare; nothing when the
    tool counts none. A run with a few failed requests is still a data point: the failures are weighed here, arm
    against arm, not by voiding the run (tools/benchparse.BenchRecord.invalid_reason says why)."""
    arms = counted(runs)
    return {"requests": {arm: r.model_dump(mode="json") for arm, r in arms.items()}} if arms else {}


def _at(run: BenchRun) -> dict[str, float]:
    return {"level": run.level} if run.level is not None else {}


def _broken(ctx: RunContext, state: State, option_id: int, runs: list[BenchRun]) -> State:
    reasons = list(dict.fromkeys(r.reason or "invalid" for r in runs))
    why = (
        f"measurement broken: all {len(runs)} runs of the first {BROKEN_AFTER_PAIRS} pairs failed in both arms "
        f"({'; '.join(reasons[:3])}); the A/B stopped there"
    )
    result = _analyse(ctx, runs, state)
    ab = {
        **result.model_dump(mode="json"),
        "reasons": [why],
        "measurement_broken": True,
        "failed_candidate_runs": sum(1 for r in runs if r.arm == "B"),
        "failed_baseline_runs": sum(1 for r in runs if r.arm == "A"),
        "baseline_runs": sum(1 for r in runs if r.arm == "A"),
        "a_values": [],
        "b_values": [],
        "invalid": [{"pair": r.pair, "arm": r.arm, "reason": r.reason} for r in runs],
        **_arm_requests(runs),
    }
    ctx.journal.append(ev.BenchBrokenEvent(option=option_id, runs=len(runs), reasons=reasons[:5]))
    ctx.journal.append(ev.ABResultEvent(option=option_id, summary=why, **result.model_dump(mode="json")))
    return {"ab": {str(option_id): ab}}


def per_host(ctx: RunContext, runs: list[BenchRun], state: State | None = None) -> dict[str, dict[str, Any]]:
    """Each host's own A/B (its readings, paired as the runs were), for a benchmark over several hosts:
    the aggregate can hide a host where the option hurts."""
    names = sorted({h for r in runs for h in r.hosts})
    out = {}
    for name in names:
        mine = [
            BenchRun(pair=r.pair, arm=r.arm, value=r.hosts.get(name), valid=r.hosts.get(name) is not None)
            for r in runs
            if r.hosts
        ]
        result = _analyse(ctx, mine, state)
        ci = [result.ci_low, result.ci_high] if result.ci_low is not None else None
        out[name] = {
            "gain_pct": result.effect_pct,
            "ci": ci,
            "verdict": result.verdict,
            "pairs": result.pairs,
            "a_values": [r.value for r in mine if r.arm == "A" and r.valid],  # its own baseline readings
            "b_values": [r.value for r in mine if r.arm == "B" and r.valid],
        }
    return out


def _analyse(
    ctx: RunContext, runs: list[BenchRun], state: State | None = None, *, min_pairs: int | None = None
) -> ABResult:
    spec = ctx.campaign.benchmark
    calibration = (state or {}).get("calibration") or {}
    option = ctx.campaign.option(current(state)) if state and state.get("current") is not None else None

    def with_floor(floor: float | None) -> ABResult:
        return analyse(
            runs,
            metric=spec.metric,
            higher_is_better=spec.higher_is_better,
            min_pairs=min_pairs if min_pairs is not None else min(5, spec.pairs),
            noise_pct=spec.noise_pct,
            equivalence_pct=spec.equivalence_pct,
            noise_floor_pct=floor,
            max_pairs=spec.max_pairs,
            guardrail_pct=spec.guardrail_pct,
            expected_pct=option.expected_gain_pct if option else None,
        )

    result = with_floor(None if calibration.get("warning") else calibration.get("noise_floor_pct"))
    if spec.equivalence_pct is None and (overruled := calibration_against_pairs(calibration, result.ratios)):
        # An A/A calibration taken under a neighbour's load (or before one came) is not this A/B's noise: the
        # equivalence margin follows the pairs' own spread, and the verdict says so.
        own, why = overruled
        floor = round(t975(spec.max_pairs - 1) * own / math.sqrt(spec.max_pairs), 3)
        result = with_floor(floor)
        result = result.model_copy(
            update={
                "reasons": [
                    *result.reasons,
                    f"equivalence margin ±{result.equivalence_pct:g}% from this A/B's own pairs: {why}",
                ]
            }
        )
    return result
