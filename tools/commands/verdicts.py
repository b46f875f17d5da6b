"""The verdict: every simple command against deny, ask and allow; huge commands in pieces; verdicts remembered."""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence

from tools.canonical import NESTED_TOO_DEEPLY, canonical
from tools.commands.model import CommandClass, Simple, Verdict
from tools.commands.patterns import (
    CODE_FILE,
    allowing_pattern,
    backstop,
    compile_patterns,
    matching,
    outside,
    part_matches,
    renderings_of,
    structured,
)
from tools.commands.vocabulary import MAX_COMMAND_BYTES
from tools.commands.walker import analyse


def split_compound(command: str) -> list[str]:
    """Every simple command in `command`, in source order (those inside substitutions included), as
    its words with quotes removed and joined by spaces."""
    if len(command) > MAX_COMMAND_BYTES:
        return [command]
    simples = analyse(command).simples
    return [" ".join(w.text for w in [*s.assigns, *s.argv]) for s in simples if not s.nested]


_SEVERITY: dict[CommandClass, int] = {"allow": 0, "ask": 1, "deny": 2}


def classify(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
    """The class of the whole command — the most restrictive class of any of its parts — judged both as written
    and in its canonical form, which is what runs (`Verdict.runs`): the stricter verdict stands, so whatever the
    grammar made of the text, what bash is given is what was allowed."""
    rules = (tuple(allow), tuple(ask), tuple(deny))
    if len(command) > _REMEMBERED_CHARS:
        return _classify(command, *rules)
    key = (command, *rules)
    with _REMEMBERED_LOCK:
        known = _REMEMBERED.get(key)
        if known is not None:
            _REMEMBERED.move_to_end(key)
    if known is None:
        known = _classify(command, *rules)
        # A verdict made when the walk ran out of stack depends on how deep the caller was: never kept.
        if NESTED_TOO_DEEPLY not in known.reason:
            with _REMEMBERED_LOCK:
                _REMEMBERED[key] = known
                while len(_REMEMBERED) > _REMEMBERED_TEXTS:
                    _REMEMBERED.popitem(last=False)
    return known.model_copy()  # a copy: the remembered verdict is never anyone's to change


# A run classifies the same few commands again and again (154 times, 15 texts, in the demo): the verdict is a
# function of the text and the rules alone, so it is remembered, for texts short enough that 1,024 of them stay
# small in memory.
_REMEMBERED_CHARS = 4096


_REMEMBERED_TEXTS = 1024


_REMEMBERED: collections.OrderedDict[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], Verdict] = (
    collections.OrderedDict()
)


_REMEMBERED_LOCK = threading.Lock()


def forget_verdicts() -> None:
    """Drop every remembered verdict (a test that swaps a matcher, a benchmark that times a first reading)."""
    with _REMEMBERED_LOCK:
        _REMEMBERED.clear()


def _classify(command: str, allow: tuple[str, ...], ask: tuple[str, ...], deny: tuple[str, ...]) -> Verdict:
    verdict = _judge(command, allow=allow, ask=ask, deny=deny)
    if verdict.klass == "deny":
        return verdict.model_copy(update={"judged": command})
    form = canonical(command)
    if form.text is None:
        why = f"it can only be run as written, which a person must read: {form.why}"
        if verdict.klass != "ask":
            verdict = Verdict(klass="ask", part=command.strip()[:200], pattern=None, reason=why)
    elif form.text != command:
        runs = _judge(form.text, allow=allow, ask=ask, deny=deny)
        if _SEVERITY[runs.klass] > _SEVERITY[verdict.klass]:
            verdict = runs
    if verdict.klass == "ask":
        # A person who approves it approves the text as written, which bash reads by its own rules: a deny pattern
        # is also tried on that text cut crudely at every separator, quotes stripped (errs towards refusing: a
        # denied command the grammar read as a comment or a quoted word is never offered for approval).
        hidden = _denied_in_pieces(command, deny)
        if hidden is not None:
            return hidden.model_copy(update={"judged": command})
    return verdict.model_copy(update={"runs": form.text, "judged": command})


