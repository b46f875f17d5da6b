"""Run campaign commands on their hosts: render, check against the command policy, journal, run.

This is the one place commands leave signoff, so the safety rules live here: a command the policy
denies never runs, an `ask` command runs only once a command gate approved it, every command has a
timeout, and secrets travel on stdin (the command line only says "$NAME").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from langgraph.func import task
from langgraph.types import RetryPolicy

from agent.context import RunContext
from agent.errors import CommandRefused, LinkLost, MutationInDoubt
from agent.exec.dispatch import run_one
from agent.exec.effects import mutate
from agent.exec.planning import Cleared, clear, command_class, plan
from agent.journal import events as ev
from agent.ledger import Effect, graph_task
from agent.models import CommandSpec, Option
from agent.stopping import stop_reason, stop_requested
from tools.transport import CommandResult, Host, TransportError


def run_effect(
    ctx: RunContext,
    option: Option,
    effect: Effect,
    *,
    purpose: str,
    approved: list[str] | tuple[str, ...] = (),
    only: Sequence[str] | None = None,
) -> Iterator[list[CommandResult]]:
    """An option's apply or revert commands, in order, each run as that effect: yields each command's results, so a
    caller may stop at the first that failed (an A/B's switch) or run them all (apply, rollback). Only the last one is
    marked `last`: it is the one the option's `check` can speak for."""
    specs = option.apply if effect == "apply" else option.revert
    for i, spec in enumerate(specs, 1):
        yield run_spec(
            ctx,
            spec,
            purpose=purpose,
            option=option.id,
            approved=approved,
            effect=effect,
            last=i == len(specs),
            only=only,
        )


def run_spec(
    ctx: RunContext,
    spec: CommandSpec,
    *,
    purpose: str,
    option: int | None = None,
    approved: list[str] | tuple[str, ...] = (),
    timeout: float | None = None,
    diagnose: Callable[[Host], str | None] | None = None,
    effect: Effect | None = None,
    last: bool = True,
    only: Sequence[str] | None = None,
    levels: Mapping[str, str] | None = None,
    reads_only: bool = False,
) -> list[CommandResult]:
    """Run `spec` on all its hosts in parallel (wall time ≈ the slowest host); refuse before running anything on any
    host if one of the rendered commands is not permitted.

    Inside a graph run each host's command is a LangGraph task, so a resumed node gets the results of commands that
    completed before a crash instead of running them again; `effect` marks an apply or revert, which also gets an
    idempotency key (agent/exec/effects.py); `last` says whether it is the last command of its list, the only one the
    option's `check` can speak for. Raises MutationInDoubt when one was cut short and cannot be settled.
    `diagnose(host)` runs on a host whose command overran, before the kill; what it returns is kept as the result's
    `diagnosis`. `reads_only`: the caller knows the command only looks (a probe, a health check, a benchmark run: a
    second run changes nothing on the host), so it runs again once when the link drops under it; nothing else ever
    does (setup, restarts, stress, every apply and revert). `only` narrows the spec's hosts (a keep with exceptions
    rolls back on those hosts alone); `levels` sets a sweep's variable."""
    allowed = set(approved)
    planned: list[Cleared] = []
    for p in plan(ctx, spec, only=only, levels=levels):
        verdict = command_class(ctx, p.command)
        cleared = clear(p, verdict, allowed)
        if cleared is not None:
            planned.append(cleared)
        else:
            ctx.journal.append(
                ev.CommandRefusedEvent(
                    purpose=purpose,
                    option=option,
                    host=p.host.name,
                    command=p.command,
                    klass=verdict.klass,
                    pattern=verdict.pattern,
                    part=verdict.part,
                )
            )
            raise CommandRefused(p.command, verdict)
    limit = timeout or spec.timeout
    if stop_requested() and stop_reason() == "operator-quit":
        # The operator quit: stop before the next command, not after the whole step (a benchmark step runs for
        # minutes on a real server). The commands this step finished are its tasks' saved results, so resume
        # runs the step again from there, as after a crash between two commands.
        raise KeyboardInterrupt
    scope = graph_task()
    if scope is None or _in_command.get():
        # Outside a graph run there is nothing to resume; inside a command task (a diagnosis hook) a
        # nested task would wait for a worker its own parent holds.
        return _direct(
            ctx, planned, purpose=purpose, option=option, timeout=limit, diagnose=diagnose, reads_only=reads_only
        )
    index = ctx.ledger.next_call(scope)
    if effect is not None:
        futures = [
            _mutation_task(
                ctx,
                p,
                purpose=purpose,
                option=option,
                timeout=limit,
                effect=effect,
                key=f"{scope}#{index}@{p.host.name}",
                approved=tuple(approved),
                last=last,
            )
            for p in planned
        ]
    else:
        futures = [
            _command_task(
                ctx, p, purpose=purpose, option=option, timeout=limit, diagnose=diagnose, reads_only=reads_only
            )
            for p in planned
        ]
    results: list[CommandResult] = []
    doubt: MutationInDoubt | None = None
    for future in futures:  # wait for every host before raising, so no command is left running unseen
        try:
            results.append(CommandResult.model_validate(future.result()))
        except LinkLost as exc:
            results.append(exc.result)
        except MutationInDoubt as exc:
            doubt = doubt or exc
    if doubt is not None:
        raise doubt
    return results


_in_command: ContextVar[bool] = ContextVar("signoff_in_command", default=False)


# Retry policies live on tasks, never on nodes (a node retry re-runs its completed tasks), and only on
# read-only commands.
@task(name="command", retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.5, jitter=True, retry_on=LinkLost))
def _command_task(
    ctx: RunContext,
    p: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
    reads_only: bool = False,
) -> dict[str, Any]:
    token = _in_command.set(True)
    try:
        result = _run_diagnosed(
            ctx, p, purpose=purpose, option=option, timeout=timeout, diagnose=diagnose, reads_only=reads_only
        )
    finally:
        _in_command.reset(token)
    if result.link_lost and reads_only:  # said by the caller, never read off the purpose's name
        raise LinkLost(result)
    return result.model_dump(mode="json")


