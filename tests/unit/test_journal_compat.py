"""Journals recorded before events were typed still verify, read into typed events without loss and
replay as they did: the fixtures in tests/fixtures/journal-v1 were written by commit 118bf66."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent.journal import events as ev
from agent.journal.chain import encode
from agent.journal.verify import verify
from agent.journal.view import fold
from agent.report.audit import collect, markdown
from tests.conftest import FIXTURES

V1 = FIXTURES / "journal-v1"
SESSIONS = ["demo-autonomous", "ask-one-liners"]


def lines(name: str) -> list[bytes]:
    return (V1 / name / "journal.jsonl").read_bytes().splitlines()


def rewritten(record: dict[str, Any], event: ev.Event) -> bytes:
    """`event` written as the journal line `record` was: same envelope, same place in the chain."""
    line, _ = encode(
        seq=record["seq"],
        prev=record["prev"],
        session=record["session"],
        event=event,
        actor=record["actor"],
        ts=record["ts"],
    )
    return line


@pytest.mark.parametrize("name", SESSIONS)
def test_an_old_journal_still_verifies(name: str) -> None:
    report = verify(V1 / name / "journal.jsonl")
    assert report.ok and report.final and report.events == len(lines(name)), report


@pytest.mark.parametrize("name", SESSIONS)
def test_every_old_line_reads_into_its_typed_event_and_writes_back_to_the_same_bytes(name: str) -> None:
    for line in lines(name):
        record = json.loads(line)
        event = ev.parse(record)
        assert not isinstance(event, ev.UnrecognizedEvent), (record["kind"], event)
        assert type(event) is ev.MODELS[record["kind"]]
        assert rewritten(record, event) == line


@pytest.mark.parametrize("name", SESSIONS)
def test_an_old_session_replays_as_it_did(name: str, cli, tmp_path: Path) -> None:
    bundle = tmp_path / name
    shutil.copytree(V1 / name, bundle)
    imported = cli("import", str(bundle), "--json")
    assert imported.code == 0, imported.stderr
    session = json.loads(imported.stdout)["session"]
    assert cli("replay", session, "--verify").code == 0
    replay = cli("replay", session, "--json")
    assert replay.code == 0, replay.stderr
    assert replay.stdout == (V1 / f"{name}.replay.json").read_text()
    timeline = cli("replay", session)
    assert timeline.code == 0, timeline.stderr
    # The timeline's text, as this version writes it (two lines changed on purpose in issue 36: a session rule
    # reads as the rule, where it was a dict dump, and a decision by a session rule names the rule in words).
    assert timeline.stdout == (V1 / f"{name}.replay.txt").read_text()


def test_the_audit_report_gives_the_whole_wall_time_and_says_each_fact_once() -> None:
    """The report used to print "wall time of the last run: 0s" for a session that paused at gates for a
    person (the last run, after the last answer, took no time) and to repeat the rollback and WEDGE lines."""
    text = markdown(collect(V1 / "ask-one-liners" / "journal.jsonl"))
    old = (V1 / "ask-one-liners.REPORT-v1.md").read_text()
    assert "wall time of the last run: 0s" in old  # the defect, as the old code printed it
    assert "- wall time: 28s from the first event to the last (15s running, 13s paused at gates)" in text
    assert old.count("- rollback verified:") == 2 and text.count("- rollback verified:") == 1
    wedge = "no completion within 2s deadline; process group killed"
    # the stress run's evidence once in the option's section (the safety gate's question quotes it too)
    assert text.count(wedge) == old.count(wedge) - 1
    assert "- stress abort-cascade: WEDGE in 1 of 3 runs (evidence above)" in text
    # the decision, without the A/B summary it quoted: the option's gain and noise head its section, once
    assert "\n- kept by human:root\n" in text and text.count("+22.6% output_tok_s") == 1


def test_the_fold_reads_the_old_sessions_like_the_report_did() -> None:
    view = fold(json.loads(line) for line in lines("ask-one-liners"))
    assert view.status == "finished" and view.unrecognized == 0
    assert view.outcomes == {"no-go": 1, "deferred": 1, "kept": 1}
    assert [(g.gate, g.action, g.by) for g in view.gates][1:3] == [
        ("g2", "continue", "human:root"),
        ("g3", "skip", "human:root"),
    ]
    assert view.gates[1].waited_s == pytest.approx(4.005)
    assert view.report is not None and view.report.estimated_gain_pct == pytest.approx(22.6, abs=0.05)


def test_a_decision_by_a_session_rule_names_the_rule_in_words_and_a_forged_rule_reads_safely() -> None:
    from agent.journal import events as ev
    from agent.journal.view import fold
    from agent.report.replay import describe

    records = [json.loads(line) for line in (V1 / "ask-one-liners" / "journal.jsonl").read_text().splitlines()]
    view = fold(records)
    by_rule = next(r for r in records if r["kind"] == "decision" and r.get("by") == "session-rule:1")
    line = describe(by_rule, view) or ""
    assert line.endswith("session-rule:1: CONTINUE IF (has_next_step) && !(confidence < 0.7); otherwise ASK "
                         "(at continue_or_ask gates, once)")  # fmt: skip
    for forged in ({"id": "session-rule:9", "decision": "not a mapping", "kinds": "x"}, {"id": "r", "when": 3}):
        said = describe({"kind": "rule.added", "seq": 1, "rule": forged, "by": "x", "gate": "g1"}) or ""
        assert said.startswith(f"session rule {forged['id']} added by x at gate g1: ")
    view.apply(ev.entry({"kind": "rule.added", "seq": 999, "ts": "", "rule": ["not", "a", "rule"]}))
    assert "session-rule:1" in view.rules  # a line that is not a rule adds nothing and breaks nothing
