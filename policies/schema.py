"""The policy file: ordered first-match rules per gate kind, command rules, and self-tests.

Everything is checked when the file loads — unknown keys, CEL that does not compile or type-check
against that gate's facts, answers a gate does not take, failing `tests:` — each reported with
file:line. A policy that loads is a policy that cannot surprise anyone mid-campaign.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, GATES, Action, GateKind, Scope
from policies.oneline import OneLine
from policies.yamlsrc import SourceError, YamlSource

PRESETS_DIR = Path(__file__).parent / "presets"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RuleSpec(_Strict):
    """One rule of a gate: when its condition holds, it decides."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    """The rule's id; decisions and the journal cite it, so it is unique across the policy and the ones it extends."""
    when: str = "true"
    """A CEL expression over the gate's facts (docs/reference.md lists them per gate); `true` always matches."""
    decide: Action
    """The answer when the rule matches; each gate takes its own answers."""
    then: Action | None = None
    """`rollback` only: a safety rule that skips, defers or stops says the rollback explicitly."""
    scope: Scope = "once"
    """How the answer is recorded: `once` (the default) as given; `for_now` makes a safety gate's skip or rollback a
    deferral (the option is rolled back and revisited at the end). A rule answers every gate it matches anyway, so
    `standing` adds nothing here (it matters for a person's answer, which it turns into a session rule)."""
    note: OneLine | None = None
    """Why, in words: shown with the decision and in explanations."""
    guard: bool = False
    """A safety rule the policies that extend this file cannot get ahead of: their rules at this gate are tried after
    its last guard, unless they say `before_guards`. A guard has a condition (not `when: true`) and an answer that
    fails closed at its gate; the presets' `skip-unsafe` is one."""
    before_guards: bool = False
    """In a policy that extends another: try this rule before the parent's guards (e.g. to ask about an unsafe option
    the preset would skip). Without it, a rule comes after them."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")


def parse_duration(text: str) -> float:
    """'45s', '30m', '2h', '1d' → seconds."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration like 45s, 30m, 2h or 1d")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


class GatePolicy(_Strict):
    """How one kind of gate is decided."""

    rules: list[RuleSpec] = Field(default_factory=list)
    """Rules tried in order; the first that matches decides; none matching asks."""
    on_error: Action = "ask"
    """The answer when a rule fails to evaluate; it must fail closed: ask or stop, at a safety gate also skip, defer or
    rollback, at a command gate also reject."""
    headless_default: Action | None = None
    """The answer a headless run gives where the rules say ask (never approve or continue at a critical gate)."""
    deadline: str | None = None
    """How long a paused gate waits for a person, e.g. 30m; goes with on_deadline."""
    on_deadline: Action | None = None
    """The answer when nobody answered in time (journaled by: deadline); not `ask`. At a critical gate (an unverified
    rollback) approve or continue is not given: the gate keeps waiting."""

    @model_validator(mode="after")
    def _deadline_pair(self) -> GatePolicy:
        if (self.deadline is None) != (self.on_deadline is None):
            raise ValueError("deadline and on_deadline go together")
        if self.deadline is not None:
            parse_duration(self.deadline)
        return self

    @property
    def deadline_s(self) -> float | None:
        return parse_duration(self.deadline) if self.deadline else None


class Budgets(_Strict):
    """Limits that open a `budget` gate before the next option is tried."""

    wall_min: float | None = Field(default=None, gt=0)
    """Wall-clock minutes (the budget gate's `elapsed_min`); once reached, the budget gate opens before the next
    option. A limit a person lets the run go past is not asked about again."""
    llm_usd: float | None = Field(default=None, ge=0)
    """US dollars of language-model spend (`spent_usd`); once reached, the budget gate opens before the next option."""
    options: int | None = Field(default=None, ge=1)
    """Options applied (`options_tried`); once that many have been, the budget gate opens before the next one."""


class CommandRules(_Strict):
    """The command policy: glob patterns per class; the most restrictive class that matches any part of a command line
    decides."""

    allow: list[str] = Field(default_factory=list)
    """Glob patterns of commands that run without asking (each simple command of a line must match one)."""
    ask: list[str] = Field(default_factory=list)
    """Patterns that open a command gate before running; ask beats allow."""
    deny: list[str] = Field(default_factory=list)
    """Patterns never run, whatever else matches; deny beats ask and allow."""
    readonly: list[str] = Field(default_factory=list)
    """Patterns of what a language-model investigation subagent may run by itself (one program and its arguments, no
    shell); anything else it wants is asked at a command gate, and deny still wins. The campaign's own probes are
    classed by allow/ask/deny like every other command."""


