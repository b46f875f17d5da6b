"""The walk through words: quoting, expansions, substitutions, arithmetic, assignments, redirections and
here-documents."""

from __future__ import annotations

import re

from tree_sitter import Node

from tools.commands.model import BLANK_INSIDE, Ctx, Word
from tools.commands.patterns import outside
from tools.commands.vocabulary import DUP_OPS, MAX_DEPTH, PLAIN_EXPANSION_OPS, REDIRECTS, SKIPPED, WRITE_OPS
from tools.commands.walk import Walk
from tools.shellwords import braces as _braces
from tools.shellwords import decode_ansi_c as _decode_ansi_c
from tools.shellwords import dequote as _dequote
from tools.shellwords import group_words
from tools.shellwords import text as _text
from tools.shellwords import unescape_double as _unescape_double
from tools.shellwords import unescape_unquoted as _unescape_unquoted

# `${NAME}`, or `${NAME:-text}` and the other operators that only substitute, with plain text: what an
# unquoted here-document may hold without running anything.
_PLAIN_BRACED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-+?]|##?|%%?)[^$`{}\\]*)?\}|\$\{[0-9@*#?$!-]\}")


def _heredoc_evaluates(body: str) -> bool:
    """Whether an unquoted here-document body runs anything: `$(`, a backtick, `$[`, or a `${…}` that
    is more than a plain name or a plain default. One linear scan."""
    if "`" in body or "$(" in body or "$[" in body:
        return True
    return "${" in _PLAIN_BRACED.sub("", body)


