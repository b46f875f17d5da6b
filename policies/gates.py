"""The gate contract: what each kind of checkpoint knows (typed facts) and which answers it takes.

Everything that differs between gate kinds is one `GateSpec` in `GATES`: the policy engine and its schema, the
one-line reader, the answers' echo, `signoff check`, the reference and the TUI all read it there, and no other module
keys a table by gate kind (tests/unit/test_gate_specs.py). ARCHITECTURE.md, "Adding a gate kind", is the recipe.

A `Decision` is the one shape every decider produces — the one-line grammar, a policy rule, a
session rule, a headless default — so the journal, replay and the graph treat them alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policies.expr import FactSpec
from policies.facts import (
    BrainUnavailableFacts,
    BudgetFacts,
    CommandFacts,
    ContinueFacts,
    GateFacts,
    GoalFacts,
    PlanFacts,
    RollbackFacts,
    SafetyFacts,
    TriageFacts,
    specs,
)

# Their home is policies.kinds (light, for `--help`); most readers take them from here.
from policies.kinds import Action as Action
from policies.kinds import GateKind as GateKind
from policies.kinds import Scope as Scope

# How `signoff check` finds where a gate of this kind would stop a headless run: from its rules ("rules"), by a check of
# its own ("apart": the plan and the commands are checked against the campaign itself), from its rules only when a
# budget is set ("budget": no budget, no gate) or only when a language model decides ("model": only a model can be
# given up).
Checked = Literal["rules", "apart", "budget", "model"]

ACTIONS: tuple[Action, ...] = (
    "continue", "approve", "select", "skip", "defer", "retry", "rollback", "ask", "stop", "reject"
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class GateSpec:
    """One gate kind, whole: what it knows, which answers it takes and what they mean there, how a policy may
    answer it, and how it is shown. A new kind is one of these, a node that opens it and that node's wiring."""

    facts: type[GateFacts]
    """The typed facts it shows its deciders (policies/facts.py); the policy language's view is derived from it."""
    allowed: tuple[Action, ...]
    """The answers it takes."""
    fail_closed: tuple[Action, ...]
    """Answers that never let a run go ahead: what a policy's `on_error`, guards and rules ahead of the guards may
    decide here."""
    suggest: str | Callable[[Mapping[str, Any]], str]
    """A one-liner it accepts, for the pause message: the cautious answer where there is one (or how to find it from
    the facts)."""
    meaning: Mapping[Action, str] = field(default_factory=dict[Action, str])
    """What an answer does at this gate, where that is more than its name: the TUI's labels and the echo."""
    synonyms: Mapping[Action, Action] = field(default_factory=dict[Action, Action])
    """An answer it does not take, read as the one it does ("go ahead" at a command gate runs the commands)."""
    takes_targets: bool = False
    """skip, defer and select here name options (a person's answer does; a policy rule cannot), and the run goes on
    to the next option with either of them."""
    unnamed: tuple[Action, str] | None = None
    """For a kind added after policies were first written: the answer, and why, of a policy with no rules for it."""
    checked: Checked = "rules"
    """How `signoff check` finds where it stops a headless run (see `Checked`)."""
    primary: Action | None = None
    """Where approve and continue both go ahead, the one the TUI gives a key (the other's key still answers)."""
    same_as: Mapping[Action, Action] = field(default_factory=dict[Action, Action])
    """Answers that do what another one shown does: no key of their own on screen (their key still answers)."""
    marked: bool = True
    """The TUI marks its cautious answer; False where only the person can judge (a command, a budget)."""
    ask_first: bool = False
    """Its question's first line is what it asks (else the last: the summary and evidence come before it)."""
    verbatim: bool = False
    """Its question's lines are shown in their order, whole (a command may span lines)."""
    choices: str | None = None
    """Where its question offers a choice rather than asking yes or no, the words that choose: a bare "yes" there
    answers nothing, and the refusal quotes these."""
    reasons: str | None = None
    """A regular expression of the reasons the one-line reader takes beside a go-ahead here as arguing for it (see
    `_DOUBTED`), not as a second answer."""

    def suggested(self, facts: Mapping[str, Any]) -> str:
        return self.suggest if isinstance(self.suggest, str) else self.suggest(facts)


def _keep_if_safe_and_better(facts: Mapping[str, Any]) -> str:
    # Keep only what is safe and measured better (as the assessment does); a safe option that did not help, or whose
    # A/B could not tell, is rolled back.
    kept = facts.get("verdict") == "safe" and facts.get("ab_verdict", "improved") == "improved"
    return "continue" if kept else "skip"


