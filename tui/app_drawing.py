"""The TUI app's drawing layer: the status bar, the plan, the evidence panel and the progress bars, each redrawn only
when what it shows changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import on
from textual.containers import VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static

from tui import render
from tui.plot import figure

if TYPE_CHECKING:
    from tui.abplot import ABPlot

from tui.app_base import GATE_EVENTS, AppBase


class DrawingApp(AppBase):
    def _redraw(self) -> None:
        self._redraw_plan()
        self._redraw_evidence()
        self._redraw_progress()
        self._redraw_status()

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
