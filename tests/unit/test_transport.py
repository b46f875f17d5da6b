import time
from pathlib import Path

import pytest

from tools.artifacts import ArtifactStore
from tools.transport import Host, LocalTransport


def transport(tmp_path: Path) -> LocalTransport:
    return LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"))


def test_runs_in_the_host_workdir_and_keeps_full_output_as_an_artifact(tmp_path):
    t = transport(tmp_path)
    host = Host(name="gpu-a")
    lines = []
    r = t.run(host, "pwd; echo err >&2; exit 3", timeout=10, on_line=lambda s, line: lines.append((s, line)))
    assert r.exit_code == 3 and not r.timed_out
    assert r.stdout_tail.strip().endswith("hosts/gpu-a")
    assert ("stderr", "err") in lines
    assert (tmp_path / "artifacts" / r.stderr_artifact).read_text() == "err\n"
    assert (tmp_path / "artifacts" / r.artifact).read_text() == r.stdout_tail


def test_timeout_kills_the_whole_process_group(tmp_path):
    t = transport(tmp_path)
    marker = tmp_path / "child-survived"
    started = time.monotonic()
    # The child outlives its parent shell unless the group is killed.
    r = t.run(Host(name="h"), f"(sleep 3; touch {marker}) & sleep 60", timeout=0.5)
    assert r.timed_out and r.killed and r.exit_code is None
    assert time.monotonic() - started < 5
    time.sleep(3.5)
    assert not marker.exists()


def test_large_output_stays_bounded_in_memory_and_complete_on_disk(tmp_path):
    t = transport(tmp_path)
    r = t.run(Host(name="h"), "seq 1 400000; seq 1 300000 >&2", timeout=30)
    assert r.exit_code == 0 and r.stdout_truncated
    assert len(r.stdout_tail) <= (1 << 20) + 16
    full = (tmp_path / "artifacts" / r.artifact).read_text().splitlines()
    assert len(full) == 400000 and full[-1] == "400000"


def test_redaction_applies_to_command_output_and_artifacts(tmp_path):
    from tools.secrets import Redactor

    t = LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"), redact=Redactor(["s3cr3t-canary"]))
    seen = []
    r = t.run(
        Host(name="h"),
        "echo token=s3cr3t-canary; echo s3cr3t-canary >&2",
        timeout=10,
        on_line=lambda s, line: seen.append(line),
    )
    assert "s3cr3t-canary" not in r.command + r.stdout_tail + r.stderr_tail + "".join(seen)
    for f in (tmp_path / "artifacts").iterdir():
        assert b"s3cr3t-canary" not in f.read_bytes()
    assert "token=***" in r.stdout_tail


def test_output_without_newlines_streams_in_bounded_pieces(tmp_path):
    from tools.output import StreamSink

    store = ArtifactStore(tmp_path / "a")
    pieces: list[str] = []
    sink = StreamSink("stdout", store, lambda s, line: pieces.append(line), str)
    text = ("é" * 50_000 + "x") * 20  # no newline at all, multi-byte characters across chunk borders
    data = text.encode()
    for i in range(0, len(data), 4093):
        sink.feed(data[i : i + 4093])
    _, _, name = sink.close()
    assert (tmp_path / "a" / name).read_bytes() == data
    assert "".join(pieces) == text and max(len(p.encode()) for p in pieces) <= (1 << 16) + 4093


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_waiting_for_a_process_notices_its_end_reaps_it_and_times_out_on_one_that_runs_on(pidfd, monkeypatch):
    import os
    import subprocess
    import sys

    from tools.transport import wait_for_exit

    if not pidfd:  # a system without pidfds (not Linux, or a kernel before 5.3): Popen's own wait
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    quick = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_for_exit(quick, 1e9)  # a deadline past what poll() takes in one call
    assert quick.returncode == 3  # reaped, with its status
    assert wait_for_exit(quick, 0.01)  # asked again: already ended, and its pid is not looked up again

    slow = subprocess.Popen(["sleep", "30"])
    try:
        started = time.monotonic()
        assert not wait_for_exit(slow, 0.2)
        assert time.monotonic() - started >= 0.2 and slow.poll() is None  # it waited its time and left it running
    finally:
        slow.kill()
        assert wait_for_exit(slow, 10) and slow.returncode == -9
