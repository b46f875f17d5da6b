"""Gates and how they were decided, session rules, and the final report."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from agent.journal.events.base import Event, Json, OptionId


class GateOpenedEvent(Event):
    kind: Literal["gate.opened"] = "gate.opened"
    gate: str
    gate_kind: str
    option: OptionId = None
    interrupt: str | None = None
    question: str = ""
    facts: dict[str, Json] = Field(default_factory=dict)
    recommendation: Json = None
    note: str | None = None
    recovered: bool | None = None  # journaled again after a crash (written only when true)

    @classmethod
    def of(cls, gate: Mapping[str, Any], *, interrupt: str | None = None, recovered: bool = False) -> GateOpenedEvent:
        """The one way a gate is journaled as opened, from the gate as its node made it (`policies.gates.Gate` as
        JSON: the interrupt's, or the state's record of a gate a policy decided). Only the fields given are written,
        so the bytes are what they always were: a gate a person is asked at (`interrupt`) has its recommendation,
        null or not; one a policy decided has neither; `recovered` is written only when true."""
        fields: dict[str, Any] = {
            "gate": gate["id"],
            "gate_kind": gate["kind"],
            "option": gate.get("option"),
            "question": gate["question"],
            "facts": gate["facts"],
        }
        if interrupt is not None:
            fields |= {"interrupt": interrupt, "recommendation": gate.get("recommendation")}
        if recovered:
            fields["recovered"] = True
        return cls.model_validate(fields)


class DecisionEvent(Event):
    kind: Literal["decision"] = "decision"
    gate: str
    gate_kind: str | None = None
    option: OptionId = None
    interrupt: str | None = None
    by: str | None = None
    decision: dict[str, Json] | None = None  # None: the one-liner was understood but decided nothing yet
    raw: str | None = None
    rule: str | None = None
    echo: str | None = None
    parsed: dict[str, Json] | None = None  # what the one-liner was read as, before the gate's own checks
    opened: str | None = None  # when the gate opened (a deadline's answer)
    policy_sha256: str | None = None
    recovered: bool | None = None
    for_gate: str | None = None  # the gate the answer was given for (a dialog's, `decide --gate`), when it named one


class DecisionRejectedEvent(Event):
    kind: Literal["decision.rejected"] = "decision.rejected"
    gate: str | None = None
    gate_kind: str | None = None
    by: str | None = None
    raw: str | None = None
    error: str | None = None
    for_gate: str | None = None  # the gate the refused answer was given for, when it named one


class RuleAddedEvent(Event):
    kind: Literal["rule.added"] = "rule.added"
    gate: str | None = None
    by: str | None = None
    raw: str | None = None
    rule: Json = None


class ReportEvent(Event):
    kind: Literal["report"] = "report"
    campaign: str | None = None
    options: list[dict[str, Json]] = Field(default_factory=list)
    gates: list[dict[str, Json]] = Field(default_factory=list)
    kept: list[int] = Field(default_factory=list)
    deferred: list[Json] = Field(default_factory=list)
    estimated_gain_pct: float | None = None
    error: str | None = None
    confirmation: dict[str, Json] | None = None  # the goal as measured at the end (goal.confirmed), when it was


class GoalConfirmedEvent(Event):
    """The end-of-campaign A/B of the final configuration against the start (agent/nodes/confirm.py): the goal judged
    by its CI, and whether the kept options stack. `skipped` says why none ran; `error` why it stopped short."""

    kind: Literal["goal.confirmed"] = "goal.confirmed"
    kept: list[int] = Field(default_factory=list)
    rounds: int | None = None
    level: float | None = None
    goal: dict[str, Json] | None = None
    summary: str | None = None
    ab: dict[str, Json] | None = None
    singles: list[dict[str, Json]] = Field(default_factory=list)  # each kept option's gain on its own vs the start
    interactions: list[dict[str, Json]] = Field(default_factory=list)
    interaction_note: str | None = None
    skipped: str | None = None
    error: str | None = None


class NotifySentEvent(Event):
    """One attempt to tell someone that a gate waits for a person (agent/run/notify.py). `target` is
    redacted (scheme://host[:port] and a path hint, or the command); `status` is the HTTP status,
    `exit` a command's exit code; `error` one line when `ok` is false."""

    kind: Literal["notify.sent"] = "notify.sent"
    gate: str
    interrupt: str | None = None
    target: str = ""
    ok: bool = False
    status: int | None = None
    exit: int | None = None
    error: str | None = None
    duration_s: float | None = None
