"""The LangGraph StateGraph: its nodes and the edges of those that always go on to the same one, nothing else
(DESIGN §4). Where any other node goes is its return type, `Command[Literal[...]]`, decided in the node.

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

    # Where each node sends the run is in its return type (`Command[Literal[...]]`) and decided in the node; the
    # edges below are those of the nodes that always go on to the same one.
    g.add_edge(START, "preflight")
    g.add_edge("plan", "plan_gate")
    g.add_edge("investigate", "review")
    g.add_edge("stress", "assess")
    g.add_edge("assess", "safety_gate")
    g.add_edge("report", END)
    return g
