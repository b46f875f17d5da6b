"""Command permission check, run before anything touches a host.

Claude-Code-style semantics: deny beats ask beats allow, first match wins within a class, and a
compound command is split so that every simple command in it must be allowed on its own, and an allow
pattern's `*` never reaches across words (except at its end), so `*python* x.py *` cannot allow
`bash -c 'anything' python x.py`. A command that matches no allow pattern is `ask`, and so is output
redirected outside the working directory (`>/etc/…`, `>~/…`, `>../…`): an allow pattern for `echo *`
must not quietly allow `echo x>/etc/passwd`.

The command is parsed by a real shell grammar (tree-sitter-bash), not split by regular expressions: a
regex classifier was bypassed (issue 19, H1) by a quoted paren inside `$(…)`, by redirections without
spaces and by expansions that run code without a literal `$(`. From the parse tree:

- every simple command — in pipelines, lists, subshells, `{ }` groups, if/while/for/case bodies and
  function definitions, and in the bodies of `$(…)`, backticks and `<(…)`/`>(…)` — is checked on its
  own, as its argv with quotes removed;
- deny and ask patterns match the whole simple command as one string (a `*` may cover anything: errs
  towards refusing and asking), tried against several renderings of it: its source text, its argv, and
  a normalized argv (the command word's basename, short flags split, de-duplicated and sorted, then
  also combined), with the pattern normalized the same way, so `\\rm -r -f /`, `/bin/rm -fr /` and
  `'rm' -rf /` all match `rm -rf /*`;
- what a wrapper runs (`env`, `sudo`, `nice`, `timeout`, `xargs`, `find -exec`, `command`, `exec`,
  …) and what `eval` or `sh -c` would parse is checked against deny and ask patterns as well — the
  wrapper itself still needs an allow pattern of its own;
- anything the classifier cannot fully account for is `ask`, never `allow`: a syntax error, a
  construct it does not model, a parameter expansion that can assign or evaluate (`${x:=…}`,
  `${x@P}`, `${!x}`, subscripts), arithmetic, `test -v` and `[[ … ]]` with `-v` or an arithmetic
  comparison (they evaluate array subscripts, which run `$(…)`), a word whose text spells `$(` or a
  backtick once its quotes and escapes are decoded, a command name that is itself an expansion;
- what it cannot look inside at all is `deny`, since a denied command may hide there and a person
  at a gate could not see it either: over 1 MB, nested over 40 levels deep, or a command over 32 KB
  that does not parse in the pieces it is cut into (a cut inside a quote or a here-document makes the
  rest read as something else) or has 2 KB without a `;` or a line break to cut at.

Parsing is linear in the length of the command, and so is everything done with the tree.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import tree_sitter_bash
from pydantic import BaseModel
from tree_sitter import Language, Node, Parser

CommandClass = Literal["allow", "ask", "deny"]

# Past this a command is not parsed at all: no campaign command is anywhere near it, and a bound keeps
# the parser's memory and time predictable whatever a model sends.
MAX_COMMAND_BYTES = 1_000_000
# Substitutions within substitutions, scripts given to `eval`/`sh -c`, expansions within expansions:
# deeper than this is asked about rather than followed (the walk stays well inside Python's stack).
MAX_DEPTH = 40
# tree-sitter's error recovery is quadratic in the length of what it recovers over (a 400 KB line of
# `cat <>x; ` takes a minute), so a long command is parsed in chunks cut after a `;` or a line break.
# A cut inside a quote, a substitution, a compound command or a here-document leaves both sides
# incomplete, which is a syntax error, which is `ask`: cutting can only make the verdict stricter.
CHUNKED_ABOVE = 32 * 1024
CHUNK = 512
MAX_RUN = 2 * 1024  # a chunk that cannot be cut this short is not parsed at all

_LANGUAGE = Language(tree_sitter_bash.language())
# A tree-sitter Parser is not safe to share between threads; hosts are planned in parallel.
_PARSERS = threading.local()

# Writing to these never leaves the process: they are not files outside the working directory.
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
# Text that bash may still evaluate when the word reaches an arithmetic or subscript context
# (`test -v 'a[$(cmd)]'`, `printf -v`, `read`, …) or a prompt expansion.
_EVALUATED = ("$(", "`", "${", "$[")

_WRITE_OPS = {">", ">>", "&>", "&>>", ">|"}
_DUP_OPS = {">&", "<&"}
_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
# Nodes whose named children are statements (or words, redirects) to walk in turn.
_CONTAINERS = {
    "program", "list", "pipeline", "subshell", "compound_statement", "do_group", "if_statement", "elif_clause",
    "else_clause", "while_statement", "negated_command", "case_statement", "case_item", "for_statement",
    "function_definition", "redirected_statement"
}  # fmt: skip
_WORDS = {
    "word", "number", "raw_string", "string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion",
    "extglob_pattern", "brace_expression"
}  # fmt: skip
_SKIPPED = {"comment", "variable_name", "heredoc_start", "heredoc_end", "file_descriptor"}

# Parameter expansions that only substitute text: no assignment, no evaluation of the value.
_PLAIN_EXPANSION_OPS = {":-", "-", ":+", "+", ":?", "?", "#", "##", "%", "%%"}
# Builtins that take variable *names*, and so evaluate an array subscript written in one.
_NAME_TAKING = {"read", "mapfile", "readarray", "getopts", "wait", "declare", "typeset", "local", "export"}
_NAME_TAKING |= {"readonly", "unset", "printf"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"}
# Wrappers that run their arguments as a command, and the options of each that take a value (so the
# value is not mistaken for the wrapped command). Approximate by design: what is found here is only
# ever checked against deny and ask patterns, in addition to the wrapper's own check.
_WRAPPERS: dict[str, set[str]] = {
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "nohup": set(),
    "time": {"-f", "-o"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "env": {"-u", "-C", "-S"},
    "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(),
    "coproc": set(),
    "xargs": {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--delimiter", "--max-args"},
    "timeout": {"-k", "-s", "--signal", "--kill-after"},
    "taskset": set(),
    "chrt": set(),
    "chroot": set(),
    "flock": {"-w", "-E"},
    "watch": {"-n", "-d"},
    "unbuffer": set(),
    "strace": {"-e", "-o", "-p", "-s", "-u"},
}
# Wrappers whose first operand is not the command (a duration, a mask, a directory, a lock file).
_WRAPPER_SKIPS_OPERAND = {"timeout": 1, "taskset": 1, "chrt": 1, "chroot": 1, "flock": 1}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}
# Spellings of the same option, so that a deny pattern written one way matches the others.
_FLAG_ALIASES: dict[str, dict[str, str]] = {"rm": {"R": "r", "--recursive": "r", "--force": "f"}}


class Verdict(BaseModel):
    klass: CommandClass
    part: str
    pattern: str | None
    reason: str = ""


@dataclass
class _Word:
    """One shell word: `text` is its value with quotes and escapes removed and expansions kept as
    source text (what patterns match); `skeleton` is the same with every expansion's value replaced by
    NUL, so text spelled by literal pieces alone (`'$'"("`) can be told from an expansion's."""

    text: str
    skeleton: str
    dynamic: bool = False  # some of its value is only known when bash runs it
    splits: bool = False  # it may become several words, or none (unquoted expansion, glob, braces)
    bare: str = "Q"  # the unquoted literal text alone (anything else is `Q`): where braces expand


