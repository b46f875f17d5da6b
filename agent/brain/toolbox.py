"""What an investigation subagent may do on the hosts, as the brain sees it: the tools it is offered and
the one object that carries them out. `agent.exec.investigation.Toolbox` implements it, with the command
policy and the host behind it; the brain never reaches past this seam.
"""

from __future__ import annotations

from typing import Any, Protocol

from agent.models import Probe
from tools.transport import CommandResult


class Toolbox(Protocol):
    agent: str  # who is investigating, as journaled: "investigator#2"
    approved: frozenset[str]  # commands a person approved for this investigation

    def run_probe(self, probe: Probe) -> list[CommandResult] | None:
        """Run one of the campaign's probes; None when the policy refused it (journaled)."""
        ...

    def dispatch(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """Run the tool the model called (one of TOOL_SPECS): (what it returned, whether it failed)."""
        ...

    def cites(self, host: str, command: str | None, path: str | None, excerpt: str | None = None) -> bool:
        """Whether this investigation ran that command or read that path (a finding may cite only those), and,
        given `excerpt`, whether that call's output holds it."""
        ...


TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "run_readonly",
        "description": "Run a read-only shell command on a campaign host (in its working directory). Only "
        "commands on the policy's read-only list run; anything else is sent to a person for approval.",
        "input_schema": {
            "type": "object",
            "properties": {"host": {"type": "string"}, "command": {"type": "string"}},
            "required": ["host", "command"],
        },
    },
    {
        "name": "read_file",
        "description": "Read lines start..end (1-based, at most 1000) of a file on a host, with line numbers.",
        "input_schema": {
            "type": "object",
            "properties": {
                "host": {"type": "string"},
                "path": {"type": "string"},
                "start": {"type": "integer", "minimum": 1},
                "end": {"type": "integer", "minimum": 1},
            },
            "required": ["host", "path"],
        },
    },
    {
        "name": "grep",
        "description": "Search a file or directory tree on a host for an extended regex; prints path:line:text.",
        "input_schema": {
            "type": "object",
            "properties": {"host": {"type": "string"}, "pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["host", "pattern"],
        },
    },
    {
        "name": "list_dir",
        "description": "List a directory on a host (ls -la).",
        "input_schema": {
            "type": "object",
            "properties": {"host": {"type": "string"}, "path": {"type": "string"}},
            "required": ["host"],
        },
    },
]
