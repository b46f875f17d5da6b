"""Run campaign commands on their hosts: render, check against the command policy, journal, run.

This is the one place commands leave signoff, so the safety rules live here: a command the policy
denies never runs, an `ask` command runs only once a command gate approved it, and every command
has a timeout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from agent.campaign import render
from agent.context import RunContext
from agent.models import CommandSpec
from tools.commands import Verdict, classify
from tools.transport import CommandResult, Host


class CommandRefused(RuntimeError):
    """The command policy does not let this command run (deny, or ask without approval)."""

    def __init__(self, command: str, verdict: Verdict) -> None:
        self.command, self.verdict = command, verdict
        why = f"matches {verdict.pattern!r}" if verdict.pattern else "matches no allow pattern"
        super().__init__(f"command {verdict.klass}: {verdict.part!r} {why}")


def variables(ctx: RunContext, host: Host) -> dict[str, str]:
    base = {
        "python": sys.executable,
        "campaign_dir": str(ctx.campaign_dir),
        "host": host.name,
        "workdir": ctx.transport.workdir(host),
        "session": ctx.session,
        "num_prompts": str(ctx.campaign.benchmark.num_prompts or ""),
    }
    return {**base, **{k: render(v, base) for k, v in ctx.campaign.vars.items()}}


def rendered(ctx: RunContext, spec: CommandSpec) -> list[tuple[Host, str]]:
    return [(host, render(spec.run, variables(ctx, host))) for host in ctx.campaign.targets(spec.on)]


def command_class(ctx: RunContext, command: str) -> Verdict:
    rules = ctx.policy.model.commands
    return classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)


def run_spec(
    ctx: RunContext,
    spec: CommandSpec,
    *,
    purpose: str,
    option: int | None = None,
    approved: Iterable[str] = (),
    timeout: float | None = None,
) -> list[CommandResult]:
    """Run `spec` on each of its hosts in turn; refuse before running anything not permitted."""
    plan = rendered(ctx, spec)
    approved = set(approved)
    for _, command in plan:
        verdict = command_class(ctx, command)
        if verdict.klass == "deny" or (verdict.klass == "ask" and command not in approved):
            ctx.journal.append(
                "command.refused",
                purpose=purpose,
                option=option,
                command=command,
                klass=verdict.klass,
                pattern=verdict.pattern,
                part=verdict.part,
            )
            raise CommandRefused(command, verdict)
    results = []
    for host, command in plan:
        results.append(run_one(ctx, host, command, purpose=purpose, option=option, timeout=timeout or spec.timeout))
    return results


def run_one(
    ctx: RunContext, host: Host, command: str, *, purpose: str, option: int | None, timeout: float
) -> CommandResult:
    ctx.journal.append(
        "command.started", host=host.name, command=command, purpose=purpose, option=option, timeout_s=timeout
    )
    result = ctx.transport.run(host, command, timeout=timeout)
    ctx.journal.append(
        "command.finished",
        host=host.name,
        purpose=purpose,
        option=option,
        exit=result.exit_code,
        timed_out=result.timed_out,
        killed=result.killed,
        duration_s=result.duration_s,
        stdout_digest=result.stdout_digest,
        artifact=result.artifact,
    )
    return result
