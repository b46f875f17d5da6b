"""The machinery every gate node shares: building a gate from its typed facts, resolving it (policy,
session rules, a person), recording the decision, and re-ordering the queue it changes."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent.context import RunContext
from agent.exec.planning import rendered
from agent.models import CommandSpec
from agent.state import GateRecord, State
from policies.facts import (
    GateFacts,
)
from policies.gates import ALLOWED, Decision, Gate, GateKind
from policies.session_rules import SessionRule


def active_rules(state: State) -> list[SessionRule]:
    """Session rules still in force: `once`/`for_now` rules expire when they have decided a gate."""
    used = {g["decision"].get("by") for g in state.get("gates", [])}
    rules = [SessionRule.model_validate(r) for r in state.get("session_rules", [])]
    return [r for r in rules if r.decision.scope == "standing" or r.id not in used]


def option_status(state: State) -> dict[str, str]:
    """What each option is now, for validating what a decision may name."""
    queue = set(state.get("queue", []))
    current = state.get("current")
    out = {}
    for key, o in state.get("options", {}).items():
        if int(key) in queue:
            out[key] = "pending"
        elif current is not None and int(key) == current and o.get("outcome") == "untested":
            out[key] = "current"
        else:
            out[key] = o.get("outcome", "untested")
    return out


def make_gate(
    state: State,
    kind: GateKind,
    question: str,
    facts: GateFacts,
    *,
    option: int | None = None,
    options: list[int] | None = None,
    evidence: list[str] | None = None,
    status: dict[str, str] | None = None,
    hosts: list[str] | None = None,
    commands: list[str] | None = None,
) -> Gate:
    return Gate(
        id=f"g{len(state.get('gates', [])) + 1}",
        kind=kind,
        option=option,
        question=question,
        facts=facts.model_dump(),
        allowed=list(ALLOWED[kind]),
        options=options or [],
        evidence=evidence or [],
        status=status if status is not None else option_status(state),
        hosts=hosts or [],
        titles={k: title for k, o in state.get("options", {}).items() if (title := o.get("title"))},
        commands=commands or [],
    )


def resolve(
    state: State, runtime: Runtime[RunContext], gate: Gate, *, critical: bool = False
) -> tuple[Decision | None, State]:
    """(decision, state update). A None decision means: ask this gate again (a rule was added): the gate node sends
    the run back to itself with the update.

    A critical gate (an unverified rollback) never goes on by itself: a rule, session rule, default
    or deadline that would continue is overridden to ask; only a person can accept it.
    """
    ctx = runtime.context
    decision = ctx.engine.decide(gate, active_rules(state))
    if critical and decision.action in ("approve", "continue"):
        decision = Decision(
            action="ask",
            by=decision.by,
            rule=decision.rule,
            rationale=f"critical gate: {decision.by} would {decision.action}; a person must decide",
            matched=decision.matched,
        )
    gate = gate.model_copy(update={"recommendation": decision})
    if decision.action == "ask":
        default = ctx.policy.gate(gate.kind).headless_default
        if ctx.headless and default is not None and not (critical and default in ("approve", "continue")):
            decision = Decision(
                action=default,
                by="headless-default",
                rule=decision.rule,
                rationale=f"nobody present; policy headless_default for {gate.kind}",
                matched=decision.matched,
            )
        else:
            gp = ctx.policy.gate(gate.kind)
            on_deadline = gp.on_deadline if not (critical and gp.on_deadline in ("approve", "continue")) else None
            answer = interrupt(
                {
                    "gate": gate.model_dump(mode="json"),
                    "deadline_s": gp.deadline_s if on_deadline else None,
                    "on_deadline": on_deadline,
                }
            )
            rules = answer.get("rules", [])
            if answer.get("decision") is None:
                return None, {"session_rules": rules}
            decision = Decision.model_validate(answer["decision"])
            update: State = {"session_rules": rules} if rules else {}
            return decision, {**update, "gates": [record(gate, decision)]}
    return decision, {"gates": [record(gate, decision)]}


def record(gate: Gate, decision: Decision) -> GateRecord:
    return {
        "id": gate.id,
        "kind": gate.kind,
        "option": gate.option,
        "question": gate.question,
        "facts": gate.facts,
        "recommendation": gate.recommendation.model_dump(mode="json") if gate.recommendation else None,
        "decision": decision.model_dump(mode="json", exclude_none=True),
    }


def requeue(
    queue: list[int], decision: Decision, plan: list[int], status: dict[str, str]
) -> tuple[list[int], dict[str, Any]]:
    """Apply skip/defer/select targets to the queue; returns (queue, per-option updates).

    Only pending options can be skipped or deferred, and kept or no-go options are never selected:
    `agent.run.answers` refuses such decisions, and this keeps a policy or session rule from doing it.
    """
    updates: dict[str, Any] = {}
    queue = list(queue)
    if decision.action in ("skip", "defer") and decision.targets:
        outcome = "deferred" if decision.action == "defer" or decision.scope == "for_now" else "skipped"
        for t in decision.targets:
            if t not in queue:
                continue
            queue.remove(t)
            why = f"{decision.action} by {decision.by}" + (f": {decision.raw!r}" if decision.raw else "")
            updates[str(t)] = {"outcome": outcome, "reasons": [why]}
    if decision.action == "select" and decision.targets:
        chosen = [t for t in decision.targets if t in plan and status.get(str(t)) not in ("no-go", "kept", "current")]
        queue = chosen + [q for q in queue if q not in chosen]
        for t in chosen:
            updates[str(t)] = {"outcome": "untested"}
    return queue, updates


def host_lines(per_host: dict[str, dict[str, Any]]) -> list[str]:
    if not per_host:
        return []
    lines = ["Per host:"]
    for name, h in per_host.items():
        ci = f" (95% CI {h['ci'][0]:+.1f}%…{h['ci'][1]:+.1f}%)" if h.get("ci") else ""
        gain = f"{h['gain_pct']:+.1f}%" if h.get("gain_pct") is not None else "no estimate"
        lines.append(f"- {name}: {gain}{ci} → {h['verdict']}")
    return lines


def option_hosts(ctx: RunContext, option_id: int) -> list[str]:
    """The hosts an option changes (its apply commands' targets): what an exception may name."""
    option = ctx.campaign.option(option_id)
    return list(dict.fromkeys(h.name for spec in option.apply for h in ctx.campaign.targets(spec.on)))


def as_run(ctx: RunContext, specs: list[CommandSpec]) -> str:
    """Commands as they will run, rendered for each of their hosts (identical ones grouped)."""
    by_command: dict[str, list[str]] = {}
    for spec in specs:
        try:
            for host, command in rendered(ctx, spec):
                by_command.setdefault(ctx.redact(command), []).append(host.name)
        except KeyError:  # a proposal naming a host the campaign does not have: shown as written
            by_command.setdefault(spec.run, []).append(spec.on)
    return "; ".join(f"`{c}` on {', '.join(dict.fromkeys(hs))}" for c, hs in by_command.items())


def undo_plan(ctx: RunContext, option_id: int) -> str:
    """The rollback proposal shown with every keep-or-roll-back question."""
    option = ctx.campaign.option(option_id)
    rb = ctx.campaign.rollback
    check = " the option's `check` must say it is off on every host," if option.check else ""
    return (
        f"Undo plan: {as_run(ctx, option.revert)}, then health checks,{check} and {rb.verify_runs} baseline "
        "run(s) that must match the recent baseline arm or the known-good baseline, within the noise "
        f"measured in this run (at least ±{rb.floor_pct:g}%; a band wider than ±{rb.ceiling_pct:g}% "
        "cannot verify by the metric)"
        + (
            f"; up to {rb.settle_runs} more if the first are off, judged on the latest {rb.verify_runs}."
            if rb.settle_runs
            else "."
        )
    )
