"""`signoff export SESSION DIR` and `signoff import DIR`: move a session between stores, losslessly.

DIR is laid out exactly like a session of the embedded store (`journal.jsonl`, `head`, `artifacts/`,
`checkpoints.sqlite`, the documents, `answers.json`, `hosts/`) plus `export.json`, a manifest. So
`signoff replay --verify` reads an export as it is, and an export of a team session can be audited
on a laptop with no database. The journal moves byte for byte with its (possibly signed) head; the
graph's checkpoints move through LangGraph's saver API, every checkpoint of every namespace with its
pending writes, so the imported session resumes where the exported one stood. An import that does
not verify is refused before anything is written.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.errors import JournalUnverified, SessionError
from agent.journal.documents import DOCUMENTS
from agent.journal.head import Head
from agent.store.base import Session, Store, check_session_id, meta_problem, writer_trust
from agent.store.local import SessionDir
from agent.store.serde import blocked_types, serializer

DOCS = ("campaign.yaml", "policy.yaml", "parses.json", "known_hosts.pinned", "campaign-files.json", "ssh_config")
# ssh_config keywords that run a command or load code on the machine that resolves a host (`ssh -G` runs
# `Match exec` itself); an imported session's ssh_config with one needs the importer's own approval.
RUNS_CODE = ("proxycommand", "localcommand", "include", "knownhostscommand", "pkcs11provider", "securitykeyprovider")
MANIFEST = "export.json"


def copy_checkpoints(src: Any, dst: Any, thread_id: str) -> int:
    """Every checkpoint of `thread_id` (all namespaces: subgraphs too), oldest first, with its pending
    writes, from one LangGraph saver to another; returns how many. Checkpoint ids are time-ordered."""
    tuples = sorted(src.list({"configurable": {"thread_id": thread_id}}), key=lambda t: t.checkpoint["id"])
    for t in tuples:
        ns = t.config["configurable"].get("checkpoint_ns", "")
        parent = t.parent_config or {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        dst.put(parent, t.checkpoint, t.metadata, dict(t.checkpoint["channel_versions"]))
        writes: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in t.pending_writes or []:
            writes.setdefault(task_id, []).append((channel, value))
        for task_id, batch in writes.items():
            dst.put_writes(t.config, batch, task_id)
    return len(tuples)


@contextmanager
def _sqlite_saver(path: Path) -> Generator[Any, None, None]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=serializer())
        saver.setup()
        yield saver
    finally:
        conn.close()


@contextmanager
def _copy_of(src: Path, name: str) -> Generator[Path, None, None]:
    """A private copy of a bundle's SQLite file (and its -wal), to read: SQLite writes beside any file it opens,
    even read-only (a -wal, a -shm, a journal-mode change), and an import must leave its bundle as it was."""
    with tempfile.TemporaryDirectory(prefix="signoff-import-") as tmp:
        for suffix in ("", "-wal"):
            if (src / f"{name}{suffix}").is_file():
                shutil.copyfile(src / f"{name}{suffix}", Path(tmp) / f"{name}{suffix}")
        yield Path(tmp) / name


def export_session(d: Session, out: Path, *, source: str) -> dict[str, Any]:
    """Write session `d` (whose lease the caller holds) to the new directory `out`; the manifest."""
    if out.exists() and any(out.iterdir()):
        raise SessionError(f"{out} is not empty: export writes a new directory")
    out.mkdir(parents=True, exist_ok=True)
    with d.journal_file() as journal:
        shutil.copyfile(journal, out / "journal.jsonl")
        if journal.with_name("head").exists():
            shutil.copyfile(journal.with_name("head"), out / "head")
        if (journal.parent / "artifacts").is_dir():
            shutil.copytree(journal.parent / "artifacts", out / "artifacts", ignore=shutil.ignore_patterns(".*"))
    for name in DOCS:
        text = d.read(name)
        if text is not None:
            (out / name).write_text(text)
    (out / "answers.json").write_text(json.dumps(d.answers(), indent=2))
    with d.saver() as src, _sqlite_saver(out / "checkpoints.sqlite") as dst:
        checkpoints = copy_checkpoints(src, dst, d.id)
    if (out / "head").exists():
        _head_into_db(out)
    if d.hosts.is_dir():
        shutil.copytree(d.hosts, out / "hosts", symlinks=True)
    meta = d.meta()
    (out / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    manifest = {
        "session": d.id,
        "from": source,
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": sum(1 for _ in (out / "journal.jsonl").open("rb")),
        "checkpoints": checkpoints,
        "artifacts": len(list((out / "artifacts").glob("sha256-*"))) if (out / "artifacts").is_dir() else 0,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _head_into_db(root: Path) -> None:
    from agent.journal import head as checkpoint

    checkpoint.write_record(root / "journal.jsonl", Head.model_validate_json((root / "head").read_text()))


def import_session(store: Store, src: Path, *, accept_ssh_config: bool = False) -> tuple[Session, dict[str, Any]]:
    """Bring an exported session into `store`: checked and verified first, refused if the store has it
    already. An export is someone else's files: every entry must be a regular file or directory (no
    links, no FIFOs), the session id must be one (never a path) and the journal's own, meta.json must
    be usable and point where the journal says, an ssh_config that runs commands must be approved by
    the importer (`accept_ssh_config`), and anything that cannot be read refuses the import in one line
    and leaves nothing behind in the embedded store. The meta document goes in last, so a session half
    imported (a crash) is not listed."""
    from agent.report.replay import verify_session

    meta_path, journal = src / "meta.json", src / "journal.jsonl"
    if not meta_path.is_file() or not journal.is_file():
        raise SessionError(f"{src} is not a session export (it needs meta.json and journal.jsonl)")
    _refuse_links(src)
    meta = _read_meta(meta_path)
    session_id = check_session_id(meta.get("id"))
    journaled = _journal_session(journal)
    if journaled != session_id:
        raise SessionError(
            f"{meta_path} names session {session_id!r} but its journal belongs to {journaled!r}; nothing imported"
        )
    problem = meta_problem(meta)
    if problem is not None:
        raise SessionError(f"{meta_path} {problem}; nothing imported")
    documents = {name: _text(src / name) for name in DOCUMENTS}
    verdict = verify_session(journal, documents=documents, meta=meta)
    if not verdict.ok:
        raise SessionError(f"{src} does not verify ({verdict.line()}); nothing imported")
    _check_for_writers(src, journal, session_id, meta)
    _check_ssh_config(src, documents["ssh_config"], accept=accept_ssh_config)
    existing = store.session(session_id)
    if existing.read("meta.json") is not None:
        existing.close()
        raise SessionError(f"session {session_id} is already in {store.where}; nothing imported")
    if isinstance(existing, SessionDir) and existing.root.exists():
        _discard(existing)  # an import cut short by a crash: start it again from nothing
    d = store.new(session_id)
    try:
        with d.locked():
            for name in DOCS:
                if (src / name).exists():
                    d.write(name, _text(src / name) or "")
            for interrupt, payload in json.loads(_text(src / "answers.json") or "{}").items():
                d.claim_answer(interrupt, payload)
            checkpoints = 0
            if (src / "checkpoints.sqlite").exists():
                with blocked_types() as foreign:
                    try:
                        with (
                            _copy_of(src, "checkpoints.sqlite") as copy,
                            _sqlite_saver(copy) as source,
                            d.saver() as dst,
                        ):
                            checkpoints = copy_checkpoints(source, dst, session_id)
                    finally:
                        if foreign:  # before any error the foreign value caused further on
                            raise SessionError(
                                f"{src}: its checkpoints name code to run on load "
                                f"({', '.join(sorted(set(foreign)))}), which signoff never stores; nothing imported"
                            )
            d.adopt_journal(journal)
            if (src / "hosts").is_dir() and not d.hosts.exists():
                shutil.copytree(src / "hosts", d.hosts)
            d.write_meta(meta)
    except SessionError:
        _discard(d)
        raise
    except Exception as exc:  # an export is untrusted input: whatever it breaks is refused, not a traceback
        _discard(d)
        raise SessionError(
            f"{src}: could not be imported safely ({type(exc).__name__}: {str(exc)[:200]}); nothing imported"
        ) from None
    return d, {"session": session_id, "events": verdict.events, "checkpoints": checkpoints}


def _check_for_writers(src: Path, journal: Path, session_id: str, meta: dict[str, Any]) -> None:
    """What a runner will ask before it goes on from the imported session, asked before anything is
    imported: nothing that changes what runs lies past its head; with a key configured, its head is
    signed by a trusted key; meta.json points where its journal says."""
    from agent.journal import integrity
    from agent.journal.chain import read_events
    from agent.journal.documents import pointer_problem
    from agent.journal.head import read_all
    from agent.journal.view import fold

    try:
        integrity.check_file(journal, session_id, limit=journal.stat().st_size, trust=None)
    except JournalUnverified as exc:
        raise SessionError(f"{src}: {exc.problem}; nothing imported") from None
    trust = writer_trust()
    if trust.keys and (why := integrity.untrusted(read_all(journal), trust.keys, "a signing key is configured")):
        raise SessionError(f"{src}: {why}; nothing imported")
    if (why := pointer_problem(meta, fold(read_events(journal)))) is not None:
        raise SessionError(f"{src}: {why}; nothing imported")


def _check_ssh_config(src: Path, text: str | None, *, accept: bool) -> None:
    """An ssh_config that runs commands on the machine that resolves a host is the exporter's to write
    and the importer's to run: refused unless the importer approves it, having read it."""
    found = runs_code(text or "")
    if found and not accept:
        raise SessionError(
            f"{src / 'ssh_config'}:{found[0][0]}: {found[0][1]} runs commands on this machine when a host is "
            "resolved; read it, then import with --accept-ssh-config to run it as yours; nothing imported"
        )


