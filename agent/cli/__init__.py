"""`signoff` — the command line. Exit codes: 0 finished, 3 paused at a gate that needs a person,
2 bad input, 1 failed. `--json` prints one summary object on stdout (progress goes to stderr).

This module is the app and its table of commands; the commands live by group in `running` (demo, run,
decide, resume, attach), `reading` (replay, report, sessions), `transfer` (export, import), `policy` (decision
parse, policy suggest/check/explain) and `store` (store init), with what they share in `shared`. An error
raised on purpose is printed here, as one line, with its exit code from `agent/errors.py`.

Heavy imports (LangGraph, the session machinery) happen inside commands, so `signoff --help`
stays fast.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from agent.cli import check, init, policy, reading, running, schema, store, transfer
from agent.cli.shared import Screens
from agent.errors import INTERRUPTED, exit_code

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

app.command()(running.demo)
app.command()(running.run)
app.command()(check.check)
app.command()(init.init)
app.command()(schema.schema)
app.command()(running.decide)
app.command()(running.resume)
app.command()(running.abandon)
app.command()(reading.replay)
app.command()(reading.report)
app.command()(running.attach)
app.command()(reading.sessions)
app.command("export")(transfer.export_cmd)
app.command("import")(transfer.import_cmd)
decision_app.command("parse")(policy.decision_parse)
policy_app.command("suggest")(policy.policy_suggest)
policy_app.command("check")(policy.policy_check)
policy_app.command("explain")(policy.policy_explain)
store_app.command("init")(store.store_init)

# The terminal UI, when `tui/cli.py` registers one (agent never imports tui); see `shared.screens()`.
screens: Screens | None = None


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
