"""Verdicts that hold on noisy, drifting systems: rollback verification that tells drift from a broken
revert, noise-aware post-stress and equivalence judgments, confirmed hazards that make an option
unsafe, and a benchmark that is broken from the start stopping early.

The pure judgments are tested on synthetic drifting and noisy series; the same behaviour is then shown
end to end on simserve, made to drift (`init --drift-pct`) or to be noisy (`bench --noise`)."""

from __future__ import annotations

import random

import pytest

from agent.exec.verification import judge, settled
from agent.models import RollbackSpec
from tests.conftest import journal_events
from tests.e2e.test_evidence import ALLOW_ALL
from tools.abstats import BenchRun, analyse
from tools.noise import Noise, band, noise_of, successive_sd

SPEC = RollbackSpec()


def series(start: float, end: float, n: int, *, noise: float, seed: int) -> list[float]:
    r = random.Random(seed)
    return [(start + (end - start) * i / max(n - 1, 1)) * (1 + r.gauss(0, noise)) for i in range(n)]


# ------------------------------------------------------------------ the noise estimate


def test_successive_differences_see_the_noise_not_the_drift():
    # 30 % decay over 20 readings with 2 % noise: a plain SD is dominated by the drift, the successive one not.
    drifting = series(1000, 700, 20, noise=0.02, seed=1)
    plain = (sum((v / 850 - 1) ** 2 for v in drifting) / 19) ** 0.5 * 100
    sd, n = successive_sd([drifting])
    assert n == 20 and sd is not None
    assert plain > 8 and 1.0 < sd < 4.0


def test_a_thin_calibration_is_not_used_alone():
    spread = [100.0, 104.0, 97.0, 101.0, 103.0, 98.0]
    # Two A/A pairs that happened to agree closely (±0.5 % in one real run): the readings' spread wins.
    noise = noise_of({"sd_pct": 0.5, "pairs": 2}, spread)
    assert noise.source == "spread" and noise.runs == 6
    assert noise_of({"sd_pct": 3.0, "pairs": 6}, spread).source == "calibration"
    thin = noise_of({"sd_pct": 0.5, "pairs": 2})
    assert thin.thin and "only 2 pairs, a rough estimate" in thin.describe()


def test_the_band_has_a_floor_and_says_when_it_is_past_the_ceiling():
    quiet = band(Noise(sd_pct=0.1, runs=10, source="spread"), 3, 4, floor_pct=1.0, ceiling_pct=20.0)
    assert quiet.pct == 1.0 and not quiet.too_noisy and "(the floor)" in quiet.describe()
    # ±69 % from a 2-pair calibration: a revert that did nothing would pass such a band, so it verifies nothing.
    wild = band(Noise(sd_pct=40.0, runs=2, source="calibration"), 3, 4, floor_pct=1.0, ceiling_pct=20.0)
    assert wild.too_noisy


# ------------------------------------------------------------------ rollback judgment


def verdict(after, a, b, reference, *, state_ok=None, anchor=None):
    noise = noise_of(None, a, b, reference)
    return judge(
        after,
        a_series=a,
        b_series=b,
        reference=reference,
        anchor=anchor if anchor is not None else reference,
        noise=noise,
        spec=SPEC,
        higher_is_better=True,
        state_ok=state_ok,
    )


def test_a_rollback_on_a_drifting_machine_is_verified_with_the_drift_reported():
    # Redis as seen for real: the baseline arm went from ~20k to ~11k SET/s during the run.
    reference = series(20000, 19800, 3, noise=0.02, seed=2)
    a = series(19500, 11500, 8, noise=0.02, seed=3)
    b = [x * 1.8 for x in series(19400, 11400, 8, noise=0.02, seed=4)]
    after = series(11300, 11200, 3, noise=0.02, seed=5)
    v = verdict(after, a, b, reference)
    assert v["verified"] is True, v["detail"]
    assert v["drift_pct"] < -35 and "drifted" in v["detail"]


