"""Keep an option (it joins the baseline), or roll it back and verify the rollback over the transport:
health checks pass, the option's `check` says it is off, and the metric is back (agent/exec/verification.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import RunContext
from agent.errors import CommandRefused, MutationInDoubt
from agent.exec.execute import run_effect, run_spec
from agent.exec.verification import judge, judge_paired, recent, settled, slower, state_check
from agent.journal import events as ev
from agent.journal.events.option import rollback_verdict
from agent.models import Assessment, Option, Verification
from agent.nodes.abandon import abandoning
from agent.nodes.benchmark import Arms, bench_once
from agent.nodes.gating import option_hosts
from agent.nodes.stress import ab_ratios
from agent.state import State, assessed, current
from tools.noise import noise_of
from tools.paired import pair_noise, rollback_pairs


def keep(state: State, runtime: Runtime[RunContext]) -> Command[Literal["continue_gate", "confirm", "rollback_gate"]]:
    ctx = runtime.context
    key = str(current(state))
    a = Assessment.model_validate(state.get("assessments", {})[key])
    decided = state.get("gates", [])[-1]["decision"]
    excepted = decided.get("except_hosts") or []
    onward = "confirm" if state.get("stopping") else "continue_gate"
    if excepted:
        update = _keep_except(state, runtime, excepted)
        # A keep with exceptions whose rollback there did not verify goes to the rollback gate.
        return Command(
            goto=onward if (update.get("verification") or {}).get("verified") else "rollback_gate", update=update
        )
    ctx.journal.append(ev.KeptEvent(option=current(state), gain_pct=a.gain_pct, ci=a.ci, by=decided.get("by")))
    reason = f"kept by {decided.get('by')}: {a.reasons[-1]}"
    # The kept option is the new known-good baseline; its candidate-arm runs measured exactly that.
    new_reference = state.get("ab", {}).get(key, {}).get("b_values") or state.get("reference", [])
    return Command(
        goto=onward,
        update={
            "options": {key: {"outcome": "kept", "reasons": [reason]}},
            "reference": new_reference,
            "baseline_now": new_reference,
        },
    )


def _keep_except(state: State, runtime: Runtime[RunContext], excepted: list[str]) -> State:
    """ "Approve on all except gpu-7": the option stays on the other hosts and is rolled back on the
    named ones — reverted, health-checked and re-measured there against their own A-arm readings — and
    the fleet's new known-good baseline is measured afresh (it is neither arm of the A/B)."""
    ctx = runtime.context
    key = str(current(state))
    a = Assessment.model_validate(state.get("assessments", {})[key])
    decided = state.get("gates", [])[-1]["decision"]
    kept_on = [h for h in option_hosts(ctx, current(state)) if h not in excepted]
    ctx.journal.append(
        ev.KeptEvent(
            option=current(state),
            gain_pct=a.gain_pct,
            ci=a.ci,
            by=decided.get("by"),
            hosts=kept_on,
            except_hosts=excepted,
        )
    )
    v = _revert_on(state, runtime, excepted)
    reason = f"kept by {decided.get('by')} on {len(kept_on)} host(s), rolled back on {', '.join(excepted)}"
    verdict = rollback_verdict(bool(v["verified"]), v.get("verified_by"))
    update: State = {
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
                    option=current(state),
                    approved=state.get("approved", []),
                    purpose="baseline",
                )
            ).valid
            and run.value is not None
        ]
        update["reference"] = update["baseline_now"] = fresh or state.get("reference", [])
    return update


