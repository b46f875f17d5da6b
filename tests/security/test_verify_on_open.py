"""Issue 32, "verify on every open": `resume`, `decide` and `attach` never verified the journal before they
went on from it, so a rewritten history was signed over and a line chained onto the end steered the run.

Each attack is made on a real paused session the way someone who can write its directory would (no key):
the history rewritten with the chain recomputed, a `policy.changed` allowing every command chained onto
the end, the head copies deleted or rewritten. Every command that can write then refuses in one line with
exit 5, runs nothing, appends nothing and signs nothing. What a signing key adds is shown too, and what
stays allowed: the lines a killed run left past its head, which the next runner adopts and says so."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import NamedTuple

import pytest

from agent.journal import head as checkpoint
from agent.journal.verify import verify
from tests.conftest import ed25519_keypair, journal_events
from tests.security.forge import (
    allow_everything,
    chained,
    guarded_policy,
    policy_change,
    readings_at_500,
    rechain,
    touching_campaign,
)

UNVERIFIED = 5


class Paused(NamedTuple):
    session: str
    journal: Path
    marker: Path  # made by `touch` in option #2's apply, which the session's policy denies


def pause(cli, variant, tmp_path: Path) -> Paused:
    """A session paused at its triage gate under a policy that denies `touch`, whose campaign runs one."""
    marker = tmp_path / "ran-a-denied-command"
    policy = guarded_policy(tmp_path / "no-touching.yaml")
    r = cli("run", str(variant(touching_campaign(marker))), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    return Paused(r.json()["session"], Path(r.json()["journal"]), marker)


@pytest.fixture
def paused(cli, variant, tmp_path) -> Paused:
    return pause(cli, variant, tmp_path)


def refused(r, *needles: str) -> bool:
    lines = r.stderr.strip().splitlines()
    return (
        r.code == UNVERIFIED
        and len(lines) == 1
        and "nothing ran and nothing was signed" in lines[0]
        and all(n in lines[0] for n in needles)
        and "Traceback" not in r.stderr
    )


def state(journal: Path) -> tuple[bytes, bytes, list[tuple[str, checkpoint.Head]]]:
    """Everything a writer would change: the journal's bytes and every copy of its head."""
    return journal.read_bytes(), (journal.parent / "head").read_bytes(), checkpoint.read_all(journal)


def append_policy_change(p: Paused) -> bytes:
    """Chain a `policy.changed` that allows every command onto the journal, and make the session's copy and
    meta.json agree with it (the policy file it names does not exist, so no drift is seen on disk)."""
    d = p.journal.parent
    text, path = allow_everything(), str(d.parent / "elsewhere" / "allow.yaml")
    previous = hashlib.sha256((d / "policy.yaml").read_bytes()).hexdigest()
    line = policy_change(p.journal.read_bytes().splitlines()[-1], text, previous=previous, path=path)
    with p.journal.open("ab") as fh:
        fh.write(line + b"\n")
    (d / "policy.yaml").write_text(text)
    meta = json.loads((d / "meta.json").read_text())
    (d / "meta.json").write_text(json.dumps({**meta, "policy": path}))
    return line


def test_a_rewritten_history_is_refused_by_every_writer_and_nothing_is_signed(cli, paused, tmp_path):
    # Past triage, so that the journal holds the benchmark readings of option #2.
    assert cli("decide", paused.session, "continue", "--by", "alice").code == 3
    lines = paused.journal.read_bytes().splitlines()
    assert any(json.loads(line)["kind"] == "bench.run" for line in lines)
    paused.journal.write_bytes(b"".join(line + b"\n" for line in rechain(lines, readings_at_500)))
    assert not verify(paused.journal).ok  # the head copies still name the real history
    before = state(paused.journal)

    for args in (
        ("decide", paused.session, "continue", "--by", "mallory", "--yes"),
        ("decide", paused.session, "continue", "--no-resume"),
        ("resume", paused.session),
        ("resume", paused.session, "--revisit"),
        ("attach", paused.session),
        ("attach", paused.session, "--follow"),
    ):
        r = cli(*args)
        assert refused(r, "history rewritten"), (args, r.code, r.stderr)
        assert state(paused.journal) == before, args  # nothing appended, no head written over it
    assert not paused.marker.exists()
    v = cli("replay", paused.session, "--verify", "--json")
    assert v.code == 1 and "history rewritten" in v.json()["error"]  # still caught: nothing signed it
    # Carried elsewhere, it is not taken in either.
    export = tmp_path / "export"
    assert cli("export", paused.session, str(export)).code == 0  # reading it is fine
    shutil.rmtree(paused.journal.parent)
    r = cli("import", str(export))
    assert r.code == 2 and "history rewritten" in r.stderr and "nothing imported" in r.stderr, r.stderr
    assert not paused.journal.parent.exists()


