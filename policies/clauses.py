"""A one-liner as clauses: find the decision wherever it stands, and let the rest be commentary.

People say a decision and then why ("skip it, too risky"), correct themselves ("not 2, go with 3", "don't roll
back, keep it"), put the condition first ("if 3 wedges, skip it") or add a scope ("from now on, skip anything
unsafe"). The line is split at commas (dashes, parentheses, arrows, semicolons and sentence ends became commas when
it was normalised), at "but", at an exclusion ("except", "minus", "without") and at a "not" that follows a named
option, and each clause is one of:

    decision   what the grammar reads as a whole decision ("skip it", "go with 3")
    negated    "not 2", "don't roll back", "approve, minus rm": removes its options or denies its verb
    condition  "if 3 wedges", "every time stress wedges": the decision's condition (its option, its scope)
    otherwise  "otherwise stop", "or measure again": the branch taken when the condition does not hold
    scope      "from now on", "for now"
    runs       "40 pairs": the count a retry takes
    take-back  "never mind", "scratch that", a trailing "no": the line is refused
    no, wait, hedge, no-mark   a leading "no" or "wait", a "maybe", a thumbs-down or an unknown symbol
    remark     the person's reason, kept as the decision's rationale

Words that change meaning are never commentary. Two decisions that disagree are refused with both named; a negation
of the decision's own verb, of what it implies or of the options it names is refused; a remark beside a decision
that goes ahead may only use a closed vocabulary of calm words, so a word that could undo part of it ("rm later",
"kidding") refuses the line instead of being set aside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from policies.gates import GATES, Action, Decision, GateKind, Scope
from policies.refusals import DecisionError, NotUnderstood
from policies.tolerant import SARCASM

GO_AHEAD: frozenset[Action] = frozenset({"approve", "continue"})

CONNECTOR = re.compile(r"^(?:and|but|so|then|&)\s+")
_OTHERWISE = re.compile(r"^(?:or else|otherwise|else|or)\s+")
_NEGATOR = re.compile(
    r"^(?:i\s+)?(?:do not|don't|dont|does not|doesn't|did not|didn't|not|never|no need to|won't|will not|wouldn't|"
    r"would not|i'd not|shouldn't|should not|isn't|is not|can't|cannot|let's not|lets not|no|minus|without|"
    r"except(?: for)?|excluding|exclude|sans|leave out|leaving out|omit|omitting|but not|apart from|other than|"
    r"save for|besides|don't bother with|no need for)\b\s*"
)
_TAKE_BACK = re.compile(
    r"(?:never ?mind|scratch that|forget (?:it|that)|just kidding|jk|or not|not|not really|"
    r"wait|no wait|wait no|actually no|hmm+|hm|maybe not|on second thought|ignore that|cancel that|undo that|"
    rf"or maybe not|not yet|hold on|hang on|{SARCASM})"
)
_NO = re.compile(r"(?:no|nah|nope|no no)")
_CONDITION = re.compile(r"^(?:only if|if|unless|when|in case|as long as|provided|every time|whenever|each time)\b")
_SCOPES: list[tuple[re.Pattern[str], Scope]] = [
    (re.compile(r"(?:always )?(?:from now on|going forward|from here on(?: out)?|always|every time|each time|for the"
                r" rest of the (?:run|session|campaign))"), "standing"),
    (re.compile(r"(?:for now|for the moment|temporarily|for the time being)"), "for_now"),
]  # fmt: skip
# Words a remark may not hold: they exclude, condition, refer to or correct something.
_NOT_A_REMARK = re.compile(
    r"\b(?:without|except|but|instead|rather|unless|if|when|always|"
    r"from now on|all|everything|everyone|both|either|rest|others?|minus|besides|excluding|exclude|leave out|"
    r"save|apart|other than|also|plus|while you're at it|and then|as well|former|latter|later|actually|instead|"
    r"(?:last|previous|next|other|first|second|third) (?:one|option|change|thing)s?|kidding|nvm|jk|oops|mistake|"
    r"wrong|strike|scratch|ignore|undo|every time|whenever|each time|"
    r"cancel|forget|assuming|given|once|pending|until|unless|provided|barring|every|each|same|any|third|fourth|fifth|"
    r"final|middle|penultimate|only)\b"
)
# A number in a remark that is a measurement, not an option: "7.6 is worth it", "+19.8 vs +20", "3x faster".
MEASURE = re.compile(
    r"[+-]?\d+(?:\.\d+)?(?:\s*(?:%|ms\b|pairs?\b|runs?\b|hours?\b|minutes?\b|mins?\b)|x\b)|[+-]?\d+\.\d+"
)
# The words a remark beside a go-ahead may use: none of them can exclude, defer, condition or take anything back.
CALM = frozenset(
    """
    a an the it its it's this that these those is are was were be been being looks look looked seems seem seemed
    sounds sound fine good great ok okay nice solid clean cool perfect awesome lovely excellent neat right correct
    worth win wins winner big bigger huge real enough close plenty clear clearly obviously definitely totally gain
    gains numbers number results result data improvement improved improves helped helps works worked working faster
    quicker stable steady speedup throughput latency perf performance vs within margin target goal health
    healthy check checks checked host hosts logs log just harmless safe verified confirmed tested stale green we're
    manually hand myself reviewed read saw seen plan plan's we i i'm i've you me us our my your need want have has
    had got get think agree agreed makes make sense probably guess hope believe feel to for of on in at by with and
    so really pretty very quite too also still well now here there time bit little more ready happy sure yes
    yep yeah ya thanks thank thx ty cheers pls please team boss ship shipit almost basically another hour
    hours day days that's they're there's reasonable sensible fair long shot anyway anyways interesting config dir
    soft budget budget's matter quick fast cheap simple small tiny minor fun i'll take lot ci covers cosmetic
    reverted fixed order imo tbh biggest lever expected promising
    """.split()  # noqa: SIM905 - a word list reads best as words
)


def is_gate_reason(text: str, kind: GateKind) -> bool:
    """Is `text` one of the reasons this kind of gate reads beside its go-ahead?"""
    reasons = _GATE_REASONS.get(kind)
    return reasons is not None and reasons.fullmatch(text) is not None


# Compiled once, from each kind's `GateSpec.reasons`.
_GATE_REASONS: dict[GateKind, re.Pattern[str]] = {
    kind: re.compile(spec.reasons) for kind, spec in GATES.items() if spec.reasons is not None
}


HEDGED = frozenset({"probably", "guess", "hope", "believe", "feel", "think"})  # a remark with one hedges the decision
PREFERENCE = re.compile(r"\b(?:better|best|bigger|biggest|safer|safest|prefer|preferred|rather|winner|wins?|first)\b")

REST_IS_FINE = re.compile(
    r"(?:the )?(?:rest|others|other ones|other two)(?: is| are| look| looks| seem| seems)? (?:fine|good|ok|okay|great"
    r"|as planned|as is|lgtm|ok to run)"
)
Kind = Literal[
    "decision", "negated", "condition", "otherwise", "scope", "runs", "take-back", "no", "no-mark", "wait", "hedge",
    "remark",
]  # fmt: skip
NO_MARK = "nomark"  # what a thumbs-down or a cross became when the line was normalised
ODD_MARK = "oddmark"  # what any other symbol became: harmless beside a way back, never beside a go-ahead
_HEDGE = re.compile(r"i guess|maybe|probably|i think|perhaps")
_UNSURE = re.compile(r"(?:i'm |im |i am )?(?:not sure|unsure|not certain|uncertain)|idk|dunno|no idea|not convinced")
# "abort, wrong cluster": what a whole run can be pointed at wrongly (a closed list: anything after it could take back)
_WRONG_RUN = re.compile(
    r"wrong (?:the )?(?:cluster|hosts?|box|boxes|machines?|nodes?|gpus?|inventory|campaign|file|config|configuration"
    r"|branch|build|image|model|environment|env|setup|dataset|servers?|baseline|benchmark)"
    r"(?: file| list| in the inventory| in the campaign)?"
)
AGREED = re.compile(r"(?:fine|ok|okay|good) (?:by|with|for) me|works for me|yes|yep|yeah|sure|ok|okay")
_WAIT = re.compile(r"(?:wait|hold on|hang on|one sec|one second|just a sec)")


class Grammar(Protocol):
    """What the clause reader asks of the one-clause grammar at this gate (`policies.decisions` implements it)."""

    kind: GateKind
    options: Sequence[int]  # what numbers name here: options, or a command gate's listed commands
    open: Sequence[int]  # the options still to try (every option at a command gate)
    gate_option: int | None

    @property
    def asks_which(self) -> bool:
        """Does the gate ask which ("keep it, or skip it?"), so that a bare yes there says nothing?"""
        ...

    def decision(self, text: str) -> Decision:
        """One clause as a whole decision (DecisionError; NotUnderstood when it holds no decision)."""
        ...

    def condition(self, text: str) -> str:
        """ "if it's unsafe" as a CEL condition (NotUnderstood)."""
        ...

    def names(self, text: str) -> list[int] | None:
        """The options (commands) a phrase names — "2", "tbo", "the rm one", "it" — or None."""
        ...

    def mentions(self, text: str) -> set[int]:
        """The options a remark names by number or by a word only their title has."""
        ...

    def has_verb(self, text: str) -> bool:
        """Does the text hold a decision verb anywhere?"""
        ...

    def words_of(self, options: Sequence[int]) -> set[str]:
        """The words that name these options (their titles' words, a command's words)."""
        ...


@dataclass
class Clause:
    text: str
    kind: Kind
    decision: Decision | None = None
    targets: list[int] = field(default_factory=list)  # a negated clause's options, a condition's subject
    condition: str | None = None
    scope: Scope | None = None
    runs: int | None = None


_EXCLUDING = {"except", "minus", "without", "excluding", "sans"}  # "approve except 3": a clause that removes 3
_NOT_AFTER_BUT = {"all", "everything", "anything", "them", "nothing", "everyone"}  # "all but 2" is one clause
_OPENS_NOT = {
    "it",
    "one",
    "them",
    "this",
    "that",
    "these",
    "those",
    "first",
}  # "go with it not 2": a correction follows


def split(text: str) -> list[str]:
    """The clauses of a normalised line, in order."""
    parts: list[str] = []
    for part in text.split(","):
        # "skip 1 but not 3", "go with 3 not 2", "run 1 and 2 not the rm": a "but" (never "all but") or a "not"
        # after a named option or a pronoun opens a clause of its own.
        words = part.split()
        start = 0
        for i in range(1, len(words)):
            before = words[i - 1]
            if (
                (words[i] == "but" and before not in _NOT_AFTER_BUT)
                or (words[i] == "not" and (re.fullmatch(r"#?\d+", before) or before in _OPENS_NOT))
                or (words[i] in _EXCLUDING and before not in _NOT_AFTER_BUT and before not in ("all", "everything"))
            ):
                parts.append(" ".join(words[start:i]))
                start = i
        parts.append(" ".join(words[start:]))
    return [p for p in (p.strip() for p in parts) if p]


def classify(text: str, grammar: Grammar, first: bool) -> Clause:
    """What one clause is (NotUnderstood when it is none of them)."""
    but = re.match(r"^but\s+(.*)$", text)
    if but and not first and not grammar.has_verb(but.group(1)) and not _NEGATOR.match(but.group(1)):
        # "approve but 3": all but #3, or #3 as well? Either reading is a guess.
        raise DecisionError(f"{text!r} could add or leave out what it names; say 'all but …' or 'not …'")
    text = CONNECTOR.sub("", text).strip()
    if text == NO_MARK:
        return Clause(text, "no" if first else "no-mark")
    if text == ODD_MARK:
        return Clause(text, "no-mark")
    if _NO.fullmatch(text):
        return Clause(text, "no" if first else "take-back")
    if first and _WAIT.fullmatch(text):
        return Clause(text, "wait")
    if not first and re.match(r"actually\b", text):
        # "approve all but rm, actually all": a correction of what the line said before
        raise DecisionError(f"{text!r} corrects what came before it; say the one decision you mean")
    agreed = re.match(r"(?:yes|yeah|yep|ok|okay|sure)\b,?\s*(.*)$", text)
    rest = agreed.group(1) if agreed else ""
    if not first and (AGREED.fullmatch(text) or (rest and is_remark(rest, grammar) and not grammar.mentions(rest))):
        return Clause(text, "remark")  # "accept, fine by me", "keeping it, yes I saw the wedge": it agrees
    text = _as_exclusion(text, grammar, first)
    if not first and _WRONG_RUN.fullmatch(text):
        return Clause(text, "remark")  # "abort, wrong cluster": a reason only a stop may give (_check_remarks)
    count = re.fullmatch(r"(?:with |another |(?:do |run )?)?(\d+)(?: more)? (?:pairs|runs|samples|times|rounds)", text)
    bare = re.fullmatch(r"#?(\d+)", text)
    if bare and int(bare.group(1)) not in grammar.options:
        count = bare  # "more pairs pls, 20": a count, which only a retry takes
    if count:
        return Clause(text, "runs", runs=int(count.group(1)))  # "bench it some more, 40 pairs"
    if _UNSURE.fullmatch(text):
        raise DecisionError(f"{text!r}: say the decision when you are sure, or 'stop and ask me'")
    if _HEDGE.fullmatch(text):
        return Clause(text, "hedge")  # "3 is better, maybe": the decision stands, hedged (it needs a confirmation)
    if _TAKE_BACK.fullmatch(text) or re.match(r"^(?:never ?mind|scratch that|no wait|wait no|actually no)\b", text):
        return Clause(text, "take-back")
    for pattern, scope in _SCOPES:
        if pattern.fullmatch(text):
            return Clause(text, "scope", scope=scope)
    if _OTHERWISE.match(text) and not first:
        branch = grammar.decision(_OTHERWISE.sub("", text))
        return Clause(text, "otherwise", decision=branch)
    if _CONDITION.match(text):
        return _condition(text, grammar)
    negation = _NEGATOR.match(text)
    if negation and not first and re.match(r"no\s", text) and _decides(grammar, text[negation.end() :]):
        # "continue, no stop": "no, stop" taking the continue back, or "don't stop"? either is a guess
        raise DecisionError(f"{text!r} after a decision could take it back; say the one decision you mean")
    if negation:
        return _negated(text, text[negation.end() :].strip(), grammar)
    if REST_IS_FINE.fullmatch(text):
        return Clause(text, "remark")  # "drop tbo, rest is fine": the others stay as they are
    try:
        return Clause(text, "decision", decision=grammar.decision(text))
    except NotUnderstood:
        if is_remark(text, grammar):
            return Clause(text, "remark")
        raise


def _as_exclusion(text: str, grammar: Grammar, first: bool) -> str:
    """ "3 no", "the rm no": an option (command) named and then refused is "not 3"; after a command gate's approval,
    "skip the rm" leaves that command out the same way (a skip there would give up the whole option)."""
    trailing = re.fullmatch(r"(.+?),? (?:no|nope|not|no thanks|not that one)", text)
    if trailing and not grammar.has_verb(trailing.group(1)) and _names(grammar, trailing.group(1)):
        return f"not {trailing.group(1)}"
    leading = re.fullmatch(r"(?:skip|drop|leave out|hold off on|but skip|and skip)\s+(.+)", text)
    if grammar.kind == "command" and not first and leading and _names(grammar, leading.group(1)):
        return f"not {leading.group(1)}"
    return text


def _decides(grammar: Grammar, text: str) -> bool:
    """Does `text` hold a decision verb, or read as a decision in any of the gate's phrasings ("measure again")?"""
    if grammar.has_verb(text):
        return True
    try:
        grammar.decision(text)
    except DecisionError:
        return False
    return True


