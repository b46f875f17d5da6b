"""The embedded store's own files (issue 19, Low): private to their owner, and never written through a
link someone planted in a shared $SIGNOFF_HOME at a session id they guessed (time + 16 random bits)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from agent.errors import SessionError
from agent.run import create as session_module
from agent.store.local import LocalStore
from tests.conftest import SIGNOFF


def test_a_new_session_is_private(cli, variant, home):
    r = cli("run", str(variant()), "--json")
    assert r.code == 0, r.stderr
    root = Path(r.json()["journal"]).parent
    # others may pass through (to a local host's directory) but list, read and write nothing
    assert stat.S_IMODE((home / "sessions").stat().st_mode) == 0o711
    assert stat.S_IMODE(root.stat().st_mode) == 0o711
    assert stat.S_IMODE((root / "artifacts").stat().st_mode) == 0o700
    for name in ("journal.jsonl", "campaign.yaml", "policy.yaml", "meta.json", "checkpoints.sqlite"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None, reason="needs root and runuser")
def test_another_user_reaches_a_local_hosts_directory_but_reads_nothing_else(variant):
    """PostgreSQL runs as `postgres` when signoff runs as root: it must reach the host's working directory
    (issue 19's 0700 store broke examples/postgres as root), while the session's files stay unreadable."""
    home = Path(tempfile.mkdtemp(prefix="signoff-perm-"))  # pytest's tmp_path is private: not passable
    try:
        home.chmod(0o711)
        env = {**os.environ, "SIGNOFF_HOME": str(home)}
        p = subprocess.run([*SIGNOFF, "run", str(variant()), "--json"], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        root = Path(json.loads(p.stdout)["journal"]).parent
        hostdir = next((root / "hosts").iterdir())

        def as_nobody(*argv: str) -> int:
            return subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True, timeout=30).returncode

        assert as_nobody("test", "-x", str(hostdir)) == 0
        assert as_nobody("ls", str(home / "sessions")) != 0
        assert as_nobody("ls", str(root)) != 0
        assert as_nobody("ls", str(hostdir)) != 0
        assert as_nobody("cat", str(root / "journal.jsonl")) != 0
        assert as_nobody("ls", str(root / "artifacts")) != 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_planted_link_at_a_session_id_is_passed_over(home, tmp_path, monkeypatch):
    trap = tmp_path / "attacker-owned"
    trap.mkdir()
    (home / "sessions").mkdir(parents=True)
    (home / "sessions" / "20261204-000000-aaaa").symlink_to(trap)
    with pytest.raises(FileExistsError):
        LocalStore().new("20261204-000000-aaaa")
    ids = iter(["20261204-000000-aaaa", "20261204-000000-bbbb"])
    monkeypatch.setattr(session_module, "new_session_id", lambda: next(ids))
    d = session_module._new_session(LocalStore())
    assert d.id == "20261204-000000-bbbb" and d.root.is_dir() and not d.root.is_symlink()
    d.write("campaign.yaml", "x")
    assert list(trap.iterdir()) == []


def test_a_sessions_root_that_is_a_link_is_refused(home, tmp_path):
    trap = tmp_path / "attacker-owned"
    trap.mkdir()
    home.mkdir(parents=True)
    (home / "sessions").symlink_to(trap)
    with pytest.raises(SessionError, match="symbolic link"):
        LocalStore().new("20261204-000000-cccc")
    assert list(trap.iterdir()) == []


def test_a_link_planted_at_a_sessions_checkpoint_db_is_never_written_through(home, tmp_path):
    """The checkpoint DB is made 0600 with O_NOFOLLOW: a link in its place is refused as unreadable
    (one line from the runner), and what it points to is left alone."""
    from agent.errors import CheckpointUnreadable

    target = tmp_path / "elsewhere.sqlite"
    target.write_bytes(b"")
    session = LocalStore().new("20261204-000000-dddd")
    session.checkpoints.symlink_to(target)
    with pytest.raises(CheckpointUnreadable, match=r"checkpoints\.sqlite"), session.saver():
        pass
    assert target.read_bytes() == b""
