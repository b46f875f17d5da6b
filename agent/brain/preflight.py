"""Before a session with the Claude brain is made: one `models.retrieve` call checks the credentials, the model and
what it can do (its output limit, whether it is retired), and refuses in one line when any of them cannot work —
before anything runs on a host, and within `PREFLIGHT_TIMEOUT_S` when the API does not answer. Without it, a bad
key, a mistyped model or a dead API turned a Claude run into a rules run that said so only in stderr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel

from agent.errors import BrainRefused, BrainUnreachable
from agent.models import BrainSpec

PREFLIGHT_TIMEOUT_S = 5.0  # per phase (connect, read): with start-up, a bad setup is told in under 10 s
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class Credentials(BaseModel):
    """What the `anthropic` client authenticates with, from the environment only: an API key (`x-api-key`) or an
    OAuth/bearer token (`ANTHROPIC_AUTH_TOKEN`)."""

    api_key: str | None = None
    auth_token: str | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if environ is None else environ
        return cls(api_key=env.get("ANTHROPIC_API_KEY") or None, auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None)

    @property
    def present(self) -> bool:
        return bool(self.api_key or self.auth_token)


class ModelCheck(BaseModel):
    """What the API said of the model when the session was made (kept in the session's meta and journal)."""

    model: str
    display_name: str | None = None
    lifecycle: str | None = None
    max_tokens: int | None = None
    max_input_tokens: int | None = None
    thinking: bool | None = None
    structured_outputs: bool | None = None


def check_model(spec: BrainSpec, credentials: Credentials, *, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> ModelCheck:
    """The model as the API knows it, or BrainRefused (the key or the model cannot be used: fix the setup) /
    BrainUnreachable (the API did not answer usefully: try later, or use the rules brain), each one line."""
    import anthropic

    if not credentials.present:
        raise BrainRefused(f"the claude brain needs {' or '.join(KEY_VARS)} in the environment (or use --brain rules)")
    client = anthropic.Anthropic(
        api_key=credentials.api_key, auth_token=credentials.auth_token, max_retries=0, timeout=timeout_s
    )
    try:
        info = client.models.retrieve(spec.model)
    except anthropic.APIStatusError as exc:
        said = _said(exc)
        if exc.status_code in (401, 403):
            raise BrainRefused(
                f"the Anthropic API refused the credentials ({said}); check {_which(credentials)}"
            ) from None
        if exc.status_code == 404:
            raise BrainRefused(
                f"the Anthropic API does not know the model {spec.model!r} ({said}); name another with --model "
                "or brain.model"
            ) from None
        raise BrainUnreachable(
            f"the Anthropic API cannot check the model now ({said}); try again, or use --brain rules"
        ) from None
    except anthropic.APITimeoutError:
        raise BrainUnreachable(
            f"the Anthropic API did not answer within {timeout_s:g} s; check the network (or ANTHROPIC_BASE_URL), "
            "or use --brain rules"
        ) from None
    except anthropic.APIConnectionError as exc:
        raise BrainUnreachable(
            f"the Anthropic API cannot be reached ({_cause(exc)}); check the network (or ANTHROPIC_BASE_URL), "
            "or use --brain rules"
        ) from None
    except anthropic.AnthropicError as exc:
        raise BrainUnreachable(f"the Anthropic API's answer could not be read ({type(exc).__name__}: {exc})") from None
    check = ModelCheck(
        model=info.id,
        display_name=info.display_name,
        lifecycle=info.lifecycle,
        max_tokens=info.max_tokens,
        max_input_tokens=info.max_input_tokens,
        thinking=_supported(info, "thinking"),
        structured_outputs=_supported(info, "structured_outputs"),
    )
    if check.lifecycle == "retired":
        raise BrainRefused(f"the model {spec.model!r} is retired; name another with --model or brain.model")
    if check.max_tokens is not None and spec.max_tokens > check.max_tokens:
        raise BrainRefused(
            f"brain.max_tokens is {spec.max_tokens}, more than {spec.model!r} allows ({check.max_tokens}); lower it"
        )
    if spec.thinking_tokens and check.thinking is False:
        raise BrainRefused(
            f"the model {spec.model!r} cannot think (its capabilities say so); drop brain.thinking_tokens or name "
            "another model"
        )
    asked = spec.max_tokens + (spec.thinking_tokens or 0)
    if spec.thinking_tokens and check.max_tokens is not None and asked > check.max_tokens:
        raise BrainRefused(
            f"brain.max_tokens + brain.thinking_tokens is {asked}, more than {spec.model!r} allows "
            f"({check.max_tokens}); lower one"
        )
    return check


def _said(exc: object) -> str:
    """An API error as `HTTP 401 authentication_error: invalid x-api-key`, on one line."""
    from agent.brain.client import error_parts

    status, kind, text = error_parts(exc)
    return f"HTTP {status} {kind}: {' '.join(text.split())[:200]}"


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return " ".join(str(inner or exc).split())[:200] or type(exc).__name__


def _which(credentials: Credentials) -> str:
    return "ANTHROPIC_API_KEY" if credentials.api_key else "ANTHROPIC_AUTH_TOKEN"


def _supported(info: object, capability: str) -> bool | None:
    caps = getattr(info, "capabilities", None)
    found = getattr(caps, capability, None) if caps is not None else None
    supported = getattr(found, "supported", None)
    return supported if isinstance(supported, bool) else None
