"""YAML with positions: every mapping key and value remembers its line, so that a validation error
can say `campaign.yaml:14: options[1].apply: field required` instead of a stack trace.

Shared by the policy and campaign loaders (the agent may import policies; the reverse never).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


class SourceError(ValueError):
    """A user file is wrong; `str()` is the one-line message with file:line."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        message = " ".join(message.split())  # one line, whatever the underlying library said
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


# Bounds on what a campaign or policy may cost to read: real ones are a few KB, a few hundred values and
# a handful of levels deep. Past them the file is refused in one line instead of exhausting memory (an
# alias bomb: 5 KB that expands to gigabytes) or the stack (a thousand nested lists).
MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 200_000


# A run reads its campaign and policy texts several times (the files, then the journaled copies as a runner and a
# view take them back): the same text composes to the same nodes, and nothing here changes a node, so a process
# composes each text once (~11 ms for the demo's campaign, a third of what a fast demo run spent in itself). Only
# texts the size of real ones are kept, and only a few.
CACHED_CHARS = 256 * 1024


@functools.lru_cache(maxsize=8)
def _composed(text: str) -> yaml.Node | None:
    return _yaml_compose(text)


def _yaml_compose(text: str) -> yaml.Node | None:
    # typeshed's PyYAML stubs leave `stream` unannotated, so to a strict checker the call is partly unknown
    return yaml.compose(text, Loader=yaml.SafeLoader)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def _compose(text: str, path: Path) -> yaml.Node | None:
    if len(text) > MAX_BYTES:
        raise SourceError(path, None, f"is {len(text):,} characters; at most {MAX_BYTES:,} are read")
    try:
        return _composed(text) if len(text) <= CACHED_CHARS else _yaml_compose(text)
    except RecursionError:
        raise SourceError(path, None, f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    # Duplicate keys are caught while building (PyYAML itself silently keeps the last one).
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise SourceError(path, line, f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise SourceError(path, line, f"invalid YAML: {exc.reason} (character {exc.character!r})") from None
    except yaml.YAMLError as exc:
        raise SourceError(path, None, f"invalid YAML: {str(exc).splitlines()[0]}") from None


class _Budget:
    """How many values the document has built so far: aliases repeat a node without repeating its text. And the
    constructor its scalars are built with, its own: a constructor remembers every node it built (one shared by the
    module kept every document's nodes alive) and marks the node it is building, so two threads building from the
    same cached nodes through one constructor would each see the other's mark as a recursive node."""

    def __init__(self) -> None:
        self.values = 0
        self.constructor = yaml.constructor.SafeConstructor()


def _build(node: yaml.Node, loc: Loc, lines: dict[Loc, int], path: Path, budget: _Budget | None = None) -> Any:
    budget = budget or _Budget()
    budget.values += 1
    if budget.values > MAX_VALUES:
        raise SourceError(
            path, node.start_mark.line + 1, f"expands to more than {MAX_VALUES:,} values (aliases repeated?)"
        )
    if len(loc) > MAX_DEPTH:
        raise SourceError(path, node.start_mark.line + 1, f"is nested too deeply (at most {MAX_DEPTH} levels)")
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SourceError(path, key_node.start_mark.line + 1, "mapping keys must be plain scalars")
            # Keys are taken as written: YAML 1.1 would turn `on:`/`yes:` keys into booleans.
            key = key_node.value
            if key in out:
                raise SourceError(path, key_node.start_mark.line + 1, f"duplicate key {key!r}")
            lines[(*loc, key)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, (*loc, key), lines, path, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*loc, i), lines, path, budget) for i, item in enumerate(node.value)]
    try:
        # typeshed leaves `node` unannotated here too (see _yaml_compose)
        return budget.constructor.construct_object(node, deep=True)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        # e.g. `2026-13-45` looks like a timestamp to YAML and fails to build as one
        raise SourceError(path, node.start_mark.line + 1, f"invalid value {node.value!r}: {exc}") from None


class YamlSource:
    """A parsed YAML document plus the line of every key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.lines: dict[Loc, int] = {}
        node = _compose(text, path)
        if node is None:
            raise SourceError(path, 1, "the file is empty")
        self.data: Any = _build(node, (), self.lines, path)

    @classmethod
    def read(cls, path: Path) -> YamlSource:
        try:
            if path.is_file() and path.stat().st_size > MAX_BYTES:  # before reading it all into memory
                raise SourceError(path, None, f"is {path.stat().st_size:,} bytes; at most {MAX_BYTES:,} are read")
            text = path.read_text(encoding="utf-8")
            if "\x00" in text:
                raise SourceError(
                    path, text[: text.index("\x00")].count("\n") + 1, "contains a NUL byte; not a text file"
                )
        except FileNotFoundError:
            raise SourceError(path, None, "file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(path, None, f"cannot read: {exc}") from None
        return cls(path, text)

    def line(self, loc: Loc) -> int | None:
        """The line of the deepest known prefix of `loc`."""
        for end in range(len(loc), -1, -1):
            if (found := self.lines.get(tuple(loc[:end]))) is not None:
                return found
        return None

    def error(self, loc: Loc, message: str) -> SourceError:
        return SourceError(self.path, self.line(loc), f"{dotted(loc)}: {message}" if loc else message)

    def validate(self, model: type[M]) -> M:
        if not isinstance(self.data, dict):
            raise SourceError(self.path, 1, "expected a mapping at the top level")
        try:
            return model.model_validate(cast(dict[str, Any], self.data))
        except ValidationError as exc:
            raise self.from_validation(exc) from None

    def from_validation(self, exc: ValidationError, prefix: Loc = ()) -> SourceError:
        err = exc.errors()[0]
        loc = (*prefix, *(p for p in err["loc"] if not _is_union_tag(p)))
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = f"unknown field {loc[-1]!r}"
        elif err["type"] == "missing":
            message = "field required"
        more = len(exc.errors()) - 1
        if more:
            message += f" (and {more} more error{'s' if more > 1 else ''})"
        return self.error(loc, message)


def _is_union_tag(part: str | int) -> bool:
    # pydantic inserts the union member or function name into error locations ("function-after[...]").
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))


def dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
