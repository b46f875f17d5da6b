"""Verifying a journal: the hash chain, gapless seq and every copy of the head, read as raw bytes.

Verification never parses an event into a model nor re-canonicalises a line: it hashes what is on disk,
so it runs at close to the speed of hashing the file (`bench/journal.py` measures it against sha256sum).

The file is read in chunks of `CHUNK_BYTES` (memory stays flat however long the journal), and each chunk's
whole lines are checked at once by `_Walk.batch` with C-level passes (byte counts, one regex `findall`, a
`map` of `bytes.rfind`, the hashes), since even one Python statement per line costs as much as hashing
it. That bulk check only ever says "every line here passes": a line it cannot vouch for goes to
`_Walk.line`, the line-at-a-time check whose results and messages are the verifier's contract (it is the
loop this module always ran), so the two cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
import re
from binascii import hexlify
from collections.abc import Iterable
from itertools import accumulate, compress, repeat
from operator import eq, ne
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
    # How many events every head copy vouches for: those it covers, and the next line when the copy announced
    # it (`intent`) and the line is the one announced (a writer killed between that line and its head).
    vouched_events: int = 0


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


# How much of the file is read at once: enough that per-chunk work vanishes, little enough that the chunk
# and its lines stay in cache across the passes over them (256 KiB to 1 MiB measured alike; 2 MiB ~5%
# slower, 4 MiB ~10%, 8 MiB ~25%). Memory is a small multiple of this, never the journal's size. (A module
# constant so that tests can make it tiny and put line boundaries across chunk edges.)
CHUNK_BYTES = 512 << 10
# Runs of lines this short are read line by line: the bulk check's fixed cost (a dozen C calls) would
# outweigh what it saves. (Tests set it to 0 to put every line they can through the bulk check.)
_LINE_BY_LINE = 64

# The top-level `prev` value of a line: the first `"prev":"` followed by 64 bytes on the same line. The
# tail runs to the line's end, so a match never spans lines and a line yields at most one match.
_PREV_VALUE = re.compile(rb'"prev":"(.{64})[^\n]*\n')
_SEQ_AT = b'"seq":%d,'
_ENDING = b'"kind":"session.finished"'
_sha256 = hashlib.sha256
_digest = type(hashlib.sha256()).digest


class _Walk:
    """The chain walked so far: lines read, the hash of the last, the session, where it ended, and the
    hash at every count a head copy records."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted: set[int] = wanted
        self.at: dict[int, str] = {0: GENESIS}
        self.prev: str = GENESIS
        self.count: int = 0
        self.session: str = ""
        self.ended: int | None = None  # the line count just after the last event that ended the session
        # `verify` holds `ended` against a head copy only when the copy's count is at or below it, so an end
        # before the oldest copy (or with no copy at all) cannot change the report: the bulk check need not
        # look for one there. (`line`, the reference, still records every end, which changes nothing.)
        self.ending_from: int | None = min(wanted) if wanted else None

    def failure(self, error: str) -> VerifyReport:
        return VerifyReport(ok=False, events=self.count, head=self.prev, failed_seq=self.count, error=error)

    def line(self, body: bytes) -> VerifyReport | None:
        """One line (without its newline): the reference check, and the only one that reports a failure."""
        count = self.count
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
        elif prev_field != self.prev:
            fail = f"seq {count}: prev does not match the hash of the line before (edited, removed or reordered)"
        if fail is not None:
            return self.failure(fail)
        if not self.session:
            self.session = str(json.loads(body).get("session", ""))
        self.prev = hashlib.sha256(body).hexdigest()
        self.count = count = count + 1
        # A byte search keeps verification at hashing speed; a hit is confirmed on the parsed line,
        # since a nested object could hold the same key and value.
        if _ENDING in body and kind_of(body) in ENDING_KINDS:
            self.ended = count
        if count in self.wanted:
            self.at[count] = self.prev
        return None

    def batch(self, buf: bytes, lines: list[bytes], lo: int, hi: int) -> VerifyReport | None:
        """`lines` are whole lines whose bytes, each followed by a newline, are `buf[lo:hi]`. Whatever
        the bulk check cannot vouch for is read by `line`, in order, so the outcome is `line`'s alone:
        the rest of this method only decides which lines go which way, for speed."""
        first = 0
        while not self.session and first < len(lines):  # the session is read from a parsed line, as ever
            report = self.line(lines[first])
            if report is not None:
                return report
            lo += len(lines[first]) + 1
            first += 1
        if first:
            lines = lines[first:]
        if not lines or len(lines) <= _LINE_BY_LINE:
            return self._one_by_one(lines)
        if self._all_pass(buf, lines, lo, hi):
            return None
        odd = self._odd(lines)
        if not odd:  # nothing stands out (a real break, say): halve, so the bulk check still takes most
            if len(lines) == 1:
                return self.line(lines[0])
            half = len(lines) // 2
            mid = lo + sum(map(len, lines[:half])) + half
            report = self.batch(buf, lines[:half], lo, mid)
            return report if report is not None else self.batch(buf, lines[half:], mid, hi)
        # The odd lines (a nested "seq" or "prev", usually) go one by one, the runs between them in bulk.
        starts = list(accumulate(map((1).__add__, map(len, lines)), initial=lo))
        done = 0
        for k in (*odd, len(lines)):
            if k > done:
                report = self.batch(buf, lines[done:k], starts[done], starts[k])
                if report is not None:
                    return report
            if k < len(lines):
                report = self.line(lines[k])
                if report is not None:
                    return report
            done = k + 1
        return None

    def _one_by_one(self, lines: list[bytes]) -> VerifyReport | None:
        for body in lines:
            report = self.line(body)
            if report is not None:
                return report
        return None

    def _odd(self, lines: list[bytes]) -> list[int]:
        """The lines the bulk check would refuse for their own sake: not exactly one `"prev` and one
        `"seq"`, or no `"seq":<expected>,` (all C-level passes; only the choice of route hangs on it)."""
        expected = map(_SEQ_AT.__mod__, range(self.count, self.count + len(lines)))
        odd = map(
            any,
            zip(
                map(ne, map(bytes.count, lines, repeat(b'"prev')), repeat(1)),
                map(ne, map(bytes.count, lines, repeat(b'"seq"')), repeat(1)),
                map(eq, map(bytes.rfind, lines, expected), repeat(-1)),
                strict=True,
            ),
        )
        return list(compress(range(len(lines)), odd))

    def _all_pass(self, buf: bytes, lines: list[bytes], lo: int, hi: int) -> bool:
        """True, with the walk advanced past `lines`, only when `line` would pass every one of them and
        read the same seq and prev; False (nothing changed) when in doubt.

        Why each step is enough, given that a line is the bytes between two newlines:
        - `"seq"` and `"prev` each occur exactly `n` times in the batch and every line holds at least one
          of each (below), so every line holds exactly one, hence one `"seq":` and one `"prev":"`:
          `_fields` then takes the byte path (a line with a nested key of either name has two, so the
          count is off and `line` parses it instead). `"seq"` rather than `"seq`: it is faster to count,
          and two `"seq":` cannot share one `"seq"`;
        - `_PREV_VALUE` matches at most once per line, so `n` matches mean one per line, at its only
          `"prev":"`, capturing exactly the 64 bytes `_fields` reads as prev;
        - each line contains `"seq":<its expected seq>,`: that is its only `"seq":`, and the digits
          after it are exactly the expected number (the comma ends them), as `_fields` reads them;
        - the captured prevs, in order, equal the genesis-or-previous hash followed by the hex sha256 of
          every line but the last, which is the chain check (`line` compares the same hex text)."""
        n, count = len(lines), self.count
        if buf.count(b'"seq"', lo, hi) != n or buf.count(b'"prev', lo, hi) != n:
            return False
        prevs = _PREV_VALUE.findall(buf, lo, hi)
        if len(prevs) != n:
            return False
        # rfind: the top-level seq sits near a line's end (only keys after "seq" follow it), so searching
        # backwards reads a fraction of each line.
        if -1 in map(bytes.rfind, lines, map(_SEQ_AT.__mod__, range(count, count + n))):
            return False
        hexes = hexlify(b"".join(map(_digest, map(_sha256, lines))))
        if b"".join(prevs) != self.prev.encode() + hexes[:-64]:
            return False
        ending_from = self.ending_from
        # Rare: one search for the batch, and its lines only on a hit.
        if ending_from is not None and count + n >= ending_from and buf.find(_ENDING, lo, hi) >= 0:
            for i, body in enumerate(lines):
                if _ENDING in body and kind_of(body) in ENDING_KINDS:
                    self.ended = count + i + 1
        for wanted in self.wanted:
            if count < wanted <= count + n:
                self.at[wanted] = hexes[64 * (wanted - count - 1) : 64 * (wanted - count)].decode()
        self.prev, self.count = hexes[-64:].decode(), count + n
        return True


