"""What a line's clauses add up to: the one decision they agree on (`combine`), every remark beside it checked against
what it decides, and whether a part of a line could be left out as a remark (`aside`, what a suggestion may drop)."""

from __future__ import annotations

import re

from policies.clauses import (
    AGREED,
    CALM,
    CONNECTOR,
    GO_AHEAD,
    HEDGED,
    MEASURE,
    PREFERENCE,
    REST_IS_FINE,
    Clause,
    Grammar,
    classify,
    condition_first,
    is_gate_reason,
    is_remark,
    split,
    the_rest,
)
from policies.gates import OPTION_GATES, Decision
from policies.refusals import DecisionError, NotUnderstood
from policies.tolerant import SARCASM

_KEPT_IN_A_SUGGESTION = re.compile(
    r"\b(?:for now|for the moment|temporarily|from now on|from here|always|till|until|end|later|tomorrow|tonight"
    r"|today|eventually|revisit\w*|first|next|last"
    r"|or|maybe|unless|if|when|once|after|before|again|only"
    # a count, a limit or a second answer a suggestion would drop: "retry the revert three times", "continue a bit
    # more", "retry with rules", "3 goes next time"
    r"|times|twice|thrice|few|couple|more|forever|time|bit|being|hour|with|rules?|yeah|right|nicht|pas)\b"
)
_FACT_WORD = re.compile(
    r"\d|\b(?:unsafe|safe|inconclusive|regressed|improved|wedges?|hangs?|gain|confidence|health)\b|verif"
)


def aside(text: str, rest: str, decision: Decision, grammar: Grammar) -> bool:
    """Could `rest` be left out of `text` as a remark beside `decision`? (what a suggestion may drop)"""
    rest = rest.strip(" ,")
    if not rest:
        return True
    if re.match(r"(?:that|which|who|where|whose|when|before|after)\b", rest):
        return False  # "drop the one | that failed": what is left says which one
    if _FACT_WORD.search(rest) or _KEPT_IN_A_SUGGESTION.search(rest):
        return False  # a suggestion never drops a number, the fact a condition would be about, a scope or a time
    try:
        if not is_remark(rest, grammar):
            return False
        _check_remarks(text, [rest], decision, grammar)
    except DecisionError:
        return False
    return True


