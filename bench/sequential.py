"""Sequential against fixed-N A/B tests, by simulation (not a test): error rates and runs per verdict.

Thousands of synthetic A/Bs go through the same decision loop the benchmark node uses (`tools.sequential.Planner`
driven by `tools.sequential.drive`, judged by `tools.abstats.analyse`), once with `sequential: false` (fixed-N:
`pairs` pairs, lone outlier pairs measured again, one extension to `max_pairs` when inconclusive) and once with
the sequential test, on the *same* simulated runs (common random numbers: run k of an A/B has the same noise,
drift and outlier in both, so the two are compared pair-wise).

The simulated target: throughput 1000 × e^(true effect on arm B) × e^(drift · run index) × e^(N(0, noise)), and one
run in ten (each run with probability 0.1) read 30 % low (a neighbour's hiccup). True effects 0, ±2 %, ±5 %,
+20 %; noise per run 1, 2, 3, 5, 10, 20 %; drift per run uniform in ±0.5 % (linear over the A/B). Each option
claims `expected_gain_pct` 10 (the demo's options claim 6–18 %). Campaign settings: the demo's (pairs 6,
max_pairs 10, noise_pct 1, τ = 1 %), and a grid (pairs/max_pairs 4/8 and 10/20; noise_pct 2; no claimed gain).

Definitions (a verdict "improved" keeps the option):
- false keep rate: verdict improved when the true effect ≤ 0;
- false discard rate: verdict not improved when the true effect is ≥ +5 % (well beyond the 1 % noise band;
  +2 % is printed on its own line, neither design can usually tell it at these noises within 10 pairs);
- runs per verdict: benchmark runs, both arms, outlier re-runs included.

Targets (met/not met in `make bench`): sequential uses ≥ 30 % fewer runs than fixed-N; its false-keep rate is
≤ 5 %; its false-discard rate is no higher than fixed-N's within the simulation's error — the paired difference
(sequential − fixed-N, the same runs) is at most 1.96 standard errors above zero. Seeded: the same figures every
run. SEQ_SIMS sets the A/Bs per cell (default 80: 6 effects × 6 noises × 80 = 2 880 A/Bs per design and setting).
"""

from __future__ import annotations

import math
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from table import record  # noqa: E402

from tools.abstats import ABResult, BenchRun, analyse, pair_order  # noqa: E402
from tools.sequential import Design, Planner, drive  # noqa: E402

EFFECTS = (-5.0, -2.0, 0.0, 2.0, 5.0, 20.0)
NOISES = (1.0, 2.0, 3.0, 5.0, 10.0, 20.0)
SIMS = int(os.environ.get("SEQ_SIMS", "80"))
OUTLIER_P, OUTLIER_FACTOR = 0.1, 0.7
DRIFT_PCT = 0.5
CLAIM = 10.0


@dataclass(frozen=True)
class Setting:
    name: str
    pairs: int = 6
    max_pairs: int = 10
    noise_pct: float = 1.0
    claim: float | None = CLAIM


SETTINGS = [
    Setting("demo (pairs 6, max 10, noise_pct 1, claim +10%)"),
    Setting("pairs 4, max 8", pairs=4, max_pairs=8),
    Setting("pairs 10, max 20", pairs=10, max_pairs=20),
    Setting("noise_pct 2", noise_pct=2.0),
    Setting("no expected gain", claim=None),
]


class Target:
    """One simulated A/B's runs: run k (in the order they are asked for) has its own noise, drift and outlier."""

    def __init__(self, effect_pct: float, noise_pct: float, seed: int) -> None:
        rng = random.Random(seed)
        self.effect = math.log1p(effect_pct / 100)
        self.drift = rng.uniform(-DRIFT_PCT, DRIFT_PCT) / 100
        sd = math.log1p(noise_pct / 100)
        self.stream = [(rng.gauss(0.0, sd), rng.random() < OUTLIER_P) for _ in range(64)]
        self.k = 0

    def measure(self, pair: int) -> list[BenchRun]:
        out = []
        for arm in pair_order(pair):
            noise, outlier = self.stream[self.k]
            log = math.log(1000.0) + (self.effect if arm == "B" else 0.0) + self.drift * self.k + noise
            value = math.exp(log) * (OUTLIER_FACTOR if outlier else 1.0)
            out.append(BenchRun(pair=pair, arm=arm, value=value, valid=True))
            self.k += 1
        return out


def one(setting: Setting, effect: float, noise: float, seed: int, *, sequential: bool) -> tuple[str, int]:
    """(verdict, benchmark runs) of one A/B."""
    design = Design(pairs=setting.pairs, max_pairs=setting.max_pairs, sequential=sequential)

    def judge(runs: Sequence[BenchRun]) -> ABResult:
        return analyse(
            runs,
            metric="output_tok_s",
            min_pairs=design.first_look if sequential else min(5, setting.pairs),
            noise_pct=setting.noise_pct,
            max_pairs=setting.max_pairs,
            expected_pct=setting.claim,
        )

    target = Target(effect, noise, seed)
    _, step = drive(Planner(design, judge), target.measure)
    assert step.result is not None
    return step.result.verdict, target.k


