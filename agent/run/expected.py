"""How long a campaign is expected to take, beside the worst case `signoff check` counts from timeouts.

A run is counted in units — setup, a benchmark run outside the A/B, an A/B run (with its share of toggling
the option), and per option its investigation, apply, stress tests and rollback — each with a duration from
the best source there is:

- **declared**: every command of the unit says how long it usually takes (`typical_s`);
- **measured**: the newest session of the same campaign (by name) in the store measured it: the median span
  the journal's timestamps give that unit, so connections, journaling and parallel hosts are in it and gate
  waits are not;
- **assumed**: the `typical_s` of the unit's commands that have one, and the timeout of those that have none.

The counts are those of the expected plan, not the longest one: `pairs` without an extension, every option
feasible, measured and rolled back once, the calibration and known-good runs at setup, no settling run and no
time waiting for a person (ASSUMES, said with every figure). Nothing here touches a host.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.errors import SignoffError
from agent.journal.view import timestamp
from agent.models import STRESS_CHECK_TIMEOUT_S, Campaign, CommandSpec, StressSpec

Source = Literal["declared", "measured", "assumed"]
STRENGTH: dict[str, int] = {"assumed": 0, "measured": 1, "declared": 2}
# Benchmark runs outside an A/B (no toggle before them) and inside one.
SINGLE_PURPOSES = frozenset({"baseline", "calibrate", "verify", "post-stress"})
AB_PURPOSES = frozenset({"ab", "search", None})  # None: journals from before runs had a purpose
CANDIDATES = 20  # newest sessions of the campaign looked at for one that measured a benchmark run
SHOWN_PARTS = 3  # parts named in a unit's detail; the rest are counted
ASSUMES = [
    "every option feasible, measured at `pairs` without an extension and rolled back once",
    "no settling run after a rollback, nor a paired one (a rollback read slower than the baseline)",
    "the policy answers every gate (no time waiting for a person)",
]


class Duration(BaseModel):
    """One unit of the expected plan: its duration and where that came from."""

    unit: str  # setup, benchmark run, A/B run, investigation, apply, stress, rollback
    seconds: float
    source: Source
    detail: str  # e.g. "median of 26 in session X", "typical_s of benchmark", "timeouts: options[0].apply[0] 60 s"


class Measured(BaseModel):
    """Unit durations read from one earlier session of the campaign."""

    session: str
    same_campaign: bool  # its campaign file is this one, byte for byte
    units: dict[str, tuple[float, int]] = Field(default_factory=dict)  # unit → (median seconds, spans measured)


class Expected(BaseModel):
    total_s: float
    by_phase_s: dict[str, float]
    benchmark_runs: int
    durations: list[Duration]
    session: str | None = None  # the session the measured units come from
    same_campaign: bool | None = None
    assumes: list[str] = Field(default_factory=lambda: list(ASSUMES))
    note: str | None = None  # why no earlier session was used


@dataclass(frozen=True)
class _Part:
    where: str  # e.g. options[0].apply[0]
    typical_s: float | None
    timeout: float
    weight: float  # times per unit

    @property
    def seconds(self) -> float:
        return self.weight * (self.typical_s if self.typical_s is not None else self.timeout)


def _parts(where: str, specs: Iterable[CommandSpec], weight: float = 1.0) -> list[_Part]:
    return [_Part(f"{where}[{i}]", s.typical_s, s.timeout, weight) for i, s in enumerate(specs)]


def expected(c: Campaign, measured: Measured | None = None, note: str | None = None) -> Expected:
    b, rb = c.benchmark, c.rollback
    n = len(c.options)
    per_option = 1 / n if n else 0.0
    levels = len(b.sweep.values) if b.sweep else 1
    search = b.sweep.search if b.sweep else None
    setup_runs = 2 * b.calibrate_pairs + rb.verify_runs
    # A capacity search per arm: a bisection usually takes every step it is given.
    ab_runs = 2 * b.pairs * levels + (2 * search.steps * search.runs if search else 0)

    def resolve(unit: str, parts: list[_Part], runs: float = 0.0, run: Duration | None = None) -> Duration:
        return _resolve(unit, parts, measured, runs, run)

    if b.typical_s is not None or (b.restart is None and b.warmup is None):
        bench_parts = [_Part("benchmark", b.typical_s, b.timeout * _bench_steps(c), 1.0)]
    else:  # undeclared: each step to the benchmark's timeout, as it runs each of them
        steps = [name for name in ("restart", "warmup") if getattr(b, name) is not None] + ["run"]
        bench_parts = [_Part(f"benchmark.{s}" if s != "run" else "benchmark", None, b.timeout, 1.0) for s in steps]
    bench = resolve("benchmark run", bench_parts)
    # One toggle per pair (AB BA AB …), apply and revert in turn: a quarter of each per A/B run.
    toggle = [
        p
        for i, o in enumerate(c.options)
        for p in _parts(f"options[{i}].apply", o.apply, per_option / 4)
        + _parts(f"options[{i}].revert", o.revert, per_option / 4)
    ]
    ab = resolve("A/B run", [*bench_parts, *toggle])
    setup = resolve("setup", _parts("baseline.setup", c.baseline.setup) + _parts("baseline.health", c.baseline.health))
    probes = [p for i, o in enumerate(c.options) for p in _parts(f"options[{i}].probes", o.probes, per_option)]
    investigation = resolve("investigation", probes)
    apply = resolve(
        "apply", [p for i, o in enumerate(c.options) for p in _parts(f"options[{i}].apply", o.apply, per_option)]
    )
    stress_parts = [_Part(f"stress[{i}]", s.typical_s, _stress_bound(s), float(s.runs)) for i, s in enumerate(c.stress)]
    # The post-stress check: a pair of runs per configured run, the option toggled between them as in the A/B.
    stress = resolve("stress", stress_parts, 2 * b.post_stress_runs, ab)
    checks = [
        _Part(f"options[{i}].check", o.check.typical_s, o.check.timeout, per_option)
        for i, o in enumerate(c.options)
        if o.check
    ]
    rollback = resolve(
        "rollback",
        [
            *[p for i, o in enumerate(c.options) for p in _parts(f"options[{i}].revert", o.revert, per_option)],
            *_parts("baseline.health", c.baseline.health),
            *checks,
        ],
        rb.verify_runs,
        bench,
    )
    phases = {
        "setup": setup.seconds + setup_runs * bench.seconds,
        "investigation": n * investigation.seconds,
        "benchmark": n * (apply.seconds + ab_runs * ab.seconds),
        "stress": n * stress.seconds,
        "rollback": n * rollback.seconds,
    }
    return Expected(
        total_s=round(sum(phases.values()), 1),
        by_phase_s={k: round(v, 1) for k, v in phases.items()},
        benchmark_runs=setup_runs + n * (ab_runs + 2 * b.post_stress_runs + rb.verify_runs),
        durations=[setup, bench, ab, investigation, apply, stress, rollback],
        session=measured.session if measured else None,
        same_campaign=measured.same_campaign if measured else None,
        note=note,
    )


def _bench_steps(c: Campaign) -> int:
    b = c.benchmark
    return 1 + (b.restart is not None) + (b.warmup is not None)


def _stress_bound(s: StressSpec) -> float:
    return s.timeout + (STRESS_CHECK_TIMEOUT_S if s.check else 0.0)


def _resolve(unit: str, parts: list[_Part], measured: Measured | None, runs: float, run: Duration | None) -> Duration:
    """A unit's duration: declared when each of its commands (and the benchmark runs in it) is, else measured
    when an earlier session measured it, else its commands' `typical_s` or timeout."""
    own = sum(p.seconds for p in parts)
    inner = runs * run.seconds if run is not None else 0.0
    declared = all(p.typical_s is not None for p in parts) and (
        not runs or (run is not None and run.source == "declared")
    )
    if declared and (parts or runs):
        return Duration(unit=unit, seconds=round(own + inner, 3), source="declared", detail=_said(parts, runs, run))
    if measured is not None and unit in measured.units:
        seconds, spans = measured.units[unit]
        detail = f"median of {spans} in session {measured.session}"
        if not measured.same_campaign:
            detail += " (an earlier version of this campaign file)"
        return Duration(unit=unit, seconds=round(seconds, 3), source="measured", detail=detail)
    if not parts and not runs:
        return Duration(unit=unit, seconds=0.0, source="assumed", detail="no commands")
    weakest: Source = "assumed" if any(p.typical_s is None for p in parts) else "declared"
    if run is not None and runs and STRENGTH[run.source] < STRENGTH[weakest]:
        weakest = run.source
    return Duration(unit=unit, seconds=round(own + inner, 3), source=weakest, detail=_said(parts, runs, run))


