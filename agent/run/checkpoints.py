"""The graph bound to one session's checkpoints: compiled once per process, each use bound to the session's
own checkpointer. A checkpoint DB that cannot be read, or that names code to run on load, is journaled and
refused (RunFailed) before the graph touches it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Generator
from typing import Any

from agent.errors import CheckpointUnreadable, RunFailed
from agent.journal import events as ev
from agent.models import Campaign
from agent.store.base import JournalWriter, Session
from agent.store.serde import blocked_types


@functools.cache
def _compiled() -> Any:
    """The graph, compiled once per process (compiling inspects every node: ~0.1 s); each use gets a
    copy bound to its own checkpointer connection."""
    from agent.graph import build

    return build().compile()


@contextlib.contextmanager
def session_graph(d: Session, journal: JournalWriter) -> Generator[Any, None, None]:
    """The compiled graph bound to `d`'s checkpointer, for as long as the block runs."""
    stack = contextlib.ExitStack()
    try:
        saver = stack.enter_context(d.saver())
    except CheckpointUnreadable as exc:
        where, _, error = str(exc).rpartition(": ")
        journal.append(ev.CheckpointUnreadableEvent(path=where, error=error))
        raise RunFailed(
            f"its checkpoint DB cannot be read ({error}), so it cannot resume; the journal is kept "
            f"apart from it: `signoff replay {d.id} --verify` checks it and `--export` reports it"
        ) from None
    with stack:
        # A checkpoint DB someone else could write (a shared store, a copied directory) is read by a
        # serializer that never runs what it names (agent/store/serde.py); one that names code at all was
        # not written by signoff, and resuming from it is refused in one line.
        with blocked_types() as foreign:
            saver.get_tuple({"configurable": {"thread_id": d.id, "checkpoint_ns": ""}})
        if foreign:
            error = f"it names code to run on load ({', '.join(sorted(set(foreign))[:3])}), which signoff never writes"
            journal.append(ev.CheckpointUnreadableEvent(path=d.label, error=error))
            raise RunFailed(
                f"its checkpoint DB was tampered with: {error}; nothing was run. The journal is kept apart "
                f"from it: `signoff replay {d.id} --verify` checks it and `--export` reports it"
            )
        yield _compiled().copy(update={"checkpointer": saver})


def run_config(session: str, campaign: Campaign) -> dict[str, Any]:
    """The graph's config for a session: its thread, and a worker pool wide enough for the campaign."""
    # Investigation subagents run one per option in parallel; LangGraph's default pool is cpus+4
    # threads, which would quietly serialize a wide fan-out of blocking SSH probes on a small box.
    # A fleet's hosts too: every host of a command gets a worker; `campaign.fleet` bounds how many run.
    width = max(8, len(campaign.options), min(len(campaign.hosts), campaign.fleet.max_parallel))
    return {"configurable": {"thread_id": session}, "max_concurrency": width, "recursion_limit": 500}