def _names(grammar: Grammar, text: str) -> list[int] | None:
    try:
        return grammar.names(text)
    except DecisionError:
        return None


def _condition(text: str, grammar: Grammar) -> Clause:
    """ "if 2 turns out unsafe": the condition, and the option it is about when it names one."""
    targets: list[int] = []
    standing = re.match(r"^(?:every time|whenever|each time)\b", text) is not None  # a rule for every later gate
    m = re.match(
        r"^((?:only if|if|unless|when|in case|as long as|provided|every time|whenever|each time)\s+)(.*)$", text
    )
    if m and grammar.kind != "command":  # a condition is about an option's evidence, never a command's
        words = m.group(2).split()
        for k in (3, 2, 1):  # "if 3 wedges", "if the scheduler wedges", "if the moe kernel turns out unsafe"
            if len(words) > k and not re.fullmatch(r"it|this|that|they|gain|confidence|there|you|we", words[0]):
                try:
                    named = grammar.names(" ".join(words[:k]))
                except DecisionError:
                    named = None
                if named:
                    targets, text = named, f"{m.group(1)}it {' '.join(words[k:])}"
                    break
    if re.match(r"^(?:in case|as long as|provided|every time|whenever|each time)\b", text):
        text = re.sub(r"^(?:in case|as long as|provided|every time|whenever|each time)", "if", text)
    scope: Scope | None = "standing" if standing else None
    return Clause(text, "condition", targets=targets, condition=grammar.condition(text), scope=scope)


