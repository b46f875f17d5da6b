"""One-liners at the brain_unavailable gate ("Claude unavailable: continue with the rule brain, retry the model, or
stop?"): its three answers in the words people use for them, and what it must refuse — a bare yes (which of the
three?), a count (retry calls the model again from the next step, once), another gate's answers. The live gate's
reading (tests/oneliner_reading.py)."""

from __future__ import annotations

import pytest

from tests.oneliner_reading import DOCS, reading

READ = [
    ("continue", "continue"),
    ("continue with rules", "continue"),
    ("go on with the rule brain", "continue"),
    ("proceed with the rule-based brain", "continue"),
    ("keep going with rules", "continue"),
    ("use the rules from here", "continue"),
    ("fall back to rules", "continue"),
    ("rules only", "continue"),
    ("continue without claude", "continue"),
    ("retry", "retry"),
    ("try again", "retry"),
    ("try claude again", "retry"),
    ("retry the model", "retry"),
    ("give claude another shot", "retry"),
    ("stop", "stop"),
    ("stop, we need claude for this", "stop"),
    ("abort", "stop"),
    ("ask me later", "ask"),
]
REFUSED = [
    "yes",  # continue with rules, retry or stop?
    "ok",
    "retry 3 times",  # no count: the model is called again from the next step
    "retry with rules",  # two answers in one
    "skip 2",  # another gate's answer
    "roll back",
    "approve 1",
    "continue, rules are fine",  # a remark the gate cannot place
    "retry?",
    "don't retry",
]


@pytest.mark.parametrize(("text", "meaning"), READ)
def test_its_answers_are_read_in_the_words_people_use(text: str, meaning: str) -> None:
    assert reading(DOCS, "brain_unavailable", text) == meaning


@pytest.mark.parametrize("text", REFUSED)
def test_what_does_not_say_which_of_its_answers_is_refused(text: str) -> None:
    assert reading(DOCS, "brain_unavailable", text) == "refuse"
