"""The TUI as an operator uses it (issue 21): focus at a gate, the recommended answer, a rule-only line,
the status bar and clock, columns at 80×24 and 120×40 and on resize, the A/B plot on one axis,
progress counts, live command output, outputs by name, screenshots, replayed gates, the bell.

Live runs are real sessions (the demo campaign on its simulated hosts, the real graph); replays read
sessions recorded by the code (tests/fixtures)."""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Label, RichLog, Static

from agent.journal.view import fold, timestamp
from agent.store.local import SessionDir
from policies.gates import Gate
from tests.conftest import ROOT
from tests.tui.test_tui import FIXTURE, echo, gate_open, live_app, policy_asking_at_plan, wait_for
from tui import render
from tui.abplot import ABPlot
from tui.app import SignoffApp, SignoffCommands
from tui.commands import EMPTY
from tui.eventlist import EventList
from tui.output import OutputPane
from tui.plot import figure
from tui.screens import ArtifactScreen, answer_keys, recommended
from tui.source import ReplaySource

ASK_EVERYTHING = ROOT / "policies" / "presets" / "ask-everything.yaml"
CAUTIOUS = ROOT / "policies" / "presets" / "cautious.yaml"
V1 = ROOT / "tests" / "fixtures" / "journal-v1"
EVENTS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def imported(cli: Any, tmp_path: Path, name: str = "ask-one-liners") -> SessionDir:
    """A session recorded by the code, with its artifacts, imported into the test's store."""
    bundle = tmp_path / name
    shutil.copytree(V1 / name, bundle)
    out = cli("import", str(bundle), "--json")
    assert out.code == 0, out.stderr
    return SessionDir(json.loads(out.stdout)["session"])


def plain(widget: Any) -> str:
    """What a Static or Label shows, as plain text (Rich groups and tables included)."""
    content = widget.content if hasattr(widget, "content") else widget.render()
    if isinstance(content, str):
        return content
    if hasattr(content, "plain"):
        return content.plain
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


# ---------------------------------------------------------------- focus at a gate


