"""The Textual app driven with Pilot (`App.run_test()`): real sessions, real graph, real demo hosts.

Live and attach tests run the campaign in the test process's worker thread exactly as `signoff run`
does under a terminal; the app only ever reads the journal and answers through `Runner.decide`.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.css.query import NoMatches
from textual.widgets import DataTable, Input, Static

from agent.cli.running import on_hosts
from agent.journal.view import fold, replay
from agent.run.create import create
from agent.run.runner import Runner
from agent.stopping import stop_requested
from agent.store.local import SessionDir
from tests.conftest import ROOT, journal_events
from tools.transport import CommandRequest, CommandResult, LocalTransport
from tui import render
from tui.app import SignoffApp
from tui.eventlist import EventList
from tui.screens import GateScreen, HelpScreen, QuitScreen
from tui.source import LiveSource, ReplaySource, SessionSource

CAUTIOUS = (ROOT / "policies" / "presets" / "cautious.yaml").read_text()
ME = f"human:{getpass.getuser()}"


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def policy_asking_at_plan(tmp_path: Path, extra: str = "") -> Path:
    """cautious, except that the plan gate asks a person (and optionally has a deadline)."""
    text = CAUTIOUS.replace(
        "      - id: approve-engineer-plan\n        when: proposed == 0\n        decide: approve",
        "      - id: approve-engineer-plan\n        when: proposed == 0\n        decide: ask",
    ).replace("  plan:\n    rules:", f"  plan:{extra}\n    rules:")
    text = text.split("\ntests:")[0] + "\n"  # its self-tests expect the original plan rule
    path = tmp_path / "plan-asks.yaml"
    path.write_text(text)
    return path


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 90.0, what: str = "") -> None:
    for _ in range(int(timeout / 0.1)):
        if condition():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out waiting for {what or condition}")


def live_app(variant: Callable[..., Path], policy: Path) -> tuple[SessionDir, SignoffApp]:
    """A new session running in its worker thread, as `signoff run` starts it under a terminal."""
    d = create(variant(), policy)
    source = LiveSource(d)
    source.start()
    return d, SignoffApp(source, mode="live")


def gate_open(app: SignoffApp) -> bool:
    """A gate screen is up and composed, down to the widgets inside its scrolling body (mounted a step later)."""
    screen = app.screen
    return isinstance(screen, GateScreen) and all(
        screen.query(name) for name in ("#gate-echo", "#gate-ask", "#gate-summary", "#gate-facts")
    )


def echo(app: SignoffApp) -> str:
    return str(app.screen.query_one("#gate-echo", Static).render())


def decisions(d: SessionDir) -> list[dict[str, Any]]:
    return [e for e in journal_events(d.journal) if e["kind"] == "decision"]


# ---------------------------------------------------------------- live: gates answered in the TUI


async def test_a_gate_answered_by_key_is_echoed_then_confirmed(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        screen = app.screen
        assert "Approve it?" in str(screen.query_one("#gate-ask", Static).render())
        assert "Plan, in order" in str(screen.query_one("#gate-summary", Static).render())
        assert "policy recommends ASK (rule approve-engineer-plan)" in str(
            screen.query_one("#gate-recommendation", Static).render()
        )
        assert "[y] approve" in str(screen.query_one("#gate-keys", Static).render())
        await pilot.press("y")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        assert echo(app).startswith("APPROVE")
        assert not decisions(d) or all(x["gate_kind"] != "plan" for x in decisions(d))  # nothing took effect yet
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
        table = app.query_one("#plan", DataTable)
        assert table.row_count == 3
        assert "kept" in str(table.get_row("3")[2])
    plan = next(x for x in decisions(d) if x["gate_kind"] == "plan")
    assert plan["by"] == ME and plan["raw"] == "approve" and plan["decision"]["action"] == "approve"


async def test_a_one_liner_is_echoed_and_gibberish_is_rejected_in_place(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        await pilot.press("slash")
        await pilot.press(*"purple monkey dishwasher")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "✗" in echo(app), what="the rejection")
        assert "didn't understand" in echo(app) and gate_open(app)
        field = app.screen.query_one("#gate-input", Input)
        assert app.screen.focused is field  # a rejected line stays in the input, to be corrected
        field.value = ""
        await pilot.press(*"skip #2 for now if it's unsafe")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        assert echo(app).startswith('RULE session-rule:1: SKIP #2 (deferred to end of run) IF verdict == "unsafe"')
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
        assert app.view.options[2].status == "deferred"
    events = journal_events(d.journal)
    rejected = [e for e in events if e["kind"] == "decision.rejected"]
    assert rejected and rejected[0]["raw"] == "purple monkey dishwasher" and rejected[0]["by"] == ME
    assert next(e for e in events if e["kind"] == "rule.added")["raw"] == "skip #2 for now if it's unsafe"


async def test_a_line_not_understood_offers_the_closest_reading_in_the_field_for_enter(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        await pilot.press("slash")
        await pilot.press(*"skip 2 bc it is kinda meh lol")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "✗" in echo(app), what="the rejection")
        field = app.screen.query_one("#gate-input", Input)
        await wait_for(pilot, lambda: field.value == "skip #2", what="the suggestion in the field")
        assert "did you mean: skip #2?" in echo(app) and "Enter reads 'skip #2'" in echo(app)
        await pilot.press("enter")  # reads the suggestion, and echoes it like anything typed
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        assert echo(app).startswith("SKIP #2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
    plan = next(x for x in decisions(d) if x["gate_kind"] == "plan")
    assert plan["raw"] == "skip #2" and plan["decision"]["action"] == "skip" and plan["decision"]["targets"] == [2]


async def test_a_gate_deadline_counts_down_into_the_policys_answer(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    policy = policy_asking_at_plan(tmp_path, extra="\n    deadline: 4s\n    on_deadline: approve")
    d, app = live_app(variant, policy)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        countdown = app.screen.query_one("#gate-countdown", Static)
        await wait_for(pilot, lambda: str(countdown.render()).startswith("⏱"), timeout=5, what="the countdown")
        assert str(countdown.render()).startswith("⏱ 0:0") and "until approve" in str(countdown.render())
        await wait_for(pilot, lambda: not gate_open(app), timeout=15, what="the deadline")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
    plan = next(x for x in decisions(d) if x["gate_kind"] == "plan")
    assert plan["by"] == "deadline" and plan["decision"]["action"] == "approve"


async def test_quitting_at_a_gate_leaves_the_session_paused_and_resumable(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == "paused"
    with d.locked():
        out = Runner(d).outcome()
    assert out.status == "paused" and out.pending_gate["kind"] == "plan"


async def test_quitting_after_the_run_journaled_its_end_asks_nothing_and_waits_for_it_to_return(home: Path) -> None:
    # ci75, under load: the header said "done · stopped", `q` then asked whether to stop a run that had ended (it was
    # only returning, its last writes), and the terminal stayed on that question. Nothing is left to stop: the app
    # quits once the run has returned.
    from tests.tui.test_tui_snapshots import FrozenSource

    class Returning(FrozenSource):
        returning = True

        def busy(self) -> bool:
            return self.returning

    source = Returning([json.loads(line) for line in FIXTURE.read_text().splitlines()])
    app = SignoffApp(source, mode="attach")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.view.status == "finished", what="the journal's end")
        await pilot.press("q")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, QuitScreen) and app.return_value is None  # no question; not gone yet
        await pilot.press("q")  # a second q changes nothing
        source.returning = False
        await wait_for(pilot, lambda: app.return_value is not None, what="the app quitting")
    assert app.return_value == "finished"


async def test_quitting_while_the_run_goes_on_asks_then_stops_it_between_two_commands(
    home: Path, variant: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Was: `q` exited at once, ctrl+q exited 130 while the worker kept running (stress, a gate, a decision and
    # `session.finished` were journaled after the quit), and ctrl+c only showed Textual's "press ctrl+q".
    # The run is held at its first benchmark command until the keys below are pressed: with runs of a quarter second
    # instead, a loaded machine finished the whole run before `y` could stop it (ci34, and ci85 under two CPU hogs).
    held, release = threading.Event(), threading.Event()
    execute = LocalTransport.execute

    def held_execute(self: LocalTransport, request: CommandRequest) -> CommandResult:
        if " bench " in request.command and not release.is_set():
            held.set()
            release.wait(timeout=300)
        return execute(self, request)

    monkeypatch.setattr(LocalTransport, "execute", held_execute)
    d, app = live_app(variant, ROOT / "policies" / "presets" / "autonomous.yaml")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, held.is_set, what="a benchmark running")
            for key in ("q", "ctrl+q", "ctrl+c"):
                await pilot.press(key)
                await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), what=f"{key} asking first")
                assert "still going" in str(app.screen.query_one("#quit-question", Static).render())
                await pilot.press("n")
                await wait_for(pilot, lambda: not isinstance(app.screen, QuitScreen), what="keep watching")
                assert app.source.busy() and not stop_requested()
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), what="the question")
            await pilot.press("y")
            await wait_for(pilot, stop_requested, what="the stop asked for")
            release.set()  # the command in flight ends; the next one is not started
            await wait_for(pilot, lambda: not app.source.busy(), what="the run stopping")
            await wait_for(pilot, lambda: app.return_value is not None, what="the app quitting")
    finally:
        release.set()
    events = journal_events(d.journal)
    assert events[-1]["kind"] == "session.interrupted" and events[-1]["reason"] == "operator-quit"
    assert not stop_requested()  # honoured, and forgotten: the next run in this process is not stopped by it
    view = fold(d.events())
    assert view.status == "interrupted" and d.meta()["status"] == "interrupted"
    # What the fold says is on each host is what the journal's applies and reverts add up to (how far the run got
    # before `y` depends on the machine's load), and the message the CLI prints says exactly that.
    expected: dict[str, set[int]] = {}
    for e in events:
        if e["kind"] == "command.finished" and e.get("effect") in ("apply", "revert") and e.get("exit") == 0:
            on = expected.setdefault(e["host"], set())
            (on.add if e["effect"] == "apply" else on.discard)(e["option"])
    assert {h: set(on) for h, on in view.on_hosts.items() if on} == {h: on for h, on in expected.items() if on}
    said = on_hosts(view)
    for host, on in expected.items():
        for option in on:
            assert f"#{option} applied" in said.split(f"{host}: ", 1)[1].split(";")[0], said
    nothing = "no option is applied on any host"
    assert said.startswith("on the hosts now: ") if any(expected.values()) else said == nothing
    with d.locked():  # and `resume` goes on to the end from where it stopped
        assert Runner(d, headless=True).resume().status == "finished"


# ---------------------------------------------------------------- attach


def attached_at_plan(variant: Callable[..., Path], tmp_path: Path) -> tuple[SessionDir, SignoffApp]:
    """A headless session paused at its plan gate, and the app attached to it."""
    d = create(variant(), policy_asking_at_plan(tmp_path))
    with d.locked():
        assert Runner(d, headless=True).start().status == "paused"
    return d, SignoffApp(SessionSource(d), mode="attach")


async def test_watch_only_attach_says_who_runs_the_session_and_how_to_answer_its_gate(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    # Was: with another process holding the session (`run --wait`), `g` did nothing and nothing said why.
    d, app = attached_at_plan(variant, tmp_path)
    with contextlib.ExitStack() as other:
        other.enter_context(d.locked())  # another runner holds the session, waiting at its gate
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: (app.note or "").startswith("watch-only:"), what="the watch-only note")
            assert f"pid {os.getpid()}" in app.note and f'signoff decide {d.id} "<one line>"' in app.note
            await pilot.press("g")
            await pilot.pause(0.3)
            assert not gate_open(app) and str(app.query_one("#note", Static).render()) == app.note
            other.close()  # it lets go
            await wait_for(pilot, lambda: gate_open(app), what="the gate, once the other runner let go")
            assert not (app.note or "").startswith("watch-only:")


async def test_attach_to_a_paused_headless_session_and_resume_it_to_the_end(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d, app = attached_at_plan(variant, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        lines = app.query_one("#events", EventList).texts()
        assert any("gate g1 (plan) opened" in line for line in lines)  # history was read
        await pilot.press("c")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
    with d.locked():
        out = Runner(d).outcome()
    assert out.status == "finished" and {o["id"]: o["outcome"] for o in out.options}[3] == "kept"
    assert next(x for x in decisions(d) if x["gate_kind"] == "plan")["by"] == ME


async def test_attach_to_a_session_in_the_team_store_answers_its_gate_and_follows_it_to_the_end(
    home: Path, variant: Callable[..., Path], tmp_path: Path, postgres: Any, cli: Any
) -> None:
    """The same screen over PostgreSQL: history and live events through the NOTIFY-woken tail, the
    answer through the store's lease and answers table."""
    import uuid

    from agent.store import open_store

    url = postgres.database(f"tui_{uuid.uuid4().hex[:12]}")
    assert cli("store", "init", "--store", url).code == 0
    d = create(variant(), policy_asking_at_plan(tmp_path), store=open_store(url))
    with d.locked():
        assert Runner(d, headless=True).start().status == "paused"
    app = SignoffApp(SessionSource(d), mode="attach")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        await pilot.press("c")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
        lines = app.query_one("#events", EventList).texts()
        assert any("A/B" in line for line in lines)  # events that came after the answer, live
    with d.locked():
        out = Runner(d).outcome()
    assert out.status == "finished" and {o["id"]: o["outcome"] for o in out.options}[3] == "kept"
    assert next(e for e in d.events() if e["kind"] == "decision" and e["gate_kind"] == "plan")["by"] == ME
    assert not (home / "sessions").exists()  # nothing of it in the local store
    d.close()


