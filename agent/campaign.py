"""Load and validate a campaign file. Every mistake is one line naming file:line and the field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agent.models import BUILTIN_VARS, TEMPLATE_VAR, Campaign, Option
from policies.yamlsrc import Loc, SourceError, YamlSource
from tools.secrets import is_secret_name

__all__ = ["LoadedCampaign", "SourceError", "load_campaign", "render"]


class LoadedCampaign:
    def __init__(self, source: YamlSource, campaign: Campaign) -> None:
        self.path = source.path.resolve()
        self.source = source
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


def load_campaign(path: str | Path, *, text: str | None = None) -> LoadedCampaign:
    """Load a campaign file (or `text` as if it were that file: a derived campaign keeps its directory)."""
    source = YamlSource.read(Path(path)) if text is None else YamlSource(Path(path), text)
    campaign = source.validate(Campaign)
    sweep = campaign.benchmark.sweep
    known = BUILTIN_VARS | set(campaign.vars) | set(campaign.secrets) | ({sweep.var} if sweep else set())
    for loc, text in _strings(source.data):
        for m in TEMPLATE_VAR.finditer(text):
            if m.group(1) not in known:
                raise source.error(loc, f"unknown variable {{{{{m.group(1)}}}}}; known: {', '.join(sorted(known))}")
    if (cycle := _var_cycle(campaign.vars)) is not None:
        chain = " → ".join(f"{{{{{n}}}}}" for n in cycle[:8]) + (" → …" if len(cycle) > 8 else "")
        raise source.error(("vars", cycle[0]), f"refers to itself: {chain}")
    if campaign.benchmark.num_prompts is None:
        for loc, text in _strings(source.data):
            if "num_prompts" in {m.group(1) for m in TEMPLATE_VAR.finditer(text)}:
                raise source.error(loc, "uses {{num_prompts}}, but benchmark.num_prompts is not set")
    names = [h.name for h in campaign.hosts]
    if len(set(names)) != len(names):
        raise source.error(("hosts",), "host names must be unique")
    ids = [o.id for o in campaign.options]
    for i, option_id in enumerate(ids):
        if option_id in ids[:i]:
            raise source.error(("options", i, "id"), f"duplicate option id {option_id}")
    scenarios = [s.name for s in campaign.stress]
    for i, option in enumerate(campaign.options):
        for j, probe in enumerate(option.probes):
            if probe.reproduced_by and probe.on_fail != "hazard":
                raise source.error(
                    ("options", i, "probes", j, "reproduced_by"),
                    "names the stress scenarios that make a hazard happen, and this probe is a blocker: use it with "
                    "`on_fail: hazard`",
                )
            for k, name in enumerate(probe.reproduced_by):
                if name not in scenarios:
                    known = ", ".join(repr(n) for n in scenarios) or "none, the campaign has no `stress:`"
                    raise source.error(
                        ("options", i, "probes", j, "reproduced_by", k),
                        f"{name!r} is not a stress scenario; the scenarios: {known}",
                    )
    for loc, on in _targets(source.data):
        if on != "all" and not campaign.targets(on):
            raise source.error(loc, f"{on!r} is neither a host nor a role; hosts: {', '.join(names)}")
    for i, upload in enumerate(campaign.baseline.upload):
        if not (source.path.parent / upload.src).is_file():
            raise source.error(("baseline", "upload", i, "src"), f"no file {upload.src!r} beside the campaign")
    for i, host in enumerate(campaign.hosts):
        if host.known_hosts and not resolve_path(source.path.parent, host.known_hosts).exists():
            raise source.error(("hosts", i, "known_hosts"), f"no known_hosts file {host.known_hosts!r}")
    for i, name in enumerate(campaign.secrets):
        if name in campaign.vars or name in BUILTIN_VARS:
            raise source.error(("secrets", i), f"{name} is already a variable")
    at = campaign.goal.at
    if at is not None and sweep is None:
        raise source.error(("goal", "at"), "names a level of a sweep, and the benchmark has no `sweep:`")
    if at == "slo" and not campaign.benchmark.slo:
        raise source.error(("goal", "at"), "`slo` judges the goal where the baseline meets the SLO: set benchmark.slo")
    if sweep is not None and isinstance(at, int | float) and at not in sweep.values:
        shown = ", ".join(sweep.label(v) for v in sweep.values)
        raise source.error(("goal", "at"), f"{at:g} is not one of benchmark.sweep.values ({shown})")
    if sweep is not None:
        if sweep.var in BUILTIN_VARS or sweep.var in campaign.secrets:
            raise source.error(
                ("benchmark", "sweep", "var"), f"{sweep.var} is a built-in or a secret, not a load level"
            )
        if sweep.var in campaign.vars and outside_level(campaign) not in sweep.values:
            raise source.error(
                ("vars", sweep.var),
                f"{campaign.vars[sweep.var]!r} is not a level of the sweep: setup's baseline and the rollback checks "
                f"run at it and are compared with the sweep's readings there; use one of "
                f"{', '.join(sweep.label(v) for v in sweep.values)} (or leave it out: the goal's level)",
            )
        others = {k: v for k, v in campaign.vars.items() if k != sweep.var}
        used = {m.group(1) for m in TEMPLATE_VAR.finditer(expanded(campaign.benchmark.run, others))}
        if sweep.var not in used:
            raise source.error(
                ("benchmark", "sweep", "var"),
                f"the benchmark's run never uses {{{{{sweep.var}}}}}: every level would run the same command",
            )
    return LoadedCampaign(source, campaign)


def expanded(text: str, variables: Mapping[str, str], depth: int = 8) -> str:
    """`text` with the campaign's variables expanded (a bounded number of rounds; cycles are refused elsewhere)."""
    for _ in range(depth):
        text = TEMPLATE_VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), text)
    return text


