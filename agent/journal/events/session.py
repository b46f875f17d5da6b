"""The session's life: start, pauses, resumes, its end, its documents and its setup."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent.journal.events.base import Event, Json, OptionId


class SessionStartedEvent(Event):
    kind: Literal["session.started"] = "session.started"
    campaign: str | None = None
    campaign_name: str | None = None
    campaign_sha256: str | None = None
    campaign_text: str | None = None
    policy: str | None = None
    policy_name: str | None = None
    policy_sha256: str | None = None
    policy_text: str | None = None
    # A policy that `extends:` others: each file's name, path and own sha256 (policy_text is the resolved whole).
    policy_parts: list[Json] | None = None
    brain: str | None = None
    # The Claude brain's model as the API described it when the session was made (agent/brain/preflight.py)
    brain_check: dict[str, Json] | None = None
    engine: str | None = None
    headless: bool | None = None
    user: str | None = None
    # What else a resume runs with, so that meta.json cannot change it (journals from before these have none):
    # where the campaign's files are, the ssh_config it resolves hosts with (the session keeps a copy; its
    # sha256, or "-" for none), the kept copies of the campaign's files, and trust-on-first-use.
    campaign_dir: str | None = None
    ssh_config: str | None = None
    ssh_config_sha256: str | None = None
    campaign_files_sha256: str | None = None
    accept_new_host_keys: bool | None = None


class SessionResumedEvent(Event):
    kind: Literal["session.resumed"] = "session.resumed"
    answers: list[Json] = Field(default_factory=list)
    from_step: int | None = None


class SessionRevisitEvent(Event):
    kind: Literal["session.revisit"] = "session.revisit"
    options: list[int] = Field(default_factory=list)
    user: str | None = None


class SessionAbandonedEvent(Event):
    """A person gave the session up (`signoff abandon`): what the journal showed on the hosts then, the gate left
    unanswered if one waited, and the options the run rolls back (and verifies) before it ends, in that order."""

    kind: Literal["session.abandoned"] = "session.abandoned"
    by: str | None = None
    on_hosts: dict[str, dict[str, str]] = Field(default_factory=dict)
    gate: str | None = None
    roll_back: list[int] = Field(default_factory=list)


class SessionWaitingEvent(Event):
    kind: Literal["session.waiting"] = "session.waiting"
    interrupt: str | None = None
    runner: str | None = None
    deadline: str | None = None


class SessionPausedEvent(Event):
    kind: Literal["session.paused"] = "session.paused"
    gate: str | None = None
    interrupt: str | None = None
    elapsed_s: float | None = None


class SessionInterruptedEvent(Event):
    kind: Literal["session.interrupted"] = "session.interrupted"
    reason: str | None = None


class SessionFailedEvent(Event):
    kind: Literal["session.failed"] = "session.failed"
    status: str | None = None
    reason: str | None = None
    error: str | None = None
    errno: int | None = None
    elapsed_s: float | None = None


class SessionFinishedEvent(Event):
    kind: Literal["session.finished"] = "session.finished"
    status: str | None = None
    elapsed_s: float | None = None
    error: str | None = None


class DocumentsMismatchEvent(Event):
    kind: Literal["documents.mismatch"] = "documents.mismatch"
    problem: str


class PolicyChangedEvent(Event):
    kind: Literal["policy.changed"] = "policy.changed"
    by: str | None = None
    policy: str | None = None
    policy_name: str | None = None
    policy_sha256: str | None = None
    policy_text: str | None = None
    policy_parts: list[Json] | None = None
    previous_sha256: str | None = None


class CheckpointUnreadableEvent(Event):
    kind: Literal["checkpoint.unreadable"] = "checkpoint.unreadable"
    path: str | None = None
    error: str | None = None


class LogRecoveredEvent(Event):
    kind: Literal["log.recovered"] = "log.recovered"
    torn_bytes: int
    torn_digest: str


class LogAdoptedEvent(Event):
    """Lines a runner found past every copy of the head when it took the session (a run killed before it
    wrote its head again) and went on from: written, and signed over, with the range it did not see written."""

    kind: Literal["log.adopted"] = "log.adopted"
    from_seq: int
    events: int
    kinds: dict[str, int] = Field(default_factory=dict)
    last: str | None = None  # the hash of the last line adopted


class HostkeyPinnedEvent(Event):
    kind: Literal["hostkey.pinned"] = "hostkey.pinned"
    host: str
    key_type: str | None = None
    fingerprint: str | None = None
    by: str | None = None


class PhaseEvent(Event):
    kind: Literal["phase"] = "phase"
    phase: str
    option: OptionId = None
    title: str | None = None
    pairs: int | None = None
    scenarios: int | None = None
    hosts: list[str] | None = None
    level: float | None = None  # benchmark.level: the sweep level measured next


class SetupFailedEvent(Event):
    kind: Literal["setup.failed"] = "setup.failed"
    error: str


class CalibrationEvent(Event):
    kind: Literal["calibration"] = "calibration"
