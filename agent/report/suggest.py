"""Policy edits suggested by history: where people answered the same kind of gate the same way, on the
same facts, more than once, propose a rule that would have answered it — as a diff, never applied.

The rule goes just before the gate's catch-all rule, so it only decides what the policy used to ask a
person about; every earlier, more specific rule keeps precedence.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from agent.journal.chain import read_events
from agent.journal.view import fold
from policies.expr import Condition, EvalError, ExprError
from policies.gates import FACTS, GateKind
from policies.load import load_policy_text
from policies.schema import Policy
from policies.yamlsrc import SourceError, YamlSource

_FLOW_GATE = re.compile(r"^(\s*)(\w+):\s*\{\s*rules:\s*\[(.*)\]\s*\}\s*$")
_FLOW_ITEM = re.compile(r"\{[^{}]*\}")


@dataclass
class Pattern:
    kind: GateKind
    action: str
    facts: list[dict[str, Any]] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)

    def condition(self) -> str:
        """The facts every one of these answers saw, as CEL (equalities on strings and booleans)."""
        common = dict(self.facts[0])
        for f in self.facts[1:]:
            common = {k: v for k, v in common.items() if f.get(k) == v}
        terms = []
        for k, v in sorted(common.items()):
            if isinstance(v, bool):
                terms.append(k if v else f"!{k}")
            elif isinstance(v, str) and v:
                terms.append(f"{k} == {json.dumps(v)}")
        return " && ".join(terms) or "true"


def _holds(condition: Condition, facts: dict[str, Any]) -> bool:
    try:
        return bool(condition.evaluate(facts))
    except EvalError:  # facts from an older engine version may not fit: not a match
        return False


def _rule_block(indent: str, rule_id: str, when: str, action: str, note: str) -> list[str]:
    return [
        f"{indent}- id: {rule_id}\n",
        f"{indent}  when: {json.dumps(when)}\n",
        f"{indent}  decide: {action}\n",
        f"{indent}  note: {note}\n",
    ]


def human_answers(journals: list[Path]) -> dict[tuple[GateKind, str], Pattern]:
    """(gate kind, action) → the facts of every gate a person answered that way."""
    patterns: dict[tuple[GateKind, str], Pattern] = {}
    for journal in journals:
        view = fold(read_events(journal))
        for gate in view.gates:
            decision = gate.decision
            action = decision.get("action")
            if not str(gate.by or "").startswith("human:") or gate.kind not in FACTS or not isinstance(action, str):
                continue
            if decision.get("condition") or decision.get("targets"):
                continue  # conditional or option-specific answers are not one rule's worth
            kind = cast(GateKind, gate.kind)
            p = patterns.setdefault((kind, action), Pattern(kind=kind, action=action))
            p.facts.append(gate.facts)
            p.sessions.add(view.session)
    return patterns


def suggest(journals: list[Path], policy: Policy, *, minimum: int = 2) -> tuple[list[str], str | None, str]:
    """(one line per suggestion or reason none was made, the unified diff or None, the suggested text)."""
    notes: list[str] = []
    text = policy.text
    source = YamlSource(Path(policy.path or "policy.yaml"), text)
    lines = text.splitlines(keepends=True)
    inserts: list[tuple[int, list[str]]] = []
    patterns = human_answers(journals)
    for (kind, action), p in sorted(patterns.items()):
        if len(p.facts) < minimum:
            continue
        when = p.condition()
        try:
            condition = Condition(when, FACTS[kind])
        except ExprError as exc:
            notes.append(f"{kind}: {when!r} does not compile ({exc}); no rule")
            continue
        # A rule that would also have matched gates people answered differently is not what they meant.
        clashing = sorted(
            {
                a
                for (k, a), other in patterns.items()
                if k == kind and a != action and any(_holds(condition, f) for f in other.facts)
            }
        )
        if clashing:
            notes.append(f"{kind}: people answered both {action} and {', '.join(clashing)} where {when}; no rule")
            continue
        gate_policy = policy.model.gates.get(kind)
        rules = gate_policy.rules if gate_policy is not None else []
        catch_all = next((i for i, r in enumerate(rules) if r.when.strip() == "true"), None)
        if catch_all is None:
            notes.append(f"{kind}: the policy has no catch-all rule to put a suggestion before; add by hand: {when}")
            continue
        at = source.line(("gates", kind, "rules", catch_all))
        if at is None:
            notes.append(f"{kind}: the catch-all rule's line is not known; add by hand: {when}")
            continue
        rule_id = f"suggested-{kind.replace('_', '-')}-{action}"
        note = f"a person answered {action} here {len(p.facts)} times ({len(p.sessions)} session(s))"

        rule = (rule_id, when, action, note)
        line = lines[at - 1]
        flow = _FLOW_GATE.match(line)
        if line.lstrip().startswith("- "):  # a block-style rule list: insert before the catch-all item
            inserts.append((at - 1, _rule_block(line[: len(line) - len(line.lstrip())], *rule)))
        elif flow and flow.group(2) == kind:  # `triage: {rules: [...]}` on one line: write it out as a block
            indent = flow.group(1)
            items = _FLOW_ITEM.findall(flow.group(3))
            out = [f"{indent}{kind}:\n", f"{indent}  rules:\n"]
            for i, item in enumerate(items):
                if i == catch_all:
                    out += _rule_block(indent + "    ", *rule)
                out.append(f"{indent}    - {item}\n")
            inserts.append((at - 1, out))
            inserts.append((at, ["\0drop"]))
        else:
            notes.append(f"{kind}: cannot place a rule in this file's layout; add by hand: when {when} decide {action}")
            continue
        notes.append(f"{kind}: {action} when {when} — answered so {len(p.facts)} times")
    if not inserts:
        return notes or ["no gate was answered the same way by people often enough to suggest a rule"], None, text
    edited = list(lines)
    for index, added in sorted(inserts, reverse=True):
        if added == ["\0drop"]:
            del edited[index - 1]  # the one-line flow form just rewritten as a block
        else:
            edited[index:index] = added
    try:
        load_policy_text("".join(edited), path=str(policy.path))
    except SourceError as exc:
        notes.append(f"the suggested policy does not load ({exc}); review by hand")
    name = str(policy.path or "policy.yaml")
    diff = "".join(difflib.unified_diff(lines, edited, fromfile=f"a/{name}", tofile=f"b/{name}"))
    return notes, diff, "".join(edited)
