"""One Messages API call, done carefully: retries with backoff on 429/5xx/overloaded, a per-call
timeout, prompt caching on the stable prefix, and tokens and dollars journaled for every call.

`anthropic` is imported on first use: it costs seconds at import, and `signoff --help` or a
rule-brain run must not pay for it. The SDK's own retries are off so that every retry is journaled.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from langgraph.func import task

from agent.brain.schemas import strict
from agent.errors import LLMError
from agent.journal import events as ev
from agent.ledger import graph_task
from agent.models import BrainSpec, Price
from agent.store.base import JournalWriter

# $/MTok, from Anthropic's published price list (platform.claude.com, models and pricing pages, as of 2026-12;
# 5-minute cache writes). Every model the installed SDK names has a row (tests/e2e/test_claude_brain.py checks).
PRICES: dict[str, Price] = {
    "claude-mythos-preview": Price(input=25.0, output=125.0, cache_write=31.25, cache_read=2.5),
    "claude-fable-5-2": Price(input=8.0, output=40.0, cache_write=10.0, cache_read=0.2),
    "claude-mythos-5-2": Price(input=8.0, output=40.0, cache_write=10.0, cache_read=0.2),
    "claude-fable-5-1": Price(input=10.0, output=50.0, cache_write=12.5, cache_read=0.25),
    "claude-mythos-5-1": Price(input=10.0, output=50.0, cache_write=12.5, cache_read=0.25),
    "claude-fable-5": Price(input=10.0, output=50.0, cache_write=12.5, cache_read=1.0),
    "claude-mythos-5": Price(input=10.0, output=50.0, cache_write=12.5, cache_read=1.0),
    "claude-opus-5-5": Price(input=4.0, output=20.0, cache_write=5.0, cache_read=0.2),
    "claude-opus-5": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-sonnet-5-5": Price(input=2.0, output=10.0, cache_write=2.5, cache_read=0.1),
    "claude-sonnet-5": Price(input=2.0, output=10.0, cache_write=2.5, cache_read=0.2),
    # Haiku 5.5's rates hold for prompts up to 100K tokens; a longer prompt is billed at five times every rate.
    "claude-haiku-5-5": Price(
        input=0.1, output=0.5, cache_write=0.125, cache_read=0.01, long_prompt_tokens=100_000, long_prompt_factor=5.0
    ),
    "claude-opus-4-8": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-opus-4-7": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-opus-4-6": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-opus-4-5": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.5),
    "claude-sonnet-4-6": Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3),
    "claude-sonnet-4-5": Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3),
    "claude-haiku-4-5": Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1),
}
# A model we have no price for is charged at the dearest rate we know, so a budget errs on the safe side.
ASSUMED = Price(
    **{
        rate: max(getattr(p, rate) for p in PRICES.values())
        for rate in ("input", "output", "cache_write", "cache_read")
    }
)
RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}
# An attempt answered with one of these (or not at all: a timeout, a dropped connection) is one the API did not
# answer; a rate limit (429) or any 4xx is an answer, and never counts towards giving the model up.
UNANSWERED = {500, 502, 503, 504, 529}
# What these answers say cannot work for the rest of the session, whatever is asked next.
REFUSED = {401: "credentials", 403: "credentials", 404: "model"}
MAX_WAIT_S = 60.0  # a server's retry-after beyond this is not waited out in one step


def price_for(spec: BrainSpec) -> tuple[Price, str]:
    if spec.price is not None:
        return spec.price, "campaign"
    base = spec.model.removesuffix("-latest")
    base = re.sub(r"-\d{8}$", "", base)  # a dated snapshot, e.g. claude-haiku-4-5-20251001 (never fable-5-2 as fable-5)
    if base in PRICES:
        return PRICES[base], "table"
    return ASSUMED, "assumed"


def cost_usd(price: Price, usage: dict[str, int]) -> float:
    prompt = usage["input_tokens"] + usage["cache_write_tokens"] + usage["cache_read_tokens"]
    long = price.long_prompt_tokens is not None and prompt > price.long_prompt_tokens
    return (
        (price.long_prompt_factor if long else 1.0)
        * (
            usage["input_tokens"] * price.input
            + usage["output_tokens"] * price.output
            + usage["cache_write_tokens"] * price.cache_write
            + usage["cache_read_tokens"] * price.cache_read
        )
        / 1e6
    )


class LLMClient:
    def __init__(
        self,
        spec: BrainSpec,
        *,
        api_key: str,
        auth_token: str = "",
        max_output: int | None = None,
        journal: JournalWriter,
        on_cost: Callable[[float], None] = lambda _: None,
        sleep: Callable[[float], None] = time.sleep,
        base_url: str | None = None,
    ) -> None:
        self.spec = spec
        # The endpoint comes from the environment (ANTHROPIC_BASE_URL) or the caller, never from a
        # campaign file: a campaign naming a URL could otherwise send the key anywhere.
        self.base_url = base_url
        self._api_key = api_key
        self._auth_token = auth_token
        # Why the model is given up for the session, once the API refused the credentials or the model (401, 403,
        # 404) or stopped answering (`_failed_again`): every later call fails at once with that reason instead of
        # paying its retries and timeouts again.
        self.given_up: str | None = None
        self.refused = False  # given up because the API refused the key or the model (else: it stopped answering)
        # Calls in a row whose every attempt went unanswered (timed out, connection lost, 5xx). After one, the next
        # call gets one attempt; at spec.unavailable_after the model is given up. Any answer starts the count again.
        # Parallel subagents share the count: calls that overlap in time count as in a row.
        self.failed_in_a_row = 0
        # The most output tokens one call may ask for: the model's limit as the check before the session read it
        # (agent/brain/preflight.py), else the most a campaign may set.
        self.max_output = max(spec.max_tokens, max_output or 64_000)
        # What a call first asks for: the answer's tokens, and the thinking budget before it when thinking is on
        self.first_max_tokens = min(spec.max_tokens + (spec.thinking_tokens or 0), self.max_output)
        self.journal = journal
        self.on_cost = on_cost
        self.sleep = sleep
        self.price, self.price_source = price_for(spec)
        self._client: Any = None
        self._lock = threading.Lock()

    def _sdk(self) -> Any:
        if not (self._api_key or self._auth_token):
            raise LLMError("neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set in this environment")
        with self._lock:
            if self._client is None:
                import anthropic

                self._client = anthropic.Anthropic(
                    api_key=self._api_key or None,
                    auth_token=self._auth_token or None,
                    base_url=self.base_url,
                    max_retries=0,
                    timeout=self.spec.timeout_s,
                )
            return self._client

    def _give_up(self, why: str) -> None:
        with self._lock:
            if self.given_up is None:  # the first reason stands: a refusal is not overwritten by what came after
                self.given_up, self.refused = why, True

    def use_model(self, why_not: str | None) -> None:
        """None: call the model again, the count of calls in a row that failed started over. A reason: call it no
        more this session (a person or the policy chose the rule brain for the rest)."""
        with self._lock:
            if why_not is None:
                self.given_up, self.refused, self.failed_in_a_row = None, False, 0
            elif self.given_up is None:
                self.given_up = why_not

    def _answered(self) -> None:
        with self._lock:
            self.failed_in_a_row = 0

    def _failed_again(self, failure: str) -> str:
        """Count a call whose every attempt went unanswered; at `unavailable_after` in a row, give the model up
        (every later call fails at once, as after a refusal, until `use_model(None)`: the brain_unavailable gate's
        retry). The failure, saying so when it gave up."""
        with self._lock:
            self.failed_in_a_row += 1
            if self.failed_in_a_row < self.spec.unavailable_after or self.given_up is not None:
                return failure
            n = self.failed_in_a_row
            self.given_up = f"Claude unavailable: {f'{n} calls in a row' if n > 1 else 'a call'} went unanswered"
            return f"{failure}; {self.given_up}"

    def call(self, **request: Any) -> tuple[Any, dict[str, Any]]:
        """(message, usage record) for `_call`'s arguments. Raises LLMError when every attempt failed.

        Inside a graph run the call is a LangGraph task: a node that runs again after a crash gets the
        answers it already paid for back from the checkpoint instead of asking (and paying) again."""
        if graph_task() is None:
            return self._call(**request)
        import anthropic

        out = _durable_call(self, request).result()
        return anthropic.types.Message.model_validate(out["message"]), out["usage"]

    def _call(
        self,
        *,
        purpose: str,
        actor: str,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any],
        option: int | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        import anthropic

        if self.given_up is not None:
            raise LLMError(f"{purpose}: not calling the model: {self.given_up}")
        client = self._sdk()
        offered = [strict(tool) for tool in tools]  # every tool the model is offered, the read-only ones too
        thinking: dict[str, Any] = {}
        if self.spec.thinking_tokens:
            # The API refuses thinking with a forced tool: the model is asked with `auto`, and what it must call is
            # still the only way its answer is read (the caller repairs a reply that calls nothing)
            thinking = {"thinking": {"type": "enabled", "budget_tokens": self.spec.thinking_tokens}}
            tool_choice = {"type": "auto"}
        retries = 0 if self.failed_in_a_row else self.spec.max_retries  # after a call that failed: one attempt
        attempts = retries + 2  # and one for a reply cut off at max_tokens
        max_tokens = self.first_max_tokens
        carried: dict[str, int] = {}  # the tokens of a cut-off reply: paid for, so counted with the answer
        answered = False  # did the API answer any attempt of this call (a cut-off reply, a 4xx)?
        for attempt in range(1, attempts + 1):
            started = time.monotonic()
            try:
                message = client.messages.create(
                    model=self.spec.model,
                    max_tokens=max_tokens,
                    system=system,
                    messages=messages,
                    tools=offered,
                    tool_choice=tool_choice,
                    **thinking,
                )
            except anthropic.APIStatusError as exc:
                failure, status, retry_after = _status_failure(exc)
                retryable = status in RETRYABLE
                answered = answered or status not in UNANSWERED
            except anthropic.APIConnectionError as exc:
                kind = "timed out" if isinstance(exc, anthropic.APITimeoutError) else "connection failed"
                failure, status, retry_after, retryable = f"{kind}: {exc}", None, None, True
            except anthropic.AnthropicError as exc:  # a reply the SDK could not read, and the like
                failure, status, retry_after, retryable = f"{type(exc).__name__}: {exc}", None, None, False
                answered = True
            else:
                answered = True
                self._answered()  # a refusal or a cut-off reply is an answer too: the API is there
                usage = self._account(message, purpose, actor, option, attempt, time.monotonic() - started)
                cut = self._unusable(message, purpose, actor, option, attempt, max_tokens)
                if cut is None:
                    return message, {k: v + carried.get(k, 0) if isinstance(v, int) else v for k, v in usage.items()}
                carried = {k: v for k, v in usage.items() if k.endswith("_tokens")}
                max_tokens = cut  # cut off at max_tokens: asked again once with room to finish
                continue
            if status in REFUSED:
                self._give_up(f"the API refused this session's {REFUSED[status]} ({failure})")
            # The retries of failures are `retries`, one more once a cut-off reply took an attempt of them.
            if not retryable or attempt >= retries + 1 + (max_tokens != self.first_max_tokens):
                if answered:
                    self._answered()  # the API is there, whatever it said: a 400 or a 429 is no outage
                else:
                    failure = self._failed_again(failure)
                self.journal.append(
                    ev.LlmFailedEvent(purpose=purpose, option=option, attempts=attempt, error=failure), actor=actor
                )
                raise LLMError(f"{purpose}: {failure} (after {attempt} attempt(s))")
            wait = self._backoff(attempt, retry_after)
            self.journal.append(
                ev.LlmRetryEvent(
                    purpose=purpose, option=option, attempt=attempt, status=status, error=failure, wait_s=round(wait, 3)
                ),
                actor=actor,
            )
            self.sleep(wait)
        raise AssertionError("unreachable")

    def _unusable(
        self, message: Any, purpose: str, actor: str, option: int | None, attempt: int, max_tokens: int
    ) -> int | None:
        """Whether a reply the API gave cannot be used as it is. None: it can. A reply cut off at `max_tokens` the
        first time: the larger budget to ask again with (its last tool call may be cut short, so nothing in it is
        run). Raises LLMError, journaled, for one cut off again, a refusal (with the category and explanation the
        API gave) and a conversation past the model's context window: that step falls back to the rule brain."""
        reason = message.stop_reason
        if reason == "max_tokens" and max_tokens == self.first_max_tokens and max_tokens < self.max_output:
            larger = min(max_tokens * 2, self.max_output)
            self.journal.append(
                ev.LlmRetryEvent(
                    purpose=purpose,
                    option=option,
                    attempt=attempt,
                    error=f"the reply was cut off at max_tokens {max_tokens}; asking again with {larger}",
                    wait_s=0.0,
                ),
                actor=actor,
            )
            return larger
        if reason == "max_tokens":
            failure = f"the reply was cut off at max_tokens {max_tokens} (nothing in it was used)"
        elif reason == "refusal":
            details = getattr(message, "stop_details", None)
            category = getattr(details, "category", None)
            explanation = " ".join(str(getattr(details, "explanation", None) or "").split())[:300]
            self.journal.append(
                ev.LlmFailedEvent(
                    purpose=purpose,
                    option=option,
                    attempts=attempt,
                    error=f"the model refused ({category or 'no category'})"
                    + (f": {explanation}" if explanation else ""),
                    category=category,
                    explanation=explanation or None,
                ),
                actor=actor,
            )
            raise LLMError(f"{purpose}: the model refused ({category or 'no category'})")
        elif reason == "model_context_window_exceeded":
            failure = "the conversation outgrew the model's context window"
        else:
            return None
        self.journal.append(
            ev.LlmFailedEvent(purpose=purpose, option=option, attempts=attempt, error=failure), actor=actor
        )
        raise LLMError(f"{purpose}: {failure}")

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # Full jitter around an exponential step; a server's retry-after is a floor, never ignored.
        step = self.spec.backoff_s * 2 ** (attempt - 1)
        wait = random.uniform(step / 2, step)
        return min(max(wait, retry_after or 0.0), MAX_WAIT_S)

    def _account(
        self, message: Any, purpose: str, actor: str, option: int | None, attempt: int, elapsed: float
    ) -> dict[str, Any]:
        u = message.usage
        usage = {
            "input_tokens": int(u.input_tokens or 0),
            "output_tokens": int(u.output_tokens or 0),
            "cache_write_tokens": int(getattr(u, "cache_creation_input_tokens", 0) or 0),
            "cache_read_tokens": int(getattr(u, "cache_read_input_tokens", 0) or 0),
        }
        cost = cost_usd(self.price, usage)
        record = {
            **usage,
            "cost_usd": round(cost, 6),
            "price": self.price_source,
            "model": self.spec.model,
            "stop_reason": message.stop_reason,
            "attempt": attempt,
            "duration_s": round(elapsed, 3),
        }
        self.journal.append(ev.LlmCallEvent(purpose=purpose, option=option, **record), actor=actor)
        self.on_cost(cost)
        return record


@task(name="llm")
def _durable_call(client: LLMClient, request: dict[str, Any]) -> dict[str, Any]:
    message, usage = client._call(**request)
    return {"message": message.model_dump(mode="json"), "usage": usage}


def error_parts(exc: Any) -> tuple[int, str, str]:
    """An `anthropic.APIStatusError` as (HTTP status, the API's error type, its message), read defensively: the body
    is whatever the server sent."""
    body = exc.body if isinstance(exc.body, dict) else {}
    err = body.get("error")
    err = err if isinstance(err, dict) else {}
    return int(exc.status_code), str(err.get("type") or type(exc).__name__), str(err.get("message") or exc)


def _status_failure(exc: Any) -> tuple[str, int, float | None]:
    status, kind, text = error_parts(exc)
    retry_after = None
    try:
        header = exc.response.headers.get("retry-after")
        retry_after = float(header) if header is not None else None
    except (AttributeError, ValueError):
        pass
    return f"HTTP {status} {kind}: {text}", status, retry_after
