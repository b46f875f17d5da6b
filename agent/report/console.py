"""Human-facing text for the CLI: live progress lines (stderr) and the final report / paused gate (stdout).

Untrusted strings (command output, reasons quoting it) go through `rich.text.Text` or `escape`, so
a host printing `[done]` or `[red]` cannot restyle or hide anything.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agent.journal.chain import Record
from agent.report.figures import Effect, NoiseFigure, plain
from tools.terminal import printable, safe_console


def pct(value: float | None) -> str:
    """A signed percentage as every report shows it: one decimal, "—" when there is none."""
    return "—" if value is None else f"{value:+.1f}%"


def progress_line(event: Record) -> str | None:
    """One line per event worth watching; None for events too fine-grained to print."""
    d = event.data
    k = event.kind
    opt = f"#{d['option']} " if d.get("option") is not None else ""
    if k == "session.started":
        return f"session {event.data.get('campaign_name')} · policy {d.get('policy_name')} ({d['policy_sha256'][:12]})"
    if k == "plan":
        return f"plan: {' → '.join('#' + str(o) for o in d['order'])}"
    if k == "subagent.started":
        return f"{event.actor}: investigating {opt}({d['probes']} probe(s))"
    if k == "finding":
        state = "NO-GO" if not d["feasible"] else ("hazard" if d["hazards"] else "clear")
        detail = "; ".join(d["blockers"] or d["hazards"])
        return f"{event.actor}: {opt}{state}" + (f" — {detail}" if detail else "")
    if k == "subagent.turn":
        said = f" — {d['said'][:80]}" if d.get("said") else ""
        return f"{event.actor}: turn {d['turn']} → {', '.join(d['tools']) or 'no tool'}{said}"
    if k == "permission.requested":
        return f"{event.actor}: asks to run `{d['command']}` on {d['host']} (not on the read-only list)"
    if k == "plan.reranked":
        return f"plan re-ranked with the findings: {' → '.join('#' + str(o) for o in d['after'])}"
    if k == "llm.retry":
        return f"{event.actor}: model call failed ({d['error']}); retry {d['attempt']} in {d['wait_s']:.1f}s"
    if k == "brain.fallback":
        step = d["step"]
        return f"{event.actor}: {step} falls back to the rule brain — {d['error']}"
    if k == "phase":
        extra = f" ({d['pairs']} pairs)" if "pairs" in d else ""
        return f"{opt}{d['phase']}{extra}" + (f": {d['title']}" if d.get("title") else "")
    if k == "bench.progress":
        return f"{opt}benchmark pair {d['pair']} of {d['of']}"
    if k == "bench.run" and not d["valid"]:
        return f"{opt}run {d['arm']}{d['pair']} not counted: {d['reason']}"
    if k == "bench.stopped":
        of = f" of at most {d['max_pairs']}" if d.get("max_pairs") else ""
        return f"{opt}A/B stopped after {d['pairs']}{of} pairs ({d['stopped_by']}): {d.get('reason')}"
    if k == "bench.extended":
        return f"{opt}inconclusive at {d['from_pairs']} pairs; extending to {d['to_pairs']}"
    if k == "rollback.settling":
        return f"{opt}rollback readings not back after {d['runs']} run(s); measuring on, up to {d['up_to']}"
    if k == "ab.result":
        return f"{opt}A/B: {d['summary']}"
    if k == "stress.result":
        return f"{opt}stress {d['scenario']} run {d['run']}: {d['outcome'].upper()} — {d['evidence']}"
    if k == "assessment":
        return f"{opt}assessment: {d['verdict']}, {d['ab_verdict']}, recommend {d['recommendation']}"
    if k == "command.finished" and (d.get("exit") != 0 or d.get("timed_out")):
        status = "TIMEOUT (killed)" if d.get("timed_out") else f"exit {d.get('exit')}"
        return f"{opt}{d['purpose']} on {d['host']}: {status} after {d['duration_s']:.2f}s"
    if k == "command.refused":
        return f"{opt}REFUSED by command policy ({d.get('klass')}): {d.get('command')}"
    if k == "gate.opened":
        return f"gate {d['gate']} ({d['gate_kind']}{' ' + opt.strip() if opt else ''}) opened"
    if k == "decision":
        dec = d.get("decision") or {}
        return f"gate {d['gate']}: {dec.get('action', 'ask').upper()} by {d.get('by')}" + (
            f" — {d['raw']!r}" if d.get("raw") else ""
        )
    if k == "rule.added":
        return f"session rule added: {d['rule']['id']} when {d['rule'].get('when')}"
    if k == "rollback":
        from agent.journal.events.option import rollback_verdict

        return f"{opt}rollback {rollback_verdict(bool(d['verified']), d.get('verified_by'))}: {d.get('detail')}"
    if k == "kept":
        return f"{opt}kept ({pct(d.get('gain_pct'))}) by {d.get('by')}"
    if k in ("setup.failed", "apply.failed", "bench.aborted"):
        return f"{opt}{k}: {d.get('error') or d.get('reason')}"
    if k == "notify.sent":
        return notify_line(d)
    return None


def abandoned_line(e: Mapping[str, Any]) -> str:
    """`signoff abandon` in words: who, the gate it left unanswered, what it rolls back and what stays."""
    roll = [o for o in e.get("roll_back") or [] if isinstance(o, int)]
    on = e.get("on_hosts")
    hosts: Mapping[str, Any] = on if isinstance(on, Mapping) else {}
    stays = sorted(
        {str(o) for states in hosts.values() if isinstance(states, Mapping) for o in states} - {str(o) for o in roll}
    )
    line = f"session abandoned by {e.get('by')}"
    if e.get("gate"):
        line += f" (gate {e['gate']} left unanswered)"
    verified = e.get("verified") if isinstance(e.get("verified"), Mapping) else None

    def said(o: int) -> str:
        if verified is None:
            return f"#{o}"
        ok = verified.get(str(o))
        return f"#{o} (" + {True: "verified", False: "NOT verified, taken as it was"}.get(ok, "not reached") + ")"

    line += ("; rolled back " if verified is not None else "; rolls back ") + (
        ", ".join(map(said, roll)) if roll else "nothing"
    )
    if stays:
        line += "; stays on the hosts (kept): " + ", ".join(f"#{o}" for o in stays)
    return line[:400]


def notify_line(d: Mapping[str, Any]) -> str:
    """One `notify.sent` event in one line (progress and the replay timeline)."""
    how = f"HTTP {d['status']}" if d.get("status") is not None else ""
    how = how or (f"exit {d['exit']}" if d.get("exit") is not None else "")
    took = f"{d['duration_s']:.2f}s" if isinstance(d.get("duration_s"), int | float) else "?"
    if d.get("ok"):
        return f"gate {d.get('gate')}: notified {d.get('target')} ({', '.join(x for x in (how, took) if x)})"
    return f"gate {d.get('gate')}: notify {d.get('target')} FAILED — {d.get('error') or how or 'failed'} ({took})"


class Progress:
    """Journal listener printing progress to stderr: styled on a terminal, plain otherwise."""

    def __init__(self, plain: bool | None = None) -> None:
        self.plain = not sys.stderr.isatty() if plain is None else plain
        self.console = safe_console(stderr=True, highlight=False)

    def __call__(self, event: Record) -> None:
        line = progress_line(event)
        if line is None:
            return
        if self.plain:
            print(f"[{event.ts[11:19]}] {printable(line)}", file=sys.stderr, flush=True)
        else:
            self.console.print(Text.assemble((f"{event.ts[11:19]} ", "dim"), line))


OUTCOME_STYLE = {
    "kept": "bold green",
    "skipped": "yellow",
    "no-go": "red",
    "deferred": "cyan",
    "untested": "dim",
}


def _decided_by(out: Any, option_id: int) -> str:
    bys = [g.get("by") or "—" for g in out.gates if g.get("option") == option_id and g["kind"] == "safety"]
    if bys:
        return bys[-1]
    abandoned = out.abandoned or {}
    if abandoned and option_id in abandoned.get("roll_back", []):
        return str(abandoned.get("by"))  # rolled back by the person who gave the session up
    if abandoned and next((o["outcome"] for o in out.options if o["id"] == option_id), None) == "untested":
        return str(abandoned.get("by"))  # never tried: the abandon ended the run first
    triage = [g.get("by") for g in out.gates if g["kind"] == "triage"]
    return triage[-1] if triage else "—"


def option_figures(o: Mapping[str, Any]) -> tuple[Effect | None, NoiseFigure | None]:
    """An outcome option's one effect and one noise figure (None where it has none)."""
    effect = Effect.model_validate(o["effect"]) if o.get("effect") else None
    noise = NoiseFigure.model_validate(o["noise"]) if o.get("noise") else None
    return effect, noise


