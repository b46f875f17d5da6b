"""Matching a simple command against the policy's patterns: renderings, normal forms, shapes, program words,
and the separator-cut backstop."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tools.commands.model import Simple, Word, basename
from tools.commands.vocabulary import FLAG_ALIASES, HARMLESS_TARGETS


def _normal_forms(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """(`cmd -f -r --long operands`, `cmd -fr --long operands`) with the long options, and the same
    without them: the basename of the command word, short flags split, de-duplicated and sorted (so
    `-rf`, `-fr`, `-r -f` and `-R -f` are one spelling), `--` dropped."""
    if not words:
        return [], []
    cmd = basename(words[0])
    aliases = FLAG_ALIASES.get(cmd, {})
    flags: set[str] = set()
    longs: list[str] = []
    operands: list[str] = []
    ended = False
    for w in words[1:]:
        if ended:
            operands.append(w)
        elif w == "--":
            ended = True
        elif w in aliases:
            flags.add(aliases[w])
        elif len(w) > 1 and w[0] == "-" and w[1] != "-" and w[1:].isalnum():
            flags.update(aliases.get(c, c) for c in w[1:])
        elif w.startswith("--") and not any(c in w for c in "*?["):
            longs.append(w)
        else:
            operands.append(w)
    split = [f"-{c}" for c in sorted(flags)]
    joined = ["-" + "".join(sorted(flags))] if flags else []
    with_long = [" ".join([cmd, *split, *longs, *operands]), " ".join([cmd, *joined, *longs, *operands])]
    without = [" ".join([cmd, *split, *operands]), " ".join([cmd, *joined, *operands])]
    return with_long, without


def renderings_of(simple: Simple) -> tuple[list[str], list[str], list[str]]:
    """(as written, normalized with long options, normalized without them)."""
    argv = [w.text for w in simple.argv]
    assigns = [w.text for w in simple.assigns]
    plain = [simple.part, " ".join(argv), " ".join([*assigns, *argv])]
    if argv:
        plain.append(" ".join([basename(argv[0]), *argv[1:]]))
    with_long, without = _normal_forms(argv)
    return plain, with_long, without


@dataclass(frozen=True)
class _Patterns:
    """Deny or ask patterns compiled once: for each rendering of a command, one regex that is the
    alternation of every pattern's form for it (one match per rendering, not one per pattern)."""

    patterns: tuple[str, ...]
    forms: tuple[tuple[str, tuple[str, ...], tuple[str, ...] | None], ...]
    plain: re.Pattern[str] | None
    long: tuple[re.Pattern[str] | None, ...]
    without: tuple[re.Pattern[str] | None, ...]


def _alternation(globs: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) if globs else None


@functools.lru_cache(maxsize=64)
def compile_patterns(patterns: tuple[str, ...]) -> _Patterns:
    forms: list[tuple[str, tuple[str, ...], tuple[str, ...] | None]] = []
    for pattern in patterns:
        p_long, p_without = _normal_forms(pattern.split())
        # A long option the pattern does not mention (`--no-preserve-root`) must not get a command
        # past it; a pattern that does mention one (`git push --force*`) is matched with it only.
        forms.append((pattern, tuple(p_long), tuple(p_without) if p_long == p_without else None))
    return _Patterns(
        patterns,
        tuple(forms),
        _alternation(patterns),
        tuple(_alternation([f[1][k] for f in forms if len(f[1]) > k]) for k in range(2)),
        tuple(_alternation([f[2][k] for f in forms if f[2] is not None and len(f[2]) > k]) for k in range(2)),
    )


def matching(renderings: tuple[list[str], list[str], list[str]], compiled: _Patterns) -> str | None:
    plain, with_long, without = renderings
    hit = compiled.plain is not None and any(compiled.plain.match(r) for r in plain)
    hit = hit or any(rx is not None and rx.match(r) for rx, r in zip(compiled.long, with_long, strict=False))
    hit = hit or any(rx is not None and rx.match(r) for rx, r in zip(compiled.without, without, strict=False))
    if not hit:
        return None
    for pattern, p_long, p_without in compiled.forms:  # which one: only once something matched
        if any(fnmatch.fnmatchcase(r, pattern) for r in plain):
            return pattern
        if any(fnmatch.fnmatchcase(r, p) for r, p in zip(with_long, p_long, strict=False)):
            return pattern
        if p_without is not None and any(fnmatch.fnmatchcase(r, p) for r, p in zip(without, p_without, strict=False)):
            return pattern
    return None


