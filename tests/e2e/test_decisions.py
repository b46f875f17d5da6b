"""The one-line grammar (`grammar/v1`) and what an answer does at its gate."""

from __future__ import annotations

import pytest

from agent.run.answers import answer
from policies.decisions import DecisionError, parse_decision
from policies.gates import Gate
from tests.conftest import SAFETY, journal_events

OPTS = [1, 2, 3]

TABLE = [
    (
        "Skip #2 for now if it's unsafe",
        "triage",
        {"action": "skip", "targets": [2], "condition": 'verdict == "unsafe"', "scope": "for_now"},
    ),
    (
        "Sounds like 3 is bigger win anyways",
        "continue_or_ask",
        {"action": "select", "targets": [3], "hedged": True, "confirm": True},
    ),
    (
        "Continue if you have next steps, or stop and ask if you are unsure",
        "continue_or_ask",
        {"action": "continue", "condition": "(has_next_step) && !(confidence < 0.7)", "otherwise": "ask"},
    ),
    ("continue", "safety", {"action": "continue", "condition": None}),
    ("go ahead with 3", "triage", {"action": "select", "targets": [3]}),
    ("roll back", "safety", {"action": "rollback", "confirm": True}),
    ("stop and ask me", "triage", {"action": "ask"}),
    ("retry with 8 runs", "safety", {"action": "retry", "runs": 8}),
    ("skip 2 and 3", "triage", {"action": "skip", "targets": [2, 3]}),
    ("only continue if gain is at least 5%", "safety", {"action": "continue", "condition": "gain_pct >= 5.0"}),
    ("continue unless confidence < 0.7", "continue_or_ask", {"action": "continue", "condition": "!(confidence < 0.7)"}),
    (
        "continue if it's safe and gain > 2%",
        "safety",
        {"action": "continue", "condition": 'verdict == "safe" && gain_pct > 2.0'},
    ),
    ("always skip it if it's unsafe", "safety", {"action": "skip", "scope": "standing", "confirm": True}),
    ("hold off on #1", "triage", {"action": "defer", "targets": [1]}),
    ("LGTM.", "safety", {"action": "approve"}),
    ("no", "command", {"action": "reject"}),
    ("Stop!", "continue_or_ask", {"action": "stop", "confirm": True}),
]


@pytest.mark.parametrize("text,kind,expected", TABLE, ids=[t[0] for t in TABLE])
def test_grammar_table(text, kind, expected):
    d = parse_decision(text, kind=kind, options=OPTS, by="human:t")
    got = d.model_dump()
    for key, value in expected.items():
        assert got[key] == value, (key, got)
    assert d.raw == text and d.parser == "grammar/v1" and d.by == "human:t"


@pytest.mark.parametrize(
    "text,kind,message",
    [
        ("purple monkey dishwasher", "triage", "didn't understand 'purple monkey dishwasher': no decision verb; try:"),
        ("hmm, what do you think?", "triage", "no decision verb"),
        ("", "triage", "empty decision"),
        ("go with 5", "triage", "unknown option(s) #5; options here: #1, #2, #3"),
        ("roll back", "triage", "a triage gate cannot rollback"),
        ("skip #2 if it's purple", "triage", "didn't understand the condition 'purple'"),
        ("continue quickly and quietly", "safety", "didn't understand 'quickly and quietly'"),
        ("retry with 500 runs", "safety", "between 2 and 50"),
        # two of three options: only those, or those first? (issue 35: "do 1 and 2" was read as a select of both)
        ("go with #1 and #3", "triage", "try only those, or those first?"),
    ],
)
def test_unknown_text_is_refused_with_help(text, kind, message):
    with pytest.raises(DecisionError) as err:
        parse_decision(text, kind=kind, options=OPTS)
    assert message in str(err.value)


def gate(kind: str, facts: dict, option: int | None = None) -> Gate:
    return Gate(id="g1", kind=kind, option=option, question="?", facts=facts, allowed=[], options=OPTS)


