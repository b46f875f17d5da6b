"""Bring the hosts to the baseline, then plan."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.campaign import with_proposals
from agent.context import RunContext
from agent.errors import CommandRefused
from agent.exec.execute import run_spec, upload
from agent.exec.planning import upload_class, upload_command
from agent.journal import events as ev
from agent.nodes.benchmark import bench_once
from agent.state import CalibratedOption, Calibration, State
from tools.abstats import t975
from tools.noise import MIN_RUNS
from tools.transport import CommandResult


def setup(state: State, runtime: Runtime[RunContext]) -> Command[Literal["plan", "confirm"]]:
    ctx = runtime.context
    approved = state.get("approved", [])
    failures: list[CommandResult] = []
    for up in ctx.campaign.baseline.upload:
        dest = up.dest or Path(up.src).name
        verdict = upload_class(up.src, dest)
        if verdict.klass != "allow" and upload_command(up.src, dest) not in approved:
            message = f"baseline upload of {up.src} refused: {verdict.reason} (not approved at the command gate)"
            ctx.journal.append(ev.CommandRefusedEvent(purpose="upload", command=verdict.part, klass=verdict.klass))
            return _failed(message)
        errors = upload(ctx, ctx.campaign_dir / up.src, dest, up.on)
        if errors:
            message = f"baseline upload of {up.src} failed: {errors[0]}"
            ctx.journal.append(ev.SetupFailedEvent(error=message))
            return _failed(message)
    try:
        for spec in ctx.campaign.baseline.setup:
            failures += [r for r in run_spec(ctx, spec, purpose="setup", approved=approved) if not r.ok]
        for spec in ctx.campaign.baseline.health:
            failures += [
                r for r in run_spec(ctx, spec, purpose="health", approved=approved, reads_only=True) if not r.ok
            ]
    except CommandRefused as exc:
        return _failed(str(exc))
    if failures:
        f = failures[0]
        if f.error is not None:  # it could not be run at all (unreachable, no bash there): the transport says why
            message = f"baseline setup failed: {f.error}"
        else:
            why = "timed out" if f.timed_out else f"exit {f.exit_code}"
            detail = (f.stderr_tail or f.stdout_tail).strip().splitlines()[-1:] or [""]
            message = f"baseline setup failed on {f.host}: {f.command!r} {why} {detail[0]}".strip()
        ctx.journal.append(ev.SetupFailedEvent(error=message))
        return _failed(message)
    calibration = calibrate(ctx, state.get("approved", []))
    # The known-good baseline that every rollback is verified against, measured before anything changed
    # (a revert can be broken, so it must never help produce its own reference).
    ctx.journal.append(ev.PhaseEvent(phase="baseline"))
    reference: list[float] = []
    for i in range(ctx.campaign.rollback.verify_runs):
        run = bench_once(ctx, pair=i, arm="A", option=None, approved=state.get("approved", []), purpose="baseline")
        if run.valid and run.value is not None:
            reference.append(run.value)
    return Command(goto="plan", update={"calibration": calibration, "reference": reference})


def _failed(message: str) -> Command[Literal["plan", "confirm"]]:
    """A setup that could not bring the hosts to the baseline: the run stops, with the reason in its report."""
    return Command(goto="confirm", update={"stopping": True, "report": {"error": message}})


def calibrate(ctx: RunContext, approved: list[str]) -> Calibration | None:
    """Optional A/A pairs on the untouched baseline: how noisy is this benchmark here, and can the
    hoped-for effects be told from that noise with the pairs we plan to run?"""
    spec = ctx.campaign.benchmark
    if not spec.calibrate_pairs:
        return None
    ctx.journal.append(ev.PhaseEvent(phase="calibration", pairs=spec.calibrate_pairs))
    runs = [
        bench_once(ctx, pair=i, arm=arm, option=None, approved=approved, purpose="calibrate")
        for i in range(spec.calibrate_pairs)
        for arm in ("A", "B")
    ]
    logs = [
        math.log(b.value / a.value)  # type: ignore[operator]
        for a, b in zip(runs[::2], runs[1::2], strict=True)
        if a.valid and b.valid
    ]
    if len(logs) < 2:
        failed: Calibration = {"pairs": len(logs), "error": "too few valid A/A pairs to estimate the noise"}
        ctx.journal.append(ev.CalibrationEvent.model_validate(failed))
        return failed
    sd = statistics.stdev(logs)
    floor = t975(spec.max_pairs - 1) * sd / math.sqrt(spec.max_pairs) * 100
    per_option: dict[str, CalibratedOption] = {}
    for o in ctx.campaign.options:
        if o.expected_gain_pct is None:
            continue
        margin = o.expected_gain_pct - spec.noise_pct
        needed = math.ceil(((t975(spec.pairs - 1) + 0.9) * sd * 100 / margin) ** 2) if margin > 0 else None
        per_option[str(o.id)] = {
            "expected_pct": o.expected_gain_pct,
            "pairs_needed": max(5, needed) if needed else None,
            "below_noise_floor": margin <= floor,
        }
    result: Calibration = {
        "pairs": len(logs),
        "sd_pct": round(sd * 100, 3),
        "noise_floor_pct": round(floor, 3),
        "at_pairs": spec.max_pairs,
        "options": per_option,
    }
    if len(logs) < MIN_RUNS:
        # Two pairs gave ±69 % in one real run and ±0.5 % in another: such an estimate is not used alone.
        result["warning"] = (
            f"the noise estimate rests on {len(logs)} A/A pair(s); at least {MIN_RUNS} are needed to trust it "
            "(set benchmark.calibrate_pairs ≥ 4), so verdicts judge by the spread of the A/B's own readings"
        )
    ctx.journal.append(ev.CalibrationEvent.model_validate(result))
    return result


def plan(state: State, runtime: Runtime[RunContext]) -> State:
    ctx = runtime.context
    p = ctx.brain.plan(ctx.campaign, [])
    proposals = [o.model_dump(mode="json") for o in p.proposals]
    ctx.journal.append(
        ev.PlanEvent(
            brain=ctx.brain.name,
            order=p.order,
            rationale={str(k): v for k, v in p.rationale.items()},
            proposals=proposals,
        )
    )
    # Proposed options become runnable here, but only reach a host if the plan gate lets them through
    # (the session re-reads them from this journal event when it resumes).
    ctx.campaign = with_proposals(ctx.campaign, proposals)
    options: dict[str, Any] = {
        str(k): {"rationale": v} for k, v in p.rationale.items() if str(k) in state.get("options", {})
    }
    for o in p.proposals:
        options[str(o.id)] = {
            "title": o.title,
            "outcome": "untested",
            "reasons": [],
            "verdict": None,
            "gain_pct": None,
            "ci": None,
            "proposed": True,
            "rationale": p.rationale.get(o.id, ""),
            "apply": [c.run for c in o.apply],
            "revert": [c.run for c in o.revert],
        }
    return {"plan": p.order, "options": options}
