"""A running command's output, spooled for whoever watches (agent/exec/live.py): through the real local
transport, secrets masked, bounded, and gone when the command ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agent.exec import live
from agent.exec.live import Spool, SpoolTail, spool_path
from tools.artifacts import ArtifactStore
from tools.secrets import Redactor
from tools.transport import Host, LocalTransport


def test_lines_arrive_while_the_command_runs_masked_and_the_spool_goes_with_it(tmp_path: Path) -> None:
    transport = LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"), redact=Redactor(["hunter2"]))
    spool = Spool(tmp_path / "live", 7)
    seen_while_running: list[tuple[str, str]] = []
    done = threading.Event()

    tail = SpoolTail(spool_path(tmp_path / "live", 7))
    ended_at: list[int] = []

    def watch() -> None:
        while not done.is_set():
            seen_while_running.extend(tail.read())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        command = "for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo 'the password is hunter2' >&2"
        result = transport.run(Host(name="box"), command, timeout=10, on_line=spool.on_line)
        ended_at.append(len(seen_while_running))
    finally:
        done.set()
        watcher.join()
    seen_while_running.extend(tail.read())  # what came in its last moment
    spool.close()
    assert result.ok
    assert ("stdout", "tick 1") in seen_while_running[: ended_at[0]]  # seen before the command ended
    assert ("stdout", "tick 3") in seen_while_running
    stderr = [text for stream, text in seen_while_running if stream == "stderr"]
    assert stderr and "hunter2" not in stderr[0] and "the password is" in stderr[0]
    assert not spool.path.exists()  # ended: the artifact has it all


def test_a_spool_is_bounded_and_a_half_written_line_is_not_read_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "SPOOL_BYTES", 200)
    spool = Spool(tmp_path / "live", 1)
    for i in range(100):
        spool.on_line("stdout", f"line {i:03d} " + "x" * 20)
    lines = SpoolTail(spool.path).read()
    assert lines[-1] == ("stderr", live.CUT) and len(lines) < 10
    assert spool.path.stat().st_size <= 200 + len(live.CUT.encode()) + 3
    with spool.path.open("ab") as fh:
        fh.write(b"1\thalf a li")
    assert SpoolTail(spool.path).read()[-1] == ("stderr", live.CUT)  # the half-written line waits
    spool.close()
    assert SpoolTail(spool.path).read() == []  # gone before it was looked at: nothing to show, no error


def test_the_last_lines_are_read_even_after_the_spool_is_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "live", 3)
    tail = SpoolTail(spool.path)
    spool.on_line("stdout", "starting")
    assert tail.read() == [("stdout", "starting")]
    spool.on_line("stderr", "FATAL: out of memory")
    spool.on_line("stdout", "half")  # then the command ends and its spool goes
    spool.close()
    assert not spool.path.exists()
    assert tail.read() == [("stderr", "FATAL: out of memory"), ("stdout", "half")]
    tail.close()


def test_a_spool_is_never_written_through_a_link(tmp_path: Path) -> None:
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    (live_dir / "9.log").symlink_to(target)
    with pytest.raises(OSError):
        Spool(live_dir, 9)
    assert target.read_text() == "keep me\n"


def test_a_resumed_run_sweeps_the_spools_a_killed_one_left(tmp_path: Path) -> None:
    left = Spool(tmp_path / "live", 4)
    left.on_line("stdout", "never finished")
    assert live.sweep(tmp_path / "live") == 1 and not left.path.exists()
    assert live.sweep(tmp_path / "nowhere") == 0