def combine(text: str, grammar: Grammar) -> Decision:
    """The one decision a line of several clauses makes (DecisionError, naming the clauses that disagree)."""
    sarcasm = re.match(rf"{SARCASM}\b", text)
    if sarcasm:  # "yeah, yeah, 3 should go first": said with a roll of the eyes
        raise DecisionError(f"{text!r} opens with {sarcasm.group(0)!r}, which may mean the opposite; say it plainly")
    parts = the_rest([p for part in split(text) for p in condition_first(part, grammar)], grammar)
    if len(parts) > 1 and grammar.asks_which and AGREED.fullmatch(CONNECTOR.sub("", parts[0])):
        parts = parts[1:]  # "sure, a bit more", "yes, keep it": at a gate that asks which, the yes only leads in
    clauses = [classify(p, grammar, first=i == 0) for i, p in enumerate(parts)]
    if any(c.kind == "take-back" for c in clauses):
        taken = next(c.text for c in clauses if c.kind == "take-back")
        raise DecisionError(f"{text!r} takes the decision back ({taken!r}); say the one decision you mean")
    decided = [c for c in clauses if c.kind == "decision"]
    fine = [c for c in clauses if c.kind == "remark" and REST_IS_FINE.fullmatch(c.text)]
    if not decided and fine and any(c.kind == "negated" and c.decision is None for c in clauses):
        # "don't run the rm, the other two are ok", "not 2, the rest is fine": a go-ahead for all but those named
        decided = [Clause(fine[0].text, "decision", decision=Decision(action="approve"))]
        clauses = [c for c in clauses if c is not fine[0]]
    if not decided:
        raise NotUnderstood(f"didn't understand {text!r}: no decision in it")
    conditioned = any(c.kind == "condition" or (c.decision and c.decision.condition) for c in clauses)
    if conditioned and grammar.kind in OPTION_GATES and clauses[0].kind == "no":
        # "no, skip 3 if it wedges": a rule here moves the gate on, which the "no" may have refused
        raise DecisionError(f"{text!r} opens with 'no' and then gives a rule the gate goes on with; say which you mean")
    if conditioned and len(decided) > 1 and grammar.kind in OPTION_GATES:
        # "continue, and if 3 wedges roll it back": at a gate that moves on, a rule given there implies the go-ahead
        kept = [c for c in decided if not (c.decision and _goes_on(c.decision, grammar))] or decided
        if len(kept) < len(decided) and any(c.kind == "negated" for c in clauses):
            # "approve except tbo, skip 3 if it wedges": the exclusion belongs to the go-ahead the rule stands for
            raise DecisionError(f"{text!r}: say the options to leave out and the rule as two answers")
        decided = kept
    decision = _agree(decided, grammar)
    if len(decided) > 1:
        decision.read_as.append(
            " and ".join(repr(c.text) for c in decided) + f" read as one decision ({decision.action})"
        )
    for c in clauses:
        if c.kind == "condition":
            decision = _conditioned(decision, c)
        elif c.kind == "otherwise":
            assert c.decision is not None
            if decision.condition is None:
                raise DecisionError(f"{c.text!r} is an otherwise-branch without a condition before it")
            if c.decision.condition:
                decision.condition = f"({decision.condition}) && !({c.decision.condition})"
            decision.otherwise = c.decision.action
        elif c.kind == "scope":
            assert c.scope is not None
            decision.scope = c.scope
        elif c.kind == "runs":
            if decision.action != "retry" or (decision.runs is not None and decision.runs != c.runs):
                raise DecisionError(f"{c.text!r}: a count of runs goes with one retry")
            decision.runs = c.runs
    for c in clauses:
        if c.kind == "negated" and c.targets and c.decision is None and re.search(r"\byet$", c.text):
            # "not 3 yet, the rest is fine": later, or never? a skip and a deferral are different answers
            raise DecisionError(f"{text!r}: {c.text!r} — skip it, or defer it? say which")
        if c.kind == "negated":
            noted = len(decision.read_as)
            decision = _without(decision, c, grammar)
            if len(decision.read_as) == noted and c.targets and not (c.decision and c.decision.targets):
                decision.read_as.append(f"{c.text!r} read as leaving out " + ", ".join(f"#{t}" for t in c.targets))
            if c.decision is not None and not c.targets:
                decision.read_as.append(f"{c.text!r} denies {c.decision.action}, which the decision does not do")
        elif c.kind in ("condition", "scope", "otherwise") and len(clauses) > 1:
            decision.read_as.append(f"{c.text!r} read as the decision's {c.kind}")
    if clauses[0].kind == "no" and decision.action in (*GO_AHEAD, "select"):
        raise DecisionError(f"{text!r} opens with 'no' and then goes ahead; say which you mean")
    if any(c.kind == "no-mark" for c in clauses) and decision.action in (*GO_AHEAD, "select", "retry"):
        raise DecisionError(f"{text!r} marks a go-ahead with a no; say which you mean")
    if clauses[0].kind == "wait" and decision.action != "ask":
        raise DecisionError(f"{text!r} says wait and then {decision.action}; say which you mean")
    remarks = [c.text for c in clauses if c.kind == "remark"]
    if remarks:
        _check_remarks(text, remarks, decision, grammar)
        decision.hedged = decision.hedged or any(w in HEDGED for r in remarks for w in r.split())
        decision.rationale = "; ".join(remarks)
        decision.read_as.append(f"{'; '.join(repr(r) for r in remarks)} kept as the reason")
    if any(c.kind == "hedge" for c in clauses):
        decision.hedged = True
    return decision