@task(name="mutation")
def _mutation_task(
    ctx: RunContext,
    p: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    effect: Effect,
    key: str,
    approved: tuple[str, ...],
    last: bool,
) -> dict[str, Any]:
    result = mutate(
        ctx, p, purpose=purpose, option=option, timeout=timeout, effect=effect, key=key, approved=approved, last=last
    )
    return result.model_dump(mode="json")


def _run_diagnosed(
    ctx: RunContext,
    p: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
    reads_only: bool,
) -> CommandResult:
    """run_one, with `diagnose` run before a timeout kill and its answer kept in the result (so it is
    in the task's checkpointed result too, not only in a variable of the node that may run again)."""
    seen: list[str | None] = []
    hook = (lambda: seen.append(diagnose(p.host))) if diagnose is not None else None
    result = run_one(ctx, p, purpose=purpose, option=option, timeout=timeout, on_timeout=hook, reads_only=reads_only)
    return result.model_copy(update={"diagnosis": seen[0]}) if seen and seen[0] else result


def _direct(
    ctx: RunContext,
    planned: list[Cleared],
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
    reads_only: bool,
) -> list[CommandResult]:
    def one(p: Cleared) -> CommandResult:
        return _run_diagnosed(
            ctx, p, purpose=purpose, option=option, timeout=timeout, diagnose=diagnose, reads_only=reads_only
        )

    if len(planned) == 1:
        return [one(planned[0])]
    with ThreadPoolExecutor(max_workers=len(planned)) as pool:
        return list(pool.map(one, planned))


def upload(ctx: RunContext, src: Path, dest: str, on: str) -> list[str]:
    """Copy a campaign file to each target host; returns one error line per host that failed."""
    import hashlib

    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    errors = []
    for host in ctx.campaign.targets(on):
        try:
            ctx.transport.put(host, src, dest)
        except (TransportError, OSError) as exc:
            errors.append(f"{host.name}: {exc}")
            ctx.journal.append(ev.FileUploadFailedEvent(host=host.name, src=src.name, dest=dest, error=str(exc)))
            continue
        ctx.journal.append(ev.FileUploadedEvent(host=host.name, src=src.name, dest=dest, sha256=digest))
    return errors
