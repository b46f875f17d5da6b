"""The grammar bound to one gate (`GateGrammar`), reading a line with it, and the closest line it would take."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from policies.agreement import aside as clause_aside
from policies.agreement import combine as combine_clauses
from policies.clauses import split as split_clauses
from policies.decisions.phrases import condition_of, verb_in
from policies.decisions.reading import ACCEPTS, BARE_YES, SET, SET_HEAD, clause, command_words, leads, named_command
from policies.decisions.vocabulary import EXAMPLES
from policies.gates import GATES, OPTION_GATES, Decision, GateKind
from policies.refusals import DecisionError, NotUnderstood
from policies.tolerant import read, title_match


@dataclass
class GateGrammar:
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
        if GATES[self.kind].choices is not None and BARE_YES.fullmatch(reading.text):
            # "Keep it, or skip it and roll back?" answered "yes", "yep sure", "fine by me": which? (a yes-or-no
            # question's yes is its go-ahead)
            raise DecisionError(f"{text!r} does not say which: this gate asks {GATES[self.kind].choices}")
        said = self._sets(reading.text, reading.notes)
        said, hedged, lead_scope = leads(said)
        if GATES[self.kind].choices is not None and BARE_YES.fullmatch(said):
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
            said = named_command(said, self.commands, reading.notes)  # "sure, run nvidia-smi and py-spy": per clause
        otherwise_text = None
        om = re.search(
            r"(?:,\s*|\s)(?:or|otherwise|else|,)\s+(?=(?:stop|ask|skip|continue|roll|defer|wait|pause|wrap|end|finish"
            r"|abort|halt))",
            said,
        )
        if om and re.search(r"\b(if|unless|when|as long as|provided|while|in case)\b", said[: om.start()]):
            otherwise_text = said[om.end() :].strip()
            said = said[: om.start()].strip(" ,")
        decision = clause(said, self.gate_option, self.options, self.titles)
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
            other = clause(otherwise_text, self.gate_option, self.options, self.titles)
            if other.condition:
                # "…, or stop and ask if you are unsure": the first branch holds only when the second doesn't.
                decision.condition = (
                    f"({decision.condition}) && !({other.condition})" if decision.condition else f"!({other.condition})"
                )
            decision.otherwise = other.action
        if self.kind == "rollback" and decision.action == "approve" and not ACCEPTS.search(reading.text + " " + text):
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
        m = SET.fullmatch(said)
        if m is None:
            # "approve 2 only", "py-spy only": the words before the set are the verb, whatever their length
            m = next(
                (
                    found
                    for head in sorted(SET_HEAD, key=len, reverse=True)
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
        verb = SET_HEAD.get(head)
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
        return condition_of(text)

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
            named = {i: command_words(c) for i, c in enumerate(self.commands, 1)}
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
        return verb_in(text) is not None

    def words_of(self, options: Sequence[int]) -> set[str]:
        named = [self.commands[o - 1] for o in options if 0 < o <= len(self.commands)] if self.commands else []
        named += [self.titles[o] for o in options if o in self.titles and not self.commands]
        words = {w for phrase in named for w in re.findall(r"[a-z0-9][a-z0-9-]*", phrase.lower())}
        return words.union(*(command_words(c) for c in named if self.commands))


def read_line(text: str, grammar: GateGrammar) -> Decision:
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


OPEN_ENDED = {"that", "which", "who", "the", "a", "an", "and", "or", "but", "to", "of", "with", "for", "if", "when"}
SUGGEST_WORDS = 8  # prefixes tried for a suggestion: a decision is said in its first few words


def closest(text: str, grammar: GateGrammar, takes: Callable[[str], Decision]) -> str | None:
    """The closest reading of a line not understood that this gate takes, as a one-liner to press Enter on
    ("skip it because lol" → "skip #2"): a clause, or the first words, that read alone — never when what is left
    holds a negation or another decision."""
    candidates = split_clauses(text)
    words = text.split()
    candidates += [" ".join(words[:k]) for k in range(min(len(words) - 1, SUGGEST_WORDS), 0, -1)]
    for said in candidates:
        if said.split()[-1] in OPEN_ENDED:
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
