"""Command permission check, run before anything touches a host.

Claude-Code-style semantics: deny beats ask beats allow, first match wins within a class, and a
compound command (`a && b; c | d`) is split so that every part must be allowed on its own.
A command that matches no pattern is `ask`: an unlisted command never runs unseen.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

CommandClass = Literal["allow", "ask", "deny"]

_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")


class Verdict(BaseModel):
    klass: CommandClass
    part: str
    pattern: str | None


def split_compound(command: str) -> list[str]:
    """Split on shell control operators outside quotes (a conservative approximation)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        # Unbalanced quotes: fall back to a plain split so nothing hides inside them.
        return [p for p in _SPLIT.split(command) if p.strip()]
    parts: list[list[str]] = [[]]
    for tok in tokens:
        if tok in {";", "&&", "||", "|", "&", ";;"}:
            parts.append([])
        else:
            parts[-1].append(tok)
    return [" ".join(p) for p in parts if p]


def _match(part: str, patterns: Sequence[str]) -> str | None:
    for pattern in patterns:
        if fnmatch.fnmatchcase(part, pattern):
            return pattern
    return None


def classify(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
    """The class of the whole command: the most restrictive class of any of its parts."""
    parts = split_compound(command) or [command.strip()]
    for part in [command.strip(), *parts]:
        if (pattern := _match(part, deny)) is not None:
            return Verdict(klass="deny", part=part, pattern=pattern)
    for part in parts:
        if (pattern := _match(part, ask)) is not None:
            return Verdict(klass="ask", part=part, pattern=pattern)
        if _match(part, allow) is None:
            return Verdict(klass="ask", part=part, pattern=None)
    return Verdict(klass="allow", part=command, pattern=None)
