"""The one seam every view reads from (DESIGN §3a): live, attached and replayed sessions.

All three read the session's journal — the record is the interface. `poll()` returns the complete
lines written since the last call, so the UI draws each ~50 ms tick as one batch and no thread ever
touches a widget. Answering a gate goes through `Runner.decide`/`resume`, exactly as
`signoff decide` does, under the session lock, in a background thread.
"""

from __future__ import annotations

import functools
import getpass
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from agent.errors import SessionBusy, SessionError
from agent.stopping import clear_stop
from agent.store.base import Session
from tools.terminal import MAX_LINE, printable

if TYPE_CHECKING:
    from agent.run.runner import Runner
    from policies.gates import Gate


def _runner(d: Session) -> Runner:
    # The graph and its libraries (~0.6 s to import) load only once a session is run or answered: a replay,
    # which never needs them, then reaches its first frame without them.
    from agent.run.runner import Runner

    return Runner(d, headless=False)


@dataclass
class PendingGate:
    gate: Gate  # as the node made it: what the person answers
    deadline_at: datetime | None = None
    on_deadline: str | None = None


@dataclass
class Preview:
    echo: str | None = None
    confirm: bool = False  # the decision is hedged, standing, a rollback or a stop
    error: str | None = None
    suggestion: str | None = None  # the closest reading the gate takes, for a line it did not understand


class EventSource(Protocol):
    # read-only members: a class attribute, an instance attribute or a property all provide them
    @property
    def read_only(self) -> bool: ...

    @property
    def session(self) -> str: ...

    def poll(self) -> list[dict[str, Any]]: ...

    def busy(self) -> bool: ...

    def pending(self) -> PendingGate | None: ...

    # `gate`: the gate the person was shown. An answer for a gate that no longer waits is refused (the
    # preview's error, the source's `error`), never recorded at whichever gate waits by then.
    def preview(self, text: str, *, gate: str | None = None) -> Preview: ...

    def answer(self, text: str, *, gate: str | None = None) -> None: ...

    def expire(self) -> None: ...

    def close(self) -> None: ...


