"""The real-system example campaigns (examples/redis, examples/postgres), end to end through the CLI with
their own policies, on this machine and over the real sshd.

Real servers are noisy (fsync latency on a virtual disk varies by tens of percent from run to run), so
these tests assert only what does not depend on the noise: the blocker option is a no-go with the
blocker the machine implies, the hazardous option 2 is judged unsafe and rolled back, the Redis options
a stress scenario defeats are told apart by how (#5 wedges, #6 saturates) and rolled back too, every
rollback is verified, every host ends on its baseline for every option not kept (each option's own
`check`, run in the host's directory, says "not in effect"), and the journal verifies. Where the
cautious policy asks (an inconclusive A/B), the test answers as a person would: skip it, continue.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from agent.journal.verify import verify
from agent.report.replay import verify_session
from tests import realsys
from tests.conftest import journal_events


def _shorter_redis(text: str) -> str:
    """The shipped campaign with shorter runs: the same options, probes, stress test and checks."""
    return realsys.edit(
        text,
        ("-n 6000 -c 50", "-n 1500 -c 50"),  # ~0.1–0.2 s a run here
        ("  pairs: 6\n  max_pairs: 10\n  calibrate_pairs: 4\n", "  pairs: 3\n  max_pairs: 3\n  calibrate_pairs: 2\n"),
        ('run: "{{ctl}} crash 50"', 'run: "{{ctl}} crash 20"'),
        (
            '    run: "{{ctl}} surge 128"\n    on: cache-1\n    timeout: 5\n',
            '    run: "{{ctl}} surge 128"\n    on: cache-1\n    timeout: 3\n',
        ),
        ("    timeout: 30\n    runs: 2\n", "    timeout: 30\n    runs: 1\n"),
    )


def _shorter_postgres(text: str, sharedir: Path) -> str:
    return realsys.edit(
        text,
        ("pgshare: /usr/share/postgresql/15", f"pgshare: {sharedir}"),  # this machine's PostgreSQL
        ('run: "{{ctl}} init 2"', 'run: "{{ctl}} init 1"'),  # pgbench scale 1: a faster pgbench -i
        ("-n -c 4 -j 2 -T 1 bench", "-n -c 4 -j 2 -t 25 bench"),  # 100 transactions, ~0.1–0.2 s
        ("  pairs: 6\n  max_pairs: 10\n  calibrate_pairs: 4\n", "  pairs: 3\n  max_pairs: 3\n  calibrate_pairs: 2\n"),
        ('run: "{{ctl}} crash 0.5"', 'run: "{{ctl}} crash 0.2"'),
        ("    timeout: 60\n    runs: 2\n", "    timeout: 60\n    runs: 1\n"),
    )


SYSTEMS = {
    "redis": {
        "dir": "redis",
        "script": "redisctl.sh",
        "host": "- {name: cache-1, transport: local, roles: [redis]}",
        "name": "cache-1",
        "roles": ["redis"],
        "env": "SIGNOFF_REDIS_REQUIRED",
    },
    "postgres": {
        "dir": "postgres",
        "script": "pgctl.sh",
        "host": "- {name: db-1, transport: local, roles: [postgres]}",
        "name": "db-1",
        "roles": ["postgres"],
        "env": "SIGNOFF_PG_REQUIRED",
    },
}


def _campaign(kind: str, tmp_path: Path, transport: str, server) -> Path:
    spec = SYSTEMS[kind]
    src = realsys.EXAMPLES / spec["dir"]
    text = (src / "campaign.yaml").read_text()
    if kind == "redis":
        text = _shorter_redis(text)
    else:
        bindir = realsys.pg_bindir()
        assert bindir is not None
        text = _shorter_postgres(text, realsys.pg_sharedir(bindir))
    if transport == "ssh":
        text = realsys.edit(text, (spec["host"], realsys.ssh_host_entry(spec["name"], spec["roles"], server)))
        # The goal's confirmation A/B switches options with the A/B's own commands over the same transport: it is
        # measured on the local variant, and the suite spends the time once.
        text = text.rstrip("\n") + "\nconfirm: false\n"
    d = tmp_path / f"{kind}-campaign"
    d.mkdir()
    shutil.copyfile(src / spec["script"], d / spec["script"])
    (d / "campaign.yaml").write_text(text)
    return d / "campaign.yaml"


def _checks(kind: str) -> dict[int, str]:
    """Each option's `check` command, as the shipped campaign writes it (the test runs them itself)."""
    import yaml

    data = yaml.safe_load((realsys.EXAMPLES / SYSTEMS[kind]["dir"] / "campaign.yaml").read_text())
    ctl = data["vars"]["ctl"]
    return {o["id"]: o["check"].replace("{{ctl}}", ctl) for o in data["options"]}


