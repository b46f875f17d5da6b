"""Stress outcomes. A stress command that overruns its deadline is a *wedge*: the only reliable
wedge detector, since load clients wait for hours on a hung server and `/health` can still say 200.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from tools.transport import CommandResult

StressOutcome = Literal["ok", "wedge", "error"]


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


def classify(scenario: str, run: int, result: CommandResult, timeout_s: float) -> StressResult:
    if result.timed_out:
        outcome: StressOutcome = "wedge"
        tail = (result.stdout_tail + result.stderr_tail).strip().splitlines()[-3:]
        evidence = (
            f"no completion within {timeout_s:g}s deadline; process group "
            f"{'killed' if result.killed else 'could NOT be killed'}"
            + (f"; last output: {' | '.join(tail)}" if tail else "")
        )
    elif result.exit_code != 0:
        outcome = "error"
        tail = (result.stderr_tail or result.stdout_tail).strip().splitlines()[-2:]
        evidence = f"exit {result.exit_code}" + (f": {' | '.join(tail)}" if tail else "")
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
