"""A forged journal's fact names reach the screen (`name=value` in the gate panel and the gate prompt):
the names pass through the same sanitizing as the values."""

from __future__ import annotations

import io

from rich.console import Console

from agent.journal.view import fold
from tui import render
from tui.source import shown

HOSTILE = "\x1b]0;pwned\x07k\x1b[2J"


def test_a_fact_name_with_escapes_is_shown_as_text() -> None:
    opened = {
        "kind": "gate.opened", "seq": 1, "ts": "2026-12-04T00:00:00Z", "gate": "g1", "gate_kind": "safety",
        "question": "?", "facts": {HOSTILE: 1, "verdict": "unsafe"},
    }  # fmt: skip
    event = shown(opened)
    view = fold([event])
    console = Console(width=200, record=True, file=io.StringIO(), force_terminal=False)
    console.print(render.gate_panel(view.gates[0]))
    text = console.export_text()
    assert "\x1b" not in text and "\x07" not in text
    assert "pwned" in text and "verdict=unsafe" in text
    assert "\x1b" not in "".join(event["facts"])
