"""A session's own copies of its campaign and policy, checked against the digests its journal recorded.

`campaign.yaml` and `policy.yaml` in the store are what a resumed run executes, but they are plain
files (or rows) anyone with write access to the store could edit while a session is paused: an extra
command in option #3, an allow pattern. The journal's `session.started` holds their sha256 (and their
texts), and `policy.changed` each accepted new policy, so every resume, decision, attach and
`--verify` compares the copies with the chain before trusting them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from agent.journal.view import fold

DOCUMENTS = ("campaign.yaml", "policy.yaml")


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
        if text is None:
            return f"its {name} is missing (the journal records sha256 {want[:12]})"
        got = hashlib.sha256(text.encode()).hexdigest()
        if got != want:
            return f"its {name} was changed after it was journaled (sha256 {got[:12]}, the journal says {want[:12]})"
    return None