def test_a_revert_that_did_nothing_is_not_verified_with_or_without_a_check():
    reference = series(1000, 1000, 3, noise=0.02, seed=6)
    # The toggles did nothing, so both arms ran with the option on (+20 %): the A arm is corrupted.
    a = series(1200, 1200, 8, noise=0.02, seed=7)
    b = series(1200, 1200, 8, noise=0.02, seed=8)
    after = series(1200, 1200, 3, noise=0.02, seed=9)
    assert verdict(after, a, b, reference)["verified"] is False
    assert "started +" in verdict(after, a, b, reference)["detail"]
    assert verdict(after, a, b, reference, state_ok=False)["verified"] is False
    # A revert that undid the A arm but not the last toggle: the readings sit on the option's own arm.
    a_ok = series(1000, 1000, 8, noise=0.02, seed=10)
    v = verdict(after, a_ok, b, reference)
    assert v["verified"] is False and "option looks still in effect" in v["detail"]


def test_too_noisy_to_verify_by_the_metric_leaves_it_to_the_check():
    reference = series(1000, 1000, 3, noise=0.3, seed=11)
    a = series(1000, 1000, 6, noise=0.3, seed=12)
    b = series(1100, 1100, 6, noise=0.3, seed=13)
    after = series(1000, 1000, 3, noise=0.3, seed=14)
    assert verdict(after, a, b, reference)["too_noisy"] is True
    assert verdict(after, a, b, reference)["verified"] is False
    assert verdict(after, a, b, reference, state_ok=True)["verified"] is True


# ------------------------------------------------------------------ equivalence


def pairs_of(ratios, base=1000.0):
    runs = []
    for i, q in enumerate(ratios):
        runs += [
            BenchRun(pair=i, arm="A", value=base, valid=True),
            BenchRun(pair=i, arm="B", value=base * q, valid=True),
        ]
    return runs


def test_a_tightly_bounded_null_is_no_effect_and_says_so():
    r = analyse(pairs_of([1.002, 0.998, 1.001, 0.999, 1.0015, 0.9985, 1.0005, 0.9995]), metric="x")
    assert r.verdict == "no_effect" and r.equivalence_pct == 1.0
    assert any(x.startswith("no effect: the whole CI") for x in r.reasons)
    # τ defaults to the calibrated noise floor when that is wider than 1 %.
    wide = analyse(pairs_of([1.01, 0.99, 1.012, 0.988, 1.005, 0.995, 1.0, 1.0]), metric="x", noise_floor_pct=3.0)
    assert wide.equivalence_pct == 3.0 and wide.verdict == "no_effect"


def test_a_ci_too_wide_to_tell_says_how_many_pairs_it_would_take():
    r = analyse(pairs_of([1.05, 0.97, 1.06, 0.99, 1.04, 1.00]), metric="x")
    assert r.verdict == "inconclusive" and r.pairs_needed is not None and r.pairs_needed > 6
    assert any(f"about {r.pairs_needed} pairs would tell" in x for x in r.reasons)


def test_a_latency_guardrail_only_breaks_a_win_when_the_slowdown_is_measured():
    def runs(latency_ratios):
        out = []
        for i, q in enumerate(latency_ratios):
            out += [
                BenchRun(pair=i, arm="A", value=1000.0, valid=True, guardrails={"p99": 100.0}),
                BenchRun(pair=i, arm="B", value=1100.0 * (1 + 0.002 * i), valid=True, guardrails={"p99": 100.0 * q}),
            ]
        return out

    noisy = analyse(runs([1.10, 0.92, 1.08, 0.95, 1.07, 0.94]), metric="x", guardrail_pct=5.0)
    assert noisy.verdict == "improved" and any("cannot be ruled out" in x for x in noisy.reasons)
    slower = analyse(runs([1.12, 1.11, 1.13, 1.12, 1.10, 1.125]), metric="x", guardrail_pct=5.0)
    assert slower.verdict == "inconclusive" and any("guardrail breached" in x for x in slower.reasons)


# ------------------------------------------------------------------ end to end on simserve

