"""What the rooms of the command check hand each other: a verdict, the words and simple commands the walk finds,
and the analysis it returns."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

CommandClass = Literal["allow", "ask", "deny"]


class Verdict(BaseModel):
    klass: CommandClass
    part: str
    pattern: str | None
    reason: str = ""
    # What a host's bash is given when the policy lets the command run: its canonical form (tools/canonical/),
    # which this verdict also judged. None when it cannot be written back faithfully: it is then never `allow`, and
    # a person who approves it approves it as written.
    runs: str | None = None
    # The command text this verdict is for: a cleared command runs under the verdict of its own text only.
    judged: str = ""


@dataclass
class Word:
    """One shell word: `text` is its value with quotes and escapes removed and expansions kept as
    source text (what patterns match); `skeleton` is the same with every expansion's value replaced by
    NUL, so text spelled by literal pieces alone (`'$'"("`) can be told from an expansion's."""

    text: str
    skeleton: str
    dynamic: bool = False  # some of its value is only known when bash runs it
    splits: bool = False  # it may become several words, or none (unquoted expansion, glob, braces)
    bare: str = "Q"  # the unquoted literal text alone (anything else is `Q`): where braces expand


@dataclass
class Simple:
    part: str
    assigns: list[Word]
    argv: list[Word]
    nested: bool  # reached through a wrapper, `eval` or `sh -c`: deny and ask patterns only


@dataclass
class Ctx:
    src: bytes
    depth: int
    nested: bool


@dataclass
class Analysis:
    simples: list[Simple] = field(default_factory=list)
    findings: list[tuple[str, str]] = field(default_factory=list)  # (part, why it must be asked)
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (part, why it cannot be run at all)
    # The tree may not be what bash reads (a syntax error, control characters, a here-document whose
    # end bash finds elsewhere, a word the grammar stretched over a blank): deny patterns are then also
    # matched against the text cut at every separator (`backstop`), erring towards refusing.
    suspect: bool = False
    reads_outside: bool = False  # a redirection reads a file outside the working directory
    writes: list[tuple[str, Word]] = field(default_factory=list)  # (part, redirect target)
    changes_directory: bool = False


BLANK_INSIDE = re.compile(r"(?<!\\)[ \t\n]")


def basename(word: str) -> str:
    return word.rsplit("/", 1)[-1] or word
