"""The gate dialog: the question, facts and recommendation, single-key answers and a one-line input, echoed and
confirmed before anything takes effect."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tui.render import GateText, facts_lines, facts_shown, gate_text, gate_title, question, recommendation_text
from tui.source import EventSource, PendingGate, Preview, seconds_left

if TYPE_CHECKING:
    from policies.gates import Gate, GateSpec

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
# Where a gate kind gives an answer no meaning of its own (`GateSpec.meaning`), what it does anywhere. "ask"
# decides nothing: the gate stays open.
LABELS = {"ask": "answer later (the gate stays open)", "stop": "stop the run"}


def _spec(gate: Gate) -> GateSpec:
    """What signoff declares for this gate's kind: its keys, labels and layout. Imported here, not at the top: the
    policies load when a gate's dialog opens (a `Gate` exists only then), not for the first frame."""
    from policies.gates import GATES

    return GATES[gate.kind]


def recommended(gate: Gate) -> str | None:
    """The answer to put first: the policy's when it has one, else the cautious one for this gate (at a
    safety gate: keep only what is safe and measured better, as the assessment does)."""
    action = gate.recommendation.action if gate.recommendation is not None else None
    if action is not None and action in KEYS and action != "ask":
        # An answer shown under another's key (a safety gate's rollback is its skip, approve where continue
        # is the word shown) is marked there.
        return same_as(gate).get(action, action)
    spec = _spec(gate)
    if not spec.marked:
        return None  # only the person can judge here; nothing is marked unless the policy gave an answer
    suggested = spec.suggested(gate.facts)
    if suggested in KEYS:
        return suggested
    return "retry" if suggested.startswith("revert") else None


def alias(gate: Gate) -> str | None:
    """Of approve and continue, the one not shown where both mean go ahead (its key still works)."""
    if "approve" in gate.allowed and "continue" in gate.allowed:
        return "continue" if _spec(gate).primary == "approve" else "approve"
    return None


def same_as(gate: Gate) -> dict[str, str]:
    """At this gate, each answer with no key on screen → the shown answer that does the same: the one of
    approve/continue not shown (`alias`), and the kind's `same_as`. Their keys still answer."""
    allowed = gate.allowed
    out: dict[str, str] = {a: s for a, s in _spec(gate).same_as.items() if a in allowed and s in allowed}
    hidden = alias(gate)
    if hidden is not None:
        out[hidden] = "approve" if hidden == "continue" else "continue"
    return out


def answer_keys(gate: Gate) -> list[tuple[str, str, str]]:
    """(key, action, label) for the answers that make sense at this gate, the recommended one first.

    Every answer the gate allows can still be typed; keys are offered only where they do something
    here: none to skip or defer when nothing is left to try, one of approve/continue where both mean
    go ahead."""
    spec = _spec(gate)
    hidden = same_as(gate)
    actions: list[str] = [a for a in gate.allowed if a in KEYS and a not in hidden]
    # A gate that declares whether an option is left to try, saying none is: nothing to skip, defer or pick.
    nothing_left = "has_next_step" in spec.facts.model_fields and gate.facts.get("has_next_step") is False
    if nothing_left:
        actions = [a for a in actions if a not in ("skip", "defer", "select")]
    meaning: dict[str, str] = {**spec.meaning}
    labels = {a: meaning.get(a, LABELS.get(a, KEYS[a][1])) for a in actions}
    if nothing_left and "continue" in labels:
        labels["continue"] = "finish with the report"
    first = recommended(gate)
    if first in actions:
        actions.remove(first)
        actions.insert(0, first)
    return [(KEYS[a][0], a, labels[a]) for a in actions]


_ALARM = re.compile(r"\b(?:WEDGE|CRASH|DEAD|SATURATED|NO-GO|FAILED|unsafe)\b")


def _alarming(line: str) -> bool:
    return bool(_ALARM.search(line))


