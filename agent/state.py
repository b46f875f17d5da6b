"""The graph state: JSON-plain and small. Bulky evidence lives in the journal and artifacts/.

Option ids are string keys ("2") so state round-trips through any serializer unchanged.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Shallow-merge per key, one level deep for dict values (so nodes update one option's fields)."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


class State(TypedDict, total=False):
    plan: list[int]
    queue: list[int]
    current: int | None
    options: Annotated[dict[str, dict[str, Any]], merge]  # outcome, reasons, gain, ci, verdicts
    findings: Annotated[dict[str, dict[str, Any]], merge]
    permission_requests: Annotated[dict[str, list[dict[str, str]]], merge]  # per option: commands a subagent asked for
    ab: Annotated[dict[str, dict[str, Any]], merge]
    stress: Annotated[dict[str, list[dict[str, Any]]], merge]
    assessments: Annotated[dict[str, dict[str, Any]], merge]
    gates: Annotated[list[dict[str, Any]], operator.add]  # {id, kind, option, facts, decision}
    session_rules: Annotated[list[dict[str, Any]], operator.add]
    approved: Annotated[list[str], operator.add]  # commands a command gate approved
    route: str | None  # where the last gate sends the run
    retry_pairs: int | None
    verification: dict[str, Any] | None
    stopping: bool
    command_scope: str | None  # "campaign" or an option id awaiting command approval
    report: dict[str, Any] | None
    calibration: dict[str, Any] | None  # A/A noise measured at setup (optional)
    reference: list[float]  # the known-good baseline metric: measured at setup, replaced when an option is kept
    tried: Annotated[list[int], operator.add]  # options that reached apply (budget: options tried)
    budget: dict[str, Any] | None  # the facts of the last budget check
    budget_approved: list[str]  # limits a person or rule agreed to go past
