"""Working with decisions and policies without a session: how a one-liner is understood at a gate
(`decision parse`), and a policy file checked, explained, or improved from people's answers
(`policy check`, `policy explain`, `policy suggest`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, get_args

import typer

from agent.cli.shared import JsonOpt, StoreOpt, fail, find
from agent.errors import BAD_INPUT, FAILED
from policies.kinds import GateKind


def decision_parse(
    text: Annotated[str, typer.Argument(help="The one-line decision.")],
    gate: Annotated[
        str,
        typer.Option(
            "--gate",
            help="Gate kind: " + ", ".join(get_args(GateKind)),
        ),
    ],
    options: Annotated[str, typer.Option("--options", help="Option ids nameable here, e.g. 1,2,3.")] = "",
    title: Annotated[
        list[str] | None,
        typer.Option("--title", help="An option's title, to name it in words: --title '2=overlap scheduler'."),
    ] = None,
    option: Annotated[
        int | None,
        typer.Option(
            "--option",
            help="The option 'it' means: the one a safety or rollback gate is about, the one a continue-or-ask "
            "gate offers next.",
        ),
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help="An option's state, as the gate sees it: --status 1=no-go (default pending)."),
    ] = None,
    host: Annotated[list[str] | None, typer.Option("--host", help="A host the option runs on (for 'except').")] = None,
    command: Annotated[
        list[str] | None, typer.Option("--command", help="A command a command gate lists, in order (numbered from 1).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show how a one-liner would be understood at a gate, exactly as the live gate reads it (nothing is recorded)."""
    from agent.run.answers import answer
    from policies.decisions import parse_at_gate
    from policies.gates import ALLOWED, GATE_KINDS, Gate

    if gate not in GATE_KINDS:
        raise fail(f"unknown gate kind {gate!r}; one of {', '.join(GATE_KINDS)}", BAD_INPUT)
    try:
        ids = [int(x.strip().lstrip("#")) for x in options.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--options takes comma-separated option ids, not {options!r}", BAD_INPUT) from None
    titles: dict[int, str] = {}
    for entry in title or []:
        key, sep, words = entry.partition("=")
        if not sep or not key.strip().lstrip("#").isdigit() or not words.strip():
            raise fail(f"--title takes ID=TITLE, e.g. --title '2=overlap scheduler', not {entry!r}", BAD_INPUT)
        titles[int(key.strip().lstrip("#"))] = words.strip()
    known = ids or sorted(titles) or ([option] if option is not None else [])
    states = {str(k): "pending" for k in known}
    for entry in status or []:
        key, sep, state = entry.partition("=")
        if not sep or key.strip().lstrip("#") not in states or not state.strip():
            raise fail(
                f"--status takes ID=STATE for an option of --options, e.g. --status 1=no-go, not {entry!r}", BAD_INPUT
            )
        states[key.strip().lstrip("#")] = state.strip()
    facts: dict[str, object] = {}
    about = option
    if gate == "continue_or_ask":
        facts["next_option"], about = str(option) if option is not None else "", None
    elif option is not None and states.get(str(option)) == "pending":
        states[str(option)] = "current"
    at = Gate(
        id="g0",
        kind=gate,  # type: ignore[arg-type]
        option=about,
        question="",
        facts=facts,
        allowed=list(ALLOWED[gate]),  # type: ignore[index]
        options=known,
        hosts=list(host or []),
        titles={str(k): t for k, t in titles.items()},
        commands=list(command or []),
        status=states,
    )
    d = parse_at_gate(text, at)  # the rules brain's reading at a live gate (agent/brain/rules.py)
    said = answer(at, d, next_rule=1)  # what the gate itself refuses, as at a live gate
    if as_json:
        typer.echo(d.model_dump_json(indent=2))
    else:
        confirm = d.confirm or (said.decision is not None and said.decision.confirm)
        typer.echo(said.echo + (" (needs confirmation)" if confirm else ""))


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

    with ExitStack() as stack:
        dirs = [find(s, store) for s in sessions]
        for d in dirs:
            stack.callback(d.close)
        journals = [stack.enter_context(d.journal_file()) for d in dirs]
        try:
            if policy is not None:
                base = load_policy(policy)
            else:
                started = next(e for e in dirs[0].events() if e["kind"] == "session.started")
                base = load_policy_text(started["policy_text"], path=started.get("policy") or "policy.yaml")
        except (FileNotFoundError, StopIteration) as exc:
            raise fail(str(exc) or "the first session has no session.started event", BAD_INPUT) from None
        notes, diff, text = suggest(journals, base, minimum=minimum)
    for line in notes:
        typer.echo(f"# {line}", err=True)
    if diff:
        typer.echo(diff, nl=False)
        if out is not None:
            if base.path is not None and out.resolve() == Path(base.path).resolve():
                raise fail("--out must be a new file: suggestions are never applied to the policy in place", BAD_INPUT)
            out.write_text(text)
            typer.echo(f"# wrote the suggested policy to {out}", err=True)


def policy_check(
    file: Annotated[str, typer.Argument(help="Policy file or preset name.")],
    as_json: JsonOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on lint warnings too.")] = False,
    show: Annotated[
        bool, typer.Option("--show", help="Print the resolved policy (what a session runs under) on stdout.")
    ] = False,
) -> None:
    """Load a policy (schema, CEL type checks against each gate's facts, its `tests:`, the files it
    extends) and lint it."""
    from policies.load import load_policy
    from policies.schema import SourceError, lint

    try:
        p = load_policy(file)
    except SourceError as exc:
        if as_json:
            typer.echo(json.dumps({"ok": False, "error": str(exc), "file": exc.path, "line": exc.line, "warnings": []}))
        raise  # and one line on stderr, exit 2 (agent/errors.py)
    rules = sum(len(r) for r in p.rules.values())
    tests = sum(part.tests for part in p.parts) if len(p.parts) > 1 else len(p.model.tests)
    warnings = lint(p)
    if as_json:
        out = {
            "ok": True,
            "name": p.name,
            "sha256": p.sha256,
            "rules": rules,
            "tests": tests,
            "warnings": [w.model_dump() | {"file": w.file or str(p.path)} for w in warnings],
            "parts": [part.model_dump() for part in p.parts],
        }
        if show:
            out["resolved_text"] = p.text
        typer.echo(json.dumps(out))
        return _strict(strict, warnings)
    for w in warnings:
        typer.echo(f"{w.file or p.path}:{w.line or 1}: warning: {w.message}", err=True)
    if show:
        typer.echo(p.text, nl=not p.text.endswith("\n"))
        return _strict(strict, warnings)
    typer.echo(
        f"OK: {p.name} ({p.path}) — {rules} rules, {tests} tests pass"
        + (f", {len(warnings)} warning(s)" if warnings else "")
    )
    if len(p.parts) > 1:
        typer.echo(
            f"  resolved from {len(p.parts)} files, at each gate the first one's rules first, after the guards of "
            "those it extends:"
        )
        for part in p.parts:
            typer.echo(
                f"    {part.path} ({part.name}): {len(part.rules)} rules, {part.tests} tests, sha256 {part.sha256[:12]}"
            )
    _strict(strict, warnings)


def _strict(strict: bool, warnings: Sequence[object]) -> None:
    if strict and warnings:
        raise typer.Exit(FAILED)


def policy_explain(
    file: Annotated[str, typer.Argument(help="Policy file or preset name.")],
    gate: Annotated[str, typer.Option("--gate", help="Gate kind.")],
    facts: Annotated[str, typer.Option("--facts", help='The gate\'s facts as JSON, e.g. \'{"verdict": "unsafe"}\'.')],
    as_json: JsonOpt = False,
) -> None:
    """Show the decision a policy makes for these facts, the rule that made it, why earlier rules did not, and every
    later rule that matched too."""
    from policies.engine import PolicyEngine
    from policies.gates import FACTS, GATE_KINDS
    from policies.load import load_policy
    from policies.schema import SourceError

    if gate not in GATE_KINDS:
        raise fail(f"unknown gate kind {gate!r}; one of {', '.join(GATE_KINDS)}", BAD_INPUT)
    try:
        values = json.loads(facts)
        if not isinstance(values, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise fail(f"--facts must be a JSON object: {exc}", BAD_INPUT) from None
    try:
        p = load_policy(file)
        ex = PolicyEngine(p).explain(gate, values)  # type: ignore[arg-type]
    except SourceError:
        raise  # one line, exit 2 (agent/errors.py); not the facts' fault
    except ValueError as exc:
        known = ", ".join(f"{n} ({s.type})" for n, s in FACTS[gate].items())  # type: ignore[index]
        raise fail(f"{exc}; facts of a {gate} gate: {known}", BAD_INPUT) from None
    # Which file each rule was written in, for a policy that extends others.
    where = {
        r.spec.id: f"{r.file}:{r.line}" if r.line else str(r.file)
        for rules in p.rules.values()
        for r in rules
        if r.file and len(p.parts) > 1
    }
    if as_json:
        out = ex.model_dump(mode="json", exclude_none=True)
        if where:
            tried = [s.rule for s in ex.steps] + ex.matched
            out["rule_files"] = {r: where[r] for r in tried if r in where}
        typer.echo(json.dumps(out, indent=2))
        return
    d = ex.decision
    typer.echo(f"decision: {d.action}" + (f" (then {d.then})" if d.then else "") + f" — by {d.by}")
    for step in ex.steps:
        typer.echo(
            f"  {step.rule}: {step.outcome}"
            + (f" — {step.detail}" if step.detail else "")
            + (f"  [{where[step.rule]}]" if step.rule in where else "")
        )
    if ex.matched:
        typer.echo(
            "  rules that matched, the one that decided first: "
            + ", ".join(r + (f" [{where[r]}]" if r in where else "") for r in ex.matched)
        )
    missing = [n for n in FACTS[gate] if n not in values]  # type: ignore[index]
    if missing:
        typer.echo(f"  (facts not given: {', '.join(missing)}; rules that read them fail closed)")
