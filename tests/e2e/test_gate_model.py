"""The gate and policy model end to end: lint, explain, deadlines, standing rules, --fail-on, --revisit,
plan and budget gates, and a fuzzed policy loader."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.journal.verify import verify
from policies.gates import Gate
from policies.load import load_policy_text
from policies.schema import SourceError, lint
from tests.conftest import ROOT, journal_events

CAUTIOUS = (ROOT / "policies/presets/cautious.yaml").read_text()


def test_lint_finds_unreachable_rules_and_missing_fallbacks(cli, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("""\
version: 1
name: sloppy
gates:
  safety:
    rules:
      - {id: anything, decide: ask}
      - {id: never, when: 'verdict == "unsafe"', decide: skip}
  triage:
    rules:
      - {id: go, when: has_next_step, decide: continue}
""")
    r = cli("policy", "check", str(path), "--json")
    assert r.code == 0
    warnings = r.json()["warnings"]
    assert [w["line"] for w in warnings] == [7, 10]
    assert "rule 'never' can never match: rule 'anything' before it always matches" in warnings[0]["message"]
    assert "gates.triage: no fallback rule" in warnings[1]["message"]
    r = cli("policy", "check", str(path), "--strict")
    assert r.code == 1 and f"{path}:7: warning:" in r.stderr
    assert lint(load_policy_text(CAUTIOUS)) == []


def test_explain_says_which_rule_decided_and_why_the_earlier_ones_did_not(cli):
    facts = {
        "option": "2",
        "verdict": "safe",
        "ab_verdict": "improved",
        "has_estimate": True,
        "gain_pct": 6.0,
        "ci_low": 3.0,
        "ci_high": 9.0,
        "pairs": 6,
        "wedges": 0,
        "stress_errors": 0,
        "failed_requests": 0,
        "hazards": 0,
        "confidence": 0.9,
        "risk": "low",
    }
    r = cli("policy", "explain", "cautious", "--gate", "safety", "--facts", json.dumps(facts))
    assert r.code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "decision: continue — by policy:keep-safe-win"
    assert lines[1].startswith('  skip-unsafe: no match — verdict == "unsafe" is false')
    assert lines[3].startswith("  ask-when-a-host-regressed: no match — hosts_regressed > 0 is false")
    assert lines[4].startswith("  keep-safe-win: matched")
    r = cli("policy", "explain", "cautious", "--gate", "safety", "--facts", json.dumps({"verdict": "safe"}), "--json")
    out = r.json()
    assert out["decision"]["action"] == "ask"  # a missing fact fails closed
    assert any(s["outcome"] == "error" and "fact ab_verdict was not given" in s["detail"] for s in out["steps"])
    r = cli("policy", "explain", "cautious", "--gate", "safety", "--facts", '{"verdcit": "safe"}')
    assert r.code == 2 and "has no fact(s) ['verdcit']" in r.stderr
    r = cli("policy", "explain", "cautious", "--gate", "safety", "--facts", "{nope")
    assert r.code == 2 and "--facts must be a JSON object" in r.stderr


def test_a_paused_gate_past_its_deadline_takes_the_on_deadline_answer(cli, variant, tmp_path):
    policy = tmp_path / "deadline.yaml"
    policy.write_text(
        (ROOT / "policies/presets/ask-everything.yaml")
        .read_text()
        .replace(
            "  triage: {rules: [{id: ask-triage, decide: ask}]}",
            "  triage: {deadline: 1s, on_deadline: stop, rules: [{id: ask-triage, decide: ask}]}",
        )
    )
    r = cli("run", str(variant()), "--policy", str(policy), "--json")
    assert r.code == 3
    out = r.json()
    assert out["pending_gate"]["deadline"]["on_deadline"] == "stop"
    r = cli("resume", out["session"], "--json")  # too early: still waiting, nothing decided
    if r.code == 3:
        assert r.json()["pending_gate"]["kind"] == "triage"
    time.sleep(1.2)
    r = cli("resume", out["session"], "--json", "--fail-on", "deadline")
    assert r.code == 4, r.stderr  # stopped by the deadline, and CI asked to fail on that
    out = r.json()
    assert out["status"] == "stopped"
    assert out["gates"][-1]["decided_as"] == "deadline" or any(g["decided_as"] == "deadline" for g in out["gates"])
    events = journal_events(out["journal"])
    assert any(e["kind"] == "decision" and e.get("by") == "deadline" for e in events)


@pytest.mark.heavy
def test_a_standing_rule_survives_pause_and_resume(cli, variant):
    session = cli("run", str(variant()), "--policy", "ask-everything", "--json").json()["session"]
    r = cli("decide", session, "always skip it if it's unsafe", "--json")
    assert r.code == 2 and "standing decision needs confirmation" in r.stderr
    r = cli("decide", session, "always skip it if it's unsafe", "--yes", "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    assert out["session_rules"][0]["decision"]["scope"] == "standing"
    # #2 (unsafe) was skipped by the standing rule while the run was going; now we are at the continue gate.
    assert out["pending_gate"]["kind"] == "continue_or_ask"
    two = {o["id"]: o for o in out["options"]}[2]
    assert two["outcome"] == "skipped"
    r = cli("decide", session, "continue", "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "safety"  # #3 is safe: the rule does not fire
    r = cli("decide", session, "continue", "--json", "--fail-on", "ask")
    assert r.code == 4  # finished, but people had to answer gates
    out = r.json()
    by = [(g["kind"], g["option"], g["decided_as"]) for g in out["gates"]]
    assert ("safety", 2, "session-rule") in by and ("safety", 3, "human") in by
    assert verify(Path(out["journal"])).ok


@pytest.mark.heavy
def test_deferred_options_are_reported_and_can_be_revisited(cli, variant):
    session = cli("run", str(variant()), "--policy", "ask-everything", "--json").json()["session"]
    cli("decide", session, "Skip #2 for now if it's unsafe")
    cli("decide", session, "continue")
    r = cli("decide", session, "continue", "--json")
    out = r.json()
    assert out["status"] == "finished"
    assert out["deferred"] == {"options": [2], "revisit": f"signoff resume {session} --revisit"}
    text = cli("resume", session)
    assert f"reopen with `signoff resume {session} --revisit`" in text.stdout
    r = cli("resume", session, "--revisit", "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    assert out["pending_gate"]["kind"] == "safety" and out["pending_gate"]["option"] == 2
    r = cli("decide", session, "skip it", "--json")
    assert r.code == 0 and {o["id"]: o["outcome"] for o in r.json()["options"]}[2] == "skipped"
    r = cli("resume", session, "--revisit")
    assert r.code == 2 and "no deferred options" in r.stderr


def test_a_conditional_rule_given_at_the_plan_gate(cli, variant, tmp_path):
    policy = tmp_path / "plan-asks.yaml"
    policy.write_text(
        (ROOT / "policies/presets/ask-everything.yaml")
        .read_text()
        .replace(
            '{id: nothing-to-approve, when: "proposed == 0 && !reordered", decide: approve}',
            '{id: never, when: "false", decide: approve}',
        )
    )
    r = cli("run", str(variant()), "--policy", str(policy), "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "plan"
    session = r.json()["session"]
    r = cli("decide", session, "skip #2 if it's unsafe", "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "triage"
    r = cli("decide", session, "continue", "--json")
    out = r.json()
    assert {o["id"]: o["outcome"] for o in out["options"]}[2] == "skipped"
    assert [g["decided_as"] for g in out["gates"] if g["kind"] == "safety"] == ["session-rule"]


def test_a_budget_gate_opens_before_the_next_option(cli, variant, tmp_path):
    policy = tmp_path / "budget.yaml"
    policy.write_text(CAUTIOUS.replace("gates:\n", "budgets: {options: 1}\ngates:\n", 1))
    r = cli("run", str(variant()), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "budget" and gate["facts"]["options_tried"] == 1
    # The gate whole, as its node made it (a field added to Gate reaches --json with nothing else to change).
    assert set(Gate.model_fields) <= set(gate) and Gate.model_validate(gate).id == gate["id"]
    assert gate["suggested"] == "continue"
    assert "1 options tried ≥ 1" in gate["question"]
    r = cli("decide", r.json()["session"], "stop", "--yes", "--json")
    assert r.code == 0 and r.json()["status"] == "stopped"
    assert {o["id"]: o["outcome"] for o in r.json()["options"]}[3] == "untested"


def test_fail_on_default_for_headless_defaults(cli, variant, tmp_path):
    policy = tmp_path / "hd.yaml"
    policy.write_text(
        (ROOT / "policies/presets/ask-everything.yaml")
        .read_text()
        .replace(
            "  triage: {rules: [{id: ask-triage, decide: ask}]}",
            "  triage: {headless_default: stop, rules: [{id: ask-triage, decide: ask}]}",
        )
    )
    r = cli("run", str(variant()), "--policy", str(policy), "--json", "--fail-on", "default")
    assert r.code == 4 and "--fail-on default" in r.stderr
    assert r.json()["gates"][-1]["decided_as"] == "headless-default"
    r = cli("run", str(variant()), "--policy", str(policy), "--fail-on", "sometimes")
    assert r.code == 2 and "--fail-on takes ask, default, deadline" in r.stderr


POLICY_WORDS = [
    "version: 1",
    "name: x",
    "gates:",
    "  safety:",
    "    rules:",
    "      - id: a",
    "        when: true",
    "        decide: skip",
    "        decide: maybe",
    '        when: verdict == "unsafe"',
    "    on_error: continue",
    "    deadline: 5q",
    "    deadline: 30m",
    "    on_deadline: stop",
    "tests:",
    "  - gate: safety",
    "    facts: {verdict: 3}",
    "    expect: {decide: skip}",
    "  triage:",
    "commands: {deny: [1, 2]}",
    "budgets: {options: -1}",
    "\t",
    ":",
    "- [",
    "{{",
    "&anchor x",
    "*anchor",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(POLICY_WORDS), max_size=14).map("\n".join) | st.text(max_size=200))
def test_fuzz_the_policy_loader_never_crashes(text):
    try:
        load_policy_text(text, path="fuzz.yaml")
    except SourceError as exc:
        message = str(exc)
        assert message.startswith("fuzz.yaml") and "\n" not in message.strip()
