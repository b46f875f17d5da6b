"""A benchmark names metrics its parser reports: the tool parsers report a fixed set, so a campaign naming one they
never produce (sysbench with the default `output_tok_s`) is refused when it is loaded, naming what the parser does
report, instead of every run coming back "metric missing"."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from agent.models import BenchSpec
from tests.conftest import ROOT


def spec(**fields: Any) -> BenchSpec:
    return BenchSpec.model_validate({"run": "bench", **fields})


def test_sysbench_with_the_default_metric_is_refused_naming_what_it_reports() -> None:
    with pytest.raises(ValidationError) as err:
        spec(parser="sysbench")
    message = str(err.value)
    assert "metric: parser sysbench does not report output_tok_s" in message
    assert "tps" in message and "p95_latency" in message


def test_sysbench_metrics_guardrails_and_slos_validate() -> None:
    s = spec(parser="sysbench", metric="tps", guardrails=["p95_latency"], slo=["p99_latency_ms <= 20"])
    assert s.metric == "tps" and s.slos()[0].metric == "p99_latency"
    assert spec(parser="sysbench", metric="mean_latency", higher_is_better=False).metric == "mean_latency"


@pytest.mark.parametrize(
    ("fields", "where", "name"),
    [
        ({"parser": "vllm-json", "metric": "tps"}, "metric", "tps"),
        ({"parser": "sysbench", "metric": "tps", "guardrails": ["p99_tpot"]}, "guardrails", "p99_tpot"),
        ({"parser": "guidellm", "slo": ["p95_latency <= 5"]}, "slo", "p95_latency"),
        ({"parser": "sglang-jsonl", "metric": "request_goodput"}, "metric", "request_goodput"),
        ({"parser": "aiperf", "metric": "qps"}, "metric", "qps"),
    ],
)
def test_a_metric_the_parser_never_reports_is_refused(fields: dict[str, Any], where: str, name: str) -> None:
    with pytest.raises(ValidationError, match=f"{where}: parser {fields['parser']} does not report {name}"):
        spec(**fields)


def test_a_name_no_parser_knows_is_still_an_unknown_metric() -> None:
    with pytest.raises(ValidationError, match="unknown metric 'tpss': parser sysbench reports"):
        spec(parser="sysbench", metric="tpss")
    with pytest.raises(ValidationError, match="unknown metric 'output_tok_z'"):
        spec(metric="output_tok_z")


@pytest.mark.parametrize("parser", ["guidellm", "aiperf", "vllm-json", "sglang-jsonl"])
def test_llm_tool_parsers_fit_the_step_time_on_tpot_by_default(parser: str) -> None:
    s = spec(parser=parser, sweep={"var": "concurrency", "values": [4, 8]}, slo=["p99_tpot_ms <= 50"])
    assert s.sweep is not None and s.sweep.fit == "mean_tpot"
    assert spec(parser=parser, metric="p99_ttft", higher_is_better=False).metric == "p99_ttft"


def test_guidellm_and_aiperf_report_min_and_max_latencies_vllm_does_not() -> None:
    assert spec(parser="aiperf", guardrails=["max_ttft"]).guardrails == ["max_ttft"]
    assert spec(parser="guidellm", guardrails=["min_e2e"]).guardrails == ["min_e2e"]
    with pytest.raises(ValidationError, match="guardrails: parser vllm-json does not report max_ttft"):
        spec(parser="vllm-json", guardrails=["max_ttft"])


def test_the_generic_parsers_still_read_exactly_what_is_declared() -> None:
    s = spec(parser="regex", patterns={"tps": r"tps = ([0-9.]+)"}, metric="tps")
    assert s.metric == "tps"
    with pytest.raises(ValidationError, match="declare tps there"):
        spec(parser="json-path", paths={"x": "a.b"}, metric="x", slo=["tps >= 10"])


def test_the_benchmark_examples_in_the_docs_validate_with_their_parsers() -> None:
    text = (ROOT / "docs" / "campaigns.md").read_text()
    section = text.split("## Reading the benchmark's output", 1)[1].split("\n## ", 1)[0]
    fragments = re.findall(r"```yaml fragment\n(.*?)```", section, re.S)
    specs = [BenchSpec.model_validate(yaml.safe_load(f)["benchmark"]) for f in fragments]
    assert {s.parser for s in specs} == {"guidellm", "aiperf", "sysbench"}
    for documented in ("vllm-json", "sglang-jsonl", "guidellm", "aiperf", "sysbench", "json-path", "regex"):
        assert f"| `{documented}` |" in section
