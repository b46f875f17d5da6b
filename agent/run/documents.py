"""A session's own documents: the copies of campaign.yaml and policy.yaml it runs under, the campaign's
files it keeps beside them, and the checks that nothing changed under it — its copies against the digests
its journal recorded, the policy file on disk against its copy (a change a person accepts is journaled).
"""

from __future__ import annotations

import base64
import hashlib
import json
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

from agent.campaign import LoadedCampaign
from agent.errors import DocumentsChanged, SessionError
from agent.journal import events as ev
from agent.journal.chain import ENDING_KINDS
from agent.journal.documents import DOCUMENTS, mismatch, pointer_problem
from agent.journal.view import fold
from agent.privatefiles import write_private
from agent.store.base import JournalWriter, Session
from agent.store.local import private_dir
from policies.load import load_policy, load_policy_text
from policies.yamlsrc import SourceError

CAMPAIGN_FILES = "campaign-files.json"
SSH_CONFIG = "ssh_config"  # the session's copy of the ssh_config it was started with (`--ssh-config`)
MAX_KEPT_FILE = 8 << 20  # larger upload sources are read from the campaign directory only


def campaign_files(loaded: LoadedCampaign) -> dict[str, dict[str, str]]:
    """The files the campaign names relative to its directory (uploads, known_hosts files) as they are
    now, base64 with their sha256: a session resumed on another machine, or after the checkout moved,
    uploads exactly what it started with and checks host keys against the same files."""
    names = [up.src for up in loaded.campaign.baseline.upload]
    names += [h.known_hosts for h in loaded.campaign.hosts if h.known_hosts and not Path(h.known_hosts).is_absolute()]
    out = {}
    for name in names:
        path = loaded.directory / name
        if not name.startswith("~") and path.is_file() and path.stat().st_size <= MAX_KEPT_FILE:
            data = path.read_bytes()
            out[name] = {"sha256": hashlib.sha256(data).hexdigest(), "data": base64.b64encode(data).decode()}
    return out


def campaign_dir(d: Session, meta: dict[str, Any]) -> Path:
    """Where the campaign's files are for this runner: the directory it started in while that still
    holds them unchanged, else the copies the session kept, written under its working directory."""
    original = Path(meta["campaign_dir"])
    kept = json.loads(d.read(CAMPAIGN_FILES) or "{}")
    if all(_sha256(original / src) == f["sha256"] for src, f in kept.items()):
        return original
    here = d.work / "campaign"
    for src, f in kept.items():
        path = (here / src).resolve()
        if not path.is_relative_to(here.resolve()):
            raise SessionError(f"session {d.id}: kept campaign file {src!r} points outside its directory")
        data = base64.b64decode(f["data"])
        if hashlib.sha256(data).hexdigest() != f["sha256"]:
            raise SessionError(f"session {d.id}: its kept copy of {src} does not match its sha256")
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return here


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def policy_drift(d: Session) -> tuple[Path, str] | None:
    """(the policy file, its text now) when the file the session was started with has changed on disk
    since (None when it has not, or is gone: the session's own copy is what it runs under)."""
    meta = d.meta()
    path = Path(meta.get("policy") or "")
    if not meta.get("policy") or not path.is_file():
        return None
    text = path.read_text()
    # A policy that extends others runs under its resolved text, which a change to any of them changes. One
    # that no longer loads keeps its raw text here: it differs, and accepting it says why it cannot be used.
    with suppress(SourceError, OSError):
        text = load_policy(path).text
    current = d.read("policy.yaml") or ""
    if hashlib.sha256(text.encode()).hexdigest() == hashlib.sha256(current.encode()).hexdigest():
        return None
    return path, text


def ssh_config_file(d: Session) -> str | None:
    """The ssh_config this runner resolves SSH hosts with: the session's own copy (checked against the
    journal by `check_documents`), as a file on this machine; None when the session was started without."""
    text = d.read(SSH_CONFIG)
    if text is None:
        return None
    path = d.work / SSH_CONFIG
    if not path.is_file() or path.read_text() != text:  # a team store's copy, brought to this machine
        private_dir(d.work)
        write_private(path, text)
    return str(path)


def check_documents(d: Session, journal: JournalWriter | None = None) -> None:
    """Raise DocumentsChanged unless each of the session's own documents (campaign.yaml, policy.yaml,
    ssh_config, the kept campaign files) has the sha256 the journal recorded (before the session
    started, the digests meta.json took at creation), and meta.json points where the journal says.
    A refusal is journaled (on `journal`, the caller's open one, else briefly opened: the caller holds
    the session lock), except in a journal that has ended, which takes no more lines."""
    if journal is None:
        with closing(d.open_journal()) as mine:  # opening it recovers a torn last line first
            return check_documents(d, mine)
    meta = d.meta()
    view = fold(d.events())
    expected = view.digests or {
        "campaign.yaml": meta.get("campaign_sha256", ""),
        "policy.yaml": meta.get("policy_sha256", ""),
    }
    problem = mismatch({name: d.read(name) for name in DOCUMENTS}, expected) or pointer_problem(meta, view)
    if problem is None:
        return
    if view.last_kind not in ENDING_KINDS:
        journal.append(ev.DocumentsMismatchEvent(problem=problem))
    raise DocumentsChanged(d.id, problem)


def accept_policy_change(d: Session, *, by: str) -> str:
    """Adopt the policy file's new text for the rest of the session (it must load and pass its
    self-tests); journaled as `policy.changed` with both hashes. Returns the new sha256."""
    drift = policy_drift(d)
    if drift is None:
        raise SessionError(f"the policy of session {d.id} has not changed; nothing to accept")
    path, text = drift
    new = load_policy(path)  # the file's policy, resolved with what it extends; it must load and pass its tests
    if new.text != text:
        raise SessionError(f"{path} changed again while it was being accepted; accept it again")
    old = load_policy_text(d.read("policy.yaml") or "", path=str(path))
    # Journaled first: a crash before the copy is written leaves the old copy, which the journal then
    # refuses to run under, and the drift stays visible, so accepting again completes it.
    with closing(d.open_journal()) as journal:
        journal.append(
            ev.PolicyChangedEvent(
                policy=str(path),
                policy_name=new.name,
                policy_text=new.text,
                policy_parts=[p.model_dump() for p in new.parts] if len(new.parts) > 1 else None,
                policy_sha256=new.sha256,
                previous_sha256=old.sha256,
                by=by,
            )
        )
    d.write("policy.yaml", new.text)
    meta = d.meta()
    d.write_meta({**meta, "policy_sha256": new.sha256})
    return new.sha256
