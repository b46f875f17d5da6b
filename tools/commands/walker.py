"""The parse-tree walk, whole: statements and containers on top of the rooms below; `analyse` runs it."""

from __future__ import annotations

from tree_sitter import Node

from tools.commands.model import Analysis, Ctx, Simple, Word
from tools.commands.programs import ProgramWalk
from tools.commands.vocabulary import CONTAINERS, REDIRECTS, SKIPPED, WORDS
from tools.shellwords import text as _text


def analyse(command: str) -> Analysis:
    walker = Walker()
    walker.script(command.encode("utf-8", "surrogatepass"), 0, False, command.strip())
    return walker.run()


class Walker(ProgramWalk):
    """Walks a parse tree, iteratively for statements (a 400 KB `a && a && …` nests that deep)."""

    def statement(self, node: Node, ctx: Ctx) -> None:
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
            self.result.simples.append(Simple(_text(node), words, [], ctx.nested))
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
        elif kind in CONTAINERS:
            self.container(node, ctx)
        elif kind in REDIRECTS:
            self.redirect(node, ctx, _text(node))
        elif kind in WORDS:
            self.word([node], ctx, _text(node))
        elif kind in SKIPPED or not node.is_named:
            pass
        else:
            self.find(_text(node), f"a {kind.replace('_', ' ')} is not something the command policy models")
            self.scan(node, ctx)

    def container(self, node: Node, ctx: Ctx) -> None:
        later: list[Node] = []
        for child in node.named_children:
            # The part is only taken when needed: lists nest as deep as they are long, and taking every
            # level's text would be quadratic.
            if child.type in REDIRECTS:
                self.redirect(child, ctx, _text(node))
            elif child.type in WORDS and node.type != "program":
                # for/case values, a function's name: words, evaluated for what they run.
                self.word([child], ctx, _text(node))
            elif child.type == "variable_name" and node.type == "for_statement":
                self.check_assigned(Word(_text(child), _text(child)), _text(node)[:200])
            else:
                later.append(child)
        self.push(later, ctx)
