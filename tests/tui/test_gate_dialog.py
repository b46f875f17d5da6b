"""The gate dialog under real conditions (issue 32): keys that arrive faster than the app handles them,
and a gate decided from another shell while its dialog is open. Real sessions (the demo campaign on its
simulated hosts, the real graph), the real app under Pilot; the other shell is the real CLI.

Keys a terminal delivers in a burst (a fast typist, a paste) are queued before the app handles the
first; `burst` sends them that way. Pilot's own `press` waits for each key to be handled, so it cannot
show what happens when they arrive at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import Input, Static

from policies.gates import Gate
from tests.conftest import ROOT, Result
from tests.tui.test_tui import ME, decisions, echo, gate_open, live_app, policy_asking_at_plan, wait_for
from tui.app import SignoffApp

ASK_EVERYTHING = ROOT / "policies" / "presets" / "ask-everything.yaml"
NAMES = {" ": "space", "/": "slash", "#": "number_sign"}


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def burst(app: SignoffApp, text: str) -> None:
    """Every character of `text` queued for the app at once, as the terminal hands over a fast burst."""
    for ch in text:
        app.post_message(events.Key(NAMES.get(ch, ch), ch))


def line(app: SignoffApp) -> Input:
    return app.screen.query_one("#gate-input", Input)


def plain(widget: Any) -> str:
    rendered = widget.render()
    return rendered.plain if hasattr(rendered, "plain") else str(rendered)


async def test_every_key_after_slash_goes_into_the_line_however_fast_it_arrives(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    _d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        field = line(app)
        burst(app, "/looks good")  # s and d are this gate's skip and defer keys: none of them may answer
        await wait_for(
            pilot, lambda: field.value == "looks good", timeout=30, what=f"the line (it has {field.value!r})"
        )
        assert app.screen.focused is field and echo(app) == ""  # typed, and nothing answered
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        assert echo(app).startswith("CONTINUE") and "at gate g1" in echo(app)
        await pilot.press("escape")  # take the echo back: the line again
        await wait_for(pilot, lambda: app.screen.focused is field and echo(app) == "", what="the line to edit")
        await pilot.press("escape")  # and out of it: keys answer again
        await wait_for(pilot, lambda: app.screen.focused is None, what="keys answering")
        burst(app, "s2")  # skip, then which option: the 2 right behind the s goes into "skip #"
        await wait_for(pilot, lambda: field.value == "skip #2", timeout=30, what=f"'skip #2' (it has {field.value!r})")
        assert app.screen.focused is field
        burst(app, "/x")  # inside the line `/` is a character like any other
        await wait_for(pilot, lambda: field.value == "skip #2/x", timeout=30, what=f"the slash typed ({field.value!r})")
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: app.return_value == "paused", what="the app to quit")


async def test_a_dialog_whose_gate_is_decided_elsewhere_closes_and_says_who_decided_it(
    home: Path, variant: Callable[..., Path], cli: Callable[..., Result]
) -> None:
    d, app = live_app(variant, ASK_EVERYTHING)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the triage gate")
        dialog = app.screen
        assert dialog.gate.id == "g2"  # type: ignore[attr-defined]
        await pilot.press("slash", *"skip #2")  # half way through an answer…
        # …another shell answers the same gate; its resume runs #2 up to its safety gate (g3).
        r = cli("decide", d.id, "continue", "--by", "bob")
        assert r.code == 3, r.stderr
        await wait_for(pilot, lambda: app.screen is not dialog, what="the triage dialog to close")
        note = app.query_one("#note", Static)
        await wait_for(pilot, lambda: "decided elsewhere" in plain(note), what="the note")
        assert "gate g2 was decided elsewhere, by human:bob: CONTINUE ('continue')" in plain(note)
        assert "g opens the gate that waits now" in plain(note)
        # Keys meant for the triage find no dialog: the safety gate waits until it is asked for.
        await pilot.press("enter", "c", "enter")
        await wait_for(pilot, lambda: app.view.open_gate is not None and app.view.open_gate.gate == "g3", what="g3")
        assert not gate_open(app) and not app.source.busy()
        await pilot.press("g")
        await wait_for(pilot, lambda: gate_open(app), what="the safety gate, opened with g")
        assert app.screen.gate.id == "g3"  # type: ignore[attr-defined]
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value == "paused", what="the app to quit")
    assert [(x["gate"], x["by"]) for x in decisions(d) if x["gate"] in ("g2", "g3")] == [("g2", "human:bob")]
    assert not any(x["by"] == ME for x in decisions(d))


async def test_a_line_given_with_decide_is_offered_only_at_the_gate_it_was_given_for(home: Path) -> None:
    """`signoff decide S "stop"` in a terminal opens the screen with the line echoed at its gate; if that
    gate was decided before the screen is up, the line is not offered at the next one."""
    from tests.tui.test_tui_snapshots import EVENTS, FrozenSource, frozen_app, index_of
    from tui.source import PendingGate

    opened = index_of("gate.opened", gate="g3")
    e = EVENTS[opened]
    paused = {**e, "kind": "session.paused", "seq": e["seq"] + 1}
    gate = {"id": "g3", "kind": "safety", "option": 2, "question": e["question"], "facts": e["facts"]}
    pending = PendingGate(gate=Gate.model_validate({**gate, "allowed": ["skip", "stop"]}))
    source = FrozenSource([*EVENTS[: opened + 1], paused], pending)
    app = frozen_app(source)
    app.prefill, app.prefill_gate = "stop", "g2"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="g3's dialog")
        await wait_for(pilot, lambda: app.note is not None, what="the note")
        assert "was for gate g2, which no longer waits" in app.note  # type: ignore[operator]
        assert line(app).value == "" and echo(app) == ""  # nothing offered for confirmation at g3
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value is not None, what="the app to quit")
