"""One `Gate` travels from the node to the journal, the outcome and the TUI: `GateOpenedEvent.of` is the one way a
gate is journaled as opened, and it writes the bytes journals have always had; the TUI redraws a gate on any change."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from agent.journal import events as ev
from agent.journal.view import GateView
from policies.gates import Gate
from tests.conftest import FIXTURES
from tests.unit.test_journal_compat import rewritten
from tui.render import gate_key

V1 = FIXTURES / "journal-v1"


def opened_lines() -> list[bytes]:
    return [
        line
        for name in ("demo-autonomous", "ask-one-liners")
        for line in (V1 / name / "journal.jsonl").read_bytes().splitlines()
        if json.loads(line)["kind"] == "gate.opened"
    ]


@pytest.mark.parametrize("line", opened_lines(), ids=lambda line: json.loads(line)["gate"])
def test_gate_opened_of_writes_the_bytes_an_old_journal_has(line: bytes) -> None:
    record = json.loads(line)
    # The gate as its node made it (Gate JSON), from which each old line was written: asked at (with the interrupt and
    # the recommendation) or decided by a policy (neither), journaled again after a crash or not.
    gate = {
        "id": record["gate"],
        "kind": record["gate_kind"],
        "option": record["option"],
        "question": record["question"],
        "facts": record["facts"],
        "allowed": ["continue", "stop", "ask"],
        "recommendation": record.get("recommendation"),
    }
    event = ev.GateOpenedEvent.of(gate, interrupt=record.get("interrupt"), recovered=bool(record.get("recovered")))
    assert rewritten(record, event) == line


def test_both_ways_a_gate_opens_are_in_the_fixtures() -> None:
    asked = [json.loads(line) for line in opened_lines() if "interrupt" in json.loads(line)]
    assert asked and len(asked) < len(opened_lines())


def test_a_gate_panel_redraws_when_any_field_of_its_gate_changes() -> None:
    g = GateView(gate="g3", kind="safety", option=2, question="Keep #2?", facts={"verdict": "safe"}, seq=40)
    shown = gate_key(g)
    assert gate_key(g) == shown  # nothing changed: no redraw
    for f in fields(GateView):
        before = getattr(g, f.name)
        setattr(g, f.name, {"changed": True} if isinstance(before, dict) else "changed")
        assert gate_key(g) != shown, f.name  # the view updates its gates in place; a copy tells the change
        setattr(g, f.name, before)
    assert gate_key(g) == shown


def test_a_gate_this_version_cannot_read_is_given_as_checkpointed_never_a_traceback() -> None:
    from agent.run.outcome import _pending

    made = {"id": "g2", "kind": "triage", "question": "Go on?", "facts": {"has_next_step": True}, "allowed": ["stop"]}
    whole = _pending(made)
    assert set(Gate.model_fields) <= set(whole) and whole["suggested"] == "continue"
    # An older signoff's recommendation with a field this one's Decision refuses, and a kind it does not know.
    older = {**made, "recommendation": {"action": "ask", "retired_field": 1}}
    assert _pending(older) == {**older, "suggested": "continue"}
    stranger = {**made, "kind": "warmup"}
    assert _pending(stranger) == {**stranger, "suggested": "ask"}
