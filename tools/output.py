"""Command output handling shared by the transports: redact, split into lines, stream each line to
a callback, keep a bounded tail in memory and write the full (redacted) output to artifacts.

Redaction runs on the byte stream before it is split into lines: a secret that spans lines, ends in
a newline or straddles a read (or the MAX_LINE cut) would otherwise pass in pieces no line-wise
pattern matches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from tools.artifacts import ArtifactStore, StorageFull
from tools.secrets import Redactor, StreamRedactor

LineCallback = Callable[[str, str], None]  # (stream name, line)

TAIL_BYTES = 1 << 20  # 1 MiB per stream in memory; the rest is on disk
MAX_LINE = 1 << 16  # longer "lines" are passed on in pieces of this size


class StreamSink:
    def __init__(
        self, name: str, store: ArtifactStore, on_line: LineCallback | None, redact: Callable[[str], str]
    ) -> None:
        self.name = name
        self.on_line = on_line
        self.redact = redact
        self.redacting = redact is not str and bool(redact)  # an empty Redactor is falsy
        # A Redactor masks the byte stream; any other callable can only be applied line by line.
        self.stream: StreamRedactor | None = (
            redact.stream() if self.redacting and isinstance(redact, Redactor) else None
        )
        self.by_line = self.redacting and self.stream is None
        self.writer = store.writer()  # it hashes what it writes: that digest is the stream's (one pass, not two)
        self.partial_parts: list[bytes] = []
        self.partial_size = 0
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.truncated = False
        self.filter: Callable[[str], bool] | None = None  # True = swallow the line (e.g. our PGID marker)
        # Disk full: keep draining the pipe (a blocked writer would hang the command), fail at close.
        self.full: StorageFull | None = None

    def feed(self, data: bytes) -> None:
        if self.stream is not None:
            data = self.stream.feed(data)
        self._split(data)

    def _split(self, data: bytes) -> None:
        if not data:
            return
        if b"\n" not in data:
            # No newline yet: buffer, but never more than MAX_LINE (200 MB of one "line" is realistic
            # for binary output, and re-concatenating it per chunk would be quadratic).
            self.partial_parts.append(data)
            self.partial_size += len(data)
            if self.partial_size >= MAX_LINE:
                buf = b"".join(self.partial_parts)
                cut = _utf8_boundary(buf)
                self._line(buf if cut == len(buf) else buf[:cut], b"")  # a slice would copy every byte again
                self.partial_parts, self.partial_size = ([buf[cut:]], len(buf) - cut) if cut < len(buf) else ([], 0)
            return
        head, _, rest = data.partition(b"\n")
        self._line(b"".join([*self.partial_parts, head]), b"\n")
        *lines, tail = rest.split(b"\n")
        for raw in lines:
            self._line(raw, b"\n")
        self.partial_parts, self.partial_size = ([tail], len(tail)) if tail else ([], 0)

    def _line(self, raw: bytes, end: bytes) -> None:
        if self.filter is None and not self.by_line and self.on_line is None:
            out = raw + end if end else raw  # fast path: bytes straight through (already masked, nothing to show)
            clean = ""
        else:
            text = raw.decode(errors="replace")
            if self.filter is not None and self.filter(text):
                return
            clean = self.redact(text) if self.by_line else text
            out = clean.encode() + end if self.by_line else raw + end
        if self.full is None:
            try:
                self.writer.write(out)
            except StorageFull as exc:
                self.full = exc
        self.tail.append(out)
        self.tail_size += len(out)
        while self.tail_size > TAIL_BYTES and len(self.tail) > 1:
            self.tail_size -= len(self.tail.popleft())
            self.truncated = True
        if self.on_line is not None:
            self.on_line(self.name, clean)

    def close(self) -> tuple[str, str, str]:
        """(text tail, sha256 of the full redacted stream, artifact name)."""
        if self.stream is not None:
            self._split(self.stream.flush())  # the tail held back in case it was the start of a secret
        if self.partial_parts:
            self._line(b"".join(self.partial_parts), b"")
            self.partial_parts, self.partial_size = [], 0
        if self.full is not None:
            self.writer.discard()
            raise self.full
        digest, name = self.writer.close()
        return b"".join(self.tail).decode(errors="replace"), digest, name


def _utf8_boundary(buf: bytes) -> int:
    """The largest cut point that does not split a UTF-8 character."""
    cut = len(buf)
    back = 0
    while cut > 0 and back < 4 and (buf[cut - 1] & 0xC0) == 0x80:
        cut -= 1
        back += 1
    if cut > 0 and buf[cut - 1] >= 0xC0:
        need = 2 if buf[cut - 1] < 0xE0 else 3 if buf[cut - 1] < 0xF0 else 4
        if back + 1 < need:
            return cut - 1
    return len(buf)
