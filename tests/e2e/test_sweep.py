"""A load sweep end to end on the simulated decode server (step = 18 ms + 1.05 ms × concurrency): the A/B
at each level with the command rendered for it, each arm's SLO capacity found by a bounded search, the
step-time model fitted from the runs, the gate facts a policy sees, and wedge/saturated told apart in the
stress outcomes — through the real CLI, checkpointer and journal."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DEMO_DIR, ROOT, SIGNOFF, fast

# One session serves every test here: on one worker, so that it is made once.
pytestmark = pytest.mark.xdist_group("sweep-session")
SWEEP = DEMO_DIR / "sweep.yaml"
STEPS = 5


def fast_sweep(text: str) -> str:
    text = (
        fast(text).replace("--wall 0.1", "--wall 0.02").replace("pairs: 5\n  max_pairs: 6", "pairs: 4\n  max_pairs: 4")
    )
    # 110 ms rather than the demo's 105: every swept level then sits ≥ 8 % from the bound in both arms, so
    # 4 pairs of 2 %-noise runs judge each one (the demo's closer margins may fairly come out `unclear`).
    text = text.replace("slo: p99_tpot_ms <= 105", "slo: p99_tpot_ms <= 110")
    return text.replace("steps: 6, runs: 3", f"steps: {STEPS}, runs: 3")


@pytest.fixture(scope="module")
def sweep_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    home = tmp_path_factory.mktemp("sweep")
    campaign = DEMO_DIR / f".test-sweep-{os.getpid()}.yaml"
    text = fast_sweep(SWEEP.read_text())
    assert "--wall 0.02" in text and "pairs: 4" in text and f"steps: {STEPS}" in text
    campaign.write_text(text)
    try:
        env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
        p = subprocess.run(
            [*SIGNOFF, "run", str(campaign), "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=240
        )
    finally:
        campaign.unlink(missing_ok=True)
    assert p.returncode == 0, p.stderr
    (journal,) = Path(home, "sessions").glob("*/journal.jsonl")
    return json.loads(p.stdout), [json.loads(line) for line in journal.read_text().splitlines()]


def _of(events: list[dict[str, Any]], kind: str, option: int | None = None) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind and (option is None or e.get("option") == option)]


def test_every_level_is_an_interleaved_ab_with_its_own_command_and_verdict(sweep_session) -> None:
    _, events = sweep_session
    (result,) = _of(events, "sweep.result", 3)
    assert [lv["level"] for lv in result["levels"]] == [30, 60, 90]
    # Tuned occupancy shortens every step by 17 %: a gain at every load, each level judged on its own pairs.
    assert all(lv["verdict"] == "improved" and lv["pairs"] >= 4 for lv in result["levels"])
    for level in (30, 60, 90):
        runs = [e for e in _of(events, "bench.run", 3) if e.get("level") == level and e["purpose"] == "ab"]
        assert {r["arm"] for r in runs} == {"A", "B"} and len(runs) >= 8
    commands = [e["command"] for e in _of(events, "command.started", 3) if e["purpose"].startswith("bench:")]
    for level in (30, 60, 90):
        assert any(f"--concurrency {level} " in c for c in commands), level
    assert not any("{{concurrency}}" in c for c in commands)
    # Outside the sweep (setup's baseline, rollback checks) the variable takes the default level.
    setup = [e["command"] for e in events if e["kind"] == "command.started" and e["purpose"] == "bench:A"]
    assert setup and "--concurrency 90 " in setup[0]


def test_capacity_moves_with_the_option_and_the_goal_is_judged_where_the_baseline_meets_the_slo(sweep_session):
    _, events = sweep_session
    (result,) = _of(events, "sweep.result", 3)
    caps = result["capacity"]
    # Truth: p99 TPOT ≈ 1.07 × step; ≤ 110 ms holds to c ≈ 80 on the baseline and c ≈ 101 with the option.
    # A capacity is claimed only where the evidence says the SLO holds (an unclear probe counts against it),
    # so it never overshoots the truth, and a few probes already show the knee moving.
    assert result["capacity_source"] == "search"
    assert 44 <= caps["A"] <= 80 and 72 <= caps["B"] <= 101 and caps["B"] > caps["A"]
    assert result["capacity_gain_pct"] == pytest.approx((caps["B"] / caps["A"] - 1) * 100, abs=0.01)
    level90 = result["levels"][2]
    assert level90["arms"]["A"]["slo"] == "fails" and level90["arms"]["A"]["goodput"] == 0
    assert level90["arms"]["B"]["slo"] == "meets" and level90["arms"]["B"]["goodput"] > 0
    assert result["level"] == 60  # the highest swept level the baseline meets the SLO at
    (ab,) = _of(events, "ab.result", 3)
    assert ab["level"] == 60
    # The search is bounded and journaled: at most STEPS probes an arm, each leaving a consistent bracket.
    for arm in ("A", "B"):
        probes = [e for e in _of(events, "sweep.search", 3) if e["arm"] == arm]
        assert 2 <= len(probes) <= STEPS
        last = probes[-1]
        assert last["passing"] == caps[arm]
        assert last["failing"] is None or last["passing"] < last["failing"]
        assert all(e["why"] for e in probes)


def test_the_step_time_model_is_measured_not_typed(sweep_session) -> None:
    _, events = sweep_session
    (result,) = _of(events, "sweep.result", 3)
    base, option = result["fit"]["A"], result["fit"]["B"]
    assert base["metric"] == "mean_tpot" and base["levels"] == 3 and base["points"] >= 12
    # The seed's 18 ms + 1.05 ms per request, measured (simserve adds ~1 % to TPOT over the step).
    assert 14 <= base["intercept"] <= 23 and 0.98 <= base["slope"] <= 1.12
    assert base["slope_ci"][0] < base["slope"] < base["slope_ci"][1]
    assert option["slope"] < 0.92 * base["slope"]  # tuned occupancy: ≈ 17 % less per request
    (gate,) = [e for e in _of(events, "gate.opened", 3) if e["gate_kind"] == "safety"]
    facts = gate["facts"]
    assert facts["sweep_levels"] == 3 and facts["levels_improved"] == 3 and facts["levels_regressed"] == 0
    assert facts["level"] == 60 and facts["slo_met"] is True
    assert facts["has_fit"] is True
    assert facts["per_request_ms"] == pytest.approx(option["slope"])
    assert facts["base_fixed_ms"] == pytest.approx(base["intercept"])
    assert facts["has_capacity"] is True and facts["capacity_option"] > facts["capacity_base"]


def test_the_gate_and_report_say_what_the_sweep_found(sweep_session) -> None:
    out, events = sweep_session
    (assessment,) = _of(events, "assessment", 3)
    line = next(r for r in assessment["reasons"] if r.startswith("sweep: "))
    assert "concurrency=30: improved" in line and "judged at concurrency=60" in line
    assert "capacity within p99_tpot <= 110" in line and "mean_tpot = " in line
    assert any("highest level where the baseline meets the SLO" in r for r in assessment["reasons"])
    kept = [o for o in out["options"] if o["outcome"] == "kept"]
    assert [o["id"] for o in kept] == [3]
    # "kept by …" quotes the A/B it was kept on, and says at which level.
    assert any(
        r.startswith("kept by policy:keep-safe-win: output_tok_s at concurrency=60 +") for r in kept[0]["reasons"]
    )


def test_a_stress_run_past_its_deadline_is_a_wedge_or_saturated_from_what_the_runner_saw(sweep_session) -> None:
    _, events = sweep_session
    outcomes = {(e["scenario"], e["outcome"]) for e in _of(events, "stress.result", 2)}
    # The overlap scheduler drains bursts slowly (still printing at the deadline) and may hang on aborts.
    assert ("idle-busy-bursts", "saturated") in outcomes
    (gate,) = [e for e in _of(events, "gate.opened", 2) if e["gate_kind"] == "safety"]
    assert gate["facts"]["saturated_runs"] == 1 and gate["facts"]["verdict"] == "unsafe"
    assert {o for s, o in outcomes if s == "idle-busy-bursts"} == {"saturated"}
    assert all(o == "ok" for s, o in {(e["scenario"], e["outcome"]) for e in _of(events, "stress.result", 3)})


def test_a_rollback_compares_with_the_sweeps_readings_at_the_level_it_runs_at(sweep_session) -> None:
    """Judged at 60, verified at 90: the rollback's runs (at 90, the variable's value outside the sweep)
    must be compared with the baseline arm's readings at 90, not at 60 (≈ 8 % apart on this server)."""
    _, events = sweep_session
    (rollback,) = _of(events, "rollback", 2)
    assert rollback["verified"] is True
    assert abs(rollback["delta_recent_pct"]) < 6 and abs(rollback["arm_shift_pct"]) < 6, rollback["detail"]
    verify = [e["command"] for e in _of(events, "command.started", 2) if e["purpose"] == "bench:A"]
    assert verify and all("--concurrency 90 " in c for c in verify[-3:])
