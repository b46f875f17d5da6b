"""The signoff TUI: one screen for live runs, attached sessions and read-only replays.

Every 50 ms the app asks its `EventSource` for new journal events, folds them into a `SessionView` and
redraws what changed — one batch per frame; no thread ever calls a widget. In replay mode the same
panels show the state as of the selected event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, ScreenStackError, SystemCommand
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Label, ProgressBar, Static, TabbedContent, TabPane

from agent.journal.events import Entry, entry
from agent.journal.view import ENDED, SessionView, replay
from agent.stopping import clear_stop, request_stop
from tui import render
from tui.commands import Commands
from tui.eventlist import EventList
from tui.output import OutputPane
from tui.plot import figure
from tui.screens import ArtifactScreen, GateScreen, HelpScreen, QuitScreen
from tui.source import EventSource, SanitizedSource

if TYPE_CHECKING:
    from tui.abplot import ABPlot

TICK_S = 0.05
_NOTHING = object()
REPLAY_WINDOW = 400  # events shown before the selected one in replay
MARKS = ("gate.opened", "decision")  # where [ and ] jump to in replay
GATE_EVENTS = ("gate.opened", "decision", "decision.rejected", "session.paused", "rule.added")


class PlanTable(DataTable[Text]):
    """The plan; says when its width changed, so that its columns are laid out again for it."""

    class Resized(Message):
        pass

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())


class SignoffApp(App[str | None]):
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

    mode: reactive[str] = reactive("live", bindings=True)
    follow: reactive[bool] = reactive(True)

    def __init__(
        self, source: EventSource, *, mode: str = "live", prefill: str | None = None, prefill_gate: str | None = None
    ) -> None:
        super().__init__()
        self.source: EventSource = source if isinstance(source, SanitizedSource) else SanitizedSource(source)
        self.set_reactive(SignoffApp.mode, mode)
        self.view = SessionView()
        self.events: list[dict[str, Any]] = []
        self.entries: list[Entry] = []  # the same lines read into typed events, once each
        self.commands = Commands()  # every command the journal mentions: started, finished, its output
        self.cursor = -1  # replay: index of the selected event
        self._folded_upto: int | None = None  # replay: the last event `view` has folded (None: not a replay fold)
        self.selected: int | None = None  # option shown in the evidence panel
        self.gate_open = False
        self.later: str | None = None  # a gate the person chose to answer later (not reopened by itself)
        self.prefill = prefill  # a line typed on the command line (`signoff decide`), shown at the first gate
        self.prefill_gate = prefill_gate  # the gate that line was given for: shown at no other
        self.dialog: GateScreen | None = None  # the gate dialog on screen
        self.elsewhere: dict[str, str] = {}  # gate → why its dialog closed: decided by someone else
        # After a dialog closed under the person's hands, the next gate opens only when asked for (g): keys
        # typed for the gate that went must not land in the dialog of the gate that came.
        self.held = False
        self.answered: dict[str, int] = {}  # gate → how many rules were journaled when it was answered
        self.note: str | None = None
        self._plan_rows: dict[int, list[str]] = {}
        self._shown: dict[str, object] = {}  # selector → the key of what it shows (see _show)
        self._plan_layout: list[tuple[str, int]] = []
        self._followed: int | None = None
        self._announced_end = False
        self.stopping = False  # the operator quit while the run went on: it stops before its next command
        self.leaving = False  # the operator quit after the run had journaled its end: signoff quits once it returns
        self.drawn = False  # the first frame is on screen (a gate is looked for only then)

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

    def _tick(self, callback: Callable[[], None]) -> None:
        # While the app closes, its widgets and then its screens are removed before its timers stop: a last tick
        # finds nothing to draw on, or no screen at all (ci71: the clock's), and that is not an error.
        try:
            callback()
        except (NoMatches, ScreenStackError):
            if self.is_running and not self._exit:
                raise

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

    # ------------------------------------------------------------------ drawing

    def _redraw(self) -> None:
        self._redraw_plan()
        self._redraw_evidence()
        self._redraw_progress()
        self._redraw_status()

    def _show(self, selector: str, content: Any, key: object, build: Callable[[], Any] | None = None) -> None:
        """Update a Static only when what it shows changed: every update lays the screen out again, and
        at 20 frames a second that is most of what the app costs (and what the run's thread waits for)."""
        if self._shown.get(selector, _NOTHING) == key:
            return
        self._shown[selector] = key
        self.query_one(selector, Static).update(build() if build is not None else content)

    def now(self) -> datetime:
        return datetime.now(UTC)

    def _clock(self) -> None:
        # Under a dialog the status bar is behind the dimmed backdrop: redrawing its clock each second repainted
        # the whole backdrop (most of what a screen left open at a gate cost). It catches up when the dialog goes.
        if self.screen is self.screen_stack[0]:
            self._redraw_status()

    def _redraw_status(self) -> None:
        now = self.now() if self.mode != "replay" else None
        status = render.status_line(self.view, mode=self.mode, now=now, width=max(20, self.size.width))
        self._show("#status", status, status.plain)
        note = self.query_one("#note", Static)
        shown = self.note if self.mode != "replay" else None
        note.display = bool(shown)
        self._show("#note", Text(shown or "", style="bold red"), shown)

    def _redraw_plan(self) -> None:
        table = self.query_one("#plan", DataTable)
        options = sorted(self.view.options.values(), key=lambda o: o.id)
        cells = [render.plan_cells(o) for o in options]
        width = table.scrollable_content_region.width or self.size.width // 2  # inside the border
        layout = render.plan_layout(cells, width)
        if layout != self._plan_layout:
            table.clear(columns=True)
            for key, w in layout:
                table.add_column(key, key=key, width=w)
            self._plan_layout, self._plan_rows = layout, {}
        widths = dict(layout)
        for o, row in zip(options, cells, strict=True):
            shown = [render.fit(row[key], widths[key]) for key, _ in layout]
            plain = [c.plain for c in shown]
            if self._plan_rows.get(o.id) == plain:
                continue
            if o.id in self._plan_rows:
                for (key, _), cell in zip(layout, shown, strict=True):
                    table.update_cell(str(o.id), key, cell)
            else:
                table.add_row(*shown, key=str(o.id))
            self._plan_rows[o.id] = plain
        if self.view.current is not None and self.view.current != self._followed:
            # A new option started: show its evidence (the person can move away with ↑ ↓).
            self._followed = self.selected = self.view.current
        if self.selected is not None and str(self.selected) in table.rows:
            row = table.get_row_index(str(self.selected))
            if table.cursor_row != row:
                table.move_cursor(row=row)

    def _redraw_evidence(self) -> None:
        option = self.view.options.get(self.selected) if self.selected is not None else None
        self._show("#evidence-body", None, render.evidence_key(option), lambda: render.evidence(option))
        fig = figure(option, self.view) if option is not None else None
        plots = self.query("#ab")
        if plots or (fig is not None and not fig.empty):
            if not plots:
                from tui.abplot import ABPlot  # plotext, when there is something to plot

                self.query_one("#evidence", VerticalScroll).mount(ABPlot(id="ab"))
            plot = cast("ABPlot", self.query_one("#ab"))
            plot.display = fig is not None and not fig.empty
            plot.show(fig)
        panel = self.query_one("#gate-panel", Static)
        gate = self._gate_in_view()
        panel.display = gate is not None
        if gate is not None:
            self._show("#gate-panel", None, render.gate_key(gate), lambda: render.gate_panel(gate))

    def _gate_in_view(self) -> Any:
        """The gate to show above the evidence: in replay the one the selected event belongs to (else the
        one open at that point); live, the one waiting for a person."""
        if self.mode == "replay" and 0 <= self.cursor < len(self.events):
            e = self.events[self.cursor]
            if e["kind"] in GATE_EVENTS and e.get("gate"):
                found = [g for g in self.view.gates if g.gate == e["gate"]]
                if found:
                    return found[-1]
        if self.view.status in ("waiting", "paused"):
            return self.view.open_gate
        return None

    def _redraw_progress(self) -> None:
        bench = self.query_one("#bench", ProgressBar)
        done, of = self.view.bench or (0, 0)
        bench.update(total=max(of, 1), progress=min(done, max(of, 1)))
        label = f"pair {done}/{of}" if of else "pairs —"
        if of and self.view.level is not None:
            label = f"{self.view.level_label} · {label}"  # a sweep: which level these pairs measure
        self._show("#bench-label", label, label)
        stress = self.query_one("#stress", ProgressBar)
        total, ran = self.view.stress_total, min(self.view.stress_done, self.view.stress_total)
        stress.update(total=max(total, 1), progress=ran)
        label = f"stress {ran}/{total}" if total else "stress —"
        self._show("#stress-label", label, label)

    @on(DataTable.RowHighlighted, "#plan")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.selected = int(event.row_key.value)
            self._tick(self._redraw_evidence)  # the table's message can outlive the panels at exit

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

    # ------------------------------------------------------------------ gates

    def action_gate(self) -> None:
        self._open_gate(manual=True)

    def _open_gate(self, *, manual: bool = False) -> None:
        if self.mode == "replay" or self.gate_open or self.source.busy():
            return
        if self.held and not manual:
            return
        pending = self.source.pending()
        holder = getattr(self.source, "holder", None)
        if pending is None and holder:
            # Another process runs the session and answers at its gates: this screen only watches, and says how
            # a person answers from here.
            note = (f"watch-only: {holder} runs this session; answer its gate from any shell with "
                    f"`signoff decide {self.source.session} \"<one line>\"`")  # fmt: skip
            if self.note != note:
                self.note = note
                self._redraw_status()
            if manual:
                self.notify(note, timeout=10, markup=False)
            return
        if self.note and self.note.startswith("watch-only:"):
            self.note = None
            self._redraw_status()
        if pending is None or (not manual and pending.gate.id == self.later):
            return
        self.held = False
        gate_id = pending.gate.id
        notice = None
        if gate_id in self.answered and self.view.rules_added > self.answered[gate_id]:
            added = self.commands.rules[self.answered[gate_id] :]
            notice = f"✓ added {'; '.join(added)} — this gate still needs an answer"
        self.gate_open = True
        if not manual:
            self.bell()  # a person is needed: the one sound this app makes by itself
        prefill, self.prefill = self.prefill, None
        if prefill is not None and self.prefill_gate not in (None, gate_id):
            # The line was given for a gate decided meanwhile: it answers no other.
            self.note = f"the line given with `signoff decide` was for gate {self.prefill_gate}, which no longer waits"
            prefill = None
        since = render.since_last_answer(self.events, gate_id)
        self.dialog = GateScreen(self.source, pending, notice=notice, prefill=prefill, since=since)
        self.push_screen(self.dialog, partial(self._gate_closed, gate_id))

    def _close_if_decided(self, batch: list[dict[str, Any]]) -> None:
        """A dialog whose gate someone else decided (`signoff decide` in another shell, another screen)
        closes and says who and how: nothing typed into it can be recorded for that gate any more."""
        dialog = self.dialog
        if dialog is None or dialog.closing:
            return
        gate_id = dialog.gate.id
        if not any(e["kind"] == "decision" and e.get("gate") == gate_id for e in batch):
            return
        from agent.run.deciding import how_decided

        how = how_decided(self.view, gate_id) or "by someone else"
        self.elsewhere[gate_id] = f"gate {gate_id} was decided elsewhere, {how}; its dialog closed, nothing recorded"
        self.held = True  # before the dialog's callback runs: this same tick may find the next gate waiting
        while self.screen is not dialog and len(self.screen_stack) > 1:
            self.pop_screen()  # help, opened over the dialog
        dialog.dismiss(None)

    def _gate_closed(self, gate_id: str, answered: str | None) -> None:
        self.gate_open = False
        self.dialog = None
        if gate_id in self.elsewhere:
            self.note = f"{self.elsewhere.pop(gate_id)} — g opens the gate that waits now"
            self.held = True
            self.notify(self.note, severity="warning", timeout=10, markup=False)
        elif answered is None:
            # "Ask later": leave it paused; `g` reopens it, `q` quits and the session waits for `signoff attach`.
            self.later = gate_id
            self.note = f"gate {gate_id} waits — g to answer, q to quit (it stays paused for `signoff attach`)"
        else:
            self.answered[gate_id] = self.view.rules_added
            self.note = None
        # The modal may still be the active screen while its callback runs: draw once it has gone.
        self.call_later(partial(self._tick, self._after_gate))

    def _after_gate(self) -> None:
        self._redraw_status()
        self._redraw_evidence()

    # ------------------------------------------------------------------ replay

    def _select_event(self, index: int) -> None:
        if not self.events:
            return
        self.cursor = max(0, min(index, len(self.events) - 1))
        self._fold_to(self.cursor)
        start = max(0, self.cursor - REPLAY_WINDOW)
        self.query_one("#events", EventList).show(self.events[start : self.cursor + 1], start)
        if self.query_one("#right", TabbedContent).active == "tab-output":
            self.query_one("#output", OutputPane).show_event(self.commands, self.cursor)
        self._followed = None
        self._redraw()
        e = self.events[self.cursor]
        bar = Text(f" event {self.cursor + 1}/{len(self.events)} ", style="reverse", no_wrap=True, overflow="ellipsis")
        bar.append(f" {e['kind']} ", style="bold")
        bar.append(render.event_line(e) or "")
        bar.append("   ← → step · [ ] gate/decision · home/end", style="dim")
        self.query_one("#timeline", Static).update(bar)

    def _fold_to(self, index: int) -> None:
        """`view` as the journal stood at event `index`: folded on from where it is when moving forward (a step is one
        event's fold, not the whole journal's again), from the start when moving back; nothing when already there."""
        if self._folded_upto is not None and self._folded_upto <= index:
            for e in self.entries[self._folded_upto + 1 : index + 1]:
                self.view.apply(e)
        else:
            self.view = replay(self.entries, index)
        self._folded_upto = index

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
        if action in ("pane", "pane_number", "zoom"):
            return self.screen is self.screen_stack[0]  # the main screen's panes, not under a dialog
        if action in ("step", "jump", "edge"):
            return self.mode == "replay"
        if action == "gate":
            return self.mode != "replay"
        return True

    # ------------------------------------------------------------------ misc actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # ------------------------------------------------------------------ panes: focus, scroll, zoom

    def panes(self) -> list[Widget]:
        """The panes Tab and the number keys move between, in screen order: plan, evidence, and the events or
        the output (whichever tab is shown). PgUp/PgDn and the arrows scroll the one with the focus."""
        right = self.query_one("#right", TabbedContent)
        shown = self.query_one("#output RichLog") if right.active == "tab-output" else self.query_one("#events")
        return [self.query_one("#plan"), self.query_one("#evidence"), shown]

    def _focus_pane(self, index: int) -> None:
        panes = self.panes()
        pane = panes[index % len(panes)]
        pane.focus()
        if self.screen.maximized is not None:
            # Zoomed: the pane moved to fills the screen instead. Set, not `maximize()`: that refuses a
            # VerticalScroll (its ALLOW_MAXIMIZE is False), which left the plan zoomed and the focus hidden.
            self.screen.maximized = self._zoomable(pane)

    def _pane_at(self) -> int | None:
        focused = self.focused
        if focused is None:
            return None
        return next((i for i, p in enumerate(self.panes()) if p in focused.ancestors_with_self), None)

    def action_pane(self, step: int) -> None:
        at = self._pane_at()
        self._focus_pane(0 if at is None else at + step)

    def action_pane_number(self, number: int) -> None:
        self._focus_pane(number - 1)

    def _zoomable(self, pane: Widget) -> Widget:
        # The events and the output zoom with their tabs, so that e and o still switch between them.
        return self.query_one("#right") if pane in self.query_one("#right").walk_children() else pane

    def action_zoom(self) -> None:
        """z: the pane with the focus fills the screen (the status bar and the keys stay); z again puts it back."""
        if self.screen.maximized is not None:
            self.screen.minimize()
            return
        at = self._pane_at()
        pane = self.panes()[at or 0]
        pane.focus()
        self.screen.maximized = self._zoomable(pane)

    def action_tab(self, name: str) -> None:
        self.query_one("#right", TabbedContent).active = f"tab-{name}"

    def action_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.query_one("#events", EventList).to_end()
        self.notify(f"follow {'on' if self.follow else 'off'}", timeout=2)

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

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
                        yield Hit(score, matcher.highlight(text), partial(app._select_event, i))


SignoffApp.COMMANDS = App.COMMANDS | {SignoffCommands}
