"""The `signoff` command with its screens: agent's CLI, plus the TUI registered as its `screens`.

`agent.cli` never imports `tui` (layering: tui → agent); this module wires the two together and
is the installed entry point. Textual is imported only when a screen is about to be drawn.
"""

from __future__ import annotations

from typing import Any

from agent import cli as core


class TerminalScreens:
    def live(self, d: Any, how: str = "start", by: str | None = None) -> bool:
        from tui import run_app
        from tui.source import LiveSource

        source = LiveSource(d, user=by)
        source.start(how)
        run_app(source, mode="live")
        return source.busy()

    def replay(self, d: Any) -> None:
        from tui import run_app
        from tui.source import ReplaySource

        run_app(ReplaySource(d), mode="replay")

    def attach(self, d: Any, prefill: str | None = None, by: str | None = None, gate: str | None = None) -> bool:
        from tui import run_app
        from tui.source import SessionSource

        source = SessionSource(d, user=by)
        run_app(source, mode="attach", prefill=prefill, prefill_gate=gate)
        return source.busy()


core.screens = TerminalScreens()
app = core.app


def main() -> None:
    core.main()


if __name__ == "__main__":
    main()
