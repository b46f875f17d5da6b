"""Answering the gate a paused session waits at: a person's one line — read by the grammar or the brain,
previewed, confirmed when it must be, recorded first-writer-wins across machines — or, once the gate has
waited past its deadline, the policy's `on_deadline` answer. Every refusal is journaled.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.brain import Brain
from agent.errors import SessionError
from agent.journal import events as ev
from agent.run.answers import Answer, keeps_unsafe
from agent.run.answers import answer as answer_gate
from agent.store.base import JournalWriter, Session
from policies.decisions import DecisionError
from policies.gates import Decision, Gate


def waiting_gate(snapshot: Any) -> tuple[str, Gate] | None:
    """(interrupt id, gate) of the gate the graph's `snapshot` waits at, or None."""
    if not snapshot.interrupts:
        return None
    interrupt = snapshot.interrupts[0]
    return interrupt.id, Gate.model_validate(interrupt.value["gate"])


@dataclass(frozen=True)
class AtGate:
    """A paused session's open gate, and what answering it needs."""

    d: Session
    journal: JournalWriter  # the runner's open journal
    brain: Brain  # reads free text the grammar does not
    interrupt: str
    gate: Gate
    next_rule: int  # the number a session rule this answer adds gets


def parse(at: AtGate, text: str, *, by: str) -> tuple[Decision, Answer]:
    """(parsed decision, answer) for `text` at the gate; nothing recorded except a rejection (journaled,
    then DecisionError)."""
    gate = at.gate
    try:
        decision = interpret(at.d, at.brain, text, gate).model_copy(update={"by": by})
        return decision, answer_gate(gate, decision, next_rule=at.next_rule)
    except DecisionError as exc:
        at.journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=str(exc)))
        raise


def interpret(d: Session, brain: Brain, text: str, gate: Gate) -> Decision:
    """A model's reading of free text is kept per gate and text, so the decision a person confirms
    is the one they were shown — not a second, possibly different, reading."""
    parses = json.loads(d.read("parses.json") or "{}")
    cached = parses.get(gate.id, {}).get(text)
    if cached is not None:
        return Decision.model_validate(cached)
    decision = brain.interpret(text, gate)
    if decision.parser not in (None, "grammar/v1"):
        parses.setdefault(gate.id, {})[text] = decision.model_dump(mode="json")
        d.write("parses.json", json.dumps(parses, indent=1))
    return decision


def preview(at: AtGate, text: str, *, by: str) -> tuple[str, bool]:
    """What `text` would do at the gate, and whether it needs a confirmation (the echo a person sees
    before it takes effect). Raises DecisionError, journaled, for text not understood."""
    decision, result = parse(at, text, by=by)
    return result.echo, decision.confirm or (result.decision is not None and result.decision.confirm)


def decide(at: AtGate, text: str, *, by: str, confirmed: bool) -> tuple[str, str]:
    """Record a one-line decision for the gate; returns (interrupt id, echo). Raises DecisionError
    (journaled, nothing changed) when the text is not understood or needs a confirmation it lacks, and
    SessionError (journaled) when the gate has an answer already."""
    d, gate, journal = at.d, at.gate, at.journal
    decision, result = parse(at, text, by=by)
    answers = d.answers()
    if at.interrupt in answers:
        raise SessionError(
            f"gate {gate.id} already has a recorded answer ({answers[at.interrupt].get('echo', 'see journal')}); "
            f"run `signoff resume {d.id}` to apply it"
        )
    if (decision.confirm or (result.decision is not None and result.decision.confirm)) and not confirmed:
        why = "hedged" if decision.hedged else ("standing" if decision.scope == "standing" else decision.action)
        if keeps_unsafe(gate, decision):
            why = "keep-an-unsafe-option"
        message = f"understood as: {result.echo} — a {why} decision needs confirmation: repeat it with --yes"
        journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
        raise DecisionError(message)
    for rule in result.rules:
        journal.append(ev.RuleAdded(rule=rule.model_dump(mode="json"), gate=gate.id, by=by, raw=text))
    journal.append(
        ev.Decision(
            gate=gate.id,
            gate_kind=gate.kind,
            option=gate.option,
            raw=text,
            by=by,
            parsed=decision.model_dump(mode="json", exclude_none=True),
            decision=result.decision.model_dump(mode="json", exclude_none=True) if result.decision else None,
            echo=result.echo,
            interrupt=at.interrupt,
        )
    )
    mine = {**result.payload(), "echo": result.echo, "answer_id": secrets.token_hex(8)}
    standing = d.claim_answer(at.interrupt, mine)
    if standing.get("answer_id") != mine["answer_id"]:
        # Someone on another machine answered the same gate a moment earlier: theirs stands.
        message = f"gate {gate.id} was answered first by another decision ({standing.get('echo', 'see journal')})"
        journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
        raise SessionError(message)
    return at.interrupt, result.echo


def deadline_answer(
    d: Session, journal: JournalWriter, interrupt: Any, opened: datetime | None
) -> dict[str, Any] | None:
    """The policy's on_deadline answer when a paused gate waited past its deadline (journaled), or the
    answer that stands if a person's arrived first; None while the gate may still wait."""
    value = interrupt.value
    if not value.get("deadline_s") or not value.get("on_deadline"):
        return None
    if opened is None or datetime.now(UTC) < opened + timedelta(seconds=value["deadline_s"]):
        return None
    gate = value["gate"]
    decision = Decision(
        action=value["on_deadline"],
        by="deadline",
        rationale=f"no answer within {value['deadline_s']:g}s of the gate opening",
    )
    mine = {"decision": decision.model_dump(mode="json"), "rules": [], "answer_id": secrets.token_hex(8)}
    standing = d.claim_answer(interrupt.id, mine)
    if standing.get("answer_id") != mine["answer_id"]:
        return standing  # a person's answer (from another machine) arrived just before the deadline
    journal.append(
        ev.Decision(
            gate=gate["id"],
            gate_kind=gate["kind"],
            option=gate.get("option"),
            decision=decision.model_dump(mode="json", exclude_none=True),
            by="deadline",
            interrupt=interrupt.id,
            opened=opened.isoformat(),
        )
    )
    return standing
