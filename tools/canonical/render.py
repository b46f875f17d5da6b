"""The canonical form of a command, checked: written back, read back as itself, refused when it cannot be."""

from __future__ import annotations

from dataclasses import dataclass

from tools.canonical.rules import MAX_RENDERED_BYTES, NESTED_TOO_DEEPLY, Unfaithful, outside_single_quotes
from tools.canonical.statements import Writer
from tools.shellwords import (
    MAX_RUN,
    as_bash_reads,
    chunks,
    parser,
)


@dataclass(frozen=True)
class Canonical:
    """The text bash is given for a command, or None with why it cannot be written back faithfully."""

    text: str | None
    why: str = ""


def canonical(command: str) -> Canonical:
    """The canonical form of `command` (see the module's docstring)."""
    source = command.encode("utf-8", "surrogatepass")
    if len(source) > MAX_RENDERED_BYTES:
        return Canonical(None, f"over {MAX_RENDERED_BYTES // 1024} KB: it is run only as written")
    try:
        text = render_pieces(source)
        # A line continuation is read two ways by the classifier (tools/commands/); both must write the same.
        if b"\\\n" in source and render_pieces(source.replace(b"\\\n", b"")) != text:
            raise Unfaithful("a line continuation that the grammar and bash may read differently")
        if render_pieces(text.encode("utf-8", "surrogatepass")) != text:
            raise Unfaithful("its written-back form does not read back as itself")
        if (found := outside_single_quotes(text)) is not None:
            raise Unfaithful(f"{found!r} outside single quotes, which a multibyte locale may read differently")
    except Unfaithful as exc:
        return Canonical(None, str(exc))
    except RecursionError:
        return Canonical(None, NESTED_TOO_DEEPLY)
    return Canonical(text)


def render_pieces(source: bytes) -> str:
    """The canonical form; a long text in the pieces the classifier parses it in (tools/shellwords.py: chunks), each
    written back on its own: a cut inside any construct leaves a piece that does not parse, which is refused."""
    pieces = chunks(source)
    if pieces is None:
        raise Unfaithful(f"over {MAX_RUN:,} bytes without a `;` or a line break")
    out: list[str] = []
    background = False
    cut = b""
    for piece in pieces:
        read, _ = as_bash_reads(piece)
        root = parser().parse(read).root_node
        if root.has_error:
            raise Unfaithful("it does not parse as a shell command")
        text, ends_in_background = Writer(piece).body(root.children)
        if text:
            if out:
                out.append(" " if background else "\n" if cut == b"\n" else "; ")
            out.append(text)
            background = ends_in_background
        cut = piece[-1:]
    return "".join(out)
