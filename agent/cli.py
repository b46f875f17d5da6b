"""`signoff` — the command line. Exit codes: 0 finished, 3 paused at a gate that needs a person,
2 bad input, 1 failed. `--json` prints one summary object on stdout (progress goes to stderr).

Heavy imports (LangGraph, the session machinery) happen inside commands, so `signoff --help`
stays fast.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer

from agent.errors import BAD_INPUT, FAIL_ON_MATCHED, FAILED, INTERRUPTED, exit_code

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Autonomous agent-workflow orchestrator with human checkpoints.",
)
decision_app = typer.Typer(no_args_is_help=True, help="Work with one-line decisions.")
policy_app = typer.Typer(no_args_is_help=True, help="Check, explain and improve policy files.")
store_app = typer.Typer(no_args_is_help=True, help="A shared PostgreSQL store for a team's sessions.")
app.add_typer(decision_app, name="decision")
app.add_typer(policy_app, name="policy")
app.add_typer(store_app, name="store")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON summary object on stdout.")]
PolicyOpt = Annotated[
    str, typer.Option("--policy", help="Policy file, or a preset name: cautious, autonomous, ask-everything.")
]
HeadlessOpt = Annotated[
    bool,
    typer.Option(
        "--headless",
        help="No TUI: the policy decides, `ask` pauses (exit 3). The default when stdout is not a terminal.",
    ),
]
AcceptKeysOpt = Annotated[
    bool,
    typer.Option("--accept-new-host-keys", help="Trust-on-first-use: pin unknown SSH host keys (journaled)."),
]
FailOnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-on",
        help="ask,default,deadline: exit 4 if a gate was decided by a person, a headless "
        "default or a deadline (for CI).",
    ),
]
AcceptPolicyOpt = Annotated[
    bool,
    typer.Option(
        "--accept-policy-change", help="Go on under the policy file as it is now (journaled as policy.changed)."
    ),
]
BrainOpt = Annotated[
    str | None,
    typer.Option(
        "--brain",
        help="rules (offline, deterministic) or claude (Anthropic API; needs ANTHROPIC_API_KEY). "
        "Default: the campaign's brain.kind, then the policy's brain, then rules.",
    ),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Claude model for --brain claude.")]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="SIGNOFF_STORE",
        help="Where sessions live: postgresql://… for a team's shared store (or $SIGNOFF_STORE); "
        "default: the local store under $SIGNOFF_HOME.",
    ),
]
WaitOpt = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="At a gate that needs a person, keep the session (and its lease) and wait for `signoff decide` "
        "from any machine, or the gate's deadline, then go on; instead of exiting 3.",
    ),
]
SshConfigOpt = Annotated[
    str | None, typer.Option("--ssh-config", help="An ssh_config file to resolve SSH hosts with (ssh -F).")
]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"signoff: {message}", err=True)
    return typer.Exit(code)


def _store(url: str | None) -> Any:
    """The store `--store`/`SIGNOFF_STORE` names, or a one-line error (exit 2)."""
    from agent.store import open_store

    return open_store(url)


def _find(session: str, store: str | None) -> Any:

    return _store(store).find(session)


def _finish(out: Any, as_json: bool, fail_on: list[str] | None = None) -> None:
    from agent.report.console import print_paused, print_report, summary_json

    if as_json:
        typer.echo(json.dumps(summary_json(out), indent=2))
    elif out.status == "paused":
        print_paused(out)
    else:
        print_report(out)
    code = out.exit_code
    if code == 0 and fail_on:
        bad = out.forbidden(set(fail_on))
        if bad:
            typer.echo(
                f"signoff: --fail-on {','.join(fail_on)}: {len(bad)} gate(s) decided by "
                + ", ".join(sorted({g["decided_as"] for g in bad})),
                err=True,
            )
            code = FAIL_ON_MATCHED
    raise typer.Exit(code)


def _terminal() -> bool:
    return sys.stdout.isatty() and sys.stdin.isatty() and os.environ.get("TERM") != "dumb"


class Screens(Protocol):
    """What the terminal UI offers the CLI. `tui/cli.py` registers one; agent never imports tui."""

    def live(self, d: Any) -> bool: ...  # run a new session on screen; True if quit while it still ran

    def replay(self, d: Any) -> None: ...

    def attach(self, d: Any) -> bool: ...


screens: Screens | None = None


def _live_tui(d: Any) -> Any:
    """Run a new session under the TUI; the outcome once the person quits (paused, finished, …)."""
    from agent.run.runner import Runner, SessionError

    assert screens is not None
    if screens.live(d):
        raise _fail(f"quit while the run was still going; `signoff resume {d.id}` continues it", INTERRUPTED)
    try:
        with d.locked():
            return Runner(d, headless=True).outcome()
    except SessionError as exc:
        raise _fail(str(exc), FAILED) from None


def _served(d: Any, out: Any, wait: bool, listeners: list[Any]) -> Any:
    """With --wait, answer-and-go-on until the session ends (the caller holds the lease)."""
    from agent.run.runner import Runner

    while wait and out.status == "paused":
        if not Runner(d, headless=True).wait_for_answer():
            break  # stopped by a signal while waiting: the session stays paused
        out = Runner(d, headless=True, listeners=listeners).resume()
    return out


def _fail_on(values: list[str] | None) -> list[str]:
    out = [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]
    wrong = [v for v in out if v not in ("ask", "default", "deadline")]
    if wrong:
        raise _fail(f"--fail-on takes ask, default, deadline (not {', '.join(wrong)})", BAD_INPUT)
    return out


@contextmanager
def _existing_session(session: str, store: str | None, *, accept_policy_change: bool = False) -> Iterator[Any]:
    """Find and lock a session, refusing to go on under a policy file that changed on disk unless
    the person accepts the change; errors become one-line messages and exit codes."""
    from agent.errors import RunFailed
    from agent.run.runner import SessionError

    d = _find(session, store)
    try:
        with d.locked():
            _policy_drift(d, accept_policy_change)
            yield d
    except SessionError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    except RunFailed as exc:
        raise _fail(f"session {session} failed: {exc}", FAILED) from None
    finally:
        d.close()


def _policy_drift(d: Any, accept_policy_change: bool) -> None:
    """Refuse (SessionError) to go on under a policy file that changed on disk, unless accepted; an
    accepted change is journaled. The caller holds the session lock."""
    from agent.run.runner import SessionError, check_documents, policy_drift
    from agent.run.runner import accept_policy_change as accept
    from policies.yamlsrc import SourceError

    check_documents(d)  # a tampered copy is named as such, not taken for a changed policy file
    drift = policy_drift(d)
    if drift is None:
        return
    if not accept_policy_change:
        raise SessionError(
            f"the policy file {drift[0]} changed since session {d.id} started; rerun with "
            "--accept-policy-change to go on under the new one (journaled), or restore the file"
        )
    try:
        sha = accept(d, by=f"human:{getpass.getuser()}")
    except SourceError as exc:
        raise SessionError(f"the changed policy does not load: {exc}") from None
    typer.echo(f"policy changed: going on under {drift[0]} ({sha[:12]}), journaled", err=True)


def _run(
    campaign: Path,
    policy: str,
    *,
    as_json: bool,
    demo: bool,
    accept_new_host_keys: bool = False,
    ssh_config: str | None = None,
    campaign_text: str | None = None,
    fail_on: list[str] | None = None,
    brain: str | None = None,
    model: str | None = None,
    headless: bool = True,
    store: str | None = None,
    wait: bool = False,
) -> None:
    from agent.errors import RunFailed
    from agent.report.console import Progress
    from agent.run.runner import Runner, SessionError, create

    checks = _fail_on(fail_on)
    d = create(
        campaign,
        policy,
        demo=demo,
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
        campaign_text=campaign_text,
        brain=brain,
        model=model,
        store=_store(store),
    )
    if not headless and not as_json and screens is not None and _terminal():
        _finish(_live_tui(d), as_json, checks)
    progress = Progress(plain=True if as_json else None)
    try:
        with d.locked():
            out = _served(d, Runner(d, headless=True, listeners=[progress]).start(), wait, [progress])
    except SessionError as exc:
        raise _fail(str(exc), FAILED) from None
    except RunFailed as exc:
        raise _fail(f"session {d.id} failed: {exc}; see its journal, then `signoff resume {d.id}`", FAILED) from None
    except KeyboardInterrupt:
        raise _fail(f"interrupted; `signoff resume {d.id}` continues from the last step", INTERRUPTED) from None
    _finish(out, as_json, checks)


@app.command()
def demo(
    headless: HeadlessOpt = False,
    policy: PolicyOpt = "cautious",
    as_json: JsonOpt = False,
    ssh: Annotated[
        str | None,
        typer.Option("--ssh", help="HOST[:PORT]: put the demo's hosts on a real SSH host (alias or address)."),
    ] = None,
    ssh_config: SshConfigOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    fail_on: FailOnOpt = None,
    brain: BrainOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
    wait: WaitOpt = False,
) -> None:
    """Run the built-in decode-throughput demo (simulated hosts; no keys, no network)."""
    from agent.run.runner import SessionError, demo_campaign, demo_over_ssh

    try:
        campaign = demo_campaign()
        text = demo_over_ssh(campaign, ssh) if ssh else None
    except (SessionError, ValueError) as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    _run(
        campaign,
        policy,
        as_json=as_json,
        demo=True,
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
        campaign_text=text,
        fail_on=fail_on,
        brain=brain,
        model=model,
        headless=headless,
        store=store,
        wait=wait,
    )


@app.command()
def run(
    campaign: Annotated[Path, typer.Argument(help="Campaign YAML file.")],
    policy: PolicyOpt = "cautious",
    headless: HeadlessOpt = False,
    as_json: JsonOpt = False,
    ssh_config: SshConfigOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    fail_on: FailOnOpt = None,
    brain: BrainOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
    wait: WaitOpt = False,
) -> None:
    """Run a campaign. Pauses (exit 3) at any gate the policy says to ask about."""
    _run(
        campaign,
        policy,
        as_json=as_json,
        demo=False,
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
        fail_on=fail_on,
        brain=brain,
        model=model,
        headless=headless,
        store=store,
        wait=wait,
    )


@app.command()
def decide(
    session: Annotated[str, typer.Argument(help="Session id.")],
    text: Annotated[str, typer.Argument(help='One line, e.g. "skip #2 for now if it\'s unsafe".')],
    by: Annotated[str | None, typer.Option("--by", help="Who decides (default: your user name).")] = None,
    no_resume: Annotated[bool, typer.Option("--no-resume", help="Record the decision; resume later.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm a hedged, rollback, stop or standing decision.")] = False,
    as_json: JsonOpt = False,
    fail_on: FailOnOpt = None,
    accept_policy_change: AcceptPolicyOpt = False,
    store: StoreOpt = None,
) -> None:
    """Answer the gate a paused session is waiting at, then resume it (or, when a runner on any machine
    holds the session waiting for this answer, hand the answer to it and report where it got to)."""
    from agent.errors import RunFailed
    from agent.report.console import Progress
    from agent.run.runner import DecisionError, Runner, SessionBusy, SessionError

    checks = _fail_on(fail_on)
    if by is not None and not re.fullmatch(r"[\w.@+-][\w .@+-]{0,63}", by):
        # A name is shown in reports and the journal as who decided: no escapes, colons or prefixes that
        # could dress a person's decision up as a policy's ("policy:…", "\x1b[2K…").
        raise _fail(f"--by {by[:40]!r}: a name is 1-64 letters, digits, spaces and . @ + - _", BAD_INPUT)
    who = f"human:{by or getpass.getuser()}"
    d = _find(session, store)
    try:
        with d.locked():
            _policy_drift(d, accept_policy_change)
            runner = Runner(d, headless=True, listeners=[Progress(plain=True if as_json else None)])
            try:
                _, echo = runner.decide(text, by=who, confirmed=yes)
            except DecisionError as exc:
                raise _fail(f"{exc} (nothing changed)", BAD_INPUT) from None
            typer.echo(f"decided: {echo}", err=True)
            if no_resume:
                out = Runner(d, headless=True).outcome()
                out.echo = f"recorded: {echo}; run `signoff resume {session}` to continue"
            else:
                out = Runner(d, headless=True, listeners=[Progress(plain=True if as_json else None)]).resume()
    except SessionBusy as busy:
        out = _hand_over(d, busy, text, who=who, yes=yes, no_resume=no_resume)
    except SessionError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    except RunFailed as exc:
        raise _fail(f"session {session} failed: {exc}", FAILED) from None
    finally:
        d.close()
    _finish(out, as_json, checks)


def _hand_over(d: Any, busy: Exception, text: str, *, who: str, yes: bool, no_resume: bool) -> Any:
    """The session is held by a runner (`--wait`) that waits for exactly this: record the answer where
    it looks (it wakes at once), then follow the journal until the session stands still again. If that
    runner dies instead, take the session over and resume it here."""
    import time

    from agent.run.runner import DecisionError, Runner, SessionBusy

    deadline = time.monotonic() + 5.0
    while not (waiting := d.meta().get("waiting")):
        # A runner that has just paused takes a moment to start waiting; one that runs is busy.
        if d.meta().get("status") != "paused" or time.monotonic() > deadline:
            raise _fail(str(busy), BAD_INPUT)
        time.sleep(0.1)
    tail = d.tail()
    try:
        tail.read()  # what is journaled already: the stop we wait for comes after our answer
        try:
            _, echo = Runner(d, headless=True).decide(text, by=who, confirmed=yes)
        except DecisionError as exc:
            raise _fail(f"{exc} (nothing changed)", BAD_INPUT) from None
        if no_resume:
            typer.echo(f"decided: {echo}; the runner waiting on {waiting} goes on with it", err=True)
            out = Runner(d, headless=True).outcome()
            out.echo = f"recorded: {echo}; the runner waiting on {waiting} goes on"
            return out
        typer.echo(f"decided: {echo}; handed to the runner waiting on {waiting}", err=True)
        while True:
            if any(e["kind"] in STOPS and e["kind"] != "session.waiting" for e in tail.read()):
                return Runner(d, headless=True).outcome()
            tail.wait(5.0)
            try:
                with d.locked():  # free: the runner is gone (or done); go on from here
                    return Runner(d, headless=True).resume()
            except SessionBusy:
                continue
    finally:
        tail.close()


@app.command()
def resume(
    session: Annotated[str, typer.Argument(help="Session id.")],
    revisit: Annotated[
        bool, typer.Option("--revisit", help="Reopen the options deferred 'for now' and try them again.")
    ] = False,
    as_json: JsonOpt = False,
    fail_on: FailOnOpt = None,
    accept_policy_change: AcceptPolicyOpt = False,
    store: StoreOpt = None,
    wait: WaitOpt = False,
) -> None:
    """Continue a paused or interrupted session (applies decisions recorded with --no-resume and expired
    gate deadlines); with --revisit, reopen a finished session's deferred options."""
    from agent.report.console import Progress
    from agent.run.runner import Runner

    checks = _fail_on(fail_on)
    with _existing_session(session, store, accept_policy_change=accept_policy_change) as d:
        progress = Progress(plain=True if as_json else None)
        runner = Runner(d, headless=True, listeners=[progress])
        out = _served(d, runner.revisit() if revisit else runner.resume(), wait, [progress])
    _finish(out, as_json, checks)


