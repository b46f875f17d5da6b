"""The reader's list of English words (policies/english.txt) is pyspellchecker's, derived once: a real word said
("pain", "risky") is never corrected to one of the grammar's words, and loading the list is cheap."""

from __future__ import annotations

from pathlib import Path

from spellchecker import SpellChecker

from policies import tolerant

LIST = Path(tolerant.__file__).parent / "english.txt"
COMMON_ENOUGH = 1_000  # used at least this often in pyspellchecker's English corpus: a word, not a typo


HEADER = """\
# English words used at least 1,000 times in pyspellchecker's English corpus, one per line: a word here is a word
# said, never a typo of the grammar's (policies/tolerant.py). Written by `python -m tests.unit.test_english_words`,
# and checked against pyspellchecker by that test.
"""


def common_words() -> list[str]:
    frequencies = SpellChecker(distance=1).word_frequency.dictionary
    return sorted(w for w, n in frequencies.items() if n >= COMMON_ENOUGH)


def test_the_shipped_word_list_is_pyspellcheckers_common_words() -> None:
    shipped = [line for line in LIST.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert shipped == common_words(), (
        "policies/english.txt differs from pyspellchecker's words used at least 1,000 times; "
        "`python -m tests.unit.test_english_words` writes it again"
    )


def test_a_real_word_is_kept_and_a_typo_is_corrected() -> None:
    vocabulary = ["gain", "skip", "keep", "defer"]
    assert tolerant.correct("pain", vocabulary).text == "pain"  # a word said, not a typo of "gain"
    assert tolerant.correct("kep it", vocabulary).text == "keep it"  # "kep" is used 50 times: a typo
    assert tolerant.correct("deffer it", vocabulary).text == "defer it"


if __name__ == "__main__":
    LIST.write_text(HEADER + "\n".join(common_words()) + "\n", encoding="utf-8")
