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
    # The printed report says who decided the rolled-back and the untried options: the person who gave it up.
    from rich.console import Console

    from agent.report.console import print_report

    console = Console(record=True, width=200)
    print_report(out, console)
    printed = console.export_text()
    assert "session abandoned by human:tester; rolled back #2 (verified)" in printed
    rows = {line.split("│")[1].strip(): line for line in printed.splitlines() if line.count("│") > 5}
    assert "human:tester" in rows["2"] and "human:tester" in rows["3"], printed
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
        runner.journal.append(ev.SessionAbandonedEvent(by=ME, roll_back=[2]))
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


ASK = ROOT / "policies" / "presets" / "ask-everything.yaml"
NO_REVERT = ('revert: [{run: "{{simserve}} revert overlap-scheduler"', 'revert: [{run: "{{simserve}} health"')


def answered(d: Any, *lines: str) -> Any:
    """Start an ask-everything session and answer its gates with `lines`, in order; the outcome it pauses with."""
    with d.locked():
        out = Runner(d, headless=True).start()
    for line in lines:
        with d.locked():
            Runner(d, headless=True).decide(line, by=ME, confirmed=True)
            out = Runner(d, headless=True).resume()
    return out


def test_a_gate_an_abandon_closed_takes_no_answer_even_when_the_abandon_was_cut_short(
    home: Path, variant: Callable[..., Path]
) -> None:
    d = create(variant(), ASK)
    out = answered(d, "continue", "keep it", "continue")  # triage; keep #2; on to #3's safety gate
    gate = out.pending_gate
    assert gate is not None and gate["kind"] == "safety" and gate["option"] == 3
    with d.locked(), Runner(d, headless=True) as runner:  # killed right after the journal line
        runner.journal.append(ev.SessionAbandonedEvent(by=ME, gate=gate["id"], roll_back=[3]))
    with d.locked(), pytest.raises(SessionError, match="was abandoned by human:tester"):
        Runner(d, headless=True).decide("keep it", by=ME, confirmed=True)  # #3 is unsafe: keeping it is no answer now
    with d.locked():
        out = Runner(d, headless=True).resume()
    assert out.status == "stopped" and {o["id"]: o["outcome"] for o in out.options} == {
        1: "no-go",
        2: "kept",
        3: "skipped",
    }
    evs = events(d.journal)
    at = next(e["seq"] for e in evs if e["kind"] == "session.abandoned")
    assert not [e for e in evs if e["seq"] > at and e["kind"] in ("kept", "decision")]
    assert [e.get("skipped") for e in evs if e["seq"] > at and e["kind"] == "goal.confirmed"] == [
        "the run was abandoned by human:tester"
    ]  # the goal's A/B did not run
    assert [(e["option"], e["verified"]) for e in evs if e["seq"] > at and e["kind"] == "rollback"] == [(3, True)]
    assert ("safety", "abandoned") in [(g["kind"], g["action"]) for g in out.gates]


def test_a_rollback_taken_as_it_was_is_said_so_and_gate_ids_are_never_given_twice(
    home: Path, variant: Callable[..., Path]
) -> None:
    d = create(variant(edit=lambda text: text.replace(*NO_REVERT)), ASK)
    safety = answered(d, "continue").pending_gate  # #2's safety gate
    assert safety is not None and safety["kind"] == "safety" and safety["option"] == 2
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    rollback = out.pending_gate
    assert out.status == "paused" and rollback is not None and rollback["kind"] == "rollback"
    assert rollback["id"] != safety["id"]  # a `decide --gate` written for the closed gate cannot land on this one
    with d.locked():
        Runner(d, headless=True).decide("stop", by=ME, confirmed=True)  # at the rollback gate: end it as it is
        out = Runner(d, headless=True).resume()
    assert out.status == "stopped" and out.abandoned is not None
    assert out.abandoned["verified"] == {"2": False} and out.abandoned["gate"] == safety["id"]
    assert [(g["kind"], g["action"]) for g in out.gates][-2:] == [("safety", "abandoned"), ("rollback", "stop")]
    evs = events(d.journal)
    ids = [e["gate"] for e in evs if e["kind"] == "gate.opened"]
    assert len(ids) == len(set(ids)), ids
    from agent.report.console import abandoned_line

    assert "rolled back #2 (NOT verified, taken as it was)" in abandoned_line(out.abandoned)
    assert verify(d.journal).ok


