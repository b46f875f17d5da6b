"""Where sessions live: the one seam between signoff and its storage (issue 10).

A `Store` finds, creates and lists sessions; a `Session` is everything a run needs from storage:
small named documents (meta, campaign and policy texts, model parses), recorded answers, the
journal, the graph's checkpointer, the single-runner lease, and a local working directory for what
must sit on the runner's own disk (local hosts, the artifact cache, pinned host keys).

Two stores implement it: the embedded one here (a directory per session under `$SIGNOFF_HOME`:
JSONL journal, SQLite checkpoints, a `flock`), and PostgreSQL (`agent/pgstore.py`) for a team.
`open_store` picks one from `--store`/`SIGNOFF_STORE`; nothing else knows which is in use.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import re
import shutil
import socket
import sqlite3
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from agent.journal import Event, Journal, Listener, read_events
from agent.listing import list_sessions, sessions_root
from agent.privatefiles import private_file, write_private
from agent.serde import serializer


class SessionError(RuntimeError):
    """A session cannot do what was asked (missing, busy, not waiting); the message says why."""


# What a session id may be: what `new_session_id` makes (`20261204-113247-74d9`) and names people
# choose, never a path (no `/`, no `..`, no leading dot or dash), so an id from meta.json, a URL or
# the command line cannot say where a session is written.
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or SESSION_ID.fullmatch(session_id) is None:
        shown = repr(session_id)[:80]
        raise SessionError(f"{shown} is not a session id (1-64 letters, digits, '-' or '_'; a letter or digit first)")
    return session_id


# The sessions root, each session directory and `hosts/` are 0711: only their owner lists or writes them,
# while others may pass through to a local host's working directory, which the programs a campaign starts
# as another user must reach (PostgreSQL runs as `postgres` when signoff runs as root). Every file in the
# store is 0600 and `artifacts/` is 0700, so passing through reads nothing.
PASSABLE = 0o711


def private_dir(path: Path, mode: int = PASSABLE) -> Path:
    """`path` as a directory only its owner can list or write (made if missing); a symlink in its place is
    refused, since in a shared $SIGNOFF_HOME someone else could have planted it to capture what is written
    there."""
    if path.is_symlink():
        raise SessionError(f"{path} is a symbolic link; signoff writes sessions only into real directories")
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != mode:
        path.chmod(mode)
    return path


class SessionBusy(SessionError):
    """Another process holds the session's lease (it is running the session)."""


class CheckpointUnreadable(RuntimeError):
    """The session's checkpoint store cannot be read, so the graph cannot resume."""


class JournalWriter(Protocol):
    def subscribe(self, listener: Listener) -> None: ...

    def append(self, kind: str, *, actor: str = "signoff", **data: Any) -> Event: ...

    def close(self) -> None: ...


class Tail(Protocol):
    """Complete journal events appended since the last read."""

    offset: int

    def read(self) -> list[dict[str, Any]]: ...

    def wait(self, timeout: float) -> None: ...  # block until something may have been appended

    def close(self) -> None: ...


