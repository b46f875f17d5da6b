"""What runs: a command written back from the parse tree the command policy read, so that bash executes exactly that.

The policy reads a command with tree-sitter-bash; a host's bash reads it with its own parser, and the two do not read
every text alike (a backslash before a blank and a `#`, a here-document's end, an ANSI-C string…). Listing those
differences one by one has never converged. So the text a host runs is not the text as written but its *canonical
form*: every simple command written again from the tree — each word with the quoting of each of its pieces kept
(literal text quoted, glob and tilde characters left bare where they were bare, expansions as `$NAME`, `${NAME…}`,
`$(…)`) — joined by the tree's own operators, each statement ended as it was (`;`, `&`, a line break), a here-document
as a here-string. The canonical form uses a small part of bash (single and double quotes, `$NAME`, `${NAME}`, `$()`,
`<()`, the list, pipeline and compound-command keywords, plain redirections) that the grammar and bash read alike, and
any non-ASCII text in it is single-quoted (in GBK, BIG5 or Shift_JIS a character's last byte may be a backslash, which
double quotes would take for an escape); whatever the tree says, that is what bash runs, even where the tree is not
what bash would have made of the original text.

What cannot be written back faithfully is refused (`Canonical.text is None`, with why): arithmetic on variables,
`[[ =~ ]]`, here-documents with an fd or beside another stdin redirection, brace expansion (but a numeric range of at
most 10,000 words), `${…}` beyond plain substitution, backquotes with a backslash in them, an ANSI-C string spelling
bytes above 127, a descriptor bash may read as a word, a line continuation read two ways, anything that does not
parse. The command policy asks about such a command, and a person who approves it approves it as written.

The policy judges the canonical form too (tools/commands: classify), and a canonical form must be its own canonical
form (a fixpoint), so what the grammar reads in it is what this module meant to write.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from tools.shellwords import (
    MAX_RUN,
    as_bash_reads,
    braces,
    chunks,
    decode_ansi_c,
    dequote,
    group_words,
    parser,
    unescape_double,
)

# Longer than this is not written back (the classifier refuses it outright).
MAX_RENDERED_BYTES = 256 * 1024
# Compound commands and substitutions within each other, deeper than this, are not written back.
MAX_NESTING = 60
# A redirection's descriptor with more digits than this is not written back (bash reads one that does not fit an int
# as a word), nor a numeric brace range of more words than this (`{1..999999999}` is gigabytes on the host).
MAX_FD_DIGITS = 4
MAX_BRACE_WORDS = 10_000

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = re.compile(r"[0-9@*#?$!_-]")
# Reserved words are keywords only unquoted in command position: a command word spelling one is kept quoted.
_RESERVED = {
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
    "function", "time", "coproc", "{", "}", "!", "[[", "]]",
}  # fmt: skip
_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_BRACKET = re.compile(r"\[[!^]?\]?[A-Za-z0-9_.,:+@%=-]*(\[:[a-z]+:\][A-Za-z0-9_.,:+@%=-]*)*\]")
_TILDE_PREFIX = re.compile(r"~([+-][0-9]*|[A-Za-z0-9._-]*)")
_ARITH_NUMBERS = re.compile(r"[0-9 +\-*/%()]*")
_NUMERIC_BRACES = re.compile(r"\{-?[0-9]+\.\.-?[0-9]+(\.\.-?[0-9]+)?\}")
_PLAIN_OPS = {":-", "-", ":+", "+", ":?", "?", ":=", "=", "#", "##", "%", "%%"}
_PLAIN_OPERAND = re.compile(r"[A-Za-z0-9_./:@%+,=*?-]*")
_ESCAPED = re.compile(r"\\.", re.S)
_HIGH_ESCAPE = re.compile(r"\\(x[89a-fA-F][0-9a-fA-F]?|[2-3][0-7]{2}|[uU]|c[^\x00-\x7f])")
_DQ_SPECIAL = re.compile(r'["$`]|\\(?=[\\"$`\n]|\Z)')
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_TILDE_AFTER = re.compile(r"[=:]~")
_EXTGLOB = re.compile(r"[@!+*?]\(")
_QUOTE_IN_WORD = re.compile(r"(?<!\\)['\"]")
_HEREDOC_ESCAPE = re.compile(r"\\([$`\\\n])")
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_:.-]*")
_TEST_FLAG = re.compile(r"-[A-Za-z]{1,2}")
_REDIRECT_OPS = {">", ">>", "<", "&>", "&>>", ">&", "<&", ">|", ">&-", "<&-"}
_LIST_OPS = {"&&", "||"}
_PIPE_OPS = {"|", "|&"}
_CASE_ENDS = {";;", ";&", ";;&"}
_TEST_OPS = {"=", "==", "!=", "<", ">", "&&", "||", "!", "(", ")"}

# Why a text could not be written back when the walk ran out of stack: it depends on how deep the caller already was.
NESTED_TOO_DEEPLY = "nested too deeply to write back"


@dataclass(frozen=True)
class Canonical:
    """The text bash is given for a command, or None with why it cannot be written back faithfully."""

    text: str | None
    why: str = ""


class _Unfaithful(Exception):
    """A construct the renderer cannot write back so that bash reads it as the tree does."""


def canonical(command: str) -> Canonical:
    """The canonical form of `command` (see the module's docstring)."""
    source = command.encode("utf-8", "surrogatepass")
    if len(source) > MAX_RENDERED_BYTES:
        return Canonical(None, f"over {MAX_RENDERED_BYTES // 1024} KB: it is run only as written")
    try:
        text = _render(source)
        # A line continuation is read two ways by the classifier (tools/commands/); both must write the same.
        if b"\\\n" in source and _render(source.replace(b"\\\n", b"")) != text:
            raise _Unfaithful("a line continuation that the grammar and bash may read differently")
        if _render(text.encode("utf-8", "surrogatepass")) != text:
            raise _Unfaithful("its written-back form does not read back as itself")
        if (found := _outside_single_quotes(text)) is not None:
            raise _Unfaithful(f"{found!r} outside single quotes, which a multibyte locale may read differently")
    except _Unfaithful as exc:
        return Canonical(None, str(exc))
    except RecursionError:
        return Canonical(None, NESTED_TOO_DEEPLY)
    return Canonical(text)


def _render(source: bytes) -> str:
    """The canonical form; a long text in the pieces the classifier parses it in (tools/shellwords.py: chunks), each
    written back on its own: a cut inside any construct leaves a piece that does not parse, which is refused."""
    pieces = chunks(source)
    if pieces is None:
        raise _Unfaithful(f"over {MAX_RUN:,} bytes without a `;` or a line break")
    out: list[str] = []
    background = False
    cut = b""
    for piece in pieces:
        read, _ = as_bash_reads(piece)
        root = parser().parse(read).root_node
        if root.has_error:
            raise _Unfaithful("it does not parse as a shell command")
        text, ends_in_background = _Writer(piece).body(root.children)
        if text:
            if out:
                out.append(" " if background else "\n" if cut == b"\n" else "; ")
            out.append(text)
            background = ends_in_background
        cut = piece[-1:]
    return "".join(out)


def quote(value: str) -> str:
    """A literal word: bare when it holds only characters no shell treats specially, else single-quoted (a backslash
    before a line break split from it by the quotes, so no reader takes them for a line continuation)."""
    return value if _SAFE.fullmatch(value) else shlex.quote(value).replace("\\\n", "\\'\n'")


def _dq_escape(value: str) -> str:
    """Literal text inside double quotes: `"`, `$` and a backquote escaped, and a backslash where it would escape
    what follows it (or ends the piece, before whatever comes next)."""
    escaped = _DQ_SPECIAL.sub(lambda m: "\\" + m.group(0), value)
    return escaped.replace("\\\\\n", '\\\\""\n')  # `\\` then a line break: closed and reopened between


# Where an expansion starts: text the grammar left literal that bash would expand is not written back as literal.
_EXPANDS = re.compile(r"\$[A-Za-z0-9_{(\[@*#?$!-]|`")


def _literal_stretch(raw: str) -> str:
    """`raw` (text between the expansions the grammar found), refused if bash would find another in it."""
    plain = _ESCAPED.sub("", raw)
    if _EXPANDS.search(plain):
        raise _Unfaithful(
            f"an expansion the grammar did not read as one ({plain.strip()[:30]!r}) is only run as written"
        )
    return raw


@dataclass
class _Piece:
    """One rendered piece of a word; `name` is set for a `$NAME` that must be braced if a name character follows."""

    text: str
    name: str = ""


class _Writer:
    def __init__(self, source: bytes) -> None:
        self.src = source  # node text is read from the original bytes (the parsed copy had some made plain)
        self.depth = 0
        self.written: dict[tuple[str, bytes], str] = {}

    def raw(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Unfaithful("nested too deeply to write back")

    # ------------------------------------------------------------------ statements

    def body(self, children: list[Node]) -> tuple[str, bool]:
        """Statements among `children`, each ended as it was (`;`, `&`, or a line break where none was written);
        whether the last one runs in the background."""
        parts: list[list[str]] = []  # [text, how it was ended]
        for child in children:
            if child.type == "comment":
                continue
            if not child.is_named:
                if child.type in (";", "&") and parts and not parts[-1][1]:
                    parts[-1][1] = child.type
                elif child.type not in (";", "\n"):
                    raise _Unfaithful(f"unexpected {child.type!r} between statements")
                continue
            parts.append([self.statement(child), ""])
        out: list[str] = []
        for i, (text, ended) in enumerate(parts):
            out.append(text + (" &" if ended == "&" else ""))
            if i + 1 < len(parts):
                out.append({"&": " ", ";": "; "}.get(ended, "\n"))
        return "".join(out), bool(parts and parts[-1][1] == "&")

    def block(self, children: list[Node], what: str) -> str:
        """A body that must hold a statement, terminated so a keyword may follow it."""
        text, background = self.body(children)
        if not text:
            raise _Unfaithful(f"an empty {what}")
        return text if background else text + ";"

    def statement(self, node: Node) -> str:
        # A statement's form depends on its own text and what follows it: the next byte (how a `$` at its end was
        # read) or, with a here-document in it, the rest of the line it ends on. A long command repeats itself, and
        # each repeat is written once.
        text = self.src[node.start_byte : node.end_byte]
        after = node.end_byte + 1
        if b"<<" in text:
            line_end = self.src.find(b"\n", node.end_byte)
            after = line_end if line_end >= 0 else len(self.src)
        key = (node.type, self.src[node.start_byte : after])
        known = self.written.get(key)
        if known is not None:
            return known
        self.nested()
        try:
            text = self._statement(node)
        finally:
            self.depth -= 1
        self.written[key] = text
        return text

    def _statement(self, node: Node) -> str:
        kind = node.type
        if kind == "command":
            return self.command(node, [])
        if kind == "redirected_statement":
            return self.redirected(node)
        if kind == "list":
            return self.list_(node)
        if kind == "pipeline":
            return self.pipeline(node.children)
        if kind == "negated_command":
            inner = [c for c in node.named_children if c.type != "comment"]
            if len(inner) != 1:
                raise _Unfaithful("a negation of more than one command")
            return "! " + self.statement(inner[0])
        if kind == "subshell":
            return "( " + self.body(_between(node, "(", ")"))[0] + " )"
        if kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                raise _Unfaithful("an arithmetic command")
            return "{ " + self.block(_between(node, "{", "}"), "group") + " }"
        if kind == "if_statement":
            return self.if_(node)
        if kind in ("while_statement",):
            keyword = node.children[0].type
            group = node.named_children[-1]
            if group.type != "do_group" or keyword not in ("while", "until"):
                raise _Unfaithful("a loop the renderer does not know")
            condition = [c for c in node.children[1:] if c != group]
            return f"{keyword} {self.block(condition, 'condition')} {self.do_group(group)}"
        if kind == "for_statement":
            return self.for_(node)
        if kind == "case_statement":
            return self.case(node)
        if kind == "function_definition":
            return self.function(node)
        if kind in ("variable_assignment", "variable_assignments"):
            assigns = [node] if kind == "variable_assignment" else node.named_children
            return " ".join(self.assignment(a) for a in assigns)
        if kind in ("declaration_command", "unset_command"):
            return self.declaration(node)
        if kind == "test_command":
            return self.test(node)
        raise _Unfaithful(f"a {kind.replace('_', ' ')} is only run as written")

    def list_(self, node: Node) -> str:
        # `a && b || c` nests to the left as deep as it is long: walked down the spine, not recursively.
        tail: list[str] = []
        while node.type == "list":
            kids = [c for c in node.children if c.type != "comment"]
            if len(kids) != 3 or kids[1].type not in _LIST_OPS:
                raise _Unfaithful("a list the renderer does not know")
            tail.append(f"{kids[1].type} {self.statement(kids[2])}")
            node = kids[0]
        return " ".join([self.statement(node), *reversed(tail)])

    def pipeline(self, children: list[Node]) -> str:
        out: list[str] = []
        for child in children:
            if child.type == "comment":
                continue
            if not child.is_named:
                if child.type not in _PIPE_OPS:
                    raise _Unfaithful(f"unexpected {child.type!r} in a pipeline")
                out.append(child.type)
            else:
                out.append(self.statement(child))
        return " ".join(out)

    def if_(self, node: Node) -> str:
        """`if C; then B; elif C; then B; else B; fi`, each part from the tokens that bound it."""
        out: list[str] = []
        segment: list[Node] = []
        for child in node.children:
            kind = child.type if not child.is_named else ""
            if kind in ("if", "elif"):
                continue
            if kind == "then":
                out.append(f"{node.children[0].type} {self.block(segment, 'condition')} then")
                segment = []
            elif child.type in ("elif_clause", "else_clause") or kind == "fi":
                if segment or (out and out[-1].endswith(" then")):
                    out.append(self.block(segment, "branch"))
                    segment = []
                if child.type == "elif_clause":
                    out.append(self.if_(child))
                elif child.type == "else_clause":
                    out.append("else " + self.block(_between(child, "else", None), "branch"))
                elif kind == "fi":
                    out.append("fi")
            else:
                segment.append(child)
        if node.type == "elif_clause":
            if segment or (out and out[-1].endswith(" then")):
                out.append(self.block(segment, "branch"))
        elif not out or out[-1] != "fi":
            raise _Unfaithful("an if without its fi")
        return " ".join(out)

    def do_group(self, node: Node) -> str:
        return "do " + self.block(_between(node, "do", "done"), "loop body") + " done"

    def for_(self, node: Node) -> str:
        keyword = node.children[0].type
        name = node.child_by_field_name("variable")
        group = node.named_children[-1]
        if keyword not in ("for", "select") or name is None or group.type != "do_group":
            raise _Unfaithful("a loop the renderer does not know")
        if not _IDENTIFIER.fullmatch(self.raw(name)):
            raise _Unfaithful("a loop variable that is not a plain name")
        values = [c for c in node.children if c.is_named and c not in (name, group) and c.type != "comment"]
        has_in = any(c.type == "in" and not c.is_named for c in node.children)
        words = " ".join(self.word(g) for g in group_words(values, self.src)) if has_in else ""
        head = f"{keyword} {self.raw(name)}" + (f" in {words};" if has_in else ";")
        return f"{head} {self.do_group(group)}"

    def case(self, node: Node) -> str:
        subject = [c for c in node.children if c.is_named and c.type not in ("case_item", "comment")]
        items = [c for c in node.named_children if c.type == "case_item"]
        out = [f"case {self.word(subject)} in"]
        for item in items:
            patterns: list[list[Node]] = [[]]
            body: list[Node] = []
            ending = ";;"
            closed = False
            for child in item.children:
                if not closed:
                    if child.type == ")" and not child.is_named:
                        closed = True
                    elif child.type == "|" and not child.is_named:
                        patterns.append([])
                    elif child.type == "(" and not child.is_named:
                        continue
                    else:
                        patterns[-1].append(child)
                elif child.type in _CASE_ENDS and not child.is_named:
                    ending = child.type
                else:
                    body.append(child)
            if not closed or not all(patterns):
                raise _Unfaithful("a case pattern the renderer does not know")
            text, _ = self.body(body)
            out.append("|".join(self.word(p, pattern=True) for p in patterns) + ") " + (text + " " if text else ""))
            out[-1] += ending
        return " ".join([*out, "esac"])

    def function(self, node: Node) -> str:
        name = next((c for c in node.named_children if c.type == "word"), None)
        body = node.child_by_field_name("body")
        if name is None or body is None or not _FUNCTION_NAME.fullmatch(self.raw(name)):
            raise _Unfaithful("a function whose name the renderer does not write back")
        if self.raw(name) in _RESERVED:
            raise _Unfaithful("a function named like a reserved word")
        redirects = [c for c in node.named_children if c.type in ("file_redirect", "herestring_redirect")]
        if any(c.type == "heredoc_redirect" for c in node.named_children):
            raise _Unfaithful("a function with a here-document")
        text = f"{self.raw(name)} () {self.statement(body)}"
        return " ".join([text, *self.redirects(redirects)[1]])

    def redirected(self, node: Node) -> str:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c != body]
        if body is None:
            return self.command(None, redirects)
        if body.type == "command":
            return self.command(body, redirects)
        stdin, rest, tail = self.redirects(redirects)
        return " ".join([self.statement(body), *stdin, *rest, *tail])

    # ------------------------------------------------------------------ simple commands

    def command(self, node: Node | None, extra: list[Node]) -> str:
        assigns: list[str] = []
        pieces: list[Node] = []
        redirects = list(extra)
        for child in node.children if node is not None else []:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.insert(len(redirects) - len(extra), child)
            elif child.type == "variable_assignment":
                assigns.append(self.assignment(child))
            elif child.type == "command_name":
                pieces.extend(child.children)
            elif child.type != "comment":
                pieces.append(child)
        groups = group_words(pieces, self.src)
        words = [self.word(g) for g in groups]
        # A quoted `'if'` or `'a=b'` is a command name; bare it would be a keyword or an assignment. `time` and
        # `coproc` written bare are bash's keywords, which the grammar reads as a command: kept bare.
        spelled = words and (words[0] in _RESERVED or "=" in words[0]) and _SAFE.fullmatch(words[0] + "x")
        if spelled and self.raw_group(groups[0]) not in ("time", "coproc"):
            words[0] = "'" + words[0] + "'"
        stdin, rest, tail = self.redirects(redirects)
        text = " ".join([*assigns, *words, *stdin, *rest])
        if not text:
            raise _Unfaithful("an empty command")
        return " ".join([text, *tail])

    def assignment(self, node: Node) -> str:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        op = next((c.type for c in node.children if not c.is_named and c.type in ("=", "+=")), None)
        if name is None or name.type != "variable_name" or op is None:
            raise _Unfaithful("an assignment to a subscript or a computed name")
        head = self.raw(name) + op
        if value is None:
            return head
        rest = [c for c in node.children if c.start_byte >= value.start_byte]
        if value.type == "array":
            items = [c for c in value.named_children if c.type != "comment"]
            return head + "(" + " ".join(self.word(g) for g in group_words(items, self.src)) + ")"
        return head + self.word(rest, assignment=True)

    def declaration(self, node: Node) -> str:
        out: list[str] = []
        pieces: list[Node] = []
        redirects: list[Node] = []

        def flush() -> None:
            out.extend(self.word(g) for g in group_words(pieces, self.src))
            pieces.clear()

        for child in node.children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.append(child)
            elif not child.is_named and child.type.isalpha():
                out.append(child.type)  # the keyword: declare, export, local, unset, …
            elif child.type == "variable_assignment":
                flush()
                out.append(self.assignment(child))
            elif child.type == "variable_name":
                flush()
                out.append(quote(self.raw(child)))
            elif child.type != "comment":
                pieces.append(child)
        flush()
        stdin, rest, tail = self.redirects(redirects)
        return " ".join([*out, *stdin, *rest, *tail])

    def test(self, node: Node) -> str:
        opener = node.children[0].type if node.children else ""
        if opener not in ("[", "[["):
            raise _Unfaithful("a test the renderer does not know")
        closer = "]" if opener == "[" else "]]"
        out: list[str] = []
        todo = list(reversed(node.children[1:-1]))
        while todo:
            child = todo.pop()
            if child.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
                todo.extend(reversed(child.children))
            elif child.type == "test_operator" or not child.is_named:
                op = self.raw(child).strip()
                if _TEST_FLAG.fullmatch(op):
                    out.append(op)
                elif op in _TEST_OPS:
                    out.append(op if opener == "[[" else quote(op))
                else:
                    raise _Unfaithful(f"a test with {op!r} is only run as written")
            elif child.type in ("regex",):
                raise _Unfaithful("a regular expression match is only run as written")
            else:
                out.append(self.word([child], pattern=opener == "[["))
        if node.children[-1].type != closer:
            raise _Unfaithful("a test without its end")
        return " ".join([opener, *out, closer])

    # ------------------------------------------------------------------ redirections

    def redirects(self, nodes: list[Node]) -> tuple[list[str], list[str], list[str]]:
        """(stdin from a here-document or here-string — first, where the grammar reads it; the others in order;
        what a here-document's line goes on with: `| sh`, `&& next`)."""
        stdin: list[str] = []
        rest: list[str] = []
        tail: list[str] = []
        for node in nodes:
            if node.type == "file_redirect":
                rest.append(self.file_redirect(node))
            elif node.type == "herestring_redirect":
                if any(c.type == "file_descriptor" for c in node.children):
                    raise _Unfaithful("a here-string to another descriptor")
                stdin.append("<<< " + self.word([c for c in node.named_children]))
            elif node.type == "heredoc_redirect":
                text, more, goes_on = self.heredoc(node)
                stdin.append(text)
                rest.extend(more)
                tail.extend(goes_on)
            elif node.type != "comment":
                raise _Unfaithful(f"a {node.type.replace('_', ' ')} is only run as written")
        if len(stdin) > 1 or (stdin and any(r.startswith(("<", "0")) for r in rest)):
            raise _Unfaithful("a here-document beside another redirection of standard input")
        if tail and nodes and nodes[-1].type != "heredoc_redirect":
            raise _Unfaithful("a here-document whose line goes on before other redirections")
        return stdin, rest, tail

    def file_redirect(self, node: Node) -> str:
        fd = ""
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = self.raw(child)
            elif not child.is_named:
                op += child.type
            else:
                targets.append(child)
        if (fd and not fd.isdigit()) or op not in _REDIRECT_OPS:
            raise _Unfaithful(f"a redirection {self.raw(node)!r} is only run as written")
        if len(fd) > MAX_FD_DIGITS:
            # bash takes digits that do not fit an int for a word (an argument, even a command), not a descriptor
            raise _Unfaithful(f"a descriptor number {fd[:12]} that bash may read as a word")
        if op in (">&-", "<&-"):
            if targets:
                raise _Unfaithful("a closed descriptor with a target")
            return fd + op
        groups = group_words(targets, self.src)
        if len(groups) != 1:
            raise _Unfaithful("a redirection with other than one target")
        target = self.raw_group(groups[0])
        if op in (">&", "<&") and (target.isdigit() or target == "-"):
            return f"{fd}{op}{target}"
        word = self.word(groups[0])
        # `> >(cmd)` needs its blank: `>>(` would be an append.
        return f"{fd}{op}{' ' if word.startswith(('<(', '>(')) else ''}{word}"

    def raw_group(self, nodes: list[Node]) -> str:
        return self.src[nodes[0].start_byte : nodes[-1].end_byte].decode("utf-8", "surrogatepass")

    def heredoc(self, node: Node) -> tuple[str, list[str], list[str]]:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        strip = any(c.type == "<<-" for c in node.children)
        if start is None or end is None or any(c.type == "file_descriptor" for c in node.children):
            raise _Unfaithful("a here-document the renderer does not know")
        delimiter = dequote(self.raw(start))
        quoted = any(q in self.raw(start) for q in "'\"\\")
        text = self.raw(body) if body is not None else ""
        lines = text.split("\n")
        if strip:
            if not quoted and any(line.startswith("\t") for line in lines):
                raise _Unfaithful("an indented here-document with expansions")
            lines = [line.lstrip("\t") for line in lines]
        # The whole line the grammar ended it at: bash ends it only at a line that is the delimiter alone.
        line_start = self.src.rfind(b"\n", 0, end.start_byte) + 1
        line_end = self.src.find(b"\n", end.end_byte)
        closing = self.src[line_start : line_end if line_end >= 0 else len(self.src)].decode("utf-8", "surrogatepass")
        if delimiter in lines or (closing.lstrip("\t") if strip else closing) != delimiter:
            raise _Unfaithful(f"a here-document that bash ends elsewhere than at {delimiter!r}")
        if quoted or body is None or not text:
            value = "\n".join(lines)
            if not value:
                stdin = "</dev/null"
            elif not value.endswith("\n"):
                raise _Unfaithful("a here-document without its last line break")
            else:
                stdin = "<<< " + quote(value[:-1])
        else:
            stdin = "<<< " + self.heredoc_body(body)
        more: list[str] = []
        tail: list[str] = []
        for child in node.children:
            if child in (start, body, end) or child.type in ("<<", "<<-", "comment"):
                continue
            if child.type == "file_redirect":
                if tail:
                    raise _Unfaithful("a redirection after a here-document's line goes on")
                more.append(self.file_redirect(child))
            elif not child.is_named and child.type in _LIST_OPS | _PIPE_OPS:
                tail.append(child.type)
            elif child.type == "pipeline" and child.children and child.children[0].type in _PIPE_OPS:
                tail.append(self.pipeline(child.children))
            elif child.is_named and tail and tail[-1] in _LIST_OPS | _PIPE_OPS:
                tail.append(self.statement(child))
            else:
                raise _Unfaithful("a here-document whose line goes on in a way the renderer does not know")
        if tail and tail[-1] in _LIST_OPS | _PIPE_OPS:
            raise _Unfaithful("a here-document whose line ends in an operator")
        return stdin, more, tail

    def heredoc_body(self, body: Node) -> str:
        """An unquoted here-document's body as a here-string (its last line break dropped)."""
        parts = self.around_expansions(body.named_children, body.start_byte, body.end_byte, _unescape_heredoc)
        tail = parts[-1]
        if not isinstance(tail, str) or not tail.endswith("\n"):
            raise _Unfaithful("a here-document without its last line break")
        return _double_quoted([*parts[:-1], tail[:-1]])

    def around_expansions(
        self, children: list[Node], pos: int, end: int, unescape: Callable[[str], str]
    ) -> list[str | list[_Piece]]:
        """The literal stretches (source bytes between the expansions the grammar found, unescaped as the quoting
        says; the last one always, empty or not) and the expansions' pieces, in order. The grammar folds the blanks
        before an expansion into its node, so each stretch runs to the expansion's first non-blank byte."""
        parts: list[str | list[_Piece]] = []
        for child in children:
            if child.type in ('"', "string_content", "heredoc_content"):
                continue
            lead = len(self.raw(child)) - len(self.raw(child).lstrip())
            core = child.start_byte + lead
            parts.append(unescape(_literal_stretch(self.src[pos:core].decode("utf-8", "surrogatepass"))))
            parts.append(self.piece(child, quoted=True))
            pos = child.end_byte
        last = self.src[pos:end].decode("utf-8", "surrogatepass") if end > pos else ""
        parts.append(unescape(_literal_stretch(last)))
        return parts

    # ------------------------------------------------------------------ words

    def word(self, nodes: list[Node], *, pattern: bool = False, assignment: bool = False) -> str:
        """One shell word from the nodes that make it, each piece keeping the quoting it had."""
        if len(nodes) == 1 and nodes[0].type == "word":
            raw = self.raw(nodes[0])
            if _SAFE.fullmatch(raw):  # most words: nothing quoted, escaped, expanded or globbed
                return raw
        pieces: list[_Piece] = []
        bare = [self.bare(node) for node in nodes]
        pieces = self.pieces(nodes, first=True, pattern=pattern)
        joined = "".join(bare)
        if braces(joined):
            raise _Unfaithful("brace expansion is only run as written")
        if not assignment and _ASSIGNMENT_WORD.match(joined) and _TILDE_AFTER.search(joined):
            raise _Unfaithful("a tilde in an assignment-like word is only run as written")
        if assignment and ":~" in joined:
            raise _Unfaithful("a tilde after a colon in an assignment is only run as written")
        text = _join(pieces)
        return text if text else "''"

    def bare(self, node: Node) -> str:
        """The unquoted literal text of a word's piece (anything else as `Q`): where braces and tildes act."""
        if node.type in ("word", "extglob_pattern"):
            return _ESCAPED.sub("QQ", self.raw(node))
        if node.type == "concatenation":
            return "".join(self.bare(c) for c in node.children)
        return "Q" * len(self.raw(node))

    def pieces(
        self, nodes: list[Node], *, quoted: bool = False, first: bool = False, pattern: bool = False
    ) -> list[_Piece]:
        """The pieces of adjacent nodes; unquoted literals that touch are lexed as one (`[ab].log` is one pattern,
        which the grammar cuts into four words)."""
        out: list[_Piece] = []
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

    def piece(self, node: Node, *, quoted: bool = False, first: bool = False, pattern: bool = False) -> list[_Piece]:
        kind = node.type
        raw = self.raw(node)
        if kind in ("word", "extglob_pattern"):
            if kind == "extglob_pattern" and _EXTGLOB.search(raw):
                raise _Unfaithful("an extended glob is only run as written")
            return self.unquoted(raw, first)
        if kind in ("number", "variable_name"):
            return [_Piece(quote(raw))]
        if kind == "$":
            return [_Piece("\\$" if quoted else "'$'")]
        if kind == "raw_string":
            return [_Piece(quote(raw[1:-1]) if raw[1:-1] else "''")]
        if kind == "ansi_c_string":
            if _HIGH_ESCAPE.search(raw[2:-1]):
                # bash writes `\\xe2` as that byte and `\\u2713` in the locale's encoding: not a character to quote
                raise _Unfaithful("an ANSI-C string that spells bytes above 127 is only run as written")
            value = decode_ansi_c(raw[2:-1])
            return [_Piece(quote(value) if value else "''")]
        if kind in ("string", "translated_string"):
            return self.string(node)
        if kind == "concatenation":
            return self.pieces(node.children, quoted=quoted, first=first, pattern=pattern)
        if kind == "simple_expansion":
            name = raw.strip()[1:]
            if not (_IDENTIFIER.fullmatch(name) or _SPECIAL.fullmatch(name)):
                raise _Unfaithful(f"an expansion {raw.strip()!r} is only run as written")
            return [_Piece("$" + name, name)]
        if kind == "expansion":
            return [_Piece(self.expansion(node))]
        if kind in ("command_substitution", "process_substitution"):
            return [_Piece(self.substitution(node))]
        if kind == "arithmetic_expansion":
            inner = raw.strip()[3:-2]
            if not raw.strip().startswith("$((") or not _ARITH_NUMBERS.fullmatch(inner):
                raise _Unfaithful("arithmetic on variables is only run as written")
            return [_Piece(f"$(({inner}))")]
        if kind == "brace_expression":
            numeric = _NUMERIC_BRACES.fullmatch(raw)
            if quoted or not numeric:
                raise _Unfaithful("brace expansion is only run as written")
            low, high = (int(n) for n in raw[1:-1].split("..")[:2])
            step = abs(int(numeric.group(1)[2:])) if numeric.group(1) else 1
            if abs(high - low) // max(step, 1) + 1 > MAX_BRACE_WORDS:
                raise _Unfaithful(f"a brace range of more than {MAX_BRACE_WORDS:,} words")
            return [_Piece(raw)]
        raise _Unfaithful(f"a {kind.replace('_', ' ')} is only run as written")

    def unquoted(self, raw: str, first: bool) -> list[_Piece]:
        """An unquoted literal: escapes decoded and quoted, glob characters and a leading tilde left bare."""
        out: list[_Piece] = []
        literal: list[str] = []

        def flush() -> None:
            if literal:
                out.append(_Piece(quote("".join(literal))))
                literal.clear()

        _literal_stretch(raw)
        if _QUOTE_IN_WORD.search(_ESCAPED.sub("", raw)):
            raise _Unfaithful("a quote the grammar read as part of a word is only run as written")
        i, n = 0, len(raw)
        if first and raw.startswith("~"):
            prefix = _TILDE_PREFIX.match(raw)
            assert prefix is not None  # `~` alone matches
            if prefix.end() < n and raw[prefix.end()] != "/":
                raise _Unfaithful("a tilde the renderer does not write back")
            out.append(_Piece(prefix.group(0)))
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
                out.append(_Piece(c))
            elif c == "[":
                bracket = _BRACKET.match(raw, i)
                if bracket is not None:
                    flush()
                    out.append(_Piece(bracket.group(0)))
                    i = bracket.end()
                    continue
                if "]" in raw[i:]:
                    raise _Unfaithful("a bracket pattern the renderer does not write back")
                literal.append(c)
            else:
                literal.append(c)
            i += 1
        flush()
        return out

    def string(self, node: Node) -> list[_Piece]:
        """A double-quoted string, written as one: literal stretches escaped, expansions in it kept."""
        children = node.children
        start = node.start_byte
        if children and children[0].type == "$":
            start = children[0].end_byte
            children = children[1:]
        return [_Piece(_double_quoted(self.around_expansions(children, start + 1, node.end_byte - 1, unescape_double)))]

    def expansion(self, node: Node) -> str:
        """`${NAME}`, `${#NAME}` and `${NAME<op>text}` with plain text; anything else is run only as written."""
        inner = [c for c in node.children if c.type not in ("${", "}")]
        raw = self.raw(node).strip()
        names = [c for c in inner if c.type in ("variable_name", "special_variable_name")]
        if len(names) != 1:
            raise _Unfaithful(f"a parameter expansion {raw!r} is only run as written")
        name = self.raw(names[0])
        rest = [c for c in inner if c != names[0]]
        if not rest:
            return "${" + name + "}"
        if len(rest) == 1 and rest[0].type == "#" and inner[0] == rest[0]:
            return "${#" + name + "}"
        if inner[0] == names[0] and not rest[0].is_named and rest[0].type in _PLAIN_OPS:
            operand = self.src[rest[0].end_byte : node.end_byte - 1].decode("utf-8", "surrogatepass")
            if all(c.type in ("word", "regex", "number") for c in rest[1:]) and _PLAIN_OPERAND.fullmatch(operand):
                return "${" + name + rest[0].type + operand + "}"
        raise _Unfaithful(f"a parameter expansion {raw!r} is only run as written")

    def substitution(self, node: Node) -> str:
        opener = node.children[0].type.strip() if node.children else ""
        raw = self.raw(node).strip()
        if opener == "`" and "\\" in raw:
            raise _Unfaithful("a backquoted command with a backslash in it is only run as written")
        if opener not in ("$(", "`", "<(", ">("):
            raise _Unfaithful(f"a substitution {raw[:20]!r} is only run as written")
        inner = [c for c in node.children[1:-1]]
        self.nested()
        try:
            text, _ = self.body(inner)
        finally:
            self.depth -= 1
        if not text:
            raise _Unfaithful("an empty substitution")
        # `$( (a) )` keeps its blanks: `$((` would open arithmetic.
        opened = "$(" if opener == "`" else opener
        return f"{opened} {text} )" if text.startswith("(") else f"{opened}{text})"


def _double_quoted(parts: list[str | list[_Piece]]) -> str:
    """Literal text (str) and expansions (pieces) as one double-quoted word — or, when a literal holds a non-ASCII
    character, each literal single-quoted and each expansion double-quoted on its own: in a multibyte locale (GBK,
    BIG5, Shift_JIS) a character's last byte may be a `\\` or a backquote, which inside double quotes escapes
    or opens what follows; no such encoding has a `'` there, and inside single quotes nothing is special."""
    if all(isinstance(p, list) or p.isascii() for p in parts):
        return '"' + _join([q for p in parts for q in (p if isinstance(p, list) else [_Piece(_dq_escape(p))])]) + '"'
    out = [quote(p) if isinstance(p, str) else '"' + _join(p) + '"' for p in parts if p]
    return "".join(out) or "''"


def _outside_single_quotes(text: str) -> str | None:
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


def _between(node: Node, opener: str, closer: str | None) -> list[Node]:
    kids = node.children
    if not kids or kids[0].type != opener or (closer is not None and kids[-1].type != closer):
        raise _Unfaithful(f"a {node.type.replace('_', ' ')} the renderer does not know")
    return kids[1:-1] if closer is not None else kids[1:]


def _join(pieces: list[_Piece]) -> str:
    out: list[str] = []
    for i, piece in enumerate(pieces):
        following = pieces[i + 1].text[:1] if i + 1 < len(pieces) else ""
        if not piece.name:
            out.append(piece.text)
        elif _IDENTIFIER.fullmatch(piece.name):
            braced = following.isalnum() or following in ("_", "[")
            out.append("${" + piece.name + "}" if braced else piece.text)
        else:  # a special parameter is one character: only a digit after a positional one could join it
            out.append("${" + piece.name + "}" if piece.name.isdigit() and following.isdigit() else piece.text)
    return "".join(out)


def _unescape_heredoc(raw: str) -> str:
    """An unquoted here-document's literal text: a backslash escapes only `$`, a backquote, itself and a newline."""
    return _HEREDOC_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