def _check_remarks(text: str, remarks: list[str], decision: Decision, grammar: Grammar) -> None:
    """Refuse remarks that could change what the decision does (DecisionError).

    Beside a decision that goes ahead — keeps, approves, runs, selects, measures again — a remark may only use a
    closed vocabulary of calm words, the measurements and the names of what is decided on: "rm later", "rm
    excluded", "w/o rm", "-3", "kidding" or "too risky" could each undo part of it, and no list of such words is
    ever complete, so any word outside the vocabulary refuses the line (an open vocabulary of "statements" was tried
    in issue 35's sixth round and an attack found 161 wrong go-aheads in it: "keep it, that was a test", "approve,
    the cleanup is mine"). Beside a decision that does not go ahead, a remark may say anything that holds no verb,
    negation, condition, reference or correction."""
    ahead = decision.action in (*GO_AHEAD, "select")
    own = set(decision.targets) | ({grammar.gate_option} if grammar.gate_option is not None else set[int]())
    if grammar.kind in ("plan", "triage"):
        own |= set(grammar.options) - set(grammar.open)  # "tbo was a long shot": a no-go option is not chosen
    if decision.action in ("stop", "ask", "reject"):
        own |= set(grammar.options)  # a stop or an ask is about every option: "abort, tbo was the whole point"
    for remark in remarks:
        plain = MEASURE.sub(" ", remark)
        host_changing = decision.action in ("retry", "rollback", "skip", "defer")
        if (host_changing or decision.action == "stop") and _HOSTISH.search(plain) and _RESTRICTS.search(plain):
            # "revert again, not gpu-1", "roll it back, leave gpu-1 alone": the gate acts on all its hosts
            raise DecisionError(f"{text!r} names a host beside {decision.action}, which acts on every host; say which")
        if host_changing and (
            _PART_LEFT_OUT.fullmatch(remark) or (decision.action == "retry" and re.fullmatch(r"no\s+\w+", remark))
        ):
            # "revert again, not the config", "revert again, no reboot": a part of what it does, left out
            raise DecisionError(f"{text!r} leaves part of {decision.action} out, which it cannot; say it whole")
        if remark.startswith("wrong ") and decision.action != "stop":
            # "skip it, wrong option": the reason, or a take-back of what was typed? only beside a stop is it harmless
            raise DecisionError(f"{text!r}: {remark!r} could take the decision back; say the one decision you mean")
        mentioned = grammar.mentions(plain)
        chosen = decision.action == "select" and mentioned <= set(decision.targets)  # "#3 is bigger, go with 3"
        if PREFERENCE.search(remark) and mentioned and not chosen:
            # "#3 is better on paper, stop here": a preference between options is a decision of its own.
            raise DecisionError(f"{text!r} prefers an option beside the decision; say one decision")
        if mentioned - own:
            named = ", ".join(f"#{n}" for n in sorted(mentioned - own))
            raise DecisionError(f"{text!r} mentions {named} beside the decision; name each option you decide on")
        offered = grammar.kind == "continue_or_ask" and mentioned == {grammar.gate_option}  # "3 sounds good, go"
        if (
            mentioned & set(grammar.open)
            and ahead
            and not decision.targets
            and not offered
            and grammar.kind in ("command", *OPTION_GATES)
        ):
            # "yes, for 1 and 2", "run them, rm too": a go-ahead for all that names some is a guess either way
            raise DecisionError(f"{text!r} names #{min(mentioned)} beside a go-ahead for all; name what you mean")
        if mentioned and not ahead and _POSITIVE.search(plain):
            # "skip it, 3 looks great": what is said about the option argues against the decision
            raise DecisionError(f"{text!r} speaks for #{min(mentioned)} beside {decision.action}; say one thing")
        if _NOT_NOW.search(plain) and decision.action not in ("stop", "skip", "defer", "ask", "reject"):
            # "roll 3 back if it wedges, but not tonight", "revert again, not today": a time it cannot keep (beside a
            # skip or a stop, "not today" is the reason)
            raise DecisionError(f"{text!r}: {remark!r} says when, which a decision here cannot wait for; say it then")
        revisit = _DEFERRING.search(plain)
        if (
            revisit
            and decision.scope == "for_now"
            and re.search(r"\b(?:never|don't|dont|do not|no need|not|no)\b", plain)
        ):
            # "skip it for now, never revisit": for now, or for good?
            raise DecisionError(f"{text!r}: for now, or for good? say which")
        if decision.action in ("skip", "rollback", "stop") and decision.scope != "for_now" and revisit:
            # "revert it, we can revisit at the end": coming back to it later is a deferral, not a skip
            raise DecisionError(f"{text!r}: {decision.action}, or defer it to revisit later? say which")
        if grammar.kind == "continue_or_ask" and _COA_REFERENCE.search(plain):
            # at a continue-or-ask gate "it" may be the option that finished or the one offered next
            raise DecisionError(f"{text!r}: which option is {remark!r} about? name it by number")
        gate_reason = is_gate_reason(remark, grammar.kind)
        if gate_reason and (any(not is_gate_reason(r, grammar.kind) for r in remarks) or decision.scope != "once"):
            # "we have the cluster till 6, it's 6 now", "always …, we have the cluster till 6": a reason that holds
            # only with the rest of what is said, or for longer than it lasts
            raise DecisionError(
                f"{text!r}: {remark!r} is a reason for this answer alone; say it with the decision only"
            )
        if decision.action == "retry" and re.search(r"\b(?:wait|pause|between|sleep|apart|gap)\b", remark):
            # "revert again 3 times, wait 5 min between": the attempts run back to back
            raise DecisionError(f"{text!r}: {remark!r} asks for what a retry here cannot do; say the retry alone")
        if re.match(r"(?:i mean|i meant|meant|correction|err|erm)\b", remark):
            # "skip anything unsafe — i mean safe": a correction of what was said
            raise DecisionError(f"{text!r}: {remark!r} corrects the line; say it again as you mean it")
        if re.match(r"(?:are |r )?(?:you|u)\b|really$|(?:thoughts|wdyt|agree|right|yeah right|lol|haha|lmao)$", remark):
            # "keep it, you sure", "approve, u ready": a question back, said without its "?"
            raise DecisionError(f"{text!r}: {remark!r} asks something; answer the gate once it is settled")
        if mentioned and (re.search(r"\b(?:too|also|as well)$", remark) or remark.startswith("with ")):
            # "go on with the plan, 1 too", "continue, with tbo": it adds an option to the go-ahead
            raise DecisionError(f"{text!r}: {remark!r} adds #{min(mentioned)}; name every option you decide on")
        if re.fullmatch(r"(?:yeah|yes|yep|sure|right|ok|okay)(?:[ ,]+(?:yeah|yes|yep|sure|right|ok|okay))+", remark):
            # "go with 3, yeah yeah", "all three fine, sure sure": the eye-roll after the decision, as before it
            raise DecisionError(f"{text!r} ends with {remark!r}, which may mean the opposite; say it plainly")
        if grammar.kind == "rollback" and ahead and not gate_reason and _CHECK_OR_HOST.search(plain):
            # "accept, the check was right": the check that failed, trusted, argues against accepting; "the host is
            # healthy" says nothing of the other host the rollback ran on
            raise DecisionError(
                f"{text!r}: {remark!r} does not say why the unverified rollback may stand; say it alone"
            )
        if (
            grammar.kind == "budget"
            and ahead
            and not gate_reason
            and re.search(r"\d|%|\btwice\b|\b(?:hours?|minutes?|mins?|days?|weeks?)\b|\bx\b", remark)
        ):
            # "continue, another hour", "2x budget is fine": a limit, but going on lifts the budget for the whole run
            raise DecisionError(
                f"{text!r}: {remark!r} sets a limit the budget gate cannot keep (going on lifts it for the rest of the "
                "run); say continue or stop alone"
            )
        if re.search(
            r"\b(?:twice|thrice|(?<!#)(?<!option )\d+ (?:times|tries|attempts|pairs|runs)|at least|at most|as many"
            r"|per host)\b",
            remark,
        ):
            # "revert again, at least twice", "once more, twice": a count said apart from a retry is not its count,
            # and beside anything else ("stop, twice") it counts nothing
            raise DecisionError(f"{text!r}: {remark!r} counts apart from a retry; say it with one ('retry 2 times')")
        if re.search(r"\b(yeah|yes|yep|sure|right|ok|okay)\W+\1\W*$", text):
            # "go with 3, sure, sure": the eye-roll split over two remarks
            raise DecisionError(
                f"{text!r} ends with {remark!r} said twice, which may mean the opposite; say it plainly"
            )
        if grammar.kind == "brain_unavailable" and re.fullmatch(r"(?:claude|the model|model|the api|api)", remark):
            # "stop, claude": stop the run, or stop calling claude?
            raise DecisionError(
                f"{text!r}: stop the run, or stop calling {remark}? say 'stop' or 'continue with rules'"
            )
        if gate_reason and not ahead:
            # "skip it, I'll take the risk": a reason to go ahead, beside a decision that does not
            raise DecisionError(f"{text!r}: {remark!r} argues for going ahead, not for {decision.action}; say which")
        if ahead and not gate_reason:
            calm = CALM | grammar.words_of(sorted(own)) | (_NAMING if mentioned else set[str]())
            if grammar.kind == "goal" and _miss_is_noise(remark):
                # "take it, 19.8 vs 20 is noise", "19.8 is within noise": the miss is noise. "accept it, the gain is
                # noise" says the gain itself is not real, which argues against accepting it as the goal
                calm |= {"noise"}
            words = [re.sub(r"'s$", "", w.rstrip(".!'")) for w in plain.split()]  # "gain's good"
            odd = [w for w in words if w not in calm and not re.fullmatch(r"[+-]?\d+", w)]
            if odd or re.search(r"[^a-z0-9\s.'%+]", plain.rstrip(".! ")):
                said = odd[0] if odd else remark
                raise DecisionError(
                    f"{text!r}: {said!r} beside a go-ahead could change what it does; say the decision alone, "
                    "or the options it leaves out with 'not …'"
                )


