"""No import cycles in agent/, policies/ or tools/: every arrow between their modules points one way.

An import counts wherever it is written (module level, inside a function, under `if TYPE_CHECKING:`): a lazy
or type-only import still ties two modules together, and hiding one is how cycles creep back in.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "policies", "tools")


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    mods = modules(root, packages)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(package, node.module, node.level)
                if base is None:
                    continue
                # `from a.b import c` reaches a.b, or a.b.c when c is a module (a package's `__init__`
                # importing its own submodules, `from a.b import c` in a/b/__init__.py, reaches only them)
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            edges[name].update(t for t in targets if t in mods)
    return edges


def _absolute(package: str, module: str | None, level: int) -> str | None:
    """The absolute name a `from` import refers to (relative ones resolved against `package`)."""
    if level == 0:
        return module
    parts = package.split(".")
    if level - 1 >= len(parts):
        return None  # above the top of the tree: not one of ours
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges[v]:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _shortest_cycle(edges: dict[str, set[str]], members: set[str], start: str) -> list[str]:
    """The shortest cycle through `start` inside its component (breadth first; one always exists)."""
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for at in frontier:
            for w in sorted(edges[at] & members):
                if w == start:
                    trail = [at]
                    while trail[-1] != start:
                        trail.append(came[trail[-1]])
                    return [*reversed(trail), start]
                if w not in came:
                    came[w] = at
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is on no cycle")  # not reached for a component from `cycles`


def describe(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """Cycles through the component, written a -> b -> a, until every one of its modules is on one."""
    members, shown, out = set(component), set[str](), []
    for start in component:
        if start not in shown:
            cycle = _shortest_cycle(edges, members, start)
            shown.update(cycle)
            out.append(" -> ".join(cycle))
    return out


def rooms(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph one level up: each top package's direct modules and sub-packages (`agent.exec`, `agent.run`,
    `tools.commands`) as one node, an arrow between two of them wherever a module of one imports a module of the
    other."""
    out: dict[str, set[str]] = {}
    for name, targets in edges.items():
        room = ".".join(name.split(".")[:2])
        out.setdefault(room, set()).update(".".join(t.split(".")[:2]) for t in targets)
        out[room].discard(room)
    return out


def test_no_import_cycles() -> None:
    edges = graph(ROOT)
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(
        f"{', '.join(c)}:\n" + "\n".join(f"  {line}" for line in describe(edges, c)) for c in found
    )


def test_no_cycles_between_sub_packages() -> None:
    """A room imports the rooms below it and never one above: `agent.run` (the session driver) above `agent.graph`,
    `agent.nodes` and `agent.exec` (the command pipeline the nodes call), `agent.cli` above `agent.report`."""
    edges = rooms(graph(ROOT))
    found = cycles(edges)
    assert not found, "cycles between sub-packages:\n" + "\n".join(
        f"{', '.join(c)}:\n" + "\n".join(f"  {line}" for line in describe(edges, c)) for c in found
    )


def test_the_command_pipeline_is_below_the_nodes_and_the_driver() -> None:
    edges = rooms(graph(ROOT))
    assert edges["agent.exec"].isdisjoint({"agent.run", "agent.graph", "agent.nodes", "agent.cli", "agent.report"})
    assert "agent.exec" in edges["agent.nodes"] and "agent.run" not in edges["agent.nodes"]


def test_the_detector_finds_a_cycle_between_rooms_that_no_two_modules_make(tmp_path: Path) -> None:
    pkg = tmp_path / "agent"
    for room in ("run", "exec"):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "run" / "runner.py").write_text("from agent.exec import dispatch\n")
    (pkg / "exec" / "dispatch.py").write_text("")
    (pkg / "exec" / "planning.py").write_text("def f():\n    from agent.run.answers import x\n")
    (pkg / "run" / "answers.py").write_text("")
    edges = graph(tmp_path, ("agent",))
    assert cycles(edges) == []  # module by module, every arrow points one way
    assert cycles(rooms(edges)) == [["agent.exec", "agent.run"]]


def test_the_detector_finds_a_cycle_however_it_is_hidden(tmp_path: Path) -> None:
    pkg = tmp_path / "agent"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from agent.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    import agent.c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent.a import x\n")
    (pkg / "d.py").write_text("import agent.a\n")  # reaches the cycle but is not in it
    edges = graph(tmp_path, ("agent",))
    found = cycles(edges)
    assert found == [["agent.a", "agent.c", "agent.sub.b"]]
    assert describe(edges, found[0]) == ["agent.a -> agent.sub.b -> agent.c -> agent.a"]


def test_the_detector_resolves_relative_imports_and_own_submodules(tmp_path: Path) -> None:
    pkg = tmp_path / "agent"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from agent import x\n")  # a package importing its own submodule
    (pkg / "x.py").write_text("from . import y\n")
    (pkg / "y.py").write_text("def f():\n    from .x import g\n")
    (pkg / "z.py").write_text("import agent.z\n")
    edges = graph(tmp_path, ("agent",))
    assert edges["agent"] == {"agent.x"}
    found = cycles(edges)
    assert found == [["agent.x", "agent.y"], ["agent.z"]]
    assert [describe(edges, c) for c in found] == [["agent.x -> agent.y -> agent.x"], ["agent.z -> agent.z"]]
