"""The commands that read sessions without running them: `replay` (a session's journal as a timeline, its
verification, a counterfactual under another policy, an auditor's report, the read-only screen), `report`
(the auditor's report of a session whose journal verifies) and `sessions` (a store's sessions; `--compact`
prunes a closed one's checkpoints).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.shared import (
    JsonOpt,
    StoreOpt,
    fail,
    find,
    newest_first,
    screens,
    store_at,
    terminal,
    waits_for_decision,
)
from agent.errors import BAD_INPUT, FAIL_ON_MATCHED, FAILED


def replay(
    session: Annotated[str, typer.Argument(help="Session id.")],
    check: Annotated[
        bool, typer.Option("--verify", help="Check the hash chain, the head, and re-derive every policy decision.")
    ] = False,
    kind: Annotated[str | None, typer.Option("--kind", help="Only events whose kind starts with this.")] = None,
    option: Annotated[int | None, typer.Option("--option", help="Only events about this option.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only events at or after this time: ISO 8601, or an age like 30m, 2h.")
    ] = None,
    other_policy: Annotated[
        str | None,
        typer.Option("--policy", help="Re-decide every recorded gate under this policy (a preset name or a file)."),
    ] = None,
    fail_on_diff: Annotated[
        bool, typer.Option("--fail-on-diff", help="With --policy: exit 4 if any gate would be decided differently.")
    ] = False,
    key: Annotated[
        Path | None,
        typer.Option("--key", help="With --verify: the Ed25519 public key the head must be signed with."),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option("--export", help="Write an auditor's report: REPORT.md, or REPORT.html (self-contained)."),
    ] = None,
    as_json: JsonOpt = False,
    tui: Annotated[bool, typer.Option("--tui", help="Open the read-only replay screen: step, jump, inspect.")] = False,
    store: StoreOpt = None,
) -> None:
    """Read a session back from its journal (no host is touched, no gate can be answered)."""
    d = find(session, store)
    try:
        # Every reader below works on a file journal: the local store's own, or the team store's
        # session exported (lines, head and artifacts) to a scratch directory — the same check either way.
        with d.journal_file() as journal:
            _replay(d, journal, check, kind, option, since, other_policy, fail_on_diff, key, export, as_json, tui)
    finally:
        d.close()


def _replay(
    d: Any,
    journal: Path,
    check: bool,
    kind: str | None,
    option: int | None,
    since: str | None,
    other_policy: str | None,
    fail_on_diff: bool,
    key: Path | None,
    export: Path | None,
    as_json: bool,
    tui: bool,
) -> None:
    from agent.journal.events import entry
    from agent.journal.head import load_public_key
    from agent.journal.view import SessionView
    from agent.report.replay import describe, events, select, verify_session

    if export is not None:
        from agent.report.audit import export as write_report

        try:
            write_report(journal, export)
        except (ValueError, OSError) as exc:
            raise fail(str(exc), BAD_INPUT) from None
        typer.echo(f"wrote {export}")
        return
    if other_policy is not None:
        _counterfactual(d, journal, other_policy, as_json=as_json, fail_on_diff=fail_on_diff)
        return
    if fail_on_diff:
        raise fail("--fail-on-diff needs --policy OTHER", BAD_INPUT)
    if tui:
        ui = screens()
        if ui is None or not terminal():
            raise fail("--tui needs a terminal (stdin and stdout); without it, use the timeline or --json", BAD_INPUT)
        ui.replay(d)
        return
    if check:
        try:
            pinned = load_public_key(key) if key is not None else None
        except (OSError, ValueError) as exc:
            raise fail(f"--key {key}: {exc}", BAD_INPUT) from None
        from agent.journal.documents import DOCUMENTS

        documents = {name: d.read(name) for name in DOCUMENTS}
        verdict = verify_session(journal, key=pinned, documents=documents, meta=d.meta())
        typer.echo(verdict.model_dump_json() if as_json else verdict.line())
        raise typer.Exit(0 if verdict.ok else FAILED)
    try:
        cutoff = _since(since) if since else None
    except ValueError as exc:
        raise fail(str(exc), BAD_INPUT) from None
    everything = events(journal)
    chosen = select(everything, kind=kind, option=option, since=cutoff)
    if as_json:
        typer.echo(json.dumps(chosen, indent=2))
        return
    from rich.text import Text

    from tools.terminal import safe_console

    console = safe_console(highlight=False, soft_wrap=True)
    shown = {id(e) for e in chosen}
    view = SessionView()
    for e in everything:  # the whole journal folds; the filters pick what is printed
        view.apply(entry(e))
        if id(e) not in shown:
            continue
        line = describe(e, view)
        if line is not None:
            text = Text(f"{e['seq']:>5} {e['ts'][11:23]} ", style="dim")
            text.append(line, style=TIMELINE_STYLE.get(e["kind"], ""))
            console.print(text)


def report(
    session: Annotated[str, typer.Argument(help="Session id.")],
    target: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE", help="Write the report here: REPORT.md, REPORT.html or REPORT.json. Without it, print it."
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="md, html or json (default: by FILE's suffix; Markdown when printed)."),
    ] = None,
    key: Annotated[
        Path | None, typer.Option("--key", help="The Ed25519 public key the journal's head must be signed with.")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON summary object on stdout (where the report went, each option's figures)."
        ),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Write or print a session's report (what `replay --export` writes): each option's outcome, its one
    effect size and one noise figure with what each is, the evidence and who decided every gate. The journal
    is verified first, as `replay --verify` does; one that fails gets no report (exit 5)."""
    from agent.errors import JournalUnverified
    from agent.journal.documents import DOCUMENTS
    from agent.journal.head import load_public_key
    from agent.report.audit import collect, format_for, render, to_json, write
    from agent.report.replay import verify_session

    try:
        kind = format_for(target, fmt)
    except ValueError as exc:
        raise fail(str(exc), BAD_INPUT) from None
    try:
        pinned = load_public_key(key) if key is not None else None
    except (OSError, ValueError) as exc:
        raise fail(f"--key {key}: {exc}", BAD_INPUT) from None
    d = find(session, store)
    try:
        with d.journal_file() as journal:
            verdict = verify_session(
                journal, key=pinned, documents={name: d.read(name) for name in DOCUMENTS}, meta=d.meta()
            )
            if not verdict.ok:
                raise JournalUnverified(
                    d.id, f"its journal does not verify: {verdict.line()}", undone="no report was made"
                )
            view = collect(journal)
    finally:
        d.close()
    checked = verdict.model_dump(mode="json")
    text = render(view, kind, checked)
    written = None
    if target is not None:
        try:
            written = write(target, text)
        except OSError as exc:
            raise fail(f"{target}: {exc.strerror or exc}", BAD_INPUT) from None
    if as_json:
        data = to_json(view)
        summary = {
            "session": d.id,
            "status": data["status"],
            "format": kind,
            "path": str(target) if target is not None else None,
            "bytes": written if written is not None else len(text.encode()),
            "verification": checked,
            "options": [{k: o[k] for k in ("id", "title", "outcome", "effect", "noise")} for o in data["options"]],
        }
        typer.echo(json.dumps(summary, indent=2))
    elif target is None:
        typer.echo(text, nl=False)
    else:
        typer.echo(f"wrote {target} ({kind}; journal verified: {verdict.line()})")


