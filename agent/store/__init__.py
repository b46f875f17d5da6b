"""Where sessions live: a directory per session under `$SIGNOFF_HOME` (`agent.store.local`) or a shared
PostgreSQL (`agent.store.pg`), behind the one interface in `agent.store.base`."""

from __future__ import annotations

import os

from agent.errors import SessionError
from agent.store.base import Store


def open_store(url: str | None = None) -> Store:
    """`--store` beats `SIGNOFF_STORE`; neither means the embedded store under `$SIGNOFF_HOME`."""
    url = url if url is not None else os.environ.get("SIGNOFF_STORE", "")
    if not url or url == "local":
        from agent.store.local import LocalStore

        return LocalStore()
    if url.startswith(("postgresql://", "postgres://")):
        from agent.store.pg import PgStore

        return PgStore(url)
    raise SessionError(f"unknown store {url!r}: use postgresql://… or leave it unset for the local store")
