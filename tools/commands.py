"""Command permission check, run before anything touches a host.

Claude-Code-style semantics: deny beats ask beats allow, first match wins within a class, and a
compound command is split so that every part must be allowed on its own, and an allow pattern's
`*` never reaches across words (except at its end), so `*python* x.py *` cannot allow
`bash -c 'anything' python x.py`. Parts are separated by
`;`, `&&`, `||`, `|`, `&` and newlines; the bodies of `$(…)`, backticks and `<(…)`/`>(…)` are
checked as commands of their own. A command that matches no pattern is `ask`, and so is output
redirected outside the working directory (`> /etc/…`, `> ~/…`, `> ../…`): an allow pattern for
`echo *` must not quietly allow `echo x > /etc/passwd`.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

CommandClass = Literal["allow", "ask", "deny"]

_SEPARATORS = {";", "&&", "||", "|", "&", ";;", "|&"}
_SUBST = re.compile(r"\$\(((?:[^()]|\([^()]*\))*)\)|`([^`]*)`|[<>]\(((?:[^()]|\([^()]*\))*)\)")
_REDIRECT_OUT = re.compile(r"(?:^|\s)\d*>>?\|?\s*([^\s;&|]+)")


class Verdict(BaseModel):
    klass: CommandClass
    part: str
    pattern: str | None
    reason: str = ""


def substitutions(command: str) -> list[str]:
    """Bodies of command and process substitutions, innermost ones included."""
    found = []
    for m in _SUBST.finditer(command):
        body = next(g for g in m.groups() if g is not None)
        found.append(body)
        found.extend(substitutions(body))
    return found


def split_compound(command: str) -> list[str]:
    """Split on shell control operators and newlines outside quotes (a conservative approximation)."""
    parts: list[str] = []
    for line in command.splitlines() or [command]:
        # fd duplications (`>&2`, `2<&-`) run nothing; `&>` is a redirection, not a background `&`.
        line = re.sub(r"\d*[<>]&(?:\d+|-)", " ", line)
        line = re.sub(r"&>>?", ">", line)
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            # shlex would drop everything after a `#` inside a word ("README#; touch x"); bash does not.
            lexer.commenters = ""
            tokens = list(lexer)
        except ValueError:
            # Unbalanced quotes: fall back to a plain split so nothing hides inside them.
            parts.extend(p for p in re.split(r"\s*(?:&&|\|\||;|\||&)\s*", line) if p.strip())
            continue
        current: list[str] = []
        for tok in tokens:
            if tok in _SEPARATORS:
                if current:
                    parts.append(" ".join(current))
                current = []
            else:
                current.append(tok)
        if current:
            parts.append(" ".join(current))
    return parts


def _match(part: str, patterns: Sequence[str]) -> str | None:
    """Deny and ask patterns match the part as one string: a `*` may cover anything (errs towards
    refusing and asking)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(part, pattern):
            return pattern
    return None


def allowed_words(words: Sequence[str], patterns: Sequence[str]) -> str | None:
    """The allow pattern that covers this argument list (word by word, as for allow rules)."""
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(list(words), pats):
            return pattern
    return None


def _allowed_by(part: str, patterns: Sequence[str]) -> str | None:
    """Allow patterns match word by word: a `*` stays inside its word, except in the last word,
    where it also covers the rest of the command. So `*python* simserve.py *` allows
    `/usr/bin/python3 simserve.py bench` but not `bash -c 'touch x' python simserve.py bench`
    (errs towards asking)."""
    words = part.split()
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(words, pats):
            return pattern
    return None


def _words_match(words: list[str], pats: list[str]) -> bool:
    for i, pat in enumerate(pats):
        last = i == len(pats) - 1
        if last and pat == "*":
            return True
        if i >= len(words):
            return False
        if last and pat.endswith("*"):
            return fnmatch.fnmatchcase(" ".join(words[i:]), pat)
        if not fnmatch.fnmatchcase(words[i], pat):
            return False
    return len(words) == len(pats)


def _escapes_workdir(part: str) -> str | None:
    for m in _REDIRECT_OUT.finditer(part):
        target = m.group(1).strip("'\"")
        if target.startswith(("/", "~", "$")) and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            return target
        if target == ".." or target.startswith("../") or "/../" in target:
            return target
    return None


def classify(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
    """The class of the whole command: the most restrictive class of any of its parts."""
    parts = split_compound(command) or [command.strip()]
    for body in substitutions(command):
        parts.extend(split_compound(body))
    for part in [command.strip(), *parts]:
        if (pattern := _match(part, deny)) is not None:
            return Verdict(klass="deny", part=part, pattern=pattern, reason=f"matches deny pattern {pattern!r}")
    for part in parts:
        if (pattern := _match(part, ask)) is not None:
            return Verdict(klass="ask", part=part, pattern=pattern, reason=f"matches ask pattern {pattern!r}")
        if _allowed_by(part, allow) is None:
            return Verdict(klass="ask", part=part, pattern=None, reason="matches no allow pattern")
        if (target := _escapes_workdir(part)) is not None:
            return Verdict(
                klass="ask", part=part, pattern=None, reason=f"writes outside the working directory: {target}"
            )
    return Verdict(klass="allow", part=command, pattern=None)
