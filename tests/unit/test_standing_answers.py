"""A standing answer is a rule for the rest of the session, also when its condition holds at the gate it
was given at: "always skip if inconclusive", said at an inconclusive safety gate, skips this option AND the
next inconclusive one (seen on the real llama.cpp campaign: the next inconclusive gate paused again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.run.answers import answer
from policies.decisions import parse_decision
from policies.engine import PolicyEngine, SessionRule
from policies.gates import ALLOWED, GATES, Decision, Gate
from policies.load import load_policy
from policies.yamlsrc import SourceError


def _safety(gate_id: str, option: int, ab_verdict: str, verdict: str = "safe") -> Gate:
    facts: dict[str, Any] = (
        GATES["safety"]
        .facts(
            option=str(option),
            verdict=verdict,
            ab_verdict=ab_verdict,
            has_estimate=True,
            gain_pct=2.5,
            ci_low=-18.0,
            ci_high=28.0,
            pairs=10,
            wedges=0,
            stress_errors=0,
            failed_requests=0,
            hazards=0,
            confidence=0.5,
            risk="low",
        )
        .model_dump()
    )
    return Gate(
        id=gate_id, kind="safety", option=option, question="keep it?", facts=facts, allowed=list(ALLOWED["safety"])
    )


def _read(text: str, gate: Gate) -> Decision:
    return parse_decision(text, kind=gate.kind, options=gate.options, gate_option=gate.option)


def test_always_skip_if_inconclusive_decides_this_gate_and_the_next_inconclusive_one() -> None:
    first = _safety("g7", 3, "inconclusive")
    said = answer(first, _read("always skip if inconclusive", first), next_rule=1)
    assert said.decision is not None and said.decision.action == "skip"
    assert [(r.id, r.kinds, r.when) for r in said.rules] == [
        ("session-rule:1", ["safety"], 'ab_verdict == "inconclusive"')
    ]
    assert "session-rule:1" in said.echo

    engine = PolicyEngine(load_policy("cautious"))
    later = engine.decide(_safety("g9", 4, "inconclusive"), said.rules)
    assert (later.action, later.by) == ("skip", "session-rule:1")
    # The rule says what it covers, no more: an improved option is the policy's again.
    improved = engine.decide(_safety("g11", 5, "improved"), said.rules)
    assert improved.by != "session-rule:1"


def test_a_standing_rule_whose_condition_is_false_here_still_waits_for_the_gates_it_is_about() -> None:
    first = _safety("g3", 1, "improved")
    said = answer(first, _read("always skip if inconclusive", first), next_rule=2)
    assert said.decision is None  # nothing decided here: the gate stays open for an answer about it
    assert [r.id for r in said.rules] == ["session-rule:2"]
    later = PolicyEngine(load_policy("cautious")).decide(_safety("g5", 2, "inconclusive"), said.rules)
    assert later.by == "session-rule:2" and later.action == "skip"


def test_a_one_off_conditional_answer_stays_one_off() -> None:
    first = _safety("g7", 3, "inconclusive")
    said = answer(first, _read("skip it if inconclusive", first), next_rule=1)
    assert said.decision is not None and said.decision.action == "skip" and said.rules == []


def test_the_presets_guard_decides_before_a_persons_standing_rule_and_the_record_lists_both() -> None:
    """On the llama.cpp campaign, -ctk q4_0 (unsafe: llama.cpp's docs state its quality hazard, and its A/B
    inconclusive) was "skipped by session-rule:1 ('always skip if inconclusive')": the same skip, but the audit
    trail named the weaker reason. The preset's guard decides first; the person's rule is listed as matching."""
    first = _safety("g7", 3, "inconclusive")
    rules = answer(first, _read("always skip if inconclusive", first), next_rule=1).rules
    decided = PolicyEngine(load_policy("cautious")).decide(_safety("g13", 7, "inconclusive", "unsafe"), rules)
    assert (decided.action, decided.by) == ("skip", "policy:skip-unsafe")
    assert decided.matched[:2] == ["skip-unsafe", "session-rule:1"]


def _child(tmp_path: Path) -> PolicyEngine:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "extends: cautious\nname: child\ngates:\n  safety:\n    rules:\n"
        "      - {id: ask-big-unsafe, when: 'verdict == \"unsafe\" && gain_pct >= 20.0', decide: ask,"
        " before_guards: true}\n"
    )
    return PolicyEngine(load_policy(str(path)))


def test_a_session_rule_about_other_gates_leaves_the_policys_order_alone(tmp_path: Path) -> None:
    """An "approve always" said at a command gate must not move the safety gate's guard ahead of a rule the
    policy tries first (here a child's `before_guards` rule): the run and `policy explain` agree."""
    engine = _child(tmp_path)
    unsafe = _safety("g5", 2, "improved", "unsafe").model_copy(
        update={"facts": {**_safety("g5", 2, "improved", "unsafe").facts, "gain_pct": 25.0}}
    )
    command_rule = SessionRule(
        id="session-rule:1", kinds=["command"], decision=Decision(action="approve", scope="standing")
    )
    alone = engine.decide(unsafe)
    with_rule = engine.decide(unsafe, [command_rule])
    assert (alone.action, alone.rule) == ("ask", "ask-big-unsafe")
    assert (with_rule.action, with_rule.rule) == (alone.action, alone.rule)


def test_a_persons_rule_that_decides_otherwise_than_the_guard_stands() -> None:
    """ "retry it if it's unsafe": what the person said, not overridden by skip-unsafe."""
    gate = _safety("g5", 2, "improved", "unsafe")
    rule = SessionRule(
        id="session-rule:1",
        kinds=["safety"],
        when='verdict == "unsafe"',
        decision=Decision(action="retry", scope="standing"),
    )
    decided = PolicyEngine(load_policy("cautious")).decide(gate, [rule])
    assert (decided.action, decided.by) == ("retry", "session-rule:1")
    assert decided.matched[:2] == ["session-rule:1", "skip-unsafe"]


def test_matched_lists_only_rules_whose_condition_held(tmp_path: Path) -> None:
    """A rule that failed to evaluate (a fact missing) gave the gate's on_error answer: it did not match."""
    path = tmp_path / "policy.yaml"
    path.write_text(
        "name: p\ngates:\n  safety:\n    rules:\n"
        "      - {id: big-gain, when: 'gain_pct > 5.0', decide: continue}\n"
        "      - {id: fallback, when: 'true', decide: ask}\n"
    )
    facts = {k: v for k, v in _safety("g1", 1, "improved").facts.items() if k != "gain_pct"}
    explained = PolicyEngine(load_policy(str(path))).explain("safety", facts, option=1)
    assert explained.decision.rule == "big-gain" and explained.decision.action != "continue"
    assert explained.decision.matched == ["fallback"]


def test_a_rule_before_the_guards_cannot_keep_what_they_skip(tmp_path: Path) -> None:
    """`before_guards` with `continue` kept an unsafe, improved option headless, and `policy check` said OK."""
    path = tmp_path / "policy.yaml"
    path.write_text(
        "extends: cautious\nname: child\ngates:\n  safety:\n    rules:\n"
        "      - {id: keep-all, when: 'ab_verdict == \"improved\"', decide: continue, before_guards: true}\n"
    )
    with pytest.raises(SourceError, match=r"policy\.yaml:6: .*before the guards must fail closed or ask"):
        load_policy(str(path))


def test_skip_for_now_stays_the_persons_deferral_though_the_guard_skips_too() -> None:
    """ "Skip #2 for now if it's unsafe" defers #2 to the end of the run; `skip-unsafe` would skip it for good.
    Same action, not the same decision: the person's stands."""
    gate = _safety("g5", 2, "improved", "unsafe")
    rule = SessionRule(
        id="session-rule:1",
        kinds=["safety"],
        targets=[2],
        when='verdict == "unsafe"',
        decision=Decision(action="skip", scope="for_now", targets=[2]),
    )
    decided = PolicyEngine(load_policy("cautious")).decide(gate, [rule])
    assert (decided.action, decided.scope, decided.by) == ("skip", "for_now", "session-rule:1")
