"""`signoff check`: the dry run a new user runs before the first real campaign. Each problem the
first real PostgreSQL campaign met one run at a time is named here up front, at its file:line, with
the pattern or rule that decided — and nothing touches a host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, fast
from tests.e2e.test_brain_unavailable_gate import policy_from_before_the_gate

EXAMPLES = ROOT / "examples"


def campaign_file(tmp_path: Path, base: str, edit=None, name: str = "campaign.yaml") -> Path:
    """A copy of a shipped example campaign (with the files it uploads), edited."""
    src = EXAMPLES / base
    for f in src.iterdir():
        if f.is_file() and f.name != "campaign.yaml":
            (tmp_path / f.name).write_bytes(f.read_bytes())
    text = (src / "campaign.yaml").read_text()
    path = tmp_path / name
    path.write_text(edit(text) if edit else text)
    return path


def test_the_postgres_example_checks_clean_under_its_own_policy(cli, home):
    r = cli("check", "examples/postgres/campaign.yaml", "--policy", "examples/postgres/policy.yaml", "--json")
    assert r.code == 0, r.stdout + r.stderr
    out = r.json()
    assert out["ok"] and out["errors"] == 0 and out["warnings"] == 0
    assert [p["name"] for p in out["policy_parts"]] == ["cautious-postgres", "cautious"]
    by_where = {c["where"]: c for c in out["commands"]}
    assert by_where["baseline.setup[0]"]["command"] == "sh pgctl.sh init 2"
    assert by_where["baseline.setup[0]"]["why"] == "matches allow pattern 'sh pgctl.sh *'"
    assert by_where["options[1].probes[0]"]["readonly"] is True
    # {{pgbench}} and {{workdir}} rendered as the run renders them.
    assert by_where["benchmark"]["command"].startswith(f"pgbench -h {home}/sessions/SESSION/hosts/db-1/run ")
    e = out["estimate"]
    # Calibration and verify runs, then per option the pairs a sequential A/B may stop at (its first look, 3).
    assert e["benchmark_runs_min"] == 2 * 4 + 3 + 4 * 2 * 3 and e["benchmark_runs_max"] > e["benchmark_runs_min"]
    # (triage: `cautious` asks about a no-go only a language model's reading found; listed as a rule that may ask)
    assert {g["gate"] for g in out["gates"]} == {"triage", "safety", "continue_or_ask", "rollback"}
    assert any(g["rule"] == "ask-model-only-nogo" and g["when"] == "model_only_nogo > 0" for g in out["gates"])
    assert not (home / "sessions").exists()  # nothing was created, nothing ran


def test_a_preset_that_asks_about_every_command_is_a_warning_and_strict_fails(cli):
    r = cli("check", "examples/redis/campaign.yaml", "--policy", "cautious", "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    asked = [c for c in out["commands"] if c["klass"] == "ask"]
    assert asked and all(c["why"] == "matches no allow pattern" for c in asked)
    assert sum(g["gate"] == "command" for g in out["gates"]) == len(asked)
    assert any("headless run pauses" in f["message"] for f in out["findings"])
    assert cli("check", "examples/redis/campaign.yaml", "--policy", "cautious", "--strict").code == 1
    assert cli("check", "examples/redis/campaign.yaml", "--policy", "examples/redis/policy.yaml", "--strict").code == 0


def test_a_denied_setup_command_is_an_error_at_its_line_naming_the_pattern(cli, tmp_path):
    path = campaign_file(
        tmp_path,
        "postgres",
        lambda t: t.replace(
            '    - {run: "{{ctl}} init 2", on: postgres, timeout: 120}',
            '    - {run: "rm -rf /home/pg/pgdata", on: postgres}\n'
            '    - {run: "{{ctl}} init 2", on: postgres, timeout: 120}',
        ),
    )
    r = cli("check", str(path), "--policy", "examples/postgres/policy.yaml")
    assert r.code == 2, r.stdout + r.stderr
    line = next(i for i, x in enumerate(path.read_text().splitlines(), 1) if "rm -rf /home" in x)
    first = r.stdout.splitlines()[0]
    assert first.startswith(
        f"{path}:{line}: error: baseline.setup[0]: the command policy refuses `rm -rf /home/pg/pgdata`"
    )
    assert "deny pattern 'rm -rf /*'" in first and "Traceback" not in r.stderr


def test_weak_measurement_settings_are_named_with_what_they_cost(cli, tmp_path):
    def weak(text: str) -> str:
        text = text.replace("pairs: 6\n", "pairs: 3\n").replace("calibrate_pairs: 4", "calibrate_pairs: 2")
        stress = text.index("stress:\n")
        return text[:stress] + text[text.index("rollback:\n") :]

    path = campaign_file(tmp_path, "postgres", weak)
    r = cli("check", str(path), "--policy", "examples/postgres/policy.yaml", "--json")
    assert r.code == 0, r.stderr
    messages = [f["message"] for f in r.json()["findings"] if f["level"] == "warning"]
    assert any(m.startswith("calibrate_pairs is 2") for m in messages)
    assert any(m.startswith("pairs is 3") for m in messages)
    assert any(m.startswith("no stress test") for m in messages)
    assert any("#2 has a hazard probe" in m and "no stress test could reproduce it" in m for m in messages)
    assert cli("check", str(path), "--policy", "examples/postgres/policy.yaml", "--strict").code == 1


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda t: t.replace("metric: tps\n  target_pct", "metrc: tps\n  target_pct"),
            ":12: error: campaign: goal.metrc: unknown field",
        ),
        (lambda t: t + "secrets: [CHECK_NO_SUCH_SECRET_XYZ]\n", "secret CHECK_NO_SUCH_SECRET_XYZ is not in"),
        (
            lambda t: t.replace("- {src: pgctl.sh, on: postgres}", "- {src: nope.sh, on: postgres}"),
            "no file 'nope.sh' beside the campaign",
        ),
    ],
    ids=["unknown-field", "missing-secret", "missing-upload"],
)
def test_what_would_stop_a_run_at_once_is_an_error_in_one_line(cli, tmp_path, edit, expected):
    path = campaign_file(tmp_path, "postgres", edit)
    r = cli("check", str(path), "--policy", "examples/postgres/policy.yaml")
    assert r.code == 2 and expected in r.stdout, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_a_bad_policy_is_an_error_at_its_line(cli, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "extends: cautious\nname: p\ngates:\n  safety:\n    rules:\n      - {id: x, when: nope > 1, decide: ask}\n"
    )
    r = cli("check", "examples/postgres/campaign.yaml", "--policy", str(policy), "--json")
    assert r.code == 2
    (finding,) = r.json()["findings"]
    assert finding["file"] == str(policy) and finding["line"] == 6 and finding["where"] == "policy"


def test_ssh_hosts_are_resolved_and_their_keys_looked_up_without_connecting(cli, sshd, tmp_path):
    def on_ssh(text: str, known: Path) -> str:
        local = "  - {name: db-1, transport: local, roles: [postgres]}"
        host = sshd.host("db-1")
        remote = (
            f"  - {{name: db-1, transport: ssh, roles: [postgres], address: 127.0.0.1, port: {host.port}, "
            f"user: {host.user}, key_path: {host.key_path}, known_hosts: {known}}}"
        )
        assert local in text
        return text.replace(local, remote)

    before = sshd.connections_seen()  # other tests share this server: count only what `check` adds
    known = campaign_file(tmp_path, "postgres", lambda t: on_ssh(t, sshd.known_hosts), name="known.yaml")
    r = cli("check", str(known), "--policy", "examples/postgres/policy.yaml", "--json")
    assert r.code == 0, r.stdout + r.stderr
    (host,) = r.json()["hosts"]
    assert (host["address"], host["port"], host["user"], host["host_key"]) == (
        "127.0.0.1",
        sshd.port,
        sshd.user,
        "known",
    )
    bench = next(c for c in r.json()["commands"] if c["where"] == "benchmark")
    assert "-h ~/signoff/SESSION/db-1/run " in bench["command"]
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    unknown = campaign_file(tmp_path, "postgres", lambda t: on_ssh(t, empty), name="unknown.yaml")
    r = cli("check", str(unknown), "--policy", "examples/postgres/policy.yaml", "--json")
    assert r.code == 0 and r.json()["hosts"][0]["host_key"] == "unknown"
    assert any("no host key for [127.0.0.1]:" in f["message"] for f in r.json()["findings"])
    assert sshd.connections_seen() == before  # not one connection, not even one closed again at once


def test_the_text_report_lists_hosts_commands_gates_and_the_estimate(cli):
    r = cli("check", "examples/decode-campaign/campaign.yaml")
    assert r.code == 0, r.stderr
    out = r.stdout
    assert "hosts:\n  gpu-a: local\n  gpu-b: local\n" in out
    assert "gates a person decides:" in out and "estimate: " in out and out.rstrip().splitlines()[-1].startswith("OK: ")
    assert "calibrate_pairs is 0" in out.splitlines()[0]
    assert json.loads(cli("check", "examples/decode-campaign/campaign.yaml", "--json").stdout)["ok"] is True


def test_the_brain_unavailable_gate_is_listed_only_where_a_model_can_be_given_up(cli, tmp_path):
    # A campaign on the rule brain never opens it; one on Claude under cautious asks there; a policy written before
    # the gate names no rule for it and goes on with the rule brain, so nothing is listed.
    claude = campaign_file(
        tmp_path, "decode-campaign", lambda t: t.replace("\ngoal:", "\nbrain:\n  kind: claude\ngoal:", 1)
    )
    older = tmp_path / "older.yaml"
    older.write_text(policy_from_before_the_gate())
    said = {
        "rules": cli("check", "examples/decode-campaign/campaign.yaml", "--json"),
        "claude": cli("check", str(claude), "--json"),
        "claude, older policy": cli("check", str(claude), "--policy", str(older), "--json"),
    }
    listed = {k: [g for g in r.json()["gates"] if g["gate"] == "brain_unavailable"] for k, r in said.items()}
    assert listed["rules"] == [] and listed["claude, older policy"] == []
    assert [(g["rule"], g["when"]) for g in listed["claude"]] == [("ask-when-the-model-is-gone", "always")]
    text = cli("check", str(claude)).stdout
    assert "  brain_unavailable: ask-when-the-model-is-gone always — the rule asks" in text


def test_a_campaign_notify_command_the_policy_does_not_allow_is_named_as_not_run(cli, tmp_path):
    path = campaign_file(tmp_path, "postgres", lambda t: t + "notify:\n  - command: [curl, -d, '@-', 'https://x']\n")
    r = cli("check", str(path), "--policy", "examples/postgres/policy.yaml", "--json")
    assert r.code == 0, r.stdout + r.stderr
    (row,) = [c for c in r.json()["commands"] if c["where"] == "notify[0]"]
    assert row["klass"] == "ask" and row["host"] == "this machine"
    assert any(
        f["message"].startswith("notify command `curl -d @- https://x` will not be run") for f in r.json()["findings"]
    )
    assert not [g for g in r.json()["gates"] if g["gate"] == "command"]


def _finished_s(home: Path, session: str) -> float:
    """The running time a session's journal records for it (session.finished)."""
    lines = (home / "sessions" / session / "journal.jsonl").read_text().splitlines()
    (done,) = [e for e in map(json.loads, lines) if e["kind"] == "session.finished"]
    return float(done["elapsed_s"])


