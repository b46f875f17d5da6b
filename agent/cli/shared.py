"""What the command modules share: the option types, a one-line failure, finding a session, the terminal
UI's registration, printing where a session got to (and the exit code that says so), and the guard every
command that goes on with an existing session passes (its documents, its policy file on disk).
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Generator
from contextlib import contextmanager
from typing import Annotated, Any, Protocol

import typer

from agent.errors import BAD_INPUT, FAIL_ON_MATCHED, FAILED

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
        help="rules (offline, deterministic) or claude (Anthropic API; needs ANTHROPIC_API_KEY or "
        "ANTHROPIC_AUTH_TOKEN). Default: the campaign's brain.kind, then the policy's brain, then rules.",
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


def fail(message: str, code: int) -> typer.Exit:
    """A one-line failure with its own wording (an error raised on purpose needs none: the entry point
    prints it and exits with `agent.errors.exit_code`)."""
    typer.echo(f"signoff: {message}", err=True)
    return typer.Exit(code)


def store_at(url: str | None) -> Any:
    """The store `--store`/`SIGNOFF_STORE` names (SessionError, one line, if it names none)."""
    from agent.store import open_store

    return open_store(url)


def find(session: str, store: str | None) -> Any:
    return store_at(store).find(session)


def newest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sessions as `signoff sessions` lists them: the newest first (ids begin with their start time)."""

    def key(r: dict[str, Any]) -> tuple[str, str, str]:
        return str(r.get("created") or ""), str(r.get("started_at") or ""), str(r.get("id") or "")

    return sorted(rows, key=key, reverse=True)


def waits_for_decision(row: dict[str, Any]) -> bool:
    """A session a `decide` answers: paused at a gate, or held by a runner that waits at one (`--wait`)."""
    return row.get("status") == "paused" or bool(row.get("waiting"))


def names_a_session(text: str, store: str | None) -> bool:
    """The text is the id of a session in the store (so it is not a one-line answer given without one)."""
    from agent.errors import SessionError

    try:
        found = store_at(store).session(text.strip())
    except (SessionError, ValueError, OSError):
        return False  # not even the shape of an id
    try:
        return found.read("meta.json") is not None
    finally:
        found.close()


def only_waiting(store: str | None) -> tuple[str, str | None]:
    """(session, gate) `decide` answers when no session is named: the one of yours that waits for a decision,
    at the gate it waits at now (pinned: if that gate is decided meanwhile, the answer is refused, not given
    to the next). Refused in one line when none waits, or several do, naming them: an answer must never land
    on a guessed session, nor on a colleague's in a team store."""
    from agent.store.base import owner

    me = owner()
    rows = [r for r in newest_first(store_at(store).list_sessions()) if waits_for_decision(r) and r.get("owner") == me]
    if not rows:
        raise fail(
            f"no session of yours ({me}) waits for a decision; `signoff sessions --paused` lists them all, and "
            'signoff decide SESSION "<one line>" answers any',
            BAD_INPUT,
        )
    if len(rows) > 1:
        named = ", ".join(f"{r['id']} ({_waiting_at(r)})" for r in rows[:5]) + (" …" if len(rows) > 5 else "")
        raise fail(
            f'{len(rows)} sessions wait for a decision: {named}; name one: signoff decide SESSION "<one line>"',
            BAD_INPUT,
        )
    gate = (rows[0].get("waiting_at") or {}).get("gate")
    return str(rows[0]["id"]), str(gate) if gate else None


def _waiting_at(row: dict[str, Any]) -> str:
    w = row.get("waiting_at") or {}
    if not w.get("gate"):
        return "waiting"
    return f"{w['gate']} {w.get('kind', '?')}" + (f" #{w['option']}" if w.get("option") else "")


def finish(out: Any, as_json: bool, fail_on: list[str] | None = None) -> None:
    """Print where the session got to, and exit with the code that says so."""
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


def fail_on_checks(values: list[str] | tuple[str, ...] | None) -> list[str]:
    """`--fail-on` values (repeated, or comma lists) as a list; anything unknown is bad input."""
    out = [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]
    wrong = [v for v in out if v not in ("ask", "default", "deadline")]
    if wrong:
        raise fail(f"--fail-on takes ask, default, deadline (not {', '.join(wrong)})", BAD_INPUT)
    return out


def terminal() -> bool:
    return sys.stdout.isatty() and sys.stdin.isatty() and os.environ.get("TERM") != "dumb"


class Screens(Protocol):
    """What the terminal UI offers the CLI. `tui/cli.py` registers one; agent never imports tui."""

    # Run a session on screen — a new one (`start`), or a paused one (`resume`, `revisit`); True if the
    # person quit while it still ran.
    # `by`: the name gates answered on screen are journaled under (`human:<by>`; default: the user's).
    def live(self, d: Any, how: str = "start", by: str | None = None) -> bool: ...

    def replay(self, d: Any) -> None: ...

    # Follow a session; `prefill` is a one-liner to show, previewed, at its gate (Enter confirms it) — at
    # gate `gate` only, when given (the gate the line was given for).
    def attach(self, d: Any, prefill: str | None = None, by: str | None = None, gate: str | None = None) -> bool: ...


def screens() -> Screens | None:
    """The screens `tui/cli.py` registered as `agent.cli.screens` (None: no terminal UI). Looked up, not
    imported: the package imports this module to register its commands."""
    return getattr(sys.modules.get("agent.cli"), "screens", None)


@contextmanager
def existing_session(
    session: str, store: str | None, *, accept_policy_change: bool = False
) -> Generator[Any, None, None]:
    """Find and lock a session, refusing to go on under a policy file that changed on disk unless
    the person accepts the change; a failed run is one line and exit 1."""
    from agent.errors import RunFailed

    d = find(session, store)
    try:
        with d.locked():
            check_policy_drift(d, accept_policy_change)
            yield d
    except RunFailed as exc:
        raise fail(f"session {session} failed: {exc}", FAILED) from None
    finally:
        d.close()


def check_policy_drift(d: Any, accept_policy_change: bool) -> None:
    """Refuse (SessionError) to go on under a policy file that changed on disk, unless accepted; an
    accepted change is journaled. The caller holds the session lock."""
    from agent.errors import SessionError
    from agent.run.documents import accept_policy_change as accept
    from agent.run.documents import check_documents, policy_drift
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
