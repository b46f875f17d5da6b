"""The verifier's fast path (chunked reading, whole batches of lines checked at once) must report exactly
what the line-at-a-time check reports, on good journals and on every way of breaking one.

Each case runs `verify` once with every line sent through `_Walk.line` (the reference: the loop the
verifier always ran) and then with many chunk sizes and every batch it can sent through the bulk check;
all reports must be identical, and each case also pins the report itself, so a mistake shared by both
paths is caught too. A spy checks that the bulk check really vouched for lines where it should, so a
fast path that quietly gave up on everything would not pass for a correct one.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from agent.journal import events as ev
from agent.journal import head as checkpoint
from agent.journal import verify as verifier
from agent.journal.chain import GENESIS, Journal
from agent.journal.verify import VerifyReport, verify

# Small chunks cut lines (and newlines) everywhere; 1 byte carries every line over in pieces.
CHUNKS = (1, 2, 7, 64, 100, 333, 1000, 4096, 1 << 20)


class BulkSpy:
    """Counts the lines the bulk check vouched for."""

    def __init__(self) -> None:
        self.lines = 0


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> BulkSpy:
    counter = BulkSpy()
    real = verifier._Walk._all_pass  # pyright: ignore[reportPrivateUsage]

    def counted(walk: Any, buf: bytes, lines: list[bytes], lo: int, hi: int) -> bool:
        passed = real(walk, buf, lines, lo, hi)
        counter.lines += len(lines) if passed else 0
        return passed

    monkeypatch.setattr(verifier._Walk, "_all_pass", counted)  # pyright: ignore[reportPrivateUsage]
    return counter


@pytest.fixture
def check(monkeypatch: pytest.MonkeyPatch, spy: BulkSpy) -> Callable[..., VerifyReport]:
    """`check(path)`: the report, after making sure every path and chunk size gives the same one."""

    def run(path: Path, *, key: bytes | None = None, bulk: bool | None = None) -> VerifyReport:
        monkeypatch.setattr(verifier, "_LINE_BY_LINE", 10**9)
        monkeypatch.setattr(verifier, "CHUNK_BYTES", 1 << 20)
        reference = verify(path, key=key)
        monkeypatch.setattr(verifier, "_LINE_BY_LINE", 0)
        spy.lines = 0
        for chunk in CHUNKS:
            monkeypatch.setattr(verifier, "CHUNK_BYTES", chunk)
            assert verify(path, key=key) == reference, f"chunk of {chunk} bytes"
        if bulk is not None:
            assert (spy.lines > 0) == bulk, spy.lines
        return reference

    return run


def sha(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def chain(records: list[dict[str, Any]], tweak: Callable[[int, bytes], bytes] | None = None) -> list[bytes]:
    """Canonical lines (no newline) chained the way the journal chains them: `seq` and `prev` filled in
    unless a record gives its own (use None to leave a key out); `tweak` edits a line's bytes before the
    next line takes its hash, so an odd line can still be correctly chained to."""
    lines: list[bytes] = []
    prev = GENESIS
    for i, record in enumerate(records):
        full = {"v": 1, "seq": i, "ts": "2026-01-01T00:00:00.000Z", "session": "s", "actor": "a", "prev": prev}
        full |= record
        line = rfc8785.dumps({k: v for k, v in full.items() if v is not None})
        if tweak is not None:
            line = tweak(i, line)
        lines.append(line)
        prev = sha(line)
    return lines


def write(path: Path, lines: list[bytes], end: bytes = b"\n") -> Path:
    path.write_bytes(b"\n".join(lines) + end if lines else b"")
    return path


def notes(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"kind": "note", "text": f"event {i} " + "x" * (i % 37), **extra} for i in range(n)]


# ------------------------------------------------------------------- good journals, every chunk size


def journaled(tmp_path: Path, n: int = 300) -> Path:
    """A journal as the runner writes it: mostly commands, a durable decision every 7th (a head each)."""
    j = Journal(tmp_path / "journal.jsonl", "sess")
    j.append(ev.SessionStartedEvent(policy_text="p"))
    for i in range(1, n):
        if i % 7 == 0:
            j.append(ev.DecisionEvent(gate=f"g{i}", by="policy:x", decision={"action": "continue"}))
        else:
            j.append(ev.CommandFinishedEvent(host="h", exit=0, duration_s=0.25, command=f"run {i} " + "y" * (i % 50)))
    j.close()
    return tmp_path / "journal.jsonl"


def test_a_journal_verifies_the_same_at_every_chunk_size(tmp_path, check):
    path = journaled(tmp_path)
    report = check(path, bulk=True)
    assert report.ok and report.events == 300 and report.head_events == 300
    assert report.head == sha(path.read_bytes().splitlines()[-1])


def test_an_older_head_inside_a_batch_is_matched_at_its_own_event(tmp_path, check):
    """Head copies name an event count; the bulk check must record the hash at exactly that count."""
    path = journaled(tmp_path)
    lines = path.read_bytes().splitlines()
    db = tmp_path / "checkpoints.sqlite"
    db.unlink()  # the head file alone, so it can be set to any event
    for events in (1, 2, 63, 64, 65, 140, 299):
        (tmp_path / "head").write_text(json.dumps({"events": events, "head": sha(lines[events - 1])}))
        report = check(path, bulk=True)
        assert report.ok and report.head_events == events, events
        for wrong in (lines[events - 2] if events > 1 else b"", lines[events]):  # one event off either way
            (tmp_path / "head").write_text(json.dumps({"events": events, "head": sha(wrong)}))
            report = check(path)
            assert not report.ok and report.failed_seq == events
            assert report.error == f"hash at event {events} differs from the head file (history rewritten)"


def test_nested_keys_named_prev_and_seq_verify(tmp_path, check):
    records = notes(200)
    for i in range(0, 200, 3):
        records[i]["x"] = {"prev": "ab" * 32, "seq": 5}  # after the top-level keys in key order
    for i in range(1, 200, 10):
        records[i]["a"] = {"prev": "cd" * 32, "seq": i + 1}  # before them
    path = write(tmp_path / "journal.jsonl", chain(records))
    report = check(path, bulk=True)
    assert report.ok and report.events == 200


def test_a_line_longer_than_a_chunk(tmp_path, check):
    records = notes(40)
    records[17]["blob"] = "z" * 5000
    path = write(tmp_path / "journal.jsonl", chain(records))
    assert check(path).ok


# ------------------------------------------------------------------ what only the top-level keys decide


def test_a_nested_prev_holding_the_right_hash_does_not_cover_a_wrong_top_level_one(tmp_path, check):
    good = chain(notes(100))
    records = notes(100)
    records[50] |= {"a": {"prev": sha(good[49])}, "prev": "f" * 64}  # "a" sorts first: its prev comes first
    path = write(tmp_path / "journal.jsonl", chain(records[:50]) + chain(records)[50:])
    report = check(path)
    assert not report.ok and report.failed_seq == 50 and report.events == 50
    assert report.error == "seq 50: prev does not match the hash of the line before (edited, removed or reordered)"


def test_a_nested_seq_with_the_expected_number_does_not_cover_a_wrong_top_level_one(tmp_path, check):
    records = notes(100)
    records[50] |= {"a": {"seq": 50, "z": 1}, "seq": 57}  # the nested one reads `"seq":50,` as a top-level one would
    path = write(tmp_path / "journal.jsonl", chain(records))
    report = check(path)
    assert not report.ok and report.failed_seq == 50
    assert report.error == "seq 57 where 50 was expected (gap or reorder)"


def test_a_line_without_prev_beside_one_with_two(tmp_path, check):
    """The batch holds as many of each key as it has lines, but not one per line, and the prevs in file
    order are exactly the chain: line 41 carries line 39's hash (nested, first) and line 40's."""
    records = notes(100)
    records[40]["prev"] = None
    records[41]["a"] = {"prev": sha(chain(records[:40])[39])}
    path = write(tmp_path / "journal.jsonl", chain(records))
    report = check(path)
    assert not report.ok and report.failed_seq == 40
    assert report.error == "line 41 lacks seq or prev"


def test_a_line_without_seq_beside_one_with_two(tmp_path, check):
    records = notes(100)
    records[40]["x"] = {"seq": 41}
    records[41]["seq"] = None
    path = write(tmp_path / "journal.jsonl", chain(records))
    report = check(path)
    assert not report.ok and report.failed_seq == 41
    assert report.error == "line 42 lacks seq or prev"


def test_lines_the_bulk_check_refuses_but_the_reference_accepts(tmp_path, check):
    """Not canonical, but accepted as ever: a seq with leading zeros or a fraction (its digits are
    read), and a seq that is the line's last key (nothing after it to end the number with a comma)."""

    def odd(i: int, line: bytes) -> bytes:
        if i == 30:
            return line.replace(b'"seq":30,', b'"seq":030,')
        if i == 31:
            return line.replace(b'"seq":31,', b'"seq":31.0,')
        return line

    records = notes(100)
    records[32] |= {"session": None, "text": None, "ts": None, "v": None}  # "seq" is then the last key
    lines = chain(records, odd)
    assert lines[32].endswith(b'"seq":32}')
    path = write(tmp_path / "journal.jsonl", lines)
    report = check(path, bulk=True)
    assert report.ok and report.events == 100


