"""The one record every benchmark parser produces, and the error each raises on output it cannot read.

Throughput in vLLM/SGLang results counts successful requests only, so a run with failures looks
"almost fine"; `invalid_reason` is the gate that keeps such runs out of the A/B statistics.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field


class BenchParseError(ValueError):
    """The output could not be read as a benchmark result; the message says why."""


RECORD_METRICS = ("output_tok_s", "total_tok_s", "req_s", "duration_s", "request_goodput")


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
    # Rates a tool reports beside the LLM throughputs above, e.g. sysbench's "tps", "qps", "events_s".
    rates: dict[str, float] = Field(default_factory=dict)
    error_samples: list[str] = Field(default_factory=list)
    # The load the tool says it generated: "concurrency" (its max concurrency) and "request_rate" (req/s,
    # absent for an unbounded rate). A sweep checks each run against the level it asked for.
    load: dict[str, float] = Field(default_factory=dict)
    # Why the tool's own report says this run cannot count (sysbench's errors, an AIPerf run cancelled),
    # when request counts cannot say it.
    unusable: str | None = None

    def metric(self, name: str) -> float | None:
        if name in RECORD_METRICS:
            return getattr(self, name)
        if name in self.rates:
            return self.rates[name]
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
        was asked to is not the benchmark the campaign describes: neither is a data point. The tool's own
        reason a run cannot count (sysbench's errors, AIPerf's cancelled run) comes first."""
        if self.unusable:
            return self.unusable
        sent = None if self.completed is None else self.completed + (self.failed or 0)
        if self.expected is not None and sent != self.expected:
            if self.failed:
                return f"sent {sent} requests, not the {self.expected} asked for ({self.failed} failed)"
            return f"completed {self.completed} of {self.expected} requests"
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
