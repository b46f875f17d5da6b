"""Issue 32: what a resume runs with beyond the session's documents — meta.json's pointers (its policy file,
campaign directory, ssh_config, trust-on-first-use, brain) and the ssh_config itself — was not covered by
the journal. An imported session's meta.json pointed `decide` at an ssh_config whose `Match exec` then ran
as the importer, and a meta.json without `policy` was a traceback.

Each attack is a real export (or session) edited as its author or someone with write access would. Import
refuses in one line (exit 2) with nothing imported; a session already in the store refuses to go on in one
line and runs nothing; an ssh_config that runs commands is imported only when the importer approves it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import journal_events
from tests.integration.test_ssh_campaign import mini, ssh_config


def one_line(r, code: int, *needles: str) -> bool:
    lines = r.stderr.strip().splitlines()
    return r.code == code and len(lines) == 1 and all(n in lines[0] for n in needles) and "Traceback" not in r.stderr


def edit_meta(meta: Path, **changes: object) -> None:
    data = json.loads(meta.read_text())
    for name, value in changes.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    meta.write_text(json.dumps(data))


@pytest.fixture
def exported(cli, finished_session, tmp_path) -> tuple[str, Path]:
    session = finished_session["session"]
    out = tmp_path / "export"
    assert cli("export", session, str(out)).code == 0
    shutil.rmtree(Path(finished_session["journal"]).parent)  # import into a store that does not have it
    return session, out


@pytest.mark.xdist_group("finished-demo")
def test_a_meta_json_without_its_policy_is_one_line_not_a_traceback(cli, exported, home):
    session, export = exported
    edit_meta(export / "meta.json", policy=None)
    r = cli("import", str(export))
    assert one_line(r, 2, "meta.json lacks 'policy'", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()
    # The same meta.json in a session the store already has: every command that goes on says so in one line.
    edit_meta(export / "meta.json", policy="/x/policy.yaml")
    assert cli("import", str(export)).code == 2  # (not the path its journal recorded)
    shutil.copytree(export, home / "sessions" / session)
    edit_meta(home / "sessions" / session / "meta.json", policy=None)
    for args in (("resume", session), ("decide", session, "continue"), ("attach", session)):
        r = cli(*args)
        assert one_line(r, 2, "its meta.json lacks 'policy'"), (args, r.code, r.stderr)


@pytest.mark.xdist_group("finished-demo")
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("policy", "/elsewhere/allow-everything.yaml"),
        ("campaign_dir", "/elsewhere/campaign"),
        ("ssh_config", "/elsewhere/ssh_config"),
        ("accept_new_host_keys", True),
        ("brain", {"kind": "claude", "model": "claude-sonnet-4-5"}),
    ],
)
def test_meta_json_cannot_point_a_run_elsewhere_than_its_journal_says(cli, exported, home, field, value):
    session, export = exported
    original = (export / "meta.json").read_text()
    edit_meta(export / "meta.json", **{field: value})
    r = cli("import", str(export))
    assert one_line(r, 2, f"its meta.json names {field}", "but its journal recorded", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()
    # Edited in the store after an import: resume refuses, naming the field, and runs nothing.
    (export / "meta.json").write_text(original)
    assert cli("import", str(export)).code == 0
    edit_meta(home / "sessions" / session / "meta.json", **{field: value})
    r = cli("resume", session)
    assert one_line(r, 2, f"its meta.json names {field}", "nothing ran"), r.stderr


@pytest.mark.xdist_group("finished-demo")
def test_with_a_signing_key_an_import_must_be_signed_by_a_trusted_key(cli, exported, home, tmp_path, monkeypatch):
    from tests.conftest import ed25519_keypair

    _, export = exported
    private, _ = ed25519_keypair(tmp_path, "importer")
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(private))
    r = cli("import", str(export))
    assert one_line(r, 2, "head file is not signed, but a signing key is configured", "nothing imported"), r.stderr
    monkeypatch.delenv("SIGNOFF_SIGNING_KEY")
    assert cli("import", str(export)).code == 0  # an auditor without a key imports it as it is


def runs_match_exec(config: Path, marker: Path) -> bool:
    """Whether OpenSSH itself runs the config's `Match exec` when it resolves a host (as signoff does)."""
    subprocess.run(["ssh", "-F", str(config), "-G", "127.0.0.1"], capture_output=True, timeout=10, check=False)
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


def evil_config(path: Path, marker: Path, *, extra: str = "") -> Path:
    path.write_text(f'Match exec "touch {marker}; false"\n  User nobody\n{extra}')
    return path


@pytest.fixture
def ssh_paused(cli, sshd, tmp_path) -> tuple[str, Path]:
    """A session over SSH, paused at a gate, exported, and gone from the store."""
    r = cli("run", str(mini(tmp_path, sshd)), "--policy", "ask-everything", "--json")
    assert r.code == 3, r.stderr
    session = r.json()["session"]
    out = tmp_path / "export"
    assert cli("export", session, str(out)).code == 0
    shutil.rmtree(Path(r.json()["journal"]).parent)
    return session, out


def test_an_imported_meta_json_cannot_name_an_ssh_config_that_runs_commands(cli, ssh_paused, home, tmp_path):
    session, export = ssh_paused
    marker = tmp_path / "ran-as-the-importer"
    config = evil_config(export / "innocent.conf", marker)
    assert runs_match_exec(config, marker)  # the attack is real: resolving any host runs it
    edit_meta(export / "meta.json", ssh_config=str(config))
    r = cli("import", str(export))
    assert one_line(r, 2, "its meta.json names ssh_config", "nothing imported"), r.stderr
    assert not (home / "sessions" / session).exists()
    assert not marker.exists()


def test_an_ssh_config_that_runs_commands_is_imported_only_when_the_importer_approves_it(cli, sshd, tmp_path):
    marker = tmp_path / "match-exec-ran"
    config = evil_config(tmp_path / "team_ssh_config", marker, extra=ssh_config(tmp_path, sshd).read_text())
    r = cli("run", str(mini(tmp_path, sshd)), "--policy", "ask-everything", "--ssh-config", str(config), "--json")
    assert r.code == 3, r.stderr
    assert marker.exists()  # its author's run resolved the host with it
    marker.unlink()
    session, root = r.json()["session"], Path(r.json()["journal"]).parent
    started = journal_events(root / "journal.jsonl")[0]
    assert started["ssh_config"] == str(config) and started["ssh_config_sha256"]  # journaled, and kept
    assert (root / "ssh_config").read_text() == config.read_text()
    export = tmp_path / "export"
    assert cli("export", session, str(export)).code == 0
    shutil.rmtree(root)

    r = cli("import", str(export))
    assert one_line(r, 2, "ssh_config:1: Match exec runs commands on this machine", "--accept-ssh-config"), r.stderr
    assert not root.exists() and not marker.exists()
    r = cli("import", str(export), "--accept-ssh-config")
    assert r.code == 0, r.stderr

    # The session resolves hosts with its own copy, which the journal vouches for: an edit refuses to go on.
    copy = root / "ssh_config"
    copy.write_text(copy.read_text() + "ProxyCommand sh -c 'touch /tmp/x'\n")
    r = cli("decide", session, "continue", "--by", "alice")
    assert one_line(r, 2, "its ssh_config was changed after it was journaled", "nothing ran"), r.stderr
    assert not marker.exists()
    copy.write_text(config.read_text())
    config.write_text("# the original file, emptied since: the session keeps its copy\n")
    r = cli("decide", session, "continue", "--by", "alice", "--json")
    assert r.code in (0, 3), r.stderr
    assert marker.exists()  # the approved config ran, as its importer agreed it would
