"""Verifying a journal: the hash chain, gapless seq and every copy of the head, read as raw bytes.

Verification never parses an event into a model nor re-canonicalises a line: it hashes what is on disk,
so it runs at close to the speed of hashing the file (`bench/journal.py` measures it against sha256sum).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import BaseModel

from agent.journal import head as checkpoint
from agent.journal.chain import ENDING_KINDS, GENESIS, kind_of


class VerifyReport(BaseModel):
    ok: bool
    events: int
    head: str
    error: str | None = None
    failed_seq: int | None = None
    signed: bool = False  # every head copy is signed (and, with a key, by that key)
    final: bool = False  # the head says the session ended at the journal's last event
    head_events: int = 0  # how many events the oldest head copy covers (fewer than `events`: running or cut short)


_DIGITS = re.compile(rb"\d+")


def _fields(body: bytes) -> tuple[int | None, str | None]:
    """`seq` and `prev` read straight from a canonical line's bytes: inside a string a quote is escaped,
    so these patterns can only be keys. When either appears more than once (a nested object with such
    a key), the line is parsed instead, so only the top-level keys ever count."""
    at, sq = body.find(b'"prev":"'), body.find(b'"seq":')
    if at < 0 or sq < 0 or body.find(b'"prev":"', at + 8) >= 0 or body.find(b'"seq":', sq + 6) >= 0:
        try:
            record = json.loads(body)
        except json.JSONDecodeError:
            return None, None
        seq, prev = record.get("seq"), record.get("prev")
        return (seq if isinstance(seq, int) else None), (prev if isinstance(prev, str) else None)
    digits = _DIGITS.match(body, sq + 6)
    return (int(digits.group()) if digits else None), body[at + 8 : at + 72].decode("ascii", "replace")


def verify(path: Path, *, key: bytes | None = None) -> VerifyReport:
    """Check the chain, gapless seq and every copy of the head (the head file and the checkpoint
    DB; their signatures when signed, against `key` when one is pinned). Raw bytes only: no
    re-canonicalisation.

    The head is written at every durable event, so the journal may legitimately run a few events
    past it (after a crash); it may never be shorter, nor disagree at the head's position.
    """
    heads = checkpoint.read_all(path)
    wanted = {h.events for _, h in heads}
    at: dict[int, str] = {0: GENESIS}
    prev, count, session = GENESIS, 0, ""
    ended: int | None = None  # the line count just after the last event that ended the session
    with path.open("rb") as fh:
        for line in fh:
            body = line.rstrip(b"\n")
            seq, prev_field = _fields(body)
            fail = None
            if seq is None or prev_field is None:
                try:
                    json.loads(body)
                    fail = f"line {count + 1} lacks seq or prev"
                except json.JSONDecodeError:
                    fail = f"line {count + 1} is not JSON (torn or edited)"
            elif seq != count:
                fail = f"seq {seq} where {count} was expected (gap or reorder)"
            elif prev_field != prev:
                fail = f"seq {count}: prev does not match the hash of the line before (edited, removed or reordered)"
            if fail is not None:
                return VerifyReport(ok=False, events=count, head=prev, failed_seq=count, error=fail)
            if not session:
                session = str(json.loads(body).get("session", ""))
            prev = hashlib.sha256(body).hexdigest()
            count += 1
            # A byte search keeps verification at hashing speed; a hit is confirmed on the parsed line,
            # since a nested object could hold the same key and value.
            if b'"kind":"session.finished"' in body and kind_of(body) in ENDING_KINDS:
                ended = count
            if count in wanted:
                at[count] = prev
    if key is not None and not heads:
        return VerifyReport(ok=False, events=count, head=prev, failed_seq=count, error="no signed head to check")

    def failed(seq: int, error: str) -> VerifyReport:
        return VerifyReport(ok=False, events=count, head=prev, failed_seq=seq, error=error)

    for source, h in heads:
        if count < h.events:
            return failed(count, f"journal has {count} events but the {source} records {h.events} (truncated)")
        if at.get(h.events) != h.head:
            return failed(h.events, f"hash at event {h.events} differs from the {source} (history rewritten)")
        problem = checkpoint.check_signature(h, session, key)
        if problem is not None:
            return failed(h.events, f"{source}: {problem}")
        if h.final and count > h.events:
            return failed(
                h.events,
                f"{count - h.events} event(s) after the {source}'s final head at event {h.events} "
                "(appended after the session ended)",
            )
        # Nothing is journaled after a session ends, so lines past the end that no head vouches for were
        # appended behind the runner's back (or the head was swapped for an older one). A crash between the
        # ending line and its head leaves the end itself uncovered, with nothing after it: that passes.
        if ended is not None and count > ended and h.events <= ended:
            return failed(
                h.events,
                f"the session ended at event {ended} but the {source} covers {h.events} of {count} events "
                "(events appended after the end, or an older head restored)",
            )
    return VerifyReport(
        ok=True,
        events=count,
        head=prev,
        signed=bool(heads) and all(h.signature is not None for _, h in heads),
        final=bool(heads) and all(h.final and h.events == count for _, h in heads),
        head_events=min((h.events for _, h in heads), default=0),
    )
