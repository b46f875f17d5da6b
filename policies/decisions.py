"""One line of human text → a `Decision`, by a small deterministic grammar (`grammar/v1`).

    decision  := [lead] clause [("," | ", or" | "otherwise" | "else") clause]
    clause    := action [targets] [params] [scope] [condition]  |  N "is" ["a"|"the"] ("bigger"|"better"|…) …
    condition := ("if" | "only if" | "when" | "unless") pred {("and" | "or") pred}

Unknown text is refused with "didn't understand …; try: …" — the grammar never guesses.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.clauses import aside as clause_aside
from policies.clauses import combine as combine_clauses
from policies.clauses import split as split_clauses
from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, GATE_KINDS, GATES, OPTION_GATES, Action, Decision, Gate, GateKind, Scope
from policies.refusals import DecisionError, NotUnderstood
from policies.tolerant import read, title_match

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


# A one-liner is a line. Longer text is refused before anything reads it (typo correction, filler, the
# grammar, a model): a pasted log or a held-down key is not an answer, and reading it costs time.
MAX_CHARS = 1_000


def check_length(text: str) -> None:
    """Refuse text longer than a one-liner may be, quoting only its start (DecisionError)."""
    if len(text) > MAX_CHARS:
        raise DecisionError(
            f"a one-line decision is at most {MAX_CHARS:,} characters; this one has {len(text):,} "
            f"(starting {text[:40]!r}); say it in one short line"
        )


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
_VERB_RE: list[tuple[re.Pattern[str], Action]] = [
    (re.compile(rf"^{pattern}(?![\w-])"), action)
    for pattern, action in _VERBS  # "no-go" holds no "no"
]

_HEDGES = (
    "sounds like",
    "i think",
    "think",
    "i guess",
    "maybe",
    "probably",
    "perhaps",
    "seems like",
    "i'd rather",
    "i would rather",
    "i suppose",
    "i'd lean towards",
    "i'd lean toward",
    "i lean towards",
    "leaning towards",
    "lean towards",
    "lean toward",
)
_GERUND_VERBS = {
    "skipping": "skip", "keeping": "keep", "stopping": "stop", "continuing": "continue", "reverting": "revert",
    "deferring": "defer", "accepting": "accept", "approving": "approve",
}  # fmt: skip
_LEADS = (
    "let's", "lets", "please", "ok so", "okay so", "so", "then", "and", "we should", "you should",
    "we can", "you can", "i'd", "i would", "we'll", "i'll", "we will", "i will", "we",
)  # fmt: skip
_FILLER_PHRASES = (
    "for clarification", "for confirmation", "for guidance", "for me", "for now please", "with more pairs",
    "with more runs", "with more samples",
)  # fmt: skip
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
    "them",
    "these",
    "those",
    "time",  # "3 runs this time"
    "yet",
    "with more pairs",
    "with more runs",
    "more pairs",
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
    (r"(?:you|we)(?: have| ?'ve got| got| still have| ?'ve) (?:a |another |still )?next steps?", "has_next_step"),
    (r"there(?: is|'s| are) (?:a |another )?(?:next steps?|next one|next option|more options?|options? left)"
     r"|there(?: is|'s) (?:still )?(?:something|anything) (?:left|more|(?:left |more )?to try)"
     r"|(?:you|we) still have something"
     r"(?: left)? to try|(?:anything|something) (?:is )?left(?: to try)?", "has_next_step"),
    (r"(?:(?:you are|you're|we are|we're) )?(?:unsure|not sure|uncertain|in doubt)"
     r"(?: (?:how to proceed|what to do|about it|about the next step))?", "confidence < 0.7"),
    (r"(?:you are|you're|we are|we're) (?:sure|confident)|confident|confidence is (?:high|good|decent)(?: enough)?",
     "confidence >= 0.7"),
    (r"confidence is (?:low|poor|not high)", "confidence < 0.7"),
    (r"(?:the )?health(?: checks?)? (?:is bad|is not ok|isn't ok|looks bad|fails|failed)", "!health_ok"),
    (r"(?:it |(?:the |a )?stress(?: test)? |anything )?(?:wedges|hangs|hung|wedged|wedge)|(?:there are|any|there were)"
     r" wedges", "wedges > 0"),
    (r"(?:it is |it's |it isn't |it's not |it is not |it )?(?:still )?(?:not verified|unverified|isn't verified"
     r"|is not verified|wasn't verified)"
     r"|(?:it|a rollback|the rollback|the revert) (?:didn't|did not|doesn't|does not) verify",
     "!verified"),
    (r"(?:it is |it's )?verified", "verified"),
    (r"(?:the )?health(?: checks?)? (?:pass(?:es|ed)?|(?:is |are )?(?:ok|fine|good|green|passing))"
     r"|(?:the )?hosts? (?:is|are|look|looks|seem|seems) (?:healthy|fine|ok|good)"
     r"|(?:it's |it is )?healthy", "health_ok"),
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
    (
        r"is (?:over|above|more than|greater than|higher than)|(?:goes|rises|gets|stays) (?:above|over)|over|above"
        r"|beats|exceeds|tops|clears"
        r"|more than|greater than|>",
        ">",
    ),
    (
        r"is (?:under|below|less than|lower than)|(?:drops|falls|goes|gets|dips) (?:below|under)|under|below|less than"
        r"|<",
        "<",
    ),
    (r"is|==|=", "=="),
]


# Symbols people add to an answer. A thumbs-down or a cross says no, which is never noise: it reads as a "no"
# clause (a take-back after a decision, a negation before one). Approving marks say nothing a word does not (alone
# they are a "yes"). Any other symbol or emoji is a mark the reader cannot account for: harmless beside a way back
# ("roll it back 😬"), refused beside a go-ahead ("keep it 🤞"); a zero-width joiner is dropped.
_NO_MARKS = "👎❌❎✖✗✘🚫⛔🙅🛑🔴☐×✕"
_YES_MARKS = "👍✅✔🚀👌🙏💯🎉🆗🙂😀😃😄😁😊👏💪🤝🙌✨"


def _symbols(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)  # "ｎｏｔ" is "not"
    out: list[str] = []
    for ch in text:
        if ch in _NO_MARKS:
            out.append(", nomark, ")
        elif ch in _YES_MARKS:
            out.append(" \x00 ")  # a placeholder: a yes-mark alone is "yes", beside words it is dropped
        elif ch in "→⇒➡" or ch == "…":
            out.append(", ")
        elif unicodedata.category(ch) == "Cf":
            continue  # a zero-width space inside "n\u200bot" is not a word break
        elif unicodedata.category(ch) in ("Mn", "Me"):
            out.append(", oddmark, ")  # a strike-through ("r̶m̶") or another mark left after NFKC composed accents
        elif unicodedata.category(ch) in ("So", "Sk", "Cs", "Co"):
            out.append(", oddmark, ")
        else:
            out.append(ch)
    said = "".join(out)
    # "skip 1 and 3, 👍 2": a yes-mark before an option after other words is a yes to it, which no word here says
    said = re.sub(r"(?<=\w)(.*?)\x00(?=\s*#?\d)", r"\1, oddmark, ", said)
    words = said.replace("nomark", "").strip(" ,\x00")
    if "\x00" in said and ("nomark" in said or re.fullmatch(r"(?:no|nope|nah|reject)[\s,.!]*", words)):
        return ""  # "👍❌", "👍 no": a yes and a no, nothing to read
    if not words or ("nomark" in said and re.fullmatch(r"(?:no|nope|nah|reject)[\s,.!]*", words)):
        return "no" if "nomark" in said else ("yes" if "\x00" in said else "")  # "nope ❌" is one no
    return said.replace("\x00", " ")


def _normalise(text: str) -> str:
    text = _symbols(text.strip().lower())
    text = re.sub(r"\(\s*(and|then)\b", r" \1", text)  # "revert (and verify)": one clause, not a remark
    text = text.translate(
        str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": ",", "–": ",", "(": ",", ")": ",", "`": " "})
    )
    text = re.sub(
        r"\s+-+>\s+|\s+-+\s+|^-+>\s*|\.\.\.+|;|(?<=[a-z])[.!]\s+(?=[a-z])", ", ", text
    )  # "-> 3", "skip 2 - it's flaky", "a; b"
    text = re.sub(r"\bas-is\b", "as is", text)
    text = re.sub(r"\bw/(?=\s|$)", "with", text).replace(" & ", " and ").replace(" + ", " and ")
    text = re.sub(r"(?<=\d)\+(?=#?\d)", " and ", text)  # "1+2 ok"
    text = re.sub(r"\bu\b", "you", text)  # "if u have a next step"
    text = re.sub(r"(?<=\d) n (?=#?\d)", " and ", text)  # "skip 1 n 3"
    text = re.sub(r"\bw (?=#?\d|the\b)", "with ", text)  # "go w 3 first"
    text = re.sub(r"\b(stp|skp|agn)\b", lambda m: {"stp": "stop", "skp": "skip", "agn": "again"}[m.group(1)], text)
    text = re.sub(r"([a-z])\1{2,}", r"\1", text)  # "goooo", "yesss"
    text = re.sub(r"(?<=\w)!+(?=\s+\w)", ",", text)  # "ok!! run it"
    text = re.sub(r'(?<=\w )"([\w\' -]{1,24})"(?=[\s,.!?]|$)', r"\1, oddmark, ", text)  # scare quotes: 'is "flaky"'
    text = re.sub(r'"', "", text)
    text = re.sub(  # "1-2", "#2-3": a range of options, said as a list
        r"(?<![\w.-])#?([1-9])\s*-\s*#?([1-9])(?![\w.%-])",
        lambda m: (
            " and ".join(map(str, range(int(m.group(1)), int(m.group(2)) + 1)))
            if int(m.group(1)) < int(m.group(2))
            else m.group(0)
        ),
        text,
    )
    text = re.sub(r"\s*,[\s,]*", ", ", text)
    text = re.sub(r"\s+", " ", text)
    return text.strip(" ,").rstrip(" .!?,")


def _pred(text: str) -> str:
    text = text.strip()
    text = re.sub(r"\b(\w+)'s (above|below|over|under|at)\b", r"\1 is \2", text)  # "the gain's above 5"
    text = re.sub(r"\s*(?:percent|pct)\b", "%", text)
    text = re.sub(r"\s+(?:under stress|in the stress test|under load|in stress|too|as well|again)$", "", text)
    text = re.sub(r"^(?:its|their)\s+", "", text)  # "if its gain is under 5%"
    text = re.sub(
        r"^(?:it )?gains (?=(?:under|over|less|more|at|below|above))", "gain ", text
    )  # "if #3 gains under 2%"
    text = re.sub(
        r"^(?:it|that|they|this|something|anything|an option|any option|one|whatever)(?:'s| is| are|'re)?"
        r"(?: really| actually| still)?"
        r"(?: (?:turns?|turned) out| (?:ends?|ended) up| comes? (?:out|back)| proves?| gets?| got| is found)?"
        r"(?: to be| as| being)?\s+",
        "",
        text,
    )
    text = re.sub(r"^(?:a|an)\s+", "", text)
    if text in _ENUM_WORDS:
        return _ENUM_WORDS[text]
    for pattern, expr in _BOOL_PHRASES:
        if re.fullmatch(pattern, text):
            return expr
    for alias, field in sorted(_FIELDS.items(), key=lambda f: -len(f[0])):
        if text.startswith(alias + " "):
            rest = re.sub(r"^are\b", "is", text[len(alias) + 1 :])  # "wedges are at least 2"
            for cmp_pattern, op in _CMPS:
                m = re.fullmatch(rf"(?:{cmp_pattern})\s*(-?\d+(?:\.\d+)?)\s*%?", rest)
                if m:
                    number = m.group(1)
                    if FACTS["safety"].get(field) and FACTS["safety"][field].type == "double" and "." not in number:
                        number += ".0"
                    return f"{field} {op} {number}"
    raise NotUnderstood(f"didn't understand the condition {text!r}; try: if it's unsafe, if gain is at least 5%")


def _condition(text: str) -> str:
    text = re.sub(r"^(?:as long as|provided(?: that)?|in case|while|every time|whenever|each time)\b", "if", text)
    # "gain is 5% or more": one comparison, not two predicates joined by "or"
    text = re.sub(
        r"(?:\b(is|are) )?(?<![\d.])(-?\d+(?:\.\d+)?\s*%?) or "
        r"(?:(more|higher|above|better|over)|less|lower|below|under)$",
        lambda n: f"{n.group(1) or 'is'} at {'least' if n.group(3) else 'most'} {n.group(2)}",
        text,
    )
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
    m = re.match(r"^(?:options?\s+)?#?(\d+)\s*(?:-|to|through|thru)\s*#?(\d+)\b\s*(.*)$", text)
    if m and int(m.group(1)) < int(m.group(2)) <= max(known, default=0):
        return list(range(int(m.group(1)), int(m.group(2)) + 1)), m.group(3)
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


# "skip #2 and move on": a follow-up that only says what skipping already means.
_FOLLOW_UP = re.compile(
    r"(?:,|\band\b|\bthen\b)\s*(?:and\s+)?(?:then\s+)?(?:move on|continue|carry on|keep going|go on|proceed)"
    r"(?:\s+(?:to the next(?: one)?|with the next(?: one)?|with the rest))?$"
)


def _verb_in(words: str) -> Action | None:
    """The first decision verb anywhere in leftover text: a second decision in one line."""
    for i in range(len(words)):
        if i and words[i - 1].isalnum():
            continue
        for pattern, verb in _VERB_RE:
            if (
                pattern.match(words[i:])
                and verb not in ("select",)
                and not words[i:].startswith(("y ", "do ", "next one", "next option"))  # "skip the next one"
            ):
                return verb
    return None


@dataclass
class _Read:
    """A clause read as far as its verb, targets, count, scope and condition, with words left over."""

    text: str
    action: Action
    rest: str
    targets: list[int]
    runs: int | None
    scope: Scope
    condition: str | None
    said: str  # the leftover words

    def decision(self, targets: list[int] | None = None) -> Decision:
        return Decision(
            action=self.action,
            targets=self.targets if targets is None else targets,
            runs=self.runs,
            scope=self.scope,
            condition=self.condition,
        )


def _clause(
    text: str, gate_option: int | None, known: Sequence[int], titles: Mapping[int, str] | None = None
) -> Decision:
    """One clause as a decision. "lgtm, ship it" says one decision twice: the words after the first verb
    are read again as a clause of their own, in a loop (never a recursion as deep as the line is long)."""
    said_again: list[tuple[_Read, Action]] = []  # each clause whose leftover words are read again
    while True:
        read = _read_clause(text, gate_option, known)
        if isinstance(read, Decision):
            result = read
            break
        other = _verb_in(read.rest.lstrip(", "))
        go_ahead = {"approve", "continue"}
        if other is not None and other != read.action and not {other, read.action} <= go_ahead:
            raise DecisionError(f"{read.text!r} says both {read.action} and {other}; say one decision at a time")
        if other is not None and (other == read.action or {other, read.action} <= go_ahead) and not read.targets:
            # "lgtm, ship it", "sounds good, keep going": the same decision said twice.
            said_again.append((read, other))
            text = re.sub(r"^(?:and|then|so)\s+", "", read.rest.lstrip(", "))
            continue
        result = _named_by_title(read, titles)
        break
    if said_again and result.targets and result.targets != [gate_option]:
        # "approve, yes 3 too": all of them and then #3, or only #3? either is a guess
        raise DecisionError(f"{said_again[0][0].text!r}: all of them, or only what follows names? say which")
    for read, other in reversed(said_again):
        # "looks good to me, approve it": the explicit word wins when it is the same decision, unconditional.
        if result.action != other or result.condition is not None:
            result = _named_by_title(read, titles)
    return result


def _read_clause(text: str, gate_option: int | None, known: Sequence[int]) -> Decision | _Read:
    """A whole decision, or how far the clause reads before words are left over."""
    m = re.match(
        r"^#?(\d+) (?:is|looks like|seems) (?:a |the )?(bigger|better|safer|larger|clearer|best|biggest)"
        r"(?: (?:win|one|option|choice|bet|idea|pick|gain))?(?: (?:anyways?|then|i think|probably|here))?$",
        text,
    )
    if m:
        return Decision(action="select", targets=[int(m.group(1))], rationale=text)
    found: tuple[re.Match[str], Action] | None = next(
        ((vm, verb) for pattern, verb in _VERB_RE if (vm := pattern.match(text))), None
    )
    if found is None:
        raise NotUnderstood(f"didn't understand {text!r}: no decision verb; try: {', '.join(EXAMPLES)}")
    vm, action = found
    rest = text[vm.end() :].strip()
    runs = None
    counts = (
        r"\b(?:with |up to )?(\d+) (?:more )?(?:runs|pairs|seeds|attempts|samples|tries)\b"
        r"|\b(?:up to )?(\d+) (?:more )?times\b|\b(\d+)x\b|\bx(\d+)\b"
    )
    if len(re.findall(counts, rest)) > 1:  # "revert again 3 times, revert again 2 times"
        raise DecisionError(f"{text!r} says more than one count; say one")
    rm = re.search(counts, rest)
    if rm:  # before targets: in "try again 3 times" the 3 is a count, not option #3
        runs = int(next(g for g in rm.groups() if g))
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
    cm = re.search(r"\b(only if|if|when|unless|as long as|provided(?: that)?|while)\b.*$", rest)
    if cm:
        condition = _condition(cm.group(0))
        rest = rest[: cm.start()].strip()
    for phrase in _FILLER_PHRASES:
        rest = rest.replace(phrase, " ")
    if action not in ("stop", "reject", "ask", "continue"):
        rest = _FOLLOW_UP.sub("", rest).strip()
    if action == "select":
        rest = re.sub(r"\s*\bnext$", "", rest)  # "do two-batch overlap next"
    leftover = [w for w in re.split(r"[ ,]+", rest) if w and w not in _FILLER]
    if leftover and not (action == "ask" and set(leftover) <= {"me", "first"}):
        return _Read(text, action, rest, targets, runs, scope, condition, " ".join(leftover))
    return Decision(action=action, targets=targets, runs=runs, scope=scope, condition=condition)


def _named_by_title(read: _Read, titles: Mapping[int, str] | None) -> Decision:
    """A clause whose leftover words name options by title ("skip the overlap scheduler"), or NotUnderstood."""
    text, rest, said, targets = read.text, read.rest, read.said, read.targets
    title_read = None
    if not targets and titles:
        if re.search(r"\b(?:not|no|never|instead|except|but|without|rather|besides|minus|isn't|other)\b", rest):
            raise DecisionError(f"{text!r} names an option with a negation; name the ones you mean by number")
        names = [n for n in re.split(r"\s*(?:,|\band\b|&)\s*", said) if n]
        chosen_all: list[int] = []
        for name in names:
            if name.strip() in _NUMBER_WORDS:
                raise DecisionError(f"{name!r}: name options by number (#2), not in words")
            chosen, close = title_match(name, titles)
            if close:
                raise DecisionError(
                    f"{name!r} could be " + " or ".join(f"#{k} {titles[k]}" for k in close) + "; name it by number"
                )
            if chosen is None:
                chosen_all = []
                break
            chosen_all.append(chosen)
        if chosen_all:
            targets = list(dict.fromkeys(chosen_all))
            if read.action in ("skip", "defer"):
                targets.sort()
            title_read = f"{said!r} → " + ", ".join(f"#{t}" for t in targets)
    if title_read is None:
        raise NotUnderstood(f"didn't understand {said!r} in {text!r}; try: {', '.join(EXAMPLES)}")
    decision = read.decision(targets)
    decision.read_as.append(title_read)
    return decision


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
    canonical = {h.lower(): h for h in hosts}
    if not hosts or (not re.search(r"\bhosts?\b|\bon\b", m.group(0)) and m.group("names") not in canonical):
        return [], text  # "everything except the MoE one" names options, not hosts
    named = [n for n in re.split(r"\s*(?:,|and|&)\s*", m.group("names")) if n]
    unknown = [n for n in named if n not in canonical]
    if unknown:
        raise DecisionError(f"unknown host(s) {', '.join(unknown)}; hosts here: {', '.join(hosts)}")
    chosen = list(dict.fromkeys(canonical[n] for n in named))
    if len(chosen) == len(hosts):
        raise DecisionError("that excepts every host; to keep it nowhere, skip it")
    return chosen, (text[: m.start()] + text[m.end() :]).strip()


_REPEATED = re.compile(r"\b(\w+)(?:[ ,]+\1\b){2,}")
_NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "the two", "these two"}
_TARGETED = ("select", "skip", "defer")  # the actions whose targets a gate acts on

MAX_REVERTS = 5  # "revert again 3 times": more attempts in a row than this is a person's job, not a loop's


def _all_but(text: str, commands: Sequence[str]) -> str:
    """ "approve all but 2", "approve all except rm -rf …": the listed commands' numbers, minus those."""
    m = re.search(
        r"\b(?:all|everything|all of them|them all)\s*,?\s*(?:but|except|apart from|other than)\s+"
        r"(.+?)(?=,(?!\s*(?:[#\d]|and\b))|$)",  # "all but 3, don't want to nuke the cache": the reason is not a name
        text,
    )
    if m is None:
        return text
    named = re.sub(r"^(?:the|that)\s+|\s+(?:one|command|commands)$", "", m.group(1).strip(" `'\".…")).strip()
    numbers = [int(n) for n in re.findall(r"\d+", named)] if re.fullmatch(r"[#\d\s,and&]+", named) else []
    if not numbers:
        lowered = [c.lower() for c in commands]
        numbers = [i for i, c in enumerate(lowered, 1) if c.startswith(named) or named in c]
        if not numbers:
            raise DecisionError(f"no listed command matches {named!r}; name it by its number (1-{len(commands)})")
        if len(numbers) > 1 and not all(lowered[i - 1].startswith(named) for i in numbers):
            raise DecisionError(f"{named!r} matches commands {', '.join(map(str, numbers))}; name them by number")
    bad = [n for n in numbers if not 1 <= n <= len(commands)]
    if bad:
        raise DecisionError(f"there is no command {bad[0]} here; the commands are numbered 1-{len(commands)}")
    keep = [i for i in range(1, len(commands) + 1) if i not in numbers]
    if not keep:
        raise DecisionError("that leaves no command to approve; to run none, reject")
    # what follows is read too: "approve all but 3, kidding" takes it back (it was dropped unread)
    return text[: m.start()] + " and ".join(str(i) for i in keep) + text[m.end() :]


