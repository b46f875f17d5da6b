"""The TUI app's gate layer: the gate dialog opened when the session pauses, closed when someone else decided."""

from __future__ import annotations

from functools import partial
from typing import Any

from tui import render
from tui.app_drawing import DrawingApp
from tui.screens import GateScreen


class GateApp(DrawingApp):
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
