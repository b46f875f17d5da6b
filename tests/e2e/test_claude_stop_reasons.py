"""Every stop reason the Messages API gives is handled (issue 37): a reply cut off at `max_tokens` is asked again
once with room to finish and is never used as it is (its last tool call may be cut short); a refusal stops that
step, with the API's category and explanation journaled, and the step falls back to the rule brain visibly; a
conversation past the context window stops the step with its reason; an empty assistant turn is never sent back.
The real `anthropic` client against the scripted server, which refuses what the real API refuses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.brain.claude import ClaudeBrain
from agent.campaign import load_campaign
from agent.journal.chain import Journal
from agent.models import BrainSpec
from tests.conftest import DEMO, ROOT, SIGNOFF, journal_events
from tests.engineer_model import EngineerModel
from tests.messages_api import MessagesServer, Reply, strict_schema_problem, tool_use

KEY = "sk-ant-api03-TESTKEY-stops-9e8d"
CAMPAIGN = load_campaign(DEMO).campaign
MODEL_PLAN = [3, 1, 2]  # what the scripted engineer ranks; the rule brain's fallback is [1, 2, 3]


def planned(tmp_path: Path, first: list[Reply], **spec: Any) -> tuple[list[int], MessagesServer, list[dict[str, Any]]]:
    """Plan the demo with the replies `first` given to the first requests, the scripted engineer after."""
    model = EngineerModel()
    queue = list(first)

    def script(body: dict[str, Any]) -> Reply:
        return queue.pop(0) if queue else model(body)

    journal = Journal(tmp_path / "journal.jsonl", "t")
    with MessagesServer(script) as server:
        brain = ClaudeBrain(
            BrainSpec(kind="claude", backoff_s=0.01, **spec),
            campaign=CAMPAIGN,
            journal=journal,
            api_key=KEY,
            base_url=server.url,
        )
        plan = brain.plan(CAMPAIGN, [])
    journal.close()
    return plan.order, server, journal_events(journal.path)


def run_with_claude(home: Path, campaign: Path, server: MessagesServer) -> subprocess.CompletedProcess[str]:
    """`signoff run CAMPAIGN --brain claude --json` against the scripted API, with no ANTHROPIC_* of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(SIGNOFF_HOME=str(home), ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=server.url, USER="tester")
    return subprocess.run(
        [*SIGNOFF, "run", str(campaign), "--brain", "claude", "--json"],
        capture_output=True, text=True, timeout=180, env=env, cwd=ROOT, check=False,
    )  # fmt: skip


def cut_plan() -> Reply:
    """A submit_plan whose input stops mid-way, as a reply cut off at max_tokens has it."""
    reply = tool_use("submit_plan", {"ranking": [{"option": 1, "risk": "low"}]})
    reply.stop_reason = "max_tokens"
    return reply


def kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


def test_a_reply_cut_off_at_max_tokens_is_asked_again_with_room_and_never_used(tmp_path: Path) -> None:
    order, server, events = planned(tmp_path, [cut_plan()])
    assert order == MODEL_PLAN  # the second, whole answer
    assert [r["max_tokens"] for r in server.requests] == [2048, 4096]
    assert not kinds(events, "llm.invalid")  # the cut-off input was never read, let alone repaired
    (retry,) = kinds(events, "llm.retry")
    assert "cut off at max_tokens 2048; asking again with 4096" in retry["error"]
    # Both replies were paid for and journaled; the answer's usage counts both (a subagent's budget reads it).
    assert [c["output_tokens"] for c in kinds(events, "llm.call")] == [120, 120]


def test_the_usage_of_an_answer_asked_again_counts_the_cut_off_reply(tmp_path: Path) -> None:
    from agent.brain.client import LLMClient

    queue = [cut_plan()]
    journal = Journal(tmp_path / "journal.jsonl", "t")
    with MessagesServer(lambda body: queue.pop(0) if queue else tool_use("submit_plan", {"ranking": []})) as server:
        client = LLMClient(BrainSpec(kind="claude"), api_key=KEY, journal=journal, base_url=server.url)
        _, usage = client.call(
            purpose="plan", actor="planner", system=[], messages=[{"role": "user", "content": "x"}], tools=[],
            tool_choice={"type": "auto"},
        )  # fmt: skip
    journal.close()
    assert usage["output_tokens"] == 240 and usage["input_tokens"] == 600