def _named_command(text: str, commands: Sequence[str], notes: list[str] | None = None) -> str:
    """ "run the py-spy one", "only approve nvidia-smi", "nvidia-smi and py-spy are fine": the listed commands named
    by their first words or in full (whole words: "rm -rf /" is not `rm -rf /tmp/x`), and with a verb and "one" by a
    word of what they act on ("run the dump one"), noted in `notes` so the reading is echoed and confirmed."""
    m = re.fullmatch(
        r"(?:(?:ok|okay|fine|good|safe) to run |(?:ok|okay|yes|sure|fine),? (?:run )?|(?:only |just )?(?:run|approve) )"
        r"(?:only |just )?(?:the )?(.+?)(?: one| command)?",
        text,
    )
    trailing = m is None
    explicit = re.search(r"\b(?:one|command)$", text) is not None  # "run the dump one", never "the cache is fine"
    m = m or re.fullmatch(  # "nvidia-smi and py-spy are fine"
        r"(?:the )?(.+?)(?: ones?| commands?)?(?: (?:is|are|looks?|seems?))? (?:ok|okay|fine|good|safe|yes|approved)"
        r"(?: to run)?",
        text,
    )
    if m is not None and trailing and re.fullmatch(r"#?\d+(?:\s*(?:,|and|&)\s*#?\d+)*", m.group(1)):
        return "approve " + " and ".join(sorted(set(re.findall(r"\d+", m.group(1))), key=int))  # "1 and 2 are fine"
    if m is None or re.fullmatch(r"[#\d\s,and&]+|all|everything|them|them all|it|these|those", m.group(1)):
        return text
    picked: list[int] = []
    for named in re.split(r"\s*(?:,|\band\b|&)\s*", m.group(1)):  # "nvidia-smi and py-spy"
        named = named.strip(" `'\"")
        # The whole command, or its program's name: never a prefix ("run rm -rf /" is not `rm -rf /tmp/x`).
        said = named.split()
        words = [c.lower().split() for c in commands]
        if len(said) > 1 and any(w.startswith("-") or "/" in w for w in said) and said not in words:
            return text  # "rm -rf": which paths? only the program's name, or the whole command, names one
        hits = [i for i, w in enumerate(words, 1) if said == w or said == w[: len(said)]]
        if not hits and len(said) == 1 and explicit and not trailing:  # "run the dump one": a word of its arguments
            hits = [i for i, c in enumerate(commands, 1) if said[0] in _command_words(c)]
            if len(hits) == 1 and notes is not None:
                notes.append(f"{named!r} → command {hits[0]} ({commands[hits[0] - 1]})")
            elif len(hits) == 1:
                return text  # named by a word of its arguments only where the reading is echoed and confirmed
        if len(hits) != 1:
            return text
        picked.append(hits[0])
    return "approve " + " and ".join(map(str, sorted(set(picked))))


