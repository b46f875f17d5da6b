"""Policies that extend others: the merge (commands appended, the child's rules after the parent's guards and
before its other rules), chains, cycles and bad references refused at file:line, each file's tests run against the
policy resolved up to it, and a resolved text that is self-contained and loads back to the same decisions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from policies.engine import PolicyEngine
from policies.load import load_policy, load_policy_text
from policies.schema import lint
from policies.yamlsrc import SourceError
from tests.conftest import SAFETY
from tools.commands import classify

INCONCLUSIVE = {**SAFETY, "verdict": "safe", "ab_verdict": "inconclusive", "wedges": 0, "risk": "low", "hazards": 0}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


CHILD = """\
extends: cautious
name: pg
commands:
  allow: ["sh pgctl.sh *", "rm -rf *"]
gates:
  safety:
    rules:
      - id: skip-inconclusive
        when: ab_verdict == "inconclusive"
        decide: skip
tests:
  - gate: safety
    facts: {option: "4", verdict: safe, ab_verdict: inconclusive, gain_pct: 1.5, ci_low: -1.0, ci_high: 4.0,
            pairs: 6, wedges: 0, stress_errors: 0, failed_requests: 0, hazards: 0, confidence: 0.5, risk: low}
    expect: {decide: skip, rule: skip-inconclusive}
"""


def test_a_child_appends_commands_puts_its_rules_first_and_deny_still_wins(tmp_path):
    p = load_policy(write(tmp_path / "pg.yaml", CHILD))
    cautious = load_policy("cautious")
    rules = p.model.commands
    assert rules.allow == [*cautious.model.commands.allow, "sh pgctl.sh *", "rm -rf *"]
    assert rules.deny == cautious.model.commands.deny and rules.readonly == cautious.model.commands.readonly
    # The child allows `rm -rf *`; the preset's deny of `rm -rf /*` still decides.
    assert classify("rm -rf /", allow=rules.allow, ask=rules.ask, deny=rules.deny).klass == "deny"
    assert classify("sh pgctl.sh init 2", allow=rules.allow, ask=rules.ask, deny=rules.deny).klass == "allow"
    safety = [(r.spec.id, Path(r.file or "").name) for r in p.rules["safety"]]
    # The preset's guard first, then the child's rules, then the preset's others.
    assert safety[:3] == [
        ("skip-unsafe", "cautious.yaml"),
        ("skip-inconclusive", "pg.yaml"),
        ("roll-back-regression", "cautious.yaml"),
    ]
    assert PolicyEngine(p).evaluate("safety", INCONCLUSIVE).rule == "skip-inconclusive"
    assert PolicyEngine(cautious).evaluate("safety", INCONCLUSIVE).rule == "ask-when-unclear"
    # Gates the child does not name are the parent's as they are.
    assert [r.spec.id for r in p.rules["rollback"]] == [r.spec.id for r in cautious.rules["rollback"]]
    assert [(part.name, part.tests) for part in p.parts] == [("pg", 1), ("cautious", len(cautious.model.tests))]
    assert p.parts[1].sha256 == hashlib.sha256(cautious.text.encode()).hexdigest()


def test_the_resolved_text_is_self_contained_and_decides_alike(tmp_path):
    p = load_policy(write(tmp_path / "pg.yaml", CHILD))
    assert "extends" not in p.text.split("\n# ")[-1] and p.sha256 == hashlib.sha256(p.text.encode()).hexdigest()
    again = load_policy_text(p.text, path="policy.yaml")  # what replay and resume load from the journal
    assert again.model.model_dump() == p.model.model_dump()
    for facts in (INCONCLUSIVE, SAFETY, {**INCONCLUSIVE, "ab_verdict": "improved", "confidence": 0.9}):
        assert PolicyEngine(again).evaluate("safety", facts) == PolicyEngine(p).evaluate("safety", facts)
    # A journaled text never makes this machine read a file it names.
    with pytest.raises(SourceError, match="self-contained"):
        load_policy_text(CHILD, path="journal")


def test_a_chain_resolves_paths_beside_each_file_and_each_files_tests_hold_for_it(tmp_path):
    write(tmp_path / "team" / "base.yaml", CHILD.replace("name: pg", "name: team"))
    top = write(
        tmp_path / "mine" / "top.yaml",
        """\
