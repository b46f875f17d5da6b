"""A session's report for an auditor, from its journal alone: Markdown, or one self-contained HTML file
with an inline SVG plot per option (no scripts, no external files; readable without signoff).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.journal.chain import read_events
from tools.terminal import printable


@dataclass
class OptionRecord:
    id: int
    title: str = ""
    outcome: str = "untested"
    finding: dict[str, Any] | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    ab: dict[str, Any] | None = None
    stress: list[dict[str, Any]] = field(default_factory=list)
    assessment: dict[str, Any] | None = None
    rollback: dict[str, Any] | None = None
    reasons: list[str] = field(default_factory=list)


@dataclass
class GateRecord:
    gate: str
    kind: str
    option: int | None
    question: str
    facts: dict[str, Any]
    opened: str
    action: str = "(open)"
    by: str = ""
    raw: str | None = None
    latency_s: float | None = None


@dataclass
class SessionRecord:
    session: str = ""
    started: dict[str, Any] = field(default_factory=dict)
    options: dict[int, OptionRecord] = field(default_factory=dict)
    gates: list[GateRecord] = field(default_factory=list)
    report: dict[str, Any] | None = None
    finished: dict[str, Any] | None = None
    llm_calls: int = 0
    llm_usd: float = 0.0
    events: int = 0


def collect(journal: Path) -> SessionRecord:
    rec = SessionRecord()
    opened: dict[str, GateRecord] = {}

    def option(e: dict[str, Any]) -> OptionRecord | None:
        o = e.get("option")
        return None if o is None else rec.options.setdefault(int(o), OptionRecord(id=int(o)))

    for e in read_events(journal):
        rec.events += 1
        k = e["kind"]
        if k == "session.started":
            rec.session, rec.started = e["session"], e
        elif k == "finding" and (o := option(e)):
            o.finding = e
        elif k == "bench.run" and e.get("purpose") == "ab" and (o := option(e)):
            o.runs.append(e)
        elif k == "ab.result" and (o := option(e)):
            o.ab = e
        elif k == "stress.result" and (o := option(e)):
            o.stress.append(e)
        elif k == "assessment" and (o := option(e)):
            o.assessment = e
        elif k == "rollback" and (o := option(e)):
            o.rollback = e
        elif k == "gate.opened" and e["gate"] not in opened:
            g = GateRecord(
                e["gate"], e["gate_kind"], e.get("option"), e.get("question", ""), e.get("facts", {}), e["ts"]
            )
            opened[e["gate"]] = g
            rec.gates.append(g)
        elif k == "decision" and e.get("gate") in opened:
            g = opened[e["gate"]]
            g.action = (e.get("decision") or {}).get("action", "ask")
            g.by, g.raw = e.get("by", ""), e.get("raw")
            g.latency_s = (_ts(e["ts"]) - _ts(g.opened)).total_seconds()
        elif k == "llm.call":
            rec.llm_calls += 1
            rec.llm_usd += float(e.get("cost_usd", 0.0))
        elif k == "report":
            rec.report = e
            for r in e.get("options", []):
                o = rec.options.setdefault(r["id"], OptionRecord(id=r["id"]))
                o.title, o.outcome, o.reasons = r.get("title", ""), r.get("outcome", ""), r.get("reasons", [])
        elif k == "session.finished":
            rec.finished = e
    return rec


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.1f}%"


def _who(by: str) -> str:
    return by or "—"


# ---------------------------------------------------------------------- Markdown


def markdown(rec: SessionRecord) -> str:
    s = rec.started
    out = [
        f"# signoff session {rec.session}",
        "",
        f"- campaign: **{s.get('campaign_name', '?')}** (`{s.get('campaign_sha256', '')[:12]}`)",
        f"- policy: **{s.get('policy_name', '?')}** (`{s.get('policy_sha256', '')[:12]}`)",
        f"- brain: {s.get('brain', '?')} · started {s.get('ts', '?')} by {s.get('user', '?')}",
        f"- status: {(rec.finished or {}).get('status', 'not finished')} · {rec.events} journal events",
    ]
    if rec.report and rec.report.get("estimated_gain_pct") is not None:
        out.append(f"- estimated gain of what was kept: {_pct(rec.report['estimated_gain_pct'])}")
    if rec.finished and rec.finished.get("elapsed_s") is not None:
        out.append(f"- wall time of the last run: {rec.finished['elapsed_s']:.0f}s")
    if rec.llm_calls:
        out.append(f"- model calls: {rec.llm_calls}, ${rec.llm_usd:.4f}")
    out += ["", "## Options", "", "| option | outcome | gain | 95% CI | safety |", "|---|---|---|---|---|"]
    for o in sorted(rec.options.values(), key=lambda o: o.id):
        ci = f"[{o.ab['ci_low']:+.1f}, {o.ab['ci_high']:+.1f}]" if o.ab and o.ab.get("ci_low") is not None else "—"
        gain = _pct(o.ab.get("effect_pct")) if o.ab else "—"
        safety = (o.assessment or {}).get("verdict", "—")
        out.append(f"| #{o.id} {_cell(o.title)} | **{o.outcome}** | {gain} | {ci} | {safety} |")
    for o in sorted(rec.options.values(), key=lambda o: o.id):
        out += ["", f"### #{o.id} {o.title} — {o.outcome}", ""]
        said: set[str] = set()
        if o.finding:
            said |= {f"blocker: {b}" for b in o.finding.get("blockers", [])}
            said |= {f"hazard: {h}" for h in o.finding.get("hazards", [])}
            out += [f"- {line}" for line in sorted(said)]
        if o.ab:
            out.append(f"- A/B: {o.ab.get('summary', '')}")
            out += ["", "| pair | A (baseline) | B (option) |", "|---|---|---|"]
            for pair, a, b in pairs(o):
                out.append(f"| {pair} | {_num(a)} | {_num(b)} |")
            out.append("")
        for st in o.stress:
            out.append(
                f"- stress {st.get('scenario')} run {st.get('run')}: **{st.get('outcome')}** — {st.get('evidence')}"
            )
        if o.assessment and o.assessment.get("rationale"):
            out.append(f"- assessor: {o.assessment['rationale']}")
        if o.rollback:
            out.append(
                f"- rollback {'verified' if o.rollback.get('verified') else 'NOT verified'}: {o.rollback.get('detail')}"
            )
        out += [f"- {r}" for r in o.reasons if r not in said and not (o.ab and r == o.ab.get("summary"))]
    out += ["", "## Decisions", "", "| gate | kind | option | answer | decided by | text typed | waited |"]
    out.append("|---|---|---|---|---|---|---|")
    for g in rec.gates:
        wait = f"{g.latency_s:.1f}s" if g.latency_s is not None else "—"
        opt = f"#{g.option}" if g.option is not None else "—"
        out.append(f"| {g.gate} | {g.kind} | {opt} | **{g.action}** | {_who(g.by)} | {_cell(g.raw or '')} | {wait} |")
    for g in rec.gates:
        facts = ", ".join(f"{k}={v}" for k, v in g.facts.items())
        out += ["", f"**{g.gate} ({g.kind})** — facts shown: {facts}", "", "> " + g.question.replace("\n", "\n> ")]
    deferred = (rec.report or {}).get("deferred") or []
    if deferred:
        out += ["", "## Deferred", "", *[f"- #{d}" for d in deferred]]
    return "\n".join(out) + "\n"


def pairs(o: OptionRecord) -> list[tuple[int, float | None, float | None]]:
    by_pair: dict[int, dict[str, float | None]] = {}
    for r in o.runs:
        by_pair.setdefault(int(r.get("pair", 0)), {})[str(r.get("arm"))] = r.get("value") if r.get("valid") else None
    return [(p + 1, v.get("A"), v.get("B")) for p, v in sorted(by_pair.items())]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


# ---------------------------------------------------------------------- HTML


def svg_plot(o: OptionRecord, width: int = 420, height: int = 160) -> str:
    """Both arms per pair (A grey, B blue), and the effect's 95% CI as a bar against zero."""
    rows = [(p, a, b) for p, a, b in pairs(o) if a is not None or b is not None]
    if not rows:
        return ""
    values = [v for _, a, b in rows for v in (a, b) if v is not None]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    plot_w = width - 150

    def x(i: int) -> float:
        return 40 + (plot_w - 50) * (i / max(1, len(rows) - 1))

    def y(v: float) -> float:
        return 10 + (height - 40) * (1 - (v - lo) / span)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    parts.append(f'<text x="4" y="{y(hi) + 4:.0f}" font-size="10">{hi:,.0f}</text>')
    parts.append(f'<text x="4" y="{y(lo) + 4:.0f}" font-size="10">{lo:,.0f}</text>')
    for arm, color in (("A", "#888"), ("B", "#1f6feb")):
        pts = [(x(i), y(v)) for i, (_, a, b) in enumerate(rows) if (v := a if arm == "A" else b) is not None]
        if len(pts) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"/>' for px, py in pts]
    parts.append(f'<text x="40" y="{height - 8}" font-size="10" fill="#888">A baseline</text>')
    parts.append(f'<text x="110" y="{height - 8}" font-size="10" fill="#1f6feb">B option, per pair</text>')
    if o.ab and o.ab.get("ci_low") is not None:
        # The CI bar: a vertical scale of effect % at the right, zero marked.
        top, bottom = 10, height - 30
        e_lo, e_hi = min(0.0, o.ab["ci_low"]), max(0.0, o.ab["ci_high"])
        e_span = (e_hi - e_lo) or 1.0

        def ey(v: float) -> float:
            return top + (bottom - top) * (1 - (v - e_lo) / e_span)

        cx = width - 60
        parts.append(f'<line x1="{cx - 20}" x2="{cx + 20}" y1="{ey(0):.1f}" y2="{ey(0):.1f}" stroke="#aaa"/>')
        parts.append(
            f'<line x1="{cx}" x2="{cx}" y1="{ey(o.ab["ci_low"]):.1f}" y2="{ey(o.ab["ci_high"]):.1f}" '
            'stroke="#d73a49" stroke-width="4"/>'
        )
        parts.append(f'<circle cx="{cx}" cy="{ey(o.ab["effect_pct"]):.1f}" r="4" fill="#d73a49"/>')
        parts.append(f'<text x="{cx - 30}" y="{height - 8}" font-size="10">{o.ab["effect_pct"]:+.1f}% CI</text>')
    parts.append("</svg>")
    return "".join(parts)


