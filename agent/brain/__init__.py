"""Reasoning behind one small protocol: `RuleBrain` (deterministic, offline) and `ClaudeBrain`
(the Anthropic API, imported only when chosen)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from agent.models import Assessment, Campaign, Finding, Option, Plan
from policies.gates import Decision, Gate

if TYPE_CHECKING:
    from agent.brain.toolbox import Toolbox


class GivenUp(BaseModel):
    """Why a brain stopped calling its model for the session: what the brain_unavailable gate asks about."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    why: str
    cause: Literal["unanswered", "refused"]  # calls in a row went unanswered, or the API refused the key or model
    failed_calls: int  # the calls in a row that went unanswered (0 after a refusal)


class Brain(Protocol):
    name: str

    def unavailable(self) -> GivenUp | None:
        """Why the model was given up for this session; None while it is called (or there is none)."""
        ...

    def use_model(self, why_not: str | None) -> None:
        """None: call the model again from the next step on, the count of failures started over. A reason: call it
        no more this session (the rule brain decides the rest), as a person or the policy chose."""
        ...

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan: ...

    def investigate(self, option: Option, tools: Toolbox) -> Finding: ...

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment: ...

    def interpret(self, text: str, gate: Gate) -> Decision: ...