async def test_esc_leaves_the_input_and_the_next_key_answers(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    _d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        field = app.screen.query_one("#gate-input", Input)
        await pilot.press("slash", "s", "k")
        await wait_for(pilot, lambda: app.screen.focused is field and field.value == "sk", what="'sk' typed")
        await pilot.press("escape")
        # Left the input; the text stays.
        await wait_for(pilot, lambda: app.screen.focused is None and field.value == "sk", what="keys again")
        await pilot.press("y")  # now a key answers
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        assert echo(app).startswith("APPROVE") and field.value == "sk"
        await pilot.press("escape")  # an echoed decision: Esc takes it back to edit the line
        await wait_for(pilot, lambda: app.screen.focused is field and echo(app) == "", what="the line to edit")
        await pilot.press("escape", "q")  # out of the input again: q quits, it is not typed
        await wait_for(pilot, lambda: app.return_value is not None, what="the app to quit")
    assert app.return_value == "paused" and field.value == "sk"


async def test_at_80x24_the_gate_keeps_its_keys_input_and_echo_on_screen(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    _, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        screen = app.screen
        keys = screen.query_one("#gate-keys-line", Static)
        # The short layout is the screen's breakpoint class, applied once it has its size: wait for it.
        await wait_for(
            pilot, lambda: keys.display and not screen.query_one("#gate-keys").display, what="one wrapped line of keys"
        )
        assert plain(keys).startswith("▶ [y] approve (recommended)")
        await pilot.press("y")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")

        def on_screen(name: str) -> bool:
            region = screen.query_one(name).region
            return region.height > 0 and region.y >= 0 and region.bottom <= 24

        names = ("#gate-keys-line", "#gate-input", "#gate-echo")
        await wait_for(
            pilot,
            lambda: all(on_screen(n) for n in names),
            what=f"keys, input and echo on screen ({[screen.query_one(n).region for n in names]})",
        )
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value is not None, what="the app to quit")


# ---------------------------------------------------------------- the answers a gate offers


def gate(kind: str, facts: dict[str, Any], allowed: list[str], **more: Any) -> Gate:
    return Gate.model_validate({"id": "g9", "kind": kind, "facts": facts, "allowed": allowed, "question": "?", **more})


def test_the_recommended_answer_comes_first_and_only_answers_that_mean_something_get_a_key() -> None:
    from policies.gates import ALLOWED, suggested_answer

    wedge = gate(
        "safety", {"verdict": "unsafe", "wedges": 1}, list(ALLOWED["safety"]),
        recommendation={"action": "ask", "rule": "ask-when-unclear"},
    )  # fmt: skip
    keys = answer_keys(wedge)
    assert keys[0][:2] == ("s", "skip") and keys[0][2] == "roll it back and move on"
    assert [a for _, a, _ in keys].count("continue") == 1 and "approve" not in [a for _, a, _ in keys]

    # Safe but no better (or the A/B could not tell): the cautious answer is to roll it back.
    for ab in ("no_effect", "inconclusive", "regressed"):
        flat = gate("safety", {"verdict": "safe", "ab_verdict": ab}, list(ALLOWED["safety"]))
        assert suggested_answer("safety", flat.facts) == "skip"
        assert answer_keys(flat)[0][1] == "skip", ab
    # Running a command or going past a budget is the person's call: nothing marked unless the policy says.
    for kind in ("command", "budget"):
        asked = gate(kind, {}, list(ALLOWED[kind]))
        assert recommended(asked) is None

    # The policy's own answer wins over the cautious default.
    ruled = gate("safety", {"verdict": "safe"}, list(ALLOWED["safety"]), recommendation={"action": "continue"})
    assert answer_keys(ruled)[0][1] == "continue"

    done = gate(
        "continue_or_ask", {"has_next_step": False, "remaining": 0}, list(ALLOWED["continue_or_ask"]),
    )  # fmt: skip
    actions = [a for _, a, _ in answer_keys(done)]
    assert "skip" not in actions and "defer" not in actions and actions[0] == "continue"
    assert answer_keys(done)[0][2] == "finish with the report"

    plan = gate("plan", {"options": 3}, list(ALLOWED["plan"]))
    offered = [a for _, a, _ in answer_keys(plan)]
    assert offered[0] == "approve" and "continue" not in offered


async def test_the_gate_screen_marks_the_recommended_answer(home: Path) -> None:
    from tests.tui.test_tui_snapshots import FrozenSource
    from tui.source import PendingGate

    opened = next(i for i, e in enumerate(EVENTS) if e["kind"] == "gate.opened" and e["gate"] == "g3")
    e = EVENTS[opened]
    pending = PendingGate(
        gate=Gate.model_validate({
            "id": "g3", "kind": "safety", "option": 2, "question": e["question"], "facts": e["facts"],
            "allowed": ["continue", "approve", "skip", "defer", "rollback", "retry", "stop", "ask"],
            "recommendation": {"action": "ask", "rule": "ask-when-unclear"},
        })
    )  # fmt: skip
    paused = {**e, "kind": "session.paused", "seq": e["seq"] + 1}
    app = SignoffApp(FrozenSource([*EVENTS[: opened + 1], paused], pending), mode="attach")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the gate")
        keys = plain(app.screen.query_one("#gate-keys", Static)).splitlines()
        assert keys[0].startswith("▶ [s] roll it back and move on") and keys[0].endswith("recommended")
        assert not any("[y]" in k for k in keys)  # approve and continue mean the same here: one key


async def test_a_line_that_only_adds_a_rule_reopens_the_gate_saying_so(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    _d, app = live_app(variant, ASK_EVERYTHING)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the triage gate")
        assert app.screen.gate.kind == "triage"
        await pilot.press("c")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what="the echo")
        await pilot.press("enter")
        await wait_for(pilot, lambda: gate_open(app) and app.screen.gate.kind == "safety", what="the safety gate")
        asked = plain(app.screen.query_one("#gate-summary", Static))
        assert "Undo plan: `" in asked and "simserve.py revert" in asked and "{{" not in asked  # as it will run
        await pilot.press("slash", *"stop if the health check fails", "enter")
        await wait_for(pilot, lambda: "Enter to confirm" in echo(app), what=f"the echo (shown: {echo(app)!r})")
        assert "this gate still needs an answer" in echo(app)
        first = app.screen
        await pilot.press("enter")
        await wait_for(pilot, lambda: gate_open(app) and app.screen is not first, what="the gate again")
        notice = plain(app.screen.query_one("#gate-notice", Static))
        assert app.screen.gate.kind == "safety" and app.screen.query_one("#gate-notice").display
        assert "session-rule:1" in notice and "this gate still needs an answer" in notice
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value is not None, what="the app to quit")


