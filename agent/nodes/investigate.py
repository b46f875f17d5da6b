"""Investigation subagents: one per option, fanned out with `Send` to a subgraph of their own.

The subgraph is `explore` (the brain's probes and read-only tool loop) then `conclude` (journal
the finding, hand it and any permission requests to the parent). The checkpoint between them
means a crash after an expensive exploration does not pay for it twice. Investigation is
read-only, so running it again after a crash inside `explore` repeats nothing but cost.

After all subagents return, `review` asks a person (command gate) for anything a subagent could
not run without approval, then lets the brain re-rank the feasible options with the findings.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from agent.context import RunContext
from agent.exec.investigation import HostToolbox
from agent.journal import events as ev
from agent.models import Finding
from agent.state import State


class Subagent(TypedDict, total=False):
    option_id: Required[int]
    approved: list[str]
    finding: dict[str, Any]
    findings: dict[str, dict[str, Any]]
    permission_requests: dict[str, list[dict[str, str]]]


class SubagentOutput(TypedDict, total=False):
    findings: dict[str, dict[str, Any]]
    permission_requests: dict[str, list[dict[str, str]]]


def fan_out(state: State, only: list[int] | None = None) -> list[Send]:
    approved = list(state.get("approved", []))
    targets = only if only is not None else state.get("plan", [])
    return [Send("investigate", {"option_id": o, "approved": approved}) for o in targets]


def explore(s: Subagent, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = ctx.campaign.option(s["option_id"])
    agent = f"investigator#{option.id}"
    ctx.journal.append(
        ev.SubagentStartedEvent(option=option.id, probes=len(option.probes), brain=ctx.brain.name), actor=agent
    )
    tools = HostToolbox(ctx, option, agent, approved=frozenset(s.get("approved", [])))
    finding = ctx.brain.investigate(option, tools)
    finding = finding.model_copy(update={"permission_requests": tools.requests})
    return {"finding": finding.model_dump(mode="json")}


def conclude(s: Subagent, runtime: Runtime[RunContext]) -> dict[str, Any]:
    finding = Finding.model_validate(s.get("finding"))
    key = str(finding.option)
    runtime.context.journal.append(ev.FindingEvent(**finding.model_dump(mode="json")), actor=f"investigator#{key}")
    return {
        "findings": {key: finding.model_dump(mode="json")},
        "permission_requests": {key: finding.permission_requests},
    }


def subgraph() -> Any:
    g: StateGraph[Subagent, RunContext, Any, Any] = StateGraph(
        Subagent, context_schema=RunContext, output_schema=SubagentOutput
    )
    # A Send node's input is its own state type (Subagent); LangGraph's StateNode typing cannot say so.
    g.add_node("explore", explore)  # pyright: ignore[reportArgumentType]
    g.add_node("conclude", conclude)  # pyright: ignore[reportArgumentType]
    g.add_edge(START, "explore")
    g.add_edge("explore", "conclude")
    g.add_edge("conclude", END)
    return g.compile()


def pending_requests(state: State) -> list[tuple[str, str, str, int]]:
    """(host, command, class, option) a subagent asked to run and nobody has approved yet."""
    approved = set(state.get("approved", []))
    out = []
    for key, requests in sorted((state.get("permission_requests") or {}).items(), key=lambda kv: int(kv[0])):
        for r in requests:
            if r["command"] not in approved:
                out.append((r["host"], r["command"], "ask", int(key)))
    return out


def review(state: State, runtime: Runtime[RunContext]) -> Command[Literal["command_gate", "triage_gate"]]:
    if pending_requests(state):
        return Command(goto="command_gate", update={"command_scope": "investigate"})
    ctx = runtime.context
    plan = list(state.get("plan", []))
    chose = [g for g in state.get("gates", []) if g["kind"] == "plan" and g["decision"]["action"] == "select"]
    if chose or ctx.brain.name.startswith("rules"):
        # A person's "go with 3 first" outranks any model; the rule brain keeps the engineer's order.
        return Command(goto="triage_gate")
    findings = [Finding.model_validate(f) for f in state.get("findings", {}).values()]
    ranked = ctx.brain.plan(ctx.campaign, findings).order  # feasible options only
    order = [o for o in ranked if o in plan] + [o for o in plan if o not in ranked]
    if [o for o in order if o in ranked] == [o for o in plan if o in ranked]:
        return Command(goto="triage_gate")
    ctx.journal.append(ev.PlanRerankedEvent(brain=ctx.brain.name, before=plan, after=order))
    return Command(goto="triage_gate", update={"plan": order})
