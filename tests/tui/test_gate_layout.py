"""The gate dialog laid out by what decides (issue 36): the question and the policy's word pinned on top, the
evidence below them (gain and CI first, then hazards, then stress), the undo plan, the facts last and folded;
the keys, the line and its echo always on screen, at 80×24, 120×40 and 200×50.

Every gate comes from real sessions (`tests/fixtures/tui/gates-ask-everything.jsonl`: the demo and the sweep
demo under `ask-everything`, one `gate.opened` per gate); the dialog is the real app under Pilot. What is
checked is the text on the terminal's cells, so a widget laid out below the edge counts as missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from policies.gates import ALLOWED, Gate, suggested_answer
from tests.tui.test_tui import gate_open, wait_for
from tests.tui.test_tui_snapshots import FrozenSource, frozen_app
from tui import render
from tui.app import SignoffApp
from tui.screens import GateScreen, answer_keys
from tui.source import PendingGate, Preview

GATES = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "fixtures" / "tui" / "gates-ask-everything.jsonl").read_text().splitlines()
]
SIZES = [(80, 24), (120, 40), (200, 50)]
# An echo as long as a hedged, tolerant reading makes one: it wraps on a narrow screen.
ECHO = "SKIP #2 — roll it back and move on (read as: 'the overlap scheduler' → #2; 'soudnds' → 'sounds')"


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


class EchoingSource(FrozenSource):
    def preview(self, text: str, *, gate: str | None = None) -> Preview:
        return Preview(echo=ECHO, confirm=True)


def name(e: dict[str, Any]) -> str:
    return f"{'sweep' if e['session'].endswith('c547') else 'demo'}-{e['gate']}-{e['gate_kind']}"


def dialog_app(e: dict[str, Any]) -> SignoffApp:
    gate = {
        "id": e["gate"], "kind": e["gate_kind"], "option": e["option"], "question": e["question"],
        "facts": e["facts"], "allowed": list(ALLOWED[e["gate_kind"]]),
        "options": [e["option"]] if e["option"] is not None else [],
        "recommendation": e.get("recommendation"), "suggested": suggested_answer(e["gate_kind"], e["facts"]),
    }  # fmt: skip
    paused = {**e, "kind": "session.paused", "seq": e["seq"] + 1}
    return frozen_app(EchoingSource([e, paused], PendingGate(gate=Gate.model_validate(gate))))


def on_screen(app: SignoffApp) -> str:
    """The terminal's cells as text, one line per row."""
    strips = app.screen._compositor.render_strips()  # pyright: ignore[reportPrivateUsage]
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def flat(text: str) -> str:
    """Text as it reads across wrapped rows and the dialog's borders: words only, single spaces."""
    return " ".join(word for word in text.split() if word.strip("│█╭╮╰╯─▀▄▊▎▔▁╸━"))


def in_dialog(app: SignoffApp) -> str:
    """The cells inside the dialog's box, row by row: the backdrop beside it (the plan, the events) must not
    break a wrapped phrase, nor stand in for one."""
    rows = on_screen(app).splitlines()
    if not isinstance(app.screen, GateScreen):
        return "\n".join(rows)
    box = app.screen.query_one("Vertical").region
    return "\n".join(row[box.x : box.right] for row in rows[box.y : box.bottom])


def shows(app: SignoffApp, *texts: str) -> bool:
    screen = flat(in_dialog(app))
    return all(flat(t) in screen for t in texts)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("e", GATES, ids=name)
async def test_the_question_the_decisive_evidence_the_keys_and_the_echo_are_on_screen(
    e: dict[str, Any], size: tuple[int, int]
) -> None:
    app = dialog_app(e)
    parts = render.gate_text(e["question"], e["gate_kind"])
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        screen = app.screen
        assert isinstance(screen, GateScreen)
        first = screen.answers[0]
        must = [parts.ask.replace("**", ""), "policy recommends", f"[{first[0]}] {first[2]}", "[/] type"]
        if e["gate_kind"] == "safety":
            # The verdict, then the gain with its CI, above anything else the body holds.
            must += [parts.head[0].replace("**", "")[:60], next(x for x in parts.evidence if "95% CI" in x)[:60]]
        await wait_for(pilot, lambda: shows(app, *must), timeout=20, what=f"{must} on\n{on_screen(app)}")
        await pilot.press(first[0])
        echoed = [ECHO, "Enter to confirm", *must]
        await wait_for(pilot, lambda: shows(app, *echoed), timeout=20, what=f"the echo on\n{on_screen(app)}")


