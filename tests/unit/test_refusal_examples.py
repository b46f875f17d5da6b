"""A line a gate does not understand is refused with what that gate does take: at a gate that asks which, its
words; elsewhere examples it reads. Never another gate's answer ("roll back" or "retry with 8 runs" where neither
is one, as every refusal offered before)."""

from __future__ import annotations

import re

import pytest

from policies.decisions import DecisionError, parse_decision
from policies.gates import GATE_KINDS, GateKind


@pytest.mark.parametrize("kind", GATE_KINDS)
def test_what_a_refusal_offers_is_what_that_gate_takes(kind: GateKind) -> None:
    with pytest.raises(DecisionError) as refused:
        parse_decision("purple monkey dishwasher", kind=kind, options=(1, 2, 3), commands=("a", "b", "c"))
    said = str(refused.value)
    offered = re.search(r"; (?:try: (.*)|this gate asks (.*))$", said)
    assert offered is not None, said
    listed, words = offered.groups()
    lines = re.findall(r"'([^']+)'", words) if words is not None else listed.split(", ")
    assert lines
    for line in lines:
        parse_decision(line, kind=kind, options=(1, 2, 3), commands=("a", "b", "c"))  # each is read there


def test_the_brain_gate_refuses_with_its_own_three_answers() -> None:
    with pytest.raises(DecisionError, match=r"this gate asks 'continue with rules', 'retry' or 'stop'$"):
        parse_decision("whichever keeps the run alive", kind="brain_unavailable")
