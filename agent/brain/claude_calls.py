"""The bottom of ClaudeBrain: its client, budget and model, whether the model may be called, and the one forced
tool call (with one repair round) every answer is made of."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.brain import GivenUp
from agent.brain.client import LLMClient
from agent.brain.messages import blocks_of, one_line, tool_result
from agent.brain.prompts import SYSTEM, campaign_brief
from agent.brain.rules import RuleBrain
from agent.errors import LLMError, StepFailed
from agent.journal import events as ev
from agent.models import BrainSpec, Campaign
from agent.store.base import JournalWriter

T = TypeVar("T", bound=BaseModel)


class ClaudeCalls:
    """The model's calls; `ClaudeBrain` gives the four answers over them."""

    def __init__(
        self,
        spec: BrainSpec,
        *,
        campaign: Campaign,
        journal: JournalWriter,
        api_key: str,
        auth_token: str = "",
        max_output: int | None = None,
        on_cost: Callable[[float], None] = lambda _: None,
        over_budget: Callable[[], str | None] = lambda: None,
        redact: Callable[[str], str] = str,
        base_url: str | None = None,
    ) -> None:
        self.spec = spec
        self.name = f"claude/{spec.model}"
        self.journal = journal
        self.fallback = RuleBrain()
        self.over_budget = over_budget
        self.redact = redact  # model text is journaled; it may quote secrets it read on a host
        self.llm = LLMClient(
            spec,
            api_key=api_key,
            auth_token=auth_token,
            max_output=max_output,
            journal=journal,
            on_cost=on_cost,
            base_url=base_url,
        )
        self._api_key_set = bool(api_key or auth_token)
        # Tools, then this system prompt, form the prefix every call shares: cached once, read after.
        self.system = [
            {"type": "text", "text": SYSTEM},
            {"type": "text", "text": campaign_brief(campaign), "cache_control": {"type": "ephemeral"}},
        ]

    def unavailable(self) -> GivenUp | None:
        why = self.llm.given_up
        if why is None:
            return None
        refused = self.llm.refused
        failed = 0 if refused else self.llm.failed_in_a_row
        return GivenUp(why=why, cause="refused" if refused else "unanswered", failed_calls=failed)

    def use_model(self, why_not: str | None) -> None:
        self.llm.use_model(why_not)

    # ------------------------------------------------------------------ one forced call, one repair

    def _forced(
        self,
        purpose: str,
        actor: str,
        option: int | None,
        messages: list[dict[str, Any]],
        tool: dict[str, Any],
        model: type[T],
        check: Callable[[T], None],
    ) -> T:
        budget = self.over_budget()
        if budget:
            raise LLMError(f"not calling the model: {budget}")
        messages = list(messages)
        error = ""
        for attempt in (1, 2):
            message, _ = self.llm.call(
                purpose=purpose,
                actor=actor,
                option=option,
                system=self.system,
                messages=messages,
                tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]},
            )
            blocks = blocks_of(message)
            call = next((b for b in blocks if b["type"] == "tool_use" and b["name"] == tool["name"]), None)
            if call is None:
                error = f"the reply did not call {tool['name']}"
            else:
                try:
                    value = model.model_validate(call["input"])
                    check(value)
                    return value
                except (ValidationError, ValueError) as exc:
                    error = one_line(exc)
            self.journal.append(
                ev.LlmInvalidEvent(purpose=purpose, option=option, attempt=attempt, error=error), actor=actor
            )
            if attempt == 1:
                if blocks:  # the API refuses an assistant turn with no content in the next request
                    messages.append({"role": "assistant", "content": blocks})
                fix = f"That input is invalid: {error}. Call {tool['name']} again with corrected input."
                messages.append(
                    {
                        "role": "user",
                        "content": [tool_result(call, fix, True)] if call else [{"type": "text", "text": fix}],
                    }
                )
        raise StepFailed(f"{purpose}: {tool['name']} input invalid after one repair: {error}")
