"""The graph state: JSON-plain and small. Bulky evidence lives in the journal and artifacts/.

Option ids are string keys ("2") so state round-trips through any serializer unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Required, TypedDict, cast, get_type_hints

from langgraph.channels.delta import DeltaChannel

from agent.models import Assessment
from agent.models.verification import Verification
from policies.facts import BrainCause, Outcome


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Shallow-merge per key, one level deep for dict values (so nodes update one option's fields)."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _merged(state: dict[str, Any] | None, writes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    for w in writes:
        state = merge(state, w)
    return state or {}


def _appended(state: list[Any] | None, writes: Sequence[list[Any]]) -> list[Any]:
    return [*(state or []), *(item for w in writes for item in w)]


# Channels that grow as the campaign goes are DeltaChannels: a checkpoint stores only what changed in
# its step, not the whole accumulated value again (the SQLite saver re-stores every other channel in
# full at every step, which made the checkpoint DB quadratic in the number of steps).
def merged() -> DeltaChannel[dict[str, Any]]:
    return DeltaChannel(_merged)


def appended() -> DeltaChannel[list[Any]]:
    return DeltaChannel(_appended)


class OptionEntry(TypedDict, total=False):
    """What the run knows of one option, merged key by key as it goes: its title and outcome with the reasons for
    it, the assessment's verdicts and gain, what a brain's proposal would run, where a keep with exceptions left
    it, and its last rollback's verification."""

    title: str
    outcome: Outcome
    reasons: list[str]
    verdict: str | None
    ab_verdict: str | None
    gain_pct: float | None
    ci: list[float] | None
    proposed: bool  # the brain proposed it (the plan gate lets it in or not)
    rationale: str
    apply: list[str]
    revert: list[str]
    hosts: list[str]  # a keep with exceptions: the hosts it stays on
    except_hosts: list[str]  # … and those it was rolled back on
    rollback: Verification


class PermissionRequest(TypedDict):
    """A command an investigation subagent asked to run (it is not on the policy's read-only list), and where."""

    host: str
    command: str


class GateAsked(TypedDict):
    """A gate as it was asked: its id, kind and option, the question, its facts, and what the policy recommended
    (`policies.gates.Decision` as JSON, or None)."""

    id: str
    kind: str
    option: int | None
    question: str
    facts: dict[str, Any]
    recommendation: dict[str, Any] | None


class GateRecord(GateAsked):
    """A decided gate as the state keeps it (agent/nodes/gating.py: record), with its decision (a `Decision` as
    JSON). The runner journals it from here when no person answered it; the report and later gates read who decided
    what."""

    decision: dict[str, Any]


class BudgetCheck(TypedDict):
    """The budget as `pick_next` last measured it (agent/nodes/pick.py: check_budget): the budget gate's facts, and
    which of the policy's limits they are at or past (`limits`, by name; `exceeded`, in words)."""

    elapsed_min: float
    spent_usd: float
    options_tried: int
    exceeded: list[str]
    limits: list[str]


class BrainDown(TypedDict):
    """The model given up (`agent.brain.GivenUp`: why, after what, how many calls in a row failed) and the spend
    then: what the brain_unavailable gate asks about."""

    why: str
    cause: BrainCause
    failed_calls: int
    spent_usd: float


class CalibratedOption(TypedDict):
    """Whether an option's expected gain can be told from the A/A noise: the pairs it would take (None: no margin over
    the campaign's noise allowance), and whether it is under the noise floor at the planned pairs."""

    expected_pct: float
    pairs_needed: int | None
    below_noise_floor: bool


class Calibration(TypedDict, total=False):
    """The A/A calibration at setup (agent/nodes/setup.py: calibrate): the valid pairs, the noise they measured and the
    smallest effect the planned pairs can tell from it, per option; `error` when too few pairs were valid, `warning`
    when so few that the estimate is not used alone."""

    pairs: Required[int]
    sd_pct: float
    noise_floor_pct: float
    at_pairs: int
    options: dict[str, CalibratedOption]
    warning: str
    error: str


class Confirmation(TypedDict, total=False):
    """The end-of-campaign A/B of the final configuration against the start (agent/nodes/confirm.py: summarize): the
    kept options and the round, why none ran (`skipped`) or why it stopped short (`error`), and what it measured: the
    goal (`tools.goal.GoalVerdict` as JSON) in words, the A/B's figures, each kept option's own gain and the
    interactions between them (`tools.goal.Interaction` as JSON, each with its words)."""

    kept: Required[list[int]]
    rounds: int
    level: float
    skipped: str
    error: str
    goal: dict[str, Any]
    summary: str
    ab: dict[str, Any]
    singles: list[dict[str, Any]]
    interaction_note: str
    interactions: list[dict[str, Any]]


