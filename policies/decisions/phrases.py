"""A line made plain (marks, case, filler), and the pieces a clause is read with: a condition, targets, a verb."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from policies.decisions.vocabulary import BOOL_PHRASES, CMPS, ENUM_WORDS, FIELDS, NO_MARKS, VERB_RE, YES_MARKS
from policies.gates import FACTS, Action
from policies.refusals import NotUnderstood


def symbols(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)  # "ｎｏｔ" is "not"
    out: list[str] = []
    for ch in text:
        if ch in NO_MARKS:
            out.append(", nomark, ")
        elif ch in YES_MARKS:
            out.append(" \x00 ")  # a placeholder: a yes-mark alone is "yes", beside words it is dropped
        elif ch in "→⇒➡" or ch == "…":
            out.append(", ")
        elif unicodedata.category(ch) == "Cf":
            continue  # a zero-width space inside "n\u200bot" is not a word break
        elif unicodedata.category(ch) in ("Mn", "Me"):
            out.append(", oddmark, ")  # a strike-through ("r̶m̶") or another mark left after NFKC composed accents
        elif unicodedata.category(ch) in ("So", "Sk", "Cs", "Co"):
            out.append(", oddmark, ")
        else:
            out.append(ch)
    said = "".join(out)
    # "skip 1 and 3, 👍 2": a yes-mark before an option after other words is a yes to it, which no word here says
    said = re.sub(r"(?<=\w)(.*?)\x00(?=\s*#?\d)", r"\1, oddmark, ", said)
    words = said.replace("nomark", "").strip(" ,\x00")
    if "\x00" in said and ("nomark" in said or re.fullmatch(r"(?:no|nope|nah|reject)[\s,.!]*", words)):
        return ""  # "👍❌", "👍 no": a yes and a no, nothing to read
    if not words or ("nomark" in said and re.fullmatch(r"(?:no|nope|nah|reject)[\s,.!]*", words)):
        return "no" if "nomark" in said else ("yes" if "\x00" in said else "")  # "nope ❌" is one no
    return said.replace("\x00", " ")


def normalise(text: str) -> str:
    text = symbols(text.strip().lower())
    text = re.sub(r"\(\s*(and|then)\b", r" \1", text)  # "revert (and verify)": one clause, not a remark
    text = text.translate(
        str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": ",", "–": ",", "(": ",", ")": ",", "`": " "})
    )
    text = re.sub(
        r"\s+-+>\s+|\s+-+\s+|^-+>\s*|\.\.\.+|;|(?<=[a-z])[.!]\s+(?=[a-z])", ", ", text
    )  # "-> 3", "skip 2 - it's flaky", "a; b"
    text = re.sub(r"\bas-is\b", "as is", text)
    text = re.sub(r"\bw/(?=\s|$)", "with", text).replace(" & ", " and ").replace(" + ", " and ")
    text = re.sub(r"(?<=\d)\+(?=#?\d)", " and ", text)  # "1+2 ok"
    text = re.sub(r"\bu\b", "you", text)  # "if u have a next step"
    text = re.sub(r"(?<=\d) n (?=#?\d)", " and ", text)  # "skip 1 n 3"
    text = re.sub(r"\bw (?=#?\d|the\b)", "with ", text)  # "go w 3 first"
    text = re.sub(r"\b(stp|skp|agn)\b", lambda m: {"stp": "stop", "skp": "skip", "agn": "again"}[m.group(1)], text)
    text = re.sub(r"([a-z])\1{2,}", r"\1", text)  # "goooo", "yesss"
    text = re.sub(r"(?<=\w)!+(?=\s+\w)", ",", text)  # "ok!! run it"
    text = re.sub(r'(?<=\w )"([\w\' -]{1,24})"(?=[\s,.!?]|$)', r"\1, oddmark, ", text)  # scare quotes: 'is "flaky"'
    text = re.sub(r'"', "", text)
    text = re.sub(  # "1-2", "#2-3": a range of options, said as a list
        r"(?<![\w.-])#?([1-9])\s*-\s*#?([1-9])(?![\w.%-])",
        lambda m: (
            " and ".join(map(str, range(int(m.group(1)), int(m.group(2)) + 1)))
            if int(m.group(1)) < int(m.group(2))
            else m.group(0)
        ),
        text,
    )
    text = re.sub(r"\s*,[\s,]*", ", ", text)
    text = re.sub(r"\s+", " ", text)
    return text.strip(" ,").rstrip(" .!?,")


def pred(text: str) -> str:
    text = text.strip()
    text = re.sub(r"\b(\w+)'s (above|below|over|under|at)\b", r"\1 is \2", text)  # "the gain's above 5"
    text = re.sub(r"\s*(?:percent|pct)\b", "%", text)
    text = re.sub(r"\s+(?:under stress|in the stress test|under load|in stress|too|as well|again)$", "", text)
    text = re.sub(r"^(?:its|their)\s+", "", text)  # "if its gain is under 5%"
    text = re.sub(
        r"^(?:it )?gains (?=(?:under|over|less|more|at|below|above))", "gain ", text
    )  # "if #3 gains under 2%"
    text = re.sub(
        r"^(?:it|that|they|this|something|anything|an option|any option|one|whatever)(?:'s| is| are|'re)?"
        r"(?: really| actually| still)?"
        r"(?: (?:turns?|turned) out| (?:ends?|ended) up| comes? (?:out|back)| proves?| gets?| got| is found)?"
        r"(?: to be| as| being)?\s+",
        "",
        text,
    )
    text = re.sub(r"^(?:a|an)\s+", "", text)
    if text in ENUM_WORDS:
        return ENUM_WORDS[text]
    for pattern, expr in BOOL_PHRASES:
        if re.fullmatch(pattern, text):
            return expr
    for alias, field in sorted(FIELDS.items(), key=lambda f: -len(f[0])):
        if text.startswith(alias + " "):
            rest = re.sub(r"^are\b", "is", text[len(alias) + 1 :])  # "wedges are at least 2"
            for cmp_pattern, op in CMPS:
                m = re.fullmatch(rf"(?:{cmp_pattern})\s*(-?\d+(?:\.\d+)?)\s*%?", rest)
                if m:
                    number = m.group(1)
                    if FACTS["safety"].get(field) and FACTS["safety"][field].type == "double" and "." not in number:
                        number += ".0"
                    return f"{field} {op} {number}"
    raise NotUnderstood(f"didn't understand the condition {text!r}; try: if it's unsafe, if gain is at least 5%")


def condition_of(text: str) -> str:
    text = re.sub(r"^(?:as long as|provided(?: that)?|in case|while|every time|whenever|each time)\b", "if", text)
    # "gain is 5% or more": one comparison, not two predicates joined by "or"
    text = re.sub(
        r"(?:\b(is|are) )?(?<![\d.])(-?\d+(?:\.\d+)?\s*%?) or "
        r"(?:(more|higher|above|better|over)|less|lower|below|under)$",
        lambda n: f"{n.group(1) or 'is'} at {'least' if n.group(3) else 'most'} {n.group(2)}",
        text,
    )
    m = re.match(r"^(only if|if|when|unless)\s+(.*)$", text)
    if not m:
        raise NotUnderstood(f"didn't understand {text!r}")
    negate = m.group(1) == "unless"
    parts = re.split(r"\s+(and|or)\s+", m.group(2))
    expr = pred(parts[0])
    for i in range(1, len(parts), 2):
        op = "&&" if parts[i] == "and" else "||"
        expr = f"{expr} {op} {pred(parts[i + 1])}"
    if negate:
        expr = f"!({expr})"
    return expr


def targets_of(text: str, gate_option: int | None, known: Sequence[int]) -> tuple[list[int], str]:
    m = re.match(r"^(?:options?\s+)?#?(\d+)\s*(?:-|to|through|thru)\s*#?(\d+)\b\s*(.*)$", text)
    if m and int(m.group(1)) < int(m.group(2)) <= max(known, default=0):
        return list(range(int(m.group(1)), int(m.group(2)) + 1)), m.group(3)
    m = re.match(r"^(?:options?\s+)?(#?\d+(?:\s*(?:,|and|&)\s*#?\d+)*)\b\s*(.*)$", text)
    if m:
        return [int(n) for n in re.findall(r"\d+", m.group(1))], m.group(2)
    m = re.match(r"^(?:all|everything|the rest)\b\s*(.*)$", text)
    if m:
        return list(known), m.group(1)
    m = re.match(r"^(?:it|this one|this|that one|that)\b\s*(.*)$", text)
    if m and gate_option is not None:
        return [gate_option], m.group(1)
    return [], text


# "skip #2 and move on": a follow-up that only says what skipping already means.
FOLLOW_UP = re.compile(
    r"(?:,|\band\b|\bthen\b)\s*(?:and\s+)?(?:then\s+)?(?:move on|continue|carry on|keep going|go on|proceed)"
    r"(?:\s+(?:to the next(?: one)?|with the next(?: one)?|with the rest))?$"
)


def verb_in(words: str) -> Action | None:
    """The first decision verb anywhere in leftover text: a second decision in one line."""
    for i in range(len(words)):
        if i and words[i - 1].isalnum():
            continue
        for pattern, verb in VERB_RE:
            if (
                pattern.match(words[i:])
                and verb not in ("select",)
                and not words[i:].startswith(("y ", "do ", "next one", "next option"))  # "skip the next one"
            ):
                return verb
    return None
