"""Text from hosts, journals and exports, made safe to put on someone's screen.

Host output, a campaign's strings and a journal someone else wrote are untrusted: an `ESC[2J` clears the
screen, an OSC sequence retitles the window or plants a link (OSC 8), backspaces and carriage returns
overwrite what was printed, and a bidi override reorders a line so it reads as something else. Every
such character is shown as a visible escape (`\\x1b`, `\\u202e`), never sent, and an overlong line is cut
with a note of how much was left out. `printable` is the one function; `SanitizedStream` applies it at
the one place text leaves the CLI for a terminal or a pipe.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

MAX_LINE = 4_000  # characters of one line that reach a screen; the artifact keeps the whole of it

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LONG = re.compile(f"[^\n]{{{MAX_LINE + 1},}}")


def _visible(m: re.Match[str]) -> str:
    # C0 controls never reach here raw inside JSON (json.dumps escapes them); the rest are written the
    # way JSON writes them, so a JSON document passed through stays valid and means the same.
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x20 else f"\\u{c:04x}"


def printable(text: str, *, max_line: int | None = MAX_LINE) -> str:
    """`text` with every control or reordering character shown as an escape and lines cut at `max_line`
    (None: never cut, for machine-readable output such as `--json`)."""
    short = max_line is None or len(text) <= max_line
    if short and text.isprintable():
        return text  # nothing to show as an escape: every character _UNSAFE names is a control (Cc) or format (Cf) one
    text = _UNSAFE.sub(_visible, text)
    if max_line is None or len(text) <= max_line:
        return text
    pattern = _LONG if max_line == MAX_LINE else re.compile(f"[^\n]{{{max_line + 1},}}")
    return pattern.sub(lambda m: m.group()[:max_line] + f" … ({len(m.group()) - max_line:,} more characters)", text)


class SanitizedStream(io.TextIOBase):
    """A text stream (the CLI's stdout and stderr) that passes everything written to it through
    `printable`, without cutting lines: `--json` output goes through it too and must stay whole."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(printable(s, max_line=None))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.inner.encoding

    def writable(self) -> bool:
        return True


def raw(stream: TextIO) -> TextIO:
    """The stream under a SanitizedStream (for a console that sanitizes its own text, see SafeConsole)."""
    return stream.inner if isinstance(stream, SanitizedStream) else stream


def safe_console(**kwargs: object) -> Any:
    """A Rich console whose text is passed through `printable` (lines cut at MAX_LINE) while its own
    styling and cursor controls go out as they are; it writes below the CLI's SanitizedStream."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return super()._render_buffer(
                Segment(printable(text), style, control) if not control else Segment(text, style, control)
                for text, style, control in buffer
            )

    if "file" not in kwargs:
        kwargs["file"] = raw(sys.stderr if kwargs.pop("stderr", False) else sys.stdout)
    return SafeConsole(**kwargs)  # type: ignore[arg-type]
