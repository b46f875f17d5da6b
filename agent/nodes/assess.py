"""Turn the evidence for the current option into an assessment (the brain's call)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.journal import events as ev
from agent.state import State, current


def assess(state: State, runtime: Runtime[RunContext]) -> State:
    ctx = runtime.context
    key = str(current(state))
    option = ctx.campaign.option(current(state))
    ab = state.get("ab", {})[key]
    evidence = {
        "ab": ab,
        "stress": state.get("stress", {}).get(key, []),
        "finding": state.get("findings", {}).get(key),
        "failed_candidate_runs": ab.get("failed_candidate_runs", 0),
        "failed_baseline_runs": ab.get("failed_baseline_runs", 0),
        "baseline_runs": ab.get("baseline_runs", 0),
    }
    assessment = ctx.brain.assess(option, evidence)
    data = assessment.model_dump(mode="json")
    ctx.journal.append(ev.AssessmentEvent(brain=ctx.brain.name, **data))
    return {
        "assessments": {key: data},
        "options": {
            key: {
                "verdict": assessment.verdict,
                "ab_verdict": assessment.ab_verdict,
                "gain_pct": assessment.gain_pct,
                "ci": assessment.ci,
            }
        },
    }
