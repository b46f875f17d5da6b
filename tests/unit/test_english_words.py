"""The reader's list of English words (policies/english.txt) is pyspellchecker's, derived once: a real word said
("pain", "risky") is never corrected to one of the grammar's words, and loading the list is cheap."""

from __future__ import annotations

from pathlib import Path

from spellchecker import SpellChecker

from policies import tolerant

LIST = Path(tolerant.__file__).parent / "english.txt"
COMMON_ENOUGH = 1_000  # used at least this often in pyspellchecker's English corpus: a word, not a typo


def test_the_shipped_word_list_is_pyspellcheckers_common_words() -> None:
    frequencies = SpellChecker(distance=1).word_frequency.dictionary
    expected = sorted(w for w, n in frequencies.items() if n >= COMMON_ENOUGH)
    shipped = [line for line in LIST.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert shipped == expected, (
        "policies/english.txt differs from pyspellchecker's words used at least 1,000 times; regenerate it from "
        "SpellChecker(distance=1).word_frequency.dictionary (the header says how)"
    )


def test_a_real_word_is_kept_and_a_typo_is_corrected() -> None:
    vocabulary = ["gain", "skip", "keep", "defer"]
    assert tolerant.correct("pain", vocabulary).text == "pain"  # a word said, not a typo of "gain"
    assert tolerant.correct("kep it", vocabulary).text == "keep it"  # "kep" is used 50 times: a typo
    assert tolerant.correct("deffer it", vocabulary).text == "defer it"
