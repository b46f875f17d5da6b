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
canonical form (tools/canonical/), written back from the tree this module judged — every word with its
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

from tools.commands.model import CommandClass as CommandClass
from tools.commands.model import Verdict as Verdict
from tools.commands.patterns import allowed_words as allowed_words
from tools.commands.patterns import program_matches as program_matches
from tools.commands.verdicts import classify as classify
from tools.commands.verdicts import forget_verdicts as forget_verdicts
from tools.commands.verdicts import split_compound as split_compound
from tools.commands.vocabulary import MAX_COMMAND_BYTES as MAX_COMMAND_BYTES
from tools.commands.walker import analyse as analyse
