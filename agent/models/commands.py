"""Commands as a campaign writes them: where each runs, its timeout, and the probes built on them."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from policies.oneline import OneLine

TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
BUILTIN_VARS = {"python", "campaign_dir", "workdir", "host", "num_prompts", "run", "session"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CommandSpec(Strict):
    """A command and where it runs: a host name, a role, or `all`."""

    run: str = Field(min_length=1)
    """The shell command, run in the host's working directory; {{var}} templates are filled from `vars`, secrets and
    built-ins ({{python}}, {{workdir}}, {{host}}, {{session}}, {{campaign_dir}}, {{num_prompts}})."""
    on: str = "all"
    """Where it runs: a host name, a role, or `all` (every host)."""
    timeout: float = Field(default=60.0, gt=0, le=86_400)
    """Seconds before the command is killed and counted as timed out."""
    typical_s: float | None = Field(default=None, gt=0, le=86_400)
    """Seconds the command usually takes: `signoff check` counts the expected duration with it (without it, with what
    an earlier session of the campaign measured, else with the timeout). It never limits the command."""

    @model_validator(mode="after")
    def _typical_within_timeout(self) -> CommandSpec:
        if self.typical_s is not None and self.typical_s > self._typical_bound():
            raise ValueError(
                f"typical_s ({self.typical_s:g}) is above what the timeout allows ({self._typical_bound():g} s): "
                "the command would be killed before it usually ends"
            )
        return self

    def _typical_bound(self) -> float:
        return self.timeout


def command_list(value: object) -> object:
    # Shorthand: a bare string, or a list of strings, means commands on every host.
    if isinstance(value, str):
        return [{"run": value}]
    if isinstance(value, list):
        return [{"run": v} if isinstance(v, str) else v for v in value]
    return value


class Expectation(Strict):
    """What a probe's result must look like."""

    exit: int | None = 0
    """The exit code the probe must end with; null accepts any."""
    stdout_contains: str | None = None
    """Text that must appear in the probe's stdout."""
    stdout_not_contains: str | None = None
    """Text that must not appear in the probe's stdout (e.g. a documented warning)."""


class Probe(CommandSpec):
    """A read-only check. When its expectation fails it implies a blocker (no-go) or a hazard."""

    name: OneLine
    """What the probe checks, as the report and gates name it."""
    expect: Expectation = Field(default_factory=Expectation)
    """What the probe's result must look like; anything else fails it."""
    on_fail: Literal["blocker", "hazard"] = "blocker"
    """What a failed probe means: `blocker` makes the option a no-go before anything is applied; `hazard` is a confirmed
    risk that makes the option unsafe."""
    message: str | None = None
    """Why a failure matters, in words shown with the blocker or hazard."""
    reproduced_by: list[OneLine] = Field(default_factory=list)
    """Only with `on_fail: hazard`: the stress scenarios (by `name`) that exercise this hazard. A bad outcome of one of
    them (wedge, dead, saturated, crash, leak) is the hazard reproduced (`hazard_reproduced`); nothing else is (an
    unrelated stress failure, a failed benchmark request, a post-stress check that lost ground make the option unsafe
    for their own reasons). Without it a confirmed hazard is never called reproduced."""
    timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds before the probe is killed (a probe that times out has failed)."""
