"""H2 (issue 19): a signed journal must not take forged events after its end, nor an older head.

Each attack is reproduced on a finished session signed with a key the attacker does not have: lines
appended after `session.finished` (chained correctly, one a decision by `human:alice`, the head left as
it is since it cannot be re-signed), and the journal cut back to an older signed head with that head
restored in both copies. A head written before heads could say `final` still verifies."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization

from agent.journal import head as checkpoint
from agent.journal.chain import read_events
from agent.journal.verify import verify
from tests.conftest import ed25519_keypair


class Signed(NamedTuple):
    session: str
    journal: Path
    private: Path
    public: Path


@pytest.fixture
def signed(cli, variant, tmp_path, monkeypatch) -> Signed:
    """A finished session signed with our key."""
    private, public = ed25519_keypair(tmp_path, "ours")
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(private))
    r = cli("run", str(variant()), "--json")
    assert r.code == 0, r.stderr
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY")
    return Signed(r.json()["session"], Path(r.json()["journal"]), private, public)


def forged_tail(journal: Path, n: int) -> bytes:
    """`n` lines that chain onto the journal's last one, the second a decision by human:alice: what
    anyone who can write the file can make (no key needed)."""
    last = list(read_events(journal))[-1]
    prev = hashlib.sha256(rfc8785.dumps(last)).hexdigest()
    out = b""
    for i in range(n):
        e = {"seq": last["seq"] + 1 + i, "prev": prev, "session": last["session"], "ts": last["ts"]}
        if i == 1:
            e |= {"kind": "decision", "actor": "human:alice", "by": "human:alice", "gate": "g-forged"}
            e["decision"] = {"action": "accept", "by": "human:alice"}
        else:
            e |= {"kind": "note", "actor": "human:alice", "text": f"forged {i}"}
        line = rfc8785.dumps(e)
        out += line + b"\n"
        prev = hashlib.sha256(line).hexdigest()
    return out


def test_the_finished_head_is_final_and_says_so(cli, signed):
    v = cli("replay", signed.session, "--verify", "--key", str(signed.public))
    assert v.code == 0 and "the head is final" in v.stdout and "unsigned" not in v.stdout
    assert all(h.final for _, h in checkpoint.read_all(signed.journal))


def test_lines_appended_after_the_end_fail_verification(cli, signed):
    with signed.journal.open("ab") as fh:
        fh.write(forged_tail(signed.journal, 3))
    v = cli("replay", signed.session, "--verify", "--key", str(signed.public), "--json")
    assert v.code == 1, v.stdout
    assert "3 event(s) after the" in v.json()["error"] and "final head" in v.json()["error"]
    assert cli("replay", signed.session, "--verify").code == 1  # without --key too


def test_clearing_final_on_the_head_breaks_its_signature(cli, signed):
    with signed.journal.open("ab") as fh:
        fh.write(forged_tail(signed.journal, 3))
    # Without the key the head cannot move forward, so the attacker clears `final` on it instead, to make
    # the appended lines look like a run that is still going.
    for _, h in checkpoint.read_all(signed.journal):
        checkpoint.write_record(signed.journal, h.model_copy(update={"final": None}))
    v = cli("replay", signed.session, "--verify", "--key", str(signed.public), "--json")
    assert v.code == 1 and "signature does not verify" in v.json()["error"]
    # In an unsigned store the same edit leaves no signature to break, and it still fails: the journal
    # ended at an event the head covers, and lines follow that nothing vouches for.
    for _, h in checkpoint.read_all(signed.journal):
        checkpoint.write_record(signed.journal, checkpoint.Head(events=h.events, head=h.head))
    v = cli("replay", signed.session, "--verify", "--json")
    assert v.code == 1 and "the session ended at event" in v.json()["error"]


def test_cutting_back_to_an_older_signed_head_fails(cli, signed, monkeypatch):
    lines = signed.journal.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["kind"] == "session.finished"
    kept = lines[:-1]
    signed.journal.write_bytes(b"".join(kept))
    # The head the runner signed at that point, restored in both copies (an attacker who kept a copy has
    # exactly this; it is made here with our key because the test has no older copy to hand).
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(signed.private))
    older = checkpoint.Signer.from_environment()
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY")
    head = hashlib.sha256(kept[-1].rstrip(b"\n")).hexdigest()
    checkpoint.write(signed.journal, signed.session, len(kept), head, older)
    assert verify(signed.journal, key=None).ok  # the chain and a signed head alone hold: the hole was real
    v = cli("replay", signed.session, "--verify", "--key", str(signed.public), "--json")
    assert v.code == 1 and "meta.json says the session finished" in v.json()["error"]


def test_a_head_from_before_final_existed_still_verifies(cli, signed):
    """Heads written by earlier versions carry no `final` and sign "<session>:<events>:<head>"."""
    key = serialization.load_pem_private_key(signed.private.read_bytes(), password=None)
    for _, h in checkpoint.read_all(signed.journal):
        signature = base64.b64encode(key.sign(f"{signed.session}:{h.events}:{h.head}".encode())).decode()
        legacy = checkpoint.Head(events=h.events, head=h.head, signature=signature, key=h.key)
        checkpoint.write_record(signed.journal, legacy)
    assert "final" not in (signed.journal.parent / "head").read_text()
    v = cli("replay", signed.session, "--verify", "--key", str(signed.public))
    assert v.code == 0 and v.stdout.startswith("OK: ") and "the head is final" not in v.stdout
