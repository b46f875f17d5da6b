"""The Claude brain fails loudly (issue 37): before a session is made, one `models.retrieve` call checks the
credentials, the model and its limits, and a bad key, an unknown model or an API that does not answer ends in one
line, a non-zero exit and no session, in under 10 s. Mid-run, an API that refuses the credentials or the model is
not asked again for the rest of the session. The real `anthropic` client against the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.brain.claude import ClaudeBrain
from agent.brain.preflight import Credentials, check_model
from agent.campaign import load_campaign
from agent.errors import BrainRefused
from agent.journal.chain import Journal
from agent.models import BrainSpec
from tests.conftest import DEMO, ROOT, SIGNOFF, Result, journal_events
from tests.engineer_model import EngineerModel
from tests.messages_api import MessagesServer

KEY = "sk-ant-api03-TESTKEY-preflight-1c2d"


def signoff(home: Path, server: MessagesServer, *args: str, env: dict[str, str] | None = None) -> tuple[Result, float]:
    """The CLI with the scripted API, and how long it took."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    full = {**base, "SIGNOFF_HOME": str(home), "USER": "tester", "ANTHROPIC_BASE_URL": server.url}
    full.update(env if env is not None else {"ANTHROPIC_API_KEY": KEY})
    started = time.monotonic()
    p = subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, timeout=60, env=full, cwd=ROOT)
    return Result(p.returncode, p.stdout, p.stderr), time.monotonic() - started


def within_ten_seconds(took: float) -> bool:
    """Did the CLI end within 10 s of waiting, however loaded the machine? What a loaded machine slows down is the
    process's start (Python, the CLI, the SDK imported), not the check's own bounded waits: that start is measured
    here, in the same moment, and only what exceeds it counts. A retry loop paying 90-second timeouts never fits."""
    started = time.monotonic()
    subprocess.run([SIGNOFF[0], "-c", "import agent.cli, anthropic"], capture_output=True, timeout=120, cwd=ROOT)
    return took - (time.monotonic() - started) < 10


def no_session(home: Path) -> bool:
    sessions = home / "sessions"
    return not sessions.exists() or not any(sessions.iterdir())