def test_a_seq_that_starts_with_the_expected_digits(tmp_path, check):
    records = notes(100)
    records[30]["seq"] = 300
    report = check(write(tmp_path / "journal.jsonl", chain(records)))
    assert (report.ok, report.failed_seq) == (False, 30)
    assert report.error == "seq 300 where 30 was expected (gap or reorder)"


def test_the_session_a_signature_covers_is_read_from_the_first_line_that_names_one(tmp_path, check):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    records = notes(150, session=None)
    for record in records[12:]:
        record["session"] = "sess-b"
    lines = chain(records)
    path = write(tmp_path / "journal.jsonl", lines)
    checkpoint.write(path, "sess-b", 150, sha(lines[-1]), checkpoint.Signer(key))
    report = check(path, key=public, bulk=True)
    assert report.ok and report.signed
    checkpoint.write(path, "sess-c", 150, sha(lines[-1]), checkpoint.Signer(key))
    report = check(path, key=public)
    assert not report.ok and report.failed_seq == 150 and (report.error or "").startswith("head file: ")


# ------------------------------------------------------------ breaks, wherever the chunks cut the line


@pytest.mark.parametrize("where", ["start", "middle", "newline", "after"])
def test_an_edited_line_cut_by_a_chunk_edge_is_caught_at_its_seq(tmp_path, check, monkeypatch, where):
    lines = chain(notes(100))
    lines[60] = lines[60].replace(b"event 60", b"event 6O")
    path = write(tmp_path / "journal.jsonl", lines)
    start = sum(len(line) + 1 for line in lines[:60])
    edge = {"start": start, "middle": start + len(lines[60]) // 2, "newline": start + len(lines[60])}
    edge["after"] = edge["newline"] + 1
    monkeypatch.setattr(verifier, "_LINE_BY_LINE", 0)
    monkeypatch.setattr(verifier, "CHUNK_BYTES", edge[where])
    report = verify(path)
    assert not report.ok and report.failed_seq == 61 and report.events == 61
    assert report.error == "seq 61: prev does not match the hash of the line before (edited, removed or reordered)"
    assert check(path) == report


def test_deleted_swapped_and_duplicated_lines(tmp_path, check):
    lines = chain(notes(150))
    cases = {
        "deleted": (lines[:70] + lines[71:], 70, 71),
        "swapped": ([*lines[:70], lines[71], lines[70], *lines[72:]], 70, 71),
        "duplicated": (lines[:71] + lines[70:], 71, 70),
    }
    for name, (content, failed, found) in cases.items():
        report = check(write(tmp_path / "journal.jsonl", content))
        error = f"seq {found} where {failed} was expected (gap or reorder)"
        assert (report.ok, report.failed_seq, report.error) == (False, failed, error), name


# --------------------------------------------------------------------- how a file may begin and end


def test_an_empty_file_is_an_empty_journal(tmp_path, check):
    report = check(write(tmp_path / "journal.jsonl", []))
    assert report == VerifyReport(ok=True, events=0, head=GENESIS)


def test_a_last_line_without_its_newline_still_counts(tmp_path, check):
    lines = chain(notes(80))
    report = check(write(tmp_path / "journal.jsonl", lines, end=b""))
    assert report.ok and report.events == 80 and report.head == sha(lines[-1])


def test_a_torn_last_line_is_not_json(tmp_path, check):
    lines = chain(notes(80))
    path = write(tmp_path / "journal.jsonl", [*lines, lines[0][:25]], end=b"")
    report = check(path)
    assert (report.ok, report.events, report.failed_seq) == (False, 80, 80)
    assert report.error == "line 81 is not JSON (torn or edited)"


def test_blank_lines_are_not_json(tmp_path, check):
    lines = chain(notes(80))
    for content, end, failed in (([*lines[:40], b"", *lines[40:]], b"\n", 40), (lines, b"\n\n", 80), ([b""], b"\n", 0)):
        report = check(write(tmp_path / "journal.jsonl", content, end=end))
        assert (report.ok, report.failed_seq) == (False, failed)
        assert report.error == f"line {failed + 1} is not JSON (torn or edited)"


def test_a_crlf_line_end_is_part_of_the_line_it_ends(tmp_path, check):
    """Only \\n ends a line: a \\r before it is hashed with the line, so the next line's prev fails."""
    lines = chain(notes(80))
    middle = [*lines[:40], lines[40] + b"\r", *lines[41:]]
    report = check(write(tmp_path / "journal.jsonl", middle))
    assert (report.ok, report.failed_seq) == (False, 41)
    assert report.error == "seq 41: prev does not match the hash of the line before (edited, removed or reordered)"
    last = [*lines[:-1], lines[-1] + b"\r"]
    report = check(write(tmp_path / "journal.jsonl", last))
    assert report.ok and report.head == sha(lines[-1] + b"\r")


# -------------------------------------------------------------------------------- the session's end


def test_events_after_the_end_behind_an_older_head(tmp_path, check):
    """The end is found inside a bulk-checked batch, even when a nested object mimics it elsewhere."""
    j = Journal(tmp_path / "journal.jsonl", "sess")
    j.append(ev.SessionStartedEvent(policy_text="p"))
    for i in range(1, 120):
        if i == 30:
            j.append(ev.DecisionEvent(gate="g", by="policy:x", decision={"kind": "session.finished"}))
            older = (tmp_path / "head").read_text()
        else:
            j.append(ev.CommandFinishedEvent(host="h", exit=0, command=f"run {i}"))
    j.append(ev.SessionFinishedEvent())
    j.close()
    path = tmp_path / "journal.jsonl"
    assert check(path, bulk=True).final
    lines = path.read_bytes().splitlines()
    prev = sha(lines[-1])
    for i, record in enumerate(notes(5)):  # chained on correctly: anyone who can write the file can
        record |= {"v": 1, "seq": len(lines), "ts": "t", "session": "sess", "actor": "x", "prev": prev}
        lines.append(rfc8785.dumps(record))
        prev = sha(lines[-1])
        assert i + 1 == len(lines) - 121
    write(path, lines)
    (tmp_path / "checkpoints.sqlite").unlink()
    (tmp_path / "head").write_text(older)
    report = check(path, bulk=True)
    assert not report.ok and report.failed_seq == 31
    assert report.error == (
        "the session ended at event 121 but the head file covers 31 of 126 events "
        "(events appended after the end, or an older head restored)"
    )


def test_an_end_at_a_chunk_edge_that_the_oldest_head_covers(tmp_path, check, monkeypatch):
    """The batch that ends with the ending line ends where the oldest head copy is."""
    records = notes(100)
    records[59]["kind"] = "session.finished"
    lines = chain(records)
    path = write(tmp_path / "journal.jsonl", lines)
    (tmp_path / "head").write_text(json.dumps({"events": 60, "head": sha(lines[59])}))
    monkeypatch.setattr(verifier, "_LINE_BY_LINE", 0)
    monkeypatch.setattr(verifier, "CHUNK_BYTES", sum(len(line) + 1 for line in lines[:60]))
    report = verify(path)
    assert (report.ok, report.failed_seq) == (False, 60)
    assert report.error == (
        "the session ended at event 60 but the head file covers 60 of 100 events "
        "(events appended after the end, or an older head restored)"
    )
    assert check(path, bulk=True) == report
    # The same bytes nested in an event that is not the end do not end the session.
    records[59] |= {"kind": "note", "a": {"kind": "session.finished"}}
    lines = chain(records)
    assert b'"kind":"session.finished"' in lines[59]
    write(path, lines)
    (tmp_path / "head").write_text(json.dumps({"events": 60, "head": sha(lines[59])}))
    report = check(path, bulk=True)
    assert report.ok and report.head_events == 60


# ---------------------------------------------------------------------------- anything, any chunking


def mutations(lines: list[bytes], rng: random.Random) -> Iterator[tuple[str, list[bytes]]]:
    n = len(lines)
    k = rng.randrange(1, n - 1)
    yield "intact", lines
    yield "byte edited", [*lines[:k], lines[k][:-5] + b"X" + lines[k][-4:], *lines[k + 1 :]]
    yield "deleted", lines[:k] + lines[k + 1 :]
    yield "swapped", [*lines[:k], lines[k + 1], lines[k], *lines[k + 2 :]]
    yield "truncated", lines[:k]
    yield "torn", [*lines[:k], lines[k][: len(lines[k]) // 2]]
    yield "blank", [*lines[:k], b"", *lines[k:]]
    yield "crlf", [*lines[:k], lines[k] + b"\r", *lines[k + 1 :]]
    yield "prev removed", [*lines[:k], lines[k].replace(b'"prev":"', b'"prevx":"'), *lines[k + 1 :]]
    yield "seq doubled", [*lines[:k], lines[k].replace(b'"seq":', b'"seq":1'), *lines[k + 1 :]]


def test_random_journals_and_damage_agree_with_the_reference(tmp_path, check):
    rng = random.Random(8785)
    for _ in range(6):
        records = notes(rng.randrange(20, 160))
        for record in records:
            if rng.random() < 0.1:
                record[rng.choice(["a", "x"])] = {rng.choice(["prev", "seq"]): rng.choice(["ab" * 32, 3, "q"])}
            if rng.random() < 0.05:
                record["kind"] = "session.finished"
        lines = chain(records)
        for _name, content in mutations(lines, rng):
            path = write(tmp_path / "journal.jsonl", content, end=rng.choice([b"\n", b""]))
            check(path)  # agreement with the reference is the assertion