@dataclass(frozen=True)
class _Shape:
    """A command, or a deny/ask pattern, as the two are compared word by word: the program's basename,
    its short flags as a set, its long options and its operands in order. A pattern matches a command
    that has at least its flags and long options and its operands in the same order among others, so
    `rm -rfv /` and `rm -rf build /` are `rm -rf /*`. A command's `unknown` operands are only known when
    bash runs it (an expansion, what xargs reads, a path after a `cd`): they may be anything, a flag too."""

    cmd: str
    flags: frozenset[str]
    longs: tuple[str, ...]
    operands: tuple[str, ...]
    unknown: tuple[bool, ...]


def _shape(words: Sequence[str], unknown: Sequence[bool] | None = None) -> _Shape | None:
    if not words:
        return None
    cmd = basename(words[0])
    aliases = FLAG_ALIASES.get(cmd, {})
    flags: set[str] = set()
    longs: list[str] = []
    operands: list[str] = []
    unknowns: list[bool] = []
    ended = False
    for i, w in enumerate(words[1:], 1):
        if unknown is not None and unknown[i]:
            operands.append(w)
            unknowns.append(True)
            continue
        if ended or w == "-" or not w.startswith("-"):
            operands.append(w)
            unknowns.append(False)
        elif w == "--":
            ended = True
        elif w.startswith("--"):
            alias = aliases.get(w, w)
            (longs.append(alias) if alias.startswith("--") else flags.add(alias))
        else:
            for c in w[1:]:
                alias = aliases.get(c, c)
                (longs.append(alias) if alias.startswith("--") else flags.add(alias))
    return _Shape(cmd, frozenset(flags), tuple(longs), tuple(operands), tuple(unknowns))


@functools.lru_cache(maxsize=1024)
def _pattern_shape(pattern: str) -> _Shape | None:
    return _shape(pattern.split())


def _shape_match(command: _Shape, pattern: _Shape) -> Literal["yes", "maybe"] | None:
    """Whether the command is what the pattern describes: yes, maybe (only if an unknown word turns
    out to be the right one), or no (None)."""
    if not fnmatch.fnmatchcase(command.cmd, pattern.cmd):
        return None
    open_ended = any(command.unknown)
    maybe = False
    if not pattern.flags <= command.flags:
        if not open_ended:
            return None
        maybe = True
    for want in pattern.longs:
        if not any(fnmatch.fnmatchcase(have, want) for have in command.longs):
            if not open_ended:
                return None
            maybe = True
    at = 0
    for want in pattern.operands:
        while at < len(command.operands):
            have, unknown = command.operands[at], command.unknown[at]
            at += 1
            if unknown:
                maybe = True
                break
            if fnmatch.fnmatchcase(have, want):
                break
        else:
            return None
    return "maybe" if maybe else "yes"


def structured(simple: Simple, patterns: Sequence[str], after_cd: bool) -> tuple[str, bool] | None:
    """The first pattern the command's shape matches, and whether for certain (False: only maybe)."""
    argv = simple.argv
    if not argv or argv[0].dynamic:
        return None
    # After a `cd`, a relative path may be anywhere: it is as unknown as an expansion.
    texts = [argv[0].text]
    unknown = [False]
    for w in argv[1:]:
        text, climbs = _normal_path(w.text)
        texts.append(text)
        unknown.append(w.dynamic or w.splits or climbs or (after_cd and _relative_path(w.text)))
    shape = _shape(texts, unknown)
    if shape is None:
        return None
    found: tuple[str, bool] | None = None
    for pattern in patterns:
        p = _pattern_shape(pattern)
        if p is None:
            continue
        verdict = _shape_match(shape, p)
        if verdict == "yes":
            return pattern, True
        if verdict == "maybe" and found is None:
            found = (pattern, False)
    return found