# ---------------------------------------------------------------- status bar and clock


def test_the_status_bar_names_the_open_gate_and_its_clock_runs_while_it_waits() -> None:
    opened = next(i for i, e in enumerate(EVENTS) if e["kind"] == "gate.opened" and e["gate"] == "g3")
    paused = {**EVENTS[opened], "kind": "session.paused", "seq": EVENTS[opened]["seq"] + 1}
    view = fold([*EVENTS[: opened + 1], paused])
    at = timestamp(EVENTS[opened]["ts"])
    assert at is not None and view.status == "paused"
    before = render.status_line(view, mode="live", now=at + timedelta(seconds=4)).plain
    after = render.status_line(view, mode="live", now=at + timedelta(seconds=44)).plain
    assert "gate g3 (safety #2)" in after and "paused 0:44" in after and "paused 0:04" in before
    clock = [re.search(r"· (\d\d):(\d\d) ·", t) for t in (before, after)]
    assert clock[0] and clock[1]
    seconds = [int(m.group(1)) * 60 + int(m.group(2)) for m in clock if m]
    assert seconds[1] - seconds[0] == 40  # the clock went on while the gate waited
    # At 80 columns the policy, campaign and session go before the phase and the state do.
    narrow = render.status_line(view, mode="attach", now=at, width=80).plain
    assert len(narrow) <= 80 and "gate g3 (safety #2)" in narrow and "paused" in narrow


# ---------------------------------------------------------------- columns, sizes and resizing


def reflowed(app: SignoffApp) -> bool:
    """The plan shows the columns its table's current width calls for."""
    table = app.query_one("#plan", DataTable)
    cells = [render.plan_cells(o) for o in sorted(app.view.options.values(), key=lambda o: o.id)]
    wanted = [k for k, _ in render.plan_layout(cells, table.scrollable_content_region.width)]
    return table.region.right <= app.size.width and plan_text(app)[0] == wanted


def plan_text(app: SignoffApp) -> list[list[str]]:
    table = app.query_one("#plan", DataTable)
    header = [str(c.label) for c in table.ordered_columns]
    return [header, *[[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]]


async def test_columns_fit_at_120x40_and_80x24_and_reflow_on_resize(home: Path) -> None:
    d = SessionDir("20261202-235327-0f62")
    d.root.mkdir(parents=True)
    d.journal.write_bytes(FIXTURE.read_bytes())
    app = SignoffApp(ReplaySource(d), mode="replay")
    full = ["#", "option", "status", "gain", "95% CI", "verdict"]
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: len(plan_text(app)) == 4 and plan_text(app)[0] == full, what="the plan")
        rows = plan_text(app)
        third = dict(zip(rows[0], rows[3], strict=True))
        assert third["gain"] == "+22.6%" and third["95% CI"] == "+20.3…+25.0" and third["verdict"] == "safe"
        status = plain(app.query_one("#status", Static))
        assert "finished" in status and "done" in status
        for size in ((80, 24), (50, 24)):
            await pilot.resize_terminal(*size)
            # Laid out again: the plan shows the columns its table's new width calls for.
            await wait_for(pilot, lambda size=size: app.size.width == size[0] and reflowed(app), what=f"{size}")
            rows = plan_text(app)
            third = dict(zip(rows[0], rows[-1], strict=True))
            assert third["gain"] == "+22.6%" and third["95% CI"] == "+20.3…+25.0"  # never cut
            status = plain(app.query_one("#status", Static))
            assert "REPLAY" in status and "finished" in status and "done" in status
        assert "verdict" not in rows[0]  # at 50 columns the least telling column went first
        await pilot.resize_terminal(120, 40)
        # And it came back.
        await wait_for(pilot, lambda: reflowed(app) and plan_text(app)[0] == full, what="the verdict at 120")