TIMELINE_STYLE = {
    "gate.opened": "bold",
    "decision": "bold cyan",
    "finding": "yellow",
    "ab.result": "green",
    "stress.result": "magenta",
    "rollback": "yellow",
    "kept": "bold green",
    "command.finished": "dim",
}


def _since(text: str) -> str:
    """An ISO time or an age ("30m") → the journal's timestamp format, for comparing as text."""
    from datetime import UTC, datetime, timedelta

    from policies.schema import parse_duration

    try:
        when = datetime.now(UTC) - timedelta(seconds=parse_duration(text))
    except ValueError:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"--since {text!r}: use an ISO time (2026-12-02T10:00) or an age (45s, 30m, 2h, 1d)"
            ) from None
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _counterfactual(d: Any, journal: Path, ref: str, *, as_json: bool, fail_on_diff: bool) -> None:
    from rich.table import Table

    from agent.report.replay import counterfactual
    from policies.load import load_policy
    from tools.terminal import safe_console

    try:
        policy = load_policy(ref)
    except FileNotFoundError as exc:
        raise fail(str(exc), BAD_INPUT) from None
    cf = counterfactual(journal, policy)
    if as_json:
        typer.echo(json.dumps({**cf.model_dump(mode="json"), "disagreements": cf.disagreements}, indent=2))
    else:
        console = safe_console(highlight=False)
        table = Table(title=f"gates of {d.id} re-decided under {policy.name} ({policy.sha256[:12]})")
        for col in ("gate", "kind", "option", "recorded", "decided by", f"under {policy.name}", "rule", ""):
            table.add_column(col)
        for g in cf.gates:
            mark = "agree" if g.agree else "[bold red]DIFFERS[/]"
            if g.after_divergence:
                mark += " [dim](given what actually happened)[/]"
            table.add_row(
                g.gate, g.kind, f"#{g.option}" if g.option else "—", g.actual, g.actual_by or "—", g.would,
                g.would_rule or "—", mark,
            )  # fmt: skip
        console.print(table)
        confusion = Table(title="recorded → would be")
        wanted = sorted({w for row in cf.confusion.values() for w in row})
        confusion.add_column("recorded \\ would")
        for w in wanted:
            confusion.add_column(w, justify="right")
        for actual, row in sorted(cf.confusion.items()):
            confusion.add_row(actual, *[str(row.get(w, "")) for w in wanted])
        console.print(confusion)
        first = f"first divergence at gate {cf.first_divergence}" if cf.first_divergence else "no divergence"
        console.print(f"{cf.disagreements} of {len(cf.gates)} gates would be decided differently; {first}")
    if fail_on_diff and cf.disagreements:
        raise typer.Exit(FAIL_ON_MATCHED)