_CHECK_OR_HOST = re.compile(r"\b(?:checks?|verif\w*|host)\b")  # a rollback gate's remark about its check or a host
_RESTRICTS = re.compile(r"\b(?:only|just|alone|except|but|leave|keep|skip|minus|without|spare|untouched|touch)\b")
# "revert again, not the config", "without rebooting": a part of what a decision that changes hosts does, left out
_PART_LEFT_OUT = re.compile(
    r"(?:not|without|minus|except|but not)\s+(?:the|any|my|our)\s+\w+(?: \w+)?|(?:without|no)\s+\w+ing"
)
_HOSTISH = re.compile(r"\b(?:[a-z]+-\d+|hosts?|nodes?|machines?|boxes|box|gpus?|servers?)\b")
_NAMING = frozenset({"one", "option", "change", "thing", "stuff"})  # "the moe one": how a title is said
_NOISE = re.compile(
    r"[+]?(\d+(?:\.\d+)?)\s*%?\s*(?:vs\.?|versus)\s*[+]?(\d+(?:\.\d+)?)\s*%?(?: is)?(?: just| only| all)? noise"
    r"|[+]?(\d+(?:\.\d+)?)\s*%?(?: is)?(?: just| only)? within (?:the )?noise(?: of [+]?(\d+(?:\.\d+)?)\s*%?)?"
)


