"""Investigation subagents and the plan they inform."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent.journal.events.base import Event, Json, OptionId


class SubagentStartedEvent(Event):
    kind: Literal["subagent.started"] = "subagent.started"
    option: int
    brain: str | None = None
    probes: int | None = None


class SubagentToolEvent(Event):
    kind: Literal["subagent.tool"] = "subagent.tool"
    option: int
    tool: str
    host: str | None = None


class SubagentTurnEvent(Event):
    kind: Literal["subagent.turn"] = "subagent.turn"
    option: int
    turn: int
    said: str | None = None
    tools: list[Json] = Field(default_factory=list)


class PermissionRequestedEvent(Event):
    kind: Literal["permission.requested"] = "permission.requested"
    option: OptionId = None
    host: str | None = None
    command: str
    why: str | None = None


class FindingEvent(Event):
    kind: Literal["finding"] = "finding"
    option: int
    feasible: bool | None = None
    summary: str | None = None
    blockers: list[Json] = Field(default_factory=list)
    hazards: list[Json] = Field(default_factory=list)
    model_only: bool | None = None  # a no-go no failed probe is behind: only a model's reading found it


class PlanEvent(Event):
    kind: Literal["plan"] = "plan"
    brain: str | None = None
    order: list[int] = Field(default_factory=list)
    rationale: Json = None
    proposals: list[Json] = Field(default_factory=list)


class PlanRerankedEvent(Event):
    kind: Literal["plan.reranked"] = "plan.reranked"
    brain: str | None = None
    before: list[int] = Field(default_factory=list)
    after: list[int] = Field(default_factory=list)
