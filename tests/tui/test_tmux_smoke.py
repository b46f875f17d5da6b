"""`make demo` in a real terminal, as a person would run it: tmux gives it a pty, we read the screen
and press keys. Runs whenever tmux is installed (`make test` installs it as root on Debian)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    def __init__(self, name: str) -> None:
        self.socket = f"signoff-smoke-{os.getpid()}-{name}"

    def tmux(self, *args: str) -> str:
        # A COLUMNS/LINES that something in this test process exported would size the app, not the pane.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False, env=env
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "smoke", "-S", "-200")

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.25)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")


def plan_row(screen: str, option: str) -> str:
    """The plan table's line for one option (its # column), as the terminal shows it."""
    return next(line for line in screen.splitlines() if re.search(rf"│ {re.escape(option)}\s", line))


@pytest.mark.heavy
@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_make_demo_in_a_terminal_shows_the_run_and_the_report(tmp_path: Path, size: tuple[int, int]) -> None:
    term = Terminal(f"demo-{size[0]}")
    home = tmp_path / "home"
    command = f"cd {ROOT} && SIGNOFF_HOME={home} TERM=xterm-256color make demo; echo EXIT=$?; sleep 120"
    term.tmux("new-session", "-d", "-s", "smoke", "-x", str(size[0]), "-y", str(size[1]), command)
    try:
        term.wait_for("LIVE", timeout=60)  # the TUI's status bar is up
        screen = term.wait_for("session finished", timeout=180)
        lines = screen.splitlines()
        status = next(line for line in lines if "LIVE" in line)
        # The phase and the state never give way: at 80 columns the policy and campaign names go first.
        assert re.search(r"\d\d:\d\d · .+ · (finished|done)", status), status
        header = next(line for line in lines if "│ #" in line and "option" in line)
        for column in ("status", "gain", "95% CI", "verdict"):
            assert column in header, header
        kept = plan_row(screen, "#3")
        assert "kept" in kept and re.search(r"\+2\d\.\d%", kept) and re.search(r"\+\d+\.\d…\+\d+\.\d", kept), kept
        assert "no-go" in plan_row(screen, "#1")
        assert re.search(r"pairs? [\d—]", screen) and re.search(r"stress \d/\d", screen)  # the counts
        assert "gate g7" in screen  # the event stream follows to the end (the last line may sit under a toast)
        term.tmux("send-keys", "-t", "smoke", "q")
        report = term.wait_for("EXIT=0", timeout=60)
        assert "#3 kept" in report and "journal:" in report
    finally:
        term.tmux("kill-server")


