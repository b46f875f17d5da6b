"""One line of human text → a `Decision`, by a small deterministic grammar (`grammar/v1`).

    decision  := [lead] clause [("," | ", or" | "otherwise" | "else") clause]
    clause    := action [targets] [params] [scope] [condition]  |  N "is" ["a"|"the"] ("bigger"|"better"|…) …
    condition := ("if" | "only if" | "when" | "unless") pred {("and" | "or") pred}

Unknown text is refused with "didn't understand …; try: …" — the grammar never guesses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from policies.engine import kinds_for_condition
from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, Action, Decision, GateKind, Scope

PARSER = "grammar/v1"

EXAMPLES = [
    "continue",
    "skip #2",
    "go with 3",
    "skip #2 for now if it's unsafe",
    "roll back",
    "retry with 8 runs",
    "stop and ask me",
    "stop",
]


class DecisionError(ValueError):
    """The text is not a decision this gate can take; the message says what would be."""


class NotUnderstood(DecisionError):
    """The grammar could not read the text at all (as opposed to reading a decision it must refuse):
    the one case a language-model interpreter may be asked to try."""


# Longest phrases first within the table; the first action whose phrase starts the clause wins.
_VERBS: list[tuple[str, Action]] = [
    (r"stop and ask(?: me)?", "ask"), (r"ask me(?: first)?", "ask"), (r"check with me", "ask"),
    (r"wait for me", "ask"), (r"pause", "ask"), (r"ask", "ask"),
    (r"go ahead with", "select"), (r"go with", "select"), (r"let'?s do", "select"), (r"pick", "select"),
    (r"choose", "select"), (r"take", "select"), (r"try", "select"), (r"select", "select"),
    (r"do", "select"),
    (r"go ahead", "continue"), (r"continue", "continue"), (r"proceed", "continue"), (r"carry on", "continue"),
    (r"keep going", "continue"), (r"next", "continue"), (r"move on", "continue"),
    (r"hold off on", "defer"), (r"park", "defer"), (r"postpone", "defer"), (r"defer", "defer"),
    (r"skip", "skip"), (r"drop", "skip"), (r"pass on", "skip"),
    (r"try again", "retry"), (r"retry", "retry"), (r"re-?run", "retry"), (r"run (?:it )?again", "retry"),
    (r"roll ?back", "rollback"), (r"revert", "rollback"), (r"undo", "rollback"),
    (r"stop", "stop"), (r"abort", "stop"), (r"halt", "stop"), (r"cancel", "stop"),
    (r"ship it", "approve"), (r"lgtm", "approve"), (r"approve", "approve"), (r"keep it", "approve"),
    (r"keep", "approve"), (r"yes", "approve"), (r"ok(?:ay)?", "approve"), (r"y", "approve"),
    (r"reject", "reject"), (r"don'?t", "reject"), (r"nope", "reject"), (r"no", "reject"),
]  # fmt: skip
# "try again" must win over "try": order the table by phrase length within a shared prefix.
_VERBS.sort(key=lambda v: -len(v[0]))
_VERB_RE = [(re.compile(rf"^{pattern}\b"), action) for pattern, action in _VERBS]

_HEDGES = ("sounds like", "i think", "i guess", "maybe", "probably", "perhaps", "seems like")
_LEADS = ("let's", "lets", "please", "ok so", "okay so", "so", "then", "just", "only", "and")
_FILLER_PHRASES = ("for clarification", "for confirmation", "for guidance", "for me", "for now please")
_FILLER = {
    "anyway",
    "anyways",
    "then",
    "please",
    "now",
    "it",
    "this",
    "this one",
    "that",
    "that one",
    "too",
    "instead",
    "first",
    "for me",
    "thanks",
}

_SCOPES: list[tuple[str, Scope]] = [
    (r"for now", "for_now"), (r"for the moment", "for_now"), (r"temporarily", "for_now"),
    (r"from now on", "standing"), (r"going forward", "standing"), (r"always", "standing"),
]  # fmt: skip

_ENUM_WORDS: dict[str, str] = {}  # "unsafe" → 'verdict == "unsafe"', gathered from the gate facts
for _kind, _facts in FACTS.items():
    for _name, _spec in _facts.items():
        for _value in _spec.enum or []:
            if _name in ("klass", "last_outcome"):
                continue
            phrase = _value.replace("_", " ")
            _ENUM_WORDS.setdefault(phrase, f'{_name} == "{_value}"')
            if _name == "risk":
                _ENUM_WORDS.setdefault(f"{phrase} risk", f'risk == "{_value}"')

_BOOL_PHRASES: list[tuple[str, str]] = [
    (r"(?:you|we) have (?:a )?next steps?", "has_next_step"),
    (r"there (?:is|are) (?:a )?(?:next steps?|more options?|options? left)", "has_next_step"),
    (r"(?:(?:you are|you're|we are|we're) )?(?:unsure|not sure|uncertain|in doubt)"
     r"(?: (?:how to proceed|what to do|about it|about the next step))?", "confidence < 0.7"),
    (r"(?:you are|you're|we are|we're) (?:sure|confident)|confident", "confidence >= 0.7"),
    (r"it (?:wedges|hangs|hung|wedged)|(?:there are|any) wedges", "wedges > 0"),
    (r"(?:it is |it's )?verified", "verified"),
    (r"(?:the )?health(?: check)? (?:fails|failed)", "!health_ok"),
]  # fmt: skip

_FIELDS = {
    "gain": "gain_pct",
    "the gain": "gain_pct",
    "improvement": "gain_pct",
    "the improvement": "gain_pct",
    "speedup": "gain_pct",
    "confidence": "confidence",
    "wedges": "wedges",
    "pairs": "pairs",
}
_CMPS = [
    (r"is at least|at least|>=", ">="),
    (r"is at most|at most|<=", "<="),
    (r"is (?:over|above|more than|greater than)|over|above|more than|greater than|>", ">"),
    (r"is (?:under|below|less than)|under|below|less than|<", "<"),
    (r"is|==|=", "=="),
]


def _normalise(text: str) -> str:
    text = text.strip().lower()
    text = text.translate(str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": ",", "–": ","}))
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(" .!?")


def _pred(text: str) -> str:
    text = text.strip()
    text = re.sub(r"^(?:it's|it is|its|it turns out(?: to be)?|they are|they're|that's|that is)\s+", "", text)
    text = re.sub(r"^(?:a|an)\s+", "", text)
    if text in _ENUM_WORDS:
        return _ENUM_WORDS[text]
    for pattern, expr in _BOOL_PHRASES:
        if re.fullmatch(pattern, text):
            return expr
    for alias, field in sorted(_FIELDS.items(), key=lambda f: -len(f[0])):
        if text.startswith(alias + " "):
            rest = text[len(alias) + 1 :]
            for cmp_pattern, op in _CMPS:
                m = re.fullmatch(rf"(?:{cmp_pattern})\s*(-?\d+(?:\.\d+)?)\s*%?", rest)
                if m:
                    number = m.group(1)
                    if FACTS["safety"].get(field) and FACTS["safety"][field].type == "double" and "." not in number:
                        number += ".0"
                    return f"{field} {op} {number}"
    raise NotUnderstood(f"didn't understand the condition {text!r}; try: if it's unsafe, if gain is at least 5%")


def _condition(text: str) -> str:
    negate = False
    m = re.match(r"^(only if|if|when|unless)\s+(.*)$", text)
    if not m:
        raise NotUnderstood(f"didn't understand {text!r}")
    negate = m.group(1) == "unless"
    parts = re.split(r"\s+(and|or)\s+", m.group(2))
    expr = _pred(parts[0])
    for i in range(1, len(parts), 2):
        op = "&&" if parts[i] == "and" else "||"
        expr = f"{expr} {op} {_pred(parts[i + 1])}"
    if negate:
        expr = f"!({expr})"
    return expr


def _targets(text: str, gate_option: int | None, known: Sequence[int]) -> tuple[list[int], str]:
    m = re.match(r"^(?:options?\s+)?(#?\d+(?:\s*(?:,|and|&)\s*#?\d+)*)\b\s*(.*)$", text)
    if m:
        return [int(n) for n in re.findall(r"\d+", m.group(1))], m.group(2)
    m = re.match(r"^(?:all|everything|the rest)\b\s*(.*)$", text)
    if m:
        return list(known), m.group(1)
    m = re.match(r"^(?:it|this one|this|that one|that)\b\s*(.*)$", text)
    if m and gate_option is not None:
        return [gate_option], m.group(1)
    return [], text


def _clause(text: str, gate_option: int | None, known: Sequence[int]) -> Decision:
    m = re.match(
        r"^#?(\d+) (?:is|looks like|seems) (?:a |the )?(bigger|better|safer|larger|clearer|best|biggest)\b.*$",
        text,
    )
    if m:
        return Decision(action="select", targets=[int(m.group(1))], rationale=text)
    found = next(((vm, verb) for pattern, verb in _VERB_RE if (vm := pattern.match(text))), None)
    if found is None:
        raise NotUnderstood(f"didn't understand {text!r}: no decision verb; try: {', '.join(EXAMPLES)}")
    vm, action = found
    rest = text[vm.end() :].strip()
    runs = None
    rm = re.search(r"\b(?:with )?(\d+) (?:runs|pairs|seeds|attempts)\b|\b(\d+) times\b", rest)
    if rm:  # before targets: in "try again 3 times" the 3 is a count, not option #3
        runs = int(rm.group(1) or rm.group(2))
        rest = (rest[: rm.start()] + rest[rm.end() :]).strip()
    targets, rest = _targets(rest, gate_option, known)
    scope: Scope = "once"
    for pattern, value in _SCOPES:
        sm = re.search(rf"\b{pattern}\b", rest)
        if sm:
            scope = value
            rest = (rest[: sm.start()] + rest[sm.end() :]).strip()
            break
    condition = None
    cm = re.search(r"\b(only if|if|when|unless)\b.*$", rest)
    if cm:
        condition = _condition(cm.group(0))
        rest = rest[: cm.start()].strip()
    for phrase in _FILLER_PHRASES:
        rest = rest.replace(phrase, " ")
    leftover = [w for w in re.split(r"[ ,]+", rest) if w and w not in _FILLER]
    if leftover and not (action == "ask" and set(leftover) <= {"me", "first"}):
        raise NotUnderstood(f"didn't understand {' '.join(leftover)!r} in {text!r}; try: {', '.join(EXAMPLES)}")
    return Decision(action=action, targets=targets, runs=runs, scope=scope, condition=condition)


_EXCEPT = re.compile(
    r"(?:\s*,)?\s*(?:on\s+)?(?:all(?:\s+(?:the\s+)?hosts)?|everywhere|every\s+host)?\s*"
    r"\b(?:except|but\s+not|excluding|apart\s+from)\s+(?:on\s+)?(?:hosts?\s+)?"
    r"(?P<names>[a-z0-9][\w.-]*(?:\s*(?:,|and|&)\s*[a-z0-9][\w.-]*)*)"
)


def _except_hosts(text: str, hosts: Sequence[str]) -> tuple[list[str], str]:
    """("approve on all except gpu-7", hosts) → (["gpu-7"], "approve"); names checked against `hosts`."""
    m = _EXCEPT.search(text)
    if m is None:
        return [], text
    if not hosts:
        raise DecisionError("this gate is not about hosts; 'except HOST' goes with a keep decision at a safety gate")
    canonical = {h.lower(): h for h in hosts}
    named = [n for n in re.split(r"\s*(?:,|and|&)\s*", m.group("names")) if n]
    unknown = [n for n in named if n not in canonical]
    if unknown:
        raise DecisionError(f"unknown host(s) {', '.join(unknown)}; hosts here: {', '.join(hosts)}")
    chosen = list(dict.fromkeys(canonical[n] for n in named))
    if len(chosen) == len(hosts):
        raise DecisionError("that excepts every host; to keep it nowhere, skip it")
    return chosen, (text[: m.start()] + text[m.end() :]).strip()


def parse_decision(
    text: str,
    *,
    kind: GateKind,
    options: Sequence[int] = (),
    gate_option: int | None = None,
    by: str | None = None,
    hosts: Sequence[str] = (),
) -> Decision:
    """Parse `text` as typed at a `kind` gate whose nameable options are `options` (and whose option
    runs on `hosts`, which "on all except gpu-7" may name)."""
    raw = text
    text = _normalise(text)
    if not text:
        raise DecisionError(f"empty decision; try: {', '.join(EXAMPLES)}")
    excepted, text = _except_hosts(text, hosts)
    hedged = False
    lead_scope: Scope | None = None
    changed = True
    while changed:
        changed = False
        for lead in _HEDGES + _LEADS + ("always", "from now on", "going forward"):
            if text.startswith(lead + " ") or text.startswith(lead + ","):
                hedged = hedged or lead in _HEDGES
                if lead in ("always", "from now on", "going forward"):
                    lead_scope = "standing"
                text = text[len(lead) :].lstrip(" ,")
                changed = True
    otherwise_text = None
    om = re.search(r"(?:,\s*|\s)(?:or|otherwise|else|,)\s+(?=(?:stop|ask|skip|continue|roll|defer|wait|pause))", text)
    if om and re.search(r"\b(if|unless|when)\b", text[: om.start()]):
        otherwise_text = text[om.end() :].strip()
        text = text[: om.start()].strip(" ,")
    decision = _clause(text, gate_option, options)
    if lead_scope is not None:
        decision.scope = lead_scope
    if otherwise_text is not None:
        other = _clause(otherwise_text, gate_option, options)
        if other.condition:
            # "…, or stop and ask if you are unsure": the first branch holds only when the second doesn't.
            decision.condition = (
                f"({decision.condition}) && !({other.condition})" if decision.condition else (f"!({other.condition})")
            )
        decision.otherwise = other.action
    unknown = [t for t in decision.targets if options and t not in options]
    if unknown:
        raise DecisionError(
            f"unknown option(s) {', '.join('#' + str(t) for t in unknown)}; options here: "
            + ", ".join(f"#{o}" for o in options)
        )
    if decision.condition is not None:
        kinds = kinds_for_condition(decision.condition)
        kinds = [k for k in kinds if decision.action in ALLOWED[k]]
        if not kinds:
            raise DecisionError(f"no gate can {decision.action} on the condition {decision.condition!r}")
        try:
            Condition(decision.condition, FACTS[kinds[0]])
        except ExprError as exc:  # pragma: no cover - kinds_for_condition already compiled it
            raise DecisionError(str(exc)) from None
    elif decision.action not in ALLOWED[kind]:
        raise DecisionError(
            f"a {kind} gate cannot {decision.action}; it takes: {', '.join(a for a in ALLOWED[kind] if a != 'ask')}"
        )
    if decision.action == "retry" and decision.runs is not None and not 2 <= decision.runs <= 50:
        raise DecisionError("retry takes between 2 and 50 runs")
    if excepted:
        if decision.action not in ("approve", "continue") or decision.condition or decision.otherwise:
            raise DecisionError(
                "'except HOST' goes with a plain keep: 'approve on all except gpu-7' keeps the option on the "
                "other hosts and rolls it back on gpu-7"
            )
        decision.except_hosts = excepted
    decision.hedged = hedged
    decision.confirm = (
        hedged or decision.action in ("rollback", "stop") or decision.scope == "standing" or bool(decision.except_hosts)
    )
    decision.raw = raw
    decision.parser = PARSER
    decision.by = by
    return decision