class GateLayout(ModalScreen[str | None]):
    """The gate dialog's layout: its parts composed from the `Gate`, fitted to the terminal (the body gets what the
    pinned parts leave), the facts folded or shown, and the keys line; `GateScreen` answers with it."""

    # The body (summary, evidence, undo plan, facts) gets what the pinned parts leave; it never shrinks below this.
    MIN_BODY = 3

    def __init__(
        self,
        source: EventSource,
        pending: PendingGate,
        *,
        notice: str | None = None,
        prefill: str | None = None,
        since: Text | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.pending = pending
        self.since = since  # what happened since the person last answered a gate (None: this is the first)
        self.gate: Gate = pending.gate
        self.notice = notice  # e.g. the session rule the last line added, when the gate still waits
        self.prefill = prefill  # a line given on the command line: previewed at once, Enter confirms it
        self.typed: str | None = None  # the text whose echo is shown, awaiting Enter
        self.closing = False  # dismissed (answered, asked later, quit, expired or decided elsewhere)
        self.show_facts = False  # folded: the facts are what the summary above says, in full
        self.answers = answer_keys(self.gate)
        self.keys = {k: a for k, a, _ in self.answers}
        for hidden, shown in same_as(self.gate).items():
            if shown in self.keys.values():  # `c` and `y` both go ahead, `r` rolls back as `s` does
                self.keys[KEYS[hidden][0]] = hidden

    def compose(self) -> ComposeResult:
        g = self.gate
        parts = gate_text(g.question, g.kind)
        with Vertical():
            yield Static(gate_title(g.id, g.kind, g.option), id="gate-title", markup=False)
            notice = Static(Text(self.notice or ""), id="gate-notice")
            notice.display = bool(self.notice)
            yield notice
            # Pinned: what is asked and what the policy says; below them, scrolling, what it rests on.
            yield Static(question(parts.ask), id="gate-ask")
            rec = g.recommendation.model_dump(mode="json") if g.recommendation is not None else None
            yield Static(recommendation_text(rec), id="gate-recommendation")
            with VerticalScroll(id="gate-body"):
                yield Static(self._summary(parts), id="gate-summary")
                since = Static(self.since or "", id="gate-since")
                since.display = self.since is not None
                yield since
                yield Static(self._facts(), id="gate-facts")
            yield Static("", id="gate-more")
            yield Static(self._keys_text(), id="gate-keys")
            yield Static(self._keys_line(), id="gate-keys-line")
            yield Static("", id="gate-countdown")
            # Focus keeps the line as it is (no select-all): after `/` or "skip #", typing goes on from its end.
            from policies.decisions import EXAMPLES

            yield Input(placeholder=f"one line, e.g. {EXAMPLES[3]!r}", id="gate-input", select_on_focus=False)
            yield Static("", id="gate-echo")

    @staticmethod
    def _summary(parts: GateText) -> Text:
        text = Text()
        for line in parts.head:
            text.append_text(question(line)).append("\n")
        for line in parts.evidence:
            shown = question(line)
            if _alarming(line):
                shown.stylize("red")
            text.append_text(shown).append("\n")
        for line in parts.undo:
            shown = question(line)
            shown.stylize("cyan")
            text.append_text(shown).append("\n")
        text.rstrip()
        return text

    def _facts(self) -> Text:
        shown = facts_shown(self.gate.kind, self.gate.facts)
        if not shown:
            return Text("")
        if not self.show_facts:
            return Text(f"facts: {len(shown)} — [f] shows them", style="dim")
        text = Text(f"facts ({len(shown)}) — [f] hides them\n", style="dim")
        return text.append(facts_lines(self.gate.kind, self.gate.facts))

    def action_facts(self) -> None:
        self.show_facts = not self.show_facts
        self.query_one("#gate-facts", Static).update(self._facts())
        self._fit()

    def action_scroll(self, pages: int) -> None:
        body = self.query_one("#gate-body", VerticalScroll)
        if pages > 0:
            body.scroll_page_down(animate=False)
        else:
            body.scroll_page_up(animate=False)

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        self.call_after_refresh(self._fit_now)

    def _fit_now(self, tries: int = 0) -> None:
        """Give the body what the pinned parts leave of the dialog's height, so that the question, the keys,
        the line and its echo are always on screen, and say when the body holds more than it shows."""
        parts = self._laid_out()
        if parts is None:
            return
        box, body, _more = parts
        # Margins counted whole (the layout may overlap two that meet): the body is at worst a line short.
        pinned = sum(w.outer_size.height + w.styles.margin.height for w in box.children if w is not body and w.display)
        room = int(self.size.height * 0.96) - box.styles.gutter.height - pinned - body.styles.margin.height
        height = max(self.MIN_BODY, room)
        if body.styles.max_height is None or body.styles.max_height.value != height:
            body.styles.max_height = height
        self.call_after_refresh(self._more)
        self.call_after_refresh(self._check_fit, tries)

    def _check_fit(self, tries: int) -> None:
        """Measured again once laid out: a part measured before its new text was laid out (an echo that had
        just wrapped) would leave the echo below the dialog's edge, with nothing to fit it again."""
        parts = self._laid_out()
        if parts is None or tries >= 5:
            return
        edge = parts[0].content_region.bottom
        if any(w.display and w.region.bottom > edge for w in self.query("#gate-input, #gate-echo")):
            self._fit_now(tries + 1)

    def _laid_out(self) -> tuple[Vertical, VerticalScroll, Static] | None:
        """The dialog's box, its scrolling body and the line under it; None once the screen is being taken
        down. A dismissed screen loses its children before it is detached, and a scroll, resize or refresh
        callback queued before that still runs: it must find nothing to do, not raise into the app."""
        if self.closing or not self.is_attached:
            return None
        box = next(iter(self.query(Vertical).results(Vertical)), None)
        body = next(iter(self.query("#gate-body").results(VerticalScroll)), None)
        more = next(iter(self.query("#gate-more").results(Static)), None)
        return None if box is None or body is None or more is None else (box, body, more)

    def _more(self) -> None:
        parts = self._laid_out()
        if parts is None:
            return
        _box, body, widget = parts
        hidden = body.max_scroll_y - round(body.scroll_y)
        more = f"↓ {hidden} more line{'s' if hidden != 1 else ''} — PgDn" if hidden > 0 else ""
        if round(body.scroll_y) > 0:
            more = ("↑ PgUp  " + more) if more else "↑ PgUp"
        if str(widget.render()) != more:
            widget.update(more)

    def _keys_text(self) -> Text:
        text = Text()
        for i, (key, _action, label) in enumerate(self.answers):
            if i == 0 and recommended(self.gate) == _action:
                text.append(f"▶ [{key}] {label}", style="bold reverse")
                text.append("  recommended\n", style="bold")
            else:
                text.append(f"  [{key}] {label}\n")
        text.append("  [/] type a one-liner   [q] quit (resume later)", style="dim")
        return text

    def _keys_line(self) -> Text:
        """The same keys on one line, wrapped between answers (for short terminals)."""
        text = Text()
        for i, (key, action, label) in enumerate(self.answers):
            if i:
                text.append(" · ")
            if i == 0 and recommended(self.gate) == action:
                text.append(f"▶ [{key}] {label} (recommended)", style="bold reverse")
            else:
                text.append(f"[{key}] {label}")
        text.append(" · [/] type · [q] quit", style="dim")
        return text


class GateScreen(GateLayout):
    """Question, facts, the policy's recommendation, single-key answers and a one-line input.

    Nothing takes effect until the parsed decision has been echoed and confirmed with Enter; the
    decision then goes through `Runner.decide`, the same path as `signoff decide`. Dismissed with
    the text that was answered, or None (answer later; the session stays paused).

    Keys answer while the input does not have focus; `/` gives it focus and Esc takes it away again,
    so after typing and Esc the next key answers.

    Every key that switches between answering and typing (`/`, Esc, the answer keys, Enter on an echo) is
    a priority binding: the app runs it as it takes the key from the terminal, before it hands on the
    next, and focus moves there and then. So however fast keys arrive, each one goes where the key
    before it left the focus — after `/`, into the line. (A plain handler runs later, on the screen's
    own queue, when the keys typed after `/` have already been handed to the screen as answers.)

    The answer names its gate (`source.answer(text, gate=…)`): if the gate was decided elsewhere
    meanwhile, the answer is refused, never recorded at the gate that waits by then.
    """

    # Short terminals (an 80×24 one): the keys on one wrapped line and a shorter question, so that the
    # input and the echo below them stay on screen.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]
    BINDINGS = [
        Binding("escape", "escape", "Keys / edit", show=True, priority=True),
        Binding("slash", "focus_input", "Type", show=True, priority=True),
        Binding("question_mark", "app.help", "Help", show=True),
        Binding("enter", "confirm", "Confirm", show=False, priority=True),
        Binding("f", "facts", "Facts", show=True, priority=True),
        Binding("pagedown", "scroll(1)", "More", show=False, priority=True),
        Binding("pageup", "scroll(-1)", "Back up", show=False, priority=True),
        *(Binding(k, f"key({k!r})", show=False, priority=True) for k in [*(k for k, _ in KEYS.values()), "q"]),
    ]
    DEFAULT_CSS = """
    GateScreen { align: center middle; }
    GateScreen > Vertical {
        width: 96%; height: auto; max-height: 96%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    GateScreen #gate-title { text-style: bold; color: $warning; }
    GateScreen #gate-notice { color: $success; text-style: bold; height: auto; }
    GateScreen #gate-ask { text-style: bold; height: auto; }
    GateScreen #gate-recommendation { height: auto; }
    GateScreen #gate-body { height: auto; margin-top: 1; }
    GateScreen #gate-facts { margin-top: 1; height: auto; }
    GateScreen #gate-since { margin-top: 1; height: auto; color: $text-muted; }
    GateScreen #gate-more { color: $text-muted; height: 1; text-align: right; }
    GateScreen #gate-keys { margin-top: 1; height: auto; }
    GateScreen #gate-echo { margin-top: 1; height: auto; }
    GateScreen #gate-countdown { color: $error; text-style: bold; height: auto; }
    GateScreen Input { margin-top: 1; }
    GateScreen #gate-keys-line { display: none; height: auto; margin-top: 1; }
    GateScreen.-short #gate-keys { display: none; }
    GateScreen.-short #gate-keys-line { display: block; }
    GateScreen.-short #gate-body { margin-top: 0; }
    GateScreen.-short Input { margin-top: 0; }
    GateScreen.-short #gate-echo { margin-top: 0; }
    """

    def dismiss(self, result: str | None = None) -> Any:
        self.closing = True
        return super().dismiss(result)

    @property
    def typing(self) -> bool:
        return isinstance(self.focused, Input)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the line has focus its keys are typed (`/` too) and Enter submits it. Out of it, only the keys
        # this gate offers answer, and Enter confirms an echoed answer.
        if action == "key":
            return not self.typing and (parameters[0] in self.keys or parameters[0] == "q")
        if action == "confirm":
            return not self.typing and self.typed is not None
        if action in ("focus_input", "facts"):
            return not self.typing
        return True

    def on_mount(self) -> None:
        # Keys answer first; the input takes focus when asked (/) so typing never fires a key.
        self.set_focus(None)
        body = self.query_one("#gate-body", VerticalScroll)
        self.watch(body, "scroll_y", lambda _old, _new: self._more(), init=False)
        self.watch(body, "virtual_size", lambda _old, _new: self._more(), init=False)
        if self.prefill:
            self.query_one("#gate-input", Input).value = self.prefill
            self._preview(self.prefill)
        self.query_one("#gate-countdown", Static).display = self.pending.deadline_at is not None
        if self.pending.deadline_at is not None:
            self._tick()
            self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        left = seconds_left(self.pending, datetime.now(UTC))
        if left is None or self.closing:  # a tick queued before the dialog was dismissed
            return
        on = self.pending.on_deadline or "the policy's answer"
        self.query_one("#gate-countdown", Static).update(f"⏱ {int(left) // 60:d}:{int(left) % 60:02d} until {on}")
        if left <= 0:
            self.source.expire()
            self.dismiss(f"deadline: {on}")

    # -- keys and text

    def action_key(self, key: str) -> None:
        action = self.keys.get(key)
        if action is None:  # q: quit; the session stays paused
            self.dismiss(None)
            self.app.exit(getattr(self.app, "view").status)  # noqa: B009 - the app's picture of the run
            return
        if action == "ask":
            self.dismiss(None)
            return
        if action in ("skip", "defer") and _spec(self.gate).takes_targets:
            # Which option? Finish the line: "skip #".
            field = self.query_one("#gate-input", Input)
            field.value = f"{action} #"
            self._type_into(field)
            return
        self._preview(action)

    def action_confirm(self) -> None:
        self._confirm()

    def _type_into(self, field: Input) -> None:
        # Now, not on the next message (Widget.focus): the key after this one must find the line focused.
        self.set_focus(field)
        field.cursor_position = len(field.value)

    def action_focus_input(self) -> None:
        self._type_into(self.query_one("#gate-input", Input))

    def action_escape(self) -> None:
        """In the input: leave it (the text stays), so the next key answers. Outside it, with a decision
        echoed: take it back and edit the line."""
        if self.typing:
            self.set_focus(None)
            return
        if self.typed is not None:
            self.typed = None
            self._echo(Text(""))
            self._type_into(self.query_one("#gate-input", Input))

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
        result = self.source.preview(text, gate=self.gate.id)
        self.app.call_from_thread(self._show, text, result)

    def _show(self, text: str, p: Preview) -> None:
        if self.app.screen is not self:
            return  # closed while the line was read (answered elsewhere, quit)
        if p.error:
            self.typed = None
            echo = Text(f"✗ {p.error}", style="bold red")
            if p.suggestion:
                # The closest reading, put in the field: Enter reads it (and echoes it) like anything typed.
                self.query_one("#gate-input", Input).value = p.suggestion
                echo.append(f" — Enter reads {p.suggestion!r}, or edit it", style="dim")
            self._echo(echo)
            return
        self.typed = text
        need = " (needs your confirmation)" if p.confirm else ""
        echo = Text(f"{p.echo}{need}", style="bold")
        echo.append(f" — at gate {self.gate.id}; Enter to confirm, Esc to edit", style="dim")
        self._echo(echo)
        self.set_focus(None)

    def _echo(self, text: Text) -> None:
        self.query_one("#gate-echo", Static).update(text)
        self._fit()  # an echo that wraps takes lines from the body, never from itself

    def _confirm(self) -> None:
        if self.typed is None:
            return
        self.source.answer(self.typed, gate=self.gate.id)
        self.dismiss(self.typed)