def test_the_plan_drops_columns_least_important_first() -> None:
    view = fold(EVENTS)
    cells = [render.plan_cells(o) for o in view.options.values()]
    full = ["#", "option", "status", "gain", "95% CI", "verdict"]
    seen: list[list[str]] = []
    for width in range(120, 20, -1):
        layout = render.plan_layout(cells, width)
        keys = [k for k, _ in layout]
        if not seen or seen[-1] != keys:
            seen.append(keys)
        if keys != ["#", "option", "status"]:  # below that nothing more can go: the table scrolls
            assert sum(w + render.CELL_PADDING for _, w in layout) <= width
    assert seen == [full, full[:5], full[:4], full[:3]]  # verdict, then the CI, then the gain
    widest = render.plan_layout(cells, 120)
    assert dict(widest)["option"] == max(len(o.title) for o in view.options.values())  # no title cut when it fits


# ---------------------------------------------------------------- A/B on one axis, progress counts


def test_for_a_lower_is_better_metric_the_plotted_gain_sits_with_its_ci() -> None:
    """Latency: B below A is a gain. The points are A/B − 1, on the same side as the CI and the goal."""
    view = fold(EVENTS)
    o = view.options[3]
    assert o.ab is not None
    o.ab = o.ab.model_copy(update={"higher_is_better": False})
    fig = figure(o, view)
    a, b = fig.a[0], fig.b[0]
    assert a and b and fig.effects[0] == pytest.approx((a / b - 1) * 100)


def test_the_ab_figure_puts_both_arms_on_one_axis_against_noise_ci_and_goal() -> None:
    view = fold(EVENTS)
    fig = figure(view.options[3], view)
    assert fig.pairs == [1, 2, 3, 4, 5, 6] and all(a and b and b > a for a, b in zip(fig.a, fig.b, strict=True))
    assert fig.effects[0] == pytest.approx((fig.b[0] / fig.a[0] - 1) * 100)  # type: ignore[operator]
    assert fig.ci == (20.263, 24.981) and fig.noise_pct == 1.0 and fig.goal_pct == 20.0
    assert fig.effect_title() == "gain per pair, % · 95% CI +20.3…+25.0 · noise ±1 · goal +20"


async def test_the_ab_plot_and_the_progress_counts_on_screen(home: Path) -> None:
    from tests.tui.test_tui_snapshots import FrozenSource, frozen_app, index_of

    upto = index_of("bench.progress", option=3, pair=4)
    app = frozen_app(FrozenSource(EVENTS[: upto + 1]))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: plain(app.query_one("#bench-label", Label)) == "pair 4/6", what="pair 4/6")
        assert plain(app.query_one("#stress-label", Label)) == "stress 0/4"
        await wait_for(pilot, lambda: bool(app.query("#ab")) and app.query_one("#ab", ABPlot).shown is not None)
        plot = app.query_one("#ab", ABPlot)
        assert plot.display and plot.shown is not None
        drawn = plot.render()
        text = drawn.plain if hasattr(drawn, "plain") else str(drawn)
        assert "A baseline" in text and "B option" in text and "one axis" in text
        ticks = [float(t) for t in re.findall(r"([\d.]+)\s*┤", text)]
        low, high = min(fig for fig in plot.shown.a if fig), max(fig for fig in plot.shown.b if fig)
        assert ticks and min(ticks) <= low + 1 and max(ticks) >= high - 1  # both arms on the one axis


# ---------------------------------------------------------------- live output, outputs by name


