"""The reader's entry points: a line at a gate (`parse_at_gate`) or for a kind of gate (`parse_decision`), the
plainest line for a decision, and the limits and examples the CLI shows."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from policies.decisions.grammar import GateGrammar, closest, read_line
from policies.decisions.phrases import normalise
from policies.decisions.reading import (
    MAX_REVERTS,
    REPEATED,
    TARGETED,
    all_but,
    command_words,
    hosts_excepted,
    named_command,
)
from policies.decisions.vocabulary import EXAMPLES, PARSER, check_length
from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, GATE_KINDS, GATES, OPTION_GATES, Decision, Gate, GateKind
from policies.refusals import DecisionError, NotUnderstood


def check_states(kind: GateKind, decision: Decision, status: Mapping[int, str]) -> None:
    """Refuse a decision that names options in a state it cannot apply to, or none where it must name one."""
    untargeted = decision.condition is None  # "skip it if it's unsafe" is a rule for the option it meets later
    if untargeted and decision.action in TARGETED and not decision.targets and kind in OPTION_GATES:
        pending = [k for k, v in status.items() if v == "pending"]
        raise DecisionError(
            f"{decision.action} which option? name it, e.g. '{decision.action} #{pending[0] if pending else 2}'"
        )
    for t in decision.targets:
        state = status.get(t)
        if decision.action in ("skip", "defer") and state not in ("pending", "current", None):
            raise DecisionError(f"#{t} is already {state}; only options still to try can be skipped or deferred")
        if decision.action == "select" and state in ("no-go", "kept", "current", "skipped"):
            why = {"no-go": "its investigation found a blocker", "skipped": "it was skipped"}.get(
                state, f"it is {state}"
            )
            raise DecisionError(f"#{t} cannot be selected: {why}")


@functools.cache
def try_here(kind: GateKind) -> str:
    """What a refusal offers instead at a `kind` gate: the words that choose where it asks which, else the examples
    this gate takes (no "roll back" or "retry with 8 runs" where neither is an answer)."""
    if (choices := GATES[kind].choices) is not None:
        return f"this gate asks {choices}"
    if kind == "command":  # its numbers are the listed commands'
        return "try: approve, approve 1, approve all but 3, reject, stop"
    fits: list[str] = []
    for line in EXAMPLES:
        try:
            parse_decision(line, kind=kind, options=(1, 2, 3), suggest=False)
        except DecisionError:
            continue
        fits.append(line)
    return f"try: {', '.join(fits or EXAMPLES)}"


def parse_decision(
    text: str,
    *,
    kind: GateKind,
    options: Sequence[int] = (),
    gate_option: int | None = None,
    by: str | None = None,
    hosts: Sequence[str] = (),
    titles: Mapping[int, str] | None = None,
    commands: Sequence[str] = (),
    status: Mapping[int, str] | None = None,
    suggest: bool = True,
) -> Decision:
    """Parse `text` as typed at a `kind` gate whose nameable options are `options` (and whose option
    runs on `hosts`, which "on all except gpu-7" may name; `titles` name options in words; at a command
    gate, numbers name the listed `commands`, 1-based; `status` says which options are still to try). A line not
    understood is refused with the closest reading the gate takes, when there is one (`suggest`)."""
    gate: dict[str, Any] = {
        "kind": kind, "options": options, "gate_option": gate_option, "by": by, "hosts": hosts, "titles": titles,
        "commands": commands, "status": status,
    }  # fmt: skip
    raw = text
    check_length(text)
    text = normalise(text)
    # "yes yes yes …", "continue continue …": a held-down key or a paste, not how anyone answers. It is
    # read (filler and the grammar make one answer of it) but echoed and confirmed, never taken as said.
    repeated = REPEATED.search(text)
    if not text:
        raise DecisionError(f"empty decision; try: {', '.join(EXAMPLES)}")
    if re.search(r"[^\x00-\x7f]", re.sub(r"[\W\d_]", "", text)):
        raise DecisionError(
            f"{raw.strip()[:60]!r} holds letters outside plain ASCII (a look-alike 'о' is not an 'o'); type it plainly"
        )
    if "?" in unicodedata.normalize("NFKC", raw):  # "keep it？", "keep it⁇", "run them⁉"
        raise DecisionError(
            f"didn't understand {raw.strip()!r} as a decision: it is a question, and no decision verb is acted on "
            "with a '?'; answer it, e.g. 'continue' or 'stop'"
        )
    if kind == "command" and re.match(r"^(?:next|move on|carry on|keep going|let'?s move on|next one)\b", text):
        raise DecisionError("at a command gate, say whether to run the commands: approve, or reject")
    titles = titles or {}
    if kind == "command" and commands:
        options, titles, gate_option = list(range(1, len(commands) + 1)), {}, None
        text = named_command(all_but(text, commands), commands)
    excepted, text = hosts_excepted(text, hosts)
    typed = text
    grammar = GateGrammar(
        kind=kind,
        options=list(options),
        open=[o for o in options if (status or {}).get(o, "pending") in ("pending", "current")],
        gate_option=gate_option,
        titles=titles,
        hosts=list(hosts),
        commands=list(commands),
    )
    try:
        decision = read_line(text, grammar)
    except NotUnderstood as exc:
        if suggest:
            exc.suggestion = closest(text, grammar, lambda line: parse_decision(line, **gate, suggest=False))
        if exc.suggestion is not None:
            exc.args = (re.sub(r"; try: .*$", "", str(exc.args[0])) + f"; did you mean: {exc.suggestion}?",)
        elif suggest:  # not when reading try_here's own examples: that would ask try_here again
            exc.args = (re.sub(r"; try: .*$", f"; {try_here(kind)}", str(exc.args[0])),)
        raise
    if decision.runs is not None and decision.action != "retry":
        raise DecisionError(f"a count of runs goes with retry, not {decision.action}")
    if decision.runs is not None and kind == "brain_unavailable":
        raise DecisionError("'retry' here calls the model again from the next step; it takes no count")
    programs = "|".join(sorted({re.escape(w) for c in commands if c.strip() for w in command_words(c)}))
    named = re.sub(rf"\bthe (?:{programs}) one\b", "", typed) if programs else typed  # "not the rm one" names one
    first_two = r"\b(?:the )?first (?:two|2)\b"  # "just the first two": 1 and 2, said without their numbers
    named = re.sub(first_two, "", named)
    if kind == "command" and re.search(first_two, typed) and re.search(r"\d", re.sub(first_two, "", typed)):
        raise DecisionError("which commands? 'the first two' and a number: say the numbers, e.g. 'approve 1 and 2'")
    if (
        kind == "command"
        and decision.action == "approve"
        and not decision.targets
        and len(commands) > 1
        and re.search(r"\b(?:run|approve|do|execute|ok|okay|with)\s+it\b(?!')", named)
    ):
        # "run it" with three commands listed: which one?
        raise DecisionError(f"which command? the commands are numbered 1-{len(commands)}: 'approve 1', 'approve'")
    if kind == "command" and decision.action == "approve" and re.search(r"\b(?:first|this|that|one|both)\b", named):
        raise DecisionError(f"which command? the commands are numbered 1-{len(commands)}: 'approve 1', 'approve'")
    own = [gate_option] if gate_option is not None else []
    if (
        kind != "command"
        and decision.condition is None  # a rule's targets say which option's gate it waits for
        and decision.targets
        and decision.targets != own
        and decision.action not in TARGETED
    ):
        raise DecisionError(
            f"{decision.action} takes no option here; to pick options say 'go with …', to drop them 'skip …'"
        )
    unknown = [t for t in decision.targets if options and t not in options]
    if unknown:
        raise DecisionError(
            f"unknown option(s) {', '.join('#' + str(t) for t in unknown)}; options here: "
            + ", ".join(f"#{o}" for o in options)
        )
    if decision.condition is not None and re.search(r"\d,\d", raw):
        raise DecisionError("a number in a condition is written 5.5, not 5,5 (or is it 5 and 5?)")
    if decision.condition is not None and re.search(r"confidence[^,]*\d\s*%", text):
        raise DecisionError("confidence is a fraction from 0 to 1: say 'confidence is at least 0.7'")
    if decision.condition is not None:
        from policies.session_rules import kinds_for_condition  # the gate facts only for a condition

        kinds: list[GateKind] = [k for k in kinds_for_condition(decision.condition) if decision.action in ALLOWED[k]]
        if not kinds:
            raise DecisionError(f"no gate can {decision.action} on the condition {decision.condition!r}")
        if decision.otherwise and not any(decision.otherwise in ALLOWED[k] for k in GATE_KINDS if k in kinds):
            raise DecisionError(f"otherwise {decision.otherwise}: no gate that condition is about can do that")
        try:
            Condition(decision.condition, FACTS[kinds[0]])
        except ExprError as exc:  # pragma: no cover - kinds_for_condition already compiled it
            raise DecisionError(str(exc)) from None
    elif decision.action not in ALLOWED[kind] and decision.action in GATES[kind].synonyms:
        # The gate's own word for it: "go ahead" at a command gate runs the commands, "revert" at the
        # rollback gate is its "revert and verify again".
        decision.action = GATES[kind].synonyms[decision.action]
    elif kind == "plan" and decision.action == "reject":
        # "reject", "no", ❌ answer "Approve the plan?": nothing of it runs. A "don't" the grammar read as the verb
        # ("don't reject") or an exclamation ("oh no") is not that answer
        if re.search(r"\b(?:don'?t|do not|never|not|oh|ah|uh)\b", raw.lower()):
            raise DecisionError(f"{raw.strip()!r}: approve the plan, or stop? say which")
        decision.action = "stop"
        decision.read_as.append("reject at the plan gate → stop (nothing of the plan runs)")
    if decision.condition is None and decision.action not in ALLOWED[kind]:
        raise DecisionError(
            f"a {kind} gate cannot {decision.action}; it takes: {', '.join(a for a in ALLOWED[kind] if a != 'ask')}"
        )
    if decision.action == "select" and len(decision.targets) > 1 and set(decision.targets) != set(grammar.open):
        # "do 1 and 2" with #3 open too: only those, or those first? a guess either way
        raise DecisionError(f"{raw.strip()!r}: try only those, or those first? say 'go with N' or 'skip …'")
    if (
        decision.action == "retry"
        and decision.runs is None
        and re.search(r"\b\d+ (?:more )?(?:times|runs|pairs|attempts|tries)\b", text)
    ):
        # "revert again 3 times. then revert again": the count said apart from the retry that was read
        raise DecisionError(f"{raw.strip()!r}: how many times? say one retry with its count")
    if kind == "rollback" and decision.runs is not None and re.search(r"\b(?:pairs?|runs?)\b", text):
        raise DecisionError("the rollback gate counts reverts, not benchmark runs: say 'revert again 3 times'")
    if decision.action == "retry" and decision.scope == "standing" and decision.condition is None:
        raise DecisionError("a standing retry with no condition would measure again at every such gate; say when")
    if kind == "rollback" and decision.runs is not None and not 2 <= decision.runs <= MAX_REVERTS:
        raise DecisionError(f"the rollback gate reverts and verifies again up to {MAX_REVERTS} times in a row")
    if decision.action == "retry" and decision.runs is not None and not 2 <= decision.runs <= 50:
        raise DecisionError("retry takes between 2 and 50 runs")
    if excepted:
        if decision.rationale:
            # "keep it, the harness is flaky, but not on gpu-2": is gpu-2 left out, or is the reason about it?
            raise DecisionError("'except HOST' goes with a keep alone, without a reason beside it: say the hosts only")
        if decision.action not in ("approve", "continue") or decision.condition or decision.otherwise:
            raise DecisionError(
                "'except HOST' goes with a plain keep: 'approve on all except gpu-7' keeps the option on the "
                "other hosts and rolls it back on gpu-7"
            )
        decision.except_hosts = excepted
    if repeated is not None:
        times = len(re.findall(r"\w+", repeated.group(0)))
        decision.read_as.append(f"{repeated.group(1)!r} said {times} times in a row, read once")
    decision.confirm = (
        decision.hedged
        or decision.action in ("rollback", "stop")
        or decision.scope == "standing"
        or bool(decision.except_hosts)
        or bool(decision.read_as)
    )
    if status is not None and kind != "command":
        check_states(kind, decision, status)
    decision.raw = raw
    decision.parser = PARSER
    decision.by = by
    return decision


def pronoun_option(gate: Gate) -> int | None:
    """The option "it" means at this gate: the one it is about, and at a continue-or-ask gate the one it offers
    next ("skip it" there cannot mean the option that just finished)."""
    if gate.kind == "continue_or_ask":
        following = str(gate.facts.get("next_option") or "")
        return int(following) if following.isdigit() else None
    return gate.option


def option_states(gate: Gate) -> dict[int, str]:
    """Each option's state as the gate shows it (pending, current, kept, skipped, no-go …), keyed by its number."""
    return {int(k): v for k, v in gate.status.items() if k.isdigit()}


def parse_at_gate(text: str, gate: Gate, *, by: str | None = None) -> Decision:
    """`text` read at `gate` as the live gate reads it: its options, titles, hosts, commands and their states."""
    return parse_decision(
        text,
        kind=gate.kind,
        options=gate.options,
        gate_option=pronoun_option(gate),
        by=by,
        hosts=gate.hosts,
        titles={int(k): t for k, t in gate.titles.items() if int(k) in gate.options},
        commands=gate.commands,
        status=option_states(gate),
    )
