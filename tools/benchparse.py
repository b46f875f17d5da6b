"""Benchmark output → one normalized record, whichever tool produced it.

Throughput in vLLM/SGLang results counts successful requests only, so failures lower it; a run with a few
failed requests stays a data point and its counts are kept (`BenchRecord.requests`), a run where most failed
does not (`BenchRecord.invalid_reason`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

ParserName = Literal["vllm-json", "sglang-jsonl", "json-path", "regex"]

_LATENCY_KEYS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e", "e2e_latency": "e2e"}


class BenchParseError(ValueError):
    """The output could not be read as a benchmark result; the message says why."""


RECORD_METRICS = ("output_tok_s", "total_tok_s", "req_s", "duration_s", "request_goodput")


def _load(data: dict[str, Any]) -> dict[str, float]:
    out = {}
    for name, key in (("concurrency", "max_concurrency"), ("request_rate", "request_rate")):
        value = _num(data, key)  # vLLM and SGLang write "inf" or null for an unbounded rate or concurrency
        if value is not None and math.isfinite(value) and value > 0:
            out[name] = value
    return out


class BenchRecord(BaseModel):
    tool: str
    expected: int | None = None
    completed: int | None = None
    failed: int | None = None
    output_tok_s: float | None = None
    total_tok_s: float | None = None
    req_s: float | None = None
    duration_s: float | None = None
    request_goodput: float | None = None  # requests/s that met the tool's own SLOs (vLLM --goodput)
    latency_ms: dict[str, float] = Field(default_factory=dict)  # e.g. "p99_tpot", "median_ttft"
    error_samples: list[str] = Field(default_factory=list)
    # The load the tool says it generated: "concurrency" (its max concurrency) and "request_rate" (req/s,
    # absent for an unbounded rate). A sweep checks each run against the level it asked for.
    load: dict[str, float] = Field(default_factory=dict)

    def metric(self, name: str) -> float | None:
        if name in RECORD_METRICS:
            return getattr(self, name)
        return self.latency_ms.get(name)

    def requests(self) -> tuple[int, int] | None:
        """(attempted, failed) when the tool counted its requests, else None."""
        if self.failed is None:
            return None
        if self.completed is not None:
            return self.completed + self.failed, self.failed
        return (self.expected, self.failed) if self.expected is not None else None

    def invalid_reason(self) -> str | None:
        """Why this run may not count as an A/B data point (None when it may).

        A run with a few failed requests stays a data point: its throughput counts only the requests that
        succeeded, so failures lower it, which is what the server's users see, and the failures themselves are
        compared arm against arm (tools/failures.py) instead of one of them voiding the run. A run where most
        requests failed measured the error path, not the server, and a run that did not send the requests it
        was asked to is not the benchmark the campaign describes: neither is a data point."""
        sent = None if self.completed is None else self.completed + (self.failed or 0)
        if self.expected is not None and sent != self.expected:
            failed = f" ({self.failed} failed)" if self.failed else ""
            return f"completed {self.completed} of {self.expected} requests{failed}"
        if (counts := self.requests()) is not None and counts[1] * 2 > counts[0]:
            return f"{counts[1]} of {counts[0]} requests failed: the run measured the failures, not the server"
        if self.output_tok_s is not None and (not math.isfinite(self.output_tok_s) or self.output_tok_s <= 0):
            return f"output throughput is {self.output_tok_s}"
        return None

    def usable(self, metric: str) -> tuple[float | None, str | None]:
        """The metric's value if it can be a data point (finite and positive), else why not."""
        value = self.metric(metric)
        if value is None:
            return None, f"metric {metric!r} missing from the result"
        if not math.isfinite(value) or value <= 0:
            return None, f"metric {metric!r} is {value}"
        return value, None


