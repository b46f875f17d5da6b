"""The writer's top layer: statements — lists, pipelines, compound commands, functions."""

from __future__ import annotations

from tree_sitter import Node

from tools.canonical.rules import (
    CASE_ENDS,
    FUNCTION_NAME,
    IDENTIFIER,
    LIST_OPS,
    PIPE_OPS,
    RESERVED,
    Unfaithful,
    between,
)
from tools.canonical.simple import CommandWriter
from tools.shellwords import (
    group_words,
)


class Writer(CommandWriter):
    """A command written back from its parse tree (see tools/canonical/__init__.py)."""

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
                    raise Unfaithful(f"unexpected {child.type!r} between statements")
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
            raise Unfaithful(f"an empty {what}")
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
                raise Unfaithful("a negation of more than one command")
            return "! " + self.statement(inner[0])
        if kind == "subshell":
            return "( " + self.body(between(node, "(", ")"))[0] + " )"
        if kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                raise Unfaithful("an arithmetic command")
            return "{ " + self.block(between(node, "{", "}"), "group") + " }"
        if kind == "if_statement":
            return self.if_(node)
        if kind in ("while_statement",):
            keyword = node.children[0].type
            group = node.named_children[-1]
            if group.type != "do_group" or keyword not in ("while", "until"):
                raise Unfaithful("a loop the renderer does not know")
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
        raise Unfaithful(f"a {kind.replace('_', ' ')} is only run as written")

    def list_(self, node: Node) -> str:
        # `a && b || c` nests to the left as deep as it is long: walked down the spine, not recursively.
        tail: list[str] = []
        while node.type == "list":
            kids = [c for c in node.children if c.type != "comment"]
            if len(kids) != 3 or kids[1].type not in LIST_OPS:
                raise Unfaithful("a list the renderer does not know")
            tail.append(f"{kids[1].type} {self.statement(kids[2])}")
            node = kids[0]
        return " ".join([self.statement(node), *reversed(tail)])

    def pipeline(self, children: list[Node]) -> str:
        out: list[str] = []
        for child in children:
            if child.type == "comment":
                continue
            if not child.is_named:
                if child.type not in PIPE_OPS:
                    raise Unfaithful(f"unexpected {child.type!r} in a pipeline")
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
                    out.append("else " + self.block(between(child, "else", None), "branch"))
                elif kind == "fi":
                    out.append("fi")
            else:
                segment.append(child)
        if node.type == "elif_clause":
            if segment or (out and out[-1].endswith(" then")):
                out.append(self.block(segment, "branch"))
        elif not out or out[-1] != "fi":
            raise Unfaithful("an if without its fi")
        return " ".join(out)

    def do_group(self, node: Node) -> str:
        return "do " + self.block(between(node, "do", "done"), "loop body") + " done"

    def for_(self, node: Node) -> str:
        keyword = node.children[0].type
        name = node.child_by_field_name("variable")
        group = node.named_children[-1]
        if keyword not in ("for", "select") or name is None or group.type != "do_group":
            raise Unfaithful("a loop the renderer does not know")
        if not IDENTIFIER.fullmatch(self.raw(name)):
            raise Unfaithful("a loop variable that is not a plain name")
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
                elif child.type in CASE_ENDS and not child.is_named:
                    ending = child.type
                else:
                    body.append(child)
            if not closed or not all(patterns):
                raise Unfaithful("a case pattern the renderer does not know")
            text, _ = self.body(body)
            out.append("|".join(self.word(p, pattern=True) for p in patterns) + ") " + (text + " " if text else ""))
            out[-1] += ending
        return " ".join([*out, "esac"])

    def function(self, node: Node) -> str:
        name = next((c for c in node.named_children if c.type == "word"), None)
        body = node.child_by_field_name("body")
        if name is None or body is None or not FUNCTION_NAME.fullmatch(self.raw(name)):
            raise Unfaithful("a function whose name the renderer does not write back")
        if self.raw(name) in RESERVED:
            raise Unfaithful("a function named like a reserved word")
        redirects = [c for c in node.named_children if c.type in ("file_redirect", "herestring_redirect")]
        if any(c.type == "heredoc_redirect" for c in node.named_children):
            raise Unfaithful("a function with a here-document")
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
