"""`signoff init --template …`: a campaign and policy to start from that `signoff check` passes as
written, with the scripts they upload and the schemas an editor validates them with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TEMPLATES = ["vllm", "sglang", "redis", "postgres", "generic"]


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_writes_a_campaign_and_policy_that_check_passes(cli, tmp_path, template):
    d = tmp_path / "new"
    r = cli("init", str(d), "--template", template, "--json")
    assert r.code == 0, r.stderr
    files = set(r.json()["files"])
    assert {"campaign.yaml", "policy.yaml", "campaign.schema.json", "policy.schema.json"} <= files
    assert files == {p.name for p in d.iterdir()}
    campaign, policy = d / "campaign.yaml", d / "policy.yaml"
    assert campaign.read_text().startswith("# yaml-language-server: $schema=./campaign.schema.json\n")
    assert policy.read_text().startswith("# yaml-language-server: $schema=./policy.schema.json\n")
    assert "\nextends: cautious\n" in policy.read_text()
    for script in d.glob("*.sh"):
        assert script.stat().st_mode & 0o111
    assert json.loads((d / "campaign.schema.json").read_text())["type"] == "object"
    c = cli("check", str(campaign), "--policy", str(policy), "--json")
    assert c.code == 0, c.stdout + c.stderr
    out = c.json()
    assert all(cmd["klass"] == "allow" for cmd in out["commands"]), [
        x for x in out["commands"] if x["klass"] != "allow"
    ]
    # The only warnings a template may have are the SSH host keys nobody has added yet.
    assert all("no host key" in f["message"] for f in out["findings"]), out["findings"]
    if template in ("redis", "postgres", "generic"):
        assert cli("check", str(campaign), "--policy", str(policy), "--strict").code == 0


def test_init_never_overwrites_without_force_and_names_the_templates(cli, tmp_path):
    d = tmp_path / "here"
    assert cli("init", str(d), "--template", "generic").code == 0
    (d / "campaign.yaml").write_text("mine\n")
    r = cli("init", str(d), "--template", "redis")
    assert r.code == 2 and "campaign.yaml already exists" in r.stderr and "nothing written" in r.stderr
    assert (d / "campaign.yaml").read_text() == "mine\n" and not (d / "redisctl.sh").exists()
    assert cli("init", str(d), "--template", "redis", "--force").code == 0
    assert "redis-set-throughput" in (d / "campaign.yaml").read_text()
    r = cli("init", str(d), "--template", "mysql")
    assert r.code == 2 and "unknown template 'mysql'" in r.stderr and "postgres (" in r.stderr
    assert "Traceback" not in r.stderr


def test_init_in_the_current_directory_by_default(cli, tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "agent.cli", "init", "--template", "generic"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "SIGNOFF_HOME": str(tmp_path / "home")},
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "campaign.yaml").is_file() and "signoff check" in r.stdout
    assert Path(tmp_path / "ctl.sh").stat().st_mode & 0o111