async def test_attach_only_watches_while_another_runner_holds_the_session(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    d = create(variant(), policy_asking_at_plan(tmp_path))
    with d.locked():
        assert Runner(d, headless=True).start().status == "paused"
        app = SignoffApp(SessionSource(d), mode="attach")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            assert not gate_open(app)  # the lock is held (here, by this test): no gate to answer
            assert app.view.status == "paused"


# ---------------------------------------------------------------- replay


FIXTURE = Path(__file__).parents[1] / "fixtures" / "tui" / "demo-journal.jsonl"


def fixture_session(home: Path) -> SessionDir:
    d = SessionDir("20261202-235327-0f62")
    d.root.mkdir(parents=True, exist_ok=True)
    d.journal.write_bytes(FIXTURE.read_bytes())
    return d


async def test_a_timer_tick_while_the_app_closes_is_not_an_error(home: Path) -> None:
    # The widgets go before the timers stop: a last tick finding no #status once crashed the app at exit.
    app = SignoffApp(ReplaySource(fixture_session(home)), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
    app._shown.clear()  # draw afresh: nothing is skipped as already shown
    with pytest.raises(NoMatches):
        app._redraw_status()  # what the tick calls: the screen is gone
    app._tick(app._redraw_status)  # and the tick says nothing of it
    assert not app.screen_stack  # its screens are gone too (ci71: the clock's tick asked which one was on top)
    app._tick(app._clock)
    running = SignoffApp(ReplaySource(fixture_session(home)), mode="replay")
    async with running.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        running.query_one("#status").remove()
        await pilot.pause()
        running._shown.clear()
        with pytest.raises(NoMatches):  # while the app runs, a missing widget is a real error
            running._tick(running._redraw_status)


async def test_replay_steps_and_jumps_through_a_finished_session_read_only(home: Path) -> None:
    d = fixture_session(home)
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.cursor == len(app.events) - 1 and app.view.status == "finished"
        await pilot.press("home")
        assert app.cursor == 0 and app.view.status == "running"
        await pilot.press("right", "right")
        assert app.cursor == 2
        await pilot.press("left")
        assert app.cursor == 1
        await pilot.press("right_square_bracket")
        first_gate = app.events[app.cursor]
        assert first_gate["kind"] == "gate.opened" and first_gate["gate_kind"] == "plan"
        assert all(o.status == "pending" for o in app.view.options.values())  # nothing tried yet
        while app.events[app.cursor].get("gate_kind") != "safety" or app.events[app.cursor]["kind"] != "decision":
            await pilot.press("right_square_bracket")
        # As of #2's safety decision: skipped (rollback still ahead), #3 not yet tried.
        assert app.view.options[2].status == "skipped" and app.view.options[2].verdict == "unsafe"
        assert app.view.options[3].status == "clear"  # investigated, not yet tried
        timeline = str(app.query_one("#timeline", Static).render())
        assert f"event {app.cursor + 1}/{len(app.events)}" in timeline and "SKIP by policy:skip-unsafe" in timeline
        await pilot.press("left_square_bracket")
        assert app.events[app.cursor]["kind"] == "gate.opened"
        await pilot.press("g")  # read-only: no gate screen, nothing answered
        await pilot.pause()
        assert not gate_open(app)
        await pilot.press("end")
        assert app.view.options[3].status == "kept"
    assert d.journal.read_bytes() == FIXTURE.read_bytes()  # replay wrote nothing


async def test_each_step_shows_the_journal_as_it_stood_at_that_event(home: Path) -> None:
    # Stepping forward folds on from the view shown; back, home and jumps fold again from the start. Whatever the
    # path, the view at an event is the fold of the journal up to it.
    app = SignoffApp(ReplaySource(fixture_session(home)), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        walk = ["home", "right", "right", "right_square_bracket", "right", "left", "right_square_bracket", "end",
                "left_square_bracket", "left", "right", "right", "home", "right_square_bracket", "right"]  # fmt: skip
        seen = set()
        for key in walk:
            await pilot.press(key)
            assert app.view == replay(app.entries, app.cursor), f"after {key!r} at event {app.cursor}"
            seen.add(app.cursor)
        assert len(seen) > 8


async def test_help_palette_and_theme(home: Path) -> None:
    d = fixture_session(home)
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        theme = app.theme
        await pilot.press("ctrl+t")
        assert app.theme != theme
        app.jump_to_option(2)
        await pilot.pause()
        assert app.selected == 2
        shown = Console(width=100, record=True, file=io.StringIO())
        shown.print(render.evidence(app.view.options[app.selected]))
        text = shown.export_text()
        assert "#2 overlap scheduler" in text and "WEDGE" in text and "undo plan:" in text
        names = [n for c in app.commands.finished() for _, n in c.outputs()]
        assert names and all((n.startswith("sha256-")) for n in names)


def test_replay_source_refuses_answers(home: Path) -> None:
    from agent.errors import SessionError

    source = ReplaySource(fixture_session(home))
    assert source.read_only and source.preview("continue").error
    with pytest.raises(SessionError):
        source.answer("continue")


def test_the_view_folds_a_journal_into_what_the_screen_shows() -> None:
    from agent.journal.view import fold

    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    view = fold(events)
    assert {o.id: o.status for o in view.options.values()} == {1: "no-go", 2: "skipped", 3: "kept"}
    assert view.options[3].gain_pct == pytest.approx(22.599) and view.options[2].verdict == "unsafe"
    assert [g.kind for g in view.gates] == ["plan", "triage", "safety", "continue_or_ask", "safety", "continue_or_ask"]
    assert all(g.action for g in view.gates) and view.open_gate is None
    assert view.stress_total == 4 and view.status == "finished"
