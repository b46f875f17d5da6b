"""Issue 32, answers bound to gates: each attack first, then the guard.

- A gate dialog left open after its gate was decided elsewhere answered the gate that waited by then: `c`
  in a stale triage dialog kept an option at a safety gate, journaled as the decision of a person who had
  only been shown the triage. An answer now names its gate, and for any other it is refused in one line
  that says who decided that gate and how.
- Two deciders of one gate (a runner waiting for answers from any machine): both were journaled as having
  decided it, and a decider that read the gate before another's answer was applied recorded a second,
  dead decision. Checking the gate and recording the answer are now one step under the store's lock.
- 10 KB of `yes yes yes …` at a command gate approved its commands without a confirmation, and
  `continue ` × 1200 crashed the reader with a RecursionError traceback.
- "skip it if gain is below 5%, otherwise continue" kept an option assessed unsafe without the
  confirmation a plain "keep it" needs, and as a session rule kept it with nobody asked at all.

The sessions are real: the fast demo under `ask-everything`, paused by the CLI at its triage gate (g2) and
then at #2's safety gate (g3), where #2 wedged under stress (verdict unsafe, gain about +7.6%).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from agent.errors import SessionError
from agent.run import deciding
from agent.run.runner import Runner
from agent.store.local import SessionDir
from policies.gates import Gate
from tests.conftest import DEMO, DEMO_DIR, ROOT, SIGNOFF, Result, fast, journal_events
from tests.e2e.test_command_gates import ASKING, TWO
from tui.app import SignoffApp
from tui.screens import GateScreen
from tui.source import PendingGate, SessionSource


def signoff(home: Path, *args: str, user: str = "tester") -> Result:
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": user, "COLUMNS": "200"}
    p = subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One session, copied as it stood at its triage gate (g2) and at #2's safety gate (g3)."""
    home = tmp_path_factory.mktemp("gates")
    campaign = DEMO_DIR / f".test-gate-answers-{os.getpid()}.yaml"
    campaign.write_text(fast(DEMO.read_text()))
    try:
        r = signoff(home, "run", str(campaign), "--policy", "ask-everything", "--json")
        assert r.code == 3, r.stderr
        session, g2 = r.json()["session"], r.json()["pending_gate"]
        assert g2["id"] == "g2" and g2["kind"] == "triage"
        shutil.copytree(home / "sessions" / session, home / "at-g2")
        r = signoff(home, "decide", session, "continue", "--json")
        assert r.code == 3, r.stderr
        g3 = r.json()["pending_gate"]
        assert (g3["id"], g3["kind"], g3["option"], g3["facts"]["verdict"]) == ("g3", "safety", 2, "unsafe")
        assert g3["facts"]["gain_pct"] > 5
        shutil.copytree(home / "sessions" / session, home / "at-g3")
    finally:
        campaign.unlink(missing_ok=True)
    return {"home": home, "session": session, "g2": g2, "g3": g3}


def paused_at(recorded: dict[str, Any], home: Path, gate: str) -> SessionDir:
    """A private copy, in this test's $SIGNOFF_HOME, of the session as it stood at `gate`."""
    shutil.copytree(recorded["home"] / f"at-{gate}", home / "sessions" / recorded["session"])
    return SessionDir(recorded["session"])


def decisions_at(d: SessionDir, gate: str) -> list[dict[str, Any]]:
    return [e for e in journal_events(d.journal) if e["kind"] == "decision" and e["gate"] == gate]


def one_line(r: Result, *needles: str) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert all(n in lines[0] for n in needles), lines[0]
    return lines[0]


# ---------------------------------------------------------------- an answer lands on the gate it was for