# Files an interpreter or the dynamic linker loads from the working directory, or a shell runs.
CODE_FILE = re.compile(
    r"\.(py|pyc|pth|pyz|so|sh|bash|zsh|pl|pm|rb|js|mjs|cjs|lua|php|r|jl)$|(^|/)(sitecustomize|usercustomize)\b",
    re.IGNORECASE,
)


def _normal_path(word: str) -> tuple[str, bool]:
    """A path operand as deny patterns should see it (`/tmp//x/./y` is `/tmp/x/y`), and whether it is
    unknown here: a relative path that climbs out of the working directory goes who knows where."""
    if ("/" not in word and word != "..") or word.startswith("~"):
        return word, False
    absolute = word.startswith("/")
    parts: list[str] = []
    for segment in word.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            elif not absolute:
                return word, True
            continue
        parts.append(segment)
    return ("/" if absolute else "") + "/".join(parts) + ("/" if word.endswith("/") and parts else ""), False


def _relative_path(word: str) -> bool:
    return not word.startswith(("/", "~", "-")) and word not in (".", "")


# Where a command may begin, read crudely: what the backstop cuts the text at.
_SEPARATORS = re.compile(r"[;&|\n(){}`<>\x00-\x1f]|\$\(")


_QUOTING = re.compile(r"[\"'\\]")


def backstop(text: str) -> list[Simple]:
    """The text cut at every separator and stripped of quotes, each piece a command: for deny
    patterns only, when the tree may not be what bash reads (errs towards refusing: `echo "; rm -rf /"`
    in a command that does not parse is refused)."""
    out: list[Simple] = []
    for piece in _SEPARATORS.split(text):
        words = [_QUOTING.sub("", w) for w in piece.split()]
        while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", words[0]):
            words.pop(0)
        if words:
            out.append(Simple(piece.strip()[:200], [], [Word(w, w) for w in words], True))
    return out


