"""A campaign per load-tool parser (guidellm, aiperf, sysbench), run for real on the local transport: the benchmark
command prints one of the tool's real output files (arm A one file, arm B another, switched by the option), so
each run goes through the campaign's benchmark path, parser and validity checks, and the journal shows what
each reading became."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, SIGNOFF

# parser → (metric, arm A's output, arm B's output)
CASES = {
    "guidellm": (
        "output_tok_s",
        "guidellm/guidellm-0.8.1-c8-llama-server.json",
        "guidellm/guidellm-0.8.1-c16-llama-server.json",
    ),
    "aiperf": ("output_tok_s", "aiperf/aiperf-0.13.0-c4-40req.json", "aiperf/aiperf-0.13.0-c4-40req-5-errors.json"),
    "sysbench": (
        "tps",
        "sysbench/sysbench-1.0.20-mariadb-oltp-read-write.txt",
        "sysbench/sysbench-1.0.20-mariadb-oltp-read-write-deadlocks.txt",
    ),
}

CAMPAIGN = """\
name: {parser}-parser
goal: {{text: "{metric} up 5%", metric: {metric}, target_pct: 5}}
hosts: [{{name: h, transport: local}}]
baseline:
  upload: [{{src: bench.sh}}, {{src: a.out}}, {{src: b.out}}]
  setup: ["rm -f arm"]
  health: ["test -f bench.sh"]
benchmark:
  run: sh bench.sh
  parser: {parser}
  metric: {metric}
  pairs: 2
  max_pairs: 2
  timeout: 20
rollback: {{verify_runs: 1, settle_runs: 0}}
options:
  - {{id: 1, title: arm B prints the other file, apply: "echo B > arm", revert: "rm -f arm", check: "test -f arm"}}
"""

POLICY = """\
version: 1
name: tool-parsers
extends: autonomous
commands:
  allow: ["sh bench.sh", "rm -f arm", "echo B > arm", "test -f *"]
"""


def _campaign(tmp_path: Path, parser: str) -> Path:
    metric, a, b = CASES[parser]
    shutil.copy(FIXTURES / a, tmp_path / "a.out")
    shutil.copy(FIXTURES / b, tmp_path / "b.out")
    (tmp_path / "bench.sh").write_text("if [ -f arm ]; then cat b.out; else cat a.out; fi\n")
    (tmp_path / "policy.yaml").write_text(POLICY)
    path = tmp_path / "campaign.yaml"
    path.write_text(CAMPAIGN.format(parser=parser, metric=metric))
    return path


def _signoff(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNOFF_HOME": str(tmp_path / "home"), "USER": "tester", "COLUMNS": "200"}
    return subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)


@pytest.mark.parametrize("parser", sorted(CASES))
def test_a_campaign_with_each_tool_parser_checks_clean(tmp_path: Path, parser: str) -> None:
    campaign = _campaign(tmp_path, parser)
    p = _signoff(tmp_path, "check", str(campaign), "--policy", str(tmp_path / "policy.yaml"), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert out["ok"] and out["errors"] == 0


def test_a_sysbench_campaign_left_on_the_default_metric_is_refused_at_its_line(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, "sysbench")
    campaign.write_text(campaign.read_text().replace("  metric: tps\n", ""))
    p = _signoff(tmp_path, "check", str(campaign), "--policy", str(tmp_path / "policy.yaml"))
    assert p.returncode == 2
    (line,) = p.stdout.strip().splitlines()
    assert line.startswith(f"{campaign}:8: error: ") and "parser sysbench does not report output_tok_s" in line, line
    assert "tps" in line
    p = _signoff(tmp_path, "run", str(campaign), "--policy", str(tmp_path / "policy.yaml"))
    assert p.returncode == 2 and not (tmp_path / "home" / "sessions").exists()
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("signoff: ") and "parser sysbench does not report output_tok_s" in line, line


def _runs(tmp_path: Path) -> list[dict]:
    (journal,) = (tmp_path / "home" / "sessions").glob("*/journal.jsonl")
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    return [e for e in events if e["kind"] == "bench.run" and e.get("option") == 1 and e.get("purpose") == "ab"]


@pytest.mark.parametrize("parser", sorted(CASES))
def test_each_tool_parser_reads_real_output_through_a_campaign_run(tmp_path: Path, parser: str) -> None:
    campaign = _campaign(tmp_path, parser)
    p = _signoff(tmp_path, "run", str(campaign), "--policy", str(tmp_path / "policy.yaml"), "--json")
    assert p.returncode == 0, p.stderr
    runs = _runs(tmp_path)
    a = [r for r in runs if r["arm"] == "A"]
    b = [r for r in runs if r["arm"] == "B"]
    assert len(a) >= 2 and len(b) >= 2
    if parser == "guidellm":  # both arms valid: output tokens/s of the c8 and the c16 report
        assert all(r["valid"] and r["value"] == pytest.approx(225.5151693579311) for r in a), a
        assert all(r["valid"] and r["value"] == pytest.approx(444.0807752375573) for r in b), b
    elif parser == "aiperf":  # arm B's report counts 5 failed requests of 40: a data point, its failures counted
        assert all(r["valid"] and r["value"] == pytest.approx(745.0125261575207) for r in a), a
        assert all(r["valid"] and r["requests"] == 40 and r["failed_requests"] == 5 for r in b), b
        assert all(r["errors"][0].startswith("5× 500 Internal Server Error") for r in b), b
    else:  # arm B's sysbench run had 2798 ignored errors (deadlocks): never a data point
        assert all(r["valid"] and r["value"] == 1822.14 for r in a), a
        assert all(not r["valid"] and "sysbench counted 2798 ignored error(s)" in r["reason"] for r in b), b
