"""The llama.cpp example (examples/llamacpp) on a real llama-server, end to end through the CLI with its own
policy: the fixed-concurrency campaign on this machine, the load sweep over the real sshd.

llama-server here shares two busy cores with the load client and the rest of the suite: throughput moves by
tens of percent from run to run, so these tests assert only what that noise cannot change. -ngl 99 is a
no-go by its --list-devices probe and --defrag-thold by llama-server's own --help, neither spending a run;
-ctk q4_0 is unsafe on the quality hazard llama.cpp's docs state, and rolled back; every rollback is
verified by its check; the server ends on its baseline flags; the sweep fits the step-time model with
confidence intervals; the journal verifies. Where the cautious policy asks (an inconclusive A/B), the test
answers as a person would: skip it, continue.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.journal.verify import verify
from agent.report.replay import verify_session
from tests import realsys
from tests.conftest import journal_events

EXAMPLE = realsys.EXAMPLES / "llamacpp"
HOST = "- {name: llm-1, transport: local, roles: [llm]}"


def _shorter(text: str, *, sweep: bool) -> str:
    """The shipped campaign with shorter runs (8 requests of 12 tokens, under a second here) and fewer
    pairs: the same options, probes, stress tests and checks."""
    text = realsys.edit(
        text,
        ("--output-len 32", "--output-len 12"),
        ("--streams 16 --after 4 --output-len 64", "--streams 8 --after 3 --output-len 24"),
    )
    if sweep:
        return realsys.edit(
            text,
            ("  num_prompts: 24\n", "  num_prompts: 8\n"),
            (
                "  pairs: 6\n  max_pairs: 8\n  calibrate_pairs: 4\n",
                "  pairs: 3\n  max_pairs: 3\n  calibrate_pairs: 2\n",
            ),
            ("    values: [2, 4, 8]\n", "    values: [2, 8]\n"),
            ("    search: {low: 1, high: 16, steps: 4, runs: 2}\n", ""),
            # The SLO is the example's knee on a quiet machine; a suite on two busy cores is not one, and the
            # test asserts the fit, not where the knee lies.
            ('slo: ["p99_tpot_ms <= 25", "p99_ttft_ms <= 2000"]', 'slo: ["p99_tpot_ms <= 1000"]'),
        )
    return realsys.edit(
        text,
        ("  num_prompts: 32\n", "  num_prompts: 8\n"),
        ("  pairs: 6\n  max_pairs: 10\n  calibrate_pairs: 4\n", "  pairs: 3\n  max_pairs: 3\n  calibrate_pairs: 2\n"),
        ("--requests 32 --output-len 16", "--requests 12 --output-len 8"),
    )


def _campaign(tmp_path: Path, *, sweep: bool, options: set[int], transport: str, server: Any, home: Path) -> Path:
    name = "sweep.yaml" if sweep else "campaign.yaml"
    text = _shorter((EXAMPLE / name).read_text(), sweep=sweep)
    text = realsys.edit(text, ("  llama_home: default ", f"  llama_home: {home} "))
    if transport == "ssh":
        text = realsys.edit(text, (HOST, realsys.ssh_host_entry("llm-1", ["llm"], server)))
    head, _, rest = text.partition("\noptions:\n")
    blocks = [b for b in re.split(r"(?m)^(?=  - id: )", rest) if b.strip()]
    kept = [b for b in blocks if int(b.split()[2]) in options]
    assert len(kept) == len(options), "the example no longer has these options"
    text = head + "\noptions:\n" + "".join(kept)
    d = tmp_path / "llamacpp"
    d.mkdir()
    for script in ("llamactl.sh", "loadgen.py"):
        shutil.copyfile(EXAMPLE / script, d / script)
    (d / "campaign.yaml").write_text(text)
    return d / "campaign.yaml"


def _readable_home(cache: Path, into: Path) -> Path:
    """What llamactl.sh needs from build.sh's cache, where the SSH test's own user can read it (root's
    ~/.cache is not): the programs, the model (hard links where the file system allows) and the docs file
    option 7's probe reads."""
    docs = "src/llama_cpp_python-0.3.36/vendor/llama.cpp/docs"
    home = into / "llama"
    for part in ("bin/llama-server", "bin/llama-batched-bench", "model/tiny-llama.gguf", f"{docs}/function-calling.md"):
        (home / part).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(cache / part, home / part)
        except OSError:
            shutil.copy2(cache / part, home / part)
    for d in [into, *home.rglob("*")]:
        if d.is_dir():
            d.chmod(0o755)
    home.chmod(0o755)
    return home


