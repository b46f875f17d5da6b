"""The end of a run: what was kept, skipped, deferred, with the evidence and who decided."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.journal import events as ev
from agent.report.figures import effect_of, noise_figure
from agent.state import State, assessed
from tools.failures import FAILED_REQUESTS


def _evidence(state: State, key: str) -> dict[str, Any] | None:
    """The measurements behind a verdict, with artifact references for the raw output."""
    ab = state.get("ab", {}).get(key)
    stress = state.get("stress", {}).get(key)
    if ab is None and stress is None:
        return None
    out: dict[str, Any] = {}
    if ab is not None:
        out["ab"] = {
            k: ab.get(k)
            for k in (
                "metric",
                "pairs",
                "ratios",
                "effect_pct",
                "ci_low",
                "ci_high",
                "wilcoxon_p",
                "verdict",
                "a_mean",
                "b_mean",
                "guardrails",
                "invalid",
                "requests",  # each arm's requests attempted and failed, with error texts
                "higher_is_better",
                # how the A/B stopped (tools/sequential.py) and the pairs it flagged but kept
                "stopped_by",
                "stop_reason",
                "pairs_run",
                "bench_runs",
                "cs_low",
                "cs_high",
                "flagged_pairs",
                "without_flagged",
            )
        }
        if ab.get("hosts"):  # a benchmark over several hosts: each host's own A/B beside the aggregate
            out["ab"]["hosts"] = {
                name: {k: h.get(k) for k in ("gain_pct", "ci", "verdict", "pairs")} for name, h in ab["hosts"].items()
            }
    if stress is not None:
        out["stress"] = [
            {k: s.get(k) for k in ("scenario", "run", "host", "outcome", "evidence", "artifact", "diagnosis")}
            for s in stress
        ]
    return out


def build_report(state: State, campaign_name: str) -> dict[str, Any]:
    options = []
    for key, o in sorted(state.get("options", {}).items(), key=lambda kv: int(kv[0])):
        finding = state.get("findings", {}).get(key, {})
        reasons = list(o.get("reasons", []))
        if o.get("outcome") == "no-go":
            reasons = [f"blocker: {b}" for b in finding.get("blockers", [])] + reasons
        assessment = assessed(state, key)
        ab = state.get("ab", {}).get(key)
        sweep = (ab or {}).get("sweep")
        effect = effect_of(ab, var=sweep.get("var") if isinstance(sweep, dict) else None)
        noise = noise_figure(ab, state.get("calibration"))
        if assessment and o.get("outcome") != "kept":
            reasons += [r for r in assessment.reasons if r not in reasons]
        elif assessment:
            # A kept option's failed requests are a fact to show even when they decided nothing.
            reasons += [r for r in assessment.reasons if r.startswith(FAILED_REQUESTS) and r not in reasons]
        options.append(
            {
                "id": int(key),
                "title": o.get("title", ""),
                "outcome": o.get("outcome", "untested"),
                "gain_pct": o.get("gain_pct"),
                "ci": o.get("ci"),
                "verdict": o.get("verdict"),
                "ab_verdict": o.get("ab_verdict"),
                "reasons": reasons,
                "rollback": o.get("rollback"),
                "evidence": _evidence(state, key),
                # The one effect size and the one noise figure the reports show, each with what it is.
                "effect": effect.model_dump(mode="json") if effect else None,
                "noise": noise.model_dump(mode="json") if noise else None,
                # A keep with exceptions: the hosts it stays on, and those it was rolled back on.
                **({"hosts": hosts} if (hosts := o.get("hosts")) else {}),
                **({"except_hosts": excepted} if (excepted := o.get("except_hosts")) else {}),
                "decided_by": [
                    g["decision"].get("by")
                    for g in state.get("gates", [])
                    if g.get("option") == int(key) and g["kind"] == "safety"
                ],
            }
        )
    gates = [
        {
            "id": g["id"],
            "kind": g["kind"],
            "option": g.get("option"),
            "action": g["decision"]["action"],
            "by": g["decision"].get("by"),
            "rule": g["decision"].get("rule"),
            "raw": g["decision"].get("raw"),
        }
        for g in state.get("gates", [])
    ]
    report = state.get("report") or {}
    kept_gains = [o["gain_pct"] for o in options if o["outcome"] == "kept" and o["gain_pct"] is not None]
    total = 1.0
    for gain in kept_gains:
        total *= 1 + gain / 100  # each kept option was measured against a baseline holding the earlier ones
    return {
        "campaign": campaign_name,
        "estimated_gain_pct": round((total - 1) * 100, 3) if kept_gains else None,
        "options": options,
        "gates": gates,
        "kept": [o["id"] for o in options if o["outcome"] == "kept"],
        "deferred": [o["id"] for o in options if o["outcome"] == "deferred"],
        "error": report.get("error"),
        "calibration": state.get("calibration"),
        **({"confirmation": confirmation} if (confirmation := state.get("confirmation")) else {}),
    }


def report(state: State, runtime: Runtime[RunContext]) -> State:
    ctx = runtime.context
    summary = build_report(state, ctx.campaign.name)
    ctx.journal.append(ev.ReportEvent(**summary))
    return {"report": summary}
