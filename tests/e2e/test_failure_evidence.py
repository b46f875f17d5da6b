"""Failed requests judged as evidence, and a hazard reproduced only by its own signal (issue 33), end to end on
simserve: its benchmark fails requests with a client error (`bench --fail N --fail-if FEATURE --fail-runs K`).

On a real llama-server one client stream-parse error out of 80 requests made `--no-cont-batching` unsafe, and
the same flake made `--parallel 32` "hazard reproduced"; on MariaDB a neighbour's load slowing the post-stress
check did the same (issue 34)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import journal_events
from tests.e2e.test_evidence import ALLOW_ALL

STREAM_ERROR = "stream parse error: Expecting ',' delimiter"

CAMPAIGN = """\
name: failure-evidence
goal: {text: one option on a simulated server}
hosts: [{name: h1, roles: [server]}]
vars: {simserve: "{{python}} {{campaign_dir}}/simserve.py"}
baseline:
  setup: ["{{simserve}} init --seed 3"]
  health: ["{{simserve}} health"]
benchmark:
  run: "{{simserve}} bench --wall 0 --noise 0.02 --num-prompts {{num_prompts}} %(fail)s"
  on: h1
  num_prompts: 80
  pairs: 6
  max_pairs: 8
  timeout: 20
  post_stress_runs: %(post)d
stress:
  - name: bursts
    run: "{{simserve}} stress idle-busy-bursts --wall 0 --burst-drain-s 0 %(bursts)s"
    on: h1
    timeout: 5
  - {name: aborts, run: "{{simserve}} stress abort-cascade --wall 0 --wedge-rate %(wedge)s", on: h1, timeout: 2}
rollback: {verify_runs: 3, settle_wait_s: 0}
options:
  - id: 2
    title: %(feature)s
    apply: ["{{simserve}} apply %(feature)s"]
    revert: ["{{simserve}} revert %(feature)s"]
    check: "{{simserve}} check %(feature)s"
%(probes)s"""

HAZARD = """\
    probes:
      - name: TP barrier in the overlap path
        run: grep -n -A4 "class OverlapScheduler" src/scheduler.py
        on: h1
        expect: {exit: 0, stdout_contains: tp_barrier}
        on_fail: hazard
        message: the overlap scheduler launches the next batch without the TP barrier
