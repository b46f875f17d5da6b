"""GuideLLM's JSON report (`guidellm run --output kind=json,path=…`, report schema version 2: GuideLLM 0.8).

One run of a campaign measures one load, so the report must hold one benchmark: a `sweep` profile, or a
`concurrent` one with several `streams`, is refused with the flags that give one (signoff's own
`benchmark.sweep` varies the load, one run per level, with the A/B around each).

Requests: GuideLLM counts each request successful, errored, or incomplete (cancelled in flight). Errored ones
always fail the run. Incomplete ones fail it too when the run was bounded by a request count (`max_requests`):
then every request was meant to finish. A run bounded only by time (`max_duration`) cancels the requests in
flight at its deadline; those are the cut, not failures, and are not counted.

Latencies (ms) by meaning, in vLLM's names: ttft ← `time_to_first_token_ms`; tpot and itl ←
`inter_token_latency_ms` (decode time per token, the first excluded: vLLM's TPOT); e2e ← `request_latency`
(seconds in the report). GuideLLM's own `time_per_output_token_ms` counts the first token too, so it is not
vLLM's TPOT and is not mapped. Statistics are over successful requests.
"""

from __future__ import annotations

import math
from typing import Any, cast

from tools.benchparse.jsondoc import integer, json_document, num, obj
from tools.benchparse.record import BenchParseError, BenchRecord

SCHEMA_VERSION = 2  # metadata.version of GuideLLM 0.8's report

# report metric → (signoff's latency name, factor to ms)
_LATENCIES = {
    "time_to_first_token_ms": (("ttft",), 1.0),
    "inter_token_latency_ms": (("tpot", "itl"), 1.0),
    "request_latency": (("e2e",), 1000.0),
}
_STATS = {"mean": "mean", "median": "median", "std_dev": "std", "min": "min", "max": "max"}


def parse_guidellm(text: str, expected: int | None) -> BenchRecord:
    report = json_document(text, "GuideLLM report")
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise BenchParseError("not a GuideLLM report: no 'benchmarks' list")
    benchmarks = cast(list[Any], benchmarks)
    version = obj(report, "metadata").get("version")
    if version != SCHEMA_VERSION:
        raise BenchParseError(
            f"GuideLLM report schema version {version!r}: signoff reads version {SCHEMA_VERSION} (GuideLLM 0.8); "
            "rerun with GuideLLM 0.8, or read the fields you need with the json-path parser"
        )
    if not benchmarks:
        raise BenchParseError("the GuideLLM report has no benchmarks: the run ended before a strategy finished")
    if len(benchmarks) > 1:
        shown = ", ".join(_strategy_words(b) for b in benchmarks[:5]) + (", …" if len(benchmarks) > 5 else "")
        raise BenchParseError(
            f"the GuideLLM report holds {len(benchmarks)} benchmarks ({shown}); signoff measures one load per run: "
            "run one strategy (`--profile kind=concurrent,streams=N`, not a sweep or a list of streams) and let "
            "benchmark.sweep vary N"
        )
    bench = benchmarks[0]
    if not isinstance(bench, dict):
        raise BenchParseError("the GuideLLM report's benchmark is not an object")
    bench = cast(dict[str, Any], bench)
    metrics = obj(bench, "metrics")
    totals = obj(metrics, "request_totals")
    successful, errored, incomplete = (integer(totals, k) for k in ("successful", "errored", "incomplete"))
    if successful is None:
        raise BenchParseError("the GuideLLM benchmark has no metrics.request_totals.successful")
    constraints = obj(bench, "config", "constraints")
    timed = "max_duration" in constraints and "max_requests" not in constraints
    failed = (errored or 0) + (0 if timed else (incomplete or 0))
    total = integer(totals, "total")
    return BenchRecord(
        tool="guidellm",
        expected=expected if expected is not None else (None if timed else total),
        completed=successful,
        failed=failed,
        output_tok_s=_rate(metrics, "output_tokens_per_second"),
        total_tok_s=_rate(metrics, "tokens_per_second"),
        req_s=_rate(metrics, "requests_per_second"),
        duration_s=num(bench, "duration"),
        latency_ms=_latencies(metrics),
        error_samples=_errors(bench),
        load=_load(obj(bench, "config", "strategy")),
    )


def _rate(metrics: dict[str, Any], name: str) -> float | None:
    """A rate over the benchmark (GuideLLM's mean of a rate distribution is total / duration)."""
    return num(obj(metrics, name, "successful"), "mean")


def _latencies(metrics: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, (names, scale) in _LATENCIES.items():
        summary = obj(metrics, key, "successful")
        percentiles = obj(summary, "percentiles")
        stats = [(ours, num(summary, theirs)) for theirs, ours in _STATS.items()]
        stats += [(stat, num(percentiles, label)) for label in percentiles if (stat := _percentile(label))]
        for stat, value in stats:
            if value is not None and math.isfinite(value):
                out.update({f"{stat}_{name}": value * scale for name in names})
    return out


def _percentile(label: str) -> str | None:
    """GuideLLM's percentile keys: p001 is the 0.1th, p05 the 5th, p999 the 99.9th; vLLM's: p0.1, p5, p99.9."""
    digits = label[1:]
    if not label.startswith("p") or not digits.isdigit() or len(digits) not in (2, 3):
        return None
    value = int(digits) / (10 if len(digits) == 3 else 1)
    return f"p{value:g}"


def _errors(bench: dict[str, Any]) -> list[str]:
    """Error texts of the errored requests the report kept (GuideLLM samples requests, so maybe not all)."""
    errored = obj(bench, "requests").get("errored")
    texts = [obj(r, "info").get("error") for r in cast(list[Any], errored)[:200]] if isinstance(errored, list) else []
    return list(dict.fromkeys(t[:300] for t in texts if isinstance(t, str) and t))[:10]


def _load(strategy: dict[str, Any]) -> dict[str, float]:
    kind = strategy.get("type_")
    concurrency = {"synchronous": 1.0, "concurrent": num(strategy, "streams")}.get(str(kind))
    if concurrency is None:
        concurrency = num(strategy, "max_concurrency")  # throughput, or a rate capped in flight
    out = {"concurrency": concurrency, "request_rate": num(strategy, "rate")}
    return {k: v for k, v in out.items() if v is not None and math.isfinite(v) and v > 0}


def _strategy_words(bench: object) -> str:
    strategy = obj(bench, "config", "strategy")
    kind = str(strategy.get("type_", "?"))
    level = next((f"{k} {v:g}" for k in ("streams", "rate") if (v := num(strategy, k)) is not None), "")
    return f"{kind} {level}".strip()
