"""The output pane: what the running command prints, as it prints it, with its host and purpose.

Live, it tails the command's spool (`agent/exec/live.py`) in the session's working directory, reading
only what was added since the last tick; it follows the newest running command unless the person
pinned one (Enter on its line in the event stream). In replay it shows the output of the command the
selected event belongs to, from its artifacts. Every line passes through `printable` first: command
output is the least trusted text on the screen.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import RichLog, Static

from agent.exec.live import SpoolTail, spool_path
from tools.terminal import printable
from tui.commands import Command, Commands

MAX_LINES = 2_000
ARTIFACT_LIMIT = 200_000


class OutputPane(Vertical):
    DEFAULT_CSS = """
    OutputPane { height: 1fr; }
    OutputPane #output-head { height: auto; color: $text; background: $panel; }
    OutputPane RichLog { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.directory: Any = None
        self.replaying = False
        self.current: int | None = None  # the command shown (its command.started index)
        self.pinned: int | None = None
        self.tail: SpoolTail | None = None
        self._head_shown = ""

    def compose(self) -> ComposeResult:
        yield Static(Text("no command has run yet", style="dim"), id="output-head")
        yield RichLog(id="output-log", max_lines=MAX_LINES, wrap=True, markup=False, auto_scroll=True)

    def attach(self, directory: Any, *, replay: bool) -> None:
        self.directory, self.replaying = directory, replay

    def pin(self, index: int) -> None:
        self.pinned = index
        self.current = None  # shown afresh on the next tick

    # -- live

    def refresh_live(self, commands: Commands, *, follow: bool) -> None:
        running = commands.running()
        chosen = commands.by_index.get(self.pinned) if self.pinned is not None else None
        if chosen is None and running and (follow or self.current is None):
            chosen = running[-1]
        if chosen is None and self.current is not None:
            chosen = commands.by_index.get(self.current)
        if chosen is None:
            return
        if chosen.index != self.current:
            self._start(chosen)
        if self.tail is not None:
            lines = self.tail.read()  # after the end too: the open file still has its last lines
            if lines:
                self._write(lines)
        self._head(chosen)
        if not chosen.running and self.tail is not None:
            if not self.tail.opened:  # it came and went between two looks: show it from its artifacts
                self._from_artifacts(chosen)
            self.tail.close()
            self.tail = None  # ended; the whole output is one Enter away
            if self.pinned == chosen.index:
                self.pinned = None

    def _start(self, command: Command) -> None:
        if self.tail is not None:
            self.tail.close()
        self.current = command.index
        self.query_one("#output-log", RichLog).clear()
        live = self.directory.work / "live" if self.directory is not None else None
        if command.running and live is not None and command.seq >= 0:
            self.tail = SpoolTail(spool_path(live, command.seq))
        else:
            self.tail = None
            self._from_artifacts(command)

    def _head(self, command: Command) -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("▶ " if command.running else "■ ", style="bold green" if command.running else "dim")
        text.append(printable(command.title()), style="bold")
        if command.running and self.tail is not None and not self.tail.path.exists() and not self.tail.offset:
            text.append("  (no live output here: it is spooled on the machine that runs the session)", style="dim")
        elif not command.running:
            text.append("  · Enter on its line opens all of it", style="dim")
        if text.plain != self._head_shown:  # the pane is read 20 times a second: redraw only on change
            self._head_shown = text.plain
            self.query_one("#output-head", Static).update(text)

    # -- replay, and commands that ended before we looked

    def show_event(self, commands: Commands, index: int) -> None:
        command = commands.for_event(index)
        if command is None or command.index == self.current:
            return
        self.current = command.index
        self.query_one("#output-log", RichLog).clear()
        self._from_artifacts(command)
        self._head(command)

    def _from_artifacts(self, command: Command) -> None:
        if self.directory is None:
            return
        lines: list[tuple[str, str]] = []
        for stream, path in command.streams(self.directory.artifacts):
            try:
                with path.open("rb") as fh:  # the end of it: an artifact may be gigabytes
                    fh.seek(max(0, path.stat().st_size - ARTIFACT_LIMIT))
                    data = fh.read(ARTIFACT_LIMIT)
            except OSError:
                continue
            lines += [(stream, line) for line in data.decode(errors="replace").splitlines()]
        self._write(lines)

    def _write(self, lines: list[tuple[str, str]]) -> None:
        log = self.query_one("#output-log", RichLog)
        text = Text()
        for i, (stream, line) in enumerate(lines[-MAX_LINES:]):
            if i:
                text.append("\n")
            text.append(printable(line), style="red" if stream != "stdout" else "")
        log.write(text)
