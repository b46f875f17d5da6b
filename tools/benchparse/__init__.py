"""Benchmark output → one normalized record (`BenchRecord`), whichever tool produced it: a module per tool.

vLLM and SGLang (serving.py), GuideLLM, AIPerf, sysbench, and the generic json-path and regex parsers
(fields.py); names.py says which metric names each parser can report. Whatever the output holds, a run
that cannot be read is a `BenchParseError` with one line saying why, never a crash.
"""

from __future__ import annotations

import re

from tools.benchparse.aiperf import parse_aiperf
from tools.benchparse.fields import parse_fields
from tools.benchparse.guidellm import parse_guidellm
from tools.benchparse.names import ParserName, known_metric, metric_names, reports
from tools.benchparse.record import RECORD_METRICS, BenchParseError, BenchRecord
from tools.benchparse.serving import parse_sglang, parse_vllm
from tools.benchparse.sysbench import parse_sysbench

__all__ = [
    "RECORD_METRICS",
    "BenchParseError",
    "BenchRecord",
    "ParserName",
    "known_metric",
    "metric_names",
    "parse",
    "reports",
]

_TOOLS = {
    "vllm-json": parse_vllm,
    "sglang-jsonl": parse_sglang,
    "guidellm": parse_guidellm,
    "aiperf": parse_aiperf,
    "sysbench": parse_sysbench,
}


def parse(
    parser: ParserName,
    text: str,
    *,
    expected: int | None = None,
    paths: dict[str, str] | None = None,
    patterns: dict[str, str] | None = None,
) -> BenchRecord:
    try:
        tool = _TOOLS.get(parser)
        if tool is not None:
            record = tool(text, expected)
        else:
            record = parse_fields(text, expected, paths=paths if parser == "json-path" else None, patterns=patterns)
        _check_counts(record)
        return record
    except BenchParseError:
        raise
    except (ValueError, TypeError, OverflowError, re.error, RecursionError) as exc:
        # Whatever the output holds, a bad run is a failed data point with a reason, never a crash.
        raise BenchParseError(f"unusable result: {type(exc).__name__}: {exc}") from None


MAX_REQUESTS = 1_000_000_000  # more requests than any benchmark run sends: a count beyond it is garbage


def _check_counts(record: BenchRecord) -> None:
    """Request counts a run could have: none negative, none absurd, no more failed than attempted. A tool's
    output that says otherwise is unreadable, not evidence (the failure test would weigh it)."""
    counts = {"completed": record.completed, "failed": record.failed}
    for name, value in counts.items():
        if value is not None and not 0 <= value <= MAX_REQUESTS:
            raise BenchParseError(f"the result says {value} {name} requests: not a count a run can have")
    attempted = record.requests()
    if attempted is not None and not 0 <= attempted[1] <= attempted[0]:
        raise BenchParseError(f"the result says {attempted[1]} failed of {attempted[0]} requests attempted")
