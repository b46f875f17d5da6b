"""The parse-tree walk's base: the stack, scripts parsed and pushed, findings and refusals."""

from __future__ import annotations

from collections.abc import Iterable

from tree_sitter import Node

from tools.commands.model import Analysis, Ctx, Word
from tools.commands.patterns import RUNS_CODE_ENV, assigned_name
from tools.commands.vocabulary import EVALUATED, MAX_DEPTH
from tools.shellwords import CHUNKED_ABOVE, MAX_RUN
from tools.shellwords import as_bash_reads as _as_bash_reads
from tools.shellwords import chunks as _chunks
from tools.shellwords import parser as _parser
from tools.shellwords import text as _text


class Walk:
    """The walk itself: the stack of statements still to see (iterative: a 400 KB `a && a && …` nests that
    deep), scripts parsed and pushed, and what was found to ask about or refuse."""

    def __init__(self) -> None:
        self.result = Analysis()
        self.stack: list[tuple[Node, Ctx]] = []
        self.seen: set[tuple[str, int, bool]] = set()

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
            self.stack.append((root, Ctx(chunk, depth, nested)))
        return True

    def run(self) -> Analysis:
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

    def push(self, nodes: Iterable[Node], ctx: Ctx) -> None:
        # Reversed so that the stack pops them in source order (findings keep the command's order).
        self.stack.extend((n, ctx) for n in reversed(list(nodes)))

    def substitution(self, node: Node, ctx: Ctx) -> None:
        if ctx.depth + 1 > MAX_DEPTH:
            self.refuse(_text(node), "nested too deeply to classify")
            return
        inner = Ctx(ctx.src, ctx.depth + 1, ctx.nested)
        self.push((c for c in node.named_children), inner)

    def scan(self, node: Node, ctx: Ctx) -> None:
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

    def opaque(self, text: str, ctx: Ctx) -> None:
        """Text the grammar leaves unparsed (a `${x%…}` pattern, an indented here-document) that bash
        will expand: its substitutions are found by parsing it on its own, for deny and ask only."""
        if "$(" not in text and "`" not in text and "<(" not in text and ">(" not in text:
            return
        if ctx.depth + 1 > MAX_DEPTH:
            return
        tree = _parser().parse(text.encode())
        nested = Ctx(text.encode(), ctx.depth + 1, True)
        todo = [tree.root_node]
        while todo:
            node = todo.pop()
            if node.type in ("command_substitution", "process_substitution"):
                self.substitution(node, nested)
            else:
                todo.extend(node.children)

    def check_assigned(self, word: Word, part: str) -> None:
        name = assigned_name(word)
        if name in RUNS_CODE_ENV:
            self.find(part, f"setting {name} changes what a shell or a program runs")

    def check_evaluated(self, word: Word, part: str) -> None:
        if any(s in word.skeleton for s in EVALUATED):
            self.find(part, f"{word.text!r} spells a substitution that bash can evaluate later")

    def statement(self, node: Node, ctx: Ctx) -> None:
        """One statement (`Walker` reads them)."""
        raise NotImplementedError
