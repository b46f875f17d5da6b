"""The commands that run a session: `demo`, `run` (a new one), `decide` (answer its gate), `resume`, and
`attach` (follow it, on screen or as lines). Each holds the session's lease while it runs it; a runner
that waits for an answer (`--wait`) gets it from `decide` on any machine.
"""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent.cli.shared import (
    AcceptKeysOpt,
    AcceptPolicyOpt,
    BrainOpt,
    FailOnOpt,
    HeadlessOpt,
    JsonOpt,
    ModelOpt,
    PolicyOpt,
    SshConfigOpt,
    StoreOpt,
    WaitOpt,
    check_policy_drift,
    existing_session,
    fail,
    fail_on_checks,
    find,
    finish,
    names_a_session,
    only_waiting,
    screens,
    store_at,
    terminal,
)
from agent.errors import BAD_INPUT, FAILED, INTERRUPTED

if TYPE_CHECKING:
    from agent.run.create import RunOptions

# `notify.sent` only ever follows `session.paused` (agent/run/notify.py): a session whose last line it is
# stands still just the same.
STOPS = (
    "session.paused", "session.waiting", "session.finished", "session.failed", "session.interrupted", "notify.sent"
)  # fmt: skip


def _live_tui(
    d: Any, how: str = "start", *, prefill: str | None = None, by: str | None = None, gate: str | None = None
) -> Any:
    """Run a session under the TUI — new, resumed, or attached with a line to confirm at its gate (`gate`,
    the one it was given for); the outcome once the person quits (paused, finished, …)."""
    from agent.errors import SessionError
    from agent.journal.view import fold
    from agent.run.runner import Runner

    ui = screens()
    assert ui is not None
    if ui.attach(d, prefill=prefill, by=by, gate=gate) if prefill is not None else ui.live(d, how, by=by):
        raise fail(f"quit while the run was still going; `signoff resume {d.id}` continues it", INTERRUPTED)
    view = fold(d.events())
    if view.status == "interrupted":  # the operator quit on screen (or a signal came before)
        raise fail(f"the run stopped between two commands; {on_hosts(view)}; {what_next(d.id)}", INTERRUPTED)
    try:
        with d.locked(), Runner(d, headless=True) as runner:
            return runner.outcome()
    except SessionError as exc:
        raise fail(str(exc), FAILED) from None


def on_hosts(view: Any) -> str:
    """What the journal says each host has on it now, in words: where a stopped run left them."""
    kept = {o.id for o in view.options.values() if o.status == "kept"}
    parts = [
        f"{host}: " + ", ".join(f"#{o} {state}" + (" (kept)" if o in kept else "") for o, state in sorted(on.items()))
        for host, on in sorted(view.on_hosts.items())
        if on
    ]
    return "on the hosts now: " + "; ".join(parts) if parts else "no option is applied on any host"


def what_next(session: str) -> str:
    """The two ways on from a stopped run, in words."""
    return (
        f"`signoff resume {session}` goes on from there, "
        f"or `signoff abandon {session}` rolls back what was not kept, verifies, and ends it"
    )


def _served(d: Any, out: Any, wait: bool, listeners: list[Any]) -> Any:
    """With --wait, answer-and-go-on until the session ends (the caller holds the lease)."""
    from agent.run.runner import Runner

    while wait and out.status == "paused":
        with Runner(d, headless=True) as runner:
            if not runner.wait_for_answer():
                break  # stopped by a signal while waiting: the session stays paused
        with Runner(d, headless=True, listeners=listeners) as runner:
            out = runner.resume()
    return out


