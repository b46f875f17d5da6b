"""TUI speed, measured against plain Textual in the same run (not a test).

  1. Launch to first frame: a fresh interpreter starts the signoff app (replay of the demo journal)
     and exits at its first `Ready`; the reference is a one-Static Textual app started the same way.
  2. A 10,000-event session: open its replay and jump to its last gate (`end`, then `[`);
     the reference is reading and JSON-decoding the same journal.
Prints medians and ratios. Targets (issue 7): first frame ≤ 1 s, replay open + jump ≤ 1.5 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from table import record

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests" / "fixtures" / "tui" / "demo-journal.jsonl"
SESSION = "20261202-235327-0f62"

FIRST_FRAME = """
import os, sys, time
sys.path.insert(0, {root!r})
os.environ["SIGNOFF_HOME"] = {home!r}
{body}
class Timed(Base):
    def on_ready(self):
        self.exit()
Timed(*ARGS, **KW).run(headless=True, size=(120, 40))
"""
SIGNOFF_APP = """
from agent.store.local import SessionDir
from tui.app import SignoffApp
from tui.source import ReplaySource
Base, ARGS, KW = SignoffApp, (ReplaySource(SessionDir({session!r})),), {{"mode": "replay"}}
"""
PLAIN_APP = """
from textual.app import App
from textual.widgets import Static
class Plain(App):
    def compose(self):
        yield Static("hello")