class PolicyTest(_Strict):
    """A self-test: these facts at this gate must get this answer."""

    gate: GateKind
    """The gate kind the test asks."""
    facts: dict[str, Any]
    """The gate's facts for the test."""
    expect: dict[str, str]
    """`decide:` the expected answer, and optionally `rule:` the rule expected to give it."""

    @model_validator(mode="after")
    def _expect_keys(self) -> PolicyTest:
        unknown = set(self.expect) - {"decide", "rule"}
        if unknown or "decide" not in self.expect:
            raise ValueError("expect takes 'decide' and optionally 'rule'")
        return self


# A reference to an environment variable, resolved when a notification is sent (never at load, never
# journaled): `{{env:NAME}}` anywhere in a URL or header value, or `env:NAME` as the whole value.
ENV_REF = re.compile(r"\{\{\s*env:([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ENV_WHOLE = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)$")
# Headers and URL query parameters whose value is a credential: never written literally in the file.
# (policies/ cannot use tools/secrets.py; this is its rule for names, with the header spellings added.)
_SECRET_PART = re.compile(
    r"(?i)(^|[-_])(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|SIGNATURE|SIG|CREDENTIALS?)([-_]|$)"
    r"|^(AUTHORIZATION|PROXY-AUTHORIZATION|COOKIE|PASSWORD|APIKEY|TOKEN)$"
)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
NOTIFY_MAX_TIMEOUT_S = 30.0


def env_refs(text: str) -> list[str]:
    """The environment variables `text` refers to (`{{env:NAME}}`, or `env:NAME` as the whole value)."""
    whole = ENV_WHOLE.match(text.strip())
    return [whole.group(1)] if whole else ENV_REF.findall(text)


def literal_part(text: str) -> str:
    """`text` without its environment references: what the file itself says."""
    return "" if ENV_WHOLE.match(text.strip()) else ENV_REF.sub("", text)


def secret_like(name: str) -> bool:
    return bool(_SECRET_PART.search(name))


class NotifyTarget(_Strict):
    """Someone to tell when a gate starts waiting for a person: an HTTP(S) POST of the gate as JSON
    (`url`, optional `headers`), or a local command (`command`, argv; no shell) reading it on stdin.
    Credentials come from the environment when the notification is sent (`{{env:NAME}}`), so the
    file — which the session, its journal and every export keep — never holds one."""

    url: str | None = Field(default=None, min_length=1)
    """An http(s) URL the gate is POSTed to as JSON; credentials only as {{env:NAME}} (policy files only)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers for `url`; a credential's value only as {{env:NAME}}."""
    command: list[str] | None = Field(default=None, min_length=1)
    """A local command (argv, or a string split like a shell would; no shell) that reads the gate as JSON on stdin."""
    inherit_env: list[str] = Field(default_factory=list)
    """Environment variables a `command` inherits beyond a login shell's."""
    timeout_s: float = Field(default=5.0, gt=0, le=NOTIFY_MAX_TIMEOUT_S)
    """Seconds a notification may take (at most 30)."""

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"cannot split the command into arguments: {exc}") from None
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or ENV_WHOLE.match(value.strip()):
            return value  # all of it from the environment: checked when the notification is sent
        if any(c in value for c in "\r\n\t\0 "):
            raise ValueError("a URL has no spaces or line breaks")
        first = ENV_REF.search(value)
        head = value if first is None else value[: first.start()]  # what the file itself fixes
        if "://" not in head:
            if first is None:
                raise ValueError(f"only http:// and https:// URLs are notified, not {value!r}")
            return value  # the scheme comes from the environment: checked when sent
        scheme, rest = head.split("://", 1)
        if scheme.lower() not in ("http", "https"):
            raise ValueError(f"only http:// and https:// URLs are notified, not {scheme}://")
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if "@" in authority:
            raise ValueError(
                "credentials in the URL would be kept in the session and its journal; "
                "use {{env:NAME}} for them (resolved when the notification is sent)"
            )
        parts = urlsplit(value)
        if first is None and not parts.hostname:
            raise ValueError("the URL names no host")
        for name, item in parse_qsl(parts.query, keep_blank_values=True):
            if secret_like(name) and literal_part(item).strip() and not env_refs(item):
                raise ValueError(
                    f"query parameter {name!r} holds a secret's value in the file; use {{{{env:NAME}}}} instead"
                )
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if any(c in item for c in "\r\n\0"):
                raise ValueError(f"header {name}: a value is one line")
            if secret_like(name) and not env_refs(item):
                raise ValueError(
                    f"header {name} holds a secret's value in the file, where the session, its journal and "
                    f'exports would keep it; write it as "{{{{env:NAME}}}}" (e.g. "Bearer {{{{env:HOOK_TOKEN}}}}") '
                    "and set NAME in the environment"
                )
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> NotifyTarget:
        if (self.url is None) == (self.command is None):
            raise ValueError("a notify entry is exactly one of `url:` or `command:`")
        if self.url is None and self.headers:
            raise ValueError("headers go with url:, not command:")
        if self.command is None and self.inherit_env:
            raise ValueError("inherit_env goes with command:, not url:")
        if self.command is not None and not self.command[0].strip():
            raise ValueError("the command's program name is empty")
        if self.command is not None and any(ENV_REF.search(a) for a in self.command):
            raise ValueError(
                "{{env:NAME}} is for url: and headers:; a command reads what it needs from its environment "
                "(name the variables under inherit_env:)"
            )
        return self


