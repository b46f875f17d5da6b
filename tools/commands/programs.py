"""The walk through simple commands and what they run: wrappers, `eval`, `sh -c`, `find -exec`, declarations and
`test`/`[[ ]]`."""

from __future__ import annotations

from tree_sitter import Node

from tools.commands.model import Ctx, Simple, Word, basename
from tools.commands.vocabulary import (
    EVALUATING,
    FIND_EXEC,
    MAX_CANDIDATES,
    MAX_DEPTH,
    NAME_TAKING,
    REDIRECTS,
    SHELLS,
    STREAM,
    STRING_RUNNERS,
    WORDS,
    WRAPPER_SKIPS_OPERAND,
    WRAPPERS,
)
from tools.commands.words import WordWalk
from tools.shellwords import group_words
from tools.shellwords import text as _text


class ProgramWalk(WordWalk):
    """Simple commands, and what they run: wrappers, `eval`, `sh -c`, `find -exec`, declarations and tests."""

    def simple_command(self, node: Node, ctx: Ctx) -> None:
        part = _text(node)
        # The same text at the same depth classifies the same way: a repeat adds nothing (and a long
        # generated command is mostly repeats).
        key = (part, ctx.depth, ctx.nested)
        if key in self.seen:
            return
        self.seen.add(key)
        assigns: list[Word] = []
        pieces: list[Node] = []
        for child in node.children:
            if child.type in REDIRECTS:
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

    def command(self, part: str, assigns: list[Word], argv: list[Word], ctx: Ctx) -> None:
        self.result.simples.append(Simple(part, assigns, argv, ctx.nested))
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
        cmd = basename(name.text)
        args = argv[1:]
        texts = [a.text for a in args]
        if cmd in ("cd", "pushd", "popd"):
            self.result.changes_directory = True
        if cmd in NAME_TAKING:  # `read PATH`, `printf -v IFS …`, `getopts o PATH`: assignments too
            for a in args:
                self.check_assigned(a, part)
        if cmd in ("test", "[") and any(t in ("-v", "-R") for t in texts):
            self.find(part, f"{cmd} -v evaluates array subscripts, which can run commands")
        elif cmd == "let":
            self.find(part, "let evaluates arithmetic, which can run commands through subscripts")
        elif (
            cmd in NAME_TAKING
            and (cmd != "printf" or any(t.startswith("-v") for t in texts))
            and any(a.dynamic or "[" in a.text for a in args)
        ):
            self.find(part, f"{cmd} is given a computed or subscripted variable name, which bash evaluates")
        if cmd in EVALUATING:
            self.evaluating(cmd, args, part, ctx)
        if cmd == "eval":
            if any(a.dynamic for a in args):
                self.find(part, "eval of an expansion: what it runs is unknown")
            elif args:
                self.script(" ".join(texts).encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)
        elif cmd in SHELLS or cmd == "su":
            self.shell_script(args, part, ctx)
        elif cmd == "find":
            self.find_exec(args, part, ctx)
        elif cmd in WRAPPERS:
            if ctx.depth + 1 > MAX_DEPTH:
                self.refuse(part, "nested too deeply to classify")
                return
            for k, inner in enumerate(self.unwrap(cmd, args)):
                if cmd == "xargs":  # and the arguments it reads from its input
                    inner = [*inner, Word("<input>", "\0", True, True)]
                asked = len(self.result.findings)
                self.command(part, [], inner, Ctx(ctx.src, ctx.depth + 1, True))
                if k:  # a guessed start (`5 rm …` after `--adjustment`): for deny and ask patterns only
                    del self.result.findings[asked:]
        if cmd in STRING_RUNNERS and ctx.depth + 1 <= MAX_DEPTH:
            for w in self.run_strings(cmd, args):
                if w.dynamic:
                    self.find(part, f"{cmd} is given a command that is an expansion: what it runs is unknown")
                else:
                    self.script(w.text.encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)

    def evaluating(self, cmd: str, args: list[Word], part: str, ctx: Ctx) -> None:
        """Builtins and programs that run a string later, or a file or stream no one has read: asked
        about, and a string they are given is parsed as a command too, so a denied one is denied."""
        texts = [a.text for a in args]
        scripts: list[Word] = []
        if cmd == "trap":
            if len(args) < 2 or texts[0] in ("-", "--", "-p", "-l", "-P"):
                return  # listing or resetting traps runs nothing
            scripts = [args[0]]
        elif cmd == "alias":
            scripts = [
                Word(t.split("=", 1)[1], t.split("=", 1)[1], a.dynamic)
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
            if args and not args[0].dynamic and not STREAM.match(texts[0]):
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
                Word(t.split("=", 1)[1], t.split("=", 1)[1], a.dynamic)
                for a, t in zip(args, texts, strict=True)
                if t.startswith("--command=")
            ]
        self.find(part, f"{cmd} {' '.join(texts)[:60]} runs something the policy cannot see in full")
        for w in scripts:
            if not w.dynamic and ctx.depth + 1 <= MAX_DEPTH:
                self.script(w.text.encode("utf-8", "surrogatepass"), ctx.depth + 1, True, part)

    def shell_script(self, args: list[Word], part: str, ctx: Ctx) -> None:
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
                elif a.dynamic or STREAM.match(t) or stdin:
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

    def find_exec(self, args: list[Word], part: str, ctx: Ctx) -> None:
        inner: list[Word] | None = None
        for a in args:
            if inner is None:
                if a.text in FIND_EXEC:
                    inner = []
            elif a.text in (";", "+"):
                if inner:
                    self.command(part, [], inner, Ctx(ctx.src, ctx.depth + 1, True))
                inner = None
            else:
                # `{}` is each path found: only known when find runs
                inner.append(Word("{}", "\0", True, True) if "{}" in a.text else a)
        if inner:
            self.command(part, [], inner, Ctx(ctx.src, ctx.depth + 1, True))

    @staticmethod
    def unwrap(cmd: str, args: list[Word]) -> list[list[Word]]:
        """The commands a wrapper may run: its arguments from each word that could begin the wrapped
        command. Whether a long option takes a value (`nice --adjustment 5 rm …`) is not known here, so
        every later word that is not an option is tried as well (these are only ever checked against
        deny and ask patterns: more candidates can only make the verdict stricter)."""
        valued = WRAPPERS[cmd]
        skip = WRAPPER_SKIPS_OPERAND.get(cmd, 0)
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
        return [args[j:] for j in sorted(set(starts))[:MAX_CANDIDATES]]

    @staticmethod
    def run_strings(cmd: str, args: list[Word]) -> list[Word]:
        """What a program hands to `sh -c`: `flock LOCK -c CMD`, `sg GROUP [-c] CMD`, `watch CMD`, …"""
        texts = [a.text for a in args]
        flag = STRING_RUNNERS[cmd]
        if flag:
            return [args[k + 1] for k, t in enumerate(texts[:-1]) if t in flag]
        operands = [a for a in args if not a.text.startswith("-")]
        return operands[1:] if cmd == "sg" else operands

    def declaration(self, node: Node, ctx: Ctx) -> None:
        part = _text(node)
        argv: list[Word] = []
        pieces: list[Node] = []
        for child in node.children:
            if child.type in REDIRECTS:
                self.redirect(child, ctx, part)
            elif not child.is_named and child.type.isalpha():
                argv.append(Word(child.type, child.type))  # the keyword: declare, export, unset, …
            elif child.type == "variable_assignment":
                argv.extend(self.word(g, ctx, part) for g in group_words(pieces, ctx.src))
                pieces = []
                argv.append(self.assignment(child, ctx, part))
            elif child.type != "comment":
                pieces.append(child)
        argv.extend(self.word(g, ctx, part) for g in group_words(pieces, ctx.src))
        if argv and argv[0].text in EVALUATING:  # `declare -n`, `local -n`: namerefs
            self.evaluating(argv[0].text, argv[1:], part, ctx)
        if any(w.dynamic or "[" in w.text for w in argv[1:]):
            self.find(part, f"{argv[0].text} is given a computed or subscripted variable name, which bash evaluates")
        self.result.simples.append(Simple(part, [], argv, ctx.nested))
        for w in argv:
            self.check_evaluated(w, part)
            self.check_assigned(w, part)

    def test_command(self, node: Node, ctx: Ctx) -> None:
        part = _text(node)
        argv: list[Word] = []
        arithmetic = False
        todo = list(reversed(node.children))
        while todo:
            child = todo.pop()
            if child.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
                todo.extend(reversed(child.children))
            elif child.type == "test_operator" or not child.is_named:
                op = _text(child).strip()
                arithmetic = arithmetic or op in ("-v", "-R", "-eq", "-ne", "-lt", "-le", "-gt", "-ge")
                argv.append(Word(op, op))
            elif child.type in WORDS or child.type == "regex":
                argv.append(self.word([child], ctx, part))
            else:
                self.find(part, f"a {child.type.replace('_', ' ')} in a test is not something the policy models")
                self.scan(child, ctx)
        if arithmetic:
            self.find(part, f"{argv[0].text if argv else '[['} … evaluates arithmetic or array subscripts")
        self.result.simples.append(Simple(part, [], argv, ctx.nested))
        for w in argv:
            self.check_evaluated(w, part)
