"""What a command will be before it runs: rendered for each host it is on, with its variables and secrets
named, and classed by the command policy (allow, ask or deny). Nothing here touches a host.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.campaign import render, sweep_default
from agent.context import RunContext
from agent.models import TEMPLATE_VAR, CommandSpec
from tools.commands import Verdict, classify
from tools.secrets import delivery_script, encode_for_delivery
from tools.transport import Host, TransportError


@dataclass(frozen=True)
class Planned:
    host: Host
    command: str  # what the policy checks and the journal shows: secrets appear as "$NAME"
    stdin: bytes | None = None
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cleared:
    """A planned command that may run, and the exact text its host's bash is given (after the secrets are read):
    the canonical form the command policy judged and allowed (`by="policy"`, tools/canonical/), or the command
    as written, which a person was shown and approved at a command gate (`by="person"`). `clear` makes one; one
    made (or copied with `dataclasses.replace`) any other way fails here unless its verdict is for its own command
    and says the same. The transport is reached with nothing else (agent/exec/dispatch.py: run_one)."""

    planned: Planned
    verdict: Verdict
    by: Literal["policy", "person"]

    def __post_init__(self) -> None:
        if self.verdict.judged != self.planned.command:
            raise TypeError("a Cleared command runs under the verdict of its own text only")
        if self.by == "policy" and (self.verdict.klass != "allow" or self.verdict.runs is None):
            raise TypeError("the policy clears only a command it allows, in the form it judged")
        if self.by == "person" and self.verdict.klass != "ask":
            raise TypeError("a person clears only a command the policy asks about")

    @property
    def runs(self) -> str:
        """What bash is given: the form the policy judged, or the text a person approved."""
        if self.by == "policy":
            assert self.verdict.runs is not None  # __post_init__
            return self.verdict.runs
        return self.planned.command

    @property
    def host(self) -> Host:
        return self.planned.host

    @property
    def script(self) -> str:
        """What runs: read the secrets from stdin first (one encoded line each, see `plan`), then the command."""
        return delivery_script(self.planned.secrets) + self.runs


def clear(p: Planned, verdict: Verdict, approved: Collection[str] = ()) -> Cleared | None:
    """`p` cleared to run under `verdict` (the command policy's class of `p.command`), or None when it may not:
    denied, or asked about and not among the commands a person `approved`."""
    if verdict.klass == "allow" and verdict.runs is not None:
        return Cleared(p, verdict, "policy")
    if verdict.klass == "ask" and p.command in approved:
        return Cleared(p, verdict, "person")
    return None


def variables(ctx: RunContext, host: Host, levels: Mapping[str, str] | None = None) -> dict[str, str]:
    """`levels`: a sweep's variable at the level being measured, over its value everywhere else."""
    base = {
        "python": "python3" if host.transport == "ssh" else sys.executable,
        "campaign_dir": str(ctx.campaign_dir),
        "host": host.name,
        "workdir": _workdir(ctx, host),
        "session": ctx.session,
        "num_prompts": str(ctx.campaign.benchmark.num_prompts or ""),
    }
    secret_names = ctx.secret_names()
    sweep = ctx.campaign.benchmark.sweep
    default = sweep_default(ctx.campaign)
    swept = {sweep.var: default} if sweep is not None and default is not None else {}
    swept |= dict(levels or {})
    public = {k: render(v, {**base, **swept}) for k, v in ctx.campaign.vars.items() if k not in secret_names}
    return {**base, **public, **swept, **{name: f'"${name}"' for name in secret_names}}


def _workdir(ctx: RunContext, host: Host) -> str:
    try:
        return ctx.transport.workdir(host)
    except TransportError:
        return ""  # the host is unreachable: running the command will say so, as a failed result


def plan(
    ctx: RunContext,
    spec: CommandSpec,
    *,
    only: Sequence[str] | None = None,
    levels: Mapping[str, str] | None = None,
) -> list[Planned]:
    """`spec` rendered for each of its hosts (only those named in `only`, when given; `levels` as in `variables`)."""
    out = []
    names = ctx.secret_names()
    for host in ctx.campaign.targets(spec.on):
        if only is not None and host.name not in only:
            continue
        used = tuple(
            dict.fromkeys(m.group(1) for m in TEMPLATE_VAR.finditer(_expand(ctx, spec.run)) if m.group(1) in names)
        )
        command = render(spec.run, variables(ctx, host, levels))
        # Encoded, so that a newline in one value cannot shift the next (raises on a value no shell can hold).
        stdin = b"".join(encode_for_delivery(n, ctx.secrets[n]) for n in used) if used else None
        out.append(Planned(host=host, command=command, stdin=stdin, secrets=used))
    return out


def _expand(ctx: RunContext, template: str) -> str:
    """The template with public vars expanded one level, so secrets used through a var are found."""
    public = {k: v for k, v in ctx.campaign.vars.items() if k not in ctx.secret_names()}
    return TEMPLATE_VAR.sub(lambda m: public.get(m.group(1), m.group(0)), template)


def rendered(ctx: RunContext, spec: CommandSpec) -> list[tuple[Host, str]]:
    return [(p.host, p.command) for p in plan(ctx, spec)]


def command_class(ctx: RunContext, command: str) -> Verdict:
    rules = ctx.policy.model.commands
    return classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)


def upload_command(src: str, dest: str) -> str:
    """How an upload is shown at the command gate and recorded when approved."""
    return f"upload {src} -> {dest}"


def upload_class(src: str, dest: str) -> Verdict:
    """An upload writes a file like a redirect does, so it follows the redirect rule: a destination that
    may land outside the host's working directory (absolute, `~`, `..` above it, or anything the shell
    would expand) is `ask`, shown at the command gate; one inside it is allowed."""
    shown = upload_command(src, dest)
    depth, outside = 0, dest.startswith(("/", "~")) or any(c in dest for c in "$`\\*?[{\n\0")
    for segment in dest.split("/"):
        depth += -1 if segment == ".." else (0 if segment in ("", ".") else 1)
        outside = outside or depth < 0
    if outside:
        return Verdict(klass="ask", part=shown, pattern=None, reason=f"writes outside the working directory: {dest}")
    return Verdict(klass="allow", part=shown, pattern=None)