def test_a_reply_cut_off_twice_falls_back_and_says_why(tmp_path: Path) -> None:
    order, server, events = planned(tmp_path, [cut_plan(), cut_plan()])
    assert order == [1, 2, 3] and len(server.requests) == 2
    (fallback,) = kinds(events, "brain.fallback")
    assert "the reply was cut off at max_tokens 4096 (nothing in it was used)" in fallback["error"]


def test_a_refusal_stops_the_step_with_its_category_journaled(tmp_path: Path) -> None:
    refusal = Reply(
        content=[],
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "This looks like exploit development."},
    )
    order, server, events = planned(tmp_path, [refusal])
    assert order == [1, 2, 3] and len(server.requests) == 1  # no repair round, no retry: the step stops
    (failed,) = kinds(events, "llm.failed")
    assert failed["category"] == "cyber" and failed["explanation"] == "This looks like exploit development."
    (fallback,) = kinds(events, "brain.fallback")
    assert fallback["step"] == "plan" and "the model refused (cyber)" in fallback["error"]


def test_a_conversation_past_the_context_window_stops_the_step_with_its_reason(tmp_path: Path) -> None:
    order, _, events = planned(tmp_path, [Reply(content=[], stop_reason="model_context_window_exceeded")])
    assert order == [1, 2, 3]
    assert "outgrew the model's context window" in kinds(events, "brain.fallback")[0]["error"]


