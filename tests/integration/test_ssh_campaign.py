"""Campaigns over SSH, end to end through the CLI, against the real sshd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.journal.verify import verify
from tests import sshd as harness
from tests.conftest import ROOT, SIGNOFF, journal_events


def ssh_config(tmp_path: Path, server: harness.SSHServer, alias: str = "demo-box", known: Path | None = None) -> Path:
    path = tmp_path / f"ssh_config-{alias}"
    path.write_text(f"""\
Host {alias}
  HostName 127.0.0.1
  Port {server.port}
  User {server.user}
  IdentityFile {server.client_key}
  IdentitiesOnly yes
  UserKnownHostsFile {known or server.known_hosts}
  StrictHostKeyChecking yes
""")
    return path


def mini(
    tmp_path: Path,
    server: harness.SSHServer,
    *,
    apply: str = "true",
    extra: str = "",
    known_hosts: str | None = None,
    bench_wall: str = "0.01",
) -> Path:
    """A one-host campaign on the SSH server; simserve.py is uploaded by the campaign itself."""
    d = tmp_path / "mini"
    d.mkdir(exist_ok=True)
    (d / "simserve.py").write_text((ROOT / "examples/decode-campaign/simserve.py").read_text())
    kh = known_hosts if known_hosts is not None else str(server.known_hosts)
    (d / "campaign.yaml").write_text(f"""\
name: ssh-mini
goal: {{text: exercise the SSH transport}}
hosts:
  - {{name: box, transport: ssh, address: 127.0.0.1, port: {server.port}, user: {server.user},
     key_path: {server.client_key}, known_hosts: "{kh}", roles: [decode]}}
vars: {{simserve: "{{{{python}}}} simserve.py"}}
{extra}
baseline:
  upload: [{{src: simserve.py}}]
  setup: ["{{{{simserve}}}} init --seed 3"]
  health: ["{{{{simserve}}}} health"]
benchmark:
  run: "{{{{simserve}}}} bench --wall {bench_wall}"
  on: box
  num_prompts: 900
  pairs: 5
  max_pairs: 5
  timeout: 20
stress: [{{name: bursts, run: "{{{{simserve}}}} stress idle-busy-bursts --wall 0.01", on: box, timeout: 5}}]
options:
  - id: 1
    title: occupancy
    apply: ['{{{{simserve}}}} apply moe-occupancy && {apply}']
    revert: ["{{{{simserve}}}} revert moe-occupancy"]