def _miss_is_noise(remark: str) -> bool:
    """ "19.8 vs 20 is noise", "19.8 is within noise (of 20)": a miss of the target too small to tell, said of two
    close numbers, not of the gain ("19.8 vs 0 is noise" says the gain is not real)."""
    m = _NOISE.fullmatch(remark)
    if m is None:
        return False
    said, target = float(m.group(1) or m.group(3)), m.group(2) or m.group(4)
    if said <= 0:
        return False
    return target is None or abs(said - float(target)) <= 0.25 * max(said, float(target))


_NOT_NOW = re.compile(r"\bnot (?:tonight|today|now|yet|this time|this week|before \w+)\b")
_DEFERRING = re.compile(r"\b(?:revisit|come back|at the end|later|afterwards)\b")
_COA_REFERENCE = re.compile(
    r"\b(?:it|that one|this one|that change|this change|(?:the )?(?:last|previous|next) (?:one|option))\b"
    r"|^(?:that|this|they)\b(?!'s (?:enough|it))"
)
_POSITIVE = re.compile(r"\b(?:good|great|fine|better|best|win|wins|promising|worth|nice|solid|love|like|ok|okay)\b")


def _agree(decided: list[Clause], grammar: Grammar) -> Decision:
    """Clauses that say one decision ("lgtm, ship it"; "skip 2, just do 3" when 3 is all that is left)."""
    first = decided[0].decision
    assert first is not None
    result = first.model_copy(deep=True)
    for clause in decided[1:]:
        other = clause.decision
        assert other is not None
        if _follow_up(result, other):
            continue
        if grammar.kind in OPTION_GATES and _plain_go_ahead(result) and other.action in ("skip", "defer", "select"):
            everything = set(other.targets or grammar.open) >= set(grammar.open)
            if other.action != "select" and everything and other.condition is None and other.scope == "once":
                # "approve, skip all": a go-ahead with nothing left to go ahead with
                raise DecisionError(f"{decided[0].text!r} and {clause.text!r} leave nothing to go ahead with")
            result = other.model_copy(deep=True)  # "continue, but skip 1": the go-ahead, without #1
            continue
        same = other.action == result.action or {other.action, result.action} <= GO_AHEAD
        if result.action == other.action == "select" and result.targets != other.targets:
            raise DecisionError(f"{decided[0].text!r} and {clause.text!r}: which first? say 'go with N'")
        if same and bool(other.targets) != bool(result.targets) and grammar.kind in ("command", *OPTION_GATES):
            raise DecisionError(
                f"{decided[0].text!r} and {clause.text!r}: all of them, or only what the second names? say which"
            )
        if same and other.runs != result.runs:
            # "revert again 3 times, revert again 2 times", "revert again 3 times. then revert again"
            raise DecisionError(f"{decided[0].text!r} and {clause.text!r} say different counts; say one")
        if same and other.condition == result.condition and other.scope == result.scope:
            result.targets = list(dict.fromkeys([*result.targets, *other.targets]))
            result.read_as.extend(other.read_as)
            result.hedged = result.hedged or other.hedged
            continue
        pair = {result.action, other.action}
        if pair in ({"skip", "stop"}, {"defer", "stop"}) and grammar.kind in OPTION_GATES:
            dropped = result if result.action != "stop" else other
            if set(dropped.targets) >= set(grammar.open):
                result = dropped.model_copy(deep=True)  # "skip 3, we're done": nothing is left once 3 is skipped
                continue
        chooses = {"select", "approve", "continue"}
        if len(pair) == 2 and pair & {"skip", "defer"} and pair & chooses and grammar.kind in OPTION_GATES:
            skipped, chosen = (result, other) if result.action in ("skip", "defer") else (other, result)
            rest = {o for o in grammar.open if o not in skipped.targets}
            if chosen.targets and set(chosen.targets) == rest and chosen.condition is None and chosen.scope == "once":
                # "skip 1 and 2, do 3", "skip 1 and 3, keep 2": with 3 (2) all that is left, the go-ahead for it
                # says what skipping the others does.
                result = skipped.model_copy(deep=True)
                result.hedged = skipped.hedged or chosen.hedged  # "skip 3, maybe keep 2"
                continue
        raise DecisionError(
            f"{decided[0].text!r} and {clause.text!r} are two different decisions "
            f"({result.describe()} / {other.describe()}); say one decision at a time"
        )
    return result


