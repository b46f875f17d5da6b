"""Everyday one-liners read at real gates: not one wrong action — a refusal is acceptable, acting on a misreading
never is — and at least a floor of the clear lines read right. A reading is what the live gate does with the line
(tests/oneliner_reading.py). The corpora:

- tests/oneliner_corpus.py, written with the parser, and tests/oneliner_heldout.py, written by someone who had not
  read it: 95 %.
- tests/oneliner_docs_a.py, written from docs/decisions.md alone before the clause reader (issue 35): 95 %.
- tests/oneliner_docs_b.py and tests/oneliner_docs_c.py, written the same way later, each scored once blind (B: 142 of
  263 clear lines, 7 wrong; C: 175 of 258, 7 wrong) and then used to develop the reader: 90 % and 91 %.
- tests/oneliner_docs_d.py, written the same way, sealed until the reader was frozen and scored once (199 of 264
  clear lines, 4 wrong), then developed on: 91 %.
- tests/oneliner_docs_e.py, written the same way, sealed until the reader was frozen again and scored once: 186 of
  254 clear lines, 1 wrong; then developed on in the sixth round: 87 %.
- tests/oneliner_docs_f.py, written the same way after the sixth round, sealed until the reader was frozen and scored
  once: 178 of 206 clear lines read, 20 readings off the writer's labels — 16 of them the same answer in another
  notation (a command gate's "approve" is "approve 1,2,3"; the rollback gate's revert-again is its retry, as
  tests/oneliner_reading.py now says), 2 labels of "refuse" on lines the gate reads as its own go-ahead ("do 2" at a
  triage whose next option is #2, "try again" at the rollback gate), relabelled with the reason, and 2 wrong actions,
  fixed ("measure again" at the rollback gate, "accept it, no measure again"); then developed on in the seventh
  round: 94 %.
- tests/oneliner_docs_g.py, written the same way after the seventh round, sealed until the reader was frozen and
  scored once: 174 of 206 clear lines read, 7 readings off the writer's labels — 1 the same answer in another
  order ("run 2 and 1"), 3 labels of "refuse" relabelled with the reason ("continue" at the rollback and goal gates,
  which list it; "3 looks juicy but stop"), 3 wrong actions fixed ("approve, skip all"; "keep it" at the budget and
  goal gates). Its floor is that honest reach: 84 %, short of the issue's 90 %.
- tests/oneliner_docs_h.py, written the same way at the start of the eighth round, sealed until the reader was frozen
  after it and scored once: 199 of 215 clear lines read right (92.6 %), none read as another decision; of the 129
  lines written "refuse", 2 were read: "maybe skip 1" (a hedged skip, confirmed, as documented: relabelled) and
  "yes no" at the command gate (read as reject: nothing runs, but the line says both; fixed, now refused). Then
  developed on: 94 %.
- tests/oneliner_docs_i.py, written the same way and at the same time as H by another helper, sealed until the reader
  was frozen after H's fixes and scored once: 187 of 205 clear lines read right (91.2 %), none read as another
  decision; of the 135 lines written "refuse", 2 were read: "maybe just nvidia-smi" (a hedged approve of command 1,
  confirmed, as documented: relabelled) and "yes and no" at the plan gate (read as the plan gate's no, a stop,
  confirmed; fixed, now refused: a yes and a no). Its floor is that blind reach: 91 %.
- tests/oneliner_docs_j.py, written the same way after I was scored (from the docs as the eighth round left them),
  sealed until the reader was frozen and scored once: 182 of 208 clear lines read right (87.5 %); of the lines
  written "refuse", 3 were read: "do 2" at triage and "continue" at the rollback gate (relabelled, as the same lines
  in corpora F and G), and "accept it, the gain is noise" at the goal gate, read as accepting (a wrong action: the
  goal gate's "noise" word, round six's, was calm whatever was called noise; now only a miss "vs" the target is).
  Then the rollback gate's "revert again 3 times", three writers' line: 89 %.
- tests/oneliner_docs_k.py, written the same way after J was scored but in five voices (a terse on-call SRE, a chatty
  lead who explains at length, a cautious reviewer, someone on a phone, a non-native speaker), sealed until the
  reader was frozen after the round's second review and scored once: 138 of 221 clear lines read right (62.4 %).
  The reader reads terse chat; long explanations ("I'd rather start with the kernel occupancy work because that's
  where the profile says the time goes"), non-native constructions ("make revert on the both hosts", "we make first
  the MoE kernel") and phone shorthand are mostly refused. Of the lines written "refuse", 4 were read: "measure again"
  at the safety gate and "continue" at the rollback gate (relabelled: both gates list them), "run it" at the command
  gate with three commands listed (read as all three, a wrong action: now refused) and "revert again, up to 5 tries"
  read as one revert (the count dropped: now read). Then developed on (shorthand, hedges before a gerund, "X should
  go first", non-native "make revert", "the way it is"; its review is group Z of the attack lines): 156 of 223, 69.96 %.
- tests/oneliner_docs_l.py, written like K after the reader was developed on K, sealed and scored once: 137 of 218
  clear lines read right (62.8 %), as K: what K taught did not carry to new explanations and constructions. Of the
  lines written "refuse", 2 were read, both fixed: "do that one first" at the plan gate as continue (no option is
  "that one" there) and "approve all but rm, actually all" as commands 1 and 2 (text after "all but X" was dropped
  unread; it is read now, and "actually …" corrects the line). One label relabelled ("everything except the MoE
  one" skips #3). Its floor is that blind reach: 62 %.
- tests/oneliner_docs_m.py, written like H–J (one voice) after L was scored, sealed until the reader was frozen and
  scored once: 186 of 212 clear lines read right (87.7 %), none read as another decision or acted on wrongly. Of the
  129 lines written "refuse", 3 were read, all relabelled with the reason: "continue" at the rollback gate (the gate
  lists it, as in F, G, J and K), "let me check with finance" at the budget gate (read as ask: the gate waits for a
  person) and "keep it unless it's unsafe" at the unsafe option's safety gate (a rule, false there: the gate stays
  open and says so). Then developed on in the ninth round ("the scheduler goes first", counts at the rollback gate
  said "twice" or "5 times max", reasons for going over a budget and for accepting a rollback): 93 %.
- tests/oneliner_docs_n.py, written like M (one voice, from the docs as the ninth round left them) while that round
  was under way, sealed until the reader was frozen after it and scored once: 217 of 224 clear lines read right
  (96.9 %), no line read as another decision or acted on wrongly, and all 130 lines written "refuse" refused. The 7
  refused: "skip the sched, go straight to moe", "sounds like moe is the bigger win" (triage), "keep 2, stress
  harness is flaky on these boxes", "skip it for now, revisit next week", "revert 2 on gpu-1 and gpu-2" (safety),
  "accept as is, that check lies half the time" (rollback), "no to the rm -rf" (command). Never tuned to: its floor
  is that blind reach, 217/224.
"""

