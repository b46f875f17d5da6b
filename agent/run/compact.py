"""Compacting a closed session: its graph checkpoints are pruned; the journal, its head and the artifacts
stay, so replay and `--verify` still work (`resume --revisit` no longer does)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.errors import SessionError
from agent.store.base import Session


def compact(d: Session) -> tuple[int, int]:
    """Prune a closed session's graph checkpoints (the journal, its head and the artifacts stay).
    Returns (bytes before, bytes after)."""
    meta = d.meta()
    if meta.get("status") not in ("finished", "stopped", "failed"):
        raise SessionError(f"session {d.id} is {meta.get('status')}; only a closed session can be compacted")
    sizes = d.compact()
    d.write_meta({**meta, "compacted": datetime.now(UTC).isoformat(timespec="seconds")})
    return sizes
