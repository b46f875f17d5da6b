"""The schema editors read and the reference people read come from the models that validate files:
every field is described, every shipped file validates, a wrong one does not, and docs/reference.md
is what the generator says today."""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent.cli.reference import reference
from agent.cli.schema import schema_of
from policies.yamlsrc import YamlSource

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted(
    glob.glob(str(ROOT / "examples/*/campaign.yaml"))
    + glob.glob(str(ROOT / "examples/*/sweep.yaml"))
    + glob.glob(str(ROOT / "agent/templates/*/campaign.yaml"))
)
POLICIES = sorted(
    glob.glob(str(ROOT / "policies/presets/*.yaml"))
    + glob.glob(str(ROOT / "examples/*/policy.yaml"))
    + glob.glob(str(ROOT / "agent/templates/*/policy.yaml"))
)


def test_docs_reference_is_what_the_models_say_today():
    assert (ROOT / "docs" / "reference.md").read_text() == reference(), (
        "docs/reference.md is stale: python -m agent.cli.reference > docs/reference.md"
    )


@pytest.mark.parametrize("what", ["campaign", "policy"])
def test_every_field_of_every_model_is_described(what):
    schema = schema_of(what)
    objects: list[tuple[str, dict[str, Any]]] = [("(top)", schema), *schema["$defs"].items()]
    missing = [
        f"{name}.{field}"
        for name, model in objects
        for field, prop in model.get("properties", {}).items()
        if not str(prop.get("description", "")).strip()
    ]
    assert not missing
    assert all(model.get("description") for _, model in objects), "every model has a docstring"


def _data(path: str) -> Any:
    # As signoff reads it: YAML 1.1's `on: true` booleans would not be the file's `on:` key.
    return YamlSource(Path(path), Path(path).read_text()).data


@pytest.mark.parametrize(("what", "path"), [("campaign", p) for p in CAMPAIGNS] + [("policy", p) for p in POLICIES])
def test_every_shipped_file_validates_against_its_schema(what, path):
    errors = list(jsonschema.Draft202012Validator(schema_of(what)).iter_errors(_data(path)))
    assert not errors, [(list(e.path), e.message) for e in errors]


def test_a_wrong_campaign_does_not_validate():
    data = _data(str(ROOT / "examples/postgres/campaign.yaml"))
    validator = jsonschema.Draft202012Validator(schema_of("campaign"))
    assert list(validator.iter_errors({**data, "optoins": []}))
    assert list(validator.iter_errors({**data, "benchmark": {**data["benchmark"], "pairs": "six"}}))
    assert list(validator.iter_errors({**data, "options": [{**data["options"][0], "risk": "yolo"}]}))
    # The shorthands signoff takes are valid for an editor too.
    shorthand = {**data["options"][0], "apply": "sh pgctl.sh set x 1", "check": "sh pgctl.sh is x 1"}
    assert not list(validator.iter_errors({**data, "options": [shorthand]}))
    baseline = {**data["baseline"], "alive": "sh pgctl.sh alive"}
    benchmark = {**data["benchmark"], "slo": "p99_e2e <= 900"}
    assert not list(validator.iter_errors({**data, "baseline": baseline, "benchmark": benchmark}))


def test_the_schema_command_prints_json_and_refuses_what_it_does_not_know():
    ok = subprocess.run([sys.executable, "-m", "agent.cli", "schema", "policy"], capture_output=True, text=True)
    assert ok.returncode == 0 and '"title": "signoff policy"' in ok.stdout
    campaign = subprocess.run([sys.executable, "-m", "agent.cli", "schema", "campaign"], capture_output=True, text=True)
    assert campaign.returncode == 0 and json.loads(campaign.stdout)["title"] == "signoff campaign"
    bad = subprocess.run([sys.executable, "-m", "agent.cli", "schema", "nonsense"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "one of campaign, policy" in bad.stderr


def test_a_policy_notify_command_may_be_a_string_and_descriptions_are_one_line():
    validator = jsonschema.Draft202012Validator(schema_of("policy"))
    policy = {"name": "p", "notify": [{"command": "notify-send gate"}, {"command": ["notify-send", "gate"]}]}
    assert not list(validator.iter_errors(policy))
    assert list(validator.iter_errors({**policy, "notify": [{"command": 3}]}))
    # An editor shows a description as it is: the docstrings' source line breaks are not kept.
    assert not [d for d in _descriptions(schema_of("campaign")) + _descriptions(schema_of("policy")) if "\n" in d]


def _descriptions(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for k, v in node.items() if k != "description" for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []
