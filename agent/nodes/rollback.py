"""Keep an option (it joins the baseline), or roll it back and verify the rollback over the transport:
health checks pass and the baseline metric is back within tolerance of this option's A arm.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.effects import MutationInDoubt
from agent.execute import CommandRefused, run_spec
from agent.nodes.benchmark import bench_once
from agent.state import State
from tools.abstats import within_band


def keep(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    key = str(state["current"])
    a = state["assessments"][key]
    decided = state["gates"][-1]["decision"]
    ctx.journal.append("kept", option=state["current"], gain_pct=a["gain_pct"], ci=a["ci"], by=decided.get("by"))
    reason = f"kept by {decided.get('by')}: {a['reasons'][-1]}"
    # The kept option is the new known-good baseline; its candidate-arm runs measured exactly that.
    new_reference = state.get("ab", {}).get(key, {}).get("b_values") or state.get("reference", [])
    return {"options": {key: {"outcome": "kept", "reasons": [reason]}}, "reference": new_reference}


def rollback(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    option = ctx.campaign.option(state["current"])
    approved = state.get("approved", [])
    ctx.journal.append("phase", phase="rollback", option=option.id)
    try:
        results = [
            r
            for i, s in enumerate(option.revert, 1)
            for r in run_spec(
                ctx,
                s,
                purpose="revert",
                option=option.id,
                approved=approved,
                effect="revert",
                last=i == len(option.revert),
            )
        ]
        health = [
            r
            for s in ctx.campaign.baseline.health
            for r in run_spec(ctx, s, purpose="health", option=option.id, approved=approved)
        ]
    except (CommandRefused, MutationInDoubt) as exc:
        v = {"verified": False, "health_ok": False, "delta_pct": None, "detail": str(exc)}
        if isinstance(exc, MutationInDoubt):
            v["in_doubt"] = True
        ctx.journal.append("rollback", option=option.id, **v)
        return {"verification": v}
    revert_ok = all(r.ok for r in results)
    health_ok = revert_ok and all(r.ok for r in health)
    # The known-good baseline (setup, or the last kept option) — never the A arm, which a broken revert
    # corrupts exactly as it corrupts the state being verified.
    reference = state.get("reference") or []
    check: list[float] = []
    if health_ok and reference:
        for i in range(ctx.campaign.rollback.verify_runs):
            run = bench_once(ctx, pair=i, arm="A", option=option.id, approved=approved, purpose="verify")
            if run.valid and run.value is not None:
                check.append(run.value)
    tolerance = ctx.campaign.rollback.tolerance_pct
    cal = state.get("calibration") or {}
    if cal.get("sd_pct") and reference and check:
        # With a measured noise level, "back to baseline" means inside the A/A noise band of the
        # difference of two means (3 SDs: a false alarm pauses the run, so keep them rare).
        cv = cal["sd_pct"] / math.sqrt(2)
        tolerance = round(max(0.5, 3 * cv * math.sqrt(1 / len(check) + 1 / len(reference))), 3)
    if not health_ok:
        v = {
            "verified": False,
            "health_ok": False,
            "delta_pct": None,
            "detail": "revert or health check failed" if revert_ok else "revert command failed",
        }
    elif not reference:
        # Never benchmarked (apply failed first): the health checks are all there is to verify.
        v = {
            "verified": True,
            "health_ok": True,
            "delta_pct": None,
            "detail": "health checks pass; there is no valid baseline measurement to compare the metric with",
        }
    elif not check:
        v = {
            "verified": False,
            "health_ok": True,
            "delta_pct": None,
            "detail": "no valid baseline measurement after the revert",
        }
    else:
        ok, delta = within_band(reference, check, tolerance)
        v = {
            "verified": ok,
            "health_ok": True,
            "delta_pct": delta,
            "detail": f"baseline {statistics.fmean(check):.1f} vs {statistics.fmean(reference):.1f} before "
            f"({delta:+.1f}%, tolerance ±{tolerance:g}%) over {len(check)} run(s)",
        }
    ctx.journal.append("rollback", option=option.id, **v)
    key = str(option.id)
    note = f"rollback {'verified' if v['verified'] else 'NOT verified'}: {v['detail']}"
    return {
        "verification": v,
        "options": {key: {"reasons": [*state["options"][key].get("reasons", []), note], "rollback": v}},
    }
