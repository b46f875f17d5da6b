"""sysbench's text report (sysbench 1.0: `sysbench oltp_read_write run`, `sysbench cpu run`, …).

Rates: `tps` (transactions/s) and `qps` (queries/s) from an OLTP run's SQL statistics, `events_s` (events/s:
the CPU speed line, else events over total time) from any run. Latencies (ms) of one event: `min_latency`,
`mean_latency` (sysbench's avg), `max_latency`, `pN_latency` for the percentile `--percentile` chose (95 by
default). `completed` is the total number of events; the load is the thread count and a `--rate` target.

A run that counted errors (`ignored errors`: statements that failed and whose transaction sysbench retried,
deadlocks by default) or reconnects is not a clean measurement, so it is not a data point: the retries are
work the other arm may not have done.
"""

from __future__ import annotations

import re

from tools.benchparse.jsondoc import snippet
from tools.benchparse.record import BenchParseError, BenchRecord

_LATENCY = {"min": "min", "avg": "mean", "max": "max"}


def parse_sysbench(text: str, expected: int | None) -> BenchRecord:
    if "sysbench" not in text[:4096] and "General statistics:" not in text:
        raise BenchParseError(f"not sysbench output (starts with: {snippet(text.strip())!r})")
    # The report of the last run in the output (a command may run sysbench more than once).
    report = text[text.rfind("Threads started!") :] if "Threads started!" in text else text
    if "General statistics:" not in report:
        raise BenchParseError(
            "no sysbench statistics in the output: the run ended before its report (see the exit code and the "
            "output's last lines)"
        )
    total_time = _number(r"total time:\s+([\d.]+)s", report)
    events = _number(r"total number of events:\s+(\d+)", report)
    rates: dict[str, float] = {}
    if (speed := _number(r"events per second:\s+([\d.]+)", report)) is not None:
        rates["events_s"] = speed
    elif events is not None and total_time:
        rates["events_s"] = events / total_time
    for name, label in (("tps", "transactions"), ("qps", "queries")):
        if (rate := _number(rf"^\s*{label}:\s+\d+\s+\(([\d.]+) per sec\.\)", report)) is not None:
            rates[name] = rate
    if not rates and total_time is None:
        raise BenchParseError("the sysbench report has no rate and no total time (cut short?)")
    errors = _number(r"ignored errors:\s+(\d+)", report)
    reconnects = _number(r"reconnects:\s+(\d+)", report)
    load: dict[str, float] = {}
    if (threads := _number(r"Number of threads:\s+(\d+)", text)) is not None:
        load["concurrency"] = threads
    if (target := _number(r"Target transaction rate:\s+([\d.]+)/sec", text)) is not None:
        load["request_rate"] = target
    return BenchRecord(
        tool="sysbench",
        expected=expected,
        completed=None if events is None else int(events),
        duration_s=total_time,
        rates=rates,
        latency_ms=_latencies(report),
        load=load,
        unusable=_unusable(errors, reconnects),
    )


def _number(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text, re.MULTILINE)
    return float(m.group(1)) if m else None


def _latencies(report: str) -> dict[str, float]:
    """The `Latency (ms):` block: min, avg, max, `95th percentile` (or the one --percentile chose), sum."""
    block = report.partition("Latency (ms):")[2].partition("\n\n")[0]
    out: dict[str, float] = {}
    for m in re.finditer(r"^\s*(min|avg|max|(\d+(?:\.\d+)?)(?:st|nd|rd|th) percentile):\s+([\d.]+)\s*$", block, re.M):
        stat = _LATENCY.get(m.group(1)) or f"p{float(m.group(2)):g}"
        out[f"{stat}_latency"] = float(m.group(3))
    return out


def _unusable(errors: float | None, reconnects: float | None) -> str | None:
    if not errors and not reconnects:
        return None
    return (
        f"sysbench counted {int(errors or 0)} ignored error(s) and {int(reconnects or 0)} reconnect(s): a run with "
        "errors is not a clean measurement"
    )
