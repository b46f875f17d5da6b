"""Layering and start-up hygiene (DESIGN §2, §8) and lint, checked in fresh interpreters."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    mods = modules_after("import agent.cli, agent.run.runner, agent.graph, policies.engine, tools.transport")
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


def test_the_screens_first_frame_loads_no_decision_reader():
    # The one-line reader and the gate tables load when a gate's dialog opens or a line is typed, not for the first
    # frame (bench/tui.py: launch to first frame ≤ 1 s): they were a tenth of it.
    mods = modules_after("import tui.app, tui.source, tui.screens")
    assert not {"policies.decisions", "policies.clauses", "policies.gates"} & mods


def test_the_anthropic_sdk_loads_only_when_a_model_is_called():
    # Choosing the Claude brain, building it and the graph must not pay the SDK's import cost.
    mods = modules_after("import agent.brain.claude, agent.run.runner, agent.graph")
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


# ---------------------------------------------------------------- processes end by their own PIDs

# Ending processes by name, pattern or user reaches other tests' and other people's work on a shared
# machine; the project's code and tests end only what they started (tests/procs.py: by PID, from /proc).
BROAD_KILLS = [
    re.compile(r"\b(pkill|killall|pgrep|pidof)\b"),
    re.compile(r"\bxargs\b[^|;&\n]*\bkill\b"),
    re.compile(r"\bkill\b[^|;&\n]*(\$\(|`)"),  # kill $(…) / kill `…`: PIDs found by a search, not known
    re.compile(r"\bkill\s+(-[A-Za-z0-9]+\s+)*(--\s+)?-1\b"),  # every process the user may signal
]
SHELL_LIKE = {".sh", ".yaml", ".yml", ".bash"}


def shell_strings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of everything in `path` that could reach a shell: in Python every string literal but
    docstrings, elsewhere every line without its comment."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        for number, line in enumerate(text.splitlines(), 1):
            yield number, line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        return
    tree = ast.parse(text)
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def broad_kills(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {text.strip()[:80]}"
        for number, text in shell_strings(path)
        if any(rx.search(text) for rx in BROAD_KILLS)
    ]


@pytest.mark.parametrize(
    "code",
    [
        'subprocess.run(["pkill", "-KILL", "-u", user])',
        'subprocess.run(["pkill", "-KILL", "-f", f"sshd: {user}"], check=True)',
        'os.system("killall simserve")',
        'run("pgrep -f stress | xargs kill -9")',
        'run("kill -9 $(pgrep -f sshd)")',
        'run(f"kill `cat {pidfile}`")',
        'run("kill -KILL -1")',
        'run("kill -- -1")',
    ],
)
def test_the_hygiene_check_catches_a_broad_kill(tmp_path: Path, code: str) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(f"import os, subprocess\n{code}\n")
    assert broad_kills(sample)
    script = tmp_path / "sample.sh"
    script.write_text(code.split('"')[1] + "\n")
    assert broad_kills(script) or code.startswith("subprocess.run([")


@pytest.mark.parametrize(
    "code",
    [
        'run(f"kill -{sig} -{pgid} 2>/dev/null")',  # a process group whose id the command itself reported
        "os.killpg(proc.pid, signal.SIGTERM)",
        'run("echo skill; kill -0 1234")',
    ],
)
def test_the_hygiene_check_lets_a_kill_by_known_pid_pass(tmp_path: Path, code: str) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(f"import os, signal\n{code}\n")
    assert broad_kills(sample) == []


def test_nothing_ends_processes_by_name_pattern_or_user() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], capture_output=True, text=True, cwd=ROOT
    ).stdout.split()
    scanned = [
        p
        for p in sorted({ROOT / name for name in listed})
        if p.is_file()
        and p != Path(__file__)
        and (p.suffix == ".py" or p.suffix in SHELL_LIKE or p.name == "Makefile" or p.parent.name == ".ci")
    ]
    assert len(scanned) > 50  # the check really looked at the tree
    found = [hit for p in scanned for hit in broad_kills(p)]
    assert found == [], "\n".join(found)


def test_only_run_one_hands_a_command_to_a_transport() -> None:
    """Every command reaches a host through agent.exec.dispatch.run_one, which takes a Cleared command (what the policy
    or a person allowed, in the form it was allowed): a second caller of a transport's `execute` (or its keyword form
    `run`), or a second place that makes a `CommandRequest`, would be a way around the command policy."""
    callers, requests = [], []
    for path in [*ROOT.glob("agent/**/*.py"), *ROOT.glob("tui/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("run", "execute")
                and "transport" in ast.unparse(node.func.value)
            ):
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if "CommandRequest" in ast.unparse(node.func):
                requests.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(callers) == 1 and callers[0].startswith("agent/exec/dispatch.py:"), callers
    assert len(requests) == 1 and requests[0].startswith("agent/exec/dispatch.py:"), requests
