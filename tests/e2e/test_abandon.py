"""`signoff abandon` (issue 36): give a session up wherever it stands. Every option the journal shows on a host that
was not kept is rolled back and verified, nothing else is tried, the goal is not measured, and the session ends; a
rollback that does not verify stops at the rollback gate for a person. Real sessions: the demo campaign on its
simulated hosts (whose `check` says what is really applied), the real graph and checkpointer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.cli.shared import find
from agent.errors import SessionError
from agent.journal import events as ev
from agent.journal.verify import verify
from agent.run.create import create
from agent.run.runner import Runner
from agent.stopping import clear_stop
from tests.conftest import ROOT
from tests.e2e.test_operator_stop import bench_runs, events, quit_when

AUTONOMOUS = ROOT / "policies" / "presets" / "autonomous.yaml"
ME = "human:tester"


@pytest.fixture(autouse=True)
def _forget_the_stop() -> Iterator[None]:
    yield
    clear_stop()


def stopped_mid_benchmark(variant: Callable[..., Path], edit: Callable[[str], str] = lambda t: t) -> Any:
    """A demo session the operator quit while #2's A/B was running (3 of its runs done)."""
    d = create(variant(edit=lambda text: edit(text.replace("--wall 0.02", "--wall 0.1"))), AUTONOMOUS)
    watch = quit_when(d.journal, lambda evs: bench_runs(evs, 2) >= 3)
    with d.locked(), pytest.raises(KeyboardInterrupt):
        Runner(d, headless=True).start()
    watch.join(timeout=5)
    clear_stop()
    return d


def test_abandon_after_a_quit_rolls_back_the_option_in_flight_verifies_and_ends(
    home: Path, variant: Callable[..., Path]
) -> None:
    d = stopped_mid_benchmark(variant)
    before = events(d.journal)
    assert before[-1]["kind"] == "session.interrupted"
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    after = events(d.journal)[len(before) :]
    assert out.status == "stopped" and out.exit_code == 0
    options = {o["id"]: o for o in out.options}
    assert options[2]["outcome"] == "skipped" and options[3]["outcome"] == "untested"
    assert any("abandoned by human:tester" in r for r in options[2]["reasons"])
    assert options[3]["reasons"] == ["not tried: abandoned by human:tester"]
    (asked,) = [e for e in after if e["kind"] == "session.abandoned"]
    assert asked["by"] == ME and asked["roll_back"] == [2] and asked["gate"] is None
    # The A/B left #2 reverted between its arms, which no rollback had verified: it is reverted and verified now.
    (rollback,) = [e for e in after if e["kind"] == "rollback"]
    assert rollback["option"] == 2 and rollback["verified"] is True
    assert {e["purpose"] for e in after if e["kind"] == "command.started"} <= {
        "revert", "health", "check:rollback", "bench:A",
    }  # fmt: skip
    assert not [e for e in after if e["kind"] == "bench.run" and e.get("purpose") != "verify"]  # nothing else ran
    assert after[-1]["kind"] == "session.finished" and after[-1]["status"] == "stopped"
    assert out.abandoned is not None and out.abandoned["roll_back"] == [2] and out.abandoned["by"] == ME
    assert verify(d.journal).ok
    # Ended: neither abandoned again nor resumed into anything.
    with d.locked(), pytest.raises(SessionError, match="already ended"):
        Runner(d, headless=True).abandon(by=ME)
    with d.locked():
        assert Runner(d, headless=True).resume().status == "stopped"
    assert events(d.journal)[-1]["kind"] == "session.finished"


