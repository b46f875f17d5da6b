"""Read a session's journal back, without touching a host or the graph: the timeline, and a
verification that the chain is intact and that every policy decision follows from the journaled
policy text and the journaled facts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.journal.chain import ARTIFACT_FIELDS, read_events
from agent.journal.documents import journaled_digests, mismatch
from agent.journal.verify import verify
from agent.journal.view import SessionView
from agent.report.console import abandoned_line, notify_line
from policies.engine import PolicyEngine
from policies.load import load_policy_text
from policies.schema import Policy
from policies.yamlsrc import SourceError


class ReplayVerdict(BaseModel):
    ok: bool
    events: int
    gates: int
    policy_decisions: int
    failed_seq: int | None = None
    error: str | None = None
    signed: bool = False  # the head is signed (by the --key given, when one was)
    final: bool = False  # the head says the session ended at the journal's last event
    head_events: int = 0  # events the head covers; fewer than `events` while running or after a crash

    def line(self) -> str:
        if not self.ok:
            return f"FAILED at seq {self.failed_seq}: {self.error}"
        text = f"OK: {self.events} events, {self.gates} gates, {self.policy_decisions} policy decisions re-derived"
        if self.final:
            text += "; the head is final (the session ended)"
        elif self.head_events < self.events:
            text += (
                f"; the last {self.events - self.head_events} event(s) are past the head (a run still going, or "
                "cut short) and not covered by it"
            )
        if not self.signed:
            text += "; unsigned: proves integrity against accidents, not against someone who can rewrite the store"
        return text


def events(
    journal: Path, *, kind: str | None = None, option: int | None = None, since: str | None = None
) -> list[dict[str, Any]]:
    return select(list(read_events(journal)), kind=kind, option=option, since=since)


def select(
    records: list[dict[str, Any]], *, kind: str | None = None, option: int | None = None, since: str | None = None
) -> list[dict[str, Any]]:
    """The journal lines a replay's filters keep (`kind` is a prefix; `since` an ISO time)."""
    out = []
    for e in records:
        if kind is not None and not e["kind"].startswith(kind):
            continue
        if option is not None and e.get("option") != option:
            continue
        if since is not None and e["ts"] < since:
            continue
        out.append(e)
    return out


