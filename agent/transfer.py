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
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.checkpoint import Head
from agent.serde import serializer
from agent.store import Session, SessionError, Store

DOCS = ("campaign.yaml", "policy.yaml", "parses.json", "known_hosts.pinned", "campaign-files.json")
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
def _sqlite_saver(path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=serializer())
        saver.setup()
        yield saver
    finally:
        conn.close()


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
    from agent import checkpoint

    checkpoint.write_record(root / "journal.jsonl", Head.model_validate_json((root / "head").read_text()))


def import_session(store: Store, src: Path) -> tuple[Session, dict[str, Any]]:
    """Bring an exported session into `store`: verified first, refused if the store has it already.
    The meta document goes in last, so a session half imported (a crash) is not listed; importing
    again completes it."""
    from agent.replay import verify_session

    meta_path, journal = src / "meta.json", src / "journal.jsonl"
    if not meta_path.is_file() or not journal.is_file():
        raise SessionError(f"{src} is not a session export (it needs meta.json and journal.jsonl)")
    meta = json.loads(meta_path.read_text())
    verdict = verify_session(journal)
    if not verdict.ok:
        raise SessionError(f"{src} does not verify ({verdict.line()}); nothing imported")
    session_id = meta["id"]
    d = store.session(session_id)
    if d.read("meta.json") is not None:
        d.close()
        raise SessionError(f"session {session_id} is already in {store.where}; nothing imported")
    d = store.new(session_id)
    with d.locked():
        for name in DOCS:
            if (src / name).exists():
                d.write(name, (src / name).read_text())
        for interrupt, payload in json.loads((src / "answers.json").read_text() or "{}").items():
            d.claim_answer(interrupt, payload)
        checkpoints = 0
        if (src / "checkpoints.sqlite").exists():
            with _sqlite_saver(src / "checkpoints.sqlite") as source, d.saver() as dst:
                checkpoints = copy_checkpoints(source, dst, session_id)
        d.adopt_journal(journal)
        if (src / "hosts").is_dir() and not d.hosts.exists():
            shutil.copytree(src / "hosts", d.hosts, symlinks=True)
        d.write_meta(meta)
    return d, {"session": session_id, "events": verdict.events, "checkpoints": checkpoints}
