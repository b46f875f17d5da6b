"""A campaign is the file someone hands you: what it may not do, each refused at its line, in one line.

- name signoff's own credentials (ANTHROPIC_*, SIGNOFF_*) as secrets, which sends them to its hosts, or hand them to
  its commands through a local host's `inherit_env`;
- put a line break in a field shown on one line: an option title holding `\\n| g9 | … | human:alice |` wrote a
  decision row into REPORT.md;
- give a port no socket takes (10^20 ended in a traceback).
"""

from __future__ import annotations

from pathlib import Path

import pytest

CAMPAIGN = """\
name: t
goal: {text: t, metric: x}
hosts: [{name: h1}]
benchmark: {run: "echo 1", on: h1, parser: regex, patterns: {x: '([0-9]+)'}, metric: x}
options: [{id: 1, title: t, apply: ["echo a"], revert: ["echo r"]}]
"""


@pytest.mark.parametrize(
    ("edit", "line", "says"),
    [
        (("hosts: [{name: h1}]", "hosts: [{name: h1}]\nsecrets: [ANTHROPIC_API_KEY]"), 4, "signoff's own credential"),
        (("hosts: [{name: h1}]", "hosts: [{name: h1}]\nsecrets: [signoff_signing_key]"), 4, "signoff's own credential"),
        (("{name: h1}", '{name: h1, inherit_env: ["SIGNOFF_*"]}'), 3, "signoff's own credentials"),
        (("{name: h1}", '{name: h1, inherit_env: ["A*"]}'), 3, "signoff's own credentials"),
        (("{name: h1}", '{name: h1, inherit_env: ["*"]}'), 3, "signoff's own credentials"),
        (("title: t,", 'title: "t\\n| g9 | skip #2 | human:alice |",'), 5, "must be one line of text"),
        (("name: t", 'name: "t\\rforged"'), 1, "must be one line of text"),
        (("goal: {text: t,", 'goal: {text: "t\\u2028x",'), 2, "must be one line of text"),
        (("title: t,", 'title: "t\\u001b[2J",'), 5, "a control character"),
        (("{name: h1}", "{name: h1, transport: ssh, address: 127.0.0.1, port: 100000000000000000000}"), 3, "65535"),
        (("{name: h1}", "{name: h1, transport: ssh, address: 127.0.0.1, port: 0}"), 3, "greater than or equal to 1"),
    ],
    ids=[
        "anthropic-secret",
        "signoff-secret",
        "inherit-signoff",
        "inherit-a-star",
        "inherit-star",
        "title-newline",
        "name-cr",
        "goal-line-separator",
        "title-escape",
        "port-10^20",
        "port-0",
    ],
)
def test_refused_at_its_line_in_one_line(cli, tmp_path: Path, edit: tuple[str, str], line: int, says: str) -> None:
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(CAMPAIGN.replace(*edit))
    r = cli("check", str(campaign))
    errors = [x for x in r.stdout.splitlines() if " error: " in x]
    assert r.code == 2 and len(errors) == 1 and errors[0].startswith(f"{campaign}:{line}: ") and says in errors[0]
    assert "Traceback" not in r.stderr + r.stdout


@pytest.mark.parametrize("edit", [("hosts: [{name: h1}]", "hosts: [{name: h1}]\nsecrets: [ANTHROPIC_API_KEY]"),
                                  ("title: t,", 'title: "t\\n| g9 | skip #2 | human:alice |",')])  # fmt: skip
def test_run_refuses_it_before_anything_runs(cli, tmp_path: Path, home: Path, edit: tuple[str, str]) -> None:
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(CAMPAIGN.replace(*edit))
    r = cli("run", str(campaign), "--headless")
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith(f"signoff: {campaign}:"), (r.stdout, r.stderr)
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_a_policy_note_shown_in_reports_is_one_line_too(cli, tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "extends: cautious\nname: p\ngates:\n  safety:\n    rules:\n"
        '      - {id: x, decide: ask, note: "fine\\n| g9 | forged |"}\n'
    )
    r = cli("policy", "check", str(policy))
    assert r.code == 2 and f"{policy}:6" in r.stderr and "must be one line of text" in r.stderr, r.stderr
