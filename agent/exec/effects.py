"""Mutations that survive signoff's own death: idempotency keys, a ledger, and what to do when in doubt.

Every apply or revert gets a key: the LangGraph task that ran it (stable across a resume) plus the
call's index within that task plus the host. Its `command.started` line (fsynced before the command
runs) and `command.finished` line carry the key, so the journal is the ledger. A completed task's result
is replayed by LangGraph from the checkpoint; the ledger covers the windows where it is not:

- finished in the journal → not run again, the recorded result stands;
- started but not finished (killed while it ran) → never blindly re-run: the option's `check` says
  whether it took effect; without a usable check it is *in doubt* and the rollback gate asks.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent.errors import MutationInDoubt
from agent.exec.dispatch import run_one
from agent.exec.planning import Cleared, clear, command_class, plan
from agent.journal import events as ev
from agent.journal.view import timestamp
from agent.ledger import Effect
from agent.models import CommandSpec
from tools.transport import CommandResult, gone_after

if TYPE_CHECKING:
    from agent.context import RunContext


def mutate(
    ctx: RunContext,
    c: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    effect: Effect,
    key: str,
    approved: tuple[str, ...] = (),
    last: bool = True,
) -> CommandResult:
    p = c.planned

    def recovered(action: str, **extra: Any) -> None:
        ctx.journal.append(
            ev.MutationRecoveredEvent(key=key, host=p.host.name, effect=effect, option=option, action=action, **extra)
        )

    done = ctx.ledger.finished.get(key)
    if done is not None:
        recovered("not run again: it finished before the crash and its recorded result stands")
        return CommandResult.model_validate(done)
    started = ctx.ledger.started.get(key)
    if started is not None:
        took = took_effect(ctx, c, started, option=option, effect=effect, key=key, approved=approved, last=last)
        if took:
            result = CommandResult(
                host=p.host.name,
                command=ctx.redact(p.command),
                exit_code=0,
                duration_s=0.0,
                stdout_tail=f"(not run again: the option's check shows the {effect} took effect)",
            )
            recovered("not run again: the check shows it took effect", result=result.model_dump(mode="json"))
            ctx.ledger.finished[key] = result.model_dump(mode="json")
            return result
        recovered("run again: the check shows it did not take effect")
    return run_one(ctx, c, purpose=purpose, option=option, timeout=timeout, key=key, effect=effect)


def took_effect(
    ctx: RunContext,
    p: Cleared,
    started: dict[str, Any],
    *,
    option: int | None,
    effect: Effect,
    key: str,
    approved: tuple[str, ...],
    last: bool,
) -> bool:
    """Run the option's check on the host in doubt; raise MutationInDoubt when it cannot tell."""
    spec = ctx.campaign.option(option).check if option is not None else None
    why = None
    if spec is None:
        why = "the option has no `check`"
    elif not last:
        why = "the option's `check` speaks for its whole list of commands and this was not the last of them"
    else:
        (checking,) = plan(ctx, CommandSpec(run=spec.run, on=p.host.name, timeout=spec.timeout))
        verdict = command_class(ctx, checking.command)
        cleared = clear(checking, verdict, approved)
        if cleared is None:
            why = f"its check {checking.command!r} is not allowed by the policy ({verdict.klass})"
        else:
            _outwait(ctx, p, started, key=key)
            r = run_one(ctx, cleared, purpose="check", option=option, timeout=spec.timeout, reads_only=True)
            if r.error is None and not r.timed_out and r.exit_code is not None:
                in_effect = r.exit_code == 0
                return in_effect if effect == "apply" else not in_effect
            failure = r.error or ("timeout" if r.timed_out else "no exit status")
            why = f"its check {checking.command!r} gave no answer ({failure})"
    ctx.journal.append(ev.MutationInDoubtEvent(key=key, host=p.host.name, effect=effect, option=option, reason=why))
    raise MutationInDoubt(key, p.host.name, effect, option, why)


def _outwait(ctx: RunContext, p: Cleared, started: dict[str, Any], *, key: str) -> None:
    """The cut-short command may still be running (its backstop outlives a killed signoff): checking
    before it is gone could see a half-done change, and running it again would race it."""
    began = timestamp(started.get("ts")) or datetime.now(UTC)  # a start line without its time: wait in full
    until = began + timedelta(seconds=gone_after(float(started.get("timeout_s") or 0)))
    wait = (until - datetime.now(UTC)).total_seconds()
    if wait > 0:
        ctx.journal.append(
            ev.MutationWaitingEvent(key=key, host=p.host.name, until=until.isoformat(), seconds=round(wait, 3))
        )
        time.sleep(wait)