async def test_a_long_body_says_there_is_more_and_page_keys_scroll_it() -> None:
    e = next(g for g in GATES if g["gate_kind"] == "safety" and len(g["question"]) > 2000)
    app = dialog_app(e)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        more = app.screen.query_one("#gate-more", Static)
        body = app.screen.query_one("#gate-body", VerticalScroll)
        await wait_for(pilot, lambda: "more lines — PgDn" in str(more.render()), timeout=20, what="the hint")
        undo = render.gate_text(e["question"], "safety").undo[0]
        assert not shows(app, undo[-40:]) and not shows(app, "[f] shows them")  # below the fold for now
        for _ in range(10):  # to the end of the body: the undo plan, then the folded facts
            await pilot.press("pagedown")
        await wait_for(
            pilot, lambda: shows(app, undo[-40:], "[f] shows them"), timeout=20, what=f"the end on\n{on_screen(app)}"
        )
        assert body.scroll_y > 0 and "↑ PgUp" in str(more.render())
        await pilot.press("pageup")
        await wait_for(pilot, lambda: "↓" in str(more.render()), timeout=20, what="the hint again")


async def test_a_layout_callback_queued_before_the_dialog_is_taken_down_does_nothing() -> None:
    # CI caught it: a scroll callback ran after the dismissed dialog had lost its body and printed a
    # traceback over the terminal instead of the run. Here the teardown's state is made on purpose: the
    # screen still attached, its children removed, then every queued callback runs.
    e = next(g for g in GATES if g["gate_kind"] == "safety" and len(g["question"]) > 2000)
    app = dialog_app(e)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        screen = app.screen
        assert isinstance(screen, GateScreen)
        more = screen.query_one("#gate-more", Static)
        await wait_for(pilot, lambda: "PgDn" in str(more.render()), timeout=20, what="the dialog laid out")
        await screen.query_one("Vertical").remove()
        assert screen.is_attached
        screen._more()  # pyright: ignore[reportPrivateUsage]
        screen._fit_now()  # pyright: ignore[reportPrivateUsage]
        screen._check_fit(0)  # pyright: ignore[reportPrivateUsage]
        await pilot.pause()
        assert app.return_code is None and app.is_running


async def test_facts_come_last_folded_and_f_shows_only_those_that_apply_rounded() -> None:
    e = next(g for g in GATES if name(g) == "demo-g3-safety")
    assert e["facts"]["sweep_levels"] == 0 and isinstance(e["facts"]["gain_pct"], float)
    app = dialog_app(e)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        widget = app.screen.query_one("#gate-facts", Static)
        assert str(widget.render()).endswith("— [f] shows them") and "gain_pct" not in str(widget.render())
        await pilot.press("f")
        await wait_for(pilot, lambda: "[f] hides them" in str(widget.render()), timeout=20, what="the facts")
        for _ in range(10):  # the end of the body: the facts come last
            await pilot.press("pagedown")
        await wait_for(pilot, lambda: shows(app, "wedges 1"), timeout=20, what=f"the facts on\n{on_screen(app)}")
        facts = str(widget.render())
    assert f"gain_pct {render.rounded(e['facts']['gain_pct'])}" in flat(facts)
    assert repr(e["facts"]["gain_pct"]) not in facts  # rounded
    for absent in ("sweep_levels", "slo_met", "fixed_ms", "capacity_base", "level "):
        assert absent not in facts  # a run without a sweep has no sweep facts


