"""A session's report for an auditor, from its journal alone: Markdown, or one self-contained HTML file
with an inline SVG plot per option (no scripts, no external files; readable without signoff).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.journal import events as ev
from agent.journal.chain import read_events
from agent.journal.events.option import rollback_verdict
from agent.journal.view import OptionView, SessionView, fold
from agent.report import svg
from agent.report.console import abandoned_line, pct
from agent.report.figures import Effect, NoiseFigure, effect_of, noise_figure, other_figures, plain
from tools.sweep import SweepSummary
from tools.terminal import printable


def collect(journal: Path) -> SessionView:
    return fold(read_events(journal))


def _who(by: str | None) -> str:
    return by or "—"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 120:
        return f"{seconds}s"
    minutes, s = divmod(seconds, 60)
    return f"{minutes}m {s:02d}s" if minutes < 120 else f"{minutes // 60}h {minutes % 60:02d}m"


# ---------------------------------------------------------------------- Markdown


def _goal_lines(c: ev.GoalConfirmedEvent | None) -> list[str]:
    """The goal as the end-of-campaign A/B measured it (or why it was not)."""
    if c is None:
        return []
    if c.summary:
        lines = [f"- goal, final configuration against the start: {c.summary}"]
    else:
        lines = [f"- goal not measured ({c.skipped or c.error}): the gain above is an estimate from the single gains"]
    lines += [f"  - {i.get('words')}" for i in c.interactions if isinstance(i, dict)]
    if c.summary and c.error:
        lines.append(f"  - {c.error}")
    return lines


def markdown(view: SessionView) -> str:
    s = view.started_event or ev.SessionStartedEvent()
    status = view.ended.status if view.ended is not None and view.ended.status else view.status
    out = [
        f"# signoff session {view.session}",
        "",
        f"- campaign: **{s.campaign_name or '?'}** (`{(s.campaign_sha256 or '')[:12]}`)",
        f"- policy: **{s.policy_name or '?'}** (`{(s.policy_sha256 or '')[:12]}`)",
        f"- brain: {s.brain or '?'} · started {view.started_ts or '?'} by {s.user or '?'}",
        f"- status: {status if view.ended is not None else f'not finished ({status})'} · {view.events} journal events",
    ]
    if view.abandoned is not None:
        out.append(f"- {abandoned_line(view.abandoned.fields())} (at {view.abandoned_at})")
    if view.fallback_steps:
        out.append(f"- the model was not used for {len(view.fallback_steps)} step(s); the rule brain decided them:")
        out += [f"  - {_cell(step)}" for step in view.fallback_steps]
    if view.report is not None and view.report.estimated_gain_pct is not None:
        out.append(f"- estimated gain of what was kept: {pct(view.report.estimated_gain_pct)}")
    out += _goal_lines(view.confirmation)
    cal = _fields(view.calibration)
    if isinstance(cal.get("sd_pct"), int | float) and isinstance(cal.get("noise_floor_pct"), int | float):
        out.append(
            f"- A/A calibration before any change: noise ±{cal['sd_pct']:.1f}% (sd of {cal.get('pairs')} paired "
            f"differences, log scale), so at {cal.get('at_pairs')} pairs effects under ±{cal['noise_floor_pct']:.1f}% "
            "cannot be told from it; each option's own noise is in its section"
        )
    if view.started is not None:
        waited = view.wall_s - view.run_s
        out.append(
            f"- wall time: {_duration(view.wall_s)} from the first event to the last"
            + (f" ({_duration(view.run_s)} running, {_duration(waited)} paused at gates)" if waited >= 1 else "")
        )
    if view.llm_calls:
        out.append(f"- model calls: {view.llm_calls}, ${view.llm_usd:.4f}")
    out += ["", "## Options", "", "| option | outcome | gain | 95% CI | safety |", "|---|---|---|---|---|"]
    for o in sorted(view.options.values(), key=lambda o: o.id):
        ab = o.ab
        ci = (
            f"[{ab.ci_low:+.1f}, {ab.ci_high:+.1f}]" if ab and ab.ci_low is not None and ab.ci_high is not None else "—"
        )
        gain = pct(ab.effect_pct) if ab else "—"
        safety = (o.assessment.verdict if o.assessment else None) or "—"
        out.append(f"| #{o.id} {_cell(o.title)} | **{o.outcome}** | {gain} | {ci} | {safety} |")
    for o in sorted(view.options.values(), key=lambda o: o.id):
        out += ["", f"### #{o.id} {o.title} — {o.outcome}", ""]
        out += _evidence(o, *figures(view, o))
    out += ["", "## Decisions", "", "| gate | kind | option | answer | decided by | text typed | waited |"]
    out.append("|---|---|---|---|---|---|---|")
    for g in view.gates:
        wait = f"{g.waited_s:.1f}s" if g.waited_s is not None else "—"
        opt = f"#{g.option}" if g.option is not None else "—"
        action = g.action or "(open)"
        out.append(f"| {g.gate} | {g.kind} | {opt} | **{action}** | {_who(g.by)} | {_cell(g.raw or '')} | {wait} |")
    for g in view.gates:
        facts = ", ".join(f"{k}={v}" for k, v in g.facts.items())
        out += ["", f"**{g.gate} ({g.kind})** — facts shown: {facts}", "", "> " + g.question.replace("\n", "\n> ")]
    deferred = view.report.deferred if view.report is not None else []
    if deferred:
        out += ["", "## Deferred", "", *[f"- #{d}" for d in deferred]]
    return "\n".join(out) + "\n"


def _fields(event: ev.Event | None) -> dict[str, Any]:
    """An event's fields, declared and extra (an old journal's line may lack some)."""
    return event.model_dump() if event is not None else {}


def figures(view: SessionView, o: OptionView) -> tuple[Effect | None, NoiseFigure | None]:
    """The option's one effect size and one noise figure, from its A/B as journaled."""
    ab = _fields(o.ab) or None
    return effect_of(ab, var=o.sweep.var if o.sweep else None), noise_figure(ab, _fields(view.calibration) or None)


