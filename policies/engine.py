"""Evaluate a gate: session rules first (what a person said earlier), then the policy's rules in order; first
match wins; no match means `ask`. A session rule that decides what the policy itself decides by a guard is
recorded as the guard's decision, the stronger reason. The decision also names every rule that matched
(`matched`, the deciding one first), for the record. Pure: no I/O, no clock, so replay can re-derive every
policy decision from the journaled facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from policies.expr import Condition, EvalError, ExprError
from policies.gates import ALLOWED, FACTS, GATES, Decision, Gate, GateKind, check_facts
from policies.schema import CompiledRule, Policy
from policies.session_rules import SessionRule, kinds_for_condition

__all__ = ["Explanation", "PolicyEngine", "RuleStep", "SessionRule", "kinds_for_condition"]


class RuleStep(BaseModel):
    rule: str
    outcome: Literal["matched", "no match", "error", "not applicable"]
    detail: str = ""


class Explanation(BaseModel):
    decision: Decision
    steps: list[RuleStep]  # the rules tried up to the one that decided
    matched: list[str] = Field(default_factory=list)  # every rule that matched, the one that decided first


class PolicyEngine:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def evaluate(
        self,
        kind: GateKind,
        facts: Mapping[str, Any],
        *,
        option: int | None = None,
        session_rules: Sequence[SessionRule] = (),
    ) -> Decision:
        return self.explain(kind, facts, option=option, session_rules=session_rules).decision

    def decide(self, gate: Gate, session_rules: Sequence[SessionRule] = ()) -> Decision:
        return self.evaluate(gate.kind, gate.facts, option=gate.option, session_rules=session_rules)

    def explain(
        self,
        kind: GateKind,
        facts: Mapping[str, Any],
        *,
        option: int | None = None,
        session_rules: Sequence[SessionRule] = (),
    ) -> Explanation:
        check_facts(kind, dict(facts))
        defaults = {n: s.default for n, s in FACTS[kind].items() if s.default is not None and n not in facts}
        facts = {**facts, **defaults} if defaults else facts
        decided = self._first(kind, facts, option, session_rules)
        # The record names every rule that matched, not only the first: an audit sees when a weaker rule
        # would have decided the same gate, or a stronger one was passed over.
        rest = [r for r in self._matching(kind, facts, option, session_rules) if r != decided.decision.rule]
        # The deciding rule leads the list when its condition held (not when it failed to evaluate and the
        # gate's on_error answered, nor when a person's rule decided by its otherwise-branch).
        held = any(s.rule == decided.decision.rule and s.outcome == "matched" for s in decided.steps)
        matched = [decided.decision.rule, *rest] if decided.decision.rule and held else rest
        if matched:
            decided.decision = decided.decision.model_copy(update={"matched": matched})
        decided.matched = matched
        return decided

    def _matching(
        self, kind: GateKind, facts: Mapping[str, Any], option: int | None, session_rules: Sequence[SessionRule]
    ) -> list[str]:
        """Every rule whose condition holds, in the order rules are tried (one that fails to evaluate did not)."""
        out = [
            rule.id
            for rule in session_rules
            if kind in rule.kinds
            and not (rule.targets and option not in rule.targets)
            and rule.decision.action in ALLOWED[kind]
            and _try(rule.when or "true", kind, facts)[0] == "matched"
        ]
        out += [c.spec.id for c in self.policy.rules.get(kind, []) if _holds(c, facts)]
        return out

    def _first(
        self, kind: GateKind, facts: Mapping[str, Any], option: int | None, session_rules: Sequence[SessionRule]
    ) -> Explanation:
        """Session rules first, then the policy's rules in order: the first that matches decides.

        Where a session rule decides what one of the policy's guards (the presets' `skip-unsafe`) decides too,
        the guard is named when the policy alone decides by it: "always skip if inconclusive" and `skip-unsafe`
        both skip an unsafe, inconclusive option, and the record should give the stronger reason (`matched`
        lists both). A session rule that decides otherwise ("ask me if it's unsafe", "retry it", "skip #2 for
        now") is what the person said, and stands."""
        steps: list[RuleStep] = []
        guards = [c for c in self.policy.rules.get(kind, []) if c.spec.guard]

        def said(decision: Decision) -> Explanation:
            decision = _unsafe_kept_asks(kind, facts, decision, option)
            if session_rules and guards:
                # Only where the policy alone decides by that guard: replay re-derives a policy decision from
                # the journaled facts without session rules, and must arrive at the same rule.
                alone = self._first(kind, facts, option, ())
                if (
                    alone.decision.rule in {c.spec.id for c in guards}
                    and alone.decision.action == decision.action
                    and _plain(decision, option)
                ):
                    return Explanation(decision=alone.decision, steps=[*steps, *alone.steps])
            return Explanation(decision=decision, steps=steps)

        for rule in session_rules:
            if kind not in rule.kinds or (rule.targets and option not in rule.targets):
                continue
            if rule.decision.action not in ALLOWED[kind]:
                steps.append(
                    RuleStep(
                        rule=rule.id,
                        outcome="not applicable",
                        detail=f"{kind} takes no {rule.decision.action}",
                    )
                )
                continue
            matched, detail = _try(rule.when or "true", kind, facts)
            steps.append(RuleStep(rule=rule.id, outcome=matched, detail=detail))
            if matched == "matched":
                return said(rule.decision.model_copy(update={"by": rule.id, "rule": rule.id}))
            other = rule.decision.otherwise
            if matched == "no match" and other and other != "fall_through" and other in ALLOWED[kind]:
                # "skip #2 if it's unsafe, otherwise continue": the person said what to do either way.
                return said(
                    rule.decision.model_copy(
                        update={"action": other, "condition": None, "by": rule.id, "rule": rule.id, "scope": "once"}
                    )
                )
        gate_policy = self.policy.gate(kind)
        for compiled in self.policy.rules.get(kind, []):
            spec = compiled.spec
            try:
                hit = compiled.condition.evaluate(facts)
            except EvalError as exc:
                steps.append(RuleStep(rule=spec.id, outcome="error", detail=str(exc)))
                # An evaluation error never approves anything: the gate's on_error answer applies.
                decision = Decision(
                    action=gate_policy.on_error,
                    rule=spec.id,
                    by=f"policy:{spec.id}",
                    rationale=f"rule {spec.id} failed to evaluate: {exc}",
                )
                return Explanation(decision=decision, steps=steps)
            if hit:
                steps.append(RuleStep(rule=spec.id, outcome="matched", detail=spec.when))
                return Explanation(decision=self._decided(compiled), steps=steps)
            steps.append(RuleStep(rule=spec.id, outcome="no match", detail=f"{spec.when} is false"))
        if (unnamed := GATES[kind].unnamed) is not None and not self.policy.rules.get(kind):
            action, why = unnamed
            return Explanation(
                decision=Decision(action=action, rule=None, by=f"policy:no-{kind}-rules", rationale=why), steps=steps
            )
        return Explanation(
            decision=Decision(action="ask", rule=None, by="policy:no-rule", rationale="no rule matched"),
            steps=steps,
        )

    @staticmethod
    def _decided(compiled: CompiledRule) -> Decision:
        spec = compiled.spec
        return Decision(
            action=spec.decide,
            then=spec.then,
            scope=spec.scope,
            rule=spec.id,
            by=f"policy:{spec.id}",
            rationale=spec.note,
        )


def _plain(decision: Decision, option: int | None) -> bool:
    """The decision does no more than its action at this gate: not "for now" (a skip that defers), not for
    some hosts only, not about other options — so a guard deciding the same action decides the same thing."""
    return (
        decision.scope != "for_now"
        and not decision.except_hosts
        and all(t == option for t in decision.targets)
        and decision.otherwise is None
    )


def _holds(compiled: CompiledRule, facts: Mapping[str, Any]) -> bool:
    """The rule's condition holds (one that fails to evaluate does not)."""
    try:
        return bool(compiled.condition.evaluate(facts))
    except EvalError:
        return False


_cache: dict[tuple[str, GateKind], Condition | ExprError] = {}


def _try(
    source: str, kind: GateKind, facts: Mapping[str, Any]
) -> tuple[Literal["matched", "no match", "error", "not applicable"], str]:
    key = (source, kind)
    if key not in _cache:
        try:
            _cache[key] = Condition(source, FACTS[kind])
        except ExprError as exc:
            _cache[key] = exc
    compiled = _cache[key]
    if isinstance(compiled, ExprError):
        return "not applicable", str(compiled)
    try:
        return ("matched" if compiled.evaluate(facts) else "no match"), source
    except EvalError as exc:
        return "error", str(exc)


def _unsafe_kept_asks(kind: GateKind, facts: Mapping[str, Any], decision: Decision, option: int | None) -> Decision:
    """A person's session rule never keeps an option the assessment calls unsafe by itself: said at the
    gate, that keep needs a confirmation, so a rule given earlier, which nobody confirms, asks instead."""
    if kind != "safety" or facts.get("verdict") != "unsafe" or decision.action not in ("continue", "approve"):
        return decision
    return Decision(
        action="ask",
        by=decision.by,
        rule=decision.rule,
        rationale=f"{decision.rule} would keep #{option}, which the assessment calls unsafe; a person confirms that",
    )