def test_facts_shown_leave_out_placeholders_and_keep_what_they_cannot_account_for() -> None:
    facts = {"verdict": "unsafe", "has_estimate": False, "gain_pct": 0.0, "ci_low": 0.0, "sweep_levels": 0,
             "slo_met": True, "level": 0.0, "spread_ratio": 1.0, "wedges": 1, "forged\x1b": 1}  # fmt: skip
    shown = dict(render.facts_shown("safety", facts))
    assert shown == {"verdict": "unsafe", "has_estimate": "False", "wedges": "1", "forged\x1b": "1"}
    sweep = dict(render.facts_shown("safety", {"sweep_levels": 3, "slo_met": False, "level": 60.0}))
    assert sweep == {"sweep_levels": "3", "slo_met": "False", "level": "60"}
    assert [render.rounded(v) for v in (7.577, 20.263, 0.9, 1234.5, 0.0412, 0.0, 3)] == [
        "7.58", "20.3", "0.9", "1234", "0.041", "0", "3"
    ]  # fmt: skip


def test_the_question_is_taken_apart_by_what_decides() -> None:
    q = (
        "#2 overlap scheduler: safety **unsafe**, A/B **improved**; the assessment recommends **skip**.\n"
        "- stress abort-cascade: WEDGE in 1 of 3 runs\n"
        "- hazard: TP barrier in the overlap path\n"
        "- output_tok_s +7.6% (95% CI +5.7%…+9.5%) → improved\n"
        "Assessor (claude): should we? it looks risky?\n"
        "Undo plan: `revert` on gpu-a\n"
        "Keep it (continue), or skip it and roll back?"
    )
    parts = render.gate_text(q, "safety")
    assert parts.ask == "Keep it (continue), or skip it and roll back?"  # never the assessor's question
    assert parts.head == [q.splitlines()[0], "Assessor (claude): should we? it looks risky?"]
    assert [line.split()[1] for line in parts.evidence] == ["output_tok_s", "hazard:", "stress"]
    assert parts.undo == ["Undo plan: `revert` on gpu-a"]
    sweep = render.gate_text(
        "#2: unsafe\n- sweep: c=30: improved (per-c 95% CI 1…2)\n- hazard: h\n- m +7% (95% CI +5%…+9%)\nKeep?"
    )
    assert [line.split()[1] for line in sweep.evidence] == ["m", "hazard:", "sweep:"]  # the judged gain first
    plan = render.gate_text("Plan, in order:\n- #2 b\n  apply: x · revert: y\n- #1 a\nApprove it? (skip …)")
    assert plan.evidence == ["- #2 b", "  apply: x · revert: y", "- #1 a"]  # the plan's own order, kept
    assert render.gate_text("").ask == ""
    # A model's words after the real question, asking something of their own, are not pinned as the question.
    cont = render.gate_text(
        "#3 finished (kept). Next: #4 X. Continue?\nAssessor: fine.\nStop and roll back? (y)", "continue_or_ask"
    )
    assert cont.ask == "#3 finished (kept). Next: #4 X. Continue?" and "Stop and roll back? (y)" in cont.head
    # A command that spans lines stays whole and in order at a command gate.
    listed = (
        "The command policy asks before these commands for option #2:\n"
        "1. `ls` on a\n2. `bash -c 'echo x\nrm -rf /d'` on a\nRun them?"
    )
    cmd = render.gate_text(listed, "command")
    assert cmd.ask == "Run them?" and cmd.head == listed.splitlines()[:-1] and cmd.evidence == []


def test_at_a_safety_gate_one_key_rolls_back_and_every_answer_says_what_it_does() -> None:
    e = next(g for g in GATES if name(g) == "demo-g3-safety")
    gate = Gate(id="g3", kind="safety", question="?", facts=e["facts"], allowed=list(ALLOWED["safety"]))
    labels = {action: label for _, action, label in answer_keys(gate)}
    assert "rollback" not in labels and labels["skip"] == "roll it back and move on"  # `r` did the same as `s`
    assert labels["ask"].startswith("answer later") and labels["stop"] == "roll it back and end the run"