def _console(console: Console | None) -> Console:
    return console if console is not None else safe_console(highlight=False)


def print_report(out: Any, console: Console | None = None) -> None:
    console = _console(console)
    table = Table(title=f"signoff · session {out.session} · {out.status}", expand=False)
    for col in ("#", "option", "outcome", "gain (95% CI)", "safety", "decided by"):
        table.add_column(col, overflow="fold")
    for o in out.options:
        gain = "—"
        if o.get("gain_pct") is not None:
            gain = pct(o["gain_pct"]) + (f" [{o['ci'][0]:+.1f}, {o['ci'][1]:+.1f}]" if o.get("ci") else "")
        table.add_row(
            str(o["id"]),
            Text(o["title"]),
            Text(o["outcome"], style=OUTCOME_STYLE.get(o["outcome"], "")),
            gain,
            o.get("verdict") or "—",
            Text(_decided_by(out, o["id"])),
        )
    console.print(table)
    if out.abandoned:
        console.print(Text(abandoned_line(out.abandoned), style="bold yellow"))
    goal = out.goal or {}
    if goal.get("measured"):
        style = {"met": "bold green", "not met": "bold red"}.get(goal["verdict"], "bold yellow")
        console.print(Text(f"goal: {goal['text']} — final configuration against the start: {goal['summary']}", style))
        for words in goal.get("interactions", []):
            console.print(Text(f"  {words}"))
    elif goal.get("estimated_pct") is not None:
        target = (
            f" (target {goal['target_pct']:+g}%: {'met' if goal['met'] else 'not met'})"
            if goal.get("target_pct") is not None
            else ""
        )
        console.print(
            Text(
                f"goal: {goal['text']} — kept changes estimate {goal['estimated_pct']:+.1f}% {goal['metric']}{target}",
                style="bold",
            )
        )
        if goal.get("not_measured"):
            console.print(f"  an estimate from the single gains, not measured: {goal['not_measured']}")
    cal = out.calibration or {}
    if cal.get("sd_pct") is not None:
        # The session's A/A calibration, before any change; each option below has its own noise figure.
        console.print(
            f"A/A calibration before any change: noise ±{cal['sd_pct']:.1f}% (sd of {cal['pairs']} paired "
            f"differences, log scale), so at {cal['at_pairs']} pairs effects under ±{cal['noise_floor_pct']:.1f}% "
            "cannot be told from it"
        )
        if cal.get("warning"):
            console.print(Text(f"  warning: {cal['warning']}", style="yellow"))
        for oid, c in cal.get("options", {}).items():
            if c["below_noise_floor"]:
                console.print(
                    f"  #{oid}: hoped-for {c['expected_pct']:+g}% is below that floor; it would take about "
                    f"{c['pairs_needed'] or 'unbounded'} pairs"
                )
    for o in out.options:
        effect, noise = option_figures(o)
        reasons = [r for r in (plain(r) for r in o["reasons"]) if r]
        if not reasons and effect is None and noise is None:
            continue
        console.print(
            Text.assemble((f"#{o['id']} {o['outcome']}", OUTCOME_STYLE.get(o["outcome"], "")), f" — {o['title']}")
        )
        for figure in (effect, noise):
            if figure is not None:
                console.print(Text(f"  {figure.line()}"))
        for reason in reasons:
            console.print(Text(f"  • {reason}"))
    if out.session_rules:
        console.print("session rules (given by people during the run):")
        for r in out.session_rules:
            d = r["decision"]
            console.print(
                Text(
                    f"  {r['id']}: {d['action'].upper()}"
                    + (f" {', '.join('#' + str(t) for t in r.get('targets') or [])}" if r.get("targets") else "")
                    + (f" IF {r['when']}" if r.get("when") else "")
                    + f" [{d.get('scope', 'once')}] — "
                    + f"{d.get('raw') or ''!r} by {d.get('by')}"
                )
            )
    deferred = [o for o in out.options if o["outcome"] == "deferred"]
    if deferred:
        ids = ", ".join(f"#{o['id']}" for o in deferred)
        console.print(f"deferred for now: {ids} — reopen with `signoff resume {out.session} --revisit`")
    if out.gates:
        gates = Table(title="gates and who decided", expand=False)
        for col in ("gate", "option", "answer", "decided by", "text typed"):
            gates.add_column(col, overflow="fold")
        for g in out.gates:
            gates.add_row(
                g["kind"],
                f"#{g['option']}" if g.get("option") else "—",
                g["action"],
                Text(g.get("by") or "—"),
                Text(g.get("raw") or ""),
            )
        console.print(gates)
    if out.error:
        console.print(f"[bold red]error:[/] {escape(out.error)}")
    if out.brain and (out.brain["calls"] or str(out.brain["name"]).startswith("claude")):
        b = out.brain
        extra = "".join(
            f" · {b[k]} {label}" for k, label in (("retries", "retries"), ("fallbacks", "fallbacks to rules")) if b[k]
        )
        console.print(
            f"brain: {escape(b['name'])} · {b['calls']} model calls · {b['input_tokens'] + b['cache_read_tokens']:,} "
            f"tokens in ({b['cache_read_tokens']:,} from cache), {b['output_tokens']:,} out"
            f" · ${b['cost_usd']:.4f}{extra}"
        )
        if b.get("fell_back"):  # a Claude run the rules partly decided must say so where the result is read
            steps = b["fell_back"]
            console.print(
                Text(
                    f"the model was not used for {len(steps)} step(s); the rule brain decided them: "
                    + "; ".join(steps[:5])
                    + (f"; … {len(steps) - 5} more in the journal (brain.fallback)" if len(steps) > 5 else ""),
                    style="bold yellow",
                )
            )
    console.print(f"journal: {escape(out.journal)}")