def slow_setup(go: Path) -> Callable[[str], str]:
    """The demo, with a setup step that prints two lines, waits until the test has seen them stream (`go` exists;
    the step's own timeout bounds the wait), then prints six more: on a loaded machine the command is still running
    when the pane is looked at, however slowly the app draws."""

    def edit(text: str) -> str:
        return text.replace(
            '{run: "{{simserve}} init --seed 3", on: decode, timeout: 20}',
            f'{{run: "{{{{simserve}}}} init --seed 3 && echo tick 1 && echo tick 2 && while ! test -e {go}; '
            'do sleep 0.2; done && for i in 3 4 5 6 7 8; do echo tick $i; sleep 0.1; done", '
            "on: decode, timeout: 60}",
        )

    return edit


async def test_the_output_pane_tails_the_running_command_as_it_prints(
    home: Path, variant: Callable[..., Path], tmp_path: Path
) -> None:
    go = tmp_path / "go"
    path = variant(edit=slow_setup(go))
    assert "tick $i" in path.read_text()
    policy = tmp_path / "sleep-allowed.yaml"  # cautious, with `sleep` among the allowed commands
    text = CAUTIOUS.read_text().replace('"echo *", "true"', '"echo *", "sleep *", "true"')
    policy.write_text(text.split("\ntests:")[0] + "\n")
    assert '"sleep *"' in policy.read_text()
    d, app = live_app(lambda: path, policy)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one("#output", OutputPane)
        log = pane.query_one("#output-log", RichLog)

        def streaming() -> bool:
            running = app.commands.running()
            return bool(running) and any("tick 2" in line.text for line in log.lines)

        await pilot.press("o")
        await wait_for(pilot, streaming, timeout=60, what="tick 2 while the command runs")
        head_widget = pane.query_one("#output-head", Static)
        await wait_for(pilot, lambda: plain(head_widget).startswith("▶ $ "), what="the running command's head")
        head = plain(head_widget)
        assert "(setup)" in head and "running" in head
        assert not any("tick 8" in line.text for line in log.lines)  # it is still going
        go.touch()  # let it finish (the pane then follows whatever runs next)
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
    assert not list((d.work / "live").glob("*.log"))  # each spool went with its command


async def test_enter_on_an_event_opens_its_commands_output_by_name(home: Path, cli: Any, tmp_path: Path) -> None:
    d = imported(cli, tmp_path)
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.commands.finished()), what="the replayed commands")
        health = next(
            c for c in app.commands.finished() if "health" in c.command and c.finished and c.finished["exit"] == 0
        )
        events = app.query_one("#events", EventList)
        await pilot.press("home")
        app.select_event(health.index)
        events.focus()
        await wait_for(
            pilot,
            lambda: (
                app.focused is events and events.get_option_at_index(events.highlighted or 0).id == str(health.index)
            ),
            what="the health check's line highlighted",
        )
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ArtifactScreen) and bool(app.screen.query("#artifact-title")),
            what="its output",
        )
        screen = app.screen
        assert isinstance(screen, ArtifactScreen)
        title = plain(screen.query_one("#artifact-title", Static))
        assert title.startswith("$ ") and "health" in title and health.host in title and "exit 0" in title
        artifact = health.finished["artifact"]  # type: ignore[index]
        assert (d.artifacts / artifact).read_text().strip().splitlines()[0] in " ".join(
            plain(s) for s in screen.query(Static)
        )


async def test_the_palette_finds_outputs_by_command_and_never_offers_an_empty_one(
    home: Path, cli: Any, tmp_path: Path
) -> None:
    d = imported(cli, tmp_path)
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.commands.finished()), what="the replayed commands")
        assert all(name != EMPTY for c in app.commands.finished() for _, name in c.outputs())
        provider = SignoffCommands(app.screen)
        hits = [hit async for hit in provider.search("simserve health")]
        texts = [str(h.text) for h in hits]
        assert texts and all(t.startswith("output of $ ") for t in texts) and any("health" in t for t in texts)
        assert not any("sha256-" in t for t in texts)