def runs_code(text: str) -> list[tuple[int, str]]:
    """(line, keyword) of every ssh_config line that runs a command or loads code (`Match exec`,
    `ProxyCommand`, `LocalCommand`, `Include`, …), as OpenSSH reads keywords: any case, `=` or blanks."""
    found = []
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.replace("=", " ", 1).split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].lower()
        if keyword in RUNS_CODE or (keyword == "match" and any(w.lower().lstrip("!") == "exec" for w in words[1:])):
            found.append((n, words[0] + (" exec" if keyword == "match" else "")))
    return found


def _refuse_links(src: Path) -> None:
    """Every entry under `src` is a regular file or a directory: a link would copy whatever it points at
    (a 0600 file of the importing user's) into the store, and a FIFO would hang the import."""
    for root, dirs, files in os.walk(src, followlinks=False):
        for name in (*dirs, *files):
            path = Path(root, name)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise SessionError(f"{path} is a symbolic link; an export holds regular files only, nothing imported")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise SessionError(f"{path} is not a regular file; nothing imported")


def _text(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_text()
    except UnicodeDecodeError as exc:
        raise SessionError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); nothing imported") from None


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(_text(path) or "")
    except json.JSONDecodeError as exc:
        raise SessionError(f"{path}:{exc.lineno}: not JSON ({exc.msg}); nothing imported") from None
    if not isinstance(meta, dict):
        raise SessionError(f"{path}: a JSON object is expected; nothing imported")
    return meta


def _journal_session(journal: Path) -> str:
    """The `session` field of the journal's first line (the one every later line must repeat)."""
    with journal.open("rb") as fh:
        first = fh.readline(1 << 20)
    try:
        value = json.loads(first).get("session") if first.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        value = None
    if not isinstance(value, str):
        raise SessionError(f"{journal}:1: no session id on the journal's first line; nothing imported")
    return value


def _discard(d: Session) -> None:
    """Remove what an import wrote into the embedded store (a team store's journal is append-only: its
    half import stays unlisted, without meta, and importing again completes it)."""
    d.close()
    if isinstance(d, SessionDir) and d.root.is_dir() and not d.root.is_symlink():
        shutil.rmtree(d.root, ignore_errors=True)
