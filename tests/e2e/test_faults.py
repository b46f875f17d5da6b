"""Faults outside signoff: the disk filling up under the artifacts while a campaign runs."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.journal.verify import verify
from tests.conftest import ROOT, SIGNOFF


@pytest.fixture
def full_disk_at(tmp_path: Path):
    """Mount a tiny tmpfs over a directory and fill it (needs root; CI runs as root)."""
    mounted: list[Path] = []

    def mount(where: Path) -> None:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(where)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
        mounted.append(where)
        with (where / "filler").open("wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"x" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small filesystem needs root")
def test_disk_full_while_writing_artifacts_stops_with_one_line_and_resumes(cli, variant, home, full_disk_at):
    env = {**os.environ, "SIGNOFF_HOME": str(home), "SIGNOFF_CRASH_AT": "journal:plan"}
    r = subprocess.run([*SIGNOFF, "run", str(variant()), "--json"], cwd=ROOT, env=env, capture_output=True)
    assert r.returncode == -9  # stopped right after planning: the investigation has not run yet
    (session,) = [p.name for p in (home / "sessions").iterdir()]
    artifacts = home / "sessions" / session / "artifacts"
    full_disk_at(artifacts)

    r = cli("resume", session, "--json")
    assert r.code == 1
    line = r.stderr.strip().splitlines()[-1]
    assert "disk full" in line and f"signoff resume {session}" in line, r.stderr
    journal = home / "sessions" / session / "journal.jsonl"
    events = [json.loads(x) for x in journal.read_text().splitlines()]
    failed = [e for e in events if e["kind"] == "session.failed"]
    assert failed and failed[-1]["reason"] == "storage-full"
    assert not [e for e in events if e["kind"] in ("command.started",) and e.get("effect")]  # nothing mutated
    assert not list(artifacts.glob(".partial-*"))  # no half-written evidence left behind

    subprocess.run(["umount", str(artifacts)], check=True)  # space is back
    r = cli("resume", session, "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert {o["id"]: o["outcome"] for o in out["options"]} == {1: "no-go", 2: "skipped", 3: "kept"}
    assert verify(journal).ok
