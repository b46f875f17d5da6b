"""NVIDIA AIPerf's `profile_export_aiperf.json` (`aiperf profile`, in its artifact directory).

Schema-versioned (`schema_version`, "1.0" … "1.5" so far): minor versions only add fields, a major one may
rename or drop them, so any 1.x is read and another major is refused. Each metric is `{unit, avg, min, max,
p1 … p99, std, count, sum}`; throughputs and counts carry only `unit` and `avg`.

Requests: `request_count` counts the successful ones, `error_request_count` the failed ones (absent when
none failed), `error_summary` their errors by kind. A run AIPerf itself calls cancelled or incomplete is not
a data point.

Latencies (ms) by meaning, in vLLM's names: ttft ← `time_to_first_token`; tpot and itl ←
`inter_token_latency` (AIPerf's ITL is (request latency − TTFT) / (output tokens − 1), vLLM's TPOT);
e2e ← `request_latency`.
"""

from __future__ import annotations

import math
from typing import Any, cast

from tools.benchparse.jsondoc import integer, json_document, num, obj
from tools.benchparse.record import BenchParseError, BenchRecord

SCHEMA_MAJOR = "1"

_LATENCIES = {"time_to_first_token": ("ttft",), "inter_token_latency": ("tpot", "itl"), "request_latency": ("e2e",)}
_TO_MS = {"ms": 1.0, "sec": 1000.0, "s": 1000.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
_TO_S = {"sec": 1.0, "s": 1.0, "ms": 1e-3}


def parse_aiperf(text: str, expected: int | None) -> BenchRecord:
    data = json_document(text, "AIPerf profile_export_aiperf.json")
    version = data.get("schema_version")
    if version is None:
        if "output_token_throughput" in data or "request_count" in data:
            raise BenchParseError(
                "an AIPerf export without schema_version (written before AIPerf versioned it): signoff reads "
                f"schema {SCHEMA_MAJOR}.x; rerun with a current aiperf, or use the json-path parser"
            )
        raise BenchParseError("not an AIPerf profile_export_aiperf.json: no 'schema_version'")
    if str(version).split(".")[0] != SCHEMA_MAJOR:
        raise BenchParseError(
            f"AIPerf export schema_version {version}: signoff reads {SCHEMA_MAJOR}.x; a new major version renames or "
            "drops fields, so this parser must be checked against it (or use the json-path parser)"
        )
    if "request_count" not in data and "output_token_throughput" not in data:
        raise BenchParseError("the AIPerf export has neither request_count nor output_token_throughput")
    completed = integer(obj(data, "request_count"), "avg")
    if completed is None and _avg(data, "output_token_throughput") is None:
        raise BenchParseError("the AIPerf export has no request_count or output_token_throughput value")
    failed = integer(obj(data, "error_request_count"), "avg") or 0
    phase = _profiling_phase(obj(data, "input_config"))
    planned = integer(phase, "requests") or integer(phase, "request_count")
    return BenchRecord(
        tool="aiperf",
        expected=expected if expected is not None else planned,
        completed=completed,
        failed=failed,
        output_tok_s=_avg(data, "output_token_throughput"),
        total_tok_s=_avg(data, "total_token_throughput"),
        req_s=_avg(data, "request_throughput"),
        duration_s=_seconds(obj(data, "benchmark_duration")),
        request_goodput=_avg(data, "goodput"),
        latency_ms=_latencies(data),
        error_samples=_errors(data.get("error_summary")),
        load=_load(phase),
        unusable=_unusable(data),
    )


def _avg(data: dict[str, Any], name: str) -> float | None:
    return num(obj(data, name), "avg")


def _seconds(metric: dict[str, Any]) -> float | None:
    value, unit = num(metric, "avg"), metric.get("unit", "sec")
    if value is None:
        return None
    if unit not in _TO_S:
        raise BenchParseError(f"benchmark_duration is in {unit!r}, not a unit of time this parser knows")
    return value * _TO_S[unit]


def _latencies(data: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, names in _LATENCIES.items():
        metric = obj(data, key)
        if not metric:
            continue
        unit = metric.get("unit")
        if unit not in _TO_MS:
            raise BenchParseError(f"{key} is in {unit!r}, not a unit of time this parser knows")
        for stat, value in metric.items():
            ours = {"avg": "mean", "std": "std", "min": "min", "max": "max"}.get(stat)
            if ours is None and stat[:1] == "p" and stat[1:].isdigit():
                ours = stat
            value = num(metric, stat)
            if ours is None or value is None or not math.isfinite(value):
                continue
            for name in names:
                out[f"{ours}_{name}"] = value * _TO_MS[unit]
                if ours == "p50":
                    out[f"median_{name}"] = value * _TO_MS[unit]
    return out


def _errors(summary: object) -> list[str]:
    """`error_summary`: [{error_details: {code, type, message}, count}] → "5× 500 Internal Server Error: …"."""
    out: list[str] = []
    for entry in cast(list[Any], summary)[:10] if isinstance(summary, list) else []:
        details = obj(entry, "error_details")
        words = " ".join(str(details[k]) for k in ("code", "type") if details.get(k) is not None)
        message = str(details.get("message") or "")[:300]
        out.append(f"{integer(entry, 'count') or '?'}× {words}: {message}".replace(" : ", ": "))
    return out


def _profiling_phase(config: dict[str, Any]) -> dict[str, Any]:
    """The load settings of the measured phase: `phases[kind=profiling]` (current AIPerf) or `loadgen` (older)."""
    phases = config.get("phases")
    if isinstance(phases, list):
        measured: list[dict[str, Any]] = [
            p
            for p in cast(list[Any], phases)
            if isinstance(p, dict) and cast(dict[str, Any], p).get("kind", "profiling") == "profiling"
        ]
        return measured[-1] if measured else {}
    return obj(config, "loadgen")


def _load(phase: dict[str, Any]) -> dict[str, float]:
    out = {"concurrency": num(phase, "concurrency"), "request_rate": num(phase, "rate")}
    if out["request_rate"] is None:
        out["request_rate"] = num(phase, "request_rate")
    return {k: v for k, v in out.items() if v is not None and math.isfinite(v) and v > 0}


def _unusable(data: dict[str, Any]) -> str | None:
    if data.get("was_cancelled") is True:
        return "AIPerf reports the run was cancelled (was_cancelled: true)"
    if data.get("is_complete") is False:
        why = data.get("incomplete_reason")
        return "AIPerf reports the run incomplete" + (f": {str(why)[:200]}" if why else " (is_complete: false)")
    return None
