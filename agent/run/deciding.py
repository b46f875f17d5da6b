"""Answering the gate a paused session waits at: a person's one line — read by the grammar or the brain,
previewed, confirmed when it must be, recorded first-writer-wins across machines — or, once the gate has
waited past its deadline, the policy's `on_deadline` answer. Every refusal is journaled.

An answer may name the gate it was given for (the TUI's dialog does, and `decide --gate gN`): given for
any other gate than the one waiting, it is refused with who decided that gate and how. Whether the gate
is still undecided and the record of its answer are one step under the store's `deciding()` lock, which
every decider takes, so two deciders never both answer one gate, whatever machines they are on.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from agent.brain import Brain
from agent.errors import AnswerUnrecorded, GateNotWaiting, SessionError
from agent.journal import events as ev
from agent.journal.view import GateView, SessionView, fold
from agent.run.answers import Answer, keeps_unsafe
from agent.run.answers import answer as answer_gate
from agent.store.base import JournalWriter, Session
from policies.decisions import MAX_CHARS, DecisionError, check_length
from policies.gates import Decision, Gate


def waiting_gate(snapshot: Any) -> tuple[str, Gate] | None:
    """(interrupt id, gate) of the gate the graph's `snapshot` waits at, or None."""
    if not snapshot.interrupts:
        return None
    interrupt = snapshot.interrupts[0]
    return interrupt.id, Gate.model_validate(interrupt.value["gate"])


class Decided(NamedTuple):
    """A recorded answer: the interrupt it answers, its echo, and where — "g4 (plan)" — for the echo line."""

    interrupt: str
    echo: str
    at: str


@dataclass(frozen=True)
class AtGate:
    """A paused session's open gate, and what answering it needs."""

    d: Session
    journal: JournalWriter  # the runner's open journal
    brain: Brain  # reads free text the grammar does not
    interrupt: str
    gate: Gate
    next_rule: int  # the number a session rule this answer adds gets


def named(for_gate: str | None) -> dict[str, str]:
    """`for_gate` as a journal field: written only when the answer named its gate (only the fields given
    are written, so a line without it reads exactly as before)."""
    return {} if for_gate is None else {"for_gate": for_gate}


def journaled(text: str) -> str:
    """What the journal keeps of a refused line: all of a one-liner, the start of anything longer."""
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "…"


def where(gate: Gate | GateView) -> str:
    """ "g5 (safety #2)": a gate as the echo and the refusals name it."""
    kind = gate.kind
    return f"{gate.id if isinstance(gate, Gate) else gate.gate} ({kind}" + (
        f" #{gate.option})" if gate.option is not None else ")"
    )


def how_decided(view: SessionView, gate_id: str) -> str | None:
    """ "by human:alice: CONTINUE ('continue')" — who decided `gate_id` last and how, as the journal says."""
    decided = [g for g in view.gates if g.gate == gate_id and g.action is not None]
    if not decided:
        return None
    g = decided[-1]
    said = f" ({g.raw!r})" if g.raw else ""
    action = "a rule, asked again" if g.action == "ask" else str(g.action).upper()
    who = "its deadline" if g.by == "deadline" else (g.by or "the policy")
    return f"by {who}: {action}{said}"


def not_waiting(view: SessionView, gate_id: str, waiting: Gate | None) -> str:
    """The one line that refuses an answer given for `gate_id` when `waiting` is the gate that waits."""
    how = how_decided(view, gate_id)
    said = f"gate {gate_id} was decided {how}" if how else f"gate {gate_id} is not the gate waiting"
    now = f"the session waits at gate {where(waiting)} now" if waiting else "no gate waits now"
    return f"{said}; {now}; nothing recorded (answer the gate you are shown)"


def check_bound(at: AtGate, for_gate: str | None, text: str, *, by: str) -> None:
    """Refuse (journaled, GateNotWaiting) an answer given for another gate than the one waiting."""
    if for_gate is None or for_gate == at.gate.id:
        return
    refuse(at.d, at.journal, at.gate, for_gate, text, by=by)


