"""The session journal in PostgreSQL: the same lines, the same hash chain, in an append-only table.

Each row holds one line's exact bytes (what the file journal would hold, without the newline), so an
export is byte-for-byte a file journal and `signoff replay --verify` gives the same answer for both. A
trigger refuses UPDATE, DELETE and TRUNCATE; the head (line count and last hash) lives in a table of
its own and is advanced in the same transaction as the line, under a row lock, so writers on any
machine extend one gapless chain. psycopg is imported here only: the embedded store never loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent import checkpoint
from agent.journal import GENESIS, Event, Listener, encode

SCHEMA = """
CREATE TABLE IF NOT EXISTS signoff_journal (
    session text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    line bytea NOT NULL,
    hash text NOT NULL,
    PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS signoff_journal_head (
    session text PRIMARY KEY,
    events bigint NOT NULL,
    head text NOT NULL
);
CREATE OR REPLACE FUNCTION signoff_journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'signoff_journal is append-only: % refused', TG_OP;
END $$;
DROP TRIGGER IF EXISTS signoff_journal_no_change ON signoff_journal;
CREATE TRIGGER signoff_journal_no_change BEFORE UPDATE OR DELETE ON signoff_journal
    FOR EACH ROW EXECUTE FUNCTION signoff_journal_append_only();
DROP TRIGGER IF EXISTS signoff_journal_no_truncate ON signoff_journal;
CREATE TRIGGER signoff_journal_no_truncate BEFORE TRUNCATE ON signoff_journal
    FOR EACH STATEMENT EXECUTE FUNCTION signoff_journal_append_only();
"""


def setup(url: str) -> None:
    """Create the journal tables and their append-only trigger (idempotent)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext('signoff_journal_schema'))")  # two inits at once
        try:
            conn.execute(SCHEMA)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('signoff_journal_schema'))")


class PgJournal:
    """`Journal`'s append and listeners, on PostgreSQL; safe with writers in other processes."""

    def __init__(self, url: str, session: str) -> None:
        import psycopg

        self.session = session
        # Autocommit: each append is its own transaction block, and a read never leaves one open (which
        # would turn the next append's block into a savepoint that nobody commits).
        self._conn = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def append(self, kind: str, *, actor: str = "signoff", **data: Any) -> Event:
        with self._lock, self._conn.transaction():
            self._conn.execute(
                "INSERT INTO signoff_journal_head (session, events, head) VALUES (%s, 0, %s) ON CONFLICT DO NOTHING",
                (self.session, GENESIS),
            )
            events, head = self._conn.execute(
                "SELECT events, head FROM signoff_journal_head WHERE session = %s FOR UPDATE", (self.session,)
            ).fetchone()
            line, event = encode(seq=events, prev=head, session=self.session, kind=kind, actor=actor, data=data)
            self._conn.execute(
                "INSERT INTO signoff_journal (session, seq, line, hash) VALUES (%s, %s, %s, %s)",
                (self.session, events, line, event.hash),
            )
            self._conn.execute(
                "UPDATE signoff_journal_head SET events = %s, head = %s WHERE session = %s",
                (events + 1, event.hash, self.session),
            )
        for listener in self._listeners:
            listener(event)
        return event

    def lines(self) -> Iterator[bytes]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (self.session,)
            ).fetchall()
        for (line,) in rows:
            yield bytes(line)

    def head(self) -> tuple[int, str]:
        with self._lock:
            row = self._conn.execute(
                "SELECT events, head FROM signoff_journal_head WHERE session = %s", (self.session,)
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    def export(self, path: Path) -> int:
        """Write this session's journal as a file journal (and its head file); returns the line count."""
        lines = list(self.lines())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        events, head = self.head()
        checkpoint.write(path, self.session, events, head, checkpoint.Signer.from_environment())
        return len(lines)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class Lease:
    """One runner per session across machines: a PostgreSQL session-level advisory lock on the
    session's id, held by a connection of its own. A runner that dies (even by SIGKILL, or with its
    machine) loses its connection and with it the lease, so another process can take over at once;
    a holder that is alive keeps it however long it runs. Who holds it is recorded for the refusal."""

    def __init__(self, url: str, session: str, *, holder: str) -> None:
        self.url, self.session, self.holder = url, session, holder
        self._conn: Any = None

    def acquire(self) -> str | None:
        """Take the lease; None on success, else who holds it."""
        import psycopg

        conn = psycopg.connect(self.url, autocommit=True, application_name=f"signoff:{self.holder}"[:63])
        got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.session,)).fetchone()[0]
        if got:
            self._conn = conn
            return None
        holder = conn.execute(
            "WITH k AS (SELECT hashtextextended(%s, 0) AS key) "
            "SELECT a.application_name FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid",
            (self.session,),
        ).fetchone()
        conn.close()
        return (holder[0] if holder else "").removeprefix("signoff:") or "another runner"

    def release(self) -> None:
        if self._conn is not None:
            self._conn.close()  # closing the connection ends the lock with it
            self._conn = None
