"""A benchmark run killed at its deadline is told apart as a wedge (silent, server healthy), saturated
(still printing) or dead (the server's health checks fail), from what the runner itself saw; each is its
own outcome in the journal, the gate facts and the assessment, and each makes the option unsafe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT, SIGNOFF

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stalls"


def test_wedge_saturated_and_dead_benchmark_runs_are_distinct_outcomes(tmp_path: Path) -> None:
    for name in ("bench.sh", "campaign.yaml", "policy.yaml"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    env = {**os.environ, "SIGNOFF_HOME": str(tmp_path / "home"), "USER": "tester"}
    p = subprocess.run(
        [*SIGNOFF, "run", str(tmp_path / "campaign.yaml"), "--policy", str(tmp_path / "policy.yaml"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    (journal,) = (tmp_path / "home" / "sessions").glob("*/journal.jsonl")
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    # 4: the server stops answering while its process is there (the campaign's `alive` check): hung, a wedge.
    expected = {1: "wedge", 2: "saturated", 3: "dead", 4: "wedge"}
    for option, kind in expected.items():
        runs = [e for e in events if e["kind"] == "bench.run" and e.get("option") == option and e["arm"] == "B"]
        assert runs and all(r["stall"] == kind and not r["valid"] for r in runs), runs
        assert all(f"{kind.upper()} — " in r["reason"] for r in runs)
        baseline = [e for e in events if e["kind"] == "bench.run" and e.get("option") == option and e["arm"] == "A"]
        assert baseline and all(r["valid"] and "stall" not in r for r in baseline)
        (gate,) = [
            e for e in events if e["kind"] == "gate.opened" and e["gate_kind"] == "safety" and e["option"] == option
        ]
        facts = gate["facts"]
        counts = {"wedge": facts["bench_wedges"], "saturated": facts["bench_saturated"], "dead": facts["bench_dead"]}
        assert counts == {k: (len(runs) if k == kind else 0) for k in counts}
        assert facts["verdict"] == "unsafe"
        (assessment,) = [e for e in events if e["kind"] == "assessment" and e["option"] == option]
        assert any(f"{len(runs)} {kind.upper()}" in r for r in assessment["reasons"])
    # The health check that told dead from wedged ran after the client was killed, and only for stalled runs.
    health = [e for e in events if e["kind"] == "command.started" and e["purpose"] == "health:benchmark"]
    assert {e["option"] for e in health} == {1, 2, 3, 4}
    # and the alive check only where the health check failed: the dead server and the hung one.
    alive = [e for e in events if e["kind"] == "command.started" and e["purpose"] == "health:benchmark:alive"]
    assert {e["option"] for e in alive} == {3, 4}
    reasons = {e["option"]: e["reason"] for e in events if e["kind"] == "bench.run" and e.get("stall")}
    assert "its process is gone" in reasons[3] and "while its process is still there" in reasons[4]
    assert [o["outcome"] for o in json.loads(p.stdout)["options"]] == ["skipped"] * 4
