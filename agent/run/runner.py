"""The driver: one session's graph run to its next stop — start, resume with recorded answers, revisit —
turning graph interrupts into paused sessions and one-line decisions into resumes.

A `Runner` owns the session's open journal and its host transports; `with Runner(d) as r:` closes both
once, on exit. Where a session lives is the store's business (`agent/store/`); the runner only uses the
`Session` seam — documents, answers, journal, checkpointer and lease. Making a session is
`agent/run/create.py`, answering a gate `agent/run/deciding.py`, the outcome `agent/run/outcome.py`; what an open
session holds and says, below the driving, is `agent/run/opened.py: OpenSession`.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from agent import crashpoints
from agent.errors import RunFailed, SessionError
from agent.exec import live
from agent.journal import events as ev
from agent.journal.documents import digest
from agent.run import deciding
from agent.run.documents import CAMPAIGN_FILES, SSH_CONFIG
from agent.run.opened import OpenSession
from agent.run.outcome import Outcome, ended_as
from agent.stopping import stop_reason, stop_requested
from agent.store.base import owner
from policies.expr import engine_version
from tools.artifacts import StorageFull

F = TypeVar("F", bound=Callable[..., Any])


def _own_with(method: F) -> F:
    """Outside a `with Runner(...)` block, a call that runs, resumes or answers is a block of its own: the
    journal and the transports close when it returns or raises (`Runner(d).resume()` stays one line)."""

    @functools.wraps(method)
    def call(self: Runner, *args: Any, **kwargs: Any) -> Any:
        with self:
            return method(self, *args, **kwargs)

    return cast(F, call)


class Runner(OpenSession):
    """Drives one session's graph: start, resume with answers, and report the outcome."""

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
        from langgraph.types import Command

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
            # As if the continue gate had been answered "go on" with the deferred options queued.
            graph.update_state(
                cfg,
                Command(
                    goto="pick_next",
                    update={"queue": deferred, "stopping": False, "report": None, "options": reopened},
                ),
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


def _pending(snapshot: Any) -> bool:
    """Whether the graph has a step to take: one that was running, a gate waiting, or no checkpoint yet."""
    return bool(snapshot.created_at is None or snapshot.next or snapshot.tasks or snapshot.interrupts)
