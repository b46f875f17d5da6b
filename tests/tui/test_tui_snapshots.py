"""Snapshots of the main screen, a gate and a replay at 120×40 (textual is pinned exactly; refresh
deliberately with `pytest --snapshot-update` when bumping it). Built from a recorded demo journal,
so every pixel comes from fixed data."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from agent.store.local import SessionDir
from policies.gates import ALLOWED, Gate, suggested_answer
from tui.app import SignoffApp
from tui.source import PendingGate, Preview, ReplaySource

FIXTURE = Path(__file__).parents[1] / "fixtures" / "tui" / "demo-journal.jsonl"
EVENTS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
SIZE = (120, 40)


class FrozenSource:
    """A session as of one moment: its journal up to an event, and the gate it waits at (if any)."""

    read_only = False
    session = "20261202-235327-0f62"

    def __init__(self, events: list[dict[str, Any]], pending: PendingGate | None = None) -> None:
        self.events, self._pending, self._given = events, pending, False
        self.error = None

    def poll(self) -> list[dict[str, Any]]:
        if self._given:
            return []
        self._given = True
        return self.events

    def busy(self) -> bool:
        return False

    def pending(self) -> PendingGate | None:
        return self._pending

    def preview(self, text: str, *, gate: str | None = None) -> Preview:
        return Preview(error="frozen")

    def answer(self, text: str, *, gate: str | None = None) -> None:
        raise AssertionError("a snapshot answers nothing")

    def expire(self) -> None:
        return None

    def close(self) -> None:
        return None


def frozen_app(source: Any, mode: str = "attach") -> SignoffApp:
    app = SignoffApp(source, mode=mode)
    at = datetime.fromisoformat(source.events[-1]["ts"].replace("Z", "+00:00")) if source.events else None
    app.now = lambda: at  # type: ignore[method-assign]  # a fixed clock for the elapsed time
    return app


def index_of(kind: str, **match: Any) -> int:
    return next(i for i, e in enumerate(EVENTS) if e["kind"] == kind and all(e.get(k) == v for k, v in match.items()))


@pytest.fixture(autouse=True)
def _no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def test_main_screen_mid_benchmark(snap_compare: Any) -> None:
    upto = index_of("bench.progress", option=3, pair=4)
    assert snap_compare(frozen_app(FrozenSource(EVENTS[: upto + 1])), terminal_size=SIZE)


def test_safety_gate(snap_compare: Any) -> None:
    opened = index_of("gate.opened", gate="g3")
    e = EVENTS[opened]
    paused = {**e, "kind": "session.paused", "seq": e["seq"] + 1}
    gate = {
        "id": e["gate"],
        "kind": e["gate_kind"],
        "option": e["option"],
        "question": e["question"],
        "facts": e["facts"],
        "allowed": list(ALLOWED[e["gate_kind"]]),
        "options": [e["option"]],
        "recommendation": {"action": "ask", "rule": "ask-when-unclear", "by": "policy:ask-when-unclear"},
        "suggested": suggested_answer(e["gate_kind"], e["facts"]),  # as Runner.outcome gives it
    }
    source = FrozenSource([*EVENTS[: opened + 1], paused], PendingGate(gate=Gate.model_validate(gate)))
    assert snap_compare(frozen_app(source), terminal_size=SIZE)


def test_replay_at_a_decision(snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNOFF_HOME", str(tmp_path))
    d = SessionDir("20261202-235327-0f62")
    d.root.mkdir(parents=True)
    d.journal.write_bytes(FIXTURE.read_bytes())

    async def to_the_safety_decision(pilot: Any) -> None:
        await pilot.press("home")
        for _ in range(5):
            await pilot.press("right_square_bracket")

    app = SignoffApp(ReplaySource(d), mode="replay")
    assert snap_compare(app, terminal_size=SIZE, run_before=to_the_safety_decision)
