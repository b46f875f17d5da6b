"""The one fold, event by event: what a session is doing at each line of a journal a person answered."""

from __future__ import annotations

import json

import pytest

from agent.journal import events as ev
from agent.journal.view import SessionView, fold
from agent.store.listing import _journal_summary
from tests.conftest import FIXTURES

ASKED = FIXTURES / "journal-v1" / "ask-one-liners" / "journal.jsonl"


def records() -> list[dict]:
    return [json.loads(line) for line in ASKED.read_text().splitlines()]


def states() -> list[tuple[str, str, str]]:
    """(kind, status, activity) after each line."""
    view, out = SessionView(), []
    for r in records():
        view.apply(ev.entry(r))
        out.append((r["kind"], view.status, view.activity))
    return out


def test_a_gate_is_waited_at_then_paused_at_then_answered_then_run_past() -> None:
    """Replay used to say "running" at a gate that had just opened and "paused" at the decision that
    answered it; the status bar named the phase before the gate ("stress #3 · paused" at a safety gate)."""
    seen = states()
    at = next(i for i, (kind, *_) in enumerate(seen) if kind == "gate.opened" and "safety" in seen[i][2])
    _, status, activity = seen[at]
    assert (status, activity) == ("waiting", "gate g3 (safety #2)")
    assert seen[at + 1][:2] == ("session.paused", "paused") and seen[at + 1][2] == "gate g3 (safety #2)"
    decision = next(i for i in range(at, len(seen)) if seen[i][0] == "decision")
    assert seen[decision][1] == "answered"  # the runner is not running yet: `decide` resumes it next
    resumed = next(i for i in range(decision, len(seen)) if seen[i][0] == "session.resumed")
    assert seen[resumed][1] == "running"
    assert seen[-1][1] == "finished"


def test_a_gate_a_policy_answers_at_once_is_waited_at_and_run_past() -> None:
    view = SessionView()
    ts = "2026-12-04T00:00:0{}Z"
    for line in (
        {"kind": "session.started", "seq": 0, "ts": ts.format("0.000")},
        {"kind": "phase", "seq": 1, "ts": ts.format("1.000"), "phase": "rollback", "option": 2},
        {"kind": "gate.opened", "seq": 2, "ts": ts.format("2.000"), "gate": "g4", "gate_kind": "continue_or_ask"},
    ):
        view.apply(ev.entry(line))
    assert (view.status, view.activity) == ("waiting", "gate g4 (continue_or_ask)")
    decision = {"action": "continue"}
    view.apply(ev.entry({"kind": "decision", "seq": 3, "ts": ts.format("2.500"), "gate": "g4", "decision": decision}))
    assert view.status == "running" and view.activity == "rollback #2"
    assert view.gates[0].waited_s == pytest.approx(0.5) and view.decided == {"g4"}


def test_listing_reads_the_same_fold() -> None:
    summary = _journal_summary(records())
    view = fold(records())
    assert summary == {
        "duration_s": round(view.wall_s, 1), "waiting_at": None, "outcomes": view.outcomes,
        "started_at": view.started_ts,
    }  # fmt: skip
    paused = [r for r in records()][: next(i for i, r in enumerate(records()) if r["kind"] == "session.paused") + 1]
    assert _journal_summary(paused)["waiting_at"] == {"gate": "g2", "kind": "triage", "option": None}


@pytest.mark.parametrize(
    "line",
    [
        {"kind": "gate.opened", "seq": 1, "ts": "x", "gate": 7},  # a field of the wrong type
        {"kind": "decision", "seq": 2, "ts": "x"},  # a required field missing
        {"kind": "from.the.future", "seq": 3, "ts": "x", "anything": [1]},  # a kind this version does not know
        {"kind": "finding", "seq": "four", "ts": 5, "option": "one"},  # a broken envelope
    ],
)
def test_a_line_that_fits_no_model_is_counted_not_fatal(line: dict) -> None:
    view = SessionView()
    view.apply(ev.entry(line))
    assert view.unrecognized == 1 and view.events == 1 and view.gates == [] and view.options == {}


def test_a_forged_line_cannot_set_what_the_model_decides() -> None:
    event = ev.parse({"kind": "nonsense", "problem": "none", "seq": 1})
    assert isinstance(event, ev.UnrecognizedEvent) and event.problem == "unknown kind 'nonsense'"


def test_a_sweep_plots_the_level_being_measured_then_the_level_judged() -> None:
    """A sweep's levels differ by design (throughput at 30 is not at 90): one plot of all of them would
    read as an absurd spread, so the view shows one level's runs at a time."""
    view = SessionView()

    def add(seq: int, kind: str, **fields: object) -> None:
        view.apply(ev.entry({"seq": seq, "ts": "", "actor": "signoff", "session": "s", "kind": kind, **fields}))

    for seq, (level, value) in enumerate([(30, 600.0), (30, 640.0), (60, 740.0), (60, 800.0), (90, 800.0)]):
        add(seq, "bench.run", option=3, purpose="ab", arm="AB"[seq % 2], pair=0, value=value, level=level)
    assert [r.value for r in view.options[3].runs] == [800.0]  # measuring 90 now
    add(9, "ab.result", option=3, verdict="improved", effect_pct=8.0, level=60)
    assert [r.value for r in view.options[3].runs] == [740.0, 800.0]  # the headline level
    add(10, "bench.run", option=4, purpose="ab", arm="A", pair=0, value=1.0)  # no sweep: as before
    add(11, "bench.run", option=4, purpose="ab", arm="B", pair=0, value=2.0)
    add(12, "ab.result", option=4, verdict="improved", effect_pct=100.0)
    assert [r.value for r in view.options[4].runs] == [1.0, 2.0]
