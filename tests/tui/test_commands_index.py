"""Which command an event belongs to (tui/commands.py): paired across a crash and resume, found for a
benchmark or stress result whose output was empty, and never tripped by a forged journal."""

from __future__ import annotations

from typing import Any

from tui.commands import EMPTY, Commands

ART = "sha256-" + "ab" * 32


def started(seq: int, purpose: str, host: str = "gpu-a") -> dict[str, Any]:
    return {"kind": "command.started", "seq": seq, "host": host, "purpose": purpose, "command": f"run {purpose}"}


def finished(seq: int, purpose: str, host: str = "gpu-a", **more: Any) -> dict[str, Any]:
    return {"kind": "command.finished", "seq": seq, "host": host, "purpose": purpose, "exit": 0, **more}


def index(events: list[dict[str, Any]]) -> Commands:
    c = Commands()
    for i, e in enumerate(events):
        c.add(i, e)
    return c


def test_a_command_cut_short_by_a_crash_is_not_running_and_its_rerun_gets_the_finish() -> None:
    c = index([started(1, "apply"), {"kind": "session.resumed"}, started(3, "apply"), finished(4, "apply")])
    first, again = c.by_index[0], c.by_index[2]
    assert not first.running and first.ended() == "cut short: the run stopped while it ran"
    assert again.finished is not None and again.ended() == "exit 0 in 0.00s"
    assert c.running() == [] and c.for_event(3) is again


def test_a_stress_result_with_empty_stdout_opens_the_command_it_came_from() -> None:
    c = index(
        [
            started(1, "stress:abort-cascade"),
            finished(2, "stress:abort-cascade", artifact=EMPTY, stderr_artifact=ART),
            {"kind": "stress.result", "scenario": "abort-cascade", "host": "gpu-a", "outcome": "ok"},
            started(4, "bench:A"),
            finished(5, "bench:A", artifact=EMPTY, stderr_artifact=EMPTY),
            {"kind": "bench.run", "arm": "A", "pair": 0, "value": 1.0},
        ]
    )
    assert c.for_event(2) is c.by_index[0] and c.by_index[0].outputs() == [("stderr", ART)]
    assert c.for_event(5) is c.by_index[3] and c.by_index[3].outputs() == []  # found; it printed nothing


def test_a_forged_journal_is_shown_not_crashed_on() -> None:
    c = index(
        [
            {**started(1, "x"), "seq": "two"},
            finished(2, "x", duration_s="long", artifact="sha256-../../etc/passwd"),
        ]
    )
    only = c.by_index[0]
    assert only.seq == -1 and only.ended() == "exit 0 in 0.00s" and only.outputs() == []  # no path from a name
