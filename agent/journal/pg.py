"""The session journal in PostgreSQL: the same lines, the same hash chain, in an append-only table.

Each row holds one line's exact bytes (what the file journal would hold, without the newline), so an
export is byte-for-byte a file journal and `signoff replay --verify` gives the same answer for both. A
trigger refuses UPDATE, DELETE and TRUNCATE; the head (line count, last hash and, when a signing key
is set, its signed record) lives in a table of its own and is advanced in the same transaction as
the line, under a row lock, so writers on any machine extend one gapless chain. The artifacts a line
names are stored in that transaction too (content-addressed), so no line ever cites evidence the
store lacks; and the commit wakes whoever LISTENs on the session's channel (live attach).
psycopg is imported here only: the embedded store never loads it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent import crashpoints
from agent.journal import events
from agent.journal import head as checkpoint
from agent.journal.chain import ARTIFACT_FIELDS, ENDING_KINDS, GENESIS, Listener, Record, encode

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
ALTER TABLE signoff_journal ADD COLUMN IF NOT EXISTS kind text;
ALTER TABLE signoff_journal ADD COLUMN IF NOT EXISTS ts text;
ALTER TABLE signoff_journal_head ADD COLUMN IF NOT EXISTS record text;
CREATE INDEX IF NOT EXISTS signoff_journal_kind ON signoff_journal (kind, session, seq);
CREATE TABLE IF NOT EXISTS signoff_docs (
    session text NOT NULL,
    name text NOT NULL,
    body text NOT NULL,
    updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session, name)
);
CREATE TABLE IF NOT EXISTS signoff_answers (
    session text NOT NULL,
    interrupt text NOT NULL,
    payload jsonb NOT NULL,
    PRIMARY KEY (session, interrupt)
);
CREATE TABLE IF NOT EXISTS signoff_artifacts (
    session text NOT NULL,
    name text NOT NULL CHECK (name ~ '^sha256-[0-9a-f]{64}$'),
    data bytea NOT NULL,
    PRIMARY KEY (session, name)
);
CREATE OR REPLACE FUNCTION signoff_journal_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at bigint;
    last text;
    body json;
BEGIN
    SELECT events, head INTO at, last FROM signoff_journal_head WHERE session = NEW.session FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO signoff_journal_head (session, events, head) VALUES (NEW.session, 0, repeat('0', 64));
        at := 0;
        last := repeat('0', 64);
    END IF;
    body := convert_from(NEW.line, 'UTF8')::json;  -- json, not jsonb: a line may escape a NUL
    IF NEW.seq IS DISTINCT FROM at OR body->>'seq' IS DISTINCT FROM at::text
            OR body->>'prev' IS DISTINCT FROM last OR body->>'session' IS DISTINCT FROM NEW.session
            OR NEW.hash IS DISTINCT FROM encode(sha256(NEW.line), 'hex') THEN
        RAISE EXCEPTION 'signoff_journal: this line does not extend session %''s chain (it must be seq % with prev %)',
            NEW.session, at, last;
    END IF;
    UPDATE signoff_journal_head SET events = at + 1, head = NEW.hash, record = NULL WHERE session = NEW.session;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS signoff_journal_extends_the_chain ON signoff_journal;
CREATE TRIGGER signoff_journal_extends_the_chain BEFORE INSERT ON signoff_journal
    FOR EACH ROW EXECUTE FUNCTION signoff_journal_chain();
CREATE OR REPLACE FUNCTION signoff_journal_head_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'signoff_journal_head: DELETE refused';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.events <> 0 OR NEW.head <> repeat('0', 64) OR NEW.record IS NOT NULL THEN
            RAISE EXCEPTION 'signoff_journal_head: a head starts at the chain''s beginning';
        END IF;
        RETURN NEW;
    END IF;
    -- Only a line appended through signoff_journal_chain moves the head (one trigger deep); anyone may
    -- (re)sign it, but a record must name the very head it sits beside.
    IF NEW.session IS DISTINCT FROM OLD.session OR ((NEW.events, NEW.head) IS DISTINCT FROM (OLD.events, OLD.head)
            AND pg_trigger_depth() < 2) THEN
        RAISE EXCEPTION 'signoff_journal_head: the head moves only with a line appended to the chain';
    END IF;
    IF NEW.record IS NOT NULL AND ((NEW.record::jsonb->>'events') IS DISTINCT FROM NEW.events::text
            OR NEW.record::jsonb->>'head' IS DISTINCT FROM NEW.head) THEN
        RAISE EXCEPTION 'signoff_journal_head: a head record must name the head it sits beside';
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS signoff_journal_head_moves_with_the_chain ON signoff_journal_head;
CREATE TRIGGER signoff_journal_head_moves_with_the_chain BEFORE INSERT OR UPDATE OR DELETE ON signoff_journal_head
    FOR EACH ROW EXECUTE FUNCTION signoff_journal_head_guard();
"""


