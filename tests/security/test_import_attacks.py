"""C1 (the import half), H4, M6 and the store's own files (issue 19): an export is someone else's files.

Each attack is made the way an attacker would hand it over: a real export of a finished session, then
edited. Import must refuse it in one line (exit 2), write nothing outside the store, leave no half
imported session behind, and never follow a link or run code."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.security.test_checkpoint_code_execution import payload

pytestmark = pytest.mark.xdist_group("finished-demo")  # shares a fixture made once per worker


@pytest.fixture
def exported(cli, finished_session, tmp_path) -> tuple[str, Path]:
    session = finished_session["session"]
    out = tmp_path / "export"
    r = cli("export", session, str(out))
    assert r.code == 0, r.stderr
    shutil.rmtree(Path(finished_session["journal"]).parent)  # import into a store that does not have it
    return session, out


def one_line_refusal(r, *needles: str) -> bool:
    lines = r.stderr.strip().splitlines()
    return r.code == 2 and len(lines) == 1 and all(n in lines[0] for n in needles) and "Traceback" not in r.stderr


def edit_meta(export: Path, **changes: object) -> None:
    meta = json.loads((export / "meta.json").read_text())
    (export / "meta.json").write_text(json.dumps({**meta, **changes}))


@pytest.mark.parametrize("bad_id", ["../../escaped", "/ABS", "a/b", "..", "-rf", "x" * 65])
def test_meta_json_cannot_choose_where_the_session_is_written(cli, exported, home, tmp_path, bad_id):
    _, export = exported
    bad = bad_id.replace("/ABS", str(tmp_path / "absolute-target"))
    edit_meta(export, id=bad)
    r = cli("import", str(export))
    assert one_line_refusal(r, "is not a session id"), r.stderr
    assert not (tmp_path / "absolute-target").exists()
    assert not (home / "escaped").exists() and not (home.parent / "escaped").exists()
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_an_id_that_is_not_the_journals_own_is_refused(cli, exported, home):
    session, export = exported
    edit_meta(export, id="20990101-000000-abcd")
    r = cli("import", str(export))
    assert one_line_refusal(r, "but its journal belongs to", session), r.stderr
    assert not (home / "sessions" / "20990101-000000-abcd").exists()


def test_a_symlinked_artifact_is_refused_not_followed(cli, exported, home, tmp_path):
    session, export = exported
    secret = tmp_path / "private-key"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- the victim's")
    secret.chmod(0o600)
    artifact = next((export / "artifacts").glob("sha256-*"))
    artifact.unlink()
    artifact.symlink_to(secret)
    r = cli("import", str(export))
    assert one_line_refusal(r, "is a symbolic link", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()
    leaked = [p for p in home.rglob("*") if p.is_file() and "the victim's" in p.read_text(errors="replace")]
    assert leaked == []


def test_a_symlink_under_hosts_is_refused(cli, exported, home):
    session, export = exported
    (export / "hosts").mkdir(exist_ok=True)
    (export / "hosts" / "etc").symlink_to("/etc")
    r = cli("import", str(export))
    assert one_line_refusal(r, "is a symbolic link"), r.stderr
    assert not (home / "sessions" / session).exists()


def test_a_fifo_in_an_export_is_refused_instead_of_hanging(cli, exported, home):
    _, export = exported
    (export / "answers.json").unlink()
    os.mkfifo(export / "answers.json")
    r = cli("import", str(export), timeout=60)
    assert one_line_refusal(r, "is not a regular file"), r.stderr


def test_an_unreadable_checkpoint_db_is_refused_and_leaves_nothing(cli, exported, home):
    session, export = exported
    db = export / "checkpoints.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE checkpoints SET checkpoint = X'c1c1c1c1'")  # msgpack that does not decode
    conn.commit()
    conn.close()
    r = cli("import", str(export))
    assert one_line_refusal(r, "could not be imported safely", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()  # no half-imported session


def test_a_crafted_checkpoint_runs_nothing_on_import(cli, exported, home, tmp_path):
    session, export = exported
    marker = tmp_path / "pwned"
    conn = sqlite3.connect(export / "checkpoints.sqlite")
    conn.execute("UPDATE checkpoints SET type = 'msgpack', checkpoint = ?", (payload(marker),))
    conn.commit()
    conn.close()
    r = cli("import", str(export))
    assert not marker.exists()
    assert one_line_refusal(r, "name code to run on load (os.system)", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()


def test_bad_meta_json_is_one_line_with_its_place(cli, exported):
    _, export = exported
    (export / "meta.json").write_text('{"id": "x",\n  oops}')
    r = cli("import", str(export))
    assert one_line_refusal(r, "meta.json:2: not JSON"), r.stderr


def test_a_session_id_on_the_command_line_is_never_a_path(cli, home):
    for bad in ("../../etc", "/etc", "a/../../b"):
        r = cli("resume", bad)
        assert one_line_refusal(r, "is not a session id"), (bad, r.stderr)


def test_an_imported_session_is_private_to_its_owner(cli, exported, home):
    session, export = exported
    assert cli("import", str(export)).code == 0
    root = home / "sessions" / session
    for d in (home / "sessions", root):
        assert stat.S_IMODE(d.stat().st_mode) == 0o711, d  # passable, never listable
    for name in ("journal.jsonl", "campaign.yaml", "policy.yaml", "meta.json"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
    assert cli("replay", session, "--verify").code == 0


@pytest.mark.parametrize("side_files", [True, False], ids=["with-wal-and-shm", "clean-export"])
def test_importing_a_bundle_reads_it_and_changes_nothing_in_it(cli, home, tmp_path, side_files):
    # Was: the bundle's checkpoints were opened read-write, and closing them folded and deleted its -wal and
    # -shm files (found when a fixture bundle changed under `signoff import`); opened read-only, SQLite still
    # made a -wal and a -shm beside a clean export's database.
    import hashlib

    bundle = tmp_path / "bundle"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "journal-v1" / "ask-one-liners", bundle)
    if not side_files:
        for suffix in ("-wal", "-shm"):
            (bundle / f"checkpoints.sqlite{suffix}").unlink()

    def contents() -> dict[str, str]:
        return {
            str(p.relative_to(bundle)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(bundle.rglob("*"))
            if p.is_file()
        }

    before = contents()
    assert ("checkpoints.sqlite-wal" in before) is side_files
    r = cli("import", str(bundle), "--json")
    assert r.code == 0, r.stderr
    assert contents() == before
