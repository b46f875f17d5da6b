"""Headless with ask-everything: pause at every gate, drive the run with one-line decisions."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agent.journal.verify import verify
from tests.conftest import journal_events, run_until_benchmarking


@pytest.mark.heavy
def test_one_line_decisions_drive_a_paused_campaign_to_the_end(cli, variant, home):
    campaign = variant()
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    session = out["session"]
    assert out["status"] == "paused"
    gate = out["pending_gate"]
    assert gate["kind"] == "triage" and gate["facts"]["no_go_count"] == 1
    assert set(gate["allowed"]) >= {"continue", "skip", "stop"}
    assert "requires expert parallelism" in gate["question"]

    # Human text shows the exact decide command, bound to the gate it shows.
    plain = cli("resume", session)
    assert plain.code == 3 and f'signoff decide {session} --gate g2 "continue"' in plain.stdout

    r = cli("decide", session, "Skip #2 for now if it's unsafe", "--by", "alice", "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    assert out["pending_gate"]["kind"] == "continue_or_ask"
    two = {o["id"]: o for o in out["options"]}[2]
    assert two["outcome"] == "deferred" and two["verdict"] == "unsafe"

    r = cli("decide", session, "Sounds like 3 is bigger win anyways", "--by", "alice", "--json")
    assert r.code == 2 and "hedged decision needs confirmation: repeat it with --yes" in r.stderr
    r = cli("decide", session, "Sounds like 3 is bigger win anyways", "--by", "alice", "--yes", "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    assert out["pending_gate"]["kind"] == "safety" and out["pending_gate"]["option"] == 3

    r = cli("decide", session, "continue", "--by", "bob", "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["status"] == "finished"
    outcomes = {o["id"]: o["outcome"] for o in out["options"]}
    assert outcomes == {1: "no-go", 2: "deferred", 3: "kept"}
    gates = [(g["kind"], g["option"], g["action"], g["by"]) for g in out["gates"]]
    assert gates[0] == ("plan", None, "approve", "policy:nothing-to-approve")
    assert gates[1:5] == [
        ("triage", None, "continue", "human:alice"),
        ("safety", 2, "skip", "session-rule:1"),
        ("continue_or_ask", 2, "select", "human:alice"),
        ("safety", 3, "continue", "human:bob"),
    ]

    journal = Path(out["journal"])
    assert verify(journal).ok
    events = journal_events(journal)
    decisions = [e for e in events if e["kind"] == "decision" and e.get("raw")]
    assert [(d["raw"], d["by"]) for d in decisions] == [
        ("Skip #2 for now if it's unsafe", "human:alice"),
        ("Sounds like 3 is bigger win anyways", "human:alice"),
        ("continue", "human:bob"),
    ]
    assert decisions[0]["parsed"]["condition"] == 'verdict == "unsafe"'
    assert decisions[1]["parsed"]["hedged"] is True
    rule = next(e for e in events if e["kind"] == "rule.added")["rule"]
    assert rule["id"] == "session-rule:1" and rule["targets"] == [2] and rule["kinds"] == ["safety"]
    assert [e["kind"] for e in events].count("session.paused") == 3


def graph_rows(db: Path) -> dict[str, list[tuple]]:
    """Every row LangGraph keeps (the journal's head copy in `journal_head` is the journal's, not the graph's)."""
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables if t != "journal_head"}
    finally:
        conn.close()