def _goes_on(decision: Decision, grammar: Grammar) -> bool:
    """A plain go-ahead, or at a continue-or-ask gate a select of what it offers next."""
    nxt = [grammar.gate_option] if grammar.gate_option is not None else []
    offered = grammar.kind == "continue_or_ask" and decision.action == "select" and decision.targets == nxt
    return _plain_go_ahead(decision) or (offered and decision.condition is None)


def _plain_go_ahead(decision: Decision) -> bool:
    return (
        decision.action in GO_AHEAD and not decision.targets and decision.condition is None and decision.scope == "once"
    )


def _follow_up(decision: Decision, other: Decision) -> bool:
    """ "skip it, move on": a plain "continue" after a decision that already moves on says nothing more (a "keep it"
    after a skip is a second decision, never a follow-up)."""
    return (
        other.action == "continue"
        and _plain_go_ahead(other)
        and decision.action in ("skip", "defer", "select", "rollback")
    )


def _conditioned(decision: Decision, clause: Clause) -> Decision:
    """ "if 3 wedges, skip it": the condition, and the option it named, are the decision's."""
    if decision.condition is not None:
        raise DecisionError(f"{clause.text!r} is a second condition; say one condition per decision")
    decision.condition = clause.condition
    if clause.scope is not None:
        decision.scope = clause.scope  # "every time stress wedges, revert"
    if clause.targets:
        if decision.targets and decision.targets != clause.targets:
            raise DecisionError(f"{clause.text!r} is about another option than the decision")
        decision.targets = clause.targets
    return decision