class WordWalk(Walk):
    """Words, and what is inside them: quoting, expansions, substitutions, arithmetic; assignments,
    redirections and here-documents."""

    def word(self, nodes: list[Node], ctx: Ctx, part: str, quoted: bool = False) -> Word:
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
        return Word("".join(texts), "".join(skels), dynamic, splits)

    def piece(self, node: Node, ctx: Ctx, part: str, quoted: bool, depth: int = 0) -> Word:
        kind = node.type
        raw = _text(node)
        if depth > MAX_DEPTH:
            self.refuse(part, "nested too deeply to classify")
            return Word(raw, "\0", True, True)
        if kind == "word":
            if quoted:
                return Word(raw, raw)
            value, skeleton, glob = _unescape_unquoted(raw)
            if BLANK_INSIDE.search(raw):  # bash ends an unquoted word at an unescaped blank
                self.find(part, f"the parser read {raw[:60]!r} as one word, which bash splits")
                self.result.suspect = True
            return Word(value, skeleton, glob, glob, skeleton)
        if kind in ("number", "variable_name", "test_operator"):
            return Word(raw, raw)
        if kind == "extglob_pattern":
            return Word(raw, raw, True, True)
        if kind == "raw_string":
            return Word(raw[1:-1], raw[1:-1])
        if kind == "ansi_c_string":
            value = _decode_ansi_c(raw[2:-1])
            return Word(value, value)
        if kind == "$":
            return Word("$", "$")
        if kind in ("string", "translated_string"):
            return self.string(node, ctx, part, depth)
        if kind == "concatenation":
            parts = [self.piece(c, ctx, part, quoted, depth + 1) for c in node.children]
            return Word(
                "".join(p.text for p in parts),
                "".join(p.skeleton for p in parts),
                any(p.dynamic for p in parts),
                any(p.splits for p in parts),
                "".join(p.bare for p in parts),
            )
        if kind == "simple_expansion":
            if BLANK_INSIDE.search(raw.strip()):
                self.find(part, f"the parser read {raw.strip()[:60]!r} as one expansion, which bash splits")
                self.result.suspect = True
            special = raw.lstrip()[1:] in ("@", "*")
            return Word(raw.lstrip(), "\0", True, special or not quoted)
        if kind == "expansion":
            self.expansion(node, ctx, part, depth)
            return Word(raw.lstrip(), "\0", True, not quoted or "[@]" in raw or "[*]" in raw)
        if kind in ("command_substitution", "process_substitution"):
            self.substitution(node, ctx)
            return Word(raw.lstrip(), "\0", True, not quoted and kind == "command_substitution")
        if kind == "arithmetic_expansion":
            self.arithmetic(node, ctx, part)
            return Word(raw.lstrip(), "\0", True, not quoted)
        if kind == "regex":
            # The grammar leaves a pattern unparsed, so an expansion in one cannot be accounted for.
            expands = "$" in raw or "`" in raw
            if expands:
                self.find(part, f"a pattern with an expansion in it ({raw}) is not something the policy models")
                self.opaque(raw, ctx)
            return Word(raw, raw, expands)
        if kind == "brace_expression":
            if not quoted and all(c.type == "number" for c in node.named_children):
                return Word(raw, raw, False, True)  # `{1..5}`: numbers only, several words
            self.find(part, f"brace expansion {raw}: its words are only known when bash runs it")
            return Word(raw, "\0", True, True)
        self.find(part, f"a {kind.replace('_', ' ')} in a word is not something the command policy models")
        self.scan(node, ctx)
        return Word(raw, "\0", True, True)

    def string(self, node: Node, ctx: Ctx, part: str, depth: int) -> Word:
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
        return Word("".join(texts), "".join(skels), dynamic, splits)

    def expansion(self, node: Node, ctx: Ctx, part: str, depth: int) -> None:
        """`${name}`, `${#name}` and `${name<op>literal}` for ops that only substitute text are
        accounted for; assignment (`:=`), indirection (`!`), transformations (`@P` runs `$(…)` in the
        value), substrings (arithmetic), replacement and subscripts are asked about."""
        inner = [c for c in node.children if c.type not in ("${", "}")]
        names = [c for c in inner if c.type in ("variable_name", "special_variable_name")]
        ops = [c.type for c in inner if not c.is_named]
        operands = [c for c in inner if c.is_named and c.type not in ("variable_name", "special_variable_name")]
        plain = len(names) == 1 and not operands and ops in ([], ["#"]) and (not ops or inner[0].type == "#")
        if len(names) == 1 and len(ops) == 1 and ops[0] in PLAIN_EXPANSION_OPS and inner[0] == names[0]:
            values = [self.piece(c, ctx, part, True, depth + 1) for c in operands]
            plain = all(not v.dynamic for v in values)
            plain = plain and all(c.type in ("word", "string", "raw_string", "number", "regex") for c in operands)
            plain = plain and all(c.type != "regex" or "$" not in _text(c) for c in operands)
        if not plain:
            op = "".join(ops) or (operands[0].type.replace("_", " ") if operands else "?")
            self.find(part, f"parameter expansion {_text(node).strip()} ({op}) can assign or evaluate")
            self.scan(node, ctx)

    def arithmetic(self, node: Node, ctx: Ctx, part: str) -> None:
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

    def assignment(self, node: Node, ctx: Ctx, part: str) -> Word:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None and name.type != "variable_name":
            self.find(part, f"assigning to {_text(name)}: the subscript is evaluated, which can run commands")
            self.scan(name, ctx)
        head = _text(node)[: (value.start_byte - node.start_byte)] if value is not None else _text(node)
        if value is None:
            return Word(head, head)
        if value.type == "array":
            words = [self.word(g, ctx, part) for g in group_words(value.named_children, ctx.src)]
            text = head + "(" + " ".join(w.text for w in words) + ")"
            skeleton = head + "(" + " ".join(w.skeleton for w in words) + ")"
            return Word(text, skeleton, any(w.dynamic for w in words))
        w = self.word([value], ctx, part)
        return Word(head + w.text, head + w.skeleton, w.dynamic)

    def redirect(self, node: Node, ctx: Ctx, part: str) -> None:
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
        writes = op in WRITE_OPS or (op in DUP_OPS and words and not words[0].text.isdigit())
        if writes:
            for w in words:
                self.result.writes.append((part, w))
        elif op in ("<", "<&") and any(outside(w, False) for w in words if not w.text.isdigit()):
            self.result.reads_outside = True

    def heredoc(self, node: Node, ctx: Ctx, part: str) -> None:
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
            elif child.type in REDIRECTS:
                self.redirect(child, ctx, part)
            elif child.type in SKIPPED:
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
