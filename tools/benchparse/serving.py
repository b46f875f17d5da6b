"""vLLM's `--save-result` JSON and SGLang's `bench_serving` JSONL: one flat object per run, latencies as
`<stat>_<metric>_ms` keys."""

from __future__ import annotations

import math
import re
from typing import Any, cast

from tools.benchparse.jsondoc import integer, last_json_object, num
from tools.benchparse.record import BenchParseError, BenchRecord

_LATENCY_KEYS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e", "e2e_latency": "e2e"}


def _load(data: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, key in (("concurrency", "max_concurrency"), ("request_rate", "request_rate")):
        value = num(data, key)  # vLLM and SGLang write "inf" or null for an unbounded rate or concurrency
        if value is not None and math.isfinite(value) and value > 0:
            out[name] = value
    return out


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
    data = last_json_object(text)
    if "output_throughput" not in data or "completed" not in data:
        raise BenchParseError("not a vLLM result: missing 'output_throughput' or 'completed'")
    completed = integer(data, "completed")
    failed = integer(data, "failed")
    if failed is None and expected is not None and completed is not None:
        failed = max(expected - completed, 0)  # legacy benchmark_serving.py has no 'failed'
    raw_errors = data.get("errors")
    errors = (
        [e for e in cast(list[Any], raw_errors) if isinstance(e, str) and e] if isinstance(raw_errors, list) else []
    )
    return BenchRecord(
        tool="vllm",
        expected=expected,
        completed=completed,
        failed=failed,
        output_tok_s=num(data, "output_throughput"),
        total_tok_s=num(data, "total_token_throughput"),
        req_s=num(data, "request_throughput"),
        duration_s=num(data, "duration"),
        # vLLM wrote the key as "request_goodput:" (with the colon) for several releases
        request_goodput=num(data, "request_goodput") if "request_goodput" in data else num(data, "request_goodput:"),
        latency_ms=_latencies(data),
        error_samples=errors[:10],
        load=_load(data),
    )


def parse_sglang(text: str, expected: int | None) -> BenchRecord:
    data = last_json_object(text)
    if "output_throughput" not in data or "completed" not in data:
        raise BenchParseError("not an SGLang result: missing 'output_throughput' or 'completed'")
    completed = integer(data, "completed")
    failed = None
    if expected is not None and completed is not None:
        failed = max(expected - completed, 0)  # SGLang never writes 'failed'
    return BenchRecord(
        tool="sglang",
        expected=expected,
        completed=completed,
        failed=failed,
        output_tok_s=num(data, "output_throughput"),
        total_tok_s=num(data, "total_throughput"),
        req_s=num(data, "request_throughput"),
        duration_s=num(data, "duration"),
        latency_ms=_latencies(data),
        load=_load(data),
    )