class PolicyFile(_Strict):
    """A policy file: how gates are decided without a person, and which commands may run."""

    version: int = 1
    """The policy file format; this signoff reads version 1."""
    extends: str | None = Field(default=None, min_length=1)
    """A preset name (cautious, autonomous, ask-everything) or a path relative to this file that this policy builds on:
    its command lists are appended to the parent's, its per-gate rules come after the parent's guards (rules marked
    `guard`, such as the presets' `skip-unsafe`) and before the parent's other rules, deny still beats ask beats
    allow."""
    name: OneLine
    """The policy's name, shown with every decision it makes."""
    description: str = ""
    """What the policy does, in words."""
    commands: CommandRules = Field(default_factory=CommandRules)
    """The command policy: what runs, what asks, what is refused."""
    gates: dict[GateKind, GatePolicy] = Field(default_factory=dict)
    """Per gate kind: its rules and settings."""
    budgets: Budgets = Field(default_factory=Budgets)
    """Limits that open the budget gate before the next option."""
    brain: Literal["rules", "claude"] | None = None
    """The brain a campaign gets when neither --brain nor the campaign's brain.kind says."""
    notify: list[NotifyTarget] = Field(default_factory=list)
    """Told when a gate starts waiting for a person (after the campaign's own notify:)."""
    tests: list[PolicyTest] = Field(default_factory=list)
    """Self-tests run whenever the policy loads: a failing one is an error at its line."""

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
    file: str | None = None  # the file the rule was written in, when the policy extends another


class PolicyPart(BaseModel):
    """One file of a policy that extends others: where it is, its own text's sha256, the rules it gave."""

    name: str
    path: str
    sha256: str
    rules: list[str] = Field(default_factory=list)
    tests: int = 0  # its own `tests:`, run against the policy as resolved up to it


