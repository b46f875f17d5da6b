"""Choose the next option and check its commands against the policy before anything runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import RunContext
from agent.exec.planning import command_class, rendered, upload_class, upload_command
from agent.journal import events as ev
from agent.models import CommandSpec
from agent.nodes.investigate import pending_requests
from agent.state import BrainDown, BudgetCheck, OptionEntry, State


def scope_commands(ctx: RunContext, scope: str) -> list[CommandSpec]:
    c = ctx.campaign
    if scope == "campaign":
        diagnose = [CommandSpec(run=s.diagnose, on=s.on) for s in c.stress if s.diagnose]
        diagnose += [CommandSpec(run=s.check, on=s.on) for s in c.stress if s.check]
        prep = [CommandSpec(run=cmd, on=c.benchmark.on) for cmd in (c.benchmark.restart, c.benchmark.warmup) if cmd]
        return [*c.baseline.setup, *c.baseline.health, c.benchmark, *prep, *c.stress, *diagnose]
    option = c.option(int(scope))
    return [*option.apply, *option.revert, *([option.check] if option.check else [])]


def classified(ctx: RunContext, scope: str) -> list[tuple[str, str, str]]:
    """(host, command, class) for every command of a scope, rendered for its hosts."""
    out = []
    if scope == "campaign":  # the baseline's uploads write files on the hosts before anything runs
        for up in ctx.campaign.baseline.upload:
            dest = up.dest or Path(up.src).name
            for host in ctx.campaign.targets(up.on):
                out.append((host.name, upload_command(up.src, dest), upload_class(up.src, dest).klass))
    for spec in scope_commands(ctx, scope):
        for host, command in rendered(ctx, spec):
            out.append((host.name, command, command_class(ctx, command).klass))
    return out


def pending_commands(state: State, ctx: RunContext, scope: str) -> list[tuple[str, str, str]]:
    if scope == "investigate":
        return [(h, c, k) for h, c, k, _ in pending_requests(state)]
    approved = set(state.get("approved", []))
    return [(h, c, k) for h, c, k in classified(ctx, scope) if k == "ask" and c not in approved]


def denied(ctx: RunContext, scope: str) -> list[tuple[str, str, str]]:
    return [(h, c, k) for h, c, k in classified(ctx, scope) if k == "deny"]


def initial_options(ctx: RunContext) -> dict[str, OptionEntry]:
    return {
        str(o.id): {
            "title": o.title,
            "outcome": "untested",
            "reasons": [],
            "verdict": None,
            "gain_pct": None,
            "ci": None,
        }
        for o in ctx.campaign.options
    }


def preflight(state: State, runtime: Runtime[RunContext]) -> Command[Literal["command_gate", "setup", "confirm"]]:
    ctx = runtime.context
    # Every option appears in every report, even when the run stops before it starts.
    first: State = {} if state.get("options") else {"options": initial_options(ctx)}
    refused = denied(ctx, "campaign")
    if refused:
        for host, command, _ in refused:
            ctx.journal.append(ev.CommandRefusedEvent(scope="campaign", host=host, command=command, klass="deny"))
        error = f"the policy denies a campaign command: {refused[0][1]!r}"
        return Command(goto="confirm", update={**first, "stopping": True, "report": {"error": error}})
    if pending_commands(state, ctx, "campaign"):
        return Command(goto="command_gate", update={**first, "command_scope": "campaign"})
    return Command(goto="setup", update=first)


def check_budget(state: State, ctx: RunContext) -> BudgetCheck:
    """Budget facts now, and which of the policy's limits they exceed."""
    limits = ctx.policy.model.budgets
    elapsed = round((time.time() - ctx.started_at) / 60, 3)
    spent = round(ctx.spent_usd, 4)
    tried = len(set(state.get("tried", [])))
    exceeded: list[str] = []
    limits_hit: list[str] = []
    if limits.wall_min is not None and elapsed >= limits.wall_min:
        exceeded.append(f"wall time {elapsed:.1f} ≥ {limits.wall_min:g} min")
        limits_hit.append("wall_min")
    if limits.llm_usd is not None and spent >= limits.llm_usd:
        exceeded.append(f"LLM spend ${spent:.2f} ≥ ${limits.llm_usd:g}")
        limits_hit.append("llm_usd")
    if limits.options is not None and tried >= limits.options:
        exceeded.append(f"{tried} options tried ≥ {limits.options}")
        limits_hit.append("options")
    return {
        "elapsed_min": elapsed,
        "spent_usd": spent,
        "options_tried": tried,
        "exceeded": exceeded,
        "limits": limits_hit,
    }


def pick_next(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["apply", "command_gate", "continue_gate", "confirm", "budget_gate", "brain_gate"]]:
    ctx = runtime.context
    queue = list(state.get("queue", []))
    if state.get("stopping") or not queue:
        return Command(goto="confirm", update={"current": state.get("current")})
    rules = state.get("brain_rules")
    if rules:
        ctx.brain.use_model(rules)  # chosen at a brain_unavailable gate; a resumed session's brain starts afresh
    else:
        down = ctx.brain.unavailable()
        if down is not None:  # the model was given up: continue with rules, retry it, or stop?
            given_up: BrainDown = {
                "why": down.why,
                "cause": down.cause,
                "failed_calls": down.failed_calls,
                "spent_usd": round(ctx.spent_usd, 4),
            }
            return Command(goto="brain_gate", update={"brain_down": given_up})
    ctx.budget_approved = set(state.get("budget_approved") or [])
    budget = check_budget(state, ctx)
    if set(budget["limits"]) - ctx.budget_approved:
        return Command(goto="budget_gate", update={"budget": budget})  # a limit nobody has agreed to go past yet
    current = queue.pop(0)
    key = str(current)
    update: State = {"queue": queue, "current": current, "retry_pairs": None, "verification": None}
    refused = denied(ctx, key)
    if refused:
        for host, command, _ in refused:
            ctx.journal.append(ev.CommandRefusedEvent(option=current, host=host, command=command, klass="deny"))
        reason = f"the policy denies {refused[0][1]!r}; option not tried"
        return Command(
            goto="continue_gate", update={**update, "options": {key: {"outcome": "untested", "reasons": [reason]}}}
        )
    if pending_commands(state, ctx, key):
        return Command(goto="command_gate", update={**update, "command_scope": key})
    return Command(goto="apply", update=update)
