"""Reading a session back: the timeline, and verification that re-derives every policy decision."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import rfc8785

from agent.journal import GENESIS, read_events


def rewrite(journal: Path, edit) -> None:
    """Forge a journal the careful way: edit events, recompute every hash and the head file."""
    prev, lines = GENESIS, []
    for e in read_events(journal):
        e = edit(e)
        e["prev"] = prev
        line = rfc8785.dumps(e)
        lines.append(line)
        prev = hashlib.sha256(line).hexdigest()
    journal.write_bytes(b"".join(line + b"\n" for line in lines))
    (journal.parent / "head").write_text(json.dumps({"events": len(lines), "head": prev}))


def test_replay_timeline_and_verify(cli, variant, home):
    r = cli("run", str(variant()), "--json")
    assert r.code == 0, r.stderr
    session, journal = r.json()["session"], Path(r.json()["journal"])
    v = cli("replay", session, "--verify")
    assert v.code == 0 and v.stdout.startswith("OK: ") and "6 gates, 6 policy decisions re-derived" in v.stdout
    t = cli("replay", session, "--kind", "decision", "--option", "2")
    assert t.code == 0 and "skip by policy:skip-unsafe" in t.stdout
    j = cli("replay", session, "--kind", "stress.result", "--json")
    assert all(e["kind"] == "stress.result" for e in j.json())

    # Someone rewrites #2's facts to look safe and recomputes the whole chain and the head: the chain
    # verifies, but the policy decision no longer follows from the facts.
    def forge(e):
        if e["kind"] == "gate.opened" and e.get("gate_kind") == "safety" and e.get("option") == 2:
            e["facts"] = {**e["facts"], "verdict": "safe", "wedges": 0, "risk": "low"}
        return e

    rewrite(journal, forge)
    v = cli("replay", session, "--verify", "--json")
    assert v.code == 1
    out = v.json()
    assert not out["ok"] and "the journal says skip by skip-unsafe" in out["error"]


def test_a_plain_edit_breaks_the_chain(cli, variant):
    r = cli("run", str(variant()), "--json")
    journal = Path(r.json()["journal"])
    lines = journal.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"seq":5', '"seq":5,"x":1')
    journal.write_text("".join(lines))
    v = cli("replay", r.json()["session"], "--verify")
    assert v.code == 1 and v.stdout.startswith("FAILED at seq 6")