def sessions(
    as_json: JsonOpt = False,
    compact: Annotated[
        str | None,
        typer.Option("--compact", help="Prune a closed session's graph checkpoints; its journal and artifacts stay."),
    ] = None,
    store: StoreOpt = None,
    paused: Annotated[
        bool, typer.Option("--paused", help="Only sessions waiting for a decision (paused, or a runner waiting).")
    ] = False,
    last: Annotated[int | None, typer.Option("--last", min=1, help="Only the N newest (after --paused).")] = None,
) -> None:
    """List the sessions of a store (default: the local one under $SIGNOFF_HOME, ./.signoff), newest first:
    owner, status (paused at which gate), campaign, start, duration and outcome counts."""
    if compact is not None:
        from agent.run.compact import compact as compact_session

        d = find(compact, store)
        try:
            with d.locked():
                before, after = compact_session(d)
        finally:
            d.close()
        typer.echo(
            f"compacted {d.id}: checkpoints {before / 1e6:.2f} MB → {after / 1e6:.2f} MB; the journal, its head "
            "and the artifacts are kept (replay and --verify work; resume --revisit no longer does)"
        )
        return
    rows = newest_first(store_at(store).list_sessions())
    if paused:
        rows = [r for r in rows if waits_for_decision(r)]
    if last is not None:
        rows = rows[:last]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no session waits for a decision" if paused else "no sessions yet; try `signoff demo`")
        return
    for r in rows:
        status = r["status"]
        if status == "paused" and r.get("waiting_at"):
            w = r["waiting_at"]
            status = f"paused at {w['gate']} ({w['kind']}{' #' + str(w['option']) if w.get('option') else ''})"
        if r.get("runner"):
            status += f" [{r['runner']}]"
        counts = ", ".join(f"{n} {k}" for k, n in sorted(r.get("outcomes", {}).items()))
        took = f"{r['duration_s']:.0f}s" if r.get("duration_s") is not None else "—"
        extra = (f"  [{counts}]" if counts else "") + ("  (compacted)" if r.get("compacted") else "")
        typer.echo(
            f"{r['id']}  {status:<28} {r['campaign_name']}  policy={r['policy_name']}  by {r.get('owner') or '?'}"
            f"  started {r.get('created') or '?'}  took {took}{extra}"
        )