_HOST = r"(?:[a-z]+-\d+|(?:the )?(?:hosts?|nodes?|machines?|boxes|box|gpus?|servers?)(?: \d+)?)"
_HOSTS_ONLY = re.compile(rf"(?:on |in |for )?(?:the )?{_HOST}(?:\s*(?:,|and|or|&)\s*{_HOST})*")  # "not gpu-1"

_OPINION = re.compile(
    r"(?:look|looks|seem|seems|sound|sounds|feel|feels)(?: so| too| that| very)? (?:good|great|fine|ok|okay|right|safe|"
    r"convincing|promising)|(?:so |too |that |very )?(?:good|great|fine|ok|okay|convincing|promising|worth it|"
    r"good enough|great either|"
    r"needed|necessary|today|now|yet|anymore|this time|worth the risk)"
)
_GERUNDS = {"stopping": "stop", "continuing": "continue", "accepting": "accept", "keeping": "keep",
            "skipping": "skip", "rolling": "roll", "reverting": "revert", "approving": "approve", "going": "go",
            "running": "run", "retrying": "retry", "deferring": "defer"}  # fmt: skip


def _negated(text: str, rest: str, grammar: Grammar) -> Clause:
    """ "don't roll back" (a verb removed), "not 2", "not the rm one" (options removed)."""
    rest = re.sub(r"^(\w+ing)\b", lambda m: _GERUNDS.get(m.group(1), m.group(1)), rest)  # "not stopping now"
    if _OPINION.fullmatch(rest):
        # "doesn't look good", "not today", "not needed": a reason against, never a decision of its own
        return Clause(text, "remark")
    rest = re.sub(r"\s+(?:now|yet|here|today|this time|though|tho)$", "", MEASURE.sub("", rest)).strip()
    if not rest:
        return Clause(text, "take-back")
    named = grammar.names(re.sub(r"^(?:do|run|go with|with|pick|try|include|bother with|bother|to)\s+", "", rest))
    if named:
        return Clause(text, "negated", targets=named)
    try:
        said = grammar.decision(rest)
    except NotUnderstood:
        if grammar.has_verb(rest) or grammar.mentions(rest) or _HOSTS_ONLY.fullmatch(rest):
            # "not gpu-1", "except on gpu-2": a host left out of what acts on every host
            raise NotUnderstood(f"didn't understand {text!r}: say what to do, not only what not to") from None
        return Clause(text, "remark")  # "can't have hosts wedging": a reason against; refused beside a go-ahead
    return Clause(text, "negated", decision=said, targets=list(said.targets))