def _run(campaign: Path, options: RunOptions) -> None:
    from agent.errors import RunFailed, SessionError
    from agent.report.console import Progress
    from agent.run.create import create
    from agent.run.runner import Runner

    checks = fail_on_checks(options.fail_on)
    d = create(campaign, options, store=store_at(options.store))
    if not options.headless and not options.as_json and screens() is not None and terminal():
        finish(_live_tui(d), options.as_json, checks)
    progress = Progress(plain=True if options.as_json else None)
    try:
        with d.locked():
            with Runner(d, headless=True, listeners=[progress]) as runner:
                out = runner.start()
            out = _served(d, out, options.wait, [progress])
    except SessionError as exc:
        raise fail(str(exc), FAILED) from None
    except RunFailed as exc:
        raise fail(f"session {d.id} failed: {exc}; see its journal, then `signoff resume {d.id}`", FAILED) from None
    except KeyboardInterrupt:
        from agent.journal.view import fold

        # The first words are what they were before abandon existed (scripts may look for them).
        said = (
            f"interrupted; `signoff resume {d.id}` continues from the last step, or `signoff abandon {d.id}` rolls "
            f"back what was not kept, verifies, and ends it; {on_hosts(fold(d.events()))}"
        )
        raise fail(said, INTERRUPTED) from None
    finish(out, options.as_json, checks)


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
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep",
            help="Measure the options as a load sweep (concurrency 30, 60, 90) under a p99 TPOT SLO: a verdict per "
            "level, each arm's capacity and the fitted step-time model.",
        ),
    ] = False,
) -> None:
    """Run the built-in decode-throughput demo (simulated hosts; no keys, no network)."""
    from agent.run.create import RunOptions, demo_campaign, demo_over_ssh

    campaign = demo_campaign(sweep=sweep)
    try:
        text = demo_over_ssh(campaign, ssh) if ssh else None
    except ValueError as exc:
        raise fail(str(exc), BAD_INPUT) from None
    options = RunOptions(
        policy=policy,
        demo=True,
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
        campaign_text=text,
        brain=brain,
        model=model,
        store=store,
        headless=headless,
        as_json=as_json,
        fail_on=tuple(fail_on or ()),
        wait=wait,
    )
    _run(campaign, options)


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
    from agent.run.create import RunOptions

    options = RunOptions(
        policy=policy,
        accept_new_host_keys=accept_new_host_keys,
        ssh_config=ssh_config,
        brain=brain,
        model=model,
        store=store,
        headless=headless,
        as_json=as_json,
        fail_on=tuple(fail_on or ()),
        wait=wait,
    )
    _run(campaign, options)


def decide(
    session: Annotated[
        str, typer.Argument(help="Session id; leave it out to answer the only session waiting for a decision.")
    ],
    text: Annotated[
        str | None, typer.Argument(help='One line, e.g. "skip #2 for now if it\'s unsafe".', show_default=False)
    ] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who decides (default: your user name).")] = None,
    no_resume: Annotated[bool, typer.Option("--no-resume", help="Record the decision; resume later.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm a hedged, rollback, stop or standing decision.")] = False,
    as_json: JsonOpt = False,
    fail_on: FailOnOpt = None,
    accept_policy_change: AcceptPolicyOpt = False,
    store: StoreOpt = None,
    gate: Annotated[
        str | None,
        typer.Option(
            "--gate",
            help="The gate this answer is for (gN, as the pause message names it): refused, saying who decided "
            "it, if the session waits at another gate by now.",
        ),
    ] = None,
) -> None:
    """Answer the gate a paused session is waiting at, then resume it (or, when a runner on any machine
    holds the session waiting for this answer, hand the answer to it and report where it got to)."""
    from agent.errors import RunFailed, SessionBusy
    from agent.report.console import Progress
    from agent.run.runner import Runner
    from policies.decisions import DecisionError

    checks = fail_on_checks(fail_on)
    if text is None:
        # `signoff decide "<one line>"`: the session of yours that waits, if exactly one does, at its gate now.
        if names_a_session(session, store):
            raise fail(f'decide {session}: and the answer? signoff decide {session} "<one line>"', BAD_INPUT)
        text = session
        session, waiting = only_waiting(store)
        if gate is None:
            gate = waiting
        typer.echo(
            f"answering session {session} at gate {gate}: the only one of yours waiting for a decision", err=True
        )
    if by is not None and not re.fullmatch(r"[\w.@+-][\w .@+-]{0,63}", by):
        # A name is shown in reports and the journal as who decided: no escapes, colons or prefixes that
        # could dress a person's decision up as a policy's ("policy:…", "\x1b[2K…").
        raise fail(f"--by {by[:40]!r}: a name is 1-64 letters, digits, spaces and . @ + - _", BAD_INPUT)
    if gate is not None and not re.fullmatch(r"g[1-9][0-9]{0,8}", gate):
        raise fail(f"--gate {gate[:40]!r}: a gate is named g and its number, e.g. --gate g4", BAD_INPUT)
    who = f"human:{by or getpass.getuser()}"
    d = find(session, store)
    if not (yes or as_json or no_resume) and screens() is not None and terminal():
        _decide_on_screen(d, text, by=by, accept_policy_change=accept_policy_change, checks=checks, gate=gate)
    try:
        with d.locked():
            check_policy_drift(d, accept_policy_change)
            with Runner(d, headless=True, listeners=[Progress(plain=True if as_json else None)]) as runner:
                try:
                    _, echo, at = runner.decide(text, by=who, confirmed=yes, gate=gate)
                except DecisionError as exc:
                    raise fail(f"{exc} (nothing changed)", BAD_INPUT) from None
            typer.echo(f"decided: {echo} — at gate {at}", err=True)
            if no_resume:
                with Runner(d, headless=True) as runner:
                    out = runner.outcome()
                out.echo = f"recorded: {echo} — at gate {at}; run `signoff resume {session}` to continue"
            else:
                with Runner(d, headless=True, listeners=[Progress(plain=True if as_json else None)]) as runner:
                    out = runner.resume()
    except SessionBusy as busy:
        out = _hand_over(d, busy, text, who=who, yes=yes, no_resume=no_resume, gate=gate)
    except RunFailed as exc:
        raise fail(f"session {session} failed: {exc}", FAILED) from None
    finally:
        d.close()
    finish(out, as_json, checks)


