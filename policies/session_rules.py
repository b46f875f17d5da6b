"""What a person said at one gate that decides later ones: a session rule, and the gate kinds its condition can fire
at. Apart from the engine so that reading a one-line answer (`signoff decision parse`, the runner's answer intake)
does not load the policy-file schema."""

from __future__ import annotations

from pydantic import BaseModel, Field

from policies.expr import Condition, ExprError
from policies.gates import FACTS, GATE_KINDS, Decision, GateKind


class SessionRule(BaseModel):
    """A conditional or standing decision a person gave, waiting for the gate it applies to."""

    id: str  # "session-rule:<n>"
    kinds: list[GateKind]
    targets: list[int] = Field(default_factory=list)
    when: str | None = None
    decision: Decision


def kinds_for_condition(condition: str | None) -> list[GateKind]:
    """The gate kinds whose facts a condition type-checks against (where a session rule can fire)."""
    if condition is None:
        return list(GATE_KINDS)
    kinds: list[GateKind] = []
    for kind in GATE_KINDS:
        try:
            Condition(condition, FACTS[kind])
        except ExprError:
            continue
        kinds.append(kind)
    return kinds