def _evidence(o: OptionView, effect: Effect | None = None, noise: NoiseFigure | None = None) -> list[str]:
    """An option's evidence, each fact once: its one effect and one noise figure, then what the finding,
    the A/B, the stress runs and the rollback said (without the figures of their own the two stand for:
    `figures.plain`); a reason is left out when its text was already shown."""
    out: list[str] = []
    shown: list[str] = []

    def say(line: str, *, facts: tuple[str, ...] = ()) -> None:
        out.append(line)
        shown.extend(f for f in (plain(f) for f in facts) if f)

    if effect is not None:
        say(f"- {effect.line()}")
    elif o.ab is not None:
        say(f"- A/B: {plain(o.ab.summary or '')}", facts=(o.ab.summary or "",))
    if noise is not None:
        say(f"- {noise.line()}")
    if o.finding is not None:
        lines = sorted({f"blocker: {b}" for b in o.finding.blockers} | {f"hazard: {h}" for h in o.finding.hazards})
        for line in lines:
            say(f"- {line}", facts=(line.split(": ", 1)[1],))
    if o.ab is not None:
        out += ["", "| pair | A (baseline) | B (option) |", "|---|---|---|"]
        out += [f"| {pair} | {_num(a)} | {_num(b)} |" for pair, a, b in o.pairs()]
        out.append("")
    out += _sweep_lines(o)
    for st in o.stress:
        say(
            f"- stress {st.scenario} run {st.run}: **{st.outcome}** — {plain(st.evidence or '')}",
            facts=(st.evidence or "",),
        )
    if o.assessment is not None and o.assessment.get("rationale"):
        say(f"- assessor: {o.assessment.get('rationale')}", facts=(str(o.assessment.get("rationale")),))
    if o.rollback is not None:
        verified = rollback_verdict(o.rollback.verified, o.rollback.verified_by)
        say(f"- rollback {verified}: {plain(o.rollback.detail or '')}", facts=(o.rollback.detail or "",))
    for reason in filter(None, map(plain, o.reasons)):
        rest = reason
        for fact in shown:
            rest = rest.replace(fact, "") if fact else rest
        if rest == reason:
            say(f"- {reason}", facts=(reason,))
            continue
        # What is left once the facts shown above are cut is said only when it adds something: "kept by
        # human:root" or "WEDGE in 1 of 3 runs" do, a bare "rollback verified" heading does not.
        rest = rest.strip().rstrip(":—-;,( ").strip()
        if rest and not any(line.startswith(f"- {rest}") for line in out):
            say(f"- {rest} (evidence above)")
    return out