async def test_r_still_rolls_back_at_a_safety_gate() -> None:
    e = next(g for g in GATES if name(g) == "demo-g3-safety")
    app = dialog_app(e)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        assert app.screen.keys.get("r") == "rollback"
        await pilot.press("r")
        await wait_for(pilot, lambda: shows(app, "Enter to confirm"), timeout=20, what="the echo")


async def test_pane_keys_do_nothing_behind_an_open_dialog() -> None:
    app = dialog_app(next(g for g in GATES if name(g) == "demo-g1-plan"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        await pilot.press("z", "2")
        await pilot.press("y")  # the dialog still answers: its keys were not taken
        await wait_for(pilot, lambda: shows(app, "Enter to confirm"), timeout=20, what="the echo")
        assert app.screen_stack[0].maximized is None and isinstance(app.screen, GateScreen)


async def test_under_an_open_dialog_the_clock_behind_it_is_not_redrawn_and_catches_up_after() -> None:
    # Was: the status bar's clock, behind the dimmed backdrop, was redrawn every second, and every redraw repainted
    # the whole backdrop: a screen left open at a gate took 6-7 % of a core doing nothing else.
    from datetime import timedelta

    e = next(g for g in GATES if name(g) == "demo-g1-plan")
    app = dialog_app(e)
    start = app.now()
    assert start is not None
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
        status = app.query_one("#status", Static)
        before = str(status.render())
        app.now = lambda: start + timedelta(seconds=90)  # type: ignore[method-assign]
        await pilot.pause(2.5)  # two ticks of the clock
        assert str(status.render()) == before
        await pilot.press("a")  # answer later: the dialog goes, the gate still waits
        await wait_for(pilot, lambda: "paused 1:30" in str(status.render()), what=f"the clock ({status.render()})")


async def test_the_gate_is_looked_up_only_once_the_first_frame_is_drawn() -> None:
    # Finding a session's gate reads its checkpoint, which loads the graph (a second or more): looked up in the
    # first pump, `attach` showed a blank screen all that time.
    e = next(g for g in GATES if name(g) == "demo-g1-plan")
    app = dialog_app(e)
    source = app.source.inner  # pyright: ignore[reportAttributeAccessIssue]
    asked_when: list[bool] = []
    found = source.pending

    def pending() -> Any:
        asked_when.append(app.query_one("#plan").region.height > 0)  # laid out: the frame has been drawn
        return found()

    source.pending = pending
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the dialog")
    assert asked_when and all(asked_when)


def test_a_policys_answer_shown_under_another_key_is_still_marked_recommended() -> None:
    from tui.screens import recommended

    base = {"id": "g3", "kind": "safety", "question": "?", "facts": {}, "allowed": list(ALLOWED["safety"])}
    for said, marked in (("rollback", "skip"), ("approve", "continue"), ("skip", "skip")):
        gate = Gate.model_validate({**base, "recommendation": {"action": said}})
        keys = answer_keys(gate)
        assert recommended(gate) == marked and keys[0][1] == marked  # first, with the ▶


def test_facts_round_to_what_a_person_reads_without_hiding_a_tiny_value() -> None:
    assert [render.rounded(v) for v in (4e-05, -0.0001, -0.0, float("nan"))] == ["4e-05", "-0.0001", "0", "nan"]


async def test_moving_to_another_pane_while_zoomed_zooms_that_pane() -> None:
    from tests.tui.test_tui_snapshots import EVENTS, FrozenSource, frozen_app, index_of

    app = frozen_app(FrozenSource(EVENTS[: index_of("bench.progress", option=3, pair=4) + 1]))
    async with app.run_test(size=(80, 24)) as pilot:
        evidence = app.query_one("#evidence")
        await wait_for(pilot, lambda: evidence.max_scroll_y > 0, what="the evidence")
        await pilot.press("1", "z", "2")
        await wait_for(
            pilot, lambda: app.screen.maximized is evidence, what=f"evidence zoomed ({app.screen.maximized})"
        )
        assert app.focused is evidence and evidence.region.height >= 24 - 3
