"""Stress the candidate. Each run has a deadline; overrunning it is a wedge (the process is killed)."""

from __future__ import annotations

import statistics
from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.errors import CommandRefused
from agent.journal import events as ev
from agent.models import STRESS_CHECK_TIMEOUT_S, CommandSpec, StressSpec
from agent.nodes.benchmark import bench_once
from agent.nodes.liveness import liveness
from agent.run.execute import run_spec
from agent.run.verification import recent
from agent.state import State, current
from tools.noise import band, delta_pct, noise_of, runs_for
from tools.stress import StressResult, classify
from tools.transport import Host


def stress(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = current(state)
    results: list[dict[str, Any]] = []
    ctx.journal.append(ev.Phase(phase="stress", option=option, scenarios=len(ctx.campaign.stress)))
    for spec in ctx.campaign.stress:
        for run in range(1, spec.runs + 1):
            alive: dict[str, tuple[bool | None, bool | None]] = {}  # host → (health passed, process there)
            try:
                outs = run_spec(
                    ctx,
                    spec,
                    purpose=f"stress:{spec.name}",
                    option=option,
                    approved=state.get("approved", []),
                    diagnose=_at_deadline(ctx, spec, option, state, alive),
                )
            except CommandRefused as exc:
                results.append(
                    {
                        "scenario": spec.name,
                        "run": run,
                        "host": "-",
                        "outcome": "crash",
                        "duration_s": 0.0,
                        "timeout_s": spec.timeout,
                        "evidence": f"not run: {exc}",
                    }
                )
                break
            for out in outs:
                health, process = alive.get(out.host, (None, None))
                r = classify(spec.name, run, out, spec.timeout, spec.crash_patterns, alive=health, process=process)
                r.diagnosis = out.diagnosis
                if r.outcome == "ok" and spec.check:
                    r = _checked(ctx, spec, r, option, state)
                if r.diagnosis:
                    r.evidence += f"; diagnosis before the kill: artifacts/{r.diagnosis}"
                ctx.journal.append(ev.StressResult(option=option, **r.model_dump(mode="json")))
                results.append(r.model_dump(mode="json"))
    results += degraded_check(ctx, state, option)
    return {"stress": {str(option): results}, "route": "assess"}


POST_STRESS_MAX_RUNS = 10


def degraded_check(ctx: RunContext, state: State, option: int) -> list[dict[str, Any]]:
    """A short benchmark of the candidate after the stress: is it still as fast as at the end of its A/B?

    Judged against the noise of this run (a band over the option's own recent B readings); when the
    configured runs are too few to see a slowdown below the ceiling, more are run (up to 10), and when
    even that is not enough the check says it could not judge instead of calling noise a degradation."""
    runs = ctx.campaign.benchmark.post_stress_runs
    ab = state.get("ab", {}).get(str(option), {})
    b_values = ab.get("b_values") or []
    if not runs or not b_values:
        return []
    rb = ctx.campaign.rollback
    before = recent(b_values)
    noise = noise_of(state.get("calibration"), ab.get("a_values") or [], b_values)
    enough = runs_for(noise, len(before), within_pct=rb.ceiling_pct, limit=POST_STRESS_MAX_RUNS) or POST_STRESS_MAX_RUNS
    values: list[float] = []
    for i in range(max(runs, min(enough, POST_STRESS_MAX_RUNS))):
        # No restart here: a restart would wipe exactly the damage this check is looking for.
        run = bench_once(
            ctx,
            pair=i,
            arm="B",
            option=option,
            approved=state.get("approved", []),
            purpose="post-stress",
            restart=False,
        )
        if run.valid and run.value is not None:
            values.append(run.value)
    mean_before = statistics.fmean(before)
    if not values:
        outcome, evidence = "degraded", "no valid benchmark run after the stress tests"
    else:
        delta = delta_pct(before, values)
        worse = -delta if ctx.campaign.benchmark.higher_is_better else delta
        b = band(noise, len(values), len(before), floor_pct=rb.floor_pct, ceiling_pct=rb.ceiling_pct)
        limit = b.pct if b.pct is not None else rb.tolerance_pct
        said = (
            f"after stress {statistics.fmean(values):.1f} vs {mean_before:.1f} at the end of the A/B ({delta:+.1f}%) "
            f"over {len(values)} run(s), band {b.describe() if b.pct is not None else f'±{limit:g}% (fixed)'}"
        )
        if worse > limit:  # only a slowdown is degradation; one beyond even a wide band is still measured
            outcome, evidence = "degraded", said
        elif b.too_noisy:
            # Not a verdict either way: no power to see a slowdown smaller than the band.
            outcome, evidence = "ok", f"not judged, too noisy: {said}; only a slowdown beyond ±{limit:.0f}% could show"
        else:
            outcome, evidence = "ok", said
    r = StressResult(
        scenario="post-stress benchmark",
        run=1,
        host=ctx.campaign.benchmark.on,
        outcome=outcome,
        duration_s=0.0,
        timeout_s=ctx.campaign.benchmark.timeout,
        evidence=evidence,
    )
    ctx.journal.append(ev.StressResult(option=option, **r.model_dump(mode="json")))
    return [r.model_dump(mode="json")]


def _at_deadline(
    ctx: RunContext, spec: StressSpec, option: int, state: State, alive: dict[str, tuple[bool | None, bool | None]]
):
    """The hook run on a host when its stress command overran, before the kill: the campaign's health
    checks (is the server still answering? — a wedge is alive, a dead server is not), its alive checks when
    they fail, and the diagnosis (returns its artifact, which the command's result keeps)."""

    def run(host: Host) -> str | None:
        # "diagnose:" runs while the overrunning command holds the host's turn (agent/run/dispatch.py).
        alive[host.name] = liveness(
            ctx, host.name, purpose=f"diagnose:health:{spec.name}", option=option, approved=state.get("approved", [])
        )
        if not spec.diagnose:
            return None
        diag = CommandSpec(run=spec.diagnose or "true", on=host.name, timeout=spec.diagnose_timeout)
        try:
            (result,) = run_spec(
                ctx, diag, purpose=f"diagnose:{spec.name}", option=option, approved=state.get("approved", [])
            )
        except CommandRefused:
            return None  # journaled as command.refused; the wedge is still killed and recorded
        ctx.journal.append(
            ev.StressDiagnosis(
                option=option, scenario=spec.name, host=host.name, exit=result.exit_code, artifact=result.artifact
            )
        )
        return result.artifact or None

    return run


def _checked(ctx: RunContext, spec: StressSpec, r: StressResult, option: int, state: State) -> StressResult:
    """The scenario finished: is the server clean afterwards? (the campaign's check command)"""
    check = CommandSpec(run=spec.check or "true", on=r.host, timeout=STRESS_CHECK_TIMEOUT_S)
    try:
        (result,) = run_spec(
            ctx, check, purpose=f"check:{spec.name}", option=option, approved=state.get("approved", [])
        )
    except CommandRefused as exc:
        return r.model_copy(update={"evidence": f"{r.evidence}; check not run: {exc}"})
    if result.ok:
        return r
    said = (result.stdout_tail + result.stderr_tail).strip().splitlines()[-1:] or [result.error or ""]
    return r.model_copy(
        update={
            "outcome": "leak",
            "evidence": f"the check after the scenario failed "
            f"({'timeout' if result.timed_out else f'exit {result.exit_code}'}): {said[0]}",
            "artifact": result.artifact or r.artifact,
        }
    )