from __future__ import annotations

import importlib

import pytest

from policies.gates import ALLOWED
from tests.oneliner_corpus import ATTACKS
from tests.oneliner_reading import DOCS, FIRST, Demo, decide, reading, same, score

CORPORA: dict[str, tuple[str, str, Demo, float]] = {
    "corpus": ("tests.oneliner_corpus", "CORPUS", FIRST, 0.95),
    "held-out": ("tests.oneliner_heldout", "HELDOUT", FIRST, 0.95),
    "docs-a": ("tests.oneliner_docs_a", "DOCS_A", DOCS, 0.95),
    "docs-b": ("tests.oneliner_docs_b", "DOCS_B", DOCS, 0.90),
    "docs-c": ("tests.oneliner_docs_c", "DOCS_C", DOCS, 0.91),
    "docs-d": ("tests.oneliner_docs_d", "DOCS_D", DOCS, 0.91),
    "docs-e": ("tests.oneliner_docs_e", "DOCS_E", DOCS, 0.87),
    "docs-f": ("tests.oneliner_docs_f", "DOCS_F", DOCS, 0.94),
    "docs-g": ("tests.oneliner_docs_g", "DOCS_G", DOCS, 0.84),
    "docs-h": ("tests.oneliner_docs_h", "DOCS_H", DOCS, 0.94),
    "docs-i": ("tests.oneliner_docs_i", "DOCS_I", DOCS, 0.91),
    "docs-j": ("tests.oneliner_docs_j", "DOCS_J", DOCS, 0.88),
    "docs-k": ("tests.oneliner_docs_k", "DOCS_K", DOCS, 0.69),
    "docs-l": ("tests.oneliner_docs_l", "DOCS_L", DOCS, 0.62),
    "docs-m": ("tests.oneliner_docs_m", "DOCS_M", DOCS, 0.93),
    "docs-n": ("tests.oneliner_docs_n", "DOCS_N", DOCS, 0.968),
}


