"""Issue 19, Low: local commands inherited signoff's whole environment, so `env` on a local host printed
a DATABASE_URL with its password unmasked (its name is not secret-like) and SIGNOFF_SIGNING_KEY's path,
with which a command could sign a forged journal head. A local host's commands now see what a login
shell sets, plus the names the host lists under `inherit_env`."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tools.artifacts import ArtifactStore
from tools.transport import Host, LocalTransport

LEAKY = {
    "DATABASE_URL": "postgres://app:hunter2-canary@db/prod",
    "SIGNOFF_SIGNING_KEY": "/root/.signoff/signing.key",
    "AWS_SECRET_ACCESS_KEY": "aws-canary",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "PGHOST": "/run/pg",
}


def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: Host) -> dict[str, str]:
    for k, v in LEAKY.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    t = LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"))
    r = t.run(host, "env -0", timeout=10, env={"GIVEN": "by-signoff"})
    assert r.exit_code == 0, r.stderr_tail
    raw = (tmp_path / "artifacts" / str(r.artifact)).read_text()
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def test_a_local_command_does_not_see_signoffs_credentials(tmp_path, monkeypatch):
    env = environment(tmp_path, monkeypatch, Host(name="h"))
    for name in LEAKY:
        assert name not in env, name
    assert "hunter2-canary" not in "".join(env.values())
    # what a command needs still arrives: a login shell's variables, signoff's own, the ones it was given
    assert env["PATH"] and env["HOME"] and env["LC_ALL"] == "C.UTF-8"
    assert env["SIGNOFF_HOST"] == "h" and env["GIVEN"] == "by-signoff"


def test_a_host_names_what_its_commands_inherit(tmp_path, monkeypatch):
    env = environment(tmp_path, monkeypatch, Host(name="h", inherit_env=["CUDA_VISIBLE_DEVICES", "PG*"]))
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["PGHOST"] == "/run/pg"
    assert "DATABASE_URL" not in env and "SIGNOFF_SIGNING_KEY" not in env


def test_inherit_env_is_a_list_of_names():
    with pytest.raises(ValidationError):
        Host(name="h", inherit_env="CUDA_VISIBLE_DEVICES")  # type: ignore[arg-type]
