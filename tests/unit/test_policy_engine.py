"""The policy engine: first match wins, errors fail closed, session rules come first."""

from __future__ import annotations

from policies.engine import PolicyEngine, SessionRule
from policies.gates import Decision
from policies.load import load_policy, load_policy_text
from tests.conftest import SAFETY


def test_first_match_wins_and_explain_says_why_earlier_rules_did_not():
    engine = PolicyEngine(load_policy("cautious"))
    safe = {**SAFETY, "verdict": "safe", "wedges": 0, "risk": "low"}
    ex = engine.explain("safety", safe)
    assert ex.decision.action == "continue" and ex.decision.by == "policy:keep-safe-win"
    assert [(s.rule, s.outcome) for s in ex.steps] == [
        ("skip-unsafe", "no match"),
        ("roll-back-regression", "no match"),
        ("ask-when-a-host-regressed", "no match"),  # a fact gates recorded before it existed lack: its default
        ("keep-safe-win", "matched"),
    ]
    assert engine.evaluate("safety", SAFETY).rule == "skip-unsafe"
    fleet = engine.explain("safety", {**safe, "hosts_measured": 12, "hosts_regressed": 1})
    assert fleet.decision.action == "ask" and fleet.decision.rule == "ask-when-a-host-regressed"


def test_an_evaluation_error_never_approves():
    policy = load_policy_text("""\
version: 1
name: fragile
gates:
  safety:
    rules:
      - {id: keep-confident, when: "confidence > 0.5", decide: continue}
""")
    facts = {k: v for k, v in SAFETY.items() if k != "confidence"}
    d = PolicyEngine(policy).evaluate("safety", facts)
    assert d.action == "ask" and d.rule == "keep-confident" and "failed to evaluate" in d.rationale


def test_no_rule_means_ask():
    policy = load_policy_text("version: 1\nname: empty\n")
    d = PolicyEngine(policy).evaluate("safety", SAFETY)
    assert d.action == "ask" and d.by == "policy:no-rule"


def test_session_rules_come_first_and_respect_targets():
    engine = PolicyEngine(load_policy("ask-everything"))
    rule = SessionRule(
        id="session-rule:1",
        kinds=["safety"],
        targets=[2],
        when='verdict == "unsafe"',
        decision=Decision(action="skip", targets=[2], scope="for_now"),
    )
    d = engine.evaluate("safety", SAFETY, option=2, session_rules=[rule])
    assert d.action == "skip" and d.by == "session-rule:1" and d.scope == "for_now"
    assert engine.evaluate("safety", {**SAFETY, "option": "3"}, option=3, session_rules=[rule]).action == "ask"
    assert engine.evaluate("safety", {**SAFETY, "verdict": "safe"}, option=2, session_rules=[rule]).action == "ask"


def test_policy_hash_is_of_the_exact_text():
    import hashlib

    p = load_policy("cautious")
    assert p.sha256 == hashlib.sha256(p.text.encode()).hexdigest()
