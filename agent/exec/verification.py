"""Is a rolled-back host really back on its baseline? State first, then performance, judged by noise.

1. **State.** Where the option has a `check`, it must say "not in effect" (non-zero exit) on every host
   the option changed: that is the rollback confirmed on the host itself.
2. **Performance**, against the most recent baseline-arm (A) readings of this option's A/B and against
   the known-good baseline measured at setup (or at the last keep). A machine drifts: readings that
   match the recent A arm but not the setup baseline are a *verified* rollback with `drift_pct` since
   setup, not a broken one. Readings that match the option's recent B arm and not its A arm are an
   option still in effect. Every band comes from the noise measured in this run (`tools.noise`).
3. **Settling.** A revert that restarts a server reads cold for a while (empty caches, full-page writes
   after the shutdown checkpoint). When the first readings are not back, more are taken and the latest
   few judged (`settled`); a revert that is really broken stays off in every window.

The judgment is a pure function of the readings (`judge`), so it is tested on drifting and noisy
series without a host; `state_check` is the part that talks to hosts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from agent.context import RunContext
from agent.errors import CommandRefused
from agent.exec.execute import run_spec
from agent.exec.planning import plan
from agent.models import CommandSpec, PartialVerification, RollbackSpec, Verification
from tools.noise import Band, Noise, band, delta_pct, trend_level
from tools.paired import PAIRED_K, gmean_pct, oriented

RECENT = 4  # baseline-arm readings taken as "the baseline now": the last few of the A/B


def recent(values: Sequence[float], n: int = RECENT) -> list[float]:
    return list(values[-n:])


def state_check(
    ctx: RunContext, option_id: int, hosts: list[str], approved: list[str], *, purpose: str = "check:rollback"
) -> tuple[bool | None, str, dict[str, str]]:
    """Run the option's `check` on each host: (all say "not in effect", detail, host → what it said).
    None when the option has no check."""
    option = ctx.campaign.option(option_id)
    if option.check is None:
        return None, "the option has no `check`", {}
    said: dict[str, str] = {}
    problems: list[str] = []
    for host in hosts:
        spec = CommandSpec(run=option.check.run, on=host, timeout=option.check.timeout)
        try:
            (result,) = run_spec(ctx, spec, purpose=purpose, option=option_id, approved=approved, reads_only=True)
        except CommandRefused as exc:
            said[host] = "not run"
            problems.append(f"{host}: check not run ({exc})")
            continue
        if result.exit_code is None or result.timed_out:
            said[host] = "no answer"
            problems.append(f"{host}: check gave no answer ({result.error or 'timeout'})")
        elif result.exit_code == 0:
            said[host] = "in effect"
            problems.append(f"{host}: `{_shown(ctx, spec)}` says the option is still in effect")
        else:
            said[host] = "not in effect"
    if problems:
        return False, "; ".join(problems), said
    return True, f"check says not in effect on {', '.join(hosts)}", said


def _shown(ctx: RunContext, spec: CommandSpec) -> str:
    return ctx.redact(plan(ctx, spec)[0].command)


def settled(
    readings: Sequence[float], judge_window: Callable[[Sequence[float]], Verification], window: int
) -> Verification:
    """The verdict on the latest `window` readings after a revert, saying what the earlier ones read when
    there are more (a server settling after the revert: `agent.nodes.rollback.measure_back`)."""
    latest = list(readings[-window:])
    out = judge_window(latest)
    early = list(readings[:-window]) if len(readings) > window else []
    if not early:
        return out
    shift = delta_pct(latest, early)
    out["settle"] = {"runs": len(readings), "discarded": len(early), "early_pct": shift}
    said = (
        f"judged on the latest {len(latest)} of {len(readings)} runs; the first {len(early)} after the revert read "
        f"{statistics.fmean(early):.1f} ({shift:+.1f}% from the latest)"
    )
    if out["verified"]:
        said += ": the server settling after the revert, not the option"
    else:
        said = f"still off after {len(readings)} runs — {said}"
    out["detail"] = f"{out['detail']}; {said}"
    return out


def judge(
    after: Sequence[float],
    *,
    a_series: Sequence[float],
    b_series: Sequence[float],
    reference: Sequence[float],
    noise: Noise,
    anchor: Sequence[float] = (),
    spec: RollbackSpec,
    higher_is_better: bool,
    state_ok: bool | None,
) -> Verification:
    """The performance half of the verdict, given the state check's answer; a dict for the journal."""
    recent_a, recent_b = recent(a_series), recent(b_series)
    out: PartialVerification = {"noise": noise.logged(), "state_ok": state_ok}
    if not after:
        return {**out, "verified": False, "delta_pct": None, "detail": "no valid benchmark run after the revert"}
    mean = statistics.fmean(after)

    def against_pair(values: Sequence[float], base: Sequence[float]) -> tuple[float, Band]:
        """(change of `values` from `base` in %, the band it must stay in)."""
        b = band(noise, len(values), len(base), floor_pct=spec.floor_pct, ceiling_pct=spec.ceiling_pct)
        if b.pct is None:  # no estimate of the noise at all: the campaign's fixed tolerance
            b = b.model_copy(update={"pct": spec.tolerance_pct})
        return delta_pct(base, values), b

    def against(base: Sequence[float]) -> tuple[float, Band]:
        return against_pair(after, base)

    lines: list[str] = []
    near_a = near_ref = near_b = None
    if recent_a:
        d_a, b_a = against(recent_a)
        near_a = abs(d_a) <= b_a.pct  # type: ignore[operator]
        out.update({"delta_recent_pct": d_a, "band_pct": b_a.pct, "too_noisy": b_a.too_noisy})
        lines.append(f"{d_a:+.1f}% vs the last {len(recent_a)} baseline-arm readings (band {b_a.describe()})")
        trend = trend_level(a_series)
        if not near_a and trend is not None and noise.sd_pct is not None:
            # A machine drifting steadily moves even between the last A readings and now: where the A arm's
            # own trend says the baseline is by now counts as well (with the prediction's wider error).
            level, factor = trend
            d_t = round((statistics.fmean(after) / level - 1) * 100, 3)
            b_t = max(3 * noise.sd_pct * math.sqrt(1 / len(after) + factor**2), spec.floor_pct)
            if abs(d_t) <= b_t and b_t <= spec.ceiling_pct:
                near_a = True
                out["delta_trend_pct"] = d_t
                lines.append(f"{d_t:+.1f}% vs where the baseline arm's own trend puts it now (band ±{b_t:.1f}%)")
    if recent_b:
        d_b, b_b = against(recent_b)
        near_b = abs(d_b) <= b_b.pct  # type: ignore[operator]
        out["delta_option_pct"] = d_b
    if reference:
        d_r, b_r = against(reference)
        near_ref = abs(d_r) <= b_r.pct  # type: ignore[operator]
        out["drift_pct"] = d_r
        out.setdefault("band_pct", b_r.pct)
        out.setdefault("too_noisy", b_r.too_noisy)
        lines.append(f"{d_r:+.1f}% vs the known-good baseline ({statistics.fmean(reference):.1f})")
    # Did this option's A arm start where the baseline was just before the option was applied? A revert
    # that does not undo the option corrupts the A arm exactly as it corrupts the state being verified, so
    # without a `check` vouching for the revert, "matches the recent A arm" counts only for an anchored arm.
    anchored = None
    first_a = a_series[:2]
    if first_a and anchor:
        d_anchor, b_anchor = against_pair(first_a, anchor)
        anchored = abs(d_anchor) <= b_anchor.pct  # type: ignore[operator]
        out["arm_shift_pct"] = d_anchor
        if not anchored:
            lines.append(
                f"this option's baseline arm started {d_anchor:+.1f}% off the baseline measured before it was applied"
            )
    # What the gate and policies have always read: the change against the known-good baseline.
    out["delta_pct"] = out.get("drift_pct", out.get("delta_recent_pct"))
    # How far the baseline state itself moved while this option was measured (the level just before it was
    # applied, its A arm early and late; the known-good baseline only when nothing was measured just before).
    # On a machine that moved more than the ceiling with no option on, a reading inside that range cannot tell
    # a revert from the machine. An older, distant level excuses nothing: the machine may have settled since.
    levels = [statistics.fmean(g) for g in (anchor or reference, first_a, recent_a) if g]
    swing = max(levels) / min(levels) if len(levels) > 1 and min(levels) > 0 else 1.0
    within_swing = min(levels, default=0) / swing <= mean <= max(levels, default=0) * swing if levels else False
    swing_pct = round((swing - 1) * 100, 3) if swing - 1 > spec.ceiling_pct / 100 else None
    if swing_pct is not None:
        out["baseline_swing_pct"] = swing_pct
    too_noisy = bool(out.get("too_noisy"))
    # Slower than the baseline beyond the band by any yardstick there is: damage, or the option still on.
    worse = slower(out, higher_is_better)
    # The option's own measured effect: can these readings tell A from B at all?
    tells = True
    if recent_a and recent_b:
        effect = abs(delta_pct(recent_a, recent_b))
        tells = effect > 2 * (out.get("band_pct") or 0)
    if too_noisy and (near_a or near_ref):
        perf_ok: bool | None = None
        lines.append(f"too noisy to verify by the metric (band wider than the ±{spec.ceiling_pct:g}% ceiling)")
    elif swing_pct is not None and within_swing and not near_a and not near_ref and not (near_b and tells):
        # Checked or not, the metric has nothing to say here; the state check alone decides (below).
        perf_ok = None
        out["too_noisy"] = True
        lines.append(
            f"the baseline itself read between {min(levels):.1f} and {max(levels):.1f} in this run (a "
            f"{swing_pct:.0f}% swing with no option on, past the ±{spec.ceiling_pct:g}% ceiling): "
            "the metric cannot tell a revert from the machine here"
        )
    elif near_b and not near_a and tells and not (state_ok and not worse):
        perf_ok = False
        lines.append("the readings match the option's own arm, not the baseline: the option looks still in effect")
    elif near_a and (state_ok or anchored is not False):
        perf_ok = True
    elif near_ref:
        perf_ok = True  # back at the known-good level (the A arm, if any, was itself off)
    elif state_ok and not worse:
        # Off every band, but *better* than the baseline, with the check saying the option is off: a server
        # warming up or a quieter neighbour (Redis's fsync-bound baseline tripled in CI when the disk went
        # quiet, up to the option's own level). What a rollback must rule out is the option still in
        # effect (the check) or damage left behind (slower than the baseline), and neither is so.
        perf_ok = True
        lines.append(
            "faster than the baseline, with the check confirming the option is off: the machine, not the option"
        )
        if near_b:
            lines.append("the readings are as fast as the option's own arm; only the check tells them apart")
    else:
        perf_ok = False
    if perf_ok is not False and not tells and recent_b:
        lines.append(
            f"the option's own effect ({delta_pct(recent_a, recent_b):+.1f}%) is smaller than this comparison "
            "can resolve, so the metric cannot tell it was undone"
        )
    if perf_ok and near_ref is False:
        lines.append(
            f"the baseline drifted {out.get('drift_pct', 0.0):+.1f}% since it was measured; verified against now"
        )
    if state_ok is False:
        verified = False
    elif perf_ok is None:
        verified = bool(state_ok)  # only the state check can speak; without one nothing verifies
        if state_ok is None:
            lines.append("and the option has no `check` to confirm the state")
    else:
        verified = perf_ok
    # What vouches for it: the option's `check`, the metric (only where it can tell the option's arm from the
    # baseline's), or both; a headline of "verified" must not claim the metric when only the check spoke.
    # The metric speaks only where it found the readings back at a baseline level (not merely "better than
    # the baseline": that is the machine) and can tell that level from the option's.
    by_metric = perf_ok is True and tells and bool(near_a or near_ref) and not (near_b and not near_a)
    return {
        **out,
        "verified": verified,
        "verified_by": [w for w, said in (("check", state_ok is True), ("metric", by_metric)) if said],
        "performance_ok": perf_ok,
        "detail": f"baseline {mean:.1f} over {len(after)} run(s): " + "; ".join(lines),
        "higher_is_better": higher_is_better,
    }


