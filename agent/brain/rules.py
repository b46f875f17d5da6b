"""RuleBrain: deterministic, offline reasoning from evidence alone.

It never looks at an option's name or id to decide anything: feasibility comes from probe results,
safety from stress outcomes, failed runs and a failure rate credibly above the baseline's, the gain
from the A/B statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.models import Assessment, Campaign, Finding, Option, Plan, Probe
from policies.decisions import parse_at_gate
from policies.gates import Decision, Gate
from tools.failures import FailureTest, Requests, compare
from tools.sweep import SweepSummary
from tools.transport import CommandResult

if TYPE_CHECKING:
    from agent.brain import GivenUp
    from agent.brain.toolbox import Toolbox


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def probe_failure(probe: Probe, result: CommandResult) -> str | None:
    """Why a probe's expectation failed, in words an engineer would write down (None when it held)."""
    expect = probe.expect
    if result.error is not None:
        return result.error
    if result.timed_out:
        return f"probe timed out after {probe.timeout:g}s"
    if expect.exit is not None and result.exit_code != expect.exit:
        said = _first_line(result.stderr_tail) or _first_line(result.stdout_tail)
        return f"exit {result.exit_code}" + (f": {said}" if said else "")
    if expect.stdout_contains is not None and expect.stdout_contains not in result.stdout_tail:
        return f"output lacks {expect.stdout_contains!r}"
    if expect.stdout_not_contains is not None and expect.stdout_not_contains in result.stdout_tail:
        return f"output contains {expect.stdout_not_contains!r}"
    return None


