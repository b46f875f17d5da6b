"""The clause reader (policies/clauses.py): every line issue 35 found misread or refused, read as the live gate reads
it, and generated lines that must keep or refuse a decision — never turn it into another one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.decisions import DecisionError
from tests.oneliner_reading import DOCS, decide, reading, same

# (gate, what was typed, what it means): the issue's list, pattern by pattern.
ISSUE_LINES = [
    # negation with a correction
    ("safety", "don't roll back, keep it", "approve"),
    ("continue_or_ask", "don't continue, stop here", "stop"),
    ("continue_or_ask", "not 2, go with 3", "select 3"),
    ("triage", "go with 3 not 2", "select 3"),
    ("safety", "I wouldn't keep it", "skip"),
    ("safety", "doesn't look good, roll back", "rollback"),
    ("safety", "never keep it", "skip"),
    # a decision followed by a remark or reason
    ("safety", "skip it, too risky", "skip"),
    ("budget", "stop, we're out of budget", "stop"),
    ("rollback", "accept it, health looks fine to me", "approve"),
    ("triage", "skip 2 (the overlap scheduler)", "skip 2"),
    ("triage", "Skip #2 — it's flaky", "skip 2"),
    ("plan", "drop two-batch overlap, rest is fine", "skip 1"),
    # emoji and symbols
    ("plan", "lgtm 🚀", "approve"),
    ("safety", "roll it back 😬", "rollback"),
    ("plan", "approve ✅", "approve"),
    ("continue_or_ask", "Continue…", "continue"),
    ("command", "👎", "reject"),
    # all but / only / except
    ("plan", "everything but 3", "skip 3"),
    ("plan", "skip all but 3", "skip 1,2"),
    ("plan", "only 1 and 3 pls", "skip 2"),
    ("command", "approve 2 only", "approve 2"),
    ("plan", "skip 1 and 2, do 3", "skip 1,2"),
    ("command", "approve all but 2", "approve 1,3"),
    ("plan", "everything except the MoE one", "skip 3"),
    ("command", "approve 1-2", "approve 1,2"),
    # filler outside the old list
    ("continue_or_ask", "sure whatever, keep going", "continue"),
    ("safety", "eh fine, keep it", "approve"),
    ("plan", "ya fine", "approve"),
    ("budget", "nah stop", "stop"),
    ("plan", "skip 2 pls", "skip 2"),
    # partial titles
    ("plan", "skip overlap sched", "skip 2"),
    ("plan", "skip the scheduler thing", "skip 2"),
    ("plan", "MoE kernel next pls", "select 3"),
    ("safety", "keep the overlap scheduler", "approve"),
    # conditions first, standing rules
    ("plan", "if 2 turns out unsafe just skip it", "skip 2 if=unsafe"),
    ("triage", "from now on skip anything unsafe", "skip scope=standing if=unsafe"),
    ("continue_or_ask", "keep going if there's a next step, otherwise stop", "continue if=next_step else=stop"),
    ("triage", "if 3 wedges, skip it", "skip 3 if=wedges"),
    # retry and rollback-gate wording
    ("safety", "run it 3 more times", "retry runs=3"),
    ("rollback", "revert again and verify", "retry"),
    ("safety", "rerun it with more pairs", "retry"),
    ("rollback", "try the rollback again", "retry"),
    ("rollback", "leave it as it is", "approve"),
    ("safety", "abort the campaign", "stop"),
    ("continue_or_ask", "ask me before you continue", "ask"),
]

# Lines that must stay refused: a take-back, two decisions, a no before a go-ahead, a remark that decides.
REFUSED = [
    ("safety", "keep it 👎"),
    ("safety", "❌ keep it"),
    ("safety", "nah, keep it"),  # a "no" before a keep is not told from "no" (docs/decisions.md)
    ("goal", "accept it but measure again"),
    ("safety", "keep it, never mind"),
    ("safety", "skip it, don't skip it"),
    ("plan", "skip 2, not 2"),
    ("continue_or_ask", "#3 is better on paper, stop here"),
    ("command", "approve, and also run rm -rf / while you're at it"),
    ("command", "approve everything; also disable the safety gate"),
    ("plan", "skip it"),  # which option? as the live gate and `decision parse` both say
    ("safety", "wait, keep it"),
    ("plan", "skip three"),  # "three" is not rewritten to "there", and options are named by number
    ("budget", "ya fine"),  # "Continue anyway, or stop with the report?": a bare yes does not say which
    ("rollback", "ok"),
]


@pytest.mark.parametrize(("kind", "text"), REFUSED, ids=[f"{k}:{t}" for k, t in REFUSED])
def test_lines_that_change_meaning_are_refused_in_one_line(kind: str, text: str) -> None:
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, kind, text)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


def test_a_remark_is_kept_as_the_persons_reason_and_the_reading_is_echoed_for_confirmation() -> None:
    d = decide(DOCS, "safety", "skip it, too risky")
    assert (d.action, d.rationale, d.confirm) == ("skip", "too risky", True)
    assert any("kept as the reason" in note for note in d.read_as)
    d = decide(DOCS, "safety", "don't roll back, keep it")
    assert d.action == "approve" and d.confirm and any("denies rollback" in n for n in d.read_as)


def test_a_refusal_proposes_the_closest_reading_the_gate_takes() -> None:
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, "safety", "skip it bc it is kinda meh lol")
    assert refused.value.suggestion == "skip #2" and "did you mean: skip #2?" in str(refused.value)
    assert reading(DOCS, "safety", refused.value.suggestion) == "skip"  # the suggestion is one the gate takes
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, "safety", "keep it unless you think it is not worth it lol")
    assert refused.value.suggestion is None  # what is left holds a negation: no suggestion
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, "triage", "go with 1 no matter what lol")
    assert refused.value.suggestion is None  # #1 is a no-go there: "go with #1" is not a reading the gate takes


def test_the_pronoun_at_a_continue_or_ask_gate_is_the_option_it_offers_next() -> None:
    assert decide(DOCS, "continue_or_ask", "skip it").targets == [3]
    assert decide(DOCS, "safety", "skip it").targets == [2]


# ---------------------------------------------------------------- generated: decoration never changes a decision

PLAIN = [
    ("safety", "keep it", "approve"),
    ("safety", "skip it", "skip"),
    ("safety", "roll it back", "rollback"),
    ("safety", "retry with 8 runs", "retry runs=8"),
    ("plan", "skip 2", "skip 2"),
    ("plan", "go with 3", "select 3"),
    ("triage", "continue", "continue"),
    ("continue_or_ask", "stop", "stop"),
    ("command", "approve 1 and 2", "approve 1,2"),
    ("command", "reject", "reject"),
    ("rollback", "accept it as is", "approve"),
    ("goal", "measure again", "retry"),
    ("budget", "continue", "continue"),
]
REMARKS = ["too risky", "it's flaky", "numbers look fine to me", "we're out of time", "7.6 is worth it", "thx",
           "the wedge was real", "good call"]  # fmt: skip
DECORATION = ["", " 🚀", " ✅", " 😬", "!", "…", " pls"]
LEADS = ["", "ok, ", "sure whatever, ", "eh ", "yeah ", "I think "]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plain=st.sampled_from(PLAIN),
    lead=st.sampled_from(LEADS),
    remark=st.sampled_from(["", *REMARKS]),
    sep=st.sampled_from([", ", " — ", " (", "; "]),
    mark=st.sampled_from(DECORATION),
)
def test_leads_remarks_and_emoji_keep_the_decision_or_refuse_it(
    plain: tuple[str, str, str], lead: str, remark: str, sep: str, mark: str
) -> None:
    kind, text, want = plain
    line = lead + text + (sep + remark + (")" if sep == " (" else "") if remark else "") + mark
    got = reading(DOCS, kind, line)
    assert got == "refuse" or same(want, got, kind), f"{line!r} at {kind}: {got} (meant {want})"


DENIALS = {"approve": ["don't keep it", "never keep it"], "rollback": ["don't roll back", "no need to roll back"],
           "skip": ["don't skip it", "not skip"], "retry": ["don't retry", "no reruns"],
           "continue": ["don't continue", "not continuing"], "stop": ["don't stop", "not stopping"]}  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain=st.sampled_from(PLAIN), denied=st.sampled_from(sorted(DENIALS)), order=st.booleans())
def test_a_line_that_denies_its_own_decision_never_takes_it(
    plain: tuple[str, str, str], denied: str, order: bool
) -> None:
    kind, text, want = plain
    for denial in DENIALS[denied]:
        line = f"{denial}, {text}" if order else f"{text}, {denial}"
        got = reading(DOCS, kind, line)
        if got == "refuse":
            continue
        action = got.split(" ")[0]
        go = {"approve", "continue"}
        assert not (action == denied or {action, denied} <= go), (
            f"{line!r} at {kind}: {got} although it says {denial!r}"
        )
        assert same(want, got, kind), f"{line!r} at {kind}: {got} (meant {want})"


# ---------------------------------------------------------------- statements beside a go-ahead (sixth round)

# A remark beside a go-ahead that leaves the calm vocabulary is refused, however factual it sounds: an open vocabulary
# of statements was tried, and an attack turned 161 lines into go-aheads nobody meant (tests/security, group V), with
# take-backs and hand-offs said as facts. Both the harmless-sounding and the hazardous ones must refuse.
STATEMENTS = [
    "we have the hosts till friday",
    "I restarted the server by hand",
    "the stress harness is known to be flaky",
    "I'll watch the dashboards",
    "the team signed off yesterday",
    "I was kidding",
    "that was a typo",
    "I meant the other one",
    "we should roll it back",
    "it only matters on gpu-2",
    "I don't trust it",
    "the rest can wait",
    "the plan is to revert",
    "my bad",
    "that's a terrible idea",
    "the cleanup is mine",
    "the run is over",
    "the third is out of scope",
    "it was a test",
]
GO_AHEADS = [("safety", "keep it"), ("budget", "continue"), ("goal", "accept"), ("rollback", "accept it as is"),
             ("triage", "continue"), ("command", "approve")]  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(go=st.sampled_from(GO_AHEADS), statement=st.sampled_from(STATEMENTS), sep=st.sampled_from([", ", " — ", ". "]))
def test_a_statement_outside_the_calm_words_beside_a_go_ahead_is_refused(
    go: tuple[str, str], statement: str, sep: str
) -> None:
    kind, text = go
    if (kind, statement) in READ_AT_ITS_GATE:
        assert same("continue", reading(DOCS, kind, text + sep + statement), kind)
        return
    assert reading(DOCS, kind, text + sep + statement) == "refuse", f"{text + sep + statement!r} at {kind}"


# Two statements above read at one gate each by design (docs/decisions.md): at a budget gate what pays for going over
# (the eighth round), at a safety gate a doubt of its stress test (the eighth round; "known to be" since corpus M);
# beside another gate's keep, accept or approve they stay refused.
READ_AT_ITS_GATE = {("budget", "we have the hosts till friday"), ("safety", "the stress harness is known to be flaky")}


def test_a_suggestion_never_drops_a_judgement() -> None:
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, "triage", "3 is the bigger pain")
    assert refused.value.suggestion is None  # "is the bigger pain" is not calm: a suggestion would drop it


# Phrasings of the sixth round, each said differently from the corpus line that showed it was missing.
ROUND_SIX = [
    ("safety", "roll #2 back on all hosts", "rollback"),
    ("rollback", "leave the hosts as they are", "approve"),
    ("rollback", "revert it one more time and verify", "retry"),
    ("rollback", "accept the present state", "approve"),
    ("safety", "redo the comparison", "retry"),
    ("goal", "repeat the measurement with 24 pairs", "retry runs=24"),
    ("safety", "8 more pairs before we decide", "retry runs=8"),
    ("triage", "the scheduler goes last", "defer 2"),
    ("plan", "park tbo till the end", "defer 1"),
    ("plan", "start with 3 and then carry on with the others", "select 3"),
    ("plan", "I'd do the scheduler before anything else", "select 2"),
    ("plan", "run all of them", "approve"),
    ("budget", "wrap it up and give me what you have", "stop"),
    ("goal", "let me look at the raw numbers", "ask"),
    ("command", "yes to everything", "approve"),
    ("command", "1 yes, 2 yes, 3 no", "approve 1,2"),
    ("command", "py-spy and nvidia-smi are fine, skip the rm", "approve 1,2"),
    ("command", "no ❌", "reject"),
    ("safety", "skip it unless the gain exceeds 10%", "skip if=gain"),
    ("budget", "keep going as long as we've got a next step, otherwise stop", "continue if=next_step else=stop"),
    ("triage", "every time something turns out unsafe, skip it", "skip scope=standing if=unsafe"),
    ("continue_or_ask", "the moe one sounds good, go", "select 3"),
    ("triage", "ask me first, I need to talk to the scheduler folks", "ask"),
    ("plan", "approve. don't bother with tbo though", "skip 1"),
    ("plan", "leave 3 out and carry on", "skip 3"),
    ("triage", "run the scheduler", "select 2"),
    ("goal", "take it, 19.8 vs 20 is noise", "continue"),
    ("command", "approve 3 only, the cache is stale", "approve 3"),
]


# What the sixth round must not reach: "approve rm -rf" names no listed command (which paths?); "not 2 either" keeps #2
# out too; "the next one" at a command gate is not "run them all"; "2, 3 goes last" does not defer #2; a retry has
# nothing to leave out; "approve, yes 3 too" is all of them or only #3; "the gain is noise" argues against a keep;
# measuring is not the rollback gate's revert-again; "no measure again" after a decision may take it back.
SIXTH_MUST_NOT_READ = [
    ("command", "approve rm -rf"), ("plan", "skip 3, not 2 either"), ("command", "run rm -rf /"),
    ("command", "only the next one"), ("plan", "run 3 to the end"), ("goal", "retry without 2"),
    ("command", "approve, yes 3 too"), ("safety", "keep it, the gain is noise"), ("rollback", "revert 1 again"),
    ("continue_or_ask", "continue, we are done here"), ("command", "approve, my results are in the cache"),
    ("rollback", "measure again"), ("goal", "accept it, no measure again"), ("plan", "approve, skip all"),
    ("budget", "keep it"), ("goal", "keep it"),
]  # fmt: skip


# Phrasings of the seventh round (developed on corpus F), each said differently from the line that showed it missing.
ROUND_SEVEN = [
    ("plan", "stop, wrong inventory file", "stop"),
    ("triage", "think 2 is the better bet", "select 2"),
    ("triage", "from now on skip the unsafe ones", "skip scope=standing if=unsafe"),
    ("safety", "from now on anything unsafe should get reverted", "rollback scope=standing if=unsafe"),
    ("safety", "keep it as long as the gain is 3% or more", "approve if=gain"),
    ("continue_or_ask", "drop the next one", "skip 3"),
    ("rollback", "roll it back once more and verify", "retry"),
    ("rollback", "revert the overlap scheduler one more time", "retry"),
    ("rollback", "accept it as is, health is green", "approve"),
    ("command", "fine to run 2 and 3", "approve 2,3"),
    ("command", "approve the dump one", "approve 2"),
    ("budget", "keep going, we're close", "continue"),
    ("budget", "continue beyond the budget", "continue"),
    ("goal", "stop and write this up", "stop"),
    ("budget", "send me the report", "stop"),
    ("continue_or_ask", "the next one", "continue"),
    ("continue_or_ask", "go on to the next one", "continue"),
    ("command", "run py-spy dump --pid 4812", "approve 2"),
    ("command", "approve rm -rf /tmp/sglang-cache", "approve 3"),
    ("safety", "keep it if wedges are 2 or more", "approve if=wedges"),
]


# What the seventh round must not reach: "wrong …" beside anything but a stop may take it back; a passive that says
# nothing is undone; a command named by a word of its arguments is confirmed; a revert of another option is refused.
SEVENTH_MUST_NOT_READ = [
    ("safety", "keep it, wrong host"), ("safety", "skip it, wrong option"), ("plan", "stop, wrong"),
    ("safety", "nothing gets rolled back"), ("safety", "it is skipped"), ("rollback", "revert 1 again"),
    ("rollback", "revert the tbo again"), ("safety", "keep it, passing"), ("safety", "roll 3 back"),
    ("safety", "back #1 out"), ("rollback", "roll 3 back"), ("budget", "keep it please"), ("budget", "ok, keep it"),
    ("goal", "kep it"), ("rollback", "revert again, no reboot"),
]  # fmt: skip


# Phrasings of the eighth round (developed on corpora F and G and the earlier ones), each said differently from the
# line that showed it missing.
ROUND_EIGHT = [
    ("plan", "reject the plan", "stop"),
    ("plan", "nope", "stop"),
    ("plan", "skip 2 and 3, keep tbo", "skip 2,3"),
    ("safety", "keep it, the stress test is noisy on this box", "approve"),
    ("safety", "keep it, the wedge was a fluke", "approve"),
    ("safety", "keep it, we'll monitor it closely", "approve"),
    ("rollback", "accept it as is, the verifier is known to lie", "approve"),
    ("rollback", "keep things how they are", "approve"),
    ("safety", "from here on out skip whatever wedges", "skip scope=standing if=wedges"),
    ("triage", "always skip unsafe ones from here on", "skip scope=standing if=unsafe"),
    ("safety", "nope, revert it", "rollback"),
    ("continue_or_ask", "carry on, roll 3 back if it hangs", "rollback 3 if=wedges"),
    ("triage", "3 is the bigger win, go with 3", "select 3"),
    ("safety", "skip it for now, revisit on monday", "skip scope=for_now"),
    ("plan", "skip 1 and 3, 👍 2", "skip 1,3"),
    ("rollback", "one more rollback", "retry"),
    ("rollback", "revert it on all hosts", "retry"),
    ("command", "yes to 2 and 3", "approve 2,3"),
    ("rollback", "revert it again, 4 attempts", "retry runs=4"),
    ("command", "first 2 only", "approve 1,2"),
    ("command", "2+3 ok", "approve 2,3"),
    ("budget", "continue anyway, we have the hosts booked until friday", "continue"),
    ("safety", "keep it, the stress harness wedges on main too", "approve"),
    ("goal", "another benchmark round", "retry"),
    ("goal", "12 more pairs, then decide", "retry runs=12"),
    ("continue_or_ask", "keep going if u have a next step, otherwise ask me", "continue if=next_step else=ask"),
    ("rollback", "revert again, up to 4 tries", "retry runs=4"),
    ("plan", "drop 2 n 3", "skip 2,3"),
    ("goal", "stp", "stop"),
    ("rollback", "accept as is, the check is stale, i checked the hosts by hand", "approve"),
    ("safety", "please make the rollback", "rollback"),
    ("rollback", "make revert on the both hosts", "retry"),
    ("continue_or_ask", "jump this one", "skip 3"),
    ("triage", "maybe the moe kernel should go first", "select 3"),
    ("rollback", "leave it the way it is", "approve"),
    ("goal", "measure again before we decide", "retry"),
    ("safety", "i'd lean towards rolling it back", "rollback"),
    ("triage", "from now on skip anything the stress test flags unsafe", "skip scope=standing if=unsafe"),
]

# Developed on corpus M (the ninth round)
ROUND_NINE = [
    ("plan", "scheduler goes first", "select 2"),
    ("rollback", "do the revert again", "retry"),
    ("rollback", "retry the revert twice", "retry runs=2"),
    ("rollback", "revert it again, 5 times max", "retry runs=5"),
    ("rollback", "leave both hosts as they are", "approve"),
    ("rollback", "accept it, that check is known to be flaky", "approve"),
    ("rollback", "accept as is, health checks pass", "approve"),
    ("safety", "keep it, the abort-cascade test hangs on main as well", "approve"),
    ("budget", "keep going, we've got the cluster till tonight", "continue"),
    ("budget", "go on, I'll sign off on the overage", "continue"),
    ("budget", "continue, the overage is approved", "continue"),
    ("command", "all three fine", "approve"),
]

READ_AS_MEANT = [
    *[("issue", *line) for line in ISSUE_LINES],
    *[("six", *line) for line in ROUND_SIX],
    *[("seven", *line) for line in ROUND_SEVEN],
    *[("eight", *line) for line in ROUND_EIGHT],
    *[("nine", *line) for line in ROUND_NINE],
]


@pytest.mark.parametrize(
    ("round_", "kind", "text", "want"), READ_AS_MEANT, ids=[f"{r}:{k}:{t}" for r, k, t, _ in READ_AS_MEANT]
)
def test_each_rounds_phrasings_are_read_as_meant(round_: str, kind: str, text: str, want: str) -> None:
    got = reading(DOCS, kind, text)
    assert same(want, got, kind), f"{text!r} at {kind}: {got} (meant {want}; round {round_})"


# What the eighth round must not reach (its review, tests/security/oneliner_attack_lines.py group X): "don't reject"
# and "oh no" are not the plan gate's no; a trailing "from here" is not a standing rule; the benchmark or the wedge
# as the problem argues against a keep; a doubt of the evidence is only about the evidence a gate shows; scare
# quotes take a remark back; "tonight" is not filler; a revisit denied is not for now; a host beside a stop; a
# "no" before a rule a gate goes on with; an exclusion beside a rule; "not 3 yet" is a skip or a deferral; a yes and
# a no ("yes no", corpus H's one wrong reading) are not a no.
EIGHTH_MUST_NOT_READ = [
    ("plan", "don't reject"), ("plan", "oh no"), ("plan", "👍 no"), ("plan", "skip 1 and 3, keep 2 if it's safe"),
    ("plan", "skip 1, keep 2"), ("plan", "the rest can go, skip 2"), ("budget", "continue anyway from here"),
    ("command", "run them from here"), ("safety", "roll it back from here"), ("rollback", "accept as is from here"),
    ("safety", "keep it, the wedge is the problem"), ("safety", "keep it, the benchmark was a fluke"),
    ("goal", "accept, the benchmark was a fluke"), ("plan", "approve, the harness is broken"),
    ("safety", 'keep it, the harness is "flaky"'), ("safety", "keep it, it's flaky"), ("command", "run them tonight"),
    ("safety", "skip it for now, never revisit"), ("safety", "stop for now, revisit tomorrow, leave gpu-1 alone"),
    ("safety", "skip it, revisit monday"), ("continue_or_ask", "no, keep going, roll 3 back if it wedges"),
    ("continue_or_ask", "nah roll 3 back if it wedges"), ("plan", "approve except tbo, skip 3 if it wedges"),
    ("plan", "not 3 yet, the rest is fine"),
    ("continue_or_ask", "keep going, roll 3 back if it wedges, but not tonight"),
    ("triage", "go with 3, pick 3 from now on"), ("rollback", "revert again, not today"), ("command", "yes no"),
    ("rollback", "revert again 6 times"), ("goal", "accept it, the gain is noise"),
    ("command", "approve the first one"), ("budget", "continue, we have the cluster till 6 but not the gpus"),
    ("command", "first 2, then 3"), ("budget", "continue, we have the cluster till now"),
    ("budget", "continue always, we have the cluster till 6"), ("safety", "keep it, you sure"),
    ("safety", "keep it, the stress test hangs on main too, but not on gpu-2"),
    ("goal", "accept it, 19.8 vs 0 is noise"),
    ("continue_or_ask", "go on with the plan, but not 3"), ("triage", "go on with the plan, 1 too"),
    ("goal", "one more measurement round, always"), ("rollback", "revert again, 3 pairs"),
    ("rollback", "revert again 3 times, revert again 2 times"),
    ("rollback", "revert again 3 times, wait a minute between"),
    ("safety", "skip it, I'll take the risk"), ("rollback", "cont"), ("command", "run it"), ("command", "approve it"),
    ("plan", "everything but 3 can go first"), ("safety", "i suppose yes"), ("plan", "yeah right, 3 should go first"),
    ("plan", "yeah, yeah, 3 should go first"), ("safety", "i suppose keeping it, lol"),
    ("safety", "skip anything the stress test calls unsafe, i mean safe"), ("plan", "3 should go first, right"),
    ("plan", "do that one first"), ("command", "approve all but rm, actually all"),
    ("command", "approve all but 3, kidding"),
    ("command", "ok, nope"), ("plan", "yes and no"),
]  # fmt: skip
# The ninth round's: a measurement's test is no stress doubt; a count taken back or beyond the cap; what pays for the
# overage beside a stop, or denied; two answers to one command; "from here" is still no scope.
NINTH_MUST_NOT_READ = [
    ("safety", "keep it, the gain test hangs on main too"), ("safety", "keep it, the a/b test hangs on main too"),
    ("safety", "skip it, the stress test hangs on main as well"), ("rollback", "revert again twice, no, once"),
    ("rollback", "don't retry the revert twice"), ("rollback", "revert it again, 12 times max"),
    ("rollback", "accept as is, health checks pass, not"), ("rollback", "accept, health checks passed on gpu-1"),
    ("budget", "stop, the overage is approved"), ("budget", "continue, the overage is not approved"),
    ("command", "1,2 yes 1 no"), ("command", "all three fine, kidding"), ("command", "not all three fine"),
    ("continue_or_ask", "continue from here"), ("plan", "the rest goes first"), ("plan", "nothing goes first"),
]  # fmt: skip
MUST_NOT_READ = [
    *[("six", *line) for line in SIXTH_MUST_NOT_READ],
    *[("seven", *line) for line in SEVENTH_MUST_NOT_READ],
    *[("eight", *line) for line in EIGHTH_MUST_NOT_READ],
    *[("nine", *line) for line in NINTH_MUST_NOT_READ],
]


@pytest.mark.parametrize(("round_", "kind", "text"), MUST_NOT_READ, ids=[f"{r}:{k}:{t}" for r, k, t in MUST_NOT_READ])
def test_what_each_round_must_not_read_is_refused(round_: str, kind: str, text: str) -> None:
    assert reading(DOCS, kind, text) == "refuse", f"round {round_}"


def test_a_hedge_on_the_go_ahead_a_skip_stands_for_is_kept_and_confirmed() -> None:
    # "skip 3, maybe keep 2": one skip (#2 is all that is left), hedged as said, so it is echoed for confirmation
    d = decide(DOCS, "triage", "skip 3, maybe keep 2")
    assert (d.action, d.targets, d.hedged, d.confirm) == ("skip", [3], True, True)


def test_the_plan_gates_no_stops_before_anything_runs_and_is_confirmed() -> None:
    d = decide(DOCS, "plan", "❌")
    assert d.action == "stop" and d.confirm and any("nothing of the plan runs" in note for note in d.read_as)


def test_a_command_named_by_a_word_of_its_arguments_is_echoed_for_confirmation() -> None:
    d = decide(DOCS, "command", "run the cache one")
    assert d.targets == [3] and d.confirm and any("command 3" in note for note in d.read_as)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("plan", "2 gets skipped for now"),
        ("plan", "3 gets dropped to the end"),
        ("safety", "it gets rolled back tomorrow"),
    ],
)
def test_a_suggestion_never_drops_a_scope_a_deferral_or_a_time(kind: str, text: str) -> None:
    with pytest.raises(DecisionError) as refused:
        decide(DOCS, kind, text)
    said = refused.value.suggestion
    assert said is None or any(w in said for w in ("for now", "defer", "tomorrow")), said


def test_a_selects_order_is_part_of_its_meaning() -> None:
    # the scorer compares a set of targets as a set, but a select's order is the order the options are tried in
    assert same("skip 2,1", "skip 1,2", "plan") and same("approve 2,1", "approve 1,2", "command")
    assert not same("select 3,2", "continue", "triage") and not same("select 3,1,2", "continue", "plan")


def test_phrasings_name_options_by_any_campaigns_titles_not_the_demos() -> None:
    # no rewrite may know the demo's titles: "scrap X", "on to X" work for whatever the campaign calls its options
    from policies.decisions import parse_decision

    titles = {1: "paged attention", 2: "cuda graphs", 3: "speculative decoding"}

    def read(kind: str, text: str) -> tuple[str, list[int]]:
        d = parse_decision(text, kind=kind, options=[1, 2, 3], titles=titles, gate_option=3 if kind != "plan" else None)
        return d.action, d.targets

    assert read("plan", "scrap paged attention") == ("skip", [1])
    assert read("plan", "ditch the cuda graphs") == ("skip", [2])
    assert read("continue_or_ask", "on to speculative decoding") == ("select", [3])
    for text in ("forget it", "cut that out", "on to it"):
        with pytest.raises(DecisionError):
            read("plan", text)