extends: ../team/base.yaml
name: mine
gates:
  safety:
    rules:
      - {id: keep-inconclusive-small-risk, when: 'ab_verdict == "inconclusive" && risk == "low"', decide: continue}
budgets: {wall_min: 30}
""",
    )
    p = load_policy(top)
    assert [part.name for part in p.parts] == ["mine", "team", "cautious"]
    # The team file's test (skip when inconclusive) held for the team policy; mine changes that answer.
    assert PolicyEngine(p).evaluate("safety", INCONCLUSIVE).rule == "keep-inconclusive-small-risk"
    assert p.model.budgets.wall_min == 30 and p.model.name == "mine"
    # A test that fails is reported at its own file:line, saying the parents' rules follow.
    write(
        top,
        top.read_text()
        + """\
tests:
  - gate: safety
    facts: {option: "4", verdict: safe, ab_verdict: inconclusive, gain_pct: 1.5, ci_low: -1.0, ci_high: 4.0,
            pairs: 6, wedges: 0, stress_errors: 0, failed_requests: 0, hazards: 0, confidence: 0.5, risk: low}
    expect: {decide: skip}
""",
    )
    with pytest.raises(SourceError) as exc:
        load_policy(top)
    assert exc.value.path == str(top) and exc.value.line == 9 and "rules of the policies it extends" in str(exc.value)


@pytest.mark.parametrize(
    "files, message",
    [
        ({"a.yaml": "extends: a.yaml\nname: a\n"}, "cycle: .*a.yaml → a.yaml"),
        ({"a.yaml": "extends: b.yaml\nname: a\n", "b.yaml": "extends: ./a.yaml\nname: b\n"}, "cycle: .* → ./a.yaml"),
        ({"a.yaml": "extends: nonesuch\nname: a\n"}, "no preset named 'nonesuch' \\(presets: ask-everything"),
        ({"a.yaml": "extends: b.yaml\nname: a\n", "b.yaml": "name: b\ngates: {safety: {rules: [1]}}\n"}, "b.yaml:2"),
        (
            {
                "a.yaml": "extends: cautious\nname: a\ngates:\n  safety:\n    rules:\n"
                "      - {id: skip-unsafe, decide: ask}\n"
            },
            "a.yaml:6: .*rule id 'skip-unsafe' is already a rule of preset cautious",
        ),
    ],
    ids=["self", "loop", "unknown", "bad-parent", "same-rule-id"],
)
def test_cycles_unknown_parents_and_clashing_rule_ids_are_refused_at_file_line(tmp_path, files, message):
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(SourceError, match=message):
        load_policy(tmp_path / "a.yaml")


def test_a_chain_too_long_is_refused(tmp_path):
    for i in range(12):
        write(tmp_path / f"p{i}.yaml", f"extends: p{i + 1}.yaml\nname: p{i}\n")
    write(tmp_path / "p12.yaml", "name: p12\n")
    with pytest.raises(SourceError, match="at most 7 others"):
        load_policy(tmp_path / "p0.yaml")


def test_lint_names_the_file_of_a_parent_rule_a_child_shadows(tmp_path):
    child = write(
        tmp_path / "c.yaml",
        "extends: cautious\nname: c\ngates:\n  rollback:\n    rules:\n      - {id: always-ask, decide: ask}\n",
    )
    warnings = lint(load_policy(child))
    shadowed = [w for w in warnings if "accept-verified-rollback" in w.message]
    assert shadowed and Path(shadowed[0].file or "").name == "cautious.yaml" and "always-ask" in shadowed[0].message


KEEP_BIG_WINS = """\
extends: cautious
name: keep-big-wins
gates:
  safety:
    rules:
      - {id: keep-big-win, when: 'ab_verdict == "improved" && gain_pct >= 5.0', decide: continue}