def owner() -> str:
    """Who started a session, as a team sees it: user@host."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


class Session(ABC):
    """One session in some store (see the module docstring for what it offers)."""

    id: str
    work: Path  # the runner's local working directory

    @property
    def hosts(self) -> Path:
        return self.work / "hosts"

    @property
    def artifacts(self) -> Path:
        return self.work / "artifacts"

    @property
    def pinned(self) -> Path:
        return self.work / "known_hosts.pinned"

    @property
    @abstractmethod
    def label(self) -> str:
        """Where the journal is, for people: a path, or the store and session."""

    # -- small documents (meta.json, campaign.yaml, policy.yaml, parses.json)

    @abstractmethod
    def read(self, name: str) -> str | None: ...

    @abstractmethod
    def write(self, name: str, text: str) -> None: ...

    def meta(self) -> dict[str, Any]:
        text = self.read("meta.json")
        if text is None:
            raise SessionError(f"session {self.id} has no meta.json")
        return json.loads(text)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self.write("meta.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")

    # -- answers recorded for paused gates, keyed by interrupt id

    @abstractmethod
    def answers(self) -> dict[str, Any]: ...

    @abstractmethod
    def claim_answer(self, interrupt: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Record `payload` as the answer for `interrupt` unless one is recorded already; returns the
        answer that stands (first writer wins, across processes and machines)."""

    @abstractmethod
    def clear_answers(self, ids: list[str]) -> None: ...

    # -- the journal

    @abstractmethod
    def open_journal(self) -> JournalWriter: ...

    @abstractmethod
    def events(self) -> Iterator[dict[str, Any]]: ...

    @abstractmethod
    def journal_file(self) -> Any:
        """Context manager: the path of a file journal with its head and artifacts beside it (the
        embedded store's own; an export for other stores), for the readers that verify and report."""

    @abstractmethod
    def tail(self) -> Tail: ...

    @abstractmethod
    def adopt_journal(self, journal: Path) -> None:
        """Take a verified file journal (its lines byte for byte, its head record and the artifacts
        beside it) as this session's, which has none yet (an import)."""

    # -- checkpoints and the lease

    @abstractmethod
    def saver(self) -> Any:
        """Context manager: a LangGraph checkpointer for this session (CheckpointUnreadable if not)."""

    @abstractmethod
    def locked(self) -> Any:
        """Context manager: the single-runner lease; SessionBusy names the holder."""

    def prepare(self) -> None:  # noqa: B027 - the embedded store has nothing to fetch
        """Bring what a runner needs onto its own disk (before it runs the session here)."""

    def pinned_changed(self) -> None:  # noqa: B027 - the embedded store's pinned file is the record
        """A host key was pinned into `self.pinned`: keep the store's copy current."""

    @abstractmethod
    def compact(self) -> tuple[int, int]:
        """Drop the graph checkpoints (bytes before, after); the journal and artifacts stay."""

    @abstractmethod
    def wait_for_answer(self, interrupt: str, timeout: float) -> dict[str, Any] | None:
        """Block up to `timeout` s for an answer to `interrupt` (a `decide` from any machine)."""

    def close(self) -> None:  # noqa: B027 - nothing held open by default
        """Release connections this handle opened."""


class Store(ABC):
    url: str  # "local" or the database URL without its password

    @abstractmethod
    def session(self, session_id: str) -> Session: ...

    def find(self, session_id: str) -> Session:
        s = self.session(session_id)
        if s.read("meta.json") is None:
            s.close()
            recent = ", ".join(r["id"] for r in self.list_sessions()[-5:])
            raise SessionError(f"no session {session_id!r} in {self.where}" + (f"; recent: {recent}" if recent else ""))
        return s

    @property
    @abstractmethod
    def where(self) -> str: ...

    @abstractmethod
    def new(self, session_id: str) -> Session: ...

    @abstractmethod
    def list_sessions(self) -> list[dict[str, Any]]: ...


def open_store(url: str | None = None) -> Store:
    """`--store` beats `SIGNOFF_STORE`; neither means the embedded store under `$SIGNOFF_HOME`."""
    url = url if url is not None else os.environ.get("SIGNOFF_STORE", "")
    if not url or url == "local":
        return LocalStore()
    if url.startswith(("postgresql://", "postgres://")):
        from agent.pgstore import PgStore

        return PgStore(url)
    raise SessionError(f"unknown store {url!r}: use postgresql://… or leave it unset for the local store")


# -- the embedded store


class LocalStore(Store):
    url = "local"

    @property
    def where(self) -> str:
        return str(sessions_root())

    def session(self, session_id: str) -> SessionDir:
        return SessionDir(check_session_id(session_id))

    def find(self, session_id: str) -> SessionDir:
        s = super().find(session_id)
        assert isinstance(s, SessionDir)
        return s

    def new(self, session_id: str) -> SessionDir:
        """A new session directory, made here and now (FileExistsError when the name is taken, even by a
        link: nothing is written into something this call did not create)."""
        d = SessionDir(check_session_id(session_id))
        private_dir(d.root.parent)
        d.root.mkdir(mode=PASSABLE)
        return d

    def list_sessions(self) -> list[dict[str, Any]]:
        return list_sessions()


