"""The condition language: CEL through `cel-expr-python`, behind this thin adapter.

CEL is checked at compile time against declared fact types, so a misspelled fact, a type error or
a rule that is not boolean fails when the policy *loads*, never in the middle of a campaign.
Enum facts are strings to CEL; comparing one with a value outside its enum is checked here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

FactKind = Literal["string", "double", "int", "bool"]

ENGINE = "cel-expr-python"


class FactSpec(BaseModel):
    type: FactKind
    enum: list[str] | None = None
    doc: str = ""
    # A fact added after gates were first journaled says what its absence meant, so rules reading it
    # still decide gates recorded before it existed (replay, counterfactuals) instead of failing closed.
    default: Any = None


class ExprError(ValueError):
    """An expression that does not compile, does not type-check or is not boolean."""


class EvalError(RuntimeError):
    """An expression failed at run time (missing fact, budget exceeded, …). Never approves."""


def engine_version() -> str:
    from importlib.metadata import version

    return f"{ENGINE} {version(ENGINE)}"


def _cel():
    # 4 ms import, but keep `signoff --help` free of it. The package ships no type stubs; the tests hold its calls.
    from cel_expr_python import cel  # pyright: ignore[reportMissingTypeStubs]

    return cel


def _cel_type(kind: FactKind):
    cel = _cel()
    return {"string": cel.Type.STRING, "double": cel.Type.DOUBLE, "int": cel.Type.INT, "bool": cel.Type.BOOL}[kind]


@cache
def _env(facts_key: tuple[tuple[str, FactKind], ...]):
    return _cel().NewEnv(variables={name: _cel_type(kind) for name, kind in facts_key})


def _clean_message(raw: str) -> str:
    # "INVALID_ARGUMENT: ERROR: <input>:1:10: found no matching overload …\n | expr\n | ^" → first line
    first = raw.splitlines()[0] if raw else raw
    missing = re.search(r'No value with name "([^"]+)" found', first)
    if missing:
        return f"fact {missing.group(1)} was not given"
    first = re.sub(r"^INVALID_ARGUMENT: ERROR: <input>:\d+:(\d+):", r"col \1:", first)
    return re.sub(r" \(in container ''\)", "", first)


_ENUM_CMP = re.compile(
    r"""\b([a-z_][a-z0-9_]*)\s*(==|!=)\s*["']([^"']*)["']|["']([^"']*)["']\s*(==|!=)\s*([a-z_][a-z0-9_]*)\b"""
)


class Condition:
    """A compiled, type-checked boolean expression over one gate kind's facts."""

    def __init__(self, source: str, facts: Mapping[str, FactSpec]) -> None:
        self.source = source
        self.facts = dict(facts)
        key = tuple(sorted((name, spec.type) for name, spec in facts.items()))
        try:
            self._expr = _env(key).compile(source)
        except RuntimeError as exc:
            message = _clean_message(str(exc))
            hint = _int_literal_hint(source, message)
            raise ExprError(message + hint) from None
        cel = _cel()
        if self._expr.return_type() != cel.Type.BOOL:
            raise ExprError(f"must be a boolean condition, but it yields {self._expr.return_type().name()}")
        for m in _ENUM_CMP.finditer(source):
            name, value = (m.group(1), m.group(3)) if m.group(1) else (m.group(6), m.group(4))
            spec = facts.get(name)
            if spec is not None and spec.enum is not None and value not in spec.enum:
                raise ExprError(f"{name} is never {value!r}; its values are {', '.join(spec.enum)}")
        self.variables = sorted(n for n in facts if re.search(rf"\b{re.escape(n)}\b", source))

    def evaluate(self, facts: Mapping[str, Any]) -> bool:
        data = {name: _coerce(facts[name], self.facts[name].type) for name in self.variables if name in facts}
        value = self._expr.eval(data=data)
        cel = _cel()
        if value.type() == cel.Type.ERROR:
            raise EvalError(_clean_message(str(value.value())))
        result = value.value()
        if not isinstance(result, bool):
            raise EvalError(f"yielded {result!r}, not a boolean")
        return result


def _coerce(value: Any, kind: FactKind) -> Any:
    # JSON facts arrive with ints where doubles are declared (a gain of exactly 5 → 5).
    if kind == "double" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _int_literal_hint(source: str, message: str) -> str:
    m = re.search(r"applied to '\((double), int\)'|applied to '\(int, (double)\)'", message)
    if not m:
        return ""
    number = re.search(r"(?<![\w.])(\d+)(?![\w.])", source)
    suggestion = f" (write {number.group(1)}.0)" if number else " (write a decimal literal such as 5.0)"
    return f"; double facts compare with decimal literals{suggestion}"


def compiles(source: str, facts: Mapping[str, FactSpec]) -> bool:
    try:
        Condition(source, facts)
    except ExprError:
        return False
    return True
