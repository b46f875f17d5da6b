"""Issue 32 on the team store: with only the database URL, a paused session's history could be rewritten
and a `policy.changed` chained on, and the next `decide` went on from it and signed over it.

The attacks are made with plain SQL over the store's URL (its role owns the tables, as a team's role
usually does, so it can even switch the append-only trigger off). What the store itself now refuses is
shown first: a row only ever extends the chain, and the head moves only with it. What a runner refuses
follows: a rewritten history (with a key, even one rewritten along with the head), and a policy change
chained on by someone without the key."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import psycopg
import pytest

from agent.journal.chain import GENESIS
from tests.conftest import ed25519_keypair
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


@pytest.fixture
def team(postgres, cli) -> str:
    url = postgres.database(f"chain_{uuid.uuid4().hex[:12]}")
    assert cli("store", "init", "--store", url).code == 0
    return url


def rows(url: str, session: str) -> list[bytes]:
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (session,))
        return [bytes(r[0]) for r in found.fetchall()]


def head_row(url: str, session: str) -> tuple[int, str, str | None]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT events, head, record FROM signoff_journal_head WHERE session = %s", (session,)
        ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1]), row[2]


def refused(r, *needles: str) -> bool:
    lines = r.stderr.strip().splitlines()
    return r.code == UNVERIFIED and len(lines) == 1 and all(n in lines[0] for n in needles)


def paused(cli, variant, tmp_path: Path, team: str) -> tuple[str, Path]:
    marker = tmp_path / "ran-a-denied-command"
    policy = guarded_policy(tmp_path / "no-touching.yaml")
    campaign = variant(touching_campaign(marker))
    r = cli("run", str(campaign), "--policy", str(policy), "--headless", "--json", "--store", team)
    assert r.code == 3, r.stderr
    return r.json()["session"], marker


def test_the_store_takes_a_line_only_where_it_extends_the_chain(cli, variant, tmp_path, team):
    session, _ = paused(cli, variant, tmp_path, team)
    lines = rows(team, session)
    events, head, record = head_row(team, session)
    assert (events, head) == (len(lines), hashlib.sha256(lines[-1]).hexdigest()) and record
    good = chained(lines[-1], "note", text="a line that extends the chain")
    wrong_prev = json.loads(good) | {"prev": GENESIS}
    wrong_seq = json.loads(good) | {"seq": len(lines) + 5}
    insert = "INSERT INTO signoff_journal (session, seq, line, hash, kind) VALUES (%s, %s, %s, %s, 'note')"
    with psycopg.connect(team, autocommit=True) as conn:
        for record_, seq in ((wrong_prev, len(lines)), (wrong_seq, len(lines) + 5), (json.loads(good), len(lines) + 1)):
            line = json.dumps(record_, separators=(",", ":"), sort_keys=True).encode()
            with pytest.raises(psycopg.errors.RaiseException, match="does not extend session"):
                conn.execute(insert, (session, seq, line, hashlib.sha256(line).hexdigest()))
        with pytest.raises(psycopg.errors.RaiseException, match="does not extend session"):  # a hash not its own
            conn.execute(insert, (session, len(lines), good, "f" * 64))
        for statement, args in (
            ("UPDATE signoff_journal_head SET events = events - 1 WHERE session = %s", (session,)),
            ("UPDATE signoff_journal_head SET head = %s WHERE session = %s", ("e" * 64, session)),
            ("DELETE FROM signoff_journal_head WHERE session = %s", (session,)),
            ("INSERT INTO signoff_journal_head (session, events, head) VALUES ('other', 7, %s)", ("e" * 64,)),
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="signoff_journal_head"):
                conn.execute(statement, args)
        stale = json.dumps({"events": events - 1, "head": head})
        with pytest.raises(psycopg.errors.RaiseException, match="must name the head it sits beside"):
            conn.execute("UPDATE signoff_journal_head SET record = %s WHERE session = %s", (stale, session))
        # A line that does extend the chain goes in, and the head moves with it (its signed record does not).
        conn.execute(insert, (session, len(lines), good, hashlib.sha256(good).hexdigest()))
    assert head_row(team, session) == (len(lines) + 1, hashlib.sha256(good).hexdigest(), None)


def rewrite(team: str, session: str, *, head_too: bool) -> None:
    """As the tables' owner: switch the append-only triggers off, rewrite the history (readings at 500,
    chain recomputed) and, with `head_too`, the head to match; then switch them back on."""
    lines = rows(team, session)
    forged = rechain(lines, readings_at_500)
    with psycopg.connect(team, autocommit=True) as conn:
        conn.execute("ALTER TABLE signoff_journal DISABLE TRIGGER USER")
        conn.execute("ALTER TABLE signoff_journal_head DISABLE TRIGGER USER")
        try:
            for seq, (old, new) in enumerate(zip(lines, forged, strict=True)):
                if old != new:
                    conn.execute(
                        "UPDATE signoff_journal SET line = %s, hash = %s WHERE session = %s AND seq = %s",
                        (new, hashlib.sha256(new).hexdigest(), session, seq),
                    )
            if head_too:
                conn.execute(
                    "UPDATE signoff_journal_head SET head = %s WHERE session = %s",
                    (hashlib.sha256(forged[-1]).hexdigest(), session),
                )
        finally:
            conn.execute("ALTER TABLE signoff_journal ENABLE TRIGGER USER")
            conn.execute("ALTER TABLE signoff_journal_head ENABLE TRIGGER USER")


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned-head-left", "signed-head-rewritten"])
def test_a_history_rewritten_in_the_store_is_refused(cli, variant, tmp_path, team, monkeypatch, signed):
    if signed:
        monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(ed25519_keypair(tmp_path, "runner")[0]))
    session, _ = paused(cli, variant, tmp_path, team)
    assert cli("decide", session, "continue", "--by", "alice", "--store", team).code == 3  # readings journaled
    # Unsigned, the head row is left as it was (a rewrite that moves it too is a writer's, undetectable
    # without a key); signed, the head row is moved as well, and only its record's signature is left stale.
    rewrite(team, session, head_too=signed)
    before = (rows(team, session), head_row(team, session))
    why = "is not the one its record names" if signed else "history rewritten"
    for args in (
        ("decide", session, "continue", "--by", "mallory", "--yes"),
        ("decide", session, "continue", "--no-resume"),
        ("resume", session),
        ("attach", session, "--follow"),
    ):
        r = cli(*args, "--store", team)
        assert refused(r, why), (args, r.code, r.stderr)
        assert (rows(team, session), head_row(team, session)) == before, args
    assert cli("replay", session, "--verify", "--store", team).code == 1


def test_a_policy_change_chained_on_with_only_the_url_is_refused_when_heads_are_signed(
    cli, variant, tmp_path, team, monkeypatch
):
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(ed25519_keypair(tmp_path, "runner")[0]))
    session, marker = paused(cli, variant, tmp_path, team)
    lines = rows(team, session)
    text, path = allow_everything(), str(tmp_path / "nowhere" / "allow.yaml")
    with psycopg.connect(team, autocommit=True) as conn:
        (policy,) = conn.execute(
            "SELECT body FROM signoff_docs WHERE session = %s AND name = 'policy.yaml'", (session,)
        ).fetchone()
        (meta,) = conn.execute(
            "SELECT body FROM signoff_docs WHERE session = %s AND name = 'meta.json'", (session,)
        ).fetchone()
        line = policy_change(lines[-1], text, previous=hashlib.sha256(policy.encode()).hexdigest(), path=path)
        digest = hashlib.sha256(line).hexdigest()
        conn.execute(
            "INSERT INTO signoff_journal (session, seq, line, hash, kind) VALUES (%s, %s, %s, %s, 'policy.changed')",
            (session, len(lines), line, digest),
        )
        # What a writer does after its line (the store's trigger has done it already; the attacker cannot sign).
        conn.execute(
            "UPDATE signoff_journal_head SET events = %s, head = %s WHERE session = %s",
            (len(lines) + 1, digest, session),
        )
        conn.execute("UPDATE signoff_docs SET body = %s WHERE session = %s AND name = 'policy.yaml'", (text, session))
        conn.execute(
            "UPDATE signoff_docs SET body = %s WHERE session = %s AND name = 'meta.json'",
            (json.dumps({**json.loads(meta), "policy": path}), session),
        )
    before = (rows(team, session), head_row(team, session))
    assert before[1][:2] == (len(lines) + 1, digest)
    r = cli("decide", session, "continue", "--by", "alice", "--yes", "--store", team)
    assert refused(r, "store's head is not signed, but SIGNOFF_SIGNING_KEY is set"), (r.code, r.stderr)
    assert not marker.exists()
    assert (rows(team, session), head_row(team, session)) == before
