"""The grammar's words: verbs, hedges, filler, scopes, the facts' names and comparisons, and the marks that mean
yes or no."""

from __future__ import annotations

import re

from policies.gates import FACTS, Action, Scope
from policies.refusals import DecisionError

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


VERBS: list[tuple[str, Action]] = [
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
VERBS.sort(key=lambda v: -len(v[0]))
VERB_RE: list[tuple[re.Pattern[str], Action]] = [
    (re.compile(rf"^{pattern}(?![\w-])"), action)
    for pattern, action in VERBS  # "no-go" holds no "no"
]

HEDGES = (
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
GERUND_VERBS = {
    "skipping": "skip", "keeping": "keep", "stopping": "stop", "continuing": "continue", "reverting": "revert",
    "deferring": "defer", "accepting": "accept", "approving": "approve",
}  # fmt: skip
LEADS = (
    "let's", "lets", "please", "ok so", "okay so", "so", "then", "and", "we should", "you should",
    "we can", "you can", "i'd", "i would", "we'll", "i'll", "we will", "i will", "we",
)  # fmt: skip
FILLER_PHRASES = (
    "for clarification", "for confirmation", "for guidance", "for me", "for now please", "with more pairs",
    "with more runs", "with more samples",
)  # fmt: skip
FILLER = {
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

SCOPES: list[tuple[str, Scope]] = [
    (r"for now", "for_now"), (r"for the moment", "for_now"), (r"temporarily", "for_now"),
    (r"from now on", "standing"), (r"going forward", "standing"), (r"always", "standing"),
]  # fmt: skip

ENUM_WORDS: dict[str, str] = {}  # "unsafe" → 'verdict == "unsafe"', gathered from the gate facts
for _kind, _facts in FACTS.items():
    for _name, _spec in _facts.items():
        for _value in _spec.enum or []:
            if _name in ("klass", "last_outcome"):
                continue
            phrase = _value.replace("_", " ")
            ENUM_WORDS.setdefault(phrase, f'{_name} == "{_value}"')
            if _name == "risk":
                ENUM_WORDS.setdefault(f"{phrase} risk", f'risk == "{_value}"')

BOOL_PHRASES: list[tuple[str, str]] = [
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

FIELDS = {
    "gain": "gain_pct",
    "the gain": "gain_pct",
    "improvement": "gain_pct",
    "the improvement": "gain_pct",
    "speedup": "gain_pct",
    "confidence": "confidence",
    "wedges": "wedges",
    "pairs": "pairs",
}
CMPS = [
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
NO_MARKS = "👎❌❎✖✗✘🚫⛔🙅🛑🔴☐×✕"
YES_MARKS = "👍✅✔🚀👌🙏💯🎉🆗🙂😀😃😄😁😊👏💪🤝🙌✨"
