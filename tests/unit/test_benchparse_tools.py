"""The parsers for the load tools people run, on real output files (tests/fixtures/{guidellm,aiperf,sysbench},
each folder's README says how it was captured): every mapped value checked against the file's own numbers,
and every bad input one actionable BenchParseError line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tools.benchparse import BenchParseError, parse

GUIDELLM = FIXTURES / "guidellm"
AIPERF = FIXTURES / "aiperf"
SYSBENCH = FIXTURES / "sysbench"


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _sysbench(name: str) -> str:
    return (SYSBENCH / f"sysbench-1.0.20-{name}.txt").read_text()


# GuideLLM 0.8.1 against llama-server


@pytest.mark.parametrize(("name", "streams", "requests"), [("c8", 8, 16), ("c16", 16, 64)])
def test_guidellm_report_maps_throughput_latencies_counts_and_load(name: str, streams: int, requests: int) -> None:
    path = GUIDELLM / f"guidellm-0.8.1-{name}-llama-server.json"
    report = _json(path)
    (bench,) = report["benchmarks"]
    m = bench["metrics"]
    r = parse("guidellm", path.read_text())
    assert r.tool == "guidellm"
    assert (r.completed, r.failed, r.expected) == (requests, 0, requests)
    assert r.invalid_reason() is None
    # GuideLLM's rate "mean" is the total over the benchmark's duration: output tokens / duration
    assert r.output_tok_s == m["output_tokens_per_second"]["successful"]["mean"]
    assert r.output_tok_s == pytest.approx(m["output_token_count"]["successful"]["total_sum"] / bench["duration"])
    assert r.total_tok_s == m["tokens_per_second"]["successful"]["mean"]
    assert r.req_s == m["requests_per_second"]["successful"]["mean"]
    assert r.duration_s == bench["duration"]
    ttft, itl = m["time_to_first_token_ms"]["successful"], m["inter_token_latency_ms"]["successful"]
    assert r.latency_ms["mean_ttft"] == ttft["mean"] and r.latency_ms["median_ttft"] == ttft["median"]
    assert r.latency_ms["p99_ttft"] == ttft["percentiles"]["p99"]
    assert (
        r.latency_ms["p99.9_ttft"] == ttft["percentiles"]["p999"]
        and r.latency_ms["p5_ttft"] == ttft["percentiles"]["p05"]
    )
    # vLLM's TPOT is decode time per token without the first: GuideLLM's inter_token_latency_ms
    assert r.latency_ms["mean_tpot"] == itl["mean"] == r.latency_ms["mean_itl"]
    assert r.latency_ms["p99_tpot"] == itl["percentiles"]["p99"] and r.latency_ms["std_tpot"] == itl["std_dev"]
    e2e = m["request_latency"]["successful"]  # seconds in the report, ms in the record
    assert r.latency_ms["p95_e2e"] == pytest.approx(1000 * e2e["percentiles"]["p95"])
    assert r.latency_ms["max_e2e"] == pytest.approx(1000 * e2e["max"])
    assert r.load == {"concurrency": float(streams)}
    assert r.metric("p99_tpot") == itl["percentiles"]["p99"]


def test_guidellm_report_numbers_are_those_of_the_file() -> None:
    r = parse("guidellm", (GUIDELLM / "guidellm-0.8.1-c8-llama-server.json").read_text())
    assert r.output_tok_s == pytest.approx(225.5151693579311)
    assert r.latency_ms["p99_itl"] == pytest.approx(27.121131382291278)
    assert r.latency_ms["median_ttft"] == pytest.approx(1276.2198448181152)


def _guidellm_with(edit: Any) -> str:
    report = _json(GUIDELLM / "guidellm-0.8.1-c8-llama-server.json")
    edit(report)
    return json.dumps(report)


def _errored(report: dict[str, Any], errored: int, incomplete: int, text: str) -> None:
    """The real c8 report as GuideLLM writes a run with failures: counts in request_totals, an errored request
    (its own shape, status and error text) in requests.errored."""
    (bench,) = report["benchmarks"]
    totals = bench["metrics"]["request_totals"]
    totals.update(errored=errored, incomplete=incomplete, total=totals["successful"] + errored + incomplete)
    failed = copy.deepcopy(bench["requests"]["successful"][0])
    failed["info"].update(status="errored", error=text)
    bench["requests"]["errored"] = [failed] * errored


def test_guidellm_errored_and_incomplete_requests_count_as_failed_in_a_request_bounded_run_with_their_text() -> None:
    text = _guidellm_with(lambda r: _errored(r, 1, 2, "ReadError: stream ended mid-chunk"))
    r = parse("guidellm", text)
    assert (r.completed, r.failed, r.expected) == (16, 3, 19)
    # A few failed requests leave the run a data point; its failures are weighed arm against arm.
    assert r.requests() == (19, 3) and r.invalid_reason() is None
    assert r.error_samples == ["ReadError: stream ended mid-chunk"]


def test_guidellm_time_bounded_run_does_not_count_the_requests_cut_at_its_deadline() -> None:
    def timed(report: dict[str, Any]) -> None:
        _errored(report, 0, 8, "")
        report["benchmarks"][0]["config"]["constraints"] = {
            "max_duration": {"type_": "max_duration", "args": {"kind": "max_duration", "seconds": 30}}
        }

    r = parse("guidellm", _guidellm_with(timed))
    assert (r.completed, r.failed, r.expected) == (16, 0, None)
    assert r.invalid_reason() is None
    # …but an errored request fails it all the same
    r = parse("guidellm", _guidellm_with(lambda rep: (timed(rep), _errored(rep, 1, 8, "HTTP 500"))))
    assert r.failed == 1 and r.requests() == (17, 1) and r.invalid_reason() is None


def test_guidellm_sweep_report_is_refused_naming_the_profile_that_gives_one_benchmark() -> None:
    def sweep(report: dict[str, Any]) -> None:
        second = copy.deepcopy(report["benchmarks"][0])
        second["config"]["strategy"].update(streams=16, max_concurrency=16)
        report["benchmarks"].append(second)

    with pytest.raises(BenchParseError) as err:
        parse("guidellm", _guidellm_with(sweep))
    message = str(err.value)
    assert "holds 2 benchmarks (concurrent streams 8, concurrent streams 16)" in message
    assert "--profile kind=concurrent,streams=N" in message and "benchmark.sweep" in message


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda r: r.update(benchmarks=[]), "has no benchmarks"),
        (lambda r: r["metadata"].update(version=1), "schema version 1: signoff reads version 2"),
        (lambda r: r.pop("metadata"), "schema version None"),
        (lambda r: r.pop("benchmarks"), "not a GuideLLM report"),
    ],
)
def test_guidellm_bad_reports_are_one_line_errors(edit: Any, expected: str) -> None:
    with pytest.raises(BenchParseError, match=expected):
        parse("guidellm", _guidellm_with(edit))


def test_guidellm_report_after_console_lines_or_cut_short() -> None:
    text = (GUIDELLM / "guidellm-0.8.1-c8-llama-server.json").read_text()
    assert parse("guidellm", "Generating benchmarks...\n✔ done\n" + text).completed == 16
    with pytest.raises(BenchParseError, match=r"GuideLLM report is not valid JSON: .* \(cut short\?\)"):
        parse("guidellm", text[: len(text) // 2])


# AIPerf 0.13.0 (schema 1.4) against tests/fixtures/aiperf/openai_stub.py


def test_aiperf_export_maps_throughput_latencies_counts_and_load() -> None:
    path = AIPERF / "aiperf-0.13.0-c4-40req.json"
    data = _json(path)
    r = parse("aiperf", path.read_text())
    assert r.tool == "aiperf"
    assert (r.completed, r.failed, r.expected) == (40, 0, 40)
    assert r.invalid_reason() is None
    assert r.output_tok_s == data["output_token_throughput"]["avg"] == pytest.approx(745.0125261575207)
    assert r.total_tok_s == data["total_token_throughput"]["avg"]
    assert r.req_s == data["request_throughput"]["avg"]
    assert r.duration_s == data["benchmark_duration"]["avg"]  # unit "sec"
    ttft, itl, e2e = data["time_to_first_token"], data["inter_token_latency"], data["request_latency"]
    assert r.latency_ms["mean_ttft"] == ttft["avg"] and r.latency_ms["p99_ttft"] == ttft["p99"]
    assert r.latency_ms["median_ttft"] == ttft["p50"] and r.latency_ms["min_ttft"] == ttft["min"]
    assert r.latency_ms["p99_tpot"] == itl["p99"] == r.latency_ms["p99_itl"]
    assert r.latency_ms["std_tpot"] == itl["std"]
    assert r.latency_ms["p90_e2e"] == e2e["p90"] and e2e["unit"] == "ms"
    assert r.load == {"concurrency": 4.0}


def test_aiperf_failed_requests_are_counted_with_aiperf_error_summary() -> None:
    data = _json(AIPERF / "aiperf-0.13.0-c4-40req-5-errors.json")
    r = parse("aiperf", json.dumps(data))
    assert data["request_count"]["avg"] == 35 and data["error_request_count"]["avg"] == 5
    assert (r.completed, r.failed, r.expected) == (35, 5, 40)
    assert r.requests() == (40, 5) and r.invalid_reason() is None  # a data point; the 5 are weighed arm by arm
    (sample,) = r.error_samples
    assert sample.startswith("5× 500 Internal Server Error: ") and "stub: injected failure" in sample


def test_aiperf_duration_bounded_run_expects_no_count() -> None:
    r = parse("aiperf", (AIPERF / "aiperf-0.13.0-c8-2s.json").read_text())
    assert (r.completed, r.failed, r.expected) == (169, 0, None)
    assert r.load == {"concurrency": 8.0} and r.invalid_reason() is None


def test_aiperf_export_after_its_console_output_is_found() -> None:
    text = (AIPERF / "aiperf-0.13.0-c4-40req.json").read_text()
    assert text.startswith("{\n")  # pretty-printed, as aiperf writes it
    console = (
        "INFO     AIPerf System is PROFILING\n{not json: a log line}\nJSON Export: out/profile_export_aiperf.json\n"
    )
    assert parse("aiperf", console + text).completed == 40


def _aiperf_with(edit: Any) -> str:
    data = _json(AIPERF / "aiperf-0.13.0-c4-40req.json")
    edit(data)
    return json.dumps(data, indent=2)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.update(schema_version="2.0"), r"schema_version 2\.0: signoff reads 1\.x"),
        (lambda d: d.pop("schema_version"), "without schema_version"),
        (lambda d: d["time_to_first_token"].update(unit="furlongs"), "time_to_first_token is in 'furlongs'"),
    ],
)
def test_aiperf_unknown_schema_major_and_units_are_refused(edit: Any, expected: str) -> None:
    with pytest.raises(BenchParseError, match=expected):
        parse("aiperf", _aiperf_with(edit))


def test_aiperf_minor_schema_versions_are_read_and_units_converted() -> None:
    def newer(d: dict[str, Any]) -> None:
        d["schema_version"] = "1.5"
        d["request_latency"] = {k: (v / 1000 if k != "unit" else "sec") for k, v in d["request_latency"].items()}

    data = _json(AIPERF / "aiperf-0.13.0-c4-40req.json")
    r = parse("aiperf", _aiperf_with(newer))
    assert r.latency_ms["p99_e2e"] == pytest.approx(data["request_latency"]["p99"])


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.update(was_cancelled=True), "AIPerf reports the run was cancelled"),
        (lambda d: d.update(is_complete=False, incomplete_reason="record stall"), "incomplete: record stall"),
    ],
)
def test_aiperf_cancelled_or_incomplete_run_is_not_a_data_point(edit: Any, expected: str) -> None:
    r = parse("aiperf", _aiperf_with(edit))
    assert expected in (r.invalid_reason() or "")


# sysbench 1.0.20 against MariaDB, PostgreSQL, and its CPU test


def test_sysbench_oltp_report_maps_tps_qps_latencies_and_threads() -> None:
    r = parse("sysbench", _sysbench("mariadb-oltp-read-write"))
    assert r.tool == "sysbench" and r.invalid_reason() is None
    assert r.rates["tps"] == 1822.14 and r.rates["qps"] == 36442.85
    assert r.metric("tps") == 1822.14
    assert r.rates["events_s"] == pytest.approx(9118 / 5.0033)
    assert r.latency_ms == {"min_latency": 0.36, "mean_latency": 1.10, "max_latency": 86.16, "p95_latency": 3.19}
    assert (r.completed, r.duration_s, r.load) == (9118, 5.0033, {"concurrency": 2.0})


def test_sysbench_run_with_errors_is_not_a_data_point_and_says_how_many() -> None:
    r = parse("sysbench", _sysbench("mariadb-oltp-read-write-deadlocks"))  # InnoDB deadlocks, retried
    assert r.rates["tps"] == 813.00  # a number all the same, but not one an A/B may use
    assert r.invalid_reason() == (
        "sysbench counted 2798 ignored error(s) and 0 reconnect(s): a run with errors is not a clean measurement"
    )
    r = parse("sysbench", _sysbench("pgsql-oltp-read-write"))
    assert r.invalid_reason() is not None and r.invalid_reason().startswith("sysbench counted 6 ignored error(s)")


def test_sysbench_reconnects_make_the_run_invalid() -> None:
    # sysbench 1.0.20 crashes when it reconnects (see *-crash.txt), so this one line is edited into a real report
    text = _sysbench("mariadb-oltp-read-write")
    edited = text.replace(
        "reconnects:                          0      (0.00 per sec.)", "reconnects:  3  (0.60 per sec.)"
    )
    assert edited != text
    assert parse("sysbench", edited).invalid_reason() == (
        "sysbench counted 0 ignored error(s) and 3 reconnect(s): a run with errors is not a clean measurement"
    )


def test_sysbench_percentile_option_report_interval_rate_and_cpu_test() -> None:
    r = parse("sysbench", _sysbench("pgsql-oltp-read-write-p99-report-interval"))
    assert r.latency_ms["p99_latency"] == 6.91 and "p95_latency" not in r.latency_ms
    assert r.rates["tps"] == 1591.33  # the final report, not the per-second lines before it
    r = parse("sysbench", _sysbench("cpu"))
    assert r.rates == {"events_s": 2701.13} and r.invalid_reason() is None
    assert r.latency_ms["p95_latency"] == 0.52 and r.completed == 5415
    r = parse("sysbench", _sysbench("cpu-rate-200"))
    assert r.load == {"concurrency": 2.0, "request_rate": 200.0}
    r = parse("sysbench", _sysbench("cpu-events-no-percentile"))  # --percentile=0
    assert set(r.latency_ms) == {"min_latency", "mean_latency", "max_latency"}


@pytest.mark.parametrize("name", ["pgsql-server-stopped-crash", "mariadb-connections-killed-crash"])
def test_sysbench_crashed_mid_run_has_no_report(name: str) -> None:
    with pytest.raises(BenchParseError, match="no sysbench statistics in the output"):
        parse("sysbench", _sysbench(name))


# Bad input, any tool: one line, never a traceback


@pytest.mark.parametrize("parser", ["guidellm", "aiperf", "sysbench"])
@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "   \n",
        "Traceback (most recent call last):\n  File x\nKeyError: 'boom'",
        "{not json",
        "[1, 2, 3]",
        '{"benchmarks": "x", "schema_version": 1}',
        '{"benchmarks": [null], "metadata": {"version": 2}, "schema_version": "1.0", "request_count": []}',
        "{" * 100_000,
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",  # deeper than the JSON decoder recurses
        "sysbench 1.0.20\nGeneral statistics:\n    total time: abc",
    ],
)
def test_bad_input_is_one_actionable_line(parser: str, garbage: str) -> None:
    with pytest.raises(BenchParseError) as err:
        parse(parser, garbage)  # type: ignore[arg-type]
    message = str(err.value)
    assert message and "\n" not in message and len(message) < 400


def test_empty_output_says_what_was_expected() -> None:
    with pytest.raises(BenchParseError, match="empty output: no GuideLLM report"):
        parse("guidellm", "")
    with pytest.raises(BenchParseError, match="empty output: no AIPerf"):
        parse("aiperf", "\n")
    with pytest.raises(BenchParseError, match="not sysbench output"):
        parse("sysbench", "")
