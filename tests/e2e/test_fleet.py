"""A campaign over a fleet (issue 10): twelve hosts in one role, a per-role bound on how many run at
once, each host's own A/B beside the aggregate, and one gate answered for all hosts with an exception
("approve on all except gpu-07") — kept on eleven, rolled back and verified on the one it hurt."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.yamlsrc import YamlSource
from tests.conftest import DEMO, fast, journal_events

HOSTS = [f"gpu-{i:02d}" for i in range(1, 13)]
SLOW = "gpu-07"  # an older GPU generation: tuned occupancy makes its decode steps slower, not faster


def fleet_campaign(parallel: int = 3) -> str:
    data = YamlSource(DEMO, fast(DEMO.read_text())).data  # YAML 1.2 reading: `on:` stays a key
    data["name"] = "fleet-occupancy"
    data["hosts"] = [{"name": h, "transport": "local", "roles": ["decode"]} for h in HOSTS]
    data["fleet"] = {"parallel": {"decode": parallel}}
    data["baseline"]["setup"].append({"run": "{{simserve}} init --seed 3 --occupancy-effect 1.1", "on": SLOW})
    bench = data["benchmark"]
    bench["on"] = "decode"
    bench["run"] = bench["run"].replace("--wall 0.02", "--wall 0.05")
    data["stress"] = [
        {"name": "idle-busy-bursts", "run": "{{simserve}} stress idle-busy-bursts --wall 0", "on": "gpu-01",
         "timeout": 5, "runs": 1},
    ]  # fmt: skip
    data["rollback"]["verify_runs"] = 2
    data["options"] = [o for o in data["options"] if o["id"] == 3]
    for probe in data["options"][0]["probes"]:
        probe["on"] = "gpu-01"
    return yaml.safe_dump(data, sort_keys=False)


def concurrency(events: list[dict[str, Any]]) -> int:
    """The most commands that were running at one moment, from their journaled start and end."""
    started = {}
    edges = []
    for e in events:
        if e["kind"] == "command.started":
            started[e["host"]] = e["ts"]  # one command at a time per host: the nodes run them in turn
        elif e["kind"] == "command.finished" and e["host"] in started:
            begin = started.pop(e["host"])
            edges += [(_t(begin), 1), (_t(e["ts"]), -1)]
    running = most = 0
    for _, step in sorted(edges, key=lambda x: (x[0], x[1])):  # an end before a start at the same ms
        running += step
        most = max(most, running)
    return most


def _t(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


@pytest.mark.heavy
def test_a_fleet_reports_each_host_and_one_answer_keeps_it_everywhere_but_the_host_it_hurt(cli, home, variant):
    campaign = variant(fleet_campaign(), name="fleet")
    r = cli("run", str(campaign), "--headless", "--json", timeout=300)
    assert r.code == 3, r.stderr
    out = r.json()
    gate = out["pending_gate"]
    assert gate["kind"] == "safety" and gate["option"] == 3
    # The aggregate gains; one host's own A/B says it lost — so the cautious policy asks.
    assert gate["facts"]["ab_verdict"] == "improved" and gate["facts"]["verdict"] == "safe"
    assert gate["facts"]["hosts_measured"] == 12 and gate["facts"]["hosts_regressed"] == 1
    assert "Per host:" in gate["question"] and "approve on all except HOST" in gate["question"]
    assert f"- {SLOW}: -" in gate["question"] and "→ regressed" in gate["question"]
    session = out["session"]
    journal = home / "sessions" / session / "journal.jsonl"
    events = journal_events(journal)
    # Bounded per role: never more than 3 of the 12 at once, and more than one (it is parallel).
    assert 2 <= concurrency(events) <= 3
    ab = next(e for e in events if e["kind"] == "ab.result")
    assert set(ab["hosts"]) == set(HOSTS)
    assert ab["hosts"][SLOW]["verdict"] == "regressed"
    assert all(ab["hosts"][h]["verdict"] == "improved" for h in HOSTS if h != SLOW)
    assert all(len(run["hosts"]) == 12 for run in (e for e in events if e["kind"] == "bench.run"))

    # An exception naming no host of this option is refused, and changes nothing.
    bad = cli("decide", session, "approve on all except gpu-99", "--yes")
    assert bad.code == 2 and "unknown host(s) gpu-99; hosts here: gpu-01" in bad.stderr
    unconfirmed = cli("decide", session, "approve on all except gpu-07")
    assert unconfirmed.code == 2 and "needs confirmation" in unconfirmed.stderr  # it rolls back a host
    before = len(journal_events(journal))

    r = cli("decide", session, "approve on all except gpu-07", "--yes", "--json", timeout=300)
    assert r.code == 0, r.stderr
    final = r.json()
    (option,) = final["options"]
    assert option["outcome"] == "kept"
    assert option["hosts"] == [h for h in HOSTS if h != SLOW] and option["except_hosts"] == [SLOW]
    assert option["evidence"]["ab"]["hosts"][SLOW]["verdict"] == "regressed"
    after = journal_events(journal)[before:]
    reverted = [e["host"] for e in after if e["kind"] == "command.started" and e["purpose"] == "revert"]
    assert reverted == [SLOW]  # rolled back there, and only there
    rollback = next(e for e in after if e["kind"] == "rollback")
    assert rollback["verified"] and rollback["hosts"] == [SLOW] and set(rollback["host_deltas_pct"]) == {SLOW}
    kept = next(e for e in after if e["kind"] == "kept")
    assert kept["except_hosts"] == [SLOW] and len(kept["hosts"]) == 11
    # What the hosts say now: tuned on the eleven, back to default on the one.
    state = {h: json.loads(Path(home / "sessions" / session / "hosts" / h / "server.json").read_text()) for h in HOSTS}
    assert state[SLOW]["moe_occupancy"] == "default"
    assert all(state[h]["moe_occupancy"] == "tuned" for h in HOSTS if h != SLOW)
    assert cli("replay", session, "--verify").code == 0


def test_the_fleet_bound_is_checked_when_the_campaign_loads(cli, home, variant):
    text = fleet_campaign().replace("decode: 3", "decode: 0")
    r = cli("run", str(variant(text, name="fleet-bad")), "--headless")
    assert r.code == 2 and "parallel must be at least 1 (role decode)" in r.stderr
    assert not (home / "sessions").exists()