def test_a_head_copy_that_is_not_a_head_is_one_line(cli, paused):
    (paused.journal.parent / "head").write_text('{"events": "many", "head": 7}\n')
    r = cli("decide", paused.session, "continue", "--by", "alice")
    assert refused(r, "the head file is not a head"), r.stderr
    v = cli("replay", paused.session, "--verify")
    assert v.code == 1 and "the head file is not a head" in v.stdout and "Traceback" not in v.stderr


def test_a_policy_change_chained_on_behind_the_runners_back_runs_nothing(cli, paused):
    line = append_policy_change(paused)
    before = state(paused.journal)
    r = cli("decide", paused.session, "continue", "--by", "alice", "--yes")
    assert refused(r, f"policy.changed at seq {json.loads(line)['seq']} past every copy of its head"), r.stderr
    assert not paused.marker.exists()
    assert state(paused.journal) == before
    for args in (("resume", paused.session), ("attach", paused.session)):
        assert refused(cli(*args), "policy.changed"), args
    assert not paused.marker.exists()


def test_a_journal_whose_head_copies_were_removed_is_refused(cli, paused):
    (paused.journal.parent / "head").unlink()
    conn = sqlite3.connect(paused.journal.parent / "checkpoints.sqlite")
    with conn:
        conn.execute("DELETE FROM journal_head")
    conn.close()
    assert verify(paused.journal).ok  # a journal with no head copy checks out for an auditor: nothing to hold
    r = cli("decide", paused.session, "continue", "--by", "alice")
    assert refused(r, "session.started at seq 0 past its head (there is none)"), r.stderr
    assert not (paused.journal.parent / "head").exists()


@pytest.fixture
def keys(tmp_path, monkeypatch):
    """Our signing key (set), another runner's, and a forger's."""
    ours, colleague, forger = (ed25519_keypair(tmp_path, name) for name in ("ours", "colleague", "forger"))
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(ours[0]))
    return ours, colleague, forger


@pytest.fixture
def signed(cli, variant, tmp_path, keys) -> Paused:
    """`paused`, run with our signing key."""
    paused = pause(cli, variant, tmp_path)
    assert verify(paused.journal, key=checkpoint.load_public_key(keys[0][1])).signed
    return paused


def test_with_a_key_heads_rewritten_without_it_are_refused(cli, signed, keys, monkeypatch):
    paused, (ours, _, forger) = signed, keys
    line = append_policy_change(paused)
    count, head = len(paused.journal.read_bytes().splitlines()), hashlib.sha256(line).hexdigest()
    # Both copies of the head moved over the forged line, unsigned: the chain and the heads agree again.
    checkpoint.write_record(paused.journal, checkpoint.Head(events=count, head=head))
    assert verify(paused.journal).ok and not verify(paused.journal).signed
    r = cli("decide", paused.session, "continue", "--by", "alice", "--yes")
    assert refused(r, "its head file is not signed, but SIGNOFF_SIGNING_KEY is set"), r.stderr
    # Signed again, with the forger's own key.
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(forger[0]))
    checkpoint.write(paused.journal, paused.session, count, head, checkpoint.Signer.from_environment())
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(ours[0]))
    assert verify(paused.journal).ok and verify(paused.journal).signed  # self-consistent, as a forger makes it
    r = cli("decide", paused.session, "continue", "--by", "alice", "--yes")
    assert refused(r, "which is neither SIGNOFF_SIGNING_KEY's nor in SIGNOFF_TRUSTED_KEYS"), r.stderr
    assert not paused.marker.exists()