def _denied_in_pieces(command: str, deny: Sequence[str]) -> Verdict | None:
    denied = compile_patterns(tuple(deny))
    for simple in backstop(command):
        pattern = matching(renderings_of(simple), denied)
        if pattern is None and (hit := structured(simple, deny, False)) is not None and hit[1]:
            pattern = hit[0]
        if pattern is not None:
            why = f"as written, bash may read a part of it as what deny pattern {pattern!r} forbids ({simple.part})"
            return Verdict(klass="deny", part=simple.part, pattern=pattern, reason=why)
    return None


def _judge(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
    whole = command.strip()
    if (pattern := part_matches(whole, deny)) is not None:
        return Verdict(klass="deny", part=whole, pattern=pattern, reason=f"matches deny pattern {pattern!r}")
    if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
        return Verdict(
            klass="deny",
            part=whole[:200],
            pattern=None,
            reason=f"too long to classify ({MAX_COMMAND_BYTES:,} bytes at most): it cannot be checked against "
            "the deny patterns",
        )
    result = analyse(command)
    after_cd = result.changes_directory
    denied, asked = compile_patterns(tuple(deny)), compile_patterns(tuple(ask))
    checked = list(result.simples)
    if result.suspect:
        checked += backstop(command)
    maybe: tuple[Simple, str] | None = None
    for simple in checked:
        if (pattern := matching(renderings_of(simple), denied)) is not None:
            return Verdict(klass="deny", part=simple.part, pattern=pattern, reason=f"matches deny pattern {pattern!r}")
        if (hit := structured(simple, deny, after_cd)) is not None:
            if hit[1]:
                return Verdict(
                    klass="deny", part=simple.part, pattern=hit[0], reason=f"matches deny pattern {hit[0]!r}"
                )
            maybe = maybe or (simple, hit[0])
    for part, why in result.refusals:
        return Verdict(klass="deny", part=part, pattern=None, reason=why)
    if maybe is not None:
        simple, pattern = maybe
        why = f"once expanded, it may be what deny pattern {pattern!r} forbids"
        return Verdict(klass="ask", part=simple.part, pattern=pattern, reason=why)
    for simple in result.simples:
        pattern = matching(renderings_of(simple), asked)
        if pattern is None and (hit := structured(simple, ask, after_cd)) is not None:
            pattern = hit[0]
        if pattern is not None:
            return Verdict(klass="ask", part=simple.part, pattern=pattern, reason=f"matches ask pattern {pattern!r}")
    for part, why in result.findings:
        return Verdict(klass="ask", part=part, pattern=None, reason=why)
    # Only comments, or nothing: judged as an empty command (which only a lone `*` allows).
    allowed_by: list[str] = []
    for simple in result.simples or [Simple(whole, [], [], False)]:
        if simple.nested:
            continue
        if (by := allowing_pattern(simple, allow)) is None:
            return Verdict(klass="ask", part=simple.part, pattern=None, reason="matches no allow pattern")
        allowed_by.append(by)
    for part, target in result.writes:
        if outside(target, after_cd, result.reads_outside):
            return Verdict(
                klass="ask", part=part, pattern=None, reason=f"writes outside the working directory: {target.text}"
            )
        if CODE_FILE.search(target.text):
            # `echo … > json.py; python3 simserve.py` runs the planted module: the script is allowed by
            # name, what it imports from the working directory is not.
            why = f"writes {target.text}, code that an allowed program may load or run"
            return Verdict(klass="ask", part=part, pattern=None, reason=why)
    # The allow pattern(s) that let it run, for a person reading why (the class is what decides).
    named = list(dict.fromkeys(allowed_by))
    return Verdict(
        klass="allow",
        part=command,
        pattern=named[0] if len(named) == 1 else None,
        reason=("matches allow pattern " if len(named) == 1 else "matches allow patterns ")
        + ", ".join(map(repr, named))
        if named
        else "",
    )