def refuse(
    d: Session, journal: JournalWriter, waiting: Gate | None, for_gate: str, text: str, *, by: str, record: bool = True
) -> None:
    """Journal the refusal of an answer given for `for_gate`, which no longer waits, and raise it. `record`: False
    when the session has ended, whose journal takes no line after its end (its head is final)."""
    message = not_waiting(fold(d.events()), for_gate, waiting)
    if not record:
        raise GateNotWaiting(message)
    journal.append(
        ev.DecisionRejectedEvent(
            gate=waiting.id if waiting else None,
            gate_kind=waiting.kind if waiting else None,
            raw=journaled(text),
            by=by,
            error=message,
            for_gate=for_gate,
        )
    )
    raise GateNotWaiting(message)


def parse(at: AtGate, text: str, *, by: str) -> tuple[Decision, Answer]:
    """(parsed decision, answer) for `text` at the gate; nothing recorded except a rejection (journaled,
    then DecisionError)."""
    gate = at.gate
    try:
        decision = interpret(at.d, at.brain, text, gate).model_copy(update={"by": by})
        return decision, answer_gate(gate, decision, next_rule=at.next_rule)
    except DecisionError as exc:
        at.journal.append(
            ev.DecisionRejectedEvent(gate=gate.id, gate_kind=gate.kind, raw=journaled(text), by=by, error=str(exc))
        )
        raise


def interpret(d: Session, brain: Brain, text: str, gate: Gate) -> Decision:
    """A model's reading of free text is kept per gate and text, so the decision a person confirms
    is the one they were shown — not a second, possibly different, reading."""
    check_length(text)  # before anything reads it, the model and its cache included
    parses = json.loads(d.read("parses.json") or "{}")
    cached = parses.get(gate.id, {}).get(text)
    if cached is not None:
        return Decision.model_validate(cached)
    decision = brain.interpret(text, gate)
    if decision.parser not in (None, "grammar/v1"):
        parses.setdefault(gate.id, {})[text] = decision.model_dump(mode="json")
        d.write("parses.json", json.dumps(parses, indent=1))
    return decision


def preview(at: AtGate, text: str, *, by: str, for_gate: str | None = None) -> tuple[str, bool]:
    """What `text` would do at the gate, and whether it needs a confirmation (the echo a person sees
    before it takes effect). Raises DecisionError, journaled, for text not understood, and
    GateNotWaiting, journaled, when it was given for another gate than the one waiting."""
    check_bound(at, for_gate, text, by=by)
    decision, result = parse(at, text, by=by)
    return result.echo, decision.confirm or (result.decision is not None and result.decision.confirm)


def _answered_first(at: AtGate, text: str, *, by: str, for_gate: str | None, applied: bool) -> None:
    """Refuse (journaled, GateNotWaiting) an answer for a gate another decider answered first."""
    how = how_decided(fold(at.d.events()), at.gate.id) or "by another decision"
    if applied:
        message = f"gate {at.gate.id} was decided {how} meanwhile; nothing recorded (answer the gate you are shown)"
    else:
        message = (
            f"gate {at.gate.id} already has a recorded answer, {how}, which stands; nothing recorded "
            f"(`signoff resume {at.d.id}` applies it if no runner does)"
        )
    gate = at.gate
    rejected = {"gate": gate.id, "gate_kind": gate.kind, "raw": journaled(text), "by": by, "error": message}
    at.journal.append(ev.DecisionRejectedEvent.model_validate({**rejected, **named(for_gate)}))
    raise GateNotWaiting(message)


def _consumed(d: Session, interrupt: str) -> bool:
    """Has a runner resumed the session with an answer for `interrupt` (and so cleared it)?"""
    return any(e.get("kind") == "session.resumed" and interrupt in (e.get("answers") or []) for e in d.events())