class Abandoning(TypedDict, total=False):
    """`signoff abandon` in progress (agent/nodes/abandon.py): who asked, the options to roll back in order, the gate
    it closed unanswered (as the journal had it), and the options already handed to the rollback node."""

    by: str | None
    roll_back: list[int]
    gate: GateAsked | None
    done: list[int]


class State(TypedDict, total=False):
    plan: list[int]
    queue: list[int]
    current: int | None
    options: Annotated[dict[str, OptionEntry], merged()]
    # An entry that is a model's JSON (its model_dump, named beside it) is read back through that model, which types it.
    findings: Annotated[dict[str, dict[str, Any]], merged()]  # agent.models.Finding
    permission_requests: Annotated[dict[str, list[PermissionRequest]], merged()]  # per option
    ab: Annotated[dict[str, dict[str, Any]], merged()]
    stress: Annotated[dict[str, list[dict[str, Any]]], merged()]
    assessments: Annotated[dict[str, dict[str, Any]], merged()]  # agent.models.Assessment
    gates: Annotated[list[GateRecord], appended()]
    session_rules: Annotated[list[dict[str, Any]], appended()]  # policies.session_rules.SessionRule
    approved: Annotated[list[str], appended()]  # commands a command gate approved
    # Where the last node sent the run, in sessions made before each node returned its destination in a `Command`:
    # kept so their checkpoints load as they were, read by nothing.
    route: str | None
    retry_pairs: int | None
    # the rollback gate's "revert again, up to 3 times": attempts left after this one, and whether the last failed
    # attempt goes round again (agent/nodes/rollback.py)
    reverts_left: int
    revert_again: bool
    verification: Verification | None  # the last rollback's (agent/nodes/rollback.py)
    stopping: bool
    command_scope: str | None  # "campaign" or an option id awaiting command approval
    report: dict[str, Any] | None  # {"error": …} when the run ends early; the report node's summary once written
    calibration: Calibration | None  # measured at setup when the campaign asks for it
    reference: list[float]  # the known-good baseline metric: measured at setup, replaced when an option is kept
    # The most recent readings of the baseline that were trusted (setup, a verified rollback, a keep): what
    # the next option's A arm must start from, or its revert is suspect (agent/exec/verification.py).
    baseline_now: list[float]
    tried: Annotated[list[int], appended()]  # options that reached apply (budget: options tried)
    budget: BudgetCheck | None
    budget_approved: list[str]  # limits a person or rule agreed to go past
    brain_down: BrainDown | None  # the brain_unavailable gate asks about it next
    brain_rules: str | None  # why the rule brain decides the rest of the session (that gate's "continue")
    confirmation: Confirmation | None
    # `signoff abandon`: who, the options to roll back (agent/nodes/abandon.py) and those already handed to rollback
    abandon: Abandoning | None
    confirm_pairs: int | None  # a goal gate's "measure again": the pairs the next confirmation A/B runs


def current(state: State) -> int:
    """The option an option-scoped node works on: the graph routes to those nodes only once one is chosen."""
    option = state.get("current")
    if option is None:
        raise RuntimeError("an option-scoped node ran with no current option (a node went to it before choosing one)")
    return option


def assessed(state: State, option: str) -> Assessment | None:
    """An option's assessment as `assess` wrote it (`Assessment`'s JSON), read back through the model; None before
    the option was assessed."""
    written = state.get("assessments", {}).get(option)
    return Assessment.model_validate(written) if written else None


def updated(state: State, update: State) -> State:
    """The state as the graph will have it once `update` has gone through each entry's own reducer: what a node
    that picks its destination from its own writes (a fan-out of what it just approved) must read."""
    out: dict[str, Any] = {**state}
    for key, value in update.items():
        reducer = _REDUCERS.get(key)
        out[key] = reducer(out.get(key), [value]) if reducer is not None else value
    return cast(State, out)


# The entries whose writes LangGraph folds into what is there (a DeltaChannel's reducer), by name.
_REDUCERS: dict[str, Callable[[Any, Sequence[Any]], Any]] = {
    key: meta.reducer
    for key, hint in get_type_hints(State, include_extras=True).items()
    for meta in getattr(hint, "__metadata__", ())
    if isinstance(meta, DeltaChannel)
}
