"""When the Claude brain gives its model up mid-run, a person (or the policy) decides what happens next (issue 37):
the brain_unavailable gate asks "continue with the rule brain, retry the model, or stop?" before the next option,
instead of the run quietly going on without the model. The real CLI and the real `anthropic` client against the
scripted Messages API on 127.0.0.1, which hangs past the campaign's 0.5 s timeout until the test lets it answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, journal_events
from tests.e2e.test_claude_preflight import hanging_api, signoff
from tests.messages_api import MessagesServer

# One unanswered call gives the model up: the plan's, and after a retry the next option's assessment
QUICK_GIVE_UP = "\nbrain:\n  timeout_s: 0.5\n  max_retries: 0\n  backoff_s: 0.01\n  unavailable_after: 1\n"


CAUTIOUS = ROOT / "policies" / "presets" / "cautious.yaml"


def policy_from_before_the_gate() -> str:
    """cautious as it was before the brain_unavailable gate: no rule names it."""
    older = re.sub(r"  # The Claude brain gave its model up.*?decide: ask\n", "", CAUTIOUS.read_text(), flags=re.S)
    assert "brain_unavailable" not in older and "goal:" in older
    return older


def after(events: list[dict[str, Any]], seq: int, kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["seq"] > seq and e["kind"] == kind]


def test_a_model_given_up_opens_the_gate_and_retry_or_rules_is_the_persons_call(
    tmp_path: Path, variant: Callable[..., Path]
) -> None:
    script, hanging = hanging_api()
    campaign = variant(edit=lambda text: text.rstrip("\n") + QUICK_GIVE_UP)
    home = tmp_path / "home"
    with MessagesServer(script) as server:
        # cautious asks: a headless run pauses (exit 3) at the gate, saying why the model was given up
        paused, _ = signoff(home, server, "run", str(campaign), "--brain", "claude", "--json")
        assert paused.code == 3, paused.stderr
        out = paused.json()
        gate = out["pending_gate"]
        assert gate["kind"] == "brain_unavailable", gate
        assert gate["facts"] == {"cause": "unanswered", "failed_calls": 1, "options_left": 2, "spent_usd": 0.0}
        assert gate["question"].startswith("Claude unavailable: a call went unanswered (claude/claude-sonnet-5-5).")
        assert "2 option(s) left. Continue with the rule brain, retry the model, or stop" in gate["question"]
        assert sorted(gate["allowed"]) == ["ask", "continue", "retry", "stop"]
        session, journal = out["session"], Path(out["journal"])

        # "retry": the model is called again from the next step on; it still hangs, so it is given up again
        asked = len(server.requests)
        again = signoff(home, server, "decide", session, "try claude again", "--by", "alice", "--yes", "--json")[0]
        assert again.code == 3, again.stderr
        assert len(server.requests) > asked  # asked again, after the person said so
        assert again.json()["pending_gate"]["kind"] == "brain_unavailable"

        # "continue with rules": the API answers again, and is not asked for the rest of the session
        hanging["on"] = False
        asked = len(server.requests)
        seq = journal_events(journal)[-1]["seq"]
        done = signoff(home, server, "decide", session, "continue with rules", "--by", "alice", "--yes", "--json")[0]
        assert done.code == 0, done.stderr
        assert len(server.requests) == asked
    events = journal_events(journal)
    answered = [e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "brain_unavailable"]
    assert [(e["decision"]["action"], e["by"]) for e in answered] == [
        ("retry", "human:alice"),
        ("continue", "human:alice"),
    ]
    assert not after(events, seq, "llm.call")
    # the steps after it were the rule brain's, each said so
    assert after(events, seq, "brain.fallback")
    assert done.json()["status"] == "finished"


def test_a_policy_answers_the_gate_headless_and_one_from_before_it_goes_on_with_rules(
    tmp_path: Path, variant: Callable[..., Path]
) -> None:
    script, _ = hanging_api()
    campaign = variant(edit=lambda text: text.rstrip("\n") + QUICK_GIVE_UP)
    cautious = CAUTIOUS.read_text()
    stops = tmp_path / "stop-without-claude.yaml"  # a team's rule: no half-model runs
    stops.write_text(
        cautious.replace(
            '      - id: ask-when-the-model-is-gone\n        when: "true"\n        decide: ask\n',
            "      - {id: stop-without-the-model, decide: stop}\n",
        )
    )
    older = tmp_path / "older.yaml"  # written before the gate: it names no brain_unavailable rule
    older.write_text(policy_from_before_the_gate())
    with MessagesServer(script) as server:
        stopped = signoff(
            tmp_path / "a", server, "run", str(campaign), "--brain", "claude", "--policy", str(stops), "--json"
        )[0]
        went_on = signoff(
            tmp_path / "b", server, "run", str(campaign), "--brain", "claude", "--policy", str(older), "--json"
        )[0]
    for result, action, by in [
        (stopped, "stop", "policy:stop-without-the-model"),
        (went_on, "continue", "policy:no-brain_unavailable-rules"),
    ]:
        assert result.code == 0, result.stderr
        events = journal_events(Path(result.json()["journal"]))
        (decided,) = [e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "brain_unavailable"]
        assert (decided["decision"]["action"], decided["by"]) == (action, by)
    assert stopped.json()["status"] == "stopped"
    assert went_on.json()["status"] == "finished"