def print_paused(out: Any, console: Console | None = None) -> None:
    console = _console(console)
    g = out.pending_gate or {}
    console.print(
        f"[bold yellow]PAUSED[/] at gate {g.get('id')} ({g.get('kind')}"
        + (f", option #{g['option']}" if g.get("option") else "")
        + ")"
    )
    console.print(Text(g.get("question") or ""))
    facts = Table(show_header=False, box=None)
    for name, value in (g.get("facts") or {}).items():
        facts.add_row(Text(name, style="dim"), Text(str(value)))
    console.print(facts)
    rec = g.get("recommendation") or {}
    if rec:
        console.print(f"policy: {escape(rec.get('action', 'ask'))} ({escape(str(rec.get('by')))})")
    console.print(f"answers: {', '.join(a for a in g.get('allowed', []) if a != 'ask')}")
    if g.get("deadline"):
        dl = g["deadline"]
        console.print(f"deadline: {escape(dl['at'])} — then {escape(dl['on_deadline'])} (applied by `signoff resume`)")
    if out.echo:
        console.print(Text(out.echo, style="italic"))
    example = g.get("suggested") or "continue"
    # --gate: should someone else answer this gate first, the line is refused, not taken for the next gate.
    to = f'signoff decide {out.session} --gate {g.get("id")} "{example}"'
    console.print(f"\nto answer: [bold]{escape(to)}[/] (or any one-line decision)")


def summary_json(out: Any) -> dict[str, Any]:
    data = out.model_dump(mode="json")
    for extension in ("echo", "abandoned"):  # present only when they say something
        if data.get(extension) is None:
            data.pop(extension, None)
    return data
