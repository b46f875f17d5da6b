"""What a person's parsed one-liner does at the gate it was typed at.

A plain decision answers the gate. A conditional one ("skip #2 for now if it's unsafe") is a rule:
if it concerns this gate it is evaluated now; otherwise it becomes a session rule that waits for
the gate it is about. At a progression gate (plan, triage, continue-or-ask) giving such a rule
also means "go ahead" — the echo says so; at any other gate the gate is asked again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from policies.decisions import DecisionError, check_states, option_states
from policies.expr import Condition, EvalError
from policies.gates import ALLOWED, FACTS, GATES, Decision, Gate, GateKind
from policies.session_rules import SessionRule, kinds_for_condition


class Answer(BaseModel):
    decision: Decision | None  # None: the gate stays open (asked again)
    rules: list[SessionRule] = Field(default_factory=list)
    echo: str

    def payload(self) -> dict[str, Any]:
        return {
            "decision": self.decision.model_dump(mode="json") if self.decision else None,
            "rules": [r.model_dump(mode="json") for r in self.rules],
        }


def check_targets(gate: Gate, decision: Decision) -> None:
    """Refuse decisions that name options in a state they cannot apply to (DecisionError)."""
    check_states(gate.kind, decision, option_states(gate))


def keeps_unsafe(gate: Gate, decision: Decision | None) -> bool:
    """Does `decision` keep an option the assessment's facts call unsafe (whatever its name or number)?"""
    unsafe = gate.kind == "safety" and gate.facts.get("verdict") == "unsafe"
    return unsafe and decision is not None and decision.action in ("continue", "approve")


def _confirmed_keep(gate: Gate, answer: Answer) -> Answer:
    """An answer that keeps an unsafe option — said plainly, or reached through a condition or its
    otherwise-branch — is allowed, but never by a slip of the keyboard: it needs a confirmation."""
    if not keeps_unsafe(gate, answer.decision):
        return answer
    assert answer.decision is not None
    decision = answer.decision.model_copy(update={"confirm": True})
    return answer.model_copy(
        update={"decision": decision, "echo": f"{answer.echo} — KEEP #{gate.option}, which the assessment calls UNSAFE"}
    )


def meaning(gate: Gate, decision: Decision) -> str:
    """What the decision does at this gate, in the gate's own terms (the echo after the action)."""
    f, option, action = gate.facts, gate.option, decision.action
    named = ", ".join(f"#{t}" for t in decision.targets)
    if gate.kind == "command":
        if action == "approve":
            if decision.targets:
                picked = ", ".join(map(str, decision.targets))
                return f"run command(s) {picked} of {len(gate.commands)}; the rest are asked again"
            return f"run all {len(gate.commands) or 1} listed command(s)"
        return GATES["command"].meaning["reject"] if action in ("reject", "skip") else "stop the campaign"
    if gate.kind == "safety":
        if action in ("continue", "approve"):
            gain = f["gain_pct"] if f.get("has_estimate", True) and "gain_pct" in f else None
            said = (
                f" ({gain:+.1f}%, CI {f['ci_low']:+.1f}…{f['ci_high']:+.1f}, {f.get('ab_verdict')})"
                if gain is not None and "ci_low" in f
                else ""
            )
            return f"keep #{option}{said}; it becomes the new baseline"
        if action in ("skip", "rollback"):
            return f"roll #{option} back, verify the rollback and move on"
        if action == "defer":
            return f"roll #{option} back and revisit it at the end"
        if action == "retry":
            return f"benchmark #{option} again" + (f" with {decision.runs} pairs" if decision.runs else "")
    if gate.kind == "rollback":
        if action in ("approve", "continue"):
            return "accept the hosts as they are, unverified, and go on"
        if action == "retry":
            return f"revert #{option} again and verify it" + (
                f", up to {decision.runs} times until it verifies" if decision.runs else ""
            )
    if GATES[gate.kind].takes_targets:
        if action == "select":
            return f"try {named} next"
        if action in ("skip", "defer"):
            return ("drop " if action == "skip" else "defer to the end: ") + named
        if action in ("continue", "approve"):
            nxt = f.get("next_option")
            if gate.kind == "continue_or_ask":
                return f"try the next option (#{nxt})" if nxt else "finish with the report"
            return GATES[gate.kind].meaning.get("continue", "go ahead")
    if action == "stop":
        return "stop the campaign (every change not kept is rolled back) and write the report"
    return GATES[gate.kind].meaning.get(action, action)