def verify(
    path: Path, *, key: bytes | None = None, limit: int | None = None, session: str | None = None
) -> VerifyReport:
    """Check the chain, gapless seq and every copy of the head (the head file and the checkpoint
    DB; their signatures when signed, against `key` when one is pinned). Raw bytes only: no
    re-canonicalisation. `limit`: read only the first `limit` bytes (a writer holding the journal's lock
    checks its whole lines and leaves a torn last one to be cut). `session`: whose journal it is, for the
    signature of a head over a journal with no line yet to name it (a writer killed after announcing its first).

    The head is written at every durable event, so the journal may legitimately run a few events
    past it (after a crash); it may never be shorter, nor disagree at the head's position.
    """
    try:
        heads = checkpoint.read_all(path)
    except ValueError as exc:
        return VerifyReport(ok=False, events=0, head=GENESIS, failed_seq=0, error=str(exc))
    walk = _Walk(_wanted(heads))
    # Unbuffered: each read lands straight in the chunk, which is never copied. A line cut by a chunk's
    # end is carried over in pieces and checked alone once its newline arrives (one line per chunk goes the
    # slow way, which is nothing); a huge line thus costs linear time, not a re-join per chunk.
    left = -1 if limit is None else limit
    with path.open("rb", buffering=0) as fh:
        pending: list[bytes] = []
        while left and (chunk := fh.read(CHUNK_BYTES if left < 0 else min(CHUNK_BYTES, left))):
            left -= len(chunk) if left > 0 else 0
            lines = chunk.split(b"\n")
            tail = lines.pop()  # after the last newline: the start of the next line, or b"" at its end
            if not lines:  # no newline in this chunk: all of it belongs to the line being carried
                pending.append(tail)
                continue
            lo = 0
            if pending:
                lo = len(lines[0]) + 1
                report = walk.line(b"".join((*pending, lines[0])))
                if report is not None:
                    return report
                del lines[0]
            pending = [tail] if tail else []
            report = walk.batch(chunk, lines, lo, len(chunk) - len(tail))
            if report is not None:
                return report
        if pending:  # a last line without its newline is still a line (a torn one fails as not JSON)
            report = walk.line(b"".join(pending))
            if report is not None:
                return report
    if not walk.session and session:
        walk.session = session
    return _judge(walk, heads, key)