def test_the_expected_duration_is_near_a_real_run_and_the_worst_case_stays_above_it(cli, home, tmp_path, finished_demo):
    demo = "examples/decode-campaign/campaign.yaml"
    # Nothing known yet: every unit at its timeout, said as assumed, and still below the worst case.
    before = cli("check", demo, "--json").json()["estimate"]
    assert {d["source"] for d in before["expected_durations"]} == {"assumed"} and before["expected_session"] is None
    assert before["wall_s_max"] >= before["expected_s"] > 0
    # A real run of the (fast) demo on the simulator measures it: the suite's shared one, copied in…
    source, out = finished_demo
    measured = out["session"]
    shutil.copytree(source / "sessions" / measured, home / "sessions" / measured)
    # …and a later version of the campaign (fewer pairs, a calibration) is expected from what that run measured.
    variant = campaign_file(
        tmp_path, "decode-campaign", lambda t: fast(t).replace("  pairs: 6\n", "  pairs: 4\n  calibrate_pairs: 2\n")
    )
    r = cli("check", str(variant), "--json")
    assert r.code == 0, r.stdout + r.stderr
    e = r.json()["estimate"]
    assert e["expected_session"] == measured
    assert {d["unit"] for d in e["expected_durations"] if d["source"] == "measured"} >= {
        "setup",
        "benchmark run",
        "A/B run",
        "stress",
        "rollback",
    }
    assert all(
        "earlier version of this campaign" in d["detail"] for d in e["expected_durations"] if d["source"] == "measured"
    )
    assert e["benchmark_runs_expected"] == 2 * 2 + 3 + 3 * (2 * 4 + 3)
    assert e["wall_s_max"] >= e["expected_s"]
    # The old figures are all still there.
    assert {"benchmark_runs_min", "benchmark_runs_max", "toggles_max", "wall_s_max", "by_phase_s"} <= set(e)
    # Now the variant runs for real. The expected figure is within a sane factor of it: it counts all three options
    # measured and rolled back where the run finds #1 a no-go (about 1.5 times on this machine; the two runs meet
    # different loads on a shared machine, hence the margin), while the worst case, every command to its timeout,
    # is over a hundred times it.
    assert cli("run", str(variant), "--headless").code == 0
    (ran,) = [p.name for p in (home / "sessions").iterdir() if p.name != measured]
    real = _finished_s(home, ran)
    assert real / 4 <= e["expected_s"] <= real * 4, (real, e["expected_s"], e["expected_durations"])
    assert e["wall_s_max"] > 100 * real
    text = cli("check", str(variant)).stdout
    assert f"durations measured in session {ran}" in text  # the newest session of the campaign now
    assert "expected: about " in text and "  measured (an earlier session): setup " in text


def test_a_store_that_cannot_be_read_leaves_the_campaigns_own_figures(cli):
    r = cli("check", "examples/decode-campaign/campaign.yaml", "--json", "--store", "postgresql://x@127.0.0.1:1/none")
    assert r.code == 0, r.stdout + r.stderr
    e = r.json()["estimate"]
    assert e["expected_note"].startswith("the store could not be read (") and e["expected_session"] is None
    assert e["expected_s"] > 0 and "Traceback" not in r.stderr