class SessionSource:
    """Follow a session's journal; answer its gates when it waits for one (attach mode)."""

    read_only = False

    def __init__(self, d: Session, *, user: str | None = None) -> None:
        self.dir = d
        self.session = d.id
        self.user = user or getpass.getuser()
        self.tail = d.tail()
        self._thread: threading.Thread | None = None
        self._pending: PendingGate | None = None
        self._pending_at = -1  # journal offset the cached pending gate was read at
        self.error: str | None = None
        self.holder: str | None = None  # who holds the session when another process runs it (watch-only)

    # -- reading

    def poll(self) -> list[dict[str, Any]]:
        return self.tail.read()

    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def pending(self) -> PendingGate | None:
        """The gate the session waits at, read from its checkpoint (None while a runner holds it)."""
        if self.busy():
            return None
        if self._pending_at == self.tail.offset:
            return self._pending
        try:
            with self.dir.locked(), _runner(self.dir) as runner:
                out = runner.outcome()
        except SessionBusy as exc:
            # Another runner has it (`run --wait`, a `resume` elsewhere): keep following the journal, and say who.
            self.holder = " ".join(exc.holder.split()) if exc.holder else None
            return None
        except SessionError:
            return None  # it cannot be read as a session now: keep following the journal
        except Exception as exc:  # a session the screen cannot read: say so, keep following
            self.error = " ".join(str(exc).split())
            return None
        self.holder = None
        pending = out.pending_gate
        self._pending = None
        if pending is not None:
            from policies.gates import Gate  # loaded with the runner above

            deadline = pending.get("deadline") or {}
            # `at` is rounded down to the second; the real deadline is within the next one.
            at = datetime.fromisoformat(deadline["at"]) + timedelta(seconds=1) if deadline.get("at") else None
            try:
                gate = Gate.model_validate(pending)
            except ValueError as exc:  # a checkpoint's gate this version cannot read: say so, keep following
                self.error = " ".join(f"the waiting gate cannot be read: {exc}".split())
                return None
            self._pending = PendingGate(gate=gate, deadline_at=at, on_deadline=deadline.get("on_deadline"))
        self._pending_at = self.tail.offset
        return self._pending

    # -- answering

    def preview(self, text: str, *, gate: str | None = None) -> Preview:
        from policies.decisions import DecisionError  # the reader, when a line is typed (not at the first frame)

        try:
            with self.dir.locked(), _runner(self.dir) as runner:
                echo, confirm = runner.preview(text, by=self._by, gate=gate)
        except DecisionError as exc:
            return Preview(error=str(exc), suggestion=exc.suggestion)
        except SessionError as exc:
            return Preview(error=str(exc))
        return Preview(echo=echo, confirm=confirm)

    def answer(self, text: str, *, gate: str | None = None) -> None:
        def work(runner: Runner) -> None:
            runner.decide(text, by=self._by, confirmed=True, gate=gate)
            _runner(self.dir).resume()

        self._run(work)

    def expire(self) -> None:
        """The gate's deadline passed: resume, which answers it with the policy's `on_deadline`."""
        self._run(lambda runner: runner.resume())

    @property
    def _by(self) -> str:
        return f"human:{self.user}"

    def _run(self, work: Any) -> None:
        if self.busy():
            return
        clear_stop()  # a stop that was honoured (the operator quit an earlier run in this process) is over
        self._pending, self._pending_at = None, -1

        def target() -> None:
            try:
                with self.dir.locked():
                    work(_runner(self.dir))
            except KeyboardInterrupt:
                pass  # the stop that was asked for (the operator quit): journaled as `session.interrupted`
            except Exception as exc:  # shown in the status bar; the journal has the details
                self.error = " ".join(str(exc).split())

        self.error = None
        self._thread = threading.Thread(target=target, name=f"signoff-{self.session}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=0.5)
        self.tail.close()


class LiveSource(SessionSource):
    """A new session: the graph runs in a worker thread while the UI follows its journal."""

    def start(self, how: str = "start") -> None:
        """Run the session in the worker: a new one (`start`), or a paused one (`resume`, `revisit`)."""
        runs: dict[str, Callable[[Runner], object]] = {
            "start": lambda r: r.start(),
            "resume": lambda r: r.resume(),
            "revisit": lambda r: r.revisit(),
        }
        self._run(runs[how])


class ReplaySource:
    """A past session, read-only: every event at once; nothing runs and no gate can be answered."""

    read_only = True

    def __init__(self, d: Session) -> None:
        self.dir = d
        self.session = d.id
        self.events = list(d.events())
        self._given = False
        self.error: str | None = None

    def poll(self) -> list[dict[str, Any]]:
        if self._given:
            return []
        self._given = True
        return self.events

    def busy(self) -> bool:
        return False

    def pending(self) -> PendingGate | None:
        return None

    def preview(self, text: str, *, gate: str | None = None) -> Preview:
        return Preview(error="replay is read-only: no gate can be answered")

    def answer(self, text: str, *, gate: str | None = None) -> None:
        raise SessionError("replay is read-only: no gate can be answered")

    def expire(self) -> None:
        return None

    def close(self) -> None:
        return None


def shown(value: Any, key: str = "") -> Any:
    """`value` with every string in it passed through `printable`. Texts the view parses rather than
    shows (`campaign_text`, `policy_text`) keep their long lines whole."""
    if isinstance(value, str):
        return printable(value, max_line=None if key.endswith("_text") else MAX_LINE)
    if isinstance(value, dict):  # keys too: a forged journal's fact names are shown (`name=value`)
        return {_shown_key(str(k)): shown(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(v) for v in value]
    return value


def already_shown(event: dict[str, Any]) -> bool:
    """True when `shown(event)` would equal `event` (a JSON object, as every journal line is), told by C-level
    passes over its repr: no backslash, so no string in it holds a control or bidi character (repr writes every
    non-printable character as an escape) nor a backslash of its own; ASCII too, to be sure of the bidi ones; and no
    longer than a line may be, so no string in it is either. Most events are (a replay of 10,000 spent a third of its
    time escaping strings that had nothing to escape); any other goes through `shown`."""
    text = repr(event)
    return len(text) <= MAX_LINE and text.isascii() and "\\" not in text


def _shown_key(key: str) -> str:
    # A journal's keys are a few dozen short names repeated in every event: each is escaped once. A long one, which only
    # a forged journal has, is escaped every time, so the cache never holds anything big.
    return _short_key(key) if len(key) <= 64 else printable(key, max_line=MAX_LINE)


@functools.lru_cache(maxsize=4096)
def _short_key(key: str) -> str:
    return printable(key, max_line=MAX_LINE)


class SanitizedSource:
    """Any EventSource, with every string it hands the screen made safe (issue 19, M2): host output,
    a campaign's strings and a journal someone else wrote reach the TUI's widgets with control, escape
    and bidi characters shown as visible escapes and lines cut at MAX_LINE. Rich's Text keeps ESC, so
    this is the one place it must go; the app wraps whatever source it is given."""

    def __init__(self, inner: EventSource) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # dir, error, …: the wrapped source's own
        value = getattr(self.inner, name)
        # An error quotes what it could not read; the holder is read from the session's lock file.
        return shown(value) if name in ("error", "holder") else value

    @property
    def read_only(self) -> bool:
        return self.inner.read_only

    @property
    def session(self) -> str:
        return self.inner.session

    def poll(self) -> list[dict[str, Any]]:
        return [e if already_shown(e) else shown(e) for e in self.inner.poll()]

    def busy(self) -> bool:
        return self.inner.busy()

    def pending(self) -> PendingGate | None:
        p = self.inner.pending()
        if p is None:
            return None
        try:
            gate = p.gate.model_validate(shown(p.gate.model_dump(mode="json")))
        except ValueError:  # made safe, it no longer reads as a gate: not shown (`signoff decide` still answers it)
            return None
        return replace(p, gate=gate, on_deadline=shown(p.on_deadline))

    def preview(self, text: str, *, gate: str | None = None) -> Preview:
        p = self.inner.preview(text, gate=gate)
        return replace(p, echo=shown(p.echo), error=shown(p.error))

    def answer(self, text: str, *, gate: str | None = None) -> None:
        self.inner.answer(text, gate=gate)

    def expire(self) -> None:
        self.inner.expire()

    def close(self) -> None:
        self.inner.close()


def seconds_left(pending: PendingGate, now: datetime) -> float | None:
    if pending.deadline_at is None:
        return None
    return max(0.0, (pending.deadline_at - now) / timedelta(seconds=1))
