"""Interleaved A/B benchmark of the current option against the baseline.

Pairs alternate AB, BA, AB, … (ABBA counterbalancing) and the option is toggled with its own
apply/revert commands between arms, so drift cancels out. One extension (to `max_pairs`) when the
first verdict is inconclusive.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.effects import MutationInDoubt
from agent.execute import CommandRefused, run_spec
from agent.models import CommandSpec
from agent.state import State
from tools.abstats import BenchRun, analyse, outlier_pairs, pair_order
from tools.benchparse import BenchParseError, parse


def bench_once(
    ctx: RunContext,
    *,
    pair: int,
    arm: str,
    option: int | None,
    approved: list[str],
    purpose: str = "ab",
    restart: bool = True,
) -> BenchRun:
    spec = ctx.campaign.benchmark
    for step, command in (("restart", spec.restart if restart else None), ("warmup", spec.warmup)):
        if command:  # the same preparation in both arms, before every run
            prep = CommandSpec(run=command, on=spec.on, timeout=spec.timeout)
            if not all(r.ok for r in run_spec(ctx, prep, purpose=f"{step}:{arm}", option=option, approved=approved)):
                run = BenchRun(pair=pair, arm=arm, value=None, valid=False, reason=f"{step} command failed")
                ctx.journal.append("bench.run", option=option, purpose=purpose, **run.model_dump(mode="json"))
                return run
    result = run_spec(ctx, spec, purpose=f"bench:{arm}", option=option, approved=approved)[0]
    value, reason, guard = None, None, {}
    if result.timed_out:
        reason = f"benchmark exceeded its {spec.timeout:g}s deadline (killed)"
    elif result.exit_code != 0:
        reason = f"benchmark exit {result.exit_code}"
    else:
        text = result.stdout_tail
        if result.stdout_truncated and result.artifact:
            text = ctx.artifacts.read(result.artifact)  # the result line may be beyond the in-memory tail
        try:
            record = parse(
                spec.parser,
                text,
                expected=spec.num_prompts,
                paths=spec.paths,
                patterns=spec.patterns,
            )
        except BenchParseError as exc:
            reason = f"unreadable benchmark output: {exc}"
        else:
            reason = record.invalid_reason()
            value, unusable = record.usable(spec.metric)
            reason = reason or unusable
            guard = {g: v for g in spec.guardrails if (v := record.metric(g)) is not None}
    run = BenchRun(
        pair=pair,
        arm=arm,
        value=value if reason is None else None,
        valid=reason is None,
        reason=reason,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        artifact=result.artifact,
        guardrails=guard,
    )
    ctx.journal.append("bench.run", option=option, purpose=purpose, **run.model_dump(mode="json"))
    return run


def benchmark(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    spec = ctx.campaign.benchmark
    option = ctx.campaign.option(state["current"])
    key = str(option.id)
    approved = state.get("approved", [])
    target = state.get("retry_pairs") or spec.pairs
    ctx.journal.append("phase", phase="benchmark", option=option.id, pairs=target)
    runs: list[BenchRun] = []
    applied = True  # the apply node left the option on

    def set_arm(arm: str) -> None:
        nonlocal applied
        want = arm == "B"
        if want == applied:
            return
        specs, effect = (option.apply, "apply") if want else (option.revert, "revert")
        for i, s in enumerate(specs, 1):
            results = run_spec(
                ctx, s, purpose="toggle", option=option.id, approved=approved, effect=effect, last=i == len(specs)
            )
            if not all(r.ok for r in results):
                raise RuntimeError(f"could not switch to arm {arm}: {results[0].command!r} failed")
        applied = want

    def run_pairs(start: int, stop: int) -> None:
        for pair in range(start, stop):
            for arm in pair_order(pair):
                set_arm(arm)
                runs.append(bench_once(ctx, pair=pair, arm=arm, option=option.id, approved=approved))
            ctx.journal.append("bench.progress", option=option.id, pair=pair + 1, of=stop)

    try:
        run_pairs(0, target)
        for pair in outlier_pairs(runs)[:2]:
            # An outlier pair is measured again and the first measurement kept in the journal, not dropped.
            old = [r for r in runs if r.pair == pair]
            ctx.journal.append(
                "bench.outlier", option=option.id, pair=pair, values={r.arm: r.value for r in old}, action="re-run"
            )
            runs[:] = [r for r in runs if r.pair != pair]
            for arm in pair_order(pair):
                set_arm(arm)
                runs.append(bench_once(ctx, pair=pair, arm=arm, option=option.id, approved=approved))
        result = _analyse(ctx, runs)
        if result.verdict == "inconclusive" and target < spec.max_pairs and not state.get("retry_pairs"):
            ctx.journal.append(
                "bench.extended",
                option=option.id,
                from_pairs=target,
                to_pairs=spec.max_pairs,
                reason="; ".join(result.reasons),
            )
            run_pairs(target, spec.max_pairs)
            result = _analyse(ctx, runs)
        set_arm("B")  # stress tests run against the candidate
    except MutationInDoubt as exc:
        from agent.nodes.apply import in_doubt

        ctx.journal.append("bench.aborted", option=option.id, reason=str(exc))
        return in_doubt(key, exc)
    except (CommandRefused, RuntimeError) as exc:
        ctx.journal.append("bench.aborted", option=option.id, reason=str(exc))
        return {"route": "failed", "options": {key: {"outcome": "untested", "reasons": [str(exc)]}}}
    failed_candidate = sum(1 for r in runs if r.arm == "B" and not r.valid)
    failed_baseline = sum(1 for r in runs if r.arm == "A" and not r.valid)
    ab = {
        **result.model_dump(mode="json"),
        "failed_candidate_runs": failed_candidate,
        "failed_baseline_runs": failed_baseline,
        "baseline_runs": sum(1 for r in runs if r.arm == "A"),
        "a_values": [r.value for r in runs if r.arm == "A" and r.valid],
        "b_values": [r.value for r in runs if r.arm == "B" and r.valid],
        "invalid": [{"pair": r.pair, "arm": r.arm, "reason": r.reason} for r in runs if not r.valid],
    }
    ctx.journal.append("ab.result", option=option.id, summary=result.summary(), **result.model_dump(mode="json"))
    return {"ab": {key: ab}, "route": "stress"}


def _analyse(ctx: RunContext, runs: list[BenchRun]):
    spec = ctx.campaign.benchmark
    return analyse(
        runs,
        metric=spec.metric,
        higher_is_better=spec.higher_is_better,
        min_pairs=min(5, spec.pairs),
        noise_pct=spec.noise_pct,
        equivalence_pct=spec.equivalence_pct,
        guardrail_pct=spec.guardrail_pct,
    )
