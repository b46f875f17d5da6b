"""M4 (issue 19): a benchmark whose output lacks a guardrail metric the campaign names. Before, a pair
with the metric beside a pair without it raised KeyError inside the statistics; now the run that lacks it
is not a data point (its reason says which metric), and the campaign goes on to an honest verdict."""

from __future__ import annotations

from tests.conftest import journal_events
from tools.abstats import BenchRun, analyse


def test_pairs_that_lack_a_guardrail_do_not_break_the_statistics():
    runs = []
    for i, (a, b) in enumerate(zip([100, 101, 99, 100, 102, 98], [110, 111, 109, 112, 110, 108], strict=True)):
        guard = {"p99_tpot": 30.0} if i % 2 == 0 else {}  # the metric only in every other pair
        runs += [BenchRun(pair=i, arm="A", value=a, valid=True, guardrails=guard)]
        runs += [BenchRun(pair=i, arm="B", value=b, valid=True, guardrails=dict(guard))]
    runs[1].guardrails = {}  # and once only in one arm of a pair
    result = analyse(runs, metric="output_tok_s")
    assert result.verdict == "improved"


def test_a_campaign_whose_benchmark_lacks_a_guardrail_runs_to_an_honest_end(cli, variant):
    # simserve reports p99_tpot but no p95_tpot.
    campaign = variant(edit=lambda t: t.replace("guardrails: [p99_tpot]", "guardrails: [p99_tpot, p95_tpot]"))
    r = cli("run", str(campaign), "--json")
    assert "Traceback" not in r.stderr and "KeyError" not in r.stderr, r.stderr[-2000:]
    assert r.code in (0, 1, 3), r.stderr[-2000:]
    runs = [e for e in journal_events(r.json()["journal"]) if e["kind"] == "bench.run"]
    assert runs and all(not e["valid"] for e in runs)
    assert all("no guardrail metric p95_tpot" in (e.get("reason") or "") for e in runs)
    assert not any(o.get("verdict") == "improved" for o in r.json().get("options", []) if isinstance(o, dict))