@dataclass
class _Simple:
    part: str
    assigns: list[_Word]
    argv: list[_Word]
    nested: bool  # reached through a wrapper, `eval` or `sh -c`: deny and ask patterns only


@dataclass
class _Ctx:
    src: bytes
    depth: int
    nested: bool


@dataclass
class _Analysis:
    simples: list[_Simple] = field(default_factory=list)
    findings: list[tuple[str, str]] = field(default_factory=list)  # (part, why it must be asked)
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (part, why it cannot be run at all)
    writes: list[tuple[str, _Word]] = field(default_factory=list)  # (part, redirect target)
    changes_directory: bool = False


def _parser() -> Parser:
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = Parser(_LANGUAGE)
    return parser


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape_unquoted(raw: str) -> tuple[str, str, bool]:
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


def _unescape_double(raw: str) -> str:
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


_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_C_ESCAPES |= {"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _decode_ansi_c(body: str) -> str:
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
    return "".join(out)


def _braces(skeleton: str) -> bool:
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


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1] or word


class _Walker:
    """Walks a parse tree, iteratively for statements (a 400 KB `a && a && …` nests that deep)."""

    def __init__(self) -> None:
        self.result = _Analysis()
        self.stack: list[tuple[Node, _Ctx]] = []
        self.seen: set[tuple[str, int, bool]] = set()

    # -- entry points

    def script(self, source: bytes, depth: int, nested: bool, part: str) -> None:
        if depth > MAX_DEPTH:
            self.refuse(part, "nested too deeply to classify")
            return
        chunks = _chunks(source)
        if chunks is None:
            self.refuse(part, f"too long to classify: over {MAX_RUN:,} bytes without a `;` or a line break")
            return
        # Pushed, not walked here: `eval` and `sh -c` scripts are found while the stack is being run;
        # reversed so that the first chunk's findings come first.
        for chunk in reversed(chunks):
            root = _parser().parse(chunk).root_node
            if root.has_error:
                self.find(part, f"cannot parse it as a shell command{self._error_at(root, chunk)}")
                if len(chunks) > 1:
                    # A cut inside a quote or a here-document reads the rest as something else: text
                    # that bash runs may be quoted text here, so even deny patterns cannot be trusted.
                    self.refuse(part, f"over {CHUNKED_ABOVE // 1024} KB and it does not parse in pieces")
            self.stack.append((root, _Ctx(chunk, depth, nested)))

    def run(self) -> _Analysis:
        while self.stack:
            node, ctx = self.stack.pop()
            self.statement(node, ctx)
        return self.result

    def find(self, part: str, why: str) -> None:
        self.result.findings.append((part, why))

    def refuse(self, part: str, why: str) -> None:
        """What the walk could not look inside at all: a denied command may be in there, so it is not
        offered to a person either (deny, with the reason)."""
        self.result.refusals.append((part[:200], f"{why}: it cannot be checked against the deny patterns"))

    @staticmethod
    def _error_at(root: Node, source: bytes) -> str:
        todo = [root]
        while todo:
            node = todo.pop()
            if node.is_error or node.is_missing:
                line, col = node.start_point
                what = "missing " + node.type if node.is_missing else "unexpected text"
                return f" ({what} at line {line + 1}, column {col + 1})"
            todo.extend(reversed(node.children))
        return ""

    # -- statements

    def push(self, nodes: Iterable[Node], ctx: _Ctx) -> None:
        # Reversed so that the stack pops them in source order (findings keep the command's order).
        self.stack.extend((n, ctx) for n in reversed(list(nodes)))

    def statement(self, node: Node, ctx: _Ctx) -> None:
        kind = node.type
        if node.is_error or node.is_missing:
            self.push(node.named_children, ctx)  # still looked through: a denied command stays denied
        elif kind == "command":
            self.simple_command(node, ctx)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node, ctx)
        elif kind == "test_command":
            self.test_command(node, ctx)
        elif kind in ("variable_assignment", "variable_assignments"):
            assigns = [node] if kind == "variable_assignment" else node.named_children
            words = [self.assignment(a, ctx, _text(node)) for a in assigns if a.type == "variable_assignment"]
            self.result.simples.append(_Simple(_text(node), words, [], ctx.nested))
        elif kind == "compound_statement" and node.children and node.children[0].type == "((":
            self.find(_text(node), "an arithmetic command evaluates variables and array subscripts")
            self.scan(node, ctx)
        elif kind == "c_style_for_statement":
            self.find(_text(node), "an arithmetic for loop evaluates variables and array subscripts")
            self.scan(node, ctx)
        elif kind in ("command_substitution", "process_substitution"):
            self.substitution(node, ctx)
        elif kind in _CONTAINERS:
            self.container(node, ctx)
        elif kind in _REDIRECTS:
            self.redirect(node, ctx, _text(node))
        elif kind in _WORDS:
            self.word([node], ctx, _text(node))
        elif kind in _SKIPPED or not node.is_named:
            pass
        else:
            self.find(_text(node), f"a {kind.replace('_', ' ')} is not something the command policy models")
            self.scan(node, ctx)

    def container(self, node: Node, ctx: _Ctx) -> None:
        later: list[Node] = []
        for child in node.named_children:
            # The part is only taken when needed: lists nest as deep as they are long, and taking every
            # level's text would be quadratic.
            if child.type in _REDIRECTS:
                self.redirect(child, ctx, _text(node))
            elif child.type in _WORDS and node.type != "program":
                # for/case values, a function's name: words, evaluated for what they run.
                self.word([child], ctx, _text(node))
            else:
                later.append(child)
        self.push(later, ctx)

    def substitution(self, node: Node, ctx: _Ctx) -> None:
        if ctx.depth + 1 > MAX_DEPTH:
            self.refuse(_text(node), "nested too deeply to classify")
            return
        inner = _Ctx(ctx.src, ctx.depth + 1, ctx.nested)
        self.push((c for c in node.named_children), inner)

    def scan(self, node: Node, ctx: _Ctx) -> None:
        """Find the substitutions inside a construct that is asked about anyway, so that a denied
        command inside it is still denied."""
        todo = list(node.children)
        while todo:
            child = todo.pop()
            if child.type in ("command_substitution", "process_substitution"):
                self.substitution(child, ctx)
            elif child.type == "regex":
                self.opaque(_text(child), ctx)
            else:
                todo.extend(child.children)

    def opaque(self, text: str, ctx: _Ctx) -> None:
        """Text the grammar leaves unparsed (a `${x%…}` pattern, an indented here-document) that bash
        will expand: its substitutions are found by parsing it on its own, for deny and ask only."""
        if "$(" not in text and "`" not in text and "<(" not in text and ">(" not in text:
            return
        if ctx.depth + 1 > MAX_DEPTH:
            return
        tree = _parser().parse(text.encode())
        nested = _Ctx(text.encode(), ctx.depth + 1, True)
        todo = [tree.root_node]
        while todo:
            node = todo.pop()
            if node.type in ("command_substitution", "process_substitution"):
                self.substitution(node, nested)
            else:
                todo.extend(node.children)

    # -- simple commands

    def simple_command(self, node: Node, ctx: _Ctx) -> None:
        part = _text(node)
        # The same text at the same depth classifies the same way: a repeat adds nothing (and a long
        # generated command is mostly repeats).
        key = (part, ctx.depth, ctx.nested)
        if key in self.seen:
            return
        self.seen.add(key)
        assigns: list[_Word] = []
        pieces: list[Node] = []
        for child in node.children:
            if child.type in _REDIRECTS:
                self.redirect(child, ctx, part)
            elif child.type == "variable_assignment":
                assigns.append(self.assignment(child, ctx, part))
            elif child.type == "command_name":
                pieces.extend(child.children)
            elif child.type == "comment":
                continue
            else:
                pieces.append(child)
        argv = [self.word(group, ctx, part) for group in self.group(pieces, ctx.src)]
        self.command(part, assigns, argv, ctx)

    def group(self, pieces: list[Node], src: bytes) -> list[list[Node]]:
        """Nodes that touch (or are joined by a line continuation only) make one word: the grammar
        splits `$"rm"` and `r\\<newline>m`, bash does not."""
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

    def command(self, part: str, assigns: list[_Word], argv: list[_Word], ctx: _Ctx) -> None:
        self.result.simples.append(_Simple(part, assigns, argv, ctx.nested))
        for w in [*assigns, *argv]:
            self.check_evaluated(w, part)
        if not argv:
            return
        name = argv[0]
        if name.dynamic:
            self.find(part, f"the command name is an expansion ({name.text}): what runs is unknown")
            return
        if name.splits:
            self.find(part, f"the command name is a pattern ({name.text}): what runs is unknown")
            return
        cmd = _basename(name.text)
        args = argv[1:]
        texts = [a.text for a in args]
        if cmd in ("cd", "pushd", "popd"):
            self.result.changes_directory = True
        if cmd in ("test", "[") and any(t in ("-v", "-R") for t in texts):
            self.find(part, f"{cmd} -v evaluates array subscripts, which can run commands")
        elif cmd == "let":
            self.find(part, "let evaluates arithmetic, which can run commands through subscripts")
        elif (
            cmd in _NAME_TAKING
            and (cmd != "printf" or any(t.startswith("-v") for t in texts))
            and any(a.dynamic or "[" in a.text for a in args)
        ):
            self.find(part, f"{cmd} is given a computed or subscripted variable name, which bash evaluates")
        if cmd == "eval":
            if any(a.dynamic for a in args):
                self.find(part, "eval of an expansion: what it runs is unknown")
            elif args:
                self.script(" ".join(texts).encode(), ctx.depth + 1, True, part)
        elif cmd in _SHELLS or cmd == "su":
            self.shell_script(args, part, ctx)
        elif cmd == "find":
            self.find_exec(args, part, ctx)
        elif cmd in _WRAPPERS:
            inner = self.unwrap(cmd, args)
            if inner:
                if ctx.depth + 1 > MAX_DEPTH:
                    self.refuse(part, "nested too deeply to classify")
                else:
                    self.command(part, [], inner, _Ctx(ctx.src, ctx.depth + 1, True))

    def check_evaluated(self, word: _Word, part: str) -> None:
        if any(s in word.skeleton for s in _EVALUATED):
            self.find(part, f"{word.text!r} spells a substitution that bash can evaluate later")

    def shell_script(self, args: list[_Word], part: str, ctx: _Ctx) -> None:
        """`sh -c SCRIPT`, `bash -ec SCRIPT`, `su -c SCRIPT`: SCRIPT is parsed as a command too."""
        takes_value = False
        command_mode = False
        for a in args:
            if takes_value:
                takes_value = False
                continue
            t = a.text
            if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                takes_value = True
            elif t.startswith(("-", "+")) and t not in ("-", "--"):
                command_mode = command_mode or (not t.startswith("--") and "c" in t[1:])
            elif command_mode:
                if a.dynamic:
                    self.find(part, "a shell is given a script that is an expansion: what it runs is unknown")
                else:
                    self.script(a.text.encode(), ctx.depth + 1, True, part)
                return
            else:
                return  # a script file: judged by the patterns on its own argv

    def find_exec(self, args: list[_Word], part: str, ctx: _Ctx) -> None:
        inner: list[_Word] | None = None
        for a in args:
            if inner is None:
                if a.text in _FIND_EXEC:
                    inner = []
            elif a.text in (";", "+"):
                if inner:
                    self.command(part, [], inner, _Ctx(ctx.src, ctx.depth + 1, True))
                inner = None
            else:
                inner.append(a)
        if inner:
            self.command(part, [], inner, _Ctx(ctx.src, ctx.depth + 1, True))

    @staticmethod
    def unwrap(cmd: str, args: list[_Word]) -> list[_Word]:
        valued = _WRAPPERS[cmd]
        skip = _WRAPPER_SKIPS_OPERAND.get(cmd, 0)
        i = 0
        while i < len(args):
            t = args[i].text
            if t == "--":
                i += 1
                break
            if t in valued:
                i += 2
            elif (t.startswith("-") and len(t) > 1) or (cmd == "env" and "=" in t and not t.startswith("=")):
                i += 1
            elif skip:
                skip -= 1
                i += 1
            else:
                break
        return args[i:]

    def declaration(self, node: Node, ctx: _Ctx) -> None:
        part = _text(node)
        argv: list[_Word] = []
        pieces: list[Node] = []
        for child in node.children:
            if child.type in _REDIRECTS:
                self.redirect(child, ctx, part)
            elif not child.is_named and child.type.isalpha():
                argv.append(_Word(child.type, child.type))  # the keyword: declare, export, unset, …
            elif child.type == "variable_assignment":
                argv.extend(self.word(g, ctx, part) for g in self.group(pieces, ctx.src))
                pieces = []
                argv.append(self.assignment(child, ctx, part))
            elif child.type != "comment":
                pieces.append(child)
        argv.extend(self.word(g, ctx, part) for g in self.group(pieces, ctx.src))
        if any(w.dynamic or "[" in w.text for w in argv[1:]):
            self.find(part, f"{argv[0].text} is given a computed or subscripted variable name, which bash evaluates")
        self.result.simples.append(_Simple(part, [], argv, ctx.nested))
        for w in argv:
            self.check_evaluated(w, part)

    def assignment(self, node: Node, ctx: _Ctx, part: str) -> _Word:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None and name.type != "variable_name":
            self.find(part, f"assigning to {_text(name)}: the subscript is evaluated, which can run commands")
            self.scan(name, ctx)
        head = _text(node)[: (value.start_byte - node.start_byte)] if value is not None else _text(node)
        if value is None:
            return _Word(head, head)
        if value.type == "array":
            words = [self.word(g, ctx, part) for g in self.group(value.named_children, ctx.src)]
            text = head + "(" + " ".join(w.text for w in words) + ")"
            skeleton = head + "(" + " ".join(w.skeleton for w in words) + ")"
            return _Word(text, skeleton, any(w.dynamic for w in words))
        w = self.word([value], ctx, part)
        return _Word(head + w.text, head + w.skeleton, w.dynamic)

    def test_command(self, node: Node, ctx: _Ctx) -> None:
        part = _text(node)
        argv: list[_Word] = []
        arithmetic = False
        todo = list(reversed(node.children))
        while todo:
            child = todo.pop()
            if child.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
                todo.extend(reversed(child.children))
            elif child.type == "test_operator" or not child.is_named:
                op = _text(child).strip()
                arithmetic = arithmetic or op in ("-v", "-R", "-eq", "-ne", "-lt", "-le", "-gt", "-ge")
                argv.append(_Word(op, op))
            elif child.type in _WORDS or child.type == "regex":
                argv.append(self.word([child], ctx, part))
            else:
                self.find(part, f"a {child.type.replace('_', ' ')} in a test is not something the policy models")
                self.scan(child, ctx)
        if arithmetic:
            self.find(part, f"{argv[0].text if argv else '[['} … evaluates arithmetic or array subscripts")
        self.result.simples.append(_Simple(part, [], argv, ctx.nested))
        for w in argv:
            self.check_evaluated(w, part)

    # -- redirections

    def redirect(self, node: Node, ctx: _Ctx, part: str) -> None:
        if node.type == "herestring_redirect":
            self.word([c for c in node.named_children], ctx, part)
            return
        if node.type == "heredoc_redirect":
            self.heredoc(node, ctx, part)
            return
        op = next((c.type for c in node.children if not c.is_named), "")
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        groups = self.group(targets, ctx.src)
        words = [self.word(g, ctx, part) for g in groups]
        if len(words) > 1:
            self.find(part, f"a redirection with {len(words)} targets")
        for w in words:
            self.check_evaluated(w, part)
        writes = op in _WRITE_OPS or (op in _DUP_OPS and words and not words[0].text.isdigit())
        if writes:
            for w in words:
                self.result.writes.append((part, w))

    def heredoc(self, node: Node, ctx: _Ctx, part: str) -> None:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = start is not None and any(q in _text(start) for q in "'\"\\")
        later: list[Node] = []
        for child in node.named_children:
            if child.type == "heredoc_body":
                if quoted:
                    continue  # a quoted delimiter: the body is plain text, nothing in it runs
                body = _text(child)
                for piece in child.named_children:
                    if piece.type == "heredoc_content":
                        continue
                    self.word([piece], ctx, part)
                if _heredoc_evaluates(body):
                    self.find(part, "a here-document whose body runs substitutions")
                    self.opaque(body, ctx)
            elif child.type in _REDIRECTS:
                self.redirect(child, ctx, part)
            elif child.type in _SKIPPED:
                continue
            else:
                later.append(child)  # `cat <<EOF | sh`, `cat <<EOF && next`: statements after it
        self.push(later, ctx)

    # -- words

    def word(self, nodes: list[Node], ctx: _Ctx, part: str, quoted: bool = False) -> _Word:
        texts: list[str] = []
        skels: list[str] = []
        dynamic = splits = False
        bare: list[str] = []
        for i, node in enumerate(nodes):
            if node.type == "$" and i + 1 < len(nodes) and nodes[i + 1].type == "string":
                continue  # `$"…"`: a translated string, whose value is the string's
            w = self.piece(node, ctx, part, quoted)
            texts.append(w.text)
            skels.append(w.skeleton)
            dynamic = dynamic or w.dynamic
            splits = splits or w.splits
            bare.append(w.bare)
        if not quoted and _braces("".join(bare)):
            splits = dynamic = True
            self.find(part, f"brace expansion in {''.join(texts)!r}: its words are only known when bash runs it")
        return _Word("".join(texts), "".join(skels), dynamic, splits)

    def piece(self, node: Node, ctx: _Ctx, part: str, quoted: bool, depth: int = 0) -> _Word:
        kind = node.type
        raw = _text(node)
        if depth > MAX_DEPTH:
            self.refuse(part, "nested too deeply to classify")
            return _Word(raw, "\0", True, True)
        if kind == "word":
            if quoted:
                return _Word(raw, raw)
            value, skeleton, glob = _unescape_unquoted(raw)
            return _Word(value, skeleton, glob, glob, skeleton)
        if kind in ("number", "variable_name", "test_operator"):
            return _Word(raw, raw)
        if kind == "extglob_pattern":
            return _Word(raw, raw, True, True)
        if kind == "raw_string":
            return _Word(raw[1:-1], raw[1:-1])
        if kind == "ansi_c_string":
            value = _decode_ansi_c(raw[2:-1])
            return _Word(value, value)
        if kind == "$":
            return _Word("$", "$")
        if kind in ("string", "translated_string"):
            return self.string(node, ctx, part, depth)
        if kind == "concatenation":
            parts = [self.piece(c, ctx, part, quoted, depth + 1) for c in node.children]
            return _Word(
                "".join(p.text for p in parts),
                "".join(p.skeleton for p in parts),
                any(p.dynamic for p in parts),
                any(p.splits for p in parts),
                "".join(p.bare for p in parts),
            )
        if kind == "simple_expansion":
            special = raw.lstrip()[1:] in ("@", "*")
            return _Word(raw.lstrip(), "\0", True, special or not quoted)
        if kind == "expansion":
            self.expansion(node, ctx, part, depth)
            return _Word(raw.lstrip(), "\0", True, not quoted or "[@]" in raw or "[*]" in raw)
        if kind in ("command_substitution", "process_substitution"):
            self.substitution(node, ctx)
            return _Word(raw.lstrip(), "\0", True, not quoted and kind == "command_substitution")
        if kind == "arithmetic_expansion":
            self.arithmetic(node, ctx, part)
            return _Word(raw.lstrip(), "\0", True, not quoted)
        if kind == "regex":
            # The grammar leaves a pattern unparsed, so an expansion in one cannot be accounted for.
            expands = "$" in raw or "`" in raw
            if expands:
                self.find(part, f"a pattern with an expansion in it ({raw}) is not something the policy models")
                self.opaque(raw, ctx)
            return _Word(raw, raw, expands)
        if kind == "brace_expression":
            self.find(part, f"brace expansion {raw}: its words are only known when bash runs it")
            return _Word(raw, "\0", True, True)
        self.find(part, f"a {kind.replace('_', ' ')} in a word is not something the command policy models")
        self.scan(node, ctx)
        return _Word(raw, "\0", True, True)

    def string(self, node: Node, ctx: _Ctx, part: str, depth: int) -> _Word:
        """A double-quoted string: literal stretches (escapes decoded) between the expansions in it.
        The grammar folds the whitespace before an expansion into the expansion's node, so literal
        text is taken from the source between the expansions' first non-blank bytes."""
        src = ctx.src
        start = node.start_byte
        children = node.children
        if children and children[0].type == "$":
            start = children[0].end_byte
            children = children[1:]
        pos = start + 1
        end = node.end_byte - 1
        texts: list[str] = []
        skels: list[str] = []
        dynamic = splits = False
        for child in children:
            if child.type in ('"', "string_content"):
                continue
            lead = len(_text(child)) - len(_text(child).lstrip())
            core = child.start_byte + len(_text(child)[:lead].encode())
            literal = _unescape_double(src[pos:core].decode("utf-8", "replace"))
            texts.append(literal)
            skels.append(literal)
            w = self.piece(child, ctx, part, True, depth + 1)
            texts.append(w.text)
            skels.append(w.skeleton)
            dynamic = dynamic or w.dynamic
            splits = splits or w.splits
            pos = child.end_byte
        literal = _unescape_double(src[pos:end].decode("utf-8", "replace")) if end > pos else ""
        texts.append(literal)
        skels.append(literal)
        return _Word("".join(texts), "".join(skels), dynamic, splits)

    def expansion(self, node: Node, ctx: _Ctx, part: str, depth: int) -> None:
        """`${name}`, `${#name}` and `${name<op>literal}` for ops that only substitute text are
        accounted for; assignment (`:=`), indirection (`!`), transformations (`@P` runs `$(…)` in the
        value), substrings (arithmetic), replacement and subscripts are asked about."""
        inner = [c for c in node.children if c.type not in ("${", "}")]
        names = [c for c in inner if c.type in ("variable_name", "special_variable_name")]
        ops = [c.type for c in inner if not c.is_named]
        operands = [c for c in inner if c.is_named and c.type not in ("variable_name", "special_variable_name")]
        plain = len(names) == 1 and not operands and ops in ([], ["#"]) and (not ops or inner[0].type == "#")
        if len(names) == 1 and len(ops) == 1 and ops[0] in _PLAIN_EXPANSION_OPS and inner[0] == names[0]:
            values = [self.piece(c, ctx, part, True, depth + 1) for c in operands]
            plain = all(not v.dynamic for v in values)
            plain = plain and all(c.type in ("word", "string", "raw_string", "number", "regex") for c in operands)
            plain = plain and all(c.type != "regex" or "$" not in _text(c) for c in operands)
        if not plain:
            op = "".join(ops) or (operands[0].type.replace("_", " ") if operands else "?")
            self.find(part, f"parameter expansion {_text(node).strip()} ({op}) can assign or evaluate")
            self.scan(node, ctx)

    def arithmetic(self, node: Node, ctx: _Ctx, part: str) -> None:
        """Arithmetic on numbers alone is accounted for; a variable in it is evaluated recursively, and
        an array subscript in that evaluation runs `$(…)`."""
        todo = list(node.named_children)
        while todo:
            child = todo.pop()
            if child.type != "number" and not child.named_children:
                self.find(part, f"arithmetic {_text(node).strip()} evaluates {_text(child)}, which can run commands")
                self.scan(node, ctx)
                return
            todo.extend(child.children if child.type != "number" else [])


