"""Sessions: creating them, and the run/resume loop that turns graph interrupts into paused
sessions and one-line decisions into resumes.

Where a session lives is the store's business (`agent/store.py`: a directory under `$SIGNOFF_HOME`,
or PostgreSQL); this module only uses the `Session` seam — documents, answers, journal, checkpointer
and lease.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import getpass
import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agent import crashpoints
from agent.brain import Brain
from agent.brain.rules import RuleBrain
from agent.campaign import LoadedCampaign, load_campaign, refuse_literal_secrets, with_proposals
from agent.context import RunContext
from agent.errors import (
    FAILED,
    FINISHED,
    PAUSED,
    CheckpointUnreadable,
    DocumentsChanged,
    RunFailed,
    SessionBusy,
    SessionError,
)
from agent.journal import events as ev
from agent.journal.chain import ENDING_KINDS, Record
from agent.journal.documents import DOCUMENTS, mismatch
from agent.journal.head import Signer
from agent.journal.view import TOKENS, SessionView, fold, timestamp
from agent.models import BrainSpec
from agent.run.answers import answer as answer_gate
from agent.run.answers import keeps_unsafe
from agent.run.connect import HostRouter, ssh_factory
from agent.run.ledger import Ledger
from agent.stopping import stop_requested
from agent.store import open_store
from agent.store.base import Session, Store, owner
from agent.store.listing import list_sessions
from agent.store.local import SessionDir
from agent.store.serde import blocked_types
from policies.decisions import DecisionError
from policies.engine import PolicyEngine
from policies.expr import engine_version
from policies.gates import Decision, Gate, suggested_answer
from policies.load import load_policy, load_policy_text
from policies.schema import Policy
from policies.yamlsrc import SourceError
from tools.artifacts import ArtifactStore, StorageFull
from tools.secrets import Redactor, is_secret_name
from tools.transport import LocalTransport

Status = Literal["finished", "paused", "failed", "stopped"]
EXIT = {"finished": FINISHED, "stopped": FINISHED, "paused": PAUSED, "failed": FAILED}


class Outcome(BaseModel):
    session: str
    status: Status
    options: list[dict[str, Any]] = []
    gates: list[dict[str, Any]] = []
    pending_gate: dict[str, Any] | None = None
    session_rules: list[dict[str, Any]] = []
    deferred: dict[str, Any] | None = None  # {"options": [...], "revisit": "signoff resume ID --revisit"}
    calibration: dict[str, Any] | None = None  # A/A noise floor, when the campaign asked for it
    goal: dict[str, Any] | None = None
    brain: dict[str, Any] | None = None  # which brain reasoned, and what its model calls cost
    journal: str
    error: str | None = None
    echo: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def forbidden(self, fail_on: set[str]) -> list[dict[str, Any]]:
        """Gates decided in a way `--fail-on` forbids (ask = a person had to answer)."""
        names = {"ask": "human", "default": "headless-default", "deadline": "deadline"}
        return [g for g in self.gates if g["decided_as"] in {names[f] for f in fail_on}]


def decided_as(by: str | None) -> str:
    """human | policy-rule | session-rule | headless-default | deadline (from a decision's `by`)."""
    by = by or ""
    if by.startswith("human:"):
        return "human"
    if by.startswith("session-rule:"):
        return "session-rule"
    if by in ("headless-default", "deadline"):
        return by
    return "policy-rule"


@functools.cache
def _compiled() -> Any:
    """The graph, compiled once per process (compiling inspects every node: ~0.1 s); each use gets a
    copy bound to its own checkpointer connection."""
    from agent.graph import build

    return build().compile()


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _new_session(store: Store) -> Session:
    """A session under a fresh id; an id already taken (the same second and 16 random bits, or a name
    someone planted in a shared store) is passed over, never written into."""
    for _ in range(20):
        try:
            return store.new(new_session_id())
        except FileExistsError:
            continue
    raise SessionError(f"could not create a new session in {store.where}: every id tried was taken")


def create(
    campaign_path: Path,
    policy_ref: str | Path,
    *,
    demo: bool = False,
    accept_new_host_keys: bool = False,
    ssh_config: str | None = None,
    campaign_text: str | None = None,
    brain: str | None = None,
    model: str | None = None,
    store: Store | None = None,
) -> Session:
    """Validate everything first (nothing is created for a bad file), then lay out the session."""
    loaded = load_campaign(campaign_path, text=campaign_text)
    refuse_literal_secrets(loaded)
    policy = load_policy(policy_ref)
    missing = [name for name in loaded.campaign.secrets if not os.environ.get(name)]
    if missing:
        raise SourceError(loaded.path, None, f"the campaign needs secret(s) {', '.join(missing)} in the environment")
    try:
        Signer.from_environment()  # a signing key that cannot be used is refused before anything starts
    except ValueError as exc:
        raise SourceError("SIGNOFF_SIGNING_KEY", None, str(exc)) from None
    chosen = choose_brain(loaded.campaign.brain, policy, brain, model)
    if chosen["kind"] == "claude" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise SourceError(
            loaded.path, None, "the claude brain needs ANTHROPIC_API_KEY in the environment (or use --brain rules)"
        )
    d = _new_session(store or open_store())
    d.write("campaign.yaml", loaded.text)
    d.write("policy.yaml", policy.text)
    files = campaign_files(loaded)
    if files:
        d.write(CAMPAIGN_FILES, json.dumps(files, indent=1, sort_keys=True))
    d.write_meta(
        {
            "id": d.id,
            "campaign": str(loaded.path),
            "campaign_dir": str(loaded.directory),
            "campaign_name": loaded.campaign.name,
            "campaign_sha256": hashlib.sha256(loaded.text.encode()).hexdigest(),
            "policy": str(policy.path),
            "policy_name": policy.name,
            "policy_sha256": policy.sha256,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "demo": demo,
            "accept_new_host_keys": accept_new_host_keys,
            "ssh_config": ssh_config,
            "brain": chosen,
            "status": "created",
            "owner": owner(),
        }
    )
    return d


CAMPAIGN_FILES = "campaign-files.json"
MAX_KEPT_FILE = 8 << 20  # larger upload sources are read from the campaign directory only


def campaign_files(loaded: LoadedCampaign) -> dict[str, dict[str, str]]:
    """The files the campaign names relative to its directory (uploads, known_hosts files) as they are
    now, base64 with their sha256: a session resumed on another machine, or after the checkout moved,
    uploads exactly what it started with and checks host keys against the same files."""
    names = [up.src for up in loaded.campaign.baseline.upload]
    names += [h.known_hosts for h in loaded.campaign.hosts if h.known_hosts and not Path(h.known_hosts).is_absolute()]
    out = {}
    for name in names:
        path = loaded.directory / name
        if not name.startswith("~") and path.is_file() and path.stat().st_size <= MAX_KEPT_FILE:
            data = path.read_bytes()
            out[name] = {"sha256": hashlib.sha256(data).hexdigest(), "data": base64.b64encode(data).decode()}
    return out


def campaign_dir(d: Session, meta: dict[str, Any]) -> Path:
    """Where the campaign's files are for this runner: the directory it started in while that still
    holds them unchanged, else the copies the session kept, written under its working directory."""
    original = Path(meta["campaign_dir"])
    kept = json.loads(d.read(CAMPAIGN_FILES) or "{}")
    if all(_sha256(original / src) == f["sha256"] for src, f in kept.items()):
        return original
    here = d.work / "campaign"
    for src, f in kept.items():
        path = (here / src).resolve()
        if not path.is_relative_to(here.resolve()):
            raise SessionError(f"session {d.id}: kept campaign file {src!r} points outside its directory")
        data = base64.b64decode(f["data"])
        if hashlib.sha256(data).hexdigest() != f["sha256"]:
            raise SessionError(f"session {d.id}: its kept copy of {src} does not match its sha256")
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return here


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def policy_drift(d: Session) -> tuple[Path, str] | None:
    """(the policy file, its text now) when the file the session was started with has changed on disk
    since (None when it has not, or is gone: the session's own copy is what it runs under)."""
    meta = d.meta()
    path = Path(meta.get("policy") or "")
    if not meta.get("policy") or not path.is_file():
        return None
    text = path.read_text()
    current = d.read("policy.yaml") or ""
    if hashlib.sha256(text.encode()).hexdigest() == hashlib.sha256(current.encode()).hexdigest():
        return None
    return path, text


def check_documents(d: Session, journal: Any = None) -> None:
    """Raise DocumentsChanged unless each of the session's own campaign.yaml and policy.yaml has the
    sha256 the journal recorded (before the session started, the digests meta.json took at creation).
    A refusal is journaled (on `journal`, the caller's open one, else briefly opened: the caller holds
    the session lock), except in a journal that has ended, which takes no more lines."""
    mine = journal is None
    journal = d.open_journal() if mine else journal  # opening it recovers a torn last line first
    try:
        meta = d.meta()
        view = fold(d.events())
        expected = view.digests or {
            "campaign.yaml": meta.get("campaign_sha256", ""),
            "policy.yaml": meta.get("policy_sha256", ""),
        }
        problem = mismatch({name: d.read(name) for name in DOCUMENTS}, expected)
        if problem is None:
            return
        if view.last_kind not in ENDING_KINDS:
            journal.append(ev.DocumentsMismatch(problem=problem))
        raise DocumentsChanged(d.id, problem)
    finally:
        if mine:
            journal.close()


def accept_policy_change(d: Session, *, by: str) -> str:
    """Adopt the policy file's new text for the rest of the session (it must load and pass its
    self-tests); journaled as `policy.changed` with both hashes. Returns the new sha256."""
    drift = policy_drift(d)
    if drift is None:
        raise SessionError(f"the policy of session {d.id} has not changed; nothing to accept")
    path, text = drift
    new = load_policy_text(text, path=str(path))
    old = load_policy_text(d.read("policy.yaml") or "", path=str(path))
    # Journaled first: a crash before the copy is written leaves the old copy, which the journal then
    # refuses to run under, and the drift stays visible, so accepting again completes it.
    journal = d.open_journal()
    journal.append(
        ev.PolicyChanged(
            policy=str(path),
            policy_name=new.name,
            policy_text=text,
            policy_sha256=new.sha256,
            previous_sha256=old.sha256,
            by=by,
        )
    )
    journal.close()
    d.write("policy.yaml", text)
    meta = d.meta()
    d.write_meta({**meta, "policy_sha256": new.sha256})
    return new.sha256


def choose_brain(spec: BrainSpec, policy: Policy, kind: str | None, model: str | None) -> dict[str, str]:
    """`--brain` beats the campaign's `brain.kind`, which beats the policy's `brain`; rules otherwise."""
    chosen = kind or (spec.kind if "kind" in spec.model_fields_set else None) or policy.model.brain or "rules"
    if chosen not in ("rules", "claude"):
        raise SourceError("--brain", None, f"unknown brain {chosen!r}: use rules or claude")
    return {"kind": chosen, "model": model or spec.model}


Listener = Callable[[Record], None]


class Runner:
    """Drives one session's graph: start, resume with answers, and report the outcome."""

    def __init__(self, d: Session, *, headless: bool = True, listeners: list[Listener] | None = None) -> None:
        self.dir = d
        self.meta = d.meta()
        self.headless = headless
        self.campaign_dir = campaign_dir(d, self.meta)
        self.journal = d.open_journal()  # first: opening it recovers a torn last line
        try:
            check_documents(d, self.journal)
            self.loaded = self._campaign()
            self.policy = self._policy()
        except BaseException:
            self.journal.close()
            raise
        self._spend_lock = threading.Lock()
        for listener in listeners or []:
            self.journal.subscribe(listener)
        artifacts = ArtifactStore(d.artifacts)
        campaign = self.loaded.campaign
        secrets = {name: os.environ.get(name, "") for name in campaign.secrets}
        secrets |= {k: v for k, v in campaign.vars.items() if is_secret_name(k)}
        redact = Redactor.from_environment()
        redact.add(*secrets.values())
        redact.add(*(os.environ.get(h.passphrase_env, "") for h in campaign.hosts if h.passphrase_env))
        self.transport = HostRouter(
            LocalTransport(d.hosts, artifacts, redact=redact),
            ssh_factory(
                artifacts=artifacts,
                hosts=campaign.hosts,
                campaign_dir=self.campaign_dir,
                pinned=d.pinned,
                accept_new=bool(self.meta.get("accept_new_host_keys")),
                on_pin=self._pinned,
                redact=redact,
                session=d.id,
                ssh_config=self.meta.get("ssh_config"),
            ),
        )
        self.ctx = RunContext(
            session=d.id,
            campaign=self.loaded.campaign,
            campaign_dir=self.campaign_dir,
            transport=self.transport,
            artifacts=artifacts,
            journal=self.journal,
            policy=self.policy,
            engine=PolicyEngine(self.policy),
            brain=RuleBrain(),
            headless=headless,
            secrets=secrets,
            redact=redact,
            started_at=datetime.fromisoformat(self.meta["created"]).timestamp(),
        )
        self._journaled_gates: set[str] = set()
        self._started = False  # whether the journal has its session.started line
        self._resume_from_journal()
        self.ctx.brain = self._brain()

    def _resume_from_journal(self) -> None:
        """What the journal knows that the context must carry on with: LLM spend and proposed options."""
        view = self.view()
        self.ctx.ledger = Ledger(started=dict(view.mutations_started), finished=dict(view.mutations_finished))
        self._journaled_gates = set(view.decided)
        self._started = view.started_event is not None
        self.ctx.spent_usd += view.llm_usd
        if view.proposals:
            self.ctx.campaign = with_proposals(self.ctx.campaign, view.proposals)

    def _brain(self) -> Brain:
        chosen = self.meta.get("brain") or {"kind": "rules"}
        if chosen["kind"] != "claude":
            return RuleBrain()
        from agent.brain.claude import ClaudeBrain

        spec = self.loaded.campaign.brain.model_copy(update={"kind": "claude", "model": chosen["model"]})
        return ClaudeBrain(
            spec,
            campaign=self.loaded.campaign,
            journal=self.journal,
            api_key=os.environ.get("ANTHROPIC_API_KEY", ""),
            on_cost=self._spend,
            over_budget=self.ctx.over_llm_budget,
            redact=self.ctx.redact,
        )

    def _spend(self, usd: float) -> None:
        with self._spend_lock:  # subagents report from their own threads
            self.ctx.spent_usd += usd

    def _pinned(self, hostname: str, key_type: str, fingerprint: str) -> None:
        self.dir.pinned_changed()
        self.journal.append(
            ev.HostkeyPinned(host=hostname, key_type=key_type, fingerprint=fingerprint, by="--accept-new-host-keys")
        )

    def _campaign(self) -> LoadedCampaign:
        # The session's own copy, read as if it sat where the campaign's files are (relative paths stay valid).
        path = self.campaign_dir / Path(self.meta["campaign"]).name
        return load_campaign(path, text=self.dir.read("campaign.yaml") or "")

    def _policy(self) -> Policy:
        return load_policy_text(self.dir.read("policy.yaml") or "", path=self.meta["policy"])

    # -- the LangGraph side

    @contextmanager
    def _graph(self):
        stack = contextlib.ExitStack()
        try:
            saver = stack.enter_context(self.dir.saver())
        except CheckpointUnreadable as exc:
            where, _, error = str(exc).rpartition(": ")
            self.journal.append(ev.CheckpointUnreadable(path=where, error=error))
            self.journal.close()
            raise RunFailed(
                f"its checkpoint DB cannot be read ({error}), so it cannot resume; the journal is kept "
                f"apart from it: `signoff replay {self.dir.id} --verify` checks it and `--export` reports it"
            ) from None
        with stack:
            # A checkpoint DB someone else could write (a shared store, a copied directory) is read by a
            # serializer that never runs what it names (agent/serde.py); one that names code at all was
            # not written by signoff, and resuming from it is refused in one line.
            with blocked_types() as foreign:
                saver.get_tuple({"configurable": {"thread_id": self.dir.id, "checkpoint_ns": ""}})
            if foreign:
                error = (
                    f"it names code to run on load ({', '.join(sorted(set(foreign))[:3])}), which signoff never writes"
                )
                self.journal.append(ev.CheckpointUnreadable(path=self.dir.label, error=error))
                self.journal.close()
                raise RunFailed(
                    f"its checkpoint DB was tampered with: {error}; nothing was run. The journal is kept apart "
                    f"from it: `signoff replay {self.dir.id} --verify` checks it and `--export` reports it"
                )
            yield _compiled().copy(update={"checkpointer": saver})

    def _config(self) -> dict[str, Any]:
        # Investigation subagents run one per option in parallel; LangGraph's default pool is cpus+4
        # threads, which would quietly serialize a wide fan-out of blocking SSH probes on a small box.
        # A fleet's hosts too: every host of a command gets a worker; `campaign.fleet` bounds how many run.
        campaign = self.loaded.campaign
        width = max(8, len(campaign.options), min(len(campaign.hosts), campaign.fleet.max_parallel))
        return {"configurable": {"thread_id": self.dir.id}, "max_concurrency": width, "recursion_limit": 500}

    def start(self) -> Outcome:
        self.journal.append(
            ev.SessionStarted(
                campaign=self.meta["campaign"],
                campaign_name=self.meta["campaign_name"],
                campaign_sha256=self.meta["campaign_sha256"],
                campaign_text=self.loaded.text,
                policy=self.meta["policy"],
                policy_name=self.policy.name,
                policy_sha256=self.policy.sha256,
                policy_text=self.policy.text,
                engine=engine_version(),
                brain=self.ctx.brain.name,
                headless=self.headless,
                user=getpass.getuser(),
            )
        )
        return self._drive({})

    def resume(self) -> Outcome:
        from langgraph.types import Command

        if not self._started:
            return self.start()  # killed between creating the session and its first journal line
        with self._graph() as graph:
            snapshot = graph.get_state(self._config())
        # Gates a policy decided are journaled as the graph reports them; a crash can fall in between.
        self._journal_gates((snapshot.values or {}).get("gates", []), recovered=True)
        pending = {i.id: i for i in snapshot.interrupts}
        answers = self.dir.answers()
        if pending:
            ready = {i: answers[i] for i in pending if i in answers}
            if not ready:
                expired = self._expired(snapshot.interrupts[0])
                if expired is None:
                    return self._outcome_paused(snapshot, note="still waiting for a decision")
                ready = {snapshot.interrupts[0].id: expired}
            self.journal.append(ev.SessionResumed(answers=sorted(ready)))
            ready = {k: {n: v for n, v in answer.items() if n != "answer_id"} for k, answer in ready.items()}
            self.dir.clear_answers(list(ready))
            return self._drive(Command(resume=ready))
        if snapshot.created_at is None:
            # Killed before the graph saved its first checkpoint: nothing ran yet, so start it.
            self.journal.append(ev.SessionResumed(answers=[], from_step=None))
            return self._drive({})
        if snapshot.next or snapshot.tasks:
            # Interrupted by a crash or a signal: continue from the last checkpoint. (After a hard kill
            # `next` can be empty while tasks of the step are still pending, so both are looked at.)
            self.journal.append(ev.SessionResumed(answers=[], from_step=snapshot.metadata.get("step")))
            return self._drive(None)
        ended = self._ended()
        if ended is None:
            return self._finish(snapshot, elapsed=0.0)  # killed after the last step, before saying so
        if self.meta.get("status") != ended:
            self._set_status(ended)  # killed between journaling the end and recording it in meta.json
        return self.outcome()

    def view(self) -> SessionView:
        """The session as its journal tells it now (other processes may have appended since)."""
        return fold(self.dir.events())

    def _ended(self) -> str | None:
        """How the journal says the run ended (its last session event is the end), or None."""
        ended = self.view().ended
        return None if ended is None else ended.status or "failed"

    def _expired(self, interrupt: Any) -> dict[str, Any] | None:
        """The policy's on_deadline answer when a paused gate waited past its deadline (journaled)."""
        value = interrupt.value
        if not value.get("deadline_s") or not value.get("on_deadline"):
            return None
        opened = self._opened_at(interrupt.id)
        if opened is None or datetime.now(UTC) < opened + timedelta(seconds=value["deadline_s"]):
            return None
        gate = value["gate"]
        decision = Decision(
            action=value["on_deadline"],
            by="deadline",
            rationale=f"no answer within {value['deadline_s']:g}s of the gate opening",
        )
        mine = {"decision": decision.model_dump(mode="json"), "rules": [], "answer_id": secrets.token_hex(8)}
        standing = self.dir.claim_answer(interrupt.id, mine)
        if standing.get("answer_id") != mine["answer_id"]:
            return standing  # a person's answer (from another machine) arrived just before the deadline
        self.journal.append(
            ev.Decision(
                gate=gate["id"],
                gate_kind=gate["kind"],
                option=gate.get("option"),
                decision=decision.model_dump(mode="json", exclude_none=True),
                by="deadline",
                interrupt=interrupt.id,
                opened=opened.isoformat(),
            )
        )
        return standing

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
        journal = self.dir.open_journal()
        journal.append(ev.SessionWaiting(interrupt=interrupt_id, runner=owner(), deadline=due and due.isoformat()))
        journal.close()
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

    def _opened_at(self, interrupt_id: str) -> datetime | None:
        gate = self.view().gate_opened_for(interrupt_id)
        return None if gate is None else timestamp(gate.opened)

    def _drive(self, inp: Any) -> Outcome:
        started = time.monotonic()
        self.dir.prepare()  # another machine may have run it so far
        self.ctx.artifacts.sweep()  # partial output a killed run left (we hold the session lock)
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
            self.journal.append(ev.SessionInterrupted(reason="signal" if stop_requested() else "SIGINT"))
            self._set_status("interrupted")
            self.journal.close()
            raise
        except StorageFull as exc:
            # The evidence cannot be kept, so nothing more may run; the step that hit it runs again on resume.
            message = f"disk full: {exc.strerror}; free space, then `signoff resume {self.dir.id}` continues"
            # The journal and meta.json may sit on the same full disk: the message goes out regardless.
            with contextlib.suppress(OSError):
                self.journal.append(ev.SessionFailed(error=message, errno=exc.errno, reason="storage-full"))
            with contextlib.suppress(OSError):
                self._set_status("failed")
            with contextlib.suppress(OSError):
                self.journal.close()
            raise RunFailed(message) from exc
        except Exception as exc:  # the run failed: record why, keep the checkpoint for resume
            self.journal.append(ev.SessionFailed(error=f"{type(exc).__name__}: {exc}"))
            self._set_status("failed")
            self.journal.close()
            raise RunFailed(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.transport.close()
        if snapshot.interrupts:
            return self._outcome_paused(snapshot, elapsed=time.monotonic() - started)
        return self._finish(snapshot, elapsed=time.monotonic() - started)

    def _finish(self, snapshot: Any, *, elapsed: float) -> Outcome:
        values = snapshot.values
        report = values.get("report") or {}
        status: Status = "failed" if report.get("error") else ("stopped" if values.get("stopping") else "finished")
        ended = ev.SessionFailed if status == "failed" else ev.SessionFinished
        self.journal.append(ended(status=status, elapsed_s=round(elapsed, 3), error=report.get("error")))
        self._set_status(status)
        self.journal.close()
        return self.outcome()

    def _journal_gates(self, records: list[dict[str, Any]], *, recovered: bool = False) -> None:
        for g in records:
            by = g["decision"].get("by") or ""
            if by.startswith("human:") or by == "deadline" or g["id"] in self._journaled_gates:
                continue  # journaled when the person answered (`decide`) or the deadline passed (`resume`)
            self._journaled_gates.add(g["id"])
            extra = {"recovered": True} if recovered else {}
            self.journal.append(
                ev.GateOpened(
                    gate=g["id"],
                    gate_kind=g["kind"],
                    option=g.get("option"),
                    question=g["question"],
                    facts=g["facts"],
                    **extra,
                )
            )
            self.journal.append(
                ev.Decision(
                    gate=g["id"],
                    gate_kind=g["kind"],
                    option=g.get("option"),
                    decision=g["decision"],
                    by=by,
                    rule=g["decision"].get("rule"),
                    policy_sha256=self.policy.sha256,
                    **extra,
                )
            )

    def _outcome_paused(self, snapshot: Any, *, elapsed: float | None = None, note: str | None = None) -> Outcome:
        interrupt = snapshot.interrupts[0]
        gate = interrupt.value["gate"]
        if interrupt.id not in self.view().opened_interrupts:
            self.journal.append(
                ev.GateOpened(
                    gate=gate["id"],
                    gate_kind=gate["kind"],
                    option=gate.get("option"),
                    question=gate["question"],
                    facts=gate["facts"],
                    interrupt=interrupt.id,
                    recommendation=gate.get("recommendation"),
                )
            )
            self.journal.append(
                ev.SessionPaused(gate=gate["id"], interrupt=interrupt.id, elapsed_s=round(elapsed or 0.0, 3))
            )
        self._set_status("paused")
        self.journal.close()
        out = self.outcome(snapshot)
        if note:
            out.echo = note
        return out

    # -- decisions

    def pending(self) -> tuple[str, Gate] | None:
        with self._graph() as graph:
            snapshot = graph.get_state(self._config())
        if not snapshot.interrupts:
            return None
        interrupt = snapshot.interrupts[0]
        return interrupt.id, Gate.model_validate(interrupt.value["gate"])

    def _parse(self, text: str, *, by: str) -> tuple[str, Gate, Decision, Any]:
        """(interrupt id, gate, parsed decision, answer) for `text` at the pending gate; nothing recorded
        except a rejection (journaled, then DecisionError)."""
        found = self.pending()
        if found is None:
            raise SessionError(
                f"session {self.dir.id} is not waiting for a decision (status: {self.meta.get('status')})"
            )
        interrupt_id, gate = found
        try:
            decision = self._interpret(text, gate).model_copy(update={"by": by})
            return interrupt_id, gate, decision, answer_gate(gate, decision, next_rule=self._rule_count() + 1)
        except DecisionError as exc:
            self.journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=str(exc)))
            self.journal.close()
            raise

    def _interpret(self, text: str, gate: Gate) -> Decision:
        """A model's reading of free text is kept per gate and text, so the decision a person confirms
        is the one they were shown — not a second, possibly different, reading."""
        parses = json.loads(self.dir.read("parses.json") or "{}")
        cached = parses.get(gate.id, {}).get(text)
        if cached is not None:
            return Decision.model_validate(cached)
        decision = self.ctx.brain.interpret(text, gate)
        if decision.parser not in (None, "grammar/v1"):
            parses.setdefault(gate.id, {})[text] = decision.model_dump(mode="json")
            self.dir.write("parses.json", json.dumps(parses, indent=1))
        return decision

    def preview(self, text: str, *, by: str) -> tuple[str, bool]:
        """What `text` would do at the pending gate, and whether it needs a confirmation (the echo a
        person sees before it takes effect). Raises DecisionError, journaled, for text not understood."""
        _, _, decision, result = self._parse(text, by=by)
        return result.echo, decision.confirm or (result.decision is not None and result.decision.confirm)

    def decide(self, text: str, *, by: str, confirmed: bool = True) -> tuple[str, str]:
        """Record a one-line decision for the pending gate; returns (interrupt id, echo).
        Raises DecisionError (journaled, nothing changed) when the text is not understood."""
        interrupt_id, gate, decision, result = self._parse(text, by=by)
        answers = self.dir.answers()
        if interrupt_id in answers:
            raise SessionError(
                f"gate {gate.id} already has a recorded answer ({answers[interrupt_id].get('echo', 'see journal')}); "
                f"run `signoff resume {self.dir.id}` to apply it"
            )
        if (decision.confirm or (result.decision is not None and result.decision.confirm)) and not confirmed:
            why = "hedged" if decision.hedged else ("standing" if decision.scope == "standing" else decision.action)
            if keeps_unsafe(gate, decision):
                why = "keep-an-unsafe-option"
            message = f"understood as: {result.echo} — a {why} decision needs confirmation: repeat it with --yes"
            self.journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
            self.journal.close()
            raise DecisionError(message)
        for rule in result.rules:
            self.journal.append(ev.RuleAdded(rule=rule.model_dump(mode="json"), gate=gate.id, by=by, raw=text))
        self.journal.append(
            ev.Decision(
                gate=gate.id,
                gate_kind=gate.kind,
                option=gate.option,
                raw=text,
                by=by,
                parsed=decision.model_dump(mode="json", exclude_none=True),
                decision=result.decision.model_dump(mode="json", exclude_none=True) if result.decision else None,
                echo=result.echo,
                interrupt=interrupt_id,
            )
        )
        mine = {**result.payload(), "echo": result.echo, "answer_id": secrets.token_hex(8)}
        standing = self.dir.claim_answer(interrupt_id, mine)
        if standing.get("answer_id") != mine["answer_id"]:
            # Someone on another machine answered the same gate a moment earlier: theirs stands.
            message = f"gate {gate.id} was answered first by another decision ({standing.get('echo', 'see journal')})"
            self.journal.append(ev.DecisionRejected(gate=gate.id, gate_kind=gate.kind, raw=text, by=by, error=message))
            self.journal.close()
            raise SessionError(message)
        self.journal.close()
        return interrupt_id, result.echo

    def _goal(self, estimated: float | None) -> dict[str, Any]:
        return _goal_dict(self.loaded.campaign.goal, estimated)

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
        self.journal.append(ev.SessionRevisit(options=deferred, user=getpass.getuser()))
        return self._drive(None)

    def _rule_count(self) -> int:
        return self.view().rules_added

    def _set_status(self, status: str) -> None:
        self.meta["status"] = status
        self.dir.write_meta(self.meta)

    # -- summaries

    def outcome(self, snapshot: Any = None) -> Outcome:
        from agent.nodes.report import build_report

        if snapshot is None:
            with self._graph() as graph:
                snapshot = graph.get_state(self._config())
        values = snapshot.values or {}
        summary = build_report(values, self.loaded.campaign.name)
        pending = None
        if snapshot.interrupts:
            value = snapshot.interrupts[0].value
            g = value["gate"]
            pending = {
                k: g.get(k)
                for k in ("id", "kind", "option", "question", "facts", "allowed", "options", "recommendation")
            }
            # Extensions: a command gate's numbered commands, and a one-liner this gate takes.
            pending["commands"] = g.get("commands") or []
            pending["suggested"] = suggested_answer(g["kind"], g.get("facts") or {})
            opened = self._opened_at(snapshot.interrupts[0].id)
            if value.get("deadline_s") and opened is not None:
                at = opened + timedelta(seconds=value["deadline_s"])
                pending["deadline"] = {"at": at.isoformat(timespec="seconds"), "on_deadline": value["on_deadline"]}
            status: Status = "paused"
        else:
            # The journal's end first: a runner elsewhere may have journaled it before updating meta.
            ended = self._ended() or self.meta.get("status")
            status = ended if ended in EXIT else "failed"  # type: ignore[assignment]
        return Outcome(
            session=self.dir.id,
            status=status,
            options=[
                {k: o[k] for k in ("id", "title", "outcome", "gain_pct", "ci", "verdict", "reasons", "evidence")}
                | {k: o[k] for k in ("hosts", "except_hosts") if o.get(k)}
                for o in summary["options"]
            ],
            gates=[
                {
                    **{k: g[k] for k in ("kind", "option", "action", "by", "rule", "raw")},
                    "decided_as": decided_as(g["by"]),
                }
                for g in summary["gates"]
            ],
            session_rules=[r for r in (snapshot.values or {}).get("session_rules", [])],
            pending_gate=pending,
            goal=self._goal(summary.get("estimated_gain_pct")),
            calibration=summary.get("calibration"),
            deferred={"options": summary["deferred"], "revisit": f"signoff resume {self.dir.id} --revisit"}
            if summary["deferred"] and not snapshot.interrupts
            else None,
            brain=self._brain_usage(),
            journal=self.dir.label,
            error=summary.get("error"),
        )

    def _brain_usage(self) -> dict[str, Any]:
        view = self.view()
        usage = {"name": self.ctx.brain.name, "calls": view.llm_calls, "retries": view.llm_retries}
        tokens = {k: view.llm_tokens.get(k, 0) for k in TOKENS}
        return {**usage, "fallbacks": view.brain_fallbacks, **tokens, "cost_usd": round(view.llm_usd, 6)}


