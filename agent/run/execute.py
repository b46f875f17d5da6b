"""Run campaign commands on their hosts: render, check against the command policy, journal, run.

This is the one place commands leave signoff, so the safety rules live here: a command the policy
denies never runs, an `ask` command runs only once a command gate approved it, every command has a
timeout, and secrets travel on stdin (the command line only says "$NAME").
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.func import task
from langgraph.types import RetryPolicy

from agent import crashpoints
from agent.campaign import render
from agent.context import RunContext
from agent.journal import events as ev
from agent.models import TEMPLATE_VAR, CommandSpec
from agent.run.effects import Effect, MutationInDoubt, graph_task, mutate
from tools.artifacts import StorageFull
from tools.commands import Verdict, classify
from tools.secrets import delivery_script, encode_for_delivery
from tools.transport import CommandResult, Host, TransportError


class CommandRefused(RuntimeError):
    """The command policy does not let this command run (deny, or ask without approval)."""

    def __init__(self, command: str, verdict: Verdict) -> None:
        self.command, self.verdict = command, verdict
        super().__init__(f"command {verdict.klass}: {verdict.part!r} {verdict.reason}")


@dataclass(frozen=True)
class Planned:
    host: Host
    command: str  # what the policy checks and the journal shows: secrets appear as "$NAME"
    stdin: bytes | None = None
    secrets: tuple[str, ...] = ()

    @property
    def script(self) -> str:
        """What runs: read the secrets from stdin first (one encoded line each, see `plan`), then the command."""
        return delivery_script(self.secrets) + self.command


def variables(ctx: RunContext, host: Host) -> dict[str, str]:
    base = {
        "python": "python3" if host.transport == "ssh" else sys.executable,
        "campaign_dir": str(ctx.campaign_dir),
        "host": host.name,
        "workdir": _workdir(ctx, host),
        "session": ctx.session,
        "num_prompts": str(ctx.campaign.benchmark.num_prompts or ""),
    }
    secret_names = ctx.secret_names()
    public = {k: render(v, base) for k, v in ctx.campaign.vars.items() if k not in secret_names}
    return {**base, **public, **{name: f'"${name}"' for name in secret_names}}


def _workdir(ctx: RunContext, host: Host) -> str:
    try:
        return ctx.transport.workdir(host)
    except TransportError:
        return ""  # the host is unreachable: running the command will say so, as a failed result


def plan(ctx: RunContext, spec: CommandSpec, *, only: Sequence[str] | None = None) -> list[Planned]:
    """`spec` rendered for each of its hosts (only those named in `only`, when given)."""
    out = []
    names = ctx.secret_names()
    for host in ctx.campaign.targets(spec.on):
        if only is not None and host.name not in only:
            continue
        used = tuple(
            dict.fromkeys(m.group(1) for m in TEMPLATE_VAR.finditer(_expand(ctx, spec.run)) if m.group(1) in names)
        )
        command = render(spec.run, variables(ctx, host))
        # Encoded, so that a newline in one value cannot shift the next (raises on a value no shell can hold).
        stdin = b"".join(encode_for_delivery(n, ctx.secrets[n]) for n in used) if used else None
        out.append(Planned(host=host, command=command, stdin=stdin, secrets=used))
    return out


def _expand(ctx: RunContext, template: str) -> str:
    """The template with public vars expanded one level, so secrets used through a var are found."""
    public = {k: v for k, v in ctx.campaign.vars.items() if k not in ctx.secret_names()}
    return TEMPLATE_VAR.sub(lambda m: public.get(m.group(1), m.group(0)), template)


def rendered(ctx: RunContext, spec: CommandSpec) -> list[tuple[Host, str]]:
    return [(p.host, p.command) for p in plan(ctx, spec)]


def command_class(ctx: RunContext, command: str) -> Verdict:
    rules = ctx.policy.model.commands
    return classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)


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
) -> list[CommandResult]:
    """Run `spec` on all its hosts in parallel (wall time ≈ the slowest host); refuse before running
    anything on any host if one of the rendered commands is not permitted.

    Inside a graph run each host's command is a LangGraph task, so a resumed node gets the results of
    commands that completed before a crash instead of running them again; `effect` marks an apply or
    revert, which also gets an idempotency key (agent/effects.py); `last` says whether it is the last
    command of its list, the only one the option's `check` can speak for. Raises MutationInDoubt when
    one was cut short and cannot be settled. `diagnose(host)` runs on a host whose command overran,
    before the kill; what it returns is kept as the result's `diagnosis`. `only` narrows the spec's
    hosts (a keep with exceptions rolls back on those hosts alone)."""
    planned = plan(ctx, spec, only=only)
    allowed = set(approved)
    for p in planned:
        verdict = command_class(ctx, p.command)
        if verdict.klass == "deny" or (verdict.klass == "ask" and p.command not in allowed):
            ctx.journal.append(
                ev.CommandRefused(
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
    scope = graph_task()
    if scope is None or _in_command.get():
        # Outside a graph run there is nothing to resume; inside a command task (a diagnosis hook) a
        # nested task would wait for a worker its own parent holds.
        return _direct(ctx, planned, purpose=purpose, option=option, timeout=limit, diagnose=diagnose)
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
            _command_task(ctx, p, purpose=purpose, option=option, timeout=limit, diagnose=diagnose) for p in planned
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


class LinkLost(RuntimeError):
    """The link to the host dropped mid-command; a read-only command may simply run again."""

    def __init__(self, result: CommandResult) -> None:
        self.result = result
        super().__init__(result.error)


# Commands that only look (a second run changes nothing on the host): the ones worth running again
# when the link dropped under them. Setup, restarts, stress and every mutation are not.
READ_ONLY = ("probe:", "health", "check", "diagnose:", "bench:", "warmup:")
_in_command: ContextVar[bool] = ContextVar("signoff_in_command", default=False)


# Retry policies live on tasks, never on nodes (a node retry re-runs its completed tasks), and only on
# read-only commands.
@task(name="command", retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.5, jitter=True, retry_on=LinkLost))
def _command_task(
    ctx: RunContext,
    p: Planned,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
) -> dict[str, Any]:
    token = _in_command.set(True)
    try:
        result = _run_diagnosed(ctx, p, purpose=purpose, option=option, timeout=timeout, diagnose=diagnose)
    finally:
        _in_command.reset(token)
    if result.link_lost and purpose.startswith(READ_ONLY):
        raise LinkLost(result)
    return result.model_dump(mode="json")


@task(name="mutation")
def _mutation_task(
    ctx: RunContext,
    p: Planned,
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
    p: Planned,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
) -> CommandResult:
    """run_one, with `diagnose` run before a timeout kill and its answer kept in the result (so it is
    in the task's checkpointed result too, not only in a variable of the node that may run again)."""
    seen: list[str | None] = []
    hook = (lambda: seen.append(diagnose(p.host))) if diagnose is not None else None
    result = run_one(ctx, p, purpose=purpose, option=option, timeout=timeout, on_timeout=hook)
    return result.model_copy(update={"diagnosis": seen[0]}) if seen and seen[0] else result


def _direct(
    ctx: RunContext,
    planned: list[Planned],
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    diagnose: Callable[[Host], str | None] | None,
) -> list[CommandResult]:
    def one(p: Planned) -> CommandResult:
        return _run_diagnosed(ctx, p, purpose=purpose, option=option, timeout=timeout, diagnose=diagnose)

    if len(planned) == 1:
        return [one(planned[0])]
    with ThreadPoolExecutor(max_workers=len(planned)) as pool:
        return list(pool.map(one, planned))


def run_one(
    ctx: RunContext,
    p: Planned,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    on_timeout: Callable[[], None] | None = None,
    key: str | None = None,
    effect: Effect | None = None,
) -> CommandResult:
    # A diagnosis runs while its own command holds the host's turn.
    turn = contextlib.nullcontext() if purpose.startswith("diagnose:") else ctx.fleet_slot(p.host)
    with turn:
        return _run_one(
            ctx, p, purpose=purpose, option=option, timeout=timeout, on_timeout=on_timeout, key=key, effect=effect
        )


def _run_one(
    ctx: RunContext,
    p: Planned,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    on_timeout: Callable[[], None] | None,
    key: str | None,
    effect: Effect | None,
) -> CommandResult:
    # A mutation's lines carry its idempotency key and are fsynced: after a crash they are the ledger.
    keyed = {"key": key, "effect": effect} if key else {}
    event = ctx.journal.append(
        ev.CommandStarted(
            host=p.host.name,
            command=ctx.redact(p.command),
            purpose=purpose,
            option=option,
            timeout_s=timeout,
            secrets=list(p.secrets),
            **keyed,
        )
    )
    if key:
        ctx.ledger.started[key] = {**event.data, "ts": event.ts}
    try:
        result = ctx.transport.run(p.host, p.script, timeout=timeout, stdin=p.stdin, on_timeout=on_timeout)
    except StorageFull as exc:
        if isinstance(exc.result, CommandResult):
            # It ran to its end; only its output was lost. Say how it ended, so that a mutation is not
            # taken for one cut short when the run resumes.
            _finished(ctx, p, exc.result.model_copy(update={"command": ctx.redact(p.command)}), purpose, option, keyed)
        raise
    result = result.model_copy(update={"command": ctx.redact(p.command)})
    crashpoints.reached(f"ran:{purpose}")
    _finished(ctx, p, result, purpose, option, keyed)
    return result


def _finished(
    ctx: RunContext, p: Planned, result: CommandResult, purpose: str, option: int | None, keyed: dict[str, Any]
) -> None:
    if keyed:
        recorded = result.model_copy(
            update={"stdout_tail": result.stdout_tail[-2000:], "stderr_tail": result.stderr_tail[-2000:]}
        )
        keyed = {**keyed, "result": recorded.model_dump(mode="json")}
    ctx.journal.append(
        ev.CommandFinished(
            host=p.host.name,
            purpose=purpose,
            option=option,
            exit=result.exit_code,
            timed_out=result.timed_out,
            killed=result.killed,
            duration_s=result.duration_s,
            stdout_digest=result.stdout_digest,
            artifact=result.artifact,
            stderr_artifact=result.stderr_artifact,
            error=result.error,
            **keyed,
        )
    )
    if keyed:
        ctx.ledger.finished[keyed["key"]] = keyed["result"]


def upload_command(src: str, dest: str) -> str:
    """How an upload is shown at the command gate and recorded when approved."""
    return f"upload {src} -> {dest}"


def upload_class(src: str, dest: str) -> Verdict:
    """An upload writes a file like a redirect does, so it follows the redirect rule: a destination that
    may land outside the host's working directory (absolute, `~`, `..` above it, or anything the shell
    would expand) is `ask`, shown at the command gate; one inside it is allowed."""
    shown = upload_command(src, dest)
    depth, outside = 0, dest.startswith(("/", "~")) or any(c in dest for c in "$`\\*?[{\n\0")
    for segment in dest.split("/"):
        depth += -1 if segment == ".." else (0 if segment in ("", ".") else 1)
        outside = outside or depth < 0
    if outside:
        return Verdict(klass="ask", part=shown, pattern=None, reason=f"writes outside the working directory: {dest}")
    return Verdict(klass="allow", part=shown, pattern=None)


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
            ctx.journal.append(ev.FileUploadFailed(host=host.name, src=src.name, dest=dest, error=str(exc)))
            continue
        ctx.journal.append(ev.FileUploaded(host=host.name, src=src.name, dest=dest, sha256=digest))
    return errors