TRIAGE = {"no_go_count": 1, "hazard_count": 1, "feasible_count": 2, "has_next_step": True}


def test_conditional_for_a_later_gate_becomes_a_rule_and_progression_gates_proceed():
    d = parse_decision("Skip #2 for now if it's unsafe", kind="triage", options=OPTS, by="human:a")
    a = answer(gate("triage", TRIAGE), d, next_rule=1)
    assert a.decision is not None and a.decision.action == "continue"
    assert [r.id for r in a.rules] == ["session-rule:1"] and a.rules[0].kinds == ["safety"]
    assert "CONTINUE here" in a.echo


def test_conditional_at_a_non_progression_gate_keeps_the_gate_open():
    d = parse_decision("skip #3 if it's unsafe", kind="safety", options=OPTS)
    a = answer(gate("safety", SAFETY, option=2), d, next_rule=4)
    assert a.decision is None and a.rules[0].id == "session-rule:4"
    assert "still needs an answer" in a.echo


def test_conditional_about_this_gate_is_evaluated_now():
    d = parse_decision(
        "skip it if it's unsafe",
        kind="safety",
        options=OPTS,
    )
    assert d.targets == []
    a = answer(gate("safety", SAFETY, option=2), d, next_rule=1)
    assert a.decision is not None and a.decision.action == "skip" and not a.rules
    d = parse_decision("continue if it's safe, otherwise skip", kind="safety", options=OPTS)
    a = answer(gate("safety", SAFETY, option=2), d, next_rule=1)
    assert a.decision is not None and a.decision.action == "skip"


def test_decision_parse_cli(cli):
    r = cli("decision", "parse", "Skip #2 for now if it's unsafe", "--gate", "triage", "--options", "1,2,3", "--json")
    assert r.code == 0
    d = r.json()
    assert d["action"] == "skip" and d["targets"] == [2] and d["condition"] == 'verdict == "unsafe"'
    assert d["scope"] == "for_now" and d["parser"] == "grammar/v1" and d["raw"] == "Skip #2 for now if it's unsafe"
    for field in ("otherwise", "runs", "rationale", "hedged", "confirm", "by"):
        assert field in d
    r = cli("decision", "parse", "gibberish here", "--gate", "triage")
    assert r.code == 2 and "didn't understand" in r.stderr
    r = cli("decision", "parse", "continue", "--gate", "nope")
    assert r.code == 2 and "unknown gate kind" in r.stderr


def status_gate(kind: str, facts: dict, status: dict[str, str], option: int | None = None) -> Gate:
    return Gate(id="g9", kind=kind, option=option, question="?", facts=facts, allowed=[], options=OPTS, status=status)


CONT = {"has_next_step": True, "next_option": "2", "remaining": 1, "kept": 1, "last_outcome": "kept", "confidence": 0.9}


@pytest.mark.parametrize(
    "text,kind,facts,status,message",
    [
        ("skip 3", "continue_or_ask", CONT, {"1": "no-go", "2": "pending", "3": "kept"}, "#3 is already kept"),
        (
            "go with 1",
            "triage",
            TRIAGE,
            {"1": "no-go", "2": "pending", "3": "pending"},
            "its investigation found a blocker",
        ),
        ("go with 3", "continue_or_ask", CONT, {"1": "no-go", "2": "pending", "3": "kept"}, "it is kept"),
        (
            "skip",
            "triage",
            TRIAGE,
            {"1": "no-go", "2": "pending", "3": "pending"},
            "skip which option? name it, e.g. 'skip #2'",
        ),
    ],
)
def test_decisions_about_options_in_the_wrong_state_are_refused(text, kind, facts, status, message):
    d = parse_decision(text, kind=kind, options=OPTS)
    with pytest.raises(DecisionError) as err:
        answer(status_gate(kind, facts, status), d, next_rule=1)
    assert message in str(err.value)


def test_a_deferred_option_can_be_revisited():
    d = parse_decision("go with 2", kind="continue_or_ask", options=OPTS)
    a = answer(status_gate("continue_or_ask", CONT, {"1": "no-go", "2": "deferred", "3": "pending"}), d, next_rule=1)
    assert a.decision is not None and a.decision.targets == [2]


