"""Issue 19, Low: a literal value under a secret-like `vars:` name (`API_KEY: sk-…`) was masked in
command output but kept verbatim in the session's campaign copy, the journal's `session.started` and
every export. A new session now refuses it at its file:line and says where the value belongs."""

from __future__ import annotations

from pathlib import Path

from tests.security.test_import_attacks import one_line_refusal

CANARY = "sk-ant-literal-canary-0042"


def test_a_literal_secret_in_vars_is_refused_at_its_line_and_nothing_is_stored(cli, variant, home):
    campaign = variant(edit=lambda t: t.replace("vars:\n", f"vars:\n  API_KEY: {CANARY}\n", 1))
    line = next(i for i, text in enumerate(Path(campaign).read_text().splitlines(), 1) if CANARY in text)
    r = cli("run", str(campaign), "--json")
    assert one_line_refusal(r, f"{campaign.name}:{line}", "API_KEY", "secrets:"), r.stderr
    assert CANARY not in r.stderr + r.stdout
    stored = [p for p in (home / "sessions").rglob("*") if p.is_file()] if (home / "sessions").exists() else []
    assert not any(CANARY.encode() in p.read_bytes() for p in stored)


def test_a_secret_named_variable_that_only_refers_to_the_environment_is_fine(cli, variant, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", CANARY)
    edit = lambda t: t.replace("vars:\n", 'secrets: [HF_TOKEN]\nvars:\n  API_KEY: "{{HF_TOKEN}}"\n', 1)  # noqa: E731
    r = cli("run", str(variant(edit=edit)), "--json")
    assert r.code == 0, r.stderr
    assert CANARY not in Path(r.json()["journal"]).read_text()
