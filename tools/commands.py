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
  at a gate could not see it either: over 256 KB, nested over 40 levels deep, or a command over 16 KB
  that does not parse in the pieces it is cut into (a cut inside a quote or a here-document makes the
  rest read as something else) or has 2 KB without a `;` or a line break to cut at.

What runs is what was read, by construction: a host's bash is never given the text as written but its
canonical form (tools/canonical.py), written back from the tree this module judged — every word with its
quoting, the tree's own operators — in a part of bash the grammar and bash read alike; `classify` judges
that form too, and the stricter verdict stands (`Verdict.runs` is what runs). Where the grammar misreads a
text (`true \\ #; rm -rf ~` is `true` and a comment to it), bash runs the misreading, never the hidden
command. What the renderer cannot write back faithfully is at most `ask`, and a person approves it as
written. Every transport runs that text in the same bash, started clean (tools/transport.py: SHELL).
tests/security/test_differential_shell.py runs thousands of generated commands in an instrumented bash
to check it.

The grammar and bash still do not read every text alike, and where a misreading would change what the
author meant, it is asked about: control characters bash keeps in a word are made plain letters before
parsing (and asked about), a lone `$` is a plain `$`, an ANSI-C string ends at a NUL, a line
continuation is read both joined and not (the stricter verdict stands), a here-document ends where bash
ends it, and a word the grammar stretched over a blank is asked about. When the tree may not be bash's,
deny patterns are also matched against the text cut at every separator.

An allow pattern's program word names a program (`program_matches`): a bare name is that name on the
host's PATH (PATH's relative entries are dropped before any command runs), so it never allows a command
word with a `/` (`cat *` is not `tools/cat`); a path is matched only by a pattern written with a path,
segment by segment, with `**` for any number of directories.

Deny and ask patterns also match by shape: a command with at least the pattern's flags and long options
and its operands in order among others (`rm -rfv /`, `rm -rf build /`, `git push origin -f`). Where
only an expansion, xargs' input, find's `{}` or a path after `cd` could make a command a denied one,
it is asked about. Named script files (`sh pgctl.sh`, `. ./env.sh`) are judged by the patterns on
their own argv: no deny list can see inside a file.

The grammar's error recovery is quadratic in what it recovers over; a command over 16 KB is parsed in
pieces of at most 2 KB, so the worst case stays under about a second and grows linearly past it
(bench/commands.py).
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel
from tree_sitter import Node

from tools.canonical import NESTED_TOO_DEEPLY, canonical
from tools.shellwords import CHUNKED_ABOVE, MAX_RUN, group_words
from tools.shellwords import as_bash_reads as _as_bash_reads
from tools.shellwords import braces as _braces
from tools.shellwords import chunks as _chunks
from tools.shellwords import decode_ansi_c as _decode_ansi_c
from tools.shellwords import dequote as _dequote
from tools.shellwords import parser as _parser
from tools.shellwords import text as _text
from tools.shellwords import unescape_double as _unescape_double
from tools.shellwords import unescape_unquoted as _unescape_unquoted

CommandClass = Literal["allow", "ask", "deny"]

# Past this a command is not parsed at all: no campaign command is anywhere near it, and a bound keeps
# the parser's memory and time predictable whatever a model sends.
MAX_COMMAND_BYTES = 256 * 1024
# Substitutions within substitutions, scripts given to `eval`/`sh -c`, expansions within expansions:
# deeper than this is asked about rather than followed (the walk stays well inside Python's stack).
MAX_DEPTH = 40


# Writing to these never leaves the process: they are not files outside the working directory.
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
# Text that bash may still evaluate when the word reaches an arithmetic or subscript context
# (`test -v 'a[$(cmd)]'`, `printf -v`, `read`, …) or a prompt expansion.
_EVALUATED = ("$(", "`", "${", "$[")