def _chunks(source: bytes) -> list[bytes] | None:
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


def _heredoc_evaluates(body: str) -> bool:
    """Whether an unquoted here-document body runs anything: `$(`, a backtick, `$[`, or a `${…}` that
    is more than a plain name. One linear scan."""
    if "`" in body or "$(" in body or "$[" in body:
        return True
    i = body.find("${")
    while i >= 0:
        j = i + 2
        while j < len(body) and (body[j].isalnum() or body[j] in "_@*#?$!-"):
            j += 1
        if j >= len(body) or body[j] != "}":
            return True
        i = body.find("${", j)
    return False


def analyse(command: str) -> _Analysis:
    walker = _Walker()
    walker.script(command.encode("utf-8", "surrogatepass"), 0, False, command.strip())
    return walker.run()


# ------------------------------------------------------------------ patterns


def _normal_forms(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """(`cmd -f -r --long operands`, `cmd -fr --long operands`) with the long options, and the same
    without them: the basename of the command word, short flags split, de-duplicated and sorted (so
    `-rf`, `-fr`, `-r -f` and `-R -f` are one spelling), `--` dropped."""
    if not words:
        return [], []
    cmd = _basename(words[0])
    aliases = _FLAG_ALIASES.get(cmd, {})
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


def _renderings(simple: _Simple) -> tuple[list[str], list[str], list[str]]:
    """(as written, normalized with long options, normalized without them)."""
    argv = [w.text for w in simple.argv]
    assigns = [w.text for w in simple.assigns]
    plain = [simple.part, " ".join(argv), " ".join([*assigns, *argv])]
    if argv:
        plain.append(" ".join([_basename(argv[0]), *argv[1:]]))
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
def _compiled(patterns: tuple[str, ...]) -> _Patterns:
    forms = []
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


def _matching(renderings: tuple[list[str], list[str], list[str]], compiled: _Patterns) -> str | None:
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
        if pats and _words_match(list(words), [False] * len(words), pats):
            return pattern
    return None


def _words_match(words: list[str], splits: list[bool], pats: list[str]) -> bool:
    """Allow patterns match word by word: a `*` stays inside its word, except in the last word, where
    it also covers the rest of the command. So `*python* simserve.py *` allows `/usr/bin/python3
    simserve.py bench` but not `bash -c 'touch x' python simserve.py bench` (errs towards asking). A
    word that may become several (`$x`, a glob) is only covered by that final `*`."""
    for i, pat in enumerate(pats):
        last = i == len(pats) - 1
        if last and pat == "*":
            return True
        if i >= len(words):
            return False
        if last and pat.endswith("*"):
            return fnmatch.fnmatchcase(" ".join(words[i:]), pat)
        if splits[i] or not fnmatch.fnmatchcase(words[i], pat):
            return False
    return len(words) == len(pats)


def _allowed_by(simple: _Simple, patterns: Sequence[str]) -> str | None:
    all_words = [*simple.assigns, *simple.argv]
    words = [w.text for w in all_words]
    splits = [w.splits for w in all_words]
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(words, splits, pats):
            return pattern
    return None


def _outside(target: _Word, after_cd: bool) -> bool:
    """Whether writing to `target` may land outside the working directory."""
    t = target.text
    if target.dynamic or target.splits:
        return True
    if t in _HARMLESS_TARGETS or (t.startswith("/dev/fd/") and t[8:].isdigit()):
        return False
    if after_cd or t.startswith(("/", "~")):
        return True
    depth = 0
    for segment in t.split("/"):
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment not in ("", "."):
            depth += 1
    return False


def split_compound(command: str) -> list[str]:
    """Every simple command in `command`, in source order (those inside substitutions included), as
    its words with quotes removed and joined by spaces."""
    if len(command) > MAX_COMMAND_BYTES:
        return [command]
    simples = analyse(command).simples
    return [" ".join(w.text for w in [*s.assigns, *s.argv]) for s in simples if not s.nested]


def classify(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
    """The class of the whole command: the most restrictive class of any of its parts."""
    whole = command.strip()
    if (pattern := _match(whole, deny)) is not None:
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
    renderings = [_renderings(s) for s in result.simples]
    denied, asked = _compiled(tuple(deny)), _compiled(tuple(ask))
    for simple, rendered in zip(result.simples, renderings, strict=True):
        if (pattern := _matching(rendered, denied)) is not None:
            return Verdict(klass="deny", part=simple.part, pattern=pattern, reason=f"matches deny pattern {pattern!r}")
    for part, why in result.refusals:
        return Verdict(klass="deny", part=part, pattern=None, reason=why)
    for simple, rendered in zip(result.simples, renderings, strict=True):
        if (pattern := _matching(rendered, asked)) is not None:
            return Verdict(klass="ask", part=simple.part, pattern=pattern, reason=f"matches ask pattern {pattern!r}")
    for part, why in result.findings:
        return Verdict(klass="ask", part=part, pattern=None, reason=why)
    # Only comments, or nothing: judged as an empty command (which only a lone `*` allows).
    for simple in result.simples or [_Simple(whole, [], [], False)]:
        if not simple.nested and _allowed_by(simple, allow) is None:
            return Verdict(klass="ask", part=simple.part, pattern=None, reason="matches no allow pattern")
    for part, target in result.writes:
        if _outside(target, result.changes_directory):
            return Verdict(
                klass="ask", part=part, pattern=None, reason=f"writes outside the working directory: {target.text}"
            )
    return Verdict(klass="allow", part=command, pattern=None)