def sweep_default(campaign: Campaign) -> str | None:
    """The value a sweep's variable has outside the sweep (setup, stress, rollback checks) when `vars` does not
    set it: the goal's level, else the sweep's highest."""
    sweep = campaign.benchmark.sweep
    if sweep is None or sweep.var in campaign.vars:
        return None
    level = outside_level(campaign)
    return sweep.label(level) if level is not None else None


def outside_level(campaign: Campaign) -> float | None:
    """The sweep level the commands outside the sweep run at: the baseline measured at setup, rollback and
    post-stress checks. They compare with the sweep's own readings at that level, so it must be one."""
    sweep = campaign.benchmark.sweep
    if sweep is None:
        return None
    if sweep.var in campaign.vars:
        try:
            return float(campaign.vars[sweep.var])
        except ValueError:
            return None
    at = campaign.goal.at
    return float(at) if isinstance(at, int | float) else sweep.values[-1]


def refuse_literal_secrets(loaded: LoadedCampaign) -> None:
    """A new session may not start from a campaign that writes a secret's value in the file: a variable
    named like one (`API_KEY: sk-…`) is masked in output, but its literal would be kept in the session's
    campaign copy, the journal's `session.started` and every export. Its value belongs in the environment
    (`secrets:`); a variable that only refers to others (`API_KEY: "{{HF_TOKEN}}"`) is fine."""
    for name, value in loaded.campaign.vars.items():
        if is_secret_name(name) and TEMPLATE_VAR.sub("", str(value)).strip():
            raise loaded.source.error(
                ("vars", name),
                f"{name} holds a secret's value in the campaign file, where the session, its journal and "
                f"exports would keep it; set {name} in the environment and list it under `secrets:` instead",
            )


def _var_cycle(variables: Mapping[str, str]) -> list[str] | None:
    """A chain of user variables that leads back to its start (`a: "{{a}}"`, or a → b → a), or None.
    Expanding one would never settle: the command would run with `{{a}}` in it, or grow each round.
    (Iterative, so a long chain of variables cannot exhaust the stack.)"""
    refs = {
        k: [m.group(1) for m in TEMPLATE_VAR.finditer(str(v)) if m.group(1) in variables] for k, v in variables.items()
    }
    done: set[str] = set()
    for root in refs:
        path: list[str] = []
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, i = stack.pop()
            if i == 0:
                if name in path:
                    return [*path[path.index(name) :], name]
                if name in done:
                    continue
                path.append(name)
            if i < len(refs[name]):
                stack += [(name, i + 1), (refs[name][i], 0)]
            else:
                done.add(path.pop())
    return None


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


def resolve_path(base: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def render(template: str, variables: Mapping[str, str]) -> str:
    """Expand {{name}} (user vars may use built-ins; expansion repeats until stable, at most 5 times)."""
    for _ in range(5):
        expanded = TEMPLATE_VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), template)
        if expanded == template:
            break
        template = expanded
    return template


def with_proposals(campaign: Campaign, proposals: list[dict[str, Any]]) -> Campaign:
    """The campaign plus options a brain proposed. A later plan event's proposal replaces an earlier
    one with the same id (a plan re-run after a crash); the engineer's own options never change."""
    own = {o.id for o in campaign.options if not o.notes.startswith("proposed by ")}
    extra = {p["id"]: Option.model_validate(p) for p in proposals if p["id"] not in own}
    if not extra:
        return campaign
    kept = [o for o in campaign.options if o.id not in extra]
    return campaign.model_copy(update={"options": [*kept, *extra.values()]})
