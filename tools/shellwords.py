"""Reading shell text as bash does: the parser (tree-sitter-bash) and the value of each kind of quoted word.

Shared by the command policy (tools/commands/), which judges what a command does, and the canonical renderer
(tools/canonical/), which writes what will run: both must take a word to mean the same value.
"""

from __future__ import annotations

import re
import threading

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

# tree-sitter's error recovery is quadratic in the length of what it recovers over (a 400 KB line of
# `cat <>x; ` takes a minute), so a long command is parsed in chunks cut after a `;` or a line break.
# A cut inside a quote, a substitution, a compound command or a here-document leaves both sides
# incomplete, which is a syntax error, which is `ask`: cutting can only make the verdict stricter.
CHUNKED_ABOVE = 16 * 1024
CHUNK = 512
MAX_RUN = 2 * 1024  # a chunk that cannot be cut this short is not parsed at all

_LANGUAGE = Language(tree_sitter_bash.language())
# A tree-sitter Parser is not safe to share between threads; hosts are planned in parallel.
_PARSERS = threading.local()


def parser() -> Parser:
    found = getattr(_PARSERS, "parser", None)
    if found is None:
        found = _PARSERS.parser = Parser(_LANGUAGE)
    return found


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def unescape_unquoted(raw: str) -> tuple[str, str, bool]:
    """An unquoted word's value, its skeleton (escaped characters are no longer special: `Q`), and
    whether an unescaped glob character makes it a pattern."""
    if "\\" not in raw:
        return raw, raw, "*" in raw or "?" in raw or "[" in raw
    out: list[str] = []
    skel: list[str] = []
    glob = False
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            if raw[i + 1] != "\n":  # a backslash-newline is a line continuation: nothing at all
                out.append(raw[i + 1])
                skel.append(raw[i + 1] if raw[i + 1] not in "{},." else "Q")
            i += 2
            continue
        if c in "*?[":
            glob = True
        out.append(c)
        skel.append(c)
        i += 1
    return "".join(out), "".join(skel), glob


def unescape_double(raw: str) -> str:
    """Inside double quotes a backslash only escapes `$`, a backtick, `"`, a backslash or a newline."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_C_ESCAPES = {
    **{"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"},
    **{"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"},
}


def decode_ansi_c(body: str) -> str:
    """The value of `$'…'` (bash's escapes), decoded so that `$'\\x24('` is seen to spell `$(`."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _C_ESCAPES:
            out.append(_C_ESCAPES[e])
        elif e in "01234567":
            j = i - 1
            while j < n and j < i + 2 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i - 1 : j], 8) & 0xFF))
            i = j
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            j = i
            while j < n and j < i + width and body[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i:
                out.append("\\" + e)
            else:
                code = int(body[i:j], 16)
                out.append(chr(code) if code <= 0x10FFFF else "\ufffd")
                i = j
        elif e == "c" and i < n:
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    # bash's value ends at a NUL (`$'rm\\0python'` runs `rm`): what follows is never seen by the command
    return "".join(out).split("\0", 1)[0]


def dequote(word: str) -> str:
    """A word's text after bash's quote removal, expansions left as written (here-document delimiters)."""
    out: list[str] = []
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\" and i + 1 < n:
            out.append(word[i + 1])
            i += 2
        elif c == "'" or (c == "$" and word[i + 1 : i + 2] == "'"):
            ansi = c == "$"
            j = word.find("'", i + 1 + ansi)
            j = n if j < 0 else j
            body = word[i + 1 + ansi : j]
            out.append(decode_ansi_c(body) if ansi else body)
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and word[j] != '"':
                j += 2 if word[j] == "\\" else 1
            out.append(unescape_double(word[i + 1 : j]))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# Bytes bash reads as part of a word but the grammar as a blank (CR, VT, FF) or not at all (NUL and the
# other C0 controls, DEL). Replaced, one byte for one, by a letter before parsing, so the tree has
# bash's words; their presence is asked about.
_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
# A `$` that starts nothing (before a blank or at the end) is a plain `$` to bash; the grammar can take
# `$`, a newline and the next line's first word for one expansion.
_LONE_DOLLAR = re.compile(rb"\$(?=[ \t\n]|$)")


def as_bash_reads(source: bytes) -> tuple[bytes, str]:
    """`source` with the bytes the grammar reads differently from bash made plain (same length), and
    why that must be asked about ("" when nothing was changed that matters)."""
    odd = ""
    if _CONTROL.search(source):
        found = sorted({f"\\x{b[0]:02x}" for b in _CONTROL.findall(source)})[:4]
        odd = f"it holds control characters ({', '.join(found)}) that bash reads as part of a word"
        source = _CONTROL.sub(b"_", source)
    if b"$" in source:
        source = _LONE_DOLLAR.sub(b"_", source)
    return source, odd


def braces(skeleton: str) -> bool:
    """Whether an unquoted word brace-expands (`-{r,f}` becomes `-r -f`). One linear scan."""
    depth = 0
    seen = False
    for i, c in enumerate(skeleton):
        if c == "{":
            depth += 1
            seen = False
        elif c == "}" and depth:
            if seen:
                return True
            depth -= 1
        elif depth and (c == "," or (c == "." and skeleton[i + 1 : i + 2] == ".")):
            seen = True
    return False


def chunks(source: bytes) -> list[bytes] | None:
    """`source` cut after a `;` or line break (not an escaped one) about every CHUNK bytes, once it
    is over CHUNKED_ABOVE; None when some stretch of it cannot be cut within MAX_RUN bytes."""
    if len(source) <= CHUNKED_ABOVE:
        return [source]
    out: list[bytes] = []
    start, n = 0, len(source)
    while n - start > CHUNK:
        cut = _separator_after(source, start + CHUNK)
        if cut is None or cut + 1 - start > MAX_RUN:
            return None
        out.append(source[start : cut + 1])
        start = cut + 1
    if start < n:
        out.append(source[start:])
    return out


def _separator_after(source: bytes, at: int) -> int | None:
    limit = at + MAX_RUN  # no need to look further: a longer chunk is refused anyway
    while True:
        found = [i for i in (source.find(b";", at, limit), source.find(b"\n", at, limit)) if i >= 0]
        if not found:
            return None
        i = min(found)
        if source[i - 1 : i] != b"\\":
            return i
        at = i + 1


def group_words(pieces: list[Node], src: bytes) -> list[list[Node]]:
    """Nodes that touch (or are joined by a line continuation only) make one word: the grammar splits `$"rm"` and
    `r\\<newline>m`, bash does not. The classifier and the canonical form group words here, so they agree."""
    groups: list[list[Node]] = []
    end = -1
    for piece in pieces:
        gap = src[end : piece.start_byte] if end >= 0 else b" "
        lead = src[piece.start_byte : piece.start_byte + 1]
        if groups and gap.replace(b"\\\n", b"") == b"" and not lead.isspace():
            groups[-1].append(piece)
        else:
            groups.append([piece])
        end = piece.end_byte
    return groups