def to_html(rec: SessionRecord) -> str:
    md = markdown(rec)
    body: list[str] = []
    in_table = False
    plots = {o.id: svg_plot(o) for o in rec.options.values()}
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip("|"))]
            if set("".join(cells)) <= {"-"}:
                continue
            if not in_table:
                body.append("<table>")
                in_table = True
                body.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in cells) + "</tr>")
            else:
                body.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        if line.startswith("### "):
            body.append(f"<h3>{_inline(line[4:])}</h3>")
            option_id = int(line[5:].split()[0]) if line[5:].split()[0].isdigit() else None
            if option_id is not None and plots.get(option_id):
                body.append(f'<div class="plot">{plots[option_id]}</div>')
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
        elif line.startswith("- "):
            body.append(f"<p class='item'>• {_inline(line[2:])}</p>")
        elif line.startswith("> "):
            body.append(f"<blockquote>{_inline(line[2:])}</blockquote>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
    if in_table:
        body.append("</table>")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
        "blockquote{color:#555;border-left:3px solid #ccc;margin:0 0 0 1em;padding-left:.5em;white-space:pre-wrap}"
        "p.item{margin:.2em 0}.plot{margin:.5em 0}"
    )
    title = html.escape(f"signoff session {rec.session}")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{style}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _inline(text: str) -> str:
    """Escape, then the two Markdown marks the report uses: **bold** and `code`."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def export(journal: Path, target: Path) -> None:
    rec = collect(journal)
    if target.suffix.lower() in (".html", ".htm"):
        target.write_text(printable(to_html(rec), max_line=None))  # read with `cat` as often as in a browser
    elif target.suffix.lower() == ".md":
        target.write_text(printable(markdown(rec), max_line=None))
    else:
        raise ValueError(f"{target.name}: export to .md or .html")