_COMMAND_NOISE = {"tmp", "var", "usr", "bin", "etc", "dev", "opt", "the", "and"}  # path parts that name nothing


def _command_words(command: str) -> set[str]:
    """The words that name a listed command: its program, and any word of what it acts on ("the cache" is
    `rm -rf /tmp/sglang-cache`'s)."""
    lowered = command.lower()
    return {lowered.split()[0]} | {w for w in re.findall(r"[a-z]{3,}", lowered) if w not in _COMMAND_NOISE}


_STANDING_LEADS = ("always", "from now on", "going forward")
_BARE_YES = re.compile(r"(?:(?:yes|yeah|yep|yup|ya|yea|ok|okay|sure|k|kk|y|alright|fine|right)[ ,.]*)+")
_ACCEPTS = re.compile(
    r"\b(?:approve|approved|accept|accepted|as is|as it is|as it stands|as they are|leave|take|like that)\b"
)
_SET = re.compile(
    r"(?P<head>.*?)\s*\b(?:(?:all|everything|every option|them all|all of them|all the options)\s*,?\s*"
    r"(?:but|except|apart from|other than|besides|minus|excluding|save)\s+(?P<but>.+)"
    r"|(?:only|just)\s+(?:(?:run|do|go with|try|keep|approve)\s+)?(?P<only>.+?))"
)
# The words before a set ("skip all but 3", "run only 1 and 3") and the decision they make on it.
_SET_HEAD: dict[str, Action] = {
    **dict.fromkeys(("", "run", "do", "go with", "approve", "continue", "keep", "try", "proceed with", "go ahead with",
                     "ok", "yes", "go", "go for", "run with", "test", "let's do", "lets do", "approve running"),
                    "approve"),
    **dict.fromkeys(("skip", "drop", "pass on"), "skip"),
    **dict.fromkeys(("defer", "park", "postpone", "hold off on"), "defer"),
}  # fmt: skip


