"""Sequential A/B: look after every pair and stop as soon as the verdict is decided.

The decision loop is a pure `Planner`: given the runs so far it says which pair to measure next (or which
outlier pair to measure again), or the verdict. `agent.nodes.benchmark.measure_level` drives it with real
runs and `bench/sequential.py` with thousands of synthetic ones, through `drive`, so both go through the
same code. Two designs:

**Fixed-N** (`benchmark.sequential: false`, the rule before sequential tests): `pairs` pairs, up to two
outlier pairs measured again, one extension to `max_pairs` when the verdict is inconclusive.

**Sequential** (the default). After every pair from the first look on (min(`pairs`, 3) pairs: with two pairs
the spread has one degree of freedom and no always-valid test can decide; three is the first look that can),
the paired log-ratios d_i = ln(B_i/A_i) are judged by an *always-valid* confidence sequence for their mean:
the t-mixture (scale-invariant mixture likelihood ratio) confidence sequence of Lai (1976), "On confidence
sequences", Ann. Statist. 4(2):265–280, §4; see also Wang & Ramdas (2023), "Anytime-valid t-tests and
confidence sequences for Gaussian means with unknown variance", Sequential Analysis 44(1). With the standardized
effect δ = μ/σ mixed over N(0, g) and σ integrated out under its right Haar measure dσ/σ, the likelihood ratio
of the maximal scale invariant is, in closed form with the one-sample t statistic and ν = n − 1,

    Λ_n(μ0) = (1 + n·g)^(-1/2) · [(1 + t²/ν) / (1 + t²/(ν(1 + n·g)))]^((ν+1)/2),

a nonnegative martingale of mean 1 when μ = μ0. By Ville's inequality P(∃n: Λ_n(μ) ≥ 1/α) ≤ α, so the set
{μ0 : Λ_n(μ0) < 1/α} covers the true mean at *every* n at once with probability ≥ 1 − α, for normal d_i of any
unknown variance, whenever one looks and whenever one stops. The design uses α = 2.5 % (`ALPHA`), so:

- improved: the sequence clears +noise_pct; regressed: it lies below −noise_pct; equivalent (no_effect): it lies
  inside ±equivalence_pct — each decided only when the fixed-sample analysis (`tools.abstats.analyse`, with its
  Wilcoxon cross-check and guardrails) says the same; an improvement that breaches a guardrail stops too;
- the look fixed-N takes at `pairs` is kept (the paired t decides there as it always did), so on the same readings a
  sequential A/B never runs longer than fixed-N;
- futile, from min(`pairs`, 5) pairs (before the outlier check can run an outlier looks like a loss): the A/B cannot
  call it improved within `max_pairs`. Either even at the larger of the option's `expected_gain_pct` and the gain
  so far, or — once the sequence rules the expected gain out, or none was given — at the gain so far, the
  conditional power of the last look is below `FUTILITY` (stochastic curtailment: Lan, Simon & Halperin (1982),
  "Stochastically curtailed tests in long-term clinical trials", Sequential Analysis 1(3):207–219). Verdict:
  inconclusive;
- budget: at `max_pairs` the verdict is the fixed-sample paired t (95 %) that fixed-N ends with.

What that guarantees, for normal log-ratios: a false "improved" (true effect ≤ 0) needs the sequence to miss the
true mean (≤ 2.5 %, whenever it stopped) or one of the two fixed-sample looks to err upwards (≤ 2.5 % each, as in
fixed-N, whose two looks allow 5 %): at most 7.5 % by the union bound, and far less in practice (each look must also
clear the noise band). Futility only ever stops without "improved", so it adds no false keeps. Drift, outliers and
skew are outside that model: `bench/sequential.py` measures the error rates with them (about 1 % false keeps for
both designs, on the demo's settings).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tools.abstats import ABResult, BenchRun, outliers, t975

ALPHA = 0.025  # the confidence sequence's error: P(it ever misses the true mean) ≤ ALPHA
# g, the variance of the standardized effect δ = μ/σ the mixture spreads over: large enough that three pairs can
# decide (the sequence bounds the mean at n = 3 only when 1 + 3g > 1/α); by simulation (bench/sequential.py) any g
# from 10 to 100 spends about the same runs.
MIXTURE = 30.0
FUTILITY = 0.2  # conditional power below which an A/B cannot show the expected gain within its budget
FIRST_LOOK = 3  # the earliest look: with two pairs no always-valid test can decide
# No futility before 5 complete pairs (or `pairs`, when fewer), the fewest the outlier check reads: before it an
# outlier looks like a loss.
FUTILE_FROM = 5
PER_HOST_PAIRS = 5  # the pairs a host's own A/B needs before a fleet's A/B may stop (agent.nodes.benchmark.per_host)
RERUNS = 2  # outlier pairs an A/B measures again, at most
BROKEN_AFTER_PAIRS = 2  # a benchmark that gave no reading in either arm for this many pairs is broken

StoppedBy = Literal["improved", "regressed", "equivalent", "guardrail", "futile", "budget", "fixed", "broken"]
Action = Literal["pair", "rerun", "extend", "stop"]
_BY_VERDICT: dict[str, StoppedBy] = {"improved": "improved", "regressed": "regressed", "no_effect": "equivalent"}


@dataclass(frozen=True)
class Design:
    """How an A/B is run: `pairs`, `max_pairs`, fixed-N or sequential, and whether fixed-N may extend."""

    pairs: int = 6
    max_pairs: int = 10
    sequential: bool = True
    extend: bool = True  # fixed-N: one extension to max_pairs when inconclusive (not on a person's retry)
    alpha: float = ALPHA
    mixture: float = MIXTURE
    futility: float = FUTILITY
    first: int = FIRST_LOOK  # the earliest look (a sweep's levels look from `pairs`: their runs fit a model too)

    @property
    def first_look(self) -> int:
        return min(self.pairs, self.first)

    @property
    def budget(self) -> int:
        return max(self.pairs, self.max_pairs) if self.sequential else self.pairs


@dataclass(frozen=True)
class Step:
    """What the driver does next: measure a pair, measure an outlier pair again, note an extension, or stop with
    the verdict (None when the benchmark is broken)."""

    action: Action
    pair: int = -1
    of: int = 0  # the pairs planned now (progress: "pair 3 of 10")
    reason: str = ""
    stopped_by: StoppedBy | None = None
    result: ABResult | None = None
    old: dict[str, float | None] = field(default_factory=dict)  # rerun: the pair's first measurement


def log_ratios(runs: Sequence[BenchRun], *, higher_is_better: bool = True) -> list[float]:
    """ln(B/A) of each pair whose two runs are valid, oriented so that positive is better."""
    by_pair: dict[int, dict[str, BenchRun]] = {}
    for run in runs:
        by_pair.setdefault(run.pair, {})[run.arm] = run
    out: list[float] = []
    for _, p in sorted(by_pair.items()):
        a, b = p.get("A"), p.get("B")
        if a and b and a.valid and b.valid and a.value and b.value and a.value > 0 and b.value > 0:
            d = math.log(b.value / a.value)
            out.append(d if higher_is_better else -d)
    return out


def confidence_sequence(logs: Sequence[float], *, alpha: float = ALPHA, g: float = MIXTURE) -> tuple[float, float]:
    """Lai's t-mixture confidence sequence for the mean of `logs` at this n (log scale): (−inf, inf) when it
    cannot yet bound it (fewer than 2 values, no spread, or too few for this α and g)."""
    n = len(logs)
    if n < 2:
        return -math.inf, math.inf
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    if sd == 0:
        return -math.inf, math.inf
    nu, a = n - 1, 1 + n * g
    # Λ_n < 1/α  ⇔  (1 + u)/(1 + u/a) < K with u = t²/ν and K = (√a/α)^(2/n); bounded only when K < a.
    k = math.exp((0.5 * math.log(a) - math.log(alpha)) * 2 / n)
    if k >= a:
        return -math.inf, math.inf
    half = math.sqrt(nu * (k - 1) / (1 - k / a)) * sd / math.sqrt(n)
    return mean - half, mean + half


def mixture_ratio(logs: Sequence[float], mu0: float = 0.0, *, g: float = MIXTURE) -> float:
    """Λ_n(μ0), the mixture likelihood ratio the sequence inverts (for the tests and the docs)."""
    n = len(logs)
    y = [x - mu0 for x in logs]
    mean, sd = statistics.fmean(y), statistics.stdev(y)
    nu, a = n - 1, 1 + n * g
    t2 = n * mean * mean / (sd * sd)
    return a**-0.5 * ((1 + t2 / nu) / (1 + t2 / (nu * a))) ** ((nu + 1) / 2)


def conditional_power(logs: Sequence[float], effect: float, *, budget: int, margin: float) -> float:
    """P(the fixed-sample 95 % paired t at `budget` pairs clears `margin`) if the remaining pairs have mean
    `effect` (log scale) and the spread measured so far: stochastic curtailment (Lan, Simon & Halperin 1982)."""
    n = len(logs)
    left = budget - n
    if n < 2 or left <= 0:
        return 0.0
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    if sd == 0:
        return 1.0
    bar = margin + t975(budget - 1) * sd / math.sqrt(budget)  # the final mean the last look needs
    z = (budget * bar - n * mean - left * effect) / (sd * math.sqrt(left))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _pct(x: float) -> float:
    return math.expm1(x) * 100 if math.isfinite(x) else x


def _span(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "unbounded"
    return f"{_pct(low):+.1f}%…{_pct(high):+.1f}%"


class Planner:
    """The A/B's decision loop, without I/O: `next(runs)` says what to do after the runs so far.

    `analyse` is the fixed-sample analysis of a set of runs (the campaign's `tools.abstats.analyse` settings); its
    `noise_pct`, `equivalence_pct` and `expected_pct` are the thresholds the sequential looks use too."""

    def __init__(
        self, design: Design, analyse: Callable[[Sequence[BenchRun]], ABResult], *, higher_is_better: bool = True
    ) -> None:
        self.design, self.analyse, self.higher_is_better = design, analyse, higher_is_better
        self.next_pair = 0  # the next new pair's index
        self.rerun: set[int] = set()  # pairs measured again
        self.outliers_checked = False  # fixed-N: once, after `pairs`
        self.extended = False
        self._queue: list[int] = []  # fixed-N: the outlier pairs still to measure again
        self.broken_checked = False
        self.runs_measured = 0  # every run, a re-run outlier pair's first measurement too
        self._last: tuple[float, float] = (-math.inf, math.inf)

    # ------------------------------------------------------------------ the loop

    def next(self, runs: Sequence[BenchRun]) -> Step:
        d = self.design
        if not self.broken_checked:
            first = min(BROKEN_AFTER_PAIRS, d.pairs)
            if self.next_pair < first:
                return self._pair(d.pairs if not d.sequential else d.budget)
            self.broken_checked = True
            if all(not r.valid for r in runs):
                # Not one reading in either arm: the benchmark itself is broken here, which says nothing about
                # the option. More pairs would fail the same way.
                return Step("stop", stopped_by="broken", reason="no reading in either arm")
        return self._sequential(runs) if d.sequential else self._fixed(runs)

    def _pair(self, of: int) -> Step:
        step = Step("pair", pair=self.next_pair, of=of)
        self.next_pair += 1
        self.runs_measured += 2
        return step

    def _rerun(self, runs: Sequence[BenchRun], pair: int) -> Step:
        self.rerun.add(pair)
        self.runs_measured += 2
        old = {r.arm: r.value for r in runs if r.pair == pair}
        return Step("rerun", pair=pair, old=old, reason="a lone outlier pair: measured again")

    def _lone_outlier(self, runs: Sequence[BenchRun]) -> int | None:
        if len(self.rerun) >= RERUNS:
            return None
        lone = [p for p in outliers(runs).rerun if p not in self.rerun]
        return lone[0] if lone else None

    def _fixed(self, runs: Sequence[BenchRun]) -> Step:
        d = self.design
        if self.next_pair < d.pairs:
            return self._pair(d.pairs)
        if not self.outliers_checked:
            self._queue = outliers(runs).rerun[:RERUNS]
            self.outliers_checked = True
        if self._queue:
            return self._rerun(runs, self._queue.pop(0))
        if not self.extended:
            result = self.analyse(runs)
            if result.verdict == "inconclusive" and d.extend and d.pairs < d.max_pairs:
                self.extended = True
                return Step("extend", of=d.max_pairs, reason="; ".join(result.reasons))
            return self._stop(runs, "fixed", f"fixed-N: {d.pairs} pairs", result)
        if self.next_pair < d.max_pairs:
            return self._pair(d.max_pairs)
        return self._stop(runs, "fixed", f"fixed-N: {d.pairs} pairs, extended to {d.max_pairs}")

    def _sequential(self, runs: Sequence[BenchRun]) -> Step:
        d = self.design
        budget = d.budget
        # A benchmark over several hosts also judges each host on its own pairs (a fixed-sample t from 5 pairs): it
        # does not stop before they can, so a host the option hurts is still seen behind the fleet's gain.
        first = min(d.pairs, PER_HOST_PAIRS) if any(r.hosts for r in runs) else d.first_look
        if self.next_pair < first:
            return self._pair(budget)
        if (pair := self._lone_outlier(runs)) is not None:
            return self._rerun(runs, pair)
        logs = log_ratios(runs, higher_is_better=self.higher_is_better)
        stop = self._look(runs, logs, last=self.next_pair >= budget)
        if stop is not None:
            return stop
        if self.next_pair < budget:
            return self._pair(budget)
        result = self.analyse(runs)
        why = (
            f"the always-valid 95% sequence ({_span(*self._last)}) did not decide within the budget of {budget} "
            f"pairs: the verdict is the fixed-sample paired t at {budget}"
        )
        return self._stop(runs, "budget", why, result)

    def _look(self, runs: Sequence[BenchRun], logs: list[float], *, last: bool) -> Step | None:
        """A stop at this look, or None to go on."""
        if len(logs) < 2:
            return None
        d = self.design
        low, high = self._last = confidence_sequence(logs, alpha=d.alpha, g=d.mixture)
        probe = self.analyse(runs)  # the thresholds (noise band, τ, expected gain) are the analysis's own
        margin = math.log1p(probe.noise_pct / 100)
        tau = math.log1p(probe.equivalence_pct / 100)
        cs = _span(low, high)
        decided: StoppedBy | None = None
        if low > margin:
            decided, verdict, why = "improved", "improved", f"clears +{probe.noise_pct:g}%"
        elif high < -margin:
            decided, verdict, why = "regressed", "regressed", f"lies below −{probe.noise_pct:g}%"
        elif -tau < low and high < tau:
            decided, verdict, why = "equivalent", "no_effect", f"lies inside ±{probe.equivalence_pct:g}%"
        else:
            verdict, why = "", ""
        if decided is not None:
            text = f"the always-valid 95% sequence {cs} {why} after {len(logs)} pairs"
            if probe.verdict == verdict:
                return self._stop(runs, decided, text, probe)
            if decided == "improved" and any(r.startswith("latency guardrail breached") for r in probe.reasons):
                return self._stop(runs, "guardrail", f"{text}, but a latency guardrail is breached", probe)
            # Otherwise the fixed-sample analysis does not agree yet (e.g. the Wilcoxon cross-check): go on.
        if self.next_pair == d.pairs and not last and probe.verdict != "inconclusive":
            # The look fixed-N takes at `pairs`, kept: a sequential A/B never runs longer than fixed-N would on
            # the same readings.
            text = f"the fixed-sample paired t at {d.pairs} pairs decides, as fixed-N would (the sequence is {cs})"
            return self._stop(runs, _BY_VERDICT[probe.verdict], text, probe)
        if last or len(logs) < min(d.pairs, FUTILE_FROM):
            return None
        return self._futile(runs, logs, probe, margin=margin, cs=(low, high))

    def _futile(
        self, runs: Sequence[BenchRun], logs: list[float], probe: ABResult, *, margin: float, cs: tuple[float, float]
    ) -> Step | None:
        """Stop when the last look cannot call it improved: the expected gain cannot be shown within the budget, or
        the data rule it out (or there is none) and the gain so far cannot clear the noise band by then."""
        d = self.design
        trend = statistics.fmean(logs)
        claim = probe.expected_pct if probe.expected_pct is not None and probe.expected_pct > probe.noise_pct else None
        if claim is not None:
            best = max(math.log1p(claim / 100), trend)
            power = conditional_power(logs, best, budget=d.budget, margin=margin)
            if power < d.futility:
                text = (
                    f"futile: even at {_pct(best):+.1f}% (the larger of the expected {claim:+g}% and the gain so far) "
                    f"the last look at {d.budget} pairs would clear +{probe.noise_pct:g}% with probability {power:.0%} "
                    f"(conditional power at the spread measured); the always-valid sequence is {_span(*cs)}"
                )
                return self._stop(runs, "futile", text, probe, verdict="inconclusive")
        if claim is not None and cs[1] >= math.log1p(claim / 100):
            return None  # the expected gain is still in the sequence: look for it
        power = conditional_power(logs, trend, budget=d.budget, margin=margin)
        if power < d.futility:
            ruled = f"rules out the expected {claim:+g}%" if claim is not None else "is all there is (no expected gain)"
            text = (
                f"futile: the always-valid sequence {_span(*cs)} {ruled}, and at the gain so far ({_pct(trend):+.1f}%) "
                f"the last look at {d.budget} pairs would clear +{probe.noise_pct:g}% with probability {power:.0%} "
                f"(conditional power at the spread measured)"
            )
            return self._stop(runs, "futile", text, probe, verdict="inconclusive")
        return None

    def _stop(
        self,
        runs: Sequence[BenchRun],
        by: StoppedBy,
        why: str,
        result: ABResult | None = None,
        *,
        verdict: str | None = None,
    ) -> Step:
        result = result if result is not None else self.analyse(runs)
        pairs_run = self.next_pair
        update: dict[str, object] = {"stopped_by": by, "stop_reason": why, "pairs_run": pairs_run}
        update["bench_runs"] = self.runs_measured
        if self.design.sequential:
            low, high = self._last
            if math.isfinite(low) and math.isfinite(high):
                update["cs_low"], update["cs_high"] = round(_pct(low), 3), round(_pct(high), 3)
            update["reasons"] = [f"sequential: stopped after {pairs_run} of at most {self.design.budget} pairs — {why}"]
            update["reasons"] += result.reasons
        if verdict is not None and verdict != result.verdict:
            update["verdict"] = verdict
            update["pairs_needed"] = None
        return Step("stop", stopped_by=by, reason=why, result=result.model_copy(update=update))


def drive(
    planner: Planner,
    measure: Callable[[int], list[BenchRun]],
    note: Callable[[Step, list[BenchRun]], None] = lambda step, runs: None,
) -> tuple[list[BenchRun], Step]:
    """Run an A/B to its verdict: `measure(pair)` runs one pair (both arms, in `pair_order`), `note(step, runs)`
    hears each step (a pair once measured; an outlier re-run, an extension or the stop before it happens)."""
    runs: list[BenchRun] = []
    while True:
        step = planner.next(runs)
        if step.action == "pair":
            runs += measure(step.pair)
            note(step, runs)
            continue
        note(step, runs)
        if step.action == "stop":
            return runs, step
        if step.action == "rerun":
            # The pair is measured again and its first measurement kept in the journal, not in the estimate.
            runs = [r for r in runs if r.pair != step.pair]
            runs += measure(step.pair)
