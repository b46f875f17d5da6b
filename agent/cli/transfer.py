"""Moving a session between stores and machines: `export` writes it to a directory laid out like a local
session; `import` verifies such a directory and loads it into a store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.shared import JsonOpt, StoreOpt, fail, find, store_at
from agent.errors import BAD_INPUT


def export_cmd(
    session: Annotated[str, typer.Argument(help="Session id.")],
    directory: Annotated[Path, typer.Argument(help="A new (or empty) directory to write the session to.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a session — journal and head, artifacts, checkpoints, documents, answers — to a directory
    laid out like a local session: `signoff replay --verify` reads it, `signoff import` loads it into
    any store. The session must not be running."""
    from agent.store.bundle import export_session

    d = find(session, store)
    try:
        with d.locked():
            manifest = export_session(d, directory, source=store_at(store).where)
    finally:
        d.close()
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
    else:
        typer.echo(
            f"exported {session} to {directory}: {manifest['events']} events, {manifest['checkpoints']} "
            f"checkpoints, {manifest['artifacts']} artifacts"
        )


def import_cmd(
    directory: Annotated[Path, typer.Argument(help="A directory written by `signoff export`.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    accept_ssh_config: Annotated[
        bool,
        typer.Option(
            "--accept-ssh-config",
            help="Import a session whose ssh_config runs commands on this machine (Match exec, ProxyCommand, "
            "LocalCommand, Include, …): you have read it, and resumes here will run it as you.",
        ),
    ] = False,
) -> None:
    """Load an exported session into a store (verified first; refused if the store has it already)."""
    from agent.store.bundle import import_session

    target = store_at(store)
    try:
        d, summary = import_session(target, directory, accept_ssh_config=accept_ssh_config)
    except (OSError, ValueError) as exc:
        raise fail(str(exc), BAD_INPUT) from None
    d.close()
    if as_json:
        typer.echo(json.dumps({**summary, "store": target.where}, indent=2))
    else:
        typer.echo(
            f"imported {summary['session']} into {target.where}: {summary['events']} events, "
            f"{summary['checkpoints']} checkpoints; `signoff resume {summary['session']}` continues it"
        )
