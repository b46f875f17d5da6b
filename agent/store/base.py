"""The one seam between signoff and its storage: a `Store` finds, creates and lists sessions; a `Session` is
everything a run needs from storage (small named documents, recorded answers, the journal, the graph's
checkpointer, the single-runner lease and a local working directory). `agent.store.local` and
`agent.store.pg` implement it; `agent.store.open_store` picks one.
"""

from __future__ import annotations

import getpass
import json
import re
import socket
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.errors import SessionError
from agent.journal import events
from agent.journal.chain import Listener, Record
from agent.journal.head import Trust

# What a session id may be: what `new_session_id` makes (`20261204-113247-74d9`) and names people
# choose, never a path (no `/`, no `..`, no leading dot or dash), so an id from meta.json, a URL or
# the command line cannot say where a session is written.
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or SESSION_ID.fullmatch(session_id) is None:
        shown = repr(session_id)[:80]
        raise SessionError(f"{shown} is not a session id (1-64 letters, digits, '-' or '_'; a letter or digit first)")
    return session_id


class BrainChoice(BaseModel):
    kind: str
    model: str | None = None


class SessionMeta(BaseModel):
    """meta.json as a runner reads it: what the session was made with. Checked wherever it is read (a
    store's files and an export are someone's to edit); each field a run depends on must be there and of
    its type, and the journal then vouches for the ones that change what runs (agent/journal/documents.py)."""

    model_config = ConfigDict(extra="allow")

    id: str
    campaign: str
    campaign_name: str
    campaign_sha256: str
    campaign_dir: str
    policy: str
    created: datetime
    ssh_config: str | None = None
    accept_new_host_keys: bool = False
    brain: BrainChoice | None = None
    status: str | None = None


def meta_problem(data: object) -> str | None:
    """What is wrong with a meta.json's parsed JSON, in words (None: nothing)."""
    if not isinstance(data, dict):
        return "is not a JSON object"
    try:
        SessionMeta.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(the whole)"
        if first["type"] == "missing":
            return f"lacks {field!r}"
        return f"has an unusable {field!r} ({first['msg']})"
    return None


class JournalWriter(Protocol):
    def subscribe(self, listener: Listener) -> None: ...

    def append(self, new: events.Event, *, actor: str = "signoff") -> Record: ...

    def close(self) -> None: ...


class Tail(Protocol):
    """Complete journal events appended since the last read."""

    offset: int

    def read(self) -> list[dict[str, Any]]: ...

    def wait(self, timeout: float) -> None: ...  # block until something may have been appended

    def close(self) -> None: ...


def writer_trust() -> Trust:
    """Whose signed heads this process may go on from (SessionError for a key that cannot be used)."""
    try:
        return Trust.from_environment()
    except ValueError as exc:
        raise SessionError(str(exc)) from None


def owner() -> str:
    """Who started a session, as a team sees it: user@host."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


class Session(ABC):
    """One session in some store (see the module docstring for what it offers)."""

    id: str
    work: Path  # the runner's local working directory
    leased: bool = False  # this handle holds the single-runner lease now (inside `locked()`)

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
        """meta.json, checked (`SessionMeta`): SessionError, one line, for one that cannot be used."""
        text = self.read("meta.json")
        if text is None:
            raise SessionError(f"session {self.id} has no meta.json")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SessionError(f"session {self.id}: meta.json:{exc.lineno}: not JSON ({exc.msg})") from None
        problem = meta_problem(data)
        if problem is not None:
            raise SessionError(f"session {self.id}: its meta.json {problem}; nothing ran")
        return data

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

    @abstractmethod
    def deciding(self) -> Any:
        """Context manager: held by whoever records an answer to a gate (a person on any machine, a
        deadline), so that checking the gate is still open and recording the answer are one step.
        Held for milliseconds; SessionBusy when it cannot be had within seconds."""

    # -- the journal

    @abstractmethod
    def open_journal(self) -> JournalWriter:
        """The journal, to append to: only once it verifies for a writer (`agent.journal.integrity`;
        JournalUnverified, with nothing written, when it does not). Every writer opens it here."""

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
