"""`signoff check`'s expected duration (agent/run/expected.py): the expected plan's counts, each unit's
duration from the campaign's `typical_s`, an earlier session's journal, or the timeouts — and the worst case
never below it. The comparison with a real run of the demo is in tests/e2e/test_check.py."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent.models import Campaign
from agent.run.dryrun import estimate
from agent.run.expected import expected, measure

PLAIN: dict[str, Any] = {
    "name": "c",
    "goal": {"text": "faster"},
    "hosts": [{"name": "h", "transport": "local"}],
    "baseline": {"setup": [{"run": "init", "timeout": 100}], "health": [{"run": "health", "timeout": 10}]},
    "benchmark": {"run": "bench", "timeout": 300, "pairs": 5, "max_pairs": 8},
    "stress": [{"name": "burst", "run": "burst", "timeout": 120, "runs": 2}],
    "options": [
        {"id": 1, "title": "a", "apply": [{"run": "on a", "timeout": 40}], "revert": [{"run": "off a", "timeout": 40}]},
        {"id": 2, "title": "b", "apply": [{"run": "on b", "timeout": 40}], "revert": [{"run": "off b", "timeout": 40}]},
    ],
}


def _campaign(typical: bool) -> Campaign:
    data: dict[str, Any] = {**PLAIN}
    if typical:
        data["baseline"] = {
            "setup": [{"run": "init", "timeout": 100, "typical_s": 20}],
            "health": [{"run": "health", "timeout": 10, "typical_s": 1}],
        }
        data["benchmark"] = {**PLAIN["benchmark"], "typical_s": 30}
        data["stress"] = [{**PLAIN["stress"][0], "typical_s": 10}]
        data["options"] = [
            {
                **o,
                "apply": [{"run": f"on {o['title']}", "timeout": 40, "typical_s": 4}],
                "revert": [{"run": f"off {o['title']}", "timeout": 40, "typical_s": 2}],
            }
            for o in PLAIN["options"]
        ]
    return Campaign.model_validate(data)


def test_declared_durations_give_the_expected_plan_counted_by_hand() -> None:
    e = expected(_campaign(typical=True))
    assert {d.unit: d.source for d in e.durations} == {
        "setup": "declared",
        "benchmark run": "declared",
        "A/B run": "declared",
        "investigation": "assumed",  # no probes: nothing to declare
        "apply": "declared",
        "stress": "declared",
        "rollback": "declared",
    }
    # setup 21 s + 3 known-good runs; per option: apply 4 s, 10 A/B runs of 30 s + a quarter of apply and of
    # revert, 2 stress runs of 10 s, a rollback of revert 2 s + health 1 s + 3 verify runs
    per_ab_run = 30 + (4 + 2) / 4
    assert e.by_phase_s == {
        "setup": 21 + 3 * 30,
        "investigation": 0,
        "benchmark": 2 * (4 + 10 * per_ab_run),
        "stress": 2 * 20,
        "rollback": 2 * (2 + 1 + 3 * 30),
    }
    assert e.total_s == pytest.approx(sum(e.by_phase_s.values()))
    assert e.benchmark_runs == 3 + 2 * (10 + 3)
    assert e.session is None and e.assumes


def test_without_typical_s_or_a_session_it_assumes_the_timeouts_and_says_so() -> None:
    c = _campaign(typical=False)
    e = estimate(c)
    units = {d.unit: d for d in e.expected_durations}
    assert units["benchmark run"].source == "assumed" and units["benchmark run"].seconds == 300
    assert "timeouts: benchmark 300 s" in units["benchmark run"].detail
    assert "timeouts: baseline.setup[0] 100 s, baseline.health[0] 10 s" in units["setup"].detail
    # Counted with `pairs` and no settling, it is below the worst case even at every timeout.
    assert e.expected_s is not None and e.expected_s < e.wall_s_max
    assert e.benchmark_runs_expected is not None and e.benchmark_runs_min <= e.benchmark_runs_expected
    assert e.benchmark_runs_expected <= e.benchmark_runs_max


def _at(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    return f"2026-01-01T10:{int(minutes):02d}:{rest:06.3f}Z"


def _journal() -> list[Any]:
    """A session's journal reduced to what the spans read: each event at a second offset."""
    lines: list[tuple[float, dict[str, Any]]] = [
        (0, {"kind": "session.started"}),
        (5, {"kind": "command.finished", "purpose": "setup"}),
        (8, {"kind": "phase", "phase": "baseline"}),
        (11, {"kind": "bench.run", "purpose": "baseline"}),
        (14, {"kind": "bench.run", "purpose": "baseline"}),
        (15, {"kind": "decision", "gate_kind": "plan"}),
        (15.5, {"kind": "subagent.started", "option": 1}),
        (17, {"kind": "finding", "option": 1}),
        (19, {"kind": "finding", "option": 2}),
        (20, {"kind": "phase", "phase": "apply", "option": 1}),
        (21, {"kind": "phase", "phase": "benchmark", "option": 1}),
        (24, {"kind": "command.finished", "purpose": "toggle"}),  # a command is inside a unit, not a mark
        (25, {"kind": "bench.run", "purpose": "ab", "option": 1}),
        (29, {"kind": "bench.run", "purpose": "ab", "option": 1}),
        (30, {"kind": "phase", "phase": "stress", "option": 1}),
        (37, {"kind": "assessment", "option": 1}),
        (40, {"kind": "phase", "phase": "rollback", "option": 1}),
        (46, {"kind": "rollback", "option": 1}),
    ]
    events: list[Any] = [{**e, "ts": _at(t)} for t, e in lines]
    # Untrusted lines are passed over: no timestamp, a timestamp that is not one, not an object, a span below zero.
    events += [{"kind": "bench.run", "purpose": "ab"}, {"kind": "bench.run", "ts": "yesterday"}, ["x"], 7]
    events += [{"kind": "rollback", "option": 1, "ts": _at(1)}]
    return events


