"""Every route a node writes is one its edge in agent/graph.py takes by name.

A node says where the run goes next by writing `"route": "<name>"` into the state, and the graph maps that name to
the next node: in a table (`add_conditional_edges(node, _route, {...})`) or in a router function that compares the
route with names. The names are a type (`agent.state.Route`; nodes return `State`), so a misspelt one is a type error
in `make lint`; which names each node's edge takes is this test's: it reads the graph and the nodes' source and fails
on a name a node writes that its own edge does not take by name (every literal route a node function writes, itself
or in a function of agent/nodes/ it calls, followed through calls), and on a name an edge takes that its node never
writes. (Destinations as each node's own type, `Command[Literal[…]]`, are not built: issue 39.)
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from agent import graph as graph_module
from agent import nodes


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(tree) if isinstance(n, ast.Call))


def edges() -> tuple[dict[str, str], dict[str, set[str] | None]]:
    """(node name → `module.function` it runs, node name → the route names its edge handles, None: it reads none)."""
    tree = ast.parse(Path(graph_module.__file__).read_text())
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    runs: dict[str, str] = {}
    handled: dict[str, set[str] | None] = {}
    for call in _calls(tree):
        if not isinstance(call.func, ast.Attribute) or not call.args:
            continue
        name = call.args[0]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            continue
        if call.func.attr == "add_node" and isinstance(call.args[1], ast.Attribute):
            runs[name.value] = ast.unparse(call.args[1])
        elif call.func.attr == "add_conditional_edges":
            router, table = call.args[1], call.args[2] if len(call.args) > 2 else None
            assert isinstance(router, ast.Name), ast.unparse(router)
            if router.id == "_route":
                assert isinstance(table, ast.Dict), f"{name.value}: _route needs a table"
                handled[name.value] = {k.value for k in table.keys if isinstance(k, ast.Constant)}
            else:
                handled[name.value] = _names_compared(functions[router.id])
    return runs, handled


def _names_compared(router: ast.FunctionDef) -> set[str] | None:
    """The route names a router function handles: those it compares the route with (`route == "x"`, `route in
    (…)`) or looks up in a table (`{…}.get(route, …)`). None when it never reads the route."""
    source = ast.unparse(router)
    if '"route"' not in source and "'route'" not in source:
        return None
    names: set[str] = set()
    for node in ast.walk(router):
        if isinstance(node, ast.Compare) and "route" in ast.unparse(node.left):
            for right in node.comparators:
                names |= {c.value for c in ast.walk(right) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Dict)
            and node.args
            and "route" in ast.unparse(node.args[0])
        ):
            names |= {k.value for k in node.func.value.keys if isinstance(k, ast.Constant)}
    return names


def _function(dotted: str) -> Any:
    module_name, _, function = dotted.partition(".")
    module: ModuleType = getattr(nodes, module_name)
    return getattr(module, function)


def routes_written(function: Any, seen: set[str] | None = None) -> dict[str, set[str]]:
    """Every literal route `function` writes, by where it is written (`module.function`), following the calls it
    makes to other functions of agent/nodes/."""
    seen = seen if seen is not None else set()
    where = f"{function.__module__}.{function.__qualname__}"
    if where in seen or not function.__module__.startswith("agent.nodes"):
        return {}
    seen.add(where)
    tree = ast.parse(_dedented(inspect.getsource(function)))
    out: dict[str, set[str]] = {}
    assigned = _assigned_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "route":
                    out.setdefault(where, set()).update(_strings(value, assigned))
    module = inspect.getmodule(function)
    local = _imported_here(tree)
    for call in _calls(tree):
        callee = local.get(call.func.id) if isinstance(call.func, ast.Name) and call.func.id in local else None
        callee = callee or _callee(call, module)
        if callee is not None:
            for place, names in routes_written(callee, seen).items():
                out.setdefault(place, set()).update(names)
    return out


def _imported_here(tree: ast.AST) -> dict[str, Any]:
    """Functions of agent/nodes/ a function imports inside itself (`from agent.nodes.apply import in_doubt`)."""
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
    """Names assigned string constants in the function (`done = "approved" if … else "next"`)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and (strings := _literals(node.value)) is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, set()).update(strings)
    return out


def _literals(value: ast.expr) -> set[str] | None:
    """The strings an expression of string literals (and conditional choices between them) may be; None for any
    other expression."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.IfExp):
        body, orelse = _literals(value.body), _literals(value.orelse)
        return None if body is None or orelse is None else body | orelse
    return None


def _strings(value: ast.expr, assigned: dict[str, set[str]]) -> set[str]:
    """The names a route's value may be: a literal, a choice between literals, or a name assigned only those."""
    if (strings := _literals(value)) is not None:
        return strings
    if isinstance(value, ast.Name) and value.id in assigned:
        return assigned[value.id]
    raise AssertionError(f"a route that is not a literal: {ast.unparse(value)}")


def _callee(call: ast.Call, module: ModuleType | None) -> Any:
    if isinstance(call.func, ast.Name) and module is not None:
        found = getattr(module, call.func.id, None)
    elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and module is not None:
        found = getattr(getattr(module, call.func.value.id, None), call.func.attr, None)
    else:
        return None
    if inspect.isfunction(found) and found.__module__.startswith("agent.nodes"):
        return found
    return None


def test_every_route_a_node_writes_is_one_its_edge_takes_by_name() -> None:
    runs, handled = edges()
    checked, missing = 0, []
    for node, names in handled.items():
        if names is None:
            continue
        for place, written in routes_written(_function(runs[node])).items():
            checked += len(written)
            missing += [f"{node}: {place} writes route {name!r}" for name in sorted(written - names)]
    assert checked > 40  # the scan really found the nodes' routes (there are about fifty)
    assert not missing, "routes no edge takes by name:\n" + "\n".join(missing)


def test_every_name_an_edge_takes_is_written_by_its_node() -> None:
    runs, handled = edges()
    unused = []
    for node, names in handled.items():
        if names is None:
            continue
        written = set().union(*routes_written(_function(runs[node])).values())
        unused += [f"{node}: its edge takes {name!r}, which it never writes" for name in sorted(names - written)]
    assert not unused, "\n".join(unused)
