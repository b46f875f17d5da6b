"""What a person's parsed one-liner does at the gate it was typed at.

A plain decision answers the gate. A conditional one ("skip #2 for now if it's unsafe") is a rule:
if it concerns this gate it is evaluated now; otherwise it becomes a session rule that waits for
the gate it is about. At a progression gate (plan, triage, continue-or-ask) giving such a rule
also means "go ahead" — the echo says so; at any other gate the gate is asked again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from policies.decisions import DecisionError
from policies.engine import SessionRule, kinds_for_condition
from policies.expr import Condition, EvalError
from policies.gates import ALLOWED, FACTS, Decision, Gate

PROGRESSION = ("plan", "triage", "continue_or_ask")


class Answer(BaseModel):
    decision: Decision | None  # None: the gate stays open (asked again)
    rules: list[SessionRule] = Field(default_factory=list)
    echo: str

    def payload(self) -> dict[str, Any]:
        return {
            "decision": self.decision.model_dump(mode="json") if self.decision else None,
            "rules": [r.model_dump(mode="json") for r in self.rules],
        }


TARGETED = ("plan", "triage", "continue_or_ask")


def check_targets(gate: Gate, decision: Decision) -> None:
    """Refuse decisions that name options in a state they cannot apply to (DecisionError)."""
    status = gate.status
    # A conditional "skip it if it's unsafe" is a rule for the gate of whichever option it meets later.
    untargeted = decision.condition is None
    if untargeted and decision.action in ("skip", "defer", "select") and not decision.targets and gate.kind in TARGETED:
        raise DecisionError(f"{decision.action} which option? name it, e.g. '{decision.action} #{_example(gate)}'")
    for t in decision.targets:
        state = status.get(str(t))
        if decision.action in ("skip", "defer") and state not in ("pending", "current", None):
            raise DecisionError(f"#{t} is already {state}; only options still to try can be skipped or deferred")
        if decision.action == "select" and state in ("no-go", "kept", "current"):
            why = "its investigation found a blocker" if state == "no-go" else f"it is {state}"
            raise DecisionError(f"#{t} cannot be selected: {why}")


def keeps_unsafe(gate: Gate, decision: Decision) -> bool:
    unsafe = gate.kind == "safety" and gate.facts.get("verdict") == "unsafe"
    return unsafe and decision.action in ("continue", "approve")


def _example(gate: Gate) -> str:
    pending = [k for k, v in gate.status.items() if v == "pending"]
    return pending[0] if pending else "2"


def answer(gate: Gate, decision: Decision, *, next_rule: int) -> Answer:
    check_targets(gate, decision)
    if decision.condition is None:
        if decision.action == "ask":
            return Answer(decision=None, echo="ASK: the gate stays open for a person")
        if keeps_unsafe(gate, decision):
            # "keep it" at an unsafe option is allowed, but never by a slip of the keyboard.
            decision = decision.model_copy(update={"confirm": True})
            echo = f"{decision.describe()} — KEEP #{gate.option}, which the assessment calls UNSAFE"
            return Answer(decision=decision, echo=echo)
        return Answer(decision=decision, echo=decision.describe())
    kinds = [k for k in kinds_for_condition(decision.condition) if decision.action in ALLOWED[k]]
    if decision.action in ("continue", "approve"):
        # "keep going unless unsure" is about moving on; keeping an option, accepting a rollback or
        # running a command has to be said at that gate, not inferred from a rule given elsewhere.
        kinds = [k for k in kinds if k in PROGRESSION or k == gate.kind]
    if not kinds:
        raise DecisionError(
            f"no gate can {decision.action} on {decision.condition!r} as a rule given here; "
            "say it at the gate it is about"
        )
    concerns_now = gate.kind in kinds and (not decision.targets or gate.option in decision.targets)
    if concerns_now:
        try:
            holds = Condition(decision.condition, FACTS[gate.kind]).evaluate(gate.facts)
        except EvalError as exc:
            return Answer(decision=None, echo=f"cannot evaluate {decision.condition!r} here ({exc}); gate stays open")
        if holds:
            return Answer(decision=decision, echo=f"{decision.describe()} — condition holds now")
        if decision.otherwise and decision.otherwise != "ask" and decision.otherwise in ALLOWED[gate.kind]:
            other = decision.model_copy(
                update={
                    "action": decision.otherwise,
                    "condition": None,
                    "rationale": f"otherwise-branch of {decision.raw!r}",
                }
            )
            return Answer(decision=other, echo=f"{other.action.upper()} — {decision.condition} is false here")
        return Answer(decision=None, echo=f"{decision.condition} is false here; the gate stays open")
    rule = SessionRule(
        id=f"session-rule:{next_rule}",
        kinds=kinds,
        targets=decision.targets,
        when=decision.condition,
        decision=decision,
    )
    echo = f"RULE {rule.id}: {decision.describe()} (applies at {', '.join(kinds)} gates)"
    if gate.kind in PROGRESSION:
        proceed = Decision(
            action="continue",
            raw=decision.raw,
            parser=decision.parser,
            by=decision.by,
            rationale=f"go-ahead implied by the rule {rule.id}",
            hedged=decision.hedged,
        )
        return Answer(decision=proceed, rules=[rule], echo=f"{echo}; CONTINUE here")
    return Answer(decision=None, rules=[rule], echo=f"{echo}; this gate still needs an answer")
