"""The session's mutations by idempotency key, and the graph task a command runs in: what lets a resumed
run tell a change that finished before a crash from one that was cut short. No other agent module is
imported here, so the context, the planner and the executor can all share it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

Effect = Literal["apply", "revert"]


@dataclass
class Ledger:
    """The session's mutations by key, read from its journal at start and kept current as it runs."""

    started: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    _calls: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_call(self, scope: str) -> int:
        """The index of the next command call in this graph task (the same on the first run and on resume)."""
        with self._lock:
            index = self._calls.get(scope, 0)
            self._calls[scope] = index + 1
            return index


def graph_task() -> str | None:
    """The running graph task's namespace (stable across a resume), or None outside a graph run."""
    from langgraph.config import get_config

    try:
        return get_config().get("configurable", {}).get("checkpoint_ns") or None
    except RuntimeError:
        return None
