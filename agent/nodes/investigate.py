"""Investigation subagents: one per option, fanned out with `Send`, running read-only probes."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from agent.context import RunContext
from agent.execute import CommandRefused, run_spec
from agent.models import Probe
from agent.state import State
from tools.transport import CommandResult


def fan_out(state: State) -> list[Send]:
    return [Send("investigate", {"option_id": o}) for o in state["plan"]]


def investigate(payload: dict[str, Any], runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = ctx.campaign.option(payload["option_id"])
    agent = f"investigator#{option.id}"
    ctx.journal.append("subagent.started", actor=agent, option=option.id, probes=len(option.probes))

    def run_probe(probe: Probe) -> list[CommandResult]:
        try:
            return run_spec(ctx, probe, purpose=f"probe:{probe.name}", option=option.id)
        except CommandRefused as exc:
            # A probe the policy will not run is reported (and counts against the option), never skipped.
            return [
                CommandResult(
                    host="-", command=exc.command, exit_code=None, duration_s=0.0, error=f"probe not run: {exc}"
                )
            ]

    finding = ctx.brain.investigate(option, run_probe)
    ctx.journal.append("finding", actor=agent, **finding.model_dump(mode="json"))
    return {"findings": {str(option.id): finding.model_dump(mode="json")}}
