"""Stress outcomes. A stress command that overruns its deadline did not finish, and the signals the
runner already has say why:
- *dead*: the server's health checks fail at the deadline — it is gone (when the campaign has `alive`
  checks, only if its process is gone too: one that is there and does not answer is hung, a wedge);
- *saturated*: it was still printing in the last stretch before the deadline (a quarter of it, at most
  30 s) — progressing, too slowly;
- *wedge*: alive (or with no health check to say otherwise) and silent — stuck. Load clients wait for
  hours on a hung server and `/health` can still say 200, so silence, not health, is what marks it.
A non-zero exit, or output carrying a known crash signature, is a *crash* — even with exit 0, since
load clients often exit 0 after the server died under them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from tools.transport import CommandResult

StressOutcome = Literal["ok", "wedge", "saturated", "dead", "crash", "degraded", "leak"]
PROGRESS_WINDOW_MAX_S = 30.0


def progress_window(timeout_s: float) -> float:
    """How recent the last output must be, at the deadline, to count as progress."""
    return min(timeout_s / 4, PROGRESS_WINDOW_MAX_S)


# What engines print when they die or their watchdogs fire (research/bench-stats.md §3.1).
CRASH_SIGNATURES = [
    r"EngineDeadError",
    r"EngineCore encountered an issue",
    r"Watchdog caught collective operation timeout",
    r"Watchdog timeout \(self\.watchdog_timeout",
    r"Health check failed\. Server couldn't get a response",
    r"token_to_kv_pool_allocator memory leak detected",
    r"Background loop stopped",
    r"CUDA error: an illegal memory access",
    r"NCCL error",
]


Stall = Literal["wedge", "saturated", "dead"]


def stall(
    result: CommandResult, timeout_s: float, *, alive: bool | None, process: bool | None = None
) -> tuple[Stall, str]:
    """Why a command that overran its deadline did not finish, from what the runner saw (module docstring).
    `alive`: the health checks passed; `process`: the server's process is there (asked when they fail)."""
    tail = (result.stdout_tail + "\n" + result.stderr_tail).strip()
    quiet = result.quiet_s
    if alive is False and process is True:
        silent = f"silent for the last {quiet:.1f}s, " if quiet is not None else ""
        return "wedge", f"{silent}the server not answering its health checks while its process is still there"
    if alive is False:
        gone = " and its process is gone" if process is False else ""
        return "dead", f"the server stopped answering its health checks{gone}"
    if quiet is not None and quiet < progress_window(timeout_s) and tail:
        return "saturated", f"still printing {quiet:.1f}s before the deadline: progressing, too slowly"
    silent = f"silent for the last {quiet:.1f}s" if quiet is not None else "no progress seen"
    return "wedge", silent + (", the server still answering its health checks" if alive else "")


class StressResult(BaseModel):
    scenario: str
    run: int
    host: str
    outcome: StressOutcome
    duration_s: float
    timeout_s: float
    killed: bool = False
    evidence: str = ""
    artifact: str | None = None
    diagnosis: str | None = None  # artifact of the diagnose command run before the kill


def classify(
    scenario: str,
    run: int,
    result: CommandResult,
    timeout_s: float,
    signatures: list[str] | None = None,
    *,
    alive: bool | None = None,
    process: bool | None = None,
) -> StressResult:
    """`alive`: whether the campaign's health checks passed on the host at the deadline (None: not known);
    `process`: whether its `alive` checks found the server's process then."""
    tail = (result.stdout_tail + "\n" + result.stderr_tail).strip()
    # A campaign's own patterns add to the known signatures; they never switch those off.
    crash = next((m for p in [*CRASH_SIGNATURES, *(signatures or [])] if (m := re.search(p, tail))), None)
    if result.error is not None and not result.timed_out:
        outcome: StressOutcome = "crash"
        evidence = f"could not run: {result.error}"
    elif result.timed_out:
        last = tail.splitlines()[-3:]
        outcome, why = stall(result, timeout_s, alive=alive, process=process)
        evidence = (
            f"no completion within {timeout_s:g}s deadline — {why}; process group "
            f"{'killed' if result.killed else 'could NOT be killed'}"
            + (f"; last output: {' | '.join(last)}" if last else "")
        )
    elif result.exit_code != 0 or crash is not None:
        outcome = "crash"
        if crash is not None:
            line = next((ln for ln in tail.splitlines() if crash.group(0) in ln), crash.group(0))
            evidence = f"crash signature: {line.strip()[:200]}"
        else:
            last = (result.stderr_tail or result.stdout_tail).strip().splitlines()[-2:]
            evidence = f"exit {result.exit_code}" + (f": {' | '.join(last)}" if last else "")
    else:
        outcome = "ok"
        evidence = f"completed in {result.duration_s:.2f}s"
    return StressResult(
        scenario=scenario,
        run=run,
        host=result.host,
        outcome=outcome,
        duration_s=result.duration_s,
        timeout_s=timeout_s,
        killed=result.killed,
        evidence=evidence,
        artifact=result.artifact,
    )