@pytest.mark.heavy
@pytest.mark.timeout(240)
@pytest.mark.parametrize("transport", ["local", "ssh"])
@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_real_system_campaign_end_to_end(kind: str, transport: str, tmp_path: Path, request) -> None:
    spec = SYSTEMS[kind]
    realsys.require(realsys.redis_missing() if kind == "redis" else realsys.pg_missing(), kind, spec["env"])
    server = request.getfixturevalue("sshd") if transport == "ssh" else None
    home = realsys.short_home()
    hosts = realsys.Hosts(names=[spec["name"]], transport=transport, home=home, server=server)
    campaign = _campaign(kind, tmp_path, transport, server)
    policy = realsys.EXAMPLES / spec["dir"] / "policy.yaml"
    try:
        result = realsys.run_headless(campaign, policy, home)
        print(f"\n{kind} over {transport}: {result.seconds:.1f} s, answers {result.answers}")
        for o in result.out.get("options", []):
            print(f"  #{o['id']} {o['outcome']} verdict={o['verdict']} gain={o['gain_pct']}")
        pending = result.out.get("pending_gate") or {}
        assert result.code == 0, f"{result.out.get('status')} at {pending.get('kind')}: {pending.get('question')}"
        out = result.out
        session = out["session"]

        # The campaign's own policy allowed every command it runs: nothing was refused or asked about.
        events = journal_events(out["journal"])
        assert [g for g in out["gates"] if g["kind"] == "command"] == []
        assert [e["command"] for e in events if e["kind"] == "command.refused"] == []

        # The blocker option: a no-go, for the reason this machine gives.
        if kind == "redis":
            version = realsys.redis_version()
            blocked = result.option(4)
            if int(version.split(".")[0]) < 8:
                assert blocked["outcome"] == "no-go", blocked
                assert any(
                    r.startswith("blocker:") and f"redis-server {version} is older than 8" in r
                    for r in blocked["reasons"]
                ), blocked["reasons"]
            else:
                assert blocked["outcome"] != "no-go", blocked
        else:
            blocked = result.option(3)
            if realsys.hugepages_total() == 0:
                assert blocked["outcome"] == "no-go", blocked
                assert any(r.startswith("blocker:") and "HugePages_Total: 0" in r for r in blocked["reasons"]), blocked[
                    "reasons"
                ]
            else:
                assert blocked["outcome"] != "no-go", blocked

        # Option 2: the hazard its probe found in the server's own shipped config makes it unsafe; skipped,
        # and so rolled back.
        hazardous = result.option(2)
        cited = "lose just one second of writes" if kind == "redis" else "unrecoverable data corruption"
        assert any(r.startswith("hazard:") and cited in r for r in hazardous["reasons"]), hazardous["reasons"]
        assert hazardous["verdict"] == "unsafe", hazardous
        assert hazardous["outcome"] == "skipped", hazardous

        if kind == "redis":
            # Option 5 caps connections: the 128-client surge is refused past 64 and redis-benchmark waits on
            # the refused ones in silence. At the deadline PING is refused too, and the process is there:
            # hung, a wedge, not a dead server. The options that leave maxclients alone get through it.
            surge = [e for e in events if e["kind"] == "stress.result" and e["scenario"] == "connection-surge"]
            capped = [e for e in surge if e["option"] == 5]
            assert [e["outcome"] for e in capped] == ["wedge"], capped
            assert "while its process is still there" in capped[0]["evidence"], capped[0]["evidence"]
            # (io-threads 2 on two busy cores can make the surge slow, even saturated; never a hung server)
            assert all(e["outcome"] != "wedge" for e in surge if e["option"] != 5), [
                (e["option"], e["outcome"], e["evidence"]) for e in surge
            ]
            (gate,) = [
                e for e in events if e["kind"] == "gate.opened" and e.get("gate_kind") == "safety" and e["option"] == 5
            ]
            assert gate["facts"]["wedges"] == 1 and gate["facts"]["dead_runs"] == 0
            assert result.option(5)["verdict"] == "unsafe" and result.option(5)["outcome"] == "skipped"

            # Option 6 keeps hashes of up to 100000 fields in one listpack, which every HSET scans: the big
            # hash still grows at the deadline (its HLEN lines still come) while PING answers — saturated,
            # progressing too slowly, not stuck. With the baseline's 512 the hash becomes a hash table and
            # every other option writes its 80000 fields in about a second.
            big = [e for e in events if e["kind"] == "stress.result" and e["scenario"] == "big-hash"]
            packed = [e for e in big if e["option"] == 6]
            assert [e["outcome"] for e in packed] == ["saturated"], packed
            assert "still printing" in packed[0]["evidence"] and "(listpack)" in packed[0]["evidence"], packed
            assert all(e["outcome"] == "ok" for e in big if e["option"] != 6), [
                (e["option"], e["outcome"], e["evidence"]) for e in big
            ]
            (gate,) = [
                e for e in events if e["kind"] == "gate.opened" and e.get("gate_kind") == "safety" and e["option"] == 6
            ]
            assert gate["facts"]["saturated_runs"] == 1, gate["facts"]
            assert gate["facts"]["wedges"] == 0 and gate["facts"]["dead_runs"] == 0, gate["facts"]
            assert result.option(6)["verdict"] == "unsafe" and result.option(6)["outcome"] == "skipped"

        # Every rollback verified (option 2's at least).
        rollbacks = [e for e in events if e["kind"] == "rollback"]
        assert any(e["option"] == 2 for e in rollbacks), "option 2 was never rolled back"
        # Each option's last rollback: a first one the drifting machine left unverified was reverted and verified
        # again by the answer at its rollback gate (realsys.ANSWERS); a second unverified one would have paused
        # the run (exit 3, asserted above).
        last = {e["option"]: e for e in rollbacks}
        unverified = [(o, e.get("detail")) for o, e in last.items() if not e.get("verified")]
        assert unverified == [], unverified

        # The goal, measured at the end on the real server when anything was kept (the final configuration against the
        # start); with three pairs an option here is seldom kept, and then there is nothing to confirm.
        kept = {o["id"] for o in out["options"] if o["outcome"] == "kept"}
        goal = out["goal"]
        if kept and transport == "local":
            assert goal["measured"], goal
            assert goal["ci"][0] <= goal["measured_pct"] <= goal["ci"][1] and goal["verdict"] != "estimate", goal
        # Every host on the final configuration: up, every kept option in effect (the confirmation switched them
        # off and on again) and every other one not.
        for host in hosts.names:
            code, said = hosts.run(session, host, f"sh {spec['script']} health")
            assert code == 0, f"{host}: health after the run: {said}"
            for option_id, check in _checks(kind).items():
                code, said = hosts.run(session, host, check)
                if option_id in kept:
                    assert code == 0, f"{host}: kept option {option_id} not in effect after the run: {said}"
                else:
                    assert code not in (0, None), f"{host}: option {option_id} still in effect after the run: {said}"

        # The journal verifies: hash chain, head, artifacts, and every policy decision re-derived (what
        # `signoff replay --verify` checks).
        assert verify(Path(out["journal"])).ok
        replayed = verify_session(Path(out["journal"]))
        assert replayed.ok, replayed.line()

        # The control script's `stop` ends the server it started (by its pidfile's PID).
        for host in hosts.names:
            assert realsys.server_pid(kind, hosts.workdir(session, host)) is not None
            code, said = hosts.run(session, host, f"sh {spec['script']} stop")
            assert code == 0, said
            assert realsys.server_pid(kind, hosts.workdir(session, host)) is None, said
    finally:
        for session in realsys.sessions(home):
            for host in hosts.names:
                realsys.stop_server(hosts, session, host, kind)
        hosts.close()
        _remove(home)