_WRITE_OPS = {">", ">>", "&>", "&>>", ">|", "<>"}
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
_NAME_TAKING = {
    *("read", "mapfile", "readarray", "getopts", "wait", "declare", "typeset", "local", "export"),
    *("readonly", "unset", "printf"),
}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"}
# Builtins and programs that can run a string or stream (see _Walker.evaluating).
_EVALUATING = {
    *("trap", "alias", "mapfile", "readarray", "hash", "enable", "declare", "typeset", "local"),
    *("source", ".", "env", "script", "fc", "complete", "bind"),
}
# A script "file" that is a stream: what it holds is never seen.
_STREAM = re.compile(r"^(-|/dev/stdin|/dev/fd/\d+|/proc/self/fd/\d+|<\(.*)$")
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
    "unshare": set(),
    "nsenter": {"-t", "-S", "-G"},
    "runuser": {"-u", "-g", "-G"},
    "setpriv": set(),
    "systemd-run": {"-p", "-u", "--unit"},
    "busybox": set(),
    "sg": set(),
}
# Programs that run other programs as their arguments, for deny and ask checks beside the above, whose
# options are not modelled (see unwrap): profilers, sandboxes, limiters.
for _name in (
    "prlimit", "setarch", "perf", "valgrind", "numactl", "gdb", "ltrace", "cgexec", "firejail", "bwrap", "fakeroot",
    "faketime", "torsocks", "proxychains", "proxychains4", "chronic", "nsys", "ncu", "nvprof", "rr", "heaptrack",
    "catchsegv", "uftrace", "caffeinate", "ionice", "chpst", "daemonize", "start-stop-daemon",
):  # fmt: skip
    _WRAPPERS.setdefault(_name, set())
_MAX_CANDIDATES = 8
# Programs that hand a string to `sh -c` (the options that carry it; empty: every operand).
_STRING_RUNNERS: dict[str, set[str]] = {
    "flock": {"-c", "--command"},
    "runuser": {"-c", "--command"},
    "sg": set(),
    "watch": set(),
    "hyperfine": set(),
}
# Wrappers whose first operand is not the command (a duration, a mask, a directory, a lock file).
_WRAPPER_SKIPS_OPERAND = {"timeout": 1, "taskset": 1, "chrt": 1, "chroot": 1, "flock": 1}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}
# Spellings of the same option, so that a deny pattern written one way matches the others.
_FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"R": "r", "--recursive": "r", "--force": "f"},
    "git": {"f": "--force"},  # `git push -f` is `git push --force`
}


class Verdict(BaseModel):
    klass: CommandClass
    part: str
    pattern: str | None
    reason: str = ""
    # What a host's bash is given when the policy lets the command run: its canonical form (tools/canonical.py),
    # which this verdict also judged. None when it cannot be written back faithfully: it is then never `allow`, and
    # a person who approves it approves it as written.
    runs: str | None = None
    # The command text this verdict is for: a cleared command runs under the verdict of its own text only.
    judged: str = ""


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
    # The tree may not be what bash reads (a syntax error, control characters, a here-document whose
    # end bash finds elsewhere, a word the grammar stretched over a blank): deny patterns are then also
    # matched against the text cut at every separator (`_backstop`), erring towards refusing.
    suspect: bool = False
    reads_outside: bool = False  # a redirection reads a file outside the working directory
    writes: list[tuple[str, _Word]] = field(default_factory=list)  # (part, redirect target)
    changes_directory: bool = False