def paused_at_plan(home: Path, tmp_path: Path) -> str:
    """A headless session paused at its plan gate (cautious, except the plan gate asks)."""
    policy = tmp_path / "plan-asks.yaml"
    text = (
        (ROOT / "policies" / "presets" / "cautious.yaml")
        .read_text()
        .replace(
            "        when: proposed == 0\n        decide: approve", "        when: proposed == 0\n        decide: ask"
        )
    )
    policy.write_text(text.split("\ntests:")[0] + "\n")
    campaign = ROOT / "examples" / "decode-campaign" / "campaign.yaml"
    signoff = str(ROOT / ".venv" / "bin" / "signoff")
    out = subprocess.run(
        [signoff, "run", str(campaign), "--policy", str(policy), "--headless", "--json"],
        capture_output=True, text=True, env={**os.environ, "SIGNOFF_HOME": str(home)}, check=False, timeout=120,
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    return json.loads(out.stdout)["session"]


@pytest.mark.heavy
def test_decide_a_line_needing_no_confirmation_records_it_and_goes_on_on_screen(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = paused_at_plan(home, tmp_path)
    term = Terminal("decide-now")
    command = (
        f"cd {ROOT} && SIGNOFF_HOME={home} TERM=xterm-256color .venv/bin/signoff decide {session} approve --by bob; "
        "echo EXIT=$?; sleep 60"
    )
    term.tmux("new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", command)
    try:
        term.wait_for("LIVE", timeout=60)  # no gate to confirm: the run goes on, on screen
        term.wait_for("session finished", timeout=120)
        term.tmux("send-keys", "-t", "smoke", "q")
        report = term.wait_for("EXIT=0", timeout=60)
        assert "decided: APPROVE" in report and "#3 kept" in report
        journal = home / "sessions" / session / "journal.jsonl"
        plan = next(
            json.loads(x) for x in journal.read_text().splitlines() if '"gate_kind":"plan"' in x and '"decision"' in x
        )
        assert plan["by"] == "human:bob" and plan["decision"]["action"] == "approve"
    finally:
        term.tmux("kill-server")


@pytest.mark.heavy
@pytest.mark.parametrize("how", ["resume", "decide"])
def test_resume_and_decide_in_a_terminal_open_the_gate_on_screen(tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    session = paused_at_plan(home, tmp_path)
    term = Terminal(how)
    # `decide "stop"` needs a confirmation: the screen opens at the gate with the line echoed.
    args = f"resume {session}" if how == "resume" else f'decide {session} "stop" --by alice'
    command = f"cd {ROOT} && SIGNOFF_HOME={home} TERM=xterm-256color .venv/bin/signoff {args}; echo EXIT=$?; sleep 60"
    term.tmux("new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", command)
    try:
        term.wait_for("Gate g1 · plan", timeout=60)
        term.wait_for("▶ [y] approve", timeout=10)  # the recommended answer, first
        if how == "resume":
            term.tmux("send-keys", "-t", "smoke", "y")
            term.wait_for("Enter to confirm", timeout=30)
            term.tmux("send-keys", "-t", "smoke", "Enter")
            term.wait_for("session finished", timeout=120)
            term.tmux("send-keys", "-t", "smoke", "q")
            report = term.wait_for("EXIT=0", timeout=60)
            assert "#3 kept" in report
        else:
            # The echo, whole (a capture can catch a frame half painted: wait for its last words).
            echo = term.wait_for("Enter to confirm", timeout=30)
            assert "STOP — stop the campaign" in echo
            term.tmux("send-keys", "-t", "smoke", "Enter")
            # the header's state, not the word in the events: a "q" before the run is done asks whether to stop it
            term.wait_for("done · stopped", timeout=60)
            term.tmux("send-keys", "-t", "smoke", "q")
            term.wait_for("EXIT=0", timeout=60)
            journal = home / "sessions" / session / "journal.jsonl"
            stop = [json.loads(line) for line in journal.read_text().splitlines() if '"decision"' in line]
            assert stop[-1]["decision"]["action"] == "stop" and stop[-1]["by"] == "human:alice"  # --by holds
    finally:
        term.tmux("kill-server")


@pytest.mark.heavy
def test_ctrl_c_mid_run_asks_then_stops_between_two_commands_and_says_what_is_on_the_hosts(tmp_path: Path) -> None:
    # Was: ctrl+c showed Textual's "press ctrl+q to quit", and ctrl+q exited 130 while the run went on behind it
    # (a gate, a decision and `session.finished` were journaled after the quit), leaving the lock file naming a
    # dead process.
    home = tmp_path / "home"
    term = Terminal("quit-mid-run")
    campaign = ROOT / "examples" / "decode-campaign" / "campaign.yaml"
    command = (
        f"cd {ROOT} && SIGNOFF_HOME={home} TERM=xterm-256color .venv/bin/signoff run {campaign} --policy autonomous; "
        "echo EXIT=$?; sleep 60"
    )
    term.tmux("new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", command)
    try:
        term.wait_for("benchmark #", timeout=90)
        term.tmux("send-keys", "-t", "smoke", "C-c")
        term.wait_for("The run is still going", timeout=30)
        term.tmux("send-keys", "-t", "smoke", "y")
        term.wait_for("EXIT=130", timeout=120)
        said = " ".join(term.tmux("capture-pane", "-p", "-J", "-t", "smoke", "-S", "-200").split())
        # What is on the hosts depends on how far the run got before `y` (the Pilot test checks it against the journal).
        assert "signoff: the run stopped between two commands; " in said, said
        assert "on the hosts now: gpu-a: #" in said or "no option is applied on any host" in said, said
        assert "goes on from there" in said and "Traceback" not in said
        (session,) = [p for p in (home / "sessions").iterdir() if p.is_dir()]
        events = [json.loads(x) for x in (session / "journal.jsonl").read_text().splitlines()]
        assert events[-1]["kind"] == "session.interrupted" and events[-1]["reason"] == "operator-quit"
        assert (session / "lock").read_text() == ""  # the lease was given back: no dead process named as its holder
        # The second way on that the message names: give it up. What was not kept is rolled back and verified.
        assert f"`signoff abandon {session.name}` rolls back what was not kept, verifies, and ends it" in said, said
        env = {**os.environ, "SIGNOFF_HOME": str(home), "TERM": "dumb"}
        r = subprocess.run(
            [str(ROOT / ".venv/bin/signoff"), "abandon", session.name, "--json"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert r.returncode == 0 and json.loads(r.stdout)["abandoned"]["by"].startswith("human:"), r.stderr
        ends = [json.loads(x) for x in (session / "journal.jsonl").read_text().splitlines()]
        assert ends[-1]["kind"] == "session.finished" and ends[-1]["status"] == "stopped"
        assert all(e["verified"] for e in ends if e["kind"] == "rollback" and e["seq"] > events[-1]["seq"])
    finally:
        term.tmux("kill-server")
