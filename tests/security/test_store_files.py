"""The embedded store's own files (issue 19, Low): private to their owner, and never written through a
link someone planted in a shared $SIGNOFF_HOME at a session id they guessed (time + 16 random bits)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agent import session as session_module
from agent.store import LocalStore, SessionError


def test_a_new_session_is_private(cli, variant, home):
    r = cli("run", str(variant()), "--json")
    assert r.code == 0, r.stderr
    root = Path(r.json()["journal"]).parent
    assert stat.S_IMODE((home / "sessions").stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for name in ("journal.jsonl", "campaign.yaml", "policy.yaml", "meta.json"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name


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