def verify_session(
    journal: Path,
    *,
    key: bytes | None = None,
    documents: Mapping[str, str | None] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ReplayVerdict:
    """The chain and head (`agent.journal.verify`), the artifacts, every policy decision re-derived,
    and, when given, the session's own copies of its `documents` (campaign.yaml, policy.yaml) against the
    journaled digests and its `meta` status against how the journal ends."""
    named = (meta or {}).get("id")  # whose journal it is: what a head over an empty one is signed for
    chain = verify(journal, key=key, session=named if isinstance(named, str) else None)
    engine: PolicyEngine | None = None
    opened: dict[str, dict[str, Any]] = {}
    gates = derived = 0
    ending: str | None = None  # the kind of the journal's last session event

    def failed(seq: int | None, error: str | None) -> ReplayVerdict:
        return ReplayVerdict(
            ok=False, events=chain.events, gates=gates, policy_decisions=derived, failed_seq=seq, error=error
        )

    if not chain.ok:
        return failed(chain.failed_seq, chain.error)
    if documents is not None and (problem := mismatch(documents, journaled_digests(read_events(journal)))):
        return failed(None, f"the session's {problem}")
    artifacts = journal.parent / "artifacts"
    checked: dict[str, str | None] = {}  # artifact name → why it is bad (None: intact)
    for e in read_events(journal):
        for name in (e.get(k) for k in ARTIFACT_FIELDS):
            if isinstance(name, str) and name.startswith("sha256-"):
                if name not in checked:
                    checked[name] = _artifact_problem(artifacts, name)
                if checked[name] is not None:
                    return failed(e["seq"], checked[name])
        if e["kind"].startswith("session.") and e["kind"] != "session.interrupted":
            ending = e["kind"]
        if e["kind"] == "policy.changed":
            if hashlib.sha256(e["policy_text"].encode()).hexdigest() != e.get("policy_sha256"):
                return failed(e["seq"], "the journaled new policy does not match its recorded sha256")
            try:  # decisions from here on follow the policy a person accepted mid-session
                engine = PolicyEngine(load_policy_text(e["policy_text"], path=e.get("policy", "<policy>")))
            except SourceError as exc:
                return failed(e["seq"], f"the journaled new policy no longer loads: {exc}")
        if e["kind"] == "session.started":
            for text, digest in (("policy_text", "policy_sha256"), ("campaign_text", "campaign_sha256")):
                if e.get(text) is not None and hashlib.sha256(e[text].encode()).hexdigest() != e.get(digest):
                    return failed(e["seq"], f"the journaled {text.split('_')[0]} does not match its recorded sha256")
            try:
                engine = PolicyEngine(load_policy_text(e["policy_text"], path=e.get("policy", "<policy>")))
            except SourceError as exc:
                return failed(e["seq"], f"the journaled policy no longer loads: {exc}")
        elif e["kind"] == "gate.opened":
            opened[e["gate"]] = e
            gates += 1
        elif e["kind"] == "decision" and str(e.get("by", "")).startswith("policy:") and engine is not None:
            gate = opened.get(e["gate"])
            if gate is None:
                return failed(e["seq"], f"decision for gate {e['gate']} with no gate.opened")
            again = engine.evaluate(gate["gate_kind"], gate["facts"], option=gate.get("option"))
            recorded = e["decision"]
            if again.action != recorded.get("action") or again.rule != recorded.get("rule"):
                return failed(
                    e["seq"],
                    f"gate {e['gate']}: the journal says {recorded.get('action')} by {recorded.get('rule')}, "
                    f"the journaled policy and facts give {again.action} by {again.rule}",
                )
            derived += 1
    status = (meta or {}).get("status")
    # ("failed" is left out: on a full disk meta.json can say so while the journal could not.)
    if status in ("finished", "stopped") and ending != "session.finished":
        # Cut back to an older head, with both copies restored: the chain holds, but the store says it ended.
        return failed(
            chain.events,
            f"meta.json says the session {status}, but the journal does not end with its end "
            "(cut back to an older head?)",
        )
    return ReplayVerdict(
        ok=True,
        events=chain.events,
        gates=gates,
        policy_decisions=derived,
        signed=chain.signed,
        final=chain.final,
        head_events=chain.head_events,
    )


class Redecided(BaseModel):
    gate: str
    kind: str
    option: int | None
    seq: int
    actual: str
    actual_by: str | None
    would: str
    would_rule: str | None
    agree: bool
    after_divergence: bool  # decided "given what actually happened" after an earlier disagreement


class Counterfactual(BaseModel):
    policy: str
    policy_sha256: str
    gates: list[Redecided]
    confusion: dict[str, dict[str, int]]  # actual action → would-be action → count
    first_divergence: str | None

    @property
    def disagreements(self) -> int:
        return sum(1 for g in self.gates if not g.agree)


def counterfactual(journal: Path, policy: Policy) -> Counterfactual:
    """Every recorded gate decided again by `policy` from the facts it showed. Gates after the first
    disagreement are marked: under the other policy the run would have gone elsewhere before them."""
    engine = PolicyEngine(policy)
    opened: dict[str, dict[str, Any]] = {}
    rows: list[Redecided] = []
    confusion: dict[str, dict[str, int]] = {}
    first: str | None = None
    for e in read_events(journal):
        if e["kind"] == "gate.opened":
            opened[e["gate"]] = e
        elif e["kind"] == "decision" and e.get("decision") and e["gate"] in opened:
            gate = opened[e["gate"]]
            would = engine.evaluate(gate["gate_kind"], gate["facts"], option=gate.get("option"))
            actual = str(e["decision"].get("action"))
            agree = would.action == actual
            rows.append(
                Redecided(
                    gate=e["gate"],
                    kind=gate["gate_kind"],
                    option=gate.get("option"),
                    seq=e["seq"],
                    actual=actual,
                    actual_by=e.get("by"),
                    would=would.action,
                    would_rule=would.rule,
                    agree=agree,
                    after_divergence=first is not None,
                )
            )
            confusion.setdefault(actual, {}).setdefault(would.action, 0)
            confusion[actual][would.action] += 1
            if not agree and first is None:
                first = e["gate"]
    return Counterfactual(
        policy=policy.name, policy_sha256=policy.sha256, gates=rows, confusion=confusion, first_divergence=first
    )


def _artifact_problem(root: Path, name: str) -> str | None:
    """Artifacts are named by their content's sha256: recompute it, streaming."""
    path = root / name
    if not path.is_file():
        return f"artifact {name} is missing from {root}"
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    if f"sha256-{h.hexdigest()}" != name:
        return f"artifact {name} was modified (its content now hashes to {h.hexdigest()[:16]}…)"
    return None


def rule_words(rule: Mapping[str, Any]) -> str:
    """A session rule as a person reads it: `CONTINUE IF has_next_step … ; otherwise ASK (at continue_or_ask
    gates, once)`. Every part read defensively: the rule comes from a journal line anyone could edit."""
    decision = rule.get("decision")
    d: Mapping[str, Any] = decision if isinstance(decision, Mapping) else {}
    targets = d.get("targets") or rule.get("targets") or []
    words = str(d.get("action", "?")).upper()
    if isinstance(targets, list) and targets:
        words += " " + ", ".join(f"#{t}" for t in targets)
    if rule.get("when"):
        words += f" IF {rule['when']}"
    if d.get("otherwise"):
        words += f"; otherwise {str(d['otherwise']).upper()}"
    kinds = rule.get("kinds")
    at = ", ".join(map(str, kinds)) if isinstance(kinds, list) and kinds else "any"
    return f"{words} (at {at} gates, {d.get('scope', 'once')})"


def describe(e: dict[str, Any], view: SessionView | None = None) -> str | None:
    """One timeline line per event worth reading back (`view`: the session up to and including this event,
    for the time a decision took)."""
    k = e["kind"]
    opt = f"#{e['option']} " if e.get("option") is not None else ""
    if k == "command.finished":
        status = "timeout" if e.get("timed_out") else (e.get("error") or f"exit {e.get('exit')}")
        return f"{opt}{e['purpose']} on {e['host']}: {status} ({e['duration_s']:.2f}s)"
    if k == "finding":
        return f"{opt}finding: {'feasible' if e['feasible'] else 'NO-GO'} {'; '.join(e['blockers'] + e['hazards'])}"
    if k == "ab.result":
        return f"{opt}A/B: {e['summary']}"
    if k == "goal.confirmed":
        said = e.get("summary") or f"not measured: {e.get('skipped') or e.get('error')}"
        words = [i.get("words") for i in e.get("interactions") or [] if isinstance(i, dict)]
        return f"goal, final configuration against the start: {said}" + "".join(f"; {w}" for w in words)
    if k == "stress.result":
        return f"{opt}stress {e['scenario']} run {e['run']}: {e['outcome']} — {e['evidence']}"
    if k == "gate.opened":
        return f"gate {e['gate']} ({e['gate_kind']}) opened; facts {e['facts']}"
    if k == "decision":
        d = e.get("decision") or {}
        raw = f" — {e['raw']!r}" if e.get("raw") else ""
        policy = f" (policy {e['policy_sha256'][:12]})" if str(e.get("by", "")).startswith("policy:") else ""
        gate = next((g for g in reversed(view.gates) if g.gate == e.get("gate")), None) if view else None
        waited = f" after {gate.waited_s:.1f}s" if gate is not None and gate.waited_s is not None else ""
        by = str(e.get("by"))
        rule = view.rules.get(by) if view is not None and by.startswith("session-rule:") else None
        said = f" — {by}: {rule_words(rule)[:300]}" if rule is not None else ""  # the rule in words, not its id
        return f"gate {e['gate']}: {d.get('action', 'ask')} by {by}{policy}{waited}{raw}{said}"
    if k == "rule.added" and isinstance(e.get("rule"), Mapping) and e["rule"].get("id"):
        said = f" — {e['raw']!r}" if e.get("raw") else ""
        line = f"session rule {e['rule']['id']} added by {e.get('by')} at gate {e.get('gate')}: {rule_words(e['rule'])}"
        return (line + said)[:400]
    if k == "session.abandoned":
        return abandoned_line(e)
    if k == "notify.sent":
        return notify_line(e)
    if k == "log.adopted":
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted((e.get("kinds") or {}).items()))
        return (
            f"adopted {e.get('events')} event(s) from seq {e.get('from_seq')} that no head covered (a run killed "
            f"before its next head, or lines appended behind it): {kinds}"
        )[:300]
    if k in ("rollback", "kept", "rule.added", "report") or k.startswith("session."):
        detail = {
            x: v
            for x, v in e.items()
            if x not in ("v", "seq", "ts", "session", "kind", "actor", "prev", "policy_text", "campaign_text")
        }
        return f"{opt}{k} {detail}"[:300]
    return None
