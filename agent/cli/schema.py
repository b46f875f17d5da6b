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
_COMMAND_LISTS = {"Option": ("apply", "revert"), "Baseline": ("setup", "health")}
_STRING_TOO = {"Option": ("check",), "NotifyTarget": ("command",), "CampaignNotifyTarget": ("command",)}


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
            prop = defs.get(model, {}).get("properties", {}).get(name)
            if prop is not None and prop.get("type") == "array":
                item = prop["items"]
                prop["items"] = {"anyOf": [item, {"type": "string"}]}
                defs[model]["properties"][name] = {"anyOf": [prop, {"type": "string"}], **_doc(prop)}
    for model, fields in _STRING_TOO.items():
        for name in fields:
            prop = defs.get(model, {}).get("properties", {}).get(name)
            if prop is not None:
                defs[model]["properties"][name] = {"anyOf": [_plain(prop), {"type": "string"}], **_doc(prop)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://signoff.dev/schema/{what}.json",
        **schema,
        "title": title,
    }


def _doc(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: prop[k] for k in ("title", "description", "default") if k in prop}


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("title", "description", "default")}


def schema(what: Annotated[str, typer.Argument(help="campaign or policy")]) -> None:
    """Print the JSON Schema of a campaign or policy file (for editors: `# yaml-language-server: $schema=…`)."""
    if what not in KINDS:
        raise fail(f"no schema for {what!r}; one of {', '.join(KINDS)}", BAD_INPUT)
    typer.echo(json.dumps(schema_of(what), indent=2))
