"""The signoff TUI: one screen for live runs, attached sessions and read-only replays.

Every 50 ms the app asks its `EventSource` for new journal events, folds them into a `View` and
redraws what changed — one batch per frame; no thread ever calls a widget. In replay mode the
same panels show the state as of the selected event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Label, ProgressBar, RichLog, Sparkline, Static

from agent.journal.events import Entry, entry
from agent.journal.view import SessionView, replay
from tui import render
from tui.screens import ArtifactScreen, GateScreen, HelpScreen
from tui.source import EventSource, SanitizedSource

TICK_S = 0.05
MAX_LINES = 5_000
MARKS = ("gate.opened", "decision")  # where [ and ] jump to in replay


class SignoffApp(App[str | None]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere still find it
    TITLE = "signoff"
    BINDINGS = [
        Binding("q", "quit_app", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("g", "gate", "Gate"),
        Binding("f", "follow", "Follow"),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
        Binding("left", "step(-1)", "Back", show=False, priority=True),
        Binding("right", "step(1)", "Forward", show=False, priority=True),
        Binding("left_square_bracket", "jump(-1)", "Prev gate", priority=True),
        Binding("right_square_bracket", "jump(1)", "Next gate", priority=True),
        Binding("home", "edge(0)", "First", show=False, priority=True),
        Binding("end", "edge(1)", "Last", show=False, priority=True),
    ]

    mode: reactive[str] = reactive("live", bindings=True)
    follow: reactive[bool] = reactive(True)

    def __init__(self, source: EventSource, *, mode: str = "live") -> None:
        super().__init__()
        self.source: EventSource = source if isinstance(source, SanitizedSource) else SanitizedSource(source)
        self.set_reactive(SignoffApp.mode, mode)
        self.view = SessionView()
        self.events: list[dict[str, Any]] = []
        self.entries: list[Entry] = []  # the same lines read into typed events, once each
        self.cursor = -1  # replay: index of the selected event
        self.selected: int | None = None  # option shown in the evidence panel
        self.gate_open = False
        self.later: str | None = None  # a gate the person chose to answer later (not reopened by itself)
        self.note: str | None = None
        self._shown_rows: dict[int, list[str]] = {}
        self._followed: int | None = None
        self._announced_end = False

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield DataTable(id="plan", cursor_type="row", zebra_stripes=True)
                with Horizontal(id="progress"):
                    yield Label("pairs", classes="progress-label")
                    yield ProgressBar(id="bench", show_eta=False)
                    yield Label("stress", classes="progress-label")
                    yield ProgressBar(id="stress", show_eta=False)
                with VerticalScroll(id="evidence"):
                    yield Static(id="evidence-body")
                    with Horizontal(id="arms"):
                        yield Label("A", classes="arm-label")
                        yield Sparkline([], id="arm-a")
                        yield Label("B", classes="arm-label")
                        yield Sparkline([], id="arm-b")
            yield RichLog(id="events", max_lines=MAX_LINES, wrap=True, markup=False, auto_scroll=True, min_width=20)
        yield Static(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#plan", DataTable)
        for label, width in (("#", 3), ("option", 16), ("status", 10), ("verdict", 6), ("gain", 6), ("95% CI", 12)):
            table.add_column(label, key=label, width=width)
        self.query_one("#timeline", Static).display = self.mode == "replay"
        self.pump()
        if self.mode != "replay":
            self.set_interval(TICK_S, partial(self._tick, self.pump))
            self.set_interval(1.0, partial(self._tick, self._redraw_status))
        else:
            self.action_edge(1)

    # ------------------------------------------------------------------ the 20 Hz pump

    def _tick(self, callback: Callable[[], None]) -> None:
        # While the app closes, its widgets are removed before its timers stop: a last tick finds
        # nothing to draw on, and that is not an error.
        try:
            callback()
        except NoMatches:
            if self.is_running and not self._exit:
                raise

    def pump(self) -> None:
        batch = self.source.poll()
        if batch:
            self.events.extend(batch)
            read = [entry(e) for e in batch]
            self.entries.extend(read)
            if self.mode == "replay":
                self.view = replay(self.entries)
            else:
                for e in read:
                    self.view.apply(e)
                self._write_events(batch)
                self._redraw()
        if self.mode == "replay":
            return
        error = getattr(self.source, "error", None)
        if error and error != self.note:
            self.note = error
            self.notify(error, severity="error", timeout=10)
            self._redraw_status()
        if self.view.status == "paused":
            self._open_gate()
        if self.view.status in ("finished", "failed") and not self.source.busy() and not self._announced_end:
            self._announced_end = True
            self.notify(f"session {self.view.status} — q to quit and print the report", timeout=30)

    def _write_events(self, batch: list[dict[str, Any]]) -> None:
        lines = [t for t in (render.event_line(e) for e in batch) if t is not None]
        if lines:
            log = self.query_one("#events", RichLog)
            log.write(Text("\n").join(lines), scroll_end=self.follow)

    # ------------------------------------------------------------------ drawing

    def _redraw(self) -> None:
        self._redraw_plan()
        self._redraw_evidence()
        self._redraw_progress()
        self._redraw_status()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def _redraw_status(self) -> None:
        now = self.now() if self.mode != "replay" else None
        note = self.note if self.mode != "replay" else None
        self.query_one("#status", Static).update(render.status_line(self.view, mode=self.mode, now=now, note=note))

    def _redraw_plan(self) -> None:
        table = self.query_one("#plan", DataTable)
        for o in sorted(self.view.options.values(), key=lambda o: o.id):
            row = render.plan_row(o)
            plain = [c.plain for c in row]
            if self._shown_rows.get(o.id) == plain:
                continue
            if o.id in self._shown_rows:
                for col, cell in zip(("#", "option", "status", "verdict", "gain", "95% CI"), row, strict=True):
                    table.update_cell(str(o.id), col, cell)
            else:
                table.add_row(*row, key=str(o.id))
            self._shown_rows[o.id] = plain
        if self.view.current is not None and self.view.current != self._followed:
            # A new option started: show its evidence (the person can move away with ↑ ↓).
            self._followed = self.selected = self.view.current
        if self.selected is not None and str(self.selected) in table.rows:
            row = table.get_row_index(str(self.selected))
            if table.cursor_row != row:
                table.move_cursor(row=row)

    def _redraw_evidence(self) -> None:
        option = self.view.options.get(self.selected) if self.selected is not None else None
        self.query_one("#evidence-body", Static).update(render.evidence(option))
        a = render.arm_values(option, "A") if option else []
        b = render.arm_values(option, "B") if option else []
        self.query_one("#arm-a", Sparkline).data = a
        self.query_one("#arm-b", Sparkline).data = b
        self.query_one("#arms").display = bool(a or b)

    def _redraw_progress(self) -> None:
        bench = self.query_one("#bench", ProgressBar)
        if self.view.bench:
            done, of = self.view.bench
            bench.update(total=max(of, 1), progress=done)
        else:
            bench.update(total=1, progress=0)
        stress = self.query_one("#stress", ProgressBar)
        stress.update(total=max(self.view.stress_total, 1), progress=min(self.view.stress_done, self.view.stress_total))

    @on(DataTable.RowHighlighted, "#plan")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.selected = int(event.row_key.value)
            self._redraw_evidence()

    # ------------------------------------------------------------------ gates

    def action_gate(self) -> None:
        self._open_gate(manual=True)

    def _open_gate(self, *, manual: bool = False) -> None:
        if self.mode == "replay" or self.gate_open or self.source.busy():
            return
        pending = self.source.pending()
        if pending is None or (not manual and pending.gate["id"] == self.later):
            return
        self.gate_open = True
        self.push_screen(GateScreen(self.source, pending), partial(self._gate_closed, pending.gate["id"]))

    def _gate_closed(self, gate_id: str, answered: str | None) -> None:
        self.gate_open = False
        if answered is None:
            # "Ask later": leave it paused; `g` reopens it, `q` quits and the session waits for `signoff attach`.
            self.later = gate_id
            self.note = f"gate {gate_id} waits — g to answer, q to quit"
        else:
            self.note = None
        self._redraw_status()

    # ------------------------------------------------------------------ replay

    def _select_event(self, index: int) -> None:
        if not self.events:
            return
        self.cursor = max(0, min(index, len(self.events) - 1))
        self.view = replay(self.entries, self.cursor)
        start = max(0, self.cursor - 400)
        lines = [t for t in (render.event_line(e) for e in self.events[start : self.cursor + 1]) if t is not None]
        log = self.query_one("#events", RichLog)
        log.clear()
        if lines:
            log.write(Text("\n").join(lines), scroll_end=True)
        self._followed = None
        self._shown_rows.clear()
        self.query_one("#plan", DataTable).clear()
        self._redraw()
        e = self.events[self.cursor]
        bar = Text(f" event {self.cursor + 1}/{len(self.events)} ", style="reverse")
        bar.append(f" {e['kind']} ", style="bold")
        bar.append(render.event_line(e) or "")
        bar.append("   ← → step · [ ] gate/decision · home/end", style="dim")
        self.query_one("#timeline", Static).update(bar)

    def action_step(self, delta: int) -> None:
        if self.mode == "replay":
            self._select_event(self.cursor + delta)

    def action_jump(self, direction: int) -> None:
        if self.mode != "replay":
            return
        indices = range(self.cursor + 1, len(self.events)) if direction > 0 else range(self.cursor - 1, -1, -1)
        for i in indices:
            if self.events[i]["kind"] in MARKS:
                self._select_event(i)
                return
        self.bell()

    def action_edge(self, end: int) -> None:
        if self.mode == "replay":
            self._select_event(len(self.events) - 1 if end else 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("step", "jump", "edge"):
            return self.mode == "replay"
        if action == "gate":
            return self.mode != "replay"
        return True

    # ------------------------------------------------------------------ misc actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_follow(self) -> None:
        self.follow = not self.follow
        self.query_one("#events", RichLog).auto_scroll = self.follow
        self.notify(f"follow {'on' if self.follow else 'off'}", timeout=2)

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_quit_app(self) -> None:
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

    def open_artifact(self, name: str) -> None:
        directory = getattr(self.source, "dir", None)
        if directory is not None:
            self.push_screen(ArtifactScreen(directory.artifacts / name))

    def artifacts(self) -> list[tuple[str, str]]:
        """(name, what produced it) for every artifact the journal mentions, newest first."""
        found: dict[str, str] = {}
        for e in reversed(self.events):
            for key in ("artifact", "stderr_artifact", "diagnosis"):
                name = e.get(key)
                if isinstance(name, str) and name.startswith("sha256-") and name not in found:
                    opt = f"#{e['option']} " if e.get("option") is not None else ""
                    found[name] = f"{opt}{e['kind']} {e.get('purpose') or e.get('scenario') or ''} {key}".strip()
        return list(found.items())

    def get_system_commands(self, screen: Any) -> Any:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Toggle follow", "Auto-scroll the event stream on or off", self.action_follow)
        yield SystemCommand("Help", "Keys and the one-line grammar", self.action_help)


class SignoffCommands(Provider):
    """Palette entries: jump to an option, open an artifact, jump to a gate (replay)."""

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, SignoffApp)
        matcher = self.matcher(query)
        for o in sorted(app.view.options.values(), key=lambda o: o.id):
            text = f"jump to option #{o.id} {o.title}"
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), partial(app.jump_to_option, o.id), help=o.status)
        for name, what in app.artifacts()[:200]:
            text = f"open artifact {what} {name[:19]}"
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), partial(app.open_artifact, name))
        if app.mode == "replay":
            for i, e in enumerate(app.events):
                if e["kind"] == "gate.opened":
                    text = f"jump to gate {e['gate']} {e['gate_kind']}"
                    if (score := matcher.match(text)) > 0:
                        yield Hit(score, matcher.highlight(text), partial(app._select_event, i))


SignoffApp.COMMANDS = App.COMMANDS | {SignoffCommands}
