"""The driver: one session's graph run to its next stop — start, resume with recorded answers, revisit —
turning graph interrupts into paused sessions and one-line decisions into resumes.

A `Runner` owns the session's open journal and its host transports; `with Runner(d) as r:` closes both
once, on exit. Where a session lives is the store's business (`agent/store/`); the runner only uses the
`Session` seam — documents, answers, journal, checkpointer and lease. Making a session is
`agent/run/create.py`, answering a gate `agent/run/deciding.py`, the outcome `agent/run/outcome.py`.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import shlex
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from agent import crashpoints
from agent.campaign import with_proposals
from agent.errors import RunFailed, SessionError
from agent.exec import live
from agent.exec.planning import command_class
from agent.journal import events as ev
from agent.journal.chain import Record
from agent.journal.documents import digest
from agent.journal.view import SessionView, fold
from agent.ledger import Ledger
from agent.run import deciding, notify
from agent.run.checkpoints import run_config, session_graph
from agent.run.documents import CAMPAIGN_FILES, SSH_CONFIG, campaign_dir, check_documents
from agent.run.outcome import Outcome, Status, ended_as, opened_at, outcome_of
from agent.run.wiring import brain_for, run_context, session_documents
from agent.stopping import stop_reason, stop_requested
from agent.store.base import Session, owner
from policies.expr import engine_version
from policies.gates import Gate
from tools.artifacts import StorageFull

Listener = Callable[[Record], None]
F = TypeVar("F", bound=Callable[..., Any])


def _own_with(method: F) -> F:
    """Outside a `with Runner(...)` block, a call that runs, resumes or answers is a block of its own: the
    journal and the transports close when it returns or raises (`Runner(d).resume()` stays one line)."""

    @functools.wraps(method)
    def call(self: Runner, *args: Any, **kwargs: Any) -> Any:
        with self:
            return method(self, *args, **kwargs)

    return cast(F, call)


class Runner:
    """Drives one session's graph: start, resume with answers, and report the outcome."""

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

    def __enter__(self) -> Runner:
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

    @_own_with
    def start(self) -> Outcome:
        self.journal.append(
            ev.SessionStartedEvent(
                campaign=self.meta["campaign"],
                campaign_name=self.meta["campaign_name"],
                campaign_sha256=self.meta["campaign_sha256"],
                campaign_text=self.loaded.text,
                policy=self.meta["policy"],
                policy_name=self.policy.name,
                policy_sha256=self.policy.sha256,
                policy_text=self.policy.text,
                policy_parts=self.meta.get("policy_parts"),
                engine=engine_version(),
                brain=self.ctx.brain.name,
                **({"brain_check": checked} if (checked := (self.meta.get("brain") or {}).get("checked")) else {}),
                headless=self.headless,
                user=getpass.getuser(),
                campaign_dir=self.meta["campaign_dir"],
                ssh_config=self.meta.get("ssh_config"),
                ssh_config_sha256=digest(self.dir.read(SSH_CONFIG)),
                campaign_files_sha256=digest(self.dir.read(CAMPAIGN_FILES)),
                accept_new_host_keys=bool(self.meta.get("accept_new_host_keys")),
            )
        )
        return self._drive({})

    @_own_with
    def resume(self) -> Outcome:
        from langgraph.types import Command

        if not self._started:
            return self.start()  # killed between creating the session and its first journal line
        with self._graph() as graph:
            snapshot = graph.get_state(self._config())
        # Gates a policy decided are journaled as the graph reports them; a crash can fall in between.
        self._journal_gates((snapshot.values or {}).get("gates", []), recovered=True)
        if self._abandon_untaken(snapshot):
            # Killed between journaling an abandon and the graph taking it up: it goes on, before anything else
            # the run had pending (a gate the abandon closed takes no answer, and no deadline answers it).
            return self._abandon(snapshot)
        pending = {i.id: i for i in snapshot.interrupts}
        answers = self.dir.answers()
        if pending:
            ready = {i: answers[i] for i in pending if i in answers}
            if not ready:
                first = snapshot.interrupts[0]
                expired = deciding.deadline_answer(self.dir, self.journal, first, self._opened_at(first.id))
                if expired is None:
                    return self._outcome_paused(snapshot, note="still waiting for a decision")
                ready = {first.id: expired}
            gates = {i: str(pending[i].value["gate"]["id"]) for i in ready}
            deciding.recorded_answers(self.dir.id, self.dir.events(), ready, gates)
            self.journal.append(ev.SessionResumedEvent(answers=sorted(ready)))
            ready = {k: {n: v for n, v in answer.items() if n != "answer_id"} for k, answer in ready.items()}
            self.dir.clear_answers(list(ready))
            return self._drive(Command(resume=ready))
        if snapshot.created_at is None and self.view().abandoned is not None:
            return self.outcome(snapshot)  # abandoned before anything ran: there is nothing to go on with
        if snapshot.created_at is None:
            # Killed before the graph saved its first checkpoint: nothing ran yet, so start it.
            self.journal.append(ev.SessionResumedEvent(answers=[], from_step=None))
            return self._drive({})
        if snapshot.next or snapshot.tasks:
            # Interrupted by a crash or a signal: continue from the last checkpoint. (After a hard kill
            # `next` can be empty while tasks of the step are still pending, so both are looked at.)
            self.journal.append(ev.SessionResumedEvent(answers=[], from_step=snapshot.metadata.get("step")))
            return self._drive(None)
        ended = ended_as(self.view())
        if ended is None:
            return self._finish(snapshot, elapsed=0.0)  # killed after the last step, before saying so
        if self.meta.get("status") != ended:
            self._set_status(ended)  # killed between journaling the end and recording it in meta.json
        return self.outcome()

    def view(self) -> SessionView:
        """The session as its journal tells it now (other processes may have appended since)."""
        return fold(self.dir.events())

    def _opened_at(self, interrupt_id: str) -> datetime | None:
        return opened_at(self.view(), interrupt_id)

    @_own_with
    def wait_for_answer(self) -> bool:
        """Stay with a paused session, holding its lease, until its gate has an answer — a `decide` from
        any machine, or the gate's deadline — so the caller can resume it at once. False when a signal
        asks to stop (the session stays paused; anyone can answer and resume it later)."""
        with self._graph() as graph:
            interrupts = graph.get_state(self._config()).interrupts
        if not interrupts:
            return True
        interrupt_id, value = interrupts[0].id, interrupts[0].value
        opened = self._opened_at(interrupt_id)
        due = opened + timedelta(seconds=value["deadline_s"]) if value.get("deadline_s") and opened else None
        self.dir.write_meta({**self.dir.meta(), "waiting": owner()})
        self.journal.append(
            ev.SessionWaitingEvent(interrupt=interrupt_id, runner=owner(), deadline=due and due.isoformat())
        )
        try:
            while not stop_requested():
                left = (due - datetime.now(UTC)).total_seconds() if due else 1.0
                if due and left <= 0:
                    return True
                if self.dir.wait_for_answer(interrupt_id, timeout=min(1.0, max(0.05, left))) is not None:
                    return True
            return False
        finally:
            meta = self.dir.meta()
            meta.pop("waiting", None)
            self.dir.write_meta(meta)

    def _drive(self, inp: Any) -> Outcome:
        started = time.monotonic()
        self.dir.prepare()  # another machine may have run it so far
        self.ctx.artifacts.sweep()  # partial output a killed run left (we hold the session lock)
        live.sweep(self.ctx.live_dir)  # and the spools of commands it left running: none of them runs now
        self._set_status("running")
        try:
            with self._graph() as graph:
                cfg = self._config()
                modes = ["updates", "checkpoints"]
                for mode, chunk in graph.stream(inp, cfg, context=self.ctx, stream_mode=modes, durability="sync"):
                    if mode == "updates":
                        for node, update in chunk.items():
                            if node != "__interrupt__" and isinstance(update, dict):
                                self._journal_gates(update.get("gates", []))
                    else:
                        crashpoints.reached("checkpoint")
                        if stop_requested():
                            # A signal asked to stop. Only here, right after a whole superstep was saved, is
                            # nothing half done: parallel branches report updates one by one mid-step.
                            raise KeyboardInterrupt
                snapshot = graph.get_state(cfg)
        except KeyboardInterrupt:
            # The last checkpoint stands; `signoff resume` continues from the step that was running.
            self.journal.append(ev.SessionInterruptedEvent(reason=stop_reason() if stop_requested() else "SIGINT"))
            self._set_status("interrupted")
            raise
        except StorageFull as exc:
            # The evidence cannot be kept, so nothing more may run; the step that hit it runs again on resume.
            message = f"disk full: {exc.strerror}; free space, then `signoff resume {self.dir.id}` continues"
            # The journal and meta.json may sit on the same full disk: the message goes out regardless.
            with contextlib.suppress(OSError):
                self.journal.append(ev.SessionFailedEvent(error=message, errno=exc.errno, reason="storage-full"))
            with contextlib.suppress(OSError):
                self._set_status("failed")
            raise RunFailed(message) from exc
        except RunFailed:
            raise  # the checkpoint DB was refused before anything ran: journaled as such
        except Exception as exc:  # the run failed: record why, keep the checkpoint for resume
            self.journal.append(ev.SessionFailedEvent(error=f"{type(exc).__name__}: {exc}"))
            self._set_status("failed")
            raise RunFailed(f"{type(exc).__name__}: {exc}") from exc
        if snapshot.interrupts:
            return self._outcome_paused(snapshot, elapsed=time.monotonic() - started)
        return self._finish(snapshot, elapsed=time.monotonic() - started)

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

    def _at_gate(self, text: str, *, by: str, for_gate: str | None) -> deciding.AtGate:
        if self._abandon_asked:
            with self._graph() as graph:
                untaken = self._abandon_untaken(graph.get_state(self._config()))
            if untaken:  # the gate it closed takes no answer: the abandon goes on first
                abandoned = self.view().abandoned
                raise SessionError(
                    f"session {self.dir.id} was abandoned by {abandoned.by if abandoned else 'a person'}; "
                    f"`signoff abandon {self.dir.id}` goes on with it (nothing was recorded)"
                )
        found = self.pending()
        if found is None:
            if for_gate is not None:  # the gate it was given for was decided, and no other waits
                ended = ended_as(self.view()) is not None
                deciding.refuse(self.dir, self.journal, None, for_gate, text, by=by, record=not ended)
            raise SessionError(
                f"session {self.dir.id} is not waiting for a decision (status: {self.meta.get('status')})"
            )
        interrupt, gate = found
        next_rule = self.view().rules_added + 1
        return deciding.AtGate(self.dir, self.journal, self.ctx.brain, interrupt, gate, next_rule=next_rule)

    def preview(self, text: str, *, by: str, gate: str | None = None) -> tuple[str, bool]:
        """What `text` would do at the pending gate, and whether it needs a confirmation (the echo a
        person sees before it takes effect). Raises DecisionError, journaled, for text not understood;
        given `gate` (the gate the person was shown), GateNotWaiting, journaled, if another one waits."""
        return deciding.preview(self._at_gate(text, by=by, for_gate=gate), text, by=by, for_gate=gate)

    @_own_with
    def decide(self, text: str, *, by: str, confirmed: bool = True, gate: str | None = None) -> deciding.Decided:
        """Record a one-line decision for the pending gate; returns (interrupt id, echo, where).
        Raises DecisionError (journaled, nothing changed) when the text is not understood; given `gate`
        (the gate the person was shown), GateNotWaiting, journaled, if another one waits."""
        at = self._at_gate(text, by=by, for_gate=gate)
        return deciding.decide(at, text, by=by, confirmed=confirmed, for_gate=gate)

    @_own_with
    def revisit(self) -> Outcome:
        """Reopen the options a person deferred "for now" and try them again, in plan order."""
        with self._graph() as graph:
            cfg = self._config()
            snapshot = graph.get_state(cfg)
            if snapshot.interrupts:
                raise SessionError(f"session {self.dir.id} is paused at a gate; answer it first")
            if snapshot.next:
                raise SessionError(f"session {self.dir.id} has not finished; `signoff resume {self.dir.id}` first")
            options = snapshot.values.get("options", {})
            plan = snapshot.values.get("plan", [])
            deferred = [o for o in plan if options.get(str(o), {}).get("outcome") == "deferred"]
            if not deferred:
                raise SessionError(f"session {self.dir.id} has no deferred options to revisit")
            reopened = {
                str(o): {
                    "outcome": "untested",
                    "reasons": [*options[str(o)].get("reasons", []), "reopened with --revisit"],
                }
                for o in deferred
            }
            graph.update_state(
                cfg,
                {"queue": deferred, "stopping": False, "route": "next", "report": None, "options": reopened},
                as_node="continue_gate",
            )
        self.journal.append(ev.SessionRevisitEvent(options=deferred, user=getpass.getuser()))
        return self._drive(None)

    @_own_with
    def abandon(self, *, by: str) -> Outcome:
        """Give the session up from wherever it stands (interrupted, killed, failed mid-step, paused at a gate): every
        option on a host that was not kept is rolled back and verified (agent/nodes/abandon.py), nothing further
        runs, and the run ends — or pauses at the rollback gate when a rollback does not verify. A gate that waited
        is closed unanswered. Journaled as `session.abandoned` first, so a kill halfway is taken up by `resume` or
        another `abandon`."""
        if not self._started:
            raise SessionError(f"session {self.dir.id} never started: nothing ran, so nothing needs rolling back")
        view = self.view()
        with self._graph() as graph:
            snapshot = graph.get_state(self._config())
        if not (self._abandon_untaken(snapshot) or _pending(snapshot)):
            raise SessionError(
                f"session {self.dir.id} has already ended ({ended_as(view) or self.meta.get('status')}); nothing to "
                f"abandon — `signoff report {self.dir.id}` says what it left on the hosts"
            )
        if (snapshot.values or {}).get("abandon") is not None:
            return self.resume()  # abandoned before: its rollbacks go on, or wait at their gate
        if view.abandoned is None:
            from agent.nodes.abandon import to_roll_back

            gate = snapshot.interrupts[0].value["gate"]["id"] if snapshot.interrupts else None
            on = {host: {str(o): was for o, was in sorted(states.items())} for host, states in view.on_hosts.items()}
            roll = to_roll_back(snapshot.values or {}, view.on_hosts)
            self.journal.append(ev.SessionAbandonedEvent(by=by, on_hosts=on, gate=gate, roll_back=roll))
            self._abandon_asked = True
        return self._abandon(snapshot)

    def _abandon_untaken(self, snapshot: Any) -> bool:
        """Whether the journal says the session was abandoned and the graph has not taken that up yet."""
        return self._abandon_asked and not (snapshot.values or {}).get("abandon")

    def _abandon(self, snapshot: Any) -> Outcome:
        """Drop the steps the run had pending (a gate's question too) and send it to the abandon node with what the
        journal's `session.abandoned` asked for, and the gate it closed (recorded, so its id is not used again)."""
        from langgraph.graph import END
        from langgraph.types import Command

        view = self.view()
        asked = view.abandoned
        assert asked is not None
        if snapshot.created_at is None:
            # Killed before the graph's first checkpoint: nothing ran on a host, and there is no graph to drive.
            self.journal.append(ev.SessionFinishedEvent(status="stopped", elapsed_s=0.0))
            self._abandon_asked = False
            self._set_status("stopped")
            return self.outcome(snapshot)
        with self._graph() as graph:
            # Dropping a step hands its finished tasks' writes on (a subagent that finished routes to `review`),
            # which makes a step of its own: dropped too, until nothing is pending. Each round drops at least one
            # step the graph could take, so a few rounds do; more is a graph this code does not know.
            for _ in range(8):
                if not _pending(snapshot):
                    break
                graph.update_state(self._config(), None, as_node=END)
                snapshot = graph.get_state(self._config())
            if _pending(snapshot):
                raise SessionError(f"session {self.dir.id}: its pending steps could not be dropped; nothing was run")
        closed = next((g for g in view.gates if g.gate == asked.gate), None) if asked.gate else None
        gate = (
            {"id": closed.gate, "kind": closed.kind, "option": closed.option, "question": closed.question}
            | {"facts": closed.facts, "recommendation": closed.recommendation}
            if closed is not None
            else None
        )
        update = {"abandon": {"by": asked.by, "roll_back": asked.roll_back, "gate": gate}}
        return self._drive(Command(goto="abandon", update=update))

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


def _pending(snapshot: Any) -> bool:
    """Whether the graph has a step to take: one that was running, a gate waiting, or no checkpoint yet."""
    return bool(snapshot.created_at is None or snapshot.next or snapshot.tasks or snapshot.interrupts)
