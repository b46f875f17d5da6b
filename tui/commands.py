"""Every command the journal mentions, by name: what ran where and why, whether it still runs, and
where its output is. The journal records a command twice (`command.started`, `command.finished`);
they are paired by host, purpose and option in the order they started (a host runs one command per
slot, and a finished line always follows its own started line)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# sha256 of nothing: an empty stream is not worth opening (and says nothing by its digest)
EMPTY = "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
OUTPUT_KEYS = ("artifact", "stderr_artifact", "diagnosis")  # where an event names an output


ARTIFACT = re.compile(r"sha256-[0-9a-f]{64}")  # a name, never a path


def _number(value: object) -> float:
    """A journaled number, or 0 for anything else (a forged journal is shown, never crashes the screen)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass
class Command:
    index: int  # the command.started line's position among the session's events
    seq: int
    host: str
    command: str
    purpose: str
    option: int | None
    timeout_s: float | None
    finished: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.finished is None

    def ended(self) -> str:
        f = self.finished
        if f is None:
            return "running"
        if f.get("cut_short"):
            return "cut short: the run stopped while it ran"
        if f.get("timed_out"):
            return f"timed out after {_number(f.get('duration_s')):.2f}s"
        if f.get("error"):
            return f"not run: {f['error']}"
        return f"exit {f.get('exit')} in {_number(f.get('duration_s')):.2f}s"

    def title(self) -> str:
        """How a person names it: `$ command` on host (purpose, option) — how it ended."""
        opt = f", #{self.option}" if self.option is not None else ""
        return f"$ {self.command} · {self.host} ({self.purpose}{opt}) · {self.ended()}"

    def outputs(self) -> list[tuple[str, str]]:
        """(stream, artifact) for each stream that printed something."""
        f = self.finished or {}
        found = [("stdout", f.get("artifact")), ("stderr", f.get("stderr_artifact")), ("diagnosis", f.get("diagnosis"))]
        return [(k, v) for k, v in found if isinstance(v, str) and ARTIFACT.fullmatch(v) and v != EMPTY]

    def streams(self, artifacts: Path) -> list[tuple[str, Path]]:
        return [(k, artifacts / name) for k, name in self.outputs()]


@dataclass
class Commands:
    by_index: dict[int, Command] = field(default_factory=dict)
    owner: dict[int, int] = field(default_factory=dict)  # event index → its command's index
    rules: list[str] = field(default_factory=list)  # session rules, as journaled (for the gate's notice)
    _open: dict[tuple[str, str, Any], list[int]] = field(default_factory=dict)
    _by_artifact: dict[str, int] = field(default_factory=dict)
    _running: dict[int, Command] = field(default_factory=dict)  # read 20 times a second: kept, not searched
    _last: dict[tuple[str, str], int] = field(default_factory=dict)  # (purpose, host) → its latest command

    def add(self, index: int, e: dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind in ("session.started", "session.resumed"):
            # Whatever was running when the run stopped never finished: it is not running now.
            for c in self._running.values():
                c.finished = {"cut_short": True}
            self._running.clear()
            self._open.clear()
        elif kind == "command.started":
            seq = e.get("seq")
            c = Command(
                index=index,
                seq=seq if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0 else -1,
                host=str(e.get("host", "")),
                command=str(e.get("command", "")),
                purpose=str(e.get("purpose", "")),
                option=e.get("option") if isinstance(e.get("option"), int) else None,
                timeout_s=e.get("timeout_s") if isinstance(e.get("timeout_s"), int | float) else None,
            )
            self.by_index[index] = c
            self._running[index] = c
            self.owner[index] = index
            self._open.setdefault(self._key(e), []).append(index)
        elif kind == "command.finished":
            waiting = self._open.get(self._key(e))
            if waiting:
                c = self.by_index[waiting.pop(0)]
                c.finished = e
                self._running.pop(c.index, None)
                self.owner[index] = c.index
                self._last[(c.purpose, c.host)] = self._last[(c.purpose, "")] = c.index
                for _, name in c.outputs():
                    self._by_artifact[name] = c.index
        elif kind == "rule.added":
            rule = e.get("rule")
            name = rule.get("id") if isinstance(rule, dict) else None
            self.rules.append(f"rule {name or len(self.rules) + 1} ({e.get('raw') or ''})")
        else:
            for key in OUTPUT_KEYS:
                name = e.get(key)
                if isinstance(name, str) and name in self._by_artifact:
                    self.owner[index] = self._by_artifact[name]
                    return
            # A benchmark run or a stress result whose output printed nothing (or only on stderr): the
            # command it came from is the latest of its purpose (on its host, when the event names one).
            purpose = f"bench:{e.get('arm')}" if kind == "bench.run" else f"stress:{e.get('scenario')}"
            if kind in ("bench.run", "stress.result"):
                found = self._last.get((purpose, str(e.get("host") or "")))
                if found is not None:
                    self.owner[index] = found

    @staticmethod
    def _key(e: dict[str, Any]) -> tuple[str, str, Any]:
        return (str(e.get("host", "")), str(e.get("purpose", "")), e.get("option"))

    def for_event(self, index: int) -> Command | None:
        owner = self.owner.get(index)
        return None if owner is None else self.by_index.get(owner)

    def running(self) -> list[Command]:
        """Commands started and not finished, oldest first."""
        return list(self._running.values())

    def finished(self) -> list[Command]:
        """Commands that ended with some output, newest first."""
        return [c for c in reversed(self.by_index.values()) if not c.running and c.outputs()]