class RuleBrain:
    name = "rules/v1"

    def unavailable(self) -> GivenUp | None:
        return None  # no model to give up

    def use_model(self, why_not: str | None) -> None:
        return None

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan:
        # The engineer's numbering is the priority: expected gains are hypotheses, not evidence,
        # so the rule brain does not reorder on them; measured outcomes and people reorder later.
        infeasible = {f.option for f in findings if not f.feasible}
        order = [o.id for o in campaign.options if o.id not in infeasible]
        rationale = {
            o.id: (
                f"expected {o.expected_gain_pct:+g}% ({o.risk} risk)"
                if o.expected_gain_pct is not None
                else f"{o.risk} risk"
            )
            for o in campaign.options
        }
        return Plan(order=order, rationale=rationale)

    def investigate(self, option: Option, tools: Toolbox) -> Finding:
        blockers: list[str] = []
        hazards: list[str] = []
        hazard_probes: list[str] = []
        sources: list[str] = []
        for probe in option.probes:
            results = tools.run_probe(probe)
            if results is None:
                sources.append(f"probe {probe.name}: waiting for approval at a command gate")
                continue
            for result in results:
                sources.append(
                    f"{result.host}: {result.command} → exit {result.exit_code} [artifact {result.artifact}]"
                )
                failure = probe_failure(probe, result)
                if failure is None:
                    continue
                text = f"{probe.name}: {failure}" + (f" — {probe.message}" if probe.message else "")
                (blockers if probe.on_fail == "blocker" else hazards).append(text)
                if probe.on_fail == "hazard" and probe.name not in hazard_probes:
                    hazard_probes.append(probe.name)
        checked = sum(1 for _ in option.probes)
        confidence = 0.9 if blockers else (0.7 if checked else 0.4)
        return Finding(
            option=option.id,
            feasible=not blockers,
            blockers=blockers,
            hazards=hazards,
            hazard_probes=hazard_probes,
            confidence=confidence,
            sources=sources,
        )

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment:
        ab = evidence["ab"]
        stress = evidence.get("stress", [])
        finding = evidence.get("finding") or {}
        wedges = sum(1 for s in stress if s["outcome"] == "wedge")
        # A server gone at the deadline is a crash; one still progressing too slowly did not finish either.
        errors = sum(1 for s in stress if s["outcome"] in ("crash", "degraded", "leak", "dead", "saturated"))
        failed = int(evidence.get("failed_candidate_runs", 0))
        failed_a, runs_a = int(evidence.get("failed_baseline_runs", 0)), int(evidence.get("baseline_runs", 0))
        hazards = list(finding.get("hazards", []))
        unchecked = list(finding.get("unchecked", []))
        reasons: list[str] = []
        measurement_broken = bool(ab.get("measurement_broken")) or (runs_a > 0 and failed_a * 2 >= runs_a)
        if measurement_broken:
            # The baseline fails as often as the candidate: the benchmark is broken, which says
            # nothing about the option. Not "unsafe"; a person has to look.
            reasons.append(
                f"the benchmark also failed on the baseline ({failed_a} of {runs_a} runs): "
                "a measurement problem, not evidence about the option"
            )
            failed = 0
        reasons.extend(stress_reasons(stress))
        reasons.extend(s["evidence"] for s in stress if s["evidence"].startswith("not judged"))
        machine = [f"{s['scenario']}: {s['machine']}" for s in stress if s.get("machine")]
        reasons.extend(machine)
        if failed:
            # A run with no readable result (exit status, deadline, unreadable output, most requests failed).
            reasons.append(f"{failed} candidate benchmark run(s) failed or were unreadable")
        requests = request_failures(ab)
        # Failed requests count against the option only when its arm fails credibly more often than the baseline
        # arm beside it; a flake or two is shown with its error text and decides nothing.
        more_failures = requests is not None and requests.higher and not measurement_broken
        if requests is not None and (requests.option.failed or requests.baseline.failed):
            reasons.append(requests.describe())
        if stalls := ab.get("candidate_stalls"):
            counted = ", ".join(f"{n} {kind.upper()}" for kind, n in stalls.items())
            reasons.append(f"benchmark runs of the option killed at their deadline: {counted}")
        reproduced = hazard_reproductions(option, finding, stress)
        if wedges or errors or failed or more_failures or hazards:
            verdict = "unsafe"
        elif measurement_broken:
            verdict = "unknown"
        elif unchecked:
            verdict = "unknown"
            reasons.append("the investigation could not check everything it wanted to (declined commands)")
        elif not stress:
            verdict = "unknown"
            reasons.append("no stress tests configured")
        elif machine:
            # Both arms slower after the stress than during the A/B: a neighbour, or damage a revert does not undo.
            # Not the option's degradation (its arm kept its ground beside the baseline's), and no acquittal either.
            verdict = "unknown"
        else:
            verdict = "safe"
        if reproduced:
            reasons.extend(f"hazard reproduced by its own stress scenario: {r}" for r in reproduced)
        elif hazards:
            # The investigation showed the hazard exists (a failed hazard probe, a cited finding). No stress test
            # can reproduce a power loss or a one-in-a-million race, so not seeing it is no acquittal; and only a
            # scenario declared to exercise it (the probe's reproduced_by) can reproduce it: an unrelated wedge
            # or a failed request is evidence of its own, named above.
            reasons.append(
                "structural hazard, not reproduced by stress: the investigation confirmed it exists"
                + _unreproduced(option, finding)
            )
        reasons.extend(f"hazard: {h}" for h in hazards)
        reasons.extend(f"not checked: {u}" for u in unchecked)
        ab_verdict = ab["verdict"]
        if ab.get("sweep"):
            sweep = SweepSummary.model_validate(ab["sweep"])
            reasons.append(f"sweep: {sweep.describe()}")
            reasons.extend(sweep.reasons)
        reasons.append(ab_summary(ab))  # last: "kept by …" quotes it
        confidence = 0.9 if ab_verdict in ("improved", "regressed", "no_effect") else 0.5
        if verdict == "unknown":
            confidence -= 0.2
        risk = "high" if verdict == "unsafe" else ("medium" if unchecked or verdict == "unknown" else "low")
        if verdict == "unsafe" or ab_verdict in ("regressed", "no_effect"):
            recommendation = "skip"
        elif verdict == "safe" and ab_verdict == "improved":
            recommendation = "keep"
        else:
            recommendation = "ask"
        ci = [ab["ci_low"], ab["ci_high"]] if ab.get("ci_low") is not None else None
        return Assessment(
            option=option.id,
            verdict=verdict,
            ab_verdict=ab_verdict,
            gain_pct=ab.get("effect_pct"),
            ci=ci,
            pairs=ab["pairs"],
            wedges=wedges,
            stress_errors=errors,
            failed_requests=failed,
            hazards=hazards,
            hazard_reproduced=bool(reproduced),
            measurement_broken=measurement_broken,
            request_failures=requests,
            confidence=round(confidence, 2),
            risk=risk,
            recommendation=recommendation,
            reasons=reasons,
        )

    def interpret(self, text: str, gate: Gate) -> Decision:
        return parse_at_gate(text, gate)