def _flags(workdir: Path) -> dict[str, str]:
    """The running llama-server's flags (host, port and model left out): flag → value, '' for none."""
    pid = realsys.llama_pid(workdir)
    assert pid is not None, f"no llama-server of ours running in {workdir}"
    words = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[1:]
    flags: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("-"):
            following = words[i + 1] if i + 1 < len(words) else ""
            flags[word] = "" if following.startswith("-") else following
    return {k: v for k, v in flags.items() if k not in ("--host", "--port", "--model")}


def _checks(name: str) -> dict[int, str]:
    data = yaml.safe_load((EXAMPLE / name).read_text())
    return {o["id"]: o["check"].replace("{{ctl}}", data["vars"]["ctl"]) for o in data["options"]}


def _assert_common(result: realsys.Outcome, events: list[dict[str, Any]]) -> None:
    out = result.out
    # The campaign's own policy allowed every command it runs: nothing was refused or asked about.
    assert [g for g in out["gates"] if g["kind"] == "command"] == []
    assert [e["command"] for e in events if e["kind"] == "command.refused"] == []

    # -ngl 99: a no-go by llama-server's own device list, without a benchmark run.
    gpu = result.option(8)
    assert gpu["outcome"] == "no-go", gpu
    assert any(r.startswith("blocker:") and "lists no GPU" in r for r in gpu["reasons"]), gpu["reasons"]
    # --defrag-thold: a no-go because llama-server's --help marks it DEPRECATED.
    defrag = result.option(9)
    assert defrag["outcome"] == "no-go", defrag
    assert any(r.startswith("blocker:") and "DEPRECATED" in r for r in defrag["reasons"]), defrag["reasons"]
    measured = {e.get("option") for e in events if e["kind"] == "bench.run"}
    assert not measured & {8, 9}, "a no-go option was benchmarked"

    # -ctk q4_0: unsafe on the hazard llama.cpp's own docs state, skipped, and so rolled back.
    q4 = result.option(7)
    assert q4["verdict"] == "unsafe" and q4["outcome"] == "skipped", q4
    assert any(r.startswith("hazard:") and "Beware of extreme KV quantizations" in r for r in q4["reasons"]), q4
    (safety,) = [e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "safety" and e["option"] == 7]
    assert safety["by"] == "policy:skip-unsafe", safety  # the preset's guard names the reason, whatever else matched
    rollbacks = [e for e in events if e["kind"] == "rollback"]
    assert any(e["option"] == 7 for e in rollbacks), "option 7 was never rolled back"
    # Each option's last rollback: a first one the drifting machine left unverified was reverted and verified
    # again by the answer at its rollback gate (realsys.ANSWERS); a second unverified one would have paused the run.
    last = {e["option"]: e for e in rollbacks}
    unverified = [(o, e.get("detail")) for o, e in last.items() if not e.get("verified")]
    assert unverified == [], unverified

    # The journal verifies: hash chain, head, artifacts, every policy decision re-derived.
    assert verify(Path(out["journal"])).ok
    replayed = verify_session(Path(out["journal"]))
    assert replayed.ok, replayed.line()


