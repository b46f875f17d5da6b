"""The goal measured: at the end, an interleaved A/B of the configuration the campaign started from against the
final one (every kept option applied), with the statistics of any A/B; then whether the kept options stack, from
each option measured on its own against the start (`configurations`).

The arms switch by running the kept options' reverts (newest first) and applies (in the order they were kept), only
on the hosts each was kept on; the first switch into each configuration is checked with the options' `check`
commands, and so is the final configuration the hosts are left on, whatever happened in between.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.campaign import outside_level
from agent.context import RunContext
from agent.errors import CommandRefused, ConfigurationMismatch, MutationInDoubt
from agent.exec.execute import run_effect
from agent.exec.verification import state_check
from agent.journal import events as ev
from agent.ledger import Effect
from agent.nodes.benchmark import bench_once, measure_level
from agent.nodes.gating import option_hosts
from agent.state import Confirmation, State
from tools.abstats import Arm, BenchRun
from tools.goal import Interaction, Single, interaction, judge_goal

PAIRWISE_MAX = 4  # `confirm: pairwise` measures each pair of kept options only up to this many kept


class ConfigArms:
    """Two configurations of the kept options as the arms of an A/B. The hosts start on the final configuration."""

    option_id: int | None = None  # the runs belong to no one option

    def __init__(self, ctx: RunContext, state: State, order: list[int], a_on: set[int], b_on: set[int]) -> None:
        self.ctx, self.state, self.order = ctx, state, order
        self.arms = {"A": frozenset(a_on), "B": frozenset(b_on)}
        self.on = set(order)
        self.checked: set[frozenset[int]] = {frozenset(order)}  # the final configuration was checked at its keep
        self.ab_runs: list[BenchRun] = []

    def _hosts(self, option_id: int) -> list[str] | None:
        """The hosts an option was kept on (a keep with exceptions); None: all its hosts."""
        return self.state.get("options", {}).get(str(option_id), {}).get("hosts") or None

    def switch(self, target: frozenset[int], *, check: bool = False) -> None:
        approved = self.state.get("approved", [])
        off = [o for o in reversed(self.order) if o in self.on and o not in target]
        on = [o for o in self.order if o not in self.on and o in target]
        steps: list[tuple[int, Effect]] = [*((o, "revert") for o in off), *((o, "apply") for o in on)]
        for option_id, effect in steps:
            option = self.ctx.campaign.option(option_id)
            only = self._hosts(option_id)
            for results in run_effect(self.ctx, option, effect, purpose="confirm:toggle", approved=approved, only=only):
                if not all(r.ok for r in results):
                    raise ConfigurationMismatch(f"{effect} of #{option_id} failed: {results[0].command!r}")
            (self.on.add if effect == "apply" else self.on.discard)(option_id)
        if check or target not in self.checked:
            self._check(target)
            self.checked.add(target)

    def _check(self, target: frozenset[int]) -> None:
        """Each kept option's `check` must say "in effect" where the configuration has it and "not in effect" where
        it does not; an option without a check is taken on its commands' exit status."""
        for option_id in self.order:
            hosts = self._hosts(option_id) or option_hosts(self.ctx, option_id)
            ok, detail, said = state_check(
                self.ctx, option_id, hosts, self.state.get("approved", []), purpose="check:confirm"
            )
            if ok is None:
                continue
            want = "in effect" if option_id in target else "not in effect"
            wrong = [h for h, s in said.items() if s != want]
            if wrong:
                raise ConfigurationMismatch(f"#{option_id} should be {want} on {', '.join(wrong)}: {detail}")

    def set(self, arm: str) -> None:
        self.switch(self.arms[arm])

    def run(self, pair: int, arm: Arm, level: float | None, purpose: str = "confirm") -> BenchRun:
        self.set(arm)
        run = bench_once(
            self.ctx, pair=pair, arm=arm, option=None, approved=self.state.get("approved", []), level=level,
            purpose="confirm",
        )  # fmt: skip
        self.ab_runs.append(run)
        return run


def kept_in_order(state: State) -> list[int]:
    """The kept options, in the order they were kept (each was measured on top of the ones before)."""
    options = state.get("options", {})
    return [o for o in dict.fromkeys(state.get("tried", [])) if options.get(str(o), {}).get("outcome") == "kept"]


def _why_not(ctx: RunContext, state: State, order: list[int]) -> str | None:
    """Why no confirmation A/B runs at this end of the campaign (None: it runs)."""
    if not order:
        return "nothing was kept"
    if (abandoned := state.get("abandon")) is not None:
        return f"the run was abandoned by {abandoned.get('by') or 'a person'}"
    if ctx.campaign.confirm is False:
        return "campaign.confirm is false"
    if (state.get("report") or {}).get("error"):
        return "the run ended on an error"
    if (state.get("verification") or {}).get("verified") is False:
        return "a rollback did not verify: the hosts are in no known configuration to measure from"
    gates = state.get("gates") or []
    if gates and gates[-1]["kind"] == "budget":
        return "the budget was reached"
    return None


def configurations(order: list[int], *, pairwise: bool) -> list[frozenset[int]]:
    """What the confirmation measures against the start: the final configuration; with two or more kept, each option
    kept after the first on its own (its A/B measured it on top of the earlier ones, so its recorded gain is what it
    adds to them — that says nothing of whether they stack); `pairwise`, each pair too (up to PAIRWISE_MAX kept)."""
    configs = [frozenset(order)]
    if len(order) >= 2:
        configs += [frozenset([o]) for o in order[1:]]
    if pairwise and 2 < len(order) <= PAIRWISE_MAX:
        configs += [frozenset(c) for c in combinations(order, 2)]
    return configs


