"""The team store: sessions in PostgreSQL, so any operator on any machine can list, attach to, answer
and resume any session (issue 10).

What lives where: the graph's checkpoints in LangGraph's own tables (`PostgresSaver` over a
connection pool, created by `signoff store init`); the journal, its head and the artifacts it cites in
`agent/journal/pg.py`'s tables; the session's small documents (meta, the campaign and policy texts,
model parses, pinned host keys) in `signoff_docs`; answers waiting for a resume in
`signoff_answers`. The runner lease is a PostgreSQL advisory lock (`pgjournal.Lease`). What must sit
on the runner's own disk — local hosts' working directories and an artifact cache — goes under
`$SIGNOFF_HOME/team/<session>/` and is fetched back from the store when another machine takes over.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agent.errors import CheckpointUnreadable, SessionBusy, SessionError
from agent.journal import pg as pgjournal
from agent.store.base import Session, Store, check_session_id, writer_trust
from agent.store.listing import home, summarize
from agent.store.local import private_dir, scratch_dir
from agent.store.serde import serializer

# The checkpoint tables PostgresSaver.setup creates, and the journal's: all must exist to run.
REQUIRED = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "signoff_journal", "signoff_docs")


def redact(url: str) -> str:
    """The URL without its password, for messages and the journal."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PgStore(Store):
    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise SessionError("the PostgreSQL store needs its extra: pip install 'signoff[postgres]'") from None
        self.url = url
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                found = {
                    r[0]
                    for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename = ANY(%s)", [list(REQUIRED)])
                }
        except psycopg.Error as exc:
            raise SessionError(f"cannot reach the store {redact(url)}: {_first_line(exc)}") from None
        if set(REQUIRED) - found:
            raise SessionError(
                f"the store {redact(url)} is not set up (missing {', '.join(sorted(set(REQUIRED) - found))}); "
                f"run `signoff store init --store {redact(url)}`"
            )

    @property
    def where(self) -> str:
        return redact(self.url)

    def session(self, session_id: str) -> PgSession:
        return PgSession(self.url, check_session_id(session_id))

    def new(self, session_id: str) -> PgSession:
        return PgSession(self.url, check_session_id(session_id))

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every session in the store, with who runs it now (the lease holder) and a summary read from
        a handful of journal lines per session (first, last, last gate/decision, last report) by index."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            metas = conn.execute(
                "SELECT d.session, d.body, a.application_name FROM signoff_docs d "
                "LEFT JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.classid = ((hashtextextended(d.session, 0) >> 32) & 4294967295)::oid "
                "AND l.objid = (hashtextextended(d.session, 0) & 4294967295)::oid "
                "LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE d.name = 'meta.json' ORDER BY d.session"
            ).fetchall()
            picks = conn.execute(
                "SELECT session, seq, line FROM ("
                "  SELECT DISTINCT ON (session, k) session, seq, line, k FROM ("
                "    SELECT session, seq, line, CASE WHEN kind IN ('gate.opened', 'decision') THEN 'gate' "
                "      WHEN kind = 'report' THEN 'report' END AS k FROM signoff_journal"
                "    WHERE kind IN ('gate.opened', 'decision', 'report')) x "
                "  ORDER BY session, k, seq DESC) y "
                "UNION SELECT j.session, j.seq, j.line FROM signoff_journal j JOIN ("
                "  SELECT session, min(seq) AS lo, max(seq) AS hi FROM signoff_journal GROUP BY session) b "
                "  ON j.session = b.session AND j.seq IN (b.lo, b.hi) "
                "ORDER BY 1, 2"
            ).fetchall()
        events: dict[str, list[dict[str, Any]]] = {}
        for session, _, line in picks:
            events.setdefault(session, []).append(json.loads(bytes(line)))
        rows = []
        for session, body, holder in metas:
            runner = holder.removeprefix("signoff:") if holder else None
            rows.append(summarize(json.loads(body), runner, events.get(session, [])))
        return rows


