"""A scripted Anthropic Messages API server on 127.0.0.1, for the real `anthropic` client.

It speaks `/v1/messages` as the API does: `tool_use` and `text` content blocks, `stop_reason`,
`usage` with cache fields, and error bodies (`overloaded_error` on 529, `api_error` on 500).
What it answers is decided by a *script*: a function from the request body to a `Reply`, so
parallel subagents get answers that depend on what they asked, not on arrival order.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    status: int = 200
    error_type: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    delay_s: float = 0.0
    stop_details: dict[str, Any] | None = None  # a refusal's category and explanation


def tool_use(name: str, args: dict[str, Any], *, text: str | None = None, **usage: int) -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": name, "input": args})
    return Reply(content=blocks, stop_reason="tool_use", usage=usage)


def error(status: int, error_type: str, message: str = "scripted error") -> Reply:
    return Reply(status=status, error_type=error_type, content=[{"message": message}])


_ids = itertools.count(1)
Script = Callable[[dict[str, Any]], Reply]


# What `GET /v1/models/{id}` says of a model by default (the API's ModelInfo, trimmed to what signoff reads).
MODEL_INFO: dict[str, Any] = {
    "type": "model",
    "display_name": "Scripted model",
    "created_at": "2026-01-01T00:00:00Z",
    "lifecycle": "active",
    "max_tokens": 64_000,
    "max_input_tokens": 200_000,
}


class MessagesServer:
    def __init__(
        self,
        script: Script,
        *,
        delay_s: float = 0.0,
        models: dict[str, dict[str, Any]] | None = None,
        api_key: str | None = None,
        models_delay_s: float = 0.0,
    ) -> None:
        self.script = script
        self.delay_s = delay_s  # per reply: lets a test see whether calls overlap
        # The models `GET /v1/models/{id}` knows, with what it says of each (None: any `claude-*` id, as MODEL_INFO);
        # `api_key`: the only key it takes, as the API does (None: any); `models_delay_s`: a models API that hangs.
        self.models = models
        self.api_key = api_key
        self.models_delay_s = models_delay_s
        self.model_requests: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._cached: set[str] = set()  # prompt-cache prefixes seen, as the API's 5-minute cache would
        self.signatures: set[str] = set()  # the thinking blocks' signatures this server gave out
        self.in_flight = 0
        self.max_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:  # quiet test output
                pass

            def _refused(self) -> bool:
                """The API's answer to a wrong key: 401, before anything else is looked at."""
                given = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix(
                    "Bearer "
                )
                if server.api_key is None or given == server.api_key:
                    return False
                self._send(
                    401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
                )
                return True

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if not path.startswith("/v1/models/"):
                    self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                    return
                model = path.removeprefix("/v1/models/")
                server.model_requests.append(model)
                threading.Event().wait(server.models_delay_s)
                if self._refused():
                    return
                known = server.models
                info = known.get(model) if known is not None else ({} if model.startswith("claude-") else None)
                if info is None:
                    self._send(
                        404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}}
                    )
                    return
                self._send(200, {**MODEL_INFO, "id": model, **info})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self._refused():
                    return
                invalid = _invalid_request(body) or server._unsigned(body)
                if invalid is not None:  # what the real API refuses before any model sees it
                    self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": invalid}})
                    return
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                    return
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    cache = server._cache_usage(body)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.script(body)
                    threading.Event().wait(reply.delay_s or server.delay_s)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if reply.status != 200:
                    message = reply.content[0]["message"] if reply.content else "error"
                    self._send(reply.status, {"type": "error", "error": {"type": reply.error_type, "message": message}})
                    return
                usage = {"input_tokens": 300, "output_tokens": 120, **cache, **reply.usage}
                content = reply.content
                thinks = (body.get("thinking") or {}).get("type") == "enabled"
                if thinks and not (content and content[0].get("type") in ("thinking", "redacted_thinking")):
                    # a thinking model's reply opens with its thinking, signed; it must come back as it was sent
                    with server._lock:
                        signature = f"sig-{next(_ids):06d}"
                        server.signatures.add(signature)
                    content = [
                        {"type": "thinking", "thinking": "(scripted reasoning)", "signature": signature},
                        *content,
                    ]
                self._send(
                    200,
                    {
                        "id": f"msg_{next(_ids):06d}",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", "scripted"),
                        "content": content,
                        "stop_reason": reply.stop_reason,
                        "stop_details": reply.stop_details,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_{next(_ids):06d}")
                if status in (429, 529):
                    self.send_header("retry-after", "0")
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away, as it does from the real API

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _unsigned(self, body: dict[str, Any]) -> str | None:
        """A thinking block sent back that this server did not sign (changed, or made up): the API refuses it."""
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "thinking" and block.get("signature") not in self.signatures:
                    return f"messages.{i}: Invalid `signature` in `thinking` block"
        return None

    def _cache_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """The prefix up to the last `cache_control` mark is written once, then read."""
        system = body.get("system")
        if not isinstance(system, list) or not any("cache_control" in b for b in system):
            return {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        key = json.dumps([body.get("tools"), system], sort_keys=True)
        if key in self._cached:
            return {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 2400}
        self._cached.add(key)
        return {"cache_creation_input_tokens": 2400, "cache_read_input_tokens": 0}

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> MessagesServer:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _invalid_request(body: dict[str, Any]) -> str | None:
    """Why the API would refuse this request with a 400 (None: it would take it): an assistant turn with no content
    anywhere but last, extended thinking together with a forced tool, and a strict tool whose schema uses what
    strict tools cannot (an object open to other properties, lengths, ranges)."""
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("strict"):
            problem = strict_schema_problem(tool.get("input_schema") or {}, "input_schema")
            if problem:
                return f"tools.{i}.custom.{problem}"
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        empty = message.get("content") in ("", [], None)
        if empty and message.get("role") == "assistant" and i < len(messages) - 1:
            return (
                f"messages.{i}: all messages must have non-empty content except for the optional final assistant "
                + ("message")
            )
    thinking = body.get("thinking") or {}
    if thinking.get("type") in ("enabled", "adaptive") and (body.get("tool_choice") or {}).get("type") in (
        "tool",
        "any",
    ):
        return "Thinking may not be enabled when tool_choice forces tool use."
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens") or 0
        if budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= (body.get("max_tokens") or 0):
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
        assistant = [m for m in messages if m.get("role") == "assistant"]
        last = assistant[-1]["content"] if assistant else []
        uses_tools = isinstance(last, list) and any(b.get("type") == "tool_use" for b in last)
        if uses_tools and last[0].get("type") not in ("thinking", "redacted_thinking"):
            return (
                "messages: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is "
                "enabled, a final `assistant` message must start with a thinking block."
            )
    return None


# What a strict tool's schema may not hold (the API's structured-outputs limits).
_NOT_IN_STRICT = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "maxItems", "uniqueItems", "minProperties", "maxProperties", "patternProperties",
}  # fmt: skip


def strict_schema_problem(node: Any, where: str) -> str | None:
    if isinstance(node, list):
        return next((p for i, v in enumerate(node) if (p := strict_schema_problem(v, f"{where}.{i}"))), None)
    if not isinstance(node, dict):
        return None
    used = sorted(_NOT_IN_STRICT & node.keys())
    if used:
        return f"{where}: '{used[0]}' is not supported for strict tools"
    if node.get("minItems", 0) not in (0, 1):
        return f"{where}: minItems values other than 0 or 1 are not supported for strict tools"
    if node.get("type") == "object" and node.get("additionalProperties") is not False:
        return f"{where}: For 'strict' tools, 'additionalProperties' must be explicitly set to false"
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                problem = strict_schema_problem(sub, f"{where}.{key}.{name}")
                if problem:
                    return problem
        elif key in ("items", "anyOf", "allOf", "oneOf", "not"):
            problem = strict_schema_problem(value, f"{where}.{key}")
            if problem:
                return problem
    return None


# ---- reading requests, for scripts and assertions


def forced_tool(body: dict[str, Any]) -> str | None:
    """The tool the request makes the model call: the one named, or with thinking (tool choice `auto`) the only
    one offered, which a model asked to answer with it calls."""
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return choice.get("name")
    tools = body.get("tools") or []
    return tools[0]["name"] if choice.get("type") == "auto" and len(tools) == 1 else None


def all_text(body: dict[str, Any]) -> str:
    """Every string in the request's system prompt and messages, joined (for routing and checks)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(body.get("system"))
    walk(body.get("messages"))
    return "\n".join(out)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The texts of the tool_result blocks the client has sent so far, in order."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(b.get("text", "") for b in inner)
                found.append(str(inner))
    return found
