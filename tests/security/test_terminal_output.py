"""M2 (issue 19): what a host prints reaches people's terminals. A command that prints a screen clear,
an OSC title, an OSC 8 link, backspaces, NUL and a 200 KB line, and a `--by` built to pass for a policy,
must not reach the screen as control sequences: headless progress, the report, the replay timeline and
the Markdown export show them as visible escapes; `--by` is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import fast
from tests.e2e.test_evidence import ALLOW_ALL
from tools.terminal import printable

EVIL = (
    r"printf 'ok\033[2J\033]0;pwned-title\007\033]8;;http://evil.example/\033\\click\033]8;;\033\\"
    r"\010\010\000END\n' >&2; exit 3"
)


def dangerous(text: str) -> list[str]:
    return [c for c in ("\x1b", "\x07", "\x08", "\x00", "\u202e") if c in text]


def test_printable_shows_every_control_and_cuts_long_lines():
    out = printable("a\x1b[2Jb\x1b]0;t\x07\x08\x00\u202e\u0085x\n" + "y" * 200_000)
    assert dangerous(out) == [] and "\\x1b[2J" in out and "\\u202e" in out and "\x85" not in out
    assert len(out) < 5_000 and "more characters" in out
    assert printable("z" * 10_000, max_line=None) == "z" * 10_000


UNSAFE_CHARS = [*map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]), "\u061c", "\u200e", "\u200f",
                *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]  # fmt: skip


@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(UNSAFE_CHARS)), max_size=60))
def test_no_unsafe_character_passes_whatever_surrounds_it(text: str) -> None:
    # The fast path (a line with nothing to escape is returned as it is) must never pass a character the escape
    # would have shown: each control, DEL, C1 and bidi character, among any others.
    out = printable(text)
    assert not any(c in out for c in UNSAFE_CHARS)
    assert printable(text, max_line=None) == out  # short: cutting cannot differ


@pytest.fixture
def evil_session(cli, variant, tmp_path):
    campaign = variant(
        edit=lambda t: fast(t).replace(
            '    - {run: "{{simserve}} health", on: decode, timeout: 10}',
            f'    - {{run: "{{{{simserve}}}} health", on: decode, timeout: 10}}\n'
            f'    - {{run: "{EVIL.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}", on: decode}}',
            1,
        ),
    )
    policy = tmp_path / "allow-all.yaml"
    policy.write_text(ALLOW_ALL % "")
    return cli("run", str(campaign), "--headless", "--policy", str(policy))


def test_host_output_reaches_no_screen_raw(cli, evil_session, tmp_path):
    r = evil_session
    assert r.code in (0, 1, 3), r.stderr[-1500:]
    assert dangerous(r.stdout) == [] and dangerous(r.stderr) == []
    session = next(w for w in (r.stdout + r.stderr).split() if w.count("-") == 2 and w[:8].isdigit())
    timeline = cli("replay", session)
    assert timeline.code == 0 and dangerous(timeline.stdout) == []
    assert all(len(line) < 10_000 for line in timeline.stdout.splitlines())
    md = tmp_path / "report.md"
    assert cli("replay", session, "--export", str(md)).code == 0
    assert dangerous(Path(md).read_text()) == []


@pytest.mark.parametrize("by", ["x\x1b[2K\rpolicy:cautious", "policy:cautious", "a" * 65, "bob\nalice"])
def test_by_cannot_dress_a_decision_up(cli, by):
    r = cli("decide", "20261204-000000-abcd", "approve", "--by", by)
    assert r.code == 2 and "--by" in r.stderr and dangerous(r.stderr) == [], r.stderr


def test_the_attack_reached_the_journal(cli, evil_session, home):
    """The escapes really were printed by the host (kept whole in the artifacts), so the checks above
    test the screen, not a campaign that never ran them."""
    journal = next((home / "sessions").iterdir()) / "journal.jsonl"
    text = journal.read_text()
    assert "pwned-title" in text or any(
        b"pwned-title" in p.read_bytes() for p in (journal.parent / "artifacts").glob("sha256-*")
    )


def screen_text(app) -> str:  # type: ignore[no-untyped-def]
    """Every character the app would send for its current screen, as the compositor renders it."""
    return "".join(seg.text for strip in app.screen._compositor.render_strips() for seg in strip)


async def test_the_tui_shows_host_output_and_a_hostile_journal_as_escapes(evil_session, home):
    """Rich's Text keeps ESC, so before the TUI sanitized its source a journal's strings and an artifact
    reached the terminal raw. Every step of the replay and the artifact screen are checked."""
    from agent.store.local import LocalStore
    from tui.app import SignoffApp
    from tui.screens import ArtifactScreen
    from tui.source import ReplaySource

    d = LocalStore().find(next((home / "sessions").iterdir()).name)
    hostile = "\x1b[2J\x1b]0;pwned-title\x07\u202eevil"
    lines = d.journal.read_text().splitlines()
    # A journal someone else wrote: hostile text where the TUI shows titles, findings and questions.
    lines = [line.replace('"title":"', '"title":"' + json.dumps(hostile)[1:-1]) for line in lines]
    d.journal.write_text("\n".join(lines) + "\n")
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert app.events, "the replay shows nothing"
        seen = 0
        for key in ["home", *["right_square_bracket"] * 12, "end"]:
            await pilot.press(key)
            await pilot.pause()
            text = screen_text(app)
            assert dangerous(text) == [], (key, dangerous(text))
            seen += "pwned" in text or "\\x1b" in text
        assert seen, "the hostile text never reached the screen: the check tested nothing"
        for artifact in (d.root / "artifacts").glob("sha256-*"):
            if b"pwned-title" in artifact.read_bytes():
                # The title is a command line, as hostile as its output can be.
                app.push_screen(ArtifactScreen(f"$ {hostile} · gpu-a (stress)", [("stdout", artifact)]))
                await pilot.pause()
                text = screen_text(app)
                assert "pwned-title" in text and "evil" in text and dangerous(text) == [], dangerous(text)
                app.pop_screen()


def test_a_forged_session_rule_reaches_the_timeline_as_text(cli, home):
    # Replay names a session rule in words (issue 36): the rule's id, condition and line come from the journal,
    # which anyone who can write the store can rewrite (the chain recomputed).
    import shutil

    from tests.security.forge import rechain

    src = Path(__file__).parents[1] / "fixtures" / "journal-v1" / "ask-one-liners"
    session = json.loads((src / "meta.json").read_text())["id"]
    d = home / "sessions" / session
    shutil.copytree(src, d)

    def hostile(record: dict) -> None:
        if record["kind"] == "rule.added":
            record["rule"]["id"] = "session-rule:1\x1b]0;pwned\x07"
            record["rule"]["when"] = "x\x1b[2J\x1b[31m"
            record["raw"] = "go\x1b[1A\r"

    lines = (d / "journal.jsonl").read_bytes().splitlines()
    (d / "journal.jsonl").write_bytes(b"\n".join(rechain(lines, hostile)) + b"\n")
    timeline = cli("replay", session)
    assert "session rule session-rule:1" in timeline.stdout, timeline.stderr[-500:]
    assert dangerous(timeline.stdout) == [] and "\x1b" not in timeline.stdout
