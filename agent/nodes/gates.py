"""Gate nodes. Each is pure: build the `Gate` from state, let session rules and the policy decide,
and call `interrupt()` exactly once, only when the answer is `ask`. The node runs again from the
top on resume, so nothing here writes to the journal or touches a host; the driver journals gates
from the node's returned record (DESIGN §4).
"""

from __future__ import annotations

from typing import Any, Literal, cast

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from agent.context import RunContext
from agent.models import Assessment, Finding
from agent.nodes.gating import as_run, host_lines, make_gate, option_hosts, requeue, resolve, undo_plan
from agent.nodes.investigate import fan_out, pending_requests
from agent.nodes.pick import pending_commands
from agent.state import State, assessed, current, updated
from policies.facts import (
    BrainUnavailableFacts,
    BudgetFacts,
    CommandClass,
    CommandFacts,
    ContinueFacts,
    GoalFacts,
    PlanFacts,
    RollbackFacts,
    SafetyFacts,
    TriageFacts,
)
from tools.failures import FailureTest
from tools.goal import GoalVerdict, Interaction

# ---------------------------------------------------------------- plan


def plan_gate(state: State, runtime: Runtime[RunContext]) -> Command[Literal["investigate", "plan_gate", "confirm"]]:
    ctx = runtime.context
    plan = state.get("plan", [])
    options = state.get("options", {})
    # The engineer's options, in the engineer's order; anything else in the plan came from the brain.
    campaign_ids = [o.id for o in ctx.campaign.options if not options.get(str(o.id), {}).get("proposed")]
    proposed = [o for o in plan if o not in campaign_ids]
    reordered = [o for o in plan if o in campaign_ids] != [o for o in campaign_ids if o in plan]
    lines = ["Plan, in order:"]
    for o in plan:
        entry = options.get(str(o), {})
        why = f" — {rationale}" if (rationale := entry.get("rationale")) else ""
        lines.append(
            f"- #{o} {entry.get('title', '?')}{' **(proposed by the brain)**' if entry.get('proposed') else ''}{why}"
        )
        if entry.get("proposed"):
            ctx = runtime.context
            try:
                proposal = ctx.campaign.option(o)
                lines.append(f"  apply: {as_run(ctx, proposal.apply)} · revert: {as_run(ctx, proposal.revert)}")
            except KeyError:
                apply, revert = "; ".join(entry.get("apply", [])), "; ".join(entry.get("revert", []))
                lines.append(f"  apply: `{apply}` · revert: `{revert}`")
    if proposed:
        lines.append("Proposed options run only if you keep them in the plan; skip any you do not want.")
    lines.append("Approve it? (skip or defer options, or go with one first)")
    gate = make_gate(
        state,
        "plan",
        "\n".join(lines),
        PlanFacts(options=len(plan), proposed=len(proposed), reordered=reordered),
        options=list(plan),
        status={str(o): "pending" for o in plan},
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="plan_gate", update=update)
    if decision.action == "stop":
        return Command(goto="confirm", update={**update, "stopping": True})
    new_plan, changes = requeue(plan, decision, plan, gate.status)
    planned: State = {**update, "plan": new_plan, "options": changes}
    if not new_plan:
        return Command(goto="confirm", update=planned)
    # One investigation subagent per option left in the plan, each from the state this update makes.
    return Command(goto=fan_out(updated(state, planned)), update=planned)


# ---------------------------------------------------------------- budget


def budget_gate(state: State, runtime: Runtime[RunContext]) -> Command[Literal["pick_next", "confirm", "budget_gate"]]:
    b = state.get("budget") or {}
    limits = runtime.context.policy.model.budgets
    over = ", ".join(b.get("exceeded", []))
    gate = make_gate(
        state,
        "budget",
        f"Budget reached ({over}) with {len(state.get('queue', []))} option(s) left "
        f"(limits: {limits.model_dump(exclude_none=True)}). Continue anyway, or stop with the report?",
        BudgetFacts(
            spent_usd=float(b.get("spent_usd", 0.0)),
            elapsed_min=float(b.get("elapsed_min", 0.0)),
            options_tried=int(b.get("options_tried", 0)),
        ),
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="budget_gate", update=update)
    if decision.action in ("continue", "approve"):
        return Command(goto="pick_next", update={**update, "budget_approved": list(b.get("limits", []))})
    return Command(goto="confirm", update={**update, "stopping": True})


