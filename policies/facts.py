"""What each kind of gate knows, declared once: a typed model per gate kind (`policies.gates.GATES` names each kind's).

The graph builds a gate's facts through its model (a missing or mistyped fact fails where it is made),
and the policy language's view of them — `FACTS`: each fact's CEL type, allowed values, doc and the
default that stands in for a fact older gates did not record — is derived from the same models.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from policies.expr import FactKind, FactSpec

Verdict = Literal["safe", "unsafe", "unknown"]
ABVerdict = Literal["improved", "regressed", "no_effect", "inconclusive"]
Risk = Literal["low", "medium", "high"]
Outcome = Literal["kept", "skipped", "no-go", "deferred", "untested", "none"]
CommandClass = Literal["allow", "ask", "deny"]


class GateFacts(BaseModel):
    """The facts one gate shows its deciders; `model_dump()` is what rules and the journal see."""

    # strict: a bool is not an int and a str is not a number, as in the CEL the rules are written in
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PlanFacts(GateFacts):
    options: int = Field(description="number of options in the plan")
    proposed: int = Field(description="options the brain added beyond the campaign")
    reordered: bool = Field(description="the brain changed the campaign's order")


class TriageFacts(GateFacts):
    no_go_count: int = Field(description="options whose investigation found a blocker")
    hazard_count: int = Field(description="hazards reported by investigations")
    feasible_count: int = Field(description="options left to try")
    has_next_step: bool = Field(description="at least one option is left to try")
    model_only_nogo: int = Field(
        0,
        description="no-go options whose blockers only a language model's reading found, with no failed probe "
        "behind them (what it read may have been planted)",
    )


class SafetyFacts(GateFacts):
    option: str = Field(description='the option id, e.g. "2"')
    verdict: Verdict = Field(description="safety verdict from stress, benchmarks and investigation")
    ab_verdict: ABVerdict = Field(description="A/B verdict on the primary metric")
    has_estimate: bool = Field(description="the A/B produced an estimate (else gain_pct, ci_low, ci_high are 0.0)")
    gain_pct: float = Field(description="effect on the primary metric in %, positive = better")
    ci_low: float = Field(description="lower bound of the 95% CI of the gain, %")
    ci_high: float = Field(description="upper bound of the 95% CI of the gain, %")
    pairs: int = Field(description="valid interleaved A/B pairs")
    wedges: int = Field(description="stress runs stuck at their deadline: no output in its last stretch (a wedge)")
    stress_errors: int = Field(
        description="stress runs that crashed, died (health failing at the deadline) or saturated (still "
        "progressing at the deadline), or a server left degraded after the stress"
    )
    failed_requests: int = Field(
        description="benchmark runs of the candidate not counted (no readable result: exit status, deadline, garbage, "
        "most requests failed); a few failed requests leave a run counted, see requests_failed"
    )
    requests_failed: int = Field(0, description="requests of the option's benchmark runs that failed")
    requests_failed_baseline: int = Field(0, description="requests of the baseline arm's runs that failed")
    request_failures_higher: bool = Field(
        False,
        description="the option's runs fail requests credibly more often than the baseline arm's (one-sided Fisher "
        "exact test, p < 0.05); only this makes failed requests unsafe",
    )
    request_failure_p: float = Field(
        1.0, description="that test's p-value (1.0 when no request failed or the tool counts none)"
    )
    hazards: int = Field(
        description="hazards the option's investigation confirmed (each makes it unsafe, reproduced or not)"
    )
    hazard_reproduced: bool = Field(
        False,
        description="a confirmed hazard made to happen by a stress scenario declared to exercise it (the probe's "
        "reproduced_by); an unrelated stress failure or failed request never sets it",
    )
    measurement_broken: bool = Field(
        False, description="the benchmark failed in both arms from the first pairs (default false)"
    )
    confidence: float = Field(description="0..1, how sure the assessment is")
    risk: Risk = Field(description="risk of keeping the option")
    hosts_measured: int = Field(1, description="hosts the benchmark ran on (each with its own A/B when more than one)")
    hosts_regressed: int = Field(0, description="hosts whose own A/B says the option made them worse")
    detectable_pct: float = Field(
        0.0,
        description="the smallest effect, either way, in %, this A/B finds 80% of the time at its measured noise "
        "(0.0 without an estimate)",
    )
    saturated_runs: int = Field(
        0, description="stress runs still progressing at their deadline: too slow rather than stuck (default 0)"
    )
    dead_runs: int = Field(0, description="stress runs whose server stopped answering its health checks (default 0)")
    spread_ratio: float = Field(
        1.0, description="run-to-run spread of the option's arm over the baseline arm's (1.0 when not measured)"
    )
    spread_changed: bool = Field(
        False, description="the option changes the run-to-run spread (Pitman-Morgan test of paired variances, p < 0.05)"
    )
    bench_wedges: int = Field(0, description="benchmark runs of the option killed at their deadline while silent")
    bench_saturated: int = Field(
        0, description="benchmark runs of the option killed at their deadline while still printing (too slow)"
    )
    bench_dead: int = Field(0, description="option benchmark runs killed while the server failed its health checks")
    sweep_levels: int = Field(0, description="load levels the A/B was measured at (0: no sweep)")
    level: float = Field(0.0, description="the sweep level the verdict and gain are judged at (0.0: no sweep)")
    levels_improved: int = Field(0, description="sweep levels where the option measured better")
    levels_regressed: int = Field(0, description="sweep levels where the option measured worse")
    slo_met: bool = Field(True, description="the option meets the campaign's SLOs at the judged level (true: no SLO)")
    has_capacity: bool = Field(
        False, description="both arms have an SLO capacity (else capacity_gain_pct is 0.0; a 0.0 capacity: none)"
    )
    capacity_base: float = Field(0.0, description="the highest load level the baseline meets the SLOs at (0.0: none)")
    capacity_option: float = Field(0.0, description="the highest load level the option meets the SLOs at (0.0: none)")
    capacity_gain_pct: float = Field(0.0, description="how much more load the option carries within the SLOs, %")
    has_fit: bool = Field(False, description="the sweep fitted step time = fixed + per-request × load for both arms")
    fixed_ms: float = Field(0.0, description="the option's fitted fixed step time, ms (0.0 without a fit)")
    per_request_ms: float = Field(0.0, description="the option's fitted step time per unit of load, ms (0.0 without)")
    base_fixed_ms: float = Field(0.0, description="the baseline's fitted fixed step time, ms (0.0 without a fit)")
    base_per_request_ms: float = Field(0.0, description="the baseline's fitted step time per unit of load, ms")


class ContinueFacts(GateFacts):
    has_next_step: bool = Field(description="an option is left to try")
    next_option: str = Field(description='id of the next option, "" when none')
    remaining: int = Field(description="options left to try")
    kept: int = Field(description="options kept so far")
    last_outcome: Outcome = Field(description="outcome of the option just finished")
    confidence: float = Field(description="confidence of the last assessment, 0..1")


class RollbackFacts(GateFacts):
    option: str = Field(description="the option that was rolled back")
    health_ok: bool = Field(description="the health check passed after the revert")
    verified: bool = Field(
        description="health ok, the check says the option is off, and the metric is back within the noise band"
    )
    measured: bool = Field(description="the baseline metric was re-measured (else delta_pct is 0.0)")
    delta_pct: float = Field(description="baseline metric after revert vs the known-good baseline, %")
    drift_pct: float = Field(
        0.0, description="how far the baseline itself moved since it was measured, %, when known (else 0.0)"
    )
    state_checked: bool = Field(False, description="the option's `check` ran on every host it changed (default false)")
    state_ok: bool = Field(True, description="no host's `check` says the option is still in effect (default true)")


class CommandFacts(GateFacts):
    command: str = Field(description="the command to run")
    host: str = Field(description="the host it would run on")
    klass: CommandClass = Field(description="its class under the command rules")


class BudgetFacts(GateFacts):
    spent_usd: float = Field(description="LLM spend so far")
    elapsed_min: float = Field(description="wall time so far, minutes")
    options_tried: int = Field(description="options applied so far")


BrainCause = Literal["unanswered", "refused"]


class BrainUnavailableFacts(GateFacts):
    cause: BrainCause = Field(
        description='why the model was given up: "unanswered" (calls in a row timed out, lost the connection or '
        'got a 5xx) or "refused" (the API refused the key or the model: 401, 403, 404)'
    )
    failed_calls: int = Field(description="model calls in a row that went unanswered (0 after a refusal)")
    options_left: int = Field(description="options still to try")
    spent_usd: float = Field(description="LLM spend so far")


GoalMet = Literal["met", "not met", "unclear", "no target"]


class GoalFacts(GateFacts):
    goal_met: GoalMet = Field(
        description='the goal against the confirmation A/B: "met" (the whole CI clears the target), "not met" (the '
        'whole CI is below it), "unclear" (the CI straddles it), "no target" (the goal names none)'
    )
    goal_gain_pct: float = Field(description="the final configuration against the one the campaign started from, %")
    goal_ci_low: float = Field(description="lower bound of that gain's 95% CI, %")
    goal_ci_high: float = Field(description="upper bound of that gain's 95% CI, %")
    target_pct: float = Field(description="the goal's target gain, % (0.0 when it names none)")
    p_goal_met: float = Field(description="P(true gain ≥ target) read off the CI (0.0 when the goal names no target)")
    pairs: int = Field(description="confirmation pairs behind the CI")
    pairs_to_tell: int = Field(description="an unclear goal: about how many pairs would tell (0: none, or too many)")
    kept: int = Field(description="options in the final configuration")
    interaction_pct: float = Field(
        description="the confirmed gain against the product of the kept options' single gains, % (0.0 with fewer "
        "than two kept)"
    )
    interaction: bool = Field(description="that interaction is beyond its 95% CI: the kept options do not stack")
    rounds: int = Field(description="confirmation A/Bs run so far (a retry measures again)")


_CEL_TYPES: dict[type, FactKind] = {bool: "bool", int: "int", float: "double", str: "string"}


def _spec(name: str, info: FieldInfo) -> FactSpec:
    annotation: Any = info.annotation
    enum: list[str] | None = None
    if get_origin(annotation) is Literal:
        enum = [str(v) for v in get_args(annotation)]
        annotation = cast(Any, type(get_args(annotation)[0]))
    if get_origin(annotation) in (Union, types.UnionType) or annotation not in _CEL_TYPES:
        raise TypeError(f"fact {name}: {annotation!r} has no CEL type (bool, int, float, str or a Literal of str)")
    default = None if info.default is PydanticUndefined else info.default
    return FactSpec(type=_CEL_TYPES[annotation], enum=enum, doc=info.description or "", default=default)


def specs(model: type[GateFacts]) -> dict[str, FactSpec]:
    return {name: _spec(name, info) for name, info in model.model_fields.items()}
