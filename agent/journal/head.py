"""The journal's head, kept outside the journal: in the `head` file and in the session's checkpoint
database, optionally signed with Ed25519. Someone who rewrites the journal and recomputes its whole
chain must also rewrite both copies — and, when signing is on, forge the signature.

Signing: set `SIGNOFF_SIGNING_KEY` to an Ed25519 private key (PEM or OpenSSH format). Verify with
the matching public key (`signoff replay ID --verify --key KEY.pub`): a signature made by any other
key is refused. A runner with a key goes on only with a head signed by that key or by one named in
`SIGNOFF_TRUSTED_KEYS` (public key files, separated like PATH): see `agent.journal.integrity`.
"""

from __future__ import annotations

import base64
import os
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent import crashpoints
from agent.privatefiles import private_file, write_private

DB_NAME = "checkpoints.sqlite"
MAX_HEAD = 1 << 16  # a head record is a few hundred bytes; more is not one, and is never read whole


class Head(BaseModel):
    # Built on first use, not at import: every command imports this module, few read a head (~4 ms of start-up).
    model_config = ConfigDict(defer_build=True)

    events: int
    head: str
    signature: str | None = None  # base64 Ed25519 signature of "<session>:<events>:<head>[:final][:intent=…]"
    key: str | None = None  # the signer's raw public key, hex (which key signed; not a trust anchor)
    # True when the head's last event ended the session (session.finished): nothing may follow it.
    # Absent (not False) otherwise, so a head written before this field existed keeps its exact bytes.
    final: bool | None = None
    # The sha256 of the one line this head's writer was about to append at seq `events` (an intent): a line
    # that changes what a resume runs is announced in the head before it is written, so that a crash between
    # writing it and the head after it leaves it vouched for (agent/journal/integrity.py). Absent otherwise.
    intent: str | None = Field(default=None, pattern="^[0-9a-f]{64}$")


def message(session: str, events: int, head: str, final: bool = False, intent: str | None = None) -> bytes:
    """What a signature covers. A final head signs ":final" too, so a signed head that says the session
    ended cannot be turned into one that says it goes on (and take forged events after it); a head with an
    intent signs ":intent=<sha256>", so only the key's holder can announce the line that follows it."""
    return f"{session}:{events}:{head}{':final' if final else ''}{f':intent={intent}' if intent else ''}".encode()


class Signer:
    def __init__(self, private_key: Any) -> None:
        self.key = private_key

    @classmethod
    def from_environment(cls) -> Signer | None:
        path = os.environ.get("SIGNOFF_SIGNING_KEY")
        if not path:
            return None
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        try:
            data = Path(path).expanduser().read_bytes()
            loader = serialization.load_ssh_private_key if b"OPENSSH" in data else serialization.load_pem_private_key
            key = loader(data, password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"SIGNOFF_SIGNING_KEY={path}: {exc}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError(f"SIGNOFF_SIGNING_KEY={path}: not an Ed25519 private key")
        return cls(key)

    @property
    def public(self) -> bytes:
        """The raw Ed25519 public key (what a head records as `key`, in hex)."""
        from cryptography.hazmat.primitives import serialization

        return self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def sign(self, session: str, events: int, head: str, *, final: bool = False, intent: str | None = None) -> Head:
        raw = self.public
        signature = base64.b64encode(self.key.sign(message(session, events, head, final, intent))).decode()
        return Head(events=events, head=head, signature=signature, key=raw.hex(), final=final or None, intent=intent)


def record(
    session: str, events: int, head: str, signer: Signer | None, *, final: bool = False, intent: str | None = None
) -> Head:
    if signer is not None:
        return signer.sign(session, events, head, final=final, intent=intent)
    return Head(events=events, head=head, final=final or None, intent=intent)


def write(
    journal: Path,
    session: str,
    events: int,
    head: str,
    signer: Signer | None,
    *,
    final: bool = False,
    intent: str | None = None,
) -> None:
    """`intent`: the sha256 of the line about to be appended at seq `events`, announced (see `Head.intent`)."""
    write_record(journal, record(session, events, head, signer, final=final, intent=intent))


def write_record(journal: Path, record: Head) -> None:
    """Both copies of a head beside `journal`: the `head` file and the checkpoint DB's table."""
    events, head = record.events, record.head
    write_private(journal.with_name("head"), record.model_dump_json(exclude_none=True) + "\n")
    crashpoints.reached("head:copies")  # the head file written, the DB's copy not yet
    try:
        db = private_file(journal.with_name(DB_NAME))
    except OSError:
        return  # a link planted in its place is never written through; the runner reports the DB
    conn = sqlite3.connect(db, timeout=10)
    try:
        # As durable as the checkpoints beside it (agent/store/local.py: WAL + NORMAL), and as the head file, which
        # is not synced either: FULL made every head a WAL fsync, about a third of a journal's cost per graph step.
        conn.execute("PRAGMA synchronous=NORMAL")
        _upsert(conn, events, head, record)
    except sqlite3.DatabaseError:
        pass  # an unreadable checkpoint DB is reported by the runner; the head file still holds the head
    finally:
        conn.close()


def _upsert(conn: sqlite3.Connection, events: int, head: str, record: Head) -> None:
    with conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS journal_head "
            "(id INTEGER PRIMARY KEY CHECK (id = 1), events INTEGER NOT NULL, head TEXT NOT NULL, record TEXT)"
        )
        conn.execute(
            "INSERT INTO journal_head (id, events, head, record) VALUES (1, ?, ?, ?) ON CONFLICT(id) "
            "DO UPDATE SET events = excluded.events, head = excluded.head, record = excluded.record",
            (events, head, record.model_dump_json(exclude_none=True)),
        )