_BLANK_INSIDE = re.compile(r"(?<!\\)[ \t\n]")


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
        source, odd = _as_bash_reads(source)
        if odd:
            self.find(part, odd)
            self.result.suspect = True
        # bash removes a backslash-newline before it splits words, except inside single quotes, quoted
        # here-documents and comments; the grammar does not always follow it (`a\<newline>#;cmd` is a
        # word `a#` and then `cmd` to bash, a comment to the grammar). Both readings are walked, and the
        # stricter verdict stands.
        readings = [source, source.replace(b"\\\n", b"")] if b"\\\n" in source else [source]
        for reading in reversed(readings):
            if not self.push_script(reading, depth, nested, part):
                return

    def push_script(self, source: bytes, depth: int, nested: bool, part: str) -> bool:
        """Parse `source` (in pieces when long) and push its trees; False once it must be refused."""
        chunks = _chunks(source)
        if chunks is None:
            self.refuse(part, f"too long to classify: over {MAX_RUN:,} bytes without a `;` or a line break")
            return False
        # Pushed, not walked here: `eval` and `sh -c` scripts are found while the stack is being run;
        # reversed so that the first chunk's findings come first.
        trees: list[tuple[Node, bytes]] = []
        for chunk in chunks:
            root = _parser().parse(chunk).root_node
            if root.has_error:
                self.find(part, f"cannot parse it as a shell command{self._error_at(root, chunk)}")
                self.result.suspect = True
                if len(chunks) > 1:
                    # A cut inside a quote or a here-document reads the rest as something else: text
                    # that bash runs may be quoted text here, so even deny patterns cannot be trusted.
                    self.refuse(part, f"over {CHUNKED_ABOVE // 1024} KB and it does not parse in pieces")
                    return False
            trees.append((root, chunk))
        for root, chunk in reversed(trees):
            self.stack.append((root, _Ctx(chunk, depth, nested)))
        return True

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
            for w in words:
                self.check_evaluated(w, _text(node))
                self.check_assigned(w, _text(node))
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
            elif child.type == "variable_name" and node.type == "for_statement":
                self.check_assigned(_Word(_text(child), _text(child)), _text(node)[:200])
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
        argv = [self.word(group, ctx, part) for group in group_words(pieces, ctx.src)]
        self.command(part, assigns, argv, ctx)

    def command(self, part: str, assigns: list[_Word], argv: list[_Word], ctx: _Ctx) -> None:
        self.result.simples.append(_Simple(part, assigns, argv, ctx.nested))
        for w in [*assigns, *argv]:
            self.check_evaluated(w, part)
        for w in assigns:
            self.check_assigned(w, part)
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
        if cmd in _NAME_TAKING:  # `read PATH`, `printf -v IFS …`, `getopts o PATH`: assignments too
            for a in args:
                self.check_assigned(a, part)
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
        if cmd in _EVALUATING:
            self.evaluating(cmd, args, part, ctx)
        if cmd == "eval":
            if any(a.dynamic for a in args):
                self.find(part, "eval of an expansion: what it runs is unknown")
            elif args:
                self.script(" ".join(texts).encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)
        elif cmd in _SHELLS or cmd == "su":
            self.shell_script(args, part, ctx)
        elif cmd == "find":
            self.find_exec(args, part, ctx)
        elif cmd in _WRAPPERS:
            if ctx.depth + 1 > MAX_DEPTH:
                self.refuse(part, "nested too deeply to classify")
                return
            for k, inner in enumerate(self.unwrap(cmd, args)):
                if cmd == "xargs":  # and the arguments it reads from its input
                    inner = [*inner, _Word("<input>", "\0", True, True)]
                asked = len(self.result.findings)
                self.command(part, [], inner, _Ctx(ctx.src, ctx.depth + 1, True))
                if k:  # a guessed start (`5 rm …` after `--adjustment`): for deny and ask patterns only
                    del self.result.findings[asked:]
        if cmd in _STRING_RUNNERS and ctx.depth + 1 <= MAX_DEPTH:
            for w in self.run_strings(cmd, args):
                if w.dynamic:
                    self.find(part, f"{cmd} is given a command that is an expansion: what it runs is unknown")
                else:
                    self.script(w.text.encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)

    def evaluating(self, cmd: str, args: list[_Word], part: str, ctx: _Ctx) -> None:
        """Builtins and programs that run a string later, or a file or stream no one has read: asked
        about, and a string they are given is parsed as a command too, so a denied one is denied."""
        texts = [a.text for a in args]
        scripts: list[_Word] = []
        if cmd == "trap":
            if len(args) < 2 or texts[0] in ("-", "--", "-p", "-l", "-P"):
                return  # listing or resetting traps runs nothing
            scripts = [args[0]]
        elif cmd == "alias":
            scripts = [
                _Word(t.split("=", 1)[1], t.split("=", 1)[1], a.dynamic)
                for a, t in zip(args, texts, strict=True)
                if "=" in t
            ]
            if not scripts:
                return  # listing aliases
        elif cmd in ("mapfile", "readarray"):
            scripts = [args[i + 1] for i, t in enumerate(texts[:-1]) if t == "-C"]
            if not scripts and not any(t.startswith("-C") for t in texts):
                return
        elif cmd == "hash":
            if not any(t.startswith("-") and "p" in t for t in texts):
                return
        elif cmd == "declare" or cmd == "typeset" or cmd == "local":
            if not any(t.startswith("-") and "n" in t for t in texts):
                return
        elif cmd in ("source", "."):
            if args and not args[0].dynamic and not _STREAM.match(texts[0]):
                return  # a named script file: judged by the patterns on its own argv, as `sh FILE` is
        elif cmd == "env":
            if not any(t.startswith(("-S", "--split-string")) or (t.startswith("-") and "S" in t[1:2]) for t in texts):
                return
        elif cmd == "script":
            scripts = [
                args[i + 1]
                for i, t in enumerate(texts[:-1])
                if t in ("-c", "--command") or (t.startswith("-") and not t.startswith("--") and t.endswith("c"))
            ]
            scripts += [
                _Word(t.split("=", 1)[1], t.split("=", 1)[1], a.dynamic)
                for a, t in zip(args, texts, strict=True)
                if t.startswith("--command=")
            ]
        self.find(part, f"{cmd} {' '.join(texts)[:60]} runs something the policy cannot see in full")
        for w in scripts:
            if not w.dynamic and ctx.depth + 1 <= MAX_DEPTH:
                self.script(w.text.encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)

    def check_assigned(self, word: _Word, part: str) -> None:
        name = _assigned_name(word)
        if name in _RUNS_CODE_ENV:
            self.find(part, f"setting {name} changes what a shell or a program runs")

    def check_evaluated(self, word: _Word, part: str) -> None:
        if any(s in word.skeleton for s in _EVALUATED):
            self.find(part, f"{word.text!r} spells a substitution that bash can evaluate later")

    def shell_script(self, args: list[_Word], part: str, ctx: _Ctx) -> None:
        """`sh -c SCRIPT`, `bash -ec SCRIPT`, `su -c SCRIPT`: SCRIPT is parsed as a command too."""
        takes_value = False
        command_mode = stdin = ended = False
        for a in args:
            if takes_value:
                takes_value = False
                continue
            t = a.text
            if ended or not t.startswith(("-", "+")) or t == "-":
                if command_mode:
                    if a.dynamic:
                        self.find(part, "a shell is given a script that is an expansion: what it runs is unknown")
                    else:
                        self.script(a.text.encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)
                elif a.dynamic or _STREAM.match(t) or stdin:
                    self.find(part, f"a shell reads its script from {t}: what it runs is unknown")
                return  # a script file: judged by the patterns on its own argv
            if t == "--":
                ended = True
            elif t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                takes_value = True
            elif not t.startswith("--"):
                command_mode = command_mode or "c" in t[1:]
                stdin = stdin or "s" in t[1:]
        if not command_mode:  # no script at all: the shell runs whatever its standard input holds
            self.find(part, "a shell reads its script from standard input: what it runs is unknown")

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
                # `{}` is each path found: only known when find runs
                inner.append(_Word("{}", "\0", True, True) if "{}" in a.text else a)
        if inner:
            self.command(part, [], inner, _Ctx(ctx.src, ctx.depth + 1, True))

    @staticmethod
    def unwrap(cmd: str, args: list[_Word]) -> list[list[_Word]]:
        """The commands a wrapper may run: its arguments from each word that could begin the wrapped
        command. Whether a long option takes a value (`nice --adjustment 5 rm …`) is not known here, so
        every later word that is not an option is tried as well (these are only ever checked against
        deny and ask patterns: more candidates can only make the verdict stricter)."""
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
        starts = [i] if i < len(args) else []
        starts += [j for j in range(len(args)) if j != i and not args[j].text.startswith("-")]
        return [args[j:] for j in sorted(set(starts))[:_MAX_CANDIDATES]]

    @staticmethod
    def run_strings(cmd: str, args: list[_Word]) -> list[_Word]:
        """What a program hands to `sh -c`: `flock LOCK -c CMD`, `sg GROUP [-c] CMD`, `watch CMD`, …"""
        texts = [a.text for a in args]
        flag = _STRING_RUNNERS[cmd]
        if flag:
            return [args[k + 1] for k, t in enumerate(texts[:-1]) if t in flag]
        operands = [a for a in args if not a.text.startswith("-")]
        return operands[1:] if cmd == "sg" else operands

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
                argv.extend(self.word(g, ctx, part) for g in group_words(pieces, ctx.src))
                pieces = []
                argv.append(self.assignment(child, ctx, part))
            elif child.type != "comment":
                pieces.append(child)
        argv.extend(self.word(g, ctx, part) for g in group_words(pieces, ctx.src))
        if argv and argv[0].text in _EVALUATING:  # `declare -n`, `local -n`: namerefs
            self.evaluating(argv[0].text, argv[1:], part, ctx)
        if any(w.dynamic or "[" in w.text for w in argv[1:]):
            self.find(part, f"{argv[0].text} is given a computed or subscripted variable name, which bash evaluates")
        self.result.simples.append(_Simple(part, [], argv, ctx.nested))
        for w in argv:
            self.check_evaluated(w, part)
            self.check_assigned(w, part)

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
            words = [self.word(g, ctx, part) for g in group_words(value.named_children, ctx.src)]
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
        groups = group_words(targets, ctx.src)
        words = [self.word(g, ctx, part) for g in groups]
        if len(words) > 1:
            self.find(part, f"a redirection with {len(words)} targets")
        for w in words:
            self.check_evaluated(w, part)
        # `2> >(grep …)`: the target is a pipe to a command, which is walked as any other
        words = [w for w, g in zip(words, groups, strict=True) if [n.type for n in g] != ["process_substitution"]]
        writes = op in _WRITE_OPS or (op in _DUP_OPS and words and not words[0].text.isdigit())
        if writes:
            for w in words:
                self.result.writes.append((part, w))
        elif op in ("<", "<&") and any(_outside(w, False) for w in words if not w.text.isdigit()):
            self.result.reads_outside = True

    def heredoc(self, node: Node, ctx: _Ctx, part: str) -> None:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = start is not None and any(q in _text(start) for q in "'\"\\")
        self.heredoc_end(node, start)
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

    def heredoc_end(self, node: Node, start: Node | None) -> None:
        """bash ends a here-document at the first line equal to its delimiter after quote removal
        (`E"O"F` ends at `EOF`); the grammar may wait for the delimiter as spelled, reading the lines
        bash runs as the body."""
        if start is None:
            return
        delimiter = _dequote(_text(start))
        strip_tabs = any(c.type == "<<-" for c in node.children)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        lines = _text(body).split("\n") if body is not None else []
        if strip_tabs:
            lines = [line.lstrip("\t") for line in lines]
        early = delimiter in lines[:-1] or (lines and lines[-1] == delimiter and end is not None)
        if early or (end is not None and _text(end).strip() != delimiter):
            self.find(_text(node)[:200], f"a here-document ends where bash finds {delimiter!r}, not where it seems to")
            self.result.suspect = True

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
            if _BLANK_INSIDE.search(raw):  # bash ends an unquoted word at an unescaped blank
                self.find(part, f"the parser read {raw[:60]!r} as one word, which bash splits")
                self.result.suspect = True
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
            if _BLANK_INSIDE.search(raw.strip()):
                self.find(part, f"the parser read {raw.strip()[:60]!r} as one expansion, which bash splits")
                self.result.suspect = True
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
            if not quoted and all(c.type == "number" for c in node.named_children):
                return _Word(raw, raw, False, True)  # `{1..5}`: numbers only, several words
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
            if child.is_named and child.type != "number" and not child.named_children:
                self.find(part, f"arithmetic {_text(node).strip()} evaluates {_text(child)}, which can run commands")
                self.scan(node, ctx)
                return
            todo.extend(child.children if child.type != "number" else [])