# `GateSpec.reasons`: reasons a gate reads beside its go-ahead, beyond the calm words, because they argue for it: at a
# safety gate a doubt of the stress test that wedged ("keep it, the stress harness is flaky") or the risk taken ("I'll
# take the risk", "I'll watch it"); at a rollback gate a doubt of the check that failed ("accept as is, check is
# flaky"); at a budget gate what pays for going over. Their subject is never the gain or the option ("keep it, the gain
# is noise", "it's flaky", "the benchmark was a fluke" argue against the keep and stay refused), and beside a decision
# that does not go ahead they are refused (they argue against it).
_DOUBTED = (
    r"(?:'s| is| was| were| are| seems| looks| looked| seemed)?"
    r"(?: (?:just|probably|likely|a|an|known|totally|so|super|pretty|definitely|clearly|notoriously))*(?: to be)?"
    r" (?:flaky|flakey|flake|fluke|noise|noisy|broken|bogus|busted|lying|known to lie|false positive|red herring"
    r"|(?:known |test )?flake)(?: (?:af|anyway|anyways|imo|tbh|again|on this box|on this cluster))*"
)

GATES: Mapping[GateKind, GateSpec] = {
    "plan": GateSpec(
        facts=PlanFacts,
        allowed=("approve", "continue", "select", "skip", "defer", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="approve",
        takes_targets=True,
        checked="apart",
        primary="approve",
    ),
    "triage": GateSpec(
        facts=TriageFacts,
        allowed=("continue", "approve", "select", "skip", "defer", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="continue",
        meaning={"continue": "skip the no-go options and proceed", "skip": "drop the named options"},
        takes_targets=True,
    ),
    "safety": GateSpec(
        facts=SafetyFacts,
        allowed=("continue", "approve", "skip", "defer", "rollback", "retry", "stop", "ask"),
        fail_closed=("ask", "stop", "skip", "defer", "rollback"),
        suggest=_keep_if_safe_and_better,
        meaning={
            "continue": "keep the option (it becomes the new baseline)",
            "skip": "roll it back and move on",
            "defer": "roll it back and revisit it at the end",
            "retry": "benchmark again with more pairs",
            "stop": "roll it back and end the run",
        },
        same_as={"rollback": "skip"},  # two keys that both roll back read as two different things
        choices="'keep it' or 'skip it' (or 'roll back', 'retry', 'stop')",
        reasons=(
            r"(?:(?:the|that|this|our) )?(?:stress(?: test| harness| run)?|(?:stress |test )?harness|wedge|hang"
            rf"|stress wedge|watchdog){_DOUBTED}"
            # a stress test named as the campaign names them ("the abort-cascade test"): hyphenated, never "no-…", "a-b"
            r"|(?:(?:the|that|this|our) )?(?:(?!a-b\b|(?:no|non|not|anti|speed|load)-)[a-z0-9]+(?:-[a-z0-9]+)+ )?"
            r"(?:stress(?: test| harness)?|harness|test)(?: also)? (?:hangs|wedges"
            r"|fails|flakes|does that|does the same) on (?:main|master|the baseline|baseline)(?: too| as well)?"
            r"|(?:i'll|we'll|i will|we will|happy to) (?:take|own|accept|live with) (?:the |that |this )?risk"
            r"|risk (?:is )?accepted"
            r"|(?:i'll|we'll|i will|we will) (?:watch|monitor) (?:it|that|this|the hosts)(?: closely)?"
            r"|(?:yes |yeah |yep )?i (?:saw|know about) (?:the |that )?(?:wedge|hang|risk)"
        ),
    ),
    "continue_or_ask": GateSpec(
        facts=ContinueFacts,
        allowed=("continue", "approve", "select", "skip", "defer", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="continue",
        meaning={"continue": "try the next option", "select": "try the named option next"},
        takes_targets=True,
        ask_first=True,  # the assessor's words follow the question
    ),
    "rollback": GateSpec(
        facts=RollbackFacts,
        allowed=("approve", "continue", "retry", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="revert and verify",
        meaning={"approve": "accept the rollback as is", "retry": "revert and verify again"},
        synonyms={"rollback": "retry"},  # "revert" here is its "revert and verify again"
        choices="'revert again', 'accept it as is' or 'stop'",
        primary="approve",
        reasons=(
            r"(?:(?:the|that|this|our) )?(?:(?:verify |verification )?checks?|verifier|verification|verify step)"
            rf"(?:{_DOUBTED}"
            r"|(?:'s| is| was)? (?:just |probably |likely |clearly )?(?:cosmetic|stale|wrong))"
            r"|i (?:verified|checked)(?: it| them| the hosts)? (?:by hand|manually|myself)"
            r"|(?:the )?(?:health(?: ?checks?)?|smoke tests?|(?:both |the |all )?hosts)"
            r" (?:pass(?:es|ed)?|(?:is|are|look|looks)"
            r" (?:ok|okay|fine|green|healthy))"
        ),
    ),
    "command": GateSpec(
        facts=CommandFacts,
        allowed=("approve", "reject", "skip", "stop", "ask"),
        fail_closed=("ask", "stop", "reject"),
        suggest="approve",
        meaning={"approve": "run it", "reject": "do not run it; the option is not tried"},
        synonyms={"continue": "approve"},  # "go ahead" runs the commands
        checked="apart",
        marked=False,  # only the person can judge running what the policy asks about
        verbatim=True,
    ),
    "budget": GateSpec(
        facts=BudgetFacts,
        allowed=("continue", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="continue",
        synonyms={"approve": "continue"},
        checked="budget",
        choices="'continue' or 'stop'",
        marked=False,  # only the person can judge going past a budget
        # at a budget gate, what pays for going over: "we have the cluster till 6", "finance ok'd the extra hours"
        reasons=(
            r"(?:we (?:have|got|still have)|we've got|we've still got) (?:the )?"
            r"(?:cluster|hosts|gpus|boxes|machines|time|hours)(?: booked| reserved)?"
            r"(?: (?:till|until) (?:\d{1,2}(?::\d\d)?(?: ?(?:am|pm))?|noon|midnight|tonight|tomorrow|monday|tuesday"
            r"|wednesday|thursday|friday|saturday|sunday|the weekend|eod|end of (?:the )?(?:day|week)|next week))?"
            r"|(?:i'll|i will|we'll|we will) (?:sign off|cover|approve|pay for|eat)(?: on| for)? (?:the )?"
            r"(?:overage|extra (?:hours|cost|spend)|cost)"
            r"|(?:finance|my boss|the boss|mgmt|management) (?:ok'd|okayed|approved|signed off)"
            r"(?: on)? (?:the )?(?:extra (?:hours|spend|cost)|overage|it)"
            r"|(?:the )?(?:overage|extra (?:hours|spend|cost)) (?:is|was|'s|has been|got) (?:approved|ok'd|okayed"
            r"|signed off|covered)"
        ),
    ),
    "goal": GateSpec(
        facts=GoalFacts,
        allowed=("continue", "retry", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="continue",
        meaning={
            "continue": "accept the measured result and finish on the final configuration",
            "retry": "measure the final configuration against the start again, with more pairs (at least the "
            "benchmark's)",
            "stop": "finish on the final configuration without accepting the result",
        },
        synonyms={"approve": "continue"},
        choices="'accept', 'measure again' or 'stop'",
        # Its answer changes no host (they are on the final configuration either way), so a policy from before it
        # keeps running headless as it did, and the report says the goal as measured.
        unnamed=("continue", "the policy has no goal rules: the goal is reported as measured"),
    ),
    "brain_unavailable": GateSpec(
        facts=BrainUnavailableFacts,
        allowed=("continue", "retry", "stop", "ask"),
        fail_closed=("ask", "stop"),
        suggest="continue",
        meaning={
            "continue": "go on with the rule brain for the rest of the session",
            "retry": "call the model again from the next step",
            "stop": "end the run with its report",
        },
        # A policy from before this gate went on with the rule brain, and still does.
        unnamed=(
            "continue",
            "the policy has no brain_unavailable rules: the rule brain decides the rest of the session",
        ),
        checked="model",
        choices="'continue with rules', 'retry' or 'stop'",
    ),
}

# Views of GATES for the many readers that want one column of it.
GATE_KINDS: tuple[GateKind, ...] = tuple(GATES)
ALLOWED: Mapping[GateKind, tuple[Action, ...]] = {kind: spec.allowed for kind, spec in GATES.items()}
# The policy language's facts per gate kind, derived from the facts models.
FACTS: Mapping[GateKind, dict[str, FactSpec]] = {kind: specs(spec.facts) for kind, spec in GATES.items()}
# Gates whose options an answer names ("skip 2", "go with 3"), and that go on to the next option.
OPTION_GATES: tuple[GateKind, ...] = tuple(kind for kind, spec in GATES.items() if spec.takes_targets)


def spec_for(kind: object) -> GateSpec | None:
    """The spec of a kind named by text from outside (a journal, a forged or newer one); None for one unknown here."""
    return GATES[kind] if isinstance(kind, str) and kind in GATE_KINDS else None


def suggested_answer(kind: GateKind, facts: Mapping[str, Any]) -> str:
    """A one-liner this gate accepts, for the pause message: the cautious answer where there is one."""
    return GATES[kind].suggested(facts)


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