def read_all(journal: Path) -> list[tuple[str, Head]]:
    """Every copy of the head there is: ("head file", …), ("checkpoint DB", …). ValueError, in words, for a
    copy that is there but is not a head (a store's files are anyone's to edit)."""
    out: list[tuple[str, Head]] = []
    head_file = journal.with_name("head")
    if head_file.exists():
        try:
            with head_file.open("rb") as fh:
                data = fh.read(MAX_HEAD + 1)
        except OSError as exc:
            raise ValueError(f"the head file cannot be read ({exc.strerror})") from None
        out.append(("head file", parse("head file", data)))
    db = journal.with_name(DB_NAME)
    if db.exists():
        # Without a -wal beside it there is nothing but the file to read: open it immutable, so that reading
        # writes nothing (read-only, SQLite still made a -wal and a -shm beside a WAL-mode file: in a bundle
        # being imported, say). With one, read-only, to see what the WAL holds.
        wal = db.with_name(db.name + "-wal")
        mode = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "immutable=1"
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, timeout=10)
        try:
            row = conn.execute("SELECT record FROM journal_head WHERE id = 1").fetchone()
        except sqlite3.DatabaseError:
            row = None  # a session from before the checkpoint table, or a DB that cannot be read
        finally:
            conn.close()
        if row is not None:
            out.append(("checkpoint DB", parse("checkpoint DB", row[0])))
    return out


def parse(source: str, data: str | bytes | None) -> Head:
    """A stored head record (ValueError, naming `source`, for anything else)."""
    if data is None or len(data) > MAX_HEAD:
        raise ValueError(f"the {source} is not a head ({'empty' if data is None else 'too large'})")
    try:
        return Head.model_validate_json(data)
    except ValueError as exc:
        why = str(exc).splitlines()[-1].strip() if str(exc).strip() else type(exc).__name__
        raise ValueError(f"the {source} is not a head ({why[:120]})") from None


def check_signature(head: Head, session: str, pinned: bytes | None) -> str | None:
    """Why the signature does not hold (None when it does, or when nothing asks for one)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if head.signature is None:
        return "the head is not signed, but a key was given to check it with" if pinned is not None else None
    try:
        raw = pinned if pinned is not None else bytes.fromhex(head.key or "")
        Ed25519PublicKey.from_public_bytes(raw).verify(
            base64.b64decode(head.signature), message(session, head.events, head.head, bool(head.final), head.intent)
        )
    except (InvalidSignature, ValueError):
        return "the head's signature does not verify" + (" with the given key" if pinned is not None else "")
    return None


def load_public_key(path: Path) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = path.read_bytes()
    key = (
        serialization.load_ssh_public_key(data) if data.startswith(b"ssh-") else serialization.load_pem_public_key(data)
    )
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path}: not an Ed25519 public key")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class Trust(BaseModel):
    """Whose signed heads a writer may go on from: its own signing key's and those it was told to trust."""

    model_config = ConfigDict(defer_build=True)  # as Head's

    signer: bytes | None = None  # SIGNOFF_SIGNING_KEY's public key: what this writer signs with (None: unsigned)
    keys: frozenset[bytes] = frozenset()  # the signer's and SIGNOFF_TRUSTED_KEYS' public keys

    @classmethod
    def from_environment(cls) -> Trust:
        """ValueError (naming the variable) for a key that cannot be used."""
        signer = Signer.from_environment()
        keys = {signer.public} if signer is not None else set()
        for name in filter(None, os.environ.get("SIGNOFF_TRUSTED_KEYS", "").split(os.pathsep)):
            try:
                keys.add(load_public_key(Path(name).expanduser()))
            except (OSError, ValueError, TypeError) as exc:
                raise ValueError(f"SIGNOFF_TRUSTED_KEYS: {name}: {exc}") from None
        return cls(signer=signer.public if signer is not None else None, keys=frozenset(keys))