# ---------------------------------------------------------------- brain unavailable


def brain_gate(state: State, runtime: Runtime[RunContext]) -> Command[Literal["pick_next", "confirm", "brain_gate"]]:
    ctx = runtime.context
    down = state.get("brain_down")
    if down is None:
        raise RuntimeError("the brain gate ran with no model given up (a routing bug in agent/nodes/pick.py)")
    facts = BrainUnavailableFacts(
        cause=down["cause"],
        failed_calls=int(down["failed_calls"]),
        options_left=len(state.get("queue", [])),
        spent_usd=float(down.get("spent_usd", 0.0)),
    )
    why = str(down["why"])
    headline = why if why.startswith("Claude unavailable") else f"Claude unavailable: {why}"
    gate = make_gate(
        state,
        "brain_unavailable",
        f"{headline} ({ctx.brain.name}).\n{facts.options_left} option(s) left. Continue with the rule brain, retry "
        "the model, or stop with the report?",
        facts,
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="brain_gate", update=update)
    if decision.action == "retry":
        # The client's state lives in this process: set again when the node runs again after a crash (idempotent),
        # and a resumed session's client calls the model anyway.
        ctx.brain.use_model(None)
        return Command(goto="pick_next", update={**update, "brain_down": None})
    if decision.action in ("continue", "approve"):
        return Command(goto="pick_next", update={**update, "brain_down": None, "brain_rules": down["why"]})
    return Command(goto="confirm", update={**update, "stopping": True})


# ---------------------------------------------------------------- goal

CONFIRM_PAIRS_MAX = 50  # a policy's "measure again" without a number runs at most this many pairs


def goal_gate(state: State, runtime: Runtime[RunContext]) -> Command[Literal["confirm", "report", "goal_gate"]]:
    c = state.get("confirmation")
    if c is None or "goal" not in c or "summary" not in c:
        raise RuntimeError("the goal gate ran with no goal measured (a routing bug in agent/nodes/confirm.py)")
    # As confirm's summarize wrote them: the goal's verdict and each interaction, with the words it had then.
    goal = GoalVerdict.model_validate(c["goal"])
    found = [(Interaction.model_validate(i), i["words"]) for i in c.get("interactions") or []]
    whole = found[0][0] if found and sorted(found[0][0].options) == sorted(c["kept"]) else None
    facts = GoalFacts(
        goal_met=goal.met,
        goal_gain_pct=goal.gain_pct,
        goal_ci_low=goal.ci_low,
        goal_ci_high=goal.ci_high,
        target_pct=goal.target_pct or 0.0,
        p_goal_met=goal.p_met or 0.0,
        pairs=goal.pairs,
        pairs_to_tell=goal.pairs_to_tell or 0,
        kept=len(c["kept"]),
        interaction_pct=whole.interaction_pct if whole else 0.0,
        interaction=any(i.kind != "none" for i, _ in found),
        rounds=int(c.get("rounds", 1)),
    )
    kept = ", ".join(f"#{o}" for o in c["kept"])
    lines = [f"The final configuration ({kept} kept) against the one the campaign started from: {c['summary']}."]
    lines += [f"{words}." for _, words in found]
    lines.append("Accept it, measure again with more pairs, or stop?")
    gate = make_gate(state, "goal", "\n".join(lines), facts, options=c["kept"])
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="goal_gate", update=update)
    if decision.action == "retry":
        asked = decision.runs or facts.pairs_to_tell or 2 * facts.pairs
        least = runtime.context.campaign.benchmark.pairs  # fewer than any A/B of the campaign would tell less
        return Command(goto="confirm", update={**update, "confirm_pairs": max(least, min(asked, CONFIRM_PAIRS_MAX))})
    if decision.action == "stop":
        return Command(goto="report", update={**update, "stopping": True})
    return Command(goto="report", update=update)


