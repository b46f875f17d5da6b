"""`make demo` in a real terminal, as a person would run it: tmux gives it a pty, we read the screen
and press keys. Runs whenever tmux is installed (`make test` installs it as root on Debian)."""

from __future__ import annotations

import os
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
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False).stdout

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


def test_make_demo_in_a_terminal_shows_the_run_and_the_report(tmp_path: Path) -> None:
    term = Terminal("demo")
    home = tmp_path / "home"
    command = f"cd {ROOT} && SIGNOFF_HOME={home} TERM=xterm-256color make demo; echo EXIT=$?; sleep 120"
    term.tmux("new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", command)
    try:
        term.wait_for("decode-throughput-c90", timeout=60)  # the TUI's status bar is up
        screen = term.wait_for("session finished", timeout=180)
        assert "kept" in screen and "no-go" in screen  # the plan panel shows the outcomes
        term.tmux("send-keys", "-t", "smoke", "q")
        report = term.wait_for("EXIT=0", timeout=60)
        assert "#3 kept" in report and "journal:" in report
    finally:
        term.tmux("kill-server")
