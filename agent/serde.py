"""The one checkpoint serializer every saver uses: LangGraph's, locked to the types it knows are safe.

LangGraph's default serializer reconstructs any `module.function(arg)` named in a msgpack Ext, so a
checkpoint database someone else could write (an imported export, a shared PostgreSQL store) would run
code on load. signoff's state is plain JSON-shaped data, so only LangGraph's own safe types (its
`SAFE_MSGPACK_TYPES`: datetimes, sets, `Interrupt`, `Send`, …) are ever rebuilt; anything else is left as
data, never called.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def serializer() -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    # None: only LangGraph's SAFE_MSGPACK_TYPES (and its one safe method); no pickle fallback.
    return JsonPlusSerializer(allowed_msgpack_modules=None, pickle_fallback=False)