@dataclass
class Tally:
    keep: list[int]  # per A/B: 1 when improved
    runs: list[int]


def simulate(setting: Setting) -> dict[tuple[bool, float, float], Tally]:
    out: dict[tuple[bool, float, float], Tally] = {}
    for e_i, effect in enumerate(EFFECTS):
        for n_i, noise in enumerate(NOISES):
            for sequential in (False, True):
                tally = Tally([], [])
                for s in range(SIMS):
                    verdict, runs = one(setting, effect, noise, 1_000_003 * e_i + 1009 * n_i + s, sequential=sequential)
                    tally.keep.append(verdict == "improved")
                    tally.runs.append(runs)
                out[(sequential, effect, noise)] = tally
    return out


def rate(tallies: dict[tuple[bool, float, float], Tally], sequential: bool, effects: Sequence[float]) -> list[int]:
    return [k for (s, e, _), t in tallies.items() if s == sequential and e in effects for k in t.keep]


def paired_diff(a: list[int], b: list[int]) -> tuple[float, float]:
    """Mean of b − a over the same A/Bs, and its standard error."""
    d = [y - x for x, y in zip(a, b, strict=True)]
    return statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))


def report(setting: Setting, tallies: dict[tuple[bool, float, float], Tally], *, headline: bool) -> None:
    print(f"\n-- {setting.name}: {SIMS} A/Bs per cell, {len(EFFECTS) * len(NOISES) * SIMS} per design")
    print("   effect  noise   fixed: improved  runs   sequential: improved  runs")
    for effect in EFFECTS:
        for noise in NOISES:
            f, s = tallies[(False, effect, noise)], tallies[(True, effect, noise)]
            print(
                f"   {effect:+5.0f}%  {noise:4.0f}%   {statistics.fmean(f.keep):14.1%}  {statistics.fmean(f.runs):5.1f}"
                f"   {statistics.fmean(s.keep):19.1%}  {statistics.fmean(s.runs):5.1f}"
            )
    nulls, wins = [e for e in EFFECTS if e <= 0], [e for e in EFFECTS if e >= 5]
    fixed_runs = statistics.fmean(r for (s, _, _), t in tallies.items() if not s for r in t.runs)
    seq_runs = statistics.fmean(r for (s, _, _), t in tallies.items() if s for r in t.runs)
    saving = 1 - seq_runs / fixed_runs
    fk_fixed, fk_seq = statistics.fmean(rate(tallies, False, nulls)), statistics.fmean(rate(tallies, True, nulls))
    fd_fixed_l = [1 - k for k in rate(tallies, False, wins)]
    fd_seq_l = [1 - k for k in rate(tallies, True, wins)]
    fd_fixed, fd_seq = statistics.fmean(fd_fixed_l), statistics.fmean(fd_seq_l)
    diff, se = paired_diff(fd_fixed_l, fd_seq_l)
    two = [1 - k for k in rate(tallies, True, [2.0])], [1 - k for k in rate(tallies, False, [2.0])]
    print(f"   runs per verdict: fixed-N {fixed_runs:.1f}, sequential {seq_runs:.1f} ({saving:.0%} fewer)")
    print(f"   false keep (improved at a true effect ≤ 0): fixed-N {fk_fixed:.2%}, sequential {fk_seq:.2%}")
    print(
        f"   false discard (not improved at ≥ +5%): fixed-N {fd_fixed:.1%}, sequential {fd_seq:.1%} "
        f"(difference {diff:+.2%} ± {se:.2%} SE, paired)"
    )
    print(f"   not improved at +2%: fixed-N {statistics.fmean(two[1]):.1%}, sequential {statistics.fmean(two[0]):.1%}")
    tag = "demo settings" if headline else f"grid: {setting.name}"
    record(
        f"sequential A/B runs per verdict ({tag})",
        f"{seq_runs:.1f} runs",
        f"fixed-N {fixed_runs:.1f} runs",
        seq_runs / fixed_runs,
        "≥ 30% fewer",
        saving >= 0.30,
    )
    record(f"sequential false keep ({tag})", f"{fk_seq:.2%}", f"fixed-N {fk_fixed:.2%}", None, "≤ 5%", fk_seq <= 0.05)
    record(
        f"sequential false discard, ≥ +5% ({tag})",
        f"{fd_seq:.1%}",
        f"fixed-N {fd_fixed:.1%}",
        None,
        "≤ fixed-N + 1.96 SE",
        diff <= 1.96 * se,
    )


def main() -> None:
    started = time.perf_counter()
    only = os.environ.get("SEQ_SETTINGS")
    for i, setting in enumerate(SETTINGS):
        if only and str(i) not in only.split(","):
            continue
        report(setting, simulate(setting), headline=i == 0)
    print(f"\n{time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