def part_matches(part: str, patterns: Sequence[str]) -> str | None:
    """Deny and ask patterns match the part as one string: a `*` may cover anything (errs towards
    refusing and asking)."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(part, pattern):
            return pattern
    return None


def allowed_words(words: Sequence[str], patterns: Sequence[str]) -> str | None:
    """The allow pattern that covers this argument list (word by word, as for allow rules)."""
    slots = [_Slot(w, "cmd" if i == 0 else "arg") for i, w in enumerate(words)]
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(slots, pats):
            return pattern
    return None


@dataclass(frozen=True)
class _Slot:
    """One word as allow patterns see it: its text, what it is, whether it may become several, and whether its
    value is only known when bash runs it (`"$(…)"`, `"$x"`: its source text says nothing of what it will be)."""

    text: str
    kind: Literal["assign", "cmd", "arg"]
    splits: bool = False
    dynamic: bool = False

    def matches(self, pat: str) -> bool:
        if self.kind == "assign" and "=" not in pat:
            return False  # `A=python B=simserve.py touch M` is not `*python* *simserve.py *`
        if self.kind == "arg" and self.text.startswith("-") and not pat.startswith("-") and pat != "*":
            # `*simserve.py` names a script, never `-c<code>#simserve.py`
            return False
        if self.kind == "cmd":
            return program_matches(self.text, pat)
        return fnmatch.fnmatchcase(self.text, pat)


def program_matches(word: str, pattern: str) -> bool:
    """Whether an allow pattern's program word names the program `word` runs. A bare name (`cat`, `python*`) is
    that name looked up on the host's PATH, so it matches only a command word without a `/`: `tools/cat` is a
    file the campaign's repository may ship, never the `cat` a pattern allowed. A command word with a `/` is that
    file: only a pattern written with a path matches it, segment by segment (`*` stays in its segment, `**` spans
    any number of them, and a word that climbs with `..` matches nothing)."""
    if "/" not in pattern:
        return "/" not in word and fnmatch.fnmatchcase(word, pattern)
    if "/" not in word or word.startswith("/") != pattern.startswith("/"):
        return False
    have = [s for s in word.split("/") if s not in ("", ".")]
    want = [s for s in pattern.split("/") if s not in ("", ".")]
    return ".." not in have and _segments_match(have, want)


def _segments_match(have: list[str], want: list[str]) -> bool:
    # reach[j]: the first j pattern segments can cover the word's segments read so far.
    reach = [True] + [False] * len(want)
    for j, w in enumerate(want, 1):
        reach[j] = reach[j - 1] and w == "**"
    for segment in have:
        nxt = [False] * (len(want) + 1)
        for j, w in enumerate(want, 1):
            if w == "**":
                nxt[j] = nxt[j - 1] or reach[j] or reach[j - 1]
            else:
                nxt[j] = reach[j - 1] and fnmatch.fnmatchcase(segment, w)
        reach = nxt
    return reach[-1]


def _words_match(slots: list[_Slot], pats: list[str]) -> bool:
    """Allow patterns match word by word: a `*` stays inside its word, except in the last word, where
    it also covers the rest of the command. So `/**/python* simserve.py *` allows `/usr/bin/python3
    simserve.py bench` but not `bash -c 'touch x' python simserve.py bench` (errs towards asking). A
    word that may become several (`$x`, a glob) is only covered by that final `*`, and a word whose value is only
    known when it runs (`"$(…)"simserve.py` may be `-c<code>#simserve.py`) only by a pattern word that is `*`
    itself; an assignment only by a pattern word with `=` in it; the program word as `program_matches` says."""
    for i, pat in enumerate(pats):
        last = i == len(pats) - 1
        if last and pat == "*":
            return True
        if i >= len(slots):
            return False
        if slots[i].dynamic and pat != "*":
            return False
        if last and pat.endswith("*"):
            first = slots[i]
            if first.kind == "assign" and "=" not in pat:
                return False
            if first.kind == "cmd" and ("/" in first.text) != ("/" in pat):
                return False  # `nvidia-smi*` is the one on PATH; a path is only a pattern with a path
            if first.kind == "cmd" and ".." in first.text.split("/"):
                return False
            return fnmatch.fnmatchcase(" ".join([first.text, *(x.text for x in slots[i + 1 :])]), pat)
        if slots[i].splits or not slots[i].matches(pat):
            return False
    return len(slots) == len(pats)


# Variables a command may be given in front of it without an allow pattern naming them: they choose
# devices, threads, locale and buffering, never what runs.
_INERT_ENV = {
    "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "PYTHONUNBUFFERED", "PYTHONHASHSEED", "TZ", "LANG", "LC_ALL", "NO_COLOR", "COLUMNS",
}  # fmt: skip


# Variables that make a shell, the dynamic linker or an interpreter run code of their choosing: setting
# one is asked about whatever the patterns say.
RUNS_CODE_ENV = {
    "BASH_ENV", "ENV", "PS4", "PS0", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PATH", "IFS", "CDPATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_LOADABLES_PATH", "PYTHONPATH", "PYTHONHOME",
    "PYTHONSTARTUP", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
    "EDITOR", "VISUAL", "PAGER", "LESSOPEN", "GCONV_PATH",
}  # fmt: skip


def assigned_name(word: Word) -> str:
    return word.text.split("=", 1)[0].split("[", 1)[0].rstrip("+")


def allowing_pattern(simple: Simple, patterns: Sequence[str]) -> str | None:
    assigns = [w for w in simple.assigns if w.dynamic or assigned_name(w) not in _INERT_ENV]
    slots = [_Slot(w.text, "assign", w.splits, w.dynamic) for w in assigns]
    slots += [_Slot(w.text, "cmd" if i == 0 else "arg", w.splits, w.dynamic) for i, w in enumerate(simple.argv)]
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(slots, pats):
            return pattern
    return None


def outside(target: Word, after_cd: bool, reads_outside: bool = False) -> bool:
    """Whether writing to `target` may land outside the working directory. /dev/stdout, /dev/fd/N, …
    reopen whatever that descriptor is: after `1</etc/x` that is a file outside, opened anew for writing."""
    t = target.text
    if target.dynamic or target.splits:
        return True
    if t in HARMLESS_TARGETS or (t.startswith("/dev/fd/") and t[8:].isdigit()):
        return reads_outside and t != "/dev/null"
    if after_cd or t.startswith(("/", "~")):
        return True
    return _normal_path(t)[1]  # a relative path that climbs out
