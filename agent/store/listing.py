"""The list of sessions, read cheaply: meta files and journals only, no graph, no transports.

`signoff sessions` imports this and nothing heavier, so listing stays fast (issue 9: start-up).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.journal.chain import read_events
from agent.journal.view import fold


def home() -> Path:
    return Path(os.environ.get("SIGNOFF_HOME", ".signoff"))


def sessions_root() -> Path:
    return home() / "sessions"


def list_sessions() -> list[dict[str, Any]]:
    root = sessions_root()
    if not root.exists():
        return []
    out = []
    for meta_path in sorted(root.glob("*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        journal = meta_path.parent / "journal.jsonl"
        events = read_events(journal) if journal.exists() else iter(())
        out.append(summarize(meta, _lock_holder(meta_path.parent / "lock"), events))
    return out


def summarize(meta: dict[str, Any], runner: str | None, events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One row of `signoff sessions` (any store): meta, who holds the lease, and a journal summary."""
    row = {k: meta.get(k) for k in ("id", "campaign_name", "policy_name", "status", "created", "demo", "owner")}
    if row["status"] == "running" and runner is None:
        row["status"] = "interrupted"  # the runner died (kill -9, crash); `signoff resume` continues it
    summary = _journal_summary(events)
    # `waiting`: the runner that holds the session waiting for an answer (`--wait`), if any and alive.
    waiting = meta.get("waiting") if runner is not None else None
    return {**row, **summary, "compacted": meta.get("compacted"), "runner": runner, "waiting": waiting}


def _journal_summary(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Duration, the gate a paused session waits at, and the outcome counts, read from the journal."""
    view = fold(events)
    duration = round(view.wall_s, 1) if view.started is not None else None
    # `started_at`: the journal's own start, to the millisecond (`created` has whole seconds: two sessions made
    # in one second are ordered by it).
    return {
        "duration_s": duration, "waiting_at": view.waiting_at, "outcomes": view.outcomes,
        "started_at": view.started_ts or None,
    }  # fmt: skip


def _lock_holder(path: Path) -> str | None:
    """Who holds a local session's lock (as its lock file says), or None when nobody does."""
    if not path.exists():
        return None
    with path.open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            return fh.read().strip() or "another process"
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None
