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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# The envelope every line carries; everything else on a line is the event's own.
ENVELOPE = frozenset({"v", "seq", "ts", "session", "kind", "actor", "prev"})

Json = Any  # JSON-plain data as journaled (dicts, lists, str, numbers, bool, None)
OptionId = int | None


class Event(BaseModel):
    """One thing that happened. Subclasses pin `kind` to a literal and declare the fields readers use."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    kind: str

    def fields(self) -> dict[str, Any]:
        """What goes on the line besides the envelope: exactly the fields this event was given, as given
        (python mode: the journal's own encoder decides how NaN, infinities and big integers are written)."""
        return self.model_dump(exclude_unset=True, exclude={"kind"}, by_alias=True)

    def get(self, name: str, default: Any = None) -> Any:
        """A field by name, declared or extra (readers of fields a model does not declare)."""
        if name in type(self).model_fields:
            return getattr(self, name)
        return (self.model_extra or {}).get(name, default)


# ---------------------------------------------------------------- the session's life


class SessionStarted(Event):
    kind: Literal["session.started"] = "session.started"
    campaign: str | None = None
    campaign_name: str | None = None
    campaign_sha256: str | None = None
    campaign_text: str | None = None
    policy: str | None = None
    policy_name: str | None = None
    policy_sha256: str | None = None
    policy_text: str | None = None
    brain: str | None = None
    engine: str | None = None
    headless: bool | None = None
    user: str | None = None


class SessionResumed(Event):
    kind: Literal["session.resumed"] = "session.resumed"
    answers: list[Json] = []
    from_step: int | None = None


class SessionRevisit(Event):
    kind: Literal["session.revisit"] = "session.revisit"
    options: list[int] = []
    user: str | None = None


class SessionWaiting(Event):
    kind: Literal["session.waiting"] = "session.waiting"
    interrupt: str | None = None
    runner: str | None = None
    deadline: str | None = None


class SessionPaused(Event):
    kind: Literal["session.paused"] = "session.paused"
    gate: str | None = None
    interrupt: str | None = None
    elapsed_s: float | None = None


class SessionInterrupted(Event):
    kind: Literal["session.interrupted"] = "session.interrupted"
    reason: str | None = None


class SessionFailed(Event):
    kind: Literal["session.failed"] = "session.failed"
    status: str | None = None
    reason: str | None = None
    error: str | None = None
    errno: int | None = None
    elapsed_s: float | None = None


class SessionFinished(Event):
    kind: Literal["session.finished"] = "session.finished"
    status: str | None = None
    elapsed_s: float | None = None
    error: str | None = None


class DocumentsMismatch(Event):
    kind: Literal["documents.mismatch"] = "documents.mismatch"
    problem: str


class PolicyChanged(Event):
    kind: Literal["policy.changed"] = "policy.changed"
    by: str | None = None
    policy: str | None = None
    policy_name: str | None = None
    policy_sha256: str | None = None
    policy_text: str | None = None
    previous_sha256: str | None = None


class CheckpointUnreadable(Event):
    kind: Literal["checkpoint.unreadable"] = "checkpoint.unreadable"
    path: str | None = None
    error: str | None = None


class LogRecovered(Event):
    kind: Literal["log.recovered"] = "log.recovered"
    torn_bytes: int
    torn_digest: str


class HostkeyPinned(Event):
    kind: Literal["hostkey.pinned"] = "hostkey.pinned"
    host: str
    key_type: str | None = None
    fingerprint: str | None = None
    by: str | None = None


class Phase(Event):
    kind: Literal["phase"] = "phase"
    phase: str
    option: OptionId = None
    title: str | None = None
    pairs: int | None = None
    scenarios: int | None = None
    hosts: list[str] | None = None


class SetupFailed(Event):
    kind: Literal["setup.failed"] = "setup.failed"
    error: str


class Calibration(Event):
    kind: Literal["calibration"] = "calibration"


# ---------------------------------------------------------------- investigation and planning


class SubagentStarted(Event):
    kind: Literal["subagent.started"] = "subagent.started"
    option: int
    brain: str | None = None
    probes: int | None = None


class SubagentTool(Event):
    kind: Literal["subagent.tool"] = "subagent.tool"
    option: int
    tool: str
    host: str | None = None


class SubagentTurn(Event):
    kind: Literal["subagent.turn"] = "subagent.turn"
    option: int
    turn: int
    said: str | None = None
    tools: list[Json] = []


class PermissionRequested(Event):
    kind: Literal["permission.requested"] = "permission.requested"
    option: OptionId = None
    host: str | None = None
    command: str
    why: str | None = None


class Finding(Event):
    kind: Literal["finding"] = "finding"
    option: int
    feasible: bool | None = None
    summary: str | None = None
    blockers: list[Json] = []
    hazards: list[Json] = []


class Plan(Event):
    kind: Literal["plan"] = "plan"
    brain: str | None = None
    order: list[int] = []
    rationale: Json = None
    proposals: list[Json] = []


class PlanReranked(Event):
    kind: Literal["plan.reranked"] = "plan.reranked"
    brain: str | None = None
    before: list[int] = []
    after: list[int] = []


# ---------------------------------------------------------------- commands on hosts


class CommandStarted(Event):
    kind: Literal["command.started"] = "command.started"
    host: str
    command: str
    purpose: str | None = None
    option: OptionId = None
    timeout_s: float | None = None
    secrets: list[str] = []
    key: str | None = None
    effect: str | None = None


class CommandFinished(Event):
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


class CommandRefused(Event):
    kind: Literal["command.refused"] = "command.refused"
    command: str | None = None
    host: str | None = None
    option: OptionId = None
    klass: str | None = None
    scope: str | None = None
    purpose: str | None = None
    part: str | None = None
    pattern: str | None = None


class FileUploaded(Event):
    kind: Literal["file.uploaded"] = "file.uploaded"
    host: str
    src: str
    dest: str
    sha256: str | None = None


class FileUploadFailed(Event):
    kind: Literal["file.upload_failed"] = "file.upload_failed"
    host: str
    src: str
    dest: str
    error: str | None = None


class MutationRecovered(Event):
    kind: Literal["mutation.recovered"] = "mutation.recovered"
    key: str
    host: str
    effect: str
    option: OptionId = None
    action: str
    result: Json = None


class MutationInDoubt(Event):
    kind: Literal["mutation.in_doubt"] = "mutation.in_doubt"
    key: str
    host: str
    effect: str
    option: OptionId = None
    reason: str | None = None


class MutationWaiting(Event):
    kind: Literal["mutation.waiting"] = "mutation.waiting"
    key: str
    host: str
    until: str | None = None
    seconds: float | None = None


# ---------------------------------------------------------------- an option's life


class ApplyFailed(Event):
    kind: Literal["apply.failed"] = "apply.failed"
    option: int
    reason: str | None = None


class UndoRecorded(Event):
    kind: Literal["undo.recorded"] = "undo.recorded"
    option: int
    revert: list[Json] = []
    verify: Json = None


class BenchRun(Event):
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


class BenchProgress(Event):
    kind: Literal["bench.progress"] = "bench.progress"
    option: int
    pair: int
    of: int


class BenchOutlier(Event):
    kind: Literal["bench.outlier"] = "bench.outlier"
    option: int
    pair: int
    action: str
    values: Json = None


class BenchExtended(Event):
    kind: Literal["bench.extended"] = "bench.extended"
    option: int
    from_pairs: int
    to_pairs: int
    reason: str | None = None


class BenchAborted(Event):
    kind: Literal["bench.aborted"] = "bench.aborted"
    option: int
    reason: str | None = None


class BenchBroken(Event):
    kind: Literal["bench.broken"] = "bench.broken"
    option: int
    runs: int
    reasons: list[str] = []


class ABResult(Event):
    kind: Literal["ab.result"] = "ab.result"
    option: int
    summary: str | None = None
    verdict: str | None = None
    effect_pct: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int | None = None


class StressResult(Event):
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


class StressDiagnosis(Event):
    kind: Literal["stress.diagnosis"] = "stress.diagnosis"
    option: OptionId = None
    scenario: str | None = None
    host: str | None = None
    exit: int | None = None
    artifact: str | None = None


class Assessment(Event):
    kind: Literal["assessment"] = "assessment"
    option: int
    brain: str | None = None
    verdict: str | None = None
    ab_verdict: str | None = None
    gain_pct: float | None = None
    ci: list[float] | None = None
    recommendation: str | None = None


class Kept(Event):
    kind: Literal["kept"] = "kept"
    option: int
    gain_pct: float | None = None
    ci: list[float] | None = None
    by: str | None = None
    hosts: list[str] | None = None
    except_hosts: list[str] | None = None


class RollbackSettling(Event):
    kind: Literal["rollback.settling"] = "rollback.settling"
    option: int
    runs: int | None = None
    first_wait_s: float | None = None
    up_to: float | None = None


class Rollback(Event):
    kind: Literal["rollback"] = "rollback"
    option: int
    verified: bool = False
    detail: str | None = None
    drift_pct: float | None = None
    delta_pct: float | None = None


# ---------------------------------------------------------------- gates and decisions


class GateOpened(Event):
    kind: Literal["gate.opened"] = "gate.opened"
    gate: str
    gate_kind: str
    option: OptionId = None
    interrupt: str | None = None
    question: str = ""
    facts: dict[str, Json] = {}
    recommendation: Json = None
    note: str | None = None
    recovered: bool | None = None  # journaled again after a crash (written only when true)


class Decision(Event):
    kind: Literal["decision"] = "decision"
    gate: str
    gate_kind: str | None = None
    option: OptionId = None
    interrupt: str | None = None
    by: str | None = None
    decision: dict[str, Json] | None = None  # None: the one-liner was understood but decided nothing yet
    raw: str | None = None
    rule: str | None = None
    echo: str | None = None
    parsed: dict[str, Json] | None = None  # what the one-liner was read as, before the gate's own checks
    opened: str | None = None  # when the gate opened (a deadline's answer)
    policy_sha256: str | None = None
    recovered: bool | None = None


class DecisionRejected(Event):
    kind: Literal["decision.rejected"] = "decision.rejected"
    gate: str | None = None
    gate_kind: str | None = None
    by: str | None = None
    raw: str | None = None
    error: str | None = None


class RuleAdded(Event):
    kind: Literal["rule.added"] = "rule.added"
    gate: str | None = None
    by: str | None = None
    raw: str | None = None
    rule: Json = None


class Report(Event):
    kind: Literal["report"] = "report"
    campaign: str | None = None
    options: list[dict[str, Json]] = []
    gates: list[dict[str, Json]] = []
    kept: list[int] = []
    deferred: list[Json] = []
    estimated_gain_pct: float | None = None
    error: str | None = None


# ---------------------------------------------------------------- the model behind the brain


class BrainFallback(Event):
    kind: Literal["brain.fallback"] = "brain.fallback"
    step: str
    option: OptionId = None
    error: str | None = None


class LlmCall(Event):
    kind: Literal["llm.call"] = "llm.call"
    purpose: str | None = None
    option: OptionId = None
    model: str | None = None
    cost_usd: float = 0.0


class LlmRetry(Event):
    kind: Literal["llm.retry"] = "llm.retry"
    purpose: str | None = None
    option: OptionId = None
    attempt: int | None = None
    status: int | None = None
    wait_s: float | None = None
    error: str | None = None


class LlmInvalid(Event):
    kind: Literal["llm.invalid"] = "llm.invalid"
    purpose: str | None = None
    option: OptionId = None
    attempt: int | None = None
    error: str | None = None


class LlmFailed(Event):
    kind: Literal["llm.failed"] = "llm.failed"
    purpose: str | None = None
    option: OptionId = None
    attempts: int | None = None
    error: str | None = None


class Unrecognized(Event):
    """A line of a kind this signoff does not know, or whose fields do not fit its kind (read, never written)."""

    problem: str | None = Field(default=None, exclude=True)


KnownEvent = Annotated[
    SessionStarted
    | SessionResumed
    | SessionRevisit
    | SessionWaiting
    | SessionPaused
    | SessionInterrupted
    | SessionFailed
    | SessionFinished
    | DocumentsMismatch
    | PolicyChanged
    | CheckpointUnreadable
    | LogRecovered
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
    | BenchAborted
    | BenchBroken
    | ABResult
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
