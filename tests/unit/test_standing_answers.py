"""A standing answer is a rule for the rest of the session, also when its condition holds at the gate it
was given at: "always skip if inconclusive", said at an inconclusive safety gate, skips this option AND the
next inconclusive one (seen on the real llama.cpp campaign: the next inconclusive gate paused again)."""

from __future__ import annotations

from typing import Any

from agent.run.answers import answer
from policies.decisions import parse_decision
from policies.engine import PolicyEngine
from policies.facts import FACT_MODELS
from policies.gates import ALLOWED, Decision, Gate
from policies.load import load_policy


def _safety(gate_id: str, option: int, ab_verdict: str, verdict: str = "safe") -> Gate:
    facts: dict[str, Any] = FACT_MODELS["safety"](
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
    ).model_dump()
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