async def test_a_screenshot_lands_somewhere_writable(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "no-downloads-here"))
    d = SessionDir("20261202-235327-0f62")
    d.root.mkdir(parents=True)
    d.journal.write_bytes(FIXTURE.read_bytes())
    app = SignoffApp(ReplaySource(d), mode="replay")
    saved = home / "screenshots" / "shot.svg"
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.events), what="the replay")
        app.deliver_screenshot("shot.svg")
        await wait_for(pilot, lambda: saved.exists() and "</svg>" in saved.read_text(), what="the file")
    assert saved.read_text().startswith("<svg")


# ---------------------------------------------------------------- replayed gates, the bell


async def test_replay_shows_the_gate_question_facts_recommendation_and_answer(
    home: Path, cli: Any, tmp_path: Path
) -> None:
    d = imported(cli, tmp_path)
    app = SignoffApp(ReplaySource(d), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("home")
        await pilot.press("right_square_bracket")
        while not app.events[app.cursor].get("recommendation"):  # the first gate a person was asked at
            await pilot.press("right_square_bracket")
        e = app.events[app.cursor]
        assert e["kind"] == "gate.opened" and e["gate_kind"] == "triage"
        panel = app.query_one("#gate-panel", Static)
        assert panel.display
        text = plain(panel)
        assert f"Gate {e['gate']} · {e['gate_kind']}" in text and "facts: " in text
        assert e["question"].splitlines()[0].replace("**", "") in text
        assert f"policy recommends ASK (rule {e['recommendation']['rule']})" in text
        assert "waiting for an answer" in text  # as of this event
        await pilot.press("right_square_bracket")
        decided = app.events[app.cursor]
        assert decided["kind"] == "decision" and f"→ {decided['decision']['action'].upper()} by" in plain(panel)
        await pilot.press("end")
        assert not app.query_one("#gate-panel").display  # a finished session waits at no gate


async def test_the_bell_rings_when_a_gate_needs_a_person_and_only_then(
    home: Path, variant: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rung: list[str] = []
    monkeypatch.setattr(SignoffApp, "bell", lambda self: rung.append(self.view.status))
    _, app = live_app(variant, CAUTIOUS)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.view.status == "finished" and not app.source.busy(), what="the end")
    assert rung == []  # every gate was decided by a rule
    _d, app = live_app(variant, policy_asking_at_plan(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gate_open(app), what="the plan gate")
        assert rung == ["paused"]
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_value is not None, what="the app to quit")


def test_gate_screen_keys_are_shown_for_every_kind() -> None:
    from policies.gates import ALLOWED, GATE_KINDS

    for kind in GATE_KINDS:
        keys = answer_keys(gate(kind, {}, list(ALLOWED[kind])))
        assert keys and len({k for k, _, _ in keys}) == len(keys)  # one key per answer, none twice
        assert {a for _, a, _ in keys} <= set(ALLOWED[kind])  # never a key the gate would refuse


# ---------------------------------------------------------------- panes by keyboard


async def test_tab_and_number_keys_move_a_visible_focus_page_keys_scroll_it_and_z_zooms_it(home: Path) -> None:
    from tests.tui.test_tui_snapshots import FrozenSource, frozen_app, index_of

    upto = index_of("bench.progress", option=3, pair=4)
    app = frozen_app(FrozenSource(EVENTS[: upto + 1]))
    async with app.run_test(size=(80, 24)) as pilot:
        plan, evidence, events = app.query_one("#plan"), app.query_one("#evidence"), app.query_one("#events")
        await wait_for(pilot, lambda: evidence.max_scroll_y > 0, what="evidence longer than its pane")

        def ring(widget: Any) -> Any:
            return widget.styles.border_top[1]

        seen = []
        for _ in range(3):
            await pilot.press("tab")
            seen.append(app.focused)
        assert seen == [evidence, events, plan]  # the panes, in screen order, and round again
        await pilot.press("2")
        await wait_for(pilot, lambda: app.focused is evidence, what="the evidence pane focused")
        await wait_for(pilot, lambda: ring(evidence) != ring(plan), what="a focus ring that differs")
        assert evidence.border_title == "2 evidence"
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: evidence.scroll_y > 0, what="the evidence scrolled")
        await pilot.press("z")
        await wait_for(pilot, lambda: evidence.region.height >= 24 - 3, what="the evidence zoomed")
        assert plan.region.height == 0  # nothing else but the status and key bars
        await pilot.press("3")  # zoomed, moving on zooms the next pane instead
        await wait_for(pilot, lambda: app.query_one("#right").region.height >= 24 - 3, what="events zoomed")
        await pilot.press("z")
        await wait_for(pilot, lambda: plan.region.height > 0 and evidence.region.height > 0, what="all panes back")
        assert app.focused is events
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: len(app.screen_stack) > 1, what="the help")
        helped = plain(app.screen.query_one("VerticalScroll > Static", Static))
        assert "Tab  shift+Tab  1 2 3" in helped and "zoom" in helped and "PgUp PgDn" in helped


