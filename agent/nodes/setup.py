"""Bring the hosts to the baseline, then plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.execute import CommandRefused, run_spec, upload
from agent.state import State


def setup(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    approved = state.get("approved", [])
    failures = []
    for up in ctx.campaign.baseline.upload:
        errors = upload(ctx, ctx.campaign_dir / up.src, up.dest or Path(up.src).name, up.on)
        if errors:
            message = f"baseline upload of {up.src} failed: {errors[0]}"
            ctx.journal.append("setup.failed", error=message)
            return {"route": "report", "stopping": True, "report": {"error": message}}
    try:
        for spec in ctx.campaign.baseline.setup:
            failures += [r for r in run_spec(ctx, spec, purpose="setup", approved=approved) if not r.ok]
        for spec in ctx.campaign.baseline.health:
            failures += [r for r in run_spec(ctx, spec, purpose="health", approved=approved) if not r.ok]
    except CommandRefused as exc:
        return {"route": "report", "stopping": True, "report": {"error": str(exc)}}
    if failures:
        f = failures[0]
        why = "timed out" if f.timed_out else f"exit {f.exit_code}"
        detail = (f.stderr_tail or f.stdout_tail).strip().splitlines()[-1:] or [""]
        message = f"baseline setup failed on {f.host}: {f.command!r} {why} {detail[0]}".strip()
        ctx.journal.append("setup.failed", error=message)
        return {"route": "report", "stopping": True, "report": {"error": message}}
    return {"route": "plan"}


def plan(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    p = ctx.brain.plan(ctx.campaign, [])
    ctx.journal.append(
        "plan", brain=ctx.brain.name, order=p.order, rationale={str(k): v for k, v in p.rationale.items()}
    )
    return {"plan": p.order}
