"""Gate facts are declared once, as typed models; the policy language's FACTS are derived from them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies.facts import SafetyFacts, specs
from policies.gates import FACTS, GATE_KINDS, GATES, check_facts
from tests.conftest import SAFETY


def test_every_gate_kind_has_a_model_and_its_facts_come_from_it() -> None:
    assert set(GATES) == set(GATE_KINDS) == set(FACTS)
    for kind, spec in GATES.items():
        assert FACTS[kind] == specs(spec.facts)
        assert all(spec.doc for spec in FACTS[kind].values()), kind
    assert FACTS["safety"]["verdict"].enum == ["safe", "unsafe", "unknown"]
    assert FACTS["safety"]["hazard_reproduced"].default is False and FACTS["safety"]["gain_pct"].type == "double"


def test_a_gate_built_with_a_wrong_or_missing_fact_fails_where_it_is_made() -> None:
    facts = SafetyFacts(**SAFETY, has_estimate=True)  # the facts the policy tests use, made complete
    assert check_facts("safety", facts.model_dump()) == facts.model_dump()
    with pytest.raises(ValidationError):
        SafetyFacts(**{**SAFETY, "has_estimate": True, "wedges": True})  # a bool is not a count
    with pytest.raises(ValidationError):
        SafetyFacts(**{**SAFETY, "has_estimate": True, "verdict": "fine"})  # not one of the verdicts
    with pytest.raises(ValidationError):
        SafetyFacts(**{k: v for k, v in SAFETY.items() if k != "risk"})
    with pytest.raises(ValidationError):
        SafetyFacts(**SAFETY, has_estimate=True, surprise=1)
