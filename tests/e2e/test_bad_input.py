"""Bad campaign and policy files: one line naming file:line and the field, exit 2, nothing started."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import DEMO

DEMO_TEXT = DEMO.read_text()


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


CAMPAIGN_CASES = [
    (
        "sweep over a variable the benchmark never uses",
        lambda t: t.replace(
            "  guardrails: [p99_tpot]\n", "  guardrails: [p99_tpot]\n  sweep: {var: concurrency, values: [30, 60]}\n"
        ),
        "sweep: {var: concurrency",
        ["benchmark.sweep.var", "never uses {{concurrency}}"],
    ),
    (
        "goal level without a sweep",
        lambda t: t.replace("  target_pct: 20.0\n", "  target_pct: 20.0\n  at: 90\n"),
        "  at: 90",
        ["goal.at", "no `sweep:`"],
    ),
    (
        "a generic parser told nothing of a guardrail",
        lambda t: t.replace(
            "  parser: vllm-json\n", "  parser: regex\n  patterns: {output_tok_s: 'tok/s: ([0-9.]+)'}\n"
        ),
        "benchmark:",
        ["parser regex reads only what `patterns` declares; declare p99_tpot there"],
    ),
    (
        "malformed SLO",
        lambda t: t.replace("  guardrails: [p99_tpot]\n", "  guardrails: [p99_tpot]\n  slo: p99_tpot == 50\n"),
        "slo: p99_tpot == 50",
        ["benchmark.slo", "METRIC <= NUMBER"],
    ),
    # (name, edit, needle whose line the message must name, words the message must contain)
    (
        "unknown top-level field",
        lambda t: t.replace("facts:\n", "budget: 3\nfacts:\n"),
        "budget: 3",
        ["budget", "unknown field"],
    ),
    (
        "unknown option field",
        lambda t: t.replace("    expected_gain_pct: 6\n", "    expected_gain_pct: 6\n    speedup: 2\n"),
        "speedup: 2",
        ["options[1].speedup", "unknown field"],
    ),
    ("wrong type", lambda t: t.replace("  pairs: 6\n", "  pairs: six\n"), "pairs: six", ["benchmark.pairs", "integer"]),
    (
        "missing required field",
        lambda t: t.replace('    apply: [{run: "{{simserve}} apply moe-occupancy", on: decode}]\n', ""),
        "  - id: 3",
        ["options[2].apply", "field required"],
    ),
    (
        "malformed YAML",
        lambda t: t.replace("  metric: output_tok_s\n  higher", "  metric: [output_tok_s\n  higher"),
        "  higher_is_better",
        ["invalid YAML"],
    ),
    (
        "unknown template variable",
        lambda t: t.replace("{{simserve}} probe gpu", "{{simserv}} probe gpu"),
        "{{simserv}} probe gpu",
        ["unknown variable {{simserv}}"],
    ),
    (
        "target that is neither host nor role",
        lambda t: t.replace(
            "on: gpu-a\n        expect: {exit: 0}\n        on_fail: blocker\n        message",
            "on: gpu-z\n        expect: {exit: 0}\n        on_fail: blocker\n        message",
        ),
        "on: gpu-z",
        ["gpu-z", "neither a host nor a role"],
    ),
    (
        "duplicate option id",
        lambda t: t.replace("  - id: 3\n", "  - id: 2\n"),
        "  - id: 2\n    title: MoE",
        ["duplicate option id 2"],
    ),
    (
        "duplicate key",
        lambda t: t.replace("  num_prompts: 900\n", "  num_prompts: 900\n  num_prompts: 800\n"),
        "num_prompts: 800",
        ["duplicate key 'num_prompts'"],
    ),
    (
        "unknown parser",
        lambda t: t.replace("parser: vllm-json", "parser: vllm"),
        "parser: vllm",
        ["benchmark.parser", "vllm-json"],
    ),
    (
        "non-positive timeout",
        lambda t: t.replace("  timeout: 30\n", "  timeout: -1\n"),
        "timeout: -1",
        ["benchmark.timeout", "greater than 0"],
    ),
    (
        "inconsistent pairs",
        lambda t: t.replace("max_pairs: 10", "max_pairs: 4"),
        "benchmark:",
        ["max_pairs (4) is below pairs (6)"],
    ),
    (
        "unknown metric",
        lambda t: t.replace("  metric: output_tok_s\n  higher", "  metric: output_tok_z\n  higher"),
        "benchmark:",
        ["unknown metric 'output_tok_z'"],
    ),
    (
        "unknown guardrail",
        lambda t: t.replace("guardrails: [p99_tpot]", "guardrails: [p99_tpoot]"),
        "benchmark:",
        ["unknown metric 'p99_tpoot'"],
    ),
    (
        "goal judged on another metric",
        lambda t: t.replace("  metric: output_tok_s\n  target_pct", "  metric: total_tok_s\n  target_pct"),
        "name: decode-throughput-c90",
        ["goal.metric (total_tok_s) differs from benchmark.metric"],
    ),
    (
        "template uses an unset num_prompts",
        lambda t: t.replace("  num_prompts: 900\n", ""),
        "--num-prompts {{num_prompts}}",
        ["benchmark.run", "benchmark.num_prompts is not set"],
    ),
    (
        "boolean where a count is needed",
        lambda t: t.replace("  pairs: 6\n", "  pairs: true\n"),
        "pairs: true",
        ["benchmark.pairs", "integer"],
    ),
    (
        "YAML boolean where a string is needed",
        lambda t: t.replace("name: decode-throughput-c90", "name: yes"),
        "name: yes",
        ["name", "string"],
    ),
]


@pytest.mark.parametrize("name,edit,needle,words", CAMPAIGN_CASES, ids=[c[0] for c in CAMPAIGN_CASES])
def test_bad_campaign_is_refused_with_file_line(cli, variant, home, name, edit, needle, words):
    path = variant(DEMO_TEXT, edit=edit)
    text = path.read_text()
    assert needle in text, "the edit did not apply"
    r = cli("run", str(path), "--json")
    assert r.code == 2, r.stderr
    message = r.stderr.strip().splitlines()[-1]
    assert re.match(rf"signoff: {re.escape(str(path))}:{line_of(text, needle)}: ", message), message
    for word in words:
        assert word in message
    assert r.stdout == ""
    assert not (home / "sessions").exists(), "nothing may start for a bad file"


def test_missing_campaign_file(cli, home, tmp_path):
    r = cli("run", str(tmp_path / "nope.yaml"))
    assert r.code == 2 and "nope.yaml: file not found" in r.stderr
    assert not (home / "sessions").exists()


POLICY = """\
version: 1
name: typo
gates:
  safety:
    rules:
      - id: skip-unsafe
        when: verdcit == "unsafe"
        decide: skip
