"""Pure formatting for the TUI: events, plan rows, the evidence of one option, the status line.

Rich renderables only (DataTable cells and RichLog take Rich), no Textual, so all of it is testable
without an App.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agent.journal.chain import Record
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
    return "—" if not ci else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


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
        line = f"{_opt(e)}$ {e.get('command')}  [{e.get('host')}, {e.get('purpose')}, ≤{e.get('timeout_s', 0):g}s]"
    if line is None and e["kind"] == "command.finished" and e.get("exit") == 0:
        line = f"{_opt(e)}  ✓ {e.get('host')} exit 0 in {e.get('duration_s', 0):.2f}s"
    if line is None:
        return None
    ts = str(e.get("ts", ""))[11:19]
    text = Text(f"{ts} ", style="dim")
    text.append(line, style=KIND_STYLE.get(e["kind"], "dim" if e["kind"].startswith("command.") else ""))
    return text


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
        id(o.ab), id(o.assessment), id(o.undo), id(o.rollback), id(o.finding),
    )  # fmt: skip


def gate_key(g: GateView) -> object:
    return (g.gate, g.seq, g.action, g.by, g.decided)


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
        ok = "verified" if o.rollback.verified else "NOT verified"
        parts.append(Text(f"rollback {ok}: {o.rollback.detail or ''}", style="yellow"))
    return Group(*parts)


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


def gate_panel(g: GateView) -> RenderableType:
    """A gate as the person saw it — question, facts, recommendation — and, once made, the decision."""
    opt = f" · option #{g.option}" if g.option is not None else ""
    parts: list[RenderableType] = [Text(f"Gate {g.gate} · {g.kind}{opt}", style="bold yellow")]
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
