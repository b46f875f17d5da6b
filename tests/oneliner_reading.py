"""How a corpus line is read at a real gate, and whether the reading is the meaning it was written with.

A meaning is `refuse` or `ACTION[ TARGETS][ SLOT...]`: `skip 1,3`, `retry runs=3`, `skip 2 scope=for_now if=unsafe`,
`continue if=next_step else=ask`. Slots a meaning does not name are not checked; `continue` and `approve` are the
same answer at every gate that takes both. A reading is what the live gate does with the line: the one-line reader,
then the gate's own check of the options named (`agent.run.answers.check_targets`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.run.answers import check_targets
from policies.decisions import DecisionError, parse_at_gate, pronoun_option
from policies.gates import ALLOWED, Decision, Gate

TITLES = {1: "two-batch overlap (TBO)", 2: "overlap scheduler", 3: "MoE/attention kernel occupancy"}
COMMANDS = ["nvidia-smi -q", "py-spy dump --pid 4812", "rm -rf /tmp/sglang-cache"]
HOSTS = ["gpu-1", "gpu-2"]
GATE_OPTION = {"safety": 2, "rollback": 2, "continue_or_ask": 2}

# The words a condition's fact may be named by in a meaning (`if=unsafe`), and what its CEL mentions.
FACT_WORDS = {
    "unsafe": '"unsafe"',
    "safe": '"safe"',
    "gain": "gain_pct",
    "wedges": "wedges",
    "confidence": "confidence",
    "next_step": "has_next_step",
    "has_next_step": "has_next_step",
    "verified": "verified",
    "health": "health_ok",
}
GO_AHEAD = {"approve", "continue", "accept"}  # "accept": corpus M's word for the rollback and goal gates' go-ahead


@dataclass(frozen=True)
class Demo:
    """The demo's gates as one corpus describes them: which option each is about and each option's state."""

    status: dict[str, dict[str, str]]
    next_option: str = "3"  # what a continue-or-ask gate offers next

    def gate(self, kind: str) -> Gate:
        return Gate(
            id="g1",
            kind=kind,  # type: ignore[arg-type]
            option=GATE_OPTION.get(kind),
            question="",
            facts={"next_option": self.next_option} if kind == "continue_or_ask" else {},
            allowed=list(ALLOWED[kind]),  # type: ignore[index]
            options=sorted(TITLES),
            hosts=HOSTS if kind == "safety" else [],
            titles={str(k): t for k, t in TITLES.items()},
            commands=COMMANDS if kind == "command" else [],
            status=self.status.get(kind, {"1": "pending", "2": "pending", "3": "pending"}),
        )


# The first corpora's gates: #2 is the current option wherever a gate is about one.
FIRST = Demo(status={k: {"1": "pending", "2": "current", "3": "pending"} for k in GATE_OPTION})
# The docs-only corpora's gates, as their writers were told: triage found #1 a no-go; at the continue-or-ask gate
# #2 was skipped and #3 is next.
DOCS = Demo(
    status={
        "triage": {"1": "no-go", "2": "pending", "3": "pending"},
        "safety": {"1": "no-go", "2": "current", "3": "pending"},
        "rollback": {"1": "no-go", "2": "current", "3": "pending"},
        "continue_or_ask": {"1": "no-go", "2": "skipped", "3": "pending"},
    }
)


def decide(demo: Demo, kind: str, text: str) -> Decision:
    """The decision the live gate takes for `text` (DecisionError when it refuses)."""
    gate = demo.gate(kind)
    decision = parse_at_gate(text, gate)
    check_targets(gate, decision)
    return decision


def reading(demo: Demo, kind: str, text: str) -> str:
    """`refuse`, or the decision as a meaning with every slot it has."""
    try:
        d = decide(demo, kind, text)
    except DecisionError:
        return "refuse"
    own = pronoun_option(demo.gate(kind))
    targets = [] if d.targets == [own] else d.targets  # "skip it" at #2's gate: #2
    words = [d.action + (" " + ",".join(map(str, targets)) if targets else "")]
    if d.runs is not None:
        words.append(f"runs={d.runs}")
    if d.scope != "once":
        words.append(f"scope={d.scope}")
    if d.condition:
        words.append(f"cond={d.condition}")
    if d.otherwise:
        words.append(f"else={d.otherwise}")
    return " ".join(words)


def same(want: str, got: str, kind: str = "") -> bool:
    """Is reading `got` the meaning `want` (only the slots `want` names are checked)?"""
    if "refuse" in (want, got):
        return want == got
    want, got = _plain(want, kind), _plain(got, kind)
    (w_action, w_targets), (g_action, g_targets) = _head(want), _head(got)
    if kind in GATE_OPTION and w_targets == str(pronoun_option(DOCS.gate(kind))):
        w_targets = ""  # "drop #2" at #2's own gate is "skip it"
    if w_targets != g_targets or not _same_action(w_action, g_action, kind):
        return False
    have = dict(_slots(got))
    for name, value in _slots(want):
        if name == "if":
            # `if=unsafe`, `if=not_unsafe`, or a comparison `if=gain<5`: its fact, negation and number in the CEL
            slot = re.match(r"(not_)?([a-z_]+?)\s*(?:[<>]=?|==)?\s*([\d.]*)$", value)
            assert slot is not None, f"a meaning's condition {value!r} is not FACT, not_FACT or FACT<N"
            negated, fact, number = slot.groups()
            cond = have.get("cond", "")
            if FACT_WORDS[fact] not in cond or (number and number not in cond) or (negated and "!" not in cond):
                return False
        elif name == "else":
            if not _same_action(value, have.get("else", ""), kind):
                return False
        elif have.get(name) != value:
            return False
    return True


def _same_action(want: str, got: str, kind: str) -> bool:
    """The same answer at this gate: continue and approve everywhere; at a safety gate skip and roll back (both roll
    the option back, verify and move on: agent.run.answers.meaning); at the plan gate reject and stop (its no)."""
    return (
        want == got
        or {want, got} <= GO_AHEAD
        or (kind == "safety" and {want, got} <= {"skip", "rollback"})
        or (kind == "rollback" and {want, got} <= {"rollback", "retry"})  # its retry is "revert again"
        or (kind == "plan" and {want, got} <= {"reject", "stop"})  # its no: nothing of the plan runs
    )


def _plain(meaning: str, kind: str) -> str:
    """A select of what the gate does next anyway, as the go-ahead it is: "go with 3" where #3 is what a
    continue-or-ask gate offers next, "go with 2 and 3" at a triage whose open options are #2 and #3; at a command
    gate, an approval of every listed command is the gate's approve."""
    slots = meaning.split(" ")[1:]
    action, targets = _head(meaning)
    if kind == "command" and action == "approve" and targets == ",".join(map(str, range(1, len(COMMANDS) + 1))):
        return " ".join(["approve", *(s for s in slots if "=" in s)])
    nxt = {"continue_or_ask": "3", "triage": "2,3", "plan": "1,2,3"}.get(kind)
    if kind == "continue_or_ask" and action == "select" and not targets:
        targets = nxt or ""  # a reading leaves out the option "it" means, which a select there is the next one
    first = (nxt or "").split(",")[0]  # "go with 2" where #2 is what comes next anyway
    if action == "select" and targets in (nxt, first) and not any(s.startswith(("if=", "cond=")) for s in slots):
        rest = [s for s in slots if "=" in s]
        return " ".join(["continue", *rest])
    return meaning


