"""The writer's second layer: redirections and here-documents."""

from __future__ import annotations

from tree_sitter import Node

from tools.canonical.rules import (
    LIST_OPS,
    MAX_FD_DIGITS,
    PIPE_OPS,
    REDIRECT_OPS,
    Unfaithful,
    double_quoted,
    quote,
    unescape_heredoc,
)
from tools.canonical.words import WordWriter
from tools.shellwords import (
    dequote,
    group_words,
)


class RedirectWriter(WordWriter):
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
                    raise Unfaithful("a here-string to another descriptor")
                stdin.append("<<< " + self.word([c for c in node.named_children]))
            elif node.type == "heredoc_redirect":
                text, more, goes_on = self.heredoc(node)
                stdin.append(text)
                rest.extend(more)
                tail.extend(goes_on)
            elif node.type != "comment":
                raise Unfaithful(f"a {node.type.replace('_', ' ')} is only run as written")
        if len(stdin) > 1 or (stdin and any(r.startswith(("<", "0")) for r in rest)):
            raise Unfaithful("a here-document beside another redirection of standard input")
        if tail and nodes and nodes[-1].type != "heredoc_redirect":
            raise Unfaithful("a here-document whose line goes on before other redirections")
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
        if (fd and not fd.isdigit()) or op not in REDIRECT_OPS:
            raise Unfaithful(f"a redirection {self.raw(node)!r} is only run as written")
        if len(fd) > MAX_FD_DIGITS:
            # bash takes digits that do not fit an int for a word (an argument, even a command), not a descriptor
            raise Unfaithful(f"a descriptor number {fd[:12]} that bash may read as a word")
        if op in (">&-", "<&-"):
            if targets:
                raise Unfaithful("a closed descriptor with a target")
            return fd + op
        groups = group_words(targets, self.src)
        if len(groups) != 1:
            raise Unfaithful("a redirection with other than one target")
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
            raise Unfaithful("a here-document the renderer does not know")
        delimiter = dequote(self.raw(start))
        quoted = any(q in self.raw(start) for q in "'\"\\")
        text = self.raw(body) if body is not None else ""
        lines = text.split("\n")
        if strip:
            if not quoted and any(line.startswith("\t") for line in lines):
                raise Unfaithful("an indented here-document with expansions")
            lines = [line.lstrip("\t") for line in lines]
        # The whole line the grammar ended it at: bash ends it only at a line that is the delimiter alone.
        line_start = self.src.rfind(b"\n", 0, end.start_byte) + 1
        line_end = self.src.find(b"\n", end.end_byte)
        closing = self.src[line_start : line_end if line_end >= 0 else len(self.src)].decode("utf-8", "surrogatepass")
        if delimiter in lines or (closing.lstrip("\t") if strip else closing) != delimiter:
            raise Unfaithful(f"a here-document that bash ends elsewhere than at {delimiter!r}")
        if quoted or body is None or not text:
            value = "\n".join(lines)
            if not value:
                stdin = "</dev/null"
            elif not value.endswith("\n"):
                raise Unfaithful("a here-document without its last line break")
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
                    raise Unfaithful("a redirection after a here-document's line goes on")
                more.append(self.file_redirect(child))
            elif not child.is_named and child.type in LIST_OPS | PIPE_OPS:
                tail.append(child.type)
            elif child.type == "pipeline" and child.children and child.children[0].type in PIPE_OPS:
                tail.append(self.pipeline(child.children))
            elif child.is_named and tail and tail[-1] in LIST_OPS | PIPE_OPS:
                tail.append(self.statement(child))
            else:
                raise Unfaithful("a here-document whose line goes on in a way the renderer does not know")
        if tail and tail[-1] in LIST_OPS | PIPE_OPS:
            raise Unfaithful("a here-document whose line ends in an operator")
        return stdin, more, tail

    def heredoc_body(self, body: Node) -> str:
        """An unquoted here-document's body as a here-string (its last line break dropped)."""
        parts = self.around_expansions(body.named_children, body.start_byte, body.end_byte, unescape_heredoc)
        tail = parts[-1]
        if not isinstance(tail, str) or not tail.endswith("\n"):
            raise Unfaithful("a here-document without its last line break")
        return double_quoted([*parts[:-1], tail[:-1]])

    def pipeline(self, children: list[Node]) -> str:
        """A pipeline (`Writer` writes them; a here-document's line may hold one)."""
        raise NotImplementedError

    def statement(self, node: Node) -> str:
        """One statement (`Writer` writes them)."""
        raise NotImplementedError
