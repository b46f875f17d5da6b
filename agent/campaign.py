"""Load and validate a campaign file. Every mistake is one line naming file:line and the field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from agent.models import BUILTIN_VARS, TEMPLATE_VAR, Campaign
from policies.yamlsrc import Loc, SourceError, YamlSource

__all__ = ["LoadedCampaign", "SourceError", "load_campaign", "render"]


class LoadedCampaign:
    def __init__(self, source: YamlSource, campaign: Campaign) -> None:
        self.path = source.path.resolve()
        self.text = source.text
        self.campaign = campaign

    @property
    def directory(self) -> Path:
        return self.path.parent


def _strings(data: object, loc: Loc = ()) -> Iterator[tuple[Loc, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(value, (*loc, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, (*loc, i))
    elif isinstance(data, str):
        yield loc, data


def load_campaign(path: str | Path) -> LoadedCampaign:
    source = YamlSource.read(Path(path))
    campaign = source.validate(Campaign)
    known = BUILTIN_VARS | set(campaign.vars)
    for loc, text in _strings(source.data):
        for m in TEMPLATE_VAR.finditer(text):
            if m.group(1) not in known:
                raise source.error(loc, f"unknown variable {{{{{m.group(1)}}}}}; known: {', '.join(sorted(known))}")
    names = [h.name for h in campaign.hosts]
    if len(set(names)) != len(names):
        raise source.error(("hosts",), "host names must be unique")
    ids = [o.id for o in campaign.options]
    for i, option_id in enumerate(ids):
        if option_id in ids[:i]:
            raise source.error(("options", i, "id"), f"duplicate option id {option_id}")
    for loc, on in _targets(source.data):
        if on != "all" and not campaign.targets(on):
            raise source.error(loc, f"{on!r} is neither a host nor a role; hosts: {', '.join(names)}")
    for host_index, host in enumerate(campaign.hosts):
        if host.transport == "ssh":
            raise source.error(
                ("hosts", host_index, "transport"),
                "ssh hosts arrive with the SSH transport (issue 3); use transport: local for now",
            )
    return LoadedCampaign(source, campaign)


def _targets(data: object, loc: Loc = ()) -> Iterator[tuple[Loc, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "on" and isinstance(value, str):
                yield (*loc, key), value
            else:
                yield from _targets(value, (*loc, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _targets(value, (*loc, i))


def render(template: str, variables: Mapping[str, str]) -> str:
    """Expand {{name}} (user vars may use built-ins; expansion repeats until stable, at most 5 times)."""
    for _ in range(5):
        expanded = TEMPLATE_VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), template)
        if expanded == template:
            break
        template = expanded
    return template
