"""A neighbour's load on a shared machine is not evidence about an option (issue 34, point 4), end to end on
simserve slowed for a window of calls (`init --neighbour-pct/--neighbour-from/--neighbour-calls`, `stress
--neighbour-runs`): every run slower, whichever option is on.

On MariaDB a neighbour's load made an option "degraded" after its stress tests (compared with readings from
minutes earlier) and that slowdown counted as its hazard reproduced; one noisy A/A calibration made every
post-stress check run 10 runs and end "not judged" and every rollback rest on its state check alone."""

from __future__ import annotations

from typing import Any

from tests.conftest import journal_events
from tests.e2e.test_evidence import ALLOW_ALL
from tests.e2e.test_noisy_verdicts import HAZARD_PROBE, SKIP_ALL, one

HAZARD = HAZARD_PROBE + "        reproduced_by: [bursts]\n"  # the hazard's own scenario


def session(cli, variant, tmp_path, text: str, name: str, policy: str = ALLOW_ALL) -> tuple[Any, list[dict]]:
    path = tmp_path / "p.yaml"
    path.write_text(policy % "")
    r = cli("run", str(variant(text, name=name)), "--policy", str(path), "--json")
    assert r.code in (0, 3), r.stdout + r.stderr
    return r, journal_events(r.json()["journal"])


def post_stress(events: list[dict]) -> dict:
    (post,) = [e for e in events if e["kind"] == "stress.result" and e["scenario"] == "post-stress benchmark"]
    return post


def test_a_neighbour_during_the_post_stress_check_is_the_machine_not_the_options_degradation(cli, variant, tmp_path):
    # The neighbour arrives with the stress and stays through the check: 40 % slower in both arms.
    text = one(post=2, stress="--neighbour-runs 30 --neighbour-pct 40", probes=HAZARD)
    _, events = session(cli, variant, tmp_path, text, "neighbour-post")
    post = post_stress(events)
    assert post["outcome"] == "ok", post["evidence"]
    assert post["machine_pct"] < -20 and "the whole machine is slower with the option on and off" in post["evidence"]
    assert "a neighbour's load, or damage the revert does not undo" in post["evidence"]
    assert abs(post["change_pct"]) < 8  # the option kept its ground beside the baseline arm
    # Interleaved: B first (as the stress left it), then A, A, B; toggled by the option's own commands, ending on B.
    runs = [e for e in events if e["kind"] == "bench.run" and e["purpose"] == "post-stress"]
    assert [r["arm"] for r in runs] == ["B", "A", "A", "B"] and post["pairs"] == 2
    started = [e for e in events if e["kind"] == "command.started"]
    after = started[next(i for i, e in enumerate(started) if e["purpose"] == "stress:bursts") :]
    toggles = [e["command"].split()[-2] for e in after if e["purpose"] == "toggle"]
    assert toggles[:2] == ["revert", "apply"]
    # Hazard reproduced only by its own signal: its scenario ran clean, and a slowdown is none.
    (assessment,) = [e for e in events if e["kind"] == "assessment"]
    assert assessment["hazard_reproduced"] is False
    assert not [x for x in assessment["reasons"] if "DEGRADED" in x or x.startswith("hazard reproduced")]
    (structural,) = [x for x in assessment["reasons"] if x.startswith("structural hazard, not reproduced by stress")]
    assert "bursts showed no bad outcome" in structural
    assert any("the whole machine is slower" in x for x in assessment["reasons"])


def test_a_neighbour_after_the_stress_makes_a_clean_option_unknown_not_unsafe(cli, variant, tmp_path):
    r, events = session(cli, variant, tmp_path, one(post=2, stress="--neighbour-runs 30 --neighbour-pct 40"), "nb")
    (assessment,) = [e for e in events if e["kind"] == "assessment"]
    # Neither the option's degradation nor an acquittal: both arms slower is a neighbour or damage a revert does not
    # undo, which a person (or a policy's rule for `unknown`) decides.
    assert assessment["verdict"] == "unknown" and assessment["ab_verdict"] == "improved", assessment["reasons"]
    assert r.json()["pending_gate"]["kind"] == "safety"


