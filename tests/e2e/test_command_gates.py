"""Gates answer what they ask: every answer a gate's question offers parses there, a command gate's
"approve" covers every command it lists (or those picked by number), a standing approval becomes a
session rule the next command gate applies, and every pause message suggests an answer its gate takes."""

from __future__ import annotations

import pytest

from agent.run.answers import answer
from policies.decisions import parse_decision
from policies.gates import ALLOWED, GATE_KINDS, suggested_answer
from tests.conftest import journal_events
from tests.e2e.test_evidence import ALLOW_ALL, MINI
from tests.oneliner_reading import FIRST
from tests.oneliner_reading import reading as read_at

gate = FIRST.gate


def reading(kind: str, text: str) -> str:
    return read_at(FIRST, kind, text)


# The answers each gate's own question offers, as it words them (agent/nodes/gates.py).
OFFERED = {
    "plan": ["Approve it", "skip 2", "defer 2", "go with 3 first"],
    "triage": ["Proceed, skipping the no-go options", "proceed", "skip 2"],
    "safety": ["Keep it (continue)", "keep it", "continue", "skip it and roll back", "skip it"],
    "continue_or_ask": ["Continue", "Finish with the report", "stop"],
    "rollback": ["Revert (and verify)", "accept it as is", "stop"],
    "command": ["Run them", "decline", "approve 1 and 3", "approve all but 2"],
    "budget": ["Continue anyway", "stop with the report"],
    "goal": ["Accept it", "measure again with more pairs", "stop"],
    "brain_unavailable": ["Continue with the rule brain", "retry the model", "stop with the report"],
}


@pytest.mark.parametrize("kind", GATE_KINDS)
def test_every_answer_a_gates_question_offers_parses_at_that_gate(kind: str) -> None:
    for text in OFFERED[kind]:
        read = reading(kind, text)
        assert read != "refuse", f"{kind}: its own {text!r} is refused"
        assert read.split()[0] in ALLOWED[kind]  # type: ignore[index]


@pytest.mark.parametrize("verdict", ["safe", "unsafe", "unknown"])
@pytest.mark.parametrize("kind", GATE_KINDS)
def test_the_suggested_answer_is_one_the_gate_takes(kind: str, verdict: str) -> None:
    text = suggested_answer(kind, {"verdict": verdict})  # type: ignore[arg-type]
    read = reading(kind, text)
    assert read != "refuse" and read.split()[0] in ALLOWED[kind], (kind, text, read)  # type: ignore[index]
    if kind == "safety" and verdict != "safe":
        assert read == "skip"  # never "keep" suggested for an option not judged safe


def test_the_echo_says_what_the_answer_means_at_that_gate() -> None:
    g = gate("safety").model_copy(
        update={"facts": {"gain_pct": 1.8, "ci_low": -9.4, "ci_high": 14.4, "ab_verdict": "inconclusive"}}
    )
    d = parse_decision("continue", kind="safety", gate_option=2, options=[1, 2, 3])
    assert answer(g, d, next_rule=1).echo == (
        "CONTINUE — keep #2 (+1.8%, CI -9.4…+14.4, inconclusive); it becomes the new baseline"
    )
    d = parse_decision("nah, roll it back", kind="safety", gate_option=2, options=[1, 2, 3])
    echo = answer(g, d, next_rule=1).echo
    assert echo.startswith("ROLLBACK — roll #2 back, verify the rollback and move on")
    assert "(read as: 'roll it back' → 'roll back')" in echo and d.confirm


def test_a_standing_keep_never_keeps_an_unsafe_option() -> None:
    d = parse_decision("always continue", kind="safety", gate_option=2, options=[1, 2, 3])
    (rule,) = answer(gate("safety"), d, next_rule=4).rules
    assert rule.kinds == ["safety"] and rule.when == 'verdict == "safe"' and rule.id == "session-rule:4"


# ------------------------------------------------------------------ end to end at real command gates

TWO = (
    MINI.replace('apply: ["touch broken"]', 'apply: ["touch one", "touch two"]').replace(
        'revert: ["rm -f broken"]', 'revert: ["rm -f one two"]'
    )
    + """\
  - id: 8
    title: another one
    apply: ["touch three"]
    revert: ["rm -f three"]
"""
)
ASKING = (
    (ALLOW_ALL % "")
    .replace(
        'allow: ["*"]', 'allow: ["python* *simserve.py *", "/**/python* *simserve.py *", "test *", "echo *", "rm -f *"]'
    )
    .replace(
        "decide: continue}\n  continue_or_ask",
        "decide: continue}\n      - {id: else-skip, decide: skip, then: rollback}\n  continue_or_ask",
    )
)


def started(events, command: str) -> int:
    return sum(1 for e in events if e["kind"] == "command.started" and e["command"] == command)


def test_approve_at_a_command_gate_runs_every_command_it_lists(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ASKING)
    r = cli("run", str(variant(TWO, name="all")), "--policy", str(policy))
    assert r.code == 3, r.stderr
    # The pause message suggests an answer this gate takes, and the question numbers what it lists.
    assert "1. `touch one` on h1" in r.stdout and "2. `touch two` on h1" in r.stdout
    assert "decide " in r.stdout and '"approve"' in r.stdout
    session = r.stdout.split("signoff decide ")[1].split()[0]
    r = cli("decide", session, "approve", "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    # The next gate is option 8's own command, not `touch two` again: one answer covered both.
    assert gate["kind"] == "command" and gate["commands"] == ["touch three"]
    assert [g["by"] for g in r.json()["gates"] if g["kind"] == "command"] == ["human:tester"]
    events = journal_events(r.json()["journal"])
    assert started(events, "touch one") >= 1 and started(events, "touch two") >= 1


def test_approve_by_number_runs_those_and_asks_again_about_the_rest(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ASKING)
    r = cli("run", str(variant(TWO, name="pick")), "--policy", str(policy), "--json")
    session = r.json()["session"]
    r = cli("decide", session, "approve 2", "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "command" and gate["commands"] == ["touch one"]
    assert "1. `touch one` on h1" in gate["question"]


def test_approve_always_is_a_session_rule_the_next_command_gate_applies(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ASKING)
    r = cli("run", str(variant(TWO, name="always")), "--policy", str(policy), "--json")
    session = r.json()["session"]
    r = cli("decide", session, "approve always", "--json")
    assert "--yes" in r.stderr  # standing: confirmed first
    r = cli("decide", session, "approve always", "--yes", "--json")
    assert r.code == 0, r.stderr
    events = journal_events(r.json()["journal"])
    (added,) = [e for e in events if e["kind"] == "rule.added"]
    assert added["rule"]["kinds"] == ["command"] and added["rule"]["when"] == 'klass == "ask"'
    assert started(events, "touch three") >= 1
    later = [g for g in r.json()["gates"] if g["kind"] == "command" and g["by"] == added["rule"]["id"]]
    assert later, r.json()["gates"]
