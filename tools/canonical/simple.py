"""The writer's third layer: simple commands, assignments, declarations and `[[ … ]]` tests."""

from __future__ import annotations

from tree_sitter import Node

from tools.canonical.redirections import RedirectWriter
from tools.canonical.rules import RESERVED, SAFE, TEST_FLAG, TEST_OPS, Unfaithful, quote
from tools.shellwords import (
    group_words,
)


class CommandWriter(RedirectWriter):
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
        spelled = words and (words[0] in RESERVED or "=" in words[0]) and SAFE.fullmatch(words[0] + "x")
        if spelled and self.raw_group(groups[0]) not in ("time", "coproc"):
            words[0] = "'" + words[0] + "'"
        stdin, rest, tail = self.redirects(redirects)
        text = " ".join([*assigns, *words, *stdin, *rest])
        if not text:
            raise Unfaithful("an empty command")
        return " ".join([text, *tail])

    def assignment(self, node: Node) -> str:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        op = next((c.type for c in node.children if not c.is_named and c.type in ("=", "+=")), None)
        if name is None or name.type != "variable_name" or op is None:
            raise Unfaithful("an assignment to a subscript or a computed name")
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
            raise Unfaithful("a test the renderer does not know")
        closer = "]" if opener == "[" else "]]"
        out: list[str] = []
        todo = list(reversed(node.children[1:-1]))
        while todo:
            child = todo.pop()
            if child.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
                todo.extend(reversed(child.children))
            elif child.type == "test_operator" or not child.is_named:
                op = self.raw(child).strip()
                if TEST_FLAG.fullmatch(op):
                    out.append(op)
                elif op in TEST_OPS:
                    out.append(op if opener == "[[" else quote(op))
                else:
                    raise Unfaithful(f"a test with {op!r} is only run as written")
            elif child.type in ("regex",):
                raise Unfaithful("a regular expression match is only run as written")
            else:
                out.append(self.word([child], pattern=opener == "[["))
        if node.children[-1].type != closer:
            raise Unfaithful("a test without its end")
        return " ".join([opener, *out, closer])
