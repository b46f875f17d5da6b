"""A running command's output, spooled for whoever watches (agent/run/live.py): through the real local
transport, secrets masked, bounded, and gone when the command ends."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agent.run import live
from agent.run.live import Spool, SpoolTail, read_spool, spool_path
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


def test_a_spool_is_bounded_and_a_half_written_line_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "SPOOL_BYTES", 200)
    spool = Spool(tmp_path / "live", 1)
    for i in range(100):
        spool.on_line("stdout", f"line {i:03d} " + "x" * 20)
    lines = read_spool(spool.path)
    assert lines[-1] == ("stderr", live.CUT) and len(lines) < 10
    assert spool.path.stat().st_size <= 200 + len(live.CUT.encode()) + 3
    with spool.path.open("ab") as fh:
        fh.write(b"1\thalf a li")
    assert read_spool(spool.path)[-1] == ("stderr", live.CUT)
    spool.close()
    assert read_spool(spool.path) == []  # gone: nothing to show, no error
