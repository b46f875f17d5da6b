"""Where each node sends the run is in its type.

A node that can go to more than one place returns `Command[Literal[...]]` naming them (LangGraph reads the same
annotation to know the node's ends), and a destination that is not named there is a type error in `make lint`. This
test holds the rest, reading the graph and the nodes' source:

- every node either has its one plain edge in agent/graph.py or declares its destinations, never both and never
  neither (an annotation LangGraph cannot resolve leaves a node with no declared way on, and nothing else says so);
- every destination a node declares is one it goes to in its code (followed through the functions of agent/nodes/
  it calls), and every one it goes to is declared (what the type checker says, held here too so that an ignore
  comment cannot hide it);
- a node that picks its destination from what it is writing (the command gate fans out to the options it has just
  answered) reads that as the graph will have it: `agent.state.updated` against LangGraph's own reducers.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from agent.graph import build
from agent.state import State, updated

# Calls that make a fan-out of investigation subagents: a `goto` of `Send`s to the "investigate" node.
FANS_OUT = {"fan_out": "investigate", "_reinvestigate": "investigate"}


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def graph_nodes() -> tuple[dict[str, Any], dict[str, set[str]], dict[str, set[str]]]:
    """(node name → the function it runs, node → its plain edges' targets, node → the destinations it declares)."""
    g = build()
    functions = {name: spec.runnable for name, spec in g.nodes.items()}
    plain: dict[str, set[str]] = {}
    for source, target in g.edges:
        if source != START:
            plain.setdefault(source, set()).add(target)
    declared = {name: set(spec.ends or ()) for name, spec in g.nodes.items() if spec.ends}
    runs = {name: _function_of(runnable) for name, runnable in functions.items()}
    return runs, plain, declared


def _function_of(runnable: Any) -> Any:
    """The Python function a node runs (LangGraph wraps it in a RunnableCallable); None for a compiled subgraph."""
    return getattr(runnable, "func", None)


def destinations(function: Any, within: str = "agent.nodes", seen: set[str] | None = None) -> dict[str, set[str]]:
    """Every destination `function` names in a `Command(goto=...)`, by where it is named (`module.function`),
    following the calls it makes to other functions of its package (`within`)."""
    seen = seen if seen is not None else set()
    where = f"{function.__module__}.{function.__qualname__}"
    if where in seen or not function.__module__.startswith(within):
        return {}
    seen.add(where)
    tree = ast.parse(_dedented(inspect.getsource(function)))
    out: dict[str, set[str]] = {}
    assigned = _assigned_strings(tree)
    for call in _calls(tree):
        if isinstance(call.func, ast.Name) and call.func.id == "Command":
            for keyword in call.keywords:
                if keyword.arg == "goto":
                    out.setdefault(where, set()).update(_goes_to(keyword.value, assigned))
    module = inspect.getmodule(function)
    local = _imported_here(tree)
    for call in _calls(tree):
        callee = local.get(call.func.id) if isinstance(call.func, ast.Name) and call.func.id in local else None
        callee = callee or _callee(call, module, within)
        if callee is not None:
            for place, names in destinations(callee, within, seen).items():
                out.setdefault(place, set()).update(names)
    return out


def _goes_to(value: ast.expr, assigned: dict[str, set[str]]) -> set[str]:
    """The nodes a `goto` may name: a literal, a choice between them, a name assigned only literals, or a fan-out."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.IfExp):
        return _goes_to(value.body, assigned) | _goes_to(value.orelse, assigned)
    if isinstance(value, ast.Name) and value.id in assigned:
        return assigned[value.id]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in FANS_OUT:
        return {FANS_OUT[value.func.id]}
    raise AssertionError(f"a destination this test cannot read: {ast.unparse(value)}")


def _imported_here(tree: ast.AST) -> dict[str, Any]:
    """Functions of agent/nodes/ a function imports inside itself (`from agent.nodes.abandon import abandoning`)."""
    out: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent.nodes"):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                out[alias.asname or alias.name] = getattr(module, alias.name)
    return out


def _dedented(source: str) -> str:
    lines = source.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)


def _assigned_strings(tree: ast.AST) -> dict[str, set[str]]:
    """Names assigned string constants in the function (`onward = "confirm" if … else "continue_gate"`)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and (strings := _literals(node.value)) is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, set()).update(strings)
    return out


