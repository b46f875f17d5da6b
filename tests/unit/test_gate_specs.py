"""Every gate kind is one `GateSpec` in `policies.gates.GATES`, and no other module keeps a table by gate kind.

The scan below is what makes "one place" hold: a new table keyed by gate kind anywhere in the product (a dict of
kinds, a named tuple or set of them) fails here, so a new kind can never be missing from a table nobody knew of.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from policies.decisions import parse_at_gate
from policies.gates import ACTIONS, GATE_KINDS, GATES, OPTION_GATES, Gate, GateKind, spec_for, suggested_answer

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("agent", "policies", "tools", "tui")
KINDS = frozenset(get_args(GateKind))
# The one module that may key by gate kind: where the specs are.
HOME = ROOT / "policies" / "gates.py"


def test_every_gate_kind_has_one_spec_in_the_order_of_the_type() -> None:
    assert tuple(GATES) == get_args(GateKind) == GATE_KINDS
    assert OPTION_GATES == ("plan", "triage", "continue_or_ask")  # the gates that name and pick options


@pytest.mark.parametrize("kind", GATE_KINDS)
def test_a_spec_is_consistent_with_itself(kind: GateKind) -> None:
    spec = GATES[kind]
    allowed = set(spec.allowed)
    assert allowed <= set(ACTIONS) and "ask" in allowed and "stop" in allowed
    # Failing closed never lets a run go ahead, and is always an answer the gate takes.
    assert {"ask", "stop"} <= set(spec.fail_closed) <= allowed
    assert not set(spec.fail_closed) & {"continue", "approve", "select", "retry"}
    assert set(spec.meaning) <= allowed
    for said, read in spec.synonyms.items():
        assert said not in allowed and read in allowed, (said, read)
    assert spec.primary is None or (spec.primary in allowed and {"approve", "continue"} <= allowed)
    for hidden, shown in spec.same_as.items():
        assert hidden in allowed and shown in allowed and hidden != shown
    if spec.unnamed is not None:
        assert spec.unnamed[0] in allowed and spec.unnamed[0] != "ask" and spec.unnamed[1]
    if spec.takes_targets:
        assert {"skip", "defer", "select"} <= allowed


@pytest.mark.parametrize("kind", GATE_KINDS)
def test_the_suggested_answer_is_one_the_gate_takes(kind: GateKind) -> None:
    facts_sets = [{}]
    if kind == "safety":
        facts_sets = [{"verdict": "safe", "ab_verdict": "improved"}, {"verdict": "unsafe", "ab_verdict": "improved"}]
    for facts in facts_sets:
        said = suggested_answer(kind, facts)
        gate = Gate(id="g", kind=kind, option=1, question="?", facts={}, allowed=list(GATES[kind].allowed), options=[1])
        decision = parse_at_gate(said, gate)
        assert decision.action in GATES[kind].allowed, (kind, said, decision.action)


def test_a_kind_from_outside_is_looked_up_never_trusted() -> None:
    assert spec_for("safety") is GATES["safety"]
    for forged in ("Safety", "safety ", "", None, 3, ["safety"]):
        assert spec_for(forged) is None


def _kind(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant) and node.value in KINDS:
        return True
    # ("command", "continue"): a key of a table by gate kind and something else
    return isinstance(node, ast.Tuple) and bool(node.elts) and _kind(node.elts[0])


WRAPS = ("frozenset", "set", "tuple")


def tables_by_gate_kind(source: str) -> list[tuple[int, str]]:
    """(line, what) for each table keyed by gate kind in `source`: a dict whose keys, two or more, are all gate kinds
    (or tuples led by one), or a tuple, list or set of two or more gate kinds given a name, wherever it is."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        # Every key a gate kind: a route map or a record that happens to have a "command" key is not one.
        if isinstance(node, ast.Dict) and len(node.keys) >= 2 and all(map(_kind, node.keys)):
            found.append((node.lineno, "a dict keyed by gate kind"))
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        # frozenset([...]), set(...), tuple(...) of a display is the display
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in WRAPS and value.args:
            value = value.args[0]
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)) and len(value.elts) >= 2 and all(map(_kind, value.elts)):
            found.append((node.lineno, "a named collection of gate kinds"))
    return found


def test_the_scan_finds_the_tables_it_is_there_to_forbid() -> None:
    # The tables this module replaced, as they were written: each must be found.
    old = """
PRIMARY = {"plan": "approve", "rollback": "approve", "command": "approve"}
UNMARKED = ("command", "budget")
NEEDS_TARGETS = {"plan", "triage", "continue_or_ask"}
PROGRESSION: tuple[GateKind, ...] = ("plan", "triage", "continue_or_ask")
_AT_GATE: dict = {("command", "continue"): "approve", ("rollback", "rollback"): "retry"}
LATER = frozenset(["goal", "brain_unavailable"])
def suggested(kind):
    return {"plan": "approve", "triage": "continue"}[kind]
"""
    assert sorted(line for line, _ in tables_by_gate_kind(old)) == [2, 3, 4, 5, 6, 7, 9]
    # A branch on one kind, a tag naming the kinds a phrase applies at, a kind in a message: not tables.
    fine = """
if kind == "safety" and action in ("skip", "defer"):
    pass
SYNONYMS = [(r"^jump it$", "skip it", ("safety", "continue_or_ask"))]
print("a plan gate", {"kind": "plan"})
ROUTES = {"apply": "apply", "command": "command_gate", "budget": "budget_gate"}
"""
    assert tables_by_gate_kind(fine) == []


def test_no_module_but_the_specs_keeps_a_table_by_gate_kind() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != HOME
        for line, what in tables_by_gate_kind(path.read_text())
    ]
    assert found == [], "put it in policies/gates.py: GateSpec, and read it from GATES\n" + "\n".join(found)
