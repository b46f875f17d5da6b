"""An attack on the one-line reader (policies/clauses.py, decisions.py, tolerant.py), found by a review that set
out to turn a line into a wrong action: 1,568 lines by the mechanism each one aims at. Every one of the 1,061 it
first found is refused or read right now; tests/security/test_oneliner_attacks.py keeps it that way.

Run by hand:  .venv/bin/python -m tests.security.oneliner_attack_lines [-v]

Each line is (mechanism, gate, text, want, meant):
  want   what a reading may be besides `refuse` (refusal is always fine): a meaning as tests/oneliner_reading.py
         writes them ("approve 1,2", "skip", "select 3"), or "refuse" when only a refusal is right.
  meant  what the person meant, for judging the "did you mean: …" suggestion a refusal carries (the TUI puts it
         in the input, Enter takes it). None: take `want`; when that is "refuse", any go-ahead suggestion
         (approve/continue/select/retry) is flagged.
A line is printed when its reading is a wrong action, its suggestion reads as something the person did not mean,
it raises something other than DecisionError, or it takes more than 50 ms.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable

from policies.refusals import DecisionError
from tests.oneliner_reading import DOCS, decide, reading, same

R = "refuse"
ZW = "\u200b"
CYR_O = "\u043e"  # Cyrillic o
CYR_E = "\u0435"  # Cyrillic e

LINES: list[tuple[str, str, str, str | None, str | None]] = []


def add(mech: str, gate: str, texts: str | Iterable[str], want: str | None = R, meant: str | None = None) -> None:
    for t in [texts] if isinstance(texts, str) else texts:
        LINES.append((mech, gate, t, want, meant))


# ---------------------------------------------------------------- A: command gate, a remark naming a command
# clauses.combine: at a command gate a plain approve owns every command (`own |= set(grammar.options)`), so a remark
# that names rm is never "another option"; _NOT_A_REMARK lists only some exclusion words.
A = "A combine() remark check: command gate owns all commands"
add(
    A,
    "command",
    [
        "approve, rm excluded",
        "approve, skipping rm",
        "approve, rm stays out",
        "approve, hold rm",
        "approve, hold the rm",
        "approve, rm later",
        "approve, rm after review",
        "approve, sans rm",
        "approve, w/o rm",
        "approve, w/o the rm",
        "approve, excl rm",
        "approve, excl. rm",
        "approve, omit rm",
        "approve, omitting rm",
        "approve, rm omitted",
        "approve, leaving out rm",
        "approve, rm can wait",
        "approve, rm waits",
        "approve, but rm waits",
        "approve, rm rejected",
        "approve, rm denied",
        "approve, deny rm",
        "approve, rm is out",
        "approve, rm out",
        "approve, rm dropped",
        "approve, ignore rm",
        "approve, ignoring rm",
        "approve, forget rm",
        "approve, forget about rm",
        "approve, rm nah",
        "approve, rm is too dangerous",
        "run them, rm is dangerous",
        "approve (rm excluded)",
        "approve, 3 unnecessary",
        "approve, rm -1",
        "approve, rm :x:",
        "approve, rm :-1:",
        "approve, -rm",
        "approve, !rm",
        "approve, ^rm",
        "approve, -3",
        "approve, !3",
        "approve, ~3",
        "approve, 3-",
        "approve, ~~rm~~",
        "approve, r\u0336m\u0336",
        "yes, 3 n",
        "y, n",
        "approve (1 & 2), 3: n",
        "approve, rm \u274e",
        "approve, rm \u2715",
        "approve, rm \u00d7",
        "approve, rm \U0001f6d1",
        "approve, rm \U0001f534",
    ],
    "approve 1,2",
)
add(A, "command", ["always approve, rm excluded", "approve always, skipping rm"], R)
# B: "but" is a connector: "but 3" / "but rm" left alone is a decision ("3" → approve 3) or a remark.
B = "B clauses._CONNECTOR strips 'but': 'X but N' adds N, 'but rm' becomes a remark"
add(
    B,
    "command",
    [
        "approve but rm",
        "approve, but rm",
        "approve but 3",
        "approve, but 3",
        "run them, but 3",
        "lgtm but 3",
        "yes but 3",
        "yes, but 3",
        "ok but 3",
        "go ahead but 3",
    ],
    "approve 1,2",
)
add(B, "command", ["approve 1 but 3", "approve 1, but 3"], "approve 1")
add(B, "command", ["approve 1 and 2 but 3"], "approve 1,2")
add(B, "triage", ["continue but 2", "continue, but 2", "go ahead but 2"], "skip 2")
add(B, "triage", ["3 but 2", "2 but 3", "3, but 2", "2, but 3"], R)
add(B, "plan", ["approve but 2", "approve, but 2", "lgtm but 2"], "skip 2")
# C: " - " and "–" became commas when the line was normalised: "all - 3" is "all, 3".
C = "C _normalise turns ' - ' / '–' into a comma, then _agree unions a bare number"
add(C, "command", ["approve all - 3", "approve all \u2013 3", "run them all - 3"], "approve 1,2")
add(C, "command", ["1 \u2713, 2 \u2713, 3 \u2013"], "approve 1,2")
# D: _without: a negated number that is no option here removes nothing.
D = "D clauses._without: negated numbers not checked against the options"
add(D, "command", ["approve, not 4812", "approve, not 4", "approve, not #7", "run them, not 0", "approve, not 31"], R)
# E: symbols that mean "no" but are not in _NO_MARKS are dropped (So/Cf/Mn) or kept as a remark.
E = "E decisions._symbols: no-marks missing from _NO_MARKS are dropped"
add(
    E,
    "safety",
    [
        "keep it \u274e",
        "keep it \u2715",
        "keep it \U0001f6d1",
        "keep it \u270b",
        "keep it \U0001f196",
        "keep it \U0001f534",
        "keep it \U0001f7e5",
        "keep it \U0001f6b7",
        "keep it (n)",
        "lgtm \U0001f6d1",
        "\U0001f44d \u274e",
    ],
    R,
)
add(
    E,
    "command",
    ["1 \u2705, 2 \u2705, 3 \u274e", "1 \u2611, 2 \u2611, 3 \u2610", "1 \U0001f44d, 2 \U0001f44d, 3 \U0001f6d1"],
    "approve 1,2",
)
add(E, "command", ["approve \U0001f6d1", "approve \u274e"], R)
# F: unicode the reader does not fold (NFKC, homoglyphs, zero-width inside a word).
F = "F no NFKC / homoglyph / zero-width folding: a 'no'/'not' becomes an unknown remark"
add(
    F,
    "safety",
    [
        f"n{CYR_O}, keep it",
        "\uff4e\uff4f, keep it",
        f"n{ZW}o, keep it",
        "\u039d\u039f, keep it",
        f"keep it, n{CYR_O}t",
        "keep it, \uff4e\uff4f\uff54",
        f"keep it, n{ZW}ot",
    ],
    R,
)
add(
    F,
    "command",
    [f"approve, n{CYR_O}t rm", "approve, \uff4e\uff4f\uff54 rm", f"approve, n{ZW}ot rm", f"approve, {CYR_E}xcept rm"],
    "approve 1,2",
)
# G: take-backs not in _TAKE_BACK, kept as remarks.
G = "G clauses._TAKE_BACK / _NO / _WAIT incomplete: the take-back is a remark"
for w in [
    "nvm",
    "kidding",
    "just joking",
    "joking",
    "disregard",
    "disregard that",
    "ignore me",
    "strike that",
    "my bad",
    "oops",
    "oops wrong gate",
    "wrong gate",
    "sorry wrong window",
    "typo",
    "retract",
    "retracted",
    "belay that",
    "delete that",
    "ignore",
    "ignore the above",
    "psych",
    "sike",
    "said nobody ever",
    "over my dead body",
    "in your dreams",
    "hold up",
    "one sec",
    "brb",
    "wait what",
    "lol kidding",
]:
    add(
        G,
        "safety",
        f"keep it, {w}",
        R,
        meant="skip" if w in ("over my dead body", "in your dreams", "said nobody ever") else None,
    )
for w in ["nvm", "kidding", "disregard that", "oops", "wrong gate", "strike that", "hold up"]:
    add(G, "command", f"approve, {w}", R)
    add(G, "rollback", f"accept it, {w}", R)
    add(G, "goal", f"take it, {w}", R)
add(G, "budget", ["continue, kidding", "keep going, disregard"], R)
add(G, "safety", ["lgtm (kidding)", "lgtm, kidding", "lgtm, just joking", "ship it, nvm"], R)
add(
    G,
    "safety",
    [
        "naw, keep it",
        "nay, keep it",
        "negative, keep it",
        "nein, keep it",
        "non, keep it",
        "noo, keep it",
        "n, keep it",
        "mo, keep it",
    ],
    R,
)
add(G, "command", ["negative, approve", "naw, run them", "n, approve"], R)
add(G, "rollback", ["negative, accept it", "nay, accept"], R)
# H: a remark that contradicts a keep (its reason argues against it, or says the keep is not now).
H = "H combine() keeps any verbless clause as the reason, even one that argues against the decision"
add(
    H,
    "safety",
    [
        "keep it, too risky",
        "keep it, way too risky",
        "keep it, bad idea",
        "keep it, terrible idea",
        "approve, would be a mistake",
        "keep it, denied",
        "keep it, vetoed",
        "keep it, refused",
        "keep it, fat chance",
    ],
    R,
    meant="skip",
)
add(
    H,
    "safety",
    [
        "keep it, rolling back",
        "approve, rolling back",
        "keep it, skipping it",
        "keep it, skipping",
        "approve, dropping it",
        "keep it, reverting",
        "keep it, rolled back",
        "keep it, should be rolled back",
    ],
    R,
    meant="skip",
)
add(
    H,
    "safety",
    [
        "keep it, after review",
        "keep it, pending review",
        "keep it, after i check",
        "keep it, once i check",
        "keep it, tomorrow",
        "keep it, eventually",
        "keep it, unsure",
        "keep it, idk",
        "keep it, dunno",
    ],
    R,
)
add(
    H,
    "rollback",
    [
        "accept but verify",
        "accept, but verify first",
        "accept it, then verify",
        "verify, then accept",
        "accept, verify later",
        "accept it, once verified",
        "accept it, after verifying",
        "accept as is, too risky",
        "accept, unverified is bad",
    ],
    R,
    meant="retry",
)
add(
    H,
    "plan",
    [
        "continue, skipping the second",
        "continue, the second one is too risky",
        "approve, the second is too risky",
        "approve, hold the middle one",
        "approve, overlap is scary",
        "approve, the overlap one later",
        "approve, the schedular worries me",
        "approve, kernels worry me",
        "approve, two-batch worries me",
        "approve, T.B.O. worries me",
        "approve, t-b-o worries me",
        "approve, the batching worries me",
        "approve, attn worries me",
        "approve, \u2461 is bad",
        "approve, ii is bad",
        "approve, the 2nd is bad",
    ],
    R,
)
# I: a condition the clause reader does not know is kept as a remark: the keep is unconditional.
I_ = "I clauses._CONDITION / _NOT_A_REMARK miss condition words: condition dropped"
add(
    I_,
    "safety",
    [
        "keep it, assuming it's safe",
        "keep it, assuming it is safe",
        "keep it, given it's safe",
        "keep it, given that it's safe",
        "keep it, supposing it's safe",
        "keep it, so long as it's safe",
        "keep it, on condition that it's safe",
        "keep it, once verified",
        "keep it, after verification",
        "keep it, pending verification",
        "keep it, subject to verification",
        "keep it, barring wedges",
        "keep it, wedges permitting",
        "keep it, safety permitting",
        "keep it, conditionally",
        "keep it, provisionally",
        "keep it, assuming gain is at least 5%",
    ],
    R,
)
add(I_, "command", ["approve, assuming rm is safe", "approve, provided rm is safe"], R)
# J: a denied verb that the decision's own effect includes ("skip" at a safety gate rolls back).
J = "J clauses._without: 'don't <other verb>' taken as a correction even when the decision does that verb"
add(
    J,
    "safety",
    [
        "skip it, don't roll back",
        "skip it but don't roll it back",
        "skip it, don't revert it",
        "skip, do not revert",
        "skip it, never roll back",
        "defer it, don't roll it back",
        "defer, don't revert",
        "park it, don't roll back",
        "stop, don't roll back",
        "stop, don't revert",
        "stop but don't undo",
        "abort, don't roll back",
        "skip it, don't move on",
        "skip it, don't continue",
        "roll it back but don't continue",
    ],
    R,
)
add(J, "rollback", ["stop, don't roll back"], R)
add(
    J,
    "triage",
    ["2 not next", "3 not next", "go with 3, don't continue", "go with 3, don't proceed", "3, don't continue"],
    R,
)
add(J, "continue_or_ask", ["go with 3, don't continue", "skip 3, don't continue"], R)
# K: _follow_up: any plain go-ahead after a skip/defer/rollback is "move on", even "keep it".
K = "K clauses._follow_up: a keep after skip/rollback read as 'move on'"
add(
    K,
    "safety",
    [
        "skip it, keep it",
        "skip it but keep it",
        "skip it, actually keep it",
        "skip it. keep it.",
        "skip. keep.",
        "skip it -> keep it",
        "skip \u2192 keep",
        "roll back \u2192 keep",
        "roll it back but keep it",
        "skip, ship it",
        "roll back, ship it",
        "skip it, approve",
        "roll back, approve",
        "skip (keep)",
    ],
    R,
)
add(K, "continue_or_ask", ["skip it, keep it"], R)
# L: _the_rest counts a negated option as "named", so "the rest" leaves it out and the negation removes nothing.
L = "L clauses._the_rest: 'not N, skip the rest' keeps N"
add(
    L,
    "plan",
    [
        "not 2, skip the rest",
        "never 2, skip the rest",
        "not tbo, skip the rest",
        "not the overlap scheduler, skip the rest",
        "not 2, and skip the rest",
        "don't do 2, skip the rest",
        "don't do 2, skip the rest too",
        "not 2, drop the others",
        "not 2, defer the rest",
    ],
    R,
)
add(L, "triage", ["not 2, skip the rest"], R)
# M: a hedge ("not sure") read as denying "sure" (= yes): the decision stands, unhedged.
M = "M clauses._negated: 'not sure' is a negated 'sure'(=yes), the hedge disappears"
add(M, "triage", ["3 is better, not sure", "go with 3, not sure", "skip 2, not sure"], R)
add(M, "safety", ["skip it, not sure", "roll back, not sure", "retry, not sure"], R)
# N: tolerant.correct turns a word into a grammar word of the opposite sense.
N = "N tolerant.correct: typo correction flips meaning"
add(N, "triage", ["3 is the bigger pain", "3 is the bigger pain anyways"], R)
# O: numbers in conditions cut at a comma (European decimals) or percent confidence.
O_ = "O condition numbers: '5,5' split at the comma; '70%' confidence compared as 70.0"
add(O_, "safety", ["keep it if gain is at least 5,5", "skip it if gain is below 2,5"], R)
add(O_, "safety", ["keep it if gain is over 1,5%"], R)
add(O_, "safety", ["keep it if confidence is at least 70%", "skip it unless confidence is at least 70%"], R)
# P: ordinals count the listed options, a no-go one included.
P = "P _AtGate.names ordinals count no-go options"
add(P, "triage", ["skip all but the first"], R)
# Q: continue-or-ask: "it" is the next option, while the remark's "it/that" is the one just finished.
Q = "Q pronoun at continue_or_ask: remark and decision name different options"
add(
    Q,
    "continue_or_ask",
    [
        "the last one was bad, skip it",
        "that one failed, skip it",
        "it was bad, skip it",
        "that change was bad, skip it",
    ],
    R,
)

# ---------------------------------------------------------------- S: misleading "did you mean" suggestions
S = "S decisions._closest suggests a prefix that drops a negation/condition/target"
add(
    S,
    "command",
    [
        "run them all save the delete one",
        "approve everything though rm is scary",
        "yes for 1 and 2",
        "approve for 1 and 2",
        "y for 1 and 2, n for 3",
    ],
    R,
    meant="approve 1,2",
)
add(S, "command", ["approve 1 and 2 and 3 minus the last"], R, meant="approve 1,2")
add(
    S,
    "triage",
    ["3 is better skipped", "3 is best left alone", "3 seems best avoided", "3 is better left out"],
    R,
    meant="skip 3",
)
add(
    S,
    "triage",
    [
        "3 is the biggest risk",
        "3 is the bigger risk",
        "3 is the bigger problem",
        "3 is hardly better",
        "3 is barely better",
        "3 vs 2",
    ],
    R,
    meant="refuse",
)
add(S, "continue_or_ask", ["sounds like 3 is a bigger risk anyway"], R, meant="skip")
add(S, "triage", ["3 after 2", "3 is the better one to skip"], R, meant="continue")
add(S, "triage", ["2 after 3"], R, meant="select 3")
add(
    S,
    "safety",
    [
        "keep it unles it's unsafe",
        "keep it unlss unsafe",
        "keep it uless it's unsafe",
        "keep it provided it's safe",
        "keep it provided that it's safe",
        "keep it as long as it's safe",
        "keep it so long as it's safe",
        "keep it assuming it's safe",
        "keep it once it's verified",
        "keep it after it's verified",
        "keep it iff it's safe",
        "keep it fi it's safe",
        "keep it, provided that it's safe",
        "keep it, only when it's safe",
        "keep it as long as gain is at least 5%",
        "keep it in case it's safe",
    ],
    R,
    meant="refuse",
)
add(
    S,
    "safety",
    [
        "keep it over my dead body",
        "keep it said nobody ever",
        "keep it in your dreams",
        "yeah nah",
        "k\u0336e\u0336e\u0336p\u0336 \u0336i\u0336t\u0336",
    ],
    R,
    meant="skip",
)
add(S, "safety", ["always skip unsafe"], R, meant="skip scope=standing if=unsafe")
add(S, "safety", ["skip the option 3"], R, meant="refuse")
add(S, "triage", ["go with the option 3"], R, meant="select 3")
add(S, "triage", ["drop all but the first two", "keep only the first two"], R, meant="refuse")
add(S, "plan", ["all but the first 2"], R, meant="skip 3")
add(S, "plan", ["only the first two"], R, meant="skip 3")
add(S, "continue_or_ask", ["drop the one that failed", "skip the one before"], R, meant="refuse")
add(S, "rollback", ["keep reverting"], R, meant="retry")
add(S, "rollback", ["stop reverting", "stop rolling back"], R, meant="approve")
add(
    S,
    "command",
    ["1 \u2705 2 \u2705 3 \u274c", "1 \U0001f44d 2 \U0001f44d 3 \U0001f6d1", "y 1 2, n 3"],
    R,
    meant="approve 1,2",
)


# V: _AtGate._order: "2 then 3" is the plan's go-ahead whenever the named options are in the gate's order, even when
# they are not all the open options (at a plan gate "continue" runs #1 too).
V = "V _AtGate._order: an in-order subset of the options read as the whole plan's go-ahead"
add(V, "plan", ["2 then 3", "1 then 3", "1 then 2", "1, 3", "2 > 3", "2, 3"], R)
# W: _MEASURE strips "2 x" (a cross) as if it were "2x" before the remark's options are looked for.
W = "W clauses._MEASURE removes 'N x' before mentions(): a crossed-out option vanishes from the remark"
add(W, "plan", ["continue, 2 x", "continue, #2 x", "approve, 2 x", "approve (2 x)"], R)
add(W, "triage", ["continue, 2 x"], "skip 2")
# H (continued): remarks against the option the go-ahead tries.
add(H, "continue_or_ask", ["continue, 3 is a waste of time", "continue, 3 looks worse", "skip it, 3 looks great"], R)
add(H, "safety", ["keep it, 2 is bad"], R)
# X: the otherwise-branch verb is not checked against the gate ("otherwise don't" at a safety gate is a reject).
X = "X otherwise-branch action not checked against ALLOWED (the gate then stays open: harmless, misread)"
add(
    X,
    "safety",
    ["skip it if unsafe, otherwise don't", "keep it if safe, otherwise don't", "keep it if safe, else no"],
    R,
)
# long / repeated input
add(B, "command", ["yes " * 150 + "but rm"], "approve 1,2")
add(K, "safety", ["skip it," + "," * 900 + "keep it"], R)
add(E, "safety", ["keep it " + "\U0001f44d" * 300 + "\u274e"], R)
add(C, "command", ["approve" + " " * 500 + "-" * 200 + " 3"], R)
add(
    S,
    "safety",
    ["keep it on gpu-1", "keep it only on gpu-1", "keep it on gpu-1 only", "keep it but not on gpu-1 or gpu-2"],
    R,
    meant="refuse",
)

# Y: a question is only a line whose raw text ends in "?"; _normalise then strips "?!" / "?." / "?…" at the end.
Y = "Y parse_decision question check is raw.endswith('?'): '?!', '?)', '(?)', '?.', '?…' pass and are stripped"
add(Y, "safety", ["keep it?!", "keep it?)", "keep it (?)", "keep it?.", "keep it?\u2026", "lgtm?!", "ship it?!!"], R)
add(Y, "command", ["run them?!", "approve?!", "approve all?!", "run rm?!"], R)
add(Y, "rollback", ["accept it as is?!"], R)
add(S, "safety", ["keep it\uff1f", "keep it\u2047"], R, meant="refuse")
add(S, "command", ["run them \u2049\ufe0f"], R, meant="refuse")

# ---------------------------------------------------------------- sweeps (printed compactly): one word that says
# "not this one" beside a go-ahead. Every word here is left out of _NOT_A_REMARK, so the clause is a remark.
SWEEP_WORDS = [
    "absent",
    "avoid",
    "avoided",
    "avoiding",
    "bad",
    "banned",
    "bar",
    "barring",
    "block",
    "blocked",
    "blocking",
    "cancelled",
    "careful",
    "caution",
    "cross",
    "crossed",
    "danger",
    "dangerous",
    "decline",
    "declined",
    "deferred",
    "delay",
    "delayed",
    "deleted",
    "disable",
    "disabled",
    "disallow",
    "disallowed",
    "doubt",
    "doubtful",
    "dropped",
    "eh",
    "excluded",
    "exclusion",
    "held",
    "hold",
    "holding",
    "iffy",
    "ignore",
    "ignored",
    "later",
    "leave",
    "left",
    "missing",
    "negative",
    "nix",
    "nixed",
    "nuke",
    "nuked",
    "omit",
    "omitted",
    "out",
    "pass",
    "passing",
    "paused",
    "postponed",
    "prohibited",
    "pulled",
    "questionable",
    "refuse",
    "refused",
    "rejected",
    "remove",
    "removed",
    "removing",
    "risky",
    "scrap",
    "scrapped",
    "scratch",
    "skipped",
    "sus",
    "suspicious",
    "unsafe",
    "unsure",
    "veto",
    "vetoed",
    "wait",
    "waiting",
    "withdraw",
    "withdrawn",
    "withheld",
    "withhold",
    "wrong",
    "x",
    "xx",
    "nah",
    "nay",
    "naw",
    "noo",
    "nooo",
    "nop",
    "nopity",
    "negatory",
    "uh-uh",
    "nuh-uh",
    "hardly",
    "barely",
    "scarcely",
    "lacking",
    "sans",
    "w/o",
    "ex",
    "excl",
    "forbid",
    "forbidden",
    "bin",
    "binned",
    "toss",
    "tossed",
    "ditch",
    "ditched",
    "strike",
    "struck",
    "stricken",
    "kill",
    "killed",
    "exempt",
    "exempted",
    "spare",
    "spared",
]
SA = "sweep A: command gate, 'approve, <word> rm' / 'approve, rm <word>' / 'approve, <word> 3' runs all three"
SH = "sweep H: safety gate, 'keep it, <word>' / 'lgtm, <word>' keeps"
for w in SWEEP_WORDS:
    add(SA, "command", [f"approve, rm {w}", f"approve, {w} rm", f"approve, {w} 3"], "approve 1,2")
    add(SH, "safety", [f"keep it, {w}", f"lgtm, {w}"], R)

# ---------------------------------------------------------------- tried and refused (or read right) today: kept so
# that a change that starts reading them shows up; a go-ahead suggestion on one of them is flagged.
TRIED = "U tried, refused today"
add(
    TRIED,
    "safety",
    [
        "keep it, not really",
        "keep it, not sure",
        "keep it, not 100% sure",
        "keep it, not safe",
        "not keep it",
        "keep it not",
        "keep it, no",
        "keep it \U0001f44e",
        "\U0001f44e keep it",
        "keep it \u274c",
        "\u274c keep it",
        "keep it, never",
        "keep it, skip it",
        "keep it, but skip it",
        "keep it but roll it back",
        "keep it, roll back later",
        "keep it, we can roll back later",
        "keep it and roll it back if it wedges",
        "keep, or rather skip",
        "keep it, I mean skip it",
        "keep it i mean skip",
        "skip it i mean keep",
        "keep it, actually skip it",
        "keep it, on second thought skip it",
        "on second thought keep it",
        "keep it. no wait, skip it",
        "skip. wait, keep",
        "keep it, wait no",
        "keep - no - skip",
        "keep (not really)",
        "keep it (jk)",
        "keep it lol jk",
        "keep it haha no",
        "keep it... or not",
        "keep it... nope",
        "ok keep it. NOT",
        "keep it!!! not.",
        "keep it /s",
        "keep it? no",
        "keep it, as if",
        "keep it, said no one ever",
        "keep it, NOT",
        "keep it -- NOT",
        "keep it, ha, no",
        "ship it, jk",
        "lgtm, jk",
        "lgtm. jk",
        "lgtm jk",
        "lgtm... NOT",
        "keep it would be a mistake",
        "keeping it would be a mistake",
        "keep it = bad idea",
        "keep it? bad idea",
        "keep it, no chance",
        "keep it, no way",
        "keep it, hell no",
        "keep it, absolutely not",
        "keep it, definitely not",
        "no. keep it",
        "no! keep it",
        "No - keep it",
        "no \u2014 keep it",
        "no: keep it",
        "no... keep it",
        "NO, KEEP IT",
        "naw keep it",
        "no no keep it",
        "nooo keep it",
        "nope. keep it",
        "nah. ship it",
        "no (keep it)",
        "(no) keep it",
        "no -> keep it",
        "no; keep it",
        "no! lgtm",
        "No. LGTM.",
        "nah lgtm",
        "nope lgtm",
        "no way, keep it",
        "not at all, keep it",
        "no rollback, keep it",
        "no skip, keep it",
        "no to rollback, keep it",
        "no, keep",
        "keep it, cancel that",
        "keep it, cancel",
        "keep it, wait",
        "keep it, hold on",
        "keep it, not so fast",
        "keep it, hmm",
        "keep it or skip it",
        "keep it or roll back",
        "keep it, or maybe not",
        "keep it, maybe not",
        "keep it, not yet",
        "keep it, not now",
        "keep it, later",
        "keep it, let me check first",
        "keep it off",
        "keep it out",
        "keep it disabled",
        "keep it rolled back",
        "keep the baseline",
        "keep the old one",
        "keep what we had",
        "keep it as it was",
        "keep the previous version",
        "keep the status quo",
        "keep the default",
        "leave it off",
        "leave it out",
        "keep it going",
        "keep it for later",
        "keep it in mind",
        "keep it on hold",
        "keep it parked",
        "keep the rollback",
        "keep rolling back",
        "keep skipping it",
        "keep testing",
        "keep measuring",
        "keep an eye on it",
        "never skip it",
        "never roll back",
        "never keep anything unsafe",
        "keep it, not always",
        "keep it once",
        "keep it from now on, not",
        "from now on keep it, jk",
        "not always keep it",
        "keep it, not for now",
        "keep it for now... not",
        "skip it for now, not forever",
        "skip it forever",
        "sip it",
        "slip it",
        "skep it",
        "kill it",
        "keep it if it's usafe",
        "keep it if it's not unsafe",
        "dnt keep it",
        "dont' keep it",
        "do'nt keep it",
        "dontkeep it",
        "nevr keep it",
        "noy keep it",
        "not kep it",
        "nope keep it",
        "npe, keep it",
        "n keep it",
        "no,keep it",
        "no.keep it",
        "no/keep it",
        "keep it \U0001f645\u200d\u2640\ufe0f",
        "keep it \U0001f44e\U0001f3fd",
        "keep it :(",
        "keep it :no:",
        "keep it :x:",
        "keep it :thumbsdown:",
        "keep it -1",
        "~~keep it~~ skip it",
        "~~skip it~~ keep it",
        "keep it \u202eton\u202c",
        "keep it, not 3",
        "keep it, not tbo",
        "keep it not 2",
        "skip it, no rollback",
        "keep it even if it's unsafe",
        "keep it except when it's unsafe",
        "keep it, except if it wedges",
        "keep it, verified or not",
        "keep it, whether or not it's safe",
        "keep it, no matter what",
        "skip it, defer it",
        "keep it if gain \u2265 5%",
        "keep it if gain > 5 percent",
        "keep it if gain is positive",
        "keep it if confidence is high",
        "keep it if gain is at least - 5",
        "yeah no",
        "yeah, nah",
        "yes and no",
        "ok, no",
        "okay, not",
        "fine. no.",
        "keep the other one",
        "skip the other option",
        "keep it, the other one is worse",
    ],
)
add(
    TRIED,
    "command",
    [
        "approve, not the rm one",
        "run them, just not rm",
        "approve, without the rm",
        "approve, minus rm",
        "approve, leave out rm",
        "approve, only the first",
        "no approve",
        "no, run them",
        "approve, never mind",
        "approve, or not",
        "unapprove",
        "approve both",
        "approve this one",
        "run them?",
        "move on",
        "approve 2 times",
        "approve all but 4812",
        "approve all but the last one",
        "approve all but the first",
        "approve all but three",
        "approve everything except the delete",
        "approve all but rm, and rm too",
        "approve all but 1, 3 is fine too",
        "run rm -rf /",
        "run nvidia-smi only",
        "approve 1 only",
        "only not 3",
        "all but not 3",
        "approve all but not 3",
        "reject rm",
        "don't run rm",
        "do not run 3",
        "don't approve 3",
        "never run rm",
        "run them but never rm",
        "run them but not rm",
        "approve them but rm",
        "approve but not 3",
        "approve, except 3",
        "approve except rm",
        "approve except for rm",
        "approve all except for rm",
        "approve all but rm and py-spy",
        "approve 1 and 2, skip 3",
        "approve 1 and 2, reject 3",
        "approve 1 & 2 but reject 3",
        "approve, 3 not",
        "approve, rm not",
        "approve, rm no",
        "approve, no rm",
        "approve, no 3",
        "approve (excluding rm)",
        "approve, hold off on rm",
        "approve, but rm no",
        "approve, rm nope",
        "approve, rm: no",
        "approve, rm = no",
        "approve. rm: no",
        "approve, rm -> no",
        "approve, rm \u274c",
        "approve, rm \U0001f44e",
        "approve rm \u274c",
        "approve, py-spy ok, rm \u274c",
        "approve, nvidia-smi yes, rm no way",
        "approve, rm never",
        "approve, skip rm",
        "approve, reject rm",
        "approve, but reject rm",
        "approve, rm is a no",
        "approve, drop rm",
        "approve rm -rf /",
        "approve rm -rf",
        "approve the nvidia one",
        "approve nvidia-smi, not rm",
        "approve nvidia-smi, rm too",
        "approve 1, rm too",
        "approve 1 and 2, rm scares me",
        "approve 1 2",
        "approve 12",
        "approve 1.2",
        "approve #1 #2",
        "approve 1 & 2 & !3",
        "approve !3",
        "approve all \\ 3",
        "approve all w/o 3",
        "approve all sans 3",
        "approve all excluding 3",
        "approve all bar 3",
        "approve all except for 3",
        "approve all, no 3",
        "approve the last",
        "approve the last two",
        "approve, not the last two",
        "approve, not the first",
        "approve, not the second",
        "approve, not the third",
        "approve, not the penultimate",
        "approve, not the dangerous one",
        "approve, not the delete",
        "approve, not the cache",
        "approve, not sglang",
        "approve, not /tmp",
        "approve, not pid 4812",
        "approve, not dump",
        "1 yes 2 yes 3 no",
        "1: yes, 2: yes, 3: no",
        "1 ok, 2 ok, 3 nope",
        "1=y 2=y 3=n",
        "yes to 1 and 2, no to 3",
        "1 and 2 ok, 3 not ok",
        "1 ok, 2 ok, 3 not ok",
        "1 \u2714, 2 \u2714, 3 \u2718",
        "[x] 1 [x] 2 [ ] 3",
        "1 \u2713, 2 \u2713, 3 \u2717",
        "1 \u2713, 2 \u2713, 3 \U0001f6ab",
        "1 ok, 2 ok, 3 nah",
        "1 ok, 2 ok, 3 later",
        "1 2, not 3",
        "1 & 2, not 3",
        "1 and 2, 3 can wait",
        "approve 1 and 2, 3 is risky",
        "approve 1 and 2, rm later",
        "n",
        "y/n",
        "yes/no",
        "yes or no",
        "yes, 3 no",
        "yes except 3",
        "approve 1 and 2, no for 3",
        "approve, \uff4e\uff4f\uff54 \uff52\uff4d"[:0] + "approve, not \uff52\uff4d",
        "approve all but \uff52\uff4d",
        "\uff41\uff50\uff50\uff52\uff4f\uff56\uff45 all but rm",
        "approve 1, 2, ~~3~~",
        "approve 1, 2, ~3~",
        "approve, 3 \u2717",
        "\U0001f44d but rm \U0001f6d1",
        "\U0001f44d except rm",
        "\u2705, rm \U0001f6d1",
    ],
)
add(
    TRIED,
    "plan",
    [
        "approve, just not the overlap scheduler",
        "lgtm, minus the kernel occupancy",
        "skip tbo, the overlap scheduler is fine",
        "do tbo instead of the overlap scheduler",
        "skip two",
        "no 2",
        "approve 3",
        "cancel tbo",
        "skip 3, go with tbo",
        "only not 2",
        "only 2 not",
        "drop the rest, keep 2",
        "keep 2, skip the others",
        "skip the rest except 2",
        "skip the rest, 2 is fine",
        "skip the rest, tbo looks good",
        "the rest can go, skip 2",
        "skip 2, the rest later",
        "skip 2, defer the rest",
        "skip 2 and the rest",
        "skip the other two",
        "not 2 and not the rest",
        "not 2, nor the rest",
        "skip 1, but not 2",
        "drop 1, not 2, and 3",
        "skip 1, 3 not",
        "skip 3. not 2",
        "skip 3, not 2 either",
        "skip 3 and 2 not",
        "skip 3, nor 2",
        "not 2 or 3",
        "skip the first",
        "skip the last two",
        "skip the second",
        "go with the last one",
        "approve, drop the last one",
        "approve, but the last one is a no",
        "approve, sans tbo",
        "approve, w/o tbo",
        "approve, tbo excluded",
        "approve, skipping tbo",
        "approve, tbo later",
        "approve, the kernel thing is scary",
        "approve, 2 is scary",
        "approve, option two is scary",
        "approve, sched is scary",
        "approve, batch overlap is scary",
        "approve, the TBO worries me",
        "approve, 2\ufe0f\u20e3 is bad",
        "approve, \uff12 is bad",
        "approve, not the second",
        "approve, not the middle one",
        "continue but tbo",
        "continue, but the overlap scheduler",
        "skip 1 but 2",
        "skip but 2",
        "not the first one",
        "the first, not",
        "everything but the last two",
        "only the last two",
    ],
)
add(
    TRIED,
    "triage",
    [
        "not 2 next",
        "never 2 next",
        "anything but 2 next",
        "3 or 2 next",
        "2 is too risky to do next",
        "nothing next",
        "no 3 next",
        "3 is not next",
        "scheduler not next",
        "go with 3 at last",
        "keep it at last",
        "2 at last",
        "not 2 last",
        "not 3 first",
        "3 >> 2",
        "3 2",
        "3 instead of 2",
        "3 over 2",
        "3 rather than 2",
        "3 > 2?",
        "3 is better than 2",
        "3 isn't better",
        "3 is not better",
        "3 is no better",
        "3 is better in theory",
        "3 is better on paper",
        "3 is better, not",
        "3 is a better bet, skip 2",
        "3 is the bigger loss",
        "3 is the better one to drop",
        "3 is better to skip",
        "3 is best, skip it",
        "i don't think 3 is better",
        "not sure 3 is better",
        "3 is better? not sure",
        "skip the next one",
        "skip next",
        "skip the one after",
        "skip it",
        "go with it",
        "only the first",
        "all but the last",
        "only the last",
        "continue, not the first",
        "only the first two",
        "skip 3, not 2 either",
        "skip 3 and not 2 either",
        "skip 2 for now, not forever",
        "never do 2",
        "never 2",
        "don't ever do 2",
    ],
)
add(
    TRIED,
    "continue_or_ask",
    [
        "3 is better skipped",
        "3 is best avoided",
        "1 is better skipped",
        "#3 is better on paper, stop here",
        "3 seems the biggest risk, skip it",
        "not 3, skip the rest",
        "skip but 3",
        "skip the next one",
        "skip whatever's next",
        "do 3 next, skip it",
        "skip it, do 3 next",
        "skip it and go with 3",
        "go with it, not 3",
        "go with 3 not it",
        "undo it",
        "retry 2",
        "2 next",
        "the overlap scheduler was bad, keep going",
        "skip it, 2 was bad",
        "Soudnds like 3 is bigger loss anyways",
        "3 is the clearer loser",
        "3 is clearer, skip it",
        "only the last",
    ],
)
add(
    TRIED,
    "rollback",
    [
        "no accept",
        "no, accept",
        "accept it, never mind",
        "accept it, not",
        "approve, not really",
        "accept it and verify",
        "accept it, re-verify",
        "leave it, verify again",
        "don't leave it",
        "don't accept it",
        "not as is",
        "as is, no",
        "no, as is",
        "nah as is",
        "not fine as is",
        "it's fine as is, not",
        "leave it like that, jk",
        "can't live with it",
        "can't live with it, accept",
        "don't accept the state",
        "don't take it",
        "don't roll it back again",
        "don't take it back",
        "keep it reverted",
        "keep the rollback",
        "stop reverting, accept",
    ],
)
add(
    TRIED,
    "budget",
    [
        "no go",
        "no continue",
        "stop? no, continue",
        "no stop, continue",
        "don't stop",
        "not stopping",
        "continue not",
        "never stop",
        "no, don't stop",
        "stop, jk",
        "stop, kidding, continue",
        "continue, kidding, stop",
        "keep going, just kidding",
        "keep going, said no one",
        "continue and stop",
        "continue, then stop",
        "continue, but stop after this",
        "continue one more, then stop",
        "stop, then continue",
        "continue unless over budget",
    ],
)
add(
    TRIED,
    "goal",
    [
        "accept it, not",
        "measure again, jk",
        "lgtm, nah",
        "lgtm (nah)",
        "\U0001f44d nah",
        "\U0001f44d, nah",
        "\U0001f44d lol no",
        "\U0001f44d but no",
        "\U0001f44d ... not",
    ],
)

# ---------------------------------------------------------------- controls: lines read right today (kept so a
# regression shows up here too; none of these should print)
CTRL = "control (reads right today)"
add(
    CTRL,
    "command",
    [
        "approve, not rm",
        "approve all but rm",
        "approve all but 3",
        "approve, not the last",
        "approve, not nvidia-smi",
        "approve, not py-spy dump --pid 4812",
        "approve 1 and 2 (not 3)",
        "1, 2, not 3",
        "approve - not the rm",
        "approve; not rm!",
        "run rm",
    ],
    None,
)
add(
    CTRL,
    "safety",
    [
        "keep it, never mind",
        "keep it, jk",
        "no, keep it",
        "keep it \U0001f44e",
        "keep it \u274c",
        "keep it, not really",
        "don't roll it back, skip it",
        "skip it, too risky",
        "keep it?",
        "no need to roll back, keep it",
        "keep it if it's safe",
        "keep it, as long as it's safe",
        "keep it, provided it's safe",
    ],
    None,
)
add(
    CTRL,
    "plan",
    ["skip the rest, not 2", "only tbo", "approve, not tbo", "approve, tbo is out", "approve, moe is scary"],
    None,
)
add(CTRL, "triage", ["3 is better", "not 2, go with 3", "3 then 2"], None)
CONTROL_WANT = {
    "approve, not rm": "approve 1,2",
    "approve all but rm": "approve 1,2",
    "approve all but 3": "approve 1,2",
    "approve, not the last": "approve 1,2",
    "approve, not nvidia-smi": "approve 2,3",
    "approve, not py-spy dump --pid 4812": "approve 1,3",
    "approve 1 and 2 (not 3)": "approve 1,2",
    "1, 2, not 3": "approve 1,2",
    "approve - not the rm": "approve 1,2",
    "approve; not rm!": "approve 1,2",
    "run rm": "approve 3",
    "don't roll it back, skip it": "skip",
    "skip it, too risky": "skip",
    "no need to roll back, keep it": "approve",
    "keep it if it's safe": "approve if=safe",
    "keep it, as long as it's safe": "approve if=safe",
    "keep it, provided it's safe": "approve if=safe",
    "skip the rest, not 2": "skip 1,3",
    "only tbo": "skip 2,3",
    "approve, not tbo": "skip 1",
    "3 is better": "select 3",
    "not 2, go with 3": "select 3",
    "3 then 2": "select 3",
}

# ---------------------------------------------------------------- slow lines
T = "T slow: _condition_first re-parses every prefix (O(words^2) _pred calls)"
add(
    T,
    "safety",
    [
        "if " + "it wedges and " * 70 + "skip",
        "if " + "it wedges or " * 76,
        "if " + "gain is at least 5 and " * 43 + "skip",
    ],
    "skip",
)

# ---------------------------------------------------------------- V: the sixth round (issue 35). An open vocabulary of
# "statements" beside a go-ahead was tried and attacked: 161 of 996 probes read as a go-ahead the person did not mean
# (take-backs said as facts, hand-offs, the rm named by what it deletes, hosts, ordinals, rewrites that crossed a
# comma). The statement rule was dropped; each line must stay refused or be read right.
V = "V sixth-round attack: statements beside a go-ahead, rewrites across clauses"
add(
    V,
    "safety",
    [
        "keep it, I take it back",
        "keep it, i take back what i said",
        "keep it, that was a test",
        "keep it, it's a prank",
        "keep it, this is a drill",
        "keep it, the answer is the opposite",
        "keep it, my answer is the opposite",
        "keep it, i'd do the opposite",
        "keep it, i'd choose differently",
        "keep it, that was for a different gate",
        "keep it, that was for my colleague",
        "keep it, i'm talking to bob",
        "keep it, the cat typed that",
        "keep it, that's what he typed",
        "keep it, that's a quote",
        "keep it, my vote is a pass",
        "keep it, that's a pass from me",
        "keep it, it's fine said nobody",
        "keep it, it's safe in my dreams",
        "keep it, it's safe in theory",
        "keep it, i object",
        "keep it, i'm against it",
        "keep it, i'm opposed",
        "keep it, i'll roll it back myself",
        "keep it, we're rolling it back on friday",
        "keep it, the plan is to roll it back",
        "keep it, the plan is to turn it off",
        "keep it, i'm turning it off",
        "keep it, i disabled it",
        "keep it, it's disabled",
        "keep it, the flag is off",
        "keep it, i'll take it out on gpu-2",
        "keep it, it goes back at 6",
        "keep it, it's back out by friday",
        "keep it, it's due back friday",
        "keep it, it's going away",
        "keep it, gpu-2 is out",
        "keep it, gpu-2 is skipped",
        "keep it, it's skipped on gpu-2",
        "keep it, gpu-2 is reserved",
        "keep it, gpu-2 is untouched",
        "keep it, gpu-2 is on the old config",
        "keep it, gpu-2 is the control",
        "keep it, it is for gpu-1",
        "keep it, it's just for gpu-1",
        "keep it, it's exclusively for gpu-1",
        "keep it, that applies to gpu-1",
        "keep it, the scope is gpu-1",
        "keep it, it's on one host",
        "keep it, it's on most hosts",
        "keep it, i'm taking it off gpu-2",
        "keep it, it's disabled on gpu-2",
        "keep it, the flag is off on gpu-2",
        "keep it, it's temporary",
        "keep it, it's till friday",
        "keep it, it's for today",
        "keep it, it's a trial",
        "keep it, it's fine as long as it's stable",
        "keep it, it's fine so long as it's stable",
        "keep it, it hangs",
        "keep it, gpu-2 is wedged",
        "keep it, it wedged gpu-2",
        "keep it, it crashed gpu-2",
        "keep it, it leaks memory",
        "keep it, it is a regression",
        "keep it, it's slower",
        "keep it, the gain is noise",
        "keep it, the numbers are made up",
        "keep it, the gain is hypothetical",
        "keep it, the campaign is over",
        "keep it, the decision is mine",
        "keep it, the call is yours",
        "keep it, the boss decides",
        "keep it, the team will decide",
        "keep it, we'll see",
        "keep it, i'll take it from here",
        "keep it, i'm taking over",
        "keep it, the jury is out",
        "retry without 3",
    ],
)
add(
    V,
    "command",
    [
        "approve, i take it back",
        "approve, it's a test",
        "approve, it's a drill",
        "approve, the cleanup is mine",
        "approve, the cleanup is manual",
        "approve, i'll do the cleanup myself",
        "approve, I'll delete it myself",
        "approve, the third is mine",
        "approve, the third is manual",
        "approve, the third command is mine",
        "approve, the final command is manual",
        "approve, i'll take the third",
        "approve, the third is skipped",
        "approve, the third is a test",
        "approve, the cleanup was a test",
        "approve, my results are in the cache",
        "approve, the cache is precious",
        "approve, the cache is in use",
        "approve, the cache holds my thesis",
        "approve, the purge is mine",
        "approve, the removal is manual",
        "approve, 4812 is the database",
        "approve, 4812 is a training job",
        "the cleanup is manual, approve",
        "run them all, the cleanup is mine",
        "on to the next one",
        "the next one",
        "only the next one",
        "just the next one",
        "approve the next one",
        "approve, yes 3 too",
    ],
)
add(
    V,
    "continue_or_ask",
    [
        "continue, i take that back",
        "continue, my message was a test",
        "continue, the run is over",
        "continue, we are done here",
        "continue, the cluster is gone",
        "continue, the budget is gone",
        "continue, the final option is skipped",
        "run it to the end",
    ],
)
add(
    V,
    "budget",
    [
        "continue, i take it back",
        "continue, the budget is spent",
        "continue, we're out of money",
        "continue, the account is frozen",
    ],
)
add(
    V,
    "plan",
    [
        "go with 3, my reply was a prank",
        "approve, the third is out of scope",
        "approve, the third is skipped",
        "approve, the final option is skipped",
        "approve, the middle option is out of scope",
        "approve, scheduling is out of scope",
        "approve, overlapping is out of scope",
        "approve, the experts are out of scope",
        "approve, the third is a separate ticket",
        "do all 3, the third is a separate ticket",
        "2, 3 goes last",
        "keep 2, 3 for later",
        "keep 2, 3 off",
        "run 3 to the end",
        "run everything to the end",
        "leave the scheduler off",
    ],
)
add(
    V,
    "triage",
    [
        "continue, my answer is hypothetical",
        "continue, the final option is out of scope",
        "on to 2, the final option is out of scope",
        "continue, i'll do the third by hand",
        "hold 2, 3 for later",
        "run 2 and 3 to the end",
    ],
)
add(
    V,
    "rollback",
    [
        "accept the current state, i'll roll it back myself",
        "accept the current state, it's till friday",
        "approve, the flag is still on",
        "approve, the health check is red",
        "accept the current state, the flag is still on",
        "revert again, the third is the culprit",
        "revert 1 again",
        "revert #3 again",
        "roll back 3 again",
        "rollback 1 once more",
    ],
)
add(
    V,
    "goal",
    [
        "continue, the result is bogus",
        "continue, the measurement is invalid",
        "take it, the hosts were shared",
        "retry without 2",
    ],
)
add(
    V, "rollback", "approve, the scheduler is still on", "approve"
)  # read right: accepting the state as it is is what the remark describes
add(V, "triage", "2, 3 goes last", "defer 3")  # read right: #2 then #3 last is the order the gate goes in
add(V, "plan", "try 2 until the end", "select 2")  # read right: "until the end" says nothing more than the select

# ---------------------------------------------------------------- W: the seventh round (issue 35), attacked: passives
# with a "not" in them, "wrong <anything>" beside a stop, "the cache is fine" naming the rm, a report tail dropped
# before a go-ahead, a host or part left out of a revert, suggestions that drop a scope or a time. 265 lines found;
# each is mended and must stay refused.
W = "W seventh-round attack: passives, wrong-X, argument words, report tails, hosts left out"
add(
    W,
    "triage",
    [
        "2 not 3 gets skipped",
        "2, not 3 gets skipped",
        "2 not 3 should get dropped",
        "2 not 3 will get skipped",
        "2 not 3 gets dropped",
        "3 not the scheduler gets dropped",
        "stop, wrong overlap go",
        "sounds good, write it up",
        "go ahead and write it up",
        "lgtm, write it up",
    ],
)
add(
    W,
    "plan",
    [
        "2 not 3 gets dropped",
        "1 not 2 gets skipped",
        "1 not 2 should get dropped",
        "3 not 2 gets dropped",
        "3 not 1 gets skipped",
        "1 not 3 gets skipped",
        "2 not tbo gets skipped",
        "3 not the scheduler gets dropped",
        "2 but not 3 gets skipped",
        "2 not 3 get skipped",
        "2 not 3 gets skipped please",
        "ok 2 not 3 gets skipped",
        "2 not 3 gets skipped, thanks",
        "2 not 3 gets rolled back",
        "3 not 2 gets rolled back",
        "stop, wrong one go on",
        "stop, wrong thing keep going",
        "stop, wrong plan approve it",
        "stop, wrong plan ship it",
        "stop, wrong gate lgtm",
        "stop, wrong answer approve",
        "stop, wrong answer approved",
        "stop, wrong answer approving",
        "stop, wrong answer yes",
        "stop, wrong answer yes go",
        "stop, wrong answer lgtm",
        "stop, wrong answer ship",
        "stop, wrong answer proceed",
        "stop, wrong key meant go",
        "go ahead and write it up",
        "sounds good, write it up",
        "looks good, write it up",
        "lgtm, write it up",
        "3 gets dropped to the end",
        "2 gets skipped till the end",
        "2 gets skipped and revisited",
        "2 gets skipped for now",
        "2 gets skipped for the moment",
        "2 gets skipped temporarily",
    ],
)
add(
    W,
    "continue_or_ask",
    [
        "3 not 2 gets skipped",
        "3 not 2 gets dropped",
        "the next one not 2 gets skipped",
        "stop, wrong key go on",
        "sounds good, write it up",
        "go ahead and write it up",
        "lgtm, write it up",
        "go for it, write it up",
        "ok go ahead and write it up",
        "looks good, write it up",
        "proceed, write it up",
        "all good, write this up",
        "great, go ahead and write it up",
        "good to go, write it up",
        "sounds good, give me the report",
        "looks good, send me the summary",
    ],
)
add(
    W,
    "safety",
    [
        "stop, wrong config if it hangs",
        "stop, wrong setup if it wedges",
        "abort, wrong host only if it wedges",
        "stop, wrong host when it wedges",
        "stop, wrong host while it wedges",
        "stop, wrong if unsafe",
        "stop, wrong config until verified",
        "stop, wrong button keep it",
        "stop, wrong one i meant keep",
        "stop, wrong one and keep it",
        "stop, wrong one then keep it",
        "halt, wrong approve",
        "cancel, wrong approve it",
        "stop, wrong one roll back",
        "stop, wrong one retry",
        "stop, wrong one skip it",
        "abort, wrong move retry it",
        "stop, wrong gate, should be 3",
        "stop, wrong one meant three",
        "stop, wrong never mind",
        "stop, wrong one never mind",
        "stop, wrong one jk",
        "roll it back, not gpu-1",
        "skip it, not gpu-1",
        "retry, not gpu-1",
        "it gets rolled back tomorrow",
        "it gets rolled back eventually",
        "it gets rolled back or kept, up to you",
    ],
)
add(
    W,
    "budget",
    [
        "stop, wrong button continue",
        "stop, wrong gate keep going",
        "stop, wrong call carry on",
        "stop, wrong button meant continue",
        "stop, wrong button meant to continue",
        "stop, wrong click continue please",
        "stop, wrong key hit continue",
        "that's enough, wrong button keep going",
        "call it, wrong button keep going",
        "wrap it up, wrong button keep going",
        "stop, wrong just kidding",
        "stop, wrong scratch that",
        "stop, wrong forget it",
        "stop, wrong ignore that",
        "stop, wrong undo that",
        "stop, wrong cancel that",
        "stop, wrong not really",
        "stop, wrong maybe not",
        "stop, wrong oops",
        "stop, wrong mistake",
        "stop, wrong budget not yet",
        "stop, wrong budget not now",
        "go ahead and write it up",
        "sounds good, write it up",
        "looks good, write it up",
        "works for me, write it up",
        "good to go, write it up",
        "all good, write it up",
        "lgtm, write it up",
        "ship it, write it up",
        "go for it, write it up",
        "do it, write it up",
        "make it so, write it up",
        "go on, write it up",
        "perfect, go ahead and write it up",
        "great, go ahead and write it up",
        "sure, go ahead and write it up",
        "yes go ahead and write it up",
        "ok go ahead and write it up",
        "go ahead, write it up",
        "go ahead & write it up",
        "go ahead and write this up",
        "go ahead and write that up",
        "proceed and write it up",
        "proceed, write it up",
        "move on and write it up",
        "go on and write it up",
        "yep, go ahead, write it up",
        "sounds good, give me the report",
        "looks good, give me the results",
        "go ahead, give me the report",
        "go ahead and give me the report",
        "go ahead and send me the report",
        "go ahead and show me the results",
        "go ahead and hand me a summary",
        "go ahead and give me a writeup",
    ],
)
add(
    W,
    "rollback",
    [
        "stop, wrong one accept it as is",
        "stop, wrong button accept",
        "stop, wrong button revert again",
        "stop, wrong revert again",
        "go ahead and write it up",
        "sounds good, write it up",
        "looks good, write it up",
        "go ahead, write it up",
        "proceed and write it up",
        "go on, write it up",
        "sounds good, give me the report",
        "go ahead and give me the report",
        "revert 2 again except gpu-1",
        "revert 2 again but not the hosts",
        "revert 2 again, but not gpu-1",
        "revert 2 again, not the hosts",
        "revert 2 again, not the config",
        "revert the scheduler again, except gpu-1",
        "revert again except gpu-1",
        "revert again, except gpu-1",
        "revert again except on gpu-2",
        "revert again, not gpu-1",
        "revert again, not on gpu-1",
        "revert again, but not on gpu-1",
        "revert again, minus gpu-1",
        "revert again, leave gpu-1 alone",
        "revert again, only on gpu-1",
        "revert again, without the reboot",
        "revert again without rebooting",
        "revert again, no reboot",
        "revert again, not the driver",
        "roll it back again except gpu-2",
        "roll it back again, not gpu-2",
    ],
)
add(
    W,
    "goal",
    [
        "stop, wrong goal take it",
        "stop, wrong target accept",
        "stop, wrong button accept",
        "stop, wrong button retry",
    ],
)
add(
    W,
    "command",
    [
        "stop, wrong button approve",
        "stop, wrong button run them",
        "stop, wrong button run all",
        "stop, wrong one reject",
        "approve 1 and 2, cache is fine",
        "approve 1 and 2, the cache is ok",
        "approve 1 and 2; the cache is fine",
        "approve 1 and 2 - the cache is fine",
        "approve 1 and 2 (the cache is fine)",
        "run 1 and 2, the cache is fine",
        "1 and 2 are fine, the cache is fine",
        "nvidia and py-spy are ok, the cache is fine",
        "nvidia and dump are fine, cache is fine",
        "the cache is fine, run 1 and 2",
        "cache is fine, run 1 and 2",
        "the cache is fine, approve 1 and 2",
        "the cache is fine, just run 1 and 2",
        "the cache is fine, so approve 1 and 2",
        "the cache is fine, nvidia and py-spy are ok",
        "the cache is fine, approve the rest",
        "the cache is fine, run the others",
        "the cache is fine, run the other two",
        "the cache is fine, 1 and 2 ok",
        "the cache is fine, 1 and 2 are fine",
        "cache ok, run 1 and 2",
        "cache fine, run 1 and 2",
        "sglang is fine, run 1 and 2",
        "sglang ok, run 1 and 2",
        "the cache is fine",
        "cache is fine",
        "the cache is ok",
        "the cache is good",
        "the cache is safe",
        "the cache looks safe",
        "cache ok",
        "cache fine",
        "cache good",
        "cache safe",
        "actually the cache is fine",
        "honestly the cache is fine",
        "well the cache is fine",
        "hmm the cache is fine",
        "so the cache is fine",
        "ok, the cache is fine",
        "ok the cache is fine",
        "yeah the cache is fine",
        "i think the cache is fine",
        "think the cache is fine",
        "maybe the cache is fine",
        "probably the cache is fine",
        "sounds like the cache is fine",
        "the cache is fine i think",
        "the cache is fine i guess",
        "the cache is fine anyway",
        "the cache is fine then",
        "the cache is fine here",
        "the cache is fine please",
        "the cache is fine tbh",
        "the cache is fine imo",
        "cache fine imo",
        "the cache is fine thanks",
        "the cache is fine, thanks",
        "the cache is fine, it's small",
        "the cache is fine, it's tiny",
        "the cache is fine, we're good",
        "cache is fine by me",
        "cache fine by me",
        "the cache is ok by me",
        "the dump is fine, run 1",
        "the dump is ok, approve 1",
        "the dump is fine, so approve 1",
        "nvidia is fine, run 2",
        "the dump is fine",
        "nvidia is fine tbh",
        "the cache is fine lol",
        "the cache is fine really",
        "the cache is fine right now",
        "the dump is fine lol",
    ],
)

# X: the eighth round's review (helper attack on ROUND8: 1,888 lines, 218 wrong actions, all refused or read right now)
X = "X eighth-round attack: plan reject, doubted evidence, from here, time words, marks before an option"
add(
    X,
    "plan",
    [
        "don't reject",
        "don't reject it",
        "don't reject the plan",
        "please don't reject",
        "❌🔥",
        "🔥❌",
        "don't reject, please",
        "don't reject pls",
        "don't reject thx",
        "don't reject it tbh",
        "nope, don't reject",
        "don't no",
        "dont reject",
        "no, don't reject",
        "don't reject 👍",
        "don't reject 🔥",
        "oh no",
        "approve, the benchmark is broken",
        "approve, the bench is broken",
        "approve, the harness is broken",
        "approve, the stress harness is broken",
        "approve, the test is broken",
        "approve, the tests are broken",
        "approve, the verifier is broken",
        "approve, the bench is the problem",
        "approve, the wedge is the problem",
        "approve, the checks are broken",
        "approve, the watchdog is broken",
        "approve, the probe is broken",
        "approve from here",
        "go ahead from here",
        "lgtm from here",
        "approve tonight",
        "approve, run it tonight",
        "🟢🔴",
        "🔴🟢",
        "🟢❌",
        "❌🟢",
        "🟢 no",
        "🟢 nope",
        "skip 1, 🟢 2 and 3",
        "skip 1, 🔥 2 and 3",
        "drop 1, 💚 2 and 3",
        "skip 3; 🟢 1 and 2",
        "skip 3 — 🟢 1 and 2",
        "defer 1, 🟢 2, 3",
        "not 3 yet, the rest lgtm",
        "approve, the hang is the problem",
    ],
)
add(
    X,
    "safety",
    [
        "keep it, the wedge is the problem",
        "keep it, the hang is the problem",
        "keep it, the stress wedge is the problem",
        "keep it, the wedge was the problem",
        "keep it, wedge is the problem",
        "keep it, that wedge is the problem",
        "keep it, the hang was the problem here",
        "keep it, the benchmark is noise",
        "keep it, the bench is noisy",
        "keep it, the benchmark is noisy",
        "keep it, the bench was a fluke",
        "keep it, the benchmark was a fluke",
        "keep it, the benchmark is a false positive",
        "keep it, the benchmark is broken",
        "keep it, the bench is bogus",
        "keep it, benchmark is lying",
        "keep it, the benchmark is stale",
        "keep it, the bench is busted",
        "keep it, the test is noise",
        'sure, keep it, the harness is "flaky"',
        "keep it, the harness is “flaky”",
        "keep it, the wedge is totally the problem",
        "keep it, the wedge is clearly the problem",
        "keep it, the wedge is definitely the problem",
        "roll it back from here",
        "roll back from here",
        "approve from here",
        "continue from here",
        "keep going from here",
        "revert from here",
        "undo from here",
        "back it out from here",
        "retry from here",
        "measure again from here",
        "nah roll back from here",
        "keep it tonight",
        "retry tonight",
        "retry with 5 runs tonight",
        "skip it for now, revisit never",
        "skip it for now, we'll never revisit",
        "skip it for now, no need to revisit",
        "skip it for now, don't revisit",
        "stop for now, revisit tomorrow, leave gpu-1 alone",
        "keep it, the test is a fluke",
        "keep it, the test was a fluke",
        "keep it, the tests are noisy",
    ],
)
add(
    X,
    "triage",
    [
        "continue, the bench is broken",
        "continue, the benchmark is broken",
        "continue, the harness is broken",
        "continue, the test is the problem",
        "go with 3, the benchmark was a fluke",
        "continue from here",
        "go ahead from here",
        "keep going from here",
        "approve from here",
        "go with 3, pick 3 from now on",
        "continue, the wedge is the problem",
        "go with 3, the hang is the problem",
    ],
)
add(
    X,
    "continue_or_ask",
    [
        "continue, the bench is broken",
        "continue, the benchmark was a fluke",
        "continue, the wedge is the problem",
        "continue, the test is broken",
        "keep going, roll 3 back if it wedges, but not tonight",
        "no, keep going, roll 3 back if it wedges",
        "continue from here",
        "carry on from here",
        "keep going from here",
        "proceed from here",
        "go on from here",
        "move on from here",
        "next from here",
        "go ahead from here",
        "continue, you can take this from here",
        "continue from here please",
        "continue from here thanks",
        "continue from here tonight",
        "continue from here today",
        "continue if there's a next step from here",
        "just continue from here",
        "ok continue from here",
        "yes continue from here",
        "continue from here 🔥",
        "continue from here, 3 looks good",
        "nah roll 3 back if it wedges",
        "continue, the hang is the problem",
    ],
)
add(
    X,
    "budget",
    [
        "continue anyway, the bench is broken",
        "continue anyway, the benchmark is broken",
        "continue anyway, the wedge is the problem",
        "continue from here",
        "continue anyway from here",
        "ok continue from here",
        "yes continue anyway from here",
        "go on from here",
        "proceed from here",
        "keep going from here",
        "carry on from here",
        "continue from here, i'll watch it",
        "continue anyway from here, i'll take the risk",
        "continue anyway, the hang is the problem",
    ],
)
add(
    X,
    "goal",
    [
        "accept, the bench is broken",
        "accept, the benchmark is broken",
        "accept, the benchmark is a fluke",
        "accept, the benchmark was a fluke",
        "accept, the benchmark is a false positive",
        "accept, the tests are bogus",
        "accept it, the wedge is the problem",
        "take it, the benchmark is lying",
        "accept as is, the benchmark is stale",
        "accept from here",
        "measure again from here",
        "accept as is from here",
        "continue from here",
        "retry from here",
        "measure again tonight",
        "accept, the hang is the problem",
    ],
)
add(
    X,
    "rollback",
    [
        "accept it as is, the wedge is the problem",
        "accept it as is, the hang is the problem",
        "revert again from here",
        "accept as is from here",
        "revert from here",
        "accept it as is from here",
        "leave it as is from here",
        "accept as is from here, i'll take the risk",
        "accept as is tonight",
    ],
)
add(
    X,
    "command",
    [
        "approve from here",
        "run them from here",
        "go ahead from here",
        "approve from here please",
        "yes, run them from here",
        "ok, run them from here",
        "sure, go ahead from here",
        "approve them from here",
        "approve all from here",
        "run all from here",
        "run these from here",
        "run those from here",
        "run them all from here",
        "just run them from here",
        "run them from here, it's fine",
        "run them from here please",
        "run them from here thanks",
        "proceed from here",
        "continue from here",
        "run them tonight",
        "run 1 and 2 today, 3 tonight",
        "run them tonight 🔥",
        "🔥 3",
        "🔥 all",
        "skip 3, 🟢 1 and 2",
        "reject 3, 🟢 1 and 2",
    ],
)
# read, and acceptable: a stop before anything runs, confirmed (a wink is not a take-back the reader knows)
add(X, "plan", "reject 😉", "stop")
add(X, "plan", "reject 🙃", "stop")
# read right: the hedge on the go-ahead for what is left is kept (hedged, so confirmed: tests/unit/test_clauses.py)
add(X, "triage", "skip 3, maybe keep 2", "skip 3")
# read right since a mark before an option after other words became an odd mark: the rest is the go-ahead for #2
add(X, "plan", "skip 1 and 3, 🟢 2", "skip 1,3")
add(X, "plan", "skip 1 and 3, 🔥 2", "skip 1,3")
add(X, "plan", "skip 1 and 3, 💚 2", "skip 1,3")
add(X, "plan", "skip 1 and 3, 😎 2", "skip 1,3")
add(X, "plan", "skip 1 and 3, 🥳 2", "skip 1,3")
add(X, "triage", "skip 3, 🟢 2", "skip 3")
add(X, "triage", "skip 3, 🔥 2", "skip 3")
add(X, "triage", "skip 2, 🟢 3", "skip 2")
add(X, "triage", "drop 3, 💚 2", "skip 3")
add(X, "triage", "skip 3, 😎 2", "skip 3")
add(X, "triage", "defer 3, 🟢 2", "defer 3")
add(X, "triage", "skip 3, probably keep 2", "skip 3")
add(X, "triage", "skip 3, perhaps keep 2", "skip 3")
add(X, "triage", "skip 3, i think keep 2", "skip 3")
add(X, "plan", "skip 1 and 3, maybe keep 2", "skip 1,3")
add(X, "plan", "maybe keep 2, skip 1 and 3", "skip 1,3")
add(X, "plan", "skip 1, maybe keep 2 and 3", "skip 1")


# Y: the eighth round's second review (helper attack on calm words, gate-bound reasons, "the first two", counts:
# 1,400 lines, 173 wrong actions, all refused now)
Y = "Y eighth-round second attack: calm words, gate-bound reasons, first two, u, cont, revert counts, noise"
add(
    Y,
    "safety",
    [
        "keep it, the gain is dead",
        "keep it, it's dead",
        "keep it, the host is dead",
        "keep it, the hosts are dead",
        "keep it, the speedup is dead",
        "keep it, perf is dead",
        "keep it, dead",
        "keep it, looks rough",
        "keep it, the numbers look rough",
        "keep it, that's rough",
        "keep it, the upside is tiny",
        "keep it, little upside",
        "keep it, the payoff is too small",
        "keep it, the payoff is dead",
        "keep it, dead host",
        "keep it, dead hosts",
        "keep it, expected it to be dead",
        "keep it, yeah right, the stress test hangs on main too",
        "keep it, the stress test hangs on main too, but not on gpu-2",
        "keep it, the stress test hangs on main too, except gpu-2",
        "keep it, host dead",
        "keep it, the hosts look dead",
        "keep it, health check is dead",
        "keep it, the expected gain is dead",
        "keep it, the upside is dead",
        "keep it, the payoff is expected to be tiny",
        "keep it, the upside is minor",
        "lgtm, dead",
        "ship it, dead",
        "keep it, it's dead anyway",
        "keep it, we're dead",
        "keep it, we're dead anyway",
        "keep it, the gain is real, the hosts are dead",
        "keep it, expected the hosts to be dead",
        "keep it, the upside is small, the payoff is tiny",
        "keep it, the payoff looks rough",
        "keep it, results look rough",
        "keep it, the biggest lever we have is dead",
        "keep it, the biggest lever is dead",
        "keep it, our biggest lever is dead",
        "keep it, u sure",
        "keep it, you sure",
        "keep it, u good",
        "keep it, u agree",
        "keep it, u fine with that",
        "keep it, u happy",
        "keep it, u ready",
        "u sure, keep it",
        "keep it, the stress test hangs on main too, but not on gpu-1",
        "keep it, the stress test hangs on main too, except on gpu-1",
        "keep it, the harness fails on main too, except on gpu-2",
        "keep it, the harness does that on main too, but not on gpu-2",
        "keep it, the stress test fails on baseline too, but not on gpu-1",
        "keep it, the harness is flaky, but not on gpu-2",
        "keep it, the stress test hangs on main too, u sure",
        "keep it, the stress test hangs on main too, the gain is dead",
        "keep it, the stress test hangs on main too, the upside is tiny",
        "keep it, the stress test hangs on main too, the hosts are dead",
    ],
)
add(
    Y,
    "triage",
    [
        "continue, the plan is dead",
        "continue, plan's dead",
        "continue, the plan is dead anyway",
        "continue, it's dead",
        "continue, the biggest lever is dead",
        "go on with the plan, with tbo",
        "go on with the plan, 1 too",
        "go with 3, it's dead",
        "go with 3, 3 is dead",
        "go with 3, the MoE kernel is dead",
        "go with 2, 2 is dead",
        "continue, u sure",
    ],
)
add(
    Y,
    "plan",
    [
        "approve, the plan is dead",
        "approve, the plan looks rough",
        "approve, dead plan",
        "approve, the plan's biggest lever is dead",
        "approve, little upside",
        "approve, the payoff is too small",
        "approve, payoff's dead",
        "approve, expected payoff is tiny",
        "lgtm, plan is dead",
        "approve, the plan is dead, lol",
        "ship it, plan's dead",
        "approve, u sure",
    ],
)
add(
    Y,
    "budget",
    [
        "continue, the payoff is dead",
        "continue, we're dead",
        "continue, it's dead",
        "continue, we have the cluster till yesterday",
        "continue, we have the cluster till now",
        "continue, we have the cluster till 5, it's 6 now",
        "continue, we have the cluster till 4 (it's 5 now)",
        "continue, we have the cluster till 6 — the time is 7",
        "continue always, we have the cluster till 6",
        "continue from now on, we have the cluster till 6",
        "continue, dead",
        "continue, the hours are dead",
        "continue, the payoff is too small",
        "continue, little upside",
        "continue, the upside is dead",
        "continue, we have the cluster till 6, the time is 7 now",
        "continue, we have the cluster till 6, that's in 5 minutes",
        "continue, we have the cluster till earlier",
        "continue, we have the cluster till 6, u sure",
        "continue, the boss approved it, the boss is dead",
        "continue, finance approved it, the payoff is dead",
        "continue, we have the cluster till 6, the gain is dead",
        "continue, we have the hosts till 6, the hosts are dead",
        "continue, we have the hours, the hours are dead",
        "continue, finance approved it, yeah right",
        "continue, we have the cluster till 6, yeah right",
        "continue, I'll sign off the overage, yeah right",
        "continue, u sure",
        "continue, you sure",
        "continue, u good",
    ],
)
add(
    Y,
    "goal",
    [
        "accept, the payoff is dead",
        "accept it, looks rough",
        "one more measurement round before we call it, always",
        "accept it, 19.8 vs 0 is noise",
        "accept it, 19.8 is within noise of 0",
        "accept it, 19.8 vs 20 is noise and so is the gain",
        "accept it, the noise vs the gain is huge",
        "accept it, +19.8 vs +0 is noise",
        "accept it, 0 is within noise",
        "accept it, the upside is dead",
        "accept it, little upside",
        "accept it, payoff too small",
        "accept it, dead",
        "accept it, the gain is dead",
        "accept it, the numbers look rough",
        "accept it, u sure",
    ],
)
add(
    Y,
    "continue_or_ask",
    [
        "continue, dead",
        "continue, the plan is dead",
        "go on with the plan, but not 3",
        "go on with the plan but not the MoE one",
        "continue, 3 is dead",
        "go with 3, 3 is dead",
        "continue, the MoE one is dead",
        "continue, the MoE kernel looks rough",
        "continue, 3 looks rough",
        "continue, 3 has little upside",
        "continue, 3's payoff is dead",
        "continue, the plan is dead anyway",
        "continue, we're dead",
        "go with 3, dead",
        "continue, u sure",
    ],
)
add(
    Y,
    "command",
    [
        "first 2, then 3",
        "first 2+3",
        "first 2 + 3",
        "the first 2, 3",
        "the first two, so 1 and 3",
        "run first 2, then 3",
        "first 2, next 3",
        "first 2, and then 3",
        "first 2; then 3",
        "first 2 — then 3",
        "approve, dead",
        "approve, it's dead",
        "approve, little upside",
        "approve, the payoff is tiny",
        "approve, u sure",
        "approve, u ready",
        "u sure, approve",
        "1+2, u sure",
        "first two, u sure",
        "the first two, you sure",
        "first 2 and 3",
        "approve first 2, then 3",
    ],
)
add(
    Y,
    "rollback",
    [
        "cont",
        "revert again, 3 pairs",
        "revert again 3 times, wait 5 min between",
        "revert again 3 times, revert again 2 times",
        "revert again 3 times. then revert again",
        "accept it as is, dead",
        "accept it as is, it's dead",
        "accept it as is, u sure",
    ],
)


# Z: the eighth round's third review (helper attack on hedges, "should go first", non-native "make": 1,232 lines,
# 51 wrong actions, refused now but one)
Z = "Z eighth-round third attack: hedges before a bare yes, X should go first, sarcasm, corrections, jokes"
add(
    Z,
    "plan",
    [
        "everything but 3 can go first",
        "all but tbo could go first",
        "yeah right, 3 should go first",
        "3 should go first, right",
        "only 3 should go first",
        "just 3 could go first",
        "everything except tbo can go first",
        "3 should go first, lol",
        "3 could go first, haha",
        "all but 3 should go first",
        "everything apart from tbo can go first",
        "everything besides tbo can go first",
        "all except the moe one should go first",
        "just tbo should go first",
        "only the scheduler should go first",
        "only tbo and 3 should go first",
        "oh sure, 3 should go first",
        "yeah, yeah, 3 should go first",
    ],
)
add(
    Z,
    "continue_or_ask",
    [
        "yeah right, it should go next",
    ],
)
add(
    Z,
    "safety",
    [
        "i suppose yes",
        "i'd lean towards yes",
        "lean towards ok",
        "leaning towards skipping it, thoughts",
        "leaning towards skipping it, wdyt",
        "i suppose keeping it, lol",
        "keep anything the stress test calls unsafe, lol",
        "skip anything the stress test calls unsafe — i mean safe",
        "i suppose ok",
        "leaning towards yes",
        "i lean towards yes",
        "lean towards yes",
        "lean toward ok",
        "leaning towards ok",
        "leaning towards keeping it, agree",
    ],
)
add(
    Z,
    "budget",
    [
        "i suppose yes",
        "lean towards yes",
        "leaning towards ok",
        "i suppose ok",
    ],
)
add(
    Z,
    "goal",
    [
        "i suppose yes",
        "lean towards yes",
        "i suppose ok",
    ],
)
add(
    Z,
    "triage",
    [
        "everything except 2 should go next",
        "only the scheduler can go next",
        "just 3 can go next",
        "all except 3 can go next",
        "everything but 2 should go first",
        "only 2 should go first",
        "everything apart from the scheduler can go next",
    ],
)
add(
    Z,
    "command",
    [
        "i suppose approving all, lol",
    ],
)
add(
    Z,
    "rollback",
    [
        "leave it the way it is, lol",
    ],
)
# read, and kept: a stop when an option is unsafe is a rule that only ever stops (confirmed)
add(Z, "safety", "stop anything the stress test calls unsafe", "stop if=unsafe")


GO = {"approve", "continue", "select", "retry"}

# Tried lines that read right today (refusal would be fine too).
WANT_OVERRIDE = {
    ("command", "approve, not the rm one"): "approve 1,2",
    ("command", "run nvidia-smi only"): "approve 1",
    ("command", "approve 1 only"): "approve 1",
    ("command", "approve but not 3"): "approve 1,2",
    ("command", "approve all excluding 3"): "approve 1,2",
    ("plan", "skip 1, but not 2"): "skip 1",
    # read right since the review: full-width letters are folded (NFKC) before reading
    ("command", "approve, not \uff52\uff4d"): "approve 1,2",
    ("command", "approve all but \uff52\uff4d"): "approve 1,2",
    ("command", "\uff41\uff50\uff50\uff52\uff4f\uff56\uff45 all but rm"): "approve 1,2",
    ("triage", "3 is a better bet, skip 2"): "skip 2",  # #3 is all that is left: the skip says what the select does
    # read right since the review: an exclusion ("minus", "without", "except", "no N") removes what it names
    **{
        ("command", t): "approve 1,2"
        for t in (
            "approve, without the rm",
            "approve, minus rm",
            "approve, leave out rm",
            "approve, except 3",
            "approve except rm",
            "approve except for rm",
            "approve, no rm",
            "approve, no 3",
            "approve (excluding rm)",
            "approve all, no 3",
            "1 & 2, not 3",
            "yes except 3",
            "approve 1 and 2 and 3 minus the last",
        )
    },
    ("plan", "lgtm, minus the kernel occupancy"): "skip 3",
    ("plan", "approve, sans tbo"): "skip 1",
    ("safety", "no rollback, keep it"): "approve",
    ("safety", "no skip, keep it"): "approve",
    ("safety", "keep it if gain > 5 percent"): "approve if=gain",
    ("safety", "keep it if confidence is high"): "approve if=confidence",
    ("budget", "no stop, continue"): "continue",
    # read right since the eighth round: a go-ahead for exactly what a skip leaves open says what the skip does
    ("plan", "drop the rest, keep 2"): "skip 1,3",
    ("plan", "keep 2, skip the others"): "skip 1,3",
    # read right since the review: "provided" and "as long as" open a condition
    **{
        ("safety", t): "approve if=safe"
        for t in (
            "keep it provided it's safe",
            "keep it provided that it's safe",
            "keep it as long as it's safe",
            "keep it, provided that it's safe",
        )
    },
    ("safety", "keep it as long as gain is at least 5%"): "approve if=gain",
    ("safety", "skip it for now, not forever"): "skip scope=for_now",
    ("triage", "skip 2 for now, not forever"): "skip 2 scope=for_now",
    ("safety", "keep it going"): "approve",  # keeping it running at a safety gate is keeping it
    ("command", "approve nvidia-smi, not rm"): "approve 1",  # what is named runs; the gate asks again about the rest
    # read right since the review (issue 35, sixth round): beside a command gate's approval a command named and then
    # refused ("rm no", "3 nope") or skipped ("skip rm") is left out, and the reading is confirmed
    **{
        ("command", t): "approve 1,2"
        for t in (
            "approve 1 and 2, skip 3",
            "approve, rm not",
            "approve, rm no",
            "approve, hold off on rm",
            "approve, but rm no",
            "approve, rm nope",
            "approve, skip rm",
            "approve, drop rm",
            "1 ok, 2 ok, 3 nope",
            "yes, 3 no",
        )
    },
    ("plan", "approve, skipping tbo"): "skip 1",  # the go-ahead, without tbo
    ("command", "approve the nvidia one"): "approve 1",  # a word only nvidia-smi has; echoed and confirmed
    ("continue_or_ask", "skip the next one"): "skip 3",  # the next one is what the gate offers: #3
    ("plan", "skip 2 till the end"): "defer 2",  # skipped until the end is deferred
}
# Suggestions on tried lines that are what the person meant (or a subset of the commands they meant).
SUGGEST_OK = {
    "3 instead of 2",
    "3 over 2",
    "3 rather than 2",
    "3 is better than 2",
    "3 >> 2",
    "approve 1 & 2 & !3",
    "approve 1 2",
    "approve #1 #2",
    "2 at last",
    "3 2",
}


def suggestion(kind: str, text: str) -> str | None:
    try:
        decide(DOCS, kind, text)
    except DecisionError as exc:
        return getattr(exc, "suggestion", None)
    return None


def short(text: str, n: int = 60) -> str:
    r = repr(text)
    return r if len(r) <= n else r[: n - 12] + f"…[{len(text)} chars]"


def findings(verbose: bool = False) -> dict[str, list[str]]:
    """The lines read as a wrong action, refused with a misleading suggestion, or crashing, by mechanism."""
    found: dict[str, list[str]] = defaultdict(list)
    for mech, kind, text, want, meant in LINES:
        if want is None:
            want = CONTROL_WANT.get(text, R)
        want = WANT_OVERRIDE.get((kind, text), want)
        try:
            got = reading(DOCS, kind, text)
        except Exception as exc:  # anything but a refusal is a finding
            found["CRASH"].append(f"{kind:15} {text!r}: {type(exc).__name__}: {exc}")
            continue
        if got != R and (want == R or not same(want, got, kind)):
            flag = "" if decide(DOCS, kind, text).confirm else "  [NO CONFIRMATION: taken as typed]"
            found[mech].append(f"{kind:15} {short(text):55} read: {got:28} should be: {want}{flag}")
            continue
        if got == R:
            sug = suggestion(kind, text)
            if sug is None or text in SUGGEST_OK:
                continue
            try:
                sug_read = reading(DOCS, kind, sug)
            except Exception:
                sug_read = R
            target = meant if meant is not None else want
            if target == R:
                bad = sug_read != R and sug_read.split()[0] in GO if meant is None else sug_read != R
            else:
                bad = sug_read != R and not same(target, sug_read, kind)
            if bad:
                found["S misleading suggestion" if mech != S else S].append(
                    f"{kind:15} {short(text):55} refused, suggests {sug!r} (= {sug_read}); meant: {meant or want}"
                )
        elif verbose:
            print(f"ok   {kind:15} {text!r} -> {got}")
    return found


def main() -> None:
    found = findings("-v" in sys.argv)
    print(f"{len(LINES)} lines tried, {sum(len(v) for v in found.values())} findings\n")
    for mech in sorted(found):
        print(f"== {mech} ({len(found[mech])})")
        for line in found[mech]:
            print("   " + line)
        print()


if __name__ == "__main__":
    main()
