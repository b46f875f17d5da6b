"""What the screen shows, folded from journal events: a pure reducer, no Textual.

Live, attached and replayed sessions all build their picture the same way — one journal event at a
time — so what a person sees while a run happens is exactly what an auditor sees later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from policies.yamlsrc import SourceError, YamlSource


def _document(text: object) -> dict[str, Any]:
    """A journaled campaign or policy text as a mapping, read with the same bounds as the files were (a
    journal someone else wrote may hold an alias bomb); anything unreadable is an empty one."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        data = YamlSource(Path("journaled.yaml"), text).data
    except (SourceError, yaml.YAMLError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


ACTIVE_PHASES = {"apply": "applying", "benchmark": "benchmarking", "stress": "stressing", "rollback": "rolling back"}


@dataclass
class OptionView:
    id: int
    title: str
    status: str = "pending"
    verdict: str | None = None
    ab_verdict: str | None = None
    gain_pct: float | None = None
    ci: list[float] | None = None
    finding: dict[str, Any] | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)  # bench.run events (arm, pair, value, valid)
    ab: dict[str, Any] | None = None
    stress: list[dict[str, Any]] = field(default_factory=list)
    assessment: dict[str, Any] | None = None
    undo: dict[str, Any] | None = None
    rollback: dict[str, Any] | None = None
    decided_by: str | None = None
    after_rollback: str = "skipped"  # what it is once the rollback in progress is done

    @property
    def deferred(self) -> bool:
        return self.status == "deferred"


@dataclass
class GateView:
    gate: str
    kind: str
    option: int | None
    question: str
    facts: dict[str, Any]
    seq: int
    action: str | None = None
    by: str | None = None
    raw: str | None = None


