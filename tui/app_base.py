"""The TUI app's bottom layer: what it holds (the session's events folded into a view, the commands, the cursor,
the gate state) and the two helpers every layer draws with. Layers above: app_drawing → app_gates → app_replay → app."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from textual.app import App, ScreenStackError
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import Static

from agent.journal.events import Entry
from agent.journal.view import SessionView
from tui.commands import Commands
from tui.screens import GateScreen
from tui.source import EventSource, SanitizedSource

TICK_S = 0.05
NOTHING = object()
REPLAY_WINDOW = 400  # events shown before the selected one in replay
MARKS = ("gate.opened", "decision")  # where [ and ] jump to in replay
GATE_EVENTS = ("gate.opened", "decision", "decision.rejected", "session.paused", "rule.added")


class AppBase(App[str | None]):
    """The state the layers above share; `SignoffApp` is the app."""

    mode: reactive[str] = reactive("live", bindings=True)
    follow: reactive[bool] = reactive(True)

    def __init__(
        self, source: EventSource, *, mode: str = "live", prefill: str | None = None, prefill_gate: str | None = None
    ) -> None:
        super().__init__()
        self.source: EventSource = source if isinstance(source, SanitizedSource) else SanitizedSource(source)
        self.set_reactive(AppBase.mode, mode)
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

    def _tick(self, callback: Callable[[], None]) -> None:
        # While the app closes, its widgets and then its screens are removed before its timers stop: a last tick
        # finds nothing to draw on, or no screen at all (ci71: the clock's), and that is not an error.
        try:
            callback()
        except (NoMatches, ScreenStackError):
            if self.is_running and not self._exit:
                raise

    def _show(self, selector: str, content: Any, key: object, build: Callable[[], Any] | None = None) -> None:
        """Update a Static only when what it shows changed: every update lays the screen out again, and
        at 20 frames a second that is most of what the app costs (and what the run's thread waits for)."""
        if self._shown.get(selector, NOTHING) == key:
            return
        self._shown[selector] = key
        self.query_one(selector, Static).update(build() if build is not None else content)

    def now(self) -> datetime:
        return datetime.now(UTC)