def test_a_continue_rule_given_at_a_progression_gate_never_keeps_an_option():
    d = parse_decision("keep going unless you are unsure", kind="triage", options=OPTS)
    a = answer(gate("triage", TRIAGE), d, next_rule=1)
    # It is a rule for later continue-or-ask gates, not for safety gates where "continue" means "keep".
    assert a.rules == [] or all("safety" not in r.kinds for r in a.rules)


def test_otherwise_of_a_session_rule_is_honoured():
    from policies.engine import PolicyEngine, SessionRule
    from policies.load import load_policy

    d = parse_decision("skip #2 if it's unsafe, otherwise continue", kind="plan", options=OPTS)
    rule = SessionRule(id="session-rule:1", kinds=["safety"], targets=[2], when=d.condition, decision=d)
    engine = PolicyEngine(load_policy("ask-everything"))
    safe = {**SAFETY, "verdict": "safe", "wedges": 0}
    assert engine.evaluate("safety", safe, option=2, session_rules=[rule]).action == "continue"
    assert engine.evaluate("safety", SAFETY, option=2, session_rules=[rule]).action == "skip"


def test_decision_parse_reads_as_the_live_gate_does(cli):
    """`decision parse` runs the live gate's reading: the option states, what "it" means, the listed commands."""
    titles = ["--title", "1=two-batch overlap (TBO)", "--title", "2=overlap scheduler", "--title", "3=MoE kernel"]
    r = cli("decision", "parse", "skip it", "--gate", "plan", *titles)
    assert r.code == 2 and "skip which option?" in r.stderr  # as the live gate refuses it, not an untargeted SKIP
    r = cli("decision", "parse", "skip it", "--gate", "continue_or_ask", "--option", "3", *titles, "--json")
    assert r.code == 0 and r.json()["targets"] == [3]  # "it" is the option the gate offers next
    r = cli("decision", "parse", "go with 1", "--gate", "triage", *titles, "--status", "1=no-go")
    assert r.code == 2 and "#1 cannot be selected" in r.stderr
    commands = ["--command", "nvidia-smi -q", "--command", "py-spy dump --pid 1", "--command", "rm -rf /tmp/c"]
    r = cli("decision", "parse", "approve all but 2", "--gate", "command", *commands)
    assert r.code == 0 and r.stdout.startswith("APPROVE #1, #3"), r.stdout
    r = cli("decision", "parse", "approve, not the rm one", "--gate", "command", *commands, "--json")
    assert r.code == 0 and r.json()["targets"] == [1, 2] and r.json()["confirm"] is True
    r = cli("decision", "parse", "skip 2 bc it is kinda meh lol", "--gate", "plan", *titles)
    assert r.code == 2 and "did you mean: skip #2?" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_persons_reason_is_journaled_and_a_refusal_names_the_closest_reading(cli, variant):
    r = cli("run", str(variant()), "--policy", "ask-everything", "--headless", "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "triage", r.stderr
    session, journal = r.json()["session"], r.json()["journal"]
    r = cli("decide", session, "skip 2 bc it is kinda meh lol", "--by", "alice")
    assert r.code == 2 and "did you mean: skip #2?" in r.stderr
    r = cli("decide", session, "skip 2 — it's flaky", "--by", "alice", "--yes", "--json")
    assert r.code in (0, 3), r.stderr
    events = journal_events(journal)
    rejected = [e for e in events if e["kind"] == "decision.rejected"]
    assert rejected and "did you mean: skip #2?" in rejected[-1]["error"]
    decided = [e for e in events if e["kind"] == "decision" and e.get("by") == "human:alice"]
    said = decided[-1]["decision"]
    assert said["action"] == "skip" and said["targets"] == [2] and said["rationale"] == "it's flaky"
    assert decided[-1]["parsed"]["rationale"] == "it's flaky"  # the person's reason, as they gave it