# ---------------------------------------------------------------- triage


def triage_gate(state: State, runtime: Runtime[RunContext]) -> Command[Literal["pick_next", "confirm", "triage_gate"]]:
    findings = {k: Finding.model_validate(f) for k, f in state.get("findings", {}).items()}  # as the subagents wrote
    plan = state.get("plan", [])
    no_go = [int(k) for k, f in findings.items() if not f.feasible]
    feasible = [o for o in plan if o not in no_go]
    lines = [f"Investigation of {len(findings)} option(s):"]
    for key in sorted(findings, key=int):
        f = findings[key]
        title = state.get("options", {})[key].get("title", "?")
        status = "NO-GO" if not f.feasible else ("hazard" if f.hazards else "clear")
        if f.model_only:
            status += " (the model's reading only: no probe failed)"
        detail = "; ".join(f.blockers or f.hazards) or "probes passed"
        lines.append(f"- #{key} {title}: **{status}** — {detail}")
    lines.append(f"Proceed with {', '.join(f'#{o}' for o in feasible) or 'nothing'}, skipping the no-go options?")
    gate = make_gate(
        state,
        "triage",
        "\n".join(lines),
        TriageFacts(
            no_go_count=len(no_go),
            hazard_count=sum(len(f.hazards) for f in findings.values()),
            feasible_count=len(feasible),
            has_next_step=bool(feasible),
            model_only_nogo=sum(1 for k in no_go if findings[str(k)].model_only),
        ),
        options=sorted(int(k) for k in findings),
        evidence=[f"finding #{k}" for k in sorted(findings, key=int)],
        status={k: ("no-go" if int(k) in no_go else "pending") for k in findings},
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="triage_gate", update=update)
    options: dict[str, Any] = {str(o): {"outcome": "no-go"} for o in no_go}
    if decision.action == "stop":
        return Command(goto="confirm", update={**update, "queue": [], "stopping": True, "options": options})
    queue, changes = requeue(feasible, decision, plan, gate.status)
    return Command(goto="pick_next", update={**update, "queue": queue, "options": {**options, **changes}})


# ---------------------------------------------------------------- safety


def sweep_facts(ab: dict[str, Any]) -> dict[str, Any]:
    """The safety facts a load sweep adds (none without one: the facts' defaults say "no sweep")."""
    sweep = ab.get("sweep")
    if not sweep:
        return {}
    level = sweep["level"]
    here = next((lv for lv in sweep["levels"] if lv["level"] == level), None)
    caps = sweep.get("capacity") or {}
    fits = sweep.get("fit") or {}
    fitted = all("slope" in fits.get(arm, {}) for arm in ("A", "B"))
    gain = sweep.get("capacity_gain_pct")
    return {
        "sweep_levels": len(sweep["levels"]),
        "level": float(level),
        "levels_improved": sum(1 for lv in sweep["levels"] if lv["verdict"] == "improved"),
        "levels_regressed": sum(1 for lv in sweep["levels"] if lv["verdict"] == "regressed"),
        "slo_met": not sweep.get("slo") or (here is not None and here["arms"]["B"].get("slo") == "meets"),
        "has_capacity": gain is not None,
        "capacity_base": float(caps.get("A") or 0.0),
        "capacity_option": float(caps.get("B") or 0.0),
        "capacity_gain_pct": float(gain or 0.0),
        "has_fit": fitted,
        **(
            {
                "fixed_ms": float(fits["B"]["intercept"]),
                "per_request_ms": float(fits["B"]["slope"]),
                "base_fixed_ms": float(fits["A"]["intercept"]),
                "base_per_request_ms": float(fits["A"]["slope"]),
            }
            if fitted
            else {}
        ),
    }