def _without(decision: Decision, clause: Clause, grammar: Grammar) -> Decision:
    """The decision with what a negated clause removes: its options, or nothing when it denies another verb."""
    denied = clause.decision
    own = [grammar.gate_option] if grammar.gate_option is not None else []
    said = set(decision.targets or own)
    unknown = [t for t in clause.targets if t not in grammar.options]
    if unknown:
        raise DecisionError(f"{clause.text!r} names #{unknown[0]}, which is not one here")
    if denied is not None and not denied.targets and _direction(denied.action) == _direction(decision.action):
        # "2 not next": a denied go-ahead beside a go-ahead, a denied way back beside a way back
        raise DecisionError(f"{clause.text!r} denies what the line goes on to do ({decision.action})")
    if denied is not None and denied.action in _IMPLIES.get(decision.action, ()) and set(denied.targets) <= said:
        # "skip it, don't revert it", "roll it back but don't continue": the decision does what is denied
        raise DecisionError(f"{clause.text!r}: {decision.action} does that here; say which you mean")
    if denied is not None:
        same = denied.action == decision.action or {denied.action, decision.action} <= GO_AHEAD
        goes_ahead = denied.action in (*GO_AHEAD, "select")
        if same and (not denied.targets or set(denied.targets) <= said) and not _untargeted_go_ahead(decision):
            raise DecisionError(f"{clause.text!r} denies the decision the line makes ({decision.action})")
        if not same and denied.targets and set(denied.targets) - said:
            # "2, not 3 gets skipped": go with 2 and keep 3, or skip 2 and not 3? either is a guess
            raise DecisionError(f"{clause.text!r} decides on another option than the line; say one decision")
        if not same and not (goes_ahead and denied.targets):
            return decision  # "don't roll back, keep it": the correction is the decision
        if same and not _untargeted_go_ahead(decision):
            return decision  # "skip 1, don't skip 2": the options corrected, not the decision
    removed = [t for t in clause.targets if t != grammar.gate_option or grammar.kind in ("command", *OPTION_GATES)]
    if grammar.kind in OPTION_GATES:
        removed = [t for t in removed if t in grammar.open]  # "go on without tbo" where tbo is a no-go already
        if not removed and clause.targets:
            return decision
    if (
        not removed
        and denied is not None
        and _direction(denied.action) == "ahead"
        and _direction(decision.action) == "back"
    ):
        return decision  # "I wouldn't keep that, roll back": the same thing said twice
    if not removed:
        raise DecisionError(f"{clause.text!r} denies the option this gate is about; say skip or keep")
    if decision.action not in ("skip", "defer", "select", *GO_AHEAD):
        # "retry without 2", "stop, not 3": there is nothing of those to leave out
        raise DecisionError(f"{clause.text!r}: {decision.action} takes no options to leave out; say one decision")
    overlap = [t for t in removed if t in decision.targets]
    if overlap:
        raise DecisionError(f"{clause.text!r} removes #{overlap[0]}, which the decision names; say which you mean")
    if (
        decision.action == "select"
        and len(decision.targets) > 1
        and set(decision.targets) | set(removed) >= set(grammar.open)
    ):
        # "run 2 and 3, not tbo": the select names what is left once tbo is out
        return decision.model_copy(update={"action": "skip", "targets": sorted(removed)})
    if _untargeted_go_ahead(decision):
        if grammar.kind == "command":
            keep = [o for o in grammar.options if o not in removed]
            if not keep:
                raise DecisionError("that leaves no command to approve; to run none, reject")
            decision.targets = keep
        elif grammar.kind in OPTION_GATES:
            if set(removed) >= set(grammar.open):
                # "go on with the plan, but not 3" with #3 all that is left: a go-ahead with nothing to go ahead with
                raise DecisionError(f"{clause.text!r} leaves nothing to go ahead with; to end the run, stop")
            decision = decision.model_copy(update={"action": "skip", "targets": sorted(removed)})
        else:
            raise DecisionError(f"{clause.text!r} names options this gate does not decide on")
        decision.read_as.append(f"{clause.text!r} → without " + ", ".join(f"#{t}" for t in removed))
    return decision


# What else a decision does: a skip rolls the option back and moves on, a stop rolls back what was not kept.
_IMPLIES: dict[str, tuple[str, ...]] = {
    "skip": ("rollback", "continue"),
    "defer": ("rollback", "continue"),
    "rollback": ("continue",),
    "select": ("continue",),
    "stop": ("rollback",),
}


def _direction(action: str) -> str:
    """Whether an action goes ahead (keeps, runs, tries) or back (skips, rolls back, stops, refuses); measuring or
    reverting again, and asking, are neither."""
    if action in ("approve", "continue", "select"):
        return "ahead"
    return action if action in ("retry", "ask") else "back"


def _untargeted_go_ahead(decision: Decision) -> bool:
    return decision.action in GO_AHEAD and not decision.targets and decision.condition is None