def _echo(gate: Gate, decision: Decision) -> str:
    echo = f"{decision.describe()} — {meaning(gate, decision)}"
    if decision.read_as:
        echo += f" (read as: {'; '.join(decision.read_as)})"
    return echo


def _standing(gate: Gate, decision: Decision, next_rule: int) -> list[SessionRule]:
    """ "approve always", "always continue": a rule that answers the same kind of gate from now on."""
    if decision.scope != "standing" or decision.action == "ask" or decision.targets:
        return []
    when = None
    if gate.kind == "command":
        when = 'klass == "ask"'  # never a denied command: those never reach a gate
    elif gate.kind == "safety" and decision.action in ("continue", "approve"):
        when = 'verdict == "safe"'  # a standing keep never keeps an unsafe option
    return [SessionRule(id=f"session-rule:{next_rule}", kinds=[gate.kind], when=when, decision=decision)]


def answer(gate: Gate, decision: Decision, *, next_rule: int) -> Answer:
    check_targets(gate, decision)
    if decision.condition is None:
        if decision.action == "ask":
            return Answer(decision=None, echo="ASK: the gate stays open for a person")
        if gate.kind == "command" and decision.scope == "standing" and decision.targets:
            raise DecisionError(
                "a standing approval covers every command later gates list; say 'approve always' without numbers"
            )
        rules = _standing(gate, decision, next_rule)
        said = (
            f"; RULE {rules[0].id} answers later {gate.kind} gates"
            + (f" when {rules[0].when}" if rules[0].when else "")
            if rules
            else ""
        )
        if keeps_unsafe(gate, decision):
            plain = _confirmed_keep(gate, Answer(decision=decision, echo=_echo(gate, decision)))
            return plain.model_copy(update={"rules": rules, "echo": plain.echo + said})
        return Answer(decision=decision, rules=rules, echo=_echo(gate, decision) + said)
    kinds: list[GateKind] = [k for k in kinds_for_condition(decision.condition) if decision.action in ALLOWED[k]]
    if decision.action in ("continue", "approve"):
        # "keep going unless unsure" is about moving on; keeping an option, accepting a rollback or
        # running a command has to be said at that gate, not inferred from a rule given elsewhere.
        kinds = [k for k in kinds if GATES[k].takes_targets or k == gate.kind]
    if not kinds:
        raise DecisionError(
            f"no gate can {decision.action} on {decision.condition!r} as a rule given here; "
            "say it at the gate it is about"
        )
    concerns_now = gate.kind in kinds and (not decision.targets or gate.option in decision.targets)
    if concerns_now:
        # "always skip if inconclusive" said at an inconclusive gate decides this one AND stays a rule for
        # the later ones: standing is what the person said, whether or not it holds here.
        later = (
            [
                SessionRule(
                    id=f"session-rule:{next_rule}",
                    kinds=kinds,
                    targets=decision.targets,
                    when=decision.condition,
                    decision=decision,
                )
            ]
            if decision.scope == "standing"
            else []
        )
        said = f"; RULE {later[0].id} answers later {', '.join(kinds)} gates when it holds" if later else ""
        try:
            holds = Condition(decision.condition, FACTS[gate.kind]).evaluate(gate.facts)
        except EvalError as exc:
            return Answer(decision=None, echo=f"cannot evaluate {decision.condition!r} here ({exc}); gate stays open")
        if holds:
            here = _confirmed_keep(gate, Answer(decision=decision, echo=f"{decision.describe()} — condition holds now"))
            return here.model_copy(update={"rules": later, "echo": here.echo + said})
        if decision.otherwise and decision.otherwise != "ask" and decision.otherwise in ALLOWED[gate.kind]:
            other = decision.model_copy(
                update={
                    "action": decision.otherwise,
                    "condition": None,
                    "rationale": f"otherwise-branch of {decision.raw!r}",
                }
            )
            here = _confirmed_keep(
                gate, Answer(decision=other, echo=f"{other.action.upper()} — {decision.condition} is false here")
            )
            return here.model_copy(update={"rules": later, "echo": here.echo + said})
        return Answer(decision=None, rules=later, echo=f"{decision.condition} is false here; the gate stays open{said}")
    rule = SessionRule(
        id=f"session-rule:{next_rule}",
        kinds=kinds,
        targets=decision.targets,
        when=decision.condition,
        decision=decision,
    )
    echo = f"RULE {rule.id}: {decision.describe()} (applies at {', '.join(kinds)} gates)"
    if GATES[gate.kind].takes_targets:
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