def verify_lines(
    lines: Iterable[bytes], heads: list[tuple[str, checkpoint.Head]], *, key: bytes | None = None
) -> VerifyReport:
    """The same verdict for a journal held elsewhere (the team store's rows): its lines, without their
    newlines, in order, and the copies of its head as (where, head)."""
    walk = _Walk(_wanted(heads))
    for body in lines:
        report = walk.line(body)
        if report is not None:
            return report
    return _judge(walk, heads, key)


def _wanted(heads: list[tuple[str, checkpoint.Head]]) -> set[int]:
    """The line counts whose hashes the verdict needs: each copy's, and the one after a copy with an intent."""
    return {h.events for _, h in heads} | {h.events + 1 for _, h in heads if h.intent}


def _vouches(h: checkpoint.Head, at: dict[int, str]) -> int:
    """How many events the head copy `h` vouches for (see `VerifyReport.vouched_events`)."""
    return h.events + 1 if h.intent is not None and at.get(h.events + 1) == h.intent else h.events


def _judge(walk: _Walk, heads: list[tuple[str, checkpoint.Head]], key: bytes | None) -> VerifyReport:
    """The verdict on a chain walked whole: every copy of the head against it."""
    count, prev, at, session, ended = walk.count, walk.prev, walk.at, walk.session, walk.ended
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
        vouched_events=min((_vouches(h, at) for _, h in heads), default=0),
    )