""")
    return d / "campaign.yaml"


def remote_workdirs(server: harness.SSHServer, session: str) -> Path:
    return server.home / "signoff" / session


@pytest.mark.heavy
@pytest.mark.xdist_group("demo")  # shares the once-made local demo run
def test_the_demo_over_ssh_matches_the_local_run(cli, sshd, tmp_path, demo_json):
    cfg = ssh_config(tmp_path, sshd)
    remote = cli("demo", "--ssh", "demo-box", "--ssh-config", str(cfg), "--json")
    assert remote.code == 0, remote.stderr
    a, b = demo_json, remote.json()
    assert [(o["id"], o["outcome"], o["gain_pct"], o["ci"], o["verdict"]) for o in a["options"]] == [
        (o["id"], o["outcome"], o["gain_pct"], o["ci"], o["verdict"]) for o in b["options"]
    ]
    assert [(g["kind"], g["by"]) for g in a["gates"]] == [(g["kind"], g["by"]) for g in b["gates"]]
    # The host state lives on the SSH host, in the session's directory there.
    state = json.loads((remote_workdirs(sshd, b["session"]) / "gpu-a" / "server.json").read_text())
    assert state["moe_occupancy"] == "tuned" and state["overlap_scheduler"] is False
    assert verify(Path(b["journal"])).ok
    uploads = [e for e in journal_events(b["journal"]) if e["kind"] == "file.uploaded"]
    assert {e["host"] for e in uploads} == {"gpu-a", "gpu-b"}
    # Wedged stress runs were killed on the remote host, not left running.
    assert sshd.processes("stress abort-cascade") == []


def test_unreachable_host_fails_setup_with_a_clear_message(cli, sshd, tmp_path):
    campaign = mini(tmp_path, sshd)
    campaign.write_text(campaign.read_text().replace(f"port: {sshd.port}", f"port: {harness._free_port()}"))
    r = cli("run", str(campaign), "--json")
    assert r.code == 1, r.stderr
    out = r.json()
    assert out["status"] == "failed" and "connection refused" in out["error"]
    events = journal_events(out["journal"])
    assert any(e["kind"] == "setup.failed" for e in events)
    assert verify(Path(out["journal"])).ok


def test_unknown_host_key_refused_unless_accepted_then_pinned(cli, sshd, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    campaign = mini(tmp_path, sshd, known_hosts=str(empty))
    r = cli("run", str(campaign), "--json")
    assert r.code == 1 and "is unknown (ssh-ed25519 SHA256:" in r.json()["error"]
    r = cli("run", str(campaign), "--accept-new-host-keys", "--json")
    assert r.code == 0, r.stderr
    pins = [e for e in journal_events(r.json()["journal"]) if e["kind"] == "hostkey.pinned"]
    assert len(pins) == 1 and pins[0]["fingerprint"].startswith("SHA256:")
    assert sshd.host_key_b64 in (Path(r.json()["journal"]).parent / "known_hosts.pinned").read_text()


def test_a_denied_command_never_reaches_the_host(cli, sshd, tmp_path):
    campaign = mini(tmp_path, sshd, apply="touch denied-marker")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        (ROOT / "policies/presets/cautious.yaml")
        .read_text()
        .replace('deny: ["rm -rf /*"', 'deny: ["touch denied-marker", "rm -rf /*"')
    )
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["options"][0]["outcome"] == "untested"
    assert not (remote_workdirs(sshd, out["session"]) / "box" / "denied-marker").exists()
    assert not any(
        e["kind"] == "command.started" and "denied-marker" in e["command"] for e in journal_events(out["journal"])
    )


def test_secrets_travel_on_stdin_and_never_reach_the_session_dir(cli, sshd, tmp_path, home, monkeypatch):
    canary = "canary-4c1d-Z9-secret-value"
    monkeypatch.setenv("DEPLOY_TOKEN", canary)
    campaign = mini(
        tmp_path,
        sshd,
        apply='printf %s "{{DEPLOY_TOKEN}}" > token.txt && echo "using {{DEPLOY_TOKEN}}"',
        extra="secrets: [DEPLOY_TOKEN]",
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        (ROOT / "policies/presets/cautious.yaml")
        .read_text()
        .replace('allow: ["python* *simserve.py *"', 'allow: ["printf *", "python* *simserve.py *"')
    )
    env_cli = subprocess.run(
        [*SIGNOFF, "run", str(campaign), "--policy", str(policy), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "SIGNOFF_HOME": str(home)},
    )
    assert env_cli.returncode == 0, env_cli.stderr
    out = json.loads(env_cli.stdout)
    # The remote command really had the secret…
    assert (remote_workdirs(sshd, out["session"]) / "box" / "token.txt").read_text() == canary
    # …but nothing signoff wrote or printed contains it.
    assert canary not in env_cli.stdout + env_cli.stderr
    for f in Path(out["journal"]).parent.rglob("*"):
        if f.is_file():
            assert canary.encode() not in f.read_bytes(), f
    started = [e["command"] for e in journal_events(out["journal"]) if e["kind"] == "command.started"]
    assert any('"$DEPLOY_TOKEN"' in c for c in started)


def run_until(campaign: Path, home: Path, ready: Callable[[list[str]], bool]) -> subprocess.Popen[str]:
    """`signoff run CAMPAIGN --json` in its own process, returned once its journal lines satisfy `ready`."""
    env = {**os.environ, "SIGNOFF_HOME": str(home)}
    proc = subprocess.Popen(
        [*SIGNOFF, "run", str(campaign), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        journals = list((home / "sessions").glob("*/journal.jsonl"))
        lines = journals[0].read_text().splitlines() if journals else []
        if lines and ready(lines):
            break
        time.sleep(0.02)
    return proc


def test_sshd_dying_mid_benchmark_takes_the_safe_path(sshd, tmp_path, home):
    server = harness.start()
    try:
        proc = run_until(mini(tmp_path, server, bench_wall="0.3"), home, lambda lines: '"bench.run"' in "".join(lines))
        server.stop()
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 3, stderr  # paused: a person decides about the unverified rollback
        out = json.loads(stdout)
        assert out["pending_gate"]["kind"] == "rollback"
        assert out["pending_gate"]["facts"]["verified"] is False
        assert out["options"][0]["outcome"] == "untested"
        events = journal_events(out["journal"])
        assert any(e["kind"] == "command.finished" and e.get("error") for e in events)
        assert verify(Path(out["journal"])).ok
    finally:
        server.stop()


def test_a_link_dropped_mid_benchmark_is_retried_once_and_the_campaign_goes_on(sshd, tmp_path, home):
    server = harness.start()
    try:
        proc = run_until(  # an A/B benchmark run in flight, long enough to be cut on a loaded machine
            mini(tmp_path, server, bench_wall="1.2"),
            home,
            lambda lines: '"bench.progress"' in "".join(lines) and '"purpose":"bench:' in lines[-1],
        )
        # Kill this server's connections, not its listener: the link drops, the host stays up.
        assert server.kill_connections()
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
        out = json.loads(stdout)
        assert out["options"][0]["outcome"] == "kept"
        events = journal_events(out["journal"])
        lost = [e for e in events if e["kind"] == "command.finished" and "connection lost" in (e.get("error") or "")]
        assert len(lost) == 1 and lost[0]["purpose"].startswith("bench:")
        after = events[events.index(lost[0]) + 1 :]
        again = next(e for e in after if e["kind"] == "command.started")
        assert again["purpose"] == lost[0]["purpose"]  # the same read-only command, once more
        assert all(e["valid"] for e in events if e["kind"] == "bench.run")  # and it counted
        assert verify(Path(out["journal"])).ok
    finally:
        server.stop()


def test_ssh_import_stays_lazy_for_local_campaigns():
    code = (
        "import sys\nfrom agent.run.connect import HostRouter\nfrom agent.run.runner import Runner\n"
        "print('paramiko' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