def _leads(text: str) -> tuple[str, bool, Scope | None]:
    """(the text without its leading hedges and leads, hedged, the scope a lead gave)."""
    hedged, scope = False, None
    changed = True
    while changed:
        changed = False
        for lead in _HEDGES + _LEADS + _STANDING_LEADS:
            if text.startswith(lead + " ") or text.startswith(lead + ","):
                hedged = hedged or lead in _HEDGES
                if lead in _STANDING_LEADS:
                    scope = "standing"
                text = text[len(lead) :].lstrip(" ,")
                changed = True
    if hedged:  # "i'd lean towards skipping it": the verb the hedge leads to
        text = re.sub(r"^rolling (?:it |this |that )?back\b", "roll back", text)
        text = re.sub(r"^(\w+ing)\b", lambda m: _GERUND_VERBS.get(m.group(1), m.group(1)), text)
    return text, hedged, scope


@dataclass
class _AtGate:
    """The grammar bound to one gate: what its numbers and words name, for the line and for each clause."""

    kind: GateKind
    options: Sequence[int]
    open: Sequence[int]
    gate_option: int | None
    titles: Mapping[int, str]
    hosts: Sequence[str]
    commands: Sequence[str]

    @property
    def asks_which(self) -> bool:
        return GATES[self.kind].choices is not None

    def decision(self, text: str) -> Decision:
        reading = read(text, self.kind, titles=self.titles, hosts=self.hosts)
        if not reading.text:
            raise NotUnderstood(f"didn't understand {text!r}: no decision in it; try: {', '.join(EXAMPLES)}")
        if GATES[self.kind].choices is not None and _BARE_YES.fullmatch(reading.text):
            # "Keep it, or skip it and roll back?" answered "yes", "yep sure", "fine by me": which? (a yes-or-no
            # question's yes is its go-ahead)
            raise DecisionError(f"{text!r} does not say which: this gate asks {GATES[self.kind].choices}")
        said = self._sets(reading.text, reading.notes)
        said, hedged, lead_scope = _leads(said)
        if GATES[self.kind].choices is not None and _BARE_YES.fullmatch(said):
            # "i suppose yes", "leaning towards ok": a hedge before the same bare yes
            raise DecisionError(f"{text!r} does not say which: this gate asks {GATES[self.kind].choices}")
        if self.kind in ("budget", "goal") and re.fullmatch(
            r"keep(?: it| this| that| them| this one| that one)?", said
        ):
            # "Continue anyway, or stop with the report?" answered "keep it": keep what? a guess either way
            raise DecisionError(f"{text!r} does not say which: this gate asks {GATES[self.kind].choices}")
        said = self._order(self._sets(said, reading.notes), reading.notes)
        said = re.sub(r"^(?:just|only)\s+", "", said)  # "just roll it back" (a set was read above: "just 3")
        if self.commands:
            said = _named_command(said, self.commands, reading.notes)  # "sure, run nvidia-smi and py-spy": per clause
        otherwise_text = None
        om = re.search(
            r"(?:,\s*|\s)(?:or|otherwise|else|,)\s+(?=(?:stop|ask|skip|continue|roll|defer|wait|pause|wrap|end|finish"
            r"|abort|halt))",
            said,
        )
        if om and re.search(r"\b(if|unless|when|as long as|provided|while|in case)\b", said[: om.start()]):
            otherwise_text = said[om.end() :].strip()
            said = said[: om.start()].strip(" ,")
        decision = _clause(said, self.gate_option, self.options, self.titles)
        if decision.action == "stop" and decision.targets == list(self.options):
            decision.targets = []  # "stop everything": the campaign, not a set of options
        # "skip 3 instead" at #2's safety gate; "skip #3 if it's unsafe" is a rule for #3's own gate later
        elsewhere = decision.targets and decision.targets != [self.gate_option] and self.gate_option is not None
        if (
            decision.action in ("skip", "defer")
            and self.kind in ("safety", "rollback")
            and elsewhere
            and not decision.condition
        ):
            raise DecisionError(f"this gate decides #{self.gate_option}; say what to do with it")
        if decision.action == "approve" and self.commands and decision.targets == list(self.options):
            decision.targets = []  # "approve all 3": every command the gate lists
        if lead_scope is not None:
            decision.scope = lead_scope
        rule_here = decision.condition is not None and self.kind in OPTION_GATES  # the gate goes on with a rule
        if reading.negated and (decision.action in ("approve", "continue", "select") or rule_here):
            then = "gives a rule the gate goes on with" if rule_here else "goes ahead"
            raise DecisionError(f"{text!r} opens with 'no' and then {then}; say which you mean")
        if otherwise_text is not None:
            other = _clause(otherwise_text, self.gate_option, self.options, self.titles)
            if other.condition:
                # "…, or stop and ask if you are unsure": the first branch holds only when the second doesn't.
                decision.condition = (
                    f"({decision.condition}) && !({other.condition})" if decision.condition else f"!({other.condition})"
                )
            decision.otherwise = other.action
        if self.kind == "rollback" and decision.action == "approve" and not _ACCEPTS.search(reading.text + " " + text):
            # "Revert again, accept it as is, or stop?": a bare "ok" or "keep it" may mean the first choice
            raise DecisionError(f"{text!r} at a rollback gate: say 'accept it as is', 'revert again' or 'stop'")
        decision.hedged = hedged
        decision.read_as = [*reading.notes, *decision.read_as]
        return decision

    def _sets(self, said: str, notes: list[str]) -> str:
        """ "everything but 3", "skip all but 3", "only 1 and 3", "approve 2 only", "just run 2": the options
        named as a set, written as the grammar's decision on them (skipping the others, at an option gate)."""
        if "," in said:
            return said  # a set is said in one clause: "skip 3, overlap scheduler only" is two
        m = _SET.fullmatch(said)
        if m is None:
            # "approve 2 only", "py-spy only": the words before the set are the verb, whatever their length
            m = next(
                (
                    found
                    for head in sorted(_SET_HEAD, key=len, reverse=True)
                    if said.startswith(head)
                    and (found := re.fullmatch(rf"(?P<head>{re.escape(head)})\s*(?P<only>.+?)\s+only", said))
                ),
                None,
            )
        if m is None:
            return said
        head = (m.group("head") or "").strip()
        but = m.groupdict().get("but")
        named = self.names(but or m.group("only") or "")
        if not named or any(n not in self.options for n in named):
            return said
        # The options the words before the set act on: all open ones but those named, or only those named.
        pool = self.options if self.kind == "command" else self.open
        chosen = [o for o in pool if (o not in named) == bool(but)]
        verb = _SET_HEAD.get(head)
        if verb is None or not chosen:
            return said
        if self.kind == "command" and verb == "approve":
            new = "approve " + " and ".join(map(str, chosen))
        elif self.kind in OPTION_GATES and verb in ("skip", "defer"):
            new = f"{verb} " + " and ".join(map(str, chosen))
        elif self.kind in OPTION_GATES and verb == "approve":
            others = [o for o in self.open if o not in chosen]
            new = "skip " + " and ".join(map(str, others)) if others else "approve"
        else:
            return said
        notes.append(f"{said!r} → {new!r}")
        return new

    def _order(self, said: str, notes: list[str]) -> str:
        """ "3 then 2", "the scheduler one first, then the others", "the moe one before 2": try that one first; the
        order the gate would go in anyway is its go-ahead. Every open option must be placed, or "the rest" said."""
        if self.kind not in OPTION_GATES:
            return said
        body = re.sub(r"^(?:go with|do|try|start with|run)\s+", "", said)
        pieces = [
            p for p in re.split(r"\s*(?:,\s*)?\b(?:and then|then|before|followed by|after that)\b\s*|\s*>\s*", body)
        ]
        if len(pieces) < 2 and not re.search(r"\bfirst$", body):
            return said
        order: list[int] = []
        for i, piece in enumerate(p.strip() for p in pieces):
            piece = re.sub(r"\s+first$", "", piece)
            if (
                i == len(pieces) - 1
                and i > 0
                and re.fullmatch(r"(?:do |try )?(?:the rest|the others|everything else|whatever|anything)", piece)
            ):
                order += [o for o in self.open if o not in order]
                continue
            try:
                named = self.names(re.sub(r"^(?:go with|do|try)\s+", "", piece))
            except DecisionError:
                return said
            if not named or len(named) != 1:
                return said
            order += named
        if len(set(order)) != len(order) or not set(order) <= set(self.open):
            return said
        if len(pieces) == 1:
            new = f"go with {order[0]}"  # "the kernel occupancy one first"
        elif set(order) != set(self.open):
            return said  # "2 then 3" at a gate with #1 open too leaves #1 unsaid: not an order of them all
        else:
            new = "continue" if order == [o for o in self.open if o in order] else f"go with {order[0]}"
        notes.append(f"{said!r} → {new!r}")
        return new

    def condition(self, text: str) -> str:
        return _condition(text)

    def names(self, text: str) -> list[int] | None:
        text = re.sub(r"^(?:the|option|options|number|#)\s*", "", text.strip()).strip()
        text = re.sub(r"\s+(?:one|ones|option|options|command|change|thing|stuff)$", "", text)
        if re.fullmatch(r"it|this|that|this one|that one|the change|this change|that change", text):
            return [self.gate_option] if self.gate_option is not None else None
        if self.kind == "continue_or_ask" and re.fullmatch(r"(?:the )?next(?: one| option)?", text):
            return [self.gate_option] if self.gate_option is not None else None  # what the gate offers next
        ordinal = re.fullmatch(r"(?:the )?(first|last) (one|two|three|\d+)?", text + " ")
        if ordinal is not None and not self.commands:
            return None  # "the first" option of the plan, or of those still open? a guess either way
        if ordinal is not None:
            count = {"one": 1, "two": 2, "three": 3, "": 1}.get(ordinal.group(2) or "")
            count = count if count is not None else int(ordinal.group(2))
            listed = list(self.options)
            if 0 < count < len(listed) or (count == 1 and listed):
                return listed[:count] if ordinal.group(1) == "first" else listed[-count:]
            return None
        m = re.fullmatch(r"#?(\d+)\s*(?:-|to|through|thru)\s*#?(\d+)", text)
        if m and int(m.group(1)) < int(m.group(2)) <= max(self.options, default=0):
            return list(range(int(m.group(1)), int(m.group(2)) + 1))
        if re.fullmatch(r"#?\d+(?:\s*(?:,|and|&|or)\s*#?\d+)*", text):
            return [int(n) for n in re.findall(r"\d+", text)]
        if self.commands:
            lowered = [c.lower() for c in self.commands]
            hits = [
                i
                for i, c in enumerate(lowered, 1)
                if text in (c, c.split()[0]) or (len(text) >= 4 and c.startswith(text))
            ]
            return hits if len(hits) == 1 else None
        if not self.titles:
            return None
        parts = [p for p in re.split(r"\s*(?:,|\band\b|&)\s*", text) if p]
        if len(parts) > 1:  # "tbo and the scheduler"
            each = [self.names(p) for p in parts]
            return [n for found in each for n in found] if all(e and len(e) == 1 for e in each) else None  # type: ignore[union-attr]
        chosen, close = title_match(text, self.titles)
        if close:
            raise DecisionError(
                f"{text!r} could be " + " or ".join(f"#{k} {self.titles[k]}" for k in close) + "; name it by number"
            )
        return [chosen] if chosen is not None else None

    def mentions(self, text: str) -> set[int]:
        found = {int(n) for n in re.findall(r"(?<![\w.-])#?(\d+)(?![\w.%-])", text) if int(n) in self.options}
        words = re.findall(r"[a-z][a-z0-9-]+", text)
        if self.commands:
            named = {i: _command_words(c) for i, c in enumerate(self.commands, 1)}
            found |= {i for w in words for i, ws in named.items() if w in ws or w.rstrip("s") in ws}
            return found
        title_words = {k: set(re.findall(r"[a-z][a-z0-9]{2,}", t.lower())) for k, t in self.titles.items()}
        for w in (w for w in words if len(w) >= 3):
            owners = [
                k for k, ws in title_words.items() if any(t == w or (len(w) >= 4 and t.startswith(w)) for t in ws)
            ]
            if len(owners) == 1:
                found.add(owners[0])
        return found

    def has_verb(self, text: str) -> bool:
        return _verb_in(text) is not None

    def words_of(self, options: Sequence[int]) -> set[str]:
        named = [self.commands[o - 1] for o in options if 0 < o <= len(self.commands)] if self.commands else []
        named += [self.titles[o] for o in options if o in self.titles and not self.commands]
        words = {w for phrase in named for w in re.findall(r"[a-z0-9][a-z0-9-]*", phrase.lower())}
        return words.union(*(_command_words(c) for c in named if self.commands))