async def test_a_sweeps_progress_bar_and_status_say_the_level_being_measured(home: Path) -> None:
    from tests.tui.test_tui_snapshots import FrozenSource, frozen_app

    campaign = "benchmark:\n  sweep:\n    var: concurrency\n    values: [30, 60, 90]\n"
    at = "2026-12-04T00:00:01Z"
    events = [
        {"seq": 1, "ts": at, "kind": "session.started", "campaign_text": campaign, "policy_text": ""},
        {"seq": 2, "ts": at, "kind": "phase", "phase": "benchmark", "option": 2, "pairs": 5},
        {"seq": 3, "ts": at, "kind": "phase", "phase": "benchmark.level", "option": 2, "pairs": 5, "level": 60},
        {"seq": 4, "ts": at, "kind": "bench.progress", "option": 2, "pair": 3, "of": 5, "level": 60},
    ]
    app = frozen_app(FrozenSource(events))
    async with app.run_test(size=(120, 40)) as pilot:
        label = app.query_one("#bench-label", Label)
        await wait_for(pilot, lambda: plain(label) == "concurrency=60 · pair 3/5", what=f"the level ({plain(label)})")
        status = plain(app.query_one("#status", Static))
        assert "benchmark #2 at concurrency=60" in status and "benchmark.level" not in status


def test_the_events_list_folds_a_programs_directory_and_keeps_its_arguments() -> None:
    command = "/work/x/.venv/bin/python simserve.py bench --out /a/b"
    e = {"kind": "command.started", "seq": 5, "ts": "2026-12-04T00:00:01Z", "option": 2, "host": "gpu-a",
         "purpose": "bench:A", "timeout_s": 30, "command": command}  # fmt: skip
    line = render.event_line(e)
    assert line is not None and "$ …/python simserve.py bench --out /a/b  [gpu-a, bench:A, ≤30s]" in line.plain
    assert render.short_program("cd /tmp && ls") == "cd /tmp && ls"  # only a program's own path is folded


def test_a_gate_says_what_happened_since_the_person_last_answered() -> None:
    events = [json.loads(line) for line in (V1 / "ask-one-liners" / "journal.jsonl").read_text().splitlines()]

    def upto(gate: str) -> list[dict[str, Any]]:
        return events[: next(i for i, e in enumerate(events) if e["kind"] == "gate.opened" and e["gate"] == gate) + 1]

    assert render.since_last_answer(upto("g2"), "g2") is None  # nobody has answered anything yet
    said = render.since_last_answer(upto("g5"), "g5")
    assert said is not None
    lines = said.plain.splitlines()
    assert lines[0] == "since human:root answered g3 at 19:07:27:"
    assert any("#2 rollback verified" in line for line in lines)
    assert "  gate g4: CONTINUE by session-rule:1" in lines  # a gate a rule decided meanwhile
    assert any(line.startswith("  #3 A/B: output_tok_s +22.6%") for line in lines)
    assert all(len(line) <= 162 for line in lines)  # one line each; the whole of it is in the events pane