"""


def test_a_childs_keep_rule_cannot_get_ahead_of_the_presets_skip_unsafe(tmp_path):
    """Issue 33: a rule from `extends:` ran before the preset's `skip-unsafe`. On main the child's keep rule
    decided an unsafe option (continue: kept); the preset's guard now decides, and the record names both."""
    p = load_policy(write(tmp_path / "mine.yaml", KEEP_BIG_WINS))
    assert SAFETY["verdict"] == "unsafe" and SAFETY["ab_verdict"] == "improved" and SAFETY["gain_pct"] >= 5
    ex = PolicyEngine(p).explain("safety", SAFETY)
    assert (ex.decision.action, ex.decision.rule, ex.decision.then) == ("skip", "skip-unsafe", "rollback")
    assert ex.matched == ["skip-unsafe", "keep-big-win", "ask-when-unclear"]
    assert ex.decision.matched == ex.matched  # what the journal's decision line records
    # A safe win is still the child's to keep, before the preset's own keep rule.
    safe = {**SAFETY, "verdict": "safe", "wedges": 0, "hazards": 0, "risk": "low"}
    ex = PolicyEngine(p).explain("safety", safe)
    assert ex.decision.rule == "keep-big-win" and ex.matched == ["keep-big-win", "keep-safe-win", "ask-when-unclear"]


def test_a_rule_marked_before_guards_is_tried_before_the_presets_guard(tmp_path):
    text = KEEP_BIG_WINS + (
        "      - {id: ask-about-big-unsafe, when: 'verdict == \"unsafe\" && gain_pct >= 5.0', decide: ask,\n"
        "         before_guards: true, note: a person weighs a big win against the hazard}\n"
    )
    p = load_policy(write(tmp_path / "mine.yaml", text))
    assert [r.spec.id for r in p.rules["safety"]][:3] == ["ask-about-big-unsafe", "skip-unsafe", "keep-big-win"]
    ex = PolicyEngine(p).explain("safety", SAFETY)
    assert ex.decision.action == "ask" and ex.matched[:3] == ["ask-about-big-unsafe", "skip-unsafe", "keep-big-win"]
    # The order survives a file that extends this one: its rules go after the last guard, which keeps this
    # file's own `before_guards` rule ahead of it.
    write(tmp_path / "top.yaml", "extends: mine.yaml\nname: top\ngates:\n  safety:\n    rules:\n"
          "      - {id: keep-any-win, when: 'ab_verdict == \"improved\"', decide: continue}\n")  # fmt: skip
    top = load_policy(tmp_path / "top.yaml")
    assert [r.spec.id for r in top.rules["safety"]][:4] == [
        "ask-about-big-unsafe",
        "skip-unsafe",
        "keep-any-win",
        "keep-big-win",
    ]
    # The resolved text a session journals carries the order and the marks, and decides alike on its own.
    again = load_policy_text(top.text, path="policy.yaml")
    assert [r.spec.id for r in again.rules["safety"]] == [r.spec.id for r in top.rules["safety"]]
    assert PolicyEngine(again).explain("safety", SAFETY) == PolicyEngine(top).explain("safety", SAFETY)


def test_a_session_journaled_with_the_childs_rules_first_replays_as_it_was_decided(tmp_path):
    """Sessions recorded before guards journaled the old order: their text is self-contained, so it is never
    re-merged, and replay re-derives what was decided then."""
    data = yaml.safe_load(load_policy(write(tmp_path / "mine.yaml", KEEP_BIG_WINS)).text)
    # The text as main resolved it: the child's rule first, no guard mark.
    rules = data["gates"]["safety"]["rules"]
    (keep,) = [r for r in rules if r["id"] == "keep-big-win"]
    data["gates"]["safety"]["rules"] = [
        keep,
        *({k: v for k, v in r.items() if k != "guard"} for r in rules if r is not keep),
    ]
    as_then = yaml.safe_dump(data, sort_keys=False)
    replayed = load_policy_text(as_then, path="policy.yaml")
    assert PolicyEngine(replayed).evaluate("safety", SAFETY).rule == "keep-big-win"


@pytest.mark.parametrize(
    "rule, message",
    [
        ("{id: g, decide: skip, guard: true}", "mine.yaml:6: .*a guard needs a condition"),
        ("{id: g, when: 'gain_pct > 1.0', decide: continue, guard: true}", "mine.yaml:6: .*a guard must fail closed"),
    ],
    ids=["catch-all", "lets-it-through"],
)
def test_a_guard_that_would_shadow_everything_or_let_a_run_through_is_refused(tmp_path, rule, message):
    write(tmp_path / "mine.yaml", f"extends: cautious\nname: m\ngates:\n  safety:\n    rules:\n      - {rule}\n")
    with pytest.raises(SourceError, match=message):
        load_policy(tmp_path / "mine.yaml")