class PgTail:
    """New journal events of one session, woken by NOTIFY: a read queries the store only when a commit
    was announced since the last one (or on the first read), so a hundred idle watchers cost nothing."""

    def __init__(self, url: str, session: str) -> None:
        import psycopg
        from psycopg import sql

        self.session = session
        self.offset = 0  # the next seq to read
        self.queries = 0  # how often it read the journal table (a watcher's cost)
        self._conn = psycopg.connect(url, autocommit=True)
        # A channel name cannot be a bound parameter; `channel` derives it from a checked session id.
        self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(pgjournal.channel(session))))
        self._dirty = True

    def read(self) -> list[dict[str, Any]]:
        for _ in self._conn.notifies(timeout=0):
            self._dirty = True
        if not self._dirty:
            return []
        self._dirty = False
        self.queries += 1
        rows = self._conn.execute(
            "SELECT line FROM signoff_journal WHERE session = %s AND seq >= %s ORDER BY seq",
            (self.session, self.offset),
        ).fetchall()
        self.offset += len(rows)
        return [json.loads(bytes(r[0])) for r in rows]

    def wait(self, timeout: float) -> None:
        if self._dirty:
            return
        for _ in self._conn.notifies(timeout=timeout, stop_after=1):
            self._dirty = True

    def fileno(self) -> int:
        return self._conn.fileno()

    def close(self) -> None:
        self._conn.close()


