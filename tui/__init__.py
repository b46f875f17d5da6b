"""The Textual app. It imports `agent`; nothing in `agent`, `policies` or `tools` imports it.

Entry points stay import-light: Textual loads only when a screen is about to be drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.source import EventSource


def run_app(
    source: EventSource, *, mode: str, prefill: str | None = None, prefill_gate: str | None = None
) -> str | None:
    """Run the TUI on `source` until the person quits; returns the session status it last saw."""
    from tui.app import SignoffApp

    app = SignoffApp(source, mode=mode, prefill=prefill, prefill_gate=prefill_gate)
    try:
        return app.run()
    finally:
        source.close()
