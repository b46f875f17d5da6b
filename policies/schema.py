"""The policy file: ordered first-match rules per gate kind, command rules, and self-tests.

Everything is checked when the file loads — unknown keys, CEL that does not compile or type-check
against that gate's facts, answers a gate does not take, failing `tests:` — each reported with
file:line. A policy that loads is a policy that cannot surprise anyone mid-campaign.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, Action, GateKind, Scope, check_facts
from policies.yamlsrc import SourceError, YamlSource

PRESETS_DIR = Path(__file__).parent / "presets"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuleSpec(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    when: str = "true"
    decide: Action
    then: Action | None = None
    scope: Scope = "once"
    note: str | None = None


class GatePolicy(_Strict):
    rules: list[RuleSpec] = Field(default_factory=list)
    on_error: Action = "ask"
    headless_default: Action | None = None

    @model_validator(mode="after")
    def _on_error_never_approves(self) -> GatePolicy:
        if self.on_error not in ("ask", "stop", "skip", "reject", "rollback"):
            raise ValueError("on_error must fail closed: one of ask, stop, skip, reject, rollback")
        return self


class CommandRules(_Strict):
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class PolicyTest(_Strict):
    gate: GateKind
    facts: dict[str, Any]
    expect: dict[str, str]

    @model_validator(mode="after")
    def _expect_keys(self) -> PolicyTest:
        unknown = set(self.expect) - {"decide", "rule"}
        if unknown or "decide" not in self.expect:
            raise ValueError("expect takes 'decide' and optionally 'rule'")
        return self


class PolicyFile(_Strict):
    version: int = 1
    name: str
    description: str = ""
    commands: CommandRules = Field(default_factory=CommandRules)
    gates: dict[GateKind, GatePolicy] = Field(default_factory=dict)
    tests: list[PolicyTest] = Field(default_factory=list)

    @model_validator(mode="after")
    def _version(self) -> PolicyFile:
        if self.version != 1:
            raise ValueError(f"unsupported policy version {self.version}; this signoff reads version 1")
        return self


class CompiledRule(BaseModel):
    """A rule ready to evaluate: its spec, its compiled condition and where it came from."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: RuleSpec
    kind: GateKind
    condition: Condition
    line: int | None = None


class Policy:
    """A loaded, compiled and self-tested policy."""

    def __init__(self, source: YamlSource, model: PolicyFile) -> None:
        self.path = source.path
        self.text = source.text
        self.sha256 = hashlib.sha256(source.text.encode()).hexdigest()
        self.model = model
        self.rules: dict[GateKind, list[CompiledRule]] = {}
        for kind, gate in model.gates.items():
            compiled = []
            for i, rule in enumerate(gate.rules):
                loc = ("gates", kind, "rules", i)
                if rule.decide not in ALLOWED[kind]:
                    raise source.error((*loc, "decide"), _not_allowed(kind, rule.decide))
                if rule.then is not None and rule.then not in ALLOWED[kind]:
                    raise source.error((*loc, "then"), _not_allowed(kind, rule.then))
                try:
                    condition = Condition(rule.when, FACTS[kind])
                except ExprError as exc:
                    raise source.error(
                        (*loc, "when"), f"{exc} — facts of a {kind} gate: {', '.join(FACTS[kind])}"
                    ) from None
                compiled.append(
                    CompiledRule(spec=rule, kind=kind, condition=condition, line=source.line((*loc, "when")))
                )
            if gate.headless_default is not None and gate.headless_default not in ALLOWED[kind]:
                raise source.error(("gates", kind, "headless_default"), _not_allowed(kind, gate.headless_default))
            self.rules[kind] = compiled
        self._source = source

    @property
    def name(self) -> str:
        return self.model.name

    def gate(self, kind: GateKind) -> GatePolicy:
        return self.model.gates.get(kind, GatePolicy())

    def self_test(self) -> None:
        from policies.engine import PolicyEngine  # engine imports this module

        engine = PolicyEngine(self)
        for i, test in enumerate(self.model.tests):
            loc = ("tests", i)
            try:
                check_facts(test.gate, test.facts)
            except ValueError as exc:
                raise self._source.error((*loc, "facts"), str(exc)) from None
            got = engine.evaluate(test.gate, test.facts)
            want_rule = test.expect.get("rule")
            if got.action != test.expect["decide"] or (want_rule is not None and got.rule != want_rule):
                raise self._source.error(
                    loc,
                    f"test expects {test.expect['decide']}"
                    + (f" by rule {want_rule}" if want_rule else "")
                    + f", but the policy decides {got.action} by {got.rule or 'no rule'}",
                )


def _not_allowed(kind: GateKind, action: Action) -> str:
    return f"a {kind} gate cannot answer {action!r}; it takes {', '.join(ALLOWED[kind])}"


def resolve_policy_path(name_or_path: str | Path) -> Path:
    """A path, or the name of a preset (`cautious`, `ask-everything.yaml`)."""
    path = Path(name_or_path)
    if path.exists():
        return path
    stem = path.name.removesuffix(".yaml")
    preset = PRESETS_DIR / f"{stem}.yaml"
    if preset.exists() and (path.parent == Path(".") or path.parent == PRESETS_DIR):
        return preset
    return path


def load_policy(name_or_path: str | Path) -> Policy:
    source = YamlSource.read(resolve_policy_path(name_or_path))
    policy = Policy(source, source.validate(PolicyFile))
    policy.self_test()
    return policy


def load_policy_text(text: str, path: str = "<policy>") -> Policy:
    """Rebuild a policy from journaled text (replay, resume) exactly as it was checked then."""
    source = YamlSource(Path(path), text)
    policy = Policy(source, source.validate(PolicyFile))
    policy.self_test()
    return policy


__all__ = ["Policy", "PolicyFile", "SourceError", "load_policy", "load_policy_text", "resolve_policy_path"]
