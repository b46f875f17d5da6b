"""A campaign is the file someone hands you, and its hosts reach `ssh -G` (at `signoff check` and at
every run): a host value that reads as an option — `-F./evil_config`, whose `Match exec` runs a command
while the config is read — is refused at its line, and the alias is passed after `--` besides."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tools.ssh import resolve
from tools.transport import Host


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    config = tmp_path / "evil_config"
    config.write_text(f'Match exec "touch {marker}"\n')
    return config, marker


@pytest.mark.parametrize("field", ["address", "user", "proxy_jump"])
def test_a_host_value_that_reads_as_an_option_is_refused(field, evil):
    config, marker = evil
    with pytest.raises(ValidationError, match="not a host"):
        Host.model_validate({"name": "db-1", "transport": "ssh", field: f"-F{config}"})
    with pytest.raises(ValidationError, match="not a host"):
        Host.model_validate({"name": "db-1", "transport": "ssh", field: "db 1"})
    assert not marker.exists()


def test_resolution_passes_the_alias_after_the_end_of_options(evil):
    config, marker = evil
    forged = Host.model_construct(name="db-1", transport="ssh", address=f"-F{config}", port=22)  # past validation
    resolve(forged)
    assert not marker.exists()


def test_check_refuses_such_a_campaign_at_its_line_and_runs_nothing(cli, tmp_path, evil):
    config, marker = evil
    examples = Path(__file__).resolve().parents[2] / "examples" / "postgres"
    for f in examples.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    campaign = tmp_path / "campaign.yaml"
    text = campaign.read_text().replace(
        "  - {name: db-1, transport: local, roles: [postgres]}",
        f"  - {{name: db-1, transport: ssh, address: '-F{config}', roles: [postgres]}}",
    )
    campaign.write_text(text)
    r = cli("check", str(campaign), "--policy", str(tmp_path / "policy.yaml"))
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "evil_config" in x)
    assert r.code == 2 and f"{campaign}:{line}:" in r.stdout and "not a host" in r.stdout, r.stdout + r.stderr
    assert not marker.exists()
