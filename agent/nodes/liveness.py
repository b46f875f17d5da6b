"""Is the server there? The campaign's `health` checks (does it answer?) and, when they fail, its `alive`
checks (is its process still there?), run on one host when a command overran its deadline. A server
that answers is alive; one that does not but whose process is there is hung (a wedge); one whose process
is gone — or that fails its health checks and has no `alive` check to say otherwise — is dead."""

from __future__ import annotations

from agent.context import RunContext
from agent.errors import CommandRefused
from agent.exec.execute import run_spec
from agent.models import CommandSpec


def liveness(
    ctx: RunContext, host: str, *, purpose: str, option: int | None, approved: list[str]
) -> tuple[bool | None, bool | None]:
    """(the health checks passed, the process is there) on `host`; None for what the campaign has no check
    for, or that the command policy would not run. `purpose` names the run, e.g. `diagnose:health:NAME`."""
    health = _passes(ctx, ctx.campaign.baseline.health, host, purpose=purpose, option=option, approved=approved)
    if health is not False:
        return health, None
    alive = ctx.campaign.baseline.alive
    return health, _passes(ctx, alive, host, purpose=f"{purpose}:alive", option=option, approved=approved)


def _passes(
    ctx: RunContext, checks: list[CommandSpec], host: str, *, purpose: str, option: int | None, approved: list[str]
) -> bool | None:
    mine = [c for c in checks if host in {h.name for h in ctx.campaign.targets(c.on)}]
    if not mine:
        return None
    for check in mine:
        probe = CommandSpec(run=check.run, on=host, timeout=min(check.timeout, 30.0))
        try:
            (result,) = run_spec(ctx, probe, purpose=purpose, option=option, approved=approved, reads_only=True)
        except CommandRefused:
            return None
        if not result.ok:
            return False
    return True
