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
from agent.nodes.gates import option_hosts
from agent.state import State
from tools.abstats import within_band


def keep(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    key = str(state["current"])
    a = state["assessments"][key]
    decided = state["gates"][-1]["decision"]
    excepted = decided.get("except_hosts") or []
    if excepted:
        return _keep_except(state, runtime, excepted)
    ctx.journal.append("kept", option=state["current"], gain_pct=a["gain_pct"], ci=a["ci"], by=decided.get("by"))
    reason = f"kept by {decided.get('by')}: {a['reasons'][-1]}"
    # The kept option is the new known-good baseline; its candidate-arm runs measured exactly that.
    new_reference = state.get("ab", {}).get(key, {}).get("b_values") or state.get("reference", [])
    return {"options": {key: {"outcome": "kept", "reasons": [reason]}}, "reference": new_reference, "route": "next"}


def _keep_except(state: State, runtime: Runtime[RunContext], excepted: list[str]) -> dict[str, Any]:
    """ "Approve on all except gpu-7": the option stays on the other hosts and is rolled back on the
    named ones — reverted, health-checked and re-measured there against their own A-arm readings — and
    the fleet's new known-good baseline is measured afresh (it is neither arm of the A/B)."""
    ctx = runtime.context
    key = str(state["current"])
    a = state["assessments"][key]
    decided = state["gates"][-1]["decision"]
    kept_on = [h for h in option_hosts(ctx, state["current"]) if h not in excepted]
    ctx.journal.append(
        "kept",
        option=state["current"],
        gain_pct=a["gain_pct"],
        ci=a["ci"],
        by=decided.get("by"),
        hosts=kept_on,
        except_hosts=excepted,
    )
    v = _revert_on(state, runtime, excepted)
    reason = f"kept by {decided.get('by')} on {len(kept_on)} host(s), rolled back on {', '.join(excepted)}"
    verdict = "verified" if v["verified"] else "NOT verified"
    update: dict[str, Any] = {
        "verification": v,
        "options": {
            key: {
                "outcome": "kept",
                "reasons": [
                    reason,
                    f"rollback on {', '.join(excepted)} {verdict}: {v['detail']}",
                ],
                "hosts": kept_on,
                "except_hosts": excepted,
                "rollback": v,
            }
        },
        "route": "next" if v["verified"] else "unverified",
    }
    if v["verified"]:
        fresh = [
            run.value
            for i in range(ctx.campaign.rollback.verify_runs)
            if (
                run := bench_once(
                    ctx,
                    pair=i,
                    arm="A",
                    option=state["current"],
                    approved=state.get("approved", []),
                    purpose="baseline",
                )
            ).valid
            and run.value is not None
        ]
        update["reference"] = fresh or state.get("reference", [])
    return update


def _revert_on(state: State, runtime: Runtime[RunContext], hosts: list[str]) -> dict[str, Any]:
    """Revert the current option on `hosts` only, health-check them, and compare each one's metric
    with its own baseline readings from the A/B (the fleet's mean would hide one host)."""
    ctx = runtime.context
    option = ctx.campaign.option(state["current"])
    approved = state.get("approved", [])
    ctx.journal.append("phase", phase="rollback", option=option.id, hosts=hosts)
    try:
        reverted = [
            r
            for i, s in enumerate(option.revert, 1)
            for r in run_spec(
                ctx, s, purpose="revert", option=option.id, approved=approved, effect="revert",
                last=i == len(option.revert), only=hosts,
            )
        ]  # fmt: skip
        health = [
            r
            for s in ctx.campaign.baseline.health
            for r in run_spec(ctx, s, purpose="health", option=option.id, approved=approved, only=hosts)
        ]
    except (CommandRefused, MutationInDoubt) as exc:
        v = {"verified": False, "health_ok": False, "delta_pct": None, "detail": str(exc), "hosts": hosts}
        if isinstance(exc, MutationInDoubt):
            v["in_doubt"] = True
        ctx.journal.append("rollback", option=option.id, **v)
        return v
    health_ok = all(r.ok for r in reverted) and all(r.ok for r in health)
    own = state.get("ab", {}).get(str(option.id), {}).get("hosts") or {}
    tolerance = ctx.campaign.rollback.tolerance_pct
    deltas: dict[str, float] = {}
    problems: list[str] = []
    if health_ok:
        checks: dict[str, list[float]] = {h: [] for h in hosts}
        for i in range(ctx.campaign.rollback.verify_runs):
            run = bench_once(ctx, pair=i, arm="A", option=option.id, approved=approved, purpose="verify", only=hosts)
            for h in hosts:
                value = run.hosts.get(h) if run.hosts else (run.value if run.valid else None)
                if value is not None:
                    checks[h].append(value)
        for h in hosts:
            reference = (own.get(h) or {}).get("a_values") or []
            if not reference or not checks[h]:
                problems.append(f"{h}: no {'baseline readings' if not reference else 'valid run'} to compare")
                continue
            ok, deltas[h] = within_band(reference, checks[h], tolerance)
            if not ok:
                problems.append(f"{h}: {deltas[h]:+.1f}% off its baseline (tolerance ±{tolerance:g}%)")
    worst = max(deltas.values(), key=abs) if deltas else None
    v = {
        "verified": health_ok and not problems,
        "health_ok": health_ok,
        "delta_pct": worst,
        "hosts": hosts,
        "host_deltas_pct": deltas,
        "detail": ("revert or health check failed on " + ", ".join(hosts))
        if not health_ok
        else ("; ".join(problems) if problems else ", ".join(f"{h} {d:+.1f}%" for h, d in deltas.items())
              + f" vs its own baseline (tolerance ±{tolerance:g}%)"),
    }  # fmt: skip
    ctx.journal.append("rollback", option=option.id, **v)
    return v


def rollback(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    key = str(state["current"])
    mine = state.get("options", {}).get(key, {})
    if mine.get("outcome") == "kept" and mine.get("except_hosts"):
        # Asked again (the rollback gate's retry) after a keep with exceptions: those hosts only.
        v = _revert_on(state, runtime, mine["except_hosts"])
        return {"verification": v, "options": {key: {"rollback": v}}}
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
