"""The gate contract: what each kind of checkpoint knows (typed facts) and which answers it takes.

A `Decision` is the one shape every decider produces — the one-line grammar, a policy rule, a
session rule, a headless default — so the journal, replay and the graph treat them alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policies.expr import FactSpec
from policies.facts import FACTS

GateKind = Literal[
    "plan", "triage", "safety", "continue_or_ask", "rollback", "command", "budget", "goal", "brain_unavailable"
]
Action = Literal["continue", "approve", "select", "skip", "defer", "retry", "rollback", "ask", "stop", "reject"]
Scope = Literal["once", "for_now", "standing"]

GATE_KINDS: tuple[GateKind, ...] = (
    "plan",
    "triage",
    "safety",
    "continue_or_ask",
    "rollback",
    "command",
    "budget",
    "goal",
    "brain_unavailable",
)
ACTIONS: tuple[Action, ...] = (
    "continue", "approve", "select", "skip", "defer", "retry", "rollback", "ask", "stop", "reject"
)  # fmt: skip

ALLOWED: dict[GateKind, tuple[Action, ...]] = {
    "plan": ("approve", "continue", "select", "skip", "defer", "stop", "ask"),
    "triage": ("continue", "approve", "select", "skip", "defer", "stop", "ask"),
    "safety": ("continue", "approve", "skip", "defer", "rollback", "retry", "stop", "ask"),
    "continue_or_ask": ("continue", "approve", "select", "skip", "defer", "stop", "ask"),
    "rollback": ("approve", "continue", "retry", "stop", "ask"),
    "command": ("approve", "reject", "skip", "stop", "ask"),
    "budget": ("continue", "stop", "ask"),
    "goal": ("continue", "retry", "stop", "ask"),
    "brain_unavailable": ("continue", "retry", "stop", "ask"),
}

# Gate kinds added after policies were first written, and what one that names no rule for the kind answers: a goal
# gate's answer changes no host (the hosts are on the final configuration either way), so a policy from before it
# keeps running headless as it did, and the report says the goal as measured.
# The same for a brain given up: a policy from before this gate went on with the rule brain, and still does.
UNNAMED: dict[GateKind, tuple[Action, str]] = {
    "goal": ("continue", "the policy has no goal rules: the goal is reported as measured"),
    "brain_unavailable": (
        "continue",
        "the policy has no brain_unavailable rules: the rule brain decides the rest of the session",
    ),
}

# What "go ahead" means at each gate, for the one-key answers and the echo.
MEANING: dict[GateKind, dict[str, str]] = {
    "triage": {"continue": "skip the no-go options and proceed", "skip": "drop the named options"},
    "safety": {
        "continue": "keep the option (it becomes the new baseline)",
        "skip": "roll it back and move on",
        "defer": "roll it back and revisit it at the end",
        "retry": "benchmark again with more pairs",
        "stop": "roll it back and end the run",
    },
    "continue_or_ask": {"continue": "try the next option", "select": "try the named option next"},
    "rollback": {"approve": "accept the rollback as is", "retry": "revert and verify again"},
    "goal": {
        "continue": "accept the measured result and finish on the final configuration",
        "retry": "measure the final configuration against the start again, with more pairs (at least the benchmark's)",
        "stop": "finish on the final configuration without accepting the result",
    },
    "command": {"approve": "run it", "reject": "do not run it; the option is not tried"},
    "brain_unavailable": {
        "continue": "go on with the rule brain for the rest of the session",
        "retry": "call the model again from the next step",
        "stop": "end the run with its report",
    },
}


def suggested_answer(kind: GateKind, facts: dict[str, Any]) -> str:
    """A one-liner this gate accepts, for the pause message: the cautious answer where there is one."""
    if kind == "safety":
        # Keep only what is safe and measured better (as the assessment does); a safe option that did not
        # help, or whose A/B could not tell, is rolled back.
        kept = facts.get("verdict") == "safe" and facts.get("ab_verdict", "improved") == "improved"
        return "continue" if kept else "skip"
    return {
        "plan": "approve",
        "triage": "continue",
        "continue_or_ask": "continue",
        "rollback": "revert and verify",
        "command": "approve",
        "budget": "continue",
        "goal": "continue",
        "brain_unavailable": "continue",
    }[kind]


class Decision(BaseModel):
    """DESIGN §3: the same JSON from the grammar, the policy engine, session rules and the journal."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    targets: list[int] = Field(default_factory=list)
    condition: str | None = None
    otherwise: str | None = None
    scope: Scope = "once"
    runs: int | None = None
    then: Action | None = None
    rationale: str | None = None
    except_hosts: list[str] = Field(default_factory=list)  # "approve on all except gpu-7"
    hedged: bool = False
    # How a tolerant reading got here ("'soudnds' → 'sounds'", "'the overlap scheduler' → #2"): shown, confirmed.
    read_as: list[str] = Field(default_factory=list)
    confirm: bool = False
    raw: str | None = None
    parser: str | None = None
    by: str | None = None
    rule: str | None = None
    # Every rule whose condition held for these facts, in the order they are tried, the one that decided first
    # (a policy's or a session rule's decision; None for a person's answer and in journals from before it).
    matched: list[str] | None = None

    def describe(self) -> str:
        """The echo a person sees before a decision takes effect."""
        words = [self.action.upper()]
        if self.targets:
            words.append(", ".join(f"#{t}" for t in self.targets))
        if self.runs:
            words.append(f"with {self.runs} pairs")
        if self.except_hosts:
            words.append(f"on all hosts except {', '.join(self.except_hosts)}")
        if self.scope == "for_now":
            words.append("(deferred to end of run)")
        elif self.scope == "standing":
            words.append("(standing rule for this session)")
        if self.condition:
            words.append(f"IF {self.condition}")
        if self.then:
            words.append(f"then {self.then.upper()}")
        return " ".join(words)


class Gate(BaseModel):
    """A checkpoint as shown to a decider: question, typed facts, allowed answers, recommendation."""

    id: str
    kind: GateKind
    option: int | None = None
    question: str
    facts: dict[str, Any]
    allowed: list[Action]
    options: list[int] = Field(default_factory=list)  # option ids a one-liner may name here
    hosts: list[str] = Field(default_factory=list)  # hosts "on all except …" may name here
    titles: dict[str, str] = Field(default_factory=dict)  # option id → title: options named in words
    commands: list[str] = Field(default_factory=list)  # a command gate's listed commands, numbered from 1
    status: dict[str, str] = Field(default_factory=dict)  # option id → pending/current/kept/skipped/…
    evidence: list[str] = Field(default_factory=list)
    recommendation: Decision | None = None


def facts_for(kind: GateKind) -> dict[str, FactSpec]:
    return FACTS[kind]


def check_facts(kind: GateKind, facts: dict[str, Any]) -> dict[str, Any]:
    """Refuse facts a gate does not declare, or of the wrong type (a bug in the caller)."""
    specs = FACTS[kind]
    unknown = set(facts) - set(specs)
    if unknown:
        raise ValueError(f"{kind} gate has no fact(s) {sorted(unknown)}")
    pytypes: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "double": (float, int),
        "int": (int,),
        "bool": (bool,),
    }
    for name, value in facts.items():
        spec = specs[name]
        if not isinstance(value, pytypes[spec.type]) or (spec.type != "bool" and isinstance(value, bool)):
            raise ValueError(f"{kind} fact {name}={value!r} is not a {spec.type}")
        if spec.enum is not None and value not in spec.enum:
            raise ValueError(f"{kind} fact {name}={value!r} is not one of {spec.enum}")
    return facts