def test_an_empty_reply_is_repaired_without_sending_an_empty_assistant_turn(tmp_path: Path) -> None:
    # The scripted server answers 400 to an empty assistant turn, as the API does: the repair must not send one.
    order, server, events = planned(tmp_path, [Reply(content=[], stop_reason="end_turn")])
    assert order == MODEL_PLAN and len(server.requests) == 2
    assert all(m["content"] for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert not kinds(events, "llm.failed") and len(kinds(events, "llm.invalid")) == 1


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": []},
                    {"role": "user", "content": "y"},
                ]
            },
            "non-empty content",
        ),
        (
            {
                "messages": [],
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "tool_choice": {"type": "tool", "name": "t"},
            },
            "Thinking may not be enabled",
        ),
        (
            {
                "messages": [],
                "tools": [{"name": "t", "strict": True, "input_schema": {"type": "object", "properties": {}}}],
            },
            "'additionalProperties' must be explicitly set to false",
        ),
        (
            {
                "messages": [],
                "tools": [
                    {
                        "name": "t",
                        "strict": True,
                        "input_schema": {
                            "type": "object",
                            "properties": {"s": {"type": "string", "minLength": 1}},
                            "additionalProperties": False,
                        },
                    }
                ],
            },
            "'minLength' is not supported for strict tools",
        ),
    ],
)
def test_the_scripted_server_refuses_what_the_api_refuses(body: dict[str, Any], refused: str) -> None:
    import urllib.error
    import urllib.request

    with MessagesServer(lambda b: Reply()) as server:
        request = urllib.request.Request(
            f"{server.url}/v1/messages", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 400 and refused in raised.value.read().decode()


def test_a_subagents_token_budget_counts_the_cache_writes_it_is_billed_for(
    tmp_path: Path, variant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With a 1,000-token budget, every subagent's first turn (300 in, 120 out, and 2,400 cached: written by the first
    # subagent to ask, read by the others) spends it, so its second turn must be the forced submit_finding. The
    # one that wrote the cache used to count 420 tokens and go on for more turns.
    camp = variant(edit=lambda text: text + "\nbrain: {subagent_tokens: 1000}\n")
    with MessagesServer(EngineerModel()) as server:
        p = run_with_claude(tmp_path, camp, server)
    assert p.returncode == 0, p.stderr
    events = journal_events(json.loads(p.stdout)["journal"])
    writes = [
        e for e in events if e["kind"] == "llm.call" and e["purpose"] == "investigate" and e["cache_write_tokens"]
    ]
    assert len(writes) == 1  # one subagent paid for writing the shared prefix
    turns: dict[str, list[list[str]]] = {}
    for e in events:
        if e["kind"] == "subagent.turn":
            turns.setdefault(e["actor"], []).append(e["tools"])
    assert turns and all(len(t) == 2 and t[-1] == ["submit_finding"] for t in turns.values()), turns


def test_probe_findings_quoted_to_a_subagent_are_capped() -> None:
    # A probe's blocker holds the probe's (redacted) output: 100 KB of it cannot fill the subagent's first message.
    from agent.brain.claude_investigate import capped

    long = "exit 3: " + "x" * 100_000
    assert [len(c) for c in capped([long, "short"])] == [300, 5] and capped([long])[0].endswith("…")


def test_every_tool_the_model_is_offered_is_strict_and_its_schema_is_one_strict_tools_take(tmp_path: Path) -> None:
    # Strict tools hold the model's call to the schema's shape (the API refuses a strict schema it cannot enforce,
    # and so does the scripted server); pydantic still checks lengths and ranges on our side.
    from agent.brain.prompts import DECISION_TOOL, FINDING_TOOL, PLAN_TOOL, RATIONALE_TOOL
    from agent.brain.schemas import strict
    from agent.brain.toolbox import TOOL_SPECS

    order, server, _ = planned(tmp_path, [])
    assert order == MODEL_PLAN
    sent = [tool for body in server.requests for tool in body.get("tools") or []]
    assert sent and all(tool.get("strict") is True for tool in sent)
    for tool in map(strict, [*TOOL_SPECS, PLAN_TOOL, FINDING_TOOL, RATIONALE_TOOL, DECISION_TOOL]):
        assert strict_schema_problem(tool["input_schema"], "input_schema") is None, tool["name"]


def test_with_thinking_on_every_call_thinks_under_auto_and_hands_its_signed_thinking_back(
    tmp_path: Path, variant: Any
) -> None:
    # brain.thinking_tokens: each call thinks first (tool choice `auto`, which the API requires with thinking; the
    # strict schema still holds the answer), asks for the thinking budget on top of max_tokens, and a subagent's
    # next turn sends the thinking back as it came — the scripted server, like the API, refuses a turn whose
    # thinking is missing or re-signed. A whole demo run with the model, no fallback.
    camp = variant(edit=lambda text: text + "\nbrain: {thinking_tokens: 2048}\n")
    with MessagesServer(EngineerModel()) as server:
        p = run_with_claude(tmp_path, camp, server)
    assert p.returncode == 0, p.stderr
    calls = server.requests
    assert calls and all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in calls)
    assert all(b["tool_choice"] == {"type": "auto"} and b["max_tokens"] == 2048 + 2048 for b in calls)
    handed_back = [
        m["content"][0]
        for b in calls
        for m in b["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
    ]
    assert handed_back and all(block["type"] == "thinking" for block in handed_back)
    events = journal_events(json.loads(p.stdout)["journal"])
    assert not [e for e in events if e["kind"] in ("llm.failed", "brain.fallback")]
    assert {e["purpose"] for e in events if e["kind"] == "llm.call"} >= {"plan", "investigate"}


def test_a_thinking_budget_on_a_model_that_cannot_think_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent.brain.preflight import BrainRefused, Credentials, check_model

    info = {"capabilities": {"thinking": {"supported": False}}}
    with MessagesServer(EngineerModel(), models={"claude-sonnet-5-5": info}) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        with pytest.raises(BrainRefused, match="cannot think"):
            check_model(BrainSpec(kind="claude", thinking_tokens=2048), Credentials(api_key=KEY))
        check_model(BrainSpec(kind="claude"), Credentials(api_key=KEY))  # without thinking it serves
