"""≥ 60 one-liners → expected decisions, near-misses that must be refused, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.decisions import DecisionError, parse_decision
from policies.gates import GATE_KINDS, Decision

OPTS = [1, 2, 3, 4]

# (text, gate, expected fields)
ACCEPTED = [
    # the three canonical ones
    (
        "Skip #2 for now if it's unsafe",
        "triage",
        {"action": "skip", "targets": [2], "condition": 'verdict == "unsafe"', "scope": "for_now"},
    ),
    ("Sounds like 3 is bigger win anyways", "continue_or_ask", {"action": "select", "targets": [3], "hedged": True}),
    (
        "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed",
        "continue_or_ask",
        {"action": "continue", "condition": "(has_next_step) && !(confidence < 0.7)", "otherwise": "ask"},
    ),
    # continue
    ("continue", "continue_or_ask", {"action": "continue"}),
    ("Continue.", "continue_or_ask", {"action": "continue"}),
    ("go ahead", "triage", {"action": "continue"}),
    ("proceed", "plan", {"action": "continue"}),
    ("carry on", "continue_or_ask", {"action": "continue"}),
    ("keep going", "continue_or_ask", {"action": "continue"}),
    ("ok so continue", "continue_or_ask", {"action": "continue"}),
    ("please continue", "safety", {"action": "continue"}),
    ("move on", "continue_or_ask", {"action": "continue"}),
    # approve / reject
    ("approve", "plan", {"action": "approve"}),
    ("yes", "command", {"action": "approve"}),
    ("LGTM", "safety", {"action": "approve"}),
    ("ok", "plan", {"action": "approve"}),
    ("ship it", "safety", {"action": "approve"}),
    ("keep it", "safety", {"action": "approve"}),
    ("no", "command", {"action": "reject"}),
    ("nope", "command", {"action": "reject"}),
    ("reject", "command", {"action": "reject"}),
    ("don't", "command", {"action": "reject"}),
    # select
    ("go with 3", "continue_or_ask", {"action": "select", "targets": [3]}),
    ("go with #3", "continue_or_ask", {"action": "select", "targets": [3]}),
    ("go ahead with 4", "triage", {"action": "select", "targets": [4]}),
    ("let's do 2", "plan", {"action": "select", "targets": [2]}),
    ("pick #1", "plan", {"action": "select", "targets": [1]}),
    ("try 1, 2, 3 and 4", "triage", {"action": "select", "targets": [1, 2, 3, 4]}),
    ("I think 4 is the better one", "continue_or_ask", {"action": "select", "targets": [4], "hedged": True}),
    ("3 looks like a bigger win", "continue_or_ask", {"action": "select", "targets": [3]}),
    ("#2 is safer", "continue_or_ask", {"action": "select", "targets": [2]}),
    # skip / defer
    ("skip #2", "triage", {"action": "skip", "targets": [2], "scope": "once"}),
    ("skip 2 and 4", "triage", {"action": "skip", "targets": [2, 4]}),
    ("skip #2, #3 & #4", "plan", {"action": "skip", "targets": [2, 3, 4]}),
    ("drop 1", "plan", {"action": "skip", "targets": [1]}),
    ("pass on #3", "triage", {"action": "skip", "targets": [3]}),
    ("skip the rest", "continue_or_ask", {"action": "skip", "targets": OPTS}),
    ("skip all", "plan", {"action": "skip", "targets": OPTS}),
    ("skip it", "safety", {"action": "skip", "targets": []}),
    ("skip #2 for the moment", "triage", {"action": "skip", "targets": [2], "scope": "for_now"}),
    ("hold off on #1", "triage", {"action": "defer", "targets": [1]}),
    ("park 3", "plan", {"action": "defer", "targets": [3]}),
    ("postpone #4 temporarily", "plan", {"action": "defer", "targets": [4], "scope": "for_now"}),
    # retry
    ("retry", "safety", {"action": "retry", "runs": None}),
    ("retry with 8 runs", "safety", {"action": "retry", "runs": 8}),
    ("rerun with 10 pairs", "safety", {"action": "retry", "runs": 10}),
    ("try again 3 times", "safety", {"action": "retry", "runs": 3}),
    (
        "retry #2 3 times if it's high risk",
        "safety",
        {"action": "retry", "targets": [2], "runs": 3, "condition": 'risk == "high"'},
    ),
    # rollback / stop / ask
    ("roll back", "safety", {"action": "rollback", "confirm": True}),
    ("rollback", "safety", {"action": "rollback"}),
    ("revert it", "safety", {"action": "rollback"}),
    ("undo", "safety", {"action": "rollback"}),
    ("roll back if it wedges", "safety", {"action": "rollback", "condition": "wedges > 0"}),
    ("stop", "continue_or_ask", {"action": "stop", "confirm": True}),
    ("abort", "triage", {"action": "stop"}),
    ("halt!", "safety", {"action": "stop"}),
    ("stop and ask me", "triage", {"action": "ask"}),
    ("ask me first", "safety", {"action": "ask"}),
    ("check with me", "continue_or_ask", {"action": "ask"}),
    ("wait for me", "continue_or_ask", {"action": "ask"}),
    # conditions
    ("only continue if gain is at least 5%", "safety", {"action": "continue", "condition": "gain_pct >= 5.0"}),
    ("continue if the gain is over 2.5%", "safety", {"action": "continue", "condition": "gain_pct > 2.5"}),
    ("continue unless confidence < 0.7", "continue_or_ask", {"action": "continue", "condition": "!(confidence < 0.7)"}),
    (
        "continue if it's safe and gain > 2%",
        "safety",
        {"action": "continue", "condition": 'verdict == "safe" && gain_pct > 2.0'},
    ),
    (
        "skip #3 if it's unsafe or it's inconclusive",
        "triage",
        {"action": "skip", "targets": [3], "condition": 'verdict == "unsafe" || ab_verdict == "inconclusive"'},
    ),
    ("keep it if it's improved", "safety", {"action": "approve", "condition": 'ab_verdict == "improved"'}),
    ("continue if you're confident", "continue_or_ask", {"action": "continue", "condition": "confidence >= 0.7"}),
    (
        "continue if it's safe, otherwise skip",
        "safety",
        {"action": "continue", "condition": 'verdict == "safe"', "otherwise": "skip"},
    ),
    ("approve when verified", "rollback", {"action": "approve", "condition": "verified"}),
    # scopes
    ("always skip it if it's unsafe", "safety", {"action": "skip", "scope": "standing", "confirm": True}),
    ("from now on, skip it if it's unsafe", "safety", {"action": "skip", "scope": "standing"}),
    ("skip it if it's unsafe going forward", "safety", {"action": "skip", "scope": "standing"}),
    # typography
    ("Skip #2 for now if it’s unsafe", "triage", {"action": "skip", "condition": 'verdict == "unsafe"'}),
    ("  CONTINUE  ", "continue_or_ask", {"action": "continue"}),
]

REFUSED = [
    # a bare yes to a gate that asks which (issue 35): "Revert again, accept it as is, or stop?"
    ("ok", "rollback", "does not say which"),
    ("yes", "safety", "does not say which"),
    ("purple monkey dishwasher", "triage", "no decision verb"),
    ("hmm, what do you think?", "triage", "no decision verb"),
    ("", "triage", "empty decision"),
    ("   ", "triage", "empty decision"),
    ("go with 5", "triage", "unknown option(s) #5"),
    ("skip #9 and #2", "triage", "unknown option(s) #9"),
    ("roll back", "triage", "a triage gate cannot rollback"),
    ("retry", "continue_or_ask", "a continue_or_ask gate cannot retry"),
    ("skip #2 if it's purple", "triage", "didn't understand the condition 'purple'"),
    ("continue if gain is huge", "safety", "didn't understand the condition"),
    ("continue quickly and quietly", "safety", "didn't understand 'quickly and quietly'"),
    ("retry with 500 runs", "safety", "between 2 and 50"),
    ("skip #2 maybe later", "triage", "didn't understand"),
    ("approve if verified", "triage", None),  # 'verified' is a rollback fact: a rule for rollback gates
]


@pytest.mark.parametrize("text,kind,expected", ACCEPTED, ids=[t[0][:40] for t in ACCEPTED])
def test_accepted(text, kind, expected):
    d = parse_decision(text, kind=kind, options=OPTS, by="human:t")
    got = d.model_dump()
    for key, value in expected.items():
        assert got[key] == value, (key, got)
    assert d.raw == text and d.parser == "grammar/v1"
    if d.hedged or d.action in ("rollback", "stop") or d.scope == "standing":
        assert d.confirm


@pytest.mark.parametrize(
    "text,kind,message", [r for r in REFUSED if r[2]], ids=[r[0][:40] or "empty" for r in REFUSED if r[2]]
)
def test_refused(text, kind, message):
    with pytest.raises(DecisionError) as err:
        parse_decision(text, kind=kind, options=OPTS)
    assert message in str(err.value)
    assert "Traceback" not in str(err.value)


def test_a_conditional_for_another_gate_kind_is_accepted_as_a_rule():
    d = parse_decision("approve if verified", kind="triage", options=OPTS)
    assert d.condition == "verified" and d.action == "approve"


def test_table_is_big_enough():
    assert len(ACCEPTED) + len(REFUSED) >= 60


WORDS = [
    "skip",
    "continue",
    "go",
    "with",
    "#2",
    "3",
    "if",
    "it's",
    "unsafe",
    "for",
    "now",
    "and",
    "or",
    "stop",
    "ask",
    "me",
    "retry",
    "runs",
    "8",
    "gain",
    "is",
    "at",
    "least",
    "5%",
    "unless",
    "confidence",
    "<",
    "0.7",
    "always",
    ",",
    "otherwise",
    "roll",
    "back",
    "sounds",
    "like",
    "bigger",
    "win",
    "the",
    "rest",
    "¿",
    "💥",
    "'",
    '"',
    "(",
    ")",
    "&&",
    "||",
    "!",
    "$(rm -rf /)",
    "\n",
    "\t",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join) | st.text(max_size=80), st.sampled_from(GATE_KINDS))
def test_fuzz_the_parser_never_crashes(text, kind):
    try:
        d = parse_decision(text, kind=kind, options=OPTS)
    except DecisionError as exc:
        assert str(exc) and "\n" not in str(exc).strip()
        return
    assert isinstance(d, Decision)
    if d.condition is not None:
        from policies.engine import kinds_for_condition

        assert kinds_for_condition(d.condition), d.condition
