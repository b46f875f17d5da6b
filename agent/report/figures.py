"""The two figures an option is reported with: one effect size and one noise figure, each saying what it is.

A session measures an option's noise and effect several ways: the A/B's paired differences (what its CI
rests on), the A/A calibration before anything changed, the per-run spread the rollback and post-stress
checks build their bands from, the smallest effect the pairs could have seen, a ratio of the arms' means.
Shown side by side as bare numbers they read as four "noise" figures and two "gains" that disagree. A
report (console, Markdown, HTML, `signoff report`) shows one of each, named:

- **effect**: the A/B's gain, the geometric mean of the paired ratios (what `tools.abstats.analyse`
  estimates and its CI is about), with its CI and test;
- **noise**: the spread of that same A/B's paired differences (log scale), from which its CI was made;
  only an option without two pairs of its own falls back on the A/A calibration, and says so.

The other figures stay where a reader asks for detail (`--json`, `signoff report --format json` under
`other_figures`, the replay timeline), each with its name. `plain` takes them out of the reasons and
evidence a report quotes: those texts were written by the run (and journaled) with their own figures, so
the phrases cut are the ones `tools.noise`, `agent.exec.verification`, `agent.nodes.stress` and the rule
brain's A/B summary write; tests feed each through the real writers.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from tools.noise import MIN_RUNS


def _pct(value: float) -> str:
    return f"{value:+.1f}%"


class Effect(BaseModel):
    """An option's one effect size: the A/B's gain (positive = better, whatever the metric's direction)."""

    pct: float
    ci: list[float] | None = None  # 95 % CI, %
    pairs: int
    metric: str
    higher_is_better: bool = True
    at: str | None = None  # a sweep's level it was judged at ("concurrency=90")
    verdict: str | None = None
    wilcoxon_p: float | None = None
    statistic: Literal["geometric mean of paired ratios"] = "geometric mean of paired ratios"
    label: str = ""  # what the figure is, in words (set by `effect_of`)

    def line(self) -> str:
        at = f" at {self.at}" if self.at else ""
        verdict = f" → {self.verdict}" if self.verdict else ""
        return f"gain {_pct(self.pct)} {self.metric}{at} ({self.label}){verdict}"


NoiseSource = Literal["ab", "calibration"]


class NoiseFigure(BaseModel):
    """An option's one noise figure: the SD of a pair's log ratio ×100 (the unit the CI and the A/A
    calibration share), and what it rests on."""

    pct: float
    source: NoiseSource
    pairs: int
    label: str = ""

    def line(self) -> str:
        return f"noise ±{self.pct:.1f}% ({self.label})"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _count(value: Any, *, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ratios(ab: Mapping[str, Any]) -> list[float]:
    raw = ab.get("ratios")
    if not isinstance(raw, list):
        return []
    return [r for x in raw if (r := _number(x)) is not None and r > 0]


def effect_of(ab: Mapping[str, Any] | None, *, var: str | None = None) -> Effect | None:
    """The effect an A/B result (`ab.result` fields, or the run's `ab` dict) reports; None without an
    estimate. `var`: a sweep's variable, when the result is the one judged at its level."""
    if not ab or (pct := _number(ab.get("effect_pct"))) is None:
        return None
    low, high = _number(ab.get("ci_low")), _number(ab.get("ci_high"))
    ci = [low, high] if low is not None and high is not None else None
    pairs = _count(ab.get("pairs"), default=len(_ratios(ab)))
    higher = ab.get("higher_is_better") is not False
    ratio = "option/baseline" if higher else "baseline/option, the metric lower is better"
    label = f"geometric mean of the {pairs} paired ratios {ratio}"
    if ci is not None:
        label += f"; 95% CI {_pct(ci[0])}…{_pct(ci[1])}, paired t"
    p = _number(ab.get("wilcoxon_p"))
    if p is not None:
        label += f"; Wilcoxon p={p:.3f}"
    level = _number(ab.get("level"))
    at = f"{var}={level:g}" if var and level is not None else None
    return Effect(
        pct=pct,
        ci=ci,
        pairs=pairs,
        metric=str(ab.get("metric") or "metric"),
        higher_is_better=higher,
        at=at,
        verdict=ab.get("verdict") if isinstance(ab.get("verdict"), str) else None,
        wilcoxon_p=p,
        label=label,
    )


def noise_figure(ab: Mapping[str, Any] | None, calibration: Mapping[str, Any] | None = None) -> NoiseFigure | None:
    """The option's noise: its own A/B's paired differences when it has two or more pairs, else the A/A
    calibration when there is one; None for an option never benchmarked (a no-go, say): nothing of it was
    measured, so no noise is its own."""
    if not ab:
        return None
    ratios = _ratios(ab)
    if len(ratios) >= 2:
        sd = statistics.stdev(math.log(r) for r in ratios) * 100
        label = f"sd of the {len(ratios)} paired differences in this A/B, log scale"
        return NoiseFigure(pct=round(sd, 3), source="ab", pairs=len(ratios), label=label + _thin(len(ratios)))
    cal = calibration or {}
    sd_cal = _number(cal.get("sd_pct"))
    if sd_cal is None:
        return None
    pairs = _count(cal.get("pairs"), default=0)
    label = f"A/A calibration, {pairs} pairs; its A/B has fewer than 2 pairs of its own"
    return NoiseFigure(pct=sd_cal, source="calibration", pairs=pairs, label=label + _thin(pairs))


def _thin(pairs: int) -> str:
    return f"; only {pairs} pairs, a rough estimate" if pairs < MIN_RUNS else ""


def other_figures(
    ab: Mapping[str, Any] | None,
    calibration: Mapping[str, Any] | None = None,
    rollback: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The figures a report leaves out of its summary, each named, for the detailed (JSON) report."""
    out: list[dict[str, Any]] = []

    def add(name: str, value: Any, label: str) -> None:
        if (number := _number(value)) is not None:
            out.append({"name": name, "value": number, "label": label})

    ab = ab or {}
    a_mean, b_mean = _number(ab.get("a_mean")), _number(ab.get("b_mean"))
    if a_mean and b_mean:
        ratio = b_mean / a_mean if ab.get("higher_is_better") is not False else a_mean / b_mean
        add(
            "ratio_of_means_pct",
            round((ratio - 1) * 100, 3),
            "the mean of the option's runs against the mean of the baseline's (not the reported gain, which is "
            "the geometric mean of the paired ratios)",
        )
    add(
        "detectable_pct",
        ab.get("detectable_pct"),
        "the smallest effect, either way, these pairs find 80% of the time at their noise",
    )
    add("noise_band_pct", ab.get("noise_pct"), "benchmark.noise_pct: a CI must clear ±this to call a change")
    add("equivalence_pct", ab.get("equivalence_pct"), "τ: a CI inside ±this is no effect")
    cal = calibration or {}
    add("calibration_sd_pct", cal.get("sd_pct"), f"A/A calibration before any change, {cal.get('pairs')} pairs")
    add("calibration_floor_pct", cal.get("noise_floor_pct"), "effects under this cannot be told from the A/A noise")
    rb = rollback or {}
    add("rollback_band_pct", rb.get("band_pct"), "how far the readings after the rollback could be from the baseline")
    noise: Mapping[str, Any] = rb["noise"] if isinstance(rb.get("noise"), Mapping) else {}
    what = "A/A calibration" if noise.get("source") == "calibration" else "spread of the run's readings"
    add("rollback_noise_per_run_pct", noise.get("sd_pct"), f"the rollback band's noise per run ({what})")
    return out


# ------------------------------------------------------------------ reasons without their own figures

_N = r"[+\-−]?\d+(?:\.\d+)?"
# tools.noise: Noise.describe() and Band.describe()
_NOISE = rf"(?:noise ±{_N}% per run \([^()]*\)|no noise estimate)"
_BAND = rf"±{_N}%(?: \(the floor\))? from {_NOISE}"
# The A/B summary (tools.abstats.ABResult.summary, and the rule brain's, which may add the sweep level).
_AB = rf"\S+(?: at \S+=\S+)? {_N}% \(95% CI [^()]*?, paired t, \d+ interleaved pairs(?:; Wilcoxon p=[\d.]+)?\) → \w+"
_CUTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(_AB), ""),
    (re.compile(rf"; it could have seen ±{_N}% or more"), ""),  # the rule brain: detectable_pct
    (re.compile(rf",? could have seen an effect of ±{_N}% or more \([^()]*\)"), ""),  # tools.abstats
    (re.compile(rf" \(band (?:{_BAND}|±{_N}%)\)"), ""),  # agent.exec.verification
    (re.compile(rf", band (?:{_BAND}|±{_N}% \(fixed\))"), ""),  # agent.nodes.stress, post-stress check
    (re.compile(rf"; only a slowdown beyond ±{_N}% could show"), "; only a larger slowdown could show"),
    (re.compile(rf"the option's own effect \({_N}%\)"), "the option's own effect"),
    # tools.paired and agent.exec.verification.judge_paired: the A/B's gain restated beside a paired check's
    (re.compile(rf" against the A/B's {_N}%\)"), " against the A/B's)"),
    (re.compile(_NOISE), "the noise"),  # any other place a per-run noise is restated
]


def plain(text: str) -> str:
    """A reason or a piece of evidence without the figures the report's one effect and one noise figure
    stand for (the A/B summary, what it could have seen, the bands and their per-run noise); "" when
    nothing else was said."""
    out = text
    for pattern, replacement in _CUTS:
        out = pattern.sub(replacement, out)
    if out == text:
        return text
    out = re.sub(r"(; )+", "; ", out)
    out = re.sub(r":\s*;\s*", ": ", out)
    return out.strip().strip(";:,").strip()
