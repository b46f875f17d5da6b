"""The team store end to end (issue 10), against a real PostgreSQL server and the real `signoff` CLI in
separate processes: runs, races for a session, a runner killed and resumed by another process, live
attach, decisions from another process, export → verify → import."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import DEMO, ROOT, SIGNOFF, SIGNOFF_EXEC, Result, ed25519_keypair, fast

OUTCOME_KEYS = ("id", "outcome", "gain_pct", "ci", "verdict")


@pytest.fixture
def team(postgres, cli) -> str:
    url = postgres.database(f"team_{uuid.uuid4().hex[:12]}")
    r = cli("store", "init", "--store", url)
    assert r.code == 0, r.stderr
    return url


@pytest.fixture
def campaign(variant) -> Path:
    return variant(fast(DEMO.read_text()), name="team")


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200", **extra}


def run_as(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`signoff ARGS` to its end as another process (another machine: its own $SIGNOFF_HOME, its env)."""
    environment = _env(home, **env)
    return subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, env=environment, cwd=ROOT, timeout=180)


def spawn(home: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """A runner the test may signal or kill: a new interpreter (the fork server's commands outlive their
    launcher by a moment)."""
    return subprocess.Popen(
        [*SIGNOFF_EXEC, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home, **env),
        cwd=ROOT,
    )


def outcomes(out: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [tuple(str(o[k]) for k in OUTCOME_KEYS) for o in out["options"]]


def journal_lines(url: str, session: str) -> list[bytes]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT line FROM signoff_journal WHERE session = %s ORDER BY seq", (session,)).fetchall()
    return [bytes(r[0]) for r in rows]


def kinds(url: str, session: str) -> list[str]:
    return [json.loads(line)["kind"] for line in journal_lines(url, session)]


def wait_for(cli: Callable[..., Result], url: str, test: Callable[[dict[str, Any]], bool], timeout: float = 60) -> Any:
    """The first session row of the team store that passes `test`, polling `signoff sessions`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = cli("sessions", "--store", url, "--json")
        assert r.code == 0, r.stderr
        for row in r.json():
            if test(row):
                return row
        time.sleep(0.2)
    raise AssertionError(f"no session matched within {timeout}s: {r.stdout}")


@pytest.mark.xdist_group("finished-demo")
def test_the_demo_runs_end_to_end_on_the_team_store_with_the_local_stores_outcomes(
    cli, team, home, finished_demo, tmp_path
):
    r = cli("demo", "--headless", "--json", "--store", team)
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["status"] == "finished"
    assert outcomes(out) == outcomes(finished_demo[1])  # the same evidence, whichever store keeps it
    assert team.split("@")[-1] in out["journal"] and "session" in out["journal"]
    session = out["session"]
    # Nothing of it lives in the local store; the team store lists it with its owner.
    assert cli("sessions", "--json").json() == []
    (row,) = cli("sessions", "--store", team, "--json").json()
    assert row["id"] == session and row["status"] == "finished" and row["owner"].startswith("tester@")
    assert row["runner"] is None and row["outcomes"] == {"kept": 1, "no-go": 1, "skipped": 1}
    assert "by tester@" in cli("sessions", "--store", team).stdout
    # The journal in PostgreSQL verifies, and an export of it verifies with the same verdict.
    verdict = cli("replay", session, "--verify", "--store", team)
    assert verdict.code == 0 and verdict.stdout.startswith("OK:"), verdict.stdout + verdict.stderr
    assert cli("export", session, str(tmp_path / "x"), "--store", team).code == 0
    other = tmp_path / "laptop"
    imported = run_as(other, "import", str(tmp_path / "x"))
    assert imported.returncode == 0, imported.stderr
    again = run_as(other, "replay", session, "--verify")
    assert again.stdout == verdict.stdout


def test_two_runners_race_for_one_session_and_exactly_one_runs(cli, team, home, campaign):
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json", "--store", team)
    assert r.code == 3, r.stderr
    session = r.json()["session"]
    recorded = cli("decide", session, "approve", "--no-resume", "--store", team)
    assert recorded.code == 3, recorded.stderr
    before = kinds(team, session).count("session.resumed")
    racers = [spawn(home, "resume", session, "--json", "--store", team) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in racers]
    ran = [x for x in results if x[0] in (0, 3)]
    refused = [x for x in results if x[0] == 2]
    assert len(ran) == 1 and len(refused) == 1, results
    assert f"session {session} is in use by pid" in refused[0][2] and len(refused[0][2].splitlines()) == 1
    assert kinds(team, session).count("session.resumed") == before + 1
    assert cli("replay", session, "--verify", "--store", team).code == 0


@pytest.mark.xdist_group("finished-demo")
def test_a_runner_killed_mid_run_is_resumed_by_another_process_to_the_same_outcomes(
    cli, team, home, campaign, finished_demo
):
    killed = spawn(
        home, "run", str(campaign), "--headless", "--json", "--store", team, SIGNOFF_CRASH_AT="journal:ab.result"
    )
    assert killed.wait(timeout=120) == -9, killed.stderr.read()
    row = wait_for(cli, team, lambda r: True)
    assert row["status"] == "interrupted" and row["runner"] is None  # its lease died with it
    session = row["id"]
    # Another process, naming the store through the environment this time.
    p = run_as(home, "resume", session, "--json", SIGNOFF_STORE=team)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "finished"
    assert outcomes(out) == outcomes(finished_demo[1])
    assert cli("replay", session, "--verify", "--store", team).code == 0


def test_attach_in_another_process_follows_the_journal_live(cli, team, home, campaign):
    runner = spawn(home, "run", str(campaign), "--headless", "--json", "--store", team)
    row = wait_for(cli, team, lambda r: True)
    session = row["id"]
    attach = spawn(home, "attach", session, "--follow", "--json", "--store", team)
    arrivals: list[tuple[float, dict[str, Any]]] = []

    def read() -> None:
        for line in attach.stdout:
            arrivals.append((time.monotonic(), json.loads(line)))

    reader = threading.Thread(target=read)
    reader.start()
    assert runner.wait(timeout=180) == 0, runner.stderr.read()
    runner_done = time.monotonic()
    assert attach.wait(timeout=60) == 0, attach.stderr.read()
    reader.join()
    seqs = [e["seq"] for _, e in arrivals]
    assert seqs == list(range(len(journal_lines(team, session))))  # every event, once, in order
    assert arrivals[-1][1]["kind"] == "session.finished"
    live = [e for t, e in arrivals if t < runner_done - 0.5]
    assert any(e["kind"] == "ab.result" for e in live), "attach only saw the events after the run had ended"
    assert f"session {session}: finished" in attach.stderr.read()


@pytest.mark.heavy
def test_decide_from_another_process_wakes_the_runner_waiting_for_it(cli, team, home, campaign):
    runner = spawn(
        home, "run", str(campaign), "--policy", "ask-everything", "--headless", "--wait", "--json", "--store", team
    )
    answered = 0
    answer = "approve"
    while True:
        row = wait_for(cli, team, lambda r: r["waiting"] is not None and r["waiting_at"] is not None)
        assert row["waiting"].startswith("tester@") and row["runner"].startswith("pid ")
        assert runner.poll() is None  # still there, holding the session
        r = cli("decide", row["id"], answer, "--yes", "--json", "--store", team)
        answered += 1
        assert "handed to the runner waiting on tester@" in r.stderr, r.stderr
        if r.code == 0:
            break
        assert r.code == 3 and r.json()["pending_gate"] is not None, r.stderr
        answer = "continue"
        assert answered < 12
    assert runner.wait(timeout=120) == 0, runner.stderr.read()
    out = json.loads(runner.stdout.read())
    assert out["status"] == "finished" and r.json()["status"] == "finished"
    assert sum(g["decided_as"] == "human" for g in out["gates"]) == answered
    events = [json.loads(line) for line in journal_lines(team, row["id"])]
    assert sum(e["kind"] == "session.waiting" for e in events) == answered
    assert sum(e["kind"] == "decision" and e["by"] == "human:tester" for e in events) == answered


def test_two_people_answer_one_gate_from_two_machines_at_once_and_one_decision_stands(
    cli, team, home, campaign, tmp_path
):
    """Issue 32: a runner waits for an answer (`--wait`); alice and bob, each on their own machine, answer
    its gate at the same moment. One answer is recorded; the other is refused naming it, and the journal
    holds one decision for the gate (the store's advisory lock makes check-and-record one step)."""
    runner = spawn(
        home, "run", str(campaign), "--policy", "ask-everything", "--headless", "--wait", "--json", "--store", team
    )
    try:
        row = wait_for(cli, team, lambda r: r["waiting"] is not None and r["waiting_at"] is not None)
        gate = row["waiting_at"]["gate"]
        deciders = {
            name: spawn(
                tmp_path / name,
                "decide",
                row["id"],
                text,
                "--gate",
                gate,
                "--by",
                name,
                "--no-resume",
                "--yes",
                SIGNOFF_STORE=team,
            )
            for name, text in (("alice", "continue"), ("bob", "stop"))
        }
        results = {name: (p.communicate(timeout=120)[1], p.returncode) for name, p in deciders.items()}
        refused = [name for name, (_, code) in results.items() if code == 2]
        assert len(refused) == 1, results
        (winner,) = set(results) - set(refused)
        assert results[winner][1] in (0, 3) and f"at gate {gate}" in results[winner][0], results
        line = results[refused[0]][0].strip()
        # Refused at the gate, naming the answer that stands — or, arriving once the runner had taken that
        # answer and was running again, refused as busy. Either way nothing of it is recorded.
        named = f"gate {gate} " in line and f"by human:{winner}" in line
        assert len(line.splitlines()) == 1 and (named or "is in use by" in line), line
        events = [json.loads(x) for x in journal_lines(team, row["id"])]
        decided = [e["by"] for e in events if e["kind"] == "decision" and e["gate"] == gate]
        assert decided == [f"human:{winner}"]
    finally:
        runner.terminate()  # a signal: the runner stops waiting and leaves the session paused
        runner.wait(timeout=120)


def test_decide_with_no_runner_waiting_resumes_the_session_itself(cli, team, home, campaign):
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json", "--store", team)
    assert r.code == 3
    session = r.json()["session"]
    p = run_as(home, "decide", session, "approve", "--json", SIGNOFF_STORE=team)
    assert p.returncode == 3, p.stderr
    assert "handed to" not in p.stderr
    assert json.loads(p.stdout)["pending_gate"]["id"] != r.json()["pending_gate"]["id"]
    assert kinds(team, session)[-2:] == ["gate.opened", "session.paused"]


@pytest.mark.heavy
@pytest.mark.timeout(300)  # about 30 signoff processes: 50-70 s on a quiet machine, 117 s and more beside two CPU hogs
def test_export_verify_import_round_trip_is_identical_and_resumes_alike(cli, team, home, postgres, campaign, tmp_path):
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json", "--store", team)
    assert r.code == 3
    session = r.json()["session"]
    assert cli("decide", session, "approve", "--store", team).code == 3
    exported = tmp_path / "export"
    r = cli("export", session, str(exported), "--store", team, "--json")
    assert r.code == 0, r.stderr
    manifest = r.json()
    assert manifest["events"] == len(journal_lines(team, session)) and manifest["checkpoints"] > 0
    # Byte for byte the lines in PostgreSQL, with the head beside them.
    assert exported.joinpath("journal.jsonl").read_bytes() == b"".join(x + b"\n" for x in journal_lines(team, session))
    # Into a second team store and into a local one: the same bytes, the same verdict.
    second = postgres.database(f"second_{uuid.uuid4().hex[:12]}")
    assert cli("store", "init", "--store", second).code == 0
    assert cli("import", str(exported), "--store", second).code == 0
    assert journal_lines(second, session) == journal_lines(team, session)
    assert cli("import", str(exported)).code == 0
    local = home / "sessions" / session / "journal.jsonl"
    assert local.read_bytes() == exported.joinpath("journal.jsonl").read_bytes()
    verdicts = {
        where: cli("replay", session, "--verify", *where).stdout
        for where in [("--store", team), ("--store", second), ()]
    }
    assert len(set(verdicts.values())) == 1 and next(iter(verdicts.values())).startswith("OK:"), verdicts
    again = cli("import", str(exported), "--store", second)
    assert again.code == 2 and "already in" in again.stderr and "nothing imported" in again.stderr
    # Every copy's checkpoints stand at the same gate; the original and its local copy go on from it to
    # the same end (going on in the second team copy would run the same code as the first).
    waiting = {
        str(where): cli("resume", session, "--json", *where).json()["pending_gate"]
        for where in [("--store", team), ("--store", second), ()]
    }
    assert len({json.dumps(g, sort_keys=True) for g in waiting.values()}) == 1, waiting
    ends = []
    for where in [("--store", team), ()]:
        for _ in range(12):
            r = cli("decide", session, "continue", "--yes", "--json", *where)
            if r.code != 3:
                break
        assert r.code == 0, r.stderr
        ends.append(outcomes(r.json()))
    assert ends[0] == ends[1]


def test_an_export_that_does_not_verify_is_not_imported(cli, team, home, campaign, tmp_path):
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json", "--store", team)
    session = r.json()["session"]
    exported = tmp_path / "export"
    assert cli("export", session, str(exported), "--store", team).code == 0
    journal = exported / "journal.jsonl"
    journal.write_bytes(journal.read_bytes().replace(b'"actor":"signoff"', b'"actor":"mallory"', 1))
    fresh = tmp_path / "other-home"
    p = run_as(fresh, "import", str(exported))
    assert p.returncode == 2 and "does not verify" in p.stderr and "nothing imported" in p.stderr
    assert len(p.stderr.splitlines()) == 1
    assert not (fresh / "sessions" / session).exists()
    assert cli("export", session, str(exported), "--store", team).code == 2  # never over an earlier export


def test_store_errors_are_one_line_and_name_the_fix(cli, postgres, home):
    fresh = postgres.database(f"bare_{uuid.uuid4().hex[:12]}")
    r = cli("sessions", "--store", fresh)
    assert r.code == 2 and f"signoff store init --store {fresh}" in r.stderr and len(r.stderr.splitlines()) == 1
    r = cli("demo", "--headless", "--store", f"postgresql://signoff:hunter2@127.0.0.1:{postgres.port}/nowhere")
    assert r.code == 2 and "cannot reach the store" in r.stderr and len(r.stderr.splitlines()) == 1
    assert "hunter2" not in r.stderr and ":***@" in r.stderr  # the password never reaches the screen
    r = cli("sessions", "--store", "mysql://x")
    assert r.code == 2 and "unknown store" in r.stderr
    assert not (home / "sessions").exists()  # nothing created anywhere


@pytest.mark.parametrize("crash", ["journal:file.uploaded", "journal:ab.result"])
def test_a_session_killed_on_one_machine_finishes_on_another_with_its_pinned_key_and_artifacts(
    cli, team, sshd, tmp_path, crash
):
    import shutil

    from tests.integration.test_ssh_campaign import mini

    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")  # the host key is known only through the pin the first machine makes
    campaign = mini(tmp_path, sshd, known_hosts=str(empty), bench_wall="0.02")
    first, second = tmp_path / "machine-a", tmp_path / "machine-b"  # separate $SIGNOFF_HOMEs
    killed = spawn(
        first, "run", str(campaign), "--accept-new-host-keys", "--headless", "--json", "--store", team,
        SIGNOFF_CRASH_AT=crash,
    )  # fmt: skip
    assert killed.wait(timeout=120) == -9, killed.stderr.read()
    session = wait_for(cli, team, lambda r: True)["id"]
    before = [json.loads(line) for line in journal_lines(team, session)]
    cited = {e[k] for e in before for k in ("artifact", "stderr_artifact") if isinstance(e.get(k), str)}
    assert sum(e["kind"] == "hostkey.pinned" for e in before) == 1
    # The other machine has no checkout where the first had one: setup, cut short after the upload,
    # runs again there and uploads the copy of simserve.py the session kept.
    shutil.rmtree(campaign.parent)
    p = run_as(second, "resume", session, "--json", SIGNOFF_STORE=team)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"] == "finished"
    after = [json.loads(line) for line in journal_lines(team, session)]
    # The second machine trusted the key the first one pinned (kept in the store), and pinned nothing anew.
    assert sum(e["kind"] == "hostkey.pinned" for e in after) == 1
    (work,) = (second / "team").glob(f"*/{session}")
    assert sshd.host_key_b64 in (work / "known_hosts.pinned").read_text()
    uploads = [e for e in after if e["kind"] == "file.uploaded"]
    if crash == "journal:file.uploaded":
        assert len(uploads) == 2 and uploads[0]["sha256"] == uploads[1]["sha256"]  # the same file, again
        assert (work / "campaign" / "simserve.py").is_file()
    else:
        # The output the first machine stored was fetched to the second one's cache before it went on.
        assert cited and cited <= {p.name for p in (work / "artifacts").iterdir()}
    assert cli("replay", session, "--verify", "--store", team).code == 0


def test_the_runners_signature_on_the_head_survives_export_and_compaction(
    cli, team, home, campaign, tmp_path, monkeypatch
):
    runner_key, other_key = ed25519_keypair(tmp_path, "runner"), ed25519_keypair(tmp_path, "other")
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(runner_key[0]))
    r = cli("run", str(campaign), "--headless", "--json", "--store", team)
    assert r.code == 0, r.stderr
    session = r.json()["session"]
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY")  # the auditor has the public key only
    assert cli("replay", session, "--verify", "--key", str(runner_key[1]), "--store", team).code == 0
    wrong = cli("replay", session, "--verify", "--key", str(other_key[1]), "--store", team)
    assert wrong.code == 1 and "signature does not verify with the given key" in wrong.stdout
    exported = tmp_path / "export"
    assert cli("export", session, str(exported), "--store", team).code == 0
    assert json.loads((exported / "head").read_text())["signature"]  # the runner's, not re-signed on export
    assert cli("import", str(exported)).code == 0
    assert cli("replay", session, "--verify", "--key", str(runner_key[1])).code == 0
    # Compaction drops the team store's checkpoints of the session; the journal and its head stay.
    r = cli("sessions", "--store", team, "--compact", session)
    assert r.code == 0 and f"compacted {session}" in r.stdout
    with psycopg.connect(team) as conn:
        left = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (session,)).fetchone()[0]
    assert left == 0
    assert cli("replay", session, "--verify", "--key", str(runner_key[1]), "--store", team).code == 0
    (row,) = cli("sessions", "--store", team, "--json").json()
    assert row["compacted"] and row["status"] == "finished"


def test_check_expects_the_duration_a_teammates_run_in_the_team_store_measured(team, campaign, cli, tmp_path):
    r = run_as(tmp_path / "teammate", "run", str(campaign), "--headless", "--store", team, "--json")
    assert r.returncode == 0, r.stderr
    session = json.loads(r.stdout)["session"]
    # This machine has run nothing: `check` against the team store expects what the teammate's run measured.
    c = cli("check", str(campaign), "--store", team, "--json")
    assert c.code == 0, c.stdout + c.stderr
    e = c.json()["estimate"]
    assert e["expected_session"] == session
    assert {d["unit"] for d in e["expected_durations"] if d["source"] == "measured"} >= {"setup", "A/B run"}
    alone = cli("check", str(campaign), "--json").json()["estimate"]  # the local store knows nothing of it
    assert alone["expected_session"] is None and alone["expected_s"] > e["expected_s"]