def refused(result: Result) -> str:
    """The one line said, with nothing else on stderr (no traceback, no progress)."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_bad_key_is_refused_in_one_line_before_anything_is_made(tmp_path: Path) -> None:
    with MessagesServer(EngineerModel(), api_key="sk-ant-the-right-one") as server:
        result, took = signoff(tmp_path, server, "demo", "--brain", "claude", "--headless")
        assert server.requests == []  # not one model call, let alone a command on a host
    line = refused(result)
    assert result.code == 2 and within_ten_seconds(took), (result.code, took)
    assert "the Anthropic API refused the credentials (HTTP 401 authentication_error: invalid x-api-key)" in line
    assert "check ANTHROPIC_API_KEY" in line and KEY not in line
    assert no_session(tmp_path)


def test_an_unknown_model_is_refused_in_one_line(tmp_path: Path) -> None:
    with MessagesServer(EngineerModel(), models={"claude-sonnet-5-5": {}}) as server:
        result, took = signoff(tmp_path, server, "demo", "--brain", "claude", "--model", "claude-sonet-5-5")
        assert server.model_requests == ["claude-sonet-5-5"] and server.requests == []
    line = refused(result)
    assert result.code == 2 and within_ten_seconds(took), (result.code, took)
    assert "does not know the model 'claude-sonet-5-5' (HTTP 404 not_found_error" in line and "--model" in line
    assert no_session(tmp_path)


def test_an_api_that_does_not_answer_ends_within_ten_seconds(tmp_path: Path) -> None:
    with MessagesServer(EngineerModel(), models_delay_s=30) as server:
        result, took = signoff(tmp_path, server, "demo", "--brain", "claude", "--json")
    line = refused(result)
    assert result.code == 1 and within_ten_seconds(took), (result.code, took)
    assert "the Anthropic API did not answer within 5 s" in line and "--brain rules" in line
    assert result.stdout == "" and no_session(tmp_path)


def test_no_credentials_at_all_is_refused_and_an_auth_token_is_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MessagesServer(EngineerModel(), api_key="oauth-token-7") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = signoff(tmp_path, server, "demo", "--brain", "claude", env={})
        assert result.code == 2 and "needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN" in result.stderr, result.stderr
        # A bearer token (ANTHROPIC_AUTH_TOKEN) is what some setups have instead of a key.
        checked = check_model(BrainSpec(kind="claude"), Credentials(auth_token="oauth-token-7"))
        assert checked.model == "claude-sonnet-5-5" and checked.max_tokens == 64_000


@pytest.mark.parametrize(
    ("info", "said"),
    [
        ({"lifecycle": "retired"}, "is retired"),
        ({"max_tokens": 1024}, "brain.max_tokens is 2048, more than 'claude-sonnet-5-5' allows (1024)"),
    ],
)
def test_a_model_that_cannot_serve_the_campaign_is_refused(
    info: dict[str, Any], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MessagesServer(EngineerModel(), models={"claude-sonnet-5-5": info}) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        with pytest.raises(BrainRefused, match=re.escape(said)):
            check_model(BrainSpec(kind="claude"), Credentials(api_key=KEY))


def test_the_check_is_journaled_with_the_session(tmp_path: Path) -> None:
    with MessagesServer(EngineerModel(), models={"claude-sonnet-5-5": {"display_name": "Sonnet 5.5"}}) as server:
        result, _ = signoff(tmp_path, server, "demo", "--brain", "claude", "--json")
    assert result.code == 0, result.stderr
    started = next(e for e in journal_events(result.json()["journal"]) if e["kind"] == "session.started")
    assert started["brain_check"] == {
        "model": "claude-sonnet-5-5",
        "display_name": "Sonnet 5.5",
        "lifecycle": "active",
        "max_tokens": 64_000,
        "max_input_tokens": 200_000,
    }


def test_mid_run_a_refused_key_is_not_asked_again(tmp_path: Path) -> None:
    # The key was revoked after the session was made: the first call is refused, and the session's later steps
    # fall back at once instead of paying retries and timeouts for an answer that cannot change.
    journal = Journal(tmp_path / "journal.jsonl", "t")
    campaign = load_campaign(DEMO).campaign
    with MessagesServer(EngineerModel(), api_key="sk-ant-a-new-key") as server:
        brain = ClaudeBrain(
            BrainSpec(kind="claude", backoff_s=0.01),
            campaign=campaign,
            journal=journal,
            api_key=KEY,
            base_url=server.url,
        )
        first = brain.plan(campaign, [])
        asked = len(server.requests) + len(server.model_requests)
        started = time.monotonic()
        second = brain.plan(campaign, [])
        assert time.monotonic() - started < 1 and len(server.requests) + len(server.model_requests) == asked
    assert first.order == second.order == [1, 2, 3]  # the rules' plan, said to be a fallback
    given_up = brain.unavailable()  # what the brain_unavailable gate asks about
    assert given_up is not None and given_up.cause == "refused" and given_up.failed_calls == 0
    journal.close()
    fallbacks = [e for e in journal_events(journal.path) if e["kind"] == "brain.fallback"]
    assert (
        len(fallbacks) == 2
        and "not calling the model: the API refused this session's credentials" in fallbacks[1]["error"]
    )


def hanging_api() -> tuple[Callable[[dict[str, Any]], Any], dict[str, bool]]:
    """A Messages API that hangs past a 0.5 s timeout while the switch's "on" is set, and answers as an engineer
    once it is cleared."""
    from tests.messages_api import Reply

    model = EngineerModel()
    hanging = {"on": True}

    def script(body: dict[str, Any]) -> Reply:
        return Reply(delay_s=1.5) if hanging["on"] else model(body)

    return script, hanging


def test_mid_run_an_api_that_stops_answering_is_given_up_after_two_failed_calls(tmp_path: Path) -> None:
    # The check passed, then the Messages API hangs. Before, every step paid (max_retries + 1) timeouts: ~38 minutes
    # with the defaults over a run's steps. Now the call after a failed one gets one attempt, and two failed calls in
    # a row give the model up for the session: the later steps fall back at once, and the journal says why.
    script, hanging = hanging_api()
    journal = Journal(tmp_path / "journal.jsonl", "t")
    campaign = load_campaign(DEMO).campaign
    spec = BrainSpec(kind="claude", timeout_s=0.5, max_retries=2, backoff_s=0.01)
    with MessagesServer(script) as server:
        brain = ClaudeBrain(spec, campaign=campaign, journal=journal, api_key=KEY, base_url=server.url)
        brain.plan(campaign, [])  # every attempt times out: 3 requests
        assert len(server.requests) == 3
        brain.plan(campaign, [])  # after a failed call, one attempt: it times out too, and the model is given up
        assert len(server.requests) == 4
        hanging["on"] = False  # even an API that answers again is not asked for the rest of the session
        started = time.monotonic()
        third = brain.plan(campaign, [])
        assert time.monotonic() - started < 0.5 and len(server.requests) == 4
        given_up = brain.unavailable()
        assert given_up is not None and (given_up.cause, given_up.failed_calls) == ("unanswered", 2)
        brain.use_model(None)  # the brain_unavailable gate's retry: the model answers (no fourth fallback below)
        assert brain.unavailable() is None
        brain.plan(campaign, [])
        assert len(server.requests) == 5
    assert third.order == [1, 2, 3]  # the rules' plan
    journal.close()
    events = journal_events(journal.path)
    failed = [e for e in events if e["kind"] == "llm.failed"]
    assert [f["attempts"] for f in failed] == [3, 1]
    assert "Claude unavailable: 2 calls in a row went unanswered" in failed[1]["error"]
    assert failed[1]["error"].count("Request to") == 1  # the failure is said once
    fallbacks = [e for e in events if e["kind"] == "brain.fallback"]
    assert len(fallbacks) == 3 and "not calling the model: Claude unavailable" in fallbacks[2]["error"]


@pytest.mark.parametrize(
    "answer",
    ["refusal", "bad request", "rate limited"],
)
def test_an_api_that_answers_anything_is_not_given_up(tmp_path: Path, answer: str) -> None:
    # A refusal, a 400 or a 429 is the API answering: between two timed-out calls it starts the count again, so the
    # second timeout gives nothing up (and a burst of rate limits never does).
    from tests.messages_api import Reply, error

    state = {"step": 0}
    answers = {
        "refusal": Reply(stop_reason="refusal", stop_details={"type": "refusal", "category": "cyber"}),
        "bad request": error(400, "invalid_request_error", "tools.0: bad schema"),
        "rate limited": error(429, "rate_limit_error", "slow down"),
    }

    def script(body: dict[str, Any]) -> Reply:
        return answers[answer] if state["step"] == 1 else Reply(delay_s=1.5)

    journal = Journal(tmp_path / "journal.jsonl", "t")
    campaign = load_campaign(DEMO).campaign
    spec = BrainSpec(kind="claude", timeout_s=0.5, max_retries=1, backoff_s=0.01)
    with MessagesServer(script) as server:
        brain = ClaudeBrain(spec, campaign=campaign, journal=journal, api_key=KEY, base_url=server.url)
        for step in range(3):
            state["step"] = step
            brain.plan(campaign, [])  # unanswered, then answered (not usefully), then unanswered again
        assert brain.llm.given_up is None and brain.llm.failed_in_a_row == 1
    journal.close()


def test_a_call_that_answers_resets_the_count_of_failed_calls(tmp_path: Path) -> None:
    script, hanging = hanging_api()
    journal = Journal(tmp_path / "journal.jsonl", "t")
    campaign = load_campaign(DEMO).campaign
    spec = BrainSpec(kind="claude", timeout_s=0.5, max_retries=1, backoff_s=0.01)
    with MessagesServer(script) as server:
        brain = ClaudeBrain(spec, campaign=campaign, journal=journal, api_key=KEY, base_url=server.url)
        brain.plan(campaign, [])  # fails: 2 attempts
        hanging["on"] = False
        brain.plan(campaign, [])  # one attempt, and it answers: the count starts again
        hanging["on"] = True
        brain.plan(campaign, [])  # a failure after an answer gets every attempt again, and gives nothing up
        assert len(server.requests) == 2 + 1 + 2 and brain.llm.given_up is None
    journal.close()


def test_a_run_the_rules_decided_instead_of_the_model_says_so_where_the_result_is_read(
    tmp_path: Path, variant: Callable[..., Path]
) -> None:
    # The check passes, then every call is refused as a bad request (not retried): before, the summary table of
    # such a run read like any rules run and the printed report had no brain line at all (0 calls).
    from rich.console import Console

    from agent.report.console import print_report
    from agent.run.outcome import Outcome
    from tests.messages_api import error

    with MessagesServer(lambda body: error(400, "invalid_request_error", "tools.0: bad schema")) as server:
        result, _ = signoff(tmp_path, server, "run", str(variant()), "--brain", "claude", "--json")
    assert result.code == 0, result.stderr
    brain = result.json()["brain"]
    assert brain["calls"] == 0 and brain["fallbacks"] == len(brain["fell_back"]) > 0
    assert brain["fell_back"][0].startswith("plan: plan: HTTP 400 invalid_request_error: tools.0: bad schema")
    console = Console(record=True, width=200)
    print_report(Outcome.model_validate(result.json()), console)
    printed = console.export_text()
    assert "brain: claude/claude-sonnet-5-5 · 0 model calls" in printed
    assert f"the model was not used for {brain['fallbacks']} step(s); the rule brain decided them: plan: " in printed


class PlantedVeto(EngineerModel):
    """A model that believes what a file it read says: its finding on #3 is a no-go citing that file (a valid
    citation, so the finding is accepted), though no probe failed behind it."""

    def conclude(self, body: dict[str, Any], option: int, host: str, results: list[str], brief: str) -> Any:
        from tests.engineer_model import _last_read
        from tests.messages_api import tool_use

        read = _last_read(body)
        if option != 3 or read is None:
            return super().conclude(body, option, host, results, brief)
        planted = next(line.split(": ", 1)[1] for line in read["text"].splitlines() if ": " in line)
        veto = {
            "text": "the code says this option corrupts production data",
            "source": {"host": host, "path": read["path"]},
            "excerpt": planted,  # real: the line is in the file (what it says is what may have been planted)
        }
        return tool_use(
            "submit_finding",
            {"feasible": False, "blockers": [veto], "hazards": [], "confidence": 0.9, "summary": "do not try it"},
        )


def test_a_no_go_only_a_models_reading_found_is_asked_about_not_taken(
    tmp_path: Path, variant: Callable[..., Path]
) -> None:
    # Before, `cautious` continued at triage whatever made an option a no-go: text planted in a file the subagent read
    # could veto an option with no person involved. Now the triage gate counts it, and `cautious` asks.
    with MessagesServer(PlantedVeto()) as server:
        result, _ = signoff(
            tmp_path, server, "run", str(variant()), "--brain", "claude", "--policy", "cautious", "--json"
        )
    assert result.code == 3, result.stderr
    gate = result.json()["pending_gate"]
    assert gate["kind"] == "triage" and gate["facts"]["model_only_nogo"] == 1  # #3; #1's no-go is a failed probe
    assert gate["recommendation"]["rule"] == "ask-model-only-nogo"
    assert (
        "#3 MoE/attention kernel occupancy: **NO-GO (the model's reading only: no probe failed)**" in gate["question"]
    )
    findings = {e["option"]: e for e in journal_events(result.json()["journal"]) if e["kind"] == "finding"}
    assert findings[3]["model_only"] is True and findings[1].get("model_only") is False