@app.command()
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
    d = _find(session, store)
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
            raise _fail(str(exc), BAD_INPUT) from None
        typer.echo(f"wrote {export}")
        return
    if other_policy is not None:
        _counterfactual(d, journal, other_policy, as_json=as_json, fail_on_diff=fail_on_diff)
        return
    if fail_on_diff:
        raise _fail("--fail-on-diff needs --policy OTHER", BAD_INPUT)
    if tui:
        if screens is None or not _terminal():
            raise _fail("--tui needs a terminal (stdin and stdout); without it, use the timeline or --json", BAD_INPUT)
        screens.replay(d)
        return
    if check:
        try:
            pinned = load_public_key(key) if key is not None else None
        except (OSError, ValueError) as exc:
            raise _fail(f"--key {key}: {exc}", BAD_INPUT) from None
        documents = {name: d.read(name) for name in ("campaign.yaml", "policy.yaml")}
        verdict = verify_session(journal, key=pinned, documents=documents, meta=d.meta())
        typer.echo(verdict.model_dump_json() if as_json else verdict.line())
        raise typer.Exit(0 if verdict.ok else FAILED)
    try:
        cutoff = _since(since) if since else None
    except ValueError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
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
    from policies.yamlsrc import SourceError
    from tools.terminal import safe_console

    try:
        policy = load_policy(ref)
    except (SourceError, FileNotFoundError) as exc:
        raise _fail(str(exc), BAD_INPUT) from None
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


