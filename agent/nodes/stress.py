"""Stress the candidate. Each run has a deadline; overrunning it is a wedge (the process is killed)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.execute import CommandRefused, run_spec
from agent.state import State
from tools.stress import classify


def stress(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = state["current"]
    results: list[dict[str, Any]] = []
    ctx.journal.append("phase", phase="stress", option=option, scenarios=len(ctx.campaign.stress))
    for spec in ctx.campaign.stress:
        for run in range(1, spec.runs + 1):
            try:
                outs = run_spec(
                    ctx,
                    spec,
                    purpose=f"stress:{spec.name}",
                    option=option,
                    approved=state.get("approved", []),
                )
            except CommandRefused as exc:
                results.append(
                    {
                        "scenario": spec.name,
                        "run": run,
                        "host": "-",
                        "outcome": "error",
                        "duration_s": 0.0,
                        "timeout_s": spec.timeout,
                        "evidence": f"not run: {exc}",
                    }
                )
                break
            for out in outs:
                r = classify(spec.name, run, out, spec.timeout)
                ctx.journal.append("stress.result", option=option, **r.model_dump(mode="json"))
                results.append(r.model_dump(mode="json"))
    return {"stress": {str(option): results}, "route": "assess"}
