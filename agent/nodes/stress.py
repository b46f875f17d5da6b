"""Stress the candidate. Each run has a deadline; overrunning it is a wedge (the process is killed)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.campaign import outside_level
from agent.context import RunContext
from agent.errors import CommandRefused
from agent.exec.execute import run_spec
from agent.exec.verification import recent
from agent.journal import events as ev
from agent.models import STRESS_CHECK_TIMEOUT_S, CommandSpec, StressSpec
from agent.nodes.benchmark import Arms, bench_once
from agent.nodes.liveness import liveness
from agent.state import State, current
from tools.noise import noise_of, runs_for
from tools.paired import PAIRED_K, POST_STRESS_MAX_PAIRS, oriented, pair_noise, post_stress, shift
from tools.stress import StressResult, classify
from tools.transport import Host


def stress(state: State, runtime: Runtime[RunContext]) -> State:
    ctx = runtime.context
    option = current(state)
    results: list[dict[str, Any]] = []
    ctx.journal.append(ev.PhaseEvent(phase="stress", option=option, scenarios=len(ctx.campaign.stress)))
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
                ctx.journal.append(ev.StressResultEvent(option=option, **r.model_dump(mode="json")))
                results.append(r.model_dump(mode="json"))
    results += degraded_check(ctx, state, option)
    return {"stress": {str(option): results}}


def degraded_check(ctx: RunContext, state: State, option: int) -> list[dict[str, Any]]:
    """A short interleaved benchmark after the stress: has the option lost ground to the baseline beside it?

    `post_stress_runs` pairs of runs (B A, A B, …: the first run is the option's arm as the stress left it, before
    any toggle), the option toggled by its own revert/apply commands as in the A/B (`Arms`), and no restart (a
    restart would wipe exactly the damage this check is looking for). The arms' ratio now is judged against the
    A/B's own ratio with the noise of its pairs (`tools.paired`): a neighbour's load moves both arms and is not
    the option's degradation. Both arms slower than at the end of the A/B is reported as what it is — the whole
    machine slower, a neighbour or damage the revert does not undo — and makes the safety verdict `unknown`
    (agent/brain/rules.py), not `unsafe`. When the configured pairs are too few to see a loss below the
    rollback ceiling, more are run (up to POST_STRESS_MAX_PAIRS), and when even that is not enough the check
    says it could not judge. The option ends applied, as the stress left it."""
    runs = ctx.campaign.benchmark.post_stress_runs
    ab = state.get("ab", {}).get(str(option), {})
    a_values, b_values = ab.get("a_values") or [], ab.get("b_values") or []
    if not runs or not b_values:
        return []
    rb, hib = ctx.campaign.rollback, ctx.campaign.benchmark.higher_is_better
    ratios = ab_ratios(ctx, ab)
    noise = pair_noise(state.get("calibration"), ratios)
    limit = POST_STRESS_MAX_PAIRS
    enough = runs_for(noise, len(ratios), k=PAIRED_K, within_pct=rb.ceiling_pct, limit=limit) or limit
    approved = state.get("approved", [])
    arms = Arms(ctx, ctx.campaign.option(option), approved)
    pairs: list[tuple[float, float]] = []
    broken: str | None = None
    try:
        for i in range(max(runs, min(enough, limit))):
            got: dict[str, float | None] = {}
            for arm in ("B", "A") if i % 2 == 0 else ("A", "B"):  # starts and (with an even count) ends applied
                arms.set(arm)
                run = bench_once(
                    ctx, pair=i, arm=arm, option=option, approved=approved, purpose="post-stress", restart=False
                )
                got[arm] = run.value if run.valid else None
            a, b = got["A"], got["B"]
            if a is not None and b is not None:
                pairs.append((a, b))
        arms.set("B")
    except (CommandRefused, RuntimeError) as exc:  # a toggle failed (or was cut short): judged on what there is
        broken = f"the check could not switch arms after the stress: {exc}"
    verdict = post_stress(
        pairs,
        ab_ratios=ratios,
        noise=noise,
        higher_is_better=hib,
        floor_pct=rb.floor_pct,
        ceiling_pct=rb.ceiling_pct,
        tolerance_pct=rb.tolerance_pct,
    )
    outcome, evidence = verdict.outcome, verdict.evidence
    extra: dict[str, Any] = {"pairs": verdict.pairs}
    if verdict.change_pct is not None:
        extra["change_pct"] = verdict.change_pct
    if broken:
        outcome, evidence = "degraded", f"{broken}; {evidence}"
    machine = shift(
        pairs,
        recent_a=recent(a_values),
        recent_b=recent(b_values),
        noise=noise_of(state.get("calibration"), a_values, b_values),
        higher_is_better=hib,
        floor_pct=rb.floor_pct,
        ceiling_pct=rb.ceiling_pct,
    )
    if machine is not None:
        extra["machine_pct"] = machine.pct
        if machine.slower:
            extra["machine"] = machine.describe()
            evidence = f"{evidence}; {machine.describe()}"
    r = StressResult(
        scenario="post-stress benchmark",
        run=1,
        host=ctx.campaign.benchmark.on,
        outcome=outcome,  # type: ignore[arg-type]
        duration_s=0.0,
        timeout_s=ctx.campaign.benchmark.timeout,
        evidence=evidence,
    )
    ctx.journal.append(ev.StressResultEvent(option=option, **r.model_dump(mode="json"), **extra))
    return [{**r.model_dump(mode="json"), **extra}]


def ab_ratios(ctx: RunContext, ab: dict[str, Any]) -> list[float]:
    """The A/B's own oriented pair ratios at the level the check runs at: its pairs' (a sweep judged at another
    level than the one outside it has only the arms' readings there, compared as their means)."""
    if ab.get("ratios") and (not ab.get("sweep") or ab.get("level") == outside_level(ctx.campaign)):
        return list(ab["ratios"])
    a, b = ab.get("a_values") or [], ab.get("b_values") or []
    n = min(len(a), len(b))
    hib = ctx.campaign.benchmark.higher_is_better
    return [oriented(x, y, hib) for x, y in zip(a[:n], b[:n], strict=True)]


def _at_deadline(
    ctx: RunContext, spec: StressSpec, option: int, state: State, alive: dict[str, tuple[bool | None, bool | None]]
):
    """The hook run on a host when its stress command overran, before the kill: the campaign's health
    checks (is the server still answering? — a wedge is alive, a dead server is not), its alive checks when
    they fail, and the diagnosis (returns its artifact, which the command's result keeps)."""

    def run(host: Host) -> str | None:
        # "diagnose:" runs while the overrunning command holds the host's turn (agent/exec/dispatch.py).
        alive[host.name] = liveness(
            ctx, host.name, purpose=f"diagnose:health:{spec.name}", option=option, approved=state.get("approved", [])
        )
        if not spec.diagnose:
            return None
        diag = CommandSpec(run=spec.diagnose or "true", on=host.name, timeout=spec.diagnose_timeout)
        try:
            (result,) = run_spec(
                ctx,
                diag,
                purpose=f"diagnose:{spec.name}",
                option=option,
                approved=state.get("approved", []),
                reads_only=True,
            )
        except CommandRefused:
            return None  # journaled as command.refused; the wedge is still killed and recorded
        ctx.journal.append(
            ev.StressDiagnosisEvent(
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
            ctx, check, purpose=f"check:{spec.name}", option=option, approved=state.get("approved", []), reads_only=True
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
