"""Commands on hosts: each one started and finished, refused, uploads, and mutations a crash cut short."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent.journal.events.base import Event, Json, OptionId


class CommandStartedEvent(Event):
    kind: Literal["command.started"] = "command.started"
    host: str
    command: str
    purpose: str | None = None
    option: OptionId = None
    timeout_s: float | None = None
    secrets: list[str] = Field(default_factory=list)
    key: str | None = None
    effect: str | None = None
    # What the host's bash was given when that is not `command` as written: the canonical form the command policy
    # judged (tools/canonical/). Absent when they are the same, and in sessions recorded before it existed.
    runs: str | None = None


class CommandFinishedEvent(Event):
    kind: Literal["command.finished"] = "command.finished"
    host: str
    purpose: str | None = None
    option: OptionId = None
    exit: int | None = None
    duration_s: float | None = None
    timed_out: bool = False
    killed: bool = False
    error: str | None = None
    artifact: str | None = None
    stderr_artifact: str | None = None
    stdout_digest: str | None = None
    key: str | None = None
    effect: str | None = None
    result: Json = None


class CommandRefusedEvent(Event):
    kind: Literal["command.refused"] = "command.refused"
    command: str | None = None
    host: str | None = None
    option: OptionId = None
    klass: str | None = None
    scope: str | None = None
    purpose: str | None = None
    part: str | None = None
    pattern: str | None = None


class FileUploadedEvent(Event):
    kind: Literal["file.uploaded"] = "file.uploaded"
    host: str
    src: str
    dest: str
    sha256: str | None = None


class FileUploadFailedEvent(Event):
    kind: Literal["file.upload_failed"] = "file.upload_failed"
    host: str
    src: str
    dest: str
    error: str | None = None


class MutationRecoveredEvent(Event):
    kind: Literal["mutation.recovered"] = "mutation.recovered"
    key: str
    host: str
    effect: str
    option: OptionId = None
    action: str
    result: Json = None


class MutationInDoubtEvent(Event):
    kind: Literal["mutation.in_doubt"] = "mutation.in_doubt"
    key: str
    host: str
    effect: str
    option: OptionId = None
    reason: str | None = None


class MutationWaitingEvent(Event):
    kind: Literal["mutation.waiting"] = "mutation.waiting"
    key: str
    host: str
    until: str | None = None
    seconds: float | None = None
