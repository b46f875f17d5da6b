"""The names of the gate kinds and of the answers, as types: light enough for a command's `--help` to list them.

Each `GateKind` has one `GateSpec` in `policies.gates.GATES`, in this order (tests/unit/test_gate_specs.py).
"""

from __future__ import annotations

from typing import Literal

GateKind = Literal[
    "plan", "triage", "safety", "continue_or_ask", "rollback", "command", "budget", "goal", "brain_unavailable"
]
Action = Literal["continue", "approve", "select", "skip", "defer", "retry", "rollback", "ask", "stop", "reject"]
Scope = Literal["once", "for_now", "standing"]