def request_facts(test: FailureTest | None) -> dict[str, Any]:
    """The failed-request facts from the assessment's test (an assessment without one: their defaults)."""
    if not test:
        return {}
    return {
        "requests_failed": test.option.failed,
        "requests_failed_baseline": test.baseline.failed,
        "request_failures_higher": test.higher,
        "request_failure_p": test.p,
    }


def safety_gate(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["keep", "rollback", "benchmark", "safety_gate"]]:
    option = current(state)
    key = str(option)
    a = Assessment.model_validate(state.get("assessments", {})[key])  # as assess wrote it
    ab = state.get("ab", {}).get(key, {})
    stress = state.get("stress", {}).get(key) or []
    per_host = ab.get("hosts") or {}
    facts = SafetyFacts(
        option=key,
        verdict=a.verdict,
        ab_verdict=a.ab_verdict,
        has_estimate=a.gain_pct is not None,
        gain_pct=float(a.gain_pct if a.gain_pct is not None else 0.0),
        ci_low=float(a.ci[0]) if a.ci else 0.0,
        ci_high=float(a.ci[1]) if a.ci else 0.0,
        pairs=a.pairs,
        wedges=a.wedges,
        stress_errors=a.stress_errors,
        failed_requests=a.failed_requests,
        **request_facts(a.request_failures),
        hazards=len(a.hazards),
        hazard_reproduced=a.hazard_reproduced,
        measurement_broken=a.measurement_broken,
        confidence=float(a.confidence),
        risk=a.risk,
        hosts_measured=len(per_host) or 1,
        hosts_regressed=sum(1 for h in per_host.values() if h["verdict"] == "regressed"),
        detectable_pct=float(ab.get("detectable_pct") or 0.0),
        spread_ratio=float(ab.get("spread_ratio") or 1.0),
        spread_changed=bool(ab.get("spread_changed")),
        saturated_runs=sum(1 for s in stress if s.get("outcome") == "saturated"),
        dead_runs=sum(1 for s in stress if s.get("outcome") == "dead"),
        bench_wedges=int((ab.get("candidate_stalls") or {}).get("wedge", 0)),
        bench_saturated=int((ab.get("candidate_stalls") or {}).get("saturated", 0)),
        bench_dead=int((ab.get("candidate_stalls") or {}).get("dead", 0)),
        **sweep_facts(ab),
    )
    title = state.get("options", {})[key].get("title", "?")
    question = "\n".join(
        [
            f"#{key} {title}: safety **{a.verdict}**, A/B **{a.ab_verdict}**; "
            f"the assessment recommends **{a.recommendation}**.",
            *[f"- {r}" for r in a.reasons],
            *([f"Assessor ({runtime.context.brain.name}): {a.rationale}"] if a.rationale else []),
            *host_lines(per_host),
            undo_plan(runtime.context, option),
            "Keep it (continue), or skip it and roll back?"
            + (" Or keep it where it helps: approve on all except HOST[, HOST]." if per_host else ""),
        ]
    )
    gate = make_gate(
        state,
        "safety",
        question,
        facts,
        option=option,
        options=[option],
        evidence=[f"ab #{key}", f"stress #{key}", f"assessment #{key}"],
        hosts=option_hosts(runtime.context, option),
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="safety_gate", update=update)
    action = decision.action
    if action in ("continue", "approve"):
        return Command(goto="keep", update=update)  # keep reads any exceptions from the recorded decision
    if action == "retry":
        pairs = decision.runs or runtime.context.campaign.benchmark.max_pairs
        return Command(goto="benchmark", update={**update, "retry_pairs": pairs})
    if action == "stop":
        outcome = {"outcome": "skipped", "reasons": [f"stopped by {decision.by}"]}
        return Command(goto="rollback", update={**update, "stopping": True, "options": {key: outcome}})
    deferred = action == "defer" or decision.scope == "for_now"
    reason = f"{'deferred' if deferred else 'skipped'} by {decision.by}" + (
        f" ({decision.raw!r})" if decision.raw else ""
    )
    return Command(
        goto="rollback",
        update={**update, "options": {key: {"outcome": "deferred" if deferred else "skipped", "reasons": [reason]}}},
    )


