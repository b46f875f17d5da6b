"""The parsers by name, and the metric names each one can report, so that a campaign naming a metric its
parser never produces is refused when it is loaded, not after every run came back without it.

The names are vLLM's wherever a tool measures the same thing: `output_tok_s`, `<stat>_ttft`, `<stat>_tpot`
(decode time per output token, the first token excluded), `<stat>_itl`, `<stat>_e2e` (request latency), all
latencies in ms; `<stat>` is mean, median, std, min, max or pN (p99, p99.9). sysbench's own are `tps`, `qps`,
`events_s` and `<stat>_latency`.
"""

from __future__ import annotations

import re
from typing import Literal

ParserName = Literal["vllm-json", "sglang-jsonl", "guidellm", "aiperf", "sysbench", "json-path", "regex"]

_LLM_RATES = frozenset({"output_tok_s", "total_tok_s", "req_s", "duration_s"})
_LLM_LATENCY = re.compile(r"(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e)")
_LLM_LATENCY_RANGE = re.compile(r"(mean|median|std|min|max|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e)")
_DB_LATENCY = re.compile(r"(mean|min|max|p\d+(?:\.\d+)?)_latency")

_LLM_WORDS = "or a latency such as p99_tpot / median_ttft / mean_itl / p99_e2e"
# parser → (rates and totals it reports, the latencies it reports, those in words)
_VOCABULARY: dict[str, tuple[frozenset[str], re.Pattern[str], str]] = {
    "vllm-json": (_LLM_RATES | {"request_goodput"}, _LLM_LATENCY, _LLM_WORDS),
    "sglang-jsonl": (_LLM_RATES, _LLM_LATENCY, _LLM_WORDS),
    "guidellm": (_LLM_RATES, _LLM_LATENCY_RANGE, _LLM_WORDS + " (also min_/max_)"),
    "aiperf": (_LLM_RATES | {"request_goodput"}, _LLM_LATENCY_RANGE, _LLM_WORDS + " (also min_/max_)"),
    "sysbench": (
        frozenset({"tps", "qps", "events_s", "duration_s"}),
        _DB_LATENCY,
        "or a latency: mean_latency, min_latency, max_latency, p95_latency (the percentile --percentile chose)",
    ),
}


def reports(parser: str, name: str) -> bool | None:
    """Whether `parser` can report the metric `name`; None for the generic parsers, which report exactly
    what the campaign declares."""
    vocabulary = _VOCABULARY.get(parser)
    if vocabulary is None:
        return None
    rates, latency, _ = vocabulary
    return name in rates or bool(latency.fullmatch(name))


def known_metric(name: str) -> bool:
    """A metric some built-in parser reports."""
    return any(reports(parser, name) for parser in _VOCABULARY)


def metric_names(parser: str) -> str:
    """What `parser` reports, in words for an error message."""
    vocabulary = _VOCABULARY.get(parser)
    if vocabulary is None:
        return "the metrics declared under paths/patterns"
    rates, _, latencies = vocabulary
    return f"{', '.join(sorted(rates))}, {latencies}"