@pytest.mark.heavy
@pytest.mark.timeout(300)
def test_llamacpp_campaign_on_a_real_llama_server(tmp_path: Path) -> None:
    realsys.require(realsys.llamacpp_missing(), "llama.cpp", "SIGNOFF_LLAMACPP_REQUIRED")
    cache = realsys.llamacpp_home()
    assert cache is not None
    home = realsys.short_home()
    hosts = realsys.Hosts(names=["llm-1"], transport="local", home=home)
    # 7: measured, then unsafe; 8, 9: no-go by their probes. (Every option's check runs at the end.)
    campaign = _campaign(tmp_path, sweep=False, options={7, 8, 9}, transport="local", server=None, home=cache)
    try:
        result = realsys.run_headless(campaign, EXAMPLE / "policy.yaml", home, timeout=240)
        print(f"\nllamacpp over local: {result.seconds:.1f} s, answers {result.answers}")
        for o in result.out.get("options", []):
            print(f"  #{o['id']} {o['outcome']} verdict={o['verdict']} gain={o['gain_pct']}")
        pending = result.out.get("pending_gate") or {}
        assert result.code == 0, f"{result.out.get('status')} at {pending.get('kind')}: {pending.get('question')}"
        session = result.out["session"]
        events = journal_events(result.out["journal"])
        _assert_common(result, events)

        # The server is back on its baseline flags, and every option not kept is out of effect by its check.
        workdir = hosts.workdir(session, "llm-1")
        kept = {o["id"] for o in result.out["options"] if o["outcome"] == "kept"}
        if not kept:
            assert _flags(workdir) == {"--ctx-size": "4096", "--parallel": "2", "--threads": "1"}
        for option_id, check in _checks("campaign.yaml").items():
            if option_id not in kept:
                code, said = hosts.run(session, "llm-1", check)
                assert code not in (0, None), f"option {option_id} still in effect after the run: {said}"

        # The model is sized so that the server, not the load client, is what a run measures.
        code, said = hosts.run(session, "llm-1", "sh llamactl.sh sizing 16 16", timeout=120)
        print(said)
        assert code == 0, said

        code, said = hosts.run(session, "llm-1", "sh llamactl.sh stop")
        assert code == 0 and realsys.llama_pid(workdir) is None, said
    finally:
        for session in realsys.sessions(home):
            realsys.stop_server(hosts, session, "llm-1", "llamacpp")
        hosts.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.heavy
@pytest.mark.timeout(300)
def test_llamacpp_sweep_over_ssh_fits_the_step_time_model(tmp_path: Path, sshd) -> None:
    realsys.require(realsys.llamacpp_missing(), "llama.cpp", "SIGNOFF_LLAMACPP_REQUIRED")
    cache = realsys.llamacpp_home()
    assert cache is not None
    home = realsys.short_home()
    readable = _readable_home(cache, Path(home) / "shared")
    hosts = realsys.Hosts(names=["llm-1"], transport="ssh", home=home, server=sshd)
    campaign = _campaign(tmp_path, sweep=True, options={7, 8, 9}, transport="ssh", server=sshd, home=readable)
    try:
        result = realsys.run_headless(campaign, EXAMPLE / "policy.yaml", home, timeout=240)
        print(f"\nllamacpp sweep over ssh: {result.seconds:.1f} s, answers {result.answers}")
        pending = result.out.get("pending_gate") or {}
        assert result.code == 0, f"{result.out.get('status')} at {pending.get('kind')}: {pending.get('question')}"
        session = result.out["session"]
        events = journal_events(result.out["journal"])
        _assert_common(result, events)

        # The step-time model, measured on the real server: per arm, fixed ms + ms per concurrent request
        # from the mean TPOT of every run at concurrency 2 and 8, each with its 95% CI.
        (sweep,) = [e for e in events if e["kind"] == "sweep.result" and e.get("option") == 7]
        for arm in ("A", "B"):
            fit = sweep["fit"][arm]
            print(
                f"  arm {arm}: mean TPOT = {fit['intercept']:.2f} ms + {fit['slope']:.3f} ms x concurrency "
                f"(95% CI {fit['slope_ci'][0]:.3f}..{fit['slope_ci'][1]:.3f}; {fit['points']} runs)"
            )
            assert fit["metric"] == "mean_tpot" and fit["levels"] == 2 and fit["points"] >= 6, fit
            # The fixed part of a step is a few ms, well inside the noise of six loaded runs: the fit must allow a
            # positive one (its CI reaching above zero), not pin it (a busy machine drew -0.4 ms [-22.7, +21.9]).
            assert fit["intercept_ci"][1] > 0, fit
            assert fit["slope_ci"][0] <= fit["slope"] <= fit["slope_ci"][1], fit
            assert fit["intercept_ci"][0] <= fit["intercept"] <= fit["intercept_ci"][1], fit
        assert [lv["level"] for lv in sweep["levels"]] == [2, 8]

        workdir = hosts.workdir(session, "llm-1")
        assert _flags(workdir) == {"--ctx-size": "4096", "--parallel": "8", "--threads": "1"}
        code, said = hosts.run(session, "llm-1", "sh llamactl.sh stop")
        assert code == 0, said
    finally:
        for session in realsys.sessions(home):
            realsys.stop_server(hosts, session, "llm-1", "llamacpp")
        hosts.close()
        shutil.rmtree(home, ignore_errors=True)
