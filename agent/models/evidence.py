"""The evidence the agent produces (small, JSON-plain; bulky output lives in artifacts/)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agent.models.campaign import Option
from tools.failures import FailureTest


class Finding(BaseModel):
    option: int
    feasible: bool
    blockers: list[str] = Field(default_factory=list)
    hazards: list[str] = Field(default_factory=list)  # confirmed: a failed hazard probe, a cited finding
    hazard_probes: list[str] = Field(default_factory=list)  # names of the failed hazard probes among `hazards`
    unchecked: list[str] = Field(default_factory=list)  # what it wanted to check and was not allowed to
    confidence: float = 0.0
    sources: list[str] = Field(default_factory=list)  # "host: command → exit N" / artifact refs
    summary: str = ""  # the investigator's own words (language-model brains)
    permission_requests: list[dict[str, str]] = Field(default_factory=list)  # {host, command} it could not run
    # A no-go only a model's reading found: no campaign probe failed behind it (text planted in a file it read could
    # say anything), so the triage gate's `model_only_nogo` counts it and a policy may ask a person about it.
    model_only: bool = False


class Assessment(BaseModel):
    option: int
    verdict: Literal["safe", "unsafe", "unknown"]
    ab_verdict: Literal["improved", "regressed", "no_effect", "inconclusive"]
    gain_pct: float | None
    ci: list[float] | None
    pairs: int
    wedges: int
    stress_errors: int
    failed_requests: int
    hazards: list[str]
    confidence: float
    hazard_reproduced: bool = False  # a stress scenario declared to exercise a confirmed hazard (reproduced_by) failed
    # Both arms' failed requests and the one-sided exact test (tools/failures.FailureTest); None: not counted.
    request_failures: FailureTest | None = None
    measurement_broken: bool = False  # the benchmark failed on the baseline too: nothing was measured
    risk: Literal["low", "medium", "high"]
    recommendation: Literal["keep", "skip", "ask"]
    reasons: list[str]
    rationale: str | None = None  # prose for the person at the gate; never changes the numbers above
    next_step: str | None = None  # the same, for the continue-or-ask gate that follows


class Plan(BaseModel):
    order: list[int]
    rationale: dict[int, str] = Field(default_factory=dict)
    proposals: list[Option] = Field(default_factory=list)  # new options; they enter only through the plan gate
