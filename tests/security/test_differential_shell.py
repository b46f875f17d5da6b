"""What runs is what the policy checked — found by construction, proven by difference.

Thousands of generated commands (tests/shellfuzz.py) are classified under the `cautious` preset; every one it allows is
run as signoff runs it — its canonical form (tools/canonical/) in bash without profiles (tools/transport.py: SHELL) —
in an instrumented bash that records every simple command it executes. An oracle that shares no code with the
classifier checks each one. The same corpus run the ways signoff ran commands before (the text as written; under `sh`;
allow patterns matching a program by its basename) must find this round's bypasses: a test that could not find the
last holes could not find the next one either.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

import tools.commands as commands
import tools.commands.patterns as patterns
from tests.shellfuzz import Scratch, corpus, run_traced, violations
from tools.commands import analyse, classify
from tools.transport import SHELL

PRESET = Path(__file__).resolve().parents[2] / "policies" / "presets" / "cautious.yaml"
RULES = yaml.safe_load(PRESET.read_text())["commands"]
SEED = 20261205
COMMANDS = 8000
# The sweep stops at its budget: on a machine loaded by a whole suite it tries fewer commands, never fails for time.
BUDGET_S = 50.0
AT_LEAST = 2000

# This round's three bypasses, among the corpus (shapes the generator also makes on its own).
KNOWN = [
    'echo "x"\\ #; rm -rf ~/victim',
    "true \\ #; rm -rf ~",
    "echo $'\\'; rm -rf ~/victim; #'",
    "tools/cat README",
]

# How a command reached bash: (what the classifier is given, what runs it, the text it runs).
Way = Callable[[str], tuple[list[str], str] | None]


def _classified(text: str) -> tuple[str, set[str]] | None:
    verdict = classify(text, allow=RULES["allow"], ask=RULES["ask"], deny=RULES["deny"])
    if verdict.klass != "allow":
        return None
    assert verdict.runs is not None, text  # an allowed command always has a canonical form
    return verdict.runs, {s.argv[0].text for s in analyse(verdict.runs).simples if s.argv}


def signoff_today(text: str) -> tuple[list[str], str, set[str]] | None:
    found = _classified(text)
    return None if found is None else (list(SHELL), found[0], found[1])


def as_written(text: str) -> tuple[list[str], str, set[str]] | None:
    """Before: the text as written was run, not the tree the policy read."""
    found = _classified(text)
    return None if found is None else (list(SHELL), text, {s.argv[0].text for s in analyse(text).simples if s.argv})


def under_sh(text: str) -> tuple[list[str], str, set[str]] | None:
    """Before, over SSH: the text as written, run by `sh -c` (dash on Debian)."""
    found = as_written(text)
    return None if found is None else (["sh", "-c"], found[1], found[2])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("differential"))


def _sweep(
    scratch: Scratch,
    way: Callable[[str], tuple[list[str], str, set[str]] | None],
    texts: Iterator[str],
    *,
    first: bool = False,
) -> tuple[int, int, list[tuple[str, list[str]]]]:
    """(commands tried, allowed and run, the violations found with their command), within the time budget; `first`:
    stop at the first violation."""
    tried = ran = 0
    found: list[tuple[str, list[str]]] = []
    deadline = time.monotonic() + BUDGET_S
    for text in texts:
        if time.monotonic() > deadline:
            break
        tried += 1
        how = way(text)
        if how is None:
            continue
        interpreter, runs, seen = how
        ran += 1
        result = run_traced(scratch, interpreter, runs)
        bad = violations(scratch, result, seen)
        if bad:
            found.append((text, bad))
            if first:
                break
    return tried, ran, found


def test_every_command_bash_runs_is_one_the_policy_allowed(scratch: Scratch, capsys: pytest.CaptureFixture[str]):
    started = time.monotonic()
    tried, ran, found = _sweep(scratch, signoff_today, iter([*KNOWN, *corpus(SEED, COMMANDS)]))
    took = time.monotonic() - started
    with capsys.disabled():
        print(f"\ndifferential: {tried} commands classified, {ran} allowed and run in bash, {took:.1f} s")
    assert tried >= AT_LEAST, f"only {tried} commands in {BUDGET_S:.0f} s"
    assert ran > COMMANDS // 10, "the corpus should exercise the allow path, not only refusals"
    assert not found, "\n".join(f"{text!r}: {bad}" for text, bad in found[:10])


@pytest.mark.parametrize(
    ("way", "bypass"),
    [(as_written, KNOWN[0]), (as_written, KNOWN[1]), (under_sh, KNOWN[2])],
    ids=["escaped-blank-before-hash", "escaped-blank-true", "ansi-c-under-dash"],
)
def test_the_check_finds_this_rounds_bypasses_when_they_come_back(scratch: Scratch, way, bypass: str) -> None:
    """Each bypass is found by the oracle when signoff runs commands the way it did, and the generated corpus
    finds that family on its own (not only the known line)."""
    _, _, found = _sweep(scratch, way, iter([bypass]))
    assert found, f"{bypass!r} ran {way.__name__} without the oracle seeing it"
    _, _, found = _sweep(scratch, way, corpus(SEED, COMMANDS), first=True)
    assert found, f"the corpus found nothing run {way.__name__}"


def test_the_check_finds_a_program_matched_by_its_basename(
    scratch: Scratch, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Allow patterns that compared basenames (`cat *` allowing `tools/cat`) are found, by the known line and by the
    corpus's own impostors."""
    monkeypatch.setattr(patterns, "program_matches", lambda word, pattern: fnmatch.fnmatchcase(
        word.rsplit("/", 1)[-1], pattern.rsplit("/", 1)[-1]))  # fmt: skip
    # classify remembers verdicts: none made by the old matcher may outlive this test, nor one from before serve it
    commands.forget_verdicts()
    request.addfinalizer(commands.forget_verdicts)
    _, _, found = _sweep(scratch, signoff_today, iter([KNOWN[3]]))
    assert found and any("not a program the policy allows" in bad for bad in found[0][1])
    _, _, found = _sweep(scratch, signoff_today, corpus(SEED, COMMANDS), first=True)
    assert found and found[0][0] != KNOWN[3]