class PgSession(Session):
    def __init__(self, url: str, session_id: str) -> None:
        self.url = url
        self.id = session_id
        # Keyed by the store too: the same session imported into a second store must not share hosts.
        where = urlsplit(url)
        store_key = f"{where.hostname or 'local'}-{where.port or 5432}-{where.path.strip('/') or 'db'}"
        self.work = home() / "team" / store_key / session_id
        self._conn: Any = None
        self._pool: Any = None
        self._listener: Any = None

    @property
    def label(self) -> str:
        return f"{redact(self.url)} (session {self.id})"

    @property
    def conn(self) -> Any:
        if self._conn is None:
            import psycopg

            self._conn = psycopg.connect(self.url, autocommit=True)
        return self._conn

    # -- documents

    def read(self, name: str) -> str | None:
        row = self.conn.execute(
            "SELECT body FROM signoff_docs WHERE session = %s AND name = %s", (self.id, name)
        ).fetchone()
        return row[0] if row else None

    def write(self, name: str, text: str) -> None:
        self.conn.execute(
            "INSERT INTO signoff_docs (session, name, body) VALUES (%s, %s, %s) "
            "ON CONFLICT (session, name) DO UPDATE SET body = excluded.body, updated = now()",
            (self.id, name, text),
        )

    # -- answers

    def answers(self) -> dict[str, Any]:
        rows = self.conn.execute("SELECT interrupt, payload FROM signoff_answers WHERE session = %s", (self.id,))
        return {interrupt: payload for interrupt, payload in rows}

    def claim_answer(self, interrupt: str, payload: dict[str, Any]) -> dict[str, Any]:
        from psycopg.types.json import Jsonb

        with self.conn.transaction():
            self.conn.execute(
                "INSERT INTO signoff_answers (session, interrupt, payload) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (self.id, interrupt, Jsonb(payload)),
            )
            self.conn.execute("SELECT pg_notify(%s, %s)", (pgjournal.answer_channel(self.id), interrupt))
        row = self.conn.execute(
            "SELECT payload FROM signoff_answers WHERE session = %s AND interrupt = %s", (self.id, interrupt)
        ).fetchone()
        return row[0]

    def clear_answers(self, ids: list[str]) -> None:
        self.conn.execute("DELETE FROM signoff_answers WHERE session = %s AND interrupt = ANY(%s)", (self.id, ids))

    @contextmanager
    def deciding(self) -> Generator[None, None, None]:
        import time

        from agent.store.local import DECIDING_WAIT_S

        # A session-level advisory lock on this handle's connection (seed 1: the lease uses seed 0); a
        # process that dies loses its connection and the lock with it.
        deadline = time.monotonic() + DECIDING_WAIT_S
        take = "SELECT pg_try_advisory_lock(hashtextextended(%s, 1))"
        while not self.conn.execute(take, (self.id,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise SessionBusy(f"session {self.id}: another answer is being recorded; try again")
            time.sleep(0.02)
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 1))", (self.id,))

    def wait_for_answer(self, interrupt: str, timeout: float) -> dict[str, Any] | None:
        import psycopg

        if self._listener is None:
            self._listener = psycopg.connect(self.url, autocommit=True)
            self._listener.execute(f'LISTEN "{pgjournal.answer_channel(self.id)}"')
        found = self.answers().get(interrupt)
        if found is None:
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                found = self.answers().get(interrupt)
        return found

    # -- the journal

    def open_journal(self) -> pgjournal.PgJournal:
        return pgjournal.PgJournal(self.url, self.id, artifacts=self.artifacts, trust=writer_trust())

    def events(self) -> Iterator[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (self.id,)
        ).fetchall()
        return (json.loads(bytes(r[0])) for r in rows)

    @contextmanager
    def journal_file(self) -> Generator[Path, None, None]:
        with scratch_dir(f"signoff-{self.id}-") as root:
            journal = self.export_journal(root)
            yield journal

    def export_journal(self, root: Path) -> Path:
        """The journal, its head and its artifacts as the embedded store lays them out under `root`."""
        j = pgjournal.PgJournal(self.url, self.id)
        try:
            j.export(root / "journal.jsonl")
        finally:
            j.close()
        return root / "journal.jsonl"

    def tail(self) -> PgTail:
        return PgTail(self.url, self.id)

    def adopt_journal(self, journal: Path) -> None:
        from agent.journal.head import Head

        head = journal.with_name("head")
        record = Head.model_validate_json(head.read_text()) if head.exists() else None
        j = pgjournal.PgJournal(self.url, self.id, artifacts=journal.parent / "artifacts")
        try:
            j.adopt(journal.read_bytes().splitlines(), record)
        finally:
            j.close()

    # -- checkpoints, lease, local copies

    @contextmanager
    def saver(self) -> Generator[Any, None, None]:
        import psycopg

        if self._pool is None:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            # Parallel investigation branches checkpoint their writes at once: a small pool serves them.
            self._pool = ConnectionPool(
                self.url,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                open=True,
                name=f"signoff-{self.id}",
            )
        from langgraph.checkpoint.postgres import PostgresSaver

        try:
            saver = PostgresSaver(self._pool, serde=serializer())
        except psycopg.Error as exc:
            raise CheckpointUnreadable(f"{redact(self.url)}: {_first_line(exc)}") from None
        yield saver

    @contextmanager
    def locked(self) -> Generator[None, None, None]:
        lease = pgjournal.Lease(
            self.url, self.id, holder=f"pid {os.getpid()} ({getpass.getuser()}@{socket.gethostname()})"
        )
        holder = lease.acquire()
        if holder is not None:
            raise SessionBusy(f"session {self.id} is in use by {holder}; try again when it is done", holder=holder)
        self.leased = True
        try:
            yield
        finally:
            self.leased = False
            lease.release()

    def prepare(self) -> None:
        """Another machine may have run this session so far: fetch its pinned host keys and the
        artifacts this one lacks (a resumed step may read output an earlier step stored)."""
        for d in (self.work.parent.parent, self.work.parent, self.work):
            private_dir(d)
        pinned = self.read("known_hosts.pinned")
        if pinned is not None and (not self.pinned.exists() or self.pinned.read_text() != pinned):
            self.pinned.write_text(pinned)
        j = pgjournal.PgJournal(self.url, self.id)
        try:
            j.fetch_artifacts(self.artifacts)
        finally:
            j.close()

    def pinned_changed(self) -> None:
        self.write("known_hosts.pinned", self.pinned.read_text())

    def compact(self) -> tuple[int, int]:
        sizes = (
            "SELECT coalesce((SELECT sum(pg_column_size(c.*)) FROM checkpoints c WHERE thread_id = %(t)s), 0)"
            " + coalesce((SELECT sum(pg_column_size(b.*)) FROM checkpoint_blobs b WHERE thread_id = %(t)s), 0)"
            " + coalesce((SELECT sum(pg_column_size(w.*)) FROM checkpoint_writes w WHERE thread_id = %(t)s), 0)"
        )
        before = int(self.conn.execute(sizes, {"t": self.id}).fetchone()[0])
        with self.saver() as saver:
            saver.delete_thread(self.id)
        return before, int(self.conn.execute(sizes, {"t": self.id}).fetchone()[0])

    def close(self) -> None:
        for name in ("_conn", "_listener"):
            conn = getattr(self, name)
            if conn is not None:
                conn.close()
                setattr(self, name, None)
        if self._pool is not None:
            self._pool.close()
            self._pool = None


__all__ = ["PgSession", "PgStore", "PgTail", "redact"]
