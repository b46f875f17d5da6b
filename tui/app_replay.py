"""The TUI app's navigation layer: moving through a replay (event by event, gate to gate) and between panes."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static, TabbedContent

from agent.journal.view import replay
from tui import render
from tui.app_base import MARKS, REPLAY_WINDOW
from tui.app_gates import GateApp
from tui.eventlist import EventList
from tui.output import OutputPane


class NavigationApp(GateApp):
    def select_event(self, index: int) -> None:
        """Show the replay as it stood at event `index` (the keys, the palette's "jump to gate")."""
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
            self.select_event(self.cursor + delta)

    def action_jump(self, direction: int) -> None:
        if self.mode != "replay":
            return
        indices = range(self.cursor + 1, len(self.events)) if direction > 0 else range(self.cursor - 1, -1, -1)
        for i in indices:
            if self.events[i]["kind"] in MARKS:
                self.select_event(i)
                return
        self.bell()

    def action_edge(self, end: int) -> None:
        if self.mode == "replay":
            self.select_event(len(self.events) - 1 if end else 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("pane", "pane_number", "zoom"):
            return self.screen is self.screen_stack[0]  # the main screen's panes, not under a dialog
        if action in ("step", "jump", "edge"):
            return self.mode == "replay"
        if action == "gate":
            return self.mode != "replay"
        return True

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
