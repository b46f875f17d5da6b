"""What runs: a command written back from the parse tree the command policy read, so that bash executes exactly that.

The policy reads a command with tree-sitter-bash; a host's bash reads it with its own parser, and the two do not read
every text alike (a backslash before a blank and a `#`, a here-document's end, an ANSI-C string…). Listing those
differences one by one has never converged. So the text a host runs is not the text as written but its *canonical
form*: every simple command written again from the tree — each word with the quoting of each of its pieces kept
(literal text quoted, glob and tilde characters left bare where they were bare, expansions as `$NAME`, `${NAME…}`,
`$(…)`) — joined by the tree's own operators, each statement ended as it was (`;`, `&`, a line break), a here-document
as a here-string. The canonical form uses a small part of bash (single and double quotes, `$NAME`, `${NAME}`, `$()`,
`<()`, the list, pipeline and compound-command keywords, plain redirections) that the grammar and bash read alike, and
any non-ASCII text in it is single-quoted (in GBK, BIG5 or Shift_JIS a character's last byte may be a backslash, which
double quotes would take for an escape); whatever the tree says, that is what bash runs, even where the tree is not
what bash would have made of the original text.

What cannot be written back faithfully is refused (`Canonical.text is None`, with why): arithmetic on variables,
`[[ =~ ]]`, here-documents with an fd or beside another stdin redirection, brace expansion (but a numeric range of at
most 10,000 words), `${…}` beyond plain substitution, backquotes with a backslash in them, an ANSI-C string spelling
bytes above 127, a descriptor bash may read as a word, a line continuation read two ways, anything that does not
parse. The command policy asks about such a command, and a person who approves it approves it as written.

The policy judges the canonical form too (tools/commands: classify), and a canonical form must be its own canonical
form (a fixpoint), so what the grammar reads in it is what this module meant to write.

The package's rooms: rules.py (limits, patterns, quoting helpers), the writer in layers, each a class over the one
below — words.py (words, expansions) → redirections.py → simple.py (simple commands) → statements.py (lists, pipelines,
compound commands) — and render.py (`canonical`: written back, then checked).
"""

from tools.canonical.render import Canonical, canonical
from tools.canonical.rules import MAX_RENDERED_BYTES, NESTED_TOO_DEEPLY, quote

__all__ = ["MAX_RENDERED_BYTES", "NESTED_TOO_DEEPLY", "Canonical", "canonical", "quote"]