def test_the_options_own_loss_after_the_stress_is_still_degraded(cli, variant, tmp_path):
    # The stress leaves the option's own state slow (its revert undoes it): the baseline arm beside it is not.
    text = one(post=2, stress="--slow-after 8 --slow-pct 60 --slow-if moe-occupancy")
    _, events = session(cli, variant, tmp_path, text, "own-loss")
    post = post_stress(events)
    assert post["outcome"] == "degraded" and post["evidence"].startswith("the option lost ground"), post["evidence"]
    assert post["change_pct"] < -15 and "machine" not in post


CALIBRATED = "  calibrate_pairs: 4\n  post_stress_runs:"


def test_a_neighbour_during_the_calibration_does_not_blind_every_later_check(cli, variant, tmp_path):
    # The neighbour's load for one call, the B run of the first A/A pair: a ±20 %-and-more calibration, while the
    # A/B's pairs spread about 2 %.
    text = one(post=2, init="--neighbour-pct 60 --neighbour-from 2 --neighbour-calls 1")
    text = text.replace("  post_stress_runs:", CALIBRATED)
    _, events = session(cli, variant, tmp_path, text, "calibration", policy=SKIP_ALL)
    (cal,) = [e for e in events if e["kind"] == "calibration"]
    assert cal["sd_pct"] > 20
    post = post_stress(events)
    assert not post["evidence"].startswith("not judged"), post["evidence"]
    assert post["outcome"] == "ok" and "the A/A calibration's" in post["evidence"] and "F test" in post["evidence"]
    runs = [e for e in events if e["kind"] == "bench.run" and e["purpose"] == "post-stress"]
    assert len(runs) == 4  # the configured 2 pairs were enough
    (ab,) = [e for e in events if e["kind"] == "ab.result"]
    assert any(x.startswith("equivalence margin") and "own pairs" in x for x in ab["reasons"]), ab["reasons"]
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    # Judged by the metric, not by the state check alone.
    assert rollback["verified"] is True and rollback["performance_ok"] is True, rollback["detail"]
    assert rollback["too_noisy"] is False and rollback["noise"]["overruled"].startswith("the A/A calibration's")


def test_a_neighbour_during_the_rollback_does_not_make_a_good_revert_unverified(cli, variant, tmp_path):
    # The neighbour arrives with the stress and outlasts the verification and every settling run.
    text = one(stress="--neighbour-runs 60 --neighbour-pct 40")
    r, events = session(cli, variant, tmp_path, text, "rollback", policy=SKIP_ALL)
    assert r.code == 0, r.stderr
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is True and rollback["state_ok"] is True, rollback["detail"]
    assert rollback["delta_pct"] < -20 and rollback["machine_pct"] < -20
    assert "both arms moved together: the machine" in rollback["detail"]
    paired = [e for e in events if e["kind"] == "bench.run" and e["purpose"] == "verify-paired"]
    assert [p["arm"] for p in paired] == ["A", "B", "B", "A", "A", "B"]
    # It ends reverted, and the option's check says so after the last revert.
    started = [e for e in events if e["kind"] == "command.started"]
    last_toggle = max(i for i, e in enumerate(started) if e["purpose"] == "toggle")
    assert "revert moe-occupancy" in started[last_toggle]["command"]
    assert any(e["purpose"] == "check:rollback" for e in started[last_toggle:])


def test_a_revert_that_does_nothing_is_not_verified_by_the_paired_check(cli, variant, tmp_path):
    # The same neighbour, and a revert that does nothing and has no check: the arms' ratio is gone.
    text = one(stress="--neighbour-runs 60 --neighbour-pct 40", revert="{{simserve}} show", check=False)
    r, events = session(cli, variant, tmp_path, text, "noop", policy=SKIP_ALL)
    assert r.code == 3, r.stderr
    (rollback,) = [e for e in events if e["kind"] == "rollback"]
    assert rollback["verified"] is False
    # The paired readings cannot vouch for it (the option's own effect is below what they resolve), and without a
    # `check` nothing else can.
    assert "the ratio cannot tell" in rollback["detail"] and rollback["state_ok"] is None
