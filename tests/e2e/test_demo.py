"""The built-in demo end to end: real LangGraph + SQLite checkpointer, real subprocesses, cautious policy."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agent.journal.verify import verify
from tests.conftest import journal_events


def by_id(summary: dict) -> dict[int, dict]:
    return {o["id"]: o for o in summary["options"]}


@pytest.mark.xdist_group("demo")  # shares the once-made demo run
def test_demo_reaches_the_evidence_based_verdicts(demo_json):
    out = demo_json
    assert out["status"] == "finished" and out["pending_gate"] is None
    opts = by_id(out)

    one = opts[1]
    assert one["outcome"] == "no-go"
    assert any("requires expert parallelism (ep_size=1); decoder layers not wired for TBO" in x for x in one["reasons"])

    two = opts[2]
    assert two["outcome"] == "skipped" and two["verdict"] == "unsafe"
    assert any("WEDGE in" in x and "deadline" in x and "all-reduce" in x for x in two["reasons"]), two["reasons"]
    assert any(x.startswith("rollback verified") for x in two["reasons"]), two["reasons"]
    assert any("TP barrier" in x for x in two["reasons"])
    # The probe names the abort cascade as its hazard's scenario (reproduced_by): its wedges reproduce the hazard.
    reproduced = "hazard reproduced by its own stress scenario: TP barrier in the overlap path — stress abort-cascade"
    assert any(x.startswith(reproduced) for x in two["reasons"]), two["reasons"]
    assert 3.0 < two["gain_pct"] < 10.0

    ev = two["evidence"]
    # A sequential A/B: as many pairs as its verdict took (its ab.result says why it stopped), and the Wilcoxon
    # cross-check from 6 pairs on.
    (ab2,) = [e for e in journal_events(out["journal"]) if e["kind"] == "ab.result" and e["option"] == 2]
    assert ev["ab"]["pairs"] == len(ev["ab"]["ratios"]) == ab2["pairs_run"] >= 3 and ab2["stopped_by"] == "improved"
    assert (ev["ab"]["stopped_by"], ev["ab"]["pairs_run"]) == ("improved", ab2["pairs_run"])  # in the report too
    assert (ev["ab"]["wilcoxon_p"] is not None) is (ev["ab"]["pairs"] >= 6)
    assert [s["outcome"] for s in ev["stress"] if s["scenario"] == "abort-cascade"].count("wedge") >= 1
    assert all(s["artifact"].startswith("sha256-") for s in ev["stress"])

    three = opts[3]
    assert three["outcome"] == "kept" and three["verdict"] == "safe"
    assert 12.0 < three["gain_pct"] < 30.0
    low, high = three["ci"]
    assert low < three["gain_pct"] < high and low > 1.0

    goal = out["goal"]
    assert goal["target_pct"] == 20.0 and goal["estimated_pct"] == three["gain_pct"]
    # The goal is measured at the end: the final configuration against the start, its CI against the target.
    assert goal["measured"] and goal["pairs"] >= 5
    low, high = goal["ci"]
    assert low < goal["measured_pct"] < high and low > 10.0
    assert goal["verdict"] == ("met" if low > 20.0 else "not met" if high < 20.0 else "unclear")
    assert goal["met"] is {"met": True, "not met": False}.get(goal["verdict"])
    assert goal["summary"].startswith(f"measured {goal['measured_pct']:+.1f}% (95% CI")

    decided = {(g["kind"], g["option"]): g["by"] for g in out["gates"]}
    assert decided[("triage", None)] == "policy:proceed-with-feasible"
    assert decided[("safety", 2)] == "policy:skip-unsafe"
    assert decided[("safety", 3)] == "policy:keep-safe-win"

    journal = Path(out["journal"])
    assert verify(journal).ok
    events = journal_events(journal)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "session.started" and kinds[-1] == "session.finished"
    started = events[0]
    assert started["policy_name"] == "cautious" and "skip-unsafe" in started["policy_text"]
    assert next(e for e in events if e["kind"] == "rollback" and e["option"] == 2)["verified"] is True
    wedges = [e for e in events if e["kind"] == "stress.result" and e["outcome"] == "wedge"]
    assert wedges and all(e["option"] == 2 and e["killed"] for e in wedges)
    # Every command has a started and a finished record.
    assert kinds.count("command.started") == kinds.count("command.finished") > 50
    # The host really holds the kept option and not the rolled-back one.
    state = json.loads((journal.parent / "hosts" / "gpu-a" / "server.json").read_text())
    assert state["moe_occupancy"] == "tuned" and state["overlap_scheduler"] is False
    # The real SQLite checkpointer holds the thread.
    with sqlite3.connect(journal.parent / "checkpoints.sqlite") as conn:
        assert conn.execute("select count(*) from checkpoints").fetchone()[0] > 10


def test_demo_report_is_readable_and_listed(cli):
    r = cli("demo")
    assert r.code == 0, r.stderr
    for text in (
        "no-go",
        "skipped",
        "kept",
        "policy:skip-unsafe",
        "policy:keep-safe-win",
        "requires expert parallelism",
        "rollback verified",
    ):
        assert text in r.stdout, text
    # Progress went to stderr as plain lines (not a terminal here).
    # The budget is max_pairs (a sequential A/B stops when its verdict is in, and says so).
    assert "benchmark pair 1 of 10" in r.stderr and "A/B stopped after" in r.stderr and "WEDGE" in r.stderr
    rows = cli("sessions", "--json").json()
    assert len(rows) == 1 and rows[0]["status"] == "finished" and rows[0]["demo"] is True
