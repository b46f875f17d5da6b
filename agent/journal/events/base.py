"""The envelope every journal line carries, and the base every event model derives from."""

# Each model narrows `kind` to its literal (that is what makes the union discriminated); models are frozen,
# so the narrowing is sound, but the checker cannot know that of a pydantic field.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The envelope every line carries; everything else on a line is the event's own.
ENVELOPE = frozenset({"v", "seq", "ts", "session", "kind", "actor", "prev"})

Json = Any  # JSON-plain data as journaled (dicts, lists, str, numbers, bool, None)
OptionId = int | None


class Event(BaseModel):
    """One thing that happened. Subclasses pin `kind` to a literal and declare the fields readers use."""

    # defer_build: a schema is built the first time its kind is read or written, not at import (the TUI's
    # first frame would otherwise wait for all of them)
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True, defer_build=True)

    kind: str

    def fields(self) -> dict[str, Any]:
        """What goes on the line besides the envelope: exactly the fields this event was given, as given
        (python mode: the journal's own encoder decides how NaN, infinities and big integers are written)."""
        return self.model_dump(exclude_unset=True, exclude={"kind"}, by_alias=True)

    def get(self, name: str, default: Any = None) -> Any:
        """A field by name, declared or extra (readers of fields a model does not declare)."""
        if name in type(self).model_fields:
            return getattr(self, name)
        return (self.model_extra or {}).get(name, default)


class UnrecognizedEvent(Event):
    """A line of a kind this signoff does not know, or whose fields do not fit its kind (read, never written)."""

    problem: str | None = Field(default=None, exclude=True)
