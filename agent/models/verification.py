"""A rollback's verification as the run keeps it: the state's `verification`, an option's `rollback`, the
`rollback` journal line's fields (agent/exec/verification.py judges it; agent/nodes/rollback.py assembles it).

JSON-plain, like all state: a TypedDict, so checkpoints hold the same dicts they always did. Every key but the
verdict and its words is optional, because a verification ends where its evidence did (a refused revert has no
readings to judge).
"""

from __future__ import annotations

from typing import Required, TypedDict


class Settling(TypedDict):
    """A server that settled after its revert: the runs taken, those discarded as early, and what those read."""

    runs: int
    discarded: int
    early_pct: float


class PartialVerification(TypedDict, total=False):
    """What a verification found before its verdict (`agent.exec.verification.judge` builds it up)."""

    verified_by: list[str]  # "check", "metric": what vouched for the verdict
    in_doubt: bool  # an apply or revert cut short that nothing can settle
    # the health and state checks
    health_ok: bool
    state_ok: bool | None  # the option's `check` says it is off (None: it has none)
    # the metric, against the recent baseline arm, its trend, the option's arm, the known-good baseline, the anchor
    noise: dict[str, object]
    delta_pct: float | None  # what the gate and policies read: against the known-good baseline, else the A arm
    delta_recent_pct: float
    delta_trend_pct: float
    delta_option_pct: float
    drift_pct: float
    arm_shift_pct: float
    band_pct: float | None
    too_noisy: bool
    baseline_swing_pct: float
    performance_ok: bool | None
    higher_is_better: bool
    settle: Settling
    # judged paired (the option applied again between reverted runs)
    paired_pairs: int
    paired_change_pct: float
    paired_band_pct: float
    machine_pct: float
    # a keep with exceptions: the hosts rolled back, and each one's change
    hosts: list[str]
    host_deltas_pct: dict[str, float]


class Verification(PartialVerification, total=False):
    """The verdict, and why in words, with what was found."""

    verified: Required[bool]
    detail: Required[str]
