"""The operator's quit stops a run between two commands, not after the whole step (issue 36): a benchmark step
runs for minutes on a real server. The step's finished commands are saved task results, so resume goes on from
there and reaches the decisions a run that was never stopped reaches. Real sessions: the demo campaign on its
simulated hosts, the real graph and checkpointer, in this process (as the TUI runs it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.journal.verify import verify
from agent.run.create import create
from agent.run.runner import Runner
from agent.stopping import clear_stop, request_stop
from tests.conftest import ROOT

AUTONOMOUS = ROOT / "policies" / "presets" / "autonomous.yaml"


@pytest.fixture(autouse=True)
def _forget_the_stop() -> Iterator[None]:
    yield
    clear_stop()  # the stop is process-wide: the next test's run must not inherit it


def events(journal: Path) -> list[dict[str, Any]]:
    """The journal's whole lines. The watcher reads it while the run writes: the last line may be half written
    (ci76: a torn line killed the watcher, so no stop was ever asked for and the run went on to its end)."""
    raw = journal.read_bytes() if journal.exists() else b""  # bytes: a cut may fall inside a character too
    return [json.loads(line) for line in raw.split(b"\n")[:-1] if line]


def quit_when(journal: Path, seen: Callable[[list[dict[str, Any]]], bool]) -> threading.Thread:
    """The operator's `y` at the quit question, given once the journal shows `seen` (from another thread, as the
    TUI asks while the run's worker goes on)."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if seen(events(journal)):
                request_stop("operator-quit")
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def bench_runs(evs: list[dict[str, Any]], option: int) -> int:
    return sum(1 for e in evs if e["kind"] == "bench.run" and e.get("option") == option and e.get("purpose") == "ab")


@pytest.mark.parametrize("where", ["benchmark", "investigation"])
def test_a_quit_stops_before_the_next_command_and_resume_reaches_the_same_outcome(
    home: Path, variant: Callable[..., Path], where: str
) -> None:
    # Benchmark runs of a quarter second: a step of 12 of them is 3 s, so a stop honoured only after the whole
    # step would show all 12 (pairs 6 × 2 arms) before the interruption.
    d = create(variant(edit=lambda text: text.replace("--wall 0.02", "--wall 0.25")), AUTONOMOUS)
    if where == "benchmark":
        watch = quit_when(d.journal, lambda evs: bench_runs(evs, 2) >= 3)
    else:
        watch = quit_when(d.journal, lambda evs: any(e["kind"] == "subagent.started" for e in evs))
    with d.locked(), pytest.raises(KeyboardInterrupt):
        Runner(d, headless=True).start()
    watch.join(timeout=5)
    evs = events(d.journal)
    assert evs[-1]["kind"] == "session.interrupted" and evs[-1]["reason"] == "operator-quit"
    if where == "benchmark":
        assert 3 <= bench_runs(evs, 2) < 12, bench_runs(evs, 2)  # mid-step: not the whole benchmark
    # (Among the parallel investigations, how many had finished by then depends on the machine's load: what is
    # checked there is that a stop inside parallel branches leaves nothing half-run and resumes to the same end.)
    # No command left half-run: every one that started has its end in the journal.
    started = [e["seq"] for e in evs if e["kind"] == "command.started"]
    assert len(started) == sum(1 for e in evs if e["kind"] == "command.finished")
    clear_stop()
    with d.locked():
        out = Runner(d, headless=True).resume()
    assert out.status == "finished"
    # The decisions a run that was never stopped reaches (the demo's story).
    assert {o["id"]: o["outcome"] for o in out.options} == {1: "no-go", 2: "skipped", 3: "kept"}
    assert verify(d.journal).ok


def test_the_watcher_reads_only_the_journals_whole_lines(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_text('{"kind": "a"}\n{"kind": "b", "cmd": "unfinish')
    assert events(journal) == [{"kind": "a"}]
    journal.write_bytes('{"kind": "a", "t": "±"}\n{"kind": "b", "t": "→'.encode()[:-1])  # cut inside the arrow
    assert events(journal) == [{"kind": "a", "t": "±"}]
    assert events(tmp_path / "none.jsonl") == []
