"""Tolerant reading of a one-liner, before the grammar (`policies.decisions`) sees it.

People type decisions the way they type in chat: "Soudnds like 3 is bigger win anyways", "nah, roll it
back", "ok, continue", "skip the overlap scheduler". This layer only rewrites the text *into the same
closed grammar*: typos are corrected against the grammar's own words (rapidfuzz, a well-kept library),
filler is dropped, and the phrasings operators use are mapped onto the grammar's verbs. It never invents
an action the grammar would not read, and everything beyond the core grammar is written down in `notes`
("'soudnds' → 'sounds'") so the decision is echoed and confirmed before it takes effect.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from policies.gates import OPTION_GATES, GateKind

# The grammar's own words: typos are corrected only towards these (and the gate's option titles and hosts).
_GRAMMAR_WORDS = """
stop ask first check with wait for pause ahead with let's pick choose take try select continue proceed
carry keep going next move hold park postpone defer skip drop pass again retry rerun run roll back
rollback revert undo abort halt cancel ship approve yes okay reject don't nope approve accept verify
measure finish later decline approved skipping skipped dropping dropped stopping parked deferred continuing
accepted
only when unless unsafe safe unknown improved regressed inconclusive effect risk medium high gain
improvement speedup confidence wedges pairs least most over above more than greater under below less
verified health fails failed have next steps step there options left unsure sure uncertain doubt proceed
confident hangs wedged hung runs times attempts seeds everything rest except excluding apart hosts host
everywhere every option this that bigger better safer larger clearer best biggest sounds like think guess
maybe probably perhaps seems please then just thanks instead anyway anyways here from always forward
temporarily moment clarification confirmation guidance remeasure rerun rebench re-run
"""
# Everyday words that are not the grammar's but must not be "corrected" into it ("them" is not "then").
_COMMON = """
them these those they their there then than what when where which while does mean meaning why how
with without from into onto about after before plan plans this that thing things good fine great nice
done enough okay yeah sure wait hold back down over here give make sounds looks seems feel want need
delete database ignore previous instructions everything anything nothing something whatever idk
slower faster worse same also again still just only even well much many some none other come came
back later soon tomorrow today call wrap finish ditch scrap toss turn leave live works looks
the and for not all now one yes try run ask off out you are was has had its but can did get got let
see say new old any why how who our too two six ten use way may per via lol idk wtf thx pls plz nah yep
yup hmm umm nop bad big end got put set top own few lot
one two three four five six seven eight nine ten risky flaky noisy stale last till until reverted rolled
"""

# The rollback gate's revert-again: how often, what is checked after, and what is reverted (a number or a title is
# kept, so the gate's own check refuses another option's).
_AGAIN = r"(?:again|once more|one more time|another time)"
_AND_VERIFY = r"(?:,? (?:and|then|&) (?:check|verify|re-?check|re-?verify)(?: it| again)?)?"
_REVERTED = r"( it| #?\d+| the [\w-]+(?: [\w-]+)?)?"

# What a decision said in the passive may be about: no negation or correction in it ("2 not 3 gets skipped").
_PASSIVE_SUBJECT = r"(?:(?!\b(?:not|but|rather|instead|except|only|no|never|nothing|none)\b)[^,])+?"

# Words and phrases that carry no decision ("ok, continue", "nah, roll it back", "stop here").
FILLER_LEADS = (
    "ok so", "okay so", "ok", "okay", "yes", "yeah", "yep", "yup", "nah", "no", "nope", "alright", "right",
    "cool", "great", "sure", "fine", "hmm", "hm", "well", "actually", "honestly", "ah", "oh", "so", "k",
    "i'd say", "i'd rather", "i would rather", "i would", "i'd", "we should", "you should", "you can", "you could",
    "can you", "could you",
    "let's", "lets", "let us", "please", "pls", "plz", "then", "and", "hold on",
    "sure whatever", "whatever", "eh", "meh", "ya", "yah", "yea", "agreed", "makes sense", "sounds right",
    "fair enough", "got it", "understood", "roger", "hey", "um", "uh", "welp", "kk", "no way", "yup", "yep",
)  # fmt: skip
FILLER_TAILS = (
    "please", "thanks", "thank you", "thx", "ty", "here", "then", "instead", "i think", "i guess", "though", "tho",
    "anyway", "anyways", "as well", "then please", "pls", "plz", "tbh", "imo", "thx!", "ty", "cheers",
    "for now thanks", "right away", "asap", "by me",
)  # fmt: skip
# (pattern, replacement, kinds it applies at or None for every gate). Applied in order, whole words.
# Each one is a phrasing outside the core grammar: a reading that used one is noted and confirmed.
SYNONYMS: list[tuple[str, str, tuple[GateKind, ...] | None]] = [
    # A decision verb said as it is being done or as done ("skipping 2, too risky", "dropped tbo"): the verb. Only
    # at the start of a clause, and never "reverted" or "rolled back", which at a rollback gate report a state.
    # Said before any other rewrite takes their words: "the first two", "8 more pairs, then we decide"
    # non-native "make": "make revert on the both hosts", "make the measure again", "please make the revert once more"
    (r"\bmake (?:the |a )?(revert|rollback|roll ?back|measure(?:ment)?)\b", r"\1", None),
    (r"\bthe both\b", "both", None),
    (r"^ask (?:claude|the model|the llm|the api) again$", "retry", ("brain_unavailable",)),  # before "ask …" is ask
    # "retry the revert twice": a count of attempts, said straight after them (at a safety or goal gate a count is
    # pairs, which "twice" is not)
    (r"((?:revert|retry|rollback|roll back|again)(?: it| them| the revert| the rollback)?) twice$", r"\1 2 times",
     ("rollback",)),
    (r"\b(\d+) (?:times|tries|attempts) (?:max|tops|at most)$", r"up to \1 times", ("rollback",)),
    (r"\bdo (?:the|a) (revert|rollback)\b", r"\1", ("rollback",)),  # "do the revert again"
    (r"\bdo the (?:rollback|revert) of (?:it|this(?: change| one)?|that(?: change| one)?)", "roll back",
     ("safety",)),
    (r"^jump (?:it|this one|this|that one)$", "skip it", ("safety", "continue_or_ask")),
    # "the scheduler should go first": one option named ("everything but 3 can go first" is an order, not a set)
    (r"^((?:i think|i guess|maybe|probably|i'd say) )?"
     r"((?!.*\b(?:but|except|only|just|all|everything|rest|others|and|not|no|right|yeah)\b)[^,]+?)"
     r" (?:(?:should|can|could) go|goes) (?:first|next)$", r"\1go with \2", OPTION_GATES),
    (r"(?:the|that) way (?:it is|they are)$", "as it is", ("rollback",)),
    (r"(?<=again )before (?:calling it|we call it|deciding|we decide)$", "", ("safety", "goal")),  # "measure again …"
    # "just the first two": only where no other number is said ("first 2, then 3" is an order)
    (r"^((?:(?!\d).)*?)\b(?:the )?first (?:two|2)(?: ones| commands)?(?!.*\d)", r"\g<1>1 and 2", ("command",)),
    (r"^cont\.?$", "continue", ("plan", "triage", "continue_or_ask", "budget")),
    (r"(?:go on|carry on|proceed|continue|move on|go ahead) with the plan", "continue",
     ("triage", "continue_or_ask")),
    (r"^(?:do |run )?(\d+) more (?:pairs|runs),? then (?:we )?decide$", r"retry with \1 runs", ("safety", "goal")),
    (r"^(?:one more|another) (?:measurement|benchmark|bench) round"
     r"(?: before (?:we )?(?:call(?:ing)? it|decid(?:e|ing)))?$", "retry", ("safety", "goal")),
    (r"^(?:skipping|skipped)\b", "skip", None),
    # "from here on roll back anything that wedges", "always skip unsafe stuff from here": the standing scope; a
    # trailing "from here" alone ("continue from here", "run them from here") is not one
    (r"^from here on(?: out)?\b", "from now on", None),
    (r"^(always\b.+?) from here(?: on(?: out)?)?$", r"\1", None),  # "from here" alone is a place or a now
    (r"^(?:dropping|dropped)\b", "drop", None),
    (r"^(?:parking|parked)\b", "park", None),
    (r"^(?:deferring|deferred)\b", "defer", None),
    (r"^(?:postponing|postponed)\b", "postpone", None),
    (r"^stopping\b", "stop", None),
    (r"^(?:aborting|aborted)\b", "abort", None),
    (r"^approving\b", "approve", None),
    (r"^accepting\b", "accept", ("rollback", "goal")),
    (r"^continuing\b", "continue", None),
    (r"^proceeding\b", "proceed", None),
    (r"^retrying\b", "retry", None),
    (r"^reverting\b", "revert", None),
    (r"^rolling back\b|^rolling (?=(?:it|this|that) back\b)", "roll back", None),
    (r"^picking\b", "pick", OPTION_GATES),
    (r"^(?:go[ ,!]*){2,}$", "continue", None),  # "go go go"
    (r"^(?:go on |keep going |continue )?(?:a (?:bit|little) (?:more|longer|over(?: is fine)?)"
     r"|(?:a )?bit over is fine)$", "continue", ("budget",)),
    # A gate acts on every host its option runs on: "on both hosts" says no more than the decision does.
    (r"(?<=\S )on (?:both|all(?: the| \d+| two| three)?|the two|every|each) (?:hosts|gpus|machines|boxes|nodes|servers)"
     r"|(?<=\S )everywhere$", "", ("safety", "rollback")),
    (r"^keeping\b", "keep", ("safety",)),
    # "roll it back again and check", "revert the scheduler again": the rollback gate's revert-again, of what it names
    (rf"(?:re-?revert{_REVERTED}|(?:try |redo |repeat )?(?:the )?(?:revert|roll ?back|rollback){_REVERTED} {_AGAIN})"
     rf"{_AND_VERIFY}", r"retry\1\2", ("rollback",)),
    (rf"roll (it|#?\d+|the [\w-]+(?: [\w-]+)?) back {_AGAIN}{_AND_VERIFY}", r"retry \1", ("rollback",)),
    (r"accept (?:the |its |their )?(?:current |present )?state(?: as (?:it is|is|it stands))?"
     r"|(?:leave|keep) (?:(?:the|both) hosts|it|them|things|everything) (?:the way (?:they are|it is)"
     r"|as (?:they are|it is))",
     "approve", ("rollback",)),
    (r"(?:try|run|redo|repeat|do|rerun|re-run)(?: the| another| a)? (?:benchmark|bench|comparison|measurement|a/?b"
     r"(?: test)?|round of (?:measurements|benchmarks|runs))(?: again| once more| one more time)?", "retry",
     ("safety", "goal")),
    (r"(?:another |do |run )?(\d+) (?:more )?(?:runs|pairs)(?: first)?,? before (?:i|we) (?:decide|call it)$"
     r"|^another (\d+) (?:runs|pairs)$",
     r"retry with \1\2 runs", ("safety", "goal")),
    # "on to 3", "on to the moe one": whatever follows must name an option (the grammar checks it, by any title)
    (r"^(?:on|onward|onwards) to(?= #?\d| (?!(?:the )?(?:next|other|others|rest|it|them|that|this)\b)[a-z])", "go with",
     OPTION_GATES),
    (r"^(?:on|onward|onwards) to the next(?: one)?$", "continue", OPTION_GATES),
    (r"(?:go ahead with|do|run|try|test) (?:all|all of them|everything|them all)(?: (?:3|three))?$"
     r"|^(?:all|all of them) (?:3|three)$", "approve", ("plan",)),
    (r"leave ([^,]+?) out(?= and |$)", r"skip \1", OPTION_GATES),
    # "run tbo and the scheduler": at a gate that picks options, running them is going with them
    (r"^run(?= (?!(?:it|them|all|everything|the plan|the rest|again|the (?:benchmark|bench|comparison|stress)\w*)\b"
     r"|\d+ (?:more|times|runs|pairs)\b))", "go with", OPTION_GATES),
    (r"(?:and (?:then )?|then )(?:carry on|continue|go on|proceed|move on) with the (?:rest|others)$",
     " then the rest", OPTION_GATES),
    (r"before (?:anything|everything) else$", "first", OPTION_GATES),
    (r"(?:defer|park|postpone|push|move|put|save|leave|schedule) ([^,]+?) (?:goes |comes )?"
     r"(?:till|until|to|for|at) (?:the )?(?:end|last|very end|back of the (?:queue|line|list))$", r"defer \1",
     OPTION_GATES),
    (r"^(?!(?:go|do|try)\b)([^,]+?) (?:goes|comes|can go|can come|should go) last$", r"defer \1",
     OPTION_GATES),
    (r"^(?:end it|end (?:it |things )?here|end the (?:run|campaign|session)|wrap (?:it |this |things )?up"
     r"|call it(?: a day| here| quits)?)\b", "stop", None),
    (r"^((?:stop|abort|halt|finish|wrap(?: it)? up|end it|call it)(?: here| now| there)?),? (?:and )?"
     r"(?:(?:give|send|show|write up|hand) me (?:what you (?:have|'ve got|got)|the (?:results|summary|numbers|report"
     r"|writeup|write-up)|a (?:summary|report|writeup|write-up))|write (?:it |this |that )?up)$", r"\1", None),
    (r"^let me\b.*|^i'll (?:decide|make the call|get back to you)\b.*", "ask", None),
    (r"ask me (?:again )?(?:later|tomorrow|after\b.*)$", "ask", None),
    (r"^(?:yes )?to (?:all|everything|all (?:3|three)|all of them)$", "approve", ("command",)),
    (r"^(?:(?:go|move|carry) on|continue|proceed) (?:on )?to the next(?: one| option)?$", "continue",
     ("plan", "triage", "safety", "continue_or_ask", "rollback", "budget", "goal")),
    # "skip the next one": the option the gate offers (alone, or after "to", it is the go-ahead above and below)
    (r"(?<=\w )(?<!\bthe )(?<!\bto )(?:the )?next (?:one|option)$", "it", ("continue_or_ask",)),
    (r"^(?:(?:ok|okay|fine|good|safe) )?to run (#?\d+(?:(?:,| and| &) ?#?\d+)*)$", r"approve \1", ("command",)),
    # "anything unsafe gets rolled back": the decision said in the passive
    (rf"^((?:from now on|always|going forward|from here on),? )?({_PASSIVE_SUBJECT}) (?:gets?|should get|will get) "
     r"(?:rolled back|reverted)$", r"\1roll back \2", None),
    (rf"^((?:from now on|always|going forward|from here on),? )?({_PASSIVE_SUBJECT}) (?:gets?|should get|will get) "
     r"(?:skipped|dropped)$", r"\1skip \2", None),
    (r"(?:past|over|beyond) (?:the )?budget$", "", ("budget",)),
    (r"(?:try|retry|redo|re-?run|repeat|do) (?:the )?(?:revert(?:ing)?|roll ?back|rollback)(?: again| one more time"
     r"| once more)?(?:,? (?:and|then) (?:check|verify)(?: it)?)?|try reverting(?: again| one more time| once more)?"
     r"|one more (?:go|try|time)(?: at (?:the )?(?:rollback|revert))?|^one more (?:revert|rollback)$|^again\b"
     r"|^once more$", "retry", ("rollback",)),
    (r"(?:measure|bench(?:mark)?|run|try)(?: it)? (?:once more|one more time)|^again\b|^once more$", "retry",
     ("safety", "goal")),
    (r"(?:take|leave|accept|keep|continue)(?: it| them| the hosts| things| everything)?(?: as (?:it is|is|it stands"
     r"|they are)| like (?:that|this|it is))", "approve", ("rollback",)),
    (r"(?:stop|finish(?: up)?|wrap(?: it)? up|end it|end the run|abort|call it)(?:,| and| then| with)?(?: (?:send|give"
     r"|write|show|write up)(?: me)?)? (?:the report|summari[sz]e|sum up)", "stop", None),
    (r"(?:put|leave|move|push|save|keep|hold)(?! off\b) ([^,]+?) (?:at the end|for last|for later|till the end"
     r"|to the end|for the end|until later|at the back|to the back|to the bottom)(?: of the (?:queue|list|line))?"
     r"(?: and revisit(?: it)?)?", r"defer \1",
     OPTION_GATES),
    (r"(?:put|push) ([^,]+?) off", r"defer \1", OPTION_GATES),
    (r"come back to (?:it|this|that) (?:at the end|later)", "defer", ("safety", "plan", "triage", "continue_or_ask")),
    (r"(?:go ahead|go on|move on|carry on|proceed)(?: with| to)? (?:the )?(?:remaining|other) (?:two|ones|options)",
     "continue", ("triage", "continue_or_ask")),
    (r"go ahead with", "approve", ("command",)),
    (r"(?:run|approve) all (?:3|three)", "approve", ("command",)),
    (r"^(#?\d+(?: and #?\d+)*) (?:no|nope|not|skip)$", r"not \1", ("command",)),
    (r"^none(?: of (?:them|these|those|it))?$", "reject", ("command",)),
    (r"(?:ship|approve|run|go with) the plan|(?:the )?plan(?:'s| is)? (?:approved|approve)|^as (?:planned|proposed|is)$"
     r"|run it as planned", "approve", ("plan",)),
    (r"(?:kick off|start|lead|open|begin) (?:with|on)", "go with", OPTION_GATES),
    # what follows must name an option, by number or by any title's words ("forget it", "cut that out" are not skips)
    (r"(?:leave out|exclude|omit|cut|scrap|forget|ditch|bin)"
     r"(?= #?\d| the| (?!(?:it|this|that|them|these|those|everything|all|about|me|us|out)\b)[a-z])", "skip",
     OPTION_GATES),
    (r"(?:revisit|redo) (.+?) (?:at the end|later)", r"defer \1", ("safety", "plan", "triage", "continue_or_ask")),
    (r"(?:do |run )?another (\d+) (?:runs|pairs)(?: before deciding)?|(?:do|run) (\d+) more (?:pairs|runs)",
     r"retry with \1\2 runs", ("safety", "goal")),
    (r"(?:bench|measure|run)(?: it)? (?:some )?more$|measure more"
     r"|(?:get|collect|gather) more (?:data|samples|pairs|runs)(?: before (?:calling it|deciding))?", "retry",
     ("safety", "goal")),
    (r"take (?:[+-]?\d+(?:\.\d+)?%?)", "approve", ("goal",)),
    (r"revert (?:it )?(?:one more time|once more|another time)|give (?:the )?(?:revert|rollback|it) another "
     r"(?:go|try|shot)|revert (?:and|&) (?:verify|check) once more", "retry", ("rollback",)),
    (r"leave (?:the hosts|it|them|things|everything) alone", "approve", ("rollback",)),
    (r"go over (?:the )?budget|keep running", "continue", ("budget", "continue_or_ask", "triage", "plan")),
    (r"that's (?:enough|it)(?: for (?:today|now))?", "stop", None),
    (r"(?:(?:ok|okay|fine|good|safe) )?to run$|^(?:ok|okay|fine|good|safe) to run", "approve", ("command",)),
    (r"^denied$|^deny$", "reject", ("command",)),
    (r"approve all (?:3|three)", "approve", ("command",)),
    (r"keep (?:rolling|moving|pushing)|push on|press on|extend(?: it)?|keep it going", "continue",
     ("budget", "continue_or_ask", "triage", "plan")),
    (r"accept (?:the )?(?:config|configuration|result|results|numbers|final configuration)", "approve", ("goal",)),
    (r"^ship$", "approve", ("safety", "goal", "plan")),
    (r"(?:pause and )?wait for (?:me|my \w+)\b.*|(?:let me|i want to|want to|gotta) (?:look|check"
     r"|see|read|review|think|ask|talk|show)\b.*|hold (?:it )?(?:there|on)\b.*|ask me later\b.*", "ask", None),
    (r"(?:go ahead|go on|carry on|proceed|continue|move on)(?: with| to)? (?:the )?(?:rest|remaining ones|others)"
     r"(?: of them)?$", "continue", ("triage", "continue_or_ask")),
    (r"(?:go on|carry on|proceed|continue|move on) with(?= #?\d| the (?!plan))", "go with",
     OPTION_GATES),
    (r"(?:the )?plan(?:'s| is| looks?)? (?:fine|ok|okay|good|great|right|solid|sensible)", "approve", ("plan",)),
    (r"run (?:them )?all(?: of them)?(?: (?:3|three))?$|^all (?:3|three)$", "approve", ("plan",)),
    (r"\bif if\b", "if", None),
    (r"ask (?:me |the [\w-]+(?: [\w-]+)? |my [\w-]+ |our [\w-]+ )?(?:first|later|tomorrow|tmrw(?: morning)?"
     r"|before\b.*|after\b.*)$|ask (?:the|my|our) [\w-]+(?: [\w-]+)?$", "ask", None),
    (r"keep it (?:running|going)", "keep", ("safety",)),
    (r"(?:it's |its )?fine as it is|(?:it's |its )?fine as is", "approve", ("rollback",)),
    (r"rollback again|redo (?:it|the (?:rollback|revert))", "retry", ("rollback",)),
    (r"^all (?:fine|good|ok|okay)$", "approve", ("command",)),
    (r"^(?:good|close) enough$", "approve", ("goal",)),
    (r"(?:try|do) (?:the )?(?:rollback|revert) again|try again with the (?:rollback|revert)"
     r"|revert (?:it )?again (?:and|&) (?:verify|check)(?: it)?|revert (?:and|&) (?:verify|check) again", "retry",
     ("rollback",)),
    (r"^(?:run|do) (#?\d+(?: and #?\d+)*)$", r"approve \1", ("command",)),
    (r"^all (?:3|three|of them)$", "approve", ("command",)),
    (r"^(?:none|none of them|neither)$", "reject", ("command",)),
    (r"^as is$", "approve", ("rollback",)),
    (r"(?:roll|back) (?:it|this|that|them|this one|that one|this change|that change) (?:back|out)", "roll back", None),
    (r"roll (#?\d+) back|back (#?\d+) out", r"roll back \1\2", None),  # the number kept: the gate checks it
    (r"back (?:it |this |that )?out", "roll back", None),
    (r"take (?:it|this|that) (?:back|out|off)", "roll back", None),
    (r"turn (?:it|this|that) off", "roll back", ("safety",)),
    (r"revert and verify(?: again)?|revert (?:it )?again|re-?verify|verify again|try the revert again"
     r"|roll (?:it )?back again", "retry", ("rollback",)),
    (r"revert and verify", "roll back", None),
    (r"accept (?:it |this |that |the rollback |the state )?as is|accept (?:it|this|that|the rollback)|accept",
     "approve", ("rollback", "goal")),
    (r"leave (?:it|things) as is|live with it|(?:leave|keep|take|accept) (?:it|things|them) how (?:it is|they are)",
     "approve", ("rollback",)),
    (r"keep (?:it|this|that) on|leave (?:it|this|that) on", "keep", ("safety",)),
    (r"measure (?:it |this |that )?again(?: with more (?:pairs|runs))?|re-?measure|benchmark (?:it )?again"
     r"|re-?benchmark|(?<!with )(?:run )?more (?:runs|pairs)", "retry", ("safety", "goal")),
    (r"(?:do|try|run|test) (#?\d+) next", r"go with \1", None),
    (r"(#?\d+) next", r"go with \1", None),
    # "do it" goes ahead; "do that one first" names an order, and at a gate about no option "that one" is nothing
    (r"go for it|do it(?! (?:first|next|last|after|before|then)\b)|go on|let's go|lets go|make it so|send it",
     "continue", None),
    (r"(?:go|going) for|start with|begin with", "go with", None),
    (r"^go$", "continue", None),
    (r"^(?:(?:go |move |carry )?on )?to the next(?: one)?$|^(?:the )?next one$", "continue",
     ("plan", "triage", "safety", "continue_or_ask", "rollback", "budget", "goal")),
    (r"^(?:yep|yup|yeah|sure|yes please|yes sir|k|kk|ya|yea|y|fine|fine by me|alright)$", "yes", None),
    (r"^(?!(?:go|do|try|skip|drop|defer|park|stop|continue|keep|run|approve|select|pick|take|the next)\b)(.+?) next$",
     r"go with \1", OPTION_GATES),
    (r"(?:the|this|your) plan", "", ("plan",)),
    (r"decline|deny|refuse", "reject", ("command",)),
    (r"^(?:option |number )?(#?\d+)$", r"go with \1", OPTION_GATES),
    (r"(?:let's |lets )?(?:do|try|run|test) (?:option |number )?(#?\d+)", r"go with \1", None),
    (r"(?:option |number )?(#?\d+) please", r"go with \1", None),
    (r"(?:don't|do not) run (?:them|it|these|those|any of (?:them|that|those|these)|any|anything|that|this)", "reject",
     ("command",)),
    (r"run (?:them|these|those|all of them|all|it|this|that|em|'em)(?: all)?", "approve", ("command",)),
    (r"go ahead and run (?:them|it|these)", "approve", ("command",)),
    (r"^go ahead and (?=(?:run|approve|continue|keep|proceed|try|do|go with)\b)", "", None),
    (r"(?:ditch|scrap|bin|toss) (?:it|this|that)", "skip", ("safety",)),
    (r"approved", "approve", None),
    (r"accepted", "accept", ("rollback", "goal")),
    (r"(?:don't|do not|wouldn't|would not|i wouldn't|i would not|i'd not|shouldn't|should not|never) keep "
     r"(?:it|this|that)", "skip", ("safety",)),
    (r"take (?:it|that|this|the result|the number)", "approve", ("safety", "rollback", "goal")),
    (r"leave (?:it|things|everything)(?: as (?:it is|is)| like (?:this|that|it is))?|(?:it's |its )?fine as is",
     "approve", ("rollback",)),
    (r"(?:re-?)?bench(?:mark)? (?:it |this |that )?again|re-?bench", "retry", ("safety", "goal")),
    (r"(?:run|measure|bench) (?:it |this |that )?(\d+) more times", r"retry \1 times", ("safety", "goal")),
    (r"(\d+) more (?:runs|pairs|times)", r"retry with \1 runs", ("safety", "goal")),
    (r"(?:one )?more rounds? of (?:measurements?|benchmarks?|runs|pairs)|one more round", "retry", ("safety", "goal")),
    (r"keep at it|keep it up|keep on going", "continue", ("budget", "continue_or_ask", "triage", "plan")),
    (r"let me (?:look|check|see|review|think)\b.*|ask me before .*|ping me\b.*|check with me\b.*"
     r"|wait for me\b.*|wait till i\b.*|wait until i\b.*", "ask", None),
    (r"skip(?:ping)? the no-?go(?: one| ones| options?)?(?: and)?|(?:with )?both(?: of them)?$", "", ("triage",)),
    (r"^run (?:it|the plan)$", "approve", ("plan",)),
    (r"(#?\d+) (?:before|ahead of) #?\d+$", r"\1 first", OPTION_GATES),
    (r"(?<!with )(?<!do )(?<!try )(?<!pick )(?<!run )(#?\d+)(?: up)? first$", r"go with \1",
     OPTION_GATES),
    (r"(?:worth )?trying (#?\d+)", r"go with \1", OPTION_GATES),
    (r"^(?:(?:do|run|try|put|schedule|leave|save|keep) )?([^,]+?) last$", r"defer \1",
     OPTION_GATES),
    (r"^(?:skip|drop) ([^,]+?) (?:till|until|to) the end$", r"defer \1", OPTION_GATES),
    (r"(?:till|until) the end$", "", OPTION_GATES),
    (r"(?:anything|whatever|everything|any option|options?|ones?|stuff|changes?)(?: that)?(?: is| are| comes? back"
     r"| turns? out| looks?| the stress(?: test)? (?:calls|marks|flags|finds))? (unsafe|inconclusive|regressed)"
     r"(?: stuff| ones| options| changes)?"
     r"|(?:an? |the |any |all (?:the )?)?(unsafe|inconclusive|regressed) (?:stuff|ones?|options?|changes?)",
     r"if it's \1\2", None),
    (r"(?:anything|whatever|everything|stuff|options?|ones?|changes?)(?: that| which)? (?:wedges|wedged|hangs|hung)",
     "if it wedges", None),
    (r"^(#?\d+(?: and #?\d+)*)(?: (?:ok|okay|fine|is fine|are fine|go|please|pls|yes|are ok|look fine))?$",
     r"approve \1", ("command",)),
    (r"^(?:run|do) (#?\d+(?: and #?\d+)*)$", r"approve \1", ("command",)),

    (r"(?:looks?|sounds?|seems?) (?:good|fine|great|ok|okay)(?: to me)?|all good|good to go|works for me|fine by me",
     "continue", None),
    (r"(?:stop|halt) (?:here|now|there)|that's (?:enough|it)|call it a day|wrap (?:it )?up|we're done|i'm done",
     "stop", None),
    (r"finish(?: up)?(?: with the report)?|end (?:it|the run|here)|stop (?:with|and write) the report"
     r"|stop and (?:give me|write|show me|send me) the report|stop the (?:campaign|run|whole thing)", "stop", None),
    (r"(?:push|move|put) (.+?) to the end", r"defer \1", OPTION_GATES),
    (r"(?:abort|cancel|halt|kill|end) the (?:campaign|run|whole thing|session)|call it(?: a day| quits)?|^enough$"
     r"|(?<!stop and )(?:give me|write|send me|show me|write up) the report|^report(?: pls| please| now)?$"
     r"|(?:summari[sz]e|sum up)$", "stop", None),
    # measuring is not the rollback gate's retry (that reverts and verifies again): there it is refused
    (r"(?:re-?run|redo|repeat) the (?:benchmark|bench|a/b|measurement)s?", "retry", ("safety", "goal")),
    (r"revert (?:it )?and (?:check|verify|measure)(?: it)?(?: again)?", "retry", ("rollback",)),
    (r"run (?:em|'em)", "run them", ("command",)),
    (r"reject (?:them all|all of them|all|everything)", "reject", ("command",)),
    (r",? skipping the no-go(?: options| ones)?", "", ("triage",)),
    (r"keep it,? (?:and )?continue", "keep it", ("safety",)),
    (r"skip (?:it )?and roll (?:it )?back", "skip", ("safety",)),
    (r"come back to (?:it|this|that)(?: later)?|^(?:later|not now|another time)$", "defer", ("safety", "plan", "triage",
     "continue_or_ask")),
    (r"approve (?:all(?: of them)?|everything|them all|them|these)$", "approve", ("command",)),
    (r"^(?:yes to all|yes,? all|all of them|all)$", "approve", ("command",)),
    (r"^(?:yes )?to (#?\d+(?:(?:,| and| &) ?#?\d+)*)$", r"approve \1", ("command",)),  # "yes to 1 and 2"
    (r"^(?:all (?:three|3)|all of them|them all)(?: are| look)? (?:fine|ok|okay|good)$", "approve", ("command",)),
    # "Claude unavailable: continue with rules, retry, or stop?" The rule brain named is the go-ahead; the model named
    # beside "again" or "retry" is what is retried. Said after "go on" became "continue", as a whole line.
    (r"^(?:continue|keep going|proceed|carry on|go ahead|move on)(?: with| using| on)? (?:the )?rules?(?:[- ]based)?"
     r"(?: brain| engine)?(?: only)?(?: from here(?: on)?| from now on| for the rest)?$"
     r"|^continue without (?:claude|the model|the llm|the api|ai)$"
     r"|^(?:use|switch to|fall ?back (?:to|on)|go with|stay (?:on|with)) (?:the )?rules?(?:[- ]based)?"
     r"(?: brain| engine)?(?: only)?(?: from here(?: on)?| from now on| for the rest)?$|^rules?(?: brain)?(?: only)?$",
     "continue", ("brain_unavailable",)),
    (r"^(?:retry|try) (?:claude|the model|the llm|the api)(?: again| once more)?$"
     r"|^(?:give )?(?:claude|the model|the llm|the api) (?:another (?:go|try|shot)|one more (?:go|try|shot))$",
     "retry", ("brain_unavailable",)),
]  # fmt: skip


@functools.cache
def _synonym(i: int) -> re.Pattern[str]:
    """SYNONYMS[i] compiled on first use: a parse compiles only the ones its gate kind uses."""
    return re.compile(rf"(?<![\w#-])(?:{SYNONYMS[i][0]})(?![\w-])")


# "that change", "this option" … mean the gate's own option, like "it".
_PRONOUNS = re.compile(r"\b(?:this|that|the) (?:change|option|one|setting|tweak)\b")


_NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}


@dataclass
class Reading:
    text: str
    notes: list[str] = field(default_factory=list)
    negated: bool = False  # opened with "no,": only a decision that does not go ahead can follow


def _vocabulary(extra: Iterable[str]) -> list[str]:
    """The words a typo may be corrected to: the grammar's, and the gate's titles and hosts."""
    words = set(_GRAMMAR_WORDS.split())
    words.update(w for phrase in extra for w in re.findall(r"[a-z][a-z'-]+", phrase.lower()))
    return sorted(w for w in words if len(w) >= 4)


def _max_edits(word: str) -> int:
    return 1 if len(word) <= 6 else 2


def _inflected(word: str, base: str) -> bool:
    """Is `word` a form of `base` ("approved" of "approve", "skipping" of "skip")? A typo as close to both is of the
    word itself, which the grammar reads in either form."""
    stem = base.rstrip("e")
    return (
        word != base
        and word.startswith(stem)
        and word[len(stem) :] in ("d", "ed", "ing", "s", "es", stem[-1:] + "ed", stem[-1:] + "ing")
    )


def correct(text: str, vocabulary: Sequence[str]) -> Reading:
    """Correct words that are one or two edits (a transposition counts as one) from exactly one word of
    the vocabulary; a word as close to two is left alone, for the grammar to refuse."""
    from rapidfuzz.distance import OSA
    from rapidfuzz.process import extract

    known = set(vocabulary) | set(_COMMON.split())
    notes: list[str] = []

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if len(word) < 3 or word in known or not word.isalpha() or word.startswith(("un", "dis", "non")):
            return word  # "unapprove" is not a typo of "approve"
        limit = _max_edits(word)
        candidates = vocabulary if len(word) > 3 else [w for w in vocabulary if len(w) == 4]  # "skp" → "skip"
        near = extract(word, candidates, scorer=OSA.distance, score_cutoff=limit, limit=4)
        if not near:
            return word
        best = min(d for _, d, _ in near)
        closest = {w for w, d, _ in near if d == best}
        closest = {w for w in closest if not any(w != o and _inflected(w, o) for o in closest)}  # "approvd": approve
        if len(closest) != 1:
            return word
        (fixed,) = closest
        if _english(word):
            return word  # a real word said ("pain", "risky", "three") is what was meant, never a typo of ours
        notes.append(f"{word!r} → {fixed!r}")
        return fixed

    return Reading(re.sub(r"[a-z][a-z'-]*", fix, text), notes)


@functools.cache
def _dictionary() -> frozenset[str]:
    """English words used at least 1,000 times in pyspellchecker's corpus (policies/english.txt, derived from it and
    checked against it by a test), loaded the first time a word looks like a typo of ours: "pain" and "risky" are
    words, "deffer" and "kep" (used 50 times) are typos. Reading the derived list takes a few milliseconds where
    loading pyspellchecker's whole dictionary took 200 (`signoff decision parse` is a start-up row of make bench)."""
    text = (Path(__file__).parent / "english.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def _english(word: str) -> bool:
    return word in _dictionary()


NEGATING_LEADS = ("no", "nope", "nah")
# Any lead but a no, longest first, and what follows it: what may stand before a line's opening "no" (`negated`)
_LEAD = re.compile(
    "(?:"
    + "|".join(re.escape(lead) for lead in sorted(FILLER_LEADS, key=len, reverse=True) if lead not in NEGATING_LEADS)
    + ")[ ,]+"
)
# "yeah right, …", "oh sure", "yeah, yeah": said with a roll of the eyes, a yes that may mean no
SARCASM = r"(?:yeah,? right|oh,? sure|yeah,? yeah|sure,? sure|as if)"
_NOT_AHEAD = r"(?:stop|skip|abort|drop|defer|park|halt|reject|don't|roll|revert|back|undo|retry|ask)"  # "nah stop"


def negated(text: str) -> bool:
    """Does the line open with a "no", after any filler? ("no, skip it" is a skip; "no, keep it" cannot be told from
    "no"; "actually no, run them" opens with the same no)"""
    rest = text.strip()
    while True:  # one lead at a time: a repeated group over overlapping leads ("ok", "ok so") backtracks exponentially
        if re.match(r"(?:no|nope|nah)\b", rest):
            return True
        lead = _LEAD.match(rest)
        if lead is None:
            return False
        rest = rest[lead.end() :]


def strip_filler(text: str) -> str:
    """Drop the filler around a decision; a lone "ok", "yes" or "no" is an answer and stays. A "no" is
    dropped only before a comma: "no rollback" means no rollback, not "rollback"."""
    text = text.strip(" ,")
    if re.match(rf"{SARCASM}\b", text):
        return text  # "yeah right, …": sarcasm, not a yes (the clause reader takes it for a take-back)
    changed = True
    while changed:
        changed = False
        for tail in FILLER_TAILS:
            for sep in (" ", ", "):
                if text.endswith(sep + tail) and not text.endswith(" from here"):  # "from here": a scope
                    text, changed = text[: -len(sep + tail)].rstrip(" ,"), True
        for lead in FILLER_LEADS:
            if not (text.startswith(lead + " ") or text.startswith(lead + ",")):
                continue  # (first: the pattern below is compiled only for a lead the line opens with)
            # "nah stop", "nope skip it": a "nah" before a decision that does not go ahead is the same no.
            ahead = lead == "no" or not re.match(rf"^{lead} {_NOT_AHEAD}\b", text)
            if lead in NEGATING_LEADS and not text.startswith(lead + ",") and ahead:
                continue
            rest = text[len(lead) :].lstrip(" ,")
            if lead not in NEGATING_LEADS and re.fullmatch(r"(?:(?:and|but|or|then)\s+)?(?:no|nope|nah)[.!]*", rest):
                continue  # "yes no", "ok, nope": a yes and a no, not a no
            if rest:
                text, changed = rest, True
    return text


def rewrite(text: str, kind: GateKind) -> Reading:
    """Map operators' phrasings onto the grammar's verbs, noting each one used."""
    notes: list[str] = []
    pronouns = _PRONOUNS.sub("it", text)
    if pronouns != text:
        text = pronouns
    for i, (_, replacement, kinds) in enumerate(SYNONYMS):
        if kinds is not None and kind not in kinds:
            continue
        m = _synonym(i).search(text)
        if m is None:
            continue
        new = m.expand(replacement)
        if new == m.group(0):
            continue
        notes.append(f"{m.group(0)!r} → {new!r}")
        text = f"{text[: m.start()]}{new}{text[m.end() :]}"
    return Reading(re.sub(r"\s+", " ", text).strip(" ,"), notes)


def read(text: str, kind: GateKind, *, titles: Mapping[int, str] = {}, hosts: Sequence[str] = ()) -> Reading:
    """The text rewritten into the grammar, with how it was read."""
    fixed = correct(text, _vocabulary([*titles.values(), *hosts]))
    plain = strip_filler(fixed.text)
    mapped = rewrite(plain, kind)
    no = negated(fixed.text) and plain != fixed.text.strip(" ,")
    return Reading(strip_filler(mapped.text), fixed.notes + mapped.notes, negated=no)


def title_match(phrase: str, titles: Mapping[int, str]) -> tuple[int | None, list[int]]:
    """(option whose title `phrase` names, the close candidates when it is ambiguous).

    Every word said must be a word of that title — the word itself, a typo of it, or its start ("sched" for
    "scheduler") — so "the overlap scheduler is fine" or "the one after the overlap scheduler" name nothing, and a
    phrase that fits two titles ("the overlap one") is ambiguous."""
    from rapidfuzz import fuzz
    from rapidfuzz.utils import default_process

    phrase = re.sub(r"^(?:the|option|that|this)\s+", "", phrase.strip()).strip()
    phrase = re.sub(r"\s+(?:one|option|change|thing|stuff|idea|tweak|work|tuning|patch|optimi[sz]ation)$", "", phrase)
    if len(phrase) < 3 or not titles:
        return None, []
    said = [w for w in default_process(phrase).split() if w not in ("the", "one", "option", "change")]
    if not said or all(w in _NUMBER_WORDS for w in said):  # "skip two" is #2 or "two-batch"?
        return None, []

    def fits(word: str, title_words: list[str]) -> bool:
        return any(  # a typo only of a word long enough to have one ("more" is not "moe")
            word == t or (len(word) >= 5 and fuzz.ratio(word, t) >= 80) or (len(word) >= 4 and t.startswith(word))
            for t in title_words
        )

    fitting = [k for k, t in titles.items() if all(fits(w, default_process(t).split()) for w in said)]
    if len(fitting) > 1:
        return None, sorted(fitting)
    return (fitting[0], []) if fitting else (None, [])