def _revert_on(state: State, runtime: Runtime[RunContext], hosts: list[str]) -> Verification:
    """Revert the current option on `hosts` only, health-check them, and verify each one against its own
    readings from the A/B (the fleet's mean would hide one host)."""
    ctx = runtime.context
    option = ctx.campaign.option(current(state))
    approved = state.get("approved", [])
    ctx.journal.append(ev.PhaseEvent(phase="rollback", option=option.id, hosts=hosts))
    try:
        reverted = [
            r for rs in run_effect(ctx, option, "revert", purpose="revert", approved=approved, only=hosts) for r in rs
        ]
        health = [
            r
            for s in ctx.campaign.baseline.health
            for r in run_spec(
                ctx, s, purpose="health", option=option.id, approved=approved, only=hosts, reads_only=True
            )
        ]
    except (CommandRefused, MutationInDoubt) as exc:
        v: Verification = {"verified": False, "health_ok": False, "delta_pct": None, "detail": str(exc), "hosts": hosts}
        if isinstance(exc, MutationInDoubt):
            v["in_doubt"] = True
        _journaled(ctx, option.id, v)
        return v
    health_ok = all(r.ok for r in reverted) and all(r.ok for r in health)
    state_ok, state_detail, said = state_check(ctx, option.id, hosts, approved) if health_ok else (None, "", {})
    own = state.get("ab", {}).get(str(option.id), {}).get("hosts") or {}
    deltas: dict[str, float] = {}
    problems: list[str] = []
    details: list[str] = []
    judged: dict[str, Verification] = {}
    if health_ok:
        checks: dict[str, list[float]] = {h: [] for h in hosts}

        def take(i: int) -> float:
            run = bench_once(ctx, pair=i, arm="A", option=option.id, approved=approved, purpose="verify", only=hosts)
            for h in hosts:
                value = run.hosts.get(h) if run.hosts else (run.value if run.valid else None)
                if value is not None:
                    checks[h].append(value)
            return run.duration_s

        def back() -> bool:
            judged.clear()
            for h in hosts:
                mine = own.get(h) or {}
                a_values, b_values = mine.get("a_values") or [], mine.get("b_values") or []
                if a_values:
                    judged[h] = settled(
                        checks[h],
                        lambda window, a=a_values, b=b_values, h=h: judge(
                            window,
                            a_series=a,
                            b_series=b,
                            reference=[],
                            noise=noise_of(state.get("calibration"), a, b),
                            spec=ctx.campaign.rollback,
                            higher_is_better=ctx.campaign.benchmark.higher_is_better,
                            state_ok=state_ok if said.get(h) != "in effect" else False,
                        ),
                        ctx.campaign.rollback.verify_runs,
                    )
            return all(j["verified"] for j in judged.values()) or not any(checks.values())

        measure_back(ctx, option.id, take, back, can_settle=state_ok is not False)
        for h in hosts:
            j = judged.get(h)
            if j is None:
                problems.append(f"{h}: no baseline readings to compare")
                continue
            if (moved := j.get("delta_pct")) is not None:
                deltas[h] = moved
            (details if j["verified"] else problems).append(f"{h}: {j['detail']}")
    if state_ok is False:
        problems.insert(0, state_detail)
    worst = max(deltas.values(), key=abs) if deltas else None
    # What vouches for all hosts at once: the check, and the metric only where every host's judgement had it.
    metric = bool(judged) and all("metric" in (j.get("verified_by") or []) for j in judged.values())
    v = {
        "verified": health_ok and not problems,
        "verified_by": [w for w, said in (("check", state_ok is True), ("metric", metric)) if said],
        "health_ok": health_ok,
        "state_ok": state_ok,
        "delta_pct": worst,
        "hosts": hosts,
        "host_deltas_pct": deltas,
        "detail": ("revert or health check failed on " + ", ".join(hosts))
        if not health_ok
        else "; ".join(problems or details),
    }
    _journaled(ctx, option.id, v)
    return v


def rollback(
    state: State, runtime: Runtime[RunContext]
) -> Command[Literal["rollback", "rollback_gate", "continue_gate", "confirm", "abandon"]]:
    """Revert the current option and verify it; a revert the rollback gate asked for "up to N times" goes round
    again while it does not verify and attempts are left. Verified, the run goes on: to the abandon's next rollback,
    to the end when stopping, else to the continue gate; not verified, to the rollback gate."""
    update = _revert_and_verify(state, runtime)
    left = state.get("reverts_left") or 0
    verified = bool((update.get("verification") or {}).get("verified"))
    again = left > 0 and not verified
    update = {**update, "reverts_left": left - 1 if again else 0, "revert_again": again}
    if not verified:
        return Command(goto="rollback" if again else "rollback_gate", update=update)
    if abandoning(state):
        return Command(goto="abandon", update=update)
    return Command(goto="confirm" if state.get("stopping") else "continue_gate", update=update)