Base, ARGS, KW = Plain, (), {}
"""


def session_home(events: list[bytes]) -> str:
    home = tempfile.mkdtemp(prefix="signoff-bench-")
    root = Path(home) / "sessions" / SESSION
    root.mkdir(parents=True)
    (root / "journal.jsonl").write_bytes(b"\n".join(events) + b"\n")
    return home


def launch(body: str, home: str, runs: int) -> float:
    script = FIRST_FRAME.format(root=str(ROOT), home=home, body=body)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", script], check=True, capture_output=True, env={**os.environ, "TERM": "xterm"}
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def big_journal(n: int) -> list[bytes]:
    """The demo journal's events repeated (seq renumbered) until there are n: the same mix of
    commands, benchmark runs and gates a long session has."""
    base = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    body = [e for e in base if e["kind"] not in ("session.started", "report", "session.finished")]
    out = [base[0]]
    round_ = 0
    while len(out) < n - 2:
        round_ += 1
        for e in body:
            e = dict(e)
            if "gate" in e:
                e["gate"] = f"{e['gate']}r{round_}"
            out.append(e)
            if len(out) >= n - 2:
                break
    out += [e for e in base if e["kind"] in ("report", "session.finished")]
    for i, e in enumerate(out):
        e["seq"] = i
    return [json.dumps(e, separators=(",", ":")).encode() for e in out]


async def open_and_jump(home: str) -> tuple[float, int]:
    os.environ["SIGNOFF_HOME"] = home
    from agent.store.local import SessionDir
    from tui.app import SignoffApp
    from tui.source import ReplaySource

    t0 = time.perf_counter()
    app = SignoffApp(ReplaySource(SessionDir(SESSION)), mode="replay")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("end")
        await pilot.press("left_square_bracket")
        elapsed = time.perf_counter() - t0
        assert app.events[app.cursor]["kind"] in ("gate.opened", "decision")
        return elapsed, len(app.events)


def main() -> None:
    runs = int(os.environ.get("BENCH_RUNS", "5"))
    demo_home = session_home(FIXTURE.read_bytes().splitlines())
    ours = launch(SIGNOFF_APP.format(session=SESSION), demo_home, runs)
    plain = launch(PLAIN_APP, demo_home, runs)
    record("tui: launch → first frame", f"{ours * 1000:.0f} ms", f"plain Textual {plain * 1000:.0f} ms",
           ours / plain, "≤ 1 s", ours <= 1.0)  # fmt: skip
    print(f"launch → first frame: signoff {ours * 1000:.0f} ms, plain Textual {plain * 1000:.0f} ms, "
          f"ratio {ours / plain:.2f}× (target ≤ 1 s: {'met' if ours <= 1.0 else 'NOT met'})")  # fmt: skip

    lines = big_journal(10_000)
    home = session_home(lines)
    t0 = time.perf_counter()
    for line in (Path(home) / "sessions" / SESSION / "journal.jsonl").read_bytes().splitlines():
        json.loads(line)
    decode = time.perf_counter() - t0
    samples = [asyncio.run(open_and_jump(home)) for _ in range(max(1, runs // 2))]
    jump = statistics.median(s[0] for s in samples)
    record(f"tui: replay {samples[0][1]:,} events, jump to last gate", f"{jump * 1000:.0f} ms",
           f"json decode {decode * 1000:.0f} ms", jump / decode, "≤ 1.5 s", jump <= 1.5)  # fmt: skip
    print(f"replay of {samples[0][1]:,} events, open + jump to last gate: {jump * 1000:.0f} ms "
          f"(reading + decoding the journal alone: {decode * 1000:.0f} ms, ratio {jump / decode:.1f}×; "
          f"target ≤ 1.5 s: {'met' if jump <= 1.5 else 'NOT met'})")  # fmt: skip

    idle_ours, idle_plain = idle_at_a_gate()
    record("tui: idle at an open gate, CPU", f"{idle_ours:.1f}% of a core",
           f"plain Textual modal {idle_plain:.1f}%", idle_ours / max(idle_plain, 0.1), "≤ 2% of a core",
           idle_ours <= 2.0)  # fmt: skip
    print(f"idle at an open gate: signoff {idle_ours:.1f}% of a core, a plain Textual app with a modal "
          f"{idle_plain:.1f}% (target ≤ 2%: {'met' if idle_ours <= 2.0 else 'NOT met'})")  # fmt: skip


IDLE_S = 5.0


def idle_at_a_gate() -> tuple[float, float]:
    """CPU the screen takes while it only waits at an open gate dialog (the demo journal's safety gate), against
    a plain Textual app showing a modal screen over a static one, each measured for IDLE_S seconds."""
    import resource

    from textual.app import App, ComposeResult
    from textual.screen import ModalScreen
    from textual.widgets import Input, Static

    from policies.gates import ALLOWED, Gate, suggested_answer
    from tests.tui.test_tui_snapshots import FrozenSource, frozen_app
    from tui.screens import GateScreen
    from tui.source import PendingGate

    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    opened = next(i for i, e in enumerate(events) if e["kind"] == "gate.opened" and e["gate_kind"] == "safety")
    e = events[opened]
    gate = {"id": e["gate"], "kind": "safety", "option": e["option"], "question": e["question"], "facts": e["facts"],
            "allowed": list(ALLOWED["safety"]), "options": [e["option"]],
            "suggested": suggested_answer("safety", e["facts"])}  # fmt: skip
    paused = {**e, "kind": "session.paused", "seq": e["seq"] + 1}

    class Modal(ModalScreen[None]):
        def compose(self) -> ComposeResult:
            yield Input()

    class Plain(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("hello")

        def on_mount(self) -> None:
            self.push_screen(Modal())

    async def measure(app: App[Any], ready: Callable[[], bool]) -> float:
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(100):
                if ready():
                    break
                await pilot.pause(0.1)
            await pilot.pause(1.0)
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            await asyncio.sleep(IDLE_S)
            r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        return ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) / (t1 - t0) * 100

    ours = frozen_app(FrozenSource([*events[: opened + 1], paused], PendingGate(gate=Gate.model_validate(gate))))
    plain = Plain()
    return (
        asyncio.run(measure(ours, lambda: isinstance(ours.screen, GateScreen))),
        asyncio.run(measure(plain, lambda: isinstance(plain.screen, Modal))),
    )


if __name__ == "__main__":
    main()
