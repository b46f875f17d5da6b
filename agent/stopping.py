"""A stop asked for by a signal or by the operator quitting the TUI. A signal's is honoured at the next graph step
boundary (so the last checkpoint is a whole step and `signoff resume` continues cleanly); the operator's also before
the next command of a step (agent/exec/execute.py: the step's finished commands are saved task results, so resume
goes on from there as after a crash between two commands). Tiny on purpose: the CLI imports it at
start-up."""

from __future__ import annotations

import threading

_requested = threading.Event()
_reason = ["signal"]  # what asked, journaled as the interruption's reason: "signal" or "operator-quit"


def request_stop(reason: str = "signal") -> bool:
    """Ask the running graph to stop after its current step; True if a stop was already asked for."""
    already = _requested.is_set()
    if not already:
        _reason[0] = reason
    _requested.set()
    return already


def stop_requested() -> bool:
    return _requested.is_set()


def stop_reason() -> str:
    return _reason[0]


def clear_stop() -> None:
    """Forget a stop that was honoured: the TUI starts a new run in the same process (after a quit, a test's next
    session; a CLI process ends with its run)."""
    _requested.clear()
    _reason[0] = "signal"
