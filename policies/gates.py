"""The gate contract: what each kind of checkpoint knows (typed facts) and which answers it takes.

A `Decision` is the one shape every decider produces — the one-line grammar, a policy rule, a
session rule, a headless default — so the journal, replay and the graph treat them alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policies.expr import FactSpec

GateKind = Literal["plan", "triage", "safety", "continue_or_ask", "rollback", "command", "budget"]
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
)
ACTIONS: tuple[Action, ...] = (
    "continue", "approve", "select", "skip", "defer", "retry", "rollback", "ask", "stop", "reject"
)  # fmt: skip

VERDICTS = ["safe", "unsafe", "unknown"]
AB_VERDICTS = ["improved", "regressed", "no_effect", "inconclusive"]
RISKS = ["low", "medium", "high"]
OUTCOMES = ["kept", "skipped", "no-go", "deferred", "untested", "none"]


def _s(doc: str, enum: list[str] | None = None) -> FactSpec:
    return FactSpec(type="string", enum=enum, doc=doc)


def _d(doc: str, default: float | None = None) -> FactSpec:
    return FactSpec(type="double", doc=doc, default=default)


def _i(doc: str, default: int | None = None) -> FactSpec:
    return FactSpec(type="int", doc=doc, default=default)


def _b(doc: str, default: bool | None = None) -> FactSpec:
    return FactSpec(type="bool", doc=doc, default=default)


FACTS: dict[GateKind, dict[str, FactSpec]] = {
    "plan": {
        "options": _i("number of options in the plan"),
        "proposed": _i("options the brain added beyond the campaign"),
        "reordered": _b("the brain changed the campaign's order"),
    },
    "triage": {
        "no_go_count": _i("options whose investigation found a blocker"),
        "hazard_count": _i("hazards reported by investigations"),
        "feasible_count": _i("options left to try"),
        "has_next_step": _b("at least one option is left to try"),
    },
    "safety": {
        "option": _s('the option id, e.g. "2"'),
        "verdict": _s("safety verdict from stress, benchmarks and investigation", VERDICTS),
        "ab_verdict": _s("A/B verdict on the primary metric", AB_VERDICTS),
        "has_estimate": _b("the A/B produced an estimate (else gain_pct, ci_low, ci_high are 0.0)"),
        "gain_pct": _d("effect on the primary metric in %, positive = better"),
        "ci_low": _d("lower bound of the 95% CI of the gain, %"),
        "ci_high": _d("upper bound of the 95% CI of the gain, %"),
        "pairs": _i("valid interleaved A/B pairs"),
        "wedges": _i("stress runs that hung past their deadline"),
        "stress_errors": _i("stress runs that crashed, or a server left degraded after the stress"),
        "failed_requests": _i("benchmark runs of the candidate not counted (failures, garbage, timeouts)"),
        "hazards": _i("hazards the option's investigation confirmed (each makes it unsafe, reproduced or not)"),
        "hazard_reproduced": _b("a confirmed hazard that the stress tests also made happen (default false)", False),
        "measurement_broken": _b("the benchmark failed in both arms from the first pairs (default false)", False),
        "confidence": _d("0..1, how sure the assessment is"),
        "risk": _s("risk of keeping the option", RISKS),
        "hosts_measured": _i("hosts the benchmark ran on (each with its own A/B when more than one)", 1),
        "hosts_regressed": _i("hosts whose own A/B says the option made them worse", 0),
    },
    "continue_or_ask": {
        "has_next_step": _b("an option is left to try"),
        "next_option": _s('id of the next option, "" when none'),
        "remaining": _i("options left to try"),
        "kept": _i("options kept so far"),
        "last_outcome": _s("outcome of the option just finished", OUTCOMES),
        "confidence": _d("confidence of the last assessment, 0..1"),
    },
    "rollback": {
        "option": _s("the option that was rolled back"),
        "health_ok": _b("the health check passed after the revert"),
        "verified": _b("health ok, the check says the option is off, and the metric is back within the noise band"),
        "measured": _b("the baseline metric was re-measured (else delta_pct is 0.0)"),
        "delta_pct": _d("baseline metric after revert vs the known-good baseline, %"),
        "drift_pct": _d("how far the baseline itself moved since it was measured, %, when known (else 0.0)", 0.0),
        "state_checked": _b("the option's `check` ran on every host it changed (default false)", False),
        "state_ok": _b("no host's `check` says the option is still in effect (default true)", True),
    },
    "command": {
        "command": _s("the command to run"),
        "host": _s("the host it would run on"),
        "klass": _s("its class under the command rules", ["allow", "ask", "deny"]),
    },
    "budget": {
        "spent_usd": _d("LLM spend so far"),
        "elapsed_min": _d("wall time so far, minutes"),
        "options_tried": _i("options applied so far"),
    },
}

ALLOWED: dict[GateKind, tuple[Action, ...]] = {
    "plan": ("approve", "continue", "select", "skip", "defer", "stop", "ask"),
    "triage": ("continue", "approve", "select", "skip", "defer", "stop", "ask"),
    "safety": ("continue", "approve", "skip", "defer", "rollback", "retry", "stop", "ask"),
    "continue_or_ask": ("continue", "approve", "select", "skip", "defer", "stop", "ask"),
    "rollback": ("approve", "continue", "retry", "stop", "ask"),
    "command": ("approve", "reject", "skip", "stop", "ask"),
    "budget": ("continue", "stop", "ask"),
}

# What "go ahead" means at each gate, for the one-key answers and the echo.
MEANING: dict[GateKind, dict[str, str]] = {
    "triage": {"continue": "skip the no-go options and proceed", "skip": "drop the named options"},
    "safety": {
        "continue": "keep the option (it becomes the new baseline)",
        "skip": "roll it back and move on",
        "defer": "roll it back and revisit it at the end",
        "retry": "benchmark again with more pairs",
    },
    "continue_or_ask": {"continue": "try the next option", "select": "try the named option next"},
    "rollback": {"approve": "accept the rollback as is", "retry": "revert and verify again"},
    "command": {"approve": "run it", "reject": "do not run it; the option is not tried"},
}


def suggested_answer(kind: GateKind, facts: dict[str, Any]) -> str:
    """A one-liner this gate accepts, for the pause message: the cautious answer where there is one."""
    if kind == "safety":
        return "skip" if facts.get("verdict") != "safe" else "continue"
    return {
        "plan": "approve",
        "triage": "continue",
        "continue_or_ask": "continue",
        "rollback": "revert and verify",
        "command": "approve",
        "budget": "continue",
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