@app.command()
def attach(
    session: Annotated[str, typer.Argument(help="Session id.")],
    accept_policy_change: AcceptPolicyOpt = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="No TUI: print the session's events as they are journaled (one JSON object per line with "
            "--json) until it pauses or ends and no runner holds it; exits with its status code.",
        ),
    ] = False,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Follow a running or paused session in the TUI; answer its gate when it waits for one (the session
    lock decides who runs: while another process runs it, you watch)."""
    from agent.run.runner import Runner, SessionBusy, SessionError

    d = _find(session, store)
    if follow:
        try:
            _follow(d, as_json=as_json)
        finally:
            d.close()
    try:
        with d.locked():  # answering from the screen goes on under the policy: the same check as resume
            _policy_drift(d, accept_policy_change)
    except SessionBusy:
        pass  # running elsewhere: attach watches, and the runner already holds its policy
    except SessionError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    if screens is None or not _terminal():
        raise _fail(
            "attach needs a terminal; headless, use `signoff attach --follow`, `signoff decide` and `signoff resume`",
            BAD_INPUT,
        )
    if screens.attach(d):
        raise _fail(f"detached while the run was going; `signoff resume {d.id}` continues it", INTERRUPTED)
    try:
        with d.locked():
            out = Runner(d, headless=True).outcome()
    except SessionError:
        typer.echo(f"detached; session {d.id} is still running elsewhere", err=True)
        raise typer.Exit(0) from None
    _finish(out, False)


STOPS = ("session.paused", "session.waiting", "session.finished", "session.failed", "session.interrupted")


def _follow(d: Any, *, as_json: bool) -> None:
    """Print events as they arrive (on PostgreSQL a commit's NOTIFY wakes us; the local store's tail
    checks the file's size), until the session stands still: its last event is a pause or an end and
    nobody holds its lease."""
    from agent.journal.events import entry
    from agent.journal.view import SessionView
    from agent.report.replay import describe
    from agent.run.runner import Runner, SessionBusy

    tail = d.tail()
    view = SessionView()
    last = None

    def show(batch: list[dict[str, Any]]) -> None:
        nonlocal last
        for e in batch:
            last = e["kind"]
            view.apply(entry(e))
            if as_json:
                typer.echo(json.dumps(e, sort_keys=True))
            elif (line := describe(e, view)) is not None:
                typer.echo(f"{e['seq']:>5} {e['ts'][11:23]} {line}")

    try:
        while True:
            show(tail.read())
            if last in STOPS:
                try:
                    with d.locked():
                        more = tail.read()  # what was journaled before we took the lease
                        show(more)
                        if not more:
                            out = Runner(d, headless=True).outcome()
                            break
                except SessionBusy:
                    pass  # a runner goes on (or waits for an answer): keep following
            tail.wait(5.0)
    finally:
        tail.close()
    typer.echo(f"session {d.id}: {out.status}", err=True)
    raise typer.Exit(out.exit_code)


@app.command()
def sessions(
    as_json: JsonOpt = False,
    compact: Annotated[
        str | None,
        typer.Option("--compact", help="Prune a closed session's graph checkpoints; its journal and artifacts stay."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """List the sessions of a store (default: the local one under $SIGNOFF_HOME, ./.signoff): owner,
    status (paused at which gate), campaign, start, duration and outcome counts."""
    if compact is not None:
        from agent.run.runner import SessionError
        from agent.run.runner import compact as compact_session

        d = _find(compact, store)
        try:
            with d.locked():
                before, after = compact_session(d)
        except SessionError as exc:
            raise _fail(str(exc), BAD_INPUT) from None
        finally:
            d.close()
        typer.echo(
            f"compacted {d.id}: checkpoints {before / 1e6:.2f} MB → {after / 1e6:.2f} MB; the journal, its head "
            "and the artifacts are kept (replay and --verify work; resume --revisit no longer does)"
        )
        return
    rows = _store(store).list_sessions()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no sessions yet; try `signoff demo`")
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


@app.command("export")
def export_cmd(
    session: Annotated[str, typer.Argument(help="Session id.")],
    directory: Annotated[Path, typer.Argument(help="A new (or empty) directory to write the session to.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a session — journal and head, artifacts, checkpoints, documents, answers — to a directory
    laid out like a local session: `signoff replay --verify` reads it, `signoff import` loads it into
    any store. The session must not be running."""
    from agent.run.runner import SessionError
    from agent.store.bundle import export_session

    d = _find(session, store)
    try:
        with d.locked():
            manifest = export_session(d, directory, source=_store(store).where)
    except SessionError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    finally:
        d.close()
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
    else:
        typer.echo(
            f"exported {session} to {directory}: {manifest['events']} events, {manifest['checkpoints']} "
            f"checkpoints, {manifest['artifacts']} artifacts"
        )


@app.command("import")
def import_cmd(
    directory: Annotated[Path, typer.Argument(help="A directory written by `signoff export`.")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load an exported session into a store (verified first; refused if the store has it already)."""
    from agent.run.runner import SessionError
    from agent.store.bundle import import_session

    target = _store(store)
    try:
        d, summary = import_session(target, directory)
    except (SessionError, OSError, ValueError) as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    d.close()
    if as_json:
        typer.echo(json.dumps({**summary, "store": target.where}, indent=2))
    else:
        typer.echo(
            f"imported {summary['session']} into {target.where}: {summary['events']} events, "
            f"{summary['checkpoints']} checkpoints; `signoff resume {summary['session']}` continues it"
        )


@decision_app.command("parse")
def decision_parse(
    text: Annotated[str, typer.Argument(help="The one-line decision.")],
    gate: Annotated[
        str,
        typer.Option("--gate", help="Gate kind: plan, triage, safety, continue_or_ask, rollback, command, budget."),
    ],
    options: Annotated[str, typer.Option("--options", help="Option ids nameable here, e.g. 1,2,3.")] = "",
    title: Annotated[
        list[str] | None,
        typer.Option("--title", help="An option's title, to name it in words: --title '2=overlap scheduler'."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show how a one-liner would be understood at a gate (nothing is recorded)."""
    from policies.decisions import parse_decision
    from policies.gates import GATE_KINDS

    if gate not in GATE_KINDS:
        raise _fail(f"unknown gate kind {gate!r}; one of {', '.join(GATE_KINDS)}", BAD_INPUT)
    try:
        ids = [int(x.strip().lstrip("#")) for x in options.split(",") if x.strip()]
    except ValueError:
        raise _fail(f"--options takes comma-separated option ids, not {options!r}", BAD_INPUT) from None
    titles: dict[int, str] = {}
    for entry in title or []:
        key, sep, words = entry.partition("=")
        if not sep or not key.strip().lstrip("#").isdigit() or not words.strip():
            raise _fail(f"--title takes ID=TITLE, e.g. --title '2=overlap scheduler', not {entry!r}", BAD_INPUT)
        titles[int(key.strip().lstrip("#"))] = words.strip()
    d = parse_decision(text, kind=gate, options=ids or sorted(titles), titles=titles)  # type: ignore[arg-type]
    if as_json:
        typer.echo(d.model_dump_json(indent=2))
    else:
        typer.echo(d.describe() + (f" (read as: {'; '.join(d.read_as)}; needs confirmation)" if d.read_as else ""))


@policy_app.command("suggest")
def policy_suggest(
    sessions: Annotated[list[str], typer.Argument(help="Session ids whose human answers to learn from.")],
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="The policy file to diff against (default: the one the first session ran)."),
    ] = None,
    minimum: Annotated[int, typer.Option("--min", help="Answers needed before a rule is suggested.")] = 2,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write the suggested policy to this new file (never the original)."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Suggest rules from gates people answered the same way repeatedly: printed as a diff, never applied."""
    from contextlib import ExitStack

    from agent.report.suggest import suggest
    from policies.load import load_policy, load_policy_text
    from policies.yamlsrc import SourceError

    with ExitStack() as stack:
        dirs = [_find(s, store) for s in sessions]
        for d in dirs:
            stack.callback(d.close)
        journals = [stack.enter_context(d.journal_file()) for d in dirs]
        try:
            if policy is not None:
                base = load_policy(policy)
            else:
                started = next(e for e in dirs[0].events() if e["kind"] == "session.started")
                base = load_policy_text(started["policy_text"], path=started.get("policy") or "policy.yaml")
        except (SourceError, FileNotFoundError, StopIteration) as exc:
            raise _fail(str(exc) or "the first session has no session.started event", BAD_INPUT) from None
        notes, diff, text = suggest(journals, base, minimum=minimum)
    for line in notes:
        typer.echo(f"# {line}", err=True)
    if diff:
        typer.echo(diff, nl=False)
        if out is not None:
            if base.path is not None and out.resolve() == Path(base.path).resolve():
                raise _fail("--out must be a new file: suggestions are never applied to the policy in place", BAD_INPUT)
            out.write_text(text)
            typer.echo(f"# wrote the suggested policy to {out}", err=True)


@policy_app.command("check")
def policy_check(
    file: Annotated[str, typer.Argument(help="Policy file or preset name.")],
    as_json: JsonOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on lint warnings too.")] = False,
) -> None:
    """Load a policy (schema, CEL type checks against each gate's facts, its `tests:`) and lint it."""
    from policies.load import load_policy
    from policies.schema import SourceError, lint

    try:
        p = load_policy(file)
    except SourceError as exc:
        if as_json:
            typer.echo(json.dumps({"ok": False, "error": str(exc), "file": exc.path, "line": exc.line, "warnings": []}))
        raise _fail(str(exc), BAD_INPUT) from None
    rules = sum(len(r) for r in p.rules.values())
    warnings = lint(p)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "ok": True,
                    "name": p.name,
                    "sha256": p.sha256,
                    "rules": rules,
                    "tests": len(p.model.tests),
                    "warnings": [w.model_dump() | {"file": str(p.path)} for w in warnings],
                }
            )
        )
    else:
        for w in warnings:
            typer.echo(f"{p.path}:{w.line or 1}: warning: {w.message}", err=True)
        typer.echo(
            f"OK: {p.name} ({p.path}) — {rules} rules, {len(p.model.tests)} tests pass"
            + (f", {len(warnings)} warning(s)" if warnings else "")
        )
    if strict and warnings:
        raise typer.Exit(FAILED)


