"""The test PostgreSQL server's stop signals its own postmaster only, never what a stale pid file names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.pg import PostgresServer


def test_a_stale_pid_file_does_not_get_another_process_signalled(tmp_path: Path) -> None:
    stranger = subprocess.Popen(["sleep", "30"])  # a process that now holds the pid a dead postmaster left behind
    try:
        data = tmp_path / "srv" / "data"
        data.mkdir(parents=True)
        (data / "postmaster.pid").write_text(f"{stranger.pid}\n{data}\n")
        server = PostgresServer(root=tmp_path / "srv", port=1)
        server.stop()
        assert stranger.poll() is None  # not signalled
        assert not (tmp_path / "srv").exists()
    finally:
        stranger.kill()  # ours, by its own pid
        stranger.wait()


def test_the_postmaster_is_found_by_its_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "srv" / "data"
    data.mkdir(parents=True)
    # a process whose command line names this data directory, as `postgres -D <data>` does
    script = "import time; print('up', flush=True); time.sleep(30)"
    own = subprocess.Popen([sys.executable, "-c", script, "-D", str(data)], stdout=subprocess.PIPE)
    try:
        # Popen returns once the child has exec'd, but the kernel sets the new program's command line a moment
        # later: until then /proc/<pid>/cmdline reads empty (seen under load). A line printed means it is set.
        assert own.stdout is not None and own.stdout.readline() == b"up\n"
        (data / "postmaster.pid").write_text(f"{own.pid}\n")
        assert PostgresServer(root=tmp_path / "srv", port=1).postmaster() == own.pid
    finally:
        own.kill()
        own.wait()
