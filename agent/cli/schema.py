"""`signoff schema campaign|policy`: the JSON Schema of a campaign or policy file, from the same pydantic
models that validate them, for editors (`# yaml-language-server: $schema=…`) and other tools."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from agent.cli.shared import fail
from agent.errors import BAD_INPUT

KINDS = ("campaign", "policy")
# Fields whose validators take a shorthand before the model does (a bare string for a command list, a
# string for a check or an argv): the plain schema would flag valid files, so it says so too.
_COMMAND_LISTS = {"Option": ("apply", "revert"), "Baseline": ("setup", "health", "alive")}
_STRING_TOO = {
    "Option": ("check",),
    "NotifyTarget": ("command",),
    "CampaignNotifyTarget": ("command",),
    "BenchSpec": ("slo",),  # one SLO as a bare string
}


def schema_of(what: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a campaign or policy file."""
    if what == "campaign":
        from agent.models import Campaign

        schema = Campaign.model_json_schema()
        title = "signoff campaign"
    elif what == "policy":
        from policies.schema import PolicyFile

        schema = PolicyFile.model_json_schema()
        title = "signoff policy"
    else:
        raise ValueError(f"no schema for {what!r}; one of {', '.join(KINDS)}")
    defs = schema.get("$defs", {})
    for model, fields in _COMMAND_LISTS.items():
        for name in fields:
            if (prop := _field(defs, model, name)) is None:
                continue
            if prop.get("type") != "array":
                raise AssertionError(f"{model}.{name} is no longer a list: update _COMMAND_LISTS")
            item = prop["items"]
            prop["items"] = {"anyOf": [item, {"type": "string"}]}
            defs[model]["properties"][name] = {"anyOf": [_plain(prop), {"type": "string"}], **_doc(prop)}
    for model, fields in _STRING_TOO.items():
        for name in fields:
            if (prop := _field(defs, model, name)) is not None:
                defs[model]["properties"][name] = {"anyOf": [_plain(prop), {"type": "string"}], **_doc(prop)}
    _one_line(schema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://signoff.dev/schema/{what}.json",
        **schema,
        "title": title,
    }


def _field(defs: dict[str, Any], model: str, name: str) -> dict[str, Any] | None:
    """A shorthand field's schema; None when its model is not in this file's schema (a policy has no Option).
    A model that is there without the field is a rename this module must follow, not something to skip."""
    if model not in defs:
        return None
    prop = defs[model].get("properties", {}).get(name)
    if prop is None:
        raise AssertionError(f"{model} has no field {name!r}: update the shorthands in agent/cli/schema.py")
    return prop


def _one_line(node: Any) -> None:
    """Descriptions as flowing text: a docstring's line breaks are where the source wrapped, not the reader's."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = " ".join(value.split())
            else:
                _one_line(value)
    elif isinstance(node, list):
        for value in node:
            _one_line(value)


def _doc(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: prop[k] for k in ("title", "description", "default") if k in prop}


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("title", "description", "default")}


def schema(what: Annotated[str, typer.Argument(help="campaign or policy")]) -> None:
    """Print the JSON Schema of a campaign or policy file (for editors: `# yaml-language-server: $schema=…`)."""
    if what not in KINDS:
        raise fail(f"no schema for {what!r}; one of {', '.join(KINDS)}", BAD_INPUT)
    typer.echo(json.dumps(schema_of(what), indent=2))