def sweep_of(o: OptionView) -> SweepSummary | None:
    """The option's sweep as the journal has it, or None (no sweep, or a line that does not read as one:
    the report is made from a file anyone could have edited, and says nothing rather than something wrong)."""
    if o.sweep is None:
        return None
    try:
        return SweepSummary.model_validate(o.sweep.fields())
    except ValidationError:
        return None


def search_brackets(sweep: SweepSummary) -> list[tuple[str, str, str]]:
    """Each arm's capacity search, as (whose, "6 probes, not met from 72", "closed" or "open: …"); a search
    entry that is not a mapping (an edited journal) is left out."""
    out = []
    for arm, found in (sweep.search or {}).items():
        if isinstance(found, dict):
            failing = found.get("failing")
            bracket = f", not met from {failing:g}" if isinstance(failing, int | float) else ""
            closed = "closed" if found.get("closed") else "open: more probes would narrow it"
            out.append(("baseline" if arm == "A" else "option", f"{found.get('probes', 0)} probes{bracket}", closed))
    return out


def _sweep_lines(o: OptionView) -> list[str]:
    sweep = sweep_of(o)
    if sweep is None:
        return []
    var = _cell(sweep.var)
    slo = f" within {_cell(' and '.join(sweep.slo))}" if sweep.slo else ""
    out = [
        "",
        f"Load sweep over `{var}` — judged at {var}={sweep.level:g}:",
        "",
        f"| {var} | verdict | gain | 95% CI | pairs | baseline | option | SLO baseline | SLO option | goodput baseline "
        "| goodput option |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for lv in sweep.levels:
        a, b = lv.arms.get("A"), lv.arms.get("B")
        ci = f"[{lv.ci[0]:+.1f}, {lv.ci[1]:+.1f}]" if lv.ci and len(lv.ci) == 2 else "—"
        mark = " ◀" if lv.level == sweep.level else ""
        out.append(
            f"| {lv.level:g}{mark} | {lv.verdict}{' (broken)' if lv.broken else ''} | {pct(lv.effect_pct)} | {ci} "
            f"| {lv.pairs} | {_num(a.mean if a else None)} | {_num(b.mean if b else None)} "
            f"| {(a.slo if a else None) or '—'} | {(b.slo if b else None) or '—'} "
            f"| {_num(a.goodput if a else None)} | {_num(b.goodput if b else None)} |"
        )
    out.append("")
    if sweep.slo:
        caps = {arm: (f"{c:g}" if c is not None else "none") for arm, c in sweep.capacity.items()}
        gain = f" ({pct(sweep.capacity_gain_pct)})" if sweep.capacity_gain_pct is not None else ""
        source = "bounded search" if sweep.capacity_source == "search" else "swept levels"
        out.append(
            f"- capacity{slo} ({source}): baseline {caps.get('A', 'none')}, option {caps.get('B', 'none')}{gain}"
        )
        for who, probes, closed in search_brackets(sweep):
            out.append(f"  - search, {who}: {probes}; bracket {closed}")
    for arm, fit in sweep.fit.items():
        who = "baseline" if arm == "A" else "option"
        if "slope" in fit and "intercept" in fit:
            try:
                a_lo, a_hi = fit["intercept_ci"]
                b_lo, b_hi = fit["slope_ci"]
                out.append(
                    f"- step time, {who}: {_cell(str(fit.get('metric')))} = {float(fit['intercept']):.2f} ms "
                    f"(95% CI {float(a_lo):.2f}…{float(a_hi):.2f}) + {float(fit['slope']):.4f} ms × {var} "
                    f"(95% CI {float(b_lo):.4f}…{float(b_hi):.4f}), {fit.get('points')} runs over "
                    f"{fit.get('levels')} levels, R² {float(fit.get('r2', 0.0)):.3f}"
                )
            except (TypeError, ValueError, KeyError):
                continue
        elif "reason" in fit:
            out.append(f"- step time, {who}: not fitted — {_cell(str(fit['reason']))}")
    out += [f"- {_cell(r)}" for r in sweep.reasons]
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


# ---------------------------------------------------------------------- HTML


def gain_scale(view: SessionView) -> svg.GainScale:
    """The one % scale every option's gain is drawn on in this report (with 0, the goal and the noise)."""
    spans: list[tuple[float, float]] = []
    for o in view.options.values():
        effect, noise = figures(view, o)
        if effect is None:
            continue
        spans.append((effect.pct, effect.pct))
        if effect.ci is not None:
            spans.append((effect.ci[0], effect.ci[1]))
        if noise is not None:
            spans.append((-noise.pct, noise.pct))
    return svg.GainScale.of(spans, view.goal_pct)


def svg_gains(view: SessionView) -> str:
    """Every option with an estimate, its gain and CI on the shared scale (the report's summary figure)."""
    rows = []
    for o in sorted(view.options.values(), key=lambda o: o.id):
        effect, noise = figures(view, o)
        if effect is not None:
            ci = (effect.ci[0], effect.ci[1]) if effect.ci is not None else None
            rows.append(svg.GainRow(f"#{o.id} {o.title}", effect.pct, ci, noise.pct if noise else None))
    return svg.gains(rows, gain_scale(view))


def svg_plot(o: OptionView, scale: svg.GainScale | None = None, view: SessionView | None = None) -> str:
    """Both arms per pair on one axis from 0, and the gain with its 95% CI on the scale all options share."""
    metric = (o.ab.metric if o.ab is not None and o.ab.metric else None) or "metric"
    pairs = "".join(svg.ab_pairs(o.pairs(), str(metric)))
    effect, noise = figures(view or SessionView(), o)
    bar = ""
    if effect is not None:
        ci = (effect.ci[0], effect.ci[1]) if effect.ci is not None else None
        scale = scale or svg.GainScale.of([(effect.pct, effect.pct), *([ci] if ci else [])])
        bar = "".join(svg.gain_bar(effect.pct, ci, noise.pct if noise else None, scale))
    return svg.side_by_side((430, 190, pairs), (170, 190, bar))


def svg_sweep(o: OptionView) -> str:
    """Goodput against load, both arms (the metric where the arm meets the SLOs, 0 where it fails; the plain
    mean without SLOs), as points at the measured levels, each arm's capacity as a dashed line — the knee —
    and the search's probes on labelled rows."""
    sweep = sweep_of(o)
    if sweep is None:
        return ""
    series: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    for lv in sweep.levels:
        for arm in ("A", "B"):
            cell = lv.arms.get(arm)
            if cell is None:
                continue
            value = cell.goodput if sweep.slo else cell.mean
            if value is not None and math.isfinite(value) and math.isfinite(lv.level):
                series[arm].append((lv.level, value))
    caps = {arm: c for arm, c in sweep.capacity.items() if arm in ("A", "B") and c is not None and math.isfinite(c)}
    probes = [(e.arm, float(e.level), e.judgement) for e in o.searches if isinstance(e.level, int | float)]
    probes = [(a, lv, j) for a, lv, j in probes if math.isfinite(lv)]
    metric = o.ab.metric if o.ab and o.ab.metric else "metric"
    what = f"goodput ({metric})" if sweep.slo else str(metric)
    return svg.sweep_points(series, caps, probes, var=sweep.var, what=what)


def to_html(rec: SessionView) -> str:
    md = markdown(rec)
    body: list[str] = []
    in_table = False
    scale = gain_scale(rec)
    plots = {o.id: svg_plot(o, scale, rec) for o in rec.options.values()}
    sweeps = {o.id: svg_sweep(o) for o in rec.options.values()}
    summary = svg_gains(rec)
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
            if option_id is not None and sweeps.get(option_id):
                body.append(f'<div class="plot sweep">{sweeps[option_id]}</div>')
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
            if line == "## Options" and summary:
                body.append(f'<div class="plot gains">{summary}</div>')
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


# ---------------------------------------------------------------------- JSON


def to_json(view: SessionView, verification: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report as data: what the Markdown says, option by option (its one effect and one noise figure,
    each labelled, and the texts as the report shows them), with the figures the summary leaves out under
    `other_figures`, each named."""
    s = view.started_event or ev.SessionStartedEvent()
    status = view.ended.status if view.ended is not None and view.ended.status else view.status
    calibration = _fields(view.calibration) or None
    options = []
    for o in sorted(view.options.values(), key=lambda o: o.id):
        effect, noise = figures(view, o)
        options.append(
            {
                "id": o.id,
                "title": o.title,
                "outcome": o.outcome,
                "safety": o.assessment.verdict if o.assessment else None,
                "ab_verdict": o.ab.verdict if o.ab else None,
                "effect": effect.model_dump(mode="json") | {"line": effect.line()} if effect else None,
                "noise": noise.model_dump(mode="json") | {"line": noise.line()} if noise else None,
                "other_figures": other_figures(_fields(o.ab), calibration, _fields(o.rollback)),
                "pairs": [{"pair": p, "a": a, "b": b} for p, a, b in o.pairs()] if o.ab is not None else [],
                "blockers": list(o.finding.blockers) if o.finding else [],
                "hazards": list(o.finding.hazards) if o.finding else [],
                "stress": [_stress_run(st) for st in o.stress],
                "rollback": {"verified": o.rollback.verified, "detail": plain(o.rollback.detail or "")}
                if o.rollback is not None
                else None,
                "reasons": [r for r in map(plain, o.reasons) if r],
            }
        )
    return {
        "session": view.session,
        "campaign": {"name": s.campaign_name, "sha256": s.campaign_sha256},
        "policy": {"name": s.policy_name, "sha256": s.policy_sha256},
        "brain": s.brain,
        "started": view.started_ts or None,
        "user": s.user,
        "status": status,
        "finished": view.ended is not None,
        **(
            {
                "abandoned": {
                    **view.abandoned.fields(),
                    "at": view.abandoned_at,
                    "words": abandoned_line(view.abandoned.fields()),
                }
            }
            if view.abandoned is not None
            else {}
        ),
        "events": view.events,
        "wall_s": round(view.wall_s, 3),
        "run_s": round(view.run_s, 3),
        "estimated_gain_pct": view.report.estimated_gain_pct if view.report is not None else None,
        "confirmation": _fields(view.confirmation) or None,
        "calibration": calibration,
        "options": options,
        "gates": [
            {
                "gate": g.gate,
                "kind": g.kind,
                "option": g.option,
                "action": g.action,
                "by": g.by,
                "raw": g.raw,
                "waited_s": g.waited_s,
                "facts": g.facts,
                "question": g.question,
            }
            for g in view.gates
        ],
        "verification": dict(verification) if verification is not None else None,
    }


def _stress_run(st: ev.StressResultEvent) -> dict[str, Any]:
    return {"scenario": st.scenario, "run": st.run, "outcome": st.outcome, "evidence": plain(st.evidence or "")}


# ---------------------------------------------------------------------- writing it

FORMATS = {"md": "md", "markdown": "md", "html": "html", "htm": "html", "json": "json"}


def format_for(target: Path | None, fmt: str | None = None) -> str:
    """md, html or json: `fmt` when given, else by the file's suffix (Markdown when printed). ValueError with
    one line when neither says."""
    if fmt is not None:
        if fmt.lower().lstrip(".") not in FORMATS:
            raise ValueError(f"--format {fmt!r}: md, html or json")
        return FORMATS[fmt.lower().lstrip(".")]
    if target is None:
        return "md"
    suffix = target.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"{target.name}: export to .md, .html or .json (or give --format)")
    return FORMATS[suffix]


def render(view: SessionView, fmt: str, verification: Mapping[str, Any] | None = None) -> str:
    """The report in one format, as text that is safe on a terminal (it is read with `cat` as often as in a
    browser): control characters from the journal shown as escapes, lines never cut."""
    if fmt == "html":
        text = to_html(view)
    elif fmt == "json":
        text = json.dumps(to_json(view, verification), indent=2, ensure_ascii=False) + "\n"
    else:
        text = markdown(view)
    return printable(text, max_line=None)


def write(target: Path, text: str) -> int:
    """Write the report whole or not at all (a reader never finds half of one); its size in bytes."""
    data = text.encode()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return len(data)


def export(journal: Path, target: Path, fmt: str | None = None) -> None:
    """`signoff replay --export`: the report of a journal, in the format its file's suffix names."""
    write(target, render(collect(journal), format_for(target, fmt)))