def test_a_run_that_failed_among_parallel_investigations_can_be_abandoned(
    home: Path, variant: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from agent.errors import RunFailed
    from agent.nodes import investigate

    real = investigate.HostToolbox

    def failing(ctx: Any, option: Any, *args: Any, **kwargs: Any) -> Any:
        if option.id == 3:
            time.sleep(1.0)  # the others finish first: their writes wait in the checkpoint for a step that never ran
            raise RuntimeError("model API error while investigating #3")
        return real(ctx, option, *args, **kwargs)

    d = create(variant(), AUTONOMOUS)
    monkeypatch.setattr(investigate, "HostToolbox", failing)
    with d.locked(), pytest.raises(RunFailed):
        Runner(d, headless=True).start()
    monkeypatch.setattr(investigate, "HostToolbox", real)
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    assert out.status == "stopped" and out.abandoned is not None and out.abandoned["roll_back"] == []
    evs = events(d.journal)
    at = next(e["seq"] for e in evs if e["kind"] == "session.abandoned")
    assert not [e for e in evs if e["seq"] > at and e["kind"] in ("command.started", "subagent.started")]
    assert verify(d.journal).ok


def test_an_abandon_cut_short_after_the_pending_step_was_dropped_goes_on_with_abandon_again(
    home: Path, variant: Callable[..., Path]
) -> None:
    from langgraph.graph import END

    d = stopped_mid_benchmark(variant)
    with d.locked(), Runner(d, headless=True) as runner:  # as a kill between the two leaves it
        runner.journal.append(ev.SessionAbandonedEvent(by=ME, roll_back=[2]))
        with runner._graph() as graph:
            graph.update_state(runner._config(), None, as_node=END)
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    assert out.status == "stopped" and out.abandoned is not None and out.abandoned["verified"] == {"2": True}
    assert sum(1 for e in events(d.journal) if e["kind"] == "session.abandoned") == 1


def test_a_session_killed_before_its_first_checkpoint_is_abandoned_without_running_anything(
    home: Path, variant: Callable[..., Path]
) -> None:
    d = create(variant(), AUTONOMOUS)
    with d.locked(), Runner(d, headless=True) as runner:
        runner.journal.append(ev.SessionStartedEvent(user="tester"))  # and killed before the graph saved anything
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    assert out.status == "stopped"
    assert [e["kind"] for e in events(d.journal)][-2:] == ["session.abandoned", "session.finished"]
    with d.locked():
        assert Runner(d, headless=True).resume().status == "stopped"
    assert not [e for e in events(d.journal) if e["kind"] == "command.started"]


def test_stop_at_a_rollback_gate_during_an_abandon_goes_on_to_its_other_rollbacks(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    # Each option's revert works unless its flag file is there: #2's fails once during the run (a person takes it as
    # it was), then #3's fails during the abandon.
    flag2, flag3 = tmp_path / "flag2", tmp_path / "flag3"

    def edit(text: str) -> str:
        for name, flag in (("overlap-scheduler", flag2), ("moe-occupancy", flag3)):
            text = text.replace(
                f'revert: [{{run: "{{{{simserve}}}} revert {name}"',
                f'revert: [{{run: "test ! -f {flag} && {{{{simserve}}}} revert {name}"',
            )
        return text

    d = create(variant(edit=edit), ASK)
    answered(d, "continue")  # #2's safety gate
    flag2.touch()
    out = answered_more(d, "roll back", "continue")  # #2's rollback does not verify; taken as it was
    while out.pending_gate and not (out.pending_gate["kind"] == "safety" and out.pending_gate["option"] == 3):
        out = answered_more(d, "continue")
    flag2.unlink()
    flag3.touch()
    with d.locked():
        out = Runner(d, headless=True).abandon(by=ME)
    assert out.abandoned is not None and out.abandoned["roll_back"] == [3, 2]  # #2's rollback never verified
    assert out.status == "paused" and out.pending_gate is not None and out.pending_gate["kind"] == "rollback"
    out = answered_more(d, "stop")  # at #3's rollback gate: the abandon still rolls #2 back
    assert out.status == "stopped" and out.abandoned is not None
    assert out.abandoned["verified"] == {"3": False, "2": True}


def answered_more(d: Any, *lines: str) -> Any:
    """Answer the gates a session waits at with `lines`, in order; the outcome it stops with."""
    out = None
    for line in lines:
        with d.locked():
            Runner(d, headless=True).decide(line, by=ME, confirmed=True)
            out = Runner(d, headless=True).resume()
    return out