# ---------------------------------------------------------------- continue or ask


def continue_gate(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["pick_next", "confirm", "continue_gate"]]:
    queue = state.get("queue", [])
    options = state.get("options", {})
    last = state.get("current")
    last_key = str(last) if last is not None else None
    assessment = assessed(state, last_key or "")
    kept = [k for k, o in options.items() if o.get("outcome") == "kept"]
    last_outcome = options.get(last_key, {}).get("outcome", "none") if last_key else "none"
    facts = ContinueFacts(
        has_next_step=bool(queue),
        next_option=str(queue[0]) if queue else "",
        remaining=len(queue),
        kept=len(kept),
        last_outcome=last_outcome,
        confidence=float(assessment.confidence) if assessment else 0.5,
    )
    if queue:
        nxt = options[str(queue[0])].get("title", "?")
        question = f"#{last_key} finished ({last_outcome}). Next: #{queue[0]} {nxt}. Continue?"
    else:
        question = f"#{last_key} finished ({last_outcome}). Nothing left to try. Finish with the report?"
    if assessment and assessment.next_step:
        question += f"\nAssessor: {assessment.next_step}"
    gate = make_gate(state, "continue_or_ask", question, facts, option=last, options=sorted(int(k) for k in options))
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="continue_gate", update=update)
    if decision.action == "stop":
        return Command(goto="confirm", update={**update, "stopping": bool(queue)})
    queue, changes = requeue(queue, decision, state.get("plan", []), gate.status)
    return Command(goto="pick_next", update={**update, "queue": queue, "options": changes})


# ---------------------------------------------------------------- rollback


def rollback_gate(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["rollback", "continue_gate", "confirm", "rollback_gate", "abandon"]]:
    v = state.get("verification") or {}
    key = str(current(state))
    facts = RollbackFacts(
        option=key,
        health_ok=bool(v.get("health_ok")),
        verified=bool(v.get("verified")),
        measured=v.get("delta_pct") is not None,
        delta_pct=float(v.get("delta_pct") or 0.0),
        drift_pct=float(v.get("drift_pct") or 0.0),
        state_checked=v.get("state_ok") is not None,
        state_ok=v.get("state_ok") is not False,
    )
    what = "a change to" if v.get("in_doubt") else "rollback of"
    question = (
        f"**CRITICAL** — {what} #{key} did not verify: {v.get('detail', 'no detail')}. The hosts may not "
        f"be on the known-good baseline.\n{undo_plan(runtime.context, current(state))}\n"
        "Revert (and verify), accept it as is, or stop?"
    )
    gate = make_gate(state, "rollback", question, facts, option=current(state))
    decision, update = resolve(state, runtime, gate, critical=True)
    if decision is None:
        return Command(goto="rollback_gate", update=update)
    if decision.action == "retry":  # "revert again 3 times": up to 3 attempts, until one verifies
        return Command(goto="rollback", update={**update, "reverts_left": (decision.runs or 1) - 1})
    # The person took the rollback as it is, or said stop: an abandon goes on to its next rollback, or ends.
    abandoning = bool(state.get("abandon"))
    if decision.action == "stop":
        return Command(goto="abandon" if abandoning else "confirm", update={**update, "stopping": True})
    return Command(goto="abandon" if abandoning else "continue_gate", update=update)


# ---------------------------------------------------------------- command approval


