"""The TUI's fast path past `shown` (an event whose repr shows nothing to escape is passed as it is) must never pass
what `shown` would change: an escape, a bidi override, a line too long. Attacked with generated JSON objects full of
hostile characters, and with the hand-made cases each clause of the check is there for."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.terminal import MAX_LINE
from tui.source import SanitizedSource, already_shown, shown

HOSTILE = st.sampled_from(["\x1b[2J", "\x07", "\u202e", "\u2066", "\x9b", "\x00", "\\", "\n", "\t", "é", "\x7f"])
ASCII = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
# Mostly plain text, which the fast path takes, with hostile pieces it must notice in any string or key.
TEXT = st.one_of(ASCII, ASCII, ASCII, st.lists(st.one_of(st.text(max_size=12), HOSTILE), max_size=4).map("".join))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
# Two levels, as journal events nest (facts, decisions, lists of proposals): recursive strategies were 60 ms an example.
JSON = st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(TEXT, SCALAR, max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(TEXT, JSON, max_size=5))
def test_an_event_passed_as_it_is_is_one_shown_would_not_change(event: dict[str, Any]) -> None:
    if already_shown(event):
        assert shown(event) == event


def test_each_clause_of_the_check_turns_away_what_it_is_for() -> None:
    assert already_shown({"kind": "command.finished", "stdout_tail": "ok\n".strip()})
    assert not already_shown({"kind": "x", "stdout_tail": "\x1b]0;pwned\x07"})  # a control: escaped in the repr
    assert not already_shown({"kind": "x", "title": "abc\u202edef"})  # a bidi override: escaped, and not ASCII
    assert not already_shown({"kind": "x", "out": "a" * (MAX_LINE + 1)})  # a line to cut
    assert not already_shown({"\x1b[2J": 1})  # keys too


class _Source:
    read_only = True
    session = "s"

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def poll(self) -> list[dict[str, Any]]:
        return self.events


def test_the_sanitized_source_still_escapes_what_needs_it() -> None:
    plain, hostile = {"kind": "a", "x": "fine"}, {"kind": "b", "x": "\x1b[2Jgone"}
    out = SanitizedSource(_Source([plain, hostile])).poll()  # type: ignore[arg-type]
    assert out[0] is plain and out[1] == shown(hostile) and "\x1b" not in out[1]["x"]
