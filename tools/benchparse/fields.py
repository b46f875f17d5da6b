"""The generic parsers: the campaign declares each metric as a dotted JSON path or a regex with one group."""

from __future__ import annotations

import math
import re

from tools.benchparse.jsondoc import dig, last_json_object
from tools.benchparse.record import RECORD_METRICS, BenchParseError, BenchRecord


def parse_fields(
    text: str, expected: int | None, *, paths: dict[str, str] | None, patterns: dict[str, str] | None
) -> BenchRecord:
    """Generic extractors declared in the campaign: JSON paths or regexes with one group."""
    values: dict[str, float] = {}
    if paths is not None:
        data = last_json_object(text)
        for field, path in paths.items():
            raw = dig(data, path)
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
