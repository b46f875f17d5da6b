"""The signoff TUI: one screen for live runs, attached sessions and read-only replays.

Every 50 ms the app asks its `EventSource` for new journal events, folds them into a `SessionView` and
redraws what changed — one batch per frame; no thread ever calls a widget. In replay mode the same
panels show the state as of the selected event.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Label, ProgressBar, Static, TabbedContent, TabPane

from agent.journal.events import entry
from agent.journal.view import ENDED, replay
from agent.stopping import clear_stop, request_stop
from tui.app_base import TICK_S
from tui.app_replay import NavigationApp
from tui.eventlist import EventList
from tui.output import OutputPane
from tui.screens import ArtifactScreen, HelpScreen, QuitScreen
from tui.source import EventSource


class PlanTable(DataTable[Text]):
    """The plan; says when its width changed, so that its columns are laid out again for it."""

    class Resized(Message):
        pass

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())


class SignoffApp(NavigationApp):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere still find it
    TITLE = "signoff"
    # Below 100 columns the panels stack (plan and evidence above, events and output below).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("q", "quit_app", "Quit"),
        # One quit path: Textual's own ctrl+q quit and ctrl+c hint would leave the run going without a word.
        Binding("ctrl+q,ctrl+c", "quit_app", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("g", "gate", "Gate"),
        Binding("f", "follow", "Follow"),
        Binding("e", "tab('events')", "Events"),
        Binding("o", "tab('output')", "Output"),
        # Panes, not every focusable widget (the tab strip): the screen's own Tab would stop there.
        Binding("tab", "pane(1)", "Next pane", show=False, priority=True),
        Binding("shift+tab", "pane(-1)", "Previous pane", show=False, priority=True),
        *(Binding(str(n), f"pane_number({n})", show=False) for n in (1, 2, 3)),
        Binding("z", "zoom", "Zoom"),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
        Binding("left", "step(-1)", "Back", show=False, priority=True),
        Binding("right", "step(1)", "Forward", show=False, priority=True),
        Binding("left_square_bracket", "jump(-1)", "Prev gate", priority=True),
        Binding("right_square_bracket", "jump(1)", "Next gate", priority=True),
        Binding("home", "edge(0)", "First", show=False, priority=True),
        Binding("end", "edge(1)", "Last", show=False, priority=True),
    ]

    def __init__(
        self, source: EventSource, *, mode: str = "live", prefill: str | None = None, prefill_gate: str | None = None
    ) -> None:
        super().__init__(source, mode=mode, prefill=prefill, prefill_gate=prefill_gate)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="note")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield PlanTable(id="plan", cursor_type="row", zebra_stripes=True)
                with Horizontal(id="progress"):
                    yield Label("pairs", id="bench-label", classes="progress-label")
                    yield ProgressBar(id="bench", show_eta=False, show_percentage=False)
                    yield Label("stress", id="stress-label", classes="progress-label")
                    yield ProgressBar(id="stress", show_eta=False, show_percentage=False)
                with VerticalScroll(id="evidence"):
                    yield Static(id="gate-panel")
                    yield Static(id="evidence-body")
            with TabbedContent(id="right", initial="tab-events"):
                with TabPane("Events", id="tab-events"):
                    yield EventList(id="events")
                with TabPane("Output", id="tab-output"):
                    yield OutputPane(id="output")
        yield Static(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#timeline", Static).display = self.mode == "replay"
        self.query_one("#note", Static).display = False
        self.query_one("#gate-panel", Static).display = False
        for selector, title in (("#plan", "1 plan"), ("#evidence", "2 evidence"), ("#right", "3 events · output")):
            self.query_one(selector).border_title = title
        self.query_one("#output", OutputPane).attach(getattr(self.source, "dir", None), replay=self.mode == "replay")
        self.pump()
        # The first frame before the gate: finding the gate reads the session's checkpoint, and that loads the
        # graph (a second or more): `attach` showed a blank screen that long. Now the screen shows the session at
        # once and the gate opens over it when found.
        self.call_after_refresh(self._first_frame_drawn)
        if self.mode != "replay":
            self.set_interval(TICK_S, partial(self._tick, self.pump))
            self.set_interval(1.0, partial(self._tick, self._clock))
        else:
            self.action_edge(1)

    def _first_frame_drawn(self) -> None:
        self.drawn = True
        if self.mode != "replay":
            self._tick(self.pump)

    def on_resize(self, event: events.Resize) -> None:
        # The status bar is cut to the width it has; the plan's columns follow their table's own size
        # (PlanTable.Resized). Text panels (events, evidence, output) reflow by themselves.
        self._tick(self._redraw_status)

    @on(PlanTable.Resized)
    def _plan_resized(self) -> None:
        self._tick(self._redraw_plan)

    # ------------------------------------------------------------------ the 20 Hz pump

    def pump(self) -> None:
        batch = self.source.poll()
        if batch:
            start = len(self.events)
            self.events.extend(batch)
            read = [entry(e) for e in batch]
            self.entries.extend(read)
            for i, e in enumerate(batch, start):
                self.commands.add(i, e)
            if self.mode == "replay":
                self.view = replay(self.entries)
                self._folded_upto = len(self.entries) - 1
            else:
                for e in read:
                    self.view.apply(e)
                self.query_one("#events", EventList).extend(batch, start, follow=self.follow)
                self._redraw()
                self._close_if_decided(batch)
        if self.mode == "replay":
            return
        if self.query_one("#right", TabbedContent).active == "tab-output":  # no reading for a hidden pane
            self.query_one("#output", OutputPane).refresh_live(self.commands, follow=self.follow)
        error = getattr(self.source, "error", None)
        if error and error != self.note:
            self.note = error
            self.notify(error, severity="error", timeout=10, markup=False)
            self._redraw_status()
        if self.view.status == "paused" and self.drawn:
            self._open_gate()
        if self.view.status in ("finished", "failed") and not self.source.busy() and not self._announced_end:
            self._announced_end = True
            self.notify(f"session {self.view.status} — q to quit and print the report", timeout=30)

    # ------------------------------------------------------------------ events and their output

    @on(EventList.Picked)
    def _picked(self, event: EventList.Picked) -> None:
        self.open_event(event.index)

    @on(EventList.Moved)
    def _moved(self) -> None:
        if self.follow and self.mode != "replay":
            self.follow = False
            self.notify("follow off — f follows the stream again", timeout=3)

    @on(TabbedContent.TabActivated, "#right")
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        # The output pane reads nothing while hidden: bring it up to date when it is shown.
        if event.pane.id == "tab-output":
            pane = self.query_one("#output", OutputPane)
            if self.mode == "replay":
                pane.show_event(self.commands, self.cursor)
            else:
                pane.refresh_live(self.commands, follow=self.follow)

    def open_event(self, index: int) -> None:
        """Enter on an event: its command's full output (or, while it runs, its live output)."""
        command = self.commands.for_event(index)
        if command is None:
            self.notify("this event has no command output", timeout=3)
            return
        if command.running:
            self.query_one("#output", OutputPane).pin(command.index)
            self.action_tab("output")
            return
        self.open_output(command.index)

    def open_output(self, index: int) -> None:
        command = self.commands.by_index.get(index)
        directory = getattr(self.source, "dir", None)
        if command is None or directory is None:
            self.bell()
            return
        self.push_screen(ArtifactScreen(command.title(), command.streams(directory.artifacts)))

    # ------------------------------------------------------------------ misc actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_quit_app(self) -> None:
        if self.stopping:
            self.notify("stopping: the step that is running finishes first, then signoff quits", timeout=4)
            return
        if isinstance(self.screen, QuitScreen) or self.leaving:
            return
        if self.source.busy() and self.view.status in ENDED:
            # The run has journaled its end and is only returning (its last writes; longer under load): nothing is
            # left to stop, so no question (ci75: a "q" on a "done · stopped" header asked whether to stop the run).
            self.leaving = True
            self.set_interval(0.1, self._quit_when_stopped)
            return
        if self.source.busy():  # a run goes on in this process: quitting stops it, so ask first
            self.push_screen(QuitScreen(self.view.activity, self.source.session), self._quit_answered)
            return
        self.exit(self.view.status)

    def _quit_answered(self, stop: bool | None) -> None:
        if not stop:
            return
        request_stop("operator-quit")  # honoured before the next command (or step): resume goes on from there
        self.stopping = True
        self.note = "stopping when the running command ends, then quitting …"
        self.notify(self.note, timeout=10)
        self.set_interval(0.2, self._quit_when_stopped)

    def _quit_when_stopped(self) -> None:
        """Quit once the run has returned: stopped by the operator's quit, or done after its end was journaled."""
        if not self.source.busy():
            clear_stop()  # a quit's stop is honoured: the run stopped (after a journaled end, nothing was asked)
            self.exit(self.view.status)

    def jump_to_option(self, option: int) -> None:
        table = self.query_one("#plan", DataTable)
        try:
            table.move_cursor(row=table.get_row_index(str(option)))
        except Exception:
            self.bell()
            return
        self.selected = option
        self._redraw_evidence()

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        # Textual saves into ~/Downloads and fails where there is none (servers, containers): use it when
        # it exists, else signoff's own directory, created if need be.
        if path is None:
            from agent.store.listing import home

            downloads = Path("~/Downloads").expanduser()
            target = downloads if downloads.is_dir() else home() / "screenshots"
            try:
                target.mkdir(parents=True, exist_ok=True)
            except OSError:
                target = Path.cwd()  # Textual says so if this one cannot be written either
            path = str(target)
        return super().deliver_screenshot(filename, path, time_format)  # it reports where, or why not

    def get_system_commands(self, screen: Any) -> Any:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Toggle follow", "Auto-scroll the event stream on or off", self.action_follow)
        yield SystemCommand("Help", "Keys and the one-line grammar", self.action_help)


class SignoffCommands(Provider):
    """Palette entries: jump to an option, open a command's output, jump to a gate (replay)."""

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, SignoffApp)
        matcher = self.matcher(query)
        for o in sorted(app.view.options.values(), key=lambda o: o.id):
            text = f"jump to option #{o.id} {o.title}"
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), partial(app.jump_to_option, o.id), help=o.status)
        for command in app.commands.finished()[:300]:
            text = f"output of {command.title()}"
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), partial(app.open_output, command.index))
        if app.mode == "replay":
            for i, e in enumerate(app.events):
                if e["kind"] == "gate.opened":
                    text = f"jump to gate {e['gate']} {e['gate_kind']}"
                    if (score := matcher.match(text)) > 0:
                        yield Hit(score, matcher.highlight(text), partial(app.select_event, i))


SignoffApp.COMMANDS = App.COMMANDS | {SignoffCommands}
