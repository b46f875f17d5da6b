"""The PATH a remote command runs with keeps only absolute entries (tools/transport.py: ABSOLUTE_PATH): a relative
one (`.`, `bin`, an empty one) would let a bare name an allow pattern names find a program in whatever directory
the command runs in. The guard skips its loop when one `case` says there is nothing to drop; these tests hold the
whole guard, skip included, to the rule local hosts get in Python (`local_environment`), on generated PATHs full
of what could fool a pattern: empty entries, relative ones, glob characters, newlines, colons at either end."""

from __future__ import annotations

import shlex
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.transport import ABSOLUTE_PATH, DEFAULT_PATH, SHELL

# Reads NUL-separated PATHs on stdin; for each, the guard as a command's bash runs it, then the PATH it left, and
# whether the guard's own variables are gone (they could be in the host's environment).
RUNNER = (
    f"__guard={shlex.quote(ABSOLUTE_PATH)}; while IFS= read -r -d '' __in; do __r=planted __p=planted __d=planted; "
    'PATH=$__in; eval "$__guard"; printf \'%s\\0%s\\0\' "$PATH" "${__r-}${__p-}${__d-}"; done'
)


def spec(path: str) -> str:
    """What a local host's commands get (tools/transport.py: local_environment): the absolute entries, in order."""
    return ":".join(d for d in path.split(":") if d.startswith("/")) or DEFAULT_PATH


def guarded(paths: list[str]) -> list[tuple[str, str]]:
    out = subprocess.run(
        [*SHELL, RUNNER], input="".join(p + "\0" for p in paths).encode(), capture_output=True, timeout=20, check=True
    ).stdout.decode()
    fields = out.split("\0")[:-1]
    return list(zip(fields[0::2], fields[1::2], strict=True))


EDGES = [
    "",
    ":",
    "::",
    "/bin",
    "/bin:",
    ":/bin",
    "/usr/bin::/bin",
    ".:/bin",
    "/bin:.",
    "bin:/usr/bin",
    "/bin:bin",
    "~/bin:/bin",
    "/a b:/c",
    "/x*:/y?",
    "[!/]:/bin",
    "/bin:\n/sbin",
    "/bin\n:/sbin",
    "\n/bin",
    "//:/",
    "/:a",
]


def test_the_guard_keeps_exactly_the_absolute_entries_on_known_edges() -> None:
    assert guarded(EDGES) == [(spec(p), "") for p in EDGES]


def test_an_unset_path_gets_the_default() -> None:
    out = subprocess.run(
        [*SHELL, "unset PATH; " + ABSOLUTE_PATH + 'printf %s "$PATH"'], capture_output=True, timeout=10
    ).stdout.decode()
    assert out == DEFAULT_PATH


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="/:.ab \n*?[]!\\-~", max_size=24), min_size=1, max_size=60))
def test_the_guard_keeps_exactly_the_absolute_entries_of_any_path(paths: list[str]) -> None:
    assert guarded(paths) == [(spec(p), "") for p in paths]