def test_an_earlier_session_is_measured_in_the_spans_its_journal_gives() -> None:
    m = measure(_journal(), "S1", same_campaign=True)
    assert m.units == {
        "setup": (8.0, 1),
        "benchmark run": (3.0, 2),
        "investigation": (2.0, 2),  # 4 s from the plan's decision to the last finding, over 2 options
        "apply": (1.0, 1),
        "A/B run": (4.0, 2),  # the toggle before a run is part of it
        "stress": (7.0, 1),
        "rollback": (6.0, 1),
    }


def test_measured_units_fill_in_where_the_campaign_declares_nothing() -> None:
    m = measure(_journal(), "S1", same_campaign=False)
    e = expected(_campaign(typical=False), m)
    units = {d.unit: d for d in e.durations}
    assert units["A/B run"].source == "measured" and units["A/B run"].seconds == 4.0
    assert units["A/B run"].detail == "median of 2 in session S1 (an earlier version of this campaign file)"
    assert e.session == "S1" and e.same_campaign is False
    assert e.by_phase_s["benchmark"] == 2 * (1.0 + 10 * 4.0)
    # A declared unit is the campaign's word, whatever was measured before.
    declared = expected(_campaign(typical=True), m)
    assert {d.unit: d.source for d in declared.durations}["A/B run"] == "declared"


def test_a_typical_duration_the_timeout_would_cut_short_is_refused() -> None:
    bad = {**PLAIN, "benchmark": {**PLAIN["benchmark"], "typical_s": 301}}
    with pytest.raises(ValidationError, match=r"typical_s \(301\) is above what the timeout allows \(300 s\)"):
        Campaign.model_validate(bad)
    with_restart = {**PLAIN, "benchmark": {**PLAIN["benchmark"], "typical_s": 301, "restart": "restart"}}
    assert Campaign.model_validate(with_restart).benchmark.typical_s == 301  # restart and run: up to 600 s