def _decide_on_screen(
    d: Any, text: str, *, by: str | None, accept_policy_change: bool, checks: Any, gate: str | None
) -> None:
    """`decide` in a terminal: a line that needs no confirmation is recorded and the run goes on in the
    TUI; one that does (hedged, standing, a rollback or a stop) opens the TUI at the gate with the line
    echoed, and Enter confirms it there. Returns only when a runner holds the session (the caller then
    hands the answer over, as without a terminal)."""
    from agent.errors import SessionBusy
    from agent.run.runner import Runner
    from policies.decisions import DecisionError

    who = f"human:{by or getpass.getuser()}"
    try:
        with d.locked():
            check_policy_drift(d, accept_policy_change)
            with Runner(d, headless=True) as runner:
                try:
                    found = runner.pending()
                    shown = gate or (found[1].id if found else None)  # the screen offers the line at no later gate
                    echo, confirm = runner.preview(text, by=who, gate=gate)
                    if not confirm:
                        _, echo, at = runner.decide(text, by=who, confirmed=False, gate=gate)
                        echo = f"{echo} — at gate {at}"
                except DecisionError as exc:
                    raise fail(f"{exc} (nothing changed)", BAD_INPUT) from None
    except SessionBusy:
        return
    out = _live_tui(d, prefill=text, by=by, gate=shown) if confirm else _live_tui(d, "resume", by=by)
    if not confirm:
        typer.echo(f"decided: {echo}", err=True)
    finish(out, False, checks)


def _hand_over(d: Any, busy: Exception, text: str, *, who: str, yes: bool, no_resume: bool, gate: str | None) -> Any:
    """The session is held by a runner (`--wait`) that waits for exactly this: record the answer where
    it looks (it wakes at once), then follow the journal until the session stands still again. If that
    runner dies instead, take the session over and resume it here."""
    import time

    from agent.errors import SessionBusy
    from agent.run.runner import Runner
    from policies.decisions import DecisionError

    deadline = time.monotonic() + 5.0
    while not (waiting := d.meta().get("waiting")):
        # A runner that has just paused takes a moment to start waiting; one that runs is busy.
        if d.meta().get("status") != "paused" or time.monotonic() > deadline:
            raise busy
        time.sleep(0.1)
    tail = d.tail()
    try:
        tail.read()  # what is journaled already: the stop we wait for comes after our answer
        with Runner(d, headless=True) as runner:
            try:
                _, echo, at = runner.decide(text, by=who, confirmed=yes, gate=gate)
            except DecisionError as exc:
                raise fail(f"{exc} (nothing changed)", BAD_INPUT) from None
        if no_resume:
            typer.echo(f"decided: {echo} — at gate {at}; the runner waiting on {waiting} goes on with it", err=True)
            with Runner(d, headless=True) as runner:
                out = runner.outcome()
            out.echo = f"recorded: {echo} — at gate {at}; the runner waiting on {waiting} goes on"
            return out
        typer.echo(f"decided: {echo} — at gate {at}; handed to the runner waiting on {waiting}", err=True)
        while True:
            if any(e["kind"] in STOPS and e["kind"] != "session.waiting" for e in tail.read()):
                with Runner(d, headless=True) as runner:
                    return runner.outcome()
            tail.wait(5.0)
            try:
                with d.locked(), Runner(d, headless=True) as runner:  # free: the runner is gone (or done)
                    return runner.resume()
            except SessionBusy:
                continue
    finally:
        tail.close()


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

    checks = fail_on_checks(fail_on)
    if not (as_json or wait) and screens() is not None and terminal():
        with existing_session(session, store, accept_policy_change=accept_policy_change):
            pass  # the same checks as below, before the screen takes the terminal
        finish(_live_tui(find(session, store), "revisit" if revisit else "resume"), False, checks)
    with existing_session(session, store, accept_policy_change=accept_policy_change) as d:
        progress = Progress(plain=True if as_json else None)
        with Runner(d, headless=True, listeners=[progress]) as runner:
            out = runner.revisit() if revisit else runner.resume()
        out = _served(d, out, wait, [progress])
    finish(out, as_json, checks)


