"""Where a session got to, for people and scripts: the `Outcome` (the `--json` summary and the report's
source, with its exit code) built from the graph's state and the journal's facts (`SessionView`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ValidationError

from agent.errors import FAILED, FINISHED, PAUSED
from agent.journal.view import TOKENS, SessionView, timestamp
from agent.models import Campaign
from policies.gates import GATES, Gate, spec_for

if TYPE_CHECKING:  # agent.state pulls in LangGraph, which the TUI's first frame must not wait for
    from agent.state import State

Status = Literal["finished", "paused", "failed", "stopped"]
EXIT = {"finished": FINISHED, "stopped": FINISHED, "paused": PAUSED, "failed": FAILED}


class Outcome(BaseModel):
    session: str
    status: Status
    options: list[dict[str, Any]] = []
    gates: list[dict[str, Any]] = []
    pending_gate: dict[str, Any] | None = None
    session_rules: list[dict[str, Any]] = []
    deferred: dict[str, Any] | None = None  # {"options": [...], "revisit": "signoff resume ID --revisit"}
    calibration: dict[str, Any] | None = None  # A/A noise floor, when the campaign asked for it
    goal: dict[str, Any] | None = None
    brain: dict[str, Any] | None = None  # which brain reasoned, and what its model calls cost
    journal: str
    error: str | None = None
    echo: str | None = None
    # `signoff abandon` gave the session up: who, when, and the options it rolled back (kept ones stay)
    abandoned: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def forbidden(self, fail_on: set[str]) -> list[dict[str, Any]]:
        """Gates decided in a way `--fail-on` forbids (ask = a person had to answer)."""
        names = {"ask": "human", "default": "headless-default", "deadline": "deadline"}
        return [g for g in self.gates if g["decided_as"] in {names[f] for f in fail_on}]


def decided_as(by: str | None) -> str:
    """human | policy-rule | session-rule | headless-default | deadline (from a decision's `by`)."""
    by = by or ""
    if by.startswith("human:"):
        return "human"
    if by.startswith("session-rule:"):
        return "session-rule"
    if by in ("headless-default", "deadline"):
        return by
    return "policy-rule"


def ended_as(view: SessionView) -> str | None:
    """How the journal says the run ended (its last session event is the end), or None."""
    return None if view.ended is None else view.ended.status or "failed"


def opened_at(view: SessionView, interrupt_id: str) -> datetime | None:
    """When the gate behind `interrupt_id` opened, as the journal says (None if it never said)."""
    gate = view.gate_opened_for(interrupt_id)
    return None if gate is None else timestamp(gate.opened)


def _pending(raw: dict[str, Any]) -> dict[str, Any]:
    """The gate a session waits at, as the node made it and whole (a field added to `Gate` is here too), and a
    one-liner it takes. A gate an older signoff paused at that this one's `Gate` does not take is given as it was
    checkpointed, never a traceback: `decide` still reads it, and the TUI says it cannot."""
    try:
        gate = Gate.model_validate(raw)
    except ValidationError:
        facts = raw.get("facts")
        known: dict[str, Any] = cast("dict[str, Any]", facts) if isinstance(facts, dict) else {}
        spec = spec_for(raw.get("kind"))
        suggested = spec.suggested(known) if spec is not None else "ask"
        return {**raw, "suggested": suggested}
    return gate.model_dump(mode="json") | {"suggested": GATES[gate.kind].suggested(gate.facts)}


def outcome_of(
    snapshot: Any, view: SessionView, *, session: str, journal: str, campaign: Campaign, brain: str, status: str | None
) -> Outcome:
    """The outcome of `session` from its graph `snapshot` and its journal's `view`; `status` is what
    meta.json says, for a session whose journal has not said how it ended."""
    from agent.nodes.report import build_report

    values = snapshot.values or {}
    summary = build_report(cast("State", values), campaign.name)
    pending = None
    if snapshot.interrupts:
        value = snapshot.interrupts[0].value
        pending = _pending(value["gate"])
        opened = opened_at(view, snapshot.interrupts[0].id)
        if value.get("deadline_s") and opened is not None:
            at = opened + timedelta(seconds=value["deadline_s"])
            pending["deadline"] = {"at": at.isoformat(timespec="seconds"), "on_deadline": value["on_deadline"]}
        state: Status = "paused"
    else:
        # The journal's end first: a runner elsewhere may have journaled it before updating meta.
        ended = ended_as(view) or status
        state = ended if ended in EXIT else "failed"  # type: ignore[assignment]
    return Outcome(
        session=session,
        status=state,
        options=[
            {k: o[k] for k in ("id", "title", "outcome", "gain_pct", "ci", "verdict", "reasons", "evidence")}
            | {k: o[k] for k in ("hosts", "except_hosts") if o.get(k)}
            | {k: o.get(k) for k in ("effect", "noise")}
            for o in summary["options"]
        ],
        gates=[
            {**{k: g[k] for k in ("kind", "option", "action", "by", "rule", "raw")}, "decided_as": decided_as(g["by"])}
            for g in summary["gates"]
        ],
        session_rules=[r for r in values.get("session_rules", [])],
        pending_gate=pending,
        goal=goal_summary(campaign.goal, summary.get("estimated_gain_pct"), summary.get("confirmation")),
        calibration=summary.get("calibration"),
        deferred={"options": summary["deferred"], "revisit": f"signoff resume {session} --revisit"}
        if summary["deferred"] and not snapshot.interrupts
        else None,
        brain=brain_usage(view, brain),
        journal=journal,
        error=summary.get("error"),
        abandoned=abandoned_summary(view, values),
    )


def abandoned_summary(view: SessionView, values: dict[str, Any]) -> dict[str, Any] | None:
    """`session.abandoned` as the outcome says it: who gave the session up and when, what the journal showed on the
    hosts then, the gate left unanswered and the options rolled back (None: it was not abandoned)."""
    if view.abandoned is None:
        return None
    asked = values.get("abandon") or {}
    fields = view.abandoned.fields()
    return {
        "by": fields.get("by"),
        "at": view.abandoned_at,
        "gate": fields.get("gate"),
        "roll_back": [int(o) for o in asked.get("roll_back") or fields.get("roll_back") or []],
        "on_hosts": fields.get("on_hosts") or {},
        # Each rollback the abandon ran, by option: whether it verified (a person may take one that did not)
        "verified": {
            str(o): ((values.get("options") or {}).get(str(o), {}).get("rollback") or {}).get("verified")
            for o in asked.get("done") or []
        },
    }


def goal_summary(goal: Any, estimated: float | None, confirmation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The goal as the report and `--json` say it. Measured (the end-of-campaign A/B): `met` is true when the whole CI
    clears the target, false when the whole CI is below it, None when unclear. Not measured: `met` compares the
    product of the single gains (`estimated_pct`) with the target, as before the confirmation existed."""
    measured = (confirmation or {}).get("goal")
    if measured is not None:
        verdict = measured["met"]
        met = {"met": True, "not met": False}.get(verdict)
    else:
        met = None if goal.target_pct is None or estimated is None else estimated >= goal.target_pct
        verdict = "estimate" if estimated is not None else None
    out = {
        "text": goal.text,
        "metric": goal.metric,
        "target_pct": goal.target_pct,
        "estimated_pct": estimated,
        "met": met,
        "verdict": verdict,
        "measured": measured is not None,
    }
    if measured is not None:
        out.update(
            measured_pct=measured["gain_pct"],
            ci=[measured["ci_low"], measured["ci_high"]],
            pairs=measured["pairs"],
            p_met=measured["p_met"],
            pairs_to_tell=measured["pairs_to_tell"],
            summary=confirmation["summary"],  # type: ignore[index]
        )
    if confirmation:
        out["interactions"] = [i["words"] for i in confirmation.get("interactions", [])]
        why = confirmation.get("skipped") or confirmation.get("error")
        if why:
            out["not_measured"] = why
    return out


def brain_usage(view: SessionView, name: str) -> dict[str, Any]:
    """Which brain reasoned, and what its model calls cost, as the journal counts them."""
    usage = {"name": name, "calls": view.llm_calls, "retries": view.llm_retries}
    tokens = {k: view.llm_tokens.get(k, 0) for k in TOKENS}
    out = {**usage, "fallbacks": view.brain_fallbacks, **tokens, "cost_usd": round(view.llm_usd, 6)}
    if view.fallback_steps:  # the steps the rule brain decided instead of the model, and why (an extension)
        out["fell_back"] = list(view.fallback_steps)
    return out