class Policy:
    """A loaded, compiled and self-tested policy."""

    def __init__(self, source: YamlSource, model: PolicyFile) -> None:
        self.path = source.path
        self.text = source.text
        self.sha256 = hashlib.sha256(source.text.encode()).hexdigest()
        self.model = model
        # The files it was resolved from, the policy's own first (one part when it extends nothing).
        self.parts: list[PolicyPart] = []
        self.rules: dict[GateKind, list[CompiledRule]] = {}
        seen_ids: dict[str, int] = {}
        for kind, gate in model.gates.items():
            spec = GATES[kind]
            compiled: list[CompiledRule] = []
            if gate.on_error not in spec.fail_closed:
                raise source.error(
                    ("gates", kind, "on_error"),
                    f"on_error must fail closed: at a {kind} gate one of {', '.join(spec.fail_closed)}",
                )
            for i, rule in enumerate(gate.rules):
                loc = ("gates", kind, "rules", i)
                if rule.id in seen_ids:
                    raise source.error(
                        (*loc, "id"),
                        f"rule id {rule.id!r} is already used at line {seen_ids[rule.id]}; "
                        "decisions cite rule ids, so they must be unique",
                    )
                seen_ids[rule.id] = source.line((*loc, "id")) or 0
                if rule.decide not in ALLOWED[kind]:
                    raise source.error((*loc, "decide"), _not_allowed(kind, rule.decide))
                if rule.guard and rule.decide not in spec.fail_closed:
                    raise source.error(
                        (*loc, "guard"),
                        f"a guard must fail closed: at a {kind} gate it decides one of {', '.join(spec.fail_closed)}",
                    )
                if rule.before_guards and rule.decide != "ask" and rule.decide not in spec.fail_closed:
                    # Ahead of the parent's guards a rule may only be as careful as they are, or hand the gate to
                    # a person: `before_guards` with `continue` would keep what `skip-unsafe` skips.
                    raise source.error(
                        (*loc, "before_guards"),
                        f"a rule before the guards must fail closed or ask: at a {kind} gate it decides ask or one "
                        f"of {', '.join(spec.fail_closed)}",
                    )
                if rule.guard and rule.when.strip() == "true":
                    raise source.error(
                        (*loc, "guard"),
                        "a guard needs a condition: with `when: true` a policy that extends this one could add no "
                        "rule of its own at this gate",
                    )
                if spec.takes_targets and rule.decide in ("skip", "defer", "select"):
                    raise source.error(
                        (*loc, "decide"),
                        f"{rule.decide} at a {kind} gate needs option ids, which a "
                        "rule cannot name; use continue, stop or ask",
                    )
                if rule.then is not None and (
                    rule.then != "rollback" or kind != "safety" or rule.decide in ("continue", "approve", "retry")
                ):
                    raise source.error(
                        (*loc, "then"),
                        "then: rollback is the only follow-up, for a safety rule that "
                        "skips, defers or stops (those always roll back; `then` makes it explicit)",
                    )
                try:
                    condition = Condition(rule.when, FACTS[kind])
                except ExprError as exc:
                    raise source.error(
                        (*loc, "when"), f"{exc} — facts of a {kind} gate: {', '.join(FACTS[kind])}"
                    ) from None
                compiled.append(
                    CompiledRule(spec=rule, kind=kind, condition=condition, line=source.line((*loc, "when")))
                )
            if gate.on_deadline is not None and (
                gate.on_deadline not in ALLOWED[kind]
                or gate.on_deadline == "ask"
                or (spec.takes_targets and gate.on_deadline in ("skip", "defer", "select"))
            ):
                raise source.error(
                    ("gates", kind, "on_deadline"),
                    f"on_deadline cannot be {gate.on_deadline!r} at a {kind} gate: it answers the gate when nobody did",
                )
            if gate.headless_default is not None and (
                gate.headless_default not in ALLOWED[kind]
                or gate.headless_default == "ask"
                or (spec.takes_targets and gate.headless_default in ("skip", "defer", "select"))
            ):
                raise source.error(
                    ("gates", kind, "headless_default"),
                    f"headless_default is the answer when nobody is there: at a {kind} gate one of "
                    + ", ".join(
                        a
                        for a in ALLOWED[kind]
                        if a not in ("ask", "skip", "defer", "select") or (not spec.takes_targets and a != "ask")
                    ),
                )
            self.rules[kind] = compiled
        self.source = source  # where each part of the file is, for errors at file:line

    @property
    def name(self) -> str:
        return self.model.name

    def gate(self, kind: GateKind) -> GatePolicy:
        return self.model.gates.get(kind, GatePolicy())


class LintIssue(BaseModel):
    level: str  # "warning" (the policy loads) — errors never reach here: they fail the load
    line: int | None
    message: str
    file: str | None = None  # where `line` is, when the policy extends others (else the policy's own file)


def lint(policy: Policy) -> list[LintIssue]:
    """What loads but is probably not what the author meant."""
    issues: list[LintIssue] = []
    for kind, rules in policy.rules.items():
        catch_all = None
        for rule in rules:
            unconditional = rule.spec.when.strip() == "true"
            if catch_all is not None:
                issues.append(
                    LintIssue(
                        level="warning",
                        line=rule.line,
                        file=rule.file,
                        message=f"gates.{kind}: rule {rule.spec.id!r} can never match: rule "
                        f"{catch_all!r} before it always matches",
                    )
                )
            elif unconditional:
                catch_all = rule.spec.id
        gate = policy.gate(kind)
        if catch_all is None and gate.headless_default is None:
            line = rules[-1].line if rules else None
            issues.append(
                LintIssue(
                    level="warning",
                    line=line,
                    file=rules[-1].file if rules else None,
                    message=f"gates.{kind}: no fallback rule (when: true); facts no rule matches "
                    "will pause the run and ask",
                )
            )
    commands = policy.model.commands
    for field, patterns in (("allow", commands.allow), ("readonly", commands.readonly)):
        for pattern in patterns:
            program = pattern.split()[0] if pattern.split() else ""
            if program.startswith("*") and "/" not in program and program != "*":
                # Before program identity, `*python*` also matched `/usr/bin/python3`; now a bare name is PATH's.
                issues.append(
                    LintIssue(
                        level="warning",
                        line=None,
                        message=f"commands.{field}: {pattern!r} names a program on PATH only, never a command "
                        f"written with a path such as {{{{python}}}} on a local host; add "
                        f"'/**/{program.lstrip('*')} …' for those",
                    )
                )
    return issues


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


__all__ = ["NotifyTarget", "Policy", "PolicyFile", "SourceError", "resolve_policy_path"]
