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
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from a.b import c` reaches a.b, and a.b.c too when c is a module
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for target in targets:
                if target in mods and target != name:
                    edges[name].add(target)
                elif target == name:
                    edges[name].add(name)
    return edges


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


def _path(edges: dict[str, set[str]], component: list[str]) -> str:
    """One cycle through the component, written a -> b -> a."""
    members, start = set(component), component[0]
    trail, seen, at = [start], {start}, start
    while True:
        nxt = sorted(w for w in edges[at] if w in members)
        back = (start in nxt and len(trail) > 1) or nxt == [start]
        if back:
            return " -> ".join([*trail, start])
        fresh = [w for w in nxt if w not in seen]
        if not fresh:
            return " -> ".join([*trail, "…"])
        at = fresh[0]
        trail.append(at)
        seen.add(at)


def test_no_import_cycles() -> None:
    edges = graph(ROOT)
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(_path(edges, c) for c in found)


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
    assert _path(edges, found[0]) == "agent.a -> agent.sub.b -> agent.c -> agent.a"