def test_a_rollback_that_does_not_verify_stops_the_abandon_at_the_rollback_gate(
    home: Path, variant: Callable[..., Path]
) -> None:
    # #2's revert does not undo it (its `check` goes on saying "in effect"): the abandon may not call it rolled back.
    broken = stopped_mid_benchmark(
        variant,
        lambda text: text.replace(
            'revert: [{run: "{{simserve}} revert overlap-scheduler"', 'revert: [{run: "{{simserve}} health"'
        ),
    )
    with broken.locked():
        out = Runner(broken, headless=True).abandon(by=ME)
    assert out.status == "paused" and out.pending_gate is not None
    assert out.pending_gate["kind"] == "rollback" and out.pending_gate["facts"]["verified"] is False
    # The person takes the rollback as it is: the abandon goes on to its end, trying nothing else.
    with broken.locked():
        Runner(broken, headless=True).decide("continue", by=ME, confirmed=True)
        out = Runner(broken, headless=True).resume()
    assert out.status == "stopped"
    assert {o["id"]: o["outcome"] for o in out.options}[3] == "untested"
    evs = events(broken.journal)
    abandoned_at = next(e["seq"] for e in evs if e["kind"] == "session.abandoned")
    assert not [e for e in evs if e["seq"] > abandoned_at and e.get("option") == 3 and e["kind"] == "command.started"]
    assert verify(broken.journal).ok


def test_an_abandon_killed_before_the_graph_took_it_up_is_taken_up_by_resume(
    home: Path, variant: Callable[..., Path]
) -> None:
    d = stopped_mid_benchmark(variant)
    # As a kill right after `session.abandoned` was journaled leaves it: the graph still has #2's benchmark pending.
    with d.locked(), Runner(d, headless=True) as runner:
        runner.journal.append(ev.SessionAbandoned(by=ME, roll_back=[2]))
    with d.locked():
        out = Runner(d, headless=True).resume()
    assert out.status == "stopped" and out.abandoned is not None
    evs = events(d.journal)
    abandoned_at = next(e["seq"] for e in evs if e["kind"] == "session.abandoned")
    later = [e for e in evs if e["seq"] > abandoned_at]
    assert not [e for e in later if e["kind"] == "bench.run" and e.get("purpose") == "ab"]  # the A/B did not go on
    assert [e["verified"] for e in later if e["kind"] == "rollback"] == [True]


def test_abandon_from_the_cli_at_a_waiting_gate_closes_it_and_keeps_what_was_kept(
    cli: Callable[..., Any], variant: Callable[..., Path]
) -> None:
    camp = str(variant())
    r = cli("run", camp, "--policy", "ask-everything", "--json")
    assert r.code == 3, r.stderr
    session = r.json()["session"]
    for line in ("continue", "keep it", "continue"):  # triage; keep #2 at its safety gate; go on to #3
        r = cli("decide", session, line, "--yes", "--json")
        assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "safety" and gate["option"] == 3
    # While another process runs it, abandon does nothing and says what to do.
    held = find(session, None)
    lines = len(Path(r.json()["journal"]).read_text().splitlines())
    with held.locked():
        busy = cli("abandon", session, "--json")
    held.close()
    assert busy.code == 2 and "stop that run first" in busy.stderr and "nothing was done" in busy.stderr, busy.stderr
    assert len(Path(r.json()["journal"]).read_text().splitlines()) == lines
    r = cli("abandon", session, "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["status"] == "stopped" and out.get("pending_gate") is None
    assert out["abandoned"]["gate"] == gate["id"] and out["abandoned"]["roll_back"] == [3]
    assert {o["id"]: o["outcome"] for o in out["options"]} == {1: "no-go", 2: "kept", 3: "skipped"}
    assert "the run was abandoned by human:tester" in out["goal"]["not_measured"]
    journal = Path(out["journal"])
    evs = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [e["option"] for e in evs if e["kind"] == "rollback"] == [3]
    replayed = cli("replay", session)
    assert (
        f"session abandoned by human:tester (gate {gate['id']} left unanswered); rolls back #3; "
        "stays on the hosts (kept): #2" in replayed.stdout
    )
    assert cli("replay", session, "--verify").code == 0
    report = cli("report", session)  # the auditor's report says it too
    assert (
        report.code == 0 and f"- session abandoned by human:tester (gate {gate['id']} left unanswered)" in report.stdout
    )
    listed = {s["id"]: s for s in cli("sessions", "--json").json()}[session]
    assert listed["waiting_at"] is None and listed["status"] == "stopped"
    again = cli("abandon", session)
    assert again.code == 2 and "already ended (stopped)" in again.stderr and "Traceback" not in again.stderr