async def test_a_stale_dialogs_key_never_decides_the_gate_that_waits_now(
    recorded: dict[str, Any], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    d = paused_at(recorded, home, "g3")  # g2 (triage) was decided by tester from the CLI; g3 waits
    app = SignoffApp(SessionSource(d, user="mallory"), mode="attach")
    async with app.run_test(size=(120, 40)) as pilot:
        # The state of the bug: the triage dialog, still open (on top) after its gate was decided elsewhere. The
        # app opens g3's own dialog once its first frame is drawn; the stale one goes over it.
        await _until(pilot, lambda: app.gate_open, "the dialog of the gate that waits")
        stale = GateScreen(app.source, PendingGate(gate=Gate.model_validate(recorded["g2"])))
        await app.push_screen(stale)
        await pilot.press("c")  # at the triage: continue. At g3 that would keep #2, which wedged.

        def refused() -> bool:
            return "✗" in str(stale.query_one("#gate-echo", Static).render())

        await _until(pilot, refused, "the refusal in the stale dialog")
        line = str(stale.query_one("#gate-echo", Static).render())
        assert "gate g2 was decided by human:tester: CONTINUE ('continue')" in line
        assert "waits at gate g3 (safety #2)" in line
        await pilot.press("enter")  # nothing was echoed for confirmation: Enter records nothing
        await _until(pilot, lambda: not app.source.busy(), "the source at rest")
    assert decisions_at(d, "g3") == []
    refusals = [e for e in journal_events(d.journal) if e["kind"] == "decision.rejected"]
    assert refusals[-1]["for_gate"] == "g2" and refusals[-1]["gate"] == "g3" and refusals[-1]["by"] == "human:mallory"


def test_decide_for_a_gate_decided_elsewhere_is_refused_saying_who_and_how(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result]
) -> None:
    d = paused_at(recorded, home, "g3")
    r = cli("decide", d.id, "continue", "--gate", "g2", "--by", "carol")
    one_line(r, "gate g2 was decided by human:tester: CONTINUE ('continue')", "waits at gate g3 (safety #2)")
    assert decisions_at(d, "g3") == []
    rejected = journal_events(d.journal)[-1]
    assert rejected["kind"] == "decision.rejected" and rejected["for_gate"] == "g2" and rejected["by"] == "human:carol"
    # The gate that waits takes an answer bound to it, and the journal records which gate it was given for.
    r = cli("decide", d.id, "skip", "--gate", "g3", "--no-resume")
    assert r.code == 3 and "at gate g3 (safety #2)" in r.stderr, r.stderr
    (skip,) = decisions_at(d, "g3")
    assert skip["for_gate"] == "g3" and skip["decision"]["action"] == "skip"
    r = cli("decide", d.id, "stop", "--gate", "g3 ; rm")
    one_line(r, "--gate", "e.g. --gate g4")


def test_without_gate_decide_answers_the_one_gate_waiting_as_before(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result]
) -> None:
    d = paused_at(recorded, home, "g3")
    r = cli("decide", d.id, "skip", "--no-resume")
    assert r.code == 3 and "decided: SKIP" in r.stderr and "at gate g3 (safety #2)" in r.stderr, r.stderr
    (skip,) = decisions_at(d, "g3")
    assert "for_gate" not in skip  # it named no gate: the journal does not pretend it did