def is_remark(text: str, grammar: Grammar) -> bool:
    """A reason or comment: no verb, exclusion, condition, scope, reference or correction in it (what it names, and
    whether its words may stand beside a go-ahead, is checked once the decision is known: `_check_remarks`)."""
    plain = re.sub(r"\b\w+ing\b", lambda m: _GERUNDS.get(m.group(0), m.group(0)), text)  # "rolling back"
    if is_gate_reason(text, grammar.kind):
        return True  # "we have the hosts until friday" at a budget gate: its "until" is the reason's, not a time
    return not (_NOT_A_REMARK.search(text) or grammar.has_verb(text) or grammar.has_verb(plain))


_REST = re.compile(r"\b(?:the rest|the others|everything else|all the others|the other ones|the other (?:one|two))\b")


def the_rest(parts: list[str], grammar: Grammar) -> list[str]:
    """ "only the overlap scheduler, drop the rest": "the rest" is every open option the other clauses do not name."""
    out = list(parts)
    for i, part in enumerate(parts):
        if not _REST.search(part) or REST_IS_FINE.fullmatch(CONNECTOR.sub("", part)):
            continue
        if any(_NEGATOR.match(CONNECTOR.sub("", p)) for j, p in enumerate(parts) if j != i):
            raise DecisionError(f"{part!r}: the rest of which? a 'not' beside it leaves that open; name them")
        named = set[int]().union(*(grammar.mentions(p) for j, p in enumerate(parts) if j != i))
        rest = [o for o in grammar.open if o not in named]
        if named and rest:
            out[i] = _REST.sub(" and ".join(map(str, rest)), part)
    return out


_CONDITION_WORDS = 12  # a condition said first is a few words: never more prefixes tried than this


def condition_first(part: str, grammar: Grammar) -> list[str]:
    """ "if 2 turns out unsafe just skip it": where the condition ends, when no comma says so — the first word
    after which the rest reads as a decision (tried word by word: never more than the line has words)."""
    said = CONNECTOR.sub("", part)
    if not _CONDITION.match(said) or "," in said:
        return [part]
    words = said.split()
    for k in range(2, min(len(words), _CONDITION_WORDS)):
        head, tail = " ".join(words[:k]), " ".join(words[k:])
        try:
            _condition(head, grammar)
            grammar.decision(tail)
        except DecisionError:
            continue
        return [head, tail]
    return [part]
