"""`signoff check`: a dry run of a campaign under a policy that touches no host (agent/run/dryrun.py).
Exit 0 when nothing is wrong, 2 on errors (what would stop a run at once), 1 on warnings with --strict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.shared import JsonOpt, PolicyOpt, SshConfigOpt, StoreOpt
from agent.errors import BAD_INPUT, FAILED


def check(
    campaign: Annotated[Path, typer.Argument(help="Campaign YAML file.")],
    policy: PolicyOpt = "cautious",
    ssh_config: SshConfigOpt = None,
    as_json: JsonOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when there are warnings.")] = False,
    store: StoreOpt = None,
) -> None:
    """Check a campaign without running it: hosts, every command as it will run and what the policy
    says of it, the gates a person will decide, the time it is expected to take (from what an earlier session of
    the campaign in the store measured, or the campaign's typical_s) and may take at most, weak measurement
    settings."""
    from agent.run.check_report import render_text
    from agent.run.dryrun import check as dry_run

    report = dry_run(campaign, policy, ssh_config=ssh_config, store=store)
    if as_json:
        out = report.model_dump(mode="json")
        out["errors"], out["warnings"] = len(report.errors), len(report.warnings)
        typer.echo(json.dumps(out, indent=2))
    else:
        for line in render_text(report):
            typer.echo(line)
    if report.errors:
        raise typer.Exit(BAD_INPUT)
    if strict and report.warnings:
        raise typer.Exit(FAILED)
