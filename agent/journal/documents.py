"""A session's own copies of its documents, and its meta.json's pointers, checked against its journal.

`campaign.yaml` and `policy.yaml` in the store are what a resumed run executes, but they are plain
files (or rows) anyone with write access to the store could edit while a session is paused: an extra
command in option #3, an allow pattern. The journal's `session.started` holds their sha256 (and their
texts), and `policy.changed` each accepted new policy, so every resume, decision, attach and
`--verify` compares the copies with the chain before trusting them. The same goes for the session's
copy of its ssh_config (which can run commands: `Match exec`, `ProxyCommand`) and of the campaign's
files (uploads, known_hosts files), and for what meta.json points a run at: the campaign's directory,
the policy file, the ssh_config, trust-on-first-use and the brain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent.journal.view import SessionView, fold

DOCUMENTS = ("campaign.yaml", "policy.yaml", "ssh_config", "campaign-files.json")
ABSENT = "-"  # the digest journaled for a document the session does not have (ssh_config, campaign-files.json)


def digest(text: str | None) -> str:
    """What `session.started` records for a document: its sha256, or ABSENT."""
    return ABSENT if text is None else hashlib.sha256(text.encode()).hexdigest()


def journaled_digests(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The sha256 each document must have now, by the journal (see `SessionView.digests`)."""
    return fold(events).digests


def mismatch(texts: Mapping[str, str | None], expected: Mapping[str, str]) -> str | None:
    """Why the documents cannot be trusted (None when each has the digest it should)."""
    for name in DOCUMENTS:
        want = expected.get(name)
        if not want:
            continue
        text = texts.get(name)
        if want == ABSENT:
            if text is not None:
                return f"its {name} was added after the session started (the journal records none)"
            continue
        if text is None:
            return f"its {name} is missing (the journal records sha256 {want[:12]})"
        got = hashlib.sha256(text.encode()).hexdigest()
        if got != want:
            return f"its {name} was changed after it was journaled (sha256 {got[:12]}, the journal says {want[:12]})"
    return None


def pointer_problem(meta: Mapping[str, Any], view: SessionView) -> str | None:
    """Why meta.json cannot be trusted (None: it can): each of its fields that changes what a resume runs
    must be what the journal recorded. A journal from before a field was recorded vouches only for its
    safe default (no ssh_config, no trust-on-first-use): anything else cannot be accounted for."""
    started = view.started_event
    if started is None:
        return None  # not started: nothing journaled yet, and `session.started` takes meta as it is
    given = started.model_fields_set

    def differs(name: str, now: object, journaled: object) -> str:
        return f"its meta.json names {name} {now!r}, but its journal recorded {journaled!r}"

    if started.campaign is not None and meta.get("campaign") != started.campaign:
        return differs("campaign", meta.get("campaign"), started.campaign)
    directory = started.campaign_dir if "campaign_dir" in given else None
    if directory is None and started.campaign is not None:
        directory = str(Path(started.campaign).parent)  # what create() made it, before it was journaled
    if directory is not None and meta.get("campaign_dir") != directory:
        return differs("campaign_dir", meta.get("campaign_dir"), directory)
    if view.policy_path and meta.get("policy") != view.policy_path:
        return differs("policy", meta.get("policy"), view.policy_path)
    ssh_config = started.ssh_config if "ssh_config" in given else None
    if (meta.get("ssh_config") or None) != ssh_config:
        return differs("ssh_config", meta.get("ssh_config"), ssh_config)
    accept = bool(started.accept_new_host_keys) if "accept_new_host_keys" in given else False
    if bool(meta.get("accept_new_host_keys")) != accept:
        return differs("accept_new_host_keys", bool(meta.get("accept_new_host_keys")), accept)
    chosen = meta.get("brain") or {"kind": "rules"}
    claude = f"claude/{chosen.get('model')}" if chosen.get("kind") == "claude" else None
    journaled = started.brain or ""
    if started.brain is not None and (journaled != claude if claude else journaled.startswith("claude/")):
        return differs("brain", claude or chosen.get("kind"), journaled)
    return None
