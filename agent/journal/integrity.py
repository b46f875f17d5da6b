"""Verify on every open: a writer goes on from a journal only once it checks out.

`--verify` is an auditor's question; this is the writer's. Every store opens its journal for appending
through one of the two checks here (the file journal under its lock, the team store's rows in one
snapshot), so no command can resume, decide or attach on a journal that fails, nor sign a new head
over it. On top of what `verify` checks (the chain, gapless seq, every copy of the head and its
signature), a writer asks:

- whose head it goes on from. With `SIGNOFF_SIGNING_KEY` set, every copy of the head must be signed by
  that key or by one in `SIGNOFF_TRUSTED_KEYS`: a head rewritten without the key (unsigned, or signed
  with another key) is refused rather than signed over. Without a key, a signed head is refused too:
  going on would replace it with an unsigned one, and the session's signature would prove nothing more.
- what lies past the head. A run killed between its head writes leaves lines no head covers; they are
  taken (and the runner says so in `log.adopted`) unless one of them changes what a resume runs — a
  start, a policy change, proposed options, a decision or a standing rule — which only a head may vouch
  for: the head that covers it, or the head before it, which announces it (`intent`, written before the
  line, so a kill at any moment leaves no such line unvouched). The team store advances its head with
  every line, so there nothing may lie past it.

What this cannot see: without a signing key, someone who can write the store can rewrite the journal and
every copy of its head consistently (or, on PostgreSQL, append through the chain like any writer); the
key is what makes that detectable.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent.errors import JournalUnverified
from agent.journal import head as checkpoint
from agent.journal.chain import steers
from agent.journal.verify import VerifyReport, verify, verify_lines

STORE_HEAD = "store's head"


def trust_problem(heads: Sequence[tuple[str, checkpoint.Head]], trust: checkpoint.Trust) -> str | None:
    """Why a writer with `trust` may not go on from these heads (None: it may). Their signatures were
    checked by `verify` against the key each names; this asks whether that key is one to go on from."""
    if trust.signer is not None:
        return untrusted(heads, trust.keys, "SIGNOFF_SIGNING_KEY is set")
    for source, h in heads:
        if h.signature is not None:
            return (
                f"its {source} is signed (key {(h.key or '')[:16]}…) but SIGNOFF_SIGNING_KEY is not set, so what "
                "follows would not be: set it to go on"
            )
    return None


def untrusted(heads: Sequence[tuple[str, checkpoint.Head]], keys: frozenset[bytes], why: str) -> str | None:
    """Why these heads are not all signed by one of `keys` (None: they are). `why`: why that is asked."""
    for source, h in heads:
        if h.signature is None:
            return f"its {source} is not signed, but {why}: nobody vouches for it (unset the key to go on unsigned)"
        if bytes.fromhex(h.key or "") not in keys:
            return (
                f"its {source} is signed by key {(h.key or '')[:16]}…, which is neither SIGNOFF_SIGNING_KEY's nor "
                "in SIGNOFF_TRUSTED_KEYS"
            )
    return None


def _failed(session: str, report: VerifyReport) -> JournalUnverified:
    return JournalUnverified(session, f"its journal does not verify: FAILED at seq {report.failed_seq}: {report.error}")


def _steering_past_head(session: str, seq: int, record: dict[str, Any], where: str) -> JournalUnverified:
    return JournalUnverified(
        session,
        f"its journal holds {record.get('kind')} at seq {seq} past {where}, and only a head may vouch for "
        "what changes the commands a resume runs (appended behind the runner's back?)",
    )


def check_file(path: Path, session: str, *, limit: int, trust: checkpoint.Trust | None) -> dict[str, Any] | None:
    """Check the file journal's first `limit` bytes (its whole lines) for a writer: JournalUnverified, or
    the `log.adopted` fields for the lines past its oldest head copy (None when there are none). `trust`
    None: whose signature it is is not asked (an import, which signs nothing)."""
    report = verify(path, limit=limit, session=session)
    if not report.ok:
        raise _failed(session, report)
    try:
        problem = trust_problem(checkpoint.read_all(path), trust) if trust is not None else None
    except ValueError as exc:  # a head copy changed under us since `verify` read it
        raise JournalUnverified(session, f"its journal does not verify: {exc}") from None
    if problem is not None:
        raise JournalUnverified(session, problem)
    if report.events == report.head_events:
        return None
    kinds: Counter[str] = Counter()
    where = "every copy of its head" if report.head_events else "its head (there is none)"
    for seq, record in _records(path, limit, skip=report.head_events):
        if steers(record.get("kind"), record) and seq >= report.vouched_events:
            raise _steering_past_head(session, seq, record, where)
        kinds[str(record.get("kind"))] += 1
    past = report.events - report.head_events
    return {"from_seq": report.head_events, "events": past, "kinds": dict(kinds), "last": report.head}


def _records(path: Path, limit: int, *, skip: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(seq, record) of the whole lines in the first `limit` bytes, after the first `skip` (verified:
    each is JSON)."""
    done = 0
    with path.open("rb") as fh:
        for seq, line in enumerate(fh):
            done += len(line)
            if done > limit:
                return
            if seq >= skip:
                yield seq, json.loads(line)


def check_rows(
    session: str, lines: Sequence[bytes], row: tuple[int, str, str | None] | None, *, trust: checkpoint.Trust
) -> tuple[int, str]:
    """Check a team store's journal for a writer: its lines and its head row (events, head, record), read
    in one snapshot. Returns (events, head); JournalUnverified when it fails."""
    heads: list[tuple[str, checkpoint.Head]] = []
    if row is not None:
        events, head, record = row
        try:
            vouched = checkpoint.parse(STORE_HEAD, record) if record else checkpoint.Head(events=events, head=head)
        except ValueError as exc:
            raise JournalUnverified(session, f"its journal does not verify: {exc}") from None
        if (vouched.events, vouched.head) != (events, head):
            raise JournalUnverified(
                session,
                f"its {STORE_HEAD} (event {events}, {head[:12]}) is not the one its record names (event "
                f"{vouched.events}, {vouched.head[:12]}): the head was moved without its record",
            )
        heads.append((STORE_HEAD, vouched))
    report = verify_lines(lines, heads)
    if not report.ok:
        raise _failed(session, report)
    problem = trust_problem(heads, trust)
    if problem is not None:
        raise JournalUnverified(session, problem)
    if report.events != report.head_events:
        # Each line and its head are one transaction: a line past the head was not written by a runner.
        kind = json.loads(lines[report.head_events]).get("kind")
        raise JournalUnverified(
            session,
            f"its journal has {report.events} events but its {STORE_HEAD} covers {report.head_events} (the first "
            f"past it: {kind}), and the team store writes each line with its head: rows added behind the runners' back",
        )
    return report.events, report.head
