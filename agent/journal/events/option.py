"""An option's life: apply, the A/B runs, stress, the assessment, keep or roll back."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from agent.journal.events.base import Event, Json, OptionId


class ApplyFailedEvent(Event):
    kind: Literal["apply.failed"] = "apply.failed"
    option: int
    reason: str | None = None


class UndoRecordedEvent(Event):
    kind: Literal["undo.recorded"] = "undo.recorded"
    option: int
    revert: list[Json] = Field(default_factory=list)
    verify: Json = None


class BenchRunEvent(Event):
    kind: Literal["bench.run"] = "bench.run"
    option: OptionId = None
    purpose: str | None = None
    arm: str | None = None
    pair: int | None = None
    value: float | None = None
    valid: bool = True
    reason: str | None = None
    duration_s: float | None = None
    artifact: str | None = None


class BenchProgressEvent(Event):
    kind: Literal["bench.progress"] = "bench.progress"
    option: int | None  # None: the end-of-campaign confirmation A/B, which no one option owns
    pair: int
    of: int
    level: float | None = None  # the sweep level being measured


class BenchOutlierEvent(Event):
    kind: Literal["bench.outlier"] = "bench.outlier"
    option: int | None  # None: the end-of-campaign confirmation A/B, which no one option owns
    pair: int
    action: str
    values: Json = None
    level: float | None = None


class BenchExtendedEvent(Event):
    kind: Literal["bench.extended"] = "bench.extended"
    option: int | None  # None: the end-of-campaign confirmation A/B, which no one option owns
    from_pairs: int
    to_pairs: int
    reason: str | None = None
    level: float | None = None


class BenchStoppedEvent(Event):
    """Where a sequential A/B stopped (tools.sequential): after how many pairs of its budget, why (`stopped_by`:
    improved, regressed, equivalent, guardrail, futile or budget, and in words) and its always-valid 95%
    confidence sequence then (%)."""

    kind: Literal["bench.stopped"] = "bench.stopped"
    option: int | None  # None: the end-of-campaign confirmation A/B
    pairs: int  # pairs measured
    valid_pairs: int | None = None  # of them, pairs with both runs valid (what the verdict rests on)
    runs: int | None = None  # benchmark runs it took, an outlier pair's first measurement too
    max_pairs: int | None = None  # the budget
    stopped_by: str
    verdict: str | None = None
    reason: str | None = None
    cs_low: float | None = None
    cs_high: float | None = None
    level: float | None = None


class BenchAbortedEvent(Event):
    kind: Literal["bench.aborted"] = "bench.aborted"
    option: int
    reason: str | None = None


class BenchBrokenEvent(Event):
    kind: Literal["bench.broken"] = "bench.broken"
    option: int
    runs: int
    reasons: list[str] = Field(default_factory=list)


class ABResultEvent(Event):
    kind: Literal["ab.result"] = "ab.result"
    option: int
    summary: str | None = None
    verdict: str | None = None
    effect_pct: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int | None = None
    metric: str | None = None
    noise_pct: float | None = None  # the run-to-run noise measured in this run, %
    higher_is_better: bool | None = None
    detectable_pct: float | None = None  # the smallest effect this A/B finds 80 % of the time, %
    pairs_for_expected: int | None = None  # inconclusive/no effect: pairs the expected effect would need
    spread_ratio: float | None = None  # the option's arm's run-to-run spread over the baseline arm's
    spread_p: float | None = None
    spread_changed: bool | None = None
    # Written since sequential A/Bs (tools.sequential); absent from older lines.
    stopped_by: str | None = (
        None  # why the A/B stopped: improved, regressed, equivalent, guardrail, futile, budget, fixed
    )
    stop_reason: str | None = None
    pairs_run: int | None = None  # pairs measured (valid or not)
    bench_runs: int | None = None  # benchmark runs taken, an outlier pair's first measurement too
    cs_low: float | None = None  # a sequential A/B's always-valid 95% confidence sequence at its stop, %
    cs_high: float | None = None
    flagged_pairs: list[int] | None = None  # outlying pairs kept in the estimate (they agree with another's ratio)
    without_flagged: list[float] | None = None  # [effect, CI low, CI high] % without them


class SweepResultEvent(Event):
    """A load sweep's outcome for one option: the A/B per level, each arm's SLO capacity, the fitted
    step-time model per arm and the level the goal was judged at (the `ab.result` that follows)."""

    kind: Literal["sweep.result"] = "sweep.result"
    option: int
    summary: str | None = None
    var: str | None = None
    level: float | None = None
    levels: Json = None
    capacity: Json = None
    capacity_gain_pct: float | None = None
    fit: Json = None


class SweepSearchEvent(Event):
    """One probe of a capacity search: an arm at a level, its SLO judgement, and the bracket it left."""

    kind: Literal["sweep.search"] = "sweep.search"
    option: OptionId = None
    arm: str | None = None
    level: float | None = None
    judgement: str | None = None
    passing: float | None = None
    failing: float | None = None
    why: str | None = None


class StressResultEvent(Event):
    kind: Literal["stress.result"] = "stress.result"
    option: OptionId = None
    scenario: str | None = None
    host: str | None = None
    outcome: str | None = None
    run: int | None = None
    evidence: str | None = None
    duration_s: float | None = None
    timeout_s: float | None = None
    killed: bool = False
    artifact: str | None = None
    diagnosis: str | None = None


class StressDiagnosisEvent(Event):
    kind: Literal["stress.diagnosis"] = "stress.diagnosis"
    option: OptionId = None
    scenario: str | None = None
    host: str | None = None
    exit: int | None = None
    artifact: str | None = None


class AssessmentEvent(Event):
    kind: Literal["assessment"] = "assessment"
    option: int
    brain: str | None = None
    verdict: str | None = None
    ab_verdict: str | None = None
    gain_pct: float | None = None
    ci: list[float] | None = None
    recommendation: str | None = None


class KeptEvent(Event):
    kind: Literal["kept"] = "kept"
    option: int
    gain_pct: float | None = None
    ci: list[float] | None = None
    by: str | None = None
    hosts: list[str] | None = None
    except_hosts: list[str] | None = None


class RollbackSettlingEvent(Event):
    kind: Literal["rollback.settling"] = "rollback.settling"
    option: int
    runs: int | None = None
    first_wait_s: float | None = None
    up_to: float | None = None


def rollback_verdict(verified: bool, by: Sequence[str] | None) -> str:
    """How a rollback's verification is headlined: by what vouched for it. `by` is None in journals from before
    it was recorded: those say "verified" as they always did."""
    if not verified:
        return "NOT verified"
    if by is None:
        return "verified"
    if "check" in by and "metric" in by:
        return "verified by the check and the metric"
    if "check" in by:
        return "verified by the option's check only (the metric cannot tell)"
    if "metric" in by:
        return "verified by the metric (no check)"
    # Back within the baseline's band, but that band cannot tell the option's arm from it, and no check spoke.
    return "verified only loosely (no check, and the metric cannot tell the option apart)"


class RollbackEvent(Event):
    kind: Literal["rollback"] = "rollback"
    option: int
    verified: bool = False
    verified_by: list[str] | None = None  # "check", "metric": what vouched for `verified` (None: not recorded)
    detail: str | None = None
    drift_pct: float | None = None
    delta_pct: float | None = None
