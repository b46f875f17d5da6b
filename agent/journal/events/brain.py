"""The model behind the brain: its calls, retries, invalid answers and fallbacks."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from agent.journal.events.base import Event, OptionId


class BrainFallbackEvent(Event):
    kind: Literal["brain.fallback"] = "brain.fallback"
    step: str
    option: OptionId = None
    error: str | None = None


class LlmCallEvent(Event):
    kind: Literal["llm.call"] = "llm.call"
    purpose: str | None = None
    option: OptionId = None
    model: str | None = None
    cost_usd: float = 0.0


class LlmRetryEvent(Event):
    kind: Literal["llm.retry"] = "llm.retry"
    purpose: str | None = None
    option: OptionId = None
    attempt: int | None = None
    status: int | None = None
    wait_s: float | None = None
    error: str | None = None


class LlmInvalidEvent(Event):
    kind: Literal["llm.invalid"] = "llm.invalid"
    purpose: str | None = None
    option: OptionId = None
    attempt: int | None = None
    error: str | None = None


class LlmFailedEvent(Event):
    kind: Literal["llm.failed"] = "llm.failed"
    purpose: str | None = None
    option: OptionId = None
    attempts: int | None = None
    error: str | None = None
    # A refusal: the policy category and the explanation the API gave (`stop_details`), when it gave them
    category: str | None = None
    explanation: str | None = None
