"""Verdicts come from measured evidence: unreadable benchmarks, denied commands, renamed options."""

from __future__ import annotations

from pathlib import Path

import yaml

from policies.yamlsrc import YamlSource
from tests.conftest import DEMO, ROOT, fast, journal_events

MINI = """\
name: garbage-bench
goal: {text: survive a benchmark that prints garbage}
hosts: [{name: h1, roles: [server]}]
vars: {simserve: "{{python}} {{campaign_dir}}/simserve.py"}
baseline:
  setup: ["{{simserve}} init --seed 3"]
  health: ["{{simserve}} health"]
benchmark:
  run: "test -f broken && echo 'RuntimeError: CUDA error: an illegal memory access' || {{simserve}} bench --wall 0.01"
  on: h1
  num_prompts: 900
  pairs: 5
  max_pairs: 5
  timeout: 20
stress: [{name: bursts, run: "{{simserve}} stress idle-busy-bursts --wall 0.01", on: h1, timeout: 5}]
options:
  - id: 7
    title: breaks the benchmark
    apply: ["touch broken"]
    revert: ["rm -f broken"]
"""

ALLOW_ALL = """\
version: 1
name: allow-all-cautious
commands: {deny: [%s], allow: ["*"]}
gates:
  plan: {rules: [{id: plan-ok, decide: approve}]}
  triage: {rules: [{id: go, decide: continue}]}
  safety:
    rules:
      - {id: skip-unsafe, when: 'verdict == "unsafe"', decide: skip, then: rollback}
      - {id: keep, when: 'verdict == "safe" && ab_verdict == "improved"', decide: continue}
  continue_or_ask: {rules: [{id: next, when: has_next_step, decide: continue}, {id: done, decide: stop}]}
  rollback: {rules: [{id: ok, when: verified, decide: approve}]}
"""


def test_garbage_benchmark_output_is_a_failed_run_and_the_option_is_rolled_back(cli, variant, tmp_path):
    campaign = variant(MINI, name="garbage")
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    opt = out["options"][0]
    assert opt["outcome"] == "skipped" and opt["verdict"] == "unsafe"
    assert any("5 candidate benchmark run(s) failed or were unreadable" in x for x in opt["reasons"])
    events = journal_events(out["journal"])
    bad = [e for e in events if e["kind"] == "bench.run" and not e["valid"]]
    assert len(bad) == 5 and all(e["arm"] == "B" for e in bad)
    assert all(e["reason"].startswith("unreadable benchmark output: no JSON result object") for e in bad)
    rollback = next(e for e in events if e["kind"] == "rollback")
    assert rollback["verified"] is True
    assert not (Path(out["journal"]).parent / "hosts" / "h1" / "broken").exists()


def test_a_denied_command_never_runs(cli, variant, tmp_path):
    campaign = variant(MINI, name="deny")
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % '"touch *"')
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    opt = out["options"][0]
    assert opt["outcome"] == "untested"
    assert any("the policy denies 'touch broken'" in x for x in opt["reasons"])
    events = journal_events(out["journal"])
    assert any(e["kind"] == "command.refused" and e["command"] == "touch broken" for e in events)
    assert not any(e["kind"] == "command.started" and e["command"] == "touch broken" for e in events)
    assert not (Path(out["journal"]).parent / "hosts" / "h1" / "broken").exists()


def test_unlisted_command_opens_a_command_gate(cli, variant, tmp_path):
    campaign = variant(MINI, name="ask")
    policy = tmp_path / "p.yaml"
    allow = 'allow: ["python* *simserve.py *", "/**/python* *simserve.py *", "test *", "echo *"]'
    policy.write_text((ALLOW_ALL % "").replace('allow: ["*"]', allow))
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "command" and "touch broken" in gate["question"]
    session = r.json()["session"]
    r = cli("decide", session, "no", "--json")
    assert r.code == 0, r.stderr
    opt = r.json()["options"][0]
    assert opt["outcome"] == "untested" and "not approved" in opt["reasons"][0]
    events = journal_events(r.json()["journal"])
    assert not any(e["kind"] == "command.started" and e["command"] == "touch broken" for e in events)