def _literals(value: ast.expr) -> set[str] | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.IfExp):
        body, orelse = _literals(value.body), _literals(value.orelse)
        return None if body is None or orelse is None else body | orelse
    return None


def _callee(call: ast.Call, module: ModuleType | None, within: str) -> Any:
    if isinstance(call.func, ast.Name) and module is not None:
        found = getattr(module, call.func.id, None)
    elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and module is not None:
        found = getattr(getattr(module, call.func.value.id, None), call.func.attr, None)
    else:
        return None
    if inspect.isfunction(found) and found.__module__.startswith(within):
        return found
    return None


def test_every_node_has_one_plain_edge_or_declares_where_it_goes() -> None:
    runs, plain, declared = graph_nodes()
    wrong = []
    for node in runs:
        if node in plain and node in declared:
            wrong.append(f"{node}: a plain edge to {sorted(plain[node])} and declared destinations {declared[node]}")
        elif node not in plain and node not in declared:
            wrong.append(f"{node}: no edge and no declared destinations (does its return annotation resolve?)")
        elif node in plain and len(plain[node]) != 1:
            wrong.append(f"{node}: {len(plain[node])} plain edges")
    assert not wrong, "\n".join(wrong)
    assert len(declared) >= 18 and plain["report"] == {END}  # the scan saw the graph as built


def mismatches(node: str, ends: set[str], found: dict[str, set[str]]) -> list[str]:
    named = set().union(*found.values()) if found else set()
    wrong = [f"{node}: declares {end!r}, which its code never goes to" for end in sorted(ends - named)]
    for place, names in found.items():
        wrong += [f"{node}: {place} goes to {name!r}, not declared" for name in sorted(names - ends)]
    return wrong


def test_every_destination_a_node_declares_is_one_it_goes_to_and_no_other() -> None:
    runs, _, declared = graph_nodes()
    checked, wrong = 0, []
    for node, ends in declared.items():
        found = destinations(runs[node])
        checked += sum(len(names) for names in found.values())
        wrong += mismatches(node, ends, found)
    assert checked > 50  # the scan really found the nodes' destinations (there are about sixty)
    assert not wrong, "\n".join(wrong)


def _wrong_node(state: State) -> Command[Literal["keep", "rollback"]]:  # a node written wrong, for the detector
    if state.get("stopping"):
        return Command(goto="report")  # pyright: ignore[reportReturnType]
    return _wrong_helper() if state.get("current") else Command(goto="keep")


def _wrong_helper() -> Command[Literal["keep", "rollback"]]:
    onward = "confirm" if 1 else "keep"
    return Command(goto=onward)  # pyright: ignore[reportReturnType, reportArgumentType]


def test_the_scan_finds_a_destination_not_declared_and_one_never_gone_to() -> None:
    found = destinations(_wrong_node, within=__name__)
    assert found == {f"{__name__}._wrong_node": {"report", "keep"}, f"{__name__}._wrong_helper": {"confirm", "keep"}}
    assert mismatches("wrong", {"keep", "rollback"}, found) == [
        "wrong: declares 'rollback', which its code never goes to",
        f"wrong: {__name__}._wrong_node goes to 'report', not declared",
        f"wrong: {__name__}._wrong_helper goes to 'confirm', not declared",
    ]


def test_updated_is_the_state_langgraph_makes_from_the_same_update() -> None:
    before: State = {
        "plan": [1, 2],
        "approved": ["true"],
        "options": {"1": {"outcome": "untested", "reasons": ["r"]}, "2": {"outcome": "untested"}},
        "permission_requests": {"1": [{"host": "h", "command": "ls"}], "2": [{"host": "h", "command": "df"}]},
    }
    update: State = {
        "plan": [2],
        "approved": ["ls"],
        "options": {"1": {"outcome": "skipped"}},
        "permission_requests": {"2": []},
        "command_scope": None,
    }
    g: StateGraph[State, None, State, State] = StateGraph(State)

    def node(state: State) -> State:
        return update

    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    after = g.compile().invoke(before)
    # (LangGraph also gives every growing entry the node did not touch its empty value.)
    assert updated(before, update) == {k: v for k, v in after.items() if k in before or k in update}
    assert after["options"]["1"] == {"outcome": "skipped", "reasons": ["r"]} and after["approved"] == ["true", "ls"]