def abandon(
    session: Annotated[str, typer.Argument(help="Session id.")],
    by: Annotated[str | None, typer.Option("--by", help="Who gives it up (default: your user name).")] = None,
    as_json: JsonOpt = False,
    accept_policy_change: AcceptPolicyOpt = False,
    store: StoreOpt = None,
) -> None:
    """Give a session up wherever it stands (stopped, interrupted, paused at a gate): every option on a host that
    was not kept is rolled back and verified, newest first, nothing else is tried, and the session ends. Kept
    options stay. A rollback that does not verify pauses at the rollback gate (exit 3) for a person."""
    from agent.errors import SessionBusy
    from agent.report.console import Progress
    from agent.run.runner import Runner

    who = f"human:{by or getpass.getuser()}"
    try:
        with existing_session(session, store, accept_policy_change=accept_policy_change) as d:
            progress = Progress(plain=True if as_json else None)
            try:
                with Runner(d, headless=True, listeners=[progress]) as runner:
                    out = runner.abandon(by=who)
            except KeyboardInterrupt:
                raise fail(f"interrupted; `signoff abandon {d.id}` again goes on with it", INTERRUPTED) from None
    except SessionBusy as exc:
        if exc.holder is None:
            raise
        said = f"session {session} is being run by {exc.holder}: stop that run first (`q` or Ctrl-C where it runs)"
        raise fail(f"{said}, then `signoff abandon {session}` again; nothing was done", BAD_INPUT) from None
    finish(out, as_json)


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
    from agent.errors import SessionBusy, SessionError
    from agent.run.runner import Runner

    d = find(session, store)
    if follow:
        try:
            _follow(d, as_json=as_json)
        finally:
            d.close()
    try:
        with d.locked():  # answering from the screen goes on under the policy: the same check as resume
            check_policy_drift(d, accept_policy_change)
    except SessionBusy:
        pass  # running elsewhere: attach watches, and the runner already holds its policy
    ui = screens()
    if ui is None or not terminal():
        raise fail(
            "attach needs a terminal; headless, use `signoff attach --follow`, `signoff decide` and `signoff resume`",
            BAD_INPUT,
        )
    if ui.attach(d):
        raise fail(f"detached while the run was going; `signoff resume {d.id}` continues it", INTERRUPTED)
    try:
        with d.locked(), Runner(d, headless=True) as runner:
            out = runner.outcome()
    except SessionError:
        typer.echo(f"detached; session {d.id} is still running elsewhere", err=True)
        raise typer.Exit(0) from None
    finish(out, False)


def _follow(d: Any, *, as_json: bool) -> None:
    """Print events as they arrive (on PostgreSQL a commit's NOTIFY wakes us; the local store's tail
    checks the file's size), until the session stands still: its last event is a pause or an end and
    nobody holds its lease."""
    from agent.errors import SessionBusy
    from agent.journal.events import entry
    from agent.journal.view import SessionView
    from agent.report.replay import describe
    from agent.run.runner import Runner

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
                            with Runner(d, headless=True) as runner:
                                out = runner.outcome()
                            break
                except SessionBusy:
                    pass  # a runner goes on (or waits for an answer): keep following
            tail.wait(5.0)
    finally:
        tail.close()
    typer.echo(f"session {d.id}: {out.status}", err=True)
    raise typer.Exit(out.exit_code)