def test_verdicts_follow_evidence_not_option_ids_or_titles(cli, variant):
    data = YamlSource(DEMO, fast(DEMO.read_text())).data  # keeps `on:` keys as strings, unlike YAML 1.1
    tbo, overlap, moe = data["options"]
    # Renumber and rename: nothing about an option's identity may steer its verdict.
    tbo.update(id=9, title="candidate nine", expected_gain_pct=30)
    overlap.update(id=1, title="candidate one")
    moe.update(id=5, title="candidate five", expected_gain_pct=1)
    data["options"] = [overlap, moe, tbo]
    campaign = variant(yaml.safe_dump(data, sort_keys=False), name="renamed")
    r = cli("run", str(campaign), "--json")
    assert r.code == 0, r.stderr
    outcomes = {o["id"]: (o["outcome"], o["verdict"]) for o in r.json()["options"]}
    assert outcomes[9][0] == "no-go"
    assert outcomes[1] == ("skipped", "unsafe")
    assert outcomes[5] == ("kept", "safe")


def test_a_run_that_cannot_start_fails_with_one_line_and_a_journal_entry(cli, variant, home):
    broken = MINI.replace(
        "hosts: [{name: h1, roles: [server]}]", "hosts: [{name: h1, roles: [server], workdir: /dev/null/h1}]"
    )
    r = cli("run", str(variant(broken, name="fail")), "--json")
    assert r.code == 1
    message = r.stderr.strip().splitlines()[-1]
    assert message.startswith("signoff: session ") and "failed:" in message and "signoff resume" in message
    journal = next((home / "sessions").glob("*/journal.jsonl"))
    assert journal_events(journal)[-1]["kind"] == "session.failed"
    assert cli("sessions", "--json").json()[0]["status"] == "failed"


def test_setup_failure_still_reports_every_option(cli, variant):
    broken = MINI.replace(
        'setup: ["{{simserve}} init --seed 3"]', 'setup: ["{{simserve}} init --seed 3 && test -f no-such-file"]'
    )
    r = cli("run", str(variant(broken, name="setupfail")), "--policy", "autonomous", "--json")
    assert r.code == 1
    out = r.json()
    assert out["status"] == "failed" and "baseline setup failed on h1" in out["error"]
    assert [(o["id"], o["outcome"]) for o in out["options"]] == [(7, "untested")]


def test_a_benchmark_broken_on_both_arms_is_a_measurement_problem_not_unsafe(cli, variant, tmp_path):
    broken = MINI.replace("test -f broken && echo", "echo").replace(" || {{simserve}} bench --wall 0.01", "")
    policy = tmp_path / "p.yaml"
    policy.write_text(
        (ROOT / "policies/presets/cautious.yaml").read_text().replace('allow: ["', 'allow: ["touch *", "rm -f *", "')
    )
    r = cli("run", str(variant(broken, name="bothbroken")), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "safety" and gate["facts"]["verdict"] == "unknown"
    assert gate["facts"]["has_estimate"] is False
    assert "a measurement problem" in gate["question"]


def test_a_command_rule_approves_only_the_command_it_looked_at(cli, variant, tmp_path):
    two = MINI.replace('apply: ["touch broken"]', 'apply: ["touch approved-one", "touch second-one"]')
    policy = tmp_path / "p.yaml"
    policy.write_text(
        (ALLOW_ALL % "").replace(
            'allow: ["*"]',
            'allow: ["python* *simserve.py *", "/**/python* *simserve.py *", "test *", "echo *", "rm -f *"]',
        )
        + "  command:\n    rules:\n"
        + "      - {id: approve-first, when: 'command.startsWith(\"touch approved-one\")', decide: approve}\n"
        + "      - {id: ask-rest, decide: ask}\n"
    )
    r = cli("run", str(variant(two, name="percommand")), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    # The rule approved the command it was shown; the next one is asked about on its own.
    assert gate["kind"] == "command" and gate["facts"]["command"] == "touch second-one"
    approvals = [g for g in r.json()["gates"] if g["kind"] == "command"]
    assert [(g["action"], g["by"]) for g in approvals] == [("approve", "policy:approve-first")]