def test_gibberish_decision_changes_nothing(cli, variant, home):
    campaign = variant()
    r = cli("run", str(campaign), "--policy", "ask-everything", "--json")
    session = r.json()["session"]
    root = home / "sessions" / session
    before_ckpt = graph_rows(root / "checkpoints.sqlite")
    r = cli("decide", session, "purple monkey dishwasher")
    assert r.code == 2
    assert "didn't understand 'purple monkey dishwasher'" in r.stderr and "try: continue" in r.stderr
    assert "nothing changed" in r.stderr
    assert graph_rows(root / "checkpoints.sqlite") == before_ckpt  # the graph's state did not move
    assert not (root / "answers.json").exists()
    events = journal_events(root / "journal.jsonl")
    assert events[-1]["kind"] == "decision.rejected" and events[-1]["raw"] == "purple monkey dishwasher"
    assert verify(root / "journal.jsonl").ok
    # A decision the gate cannot take is refused the same way.
    r = cli("decide", session, "roll back")
    assert r.code == 2 and "a triage gate cannot rollback" in r.stderr
    r = cli("decide", session, "go with 7")
    assert r.code == 2 and "unknown option(s) #7" in r.stderr
    # The gate is still pending and still answerable.
    r = cli("resume", session, "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "triage"


def test_no_resume_records_then_resume_applies(cli, variant, home):
    campaign = variant()
    session = cli("run", str(campaign), "--policy", "ask-everything", "--json").json()["session"]
    r = cli("decide", session, "stop", "--no-resume", "--yes", "--json")
    assert r.code == 3 and "recorded" in r.json()["echo"]
    answers = json.loads((home / "sessions" / session / "answers.json").read_text())
    assert len(answers) == 1
    r = cli("resume", session, "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["status"] == "stopped"
    assert {o["outcome"] for o in out["options"]} == {"no-go", "untested"}


def test_decide_on_a_finished_or_unknown_session(cli, variant):
    r = cli("decide", "no-such-session", "continue")
    assert r.code == 2 and "no session 'no-such-session'" in r.stderr
    campaign = variant()
    session = cli("run", str(campaign), "--policy", "autonomous", "--json").json()["session"]
    r = cli("decide", session, "continue")
    assert r.code == 2 and "is not waiting for a decision" in r.stderr


def test_a_second_recorded_answer_for_the_same_gate_is_refused(cli, variant, home):
    session = cli("run", str(variant()), "--policy", "ask-everything", "--json").json()["session"]
    assert cli("decide", session, "continue", "--no-resume").code == 3
    r = cli("decide", session, "stop", "--no-resume")
    assert r.code == 2 and "already has a recorded answer" in r.stderr
    r = cli("resume", session, "--json")
    assert r.json()["gates"][1]["action"] == "continue"  # gates[0] is the plan, approved by rule


def test_one_runner_per_session_and_kill_9_frees_the_lock_for_resume(cli, variant, home):
    # Short apply/revert deadlines: a toggle the kill cut short is waited out (until its backstop has
    # surely ended it) before resume checks it, and with the default 60 s that wait alone took 66 s.
    campaign = variant(edit=lambda text: text.replace("on: decode}]", "on: decode, timeout: 2}]"))
    proc = run_until_benchmarking(home, campaign, subprocess.DEVNULL)
    session = cli("sessions", "--json").json()[0]["id"]
    # A second process may not drive a session another one is running: it names the holder.
    for args in (("resume", session), ("decide", session, "continue", "--yes")):
        r = cli(*args)
        assert r.code != 0 and f"in use by pid {proc.pid} (" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    assert proc.poll() is None  # and the runner was not disturbed
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rows = cli("sessions", "--json").json()
    assert rows[0]["status"] == "interrupted"  # the dead holder's lock went with it
    r = cli("resume", rows[0]["id"], "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert {o["id"]: (o["outcome"], o["verdict"]) for o in out["options"]} == {
        1: ("no-go", None),
        2: ("skipped", "unsafe"),
        3: ("kept", "safe"),
    }
    assert verify(Path(out["journal"])).ok


def test_a_policy_file_changed_on_disk_needs_an_explicit_accept(cli, variant, home, tmp_path):
    preset = (Path(__file__).parents[2] / "policies" / "presets" / "ask-everything.yaml").read_text()
    policy = tmp_path / "mine.yaml"
    policy.write_text(preset)
    r = cli("run", str(variant()), "--policy", str(policy), "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "triage"
    session, journal = r.json()["session"], Path(r.json()["journal"])
    edited = preset.split("\ntests:")[0] + "\n"
    policy.write_text(edited.replace("{id: ask-safety, decide: ask}", "{id: skip-all, decide: skip, then: rollback}"))
    for refused in (cli("resume", session), cli("decide", session, "continue"), cli("attach", session)):
        assert (
            refused.code == 2
            and "changed since session" in refused.stderr
            and "--accept-policy-change" in refused.stderr
        )
    assert not [
        e for e in journal_events(journal) if e["kind"] in ("policy.changed", "decision") and e.get("gate") == "g2"
    ]
    r = cli("decide", session, "continue", "--accept-policy-change", "--json")
    assert r.code == 3, r.stderr
    events = journal_events(journal)
    changed = next(e for e in events if e["kind"] == "policy.changed")
    assert changed["by"].startswith("human:") and changed["previous_sha256"] != changed["policy_sha256"]
    # From then on the new policy decides: #2's safety gate is skipped by the new rule.
    safety = next(e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "safety")
    assert safety["by"] == "policy:skip-all" and safety["policy_sha256"] == changed["policy_sha256"]
    v = cli("replay", session, "--verify")
    assert v.code == 0 and v.stdout.startswith("OK: "), v.stdout


def test_sigterm_mid_run_stops_cleanly_and_resume_finishes_the_same(cli, variant, home):
    proc = run_until_benchmarking(home, variant(), subprocess.PIPE)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted; `signoff resume" in err.decode()
    session = cli("sessions", "--json").json()[0]["id"]
    r = cli("resume", session, "--json")
    assert r.code == 0, r.stderr
    assert {o["id"]: o["outcome"] for o in r.json()["options"]} == {1: "no-go", 2: "skipped", 3: "kept"}
    assert verify(Path(r.json()["journal"])).ok


def test_a_corrupted_checkpoint_db_refuses_resume_and_keeps_the_journal(cli, variant, home):
    r = cli("run", str(variant()), "--policy", "ask-everything", "--json")
    assert r.code == 3
    session, journal = r.json()["session"], Path(r.json()["journal"])
    db = journal.parent / "checkpoints.sqlite"
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        extra.unlink(missing_ok=True)
    db.write_bytes(b"this is not a database, it was overwritten by something" * 100)
    resumed = cli("resume", session)
    assert resumed.code == 1 and "checkpoint DB cannot be read" in resumed.stderr and "--verify" in resumed.stderr
    assert len(resumed.stderr.strip().splitlines()) == 1
    assert journal_events(journal)[-1]["kind"] == "checkpoint.unreadable"
    assert cli("replay", session, "--verify").code == 0  # the journal and its head file still check out
    assert cli("replay", session, "--kind", "gate").code == 0


def test_a_policy_that_extends_another_is_journaled_whole_and_a_changed_parent_needs_an_accept(
    cli, variant, home, tmp_path
):
    parent = tmp_path / "team.yaml"
    parent.write_text((Path(__file__).parents[2] / "policies" / "presets" / "ask-everything.yaml").read_text())
    child = tmp_path / "mine.yaml"
    child.write_text("extends: team.yaml\nname: mine\ncommands:\n  allow: ['sh mine.sh *']\n")
    r = cli("run", str(variant()), "--policy", str(child), "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "triage", r.stderr
    session, journal = r.json()["session"], Path(r.json()["journal"])
    started = journal_events(journal)[0]
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (child, parent)}
    assert [(p["name"], p["sha256"]) for p in started["policy_parts"]] == [
        ("mine", sha[child]),
        ("ask-everything", sha[parent]),
    ]
    assert "\nextends:" not in started["policy_text"] and "sh mine.sh *" in started["policy_text"]
    assert started["policy_sha256"] == hashlib.sha256(started["policy_text"].encode()).hexdigest()
    # The child is untouched; the file it extends changes: that is the session's policy changing.
    parent.write_text(parent.read_text().replace("{id: ask-safety, decide: ask}", "{id: skip-all, decide: skip}"))
    refused = cli("resume", session)
    assert refused.code == 2 and "--accept-policy-change" in refused.stderr, refused.stderr
    r = cli("decide", session, "continue", "--accept-policy-change", "--json")
    assert r.code == 3, r.stderr
    events = journal_events(journal)
    changed = next(e for e in events if e["kind"] == "policy.changed")
    assert changed["policy_parts"][1]["sha256"] == hashlib.sha256(parent.read_bytes()).hexdigest()
    safety = next(e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "safety")
    assert safety["by"] == "policy:skip-all"
    v = cli("replay", session, "--verify")
    assert v.code == 0 and v.stdout.startswith("OK: "), v.stdout


def test_sessions_newest_first_with_filters_and_decide_without_an_id_answers_only_the_one_waiting(cli, variant, home):
    campaign = str(variant())
    done = cli("run", campaign, "--policy", "ask-everything", "--json").json()["session"]
    assert cli("decide", done, "stop", "--yes", "--json").code == 0  # stopped at its first gate: not waiting
    older = cli("run", campaign, "--policy", "ask-everything", "--json").json()["session"]
    newer = cli("run", campaign, "--policy", "ask-everything", "--json").json()["session"]
    rows = cli("sessions", "--json").json()
    assert [r["id"] for r in rows] == [newer, older, done]  # newest first: [0] is the one just started
    assert [r["id"] for r in cli("sessions", "--paused", "--json").json()] == [newer, older]
    assert [r["id"] for r in cli("sessions", "--paused", "--last", "1", "--json").json()] == [newer]
    assert cli("sessions", "--last", "1").stdout.startswith(newer)
    # Two wait: an answer without an id would be a guess. Refused in one line naming both; nothing recorded.
    before = {s: (home / "sessions" / s / "journal.jsonl").read_bytes() for s in (older, newer)}
    r = cli("decide", "continue")
    assert r.code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "2 sessions wait for a decision" in r.stderr and older in r.stderr and newer in r.stderr
    assert {s: (home / "sessions" / s / "journal.jsonl").read_bytes() for s in (older, newer)} == before
    # An id alone is not an answer, whatever its shape (an imported session keeps its own).
    r = cli("decide", older)
    assert r.code == 2 and f'signoff decide {older} "<one line>"' in r.stderr
    custom = home / "sessions" / "nightly-run"
    shutil.copytree(home / "sessions" / done, custom)
    r = cli("decide", "nightly-run")
    assert r.code == 2 and 'signoff decide nightly-run "<one line>"' in r.stderr
    shutil.rmtree(custom)
    assert cli("decide", older, "stop", "--yes", "--json").code == 0
    # One waits, but it is a colleague's (a team store): it is never answered without its id.
    meta_path = home / "sessions" / newer / "meta.json"
    mine = meta_path.read_text()
    meta_path.write_text(json.dumps({**json.loads(mine), "owner": "bob@elsewhere"}))
    r = cli("decide", "continue")
    assert r.code == 2 and "no session of yours" in r.stderr, r.stderr
    meta_path.write_text(mine)
    # Now one of yours waits: that is the one answered, at its gate, and it says so.
    r = cli("decide", "continue", "--no-resume", "--json")
    assert r.code == 3, r.stderr
    assert f"answering session {newer} at gate g2: the only one of yours waiting for a decision" in r.stderr
    decided = [e for e in journal_events(home / "sessions" / newer / "journal.jsonl") if e["kind"] == "decision"]
    assert decided[-1]["raw"] == "continue" and decided[-1]["gate_kind"] == "triage"
    cli("resume", newer, "--json")  # to the next gate, or the end
    cli("decide", newer, "stop", "--yes", "--json")
    r = cli("decide", "continue")
    assert r.code == 2 and "no session of yours" in r.stderr and "waits for a decision" in r.stderr
    assert cli("sessions", "--paused").stdout.strip() == "no session waits for a decision"
