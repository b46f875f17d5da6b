"""Command output handling shared by the transports: split into lines, redact, stream each line to
a callback, keep a bounded tail in memory and write the full (redacted) output to artifacts.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable

from tools.artifacts import ArtifactStore

LineCallback = Callable[[str, str], None]  # (stream name, line)

TAIL_BYTES = 1 << 20  # 1 MiB per stream in memory; the rest is on disk


class StreamSink:
    def __init__(
        self, name: str, store: ArtifactStore, on_line: LineCallback | None, redact: Callable[[str], str]
    ) -> None:
        self.name = name
        self.on_line = on_line
        self.redact = redact
        self.writer = store.writer()
        self.hash = hashlib.sha256()
        self.partial = b""
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.truncated = False
        self.filter: Callable[[str], bool] | None = None  # True = swallow the line (e.g. our PGID marker)

    def feed(self, data: bytes) -> None:
        data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        for raw in lines:
            self._line(raw, b"\n")

    def _line(self, raw: bytes, end: bytes) -> None:
        text = raw.decode(errors="replace")
        if self.filter is not None and self.filter(text):
            return
        clean = self.redact(text)
        out = clean.encode() + end
        self.writer.write(out)
        self.hash.update(out)
        self.tail.append(out)
        self.tail_size += len(out)
        while self.tail_size > TAIL_BYTES and len(self.tail) > 1:
            self.tail_size -= len(self.tail.popleft())
            self.truncated = True
        if self.on_line is not None:
            self.on_line(self.name, clean)

    def close(self) -> tuple[str, str, str]:
        """(text tail, sha256 of the full redacted stream, artifact name)."""
        if self.partial:
            self._line(self.partial, b"")
            self.partial = b""
        _, name = self.writer.close()
        return b"".join(self.tail).decode(errors="replace"), self.hash.hexdigest(), name