def _read(text: str, grammar: _AtGate) -> Decision:
    """The line as one decision, or as clauses when it is more than one."""
    try:
        return grammar.decision(text)
    except DecisionError as whole:
        if len(split_clauses(text)) < 2 and not re.match(r"^(?:if|unless|when|only if)\b", text):
            raise
        try:
            return combine_clauses(text, grammar)
        except NotUnderstood:
            raise whole from None


_OPEN_ENDED = {"that", "which", "who", "the", "a", "an", "and", "or", "but", "to", "of", "with", "for", "if", "when"}
_SUGGEST_WORDS = 8  # prefixes tried for a suggestion: a decision is said in its first few words


def _closest(text: str, grammar: _AtGate, takes: Callable[[str], Decision]) -> str | None:
    """The closest reading of a line not understood that this gate takes, as a one-liner to press Enter on
    ("skip it because lol" → "skip #2"): a clause, or the first words, that read alone — never when what is left
    holds a negation or another decision."""
    candidates = split_clauses(text)
    words = text.split()
    candidates += [" ".join(words[:k]) for k in range(min(len(words) - 1, _SUGGEST_WORDS), 0, -1)]
    for said in candidates:
        if said.split()[-1] in _OPEN_ENDED:
            continue  # "drop the one that | failed": the words cut off say which one
        rest = text.replace(said, " ", 1)
        if re.search(r"\b(?:not|no|never|don't|dont|n't|but|except|unless|if|instead)\b|n't\b", rest):
            continue
        try:
            decision = grammar.decision(said)
        except DecisionError:
            continue
        if decision.condition or decision.otherwise or not clause_aside(text, rest, decision, grammar):
            continue  # "approve, without the rm" never suggests "approve": what it drops could change it
        line = canonical(decision, grammar.kind)
        try:
            takes(line)
        except DecisionError:
            continue
        return line
    return None


