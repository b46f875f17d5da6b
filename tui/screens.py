"""Modal screens: help, quitting and an artifact viewer; the gate prompt is tui/gate_screen.py (its names are
imported from here too)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tools.terminal import printable
from tui.gate_screen import KEYS, LABELS, GateScreen, alias, answer_keys, recommended, same_as

__all__ = [
    "KEYS",
    "LABELS",
    "ArtifactScreen",
    "GateScreen",
    "HelpScreen",
    "QuitScreen",
    "alias",
    "answer_keys",
    "recommended",
    "same_as",
]


class QuitScreen(ModalScreen[bool]):
    """Quitting while the run goes on: stop it when the running command ends (True), or keep watching."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Stop and quit"),
        Binding("n,escape,q", "answer(False)", "Keep watching"),
    ]
    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    QuitScreen > Static { width: auto; max-width: 90%; border: thick $warning; background: $surface; padding: 1 2; }
    """

    def __init__(self, doing: str, session: str) -> None:
        super().__init__()
        self.doing, self.session = doing, session

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("The run is still going", style="bold")
        text.append(f" ({self.doing})." if self.doing else ".")
        text.append(
            "\n\nStop it when the running command ends, then quit? Whatever it applied stays applied;"
            f"\nsignoff prints what is on each host; `signoff resume {self.session}` goes on from there,"
            f"\nor `signoff abandon {self.session}` rolls back what was not kept, verifies, and ends it.\n\n"
        )
        text.append("[y] stop and quit   [n] keep watching", style="bold cyan")
        yield Static(text, id="quit-question")

    def action_answer(self, stop: bool) -> None:
        self.dismiss(stop)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; border: thick $primary; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        keys = [
            ("Tab  shift+Tab  1 2 3", "move between the panes: 1 plan, 2 evidence, 3 events or output; the "
             "pane with the focus has the bright border"),
            ("PgUp PgDn  ↑ ↓", "scroll the pane with the focus (in the plan ↑ ↓ select an option; its evidence "
             "shows below it)"),
            ("z", "zoom: the pane with the focus fills the screen; z again puts it back"),
            ("g", "open the waiting gate (when the session is paused)"),
            ("f", "follow the event stream (toggle); moving through it by hand stops following"),
            ("e  o", "the events tab / the running command's output as it prints"),
            ("Enter (events)", "the whole output of the command on that line (live, when it still runs)"),
            ("ctrl+p", "palette: jump to an option, open a command's output by name, screenshot"),
            ("ctrl+t", "light / dark theme"),
            ("← →  [ ]  home end", "replay: step, previous/next gate or decision, first/last event"),
            ("q  ctrl+q  ctrl+c", "quit; while the run goes on, asks first and stops it when the running command ends "
             "(a stopped or paused session resumes with `signoff resume`, or here with `signoff attach`)"),
            ("At a gate", "single keys answer, the recommended one first (▶); / types a one-liner and "
             "Esc leaves the input; Enter confirms the echoed decision, Esc takes it back to edit"),
            ("PgDn PgUp  f (gate)", "scroll the gate's evidence; show or fold its facts"),
        ]  # fmt: skip
        text = Text()
        text.append("signoff — keys\n\n", style="bold")
        for k, what in keys:
            text.append(f"{k:>20}  ", style="bold cyan")
            text.append(f"{what}\n")
        text.append("\nOne-line decisions (grammar/v1)\n\n", style="bold")
        from policies.decisions import EXAMPLES

        for example in [
            *EXAMPLES,
            "Sounds like 3 is bigger win anyways",
            "continue if you have next steps, or stop and ask",
        ]:
            text.append(f"  {example}\n")
        text.append(
            "\nConditions: if it's unsafe · if gain is at least 5% · unless confidence < 0.7 · …, otherwise skip\n"
            "Scopes: for now (deferred; reopen with --revisit) · always / from now on (a standing rule)\n"
            "Hedged, rollback, stop and standing decisions are echoed and need Enter to confirm.\n",
            style="dim",
        )
        with VerticalScroll():
            yield Static(text)


class ArtifactScreen(ModalScreen[None]):
    """The full output of one command, titled by what it was (command, host, purpose, how it ended),
    read from the session's artifacts: each stream that printed something, under its name."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    ArtifactScreen { align: center middle; }
    ArtifactScreen > VerticalScroll { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    ArtifactScreen .stream { text-style: bold; color: $accent; margin-top: 1; }
    """
    LIMIT = 200_000

    def __init__(self, title: str, streams: list[tuple[str, Path]]) -> None:
        super().__init__()
        self.title_text = title
        self.streams = streams

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(printable(self.title_text), style="bold"), id="artifact-title")
            if not self.streams:
                yield Static(Text("it printed nothing", style="dim"))
            for stream, path in self.streams:
                yield Static(Text(f"{stream} · {path.name[:19]}"), classes="stream")
                yield Static(self._body(path))

    def _body(self, path: Path) -> Text:
        try:
            size = path.stat().st_size
            with path.open("rb") as fh:  # the start of it: an artifact may be gigabytes
                data = fh.read(self.LIMIT)
        except OSError as exc:
            return Text(f"cannot read {path.name}: {exc.strerror or exc}", style="red")
        more = f"\n[… {size - self.LIMIT} more bytes in {path}]" if size > self.LIMIT else ""
        # Raw command output: escapes and bidi controls shown, never sent (issue 19, M2).
        return Text(printable(data.decode(errors="replace")) + more)
