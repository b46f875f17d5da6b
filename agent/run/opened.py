"""An open session, below the driver: its journal (verified as it opens), documents, transports and context, the graph
on its checkpoints, and what it says — its view, the gates it journals, its outcome and notifications. `Runner`
(agent/run/runner.py) drives it."""

from __future__ import annotations

import contextlib
import shlex
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Self

from agent.campaign import with_proposals
from agent.exec.planning import command_class
from agent.journal import events as ev
from agent.journal.chain import Record
from agent.journal.view import SessionView, fold
from agent.ledger import Ledger
from agent.run import deciding, notify
from agent.run.checkpoints import run_config, session_graph
from agent.run.documents import campaign_dir, check_documents
from agent.run.outcome import Outcome, Status, ended_as, opened_at, outcome_of
from agent.run.wiring import brain_for, run_context, session_documents
from agent.store.base import Session
from policies.gates import Gate

Listener = Callable[[Record], None]


class OpenSession:
    """One session opened for driving; `Runner` adds start, resume, answers and abandon."""

    def __init__(self, d: Session, *, headless: bool = True, listeners: list[Listener] | None = None) -> None:
        self.dir = d
        self.meta = d.meta()
        self.headless = headless
        # First: the store verifies the journal before handing it over (agent/journal/integrity.py), and
        # opening it recovers a torn last line. Nothing the session holds is read or written before.
        self.journal = d.open_journal()
        try:
            check_documents(d, self.journal)
            self.campaign_dir = campaign_dir(d, self.meta)
            self.loaded, self.policy = session_documents(d, self.meta, self.campaign_dir)
        except BaseException:
            self.journal.close()
            raise
        self._uses = 0  # open `with` blocks (a method called outside one is one)
        self._spend_lock = threading.Lock()
        for listener in listeners or []:
            self.journal.subscribe(listener)
        self.ctx, self.transport = run_context(
            d,
            self.meta,
            self.loaded,
            self.policy,
            campaign_dir=self.campaign_dir,
            journal=self.journal,
            headless=headless,
            on_pin=self._pinned,
        )
        self._journaled_gates: set[str] = set()
        self._started = False  # whether the journal has its session.started line
        self.notifier: notify.Sender = notify.send  # the `notify:` seam (tests may put a Recorder here)
        self._resume_from_journal()
        self.ctx.brain = brain_for(self.meta, self.loaded.campaign, self.ctx, on_cost=self._spend)

    def __enter__(self) -> Self:
        self._uses += 1
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self._uses -= 1
        if self._uses == 0:
            self.close(quiet=exc is not None)

    def close(self, *, quiet: bool = False) -> None:
        """Close the transports and the journal (again: a no-op). `quiet`: an error is on its way out
        already, and a disk too full to finish the journal must not hide it."""
        try:
            self.transport.close()
        finally:
            with contextlib.suppress(OSError) if quiet else contextlib.nullcontext():
                self.journal.close()

    def _resume_from_journal(self) -> None:
        """What the journal knows that the context must carry on with: LLM spend and proposed options."""
        view = self.view()
        self.ctx.ledger = Ledger(started=dict(view.mutations_started), finished=dict(view.mutations_finished))
        self._journaled_gates = set(view.decided)
        self._started = view.started_event is not None
        # `signoff abandon` journaled and the run not ended since: read once here, kept by `abandon` (a session is
        # abandoned only by the runner holding its lease), so a resume or a decide does not fold the journal again.
        self._abandon_asked = view.abandoned is not None and ended_as(view) is None
        self.ctx.spent_usd += view.llm_usd
        if view.proposals:
            self.ctx.campaign = with_proposals(self.ctx.campaign, view.proposals)

    def _spend(self, usd: float) -> None:
        with self._spend_lock:  # subagents report from their own threads
            self.ctx.spent_usd += usd

    def _pinned(self, hostname: str, key_type: str, fingerprint: str) -> None:
        self.dir.pinned_changed()
        self.journal.append(
            ev.HostkeyPinnedEvent(
                host=hostname, key_type=key_type, fingerprint=fingerprint, by="--accept-new-host-keys"
            )
        )

    # -- the LangGraph side

    def _graph(self) -> contextlib.AbstractContextManager[Any]:
        return session_graph(self.dir, self.journal)

    def _config(self) -> dict[str, Any]:
        return run_config(self.dir.id, self.loaded.campaign)

    def view(self) -> SessionView:
        """The session as its journal tells it now (other processes may have appended since)."""
        return fold(self.dir.events())

    def _opened_at(self, interrupt_id: str) -> datetime | None:
        return opened_at(self.view(), interrupt_id)

    def _finish(self, snapshot: Any, *, elapsed: float) -> Outcome:
        values = snapshot.values
        report = values.get("report") or {}
        status: Status = "failed" if report.get("error") else ("stopped" if values.get("stopping") else "finished")
        ended = ev.SessionFailedEvent if status == "failed" else ev.SessionFinishedEvent
        self.journal.append(ended(status=status, elapsed_s=round(elapsed, 3), error=report.get("error")))
        self._set_status(status)
        return self.outcome(snapshot)  # the graph's state as the run left it: no second connection to read it again

    def _journal_gates(self, records: list[dict[str, Any]], *, recovered: bool = False) -> None:
        for g in records:
            by = g["decision"].get("by") or ""
            if by.startswith("human:") or by == "deadline" or g["id"] in self._journaled_gates:
                continue  # journaled when the person answered (`decide`) or the deadline passed (`resume`)
            if g["decision"].get("action") == "abandoned":
                continue  # the gate `signoff abandon` closed: journaled as `session.abandoned`
            self._journaled_gates.add(g["id"])
            # `recovered` is written only when true: gates journaled before it existed have none
            extra = {"recovered": True} if recovered else {}
            self.journal.append(ev.GateOpenedEvent.of(g, recovered=recovered))
            opened = {"gate": g["id"], "gate_kind": g["kind"], "option": g.get("option")}
            decided = {"decision": g["decision"], "by": by, "rule": g["decision"].get("rule")}
            self.journal.append(
                ev.DecisionEvent.model_validate({**opened, **decided, "policy_sha256": self.policy.sha256, **extra})
            )

    def _outcome_paused(self, snapshot: Any, *, elapsed: float | None = None, note: str | None = None) -> Outcome:
        interrupt = snapshot.interrupts[0]
        gate = interrupt.value["gate"]
        fresh = interrupt.id not in self.view().opened_interrupts  # not on a resume that is still waiting
        if fresh:
            self.journal.append(ev.GateOpenedEvent.of(gate, interrupt=interrupt.id))
            self.journal.append(
                ev.SessionPausedEvent(gate=gate["id"], interrupt=interrupt.id, elapsed_s=round(elapsed or 0.0, 3))
            )
        self._set_status("paused")
        out = self.outcome(snapshot)
        if fresh:
            self._notify(out, interrupt.id)
        if note:
            out.echo = note
        return out

    def _notify(self, out: Outcome, interrupt_id: str) -> None:
        """Tell the campaign's `notify:` targets, then the policy's, that this gate waits for a person; each
        attempt journaled (`notify.sent`). A target that fails changes nothing else: the run stays paused."""
        gate = out.pending_gate
        if gate is None or not (self.loaded.campaign.notify or self.policy.model.notify):
            return
        # A campaign's command runs on this machine like a local host's, so the command policy judges it
        # first (the policy's own commands are the policy author's, as its rules are).
        refused = [(s, self._refusal(s)) for s in self.loaded.campaign.notify]
        specs = [s for s, why in refused if why is None] + list(self.policy.model.notify)
        results = [notify.NotifyResult(target=notify.spec_label(s), ok=False, error=why) for s, why in refused if why]
        try:
            since = self._opened_at(interrupt_id) or datetime.now(UTC)
            name = self.loaded.campaign.name
            payload = notify.gate_waiting(session=self.dir.id, campaign=name, gate=gate, since=since)
            cwd = str(self.campaign_dir) if self.campaign_dir.is_dir() else None
            if specs:
                results += notify.fire(specs, payload, cwd=cwd, redact=self.ctx.redact, sender=self.notifier)
        except Exception as exc:  # the payload could not be made: journaled as the attempt that failed
            error = self.ctx.redact(" ".join(f"{type(exc).__name__}: {exc}".split()))[:200]
            results += [notify.NotifyResult(target=notify.spec_label(s), ok=False, error=error) for s in specs]
        for result in results:
            self.journal.append(
                ev.NotifySentEvent(gate=str(gate["id"]), interrupt=interrupt_id, **result.event_fields())
            )

    def _refusal(self, spec: Any) -> str | None:
        """Why the command policy does not let a campaign's notify command run (None: it allows it)."""
        if spec.command is None:
            return None
        verdict = command_class(self.ctx, shlex.join(spec.command))
        if verdict.klass == "allow":
            return None
        why = f" ({verdict.reason})" if verdict.reason else ""
        return f"not run: the command policy says {verdict.klass}{why}; a policy's own notify: commands need no check"

    # -- decisions (agent/run/deciding.py)

    def pending(self) -> tuple[str, Gate] | None:
        with self._graph() as graph:
            return deciding.waiting_gate(graph.get_state(self._config()))

    def _set_status(self, status: str) -> None:
        self.meta["status"] = status
        self.dir.write_meta(self.meta)

    # -- summaries (agent/run/outcome.py)

    def outcome(self, snapshot: Any = None) -> Outcome:
        if snapshot is None:
            with self._graph() as graph:
                snapshot = graph.get_state(self._config())
        return outcome_of(
            snapshot,
            self.view(),
            session=self.dir.id,
            journal=self.dir.label,
            campaign=self.loaded.campaign,
            brain=self.ctx.brain.name,
            status=self.meta.get("status"),
        )