def lines(name: str) -> list[tuple[str, str, str]]:
    module, attr, *_ = CORPORA[name]
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize(("kind", "text", "want"), ATTACKS, ids=[f"{k}:{t[:40]}" for k, t, _ in ATTACKS])
def test_what_an_attack_review_found_is_refused_or_read_right(kind: str, text: str, want: str) -> None:
    assert same(want, reading(FIRST, kind, text), kind)


# The gate kinds there were when the corpora were written.
WRITTEN_FOR = ("plan", "triage", "safety", "continue_or_ask", "rollback", "command", "budget", "goal")


@pytest.mark.parametrize("name", CORPORA)
def test_the_corpus_is_big_and_covers_every_gate_kind(name: str) -> None:
    corpus = lines(name)
    assert len(corpus) >= (300 if name.startswith("docs") else 150)
    # every kind there was when they were written; kinds that came after them (brain_unavailable: its answers are read
    # in tests/unit/test_brain_gate_answers.py) have their own
    assert {k for k, _, _ in corpus} == set(WRITTEN_FOR)
    assert set(WRITTEN_FOR) <= set(ALLOWED)
    assert sum(1 for *_, want in corpus if want == "refuse") >= 35


@pytest.mark.parametrize("name", CORPORA)
def test_the_clear_lines_are_read_right_and_none_is_a_wrong_action(name: str) -> None:
    *_, demo, floor = CORPORA[name]
    corpus = lines(name)
    right, wrong, missed = score(demo, corpus)
    clear = sum(1 for *_, want in corpus if want != "refuse")
    assert not wrong, "wrong actions:\n" + "\n".join(f"  {k}: {t!r} → {r} (meant {w})" for k, t, w, r in wrong)
    assert (clear - len(missed)) / clear >= floor, (
        f"{clear - len(missed)}/{clear} clear lines read right; refused:\n"
        + ("\n".join(f"  {k}: {t!r} (meant {w})" for k, t, w, _ in missed))
    )
    assert right / len(corpus) >= floor - 0.05


def test_every_reading_beyond_the_core_grammar_says_how_it_was_read_and_asks_to_confirm() -> None:
    said = [(FIRST, k, t) for k, t, w in lines("corpus") + lines("held-out") if w != "refuse"]
    said += [(DOCS, k, t) for k, t, w in lines("docs-a") if w != "refuse"]
    accepted = [decide(demo, k, t) for demo, k, t in said if reading(demo, k, t) != "refuse"]
    tolerant = [d for d in accepted if d.read_as]
    assert len(tolerant) >= 150  # the corpora do exercise the tolerant and the clause reading
    unconfirmed = [(d.raw, d.read_as) for d in tolerant if not d.confirm]
    assert not unconfirmed, unconfirmed