def canonical(decision: Decision, kind: GateKind) -> str:
    """The plainest one-liner for a decision ("skip #2", "go with 3", "retry with 8 runs", "approve 1 and 3")."""
    verb = {"select": "go with", "rollback": "roll back", "ask": "stop and ask me"}.get(
        decision.action, decision.action
    )
    named = " and ".join(str(t) if kind == "command" else f"#{t}" for t in decision.targets)
    line = f"{verb} {named}".strip()
    if decision.runs:
        line += f" with {decision.runs} runs"
    return line + {"for_now": " for now", "standing": " always", "once": ""}[decision.scope]


def check_states(kind: GateKind, decision: Decision, status: Mapping[int, str]) -> None:
    """Refuse a decision that names options in a state it cannot apply to, or none where it must name one."""
    untargeted = decision.condition is None  # "skip it if it's unsafe" is a rule for the option it meets later
    if untargeted and decision.action in _TARGETED and not decision.targets and kind in OPTION_GATES:
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
def _try_here(kind: GateKind) -> str:
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
    text = _normalise(text)
    # "yes yes yes …", "continue continue …": a held-down key or a paste, not how anyone answers. It is
    # read (filler and the grammar make one answer of it) but echoed and confirmed, never taken as said.
    repeated = _REPEATED.search(text)
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
        text = _named_command(_all_but(text, commands), commands)
    excepted, text = _except_hosts(text, hosts)
    typed = text
    grammar = _AtGate(
        kind=kind,
        options=list(options),
        open=[o for o in options if (status or {}).get(o, "pending") in ("pending", "current")],
        gate_option=gate_option,
        titles=titles,
        hosts=list(hosts),
        commands=list(commands),
    )
    try:
        decision = _read(text, grammar)
    except NotUnderstood as exc:
        if suggest:
            exc.suggestion = _closest(text, grammar, lambda line: parse_decision(line, **gate, suggest=False))
        if exc.suggestion is not None:
            exc.args = (re.sub(r"; try: .*$", "", str(exc.args[0])) + f"; did you mean: {exc.suggestion}?",)
        elif suggest:  # not when reading _try_here's own examples: that would ask _try_here again
            exc.args = (re.sub(r"; try: .*$", f"; {_try_here(kind)}", str(exc.args[0])),)
        raise
    if decision.runs is not None and decision.action != "retry":
        raise DecisionError(f"a count of runs goes with retry, not {decision.action}")
    if decision.runs is not None and kind == "brain_unavailable":
        raise DecisionError("'retry' here calls the model again from the next step; it takes no count")
    programs = "|".join(sorted({re.escape(w) for c in commands if c.strip() for w in _command_words(c)}))
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
        and decision.action not in _TARGETED
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
