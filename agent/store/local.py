"""The embedded store: a directory per session under `$SIGNOFF_HOME` (JSONL journal, SQLite checkpoints,
a `flock` lease). `agent.store.pg` is the team's PostgreSQL one; both implement `agent.store.base`."""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent.errors import CheckpointUnreadable, SessionBusy, SessionError
from agent.journal import integrity
from agent.journal.chain import Journal, read_events
from agent.privatefiles import private_file, write_private
from agent.store.base import Session, Store, check_session_id, writer_trust
from agent.store.listing import list_sessions, sessions_root
from agent.store.serde import serializer

# The sessions root, each session directory and `hosts/` are 0711: only their owner lists or writes them,
# while others may pass through to a local host's working directory, which the programs a campaign starts
# as another user must reach (PostgreSQL runs as `postgres` when signoff runs as root). Every file in the
# store is 0600 and `artifacts/` is 0700, so passing through reads nothing.
PASSABLE = 0o711
DECIDING_WAIT_S = 10.0  # recording an answer takes milliseconds: a longer wait is a stuck process


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
    def _answers_locked(self) -> Generator[None, None, None]:
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

    @contextmanager
    def deciding(self) -> Generator[None, None, None]:
        import time

        with private_file(self.root / "decide.lock").open("a+") as fh:
            deadline = time.monotonic() + DECIDING_WAIT_S
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise SessionBusy(f"session {self.id}: another answer is being recorded; try again") from None
                    time.sleep(0.02)
            yield  # closing the file (or the process dying) releases it

    def wait_for_answer(self, interrupt: str, timeout: float) -> dict[str, Any] | None:
        import time

        deadline = time.monotonic() + timeout
        while True:
            found = self.answers().get(interrupt)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def open_journal(self) -> Journal:
        trust = writer_trust()

        def check(limit: int) -> dict[str, Any] | None:
            return integrity.check_file(self.journal, self.id, limit=limit, trust=trust)

        # Under the lease no other runner is alive, so lines past the head are a dead run's: adopted, and said so.
        return Journal(self.journal, self.id, check=check, adopt=self.leased)

    def events(self) -> Iterator[dict[str, Any]]:
        return read_events(self.journal) if self.journal.exists() else iter(())

    @contextmanager
    def journal_file(self) -> Generator[Path, None, None]:
        yield self.journal

    def tail(self) -> FileTail:
        return FileTail(self.journal)

    def adopt_journal(self, journal: Path) -> None:
        from agent.journal import head as checkpoint

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
    def saver(self) -> Generator[Any, None, None]:
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
    def locked(self) -> Generator[None, None, None]:
        """One runner per session: a second `resume`/`decide` is refused with who holds it."""
        private_dir(self.root)
        fh = private_file(self.lock_path).open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise SessionBusy(
                f"session {self.id} is in use by {holder}; try again when it is done", holder=holder
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} ({getpass.getuser()})\n")
        fh.flush()
        self.leased = True
        try:
            yield
        finally:
            self.leased = False
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
def scratch_dir(prefix: str) -> Generator[Path, None, None]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