"""

POLICY_CASES = [
    (
        "typo'd fact name",
        POLICY,
        'verdcit == "unsafe"',
        ["undeclared reference to 'verdcit'", "facts of a safety gate"],
    ),
    (
        "int literal on a double fact",
        POLICY.replace('verdcit == "unsafe"', "gain_pct >= 5"),
        "gain_pct >= 5",
        ["no matching overload", "write 5.0"],
    ),
    (
        "value outside an enum",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "usafe"'),
        'verdict == "usafe"',
        ["verdict is never 'usafe'", "safe, unsafe, unknown"],
    ),
    (
        "non-boolean rule",
        POLICY.replace('verdcit == "unsafe"', "gain_pct + 1.0"),
        "gain_pct + 1.0",
        ["must be a boolean"],
    ),
    (
        "answer the gate does not take",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "unsafe"').replace("decide: skip", "decide: select"),
        "decide: select",
        ["cannot answer 'select'"],
    ),
    ("unknown gate kind", POLICY.replace("  safety:", "  safty:"), "  safty:", ["gates.safty"]),
    (
        "unknown rule field",
        POLICY.replace("        decide: skip", "        decide: skip\n        priority: 1"),
        "priority: 1",
        ["unknown field 'priority'"],
    ),
    (
        "failing self-test",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "unsafe"')
        + """\
tests:
  - gate: safety
    facts: {option: "1", verdict: safe, ab_verdict: improved, gain_pct: 1.0, ci_low: 0.5, ci_high: 2.0,
            pairs: 6, wedges: 0, stress_errors: 0, failed_requests: 0, hazards: 0, confidence: 0.9, risk: low}
    expect: {decide: skip}
""",
        "  - gate: safety",
        ["test expects skip", "decides ask"],
    ),
    (
        "on_error that approves",
        POLICY.replace("    rules:", "    on_error: continue\n    rules:"),
        "on_error: continue",
        ["on_error must fail closed"],
    ),
    (
        "headless default that asks",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "unsafe"').replace(
            "    rules:", "    headless_default: ask\n    rules:"
        ),
        "headless_default: ask",
        ["headless_default is the answer"],
    ),
    (
        "on_error that lets a triage proceed",
        "version: 1\nname: x\ngates:\n  triage:\n    on_error: skip\n",
        "on_error: skip",
        ["on_error must fail closed: at a triage gate one of ask, stop"],
    ),
    (
        "duplicate rule id",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "unsafe"') + "      - id: skip-unsafe\n        decide: ask\n",
        "      - id: skip-unsafe\n        decide: ask",
        ["rule id 'skip-unsafe' is already used at line 6"],
    ),
    (
        "a triage rule that would need option ids",
        "version: 1\nname: x\ngates:\n  triage:\n    rules:\n      - {id: skip-some, decide: skip}\n",
        "      - {id: skip-some",
        ["needs option ids"],
    ),
    (
        "then on a rule that keeps",
        POLICY.replace('verdcit == "unsafe"', 'verdict == "safe"').replace(
            "decide: skip", "decide: continue\n        then: rollback"
        ),
        "then: rollback",
        ["then: rollback is the only"],
    ),
    ("NUL byte", "version: 1\nname: x\x00\n", "name: x", ["NUL byte"]),
    ("empty file", "", "", ["the file is empty"]),
]


@pytest.mark.parametrize("name,text,needle,words", POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_bad_policy_is_refused_at_load(cli, home, tmp_path, name, text, needle, words):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    r = cli("run", str(DEMO), "--policy", str(path))
    assert r.code == 2, r.stderr
    message = r.stderr.strip().splitlines()[-1]
    assert message.startswith(f"signoff: {path}:{line_of(text, needle)}: "), message
    for word in words:
        assert word in message, message
    assert not (home / "sessions").exists()
    check = cli("policy", "check", str(path), "--json")
    assert check.code == 2 and check.json()["line"] == line_of(text, needle)


def test_presets_load_and_self_test(cli):
    for preset in ("cautious", "autonomous", "ask-everything"):
        r = cli("policy", "check", preset)
        assert r.code == 0 and r.stdout.startswith("OK: "), r.stderr


def test_message_is_one_line(cli, tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text(POLICY)
    r = cli("policy", "check", str(path))
    assert len(r.stderr.strip().splitlines()) == 1
