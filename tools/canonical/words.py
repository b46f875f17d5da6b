"""The bottom layer of the writer: a word written again from the nodes that make it, each piece keeping its
quoting; expansions and substitutions."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from tools.canonical.rules import (
    ARITH_NUMBERS,
    ASSIGNMENT_WORD,
    BRACKET,
    ESCAPED,
    EXTGLOB,
    HIGH_ESCAPE,
    IDENTIFIER,
    MAX_BRACE_WORDS,
    MAX_NESTING,
    NUMERIC_BRACES,
    PLAIN_OPERAND,
    PLAIN_OPS,
    QUOTE_IN_WORD,
    SAFE,
    SPECIAL,
    TILDE_AFTER,
    TILDE_PREFIX,
    Piece,
    Unfaithful,
    double_quoted,
    join_pieces,
    literal_stretch,
    quote,
)
from tools.shellwords import (
    braces,
    decode_ansi_c,
    unescape_double,
)


class WordWriter:
    """Words, expansions and substitutions; the layers above add redirections, simple commands and statements."""

    def __init__(self, source: bytes) -> None:
        self.src = source  # node text is read from the original bytes (the parsed copy had some made plain)
        self.depth = 0
        self.written: dict[tuple[str, bytes], str] = {}

    def raw(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise Unfaithful("nested too deeply to write back")

    def around_expansions(
        self, children: list[Node], pos: int, end: int, unescape: Callable[[str], str]
    ) -> list[str | list[Piece]]:
        """The literal stretches (source bytes between the expansions the grammar found, unescaped as the quoting
        says; the last one always, empty or not) and the expansions' pieces, in order. The grammar folds the blanks
        before an expansion into its node, so each stretch runs to the expansion's first non-blank byte."""
        parts: list[str | list[Piece]] = []
        for child in children:
            if child.type in ('"', "string_content", "heredoc_content"):
                continue
            lead = len(self.raw(child)) - len(self.raw(child).lstrip())
            core = child.start_byte + lead
            parts.append(unescape(literal_stretch(self.src[pos:core].decode("utf-8", "surrogatepass"))))
            parts.append(self.piece(child, quoted=True))
            pos = child.end_byte
        last = self.src[pos:end].decode("utf-8", "surrogatepass") if end > pos else ""
        parts.append(unescape(literal_stretch(last)))
        return parts

    def word(self, nodes: list[Node], *, pattern: bool = False, assignment: bool = False) -> str:
        """One shell word from the nodes that make it, each piece keeping the quoting it had."""
        if len(nodes) == 1 and nodes[0].type == "word":
            raw = self.raw(nodes[0])
            if SAFE.fullmatch(raw):  # most words: nothing quoted, escaped, expanded or globbed
                return raw
        pieces: list[Piece] = []
        bare = [self.bare(node) for node in nodes]
        pieces = self.pieces(nodes, first=True, pattern=pattern)
        joined = "".join(bare)
        if braces(joined):
            raise Unfaithful("brace expansion is only run as written")
        if not assignment and ASSIGNMENT_WORD.match(joined) and TILDE_AFTER.search(joined):
            raise Unfaithful("a tilde in an assignment-like word is only run as written")
        if assignment and ":~" in joined:
            raise Unfaithful("a tilde after a colon in an assignment is only run as written")
        text = join_pieces(pieces)
        return text if text else "''"

    def bare(self, node: Node) -> str:
        """The unquoted literal text of a word's piece (anything else as `Q`): where braces and tildes act."""
        if node.type in ("word", "extglob_pattern"):
            return ESCAPED.sub("QQ", self.raw(node))
        if node.type == "concatenation":
            return "".join(self.bare(c) for c in node.children)
        return "Q" * len(self.raw(node))

    def pieces(
        self, nodes: list[Node], *, quoted: bool = False, first: bool = False, pattern: bool = False
    ) -> list[Piece]:
        """The pieces of adjacent nodes; unquoted literals that touch are lexed as one (`[ab].log` is one pattern,
        which the grammar cuts into four words)."""
        out: list[Piece] = []
        i = 0
        while i < len(nodes):
            node = nodes[i]
            if node.type == "$" and i + 1 < len(nodes) and nodes[i + 1].type == "string":
                i += 1  # `$"…"`: a translated string, whose value is the string's
                continue
            if node.type == "word" and not quoted:
                j = i + 1
                while j < len(nodes) and nodes[j].type == "word" and nodes[j].start_byte == nodes[j - 1].end_byte:
                    j += 1
                raw = self.src[node.start_byte : nodes[j - 1].end_byte].decode("utf-8", "surrogatepass")
                out.extend(self.unquoted(raw, first and i == 0))
                i = j
                continue
            out.extend(self.piece(node, quoted=quoted, first=first and i == 0, pattern=pattern))
            i += 1
        return out

    def piece(self, node: Node, *, quoted: bool = False, first: bool = False, pattern: bool = False) -> list[Piece]:
        kind = node.type
        raw = self.raw(node)
        if kind in ("word", "extglob_pattern"):
            if kind == "extglob_pattern" and EXTGLOB.search(raw):
                raise Unfaithful("an extended glob is only run as written")
            return self.unquoted(raw, first)
        if kind in ("number", "variable_name"):
            return [Piece(quote(raw))]
        if kind == "$":
            return [Piece("\\$" if quoted else "'$'")]
        if kind == "raw_string":
            return [Piece(quote(raw[1:-1]) if raw[1:-1] else "''")]
        if kind == "ansi_c_string":
            if HIGH_ESCAPE.search(raw[2:-1]):
                # bash writes `\\xe2` as that byte and `\\u2713` in the locale's encoding: not a character to quote
                raise Unfaithful("an ANSI-C string that spells bytes above 127 is only run as written")
            value = decode_ansi_c(raw[2:-1])
            return [Piece(quote(value) if value else "''")]
        if kind in ("string", "translated_string"):
            return self.string(node)
        if kind == "concatenation":
            return self.pieces(node.children, quoted=quoted, first=first, pattern=pattern)
        if kind == "simple_expansion":
            name = raw.strip()[1:]
            if not (IDENTIFIER.fullmatch(name) or SPECIAL.fullmatch(name)):
                raise Unfaithful(f"an expansion {raw.strip()!r} is only run as written")
            return [Piece("$" + name, name)]
        if kind == "expansion":
            return [Piece(self.expansion(node))]
        if kind in ("command_substitution", "process_substitution"):
            return [Piece(self.substitution(node))]
        if kind == "arithmetic_expansion":
            inner = raw.strip()[3:-2]
            if not raw.strip().startswith("$((") or not ARITH_NUMBERS.fullmatch(inner):
                raise Unfaithful("arithmetic on variables is only run as written")
            return [Piece(f"$(({inner}))")]
        if kind == "brace_expression":
            numeric = NUMERIC_BRACES.fullmatch(raw)
            if quoted or not numeric:
                raise Unfaithful("brace expansion is only run as written")
            low, high = (int(n) for n in raw[1:-1].split("..")[:2])
            step = abs(int(numeric.group(1)[2:])) if numeric.group(1) else 1
            if abs(high - low) // max(step, 1) + 1 > MAX_BRACE_WORDS:
                raise Unfaithful(f"a brace range of more than {MAX_BRACE_WORDS:,} words")
            return [Piece(raw)]
        raise Unfaithful(f"a {kind.replace('_', ' ')} is only run as written")

    def unquoted(self, raw: str, first: bool) -> list[Piece]:
        """An unquoted literal: escapes decoded and quoted, glob characters and a leading tilde left bare."""
        out: list[Piece] = []
        literal: list[str] = []

        def flush() -> None:
            if literal:
                out.append(Piece(quote("".join(literal))))
                literal.clear()

        literal_stretch(raw)
        if QUOTE_IN_WORD.search(ESCAPED.sub("", raw)):
            raise Unfaithful("a quote the grammar read as part of a word is only run as written")
        i, n = 0, len(raw)
        if first and raw.startswith("~"):
            prefix = TILDE_PREFIX.match(raw)
            assert prefix is not None  # `~` alone matches
            if prefix.end() < n and raw[prefix.end()] != "/":
                raise Unfaithful("a tilde the renderer does not write back")
            out.append(Piece(prefix.group(0)))
            i = prefix.end()
        while i < n:
            c = raw[i]
            if c == "\\" and i + 1 < n:
                if raw[i + 1] != "\n":
                    literal.append(raw[i + 1])
                i += 2
                continue
            if c in "*?":
                flush()
                out.append(Piece(c))
            elif c == "[":
                bracket = BRACKET.match(raw, i)
                if bracket is not None:
                    flush()
                    out.append(Piece(bracket.group(0)))
                    i = bracket.end()
                    continue
                if "]" in raw[i:]:
                    raise Unfaithful("a bracket pattern the renderer does not write back")
                literal.append(c)
            else:
                literal.append(c)
            i += 1
        flush()
        return out

    def string(self, node: Node) -> list[Piece]:
        """A double-quoted string, written as one: literal stretches escaped, expansions in it kept."""
        children = node.children
        start = node.start_byte
        if children and children[0].type == "$":
            start = children[0].end_byte
            children = children[1:]
        return [Piece(double_quoted(self.around_expansions(children, start + 1, node.end_byte - 1, unescape_double)))]

    def expansion(self, node: Node) -> str:
        """`${NAME}`, `${#NAME}` and `${NAME<op>text}` with plain text; anything else is run only as written."""
        inner = [c for c in node.children if c.type not in ("${", "}")]
        raw = self.raw(node).strip()
        names = [c for c in inner if c.type in ("variable_name", "special_variable_name")]
        if len(names) != 1:
            raise Unfaithful(f"a parameter expansion {raw!r} is only run as written")
        name = self.raw(names[0])
        rest = [c for c in inner if c != names[0]]
        if not rest:
            return "${" + name + "}"
        if len(rest) == 1 and rest[0].type == "#" and inner[0] == rest[0]:
            return "${#" + name + "}"
        if inner[0] == names[0] and not rest[0].is_named and rest[0].type in PLAIN_OPS:
            operand = self.src[rest[0].end_byte : node.end_byte - 1].decode("utf-8", "surrogatepass")
            if all(c.type in ("word", "regex", "number") for c in rest[1:]) and PLAIN_OPERAND.fullmatch(operand):
                return "${" + name + rest[0].type + operand + "}"
        raise Unfaithful(f"a parameter expansion {raw!r} is only run as written")

    def substitution(self, node: Node) -> str:
        opener = node.children[0].type.strip() if node.children else ""
        raw = self.raw(node).strip()
        if opener == "`" and "\\" in raw:
            raise Unfaithful("a backquoted command with a backslash in it is only run as written")
        if opener not in ("$(", "`", "<(", ">("):
            raise Unfaithful(f"a substitution {raw[:20]!r} is only run as written")
        inner = [c for c in node.children[1:-1]]
        self.nested()
        try:
            text, _ = self.body(inner)
        finally:
            self.depth -= 1
        if not text:
            raise Unfaithful("an empty substitution")
        # `$( (a) )` keeps its blanks: `$((` would open arithmetic.
        opened = "$(" if opener == "`" else opener
        return f"{opened} {text} )" if text.startswith("(") else f"{opened}{text})"

    def body(self, children: list[Node]) -> tuple[str, bool]:
        """Statements (`Writer` writes them; a substitution holds some)."""
        raise NotImplementedError
