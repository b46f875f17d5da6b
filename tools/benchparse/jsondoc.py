"""Finding the JSON result in a benchmark's output, and reading numbers out of it without trusting its types."""

from __future__ import annotations

import json
import math
from typing import Any, cast

from tools.benchparse.record import BenchParseError

# A pretty-printed report starts with "{" at the start of a line and nests everything else deeper; tried from
# the last such line back, at most this many (so a log full of "{" lines costs a bounded number of decodes).
_MAX_STARTS = 20


def last_json_object(text: str) -> dict[str, Any]:
    """The last line of `text` that parses as a JSON object (tools print logs before the result)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)  # stdlib on purpose: SGLang writes bare Infinity/NaN
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return cast(dict[str, Any], value)
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BenchParseError(f"result is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
        if isinstance(value, dict):
            return cast(dict[str, Any], value)
    raise BenchParseError(f"no JSON result object in the output (starts with: {snippet(stripped)!r})")


def json_document(text: str, what: str) -> dict[str, Any]:
    """The JSON object a report file holds, one line or pretty-printed, when the output is the file (`cat`)
    or the file after the tool's own console lines. `what` names the report in the error."""
    stripped = text.strip()
    if not stripped:
        raise BenchParseError(f"empty output: no {what} (does the benchmark command print the report file?)")
    first_error: json.JSONDecodeError | None = None
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            first_error = exc
        else:
            if isinstance(value, dict):
                return cast(dict[str, Any], value)
    starts = [i for i in _line_starts(text) if text.startswith("{", i)][-_MAX_STARTS:]
    decoder = json.JSONDecoder()
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first_error = first_error or exc
            continue
        if isinstance(value, dict):
            return cast(dict[str, Any], value)
    if first_error is not None:
        raise BenchParseError(
            f"{what} is not valid JSON: {first_error.msg} at line {first_error.lineno} (cut short?)"
        ) from None
    raise BenchParseError(f"no {what} in the output (starts with: {snippet(stripped)!r})")


def _line_starts(text: str) -> list[int]:
    starts, at = [0], text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def snippet(text: str) -> str:
    return text[:80].replace("\n", " ") or "<empty>"


def num(data: Any, key: str) -> float | None:
    """`data[key]` as a float when it is a number (or a numeric string); None for anything else."""
    value: Any = cast(dict[str, Any], data).get(key) if isinstance(data, dict) else None
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


def integer(data: Any, key: str) -> int | None:
    value = num(data, key)
    return None if value is None or not math.isfinite(value) else int(value)


def obj(data: Any, *path: str) -> dict[str, Any]:
    """The object at `path` under `data`, or {} where any step is missing or not an object."""
    for key in path:
        data = cast(dict[str, Any], data).get(key) if isinstance(data, dict) else None
    return cast(dict[str, Any], data) if isinstance(data, dict) else {}


def dig(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = cast(dict[str, Any], data)[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(cast(list[Any], data)):
            data = cast(list[Any], data)[int(part)]
        else:
            raise BenchParseError(f"path {path!r} not found in the result")
    return data