def _revert_and_verify(state: State, runtime: Runtime[RunContext]) -> State:
    ctx = runtime.context
    key = str(current(state))
    mine = state.get("options", {}).get(key, {})
    if mine.get("outcome") == "kept" and (excepted := mine.get("except_hosts")):
        # Asked again (the rollback gate's retry) after a keep with exceptions: those hosts only.
        v = _revert_on(state, runtime, excepted)
        return {"verification": v, "options": {key: {"rollback": v}}}
    option = ctx.campaign.option(current(state))
    approved = state.get("approved", [])
    ctx.journal.append(ev.PhaseEvent(phase="rollback", option=option.id))
    try:
        results = [r for rs in run_effect(ctx, option, "revert", purpose="revert", approved=approved) for r in rs]
        health = [
            r
            for s in ctx.campaign.baseline.health
            for r in run_spec(ctx, s, purpose="health", option=option.id, approved=approved, reads_only=True)
        ]
    except (CommandRefused, MutationInDoubt) as exc:
        v: Verification = {"verified": False, "health_ok": False, "delta_pct": None, "detail": str(exc)}
        if isinstance(exc, MutationInDoubt):
            v["in_doubt"] = True
        _journaled(ctx, option.id, v)
        return {"verification": v}
    revert_ok = all(r.ok for r in results)
    health_ok = revert_ok and all(r.ok for r in health)
    if not health_ok:
        v = {
            "verified": False,
            "health_ok": False,
            "delta_pct": None,
            "detail": "revert or health check failed" if revert_ok else "revert command failed",
        }
        _journaled(ctx, option.id, v)
        return _noted(state, option.id, v)
    hosts = option_hosts(ctx, option.id)
    state_ok, state_detail, _ = state_check(ctx, option.id, hosts, approved)
    # The known-good baseline (setup, or the last kept option), and this option's own A/B arms: the A arm
    # is the baseline *now*, the B arm what a revert that did nothing would read.
    reference = state.get("reference") or []
    ab = state.get("ab", {}).get(str(option.id), {})
    a_values, b_values = ab.get("a_values") or [], ab.get("b_values") or []
    if not reference and not a_values:
        # Never benchmarked (apply failed first): the health checks and the state check are all there is.
        v = {
            "verified": state_ok is not False,
            "verified_by": ["check"] if state_ok is True else [],  # nothing measured: the check, or nothing
            "health_ok": True,
            "state_ok": state_ok,
            "delta_pct": None,
            "detail": (state_detail if state_ok is False else "health checks pass")
            + ("; " + state_detail if state_ok else "")
            + "; there is no valid baseline measurement to compare the metric with",
        }
        _journaled(ctx, option.id, v)
        return _noted(state, option.id, v)
    readings: list[float] = []
    verdict: list[Verification] = []  # the final window's, once measure_back is done

    def take(i: int) -> float:
        run = bench_once(ctx, pair=i, arm="A", option=option.id, approved=approved, purpose="verify")
        if run.valid and run.value is not None:
            readings.append(run.value)
        return run.duration_s

    def back() -> bool:
        verdict[:] = [
            settled(
                readings,
                lambda window: judge(
                    window,
                    a_series=a_values,
                    b_series=b_values,
                    reference=reference,
                    anchor=state.get("baseline_now") or reference,
                    noise=noise_of(state.get("calibration"), a_values, b_values, reference),
                    spec=ctx.campaign.rollback,
                    higher_is_better=ctx.campaign.benchmark.higher_is_better,
                    state_ok=state_ok,
                ),
                ctx.campaign.rollback.verify_runs,
            )
        ]
        return bool(verdict[0]["verified"]) or not readings

    measure_back(ctx, option.id, take, back, can_settle=state_ok is not False)
    j: Verification = verdict[0]
    after = readings[-ctx.campaign.rollback.verify_runs :]
    if not j["verified"] and state_ok is not False and slower(j, ctx.campaign.benchmark.higher_is_better):
        if (why_not := _no_reapply(state, key)) is None:
            paired, after_paired = paired_back(ctx, state, option, approved, ab)
            j = {**j, **paired, "detail": f"{j['detail']}; {paired['detail']}"}
            after = after_paired or after
            state_ok = j.get("state_ok", state_ok)
        else:
            j = {**j, "detail": f"{j['detail']}; not measured paired: {why_not}"}
    detail = j["detail"] if state_ok is not False else f"{state_detail}; {j['detail']}"
    if state_ok:
        detail = f"{state_detail}; {detail}"
    v = {**j, "health_ok": True, "detail": detail}
    _journaled(ctx, option.id, v)
    update = _noted(state, option.id, v)
    return {**update, "baseline_now": after} if v["verified"] else update


def _no_reapply(state: State, key: str) -> str | None:
    """Why the option may not be applied again to pair the rollback's readings (None: it may). Only an option the
    assessment found no harm in (its stress clean, no hazard, no failing requests): the A/B ran it already."""
    assessment = assessed(state, key)
    if assessment is None:
        return "the option was never assessed"
    if assessment.verdict == "unsafe":
        return "the option was judged unsafe, so it is not applied again to compare with"
    return None


