"""What the model must hand back, as pydantic models; each becomes a forced tool's input schema.

The schema tells the model the shape; `model_validate` plus the checks in `claude.py` decide
whether what came back is usable. The model never gets to skip validation by being persuasive.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policies.gates import Action, Scope

Level = Literal["low", "medium", "high"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Ranked(_Strict):
    option: int = Field(description="an option id from the campaign")
    expected_gain_pct: float | None = Field(default=None, description="your estimate for the goal metric, in %")
    risk: Level
    cost: Level = Field(description="engineering time and blast radius of trying it")
    rationale: str = Field(min_length=1, max_length=600)


class Proposed(_Strict):
    title: str = Field(min_length=1, max_length=120)
    hypothesis: str = Field(min_length=1, max_length=600)
    expected_gain_pct: float | None = None
    risk: Level = "medium"
    apply: list[str] = Field(min_length=1, max_length=5, description="shell commands that apply it")
    revert: list[str] = Field(min_length=1, max_length=5, description="shell commands that undo it exactly")
    on: str = Field(default="all", description="a host name, a role, or all")


class PlanSubmission(_Strict):
    ranking: list[Ranked] = Field(min_length=1, description="every campaign option once, best first")
    proposals: list[Proposed] = Field(default_factory=list, max_length=3)


class Source(_Strict):
    host: str
    command: str | None = Field(default=None, description="the exact command you ran (run_readonly or a probe)")
    path: str | None = Field(default=None, description="the file you read or searched")
    line: int | None = Field(default=None, ge=1)


class Cited(_Strict):
    text: str = Field(min_length=1, max_length=400)
    source: Source
    excerpt: str | None = Field(
        default=None,
        max_length=400,
        description="the exact output line(s) of that call this rests on, copied (required for a blocker)",
    )


class FindingSubmission(_Strict):
    feasible: bool
    blockers: list[Cited] = Field(default_factory=list, description="facts that make the option a no-go")
    hazards: list[Cited] = Field(default_factory=list, description="ways it could hurt if tried")
    confidence: float = Field(ge=0, le=1)
    summary: str = Field(min_length=1, max_length=800)


class RationaleSubmission(_Strict):
    rationale: str = Field(min_length=1, max_length=1200, description="for the person deciding keep or roll back")
    next_step: str = Field(default="", max_length=600, description="for the continue-or-ask gate that follows")
    concerns: list[str] = Field(default_factory=list, max_length=5)


class DecisionSubmission(_Strict):
    understood: bool = Field(description="false when the text is not a decision about this gate")
    action: Action | None = None
    targets: list[int] = Field(default_factory=list, description="option ids the person named")
    condition: str | None = Field(default=None, description="a CEL expression over the gate's facts, or null")
    otherwise: Action | None = None
    scope: Scope = "once"
    runs: int | None = Field(default=None, ge=2, le=50)
    rationale: str = Field(default="", max_length=400)


def tool_spec(name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    """An Anthropic tool definition whose input schema is the model's JSON schema, refs inlined."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    return {"name": name, "description": description, "input_schema": _inline(schema, defs)}


def strict(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool as a strict tool: the API then holds the model's call to the schema's shape (no field missing, none
    added). What a strict schema cannot say — lengths, ranges — the SDK's `transform_schema` writes into the field's
    description, and `model_validate` still checks on our side. The SDK loads only here, when a model is called."""
    from anthropic import transform_schema

    return {**tool, "input_schema": transform_schema(tool["input_schema"]), "strict": True}


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].split("/")[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node
