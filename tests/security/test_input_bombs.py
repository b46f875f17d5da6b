"""M5 (issue 19): input built to hang or kill the process must get one line and exit 2, quickly and in
bounded memory: a YAML alias bomb (5 KB that expands to gigabytes), a thousand nesting levels, a
variable that refers to itself, a file larger than any campaign, and argv bytes that are not UTF-8."""

from __future__ import annotations

import os

import pytest

from tests.conftest import fast


def one_line(r, needle: str) -> bool:
    lines = r.stderr.strip().splitlines()
    return r.code == 2 and len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
)


@pytest.mark.parametrize("where", ["campaign", "policy"])
def test_an_alias_bomb_is_refused_in_one_line(cli, variant, tmp_path, where):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)  # 10^10 values once expanded
    assert len(ALIAS_BOMB) < 5_000
    args = ["run", str(bomb)] if where == "campaign" else ["run", str(variant()), "--policy", str(bomb)]
    r = cli(*args, timeout=60)
    assert one_line(r, "expands to more than"), r.stderr[-500:]


def test_deep_nesting_is_refused_in_one_line(cli, tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 1000 + "]" * 1000 + "\n")
    r = cli("run", str(deep), timeout=60)
    assert one_line(r, "nested too deeply"), r.stderr[-500:]


@pytest.mark.parametrize(
    "cycle", ['{a: "{{a}}"}', '{a: "{{b}}", b: "{{a}}"}', '{a: "{{b}}{{b}}", b: "{{c}}{{c}}", c: "{{a}}"}']
)
def test_a_variable_that_refers_to_itself_is_refused_before_anything_runs(cli, variant, home, cycle):
    campaign = variant(
        edit=lambda t: fast(t).replace('vars:\n  simserve: "{{python}} simserve.py"', f"vars: {cycle}\nx_unused:", 1)
    )
    text = campaign.read_text()
    campaign.write_text(text.replace("\nx_unused:", "\n", 1).replace("{{simserve}}", "{{python}} simserve.py"))
    r = cli("run", str(campaign))
    assert one_line(r, "refers to itself"), r.stderr[-500:]
    assert ":" in r.stderr.split()[1]  # file:line
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_a_file_larger_than_any_campaign_is_refused_unread(cli, tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (5 * 1024 * 1024) + "\n")
    r = cli("run", str(big))
    assert one_line(r, "at most"), r.stderr[-500:]


def test_argv_that_is_not_utf8_is_one_line(cli):
    r = cli("decide", "20261204-000000-abcd", os.fsdecode(b"approve \xff\xfe"))
    assert one_line(r, "is not valid UTF-8"), r.stderr[-500:]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text",
    [ALIAS_BOMB, "[" * 5_000 + "]" * 5_000, "options: oops\nstress: [{runs: lots}]", "- a list\n", "::\n\t:"],
    ids=["alias-bomb", "deep", "wrong-types", "not-a-mapping", "not-yaml"],
)
def test_the_tui_reads_a_hostile_journaled_campaign_with_the_files_bounds(text):
    """A journal someone else wrote (an import, a shared store) carries the campaign text the TUI folds;
    it was read with an unbounded yaml.safe_load, so a 5 KB alias bomb in `session.started` hung replay."""
    from agent.journal.events import entry
    from agent.journal.view import SessionView

    view = SessionView()
    view.apply(entry({"kind": "session.started", "seq": 0, "ts": "2026-12-04T00:00:00Z", "campaign_text": text,
                      "policy_text": text}))  # fmt: skip
    assert view.status == "running" and view.options == {} and view.stress_total == 0


@pytest.mark.parametrize("kind", ["safety", "command", "plan"])
def test_a_line_of_overlapping_fillers_is_read_in_linear_time(kind):
    # "ok so ok so … keep it": "ok" and "ok so" are both fillers, so a pattern repeating a group over them has 2^n
    # ways to fail (at 22 leads, 6.6 s; at the line cap, beyond any lifetime). The reader strips one lead at a time.
    # In its own process: a regex holds the interpreter while it backtracks, so a thread could not be timed out.
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = (
        "from policies.decisions import MAX_CHARS, DecisionError, parse_decision\n"
        "line = ('ok so ' * MAX_CHARS)[: MAX_CHARS - 8] + ' keep it'\n"
        "try:\n"
        f"    parse_decision(line, kind={kind!r}, options=(1, 2, 3))\n"
        "except DecisionError:\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
