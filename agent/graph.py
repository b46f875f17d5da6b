"""The LangGraph StateGraph: nodes and edges, nothing else (DESIGN §4).

preflight → [command gate] → setup → plan → plan gate → investigate × N (Send, a subgraph each)
  → review → [command gate for what a subagent asked to run → investigate again] → triage gate
  → pick next → [budget gate | brain gate] → [command gate] → apply → benchmark → stress → assess → safety gate
  → keep | rollback → [rollback gate] → continue-or-ask gate → pick next … → confirm → [goal gate] → report
(an apply or revert a crash left in doubt → rollback gate)
`signoff abandon`, from any step: abandon → rollback → [rollback gate] → abandon … → confirm (skipped) → report
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from agent.context import RunContext
from agent.nodes import (
    abandon,
    apply,
    assess,
    benchmark,
    confirm,
    gates,
    investigate,
    pick,
    report,
    rollback,
    setup,
    stress,
)
from agent.state import State


def _unrouted(node: str, route: object) -> RuntimeError:
    """A route no edge of `node` takes: a bug, said at once (a table edge raises too), never a silent default
    (tests/unit/test_routes.py fails on it first)."""
    return RuntimeError(f"{node}: no edge for route {route!r} (agent/graph.py)")


def _route(state: State) -> str:
    return state.get("route") or "report"


def _after_rollback(state: State) -> str:
    v = state.get("verification") or {}
    if not v.get("verified"):
        return "rollback" if state.get("revert_again") else "rollback_gate"
    if abandon.abandoning(state):
        return "abandon"
    return "confirm" if state.get("stopping") else "continue_gate"


def _after_rollback_gate(state: State) -> str:
    route = state.get("route") or "report"
    if route in ("continue", "report") and state.get("abandon"):
        # The person took the rollback as it is, or said stop: the abandon goes on to its next rollback, or ends.
        return "abandon"
    return {"rollback": "rollback", "continue": "continue_gate", "reask": "rollback_gate"}.get(route, "confirm")


def _after_keep(state: State) -> str:
    route = state.get("route")
    if route == "unverified":  # a keep with exceptions whose rollback there did not verify
        return "rollback_gate"
    if route == "next":
        return "confirm" if state.get("stopping") else "continue_gate"
    raise _unrouted("keep", route)


def build() -> StateGraph[State, RunContext, Any, Any]:
    g: StateGraph[State, RunContext, Any, Any] = StateGraph(State, context_schema=RunContext)
    g.add_node("preflight", pick.preflight)
    g.add_node("setup", setup.setup)
    g.add_node("plan", setup.plan)
    g.add_node("investigate", investigate.subgraph())
    g.add_node("review", investigate.review)
    g.add_node("plan_gate", gates.plan_gate)
    g.add_node("budget_gate", gates.budget_gate)
    g.add_node("brain_gate", gates.brain_gate)
    g.add_node("triage_gate", gates.triage_gate)
    g.add_node("pick_next", pick.pick_next)
    g.add_node("command_gate", gates.command_gate)
    g.add_node("apply", apply.apply)
    g.add_node("benchmark", benchmark.benchmark)
    g.add_node("stress", stress.stress)
    g.add_node("assess", assess.assess)
    g.add_node("safety_gate", gates.safety_gate)
    g.add_node("keep", rollback.keep)
    g.add_node("rollback", rollback.rollback)
    g.add_node("rollback_gate", gates.rollback_gate)
    g.add_node("continue_gate", gates.continue_gate)
    g.add_node("confirm", confirm.confirm)
    g.add_node("goal_gate", gates.goal_gate)
    g.add_node("report", report.report)
    g.add_node("abandon", abandon.abandon)  # entered only by `signoff abandon` (Runner.abandon), from any step

    g.add_edge(START, "preflight")
    g.add_conditional_edges("preflight", _route, {"command": "command_gate", "approved": "setup", "report": "confirm"})
    g.add_conditional_edges("setup", _route, {"plan": "plan", "report": "confirm"})
    g.add_edge("plan", "plan_gate")
    g.add_conditional_edges("plan_gate", _after_plan_gate, ["investigate", "plan_gate", "confirm"])
    g.add_edge("investigate", "review")
    g.add_conditional_edges("review", _route, {"permission": "command_gate", "triage": "triage_gate"})
    g.add_conditional_edges("triage_gate", _route, {"next": "pick_next", "report": "confirm", "reask": "triage_gate"})
    g.add_conditional_edges(
        "pick_next",
        _route,
        {
            "apply": "apply",
            "command": "command_gate",
            "skip": "continue_gate",
            "report": "confirm",
            "budget": "budget_gate",
            "brain": "brain_gate",
        },
    )
    g.add_conditional_edges("budget_gate", _route, {"next": "pick_next", "report": "confirm", "reask": "budget_gate"})
    g.add_conditional_edges("brain_gate", _route, {"next": "pick_next", "report": "confirm", "reask": "brain_gate"})
    g.add_conditional_edges(
        "command_gate",
        _command_route,
        ["setup", "apply", "pick_next", "confirm", "command_gate", "investigate", "review"],
    )
    # "doubt": a crash cut an apply or revert short and nothing can tell whether it took effect.
    g.add_conditional_edges("apply", _route, {"benchmark": "benchmark", "failed": "rollback", "doubt": "rollback_gate"})
    g.add_conditional_edges(
        "benchmark",
        _route,
        {"stress": "stress", "assess": "assess", "failed": "rollback", "doubt": "rollback_gate"},
    )
    g.add_edge("stress", "assess")
    g.add_edge("assess", "safety_gate")
    g.add_conditional_edges(
        "safety_gate",
        _route,
        {"keep": "keep", "rollback": "rollback", "retry": "benchmark", "reask": "safety_gate"},
    )
    g.add_conditional_edges("keep", _after_keep, ["continue_gate", "confirm", "rollback_gate"])
    g.add_conditional_edges(
        "rollback", _after_rollback, ["rollback", "rollback_gate", "continue_gate", "confirm", "abandon"]
    )
    g.add_conditional_edges(
        "rollback_gate", _after_rollback_gate, ["rollback", "continue_gate", "confirm", "rollback_gate", "abandon"]
    )
    g.add_conditional_edges("abandon", _route, {"rollback": "rollback", "report": "confirm"})
    g.add_conditional_edges(
        "continue_gate", _route, {"next": "pick_next", "report": "confirm", "reask": "continue_gate"}
    )
    g.add_conditional_edges("confirm", _route, {"gate": "goal_gate", "report": "report"})
    g.add_conditional_edges("goal_gate", _route, {"confirm": "confirm", "report": "report", "reask": "goal_gate"})
    g.add_edge("report", END)
    return g


def _after_plan_gate(state: State) -> Any:
    route = state.get("route")
    if route == "reask":
        return "plan_gate"
    if route == "report" or not state.get("plan"):
        return "confirm"
    if route == "next":
        return investigate.fan_out(state)
    raise _unrouted("plan_gate", route)


def _command_route(state: State) -> Any:
    route = state.get("route")
    if route == "reask":
        return "command_gate"
    if route == "reinvestigate":
        asked = [int(k) for k, reqs in (state.get("permission_requests") or {}).items() if reqs]
        return investigate.fan_out(state, only=sorted(asked))
    if route == "declined":
        return "review"
    if route == "approved":
        return "setup" if not state.get("plan") else "apply"
    if route == "next":
        return "pick_next"
    if route == "report":
        return "confirm"
    raise _unrouted("command_gate", route)