def test_a_signed_session_goes_on_only_under_a_key_it_trusts(cli, variant, keys, monkeypatch):
    ours, colleague, _ = keys
    r = cli("run", str(variant()), "--policy", "ask-everything", "--json")
    assert r.code == 3, r.stderr
    session, journal = r.json()["session"], Path(r.json()["journal"])
    before = state(journal)
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(colleague[0]))
    assert refused(cli("decide", session, "continue", "--by", "bob"), "neither SIGNOFF_SIGNING_KEY's"), "untrusted"
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY")
    r = cli("decide", session, "continue", "--by", "bob")
    assert refused(r, "is signed", "SIGNOFF_SIGNING_KEY is not set"), r.stderr  # it would go on unsigned
    assert state(journal) == before
    for name, value in (("SIGNOFF_SIGNING_KEY", "/nowhere/key.pem"), ("SIGNOFF_TRUSTED_KEYS", "/nowhere/key.pub")):
        monkeypatch.setenv(name, value)  # a key that cannot be used: one line, before anything is read
        r = cli("decide", session, "continue", "--by", "bob")
        lines = r.stderr.strip().splitlines()
        assert r.code == 2 and len(lines) == 1 and f"{name}" in lines[0] and "Traceback" not in r.stderr, r.stderr
        monkeypatch.delenv(name)
    assert state(journal) == before
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(colleague[0]))
    monkeypatch.setenv("SIGNOFF_TRUSTED_KEYS", str(ours[1]))
    r = cli("decide", session, "continue", "--by", "bob", "--json")
    assert r.code == 3, r.stderr  # a colleague's runner that trusts our key takes it over, and signs with its own
    assert cli("replay", session, "--verify", "--key", str(colleague[1])).code == 0


def test_lines_a_killed_run_left_past_its_head_are_adopted_and_said_so(cli, variant, home, monkeypatch):
    monkeypatch.setenv("SIGNOFF_CRASH_AT", "journal:bench.run#3")
    killed = cli("run", str(variant()), "--json")
    monkeypatch.delenv("SIGNOFF_CRASH_AT")
    assert killed.code == -9, killed.stderr
    (root,) = (home / "sessions").iterdir()
    journal = root / "journal.jsonl"
    left = journal_events(journal)
    covered = min(h.events for _, h in checkpoint.read_all(journal))
    assert covered < len(left)  # the runner died before its next head: these lines are covered by none
    r = cli("resume", root.name, "--json")
    assert r.code == 0, r.stderr
    events = journal_events(journal)
    adopted = events[len(left)]
    assert adopted["kind"] == "log.adopted" and events[len(left) + 1]["kind"] == "session.resumed"
    assert adopted["from_seq"] == covered and adopted["events"] == len(left) - covered
    assert (
        adopted["kinds"]["bench.run"] == 3
        and adopted["last"] == hashlib.sha256(journal.read_bytes().splitlines()[len(left) - 1]).hexdigest()
    )
    assert cli("replay", root.name, "--verify").code == 0
    assert f"adopted {adopted['events']} event(s) from seq {covered}" in cli("replay", root.name).stdout


def test_forged_lines_that_steer_nothing_are_adopted_only_in_the_open(cli, signed, keys):
    """Without the key nobody can vouch for lines past a signed head; those that change nothing a resume
    runs are taken as a killed run's last lines, and the signed journal says which lines those were."""
    paused = signed
    lines = paused.journal.read_bytes().splitlines()
    forged = chained(lines[-1], "note", text="alice approved everything by phone")
    with paused.journal.open("ab") as fh:
        fh.write(forged + b"\n")
    r = cli("decide", paused.session, "continue", "--by", "bob")
    assert r.code == 3, r.stderr
    events = journal_events(paused.journal)
    adopted = next(e for e in events if e["kind"] == "log.adopted")
    assert (adopted["from_seq"], adopted["events"], adopted["kinds"]) == (len(lines), 1, {"note": 1})
    assert adopted["last"] == hashlib.sha256(forged).hexdigest()
    assert cli("replay", paused.session, "--verify", "--key", str(keys[0][1])).code == 0


def test_a_decision_chained_past_a_signed_head_with_its_answer_decides_nothing(cli, signed, keys):
    """A forger without the key chains a decision for the waiting gate onto the journal and writes the matching
    answer into the answer store: the decision is past the signed head, so the next writer refuses the journal
    and applies nothing (before, it was adopted, applied and signed over, and `--verify --key` said OK)."""
    d = signed.journal.parent
    opened = [json.loads(x) for x in signed.journal.read_bytes().splitlines() if b'"gate.opened"' in x][-1]
    decision = {"action": "stop", "by": "human:boss"}
    line = chained(
        signed.journal.read_bytes().splitlines()[-1],
        "decision",
        gate=opened["gate"],
        gate_kind=opened["gate_kind"],
        raw="stop",
        by="human:boss",
        decision=decision,
        interrupt=opened["interrupt"],
    )
    with signed.journal.open("ab") as fh:
        fh.write(line + b"\n")
    (d / "answers.json").write_text(json.dumps({opened["interrupt"]: {"decision": decision, "rules": []}}))
    before = state(signed.journal)
    r = cli("resume", signed.session)
    assert refused(r, f"decision at seq {json.loads(line)['seq']} past"), r.stderr
    assert state(signed.journal) == before