ONE = """\
name: one-option
goal: {text: one option on a simulated server}
hosts: [{name: h1, roles: [server]}]
vars: {simserve: "{{python}} {{campaign_dir}}/simserve.py"}
baseline:
  setup: ["{{simserve}} init --seed %(seed)d %(init)s"]
  health: ["{{simserve}} health"]
benchmark:
  run: "%(bench)s"
  on: h1
  num_prompts: 900
  pairs: 6
  max_pairs: 8
  timeout: 20
  post_stress_runs: %(post)d
stress: [{name: bursts, run: "{{simserve}} stress idle-busy-bursts --wall 0 %(stress)s", on: h1, timeout: 5}]
rollback: {verify_runs: 3, settle_wait_s: 0%(rollback)s}
options:
  - id: 2
    title: kernel occupancy
    apply: ["{{simserve}} apply moe-occupancy"]
    revert: ["%(revert)s"]
%(check)s%(probes)s"""
BENCH = "{{simserve}} bench --wall 0 --noise %(noise)s"
CHECK = '    check: "{{simserve}} check moe-occupancy"\n'


def one(
    *,
    seed: int = 3,
    init: str = "",
    noise: float = 0.02,
    post: int = 0,
    revert: str = "{{simserve}} revert moe-occupancy",
    check: bool = True,
    probes: str = "",
    bench: str | None = None,
    stress: str = "",
    rollback: str = "",
) -> str:
    return ONE % {
        "stress": stress,
        "rollback": rollback,
        "seed": seed,
        "init": init,
        "bench": bench or BENCH % {"noise": noise},
        "post": post,
        "revert": revert,
        "check": CHECK if check else "",
        "probes": probes,
    }


SKIP_ALL = ALLOW_ALL.replace(
    """      - {id: keep, when: 'verdict == "safe" && ab_verdict == "improved"', decide: continue}""",
    """      - {id: roll-back-everything, decide: skip, then: rollback}""",
)