def paired_back(
    ctx: RunContext, state: State, option: Option, approved: list[str], ab: dict[str, Any]
) -> tuple[Verification, list[float]]:
    """The rollback's readings were slower than the baseline by every yardstick: the revert, or the machine? The
    option is applied again between reverted runs (A B, B A, …, as the A/B toggles it, `Arms`), and the arms'
    ratio is judged against the A/B's own (`judge_paired`): a revert that undoes the option gives the A/B's
    ratio back however slow the machine is now; one that does nothing gives no ratio. It ends reverted, and the
    option's `check` is asked again. Returns the verdict's fields and the reverted readings."""
    rb, hib = ctx.campaign.rollback, ctx.campaign.benchmark.higher_is_better
    arms = Arms(ctx, option, approved)
    arms.applied = False  # reverted by the rollback
    pairs: list[tuple[float, float]] = []
    n = rollback_pairs(rb.verify_runs)
    ctx.journal.append(ev.PhaseEvent(phase="rollback.paired", option=option.id, pairs=n))
    try:
        for i in range(n):
            got: dict[str, float | None] = {}
            for arm in ("A", "B") if i % 2 == 0 else ("B", "A"):  # from the reverted state, back to it
                run = arms.run(i, arm, None, purpose="verify-paired")
                got[arm] = run.value if run.valid else None
            a, b = got["A"], got["B"]
            if a is not None and b is not None:
                pairs.append((a, b))
        arms.set("A")
    except (CommandRefused, RuntimeError) as exc:
        out: Verification = {"verified": False, "detail": f"the paired check could not toggle the option: {exc}"}
        if isinstance(exc, MutationInDoubt):
            out["in_doubt"] = True
        return out, []
    state_ok, state_detail, _ = state_check(ctx, option.id, option_hosts(ctx, option.id), approved)
    ratios = ab_ratios(ctx, ab)
    a_values, reference = ab.get("a_values") or [], state.get("reference") or []
    out = judge_paired(
        pairs,
        ab_ratios=ratios,
        noise=pair_noise(state.get("calibration"), ratios),
        level_noise=noise_of(state.get("calibration"), a_values, ab.get("b_values") or [], reference),
        recent_a=recent(a_values),
        reference=reference,
        spec=rb,
        higher_is_better=hib,
        state_ok=state_ok,
    )
    if state_ok is False:
        out["detail"] = f"{state_detail}; {out['detail']}"
    return out, [a for a, _ in pairs]


def measure_back(
    ctx: RunContext, option_id: int, take: Callable[[int], float], back: Callable[[], bool], *, can_settle: bool
) -> int:
    """Take the rollback's verification runs; while the readings are not back (and the state check has not
    already said the option is still on), take up to `settle_runs` more, one at a time, judging the latest
    `verify_runs`: a revert that restarts a server reads cold for a while, which is not a broken revert.
    A revert that is broken stays off for every window, so the verdict only waits longer. Returns the runs taken."""
    spec = ctx.campaign.rollback
    durations = [take(i) for i in range(spec.verify_runs)]
    taken = spec.verify_runs
    while can_settle and taken < spec.verify_runs + spec.settle_runs and not back():
        wait = settle_pause(taken - spec.verify_runs, max(durations), spec.settle_wait_s)
        if taken == spec.verify_runs:
            ctx.journal.append(
                ev.RollbackSettlingEvent(
                    option=option_id, runs=taken, up_to=taken + spec.settle_runs, first_wait_s=wait
                )
            )
        time.sleep(wait)
        durations.append(take(taken))
        taken += 1
    back()  # the verdict of the final window
    return taken


def settle_pause(k: int, run_s: float, cap_s: float) -> float:
    """The pause before the k-th settling run (from 0): one benchmark run's length, doubling, at most cap_s."""
    return round(min(max(run_s, 0.1) * 2**k, cap_s), 3)


def _journaled(ctx: RunContext, option_id: int, v: Verification) -> None:
    """The `rollback` journal line of a verification: every key it has (the event declares only some of them, so it
    is validated from the dict rather than passed as keywords)."""
    ctx.journal.append(ev.RollbackEvent.model_validate({"option": option_id, **v}))


def _noted(state: State, option_id: int, v: Verification) -> State:
    key = str(option_id)
    note = f"rollback {rollback_verdict(bool(v['verified']), v.get('verified_by'))}: {v['detail']}"
    return {
        "verification": v,
        "options": {key: {"reasons": [*state.get("options", {})[key].get("reasons", []), note], "rollback": v}},
    }