class FileTail:
    """Complete journal lines appended since the last read (a torn last line waits for its end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""
        self._size = -1

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read()
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [json.loads(line) for line in lines if line.strip()]

    def wait(self, timeout: float) -> None:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            size = self.path.stat().st_size if self.path.exists() else 0
            if size != self.offset:
                return
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        return None


class SessionDir(Session):
    """A session in `$SIGNOFF_HOME/sessions/<id>/`: `journal.jsonl` + `head` (the audit record),
    `checkpoints.sqlite` (graph state), `artifacts/`, `hosts/`, `campaign.yaml` and `policy.yaml` (the
    exact texts the run uses), `meta.json`, `answers.json` (decisions not yet resumed) and `lock`."""

    def __init__(self, session_id: str, root: Path | None = None) -> None:
        self.id = session_id
        self.root = root or sessions_root() / check_session_id(session_id)
        self.work = self.root
        self.journal = self.root / "journal.jsonl"
        self.checkpoints = self.root / "checkpoints.sqlite"
        self.meta_path = self.root / "meta.json"
        self.answers_path = self.root / "answers.json"
        self.lock_path = self.root / "lock"

    @classmethod
    def find(cls, session_id: str) -> SessionDir:
        return LocalStore().find(session_id)

    @property
    def label(self) -> str:
        return str(self.journal)

    def read(self, name: str) -> str | None:
        path = self.root / name
        return path.read_text() if path.exists() else None

    def write(self, name: str, text: str) -> None:
        write_private(self.root / name, text)

    def answers(self) -> dict[str, Any]:
        return json.loads(self.answers_path.read_text()) if self.answers_path.exists() else {}

    @contextmanager
    def _answers_locked(self) -> Iterator[None]:
        with private_file(self.root / "answers.lock").open("a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def claim_answer(self, interrupt: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self._answers_locked():
            answers = self.answers()
            if interrupt not in answers:
                answers[interrupt] = payload
                self.write("answers.json", json.dumps(answers, indent=2))
            return answers[interrupt]

    def clear_answers(self, ids: list[str]) -> None:
        with self._answers_locked():
            self.write("answers.json", json.dumps({k: v for k, v in self.answers().items() if k not in ids}, indent=2))

    def wait_for_answer(self, interrupt: str, timeout: float) -> dict[str, Any] | None:
        import time

        deadline = time.monotonic() + timeout
        while True:
            found = self.answers().get(interrupt)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def open_journal(self) -> Journal:
        return Journal(self.journal, self.id)

    def events(self) -> Iterator[dict[str, Any]]:
        return read_events(self.journal) if self.journal.exists() else iter(())

    @contextmanager
    def journal_file(self) -> Iterator[Path]:
        yield self.journal

    def tail(self) -> FileTail:
        return FileTail(self.journal)

    def adopt_journal(self, journal: Path) -> None:
        from agent import checkpoint

        if journal.resolve() == self.journal.resolve():
            return
        if journal.parent.joinpath("artifacts").is_dir():
            shutil.copytree(journal.parent / "artifacts", self.artifacts, dirs_exist_ok=True)
        shutil.copyfile(journal, self.journal)
        self.journal.chmod(0o600)
        head = journal.with_name("head")
        if head.exists():
            checkpoint.write_record(self.journal, checkpoint.Head.model_validate_json(head.read_text()))

    @contextmanager
    def saver(self) -> Iterator[Any]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        try:
            path = private_file(self.checkpoints)
        except OSError as exc:  # a link planted in its place (O_NOFOLLOW), or no permission
            raise CheckpointUnreadable(f"{self.checkpoints}: {exc.strerror}") from None
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            try:
                saver = SqliteSaver(conn, serde=serializer())
                saver.setup()
                # WAL + NORMAL: durable across process crashes at ~1 ms per step (research/langgraph.md §5).
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.DatabaseError as exc:
                raise CheckpointUnreadable(f"{self.checkpoints}: {exc}") from None
            yield saver
        finally:
            conn.close()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One runner per session: a second `resume`/`decide` is refused with who holds it."""
        private_dir(self.root)
        fh = private_file(self.lock_path).open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise SessionBusy(f"session {self.id} is in use by {holder}; try again when it is done") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} ({getpass.getuser()})\n")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    def compact(self) -> tuple[int, int]:
        before = self.checkpoints.stat().st_size if self.checkpoints.exists() else 0
        if self.checkpoints.exists():
            conn = sqlite3.connect(self.checkpoints)
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                with conn:
                    for table in tables - {"journal_head"}:
                        conn.execute(f'DELETE FROM "{table}"')
                conn.execute("VACUUM")
            finally:
                conn.close()
        return before, self.checkpoints.stat().st_size if self.checkpoints.exists() else 0


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