def decide(at: AtGate, text: str, *, by: str, confirmed: bool, for_gate: str | None = None) -> Decided:
    """Record a one-line decision for the gate; returns (interrupt id, echo, where). Raises DecisionError
    (journaled, nothing changed) when the text is not understood or needs a confirmation it lacks, and
    SessionError (journaled) when the gate has an answer already or, given `for_gate`, is not that gate."""
    d, gate, journal = at.d, at.gate, at.journal
    check_bound(at, for_gate, text, by=by)
    decision, result = parse(at, text, by=by)
    if at.interrupt in d.answers():
        _answered_first(at, text, by=by, for_gate=for_gate, applied=False)
    if (decision.confirm or (result.decision is not None and result.decision.confirm)) and not confirmed:
        why = "hedged" if decision.hedged else ("standing" if decision.scope == "standing" else decision.action)
        if keeps_unsafe(gate, result.decision):
            why = "keep-an-unsafe-option"
        message = f"understood as: {result.echo} — a {why} decision needs confirmation: repeat it with --yes"
        journal.append(ev.DecisionRejectedEvent(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
        raise DecisionError(message)
    with d.deciding():
        # Read before the journal: a runner journals `session.resumed` before it clears the answer it took.
        answered = at.interrupt in d.answers()
        if answered or _consumed(d, at.interrupt):
            # Someone else answered this gate first (here or on another machine): theirs stands.
            _answered_first(at, text, by=by, for_gate=for_gate, applied=not answered)
        for rule in result.rules:
            journal.append(ev.RuleAddedEvent(rule=rule.model_dump(mode="json"), gate=gate.id, by=by, raw=text))
        decided = {
            "gate": gate.id,
            "gate_kind": gate.kind,
            "option": gate.option,
            "raw": text,
            "by": by,
            "parsed": decision.model_dump(mode="json", exclude_none=True),
            "decision": result.decision.model_dump(mode="json", exclude_none=True) if result.decision else None,
            "echo": result.echo,
            "interrupt": at.interrupt,
        }
        journal.append(ev.DecisionEvent.model_validate({**decided, **named(for_gate)}))
        mine = {**result.payload(), "echo": result.echo, "answer_id": secrets.token_hex(8)}
        standing = d.claim_answer(at.interrupt, mine)
    if standing.get("answer_id") != mine["answer_id"]:  # pragma: no cover - every decider holds `deciding()`
        message = f"gate {gate.id} was answered first by another decision ({standing.get('echo', 'see journal')})"
        journal.append(ev.DecisionRejectedEvent(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
        raise SessionError(message)
    return Decided(at.interrupt, result.echo, where(gate))


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
    with d.deciding():
        standing = d.answers().get(interrupt.id)
        if standing is not None:
            return standing  # a person's answer (from another machine) arrived just before the deadline
        journal.append(
            ev.DecisionEvent(
                gate=gate["id"],
                gate_kind=gate["kind"],
                option=gate.get("option"),
                decision=decision.model_dump(mode="json", exclude_none=True),
                by="deadline",
                interrupt=interrupt.id,
                opened=opened.isoformat(),
            )
        )
        return d.claim_answer(interrupt.id, mine)


def recorded_answers(
    session: str, events: Iterable[dict[str, Any]], ready: Mapping[str, Mapping[str, Any]], gates: Mapping[str, str]
) -> None:
    """Raise AnswerUnrecorded unless every answer about to be applied is one the verified journal records: its
    decision line for that gate's interrupt, with that decision, and every standing rule it adds journaled at that
    gate. The answer store is only where a decision waits for its runner; the journal is what was decided (a
    decision or rule line past a verified head is refused when the journal is opened), so an answer written into
    the store by hand decides nothing."""
    decided: dict[str, Any] = {}
    rules: dict[str, list[Any]] = {}
    for e in events:
        if e.get("kind") == "decision" and e.get("interrupt"):
            decided[e["interrupt"]] = _as_journaled(e.get("decision"))
        elif e.get("kind") == "rule.added":
            rules.setdefault(str(e.get("gate")), []).append(_as_journaled(e.get("rule")))
    for interrupt, answer in ready.items():
        gate = gates.get(interrupt, "?")
        if interrupt not in decided or decided[interrupt] != _as_journaled(answer.get("decision")):
            raise AnswerUnrecorded(session, gate, "is not the decision its journal records for that gate")
        if any(_as_journaled(rule) not in rules.get(gate, []) for rule in answer.get("rules") or []):
            raise AnswerUnrecorded(session, gate, "adds a rule its journal does not record")


def _as_journaled(value: Any) -> Any:
    """A decision or rule as its journal line holds it: without the entries that are None."""
    if isinstance(value, dict):
        return {k: _as_journaled(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_journaled(v) for v in value]
    return value