def _remove(path: Path) -> None:
    for _ in range(3):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.2)


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_example_policy_is_the_cautious_preset_allowing_every_command_of_its_campaign(kind: str) -> None:
    """No server needed: the policy extends the preset and adds nothing but commands to allow, it loads
    and the preset's self-tests pass with it, and every command the campaign can run is allowed, so a
    headless run never stops at a command gate; the preset's deny and ask lists are kept."""
    import yaml

    from policies.load import load_policy
    from tools.commands import classify

    directory = realsys.EXAMPLES / SYSTEMS[kind]["dir"]
    policy = load_policy(directory / "policy.yaml")
    preset = load_policy("cautious")
    mine = yaml.safe_load((directory / "policy.yaml").read_text())
    assert mine["extends"] == "cautious" and set(mine) == {"extends", "name", "description", "commands"}
    assert set(mine["commands"]) <= {"allow", "readonly"}
    assert [p.name for p in policy.parts] == [mine["name"], "cautious"]
    assert policy.model.gates == preset.model.gates
    assert policy.model.commands.deny == preset.model.commands.deny
    assert policy.model.commands.ask == preset.model.commands.ask

    base = {"workdir": f"/tmp/signoff-rs-x/sessions/20260101-000000-abcd/hosts/{SYSTEMS[kind]['name']}"}
    rules = policy.model.commands
    for rendered in realsys.campaign_commands(directory / "campaign.yaml", base):
        verdict = classify(rendered, allow=rules.allow, ask=rules.ask, deny=rules.deny)
        assert verdict.klass == "allow", (rendered, verdict)
