"""Running one planned command on its host: its turn in the fleet, the journal lines before and after it,
its secrets on stdin and its output into the artifact store. Every command signoff runs goes through here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from agent import crashpoints
from agent.context import RunContext
from agent.exec.live import Spool
from agent.exec.planning import Cleared, Planned
from agent.journal import events as ev
from agent.ledger import Effect
from tools.artifacts import StorageFull
from tools.output import LineCallback
from tools.transport import CommandRequest, CommandResult


def run_one(
    ctx: RunContext,
    c: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    on_timeout: Callable[[], None] | None = None,
    key: str | None = None,
    effect: Effect | None = None,
    reads_only: bool = False,
) -> CommandResult:
    # A diagnosis runs while its own command holds the host's turn.
    turn = contextlib.nullcontext() if purpose.startswith("diagnose:") else ctx.fleet_slot(c.host)
    with turn:
        return _run_one(
            ctx,
            c,
            purpose=purpose,
            option=option,
            timeout=timeout,
            on_timeout=on_timeout,
            key=key,
            effect=effect,
            reads_only=reads_only,
        )


def _run_one(
    ctx: RunContext,
    c: Cleared,
    *,
    purpose: str,
    option: int | None,
    timeout: float,
    on_timeout: Callable[[], None] | None,
    key: str | None,
    effect: Effect | None,
    reads_only: bool,
) -> CommandResult:
    # A mutation's lines carry its idempotency key and are fsynced: after a crash they are the ledger.
    keyed = {"key": key, "effect": effect} if key else {}
    p = c.planned
    # What bash is given, when it is not the text as written (the canonical form of an allowed command).
    runs = {"runs": ctx.redact(c.runs)} if c.runs != p.command else {}
    event = ctx.journal.append(
        ev.CommandStartedEvent(
            host=p.host.name,
            command=ctx.redact(p.command),
            purpose=purpose,
            option=option,
            timeout_s=timeout,
            secrets=list(p.secrets),
            **runs,
            **keyed,
        )
    )
    if key:
        ctx.ledger.started[key] = {**event.data, "ts": event.ts}
    spool = _spool(ctx, event.seq)
    progress = OutputProgress(spool.on_line if spool else None)
    try:
        request = CommandRequest(
            host=p.host,
            command=c.script,
            timeout=timeout,
            stdin=p.stdin,
            reads_only=reads_only,
            on_timeout=on_timeout,
            on_line=progress.on_line,
        )
        result = ctx.transport.execute(request)
    except StorageFull as exc:
        if isinstance(exc.result, CommandResult):
            # It ran to its end; only its output was lost. Say how it ended, so that a mutation is not
            # taken for one cut short when the run resumes.
            _finished(ctx, p, exc.result.model_copy(update={"command": ctx.redact(p.command)}), purpose, option, keyed)
        raise
    finally:
        if spool is not None:
            spool.close()
    quiet = progress.quiet_s(timeout) if result.timed_out else None
    result = result.model_copy(update={"command": ctx.redact(p.command), "quiet_s": quiet})
    crashpoints.reached(f"ran:{purpose}")
    _finished(ctx, p, result, purpose, option, keyed)
    return result


class OutputProgress:
    """When a command last printed, as of its deadline: a run past its deadline that was still printing is
    progressing too slowly (saturated), one that had gone quiet is stuck (tools/stress.py)."""

    def __init__(self, forward: LineCallback | None) -> None:
        self._forward = forward
        self._started = self._last = time.monotonic()

    def on_line(self, stream: str, line: str) -> None:
        self._last = time.monotonic()
        if self._forward is not None:
            self._forward(stream, line)

    def quiet_s(self, timeout: float) -> float:
        """Seconds from the last line (or the start) to the deadline; lines printed after it, while a
        diagnosis ran, do not count as progress before it."""
        deadline = self._started + timeout
        return round(max(0.0, deadline - min(self._last, deadline)), 3)


def _spool(ctx: RunContext, seq: int) -> Spool | None:
    """Where the command's lines go while it runs; none when it cannot be opened (watchers then see the
    output when the command ends, as before)."""
    if ctx.live_dir is None:
        return None
    try:
        return Spool(ctx.live_dir, seq)
    except OSError:
        return None


def _finished(
    ctx: RunContext, p: Planned, result: CommandResult, purpose: str, option: int | None, keyed: dict[str, Any]
) -> None:
    if keyed:
        recorded = result.model_copy(
            update={"stdout_tail": result.stdout_tail[-2000:], "stderr_tail": result.stderr_tail[-2000:]}
        )
        keyed = {**keyed, "result": recorded.model_dump(mode="json")}
    ctx.journal.append(
        ev.CommandFinishedEvent(
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
