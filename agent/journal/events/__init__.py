"""Everything a session journals, one pydantic model per kind, and the tagged union readers match on.

`Journal.append` takes one of these; `parse` turns a journal line back into one. A line's envelope (`v`,
`seq`, `ts`, `session`, `kind`, `actor`, `prev`) is the journal's own and lives in `Entry`; a model holds
the event's fields only.

Writing keeps the bytes a journal has always had: a model dumps the fields it was given and nothing else
(`exclude_unset`), so an event journaled before these models existed and the same event written through
them are the same line, and old sessions verify and replay unchanged. Models allow extra fields, since a
journal recorded by a newer signoff (or an older one) may carry fields this one does not name; readers
use the declared ones. A line whose fields do not fit its kind's model (a forged or foreign journal) is read
as an `UnrecognizedEvent` event rather than crash a reader.
"""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError

from agent.journal.events.base import ENVELOPE, Event, Json, OptionId, UnrecognizedEvent
from agent.journal.events.brain import BrainFallbackEvent, LlmCallEvent, LlmFailedEvent, LlmInvalidEvent, LlmRetryEvent
from agent.journal.events.commands import (
    CommandFinishedEvent,
    CommandRefusedEvent,
    CommandStartedEvent,
    FileUploadedEvent,
    FileUploadFailedEvent,
    MutationInDoubtEvent,
    MutationRecoveredEvent,
    MutationWaitingEvent,
)
from agent.journal.events.gates import (
    DecisionEvent,
    DecisionRejectedEvent,
    GateOpenedEvent,
    GoalConfirmedEvent,
    NotifySentEvent,
    ReportEvent,
    RuleAddedEvent,
)
from agent.journal.events.investigation import (
    FindingEvent,
    PermissionRequestedEvent,
    PlanEvent,
    PlanRerankedEvent,
    SubagentStartedEvent,
    SubagentToolEvent,
    SubagentTurnEvent,
)
from agent.journal.events.option import (
    ABResultEvent,
    ApplyFailedEvent,
    AssessmentEvent,
    BenchAbortedEvent,
    BenchBrokenEvent,
    BenchExtendedEvent,
    BenchOutlierEvent,
    BenchProgressEvent,
    BenchRunEvent,
    BenchStoppedEvent,
    KeptEvent,
    RollbackEvent,
    RollbackSettlingEvent,
    StressDiagnosisEvent,
    StressResultEvent,
    SweepResultEvent,
    SweepSearchEvent,
    UndoRecordedEvent,
)
from agent.journal.events.session import (
    CalibrationEvent,
    CheckpointUnreadableEvent,
    DocumentsMismatchEvent,
    HostkeyPinnedEvent,
    LogAdoptedEvent,
    LogRecoveredEvent,
    PhaseEvent,
    PolicyChangedEvent,
    SessionAbandonedEvent,
    SessionFailedEvent,
    SessionFinishedEvent,
    SessionInterruptedEvent,
    SessionPausedEvent,
    SessionResumedEvent,
    SessionRevisitEvent,
    SessionStartedEvent,
    SessionWaitingEvent,
    SetupFailedEvent,
)

__all__ = [
    "ENVELOPE",
    "MODELS",
    "ABResultEvent",
    "ApplyFailedEvent",
    "AssessmentEvent",
    "BenchAbortedEvent",
    "BenchBrokenEvent",
    "BenchExtendedEvent",
    "BenchOutlierEvent",
    "BenchProgressEvent",
    "BenchRunEvent",
    "BenchStoppedEvent",
    "BrainFallbackEvent",
    "CalibrationEvent",
    "CheckpointUnreadableEvent",
    "CommandFinishedEvent",
    "CommandRefusedEvent",
    "CommandStartedEvent",
    "DecisionEvent",
    "DecisionRejectedEvent",
    "DocumentsMismatchEvent",
    "Entry",
    "Event",
    "FileUploadFailedEvent",
    "FileUploadedEvent",
    "FindingEvent",
    "GateOpenedEvent",
    "GoalConfirmedEvent",
    "HostkeyPinnedEvent",
    "Json",
    "KeptEvent",
    "KnownEvent",
    "LlmCallEvent",
    "LlmFailedEvent",
    "LlmInvalidEvent",
    "LlmRetryEvent",
    "LogAdoptedEvent",
    "LogRecoveredEvent",
    "MutationInDoubtEvent",
    "MutationRecoveredEvent",
    "MutationWaitingEvent",
    "NotifySentEvent",
    "OptionId",
    "PermissionRequestedEvent",
    "PhaseEvent",
    "PlanEvent",
    "PlanRerankedEvent",
    "PolicyChangedEvent",
    "ReportEvent",
    "RollbackEvent",
    "RollbackSettlingEvent",
    "RuleAddedEvent",
    "SessionAbandonedEvent",
    "SessionFailedEvent",
    "SessionFinishedEvent",
    "SessionInterruptedEvent",
    "SessionPausedEvent",
    "SessionResumedEvent",
    "SessionRevisitEvent",
    "SessionStartedEvent",
    "SessionWaitingEvent",
    "SetupFailedEvent",
    "StressDiagnosisEvent",
    "StressResultEvent",
    "SubagentStartedEvent",
    "SubagentToolEvent",
    "SubagentTurnEvent",
    "SweepResultEvent",
    "SweepSearchEvent",
    "UndoRecordedEvent",
    "UnrecognizedEvent",
    "entry",
    "parse",
]