@dataclass
class View:
    session: str = ""
    campaign: str = ""
    policy: str = ""
    brain: str = ""
    started: datetime | None = None
    last: datetime | None = None
    status: str = "starting"  # running | paused | finished | failed
    phase: str = ""
    current: int | None = None
    options: dict[int, OptionView] = field(default_factory=dict)
    gates: list[GateView] = field(default_factory=list)
    llm_usd: float = 0.0
    llm_calls: int = 0
    budget_usd: float | None = None
    bench: tuple[int, int] | None = None  # (pair, of) of the running benchmark
    stress_done: int = 0
    stress_total: int = 0
    seq: int = -1
    error: str | None = None

    @property
    def open_gate(self) -> GateView | None:
        return self.gates[-1] if self.gates and self.gates[-1].action is None else None

    def elapsed_s(self, now: datetime | None = None) -> float:
        if self.started is None:
            return 0.0
        end = now if self.status in ("running", "starting") and now is not None else self.last
        return max(0.0, ((end or self.started) - self.started).total_seconds())

    # ------------------------------------------------------------------ the reducer

    def apply(self, e: dict[str, Any]) -> None:
        self.seq = e.get("seq", self.seq)
        self.last = _ts(e.get("ts")) or self.last
        handler = getattr(self, "_on_" + e["kind"].replace(".", "_"), None)
        if handler is not None:
            handler(e)

    def _option(self, e: dict[str, Any]) -> OptionView | None:
        o = e.get("option")
        if o is None:
            return None
        if int(o) not in self.options:
            self.options[int(o)] = OptionView(id=int(o), title=e.get("title") or f"option {o}")
        return self.options[int(o)]

    def _on_session_started(self, e: dict[str, Any]) -> None:
        self.session = e.get("session", "")
        self.campaign = e.get("campaign_name", "")
        self.policy = e.get("policy_name", "")
        self.brain = e.get("brain", "")
        self.started = _ts(e.get("ts"))
        self.status = "running"
        campaign, policy = _document(e.get("campaign_text")), _document(e.get("policy_text"))
        options = campaign.get("options")
        for o in options if isinstance(options, list) else []:
            if isinstance(o, dict) and isinstance(o.get("id"), int):
                self.options[o["id"]] = OptionView(id=o["id"], title=str(o.get("title", "")))
        stress = campaign.get("stress")
        runs = [s.get("runs", 1) for s in (stress if isinstance(stress, list) else []) if isinstance(s, dict)]
        self.stress_total = sum(r for r in runs if isinstance(r, int) and 0 <= r < 1_000_000)
        budgets = policy.get("budgets")
        self.budget_usd = budgets.get("llm_usd") if isinstance(budgets, dict) else None

    def _on_session_resumed(self, e: dict[str, Any]) -> None:
        self.status = "running"

    def _on_session_paused(self, e: dict[str, Any]) -> None:
        self.status = "paused"

    def _on_session_finished(self, e: dict[str, Any]) -> None:
        self.status = e.get("status", "finished")
        self.error = e.get("error")
        self.phase = "done"
        self.bench = None

    def _on_plan(self, e: dict[str, Any]) -> None:
        for p in e.get("proposals", []):
            self.options.setdefault(p["id"], OptionView(id=p["id"], title=f"{p['title']} (proposed)"))
        for o in e.get("order", []):
            self.options.setdefault(o, OptionView(id=o, title=f"option {o}"))
        self.phase = "plan"

    def _on_subagent_started(self, e: dict[str, Any]) -> None:
        self.phase = "investigate"
        if (o := self._option(e)) is not None:
            o.status = "investigating"

    def _on_finding(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.finding = e
            o.status = "no-go" if not e.get("feasible") else ("hazard" if e.get("hazards") else "clear")

    def _on_phase(self, e: dict[str, Any]) -> None:
        self.phase = e.get("phase", "")
        o = self._option(e)
        if o is None:
            return
        self.current = o.id
        if e.get("title") and o.title.startswith("option "):
            o.title = e["title"]
        if self.phase == "rollback" and o.status in ("skipped", "deferred"):
            o.after_rollback = o.status
        o.status = ACTIVE_PHASES.get(self.phase, o.status)
        if self.phase == "stress":
            self.stress_done = 0
        if self.phase == "benchmark":
            self.bench = (0, int(e.get("pairs", 0)))

    def _on_bench_progress(self, e: dict[str, Any]) -> None:
        self.bench = (int(e["pair"]), int(e["of"]))

    def _on_bench_extended(self, e: dict[str, Any]) -> None:
        self.bench = (int(e.get("from_pairs", 0)), int(e.get("to_pairs", 0)))

    def _on_bench_run(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None and e.get("purpose", "ab") in ("ab", None):
            o.runs.append(e)

    def _on_ab_result(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.ab = e
            o.ab_verdict = e.get("verdict")
            o.gain_pct = e.get("effect_pct")
            o.ci = [e["ci_low"], e["ci_high"]] if e.get("ci_low") is not None else None
        self.bench = None

    def _on_stress_result(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.stress.append(e)
        self.stress_done += 1

    def _on_assessment(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.assessment = e
            o.verdict = e.get("verdict")
            o.status = "assessed"

    def _on_undo_recorded(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.undo = e

    def _on_rollback(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.rollback = e
            o.status = o.after_rollback

    def _on_kept(self, e: dict[str, Any]) -> None:
        if (o := self._option(e)) is not None:
            o.status, o.decided_by = "kept", e.get("by")

    def _on_llm_call(self, e: dict[str, Any]) -> None:
        self.llm_usd += float(e.get("cost_usd", 0.0))
        self.llm_calls += 1

    def _on_gate_opened(self, e: dict[str, Any]) -> None:
        if self.gates and self.gates[-1].gate == e["gate"] and self.gates[-1].action is None:
            return  # re-opened after a resume: the same gate
        self.gates.append(
            GateView(
                gate=e["gate"],
                kind=e["gate_kind"],
                option=e.get("option"),
                question=e.get("question", ""),
                facts=e.get("facts", {}),
                seq=e.get("seq", 0),
            )
        )

    def _on_decision(self, e: dict[str, Any]) -> None:
        decision = e.get("decision") or {}
        for g in reversed(self.gates):
            if g.gate == e.get("gate"):
                g.action, g.by, g.raw = decision.get("action", "ask"), e.get("by"), e.get("raw")
                break
        o = self.options.get(e["option"]) if e.get("option") is not None else None
        action = decision.get("action")
        if o is not None and e.get("gate_kind") == "safety" and action in ("skip", "defer", "stop"):
            o.status = "deferred" if action == "defer" or decision.get("scope") == "for_now" else "skipped"
            o.decided_by = e.get("by")
        for t in decision.get("targets", []) if action in ("skip", "defer") else []:
            if (target := self.options.get(t)) is not None and target.status not in ("kept", "no-go"):
                target.status = "deferred" if action == "defer" or decision.get("scope") == "for_now" else "skipped"

    def _on_report(self, e: dict[str, Any]) -> None:
        for r in e.get("options", []):
            o = self.options.setdefault(r["id"], OptionView(id=r["id"], title=r.get("title", "")))
            o.status = r.get("outcome", o.status)
            o.gain_pct = r.get("gain_pct", o.gain_pct)
            o.ci = r.get("ci", o.ci)
            o.verdict = r.get("verdict", o.verdict)


def _ts(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def fold(events: list[dict[str, Any]], upto: int | None = None) -> View:
    """The view as of event index `upto` (inclusive); all events when None."""
    view = View()
    for e in events if upto is None else events[: upto + 1]:
        view.apply(e)
    return view
