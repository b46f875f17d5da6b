"""`store init`: create or migrate a team's shared PostgreSQL store."""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli.shared import fail
from agent.errors import BAD_INPUT, FAILED


def store_init(
    store: Annotated[
        str | None,
        typer.Option("--store", envvar="SIGNOFF_STORE", help="postgresql://… (or $SIGNOFF_STORE)."),
    ] = None,
) -> None:
    """Create or migrate the store's tables: LangGraph's checkpoint tables (PostgresSaver.setup) and the
    append-only journal. Safe to run again."""
    if not store or not store.startswith(("postgresql://", "postgres://")):
        raise fail("store init needs --store postgresql://… (or SIGNOFF_STORE)", BAD_INPUT)
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise fail("the PostgreSQL store needs its extra: pip install 'signoff[postgres]'", BAD_INPUT) from None
    from agent.journal import pg as pgjournal

    try:
        with PostgresSaver.from_conn_string(store) as saver:
            saver.setup()
        pgjournal.setup(store)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise fail(f"store init failed: {first}", FAILED) from None
    typer.echo("store ready: checkpoint tables (LangGraph PostgresSaver) and the append-only journal")