KnownEvent = Annotated[
    SessionStartedEvent
    | SessionResumedEvent
    | SessionRevisitEvent
    | SessionAbandonedEvent
    | SessionWaitingEvent
    | SessionPausedEvent
    | SessionInterruptedEvent
    | SessionFailedEvent
    | SessionFinishedEvent
    | DocumentsMismatchEvent
    | PolicyChangedEvent
    | CheckpointUnreadableEvent
    | LogRecoveredEvent
    | LogAdoptedEvent
    | HostkeyPinnedEvent
    | PhaseEvent
    | SetupFailedEvent
    | CalibrationEvent
    | SubagentStartedEvent
    | SubagentToolEvent
    | SubagentTurnEvent
    | PermissionRequestedEvent
    | FindingEvent
    | PlanEvent
    | PlanRerankedEvent
    | CommandStartedEvent
    | CommandFinishedEvent
    | CommandRefusedEvent
    | FileUploadedEvent
    | FileUploadFailedEvent
    | MutationRecoveredEvent
    | MutationInDoubtEvent
    | MutationWaitingEvent
    | ApplyFailedEvent
    | UndoRecordedEvent
    | BenchRunEvent
    | BenchProgressEvent
    | BenchOutlierEvent
    | BenchExtendedEvent
    | BenchStoppedEvent
    | BenchAbortedEvent
    | BenchBrokenEvent
    | ABResultEvent
    | SweepResultEvent
    | SweepSearchEvent
    | StressResultEvent
    | StressDiagnosisEvent
    | AssessmentEvent
    | KeptEvent
    | RollbackSettlingEvent
    | RollbackEvent
    | GateOpenedEvent
    | DecisionEvent
    | DecisionRejectedEvent
    | RuleAddedEvent
    | NotifySentEvent
    | GoalConfirmedEvent
    | ReportEvent
    | BrainFallbackEvent
    | LlmCallEvent
    | LlmRetryEvent
    | LlmInvalidEvent
    | LlmFailedEvent,
    Field(discriminator="kind"),
]

# kind → model, for reading a line without trying every member of the union
MODELS: dict[str, type[Event]] = {
    cls.model_fields["kind"].default: cls
    for cls in Event.__subclasses__()
    if cls is not UnrecognizedEvent and isinstance(cls.model_fields["kind"].default, str)
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal line: the envelope the journal wrote and the event it carries."""

    seq: int
    ts: str
    actor: str
    event: Event
    session: str = ""

    @property
    def kind(self) -> str:
        return self.event.kind


def parse(record: Mapping[str, Any]) -> Event:
    """The typed event a journal line (as a JSON object) records; `UnrecognizedEvent` when it fits no model."""
    kind = record.get("kind")
    fields = {k: v for k, v in record.items() if k not in ENVELOPE}
    model = MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return UnrecognizedEvent(kind=str(kind), problem=f"unknown kind {kind!r}", **_safe(fields))
    try:
        return model.model_validate({**fields, "kind": kind})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return UnrecognizedEvent(kind=str(kind), problem=f"{where}: {first.get('msg')}", **_safe(fields))


def entry(record: Mapping[str, Any]) -> Entry:
    """A journal line as an `Entry` (envelope fields of the wrong type read as empty, never raise)."""
    seq, ts, actor, session = (record.get(k) for k in ("seq", "ts", "actor", "session"))
    return Entry(
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else -1,
        ts=ts if isinstance(ts, str) else "",
        actor=actor if isinstance(actor, str) else "",
        event=parse(record),
        session=session if isinstance(session, str) else "",
    )


def _safe(fields: dict[str, Any]) -> dict[str, Any]:
    # `kind` and `problem` are the model's own; a forged line must not be able to set them through extras
    return {k: v for k, v in fields.items() if k not in ("kind", "problem")}
