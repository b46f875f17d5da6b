"""Apply the current option on its hosts, with the undo plan journaled first."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import RunContext
from agent.errors import CommandRefused, MutationInDoubt
from agent.exec.execute import run_effect
from agent.exec.planning import rendered
from agent.journal import events as ev
from agent.models import Verification
from agent.state import State, current


def apply(state: State, runtime: Runtime[RunContext]) -> Command[Literal["benchmark", "rollback", "rollback_gate"]]:
    ctx = runtime.context
    option = ctx.campaign.option(current(state))
    key = str(option.id)
    undo = [{"host": h.name, "command": c} for spec in option.revert for h, c in rendered(ctx, spec)]
    ctx.journal.append(
        ev.UndoRecordedEvent(
            option=option.id,
            revert=undo,
            verify={
                "health": [s.run for s in ctx.campaign.baseline.health],
                "baseline_runs": ctx.campaign.rollback.verify_runs,
                "settle_runs": ctx.campaign.rollback.settle_runs,
                "tolerance_pct": ctx.campaign.rollback.tolerance_pct,
                "check": option.check is not None,
                "floor_pct": ctx.campaign.rollback.floor_pct,
                "ceiling_pct": ctx.campaign.rollback.ceiling_pct,
            },
        )
    )
    ctx.journal.append(ev.PhaseEvent(phase="apply", option=option.id, title=option.title))
    tried: State = {"tried": [option.id]}
    try:
        results = [
            r
            for rs in run_effect(ctx, option, "apply", purpose="apply", approved=state.get("approved", []))
            for r in rs
        ]
    except CommandRefused as exc:
        return Command(
            goto="rollback", update={**tried, "options": {key: {"outcome": "untested", "reasons": [str(exc)]}}}
        )
    except MutationInDoubt as exc:
        return Command(goto="rollback_gate", update={**tried, **in_doubt(key, exc)})
    failed = [r for r in results if not r.ok]
    if failed:
        f = failed[0]
        said = (f.stderr_tail or f.stdout_tail).strip().splitlines()[-1:] or [""]
        reason = f"apply failed on {f.host}: {'timeout' if f.timed_out else f'exit {f.exit_code}'} {said[0]}".strip()
        ctx.journal.append(ev.ApplyFailedEvent(option=option.id, reason=reason))
        # Half-applied is the worst state to leave a host in: roll back.
        return Command(
            goto="rollback", update={**tried, "options": {key: {"outcome": "untested", "reasons": [reason]}}}
        )
    return Command(goto="benchmark", update=tried)


def in_doubt(key: str, exc: MutationInDoubt) -> State:
    """What a mutation nobody can settle leaves: the hosts unverified, for the rollback gate its caller goes to."""
    v: Verification = {"verified": False, "health_ok": False, "delta_pct": None, "in_doubt": True, "detail": str(exc)}
    return {
        "verification": v,
        "options": {key: {"outcome": "untested", "reasons": [str(exc)]}},
    }