def test_a_decider_that_read_the_gate_before_another_answered_it_records_nothing(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's decide reads g3, then waits (here: held in its parse) while alice answers g3 from another
    shell and her resume runs on to the next gate; then bob's answer arrives for g3."""
    d = paused_at(recorded, home, "g3")
    read, go = threading.Event(), threading.Event()
    parse = deciding.parse

    def held(at: deciding.AtGate, text: str, *, by: str) -> Any:
        read.set()
        assert go.wait(120)
        return parse(at, text, by=by)

    monkeypatch.setattr(deciding, "parse", held)
    outcome: list[BaseException | object] = []

    def bob() -> None:
        try:
            outcome.append(Runner(SessionDir(d.id)).decide("skip", by="human:bob"))
        except BaseException as exc:  # the test reads what happened
            outcome.append(exc)

    thread = threading.Thread(target=bob)
    thread.start()
    assert read.wait(120)
    r = cli("decide", d.id, "continue", "--yes", "--by", "alice")  # keeps #2 (confirmed), resumes, pauses again
    assert r.code == 3, r.stderr
    go.set()
    thread.join(120)
    (refused,) = outcome
    assert isinstance(refused, SessionError), refused
    assert "gate g3 was decided by human:alice: CONTINUE ('continue') meanwhile" in str(refused)
    assert [e["by"] for e in decisions_at(d, "g3")] == ["human:alice"]  # one decision, hers
    assert all(e.get("by") != "human:bob" for e in journal_events(d.journal) if e["kind"] == "decision")


def test_two_deciders_at_once_one_gate_one_decision(
    recorded: dict[str, Any], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two answers for g3 recorded at the same moment (`decide --no-resume` twice, or two hands over to a
    waiting runner), both having read g3 and their line: one stands, the other is refused naming it, and
    the journal has one decision."""
    d = paused_at(recorded, home, "g3")
    both_read = threading.Barrier(2)
    parse = deciding.parse

    def in_step(at: deciding.AtGate, text: str, *, by: str) -> Any:
        both_read.wait(60)
        return parse(at, text, by=by)

    monkeypatch.setattr(deciding, "parse", in_step)
    results: dict[str, BaseException | object] = {}

    def decider(name: str, text: str) -> None:
        try:
            results[name] = Runner(SessionDir(d.id)).decide(text, by=f"human:{name}")
        except BaseException as exc:  # the test reads what happened
            results[name] = exc

    for _ in range(5):
        shutil.rmtree(d.root)
        shutil.copytree(recorded["home"] / "at-g3", d.root)
        results.clear()
        threads = [threading.Thread(target=decider, args=a) for a in (("alice", "skip"), ("bob", "defer"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        refused = [n for n, v in results.items() if isinstance(v, BaseException)]
        assert len(refused) == 1, results
        (winner,) = set(results) - set(refused)
        assert [e["by"] for e in decisions_at(d, "g3")] == [f"human:{winner}"]  # the journal says one thing
        assert len(json.loads((d.root / "answers.json").read_text())) == 1
        assert isinstance(results[refused[0]], SessionError), results
        assert f"by human:{winner}" in str(results[refused[0]])


# ---------------------------------------------------------------- bombs


@pytest.fixture
def at_command_gate(cli: Callable[..., Result], variant: Callable[..., Path], tmp_path: Path) -> Iterator[str]:
    policy = tmp_path / "asking.yaml"
    policy.write_text(ASKING)
    r = cli("run", str(variant(TWO, name="bomb")), "--policy", str(policy), "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "command", r.stderr
    yield r.json()["session"]


def command_decisions(home: Path, session: str) -> list[dict[str, Any]]:
    events = journal_events(home / "sessions" / session / "journal.jsonl")
    return [e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "command"]


def test_ten_kilobytes_of_yes_at_a_command_gate_is_refused_in_one_line(
    at_command_gate: str, home: Path, cli: Callable[..., Result]
) -> None:
    session = at_command_gate
    before = command_decisions(home, session)
    r = cli("decide", session, "yes " * 2500)
    line = one_line(r, "at most 1,000 characters", "this one has 10,000")
    assert len(line) < 300  # never echoed whole
    assert command_decisions(home, session) == before  # nothing approved
    rejected = journal_events(home / "sessions" / session / "journal.jsonl")[-1]
    assert rejected["kind"] == "decision.rejected" and len(rejected["raw"]) <= 1_001
    # Under the cap, a word said over and over is read once, but echoed and confirmed, never taken as said.
    r = cli("decide", session, "yes yes yes yes yes")
    one_line(r, "'yes' said 5 times in a row", "needs confirmation")
    assert command_decisions(home, session) == before


def test_continue_twelve_hundred_times_is_one_line_not_a_traceback(
    at_command_gate: str, home: Path, cli: Callable[..., Result]
) -> None:
    r = cli("decide", at_command_gate, "continue " * 1200)
    one_line(r, "at most 1,000 characters")


def test_the_reader_does_not_recurse_as_deep_as_the_line_is_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not by the cap alone: with the cap lifted, the same line is read (in a loop), and confirmed."""
    from policies import decisions
    from policies.decisions import vocabulary

    monkeypatch.setattr(vocabulary, "MAX_CHARS", 100_000)  # where check_length reads it
    for kind, word in (("continue_or_ask", "continue"), ("plan", "lgtm")):
        d = decisions.parse_decision(f"{word} " * 1200, kind=kind, options=[1, 2], gate_option=None)  # type: ignore[arg-type]
        assert d.action in ("continue", "approve") and d.confirm
        assert any("1200 times" in note for note in d.read_as), d.read_as


# ---------------------------------------------------------------- keeping an unsafe option


def test_a_conditional_answer_that_keeps_an_unsafe_option_needs_the_confirmation(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result]
) -> None:
    d = paused_at(recorded, home, "g3")  # #2 wedged (unsafe), gain about +7.6%
    for line in ("skip it if gain is below 5%, otherwise continue", "keep it if gain is at least 5%"):
        r = cli("decide", d.id, line)
        one_line(r, "KEEP #2, which the assessment calls UNSAFE", "needs confirmation", "--yes")
        assert decisions_at(d, "g3") == []
    # The same rule when it rolls the option back needs nothing more than it did.
    r = cli("decide", d.id, "skip it if gain is below 50%, otherwise continue", "--no-resume")
    assert r.code == 3, r.stderr
    (skip,) = decisions_at(d, "g3")
    assert skip["decision"]["action"] == "skip"


def test_a_session_rule_never_keeps_an_unsafe_option_by_itself(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result]
) -> None:
    d = paused_at(recorded, home, "g2")  # at the triage, before #2 is tried
    r = cli("decide", d.id, "skip #2 if gain is below 5%, otherwise continue", "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    # The rule's otherwise-branch would keep #2 (+7.6%, wedged): a person is asked instead.
    assert (gate["kind"], gate["option"]) == ("safety", 2)
    assert gate["recommendation"]["action"] == "ask" and gate["recommendation"]["rule"] == "session-rule:1"
    assert decisions_at(d, gate["id"]) == []


async def _until(pilot: Any, condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    from tests.tui.test_tui import wait_for

    await wait_for(pilot, condition, timeout=timeout, what=what)


# ---------------------------------------------------------------- the journal decides, not the answer store


def _interrupt_of(d: SessionDir, gate: str) -> str:
    opened = [e for e in journal_events(d.journal) if e["kind"] == "gate.opened" and e["gate"] == gate]
    return str(opened[-1]["interrupt"])


@pytest.mark.parametrize("planted", ["altered", "invented"])
def test_an_answer_written_into_the_answer_store_by_hand_decides_nothing(
    recorded: dict[str, Any], home: Path, cli: Callable[..., Result], planted: str
) -> None:
    """answers.json is where a decision waits for its runner, not a record of it: an answer there that the journal
    does not record (one changed after `decide --no-resume`, or one written for a gate nobody answered) is refused
    by resume in one line, exit 5, and the gate still waits."""
    d = paused_at(recorded, home, "g3")  # #2 wedged under stress: skipping it is the journaled answer
    if planted == "altered":
        assert cli("decide", d.id, "skip", "--gate", "g3", "--no-resume").code == 3
        answers = json.loads(d.answers_path.read_text())
        ((interrupt, answer),) = answers.items()
        answer["decision"]["action"] = "continue"  # keep the option that wedged
    else:
        interrupt = _interrupt_of(d, "g3")
        answer = {"decision": {"action": "continue", "by": "human:alice", "targets": []}, "rules": []}
    d.answers_path.write_text(json.dumps({interrupt: answer}))
    before = decisions_at(d, "g3")
    lines_before = len(journal_events(d.journal))
    r = cli("resume", d.id)
    lines = r.stderr.strip().splitlines()
    assert r.code == 5 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "the answer waiting for gate g3 is not the decision its journal records for that gate" in lines[0]
    assert decisions_at(d, "g3") == before
    assert len(journal_events(d.journal)) == lines_before  # nothing appended, nothing resumed


def test_an_answer_for_a_gate_of_a_finished_session_is_refused_and_writes_nothing(
    finished_session: dict[str, Any], cli: Callable[..., Result]
) -> None:
    """A finished session's head is final: refusing a late answer says who decided the gate, and adds no line."""
    journal = Path(finished_session["journal"])
    before = journal.read_bytes()
    r = cli("decide", finished_session["session"], "continue", "--gate", "g2")
    one_line(r, "gate g2 was decided")
    assert journal.read_bytes() == before
    assert "the head is final" in cli("replay", finished_session["session"], "--verify").stdout