def command_gate(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["setup", "apply", "pick_next", "confirm", "command_gate", "investigate", "review"]]:
    scope = state.get("command_scope") or "campaign"
    pending = pending_commands(state, runtime.context, scope)
    host, command, klass = pending[0]
    listed = "\n".join(f"{i}. `{c}` on {h}" for i, (h, c, _) in enumerate(pending, 1))
    if scope == "investigate":
        asking = sorted({o for *_, o in pending_requests(state)})
        subject = "investigation subagent(s) " + ", ".join(f"#{o}" for o in asking)
        question = (
            f"The {subject} asked to run commands outside the policy's read-only list:\n{listed}\n"
            "Run them (the investigation of that option runs again with them), or decline?"
            + (" (`approve 1 and 3` or `approve all but 2` picks)" if len(pending) > 1 else "")
        )
        option = asking[0]
    else:
        subject = "the campaign's setup, benchmark and stress" if scope == "campaign" else f"option #{scope}"
        question = f"The command policy asks before these commands for {subject}:\n{listed}\nRun them?" + (
            " (`approve 1 and 3` or `approve all but 2` picks)" if len(pending) > 1 else ""
        )
        option = None if scope == "campaign" else int(scope)
    gate = make_gate(
        state,
        "command",
        question,
        CommandFacts(command=command, host=host, klass=cast(CommandClass, klass)),
        option=option,
        options=[option] if option else [],
        commands=[c for _, c, _ in pending],
    )
    decision, update = resolve(state, runtime, gate)
    if decision is None:
        return Command(goto="command_gate", update=update)
    if decision.action == "approve":
        # A person answers what the question lists: every command, or the ones picked by number ("approve 1
        # and 3"). A policy or session rule looked at one command's facts and approves exactly that one.
        # Whatever is left is asked again.
        if decision.raw is None:
            approved = [command]
        elif decision.targets:
            approved = [pending[t - 1][1] for t in decision.targets if 1 <= t <= len(pending)]
        else:
            approved = [c for _, c, _ in pending]
        if len(set(approved)) < len({c for _, c, _ in pending}):
            return Command(goto="command_gate", update={**update, "approved": approved})
        answered: State = {**update, "approved": approved, "command_scope": None}
        if scope == "investigate":
            return Command(goto=_reinvestigate(updated(state, answered)), update=answered)
        return Command(goto="apply" if state.get("plan") else "setup", update=answered)
    if decision.action == "stop" or scope == "campaign":
        return Command(goto="confirm", update={**update, "stopping": True, "command_scope": None})
    if scope == "investigate":
        # Declined: the subagent's question stays open in its finding, as something nobody checked (not a
        # confirmed hazard: that would make the option unsafe on a question alone).
        findings = state.get("findings", {})
        hazards: dict[str, list[str]] = {}
        for h, c, _, o in pending_requests(state):
            hazards.setdefault(str(o), list(findings.get(str(o), {}).get("unchecked", [])))
            hazards[str(o)].append(f"`{c}` on {h} was declined by {decision.by}")
        # Options whose requests were all approved (earlier at this gate) are still investigated again.
        approved_only = [k for k, reqs in (state.get("permission_requests") or {}).items() if reqs and k not in hazards]
        declined: State = {
            **update,
            "command_scope": None,
            "findings": {k: {"unchecked": v} for k, v in hazards.items()},
            "permission_requests": {k: [] for k in hazards},
        }
        return Command(goto=_reinvestigate(updated(state, declined)) if approved_only else "review", update=declined)
    reason = f"commands not approved by {decision.by}: {', '.join(c for _, c, _ in pending)}"
    return Command(
        goto="pick_next",
        update={**update, "command_scope": None, "options": {scope: {"outcome": "untested", "reasons": [reason]}}},
    )


def _reinvestigate(state: State) -> list[Send]:
    """The investigation subagents to run again: one per option whose requests are still open, each with every
    command approved so far (`state` as the command gate's update leaves it)."""
    asked = [int(k) for k, reqs in (state.get("permission_requests") or {}).items() if reqs]
    return fan_out(state, only=sorted(asked))
