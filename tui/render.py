"""Pure formatting for the TUI: events, plan rows, the evidence of one option, the status line.

Rich renderables only (DataTable cells and RichLog take Rich), no Textual, so all of it is testable
without an App.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agent.journal.chain import Record
from agent.journal.events.option import rollback_verdict
from agent.journal.view import GateView, OptionView, SessionView, timestamp
from agent.report.console import pct, progress_line

STATUS_STYLE = {
    "kept": "bold green",
    "skipped": "yellow",
    "no-go": "red",
    "deferred": "cyan",
    "untested": "dim",
    "pending": "dim",
    "clear": "green",
    "hazard": "yellow",
    "investigating": "blue",
    "applying": "bold blue",
    "benchmarking": "bold blue",
    "stressing": "bold magenta",
    "rolling back": "bold yellow",
    "assessed": "bold",
}
KIND_STYLE = {
    "gate.opened": "bold",
    "decision": "bold cyan",
    "command.refused": "bold red",
    "kept": "bold green",
    "rollback": "yellow",
    "finding": "",
    "assessment": "bold",
    "brain.fallback": "yellow",
    "permission.requested": "bold yellow",
}


def ci_text(ci: list[float] | None) -> str:
    return "—" if not ci or len(ci) != 2 else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def event_line(e: dict[str, Any]) -> Text | None:
    """One line of the event stream, or None for events too fine-grained to show."""
    data = {k: v for k, v in e.items() if k not in ("v", "seq", "ts", "session", "kind", "actor", "prev")}
    event = Record(
        seq=e.get("seq", 0), kind=e["kind"], ts=e.get("ts", ""), actor=e.get("actor", ""), data=data, hash=""
    )
    try:
        line = progress_line(event)
    except (KeyError, TypeError, ValueError):
        line = None
    if line is None and e["kind"] == "command.started":
        command = short_program(str(e.get("command")))
        line = f"{_opt(e)}$ {command}  [{e.get('host')}, {e.get('purpose')}, ≤{e.get('timeout_s', 0):g}s]"
    if line is None and e["kind"] == "command.finished" and e.get("exit") == 0:
        line = f"{_opt(e)}  ✓ {e.get('host')} exit 0 in {e.get('duration_s', 0):.2f}s"
    if line is None:
        return None
    ts = str(e.get("ts", ""))[11:19]
    text = Text(f"{ts} ", style="dim")
    text.append(line, style=KIND_STYLE.get(e["kind"], "dim" if e["kind"].startswith("command.") else ""))
    return text


_PROGRAM = re.compile(r"^(/[^\s/]+)+/([^\s/]+)(?=\s|$)")


def short_program(command: str) -> str:
    """A command as the events list shows it: the program's directory folded (`/work/x/.venv/bin/python
    simserve.py …` reads `…/python simserve.py …`: that it ran from a path stays visible); the arguments as
    they are. The output screen (Enter) and every gate show the whole command."""
    return _PROGRAM.sub(r"…/\2", command, count=1)


def _opt(e: dict[str, Any]) -> str:
    return f"#{e['option']} " if e.get("option") is not None else ""


# The plan's columns, in order, with how important each is when the table is too narrow for all of
# them: the verdict goes first (the status says most of it), then the CI, then the gain.
PLAN_COLUMNS: tuple[tuple[str, int], ...] = (
    ("#", 0), ("option", 0), ("status", 0), ("gain", 2), ("95% CI", 1), ("verdict", 0)
)  # fmt: skip
DROP_ORDER = ("verdict", "95% CI", "gain")
MIN_TITLE = 10
CELL_PADDING = 2  # a DataTable cell has one column of padding on each side


def plan_cells(o: OptionView) -> dict[str, Text]:
    """One plan row, each cell whole: the table decides how wide each column can be."""
    style = STATUS_STYLE.get(o.status, "")
    status = o.status + (" ⏸" if o.deferred else "")
    ci = "—" if not o.ci else f"{o.ci[0]:+.1f}…{o.ci[1]:+.1f}"
    return {
        "#": Text(f"#{o.id}"),
        "option": Text(o.title),
        "status": Text(status, style=style),
        "verdict": Text(o.verdict or "—", style="red" if o.verdict == "unsafe" else ""),
        "gain": Text(pct(o.gain_pct), style="green" if (o.gain_pct or 0) > 0 else ""),
        "95% CI": Text(ci, style="dim"),
    }


def plan_layout(rows: list[dict[str, Text]], width: int) -> list[tuple[str, int]]:
    """(column, width) to show in a table `width` cells wide. Every column is as wide as its widest
    cell; when that does not fit, the option's title shrinks (to MIN_TITLE), then the least important
    columns go, verdict first. Nothing is cut in the middle of a number."""
    natural = {key: max([len(key), *(r[key].cell_len for r in rows)]) for key, _ in PLAN_COLUMNS}
    shown = [key for key, _ in PLAN_COLUMNS]

    def fixed(keys: list[str]) -> int:
        return sum(natural[k] + CELL_PADDING for k in keys if k != "option") + CELL_PADDING

    for key in DROP_ORDER:
        if fixed(shown) + min(natural["option"], MIN_TITLE) <= width:
            break
        shown.remove(key)
    title = max(MIN_TITLE, min(natural["option"], width - fixed(shown)))
    return [(k, title if k == "option" else natural[k]) for k in shown]


def fit(text: Text, width: int) -> Text:
    """`text` cut to `width` cells with an ellipsis when it is longer."""
    if text.cell_len <= width:
        return text
    cut = text.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut


def status_line(view: SessionView, *, mode: str, now: datetime | None = None, width: int = 200) -> Text:
    """The top bar. When it does not fit in `width` the least telling parts go first (policy, campaign,
    LLM spend, session id); the mode, the clock, what the run is doing and its state always stay. Notes
    (a gate left for later, an error) have their own line below it."""
    elapsed = int(view.elapsed_s(now))
    clock = (
        f"{elapsed // 3600:d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        if elapsed >= 3600
        else (f"{elapsed // 60:02d}:{elapsed % 60:02d}")
    )
    gate = view.open_gate
    waited = ""
    if gate is not None and now is not None and view.status in ("waiting", "paused"):
        opened = timestamp(gate.opened)
        if opened is not None:
            w = int(max(0.0, (now - opened).total_seconds()))
            waited = f" {w // 60:d}:{w % 60:02d}"
    # (text, style, rank): the lower the rank, the longer it stays
    parts: list[tuple[str, str, int]] = [
        (f" {mode.upper()} ", "reverse bold", 0),
        (f" {view.session or '…'} ", "bold", 3),
        (f"· {view.campaign} ", "", 5),
        (f"· {view.policy} ", "", 6),
        (f"· {clock} ", "", 0),
        (f"· {view.activity or 'starting'} ", "", 1),
        (
            f"· {view.status}{waited} ",
            {"paused": "bold yellow", "waiting": "bold yellow", "failed": "bold red"}.get(view.status, ""),
            0,
        ),
    ]
    if view.llm_calls or view.budget_usd is not None:
        budget = f" / ${view.budget_usd:g}" if view.budget_usd is not None else ""
        parts.append((f"· LLM ${view.llm_usd:.4f}{budget} ", "", 4))
    for rank in (6, 5, 4, 3, 1):
        if sum(len(p[0]) for p in parts) <= width:
            break
        parts = [p for p in parts if p[2] != rank]
    t = Text(no_wrap=True, overflow="ellipsis")
    for text, style, _ in parts:
        t.append(text, style=style)
    return t


def evidence_key(o: OptionView | None) -> object:
    """Changes whenever `evidence(o)` would show something else (the fold only ever adds to an option)."""
    if o is None:
        return None
    # Events the fold replaces (a retried A/B, a second assessment) are new objects: their ids change.
    return (
        id(o), o.title, o.status, o.gain_pct, tuple(o.ci or ()), o.verdict, len(o.runs), len(o.stress),
        id(o.ab), id(o.assessment), id(o.undo), id(o.rollback), id(o.finding), id(o.sweep),
    )  # fmt: skip


# What changed the run's course, for "since you last answered": results, not the steps that led to them.
_SINCE = ("finding", "ab.result", "stress.result", "assessment", "kept", "rollback", "decision", "command.refused")


def since_last_answer(events: list[dict[str, Any]], gate: str, *, limit: int = 6) -> Text | None:
    """What happened since a person last answered a gate, up to gate `gate` (None before anyone answered one):
    the A/B results, stress failures, assessments, keeps and rollbacks, and the gates a rule decided meanwhile."""
    last = next(
        (i for i in range(len(events) - 1, -1, -1)
         if events[i]["kind"] == "decision" and str(events[i].get("by", "")).startswith("human:")),
        None,
    )  # fmt: skip
    if last is None:
        return None
    answered = events[last]
    lines = []
    for e in events[last + 1 :]:
        if e["kind"] == "gate.opened" and e.get("gate") == gate:
            break
        if e["kind"] not in _SINCE or (e["kind"] == "stress.result" and e.get("outcome") == "ok"):
            continue
        line = event_line(e)
        if line is not None:
            said = line.plain[9:]  # without the clock: the order is what matters here
            lines.append(said if len(said) <= 160 else said[:159] + "…")  # the whole line is in the events pane
    at = str(answered.get("ts", ""))[11:19]
    # Who answered, as the journal says: the last answer may have been someone else's (`decide` in a team).
    text = Text(f"since {answered.get('by')} answered {answered.get('gate')} at {at}:", style="bold")
    if not lines:
        return text.append(" nothing but the steps to this gate", style="")
    for line in lines[:limit]:
        text.append(f"\n  {line}", style="")
    if len(lines) > limit:
        text.append(f"\n  … and {len(lines) - limit} more in the events pane", style="dim")
    return text


def gate_key(g: GateView) -> object:
    """What the gate panel shows, for `_show` to tell a change by: a copy of every field (the view updates a gate in
    place as its decision comes), so a field the panel starts to show redraws it without a key kept by hand."""
    return replace(g)


def evidence(o: OptionView | None) -> RenderableType:
    """Everything known about one option, newest evidence last."""
    if o is None:
        return Text("Select an option in the plan to see its evidence.", style="dim")
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"#{o.id} {o.title}", style="bold")
    head.append(f"  {o.status}", style=STATUS_STYLE.get(o.status, ""))
    if o.gain_pct is not None:
        head.append(f"  {pct(o.gain_pct)} 95% CI {ci_text(o.ci)}")
    parts.append(head)
    if o.finding is not None:
        for blocker in o.finding.blockers:
            parts.append(Text(f"blocker: {blocker}", style="red"))
        for hazard in o.finding.hazards:
            parts.append(Text(f"hazard: {hazard}", style="yellow"))
        if o.finding.summary:
            parts.append(Text(f"investigator: {o.finding.summary}", style="dim"))
    pairs = o.pairs()
    if pairs:
        table = Table(box=None, pad_edge=False, show_edge=False, expand=False, title=None)
        for col in ("pair", "A (baseline)", "B (option)", "B/A"):
            table.add_column(col, justify="right")
        for pair, a, b in pairs:
            ratio = f"{b / a:.3f}" if a and b else "—"
            table.add_row(str(pair), _num(a), _num(b), ratio)
        parts.append(table)
    if o.ab is not None:
        parts.append(Text(o.ab.summary or "", style="bold"))
    parts.extend(sweep_parts(o))
    for s in o.stress:
        style = "green" if s.outcome == "ok" else "bold red"
        parts.append(Text(f"stress {s.scenario} run {s.run}: {str(s.outcome).upper()}", style=style))
        if s.outcome != "ok":
            parts.append(Text(f"  {s.evidence or ''}", style="dim"))
    if o.assessment is not None:
        a = o.assessment
        parts.append(Text(f"assessment: {a.verdict}, recommend {a.recommendation}", style="bold"))
        rationale = a.get("rationale")
        if rationale:
            parts.append(Text(str(rationale)))
    if o.undo is not None:
        revert = "; ".join(f"{r.get('command')} on {r.get('host')}" for r in o.undo.revert if isinstance(r, dict))
        v = o.undo.verify if isinstance(o.undo.verify, dict) else {}
        if "floor_pct" in v:  # judged against the run's own noise (sessions recorded before that: a fixed band)
            state = "the option's check, " if v.get("check") else ""
            check = (
                f"health checks, {state}{v.get('baseline_runs', '?')} baseline runs within the measured noise "
                f"(at least ±{v['floor_pct']:g}%)"
            )
        else:
            check = f"health checks, {v.get('baseline_runs', '?')} baseline runs within ±{v.get('tolerance_pct', '?')}%"
        parts.append(Text(f"undo plan: {revert}; then {check}", style="cyan"))
    if o.rollback is not None:
        ok = rollback_verdict(o.rollback.verified, o.rollback.verified_by)
        parts.append(Text(f"rollback {ok}: {o.rollback.detail or ''}", style="yellow"))
    return Group(*parts)


def sweep_parts(o: OptionView) -> list[RenderableType]:
    """A load sweep's story: per level the verdict, gain and CI, each arm's SLO and goodput, the judged level
    marked; the capacities within the SLOs (the knee) and the fitted step times. Nothing for an option without
    a sweep, or with a sweep line that does not read as one."""
    from agent.report.audit import sweep_of  # only a sweep needs the report's reader

    sweep = sweep_of(o)
    if sweep is None:
        return []
    try:
        return _sweep_parts(sweep)
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        # A line that reads as a sweep but holds what no run writes (a fit of strings, a one-bound CI): an
        # edited journal. Said, never drawn wrong, and the screen goes on.
        return [Text("load sweep: its journal line holds values no run writes; not shown", style="dim")]


def _sweep_parts(sweep: Any) -> list[RenderableType]:
    from agent.report.audit import search_brackets

    var = sweep.var
    parts: list[RenderableType] = [Text(f"load sweep over {var} — judged at {var}={sweep.level:g} ◀", style="bold")]
    table = Table(box=None, pad_edge=False, show_edge=False, expand=False)
    for col, justify in ((var, "right"), ("verdict", "left"), ("gain", "right"), ("95% CI", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    slo = bool(sweep.slo)
    if slo:
        table.add_column("SLO A / B")
        table.add_column("goodput A → B", justify="right")
    for lv in sweep.levels:
        a, b = lv.arms.get("A"), lv.arms.get("B")
        judged = lv.level == sweep.level
        verdict = lv.verdict + (" (broken)" if lv.broken else "")
        row = [
            f"{lv.level:g}{' ◀' if judged else ''}",
            Text(verdict, style="green" if lv.verdict == "improved" else "red" if lv.verdict == "regressed" else ""),
            pct(lv.effect_pct),
            ci_text(lv.ci),
        ]
        if slo:
            row.append(f"{(a.slo if a else None) or '—'} / {(b.slo if b else None) or '—'}")
            row.append(f"{_num(a.goodput if a else None)} → {_num(b.goodput if b else None)}")
        table.add_row(*row, style="bold" if judged else "")
    parts.append(table)
    if slo:
        caps = {arm: (f"{c:g}" if c is not None else "none") for arm, c in sweep.capacity.items()}
        gain = f", {pct(sweep.capacity_gain_pct)}" if sweep.capacity_gain_pct is not None else ""
        source = " (bounded search)" if sweep.capacity_source == "search" else " (swept levels)"
        parts.append(
            Text(
                f"knee within {' and '.join(sweep.slo)}: baseline {caps.get('A', 'none')} → option "
                f"{caps.get('B', 'none')}{gain}{source}",
                style="bold",
            )
        )
        for who, probes, closed in search_brackets(sweep):
            parts.append(Text(f"  capacity search, {who}: {probes}; {closed}"))
    for arm, fit in sweep.fit.items():
        if "slope" in fit and "intercept" in fit:
            who = "baseline" if arm == "A" else "option"
            parts.append(
                Text(
                    f"step time, {who}: {fit.get('metric')} = {float(fit['intercept']):.1f} + "
                    f"{float(fit['slope']):.3f}×{var}",
                    style="dim",
                )
            )
    return parts


def arm_values(o: OptionView, arm: str) -> list[float]:
    return [float(r.value) for r in o.runs if r.arm == arm and r.valid and r.value is not None]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


_BOLD = re.compile(r"\*\*(.+?)\*\*")


def question(text: str) -> Text:
    """The gate question: its **bold** marks rendered, everything else literal."""
    out = Text()
    pos = 0
    for m in _BOLD.finditer(text):
        out.append(text[pos : m.start()])
        out.append(m.group(1), style="bold")
        pos = m.end()
    out.append(text[pos:])
    return out


def facts_text(facts: dict[str, Any]) -> Text:
    """A gate's facts, `name=value` each, wrapped at spaces (never inside a fact)."""
    text = Text("facts: ", style="dim")
    for i, (k, v) in enumerate(facts.items()):
        text.append(("  " if i else "") + f"{k}={v}", style="dim")
    return text


def rounded(value: object) -> str:
    """A fact's value as a person reads it: floats to three significant figures, never in exponent form."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    size = abs(value)
    if (size != 0 and size < 0.001) or not math.isfinite(value):
        return f"{value:.2g}"  # a p-value of 4e-05 is not 0
    digits = 0 if size >= 100 else 1 if size >= 10 else 2 if size >= 0.1 or size == 0 else 3
    text = f"{value:.{digits}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text == "-0" else text


# Facts that mean nothing unless another says there is something behind them (each is 0.0 then).
_BEHIND = {
    "has_estimate": ("gain_pct", "ci_low", "ci_high", "detectable_pct"),
    "has_capacity": ("capacity_base", "capacity_option", "capacity_gain_pct"),
    "has_fit": ("fixed_ms", "per_request_ms", "base_fixed_ms", "base_per_request_ms"),
    "measured": ("delta_pct",),
}


def facts_shown(kind: str, facts: dict[str, Any]) -> list[tuple[str, str]]:
    """The facts that apply at this gate, rounded: a fact still at the default that stands for "none" or
    "not measured" (the sweep's in a run without a sweep, `slo_met` with no SLO) is left out, and so are
    the numbers a false `has_…` says are placeholders. A fact the gate kind does not declare (a journal
    from another version, a forged one) is always shown: nothing unknown is hidden."""
    from policies.gates import spec_for

    spec = spec_for(kind)
    declared = spec.facts.model_fields if spec is not None else {}
    hidden = {name for flag, names in _BEHIND.items() if facts.get(flag) is False for name in names}
    if facts.get("sweep_levels") == 0:
        hidden.add("slo_met")  # true only because there is no SLO to miss
    shown: list[tuple[str, str]] = []
    for name, value in facts.items():
        field = declared.get(name)
        if name in hidden:
            continue
        if field is not None and not field.is_required() and field.default == value:
            continue
        shown.append((name, rounded(value)))
    return shown


def facts_lines(kind: str, facts: dict[str, Any]) -> Text:
    """The facts that apply, `name value` in rows (for the gate dialog, where they come last)."""
    text = Text()
    for i, (name, value) in enumerate(facts_shown(kind, facts)):
        text.append(("\n" if i else "") + f"  {name:<24} ", style="dim")
        text.append(value)
    return text


@dataclass(frozen=True)
class GateText:
    """A gate's question taken apart for the dialog, which shows it in order of what decides: the question
    the person answers (`ask`) pinned on top; the summary (`head`); the evidence, gain and CI first, then
    hazards, then stress outcomes, then the rest; the undo plan."""

    ask: str
    head: list[str]
    evidence: list[str]
    undo: list[str]


def _rank(line: str) -> int:
    body = line.lstrip("- ").lower()
    if body.startswith("sweep"):
        return 3  # every level's story: after the judged level's gain, the hazards and the stress
    if "95% ci" in body:
        return 0
    if body.startswith(("hazard", "blocker")):
        return 1
    if body.startswith("stress"):
        return 2
    return 3


_ITEM = re.compile(r"^(?:- |\d+\. |  )")


def gate_text(question: str, kind: str = "") -> GateText:
    """Split a gate question into what it asks and what it shows. Where the ask stands is known by the gate
    kind (signoff writes these questions; `GateSpec.ask_first`): the first line at a continue-or-ask gate, whose
    assessor's words follow it, else the last line. Never found by looking for a "?": a model's or a forged line may
    ask something too. A command gate's lines stay in their order, whole (`GateSpec.verbatim`): a command may span
    lines."""
    from policies.gates import spec_for

    spec = spec_for(kind)
    lines = [line for line in question.splitlines() if line.strip()]
    if not lines:
        return GateText(ask="", head=[], evidence=[], undo=[])
    at = 0 if spec is not None and spec.ask_first else len(lines) - 1
    ask, rest = lines[at], lines[:at] + lines[at + 1 :]
    if spec is not None and spec.verbatim:
        return GateText(ask=ask, head=rest, evidence=[], undo=[])
    undo = [line for line in rest if line.startswith("Undo plan:")]
    items = [line for line in rest if _ITEM.match(line)]
    head = [line for line in rest if line not in undo and line not in items]
    # A continuation ("  apply: …") stays under its item: rank an item with what follows it.
    groups: list[list[str]] = []
    for line in items:
        if line.startswith("  ") and groups:
            groups[-1].append(line)
        else:
            groups.append([line])
    ordered = sorted(groups, key=lambda g: _rank(g[0])) if any(g[0].startswith("- ") for g in groups) else groups
    return GateText(ask=ask, head=head, evidence=[line for g in ordered for line in g], undo=undo)


def recommendation_text(rec: object) -> Text:
    """What the policy said when it asked: its action, rule and rationale."""
    if not isinstance(rec, dict):
        return Text("policy recommends ASK", style="italic")
    line = f"policy recommends {str(rec.get('action', 'ask')).upper()}"
    if rec.get("rule"):
        line += f" (rule {rec['rule']})"
    if rec.get("rationale"):
        line += f" — {rec['rationale']}"
    return Text(line, style="italic")


def gate_title(gate: str, kind: str, option: int | None) -> str:
    """A gate's first line, in its dialog and in the panel above the evidence."""
    return f"Gate {gate} · {kind}" + (f" · option #{option}" if option is not None else "")


def gate_panel(g: GateView) -> RenderableType:
    """A gate as the person saw it — question, facts, recommendation — and, once made, the decision."""
    parts: list[RenderableType] = [Text(gate_title(g.gate, g.kind, g.option), style="bold yellow")]
    parts.append(question(g.question))
    parts.append(facts_text(g.facts))
    if g.recommendation is not None:
        parts.append(recommendation_text(g.recommendation))
    if g.action:
        said = f' ("{g.raw}")' if g.raw else ""
        waited = f" after {g.waited_s:.0f}s" if g.waited_s else ""
        parts.append(Text(f"→ {g.action.upper()} by {g.by}{said}{waited}", style="bold cyan"))
        matched = g.decision.get("matched")
        if isinstance(matched, list) and len(matched) > 1:  # journals before `matched` have none
            parts.append(
                Text("rules that matched, the one that decided first: " + ", ".join(map(str, matched)), style="dim")
            )
    else:
        parts.append(Text("waiting for an answer", style="bold yellow"))
    return Group(*parts)


def gate_summary(g: GateView) -> str:
    opt = f" #{g.option}" if g.option is not None else ""
    decided = f" → {g.action.upper()} by {g.by}" if g.action else " (open)"
    return f"{g.gate} {g.kind}{opt}{decided}"