def _single(state: State, option_id: int, alone: Any) -> Single | None:
    """An option's gain on its own against the start: measured alone here, or (the first kept) its own A/B."""
    if alone is not None:
        if alone.effect_pct is None or alone.ci_low is None or alone.ci_high is None:
            return None
        return Single(
            option=option_id, gain_pct=alone.effect_pct, ci_low=alone.ci_low, ci_high=alone.ci_high, pairs=alone.pairs
        )
    o = state.get("options", {}).get(str(option_id), {})
    ab = state.get("ab", {}).get(str(option_id), {})
    gain, ci = o.get("gain_pct"), o.get("ci")
    if gain is None or not ci or not ab.get("pairs"):
        return None
    return Single(option=option_id, gain_pct=gain, ci_low=ci[0], ci_high=ci[1], pairs=ab["pairs"])


def confirm(state: State, runtime: Runtime[RunContext]) -> Command[Literal["goal_gate", "report"]]:
    ctx = runtime.context
    order = kept_in_order(state)
    previous = state.get("confirmation") or {}
    rounds = int(previous.get("rounds", 0))
    why_not = _why_not(ctx, state, order)
    if why_not is not None:
        if order:
            ctx.journal.append(ev.GoalConfirmedEvent(kept=order, skipped=why_not))
        return Command(goto="report", update={"confirmation": {"kept": order, "skipped": why_not} if order else None})
    pairs = state.get("confirm_pairs") or ctx.campaign.benchmark.pairs
    level = outside_level(ctx.campaign)
    ctx.journal.append(
        ev.PhaseEvent(phase="confirm", pairs=pairs, level=level)
        if level is not None
        else ev.PhaseEvent(phase="confirm", pairs=pairs)
    )
    final = frozenset(order)
    configs = configurations(order, pairwise=ctx.campaign.confirm == "pairwise")
    # Measured as any fixed-N A/B (`pairs`, one extension when inconclusive): a sequential stop is decided by the
    # noise band, not the goal's target, and its CI would then be read against a target it never looked at;
    # `current` None keeps any one option's expected gain out of it.
    measuring: State = {**state, "current": None, "retry_pairs": pairs if state.get("confirm_pairs") else None}
    results: dict[frozenset[int], Any] = {}
    error = None
    arms = ConfigArms(ctx, state, order, set(), set(final))
    try:
        for config in configs:
            arms.arms["B"] = config
            named = " + ".join(f"#{o}" for o in order if o in config)
            ctx.journal.append(ev.PhaseEvent(phase="confirm.arm", pairs=pairs, title=f"{named} against the start"))
            _, result = measure_level(ctx, measuring, arms, level, pairs, sequential=False)
            results[config] = result
    except (MutationInDoubt, CommandRefused, ConfigurationMismatch, RuntimeError) as exc:
        error = f"the confirmation A/B stopped: {exc}"
    try:
        arms.switch(final, check=True)  # the hosts end on the final configuration, checked
    except (MutationInDoubt, CommandRefused, ConfigurationMismatch, RuntimeError) as exc:
        error = f"{error + '; ' if error else ''}the hosts could not be put back on the final configuration: {exc}"
        ctx.journal.append(ev.GoalConfirmedEvent(kept=order, error=error, rounds=rounds + 1))
        return Command(
            goto="report", update={"report": {"error": error}, "confirmation": {"kept": order, "error": error}}
        )
    out = summarize(ctx, state, order, results, final, error=error, rounds=rounds + 1, level=level)
    ctx.journal.append(ev.GoalConfirmedEvent.model_validate(out))
    return Command(
        goto="goal_gate" if out.get("goal") else "report", update={"confirmation": out, "confirm_pairs": None}
    )


def summarize(
    ctx: RunContext,
    state: State,
    order: list[int],
    results: dict[frozenset[int], Any],
    final: frozenset[int],
    *,
    error: str | None,
    rounds: int,
    level: float | None,
) -> Confirmation:
    """The confirmation as the state, the gate and the journal keep it."""
    out: Confirmation = {"kept": order, "rounds": rounds}
    if level is not None:
        out["level"] = level
    result = results.get(final)
    if result is None or result.effect_pct is None:
        why = error or ("no reading in either arm" if result is None else "; ".join(result.reasons))
        out["error"] = f"the goal could not be measured: {why}"
        return out
    if error:
        out["error"] = error
    goal = judge_goal(result.ratios, ctx.campaign.goal.target_pct)
    out["goal"] = goal.model_dump(mode="json")
    out["summary"] = goal.words()
    out["ab"] = {k: getattr(result, k) for k in ("pairs", "effect_pct", "ci_low", "ci_high", "verdict", "ratios")}
    found: list[Interaction] = []
    singles = {o: s for o in order if (s := _single(state, o, results.get(frozenset([o])))) is not None}
    if len(order) >= 2:
        out["singles"] = [s.model_dump(mode="json") for s in singles.values()]
    if len(order) >= 2:
        if len(singles) == len(order):
            found.append(interaction(result.ratios, [singles[o] for o in order]))
        else:
            out["interaction_note"] = "a kept option has no single gain with a CI: no interaction to judge"
    for config, r in results.items():
        if len(config) < 2 or config == final or r is None or r.effect_pct is None or len(r.ratios) < 2:
            continue
        if all(o in singles for o in config):
            found.append(interaction(r.ratios, [singles[o] for o in order if o in config]))
    out["interactions"] = [{**i.model_dump(mode="json"), "words": i.words()} for i in found]
    return out