def channel(session: str) -> str:
    """The NOTIFY channel a session's journal commits wake (quoted where used: ids hold dashes)."""
    return f"signoff:{session}"[:63]


def answer_channel(session: str) -> str:
    return f"signoff-answer:{session}"[:63]


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

    def __init__(
        self, url: str, session: str, *, artifacts: Path | None = None, trust: checkpoint.Trust | None = None
    ) -> None:
        """`trust`: this is a writer's journal (`PgSession.open_journal`): the session's rows are verified
        first, and again whenever another writer has appended since (agent/journal/integrity.py)."""
        import psycopg

        self.session = session
        # Autocommit: each append is its own transaction block, and a read never leaves one open (which
        # would turn the next append's block into a savepoint that nobody commits).
        self._conn = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._signer = checkpoint.Signer.from_environment()
        self._artifacts = artifacts
        self._stored: set[str] = set()  # artifacts this writer knows the store has
        self._trust = trust
        self._known: tuple[int, str] | None = None  # the head as this writer last verified or wrote it
        if trust is not None:
            try:
                with self._conn.transaction():
                    self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")  # lines and head alike
                    self._known = self._verified(trust)
            except BaseException:
                self._conn.close()
                raise

    def _verified(self, trust: checkpoint.Trust) -> tuple[int, str]:
        """The session's rows checked for a writer (inside the caller's transaction): (events, head)."""
        from agent.journal import integrity

        rows = self._conn.execute(
            "SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (self.session,)
        ).fetchall()
        head = self._conn.execute(
            "SELECT events, head, record FROM signoff_journal_head WHERE session = %s", (self.session,)
        ).fetchone()
        row = (int(head[0]), str(head[1]), head[2]) if head is not None else None
        return integrity.check_rows(self.session, [bytes(r[0]) for r in rows], row, trust=trust)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def append(self, new: events.Event, *, actor: str = "signoff") -> Record:
        kind = new.kind
        with self._lock, self._conn.transaction():
            self._conn.execute(
                "INSERT INTO signoff_journal_head (session, events, head) VALUES (%s, 0, %s) ON CONFLICT DO NOTHING",
                (self.session, GENESIS),
            )
            count, head = _one(
                self._conn.execute(
                    "SELECT events, head FROM signoff_journal_head WHERE session = %s FOR UPDATE", (self.session,)
                ).fetchone()
            )
            if self._trust is not None and (count, head) != self._known:
                self._known = self._verified(self._trust)  # another writer appended since: check what it wrote
            line, event = encode(seq=count, prev=head, session=self.session, event=new, actor=actor)
            self._store_artifacts(event.data)
            self._conn.execute(
                "INSERT INTO signoff_journal (session, seq, line, hash, kind, ts) VALUES (%s, %s, %s, %s, %s, %s)",
                (self.session, count, line, event.hash, kind, event.ts),
            )
            # Unsigned heads are recorded too (they carry `final`); heads stored before that have none.
            record = checkpoint.record(self.session, count + 1, event.hash, self._signer, final=kind in ENDING_KINDS)
            self._conn.execute(
                "UPDATE signoff_journal_head SET events = %s, head = %s, record = %s WHERE session = %s",
                (count + 1, event.hash, record.model_dump_json(exclude_none=True), self.session),
            )
            self._conn.execute("SELECT pg_notify(%s, %s)", (channel(self.session), str(count)))
        self._known = (count + 1, event.hash)
        data = event.data
        points = (kind, f"{kind}/{data['purpose']}") if data.get("purpose") else (kind,)
        crashpoints.reached(*(f"journal:{p}" for p in points))  # the crash tests' kill points, after the commit
        for listener in self._listeners:
            listener(event)
        return event

    def adopt(self, lines: list[bytes], record: checkpoint.Head | None) -> None:
        """Write an imported journal's lines (verified, byte for byte) and its head record, with the
        artifacts they cite, in one transaction: all of it or none. Adopting the same journal again is
        a no-op; a session that has another journal already is refused. Each line goes through the
        chain like any append (the store's trigger checks it and moves the head); the record is kept
        when it names that head (an export cut short past its head keeps none)."""
        last = hashlib.sha256(lines[-1]).hexdigest() if lines else GENESIS
        with self._lock, self._conn.transaction():
            row = self._conn.execute(
                "SELECT events, head FROM signoff_journal_head WHERE session = %s FOR UPDATE", (self.session,)
            ).fetchone()
            if row is not None:
                if (int(row[0]), row[1]) == (len(lines), last):
                    return
                if int(row[0]) != 0:
                    raise ValueError(f"session {self.session} already has a journal in this store ({row[0]} events)")
            else:
                self._conn.execute(
                    "INSERT INTO signoff_journal_head (session, events, head) VALUES (%s, 0, %s)",
                    (self.session, GENESIS),
                )
            with self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO signoff_journal (session, seq, line, hash, kind, ts) VALUES (%s, %s, %s, %s, %s, %s)",
                    [
                        (self.session, seq, line, hashlib.sha256(line).hexdigest(), *_kind_ts(line))
                        for seq, line in enumerate(lines)
                    ],
                )
            for line in lines:
                self._store_artifacts(json.loads(line))
            vouched = record is not None and (record.events, record.head) == (len(lines), last)
            self._conn.execute(
                "UPDATE signoff_journal_head SET events = %s, head = %s, record = %s WHERE session = %s",
                (len(lines), last, record.model_dump_json(exclude_none=True) if record and vouched else None,
                 self.session),
            )  # fmt: skip

    def _store_artifacts(self, data: dict[str, Any]) -> None:
        for name in (data.get(k) for k in ARTIFACT_FIELDS):
            if not isinstance(name, str) or not name.startswith("sha256-") or name in self._stored:
                continue
            path = self._artifacts / name if self._artifacts is not None else None
            if path is not None and path.is_file():
                self._conn.execute(
                    "INSERT INTO signoff_artifacts (session, name, data) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    (self.session, name, path.read_bytes()),
                )
            self._stored.add(name)

    def lines(self) -> Iterator[bytes]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (self.session,)
            ).fetchall()
        for (line,) in rows:
            yield bytes(line)

    def head(self) -> tuple[int, str]:
        record = self.head_record()
        return (record.events, record.head) if record else (0, GENESIS)

    def head_record(self) -> checkpoint.Head | None:
        """The head as the store keeps it: signed by the writer when it had a signing key."""
        with self._lock:
            row = self._conn.execute(
                "SELECT events, head, record FROM signoff_journal_head WHERE session = %s", (self.session,)
            ).fetchone()
        if row is None:
            return None
        if row[2]:
            return checkpoint.Head.model_validate_json(row[2])
        return checkpoint.Head(events=int(row[0]), head=str(row[1]))

    def export(self, path: Path, *, artifacts: bool = True) -> int:
        """Write this session's journal as a file journal, its head (both copies, with the writer's
        signature) and, beside it, its artifacts; returns the line count."""
        lines = list(self.lines())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        record = self.head_record()
        if record is not None:
            checkpoint.write_record(path, record)
        if artifacts:
            self.fetch_artifacts(path.parent / "artifacts")
        return len(lines)

    def fetch_artifacts(self, into: Path) -> int:
        """Copy the session's artifacts the directory lacks from the store; returns how many."""
        into.mkdir(parents=True, exist_ok=True)
        have = {p.name for p in into.iterdir()}
        with self._lock:
            names = [r[0] for r in self._conn.execute(
                "SELECT name FROM signoff_artifacts WHERE session = %s", (self.session,)
            )]  # fmt: skip
        fetched = 0
        for name in names:
            if name in have:
                continue
            with self._lock:
                (data,) = _one(
                    self._conn.execute(
                        "SELECT data FROM signoff_artifacts WHERE session = %s AND name = %s", (self.session, name)
                    ).fetchone()
                )
            tmp = into / f".fetch-{name}"
            tmp.write_bytes(bytes(data))
            tmp.replace(into / name)
            fetched += 1
        self._stored.update(names)
        return fetched

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _kind_ts(line: bytes) -> tuple[str, str]:
    record = json.loads(line)
    return str(record.get("kind", "")), str(record.get("ts", ""))


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
        (got,) = _one(conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.session,)).fetchone())
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


def _one(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """A row the query cannot miss (the same transaction wrote it, or the listing named it)."""
    if row is None:
        raise LookupError("a journal row vanished inside its own transaction")
    return row