def test_every_rollback_on_a_machine_drifting_30_percent_is_verified_with_the_drift(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(SKIP_ALL % "")
    campaign = variant(one(init="--drift-pct -30 --drift-calls 30"), name="drift")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    events = journal_events(r.json()["journal"])
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is True, rollback["detail"]
    assert rollback["state_ok"] is True and rollback["drift_pct"] < -10
    assert "check says not in effect on h1" in rollback["detail"] and "drifted" in rollback["detail"]
    checks = [e for e in events if e["kind"] == "command.started" and e["purpose"] == "check:rollback"]
    assert len(checks) == 1 and "check moe-occupancy" in checks[0]["command"]


@pytest.mark.parametrize("with_check", [True, False], ids=["with-check", "without-check"])
def test_a_revert_that_does_nothing_still_opens_the_critical_gate(cli, variant, tmp_path, with_check):
    policy = tmp_path / "p.yaml"
    policy.write_text(SKIP_ALL % "")
    campaign = variant(one(revert="{{simserve}} show", check=with_check), name="noop")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "rollback" and gate["question"].startswith("**CRITICAL**")
    assert gate["facts"]["verified"] is False
    assert gate["facts"]["state_checked"] is with_check and gate["facts"]["state_ok"] is not with_check
    # The question shows the revert as it will run, not its template.
    assert "{{" not in gate["question"] and "simserve.py show` on h1" in gate["question"]


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_post_stress_noise_is_not_called_a_degradation(cli, variant, tmp_path, seed):
    # 8 % run-to-run noise and two post-stress runs: a fixed ±5 % threw safe wins away here.
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    campaign = variant(one(seed=seed, noise=0.08, post=2), name=f"noisy{seed}")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code in (0, 3), r.stderr
    events = journal_events(r.json()["journal"])
    (post,) = [e for e in events if e["kind"] == "stress.result" and e["scenario"] == "post-stress benchmark"]
    assert post["outcome"] == "ok", post["evidence"]
    assert "band ±" in post["evidence"]
    runs = [e for e in events if e["kind"] == "bench.run" and e["purpose"] == "post-stress"]
    assert len(runs) >= 2


HAZARD_PROBE = """\
    probes:
      - name: barrier in the kernel path
        run: grep -c tp_barrier src/decoder.py
        on: h1
        on_fail: hazard
        message: the occupancy path skips the barrier
"""


def test_a_confirmed_hazard_makes_the_option_unsafe_though_stress_is_clean(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    campaign = variant(one(probes=HAZARD_PROBE), name="hazard")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    (option,) = out["options"]
    assert option["verdict"] == "unsafe" and option["outcome"] == "skipped"
    assert any("structural hazard, not reproduced by stress" in x for x in option["reasons"])
    events = journal_events(out["journal"])
    (assessment,) = [e for e in events if e["kind"] == "assessment"]
    assert assessment["hazard_reproduced"] is False and assessment["ab_verdict"] == "improved"
    (gate,) = [g for g in out["gates"] if g["kind"] == "safety"]
    assert gate["by"] == "policy:skip-unsafe"
    assert next(e for e in events if e["kind"] == "rollback")["verified"] is True


def test_the_seed_phrase_skips_the_hazardous_option_and_keeping_it_needs_confirmation(cli, variant):
    campaign = variant(one(probes=HAZARD_PROBE), name="hazard-ask")
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json")
    session = r.json()["session"]
    while r.json()["pending_gate"]["kind"] != "safety":
        r = cli("decide", session, "continue", "--json")
        assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["facts"]["verdict"] == "unsafe" and gate["facts"]["hazard_reproduced"] is False
    r = cli("decide", session, "keep it", "--json")
    assert r.code == 2 and "keep-an-unsafe-option decision needs confirmation" in r.stderr
    r = cli("decide", session, "Skip #2 for now if it's unsafe", "--json")
    assert r.code in (0, 3), r.stderr
    (option,) = r.json()["options"]
    assert option["outcome"] == "deferred" and option["verdict"] == "unsafe"


def test_keeping_an_unsafe_option_with_confirmation_keeps_it(cli, variant):
    campaign = variant(one(probes=HAZARD_PROBE), name="hazard-keep")
    r = cli("run", str(campaign), "--policy", "ask-everything", "--headless", "--json")
    session = r.json()["session"]
    while r.json()["pending_gate"]["kind"] != "safety":
        r = cli("decide", session, "continue", "--json")
    r = cli("decide", session, "keep it", "--yes", "--json")
    assert r.code in (0, 3), r.stderr
    assert r.json()["options"][0]["outcome"] == "kept"


def test_a_benchmark_broken_on_both_arms_stops_after_two_pairs(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    campaign = variant(one(bench="echo no server here >&2; exit 7"), name="broken")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    out = r.json()
    gate = out["pending_gate"]
    assert gate["kind"] == "safety" and gate["facts"]["measurement_broken"] is True
    assert gate["facts"]["verdict"] == "unknown" and "measurement broken" in gate["question"]
    events = journal_events(out["journal"])
    assert len([e for e in events if e["kind"] == "bench.run" and e["purpose"] == "ab"]) == 4
    assert not [e for e in events if e["kind"] in ("bench.extended", "stress.result")]


ASKED_PROBE = """\
    probes:
      - name: source file
        run: grep -c tp_barrier $(basename src/scheduler.py | sed s,^,src/,)
        on: h1
        on_fail: hazard
"""
ASKING = """\
version: 1
name: asks-about-substitutions
commands: {allow: ["python* *simserve.py *", "/**/python* *simserve.py *", "grep *"]}
gates:
  plan: {rules: [{id: plan-ok, decide: approve}]}
  triage: {rules: [{id: go, decide: continue}]}
  command: {rules: [{id: ask, decide: ask}]}
"""


def test_a_probe_the_policy_asks_about_opens_the_command_gate(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(ASKING)
    campaign = variant(one(probes=ASKED_PROBE), name="asked-probe")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "command" and "basename src/scheduler.py" in gate["question"]
    events = journal_events(r.json()["journal"])
    assert any(e["kind"] == "permission.requested" and "probe 'source file'" in e["why"] for e in events)
    assert not [e for e in events if e["kind"] == "command.started" and e["purpose"].startswith("probe:")]
    r = cli("decide", r.json()["session"], "approve", "--json")
    events = journal_events(r.json()["journal"])
    probes = [e for e in events if e["kind"] == "command.started" and e["purpose"] == "probe:source file"]
    assert len(probes) == 1
    finding = [e for e in events if e["kind"] == "finding"][-1]
    assert any("grep -c tp_barrier" in x and "exit 0" in x for x in finding["sources"])


def test_readings_off_even_a_too_wide_band_verify_only_when_faster_and_checked():
    reference = series(1000, 1000, 3, noise=0.3, seed=11)
    a = series(1000, 1000, 6, noise=0.3, seed=12)
    b = series(1100, 1100, 6, noise=0.3, seed=13)
    slower = series(150, 150, 3, noise=0.01, seed=15)
    faster = series(4000, 4000, 3, noise=0.01, seed=16)
    # Slower than the baseline by more than even a wide band: damage left behind, whatever the check says.
    v = verdict(slower, a, b, reference, state_ok=True)
    assert v["too_noisy"] is True and v["verified"] is False
    # Faster (PostgreSQL warming up over the run): with the check saying the option is off, that is the machine.
    v = verdict(faster, a, b, reference, state_ok=True)
    assert v["verified"] is True and "the machine, not the option" in v["detail"]
    assert verdict(faster, a, b, reference)["verified"] is False


def test_as_fast_as_the_option_with_the_check_saying_off_is_the_machine_getting_faster():
    # Redis in CI: appendfsync always → everysec read +190 %; after the revert the disk went quiet and
    # the baseline read as fast as the option had. The check says `always` is back.
    reference = series(10000, 10000, 3, noise=0.05, seed=25)
    a = series(13000, 13000, 8, noise=0.05, seed=26)
    b = series(38000, 38000, 8, noise=0.05, seed=27)
    after = series(38500, 38500, 3, noise=0.05, seed=28)
    v = verdict(after, a, b, reference, state_ok=True)
    assert v["verified"] is True and "only the check tells them apart" in v["detail"]
    # Without the check's word, the same readings are an option still in effect.
    v = verdict(after, a, b, reference)
    assert v["verified"] is False and "option looks still in effect" in v["detail"]
    # An option that made things slower, still read after the revert: slower than the baseline is never excused.
    slow_b = series(6000, 6000, 8, noise=0.05, seed=29)
    v = verdict(series(6000, 6000, 3, noise=0.05, seed=30), a, slow_b, reference, state_ok=True)
    assert v["verified"] is False


def test_slower_than_the_recent_arm_is_not_excused_by_being_faster_than_an_old_baseline():
    # The baseline state itself read 1000 just before the option and in its A arm: after the revert, 800 is
    # slower than every level it had, whatever the check says. (An old, slower setup baseline excuses nothing.)
    reference = series(1000, 1000, 3, noise=0.02, seed=17)
    a = series(1000, 1000, 8, noise=0.02, seed=18)
    b = series(1100, 1100, 8, noise=0.02, seed=19)
    after = series(800, 800, 3, noise=0.02, seed=20)
    assert (
        verdict(after, a, b, series(500, 500, 3, noise=0.02, seed=17), anchor=reference, state_ok=True)["verified"]
        is False
    )
    assert verdict(after, a, b, reference, state_ok=True)["verified"] is False


def test_a_revert_inside_the_swing_the_baseline_showed_in_this_run_is_left_to_the_check():
    # PostgreSQL over SSH in CI, beside a kill -9 test on the other core (journaled numbers): the baseline
    # read 2019.5 at setup, 1588 before shared_buffers = 256MB, 2545 in its A arm, then 788 and 1339 after
    # the revert that restarted the server, with the check saying 256MB was gone.
    reference = series(2019.5, 2019.5, 3, noise=0.06, seed=31)
    anchor = series(1588, 1588, 3, noise=0.06, seed=32)
    a = series(2545, 2545, 8, noise=0.06, seed=33)
    b = [x * 0.96 for x in series(2545, 2545, 8, noise=0.06, seed=34)]
    after = [790.0, 780.0, 795.0, 770.0, 800.0, 796.0, 1330.0, 1345.0, 1341.0]

    def window(values, state_ok=True):
        return verdict(values, a, b, reference, anchor=anchor, state_ok=state_ok)

    v = settled(after, window, 3)
    assert v["verified"] is True, v["detail"]
    assert v["baseline_swing_pct"] > 50 and v["performance_ok"] is None
    assert "cannot tell a revert from the machine" in v["detail"]
    # The first window (788) is off even that swing: it takes the settling to get there.
    assert window(after[:3])["verified"] is False
    # Without a check to say the option is off, the metric cannot verify it either.
    assert settled(after, lambda w: window(w, state_ok=None), 3)["verified"] is False
    # A server that is down to a third of anything this run ever read is damage, check or not.
    assert window([300.0, 310.0, 305.0])["verified"] is False


# ------------------------------------------------------------------ a server settling after the revert


def test_readings_that_settle_are_judged_on_the_latest_window_and_say_what_the_first_read():
    reference = series(1000, 1000, 3, noise=0.02, seed=21)
    a = series(1000, 1000, 8, noise=0.02, seed=22)
    b = series(1200, 1200, 8, noise=0.02, seed=23)
    cold_then_warm = [600.0, 700.0, 800.0, *series(1000, 1000, 3, noise=0.02, seed=24)]

    def window(values):
        return verdict(values, a, b, reference, state_ok=True)

    assert window(cold_then_warm[:3])["verified"] is False
    v = settled(cold_then_warm, window, 3)
    assert v["verified"] is True and v["settle"]["discarded"] == 3 and v["settle"]["early_pct"] < -20
    assert "judged on the latest 3 of 6 runs" in v["detail"] and "settling after the revert" in v["detail"]
    # Still slow in the latest window: not verified, and it says how long it waited.
    v = settled([600.0, 610.0, 590.0, 605.0, 600.0], window, 3)
    assert v["verified"] is False and v["detail"].count("still off after 5 runs") == 1
    # No more readings than the window: the plain verdict, unchanged.
    assert settled(cold_then_warm[3:], window, 3) == window(cold_then_warm[3:])


def test_settling_pauses_double_from_one_run_up_to_the_cap():
    from agent.nodes.rollback import settle_pause

    assert [settle_pause(k, 1.1, 10.0) for k in range(6)] == [1.1, 2.2, 4.4, 8.8, 10.0, 10.0]
    assert settle_pause(0, 0.0, 10.0) == 0.1 and settle_pause(3, 5.0, 0.0) == 0.0


def verify_runs(events):
    return [e for e in events if e["kind"] == "bench.run" and e["purpose"] == "verify"]


def test_a_server_slow_for_a_while_after_the_stress_is_verified_once_it_settles(cli, variant, tmp_path):
    # What PostgreSQL did in CI: after kill -9 stress runs and a restarting revert the first readings were
    # 30-40 % slow, then came back. The rollback waits for it instead of calling it CRITICAL.
    policy = tmp_path / "p.yaml"
    policy.write_text(SKIP_ALL % "")
    campaign = variant(one(stress="--slow-after 4 --slow-pct 60"), name="settle")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stdout + r.stderr
    events = journal_events(r.json()["journal"])
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is True, rollback["detail"]
    assert rollback["settle"]["discarded"] >= 1 and rollback["settle"]["early_pct"] < -10
    assert "settling after the revert" in rollback["detail"]
    (settling,) = [e for e in events if e["kind"] == "rollback.settling"]
    assert settling["runs"] == 3 and settling["up_to"] == 9
    assert 3 < len(verify_runs(events)) == rollback["settle"]["runs"] <= 9


def test_without_settle_runs_the_same_slow_readings_are_told_from_the_revert_by_pairing(cli, variant, tmp_path):
    # No settling: the three slow readings alone would open the critical gate. The aftermath slows every run,
    # though, so the option applied again between reverted runs gives the A/B's ratio back: the revert did its job.
    policy = tmp_path / "p.yaml"
    policy.write_text(SKIP_ALL % "")
    campaign = variant(one(stress="--slow-after 4 --slow-pct 60", rollback=", settle_runs: 0"), name="nosettle")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    events = journal_events(r.json()["journal"])
    assert len(verify_runs(events)) == 3 and not [e for e in events if e["kind"] == "rollback.settling"]
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is True and rollback["paired_pairs"] == 3, rollback["detail"]
    assert "paired after the revert" in rollback["detail"]
    assert len([e for e in events if e["kind"] == "bench.run" and e["purpose"] == "verify-paired"]) == 6


def test_a_revert_that_does_nothing_stays_critical_after_settling_and_says_how_long_it_waited(cli, variant, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text(SKIP_ALL % "")
    campaign = variant(one(revert="{{simserve}} show", check=False), name="noop-settle")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    events = journal_events(r.json()["journal"])
    assert len(verify_runs(events)) == 9
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is False and "still off after 9 runs" in rollback["detail"]
    assert "up to 6 more if the first are off" in r.json()["pending_gate"]["question"]
