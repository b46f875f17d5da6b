"""The event stream: one line per event worth a person's attention, selectable. Enter on a line posts
`Picked` with the event's index (the app opens its command's output); moving by hand posts `Moved`
(the app stops following the stream). Lines are wrapped to the panel's width whenever it changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tui import render

MAX_LINES = 5_000
KEEP = 4_000  # when the stream passes MAX_LINES, the oldest go and this many stay


class EventList(OptionList):
    BINDINGS = [Binding("enter", "pick", "Output", show=True)]

    @dataclass
    class Picked(Message):
        index: int  # among the session's events

    class Moved(Message):
        """The person moved the highlight by hand."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self._shown_lines: list[Option] = []

    def extend(self, batch: list[dict[str, Any]], start: int, *, follow: bool) -> None:
        new = _options(batch, start)
        if not new:
            return
        self._shown_lines.extend(new)
        if len(self._shown_lines) > MAX_LINES:
            self._shown_lines = self._shown_lines[-KEEP:]
            self.clear_options()
            self.add_options(self._shown_lines)
        else:
            self.add_options(new)
        if follow:
            self.to_end()

    def show(self, events: list[dict[str, Any]], start: int) -> None:
        """Replace the lines (replay: the events up to the selected one), the last one highlighted."""
        self._shown_lines = _options(events, start)
        self.clear_options()
        self.add_options(self._shown_lines)
        self.to_end()

    def texts(self) -> list[str]:
        """The lines shown, as plain text."""
        return [o.prompt.plain if isinstance(o.prompt, Text) else str(o.prompt) for o in self._shown_lines]

    def to_end(self) -> None:
        if self.option_count:
            self.highlighted = self.option_count - 1
            self.scroll_end(animate=False)

    def action_pick(self) -> None:
        if self.highlighted is None:
            return
        option = self.get_option_at_index(self.highlighted)
        if option.id is not None:
            self.post_message(self.Picked(int(option.id)))

    # Moving by hand: tell the app, which then stops following the stream.
    def action_cursor_up(self) -> None:
        super().action_cursor_up()
        self.post_message(self.Moved())

    def action_page_up(self) -> None:
        super().action_page_up()
        self.post_message(self.Moved())

    def action_first(self) -> None:
        super().action_first()
        self.post_message(self.Moved())


def _options(events: list[dict[str, Any]], start: int) -> list[Option]:
    out: list[Option] = []
    for i, e in enumerate(events, start):
        line = render.event_line(e)
        if line is not None:
            out.append(Option(line, id=str(i)))
    return out