def _last_json_object(text: str) -> dict[str, Any]:
    """The last line of `text` that parses as a JSON object (tools print logs before the result)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)  # stdlib on purpose: SGLang writes bare Infinity/NaN
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BenchParseError(f"result is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
        if isinstance(value, dict):
            return value
    snippet = stripped[:80].replace("\n", " ") or "<empty>"
    raise BenchParseError(f"no JSON result object in the output (starts with: {snippet!r})")


def _num(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _int(data: dict[str, Any], key: str) -> int | None:
    value = _num(data, key)
    return None if value is None or not math.isfinite(value) else int(value)


def _latencies(data: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in data.items():
        m = re.fullmatch(r"(mean|median|std|p\d+(?:\.\d+)?)_([a-z0-9_]+?)_ms", key)
        if not m or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        stat, metric = m.groups()
        if metric in _LATENCY_KEYS and math.isfinite(value):
            out[f"{stat}_{_LATENCY_KEYS[metric]}"] = float(value)
    return out


def parse_vllm(text: str, expected: int | None) -> BenchRecord:
    data = _last_json_object(text)
    if "output_throughput" not in data or "completed" not in data:
        raise BenchParseError("not a vLLM result: missing 'output_throughput' or 'completed'")
    completed = _int(data, "completed")
    failed = _int(data, "failed")
    if failed is None and expected is not None and completed is not None:
        failed = max(expected - completed, 0)  # legacy benchmark_serving.py has no 'failed'
    raw_errors = data.get("errors")
    errors = [e for e in raw_errors if isinstance(e, str) and e] if isinstance(raw_errors, list) else []
    return BenchRecord(
        tool="vllm",
        expected=expected,
        completed=completed,
        failed=failed,
        output_tok_s=_num(data, "output_throughput"),
        total_tok_s=_num(data, "total_token_throughput"),
        req_s=_num(data, "request_throughput"),
        duration_s=_num(data, "duration"),
        # vLLM wrote the key as "request_goodput:" (with the colon) for several releases
        request_goodput=_num(data, "request_goodput") if "request_goodput" in data else _num(data, "request_goodput:"),
        latency_ms=_latencies(data),
        error_samples=errors[:10],
        load=_load(data),
    )


def parse_sglang(text: str, expected: int | None) -> BenchRecord:
    data = _last_json_object(text)
    if "output_throughput" not in data or "completed" not in data:
        raise BenchParseError("not an SGLang result: missing 'output_throughput' or 'completed'")
    completed = _int(data, "completed")
    failed = None
    if expected is not None and completed is not None:
        failed = max(expected - completed, 0)  # SGLang never writes 'failed'
    return BenchRecord(
        tool="sglang",
        expected=expected,
        completed=completed,
        failed=failed,
        output_tok_s=_num(data, "output_throughput"),
        total_tok_s=_num(data, "total_throughput"),
        req_s=_num(data, "request_throughput"),
        duration_s=_num(data, "duration"),
        latency_ms=_latencies(data),
        load=_load(data),
    )


def _dig(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            raise BenchParseError(f"path {path!r} not found in the result")
    return data


def parse_fields(
    text: str, expected: int | None, *, paths: dict[str, str] | None, patterns: dict[str, str] | None
) -> BenchRecord:
    """Generic extractors declared in the campaign: JSON paths or regexes with one group."""
    values: dict[str, float] = {}
    if paths is not None:
        data = _last_json_object(text)
        for field, path in paths.items():
            raw = _dig(data, path)
            try:
                values[field] = float(raw)
            except (TypeError, ValueError) as exc:
                raise BenchParseError(f"{path!r} is {raw!r}, not a number") from exc
    for field, pattern in (patterns or {}).items():
        m = re.search(pattern, text, re.MULTILINE)
        if not m:
            raise BenchParseError(f"pattern for {field!r} did not match the output")
        try:
            values[field] = float(m.group(1))
        except (IndexError, ValueError) as exc:
            raise BenchParseError(f"pattern for {field!r} captured {m.group(0)!r}, not a number") from exc
    record = BenchRecord(tool="generic", expected=expected)
    for field, value in values.items():
        if not math.isfinite(value):
            raise BenchParseError(f"{field} is {value}, not a finite number")
        if field in {"completed", "failed"}:
            setattr(record, field, int(value))
        elif field in RECORD_METRICS:
            setattr(record, field, value)
        else:
            record.latency_ms[field] = value
    if record.completed is None and expected is not None and record.output_tok_s is not None:
        record.completed = expected  # the generic tool reports no request counts
    if record.failed is None and record.completed is not None and expected is not None:
        record.failed = max(expected - record.completed, 0)
    return record


def parse(
    parser: ParserName,
    text: str,
    *,
    expected: int | None = None,
    paths: dict[str, str] | None = None,
    patterns: dict[str, str] | None = None,
) -> BenchRecord:
    try:
        if parser == "vllm-json":
            return parse_vllm(text, expected)
        if parser == "sglang-jsonl":
            return parse_sglang(text, expected)
        return parse_fields(text, expected, paths=paths if parser == "json-path" else None, patterns=patterns)
    except BenchParseError:
        raise
    except (ValueError, TypeError, OverflowError, re.error, RecursionError) as exc:
        # Whatever the output holds, a bad run is a failed data point with a reason, never a crash.
        raise BenchParseError(f"unusable result: {type(exc).__name__}: {exc}") from None
