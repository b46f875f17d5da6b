"""The end-of-campaign confirmation A/B on the real graph in this process (agent/nodes/confirm.py): which
configurations it measures, the order it switches them in, and where it leaves the hosts."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_graph_inprocess import InProcess, TinyServer, campaign, option

KEEP_WINS = """\
version: 1
name: keep-wins
commands: {allow: ["*"]}
gates:
  plan: {rules: [{id: plan-ok, decide: approve}]}
  triage: {rules: [{id: go, decide: continue}]}
  safety:
    rules:
      - {id: keep, when: 'ab_verdict == "improved" && verdict != "unsafe"', decide: continue}
      - {id: drop, decide: skip, then: rollback}
  continue_or_ask: {rules: [{id: next, when: has_next_step, decide: continue}, {id: done, decide: stop}]}
  rollback: {rules: [{id: ok, when: verified, decide: approve}]}
"""


def run(tmp_path: Path, *, confirm: object) -> InProcess:
    policy = tmp_path / "policy.yaml"
    policy.write_text(KEEP_WINS)
    c = campaign(option(1, "a"), option(2, "b"), option(3, "c")).model_copy(update={"confirm": confirm})
    server = TinyServer({"a": 1.10, "b": 1.08, "c": 1.12})
    session = InProcess(tmp_path, c, str(policy), server)
    snapshot = session.start()
    assert not snapshot.interrupts and not snapshot.next
    return session


def test_pairwise_measures_the_final_each_later_option_alone_and_each_pair_and_finds_they_stack(tmp_path):
    session = run(tmp_path, confirm="pairwise")
    (c,) = session.events("goal.confirmed")
    assert c["kept"] == [1, 2, 3]
    arms = [e["title"] for e in session.events("phase", phase="confirm.arm")]
    assert arms == [
        "#1 + #2 + #3 against the start", "#2 against the start", "#3 against the start",
        "#1 + #2 against the start", "#1 + #3 against the start", "#2 + #3 against the start",
    ]  # fmt: skip
    # The server multiplies the features' speedups: the whole and every pair stack.
    assert [i["options"] for i in c["interactions"]] == [[1, 2, 3], [1, 2], [1, 3], [2, 3]]
    assert all(i["kind"] == "none" for i in c["interactions"]), c["interactions"]
    assert 30 < c["goal"]["gain_pct"] < 35 and c["goal"]["met"] == "met"  # 1.10 × 1.08 × 1.12 = +33 %
    # Singles: #1 from its own A/B (measured against the start), #2 and #3 measured alone here.
    assert [round(s["gain_pct"]) for s in c["singles"]] == [10, 8, 12]
    # The hosts end on the final configuration, every option on where it was kept.
    assert session.server.on == {"gpu-a": {"a", "b", "c"}, "gpu-b": {"a", "b", "c"}}
    # Into the start configuration the first time, newest kept first.
    toggles = [
        e["command"].split("simserve.py ", 1)[1] for e in session.events("command.started", purpose="confirm:toggle")
    ]
    assert [t for t in toggles[:6] if t.startswith("revert")] == [
        "revert c",
        "revert c",
        "revert b",
        "revert b",
        "revert a",
        "revert a",
    ]


def test_confirm_false_measures_nothing_at_the_end(tmp_path):
    session = run(tmp_path, confirm=False)
    (c,) = session.events("goal.confirmed")
    assert c["skipped"] == "campaign.confirm is false" and not session.events("phase", phase="confirm")