def slower(verdict: PartialVerification, higher_is_better: bool) -> bool:
    """Did `judge` find the readings after the revert slower than the baseline beyond its band, by a yardstick
    it had (the recent baseline-arm readings, the known-good baseline)? What a neighbour's load looks like, and
    damage too; only a comparison with the option's arm beside them tells the revert from the machine."""
    sign = 1 if higher_is_better else -1
    limit = verdict.get("band_pct") or 0
    return any(sign * d < -limit for d in (verdict.get("delta_recent_pct"), verdict.get("drift_pct")) if d is not None)


def judge_paired(
    pairs: Sequence[tuple[float, float]],
    *,
    ab_ratios: Sequence[float],
    noise: Noise,
    level_noise: Noise,
    recent_a: Sequence[float],
    reference: Sequence[float],
    spec: RollbackSpec,
    higher_is_better: bool,
    state_ok: bool | None,
) -> Verification:
    """The rollback judged paired: (reverted, option re-applied) readings interleaved after the revert, their
    ratio against the A/B's own (`tools.paired`). The revert is verified when the ratio is the A/B's again within
    the band and either the option's effect is larger than the comparison can resolve (a revert that did nothing
    would give no ratio) or its `check` says it is off; how far the reverted state itself moved since the A/B
    (the machine: a neighbour's load, or damage the revert does not undo) is reported, not held against it."""
    out: PartialVerification = {"noise": noise.logged(), "state_ok": state_ok, "paired_pairs": len(pairs)}
    if len(pairs) < 2 or len(ab_ratios) < 2:
        return {**out, "verified": False, "performance_ok": None, "detail": "too few paired readings after the revert"}
    now = [oriented(a, b, higher_is_better) for a, b in pairs]
    now_pct, then_pct = gmean_pct(now), gmean_pct(ab_ratios)
    change = round(((1 + now_pct / 100) / (1 + then_pct / 100) - 1) * 100, 3)
    b = band(noise, len(now), len(ab_ratios), k=PAIRED_K, floor_pct=spec.floor_pct, ceiling_pct=spec.ceiling_pct)
    limit = b.pct if b.pct is not None else spec.tolerance_pct
    matches = abs(change) <= limit and not b.too_noisy
    tells = abs(math.log1p(then_pct / 100)) > 2 * math.log1p(limit / 100)
    lines = [
        f"paired after the revert: the option applied again between reverted runs read {now_pct:+.1f}% against "
        f"them ({change:+.1f}% against the A/B's {then_pct:+.1f}%) over {len(now)} interleaved pairs (band "
        f"{b.describe() if b.pct is not None else f'±{limit:g}%'})"
    ]
    reverted = [a for a, _ in pairs]
    for name, base in (("the A/B's baseline arm", recent_a), ("the known-good baseline", reference)):
        if base:
            moved = delta_pct(base, reverted)
            lb = band(level_noise, len(reverted), len(base), floor_pct=spec.floor_pct, ceiling_pct=spec.ceiling_pct)
            out.setdefault("machine_pct", moved)
            if lb.pct is not None and abs(moved) > lb.pct:
                lines.append(f"the reverted state read {moved:+.1f}% against {name}")
    if matches and (tells or state_ok):
        perf_ok = True
        if any(line.startswith("the reverted state") for line in lines):
            lines.append(
                "both arms moved together: the machine (a neighbour's load, or damage the revert does not undo), "
                "not the revert"
            )
        if not tells:
            lines.append("the option's own effect is smaller than this comparison resolves; the check says it is off")
    elif b.too_noisy:
        perf_ok = None
        lines.append(f"too noisy to tell (band wider than the ±{spec.ceiling_pct:g}% ceiling)")
    elif matches:
        perf_ok = None  # a revert that did nothing would read the same: only the check could tell
        lines.append("the option's own effect is smaller than this comparison resolves, so the ratio cannot tell")
    else:
        perf_ok = False
        lines.append("the arms' ratio is not the A/B's: the revert does not undo the option as it did in the A/B")
    if state_ok is False:
        verified = False
    elif perf_ok is None:
        verified = bool(state_ok)  # as `judge`: only the check can speak, and without one nothing verifies
    else:
        verified = perf_ok
    by = [w for w, said in (("check", state_ok is True), ("metric", perf_ok is True and tells)) if said]
    return {
        **out,
        "verified": verified,
        "verified_by": by,
        "performance_ok": perf_ok,
        "paired_change_pct": change,
        "paired_band_pct": limit,
        "detail": "; ".join(lines),
    }