# `${NAME}`, or `${NAME:-text}` and the other operators that only substitute, with plain text: what an
# unquoted here-document may hold without running anything.
_PLAIN_BRACED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-+?]|##?|%%?)[^$`{}\\]*)?\}|\$\{[0-9@*#?$!-]\}")


def _heredoc_evaluates(body: str) -> bool:
    """Whether an unquoted here-document body runs anything: `$(`, a backtick, `$[`, or a `${…}` that
    is more than a plain name or a plain default. One linear scan."""
    if "`" in body or "$(" in body or "$[" in body:
        return True
    return "${" in _PLAIN_BRACED.sub("", body)


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
    cmd = _basename(words[0])
    aliases = _FLAG_ALIASES.get(cmd, {})
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


def _structured(simple: _Simple, patterns: Sequence[str], after_cd: bool) -> tuple[str, bool] | None:
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
_CODE_FILE = re.compile(
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


def _backstop(text: str) -> list[_Simple]:
    """The text cut at every separator and stripped of quotes, each piece a command: for deny
    patterns only, when the tree may not be what bash reads (errs towards refusing: `echo "; rm -rf /"`
    in a command that does not parse is refused)."""
    out: list[_Simple] = []
    for piece in _SEPARATORS.split(text):
        words = [_QUOTING.sub("", w) for w in piece.split()]
        while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", words[0]):
            words.pop(0)
        if words:
            out.append(_Simple(piece.strip()[:200], [], [_Word(w, w) for w in words], True))
    return out


def _match(part: str, patterns: Sequence[str]) -> str | None:
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
_RUNS_CODE_ENV = {
    "BASH_ENV", "ENV", "PS4", "PS0", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PATH", "IFS", "CDPATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_LOADABLES_PATH", "PYTHONPATH", "PYTHONHOME",
    "PYTHONSTARTUP", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
    "EDITOR", "VISUAL", "PAGER", "LESSOPEN", "GCONV_PATH",
}  # fmt: skip


def _assigned_name(word: _Word) -> str:
    return word.text.split("=", 1)[0].split("[", 1)[0].rstrip("+")


def _allowed_by(simple: _Simple, patterns: Sequence[str]) -> str | None:
    assigns = [w for w in simple.assigns if w.dynamic or _assigned_name(w) not in _INERT_ENV]
    slots = [_Slot(w.text, "assign", w.splits, w.dynamic) for w in assigns]
    slots += [_Slot(w.text, "cmd" if i == 0 else "arg", w.splits, w.dynamic) for i, w in enumerate(simple.argv)]
    for pattern in patterns:
        pats = pattern.split()
        if pats and _words_match(slots, pats):
            return pattern
    return None


def _outside(target: _Word, after_cd: bool, reads_outside: bool = False) -> bool:
    """Whether writing to `target` may land outside the working directory. /dev/stdout, /dev/fd/N, …
    reopen whatever that descriptor is: after `1</etc/x` that is a file outside, opened anew for writing."""
    t = target.text
    if target.dynamic or target.splits:
        return True
    if t in _HARMLESS_TARGETS or (t.startswith("/dev/fd/") and t[8:].isdigit()):
        return reads_outside and t != "/dev/null"
    if after_cd or t.startswith(("/", "~")):
        return True
    return _normal_path(t)[1]  # a relative path that climbs out


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
    denied = _compiled(tuple(deny))
    for simple in _backstop(command):
        pattern = _matching(_renderings(simple), denied)
        if pattern is None and (hit := _structured(simple, deny, False)) is not None and hit[1]:
            pattern = hit[0]
        if pattern is not None:
            why = f"as written, bash may read a part of it as what deny pattern {pattern!r} forbids ({simple.part})"
            return Verdict(klass="deny", part=simple.part, pattern=pattern, reason=why)
    return None


def _judge(command: str, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> Verdict:
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
    after_cd = result.changes_directory
    denied, asked = _compiled(tuple(deny)), _compiled(tuple(ask))
    checked = list(result.simples)
    if result.suspect:
        checked += _backstop(command)
    maybe: tuple[_Simple, str] | None = None
    for simple in checked:
        if (pattern := _matching(_renderings(simple), denied)) is not None:
            return Verdict(klass="deny", part=simple.part, pattern=pattern, reason=f"matches deny pattern {pattern!r}")
        if (hit := _structured(simple, deny, after_cd)) is not None:
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
        pattern = _matching(_renderings(simple), asked)
        if pattern is None and (hit := _structured(simple, ask, after_cd)) is not None:
            pattern = hit[0]
        if pattern is not None:
            return Verdict(klass="ask", part=simple.part, pattern=pattern, reason=f"matches ask pattern {pattern!r}")
    for part, why in result.findings:
        return Verdict(klass="ask", part=part, pattern=None, reason=why)
    # Only comments, or nothing: judged as an empty command (which only a lone `*` allows).
    allowed_by: list[str] = []
    for simple in result.simples or [_Simple(whole, [], [], False)]:
        if simple.nested:
            continue
        if (by := _allowed_by(simple, allow)) is None:
            return Verdict(klass="ask", part=simple.part, pattern=None, reason="matches no allow pattern")
        allowed_by.append(by)
    for part, target in result.writes:
        if _outside(target, after_cd, result.reads_outside):
            return Verdict(
                klass="ask", part=part, pattern=None, reason=f"writes outside the working directory: {target.text}"
            )
        if _CODE_FILE.search(target.text):
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
