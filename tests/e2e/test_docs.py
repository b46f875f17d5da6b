"""Every code block in README.md and docs/*.md does what the text says (docs/reference.md is generated
and checked by tests/unit/test_reference.py).

The convention, by the block's info string:
- ```console — a shell session. Lines starting with `$ ` are commands, run one after another in one
  bash (so `S=$(…)` carries over) in a fresh directory where `examples/` is the repository's, with
  `signoff` on PATH and SIGNOFF_HOME empty; each must exit 0, or N when the next line is `# exit N`.
  Other lines are what it prints (not compared). A block whose first line is `# not run: <why>` is not
  run (a GPU host, an API key, a team's PostgreSQL); there are few, and the count is kept below.
- ```yaml campaign DIR — must load as a campaign saved in DIR (beside the files it uploads);
  ```yaml policy — must load as a policy (its tests pass); ```yaml fragment — must parse as YAML.
- ```text and ```json — output or data shown, not run (json must parse).
Any other info string, or none, fails: a block must say what it is.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, SIGNOFF

DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "reference.md")]
MAX_NOT_RUN = 6
BIN = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv") / "bin"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence
    info: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(.*)$", lines[i])
        if m and not lines[i].strip().startswith("````"):
            indent, info = m.group(1), m.group(2).strip()
            body: list[str] = []
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
                j += 1
            out.append(Block(path, i + 1, info, "\n".join(body) + "\n"))
            i = j + 1
        else:
            i += 1
    return out


ALL = [b for p in DOCS for b in blocks(p)]


def commands(block: Block) -> list[tuple[str, int]]:
    """(command, expected exit) for each `$ ` line of a console block."""
    out: list[tuple[str, int]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], 0))
        elif (m := re.match(r"^# exit (\d+)$", line.strip())) and out:
            out[-1] = (out[-1][0], int(m.group(1)))
    return out


def not_run(block: Block) -> bool:
    return block.body.lstrip().startswith("# not run:")


def test_every_block_says_what_it_is_and_few_are_not_run():
    kinds = {"console", "text", "json", "yaml"}
    unknown = [f"{b.where}: ```{b.info}" for b in ALL if b.info.split(" ")[0] not in kinds]
    assert not unknown, "blocks must be console, yaml campaign|policy|fragment, text or json"
    yaml_kinds = [b for b in ALL if b.info.split(" ")[0] == "yaml"]
    vague = [
        b.where
        for b in yaml_kinds
        if len(b.info.split()) < 2 or b.info.split()[1] not in ("campaign", "policy", "fragment")
    ]
    assert not vague, "a yaml block says campaign DIR, policy or fragment"
    skipped = [b.where for b in ALL if b.info == "console" and not_run(b)]
    assert len(skipped) <= MAX_NOT_RUN, skipped
    run = [b for b in ALL if b.info == "console" and not not_run(b)]
    assert len(run) >= 10 and all(commands(b) for b in run)
    # Commands shown as output in a text block would be a way around running them.
    assert not [b.where for b in ALL if b.info == "text" and any(x.startswith("$ ") for x in b.body.splitlines())]
    for b in ALL:
        if b.info == "json":
            json.loads(b.body)


def _console(block: Block) -> object:
    # A whole campaign driven by hand takes a worker ~20 s: started first, it never ends the suite.
    return pytest.param(block, id=block.where, marks=[pytest.mark.heavy] if len(commands(block)) >= 3 else [])


@pytest.mark.parametrize("block", [_console(b) for b in ALL if b.info == "console" and not not_run(b)])
def test_console_blocks_run_and_exit_as_shown(block: Block, tmp_path: Path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    # `signoff` is the test launcher (tests/launch.py): the same `python -m agent.cli`, forked by this worker's warm
    # fork server instead of importing everything again (~0.8 s of CPU a command, 40 commands in these blocks); the
    # installed entry point itself is what the terminal tests and `make demo` run.
    shim = tmp_path / ".bin" / "signoff"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {shlex.join(SIGNOFF)} "$@"\n')
    shim.chmod(0o755)
    checks = []
    for i, (command, code) in enumerate(commands(block)):
        log = tmp_path / f".out{i}"
        checks.append(
            f"{{ {command}\n}} > {log} 2>&1 < /dev/null; rc=$?\n"
            f'if [ "$rc" -ne {code} ]; then echo "$ {command.replace(chr(34), chr(92) + chr(34))}"; '
            f'echo "exited $rc, the block says {code}; it printed:"; tail -n 15 {log}; exit 1; fi'
        )
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "SIGNOFF_STORE")},
        "PATH": f"{shim.parent}:{BIN}:{os.environ.get('PATH', '')}",
        "SIGNOFF_HOME": str(tmp_path / "home"),
        "USER": "docs",
    }
    r = subprocess.run(
        ["bash", "-c", "\n".join(checks)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert r.returncode == 0, f"{block.where}:\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("block", [b for b in ALL if b.info.startswith("yaml ")], ids=lambda b: b.where)
def test_yaml_blocks_load_as_what_they_say(block: Block, tmp_path: Path):
    kind, *rest = block.info.split()[1:]
    if kind == "fragment":
        assert yaml.safe_load(block.body) is not None, block.where
    elif kind == "policy":
        from policies.load import load_policy

        path = tmp_path / "policy.yaml"
        path.write_text(block.body)
        load_policy(path)
    else:
        from agent.campaign import load_campaign

        assert rest, f"{block.where}: ```yaml campaign DIR names the directory it is saved in"
        path = ROOT / rest[0] / f".test-docs-{os.getpid()}-{block.line}.yaml"
        path.write_text(block.body)
        try:
            load_campaign(path)
        finally:
            path.unlink()


def test_the_readme_is_a_quick_start_and_links_only_to_what_exists():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 130
    for doc in DOCS:
        for target in re.findall(r"\]\(((?:\.\./|docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", doc.read_text()):
            assert (doc.parent / target).resolve().is_file(), f"{doc.name} links to missing {target}"
