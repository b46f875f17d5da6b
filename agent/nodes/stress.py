"""Stress the candidate. Each run has a deadline; overrunning it is a wedge (the process is killed)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.execute import CommandRefused, run_spec
from agent.models import CommandSpec, StressSpec
from agent.state import State
from tools.stress import classify
from tools.transport import Host


def stress(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = state["current"]
    results: list[dict[str, Any]] = []
    ctx.journal.append("phase", phase="stress", option=option, scenarios=len(ctx.campaign.stress))
    for spec in ctx.campaign.stress:
        for run in range(1, spec.runs + 1):
            try:
                diagnoses: dict[str, str] = {}
                outs = run_spec(
                    ctx,
                    spec,
                    purpose=f"stress:{spec.name}",
                    option=option,
                    approved=state.get("approved", []),
                    diagnose=_diagnoser(ctx, spec, option, state, diagnoses) if spec.diagnose else None,
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
                r = classify(spec.name, run, out, spec.timeout, spec.crash_patterns)
                r.diagnosis = diagnoses.get(out.host)
                if r.diagnosis:
                    r.evidence += f"; diagnosis before the kill: artifacts/{r.diagnosis}"
                ctx.journal.append("stress.result", option=option, **r.model_dump(mode="json"))
                results.append(r.model_dump(mode="json"))
    return {"stress": {str(option): results}, "route": "assess"}


def _diagnoser(ctx: RunContext, spec: StressSpec, option: int, state: State, sink: dict[str, str]):
    """The hook run on a host when its stress command overran: capture the diagnosis before the kill."""

    def run(host: Host) -> None:
        diag = CommandSpec(run=spec.diagnose or "true", on=host.name, timeout=spec.diagnose_timeout)
        try:
            (result,) = run_spec(
                ctx, diag, purpose=f"diagnose:{spec.name}", option=option, approved=state.get("approved", [])
            )
        except CommandRefused:
            return  # journaled as command.refused; the wedge is still killed and recorded
        sink[host.name] = result.artifact or ""
        ctx.journal.append(
            "stress.diagnosis",
            option=option,
            scenario=spec.name,
            host=host.name,
            exit=result.exit_code,
            artifact=result.artifact,
        )

    return run