# What a stress run that exercises a hazard shows when the hazard happened (a post-stress slowdown,
# `degraded`, is not a stress scenario's outcome and never reproduces anything).
HAZARD_OUTCOMES = ("wedge", "dead", "saturated", "crash", "leak")


def request_failures(ab: dict[str, Any]) -> FailureTest | None:
    """The option's failed requests against the baseline arm's (None when the tool counted none)."""
    arms = ab.get("requests") or {}
    if "A" not in arms or "B" not in arms:
        return None
    return compare(Requests.model_validate(arms["B"]), Requests.model_validate(arms["A"]))


def hazard_reproductions(option: Option, finding: dict[str, Any], stress: list[dict[str, Any]]) -> list[str]:
    """Each confirmed hazard probe whose own stress scenarios (`reproduced_by`) went bad, as
    "<probe> — stress <scenario>: WEDGE in 1 of 3 runs". Nothing else reproduces a hazard."""
    failed = set(finding.get("hazard_probes") or [])
    out: list[str] = []
    for probe in option.probes:
        if probe.name not in failed or not probe.reproduced_by:
            continue
        for scenario in dict.fromkeys(probe.reproduced_by):
            # A scenario the command policy refused never ran ("not run: …"): it reproduced nothing.
            runs = [s for s in stress if s["scenario"] == scenario and not s["evidence"].startswith("not run:")]
            for outcome in HAZARD_OUTCOMES:
                if bad := [s for s in runs if s["outcome"] == outcome]:
                    out.append(f"{probe.name} — stress {scenario}: {outcome.upper()} in {len(bad)} of {len(runs)} runs")
    return out


def _unreproduced(option: Option, finding: dict[str, Any]) -> str:
    failed = set(finding.get("hazard_probes") or [])
    declared = [n for p in option.probes if p.name in failed for n in p.reproduced_by]
    if declared:
        return f" (its stress scenario {', '.join(dict.fromkeys(declared))} showed no bad outcome)"
    return " (no stress scenario is declared to reproduce it: the probe's `reproduced_by`)"


def stress_reasons(stress: list[dict[str, Any]]) -> list[str]:
    """One line per scenario and bad outcome: "abort-cascade: WEDGE in 2 of 3 runs — <first evidence>"."""
    lines = []
    for scenario in dict.fromkeys(s["scenario"] for s in stress):
        runs = [s for s in stress if s["scenario"] == scenario]
        for outcome in ("wedge", "dead", "saturated", "crash", "degraded", "leak"):
            bad = [s for s in runs if s["outcome"] == outcome]
            if bad:
                lines.append(
                    f"stress {scenario}: {outcome.upper()} in {len(bad)} of {len(runs)} runs — {bad[0]['evidence']}"
                )
    return lines


def ab_summary(ab: dict[str, Any]) -> str:
    if ab.get("effect_pct") is None:
        return f"{ab['metric']}: no estimate ({'; '.join(ab.get('reasons', []))})"
    wilcoxon = f"; Wilcoxon p={ab['wilcoxon_p']:.3f}" if ab.get("wilcoxon_p") is not None else ""
    # What the A/B could have seen (older sessions' results have no such field, and say nothing).
    seen = f"; it could have seen ±{ab['detectable_pct']:.1f}% or more" if ab.get("detectable_pct") else ""
    if ab["verdict"] in ("inconclusive", "no_effect") and ab.get("expected_pct"):
        needed = ab.get("pairs_for_expected")
        seen += (
            f"; the expected {ab['expected_pct']:+g}% would need about {needed} pairs"
            if needed
            else f"; the expected {ab['expected_pct']:+g}% is within the noise: no number of pairs here calls it"
        )
    if ab.get("spread_changed"):
        seen += f"; the option changes the run-to-run spread ×{ab['spread_ratio']:.2f} (p={ab['spread_p']:.3f})"
    sweep = ab.get("sweep")
    at = f" at {sweep['var']}={ab['level']:g}" if isinstance(sweep, dict) and ab.get("level") is not None else ""
    return (
        f"{ab['metric']}{at} {ab['effect_pct']:+.1f}% (95% CI {ab['ci_low']:+.1f}%…{ab['ci_high']:+.1f}%, "
        f"paired t, {ab['pairs']} interleaved pairs{wilcoxon}) → {ab['verdict']}{seen}"
    )
