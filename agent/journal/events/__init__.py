"""Everything a session journals, one pydantic model per kind, and the tagged union readers match on.

`Journal.append` takes one of these; `parse` turns a journal line back into one. A line's envelope (`v`,
`seq`, `ts`, `session`, `kind`, `actor`, `prev`) is the journal's own and lives in `Entry`; a model holds
the event's fields only.

Writing keeps the bytes a journal has always had: a model dumps the fields it was given and nothing else
(`exclude_unset`), so an event journaled before these models existed and the same event written through
them are the same line, and old sessions verify and replay unchanged. Models allow extra fields, since a
journal recorded by a newer signoff (or an older one) may carry fields this one does not name; readers
use the declared ones. A line whose fields do not fit its kind's model (a forged or foreign journal) is read
as an `Unrecognized` event rather than crash a reader.
"""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError

from agent.journal.events.base import ENVELOPE, Event, Json, OptionId, Unrecognized
from agent.journal.events.brain import BrainFallback, LlmCall, LlmFailed, LlmInvalid, LlmRetry
from agent.journal.events.commands import (
    CommandFinished,
    CommandRefused,
    CommandStarted,
    FileUploaded,
    FileUploadFailed,
    MutationInDoubt,
    MutationRecovered,
    MutationWaiting,
)
from agent.journal.events.gates import (
    Decision,
    DecisionRejected,
    GateOpened,
    GoalConfirmed,
    NotifySent,
    Report,
    RuleAdded,
)
from agent.journal.events.investigation import (
    Finding,
    PermissionRequested,
    Plan,
    PlanReranked,
    SubagentStarted,
    SubagentTool,
    SubagentTurn,
)
from agent.journal.events.option import (
    ABResult,
    ApplyFailed,
    Assessment,
    BenchAborted,
    BenchBroken,
    BenchExtended,
    BenchOutlier,
    BenchProgress,
    BenchRun,
    BenchStopped,
    Kept,
    Rollback,
    RollbackSettling,
    StressDiagnosis,
    StressResult,
    SweepResult,
    SweepSearch,
    UndoRecorded,
)
from agent.journal.events.session import (
    Calibration,
    CheckpointUnreadable,
    DocumentsMismatch,
    HostkeyPinned,
    LogAdopted,
    LogRecovered,
    Phase,
    PolicyChanged,
    SessionAbandoned,
    SessionFailed,
    SessionFinished,
    SessionInterrupted,
    SessionPaused,
    SessionResumed,
    SessionRevisit,
    SessionStarted,
    SessionWaiting,
    SetupFailed,
)

__all__ = [
    "ENVELOPE",
    "MODELS",
    "ABResult",
    "ApplyFailed",
    "Assessment",
    "BenchAborted",
    "BenchBroken",
    "BenchExtended",
    "BenchOutlier",
    "BenchProgress",
    "BenchRun",
    "BenchStopped",
    "BrainFallback",
    "Calibration",
    "CheckpointUnreadable",
    "CommandFinished",
    "CommandRefused",
    "CommandStarted",
    "Decision",
    "DecisionRejected",
    "DocumentsMismatch",
    "Entry",
    "Event",
    "FileUploadFailed",
    "FileUploaded",
    "Finding",
    "GateOpened",
    "GoalConfirmed",
    "HostkeyPinned",
    "Json",
    "Kept",
    "KnownEvent",
    "LlmCall",
    "LlmFailed",
    "LlmInvalid",
    "LlmRetry",
    "LogAdopted",
    "LogRecovered",
    "MutationInDoubt",
    "MutationRecovered",
    "MutationWaiting",
    "NotifySent",
    "OptionId",
    "PermissionRequested",
    "Phase",
    "Plan",
    "PlanReranked",
    "PolicyChanged",
    "Report",
    "Rollback",
    "RollbackSettling",
    "RuleAdded",
    "SessionAbandoned",
    "SessionFailed",
    "SessionFinished",
    "SessionInterrupted",
    "SessionPaused",
    "SessionResumed",
    "SessionRevisit",
    "SessionStarted",
    "SessionWaiting",
    "SetupFailed",
    "StressDiagnosis",
    "StressResult",
    "SubagentStarted",
    "SubagentTool",
    "SubagentTurn",
    "SweepResult",
    "SweepSearch",
    "UndoRecorded",
    "Unrecognized",
    "entry",
    "parse",
]

KnownEvent = Annotated[
    SessionStarted
    | SessionResumed
    | SessionRevisit
    | SessionAbandoned
    | SessionWaiting
    | SessionPaused
    | SessionInterrupted
    | SessionFailed
    | SessionFinished
    | DocumentsMismatch
    | PolicyChanged
    | CheckpointUnreadable
    | LogRecovered
    | LogAdopted
    | HostkeyPinned
    | Phase
    | SetupFailed
    | Calibration
    | SubagentStarted
    | SubagentTool
    | SubagentTurn
    | PermissionRequested
    | Finding
    | Plan
    | PlanReranked
    | CommandStarted
    | CommandFinished
    | CommandRefused
    | FileUploaded
    | FileUploadFailed
    | MutationRecovered
    | MutationInDoubt
    | MutationWaiting
    | ApplyFailed
    | UndoRecorded
    | BenchRun
    | BenchProgress
    | BenchOutlier
    | BenchExtended
    | BenchStopped
    | BenchAborted
    | BenchBroken
    | ABResult
    | SweepResult
    | SweepSearch
    | StressResult
    | StressDiagnosis
    | Assessment
    | Kept
    | RollbackSettling
    | Rollback
    | GateOpened
    | Decision
    | DecisionRejected
    | RuleAdded
    | NotifySent
    | GoalConfirmed
    | Report
    | BrainFallback
    | LlmCall
    | LlmRetry
    | LlmInvalid
    | LlmFailed,
    Field(discriminator="kind"),
]

# kind → model, for reading a line without trying every member of the union
MODELS: dict[str, type[Event]] = {
    cls.model_fields["kind"].default: cls
    for cls in Event.__subclasses__()
    if cls is not Unrecognized and isinstance(cls.model_fields["kind"].default, str)
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
    """The typed event a journal line (as a JSON object) records; `Unrecognized` when it fits no model."""
    kind = record.get("kind")
    fields = {k: v for k, v in record.items() if k not in ENVELOPE}
    model = MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return Unrecognized(kind=str(kind), problem=f"unknown kind {kind!r}", **_safe(fields))
    try:
        return model.model_validate({**fields, "kind": kind})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return Unrecognized(kind=str(kind), problem=f"{where}: {first.get('msg')}", **_safe(fields))


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
