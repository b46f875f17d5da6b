"""What the writer knows of bash: its limits, the patterns it reads words with, and the helpers that quote,
escape and join the pieces of a word."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from tree_sitter import Node


class Unfaithful(Exception):
    """A construct the renderer cannot write back so that bash reads it as the tree does."""


# Longer than this is not written back (the classifier refuses it outright).
MAX_RENDERED_BYTES = 256 * 1024
# Compound commands and substitutions within each other, deeper than this, are not written back.
MAX_NESTING = 60
# A redirection's descriptor with more digits than this is not written back (bash reads one that does not fit an int
# as a word), nor a numeric brace range of more words than this (`{1..999999999}` is gigabytes on the host).
MAX_FD_DIGITS = 4
MAX_BRACE_WORDS = 10_000

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SPECIAL = re.compile(r"[0-9@*#?$!_-]")
# Reserved words are keywords only unquoted in command position: a command word spelling one is kept quoted.
RESERVED = {
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
    "function", "time", "coproc", "{", "}", "!", "[[", "]]",
}  # fmt: skip
SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
BRACKET = re.compile(r"\[[!^]?\]?[A-Za-z0-9_.,:+@%=-]*(\[:[a-z]+:\][A-Za-z0-9_.,:+@%=-]*)*\]")
TILDE_PREFIX = re.compile(r"~([+-][0-9]*|[A-Za-z0-9._-]*)")
ARITH_NUMBERS = re.compile(r"[0-9 +\-*/%()]*")
NUMERIC_BRACES = re.compile(r"\{-?[0-9]+\.\.-?[0-9]+(\.\.-?[0-9]+)?\}")
PLAIN_OPS = {":-", "-", ":+", "+", ":?", "?", ":=", "=", "#", "##", "%", "%%"}
PLAIN_OPERAND = re.compile(r"[A-Za-z0-9_./:@%+,=*?-]*")
ESCAPED = re.compile(r"\\.", re.S)
HIGH_ESCAPE = re.compile(r"\\(x[89a-fA-F][0-9a-fA-F]?|[2-3][0-7]{2}|[uU]|c[^\x00-\x7f])")
DQ_SPECIAL = re.compile(r'["$`]|\\(?=[\\"$`\n]|\Z)')
ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
TILDE_AFTER = re.compile(r"[=:]~")
EXTGLOB = re.compile(r"[@!+*?]\(")
QUOTE_IN_WORD = re.compile(r"(?<!\\)['\"]")
HEREDOC_ESCAPE = re.compile(r"\\([$`\\\n])")
FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_:.-]*")
TEST_FLAG = re.compile(r"-[A-Za-z]{1,2}")
REDIRECT_OPS = {">", ">>", "<", "&>", "&>>", ">&", "<&", ">|", ">&-", "<&-"}
LIST_OPS = {"&&", "||"}
PIPE_OPS = {"|", "|&"}
CASE_ENDS = {";;", ";&", ";;&"}
TEST_OPS = {"=", "==", "!=", "<", ">", "&&", "||", "!", "(", ")"}

# Why a text could not be written back when the walk ran out of stack: it depends on how deep the caller already was.
NESTED_TOO_DEEPLY = "nested too deeply to write back"


def quote(value: str) -> str:
    """A literal word: bare when it holds only characters no shell treats specially, else single-quoted (a backslash
    before a line break split from it by the quotes, so no reader takes them for a line continuation)."""
    return value if SAFE.fullmatch(value) else shlex.quote(value).replace("\\\n", "\\'\n'")


def dq_escape(value: str) -> str:
    """Literal text inside double quotes: `"`, `$` and a backquote escaped, and a backslash where it would escape
    what follows it (or ends the piece, before whatever comes next)."""
    escaped = DQ_SPECIAL.sub(lambda m: "\\" + m.group(0), value)
    return escaped.replace("\\\\\n", '\\\\""\n')  # `\\` then a line break: closed and reopened between


# Where an expansion starts: text the grammar left literal that bash would expand is not written back as literal.
EXPANDS = re.compile(r"\$[A-Za-z0-9_{(\[@*#?$!-]|`")


def literal_stretch(raw: str) -> str:
    """`raw` (text between the expansions the grammar found), refused if bash would find another in it."""
    plain = ESCAPED.sub("", raw)
    if EXPANDS.search(plain):
        raise Unfaithful(
            f"an expansion the grammar did not read as one ({plain.strip()[:30]!r}) is only run as written"
        )
    return raw


@dataclass
class Piece:
    """One rendered piece of a word; `name` is set for a `$NAME` that must be braced if a name character follows."""

    text: str
    name: str = ""


def double_quoted(parts: list[str | list[Piece]]) -> str:
    """Literal text (str) and expansions (pieces) as one double-quoted word — or, when a literal holds a non-ASCII
    character, each literal single-quoted and each expansion double-quoted on its own: in a multibyte locale (GBK,
    BIG5, Shift_JIS) a character's last byte may be a `\\` or a backquote, which inside double quotes escapes
    or opens what follows; no such encoding has a `'` there, and inside single quotes nothing is special."""
    if all(isinstance(p, list) or p.isascii() for p in parts):
        return (
            '"' + join_pieces([q for p in parts for q in (p if isinstance(p, list) else [Piece(dq_escape(p))])]) + '"'
        )
    out = [quote(p) if isinstance(p, str) else '"' + join_pieces(p) + '"' for p in parts if p]
    return "".join(out) or "''"


def outside_single_quotes(text: str) -> str | None:
    """The first non-ASCII character of `text` (a canonical form) that is not inside single quotes, if any. Quotes
    are followed into `$(…)` within double quotes; where the scan loses count (a `case` pattern's `)`), it errs
    towards finding one."""
    frames: list[list[str | int]] = [["N", 0]]  # normal (with its open parentheses), "D"ouble, "S"ingle quotes
    i = 0
    while i < len(text):
        c, top = text[i], frames[-1]
        if top[0] == "S":
            if c == "'":
                frames.pop()
        elif c == "\\":
            i += 1
            if i < len(text) and not text[i].isascii():
                return text[i]
        elif top[0] == "D":
            if c == '"':
                frames.pop()
            elif text.startswith("$(", i):
                frames.append(["N", 0])
                i += 1
            elif not c.isascii():
                return c
        elif c == "'":
            frames.append(["S", 0])
        elif c == '"':
            frames.append(["D", 0])
        elif c == "(":
            top[1] = int(top[1]) + 1
        elif c == ")":
            if int(top[1]) == 0 and len(frames) > 1:
                frames.pop()
            else:
                top[1] = int(top[1]) - 1
        elif not c.isascii():
            return c
        i += 1
    return None


def between(node: Node, opener: str, closer: str | None) -> list[Node]:
    kids = node.children
    if not kids or kids[0].type != opener or (closer is not None and kids[-1].type != closer):
        raise Unfaithful(f"a {node.type.replace('_', ' ')} the renderer does not know")
    return kids[1:-1] if closer is not None else kids[1:]


def join_pieces(pieces: list[Piece]) -> str:
    out: list[str] = []
    for i, piece in enumerate(pieces):
        following = pieces[i + 1].text[:1] if i + 1 < len(pieces) else ""
        if not piece.name:
            out.append(piece.text)
        elif IDENTIFIER.fullmatch(piece.name):
            braced = following.isalnum() or following in ("_", "[")
            out.append("${" + piece.name + "}" if braced else piece.text)
        else:  # a special parameter is one character: only a digit after a positional one could join it
            out.append("${" + piece.name + "}" if piece.name.isdigit() and following.isdigit() else piece.text)
    return "".join(out)


def unescape_heredoc(raw: str) -> str:
    """An unquoted here-document's literal text: a backslash escapes only `$`, a backquote, itself and a newline."""
    return HEREDOC_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