def _head(meaning: str) -> tuple[str, str]:
    """(action, targets) of a meaning or reading."""
    parts = meaning.split(" ")
    targets = parts[1] if len(parts) > 1 and "=" not in parts[1] else ""
    if parts[0] == "select" or not targets:
        return parts[0], targets  # a select's order is the order the options are tried in
    return parts[0], ",".join(sorted(targets.split(","), key=int))  # a set


def _slots(got: str) -> list[tuple[str, str]]:
    """The `name=value` slots of a reading; a condition's value runs to the next slot."""
    out: list[tuple[str, str]] = []
    for part in got.split(" ")[1:]:
        if "=" in part and part.split("=", 1)[0] in ("runs", "scope", "cond", "else", "if"):
            name, value = part.split("=", 1)
            out.append((name, value))
        elif out and out[-1][0] == "cond":
            out[-1] = ("cond", out[-1][1] + " " + part)
    return out


def score(
    demo: Demo, corpus: list[tuple[str, str, str]]
) -> tuple[int, list[tuple[str, str, str, str]], list[tuple[str, str, str, str]]]:
    """(lines read right, wrong actions, clear lines refused), each as (gate, text, meaning, reading)."""
    got = [(kind, text, want, reading(demo, kind, text)) for kind, text, want in corpus]
    wrong = [g for g in got if g[3] != "refuse" and not same(g[2], g[3], g[0])]
    missed = [g for g in got if g[3] == "refuse" and g[2] != "refuse"]
    return len(got) - len(wrong) - len(missed), wrong, missed