def _said(parts: list[_Part], runs: float, run: Duration | None) -> str:
    """Which commands gave their `typical_s` and which their timeout, and the benchmark runs inside."""
    out = []
    for label, chosen in (
        ("typical_s", [p for p in parts if p.typical_s is not None]),
        ("timeouts", [p for p in parts if p.typical_s is None]),
    ):
        if chosen:
            shown = ", ".join(
                f"{p.where} {_seconds(p.typical_s if p.typical_s is not None else p.timeout)}"
                for p in chosen[:SHOWN_PARTS]
            )
            more = f" and {len(chosen) - SHOWN_PARTS} more" if len(chosen) > SHOWN_PARTS else ""
            out.append(f"{label}: {shown}{more}")
    if runs and run is not None:
        out.append(f"{runs:g} benchmark run(s) of {_seconds(run.seconds)} ({run.source})")
    return "; ".join(out)


def _seconds(value: float) -> str:
    return f"{value:.3g} s" if value < 10 else f"{value:.0f} s"


# -- reading an earlier session


def measure(events: Iterable[dict[str, Any]], session: str, same_campaign: bool) -> Measured:
    """The units' spans in one session's journal (untrusted data: an event without a usable timestamp or
    with a span below zero is passed over)."""
    spans: dict[str, list[float]] = {}
    started: datetime | None = None
    last_mark: datetime | None = None  # the last event that is not a command: where a unit's work began
    phase_at: dict[tuple[str, Any], datetime] = {}  # (phase, option) → when it began
    investigate_from: datetime | None = None
    findings: list[datetime] = []

    def span(unit: str, start: datetime | None, end: datetime | None) -> None:
        if start is not None and end is not None and (s := (end - start).total_seconds()) >= 0:
            spans.setdefault(unit, []).append(s)

    for e in events:
        if not isinstance(e, dict):
            continue
        ts, kind = timestamp(e.get("ts")), e.get("kind")
        if ts is None or not isinstance(kind, str):
            continue
        option = e.get("option")
        if kind == "session.started":
            started = ts
        elif kind == "phase":
            phase = e.get("phase")
            if phase == "baseline":
                span("setup", started, ts)
            elif phase == "benchmark":
                span("apply", phase_at.get(("apply", option)), ts)
            if isinstance(phase, str):
                phase_at[(phase, option)] = ts
        elif kind == "bench.run":
            purpose = e.get("purpose")
            unit = "benchmark run" if purpose in SINGLE_PURPOSES else "A/B run" if purpose in AB_PURPOSES else None
            if unit:
                span(unit, last_mark, ts)
        elif kind == "subagent.started" and investigate_from is None:
            investigate_from = last_mark
        elif kind == "finding":
            findings.append(ts)
        elif kind == "assessment":
            span("stress", phase_at.pop(("stress", option), None), ts)
        elif kind == "rollback":
            span("rollback", phase_at.pop(("rollback", option), None), ts)
        if not kind.startswith(("command.", "file.", "mutation.")):
            last_mark = ts
    if investigate_from is not None and findings:
        whole = (max(findings) - investigate_from).total_seconds()
        if whole >= 0:
            spans["investigation"] = [whole / len(findings)] * len(findings)
    units = {unit: (statistics.median(values), len(values)) for unit, values in spans.items() if values}
    return Measured(session=session, same_campaign=same_campaign, units=units)


def previous(store: Any, name: str, sha256: str) -> tuple[Measured | None, str | None]:
    """The newest session of the campaign called `name` that measured a benchmark run, preferring one whose
    campaign file is this one; with a note when none could be read."""
    rows = [r for r in store.list_sessions() if r.get("campaign_name") == name and isinstance(r.get("id"), str)]
    if not rows:
        return None, None
    rows.sort(key=lambda r: str(r.get("created") or ""), reverse=True)
    found: list[Measured] = []
    for row in rows[:CANDIDATES]:
        try:
            session = store.session(row["id"])
            try:
                same = session.meta().get("campaign_sha256") == sha256
                m = measure(session.events(), row["id"], same)
            finally:
                session.close()
        except (OSError, ValueError, SignoffError):  # an unreadable session is passed over, as `sessions` does
            continue
        if "benchmark run" in m.units or "A/B run" in m.units:
            if m.same_campaign:
                return m, None
            found.append(m)
    if found:
        return found[0], None
    return None, f"no session of campaign {name} measured a benchmark run"
