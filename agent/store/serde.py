"""The one checkpoint serializer every saver uses: LangGraph's, locked to the types it knows are safe.

LangGraph's default serializer reconstructs any `module.function(arg)` named in a msgpack Ext, so a
checkpoint database someone else could write (an imported export, a shared PostgreSQL store) would run
code on load. signoff's state is plain JSON-shaped data, so only LangGraph's own safe types (its
`SAFE_MSGPACK_TYPES`: datetimes, sets, `Interrupt`, `Send`, …) are ever rebuilt; anything else is left as
data, never called.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import contextmanager
from functools import cache
from typing import Any


@cache
def serializer() -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    # None: only LangGraph's SAFE_MSGPACK_TYPES (and its one safe method); no pickle fallback.
    return JsonPlusSerializer(allowed_msgpack_modules=None, pickle_fallback=False)


class _Blocked(logging.Handler):
    """Collects LangGraph's "Blocked deserialization of module.name" warnings instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Blocked deserialization"):
            self.seen.append(message.split(" - ")[0].removeprefix("Blocked deserialization of "))


@contextmanager
def blocked_types() -> Generator[list[str], None, None]:
    """The foreign types a checkpoint named while this block read it (`os.system`, …): signoff never
    stores one, so a caller that reads someone else's checkpoints refuses them when this is non-empty.
    (LangGraph warns once per type per process; a reader checks in a fresh process, as `import` does.)"""
    logger = logging.getLogger("langgraph.checkpoint.serde.jsonplus")
    handler, propagate = _Blocked(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler.seen
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
