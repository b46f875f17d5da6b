"""The one fold of a journal: what a session is, built one typed event at a time.

The TUI, the audit report, `signoff sessions`, the replay timeline, the CLI summary and the runner all read
a session through a `SessionView`, so they cannot disagree: a live screen, a listing and an auditor's report
of the same journal say the same thing. `apply` takes one `Entry` and is cheap, so a live reader updates
its view as lines arrive and a replay rebuilds it up to any point.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from agent.journal import events as ev
from policies.yamlsrc import SourceError, YamlSource

# What an option is doing while a phase about it runs.
ACTIVE_PHASES = {"apply": "applying", "benchmark": "benchmarking", "stress": "stressing", "rollback": "rolling back"}
ENDED = ("finished", "stopped", "failed")
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def timestamp(value: object) -> datetime | None:
    """A journal timestamp (`…Z`) as an aware datetime; None when it is missing or not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _document(text: str) -> dict[str, Any]:
    """A journaled campaign or policy text as a mapping, read with the same bounds as the files were (a
    journal someone else wrote may hold an alias bomb); anything unreadable is an empty one."""
    if not text:
        return {}
    try:
        data = YamlSource(Path("journaled.yaml"), text).data
    except (SourceError, yaml.YAMLError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class _Documents:
    """What a fold takes from the journaled campaign and policy texts."""

    options: tuple[tuple[int, str], ...] = ()
    stress_total: int = 0
    goal: tuple[str, float | None] | None = None  # (metric, target %), when the campaign has a goal
    budget_usd: float | None = None
    sweep_var: str = ""  # the benchmark's load variable, when it sweeps one


@functools.lru_cache(maxsize=16)
def _documents(campaign_text: str, policy_text: str) -> _Documents:
    """Read once per pair of texts, not on every fold: reading the YAML within its bounds took 15 ms a document,
    and a runner folds its journal several times a run (bench/overhead.py)."""
    campaign, policy = _document(campaign_text), _document(policy_text)
    options = campaign.get("options")
    found = [
        (o["id"], str(o.get("title", "")))
        for o in (options if isinstance(options, list) else [])
        if isinstance(o, dict) and isinstance(o.get("id"), int) and not isinstance(o.get("id"), bool)
    ]
    stress = campaign.get("stress")
    runs = [s.get("runs", 1) for s in (stress if isinstance(stress, list) else []) if isinstance(s, dict)]
    goal = campaign.get("goal")
    budgets = policy.get("budgets")
    benchmark = campaign.get("benchmark")
    sweep = benchmark.get("sweep") if isinstance(benchmark, dict) else None
    var = sweep.get("var") if isinstance(sweep, dict) else None
    return _Documents(
        sweep_var=var if isinstance(var, str) else "",
        options=tuple(found),
        stress_total=sum(r for r in runs if isinstance(r, int) and 0 <= r < 1_000_000),
        goal=(str(goal.get("metric") or "output_tok_s"), _number(goal.get("target_pct")))
        if isinstance(goal, dict)
        else None,
        budget_usd=_number(budgets.get("llm_usd")) if isinstance(budgets, dict) else None,
    )


@dataclass
class OptionView:
    id: int
    title: str
    status: str = "pending"  # live: pending, investigating, no-go, …; the report's outcome once reported
    reported: bool = False  # `status` is the final report's outcome
    verdict: str | None = None
    ab_verdict: str | None = None
    gain_pct: float | None = None
    ci: list[float] | None = None
    finding: ev.FindingEvent | None = None
    runs: list[ev.BenchRunEvent] = field(default_factory=list)  # the A/B runs (arm, pair, value, valid)
    # A sweep's A/B runs by level; `runs` is the level being measured, then the level judged.
    levels: dict[float | None, list[ev.BenchRunEvent]] = field(default_factory=dict)
    sweep: ev.SweepResultEvent | None = None  # a load sweep's outcome: levels, capacities, fits
    searches: list[ev.SweepSearchEvent] = field(default_factory=list)  # its capacity search's probes
    ab: ev.ABResultEvent | None = None
    stress: list[ev.StressResultEvent] = field(default_factory=list)
    assessment: ev.AssessmentEvent | None = None
    undo: ev.UndoRecordedEvent | None = None
    rollback: ev.RollbackEvent | None = None
    decided_by: str | None = None
    after_rollback: str = "skipped"  # what it is once the rollback in progress is done
    reasons: list[str] = field(default_factory=list)  # the report's reasons for its outcome

    @property
    def deferred(self) -> bool:
        return self.status == "deferred"

    @property
    def outcome(self) -> str:
        return self.status if self.reported else "untested"

    def pairs(self) -> list[tuple[int, float | None, float | None]]:
        """(pair number from 1, A value, B value) per A/B pair; a run that did not count is None."""
        by_pair: dict[int, dict[str, float | None]] = {}
        for r in self.runs:
            by_pair.setdefault(r.pair or 0, {})[str(r.arm)] = r.value if r.valid else None
        return [(p + 1, v.get("A"), v.get("B")) for p, v in sorted(by_pair.items())]


@dataclass
class GateView:
    gate: str
    kind: str
    option: int | None
    question: str
    facts: dict[str, Any]
    seq: int
    opened: str = ""  # journal timestamp
    interrupt: str | None = None
    action: str | None = None
    by: str | None = None
    raw: str | None = None
    decided: str | None = None
    decision: dict[str, Any] = field(default_factory=dict)  # the whole decision, as journaled
    recommendation: dict[str, Any] | None = None  # what the policy said when it asked (newer journals)

    @property
    def waited_s(self) -> float | None:
        """How long the gate waited for its answer (None while it is open)."""
        start, end = timestamp(self.opened), timestamp(self.decided)
        return None if start is None or end is None else max(0.0, (end - start).total_seconds())

    @property
    def where(self) -> str:
        return f"gate {self.gate} ({self.kind}" + (f" #{self.option})" if self.option is not None else ")")


@dataclass
class SessionFacts:
    """What the journal says of a session so far: the fields the fold fills in, and what readers ask of them."""

    session: str = ""
    campaign: str = ""
    policy: str = ""
    brain: str = ""
    started_event: ev.SessionStartedEvent | None = None
    started_ts: str = ""
    user: str = ""
    started: datetime | None = None
    last: datetime | None = None
    # starting, running, waiting (a gate is open and being decided), paused (the runner stopped at that gate
    # until someone answers), answered (a paused gate was answered; the session waits to be resumed),
    # interrupted, finished, stopped or failed
    status: str = "starting"
    phase: str = ""
    current: int | None = None
    options: dict[int, OptionView] = field(default_factory=dict)
    gates: list[GateView] = field(default_factory=list)
    llm_usd: float = 0.0
    llm_calls: int = 0
    llm_retries: int = 0
    brain_fallbacks: int = 0
    fallback_steps: list[str] = field(default_factory=list)  # "plan: HTTP 401 …": each step the rules decided instead
    llm_tokens: dict[str, int] = field(default_factory=dict)
    budget_usd: float | None = None
    goal_metric: str = ""  # the campaign's goal, for plots: the metric and the gain it asks for
    sweep_var: str = ""  # the load variable a sweep benchmarks over ("" without a sweep)
    level: float | None = None  # the sweep level being benchmarked now
    goal_pct: float | None = None
    noise_floor_pct: float | None = None  # the smallest effect this run's calibration can tell from noise
    calibration: ev.CalibrationEvent | None = None  # the A/A calibration at setup, when the campaign asked for one
    bench: tuple[int, int] | None = None  # (pair, of) of the running benchmark
    stress_done: int = 0
    stress_total: int = 0
    seq: int = -1
    events: int = 0
    error: str | None = None
    report: ev.ReportEvent | None = None
    confirmation: ev.GoalConfirmedEvent | None = None  # the last end-of-campaign A/B of the final configuration
    ended: ev.SessionFinishedEvent | ev.SessionFailedEvent | None = None
    abandoned: ev.SessionAbandonedEvent | None = None  # `signoff abandon` asked for it: the run rolls back and ends
    abandoned_at: str = ""
    run_s: float = 0.0  # time the runner spent running, summed over every run (start, resumes)
    rules_added: int = 0
    rules: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # session rule id → the rule as journaled
    proposals: list[Any] = field(default_factory=list)
    # The mutation ledger: command.started by key, and the recorded result of those that finished.
    mutations_started: dict[str, dict[str, Any]] = field(default_factory=dict)
    mutations_finished: dict[str, Any] = field(default_factory=dict)
    # What the journal says each host has on it now, host → option → "applied" (its apply finished, no revert
    # since) or "in doubt" (an apply or revert started and did not finish cleanly). Kept options stay here.
    on_hosts: dict[str, dict[int, str]] = field(default_factory=dict)
    unrecognized: int = 0
    last_kind: str = ""
    decided: set[str] = field(default_factory=set)  # every gate a decision was journaled for
    opened_interrupts: set[str] = field(default_factory=set)
    # The sha256 each session document must have now: the campaign's at the start, the policy's at the
    # start or at its last accepted change, the ssh_config's and the kept campaign files' at the start ("-":
    # the session has none; not there: a journal from before they were recorded). Empty before `session.started`.
    digests: dict[str, str] = field(default_factory=dict)
    policy_path: str = ""  # the policy file the session goes by: the one it started with, or the last accepted

    # ------------------------------------------------------------------ what readers ask

    @property
    def open_gate(self) -> GateView | None:
        return self.gates[-1] if self.gates and self.gates[-1].action is None else None

    def gate_opened_for(self, interrupt: str) -> GateView | None:
        return next((g for g in self.gates if g.interrupt == interrupt), None)

    @property
    def wall_s(self) -> float:
        """From the first event to the last: the session's whole span, pauses included."""
        if self.started is None or self.last is None:
            return 0.0
        return max(0.0, (self.last - self.started).total_seconds())

    def elapsed_s(self, now: datetime | None = None) -> float:
        """The span so far: up to `now` until the session has ended (a gate waiting for a person is part of
        it), else up to its last event."""
        if self.started is None:
            return 0.0
        live = self.status not in ENDED and now is not None
        end = now if live else self.last
        return max(0.0, ((end or self.started) - self.started).total_seconds())

    @property
    def waiting_at(self) -> dict[str, Any] | None:
        g = self.open_gate
        return None if g is None else {"gate": g.gate, "kind": g.kind, "option": g.option}

    @property
    def outcomes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for o in self.options.values():
            if o.reported:
                counts[o.status] = counts.get(o.status, 0) + 1
        return counts

    @property
    def activity(self) -> str:
        """What the session is doing, in a few words: the open gate when one waits, else the phase."""
        gate = self.open_gate
        if gate is not None and self.status in ("waiting", "paused"):
            return gate.where
        if self.phase in ("", "plan", "done", "baseline", "calibration", "investigate"):
            return self.phase
        phase = "benchmark" if self.phase == "benchmark.level" else self.phase
        at = f" at {self.level_label}" if phase == "benchmark" and self.level is not None else ""
        return phase + (f" #{self.current}" if self.current is not None else "") + at

    @property
    def level_label(self) -> str:
        """The sweep level being benchmarked, as `concurrency=60` ("" outside a sweep)."""
        if self.level is None:
            return ""
        return f"{self.sweep_var or 'level'}={self.level:g}"


@dataclass
class SessionView(SessionFacts):
    """The one fold every reader shares: each journal entry `apply`d in order (`fold`, `replay`)."""

    def apply(self, entry: ev.Entry) -> None:
        self.events += 1
        self.seq = entry.seq if entry.seq >= 0 else self.seq + 1
        self.last = timestamp(entry.ts) or self.last
        e = entry.event
        self.last_kind = e.kind
        match e:
            case ev.SessionStartedEvent():
                self._started(e, entry)
            case ev.SessionResumedEvent() | ev.SessionRevisitEvent():
                self.status = "running"
                self.ended = None
            case ev.SessionAbandonedEvent():
                self.abandoned, self.abandoned_at, self.status, self.ended = e, entry.ts, "running", None
                for g in self.gates:
                    if g.gate == e.gate and g.action is None:  # left unanswered: closed, not waiting any more
                        g.action, g.by, g.decided = "abandoned", e.by, entry.ts
            case ev.SessionWaitingEvent():
                self.ended = None
            case ev.PolicyChangedEvent():
                if self.digests:
                    self.digests["policy.yaml"] = e.policy_sha256 or ""
                self.policy_path = e.policy or self.policy_path
            case ev.SessionPausedEvent():
                self.status = "paused"
                self.ended = None
                self.run_s += e.elapsed_s or 0.0
            case ev.SessionInterruptedEvent():
                self.status = "interrupted"
            case ev.SessionFinishedEvent() | ev.SessionFailedEvent():
                self.ended = e
                self.status = e.status or ("failed" if isinstance(e, ev.SessionFailedEvent) else "finished")
                self.error = e.error or (e.reason if isinstance(e, ev.SessionFailedEvent) else None)
                self.run_s += e.elapsed_s or 0.0
                self.phase, self.bench = "done", None
            case ev.PlanEvent():
                self._plan(e)
            case ev.SubagentStartedEvent():
                self.phase = "investigate"
                self._option(e.option).status = "investigating"
            case ev.FindingEvent():
                o = self._option(e.option)
                o.finding = e
                o.status = "no-go" if not e.feasible else ("hazard" if e.hazards else "clear")
            case ev.PhaseEvent():
                self._phase(e)
            case ev.BenchProgressEvent():
                self.bench = (e.pair, e.of)
                self.level = e.level
            case ev.BenchExtendedEvent():
                self.bench = (e.from_pairs, e.to_pairs)
            case ev.BenchRunEvent():
                if e.option is not None and e.purpose in ("ab", None):
                    o = self._option(e.option)
                    o.runs = o.levels.setdefault(e.get("level"), [])  # a sweep plots one level at a time
                    o.runs.append(e)
            case ev.SweepResultEvent():
                self._option(e.option).sweep = e
            case ev.SweepSearchEvent():
                if e.option is not None:
                    self._option(e.option).searches.append(e)
            case ev.ABResultEvent():
                o = self._option(e.option)
                if (level := e.get("level")) in o.levels:
                    o.runs = o.levels[level]
                o.ab, o.ab_verdict, o.gain_pct = e, e.verdict, e.effect_pct
                o.ci = [e.ci_low, e.ci_high] if e.ci_low is not None and e.ci_high is not None else None
                self.bench = None
            case ev.StressResultEvent():
                if e.option is not None:
                    self._option(e.option).stress.append(e)
                self.stress_done += 1
            case ev.AssessmentEvent():
                o = self._option(e.option)
                o.assessment, o.verdict, o.status = e, e.verdict, "assessed"
            case ev.UndoRecordedEvent():
                self._option(e.option).undo = e
            case ev.RollbackEvent():
                o = self._option(e.option)
                o.rollback, o.status = e, o.after_rollback
            case ev.KeptEvent():
                o = self._option(e.option)
                o.status, o.decided_by = "kept", e.by
            case ev.LlmCallEvent():
                self.llm_calls += 1
                self.llm_usd += float(e.cost_usd or 0.0)
                for k in TOKENS:
                    value = e.get(k, 0)
                    self.llm_tokens[k] = self.llm_tokens.get(k, 0) + (value if isinstance(value, int) else 0)
            case ev.LlmRetryEvent():
                self.llm_retries += 1
            case ev.BrainFallbackEvent():
                self.brain_fallbacks += 1
                where = e.step + (f" #{e.option}" if e.option is not None else "")
                self.fallback_steps.append(f"{where}: {' '.join(str(e.error or '').split())[:200]}")
            case ev.CalibrationEvent():
                self.calibration = e
                floor = e.get("noise_floor_pct")
                if isinstance(floor, int | float) and not isinstance(floor, bool):
                    self.noise_floor_pct = float(floor)
            case ev.GateOpenedEvent():
                self._gate_opened(e, entry)
            case ev.DecisionEvent():
                self._decision(e, entry.ts)
            case ev.RuleAddedEvent():
                self.rules_added += 1
                if isinstance(e.rule, Mapping) and isinstance(e.rule.get("id"), str):
                    self.rules[e.rule["id"]] = e.rule
            case ev.ReportEvent():
                self._report(e)
            case ev.GoalConfirmedEvent():
                self.confirmation = e
            case ev.CommandStartedEvent():
                if e.key:
                    self.mutations_started[e.key] = {**e.fields(), "kind": e.kind, "ts": entry.ts}
                if e.effect in ("apply", "revert") and e.option is not None:
                    self.on_hosts.setdefault(e.host, {})[e.option] = "in doubt"  # until it finishes cleanly
            case ev.CommandFinishedEvent() | ev.MutationRecoveredEvent():
                if e.key and e.result:
                    self.mutations_finished[e.key] = e.result
                if isinstance(e, ev.CommandFinishedEvent) and e.effect in ("apply", "revert") and e.option is not None:
                    on = self.on_hosts.setdefault(e.host, {})
                    if e.exit != 0 or e.timed_out or e.error:
                        on[e.option] = "in doubt"
                    elif e.effect == "apply":
                        on[e.option] = "applied"
                    else:
                        on.pop(e.option, None)
            case ev.UnrecognizedEvent():
                self.unrecognized += 1
            case _:
                pass

    def _option(self, option: int, title: str | None = None) -> OptionView:
        if option not in self.options:
            self.options[option] = OptionView(id=option, title=title or f"option {option}")
        return self.options[option]

    def _started(self, e: ev.SessionStartedEvent, entry: ev.Entry) -> None:
        self.started_event, self.started_ts, self.ended = e, entry.ts, None
        self.digests = {"campaign.yaml": e.campaign_sha256 or "", "policy.yaml": e.policy_sha256 or ""}
        for name, digest in (("ssh_config", "ssh_config_sha256"), ("campaign-files.json", "campaign_files_sha256")):
            if digest in e.model_fields_set:
                self.digests[name] = e.get(digest) or "-"
        self.policy_path = e.policy or ""
        self.session = entry.session or self.session
        self.campaign, self.policy, self.brain = e.campaign_name or "", e.policy_name or "", e.brain or ""
        self.user = e.user or ""
        self.started = timestamp(entry.ts)
        self.status = "running"
        docs = _documents(*(t if isinstance(t, str) else "" for t in (e.campaign_text, e.policy_text)))
        for option_id, title in docs.options:
            self.options[option_id] = OptionView(id=option_id, title=title)
        self.stress_total = docs.stress_total
        if docs.goal is not None:
            self.goal_metric, self.goal_pct = docs.goal
        self.budget_usd = docs.budget_usd
        self.sweep_var = docs.sweep_var

    def _plan(self, e: ev.PlanEvent) -> None:
        for p in e.proposals:
            if isinstance(p, Mapping) and isinstance(p.get("id"), int):
                self.options.setdefault(p["id"], OptionView(id=p["id"], title=f"{p.get('title', '')} (proposed)"))
        self.proposals += [p for p in e.proposals if isinstance(p, Mapping)]
        for o in e.order:
            self._option(o)
        self.phase = "plan"

    def _phase(self, e: ev.PhaseEvent) -> None:
        self.phase = e.phase
        if e.phase not in ("benchmark", "benchmark.level"):
            self.level = None
        if self.status in ("waiting", "answered"):
            self.status = "running"
        if e.option is None:
            return
        o = self._option(e.option)
        self.current = o.id
        if e.title and o.title.startswith("option "):
            o.title = e.title
        if self.phase == "rollback" and o.status in ("skipped", "deferred"):
            o.after_rollback = o.status
        o.status = ACTIVE_PHASES.get(self.phase, o.status)
        if self.phase in ("apply", "stress"):  # the counts are the current option's
            self.stress_done = 0
        if self.phase == "apply":
            self.bench = None
        if self.phase in ("benchmark", "benchmark.level"):
            self.bench = (0, e.pairs or 0)
            self.level = e.level

    def _gate_opened(self, e: ev.GateOpenedEvent, entry: ev.Entry) -> None:
        if e.interrupt:
            self.opened_interrupts.add(e.interrupt)
        last = self.gates[-1] if self.gates else None
        if last is not None and last.gate == e.gate and last.action is None:
            last.interrupt = last.interrupt or e.interrupt  # re-opened after a resume: the same gate
        else:
            self.gates.append(
                GateView(
                    gate=e.gate,
                    kind=e.gate_kind,
                    option=e.option,
                    question=e.question,
                    facts=e.facts,
                    seq=entry.seq,
                    opened=entry.ts,
                    interrupt=e.interrupt,
                    recommendation=e.recommendation if isinstance(e.recommendation, dict) else None,
                )
            )
        if self.status not in ENDED:
            self.status = "waiting"

    def _decision(self, e: ev.DecisionEvent, ts: str) -> None:
        decision = e.decision or {}
        action = decision.get("action")
        self.decided.add(e.gate)
        for g in reversed(self.gates):
            if g.gate == e.gate:
                if g.action is None:
                    g.action, g.by, g.raw, g.decided, g.decision = action or "ask", e.by, e.raw, ts, decision
                break
        if self.status == "waiting":
            self.status = "running"
        elif self.status == "paused":
            self.status = "answered"
        o = self.options.get(e.option) if e.option is not None else None
        later = "deferred" if action == "defer" or decision.get("scope") == "for_now" else "skipped"
        if o is not None and e.gate_kind == "safety" and action in ("skip", "defer", "stop"):
            o.status, o.decided_by = later, e.by
        targets = decision.get("targets") if action in ("skip", "defer") else None
        for t in targets if isinstance(targets, list) else []:
            target = self.options.get(t) if isinstance(t, int) else None
            if target is not None and target.status not in ("kept", "no-go"):
                target.status = later

    def _report(self, e: ev.ReportEvent) -> None:
        self.report = e
        for r in e.options:
            oid = r.get("id")
            if not isinstance(oid, int):
                continue
            o = self.options.setdefault(oid, OptionView(id=oid, title=str(r.get("title", ""))))
            o.title = str(r.get("title") or o.title)
            o.status, o.reported = str(r.get("outcome", o.status)), True
            o.gain_pct = r.get("gain_pct", o.gain_pct)
            o.ci = r.get("ci", o.ci)
            o.verdict = r.get("verdict", o.verdict)
            reasons = r.get("reasons")
            o.reasons = [str(x) for x in reasons] if isinstance(reasons, list) else []


def fold(records: Iterable[Mapping[str, Any]], upto: int | None = None) -> SessionView:
    """The view of journal lines (as JSON objects) up to index `upto` (inclusive); all of them when None."""
    return replay((ev.entry(record) for record in records), upto)


def replay(entries: Iterable[ev.Entry], upto: int | None = None) -> SessionView:
    """The view of lines already read into entries, up to index `upto` (inclusive): a reader that steps
    back and forth through one journal reads each line once and folds the entries again."""
    view = SessionView()
    for i, e in enumerate(entries):
        if upto is not None and i > upto:
            break
        view.apply(e)
    return view