def _goal_dict(goal: Any, estimated: float | None) -> dict[str, Any]:
    met = None if goal.target_pct is None or estimated is None else estimated >= goal.target_pct
    return {
        "text": goal.text,
        "metric": goal.metric,
        "target_pct": goal.target_pct,
        "estimated_pct": estimated,
        "met": met,
    }


def compact(d: Session) -> tuple[int, int]:
    """Prune a closed session's graph checkpoints (the journal, its head and the artifacts stay).
    Returns (bytes before, bytes after)."""
    meta = d.meta()
    if meta.get("status") not in ("finished", "stopped", "failed"):
        raise SessionError(f"session {d.id} is {meta.get('status')}; only a closed session can be compacted")
    sizes = d.compact()
    d.write_meta({**meta, "compacted": datetime.now(UTC).isoformat(timespec="seconds")})
    return sizes


def demo_campaign() -> Path:
    path = Path(__file__).resolve().parents[2] / "examples" / "decode-campaign" / "campaign.yaml"
    if not path.exists():
        raise SessionError(f"the demo campaign is missing ({path}); run from a signoff checkout")
    return path


def demo_over_ssh(campaign: Path, target: str) -> str:
    """The demo campaign with its hosts on one SSH host (`HOST[:PORT]`, an address or ssh_config alias)."""
    import yaml

    from policies.yamlsrc import YamlSource

    host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"--ssh takes HOST or HOST:PORT, not {target!r}")
    data = YamlSource(campaign, campaign.read_text()).data
    for h in data["hosts"]:
        h.update(transport="ssh", address=host)
        if port:
            h["port"] = int(port)
    return yaml.safe_dump(data, sort_keys=False)


__all__ = [
    "DecisionError",
    "DocumentsChanged",
    "Outcome",
    "Runner",
    "SessionBusy",
    "SessionDir",
    "SessionError",
    "SourceError",
    "check_documents",
    "create",
    "demo_campaign",
    "list_sessions",
]