%s"""
DECLARED = "        reproduced_by: [aborts]\n"


def campaign(
    *,
    feature: str = "moe-occupancy",
    fail: str = "",
    bursts: str = "",
    wedge: float = 0.0,
    post: int = 0,
    probes: str = "",
) -> str:
    return CAMPAIGN % {
        "feature": feature,
        "fail": fail,
        "bursts": bursts,
        "wedge": wedge,
        "post": post,
        "probes": probes,
    }


def run(cli, variant, tmp_path, text: str, name: str) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    r = cli("run", str(variant(text, name=name)), "--policy", str(policy), "--json")
    assert r.code in (0, 3), r.stdout + r.stderr
    out = r.json()
    return r, out, journal_events(out["journal"])


def only(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["kind"] == kind]
    return event


def safety_facts(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["kind"] == "gate.opened" and e["gate_kind"] == "safety")["facts"]


# ------------------------------------------------------------------ failed requests


def test_one_failed_request_in_eighty_is_a_fact_shown_not_an_unsafe_verdict(cli, variant, tmp_path):
    fail = "--fail 1 --fail-if moe-occupancy --fail-runs 1"  # the option's first run: 1 of its 80 requests
    r, out, events = run(cli, variant, tmp_path, campaign(fail=fail), "one-flake")
    assert r.code == 0, r.stderr
    (option,) = out["options"]
    assert option["outcome"] == "kept" and option["verdict"] == "safe", option["reasons"]
    flaky = [e for e in events if e["kind"] == "bench.run" and e.get("failed_requests")]
    assert len(flaky) == 1 and flaky[0]["arm"] == "B" and flaky[0]["valid"] is True  # still an A/B data point
    assert flaky[0]["requests"] == 80 and STREAM_ERROR in flaky[0]["errors"][0]

    assessment = only(events, "assessment")
    assert assessment["verdict"] == "safe" and assessment["hazard_reproduced"] is False
    test = assessment["request_failures"]
    assert test["option"]["failed"] == 1 and test["baseline"]["failed"] == 0 and test["higher"] is False
    attempted_b, attempted_a = test["option"]["attempted"], test["baseline"]["attempted"]
    # Every run the A/B took, in each arm (a sequential A/B: at least its first look's 3 pairs).
    assert attempted_b == 80 * test["option"]["runs"] and attempted_a == 80 * test["baseline"]["runs"] >= 80 * 3
    said = f"failed requests: 1 of {attempted_b} with the option, 0 of {attempted_a} on the baseline"
    (reason,) = [x for x in assessment["reasons"] if x.startswith("failed requests: ")]
    assert reason.startswith(said) and "not credibly more than the baseline at the 0.05 level" in reason
    assert STREAM_ERROR in reason

    assert reason in option["reasons"]  # the report shows the fact, with its error text, though it decided nothing
    assert option["evidence"]["ab"]["requests"]["B"]["failed"] == 1
    facts = safety_facts(events)
    assert facts["requests_failed"] == 1 and facts["requests_failed_baseline"] == 0
    assert facts["request_failures_higher"] is False and facts["failed_requests"] == 0


def test_a_failure_rate_credibly_above_the_baselines_makes_the_option_unsafe(cli, variant, tmp_path):
    fail = "--fail 20 --fail-if moe-occupancy"  # every run of the option: 20 of its 80 requests
    _, out, events = run(cli, variant, tmp_path, campaign(fail=fail), "many-failures")
    assessment = only(events, "assessment")
    assert assessment["verdict"] == "unsafe" and assessment["failed_requests"] == 0  # every run was readable
    test = assessment["request_failures"]
    assert test["higher"] is True and test["p"] < 1e-10
    runs_b, attempted_b, attempted_a = (
        test["option"]["runs"],
        test["option"]["attempted"],
        test["baseline"]["attempted"],
    )
    assert test["option"]["failed"] == 20 * runs_b and test["baseline"]["failed"] == 0
    (reason,) = [x for x in assessment["reasons"] if x.startswith("failed requests: ")]
    said = f"failed requests: {20 * runs_b} of {attempted_b} with the option, 0 of {attempted_a} on the baseline"
    assert reason.startswith(said), reason
    p = re.search(r"one-sided Fisher exact p=(\S+)\)", reason)
    assert p is not None and float(p.group(1)) == pytest.approx(test["p"], rel=0.05)
    assert "credibly more than the baseline at the 0.05 level" in reason and STREAM_ERROR in reason
    (option,) = out["options"]
    assert option["outcome"] == "skipped" and reason in option["reasons"]
    assert safety_facts(events)["request_failures_higher"] is True
    assert assessment["hazard_reproduced"] is False


# ------------------------------------------------------------------ a hazard reproduced by its own signal

SLOW = "--slow-after 4 --slow-pct 60 --slow-if overlap-scheduler"


@pytest.mark.parametrize(
    ("declared", "bursts", "fail", "post", "unrelated"),
    [
        (True, "--crash", "--fail 1 --fail-if overlap-scheduler --fail-runs 1", 0, "stress bursts: CRASH in 1 of 1"),
        (False, "--crash", "", 0, "stress bursts: CRASH in 1 of 1"),
        # The option's own state left slow by the stress (a neighbour's load is not that: tests/e2e/test_neighbour.py).
        (True, SLOW, "", 2, "stress post-stress benchmark: DEGRADED"),
        (False, SLOW, "", 2, "stress post-stress benchmark: DEGRADED"),  # issue 34's
    ],
    ids=["declared-crash-and-flake", "undeclared-crash", "declared-slow-post-stress", "undeclared-slow-post-stress"],
)
def test_an_unrelated_failure_is_no_reproduction_of_the_hazard(
    cli, variant, tmp_path, declared, bursts, fail, post, unrelated
):
    probes = HAZARD % (DECLARED if declared else "")
    text = campaign(feature="overlap-scheduler", probes=probes, bursts=bursts, fail=fail, post=post)
    _, _, events = run(cli, variant, tmp_path, text, "unrelated")
    assessment = only(events, "assessment")
    assert assessment["verdict"] == "unsafe" and assessment["hazard_reproduced"] is False
    reasons = assessment["reasons"]
    assert any(x.startswith(unrelated) for x in reasons), reasons  # unsafe for its own reason, named
    (structural,) = [x for x in reasons if x.startswith("structural hazard, not reproduced by stress")]
    assert ("aborts showed no bad outcome" if declared else "no stress scenario is declared") in structural
    assert not [x for x in reasons if x.startswith("hazard reproduced")]
    assert safety_facts(events)["hazard_reproduced"] is False


def test_the_hazards_own_scenario_wedging_reproduces_it(cli, variant, tmp_path):
    probes = HAZARD % DECLARED
    _, _, events = run(cli, variant, tmp_path, campaign(feature="overlap-scheduler", probes=probes, wedge=1), "own")
    assessment = only(events, "assessment")
    assert assessment["verdict"] == "unsafe" and assessment["hazard_reproduced"] is True
    assert assessment["wedges"] == 1
    assert (
        "hazard reproduced by its own stress scenario: TP barrier in the overlap path — stress aborts: WEDGE in 1 of 1 "
        "runs"
    ) in assessment["reasons"]
    assert not [x for x in assessment["reasons"] if x.startswith("structural hazard")]
    assert safety_facts(events)["hazard_reproduced"] is True


@pytest.mark.parametrize(
    ("reproduced_by", "on_fail", "said"),
    [
        ("[aborts, no-such-scenario]", "hazard", "reproduced_by[1]: 'no-such-scenario' is not a stress scenario; the "
         "scenarios: 'bursts', 'aborts'"),
        ("[aborts]", "blocker", "reproduced_by: names the stress scenarios that make a hazard happen, and this probe "
         "is a blocker: use it with `on_fail: hazard`"),
    ],
    ids=["unknown-scenario", "on-a-blocker"],
)  # fmt: skip
def test_a_reproduced_by_that_names_no_scenario_is_refused_at_its_line(cli, variant, reproduced_by, on_fail, said):
    probes = HAZARD.replace("on_fail: hazard", f"on_fail: {on_fail}") % f"        reproduced_by: {reproduced_by}\n"
    path = variant(campaign(feature="overlap-scheduler", probes=probes), name="bad-link")
    r = cli("run", str(path))
    assert r.code == 2
    line = next(i for i, x in enumerate(path.read_text().splitlines(), 1) if "reproduced_by" in x)
    assert r.stderr.strip() == f"signoff: {path}:{line}: options[0].probes[0].{said}", r.stderr
