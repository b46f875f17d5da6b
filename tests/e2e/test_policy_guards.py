"""A preset's guard before the rules of a policy that extends it, in a real run: the demo's option #2 is unsafe and
a +7.6 % win; a policy `extends: cautious` with a rule that keeps wins of 5 % or more. On main that rule kept #2 (it
ran before the preset's `skip-unsafe`); now `skip-unsafe` decides, and the journal's decision line, `policy
explain` and replay name every rule that matched."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from agent.journal.view import fold
from tui import render
from tui.source import shown

POLICY = """\
extends: cautious
name: keep-big-wins
gates:
  safety:
    rules:
      - {id: keep-big-win, when: 'ab_verdict == "improved" && gain_pct >= 5.0', decide: continue}
"""


def test_an_unsafe_win_is_skipped_by_the_presets_guard_and_the_record_lists_every_matching_rule(
    cli, variant, home, tmp_path
):
    policy = tmp_path / "keep-big-wins.yaml"
    policy.write_text(POLICY)
    r = cli("run", str(variant()), "--policy", str(policy), "--headless", "--json")
    assert r.code == 0, r.stdout + r.stderr
    session, journal = r.json()["session"], Path(r.json()["journal"])
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    safety = {e["option"]: e for e in events if e["kind"] == "decision" and e.get("gate_kind") == "safety"}
    two = safety[2]
    assert two["by"] == "policy:skip-unsafe" and two["decision"]["action"] == "skip"
    assert two["decision"]["matched"] == ["skip-unsafe", "keep-big-win", "ask-when-unclear"]
    assert not any(e["kind"] == "kept" and e["option"] == 2 for e in events)
    # #3 is safe: the child's own rule keeps it, ahead of the preset's keep rule.
    assert safety[3]["by"] == "policy:keep-big-win"
    assert safety[3]["decision"]["matched"][:2] == ["keep-big-win", "keep-safe-win"]
    # The TUI's gate panel (live, attached or replayed) shows the same list.
    view = fold([shown(e) for e in events])
    console = Console(width=200, record=True, file=io.StringIO(), force_terminal=False)
    console.print(render.gate_panel(next(g for g in view.gates if g.gate == two["gate"])))
    shown_text = console.export_text()
    assert "rules that matched, the one that decided first: skip-unsafe, keep-big-win, ask-when-unclear" in shown_text
    v = cli("replay", session, "--verify")
    assert v.code == 0 and v.stdout.startswith("OK: "), v.stdout + v.stderr
    facts = next(e for e in events if e["kind"] == "gate.opened" and e["gate"] == two["gate"])["facts"]
    explained = cli("policy", "explain", str(policy), "--gate", "safety", "--facts", json.dumps(facts))
    assert explained.code == 0, explained.stderr
    assert explained.stdout.startswith("decision: skip (then rollback) — by policy:skip-unsafe")
    assert "rules that matched, the one that decided first: skip-unsafe [" in explained.stdout
    assert f"keep-big-win [{policy}:6]" in explained.stdout