@policy_app.command("explain")
def policy_explain(
    file: Annotated[str, typer.Argument(help="Policy file or preset name.")],
    gate: Annotated[str, typer.Option("--gate", help="Gate kind.")],
    facts: Annotated[str, typer.Option("--facts", help='The gate\'s facts as JSON, e.g. \'{"verdict": "unsafe"}\'.')],
    as_json: JsonOpt = False,
) -> None:
    """Show the decision a policy makes for these facts, the rule that made it, and why earlier rules did not."""
    from policies.engine import PolicyEngine
    from policies.gates import FACTS, GATE_KINDS
    from policies.load import load_policy
    from policies.schema import SourceError

    if gate not in GATE_KINDS:
        raise _fail(f"unknown gate kind {gate!r}; one of {', '.join(GATE_KINDS)}", BAD_INPUT)
    try:
        values = json.loads(facts)
        if not isinstance(values, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise _fail(f"--facts must be a JSON object: {exc}", BAD_INPUT) from None
    try:
        p = load_policy(file)
        ex = PolicyEngine(p).explain(gate, values)  # type: ignore[arg-type]
    except SourceError as exc:
        raise _fail(str(exc), BAD_INPUT) from None
    except ValueError as exc:
        known = ", ".join(f"{n} ({s.type})" for n, s in FACTS[gate].items())  # type: ignore[index]
        raise _fail(f"{exc}; facts of a {gate} gate: {known}", BAD_INPUT) from None
    if as_json:
        typer.echo(ex.model_dump_json(indent=2, exclude_none=True))
        return
    d = ex.decision
    typer.echo(f"decision: {d.action}" + (f" (then {d.then})" if d.then else "") + f" — by {d.by}")
    for step in ex.steps:
        typer.echo(f"  {step.rule}: {step.outcome}" + (f" — {step.detail}" if step.detail else ""))
    missing = [n for n in FACTS[gate] if n not in values]  # type: ignore[index]
    if missing:
        typer.echo(f"  (facts not given: {', '.join(missing)}; rules that read them fail closed)")


@store_app.command("init")
def store_init(
    store: Annotated[
        str | None,
        typer.Option("--store", envvar="SIGNOFF_STORE", help="postgresql://… (or $SIGNOFF_STORE)."),
    ] = None,
) -> None:
    """Create or migrate the store's tables: LangGraph's checkpoint tables (PostgresSaver.setup) and the
    append-only journal. Safe to run again."""
    if not store or not store.startswith(("postgresql://", "postgres://")):
        raise _fail("store init needs --store postgresql://… (or SIGNOFF_STORE)", BAD_INPUT)
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise _fail("the PostgreSQL store needs its extra: pip install 'signoff[postgres]'", BAD_INPUT) from None
    from agent.journal import pg as pgjournal

    try:
        with PostgresSaver.from_conn_string(store) as saver:
            saver.setup()
        pgjournal.setup(store)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(f"store init failed: {first}", FAILED) from None
    typer.echo("store ready: checkpoint tables (LangGraph PostgresSaver) and the append-only journal")


def main() -> None:
    import signal

    # SIGTERM (a CI cancel, `kill`) and a first Ctrl-C drain the run to the end of its current graph
    # step, so the last checkpoint is a whole step; a second Ctrl-C stops at once.
    signal.signal(signal.SIGTERM, _drain)
    signal.signal(signal.SIGINT, _drain)
    from tools.terminal import SanitizedStream

    # The one place text leaves for a screen: host output, journal strings and campaign text may hold
    # escape sequences (clear screen, retitle, OSC 8 links, overwrite); they are shown, never sent.
    sys.stdout, sys.stderr = SanitizedStream(sys.stdout), SanitizedStream(sys.stderr)  # type: ignore[assignment]
    for arg in sys.argv[1:]:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:  # bytes that were not UTF-8 arrive as lone surrogates
            shown = arg.encode("utf-8", "surrogateescape")[:60]
            print(f"signoff: argument {shown!r} is not valid UTF-8 (byte {exc.start}); nothing done", file=sys.stderr)
            sys.exit(2)
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(INTERRUPTED)
    except Exception as exc:  # an error signoff raises on purpose is one line and its exit code; a bug is not
        code = exit_code(exc)
        if code is None:
            raise
        print(f"signoff: {exc}", file=sys.stderr)
        sys.exit(code)


def _drain(signum: int, frame: Any) -> None:
    from agent.stopping import request_stop

    if request_stop() and signum == 2:
        raise KeyboardInterrupt
    print("signoff: stopping after the current step (Ctrl-C again to stop now)", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
