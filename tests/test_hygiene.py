"""Layering and start-up hygiene (DESIGN §2, §8) and lint, checked in fresh interpreters."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return set(out.stdout.split())


def test_core_packages_never_import_textual():
    mods = modules_after("import agent.cli, agent.session, agent.graph, policies.engine, tools.transport")
    assert "textual" not in mods


def test_help_imports_no_heavy_framework():
    code = (
        "import sys\nsys.argv = ['signoff', '--help']\nfrom agent.cli import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass"
    )
    mods = modules_after(code)
    for heavy in ("langgraph", "anthropic", "paramiko", "textual"):
        assert heavy not in mods, heavy


def test_listing_sessions_imports_no_heavy_framework(tmp_path):
    code = (
        f"import os, sys\nos.environ['SIGNOFF_HOME'] = {str(tmp_path)!r}\nsys.argv = ['signoff', 'sessions']\n"
        "from tui.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    )
    mods = modules_after(code)
    for heavy in ("langgraph", "anthropic", "paramiko", "textual"):
        assert heavy not in mods, heavy


def test_the_anthropic_sdk_loads_only_when_a_model_is_called():
    # Choosing the Claude brain, building it and the graph must not pay the SDK's import cost.
    mods = modules_after("import agent.brain.claude, agent.session, agent.graph")
    assert "anthropic" not in mods


def imports_of(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_layering_points_one_way():
    assert not imports_of("tools") & {"agent", "policies", "tui", "langgraph"}
    assert not imports_of("policies") & {"agent", "tools", "tui", "langgraph"}
    assert "tui" not in imports_of("agent")


def test_ruff_is_clean():
    ruff = Path(sys.executable).with_name("ruff")
    r = subprocess.run([str(ruff), "check", "."], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout
