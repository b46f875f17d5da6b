"""Modal screens: the gate prompt, help, and an artifact viewer."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from policies.decisions import EXAMPLES
from tools.terminal import printable
from tui.render import question
from tui.source import EventSource, PendingGate, Preview, seconds_left

# One key per answer a gate can take. `select` needs an option, so it has no key: type "go with 3".
KEYS: dict[str, tuple[str, str]] = {
    "continue": ("c", "continue"),
    "approve": ("y", "approve"),
    "skip": ("s", "skip"),
    "defer": ("d", "defer"),
    "retry": ("t", "retry"),
    "rollback": ("r", "roll back"),
    "stop": ("x", "stop"),
    "reject": ("n", "reject"),
    "ask": ("a", "ask later"),
}
TARGETED = ("plan", "triage", "continue_or_ask")


class GateScreen(ModalScreen[str | None]):
    """Question, facts, the policy's recommendation, single-key answers and a one-line input.

    Nothing takes effect until the parsed decision has been echoed and confirmed with Enter; the
    decision then goes through `Runner.decide`, the same path as `signoff decide`. Dismissed with
    the text that was answered, or None (answer later; the session stays paused).
    """

    BINDINGS = [
        Binding("escape", "edit", "Edit", show=True),
        Binding("slash", "focus_input", "Type", show=True),
        Binding("question_mark", "app.help", "Help", show=True),
    ]
    DEFAULT_CSS = """
    GateScreen { align: center middle; }
    GateScreen > Vertical {
        width: 96%; max-width: 110; height: auto; max-height: 96%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    GateScreen #gate-title { text-style: bold; color: $warning; }
    GateScreen #gate-body { height: auto; max-height: 18; }
    GateScreen #gate-keys { color: $text-muted; margin-top: 1; }
    GateScreen #gate-echo { margin-top: 1; height: auto; }
    GateScreen #gate-countdown { color: $error; text-style: bold; height: auto; }
    GateScreen Input { margin-top: 1; }
    """

    def __init__(self, source: EventSource, pending: PendingGate) -> None:
        super().__init__()
        self.source = source
        self.pending = pending
        self.gate: dict[str, Any] = pending.gate
        self.typed: str | None = None  # the text whose echo is shown, awaiting Enter
        self.keys = {KEYS[a][0]: a for a in self.gate.get("allowed", []) if a in KEYS}

    def compose(self) -> ComposeResult:
        g = self.gate
        opt = f" · option #{g['option']}" if g.get("option") is not None else ""
        rec = g.get("recommendation") or {}
        rec_text = f"policy recommends {str(rec.get('action', 'ask')).upper()}"
        if rec.get("rule"):
            rec_text += f" (rule {rec['rule']})"
        if rec.get("rationale"):
            rec_text += f" — {rec['rationale']}"
        facts = "  ".join(f"{k}={v}" for k, v in (g.get("facts") or {}).items())
        keys = "   ".join(f"[{k}] {KEYS[a][1]}" for k, a in self.keys.items())
        with Vertical():
            yield Static(f"Gate {g['id']} · {g['kind']}{opt}", id="gate-title", markup=False)
            with VerticalScroll(id="gate-body"):
                yield Static(question(g.get("question", "")), id="gate-question")
                yield Static(Text(f"facts: {facts}", style="dim"), id="gate-facts")
                yield Static(Text(rec_text, style="italic"), id="gate-recommendation")
            yield Static(Text(keys + "   [/] type a one-liner   [q] quit (resume later)"), id="gate-keys")
            yield Static("", id="gate-countdown")
            yield Input(placeholder=f"one line, e.g. {EXAMPLES[3]!r}", id="gate-input")
            yield Static("", id="gate-echo")

    def on_mount(self) -> None:
        # Keys answer first; the input takes focus when asked (/) so typing never fires a key.
        self.set_focus(None)
        if self.pending.deadline_at is not None:
            self._tick()
            self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        left = seconds_left(self.pending, datetime.now(UTC))
        if left is None:
            return
        on = self.pending.on_deadline or "the policy's answer"
        self.query_one("#gate-countdown", Static).update(f"⏱ {int(left) // 60:d}:{int(left) % 60:02d} until {on}")
        if left <= 0:
            self.source.expire()
            self.dismiss(f"deadline: {on}")

    # -- keys and text

    def on_key(self, event: Any) -> None:
        if isinstance(self.focused, Input):
            return
        if event.key == "enter" and self.typed is not None:
            event.stop()
            self._confirm()
            return
        action = self.keys.get(event.character or "")
        if action is None:
            if event.character == "q":
                event.stop()
                self.dismiss(None)
                self.app.exit(getattr(self.app, "view").status)  # noqa: B009 - the app's picture of the run
            return
        event.stop()
        if action == "ask":
            self.dismiss(None)
            return
        if action in ("skip", "defer") and self.gate["kind"] in TARGETED:
            # Which option? Finish the line: "skip #".
            field = self.query_one("#gate-input", Input)
            field.value = f"{action} #"
            field.focus()
            return
        self._preview(action)

    def action_focus_input(self) -> None:
        self.query_one("#gate-input", Input).focus()

    def action_edit(self) -> None:
        self.typed = None
        self._echo(Text(""))
        self.query_one("#gate-input", Input).focus()

    @on(Input.Submitted, "#gate-input")
    def submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.typed == text:
            self._confirm()
            return
        self._preview(text)

    @work(thread=True, exclusive=True, group="gate-preview")
    def _preview(self, text: str) -> None:
        result = self.source.preview(text)
        self.app.call_from_thread(self._show, text, result)

    def _show(self, text: str, p: Preview) -> None:
        if p.error:
            self.typed = None
            self._echo(Text(f"✗ {p.error}", style="bold red"))
            return
        self.typed = text
        need = " (needs your confirmation)" if p.confirm else ""
        echo = Text(f"{p.echo}{need}", style="bold")
        echo.append(" — Enter to confirm, Esc to edit", style="dim")
        self._echo(echo)
        self.set_focus(None)

    def _echo(self, text: Text) -> None:
        self.query_one("#gate-echo", Static).update(text)

    def _confirm(self) -> None:
        if self.typed is None:
            return
        self.source.answer(self.typed)
        self.dismiss(self.typed)


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
            ("↑ ↓", "select an option in the plan; its evidence shows below it"),
            ("g", "open the waiting gate (when the session is paused)"),
            ("f", "follow the event stream (toggle)"),
            ("ctrl+p", "command palette: jump to option, open artifact, toggle follow"),
            ("ctrl+t", "light / dark theme"),
            ("← →  [ ]  home end", "replay: step, previous/next gate or decision, first/last event"),
            ("q", "quit (a paused session resumes with `signoff resume`, or here with `signoff attach`)"),
            ("At a gate", "single keys answer ([c] continue, [s] skip …); / types a one-liner; "
             "Enter confirms the echoed decision, Esc edits it"),
        ]  # fmt: skip
        text = Text()
        text.append("signoff — keys\n\n", style="bold")
        for k, what in keys:
            text.append(f"{k:>20}  ", style="bold cyan")
            text.append(f"{what}\n")
        text.append("\nOne-line decisions (grammar/v1)\n\n", style="bold")
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
    """The full output of one command (an artifact), read from the session directory."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    ArtifactScreen { align: center middle; }
    ArtifactScreen > VerticalScroll { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    """
    LIMIT = 200_000

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            body = Text(f"cannot read {self.path.name}: {exc}", style="red")
        else:
            more = f"\n[… {len(data) - self.LIMIT} more bytes in {self.path}]" if len(data) > self.LIMIT else ""
            # Raw command output: escapes and bidi controls shown, never sent (issue 19, M2).
            body = Text(printable(data[: self.LIMIT].decode(errors="replace")) + more)
        with VerticalScroll():
            yield Static(Text(self.path.name, style="bold"))
            yield Static(body)
