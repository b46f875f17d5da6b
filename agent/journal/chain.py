"""The session journal: append-only, one RFC 8785 canonical JSON object per line, hash-chained.

Each line carries `prev` = sha256 of the previous line's bytes (64 zeros for the first), so an edit,
a deletion or a swap breaks the chain at a known seq. The head (last hash + line count) is also
written to a `head` file beside it, so truncation and a recomputed chain are detectable too.
Verification hashes raw bytes; it never needs to re-canonicalise.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import threading
from collections.abc import Callable, Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rfc8785
from pydantic import BaseModel

from agent import crashpoints
from agent.journal import events
from agent.journal import head as checkpoint
from tools.artifacts import StorageFull

FORMAT_VERSION = 1
GENESIS = "0" * 64
# fsync these at once and commit the head after them: they are what an auditor asks about first, and (policy
# changes, proposed options, lines adopted after a crash) what a head must vouch for before a resume acts on it.
DURABLE_KINDS = (
    "session.", "gate.", "decision", "rule.", "rollback", "report", "policy.", "plan", "log.", "goal."
)  # fmt: skip
# fsync these too (a mutation's started/finished lines carry an `effect`): after a crash they decide
# whether it may run again. The head follows at the next line above, or at close.
LEDGER_KINDS = ("mutation.",)
# The event that ends a session for good: a head written right after it is final (nothing may follow).
# `session.failed` is not one: a run that failed keeps its checkpoint and `signoff resume` goes on.
ENDING_KINDS = ("session.finished",)
# The kinds whose lines change what a resumed run executes: the documents it runs under (their digests),
# options a brain proposed (with their commands; `plan` only when it proposes something), and the decisions and
# standing rules a resume applies (an answer waiting in the store is applied only as its decision line says).
# Only a head may vouch for one (agent/journal/integrity.py), so the journal announces each in its head (the
# head's `intent`) before writing it, and writes the head again after it: at no moment is one on disk unvouched.
STEERING = ("session.started", "policy.changed", "decision", "rule.added")
# The fields that name an artifact (full command output, by digest): verification checks each one.
ARTIFACT_FIELDS = ("artifact", "stderr_artifact", "diagnosis")


def steers(kind: object, fields: dict[str, Any]) -> bool:
    """Whether a journal line of `kind` with `fields` (a parsed line, or an event's data) changes what a resumed run
    executes."""
    return kind in STEERING or (kind == "plan" and bool(fields.get("proposals")))


class Record(BaseModel):
    seq: int
    kind: str
    ts: str
    actor: str
    data: dict[str, Any]
    hash: str


Listener = Callable[[Record], None]
# A writer's check of the journal's first N bytes (its whole lines) before it appends: raises when they must
# not be gone on from; else the `log.adopted` fields for lines past the head (None: there are none).
Check = Callable[[int], dict[str, Any] | None]


def _plain(value: Any, exotic: list[str]) -> Any:
    """JSON-plain, JCS-safe data: no NaN/Inf, integers below ±2^53, pydantic models dumped, and a float that is
    a whole number below 2^53 as that integer (RFC 8785 writes 5.0 as `5`). Notes in `exotic` what the standard
    library's JSON would write otherwise than RFC 8785: another whole float, a float outside 1e-4..1e16 (exponent
    forms differ) and a key beyond ASCII (keys are sorted by UTF-16 units there, by code points here)."""
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="json"), exotic)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = str(k)
            if not key.isascii():
                exotic.append(key)
            out[key] = _plain(v, exotic)
        return out
    if isinstance(value, list | tuple):
        return [_plain(v, exotic) for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        value = round(value, 9)
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        if value.is_integer() or not 1e-4 <= abs(value) < 1e16:
            exotic.append(repr(value))
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        return str(value)  # RFC 8785 allows integers below 2^53 only (2^53 itself made rfc8785 raise)
    if isinstance(value, Path):
        return str(value)
    return value


def canonical(value: dict[str, Any], exotic: list[str]) -> bytes:
    """RFC 8785 bytes of JSON-plain `value` (`_plain`'s output): the standard library's C encoder where it writes
    exactly those bytes (sorted keys, no spaces, UTF-8 as is, the same escapes and, for plain floats, the same
    shortest digits), the `rfc8785` package for what `_plain` noted as exotic. A command's line takes 5 µs instead
    of 21: encoding was 8 % of signoff's own time per graph step (bench/overhead.py, sampled with py-spy)."""
    if not exotic:
        # A lone surrogate, a value JSON has no form for: rfc8785 refuses it in its own words, as it always did.
        with contextlib.suppress(UnicodeEncodeError, TypeError):
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return rfc8785.dumps(value)


def encode(
    *, seq: int, prev: str, session: str, event: events.Event, actor: str, ts: str | None = None
) -> tuple[bytes, Record]:
    """One journal line (RFC 8785 canonical JSON, no newline) and the record of it. Every store writes
    exactly these bytes, so one verifier serves them all. (`ts` is now unless given: a test re-encodes.)"""
    kind, data = event.kind, event.fields()
    ts = ts or datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    exotic: list[str] = []
    plain = _plain(data, exotic)
    record = {"v": FORMAT_VERSION, "seq": seq, "ts": ts, "session": session, "kind": kind, "actor": actor, "prev": prev}
    line = canonical({**record, **plain}, exotic)
    recorded = Record(seq=seq, kind=kind, ts=ts, actor=actor, data=plain, hash=hashlib.sha256(line).hexdigest())
    return line, recorded


class Journal:
    """Thread-safe within the process, and safe with writers in other processes: each append holds an
    exclusive `flock` on the file and, when another process wrote since, first picks up its chain.
    (The runner is the main writer; a `decide` from elsewhere may add its lines while a runner waits.)"""

    def __init__(self, path: Path, session: str, *, check: Check | None = None, adopt: bool = False) -> None:
        """`check`: verify the journal before anything is appended, here and whenever another process has
        appended since (agent/journal/integrity.py); `adopt`: this writer holds the session's lease, so
        lines past the head are a dead run's, and it journals that it goes on from them (`log.adopted`)."""
        self.path = path
        self.session = session
        self.head_path = path.with_name("head")
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._signer = checkpoint.Signer.from_environment()
        self._check = check
        self._seq, self._prev, self._size = 0, GENESIS, 0
        self._final = False  # the last line ended the session
        # 0600: the journal holds command output; a new one is its owner's alone.
        self._fh = os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        try:
            raw = self.path.read_bytes()
            past = self._checked(raw)
            recovered = self._recover(raw)
        except BaseException:
            self._fh.close()  # nothing was written: a journal that fails its check is left as it was
            raise
        finally:
            if not self._fh.closed:
                fcntl.flock(self._fh, fcntl.LOCK_UN)
        if past is not None and adopt:
            self.append(events.LogAdoptedEvent(**past))
        if recovered is not None:
            self.append(events.LogRecoveredEvent(**recovered))

    @contextlib.contextmanager
    def _exclusive(self) -> Generator[None, None, None]:
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        try:
            if os.fstat(self._fh.fileno()).st_size != self._size:
                raw = self.path.read_bytes()
                self._checked(raw)  # another process appended since our last line: what it wrote is checked too
                self._recover(raw)
            yield
        finally:
            fcntl.flock(self._fh, fcntl.LOCK_UN)

    def _checked(self, raw: bytes) -> dict[str, Any] | None:
        """The writer's check of the whole lines in `raw` (a torn last line is cut by `_recover`)."""
        return self._check(raw.rfind(b"\n") + 1) if self._check is not None else None

    def _recover(self, raw: bytes) -> dict[str, Any] | None:
        """Continue the journal as the file holds it (`raw`, read under the lock); cut a torn last line (a
        crash mid-write: every writer holds the lock for a whole line) and say so."""
        lines = raw.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        seq, prev = 0, GENESIS
        for line in lines:
            seq += 1
            prev = hashlib.sha256(line).hexdigest()
        self._seq, self._prev, self._size = seq, prev, len(raw) - len(tail)
        self._final = bool(lines) and kind_of(lines[-1]) in ENDING_KINDS
        if tail:
            os.truncate(self.path, self._size)
            return {"torn_bytes": len(tail), "torn_digest": hashlib.sha256(tail).hexdigest()}
        return None

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def append(self, new: events.Event, *, actor: str = "signoff") -> Record:
        kind = new.kind
        with self._lock, self._exclusive():
            line, event = encode(seq=self._seq, prev=self._prev, session=self.session, event=new, actor=actor)
            data = event.data
            points = (kind, f"{kind}/{data['purpose']}") if data.get("purpose") else (kind,)
            announced = steers(kind, data)
            if announced:
                # Announced first: a crash after the line is written and before the head that covers it
                # leaves a line its head vouches for, not one that only a forger could have put there. Synced
                # first, as before every head: a head never vouches for lines the disk may not have.
                os.fsync(self._fh.fileno())
                self._write_head(intent=event.hash)
                crashpoints.reached(f"intent:{kind}")
            if crashpoints.armed(f"torn:{kind}"):
                self._fh.write(line[: len(line) // 2])
                self._fh.flush()
                crashpoints.kill()
            try:
                self._write(line + b"\n")
            except BaseException:
                if announced:  # the line was given up (a full disk): the head no longer announces it
                    with contextlib.suppress(Exception):
                        self._write_head()
                raise
            self._size += len(line) + 1
            self._seq += 1
            self._prev = event.hash
            self._final = kind in ENDING_KINDS
            if kind.startswith(DURABLE_KINDS):
                os.fsync(self._fh.fileno())
                crashpoints.reached(f"unheaded:{kind}")
                self._write_head()
            elif kind.startswith(LEDGER_KINDS) or data.get("effect"):
                os.fsync(self._fh.fileno())
            crashpoints.reached(*(f"journal:{p}" for p in points))
        for listener in self._listeners:
            listener(event)
        return event

    def _write(self, data: bytes) -> None:
        """Write one whole line or nothing: a write the disk refused must not leave half a line in the
        file, nor in the buffer, where it would come out ahead of the next line and break the chain."""
        offset = self._fh.tell()
        try:
            self._fh.write(data)
            self._fh.flush()
        except OSError as exc:
            with contextlib.suppress(OSError):
                self._fh.close()  # drops what the buffer still held
            os.truncate(self.path, offset)
            self._fh = self.path.open("ab")
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                where = f"no space left for the journal in {self.path.parent} ({exc.strerror})"
                raise StorageFull(exc.errno, where) from exc
            raise

    def _write_head(self, *, intent: str | None = None) -> None:
        checkpoint.write(self.path, self.session, self._seq, self._prev, self._signer, final=self._final, intent=intent)

    @property
    def head(self) -> str:
        return self._prev

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                with self._exclusive():
                    os.fsync(self._fh.fileno())
                    self._write_head()
                self._fh.close()


def kind_of(line: bytes) -> str:
    try:
        return str(json.loads(line).get("kind", ""))
    except (json.JSONDecodeError, AttributeError):
        return ""


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
