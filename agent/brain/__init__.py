"""Reasoning behind one small protocol: `RuleBrain` (deterministic, offline) and, later, `ClaudeBrain`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agent.models import Assessment, Campaign, Finding, Option, Plan, Probe
from policies.gates import Decision, Gate
from tools.transport import CommandResult

ProbeRunner = Callable[[Probe], list[CommandResult]]


class Brain(Protocol):
    name: str

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan: ...

    def investigate(self, option: Option, run_probe: ProbeRunner) -> Finding: ...

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment: ...

    def interpret(self, text: str, gate: Gate) -> Decision: ...
