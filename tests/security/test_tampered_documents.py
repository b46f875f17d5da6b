"""M1 (issue 19): a paused session's own campaign.yaml and policy.yaml must not be edited into running
something else. Each attack edits the copy in the store the way someone with write access would (an
extra command in option #3, an allow-everything rule) and shows that decide, resume and attach refuse in
one line, journal why, run nothing, and that `--verify` fails; restored, the session goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import journal_events


@pytest.fixture
def paused(cli, variant, home) -> tuple[str, Path]:
    r = cli("run", str(variant()), "--policy", "ask-everything", "--json")
    assert r.code == 3, r.stderr
    session = r.json()["session"]
    return session, home / "sessions" / session


def tamper_campaign(d: Path, marker: Path) -> str:
    path = d / "campaign.yaml"
    original = path.read_text()
    edited = original.replace(
        'apply: [{run: "{{simserve}} apply moe-occupancy", on: decode}]',
        f'apply: [{{run: "touch {marker}", on: decode}}, {{run: "{{{{simserve}}}} apply moe-occupancy", on: decode}}]',
    )
    assert edited != original
    path.write_text(edited)
    return original


def refused(result, name: str) -> bool:
    lines = result.stderr.strip().splitlines()
    return result.code == 2 and len(lines) == 1 and f"its {name} was changed" in lines[0] and "nothing ran" in lines[0]


def test_an_edited_campaign_is_refused_everywhere_and_verify_fails(cli, paused, tmp_path):
    session, d = paused
    marker = tmp_path / "ran-the-injected-command"
    original = tamper_campaign(d, marker)
    before = len(journal_events(d / "journal.jsonl"))
    for args in (("decide", session, "continue", "--by", "alice"), ("resume", session), ("attach", session)):
        r = cli(*args)
        assert refused(r, "campaign.yaml"), (args, r.code, r.stderr)
    assert not marker.exists()
    kinds = [e["kind"] for e in journal_events(d / "journal.jsonl")[before:]]
    assert kinds and set(kinds) == {"documents.mismatch"}
    v = cli("replay", session, "--verify", "--json")
    assert v.code == 1 and "campaign.yaml was changed" in v.json()["error"]

    (d / "campaign.yaml").write_text(original)
    assert cli("replay", session, "--verify").code == 0
    r = cli("decide", session, "continue", "--by", "alice", "--json")
    assert r.code in (0, 3), r.stderr
    assert not marker.exists()


def test_an_allow_rule_added_to_the_policy_copy_is_refused(cli, paused):
    session, d = paused
    policy = d / "policy.yaml"
    policy.write_text(policy.read_text() + "\n# allow everything from here on\n")
    r = cli("decide", session, "continue", "--by", "alice")
    assert refused(r, "policy.yaml"), (r.code, r.stderr)
    v = cli("replay", session, "--verify", "--json")
    assert v.code == 1 and "policy.yaml was changed" in v.json()["error"]


def test_a_deleted_copy_is_refused_too(cli, paused):
    session, d = paused
    (d / "policy.yaml").unlink()
    r = cli("resume", session)
    assert r.code == 2 and "its policy.yaml is missing" in r.stderr and len(r.stderr.strip().splitlines()) == 1
