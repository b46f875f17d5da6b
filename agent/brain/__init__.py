"""Reasoning behind one small protocol: `RuleBrain` (deterministic, offline) and `ClaudeBrain`
(the Anthropic API, imported only when chosen)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent.models import Assessment, Campaign, Finding, Option, Plan
from policies.gates import Decision, Gate

if TYPE_CHECKING:
    from agent.brain.toolbox import Toolbox


class Brain(Protocol):
    name: str

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan: ...

    def investigate(self, option: Option, tools: Toolbox) -> Finding: ...

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment: ...

    def interpret(self, text: str, gate: Gate) -> Decision: ...
