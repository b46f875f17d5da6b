"""The Messages API's shapes as the brain handles them: content blocks, tool results, cache marks, one-line errors."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from agent.errors import LLMError, StepFailed


def cache_marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with a cache breakpoint on its newest block, so each turn reads the previous
    turns from the cache instead of paying for them again."""
    if not messages:
        return messages
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return [*messages[:-1], {**last, "content": blocks}]


def blocks_of(message: Any) -> list[dict[str, Any]]:
    """The reply's content as plain request blocks (what goes back in the next turn)."""
    out: list[dict[str, Any]] = []
    for b in message.content:
        if b.type == "text":
            out.append({"type": "text", "text": b.text})
        elif b.type == "tool_use":
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
        elif b.type == "thinking":  # sent back as it came, signature and all: the API checks it
            out.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif b.type == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": b.data})
    return out


def tool_result(call: dict[str, Any] | None, text: str, is_error: bool) -> dict[str, Any]:
    assert call is not None
    return {"type": "tool_result", "tool_use_id": call["id"], "content": text, "is_error": is_error}


def said_in(blocks: list[dict[str, Any]]) -> str:
    text = " ".join(b["text"] for b in blocks if b["type"] == "text").strip()
    return text[:300]


def why(exc: Exception) -> str:
    if isinstance(exc, LLMError | StepFailed):
        return str(exc)
    return f"internal error {type(exc).__name__}: {one_line(exc)}"


def one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()[:5])
    return " ".join(str(exc).split())
