"""Everyday one-liners read at real gates: at least 95 % read right and not one wrong action — a refusal is
acceptable, acting on a misreading never is. Two corpora: tests/oneliner_corpus.py, written with the
parser, and tests/oneliner_heldout.py, written by someone who had not read it."""

from __future__ import annotations

import pytest

from agent.run.answers import check_targets
from policies.decisions import DecisionError, parse_decision
from policies.gates import ALLOWED, Decision, Gate
from tests.oneliner_corpus import ATTACKS, COMMANDS, CORPUS, GATE_OPTION, TITLES
from tests.oneliner_heldout import HELDOUT


def parsed(kind: str, text: str) -> Decision:
    return parse_decision(
        text,
        kind=kind,  # type: ignore[arg-type]
        options=sorted(TITLES),
        gate_option=GATE_OPTION.get(kind),
        titles=TITLES,
        commands=COMMANDS if kind == "command" else (),
    )


def reading(kind: str, text: str) -> str:
    try:
        d = parsed(kind, text)
        # What the gate itself then refuses ("skip which option?"), as at a real gate.
        check_targets(gate(kind), d)
    except DecisionError:
        return "refuse"
    targets = [] if d.targets == [GATE_OPTION.get(kind)] else d.targets  # "skip it" at #2's gate: #2
    return d.action + (" " + ",".join(map(str, targets)) if targets else "")


def gate(kind: str) -> Gate:
    status = {"1": "pending", "2": "current" if kind in GATE_OPTION else "pending", "3": "pending"}
    return Gate(
        id="g1",
        kind=kind,  # type: ignore[arg-type]
        option=GATE_OPTION.get(kind),
        question="",
        facts={},
        allowed=list(ALLOWED[kind]),  # type: ignore[index]
        options=sorted(TITLES),
        status=status,
    )


GO_AHEAD = {"approve", "continue"}  # the same answer at every gate that takes both


def same(want: str, got: str) -> bool:
    (a, _, x), (b, _, y) = want.partition(" "), got.partition(" ")
    return want == got or (x == y and {a, b} <= GO_AHEAD)


CORPORA = {"corpus": CORPUS, "held-out": HELDOUT}


@pytest.mark.parametrize(("kind", "text", "want"), ATTACKS, ids=[f"{k}:{t[:40]}" for k, t, _ in ATTACKS])
def test_what_an_attack_review_found_is_refused_or_read_right(kind: str, text: str, want: str) -> None:
    assert reading(kind, text) == want


@pytest.mark.parametrize("name", CORPORA)
def test_the_corpus_is_big_and_covers_every_gate_kind(name: str) -> None:
    corpus = CORPORA[name]
    assert len(corpus) >= 150
    assert {k for k, _, _ in corpus} == set(ALLOWED)
    assert sum(1 for *_, want in corpus if want == "refuse") >= 35
    assert len(CORPUS) + len(HELDOUT) >= 400


@pytest.mark.parametrize("name", CORPORA)
def test_at_least_95_percent_are_read_right_and_none_is_a_wrong_action(name: str) -> None:
    got = [(kind, text, want, reading(kind, text)) for kind, text, want in CORPORA[name]]
    wrong = [g for g in got if g[3] != "refuse" and not same(g[2], g[3])]
    missed = [g for g in got if g[3] == "refuse" and g[2] != "refuse"]
    right = len(got) - len(wrong) - len(missed)
    assert not wrong, "wrong actions:\n" + "\n".join(f"  {k}: {t!r} → {r} (meant {w})" for k, t, w, r in wrong)
    assert right / len(got) >= 0.95, f"{right}/{len(got)} read right; refused:\n" + "\n".join(
        f"  {k}: {t!r} (meant {w})" for k, t, w, _ in missed
    )


def test_every_reading_beyond_the_core_grammar_says_how_it_was_read_and_asks_to_confirm() -> None:
    accepted = [parsed(k, t) for k, t, w in CORPUS + HELDOUT if w != "refuse" and reading(k, t) != "refuse"]
    tolerant = [d for d in accepted if d.read_as]
    assert len(tolerant) >= 100  # the corpora do exercise the tolerant reading
    unconfirmed = [(d.raw, d.read_as) for d in tolerant if not d.confirm]
    assert not unconfirmed, unconfirmed
