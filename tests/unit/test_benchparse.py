import json

import pytest

from tests.conftest import FIXTURES
from tools.benchparse import BenchParseError, parse


def test_vllm_result_file():
    r = parse("vllm-json", (FIXTURES / "vllm_result.json").read_text(), expected=600)
    assert r.completed == 600 and r.failed == 0
    assert r.output_tok_s == pytest.approx(1653.91, abs=0.01)
    assert r.latency_ms["p99_tpot"] == pytest.approx(37.226)
    assert r.latency_ms["median_e2e"] == pytest.approx(36101.405)
    assert r.invalid_reason() is None


def test_vllm_failures_are_counted_with_their_errors():
    # A few failed requests no longer void the run: tests/unit/test_failures.py has the rule and the test.
    r = parse("vllm-json", (FIXTURES / "vllm_result_detailed_failures.json").read_text(), expected=12)
    assert r.failed == 3 and r.requests() == (12, 3)
    assert r.error_samples


def test_legacy_vllm_without_failed_key_derives_it_from_expected():
    data = json.loads((FIXTURES / "vllm_result.json").read_text())
    data.pop("failed")
    data["request_goodput:"] = data.pop("request_goodput")
    data["completed"] = 590
    r = parse("vllm-json", json.dumps(data), expected=600)
    assert r.failed == 10 and r.requests() == (600, 10)


def test_sglang_jsonl_last_line_with_bare_infinity():
    text = (FIXTURES / "sglang_result.jsonl").read_text()
    assert "Infinity" in text
    r = parse("sglang-jsonl", text, expected=900)
    assert r.tool == "sglang" and r.completed == 871 and r.failed == 29
    assert "completed" in (r.invalid_reason() or "") or r.failed


@pytest.mark.parametrize(
    "garbage",
    ["", "Traceback (most recent call last):\n  boom", "{not json", "[1, 2, 3]", '{"hello": "world"}'],
)
def test_garbage_is_a_clear_parse_error_not_a_crash(garbage):
    with pytest.raises(BenchParseError) as err:
        parse("vllm-json", garbage, expected=10)
    assert str(err.value)


def test_logs_before_the_result_line_are_skipped():
    data = (FIXTURES / "vllm_result.json").read_text()
    r = parse("vllm-json", "INFO starting\nWARNING something\n" + data, expected=600)
    assert r.completed == 600


def test_generic_json_path_and_regex():
    r = parse(
        "json-path",
        '{"summary": {"tps": 812.5, "done": 100}}',
        expected=100,
        paths={"output_tok_s": "summary.tps", "completed": "summary.done"},
    )
    assert r.output_tok_s == 812.5 and r.failed == 0
    r = parse(
        "regex",
        "throughput: 640.25 tok/s\np99 tpot: 31.0 ms",
        expected=None,
        patterns={"output_tok_s": r"throughput: ([\d.]+)", "p99_tpot": r"p99 tpot: ([\d.]+)"},
    )
    assert r.output_tok_s == 640.25 and r.latency_ms["p99_tpot"] == 31.0
    with pytest.raises(BenchParseError, match="did not match"):
        parse("regex", "nothing here", patterns={"output_tok_s": r"tps=(\d+)"})


def test_non_finite_and_odd_values_are_parse_errors_not_crashes():
    with pytest.raises(BenchParseError, match="not a finite number"):
        parse("json-path", '{"tok": 100, "done": NaN}', expected=10, paths={"output_tok_s": "tok", "completed": "done"})
    with pytest.raises(BenchParseError):
        parse(
            "json-path", '{"tok": 100, "done": 1e400}', expected=10, paths={"output_tok_s": "tok", "completed": "done"}
        )
    r = parse("vllm-json", '{"completed": 10, "failed": 0, "output_throughput": 5.0, "errors": 5}', expected=10)
    assert r.error_samples == []
    value, why = parse("vllm-json", '{"completed": 10, "failed": 0, "output_throughput": 0}', expected=10).usable(
        "output_tok_s"
    )
    assert value is None and "is 0" in why


def test_the_load_a_tool_generated_is_read_for_the_sweep_to_check() -> None:
    vllm = parse("vllm-json", (FIXTURES / "vllm_result.json").read_text(), expected=600)
    assert vllm.load == {"concurrency": 60.0}  # request_rate "inf": an unbounded rate is no level
    sglang = parse("sglang-jsonl", (FIXTURES / "sglang_result.jsonl").read_text(), expected=900)
    assert sglang.load == {"concurrency": 90.0}  # request_rate bare Infinity, skipped the same way
    data = json.loads((FIXTURES / "vllm_result.json").read_text())
    data.update(request_rate=12.5, max_concurrency=None)
    assert parse("vllm-json", json.dumps(data), expected=600).load == {"request_rate": 12.5}


@pytest.mark.parametrize("key", ["request_goodput", "request_goodput:"])
def test_vllm_goodput_is_a_metric_under_either_spelling(key: str) -> None:
    data = json.loads((FIXTURES / "vllm_result.json").read_text())
    data.pop("request_goodput")
    data[key] = 7.25
    r = parse("vllm-json", json.dumps(data), expected=600)
    assert r.metric("request_goodput") == 7.25
    data[key] = None  # run without --goodput
    assert parse("vllm-json", json.dumps(data), expected=600).metric("request_goodput") is None


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ('{"completed": 83, "failed": -3, "output_throughput": 100.1}', "-3 failed requests"),
        ('{"completed": -1, "failed": 0, "output_throughput": 100.1}', "-1 completed requests"),
        ('{"completed": 1e12, "failed": 0, "output_throughput": 100.1}', "1000000000000 completed requests"),
    ],
)
def test_request_counts_no_run_can_have_are_unreadable_not_evidence(result: str, said: str) -> None:
    """83 completed and -3 failed add up to the 80 asked for; weighed as evidence, a negative count crashed the
    failure test (and every resume of the session) — it is an unreadable result instead."""
    with pytest.raises(BenchParseError, match=said):
        parse("vllm-json", result, expected=80)


def test_a_run_that_sent_more_requests_than_asked_says_so() -> None:
    record = parse("vllm-json", '{"completed": 80, "failed": 1, "output_throughput": 100.1}', expected=80)
    assert record.invalid_reason() == "sent 81 requests, not the 80 asked for (1 failed)"
