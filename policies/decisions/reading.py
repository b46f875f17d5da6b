"""One clause read: its verb, targets, count, scope and condition; options named by title, hosts excepted, commands
named, and what a line's lead says (standing, hedged, scoped)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policies.decisions.phrases import FOLLOW_UP, condition_of, targets_of, verb_in
from policies.decisions.vocabulary import EXAMPLES, FILLER, FILLER_PHRASES, GERUND_VERBS, HEDGES, LEADS, SCOPES, VERB_RE
from policies.gates import Action, Decision, Scope
from policies.refusals import DecisionError, NotUnderstood
from policies.tolerant import title_match


@dataclass
class ReadClause:
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


def clause(
    text: str, gate_option: int | None, known: Sequence[int], titles: Mapping[int, str] | None = None
) -> Decision:
    """One clause as a decision. "lgtm, ship it" says one decision twice: the words after the first verb
    are read again as a clause of their own, in a loop (never a recursion as deep as the line is long)."""
    said_again: list[tuple[ReadClause, Action]] = []  # each clause whose leftover words are read again
    while True:
        read = read_clause(text, gate_option, known)
        if isinstance(read, Decision):
            result = read
            break
        other = verb_in(read.rest.lstrip(", "))
        go_ahead = {"approve", "continue"}
        if other is not None and other != read.action and not {other, read.action} <= go_ahead:
            raise DecisionError(f"{read.text!r} says both {read.action} and {other}; say one decision at a time")
        if other is not None and (other == read.action or {other, read.action} <= go_ahead) and not read.targets:
            # "lgtm, ship it", "sounds good, keep going": the same decision said twice.
            said_again.append((read, other))
            text = re.sub(r"^(?:and|then|so)\s+", "", read.rest.lstrip(", "))
            continue
        result = named_by_title(read, titles)
        break
    if said_again and result.targets and result.targets != [gate_option]:
        # "approve, yes 3 too": all of them and then #3, or only #3? either is a guess
        raise DecisionError(f"{said_again[0][0].text!r}: all of them, or only what follows names? say which")
    for read, other in reversed(said_again):
        # "looks good to me, approve it": the explicit word wins when it is the same decision, unconditional.
        if result.action != other or result.condition is not None:
            result = named_by_title(read, titles)
    return result


def read_clause(text: str, gate_option: int | None, known: Sequence[int]) -> Decision | ReadClause:
    """A whole decision, or how far the clause reads before words are left over."""
    m = re.match(
        r"^#?(\d+) (?:is|looks like|seems) (?:a |the )?(bigger|better|safer|larger|clearer|best|biggest)"
        r"(?: (?:win|one|option|choice|bet|idea|pick|gain))?(?: (?:anyways?|then|i think|probably|here))?$",
        text,
    )
    if m:
        return Decision(action="select", targets=[int(m.group(1))], rationale=text)
    found: tuple[re.Match[str], Action] | None = next(
        ((vm, verb) for pattern, verb in VERB_RE if (vm := pattern.match(text))), None
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
    targets, rest = targets_of(rest, gate_option, known)
    scope: Scope = "once"
    for pattern, value in SCOPES:
        sm = re.search(rf"\b{pattern}\b", rest)
        if sm:
            scope = value
            rest = (rest[: sm.start()] + rest[sm.end() :]).strip()
            break
    condition = None
    cm = re.search(r"\b(only if|if|when|unless|as long as|provided(?: that)?|while)\b.*$", rest)
    if cm:
        condition = condition_of(cm.group(0))
        rest = rest[: cm.start()].strip()
    for phrase in FILLER_PHRASES:
        rest = rest.replace(phrase, " ")
    if action not in ("stop", "reject", "ask", "continue"):
        rest = FOLLOW_UP.sub("", rest).strip()
    if action == "select":
        rest = re.sub(r"\s*\bnext$", "", rest)  # "do two-batch overlap next"
    leftover = [w for w in re.split(r"[ ,]+", rest) if w and w not in FILLER]
    if leftover and not (action == "ask" and set(leftover) <= {"me", "first"}):
        return ReadClause(text, action, rest, targets, runs, scope, condition, " ".join(leftover))
    return Decision(action=action, targets=targets, runs=runs, scope=scope, condition=condition)


def named_by_title(read: ReadClause, titles: Mapping[int, str] | None) -> Decision:
    """A clause whose leftover words name options by title ("skip the overlap scheduler"), or NotUnderstood."""
    text, rest, said, targets = read.text, read.rest, read.said, read.targets
    title_read = None
    if not targets and titles:
        if re.search(r"\b(?:not|no|never|instead|except|but|without|rather|besides|minus|isn't|other)\b", rest):
            raise DecisionError(f"{text!r} names an option with a negation; name the ones you mean by number")
        names = [n for n in re.split(r"\s*(?:,|\band\b|&)\s*", said) if n]
        chosen_all: list[int] = []
        for name in names:
            if name.strip() in NUMBER_WORDS:
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


EXCEPT = re.compile(
    r"(?:\s*,)?\s*(?:on\s+)?(?:all(?:\s+(?:the\s+)?hosts)?|everywhere|every\s+host)?\s*"
    r"\b(?:except|but\s+not|excluding|apart\s+from)\s+(?:on\s+)?(?:hosts?\s+)?"
    r"(?P<names>[a-z0-9][\w.-]*(?:\s*(?:,|and|&)\s*[a-z0-9][\w.-]*)*)"
)


def hosts_excepted(text: str, hosts: Sequence[str]) -> tuple[list[str], str]:
    """("approve on all except gpu-7", hosts) → (["gpu-7"], "approve"); names checked against `hosts`."""
    m = EXCEPT.search(text)
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


REPEATED = re.compile(r"\b(\w+)(?:[ ,]+\1\b){2,}")
NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "the two", "these two"}
TARGETED = ("select", "skip", "defer")  # the actions whose targets a gate acts on

MAX_REVERTS = 5  # "revert again 3 times": more attempts in a row than this is a person's job, not a loop's


def all_but(text: str, commands: Sequence[str]) -> str:
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


def named_command(text: str, commands: Sequence[str], notes: list[str] | None = None) -> str:
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
            hits = [i for i, c in enumerate(commands, 1) if said[0] in command_words(c)]
            if len(hits) == 1 and notes is not None:
                notes.append(f"{named!r} → command {hits[0]} ({commands[hits[0] - 1]})")
            elif len(hits) == 1:
                return text  # named by a word of its arguments only where the reading is echoed and confirmed
        if len(hits) != 1:
            return text
        picked.append(hits[0])
    return "approve " + " and ".join(map(str, sorted(set(picked))))


COMMAND_NOISE = {"tmp", "var", "usr", "bin", "etc", "dev", "opt", "the", "and"}  # path parts that name nothing


def command_words(command: str) -> set[str]:
    """The words that name a listed command: its program, and any word of what it acts on ("the cache" is
    `rm -rf /tmp/sglang-cache`'s)."""
    lowered = command.lower()
    return {lowered.split()[0]} | {w for w in re.findall(r"[a-z]{3,}", lowered) if w not in COMMAND_NOISE}


STANDING_LEADS = ("always", "from now on", "going forward")
BARE_YES = re.compile(r"(?:(?:yes|yeah|yep|yup|ya|yea|ok|okay|sure|k|kk|y|alright|fine|right)[ ,.]*)+")
ACCEPTS = re.compile(
    r"\b(?:approve|approved|accept|accepted|as is|as it is|as it stands|as they are|leave|take|like that)\b"
)
SET = re.compile(
    r"(?P<head>.*?)\s*\b(?:(?:all|everything|every option|them all|all of them|all the options)\s*,?\s*"
    r"(?:but|except|apart from|other than|besides|minus|excluding|save)\s+(?P<but>.+)"
    r"|(?:only|just)\s+(?:(?:run|do|go with|try|keep|approve)\s+)?(?P<only>.+?))"
)
# The words before a set ("skip all but 3", "run only 1 and 3") and the decision they make on it.
SET_HEAD: dict[str, Action] = {
    **dict.fromkeys(("", "run", "do", "go with", "approve", "continue", "keep", "try", "proceed with", "go ahead with",
                     "ok", "yes", "go", "go for", "run with", "test", "let's do", "lets do", "approve running"),
                    "approve"),
    **dict.fromkeys(("skip", "drop", "pass on"), "skip"),
    **dict.fromkeys(("defer", "park", "postpone", "hold off on"), "defer"),
}  # fmt: skip


def leads(text: str) -> tuple[str, bool, Scope | None]:
    """(the text without its leading hedges and leads, hedged, the scope a lead gave)."""
    hedged, scope = False, None
    changed = True
    while changed:
        changed = False
        for lead in HEDGES + LEADS + STANDING_LEADS:
            if text.startswith(lead + " ") or text.startswith(lead + ","):
                hedged = hedged or lead in HEDGES
                if lead in STANDING_LEADS:
                    scope = "standing"
                text = text[len(lead) :].lstrip(" ,")
                changed = True
    if hedged:  # "i'd lean towards skipping it": the verb the hedge leads to
        text = re.sub(r"^rolling (?:it |this |that )?back\b", "roll back", text)
        text = re.sub(r"^(\w+ing)\b", lambda m: GERUND_VERBS.get(m.group(1), m.group(1)), text)
    return text, hedged, scope
