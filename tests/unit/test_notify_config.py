"""`notify:` as written (policy and campaign files: errors at file:line) and the parts of agent/run/notify.py
that need no network: labels that never show a secret, resolution from the environment, the stand-in."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.campaign import load_campaign
from agent.run.notify import GateWaiting, NotifyRequest, NotifyResult, Recorder, fire, gate_waiting, url_label
from policies.load import load_policy_text
from policies.schema import NotifyTarget, SourceError
from tests.conftest import DEMO

GATE = {
    "id": "g2",
    "kind": "triage",
    "option": None,
    "question": "Investigation of 3 option(s):\n- #1: NO-GO\nProceed with #2, #3, skipping the no-go options?",
    "facts": {"no_go_count": 1, "has_next_step": True},
    "allowed": ["continue", "skip", "stop", "ask"],
    "recommendation": {"action": "ask", "by": "policy:ask-triage"},
    "suggested": "continue",
}


def policy(entries: str) -> str:
    return f"version: 1\nname: n\nnotify:\n{entries}"


@pytest.mark.parametrize(
    ("entries", "line", "message"),
    [
        ('  - url: "file:///etc/passwd"\n', 4, "notify[0].url: Value error, only http:// and https:// URLs"),
        ("  - url: ftp://example.com/x\n", 4, "not ftp://"),
        ("  - url: example.com/hook\n", 4, "only http:// and https://"),
        ("  - url: http://\n", 4, "names no host"),
        ("  - {url: 'http://a.example/x', command: [notify-send]}\n", 4, "exactly one of `url:` or `command:`"),
        ("  - {timeout_s: 3}\n", 4, "exactly one of `url:` or `command:`"),
        ("  - command: [notify-send]\n    timeout_s: 999\n", 5, "timeout_s: Input should be less than or equal to 30"),
        ("  - command: [notify-send]\n    timeout_s: 0\n", 5, "timeout_s: Input should be greater than 0"),
        ("  - url: https://a.example/x\n    headers: {Authorization: Bearer abc}\n", 5, "header Authorization holds"),
        ("  - url: https://a.example/x\n    headers: {X-Api-Key: k-123456}\n", 5, "header X-Api-Key holds"),
        ("  - url: https://a.example/x\n    headers: {X-Team: perf, Bad Name: v}\n", 5, "not a valid header name"),
        ("  - url: 'https://a.example/x?channel=ops&token=abc123'\n", 4, "query parameter 'token'"),
        ("  - url: 'https://bot:hunter22@a.example/x'\n", 4, "credentials in the URL"),
        ("  - command: [notify-send]\n    headers: {X-A: b}\n", 4, "headers go with url:"),
        ("  - url: https://a.example/x\n    inherit_env: [HOME]\n", 4, "inherit_env goes with command:"),
        ("  - command: ['curl', '{{env:HOOK}}']\n", 4, "{{env:NAME}} is for url: and headers:"),
        ("  - command: 'notify-send \"unclosed'\n", 4, "cannot split the command"),
        ("  - url: https://a.example/x\n    extra: 1\n", 5, "unknown field 'extra'"),
    ],
)
def test_a_bad_policy_notify_entry_is_refused_at_its_line(entries: str, line: int, message: str) -> None:
    with pytest.raises(SourceError) as caught:
        load_policy_text(policy(entries), path="p.yaml")
    assert caught.value.line == line, str(caught.value)
    assert str(caught.value).startswith(f"p.yaml:{line}: notify[0]") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_good_entries_load_with_their_defaults() -> None:
    loaded = load_policy_text(
        policy(
            '  - url: "{{env:SLACK_WEBHOOK_URL}}"\n'
            "  - url: env:HOOK_URL\n"
            '  - url: "https://hooks.example.com/services/{{env:HOOK_PATH}}?token={{env:HOOK_TOKEN}}"\n'
            '    headers: {Authorization: "Bearer {{env:HOOK_TOKEN}}", X-Api-Key: "env:HOOK_KEY", X-Team: perf}\n'
            "    timeout_s: 2.5\n"
            "  - command: notify-send 'signoff' \"a gate waits\"\n"
            "    inherit_env: [DISPLAY, DBUS_*]\n"
        ),
        path="p.yaml",
    )
    first, whole, full, command = loaded.model.notify
    assert first.timeout_s == 5.0 and first.url == "{{env:SLACK_WEBHOOK_URL}}" and whole.url == "env:HOOK_URL"
    assert full.timeout_s == 2.5 and full.headers["X-Team"] == "perf"
    assert command.command == ["notify-send", "signoff", "a gate waits"] and command.url is None


def test_a_campaign_takes_notify_too_and_refuses_a_bad_entry_at_its_line(tmp_path: Path) -> None:
    base = DEMO.read_text()
    good = load_campaign(DEMO, text=base + '\nnotify:\n  - {url: "https://ops.example/hook"}\n')
    assert [t.url for t in good.campaign.notify] == ["https://ops.example/hook"]
    bad = base + '\nnotify:\n  - url: "file:///etc/passwd"\n'
    with pytest.raises(SourceError) as caught:
        load_campaign(DEMO, text=bad)
    assert caught.value.line == bad.count("\n") and "notify[0].url" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("https://hooks.slack.com/services/T000/B000/XXXXSECRET", "https://hooks.slack.com/services/…"),
        ("https://example.com/4f9a8b7c6d5e4f3a2b1c", "https://example.com/…"),
        ("https://example.com/hook", "https://example.com/hook"),
        ("http://127.0.0.1:8080/a/b?token=abc#x", "http://127.0.0.1:8080/a/…"),
        ("https://user:pw@example.com:8443", "https://example.com:8443"),
        ("http://[::1]:9/x", "http://[::1]:9/x"),
    ],
)
def test_a_url_label_shows_the_host_and_a_path_hint_only(url: str, label: str) -> None:
    assert url_label(url) == label


def payload() -> GateWaiting:
    return gate_waiting(session="s-1", campaign="c", gate=GATE, since=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))


def test_the_payload_says_the_gate_and_how_to_answer_it() -> None:
    p = payload()
    assert p.answer.attach == "signoff attach s-1" and p.answer.decide == 'signoff decide s-1 --gate g2 "continue"'
    assert p.allowed == ["continue", "skip", "stop"]  # `ask` is no answer
    assert p.waiting_since == "2026-01-02T03:04:05+00:00"
    assert "waits at gate g2 (triage): Proceed with #2, #3" in p.text and p.text.endswith(p.answer.decide)
    odd = gate_waiting(session="s-1", campaign="c", gate={**GATE, "suggested": 'say "$HOME"'}, since=datetime.now(UTC))
    assert odd.answer.decide == "signoff decide s-1 --gate g2 'say \"$HOME\"'"


def test_a_missing_variable_fails_that_target_without_sending() -> None:
    recorder = Recorder()
    specs = [NotifyTarget(url="{{env:SIGNOFF_TEST_UNSET_HOOK}}"), NotifyTarget(url="https://ops.example/hook")]
    missing, sent = fire(specs, payload(), environ={}, sender=recorder)
    assert missing.ok is False and missing.error == "environment variable SIGNOFF_TEST_UNSET_HOOK is not set"
    assert missing.target == "url from env SIGNOFF_TEST_UNSET_HOOK"
    assert sent.ok is True and [r.target.url for r in recorder.requests] == ["https://ops.example/hook"]


def test_resolved_secrets_are_sent_and_masked_in_whatever_comes_back() -> None:
    secret = "s3cr3t-for-the-hook"

    def leaky(request: NotifyRequest) -> NotifyResult:
        said = f"rejected {request.target.headers['Authorization']} at\n{request.target.url}"
        return NotifyResult(target=request.target.label, ok=False, status=401, error=said)

    recorder = Recorder(leaky)
    spec = NotifyTarget(
        url="https://ops.example/{{env:HOOK_PATH}}", headers={"Authorization": "Bearer {{env:HOOK_TOKEN}}"}
    )
    (result,) = fire([spec], payload(), environ={"HOOK_TOKEN": secret, "HOOK_PATH": "p-0a1b2c3d"}, sender=recorder)
    assert recorder.requests[0].target.headers["Authorization"] == f"Bearer {secret}"
    assert result.error == "rejected Bearer *** at ***" and result.target == "https://ops.example/…"


def test_a_sender_that_raises_or_hangs_still_ends_as_a_result_in_time() -> None:
    release = threading.Event()

    def broken(request: NotifyRequest) -> NotifyResult:
        raise RuntimeError("boom\nsecond line")

    def hangs(request: NotifyRequest) -> NotifyResult:
        release.wait(30)
        return NotifyResult(target=request.target.label, ok=True)

    spec = NotifyTarget(url="https://ops.example/hook", timeout_s=0.2)
    (raised,) = fire([spec], payload(), environ={}, sender=broken)
    assert raised.ok is False and raised.error == "RuntimeError: boom second line"
    started = time.monotonic()
    (hung,) = fire([spec], payload(), environ={}, sender=hangs)
    release.set()
    assert hung.ok is False and "timed out" in (hung.error or "") and time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("url", "environ", "label"),
    [
        ("https://ops.example/{{env:HOOK_PATH}}", {"HOOK_PATH": "teamroom/x9"}, "https://ops.example/…"),
        ("env:HOOK_URL", {"HOOK_URL": "https://hooks.slack.com/services/T1/B2/C3"}, "https://hooks.slack.com/…"),
        ("https://ops.example/hooks/{{env:HOOK_PATH}}", {"HOOK_PATH": "teamroom"}, "https://ops.example/hooks/…"),
    ],
)
def test_a_path_segment_from_the_environment_is_never_shown(url: str, environ: dict[str, str], label: str) -> None:
    recorder = Recorder()
    (result,) = fire([NotifyTarget(url=url)], payload(), environ=environ, sender=recorder)
    sent = environ["HOOK_URL"] if url == "env:HOOK_URL" else url.replace("{{env:HOOK_PATH}}", environ["HOOK_PATH"])
    assert result.ok and result.target == label and recorder.requests[0].target.url == sent
