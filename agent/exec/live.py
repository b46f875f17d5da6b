"""What a running command has printed so far, for whoever watches the session (the TUI's output pane).

The journal records a command when it starts and when it ends; its full output becomes an artifact only
at the end. In between, each line (secrets already masked by the transport's sink) is appended to
`live/<seq>.log` in the session's working directory, `seq` being its `command.started` line's. The file
is removed when the command ends, so what is left there after a crash is stale and readers go by the
journal: a spool is only shown for a command that started and has not finished.

Each line is `<stream>\t<text>`, stream `1` (stdout) or `2` (stderr). A spool is capped at SPOOL_BYTES:
beyond it one marker line says the rest is in the artifact.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO

SPOOL_BYTES = 1 << 20
STREAMS = {"stdout": "1", "stderr": "2"}
CUT = "…output continues; the whole of it is in the command's artifact when it ends"


def spool_path(live_dir: Path, seq: int) -> Path:
    return live_dir / f"{int(seq)}.log"


class Spool:
    """One running command's lines; `on_line` is the transport's LineCallback (called from its readers)."""

    def __init__(self, live_dir: Path, seq: int) -> None:
        live_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = spool_path(live_dir, seq)
        # never through a link someone left in the session's directory
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        self._fh = os.fdopen(fd, "ab", buffering=0)
        self._lock = threading.Lock()  # stdout and stderr arrive on two reader threads
        self._written = 0
        self._cut = False

    def on_line(self, stream: str, line: str) -> None:
        with self._lock:
            if self._cut or self._fh.closed:
                return
            data = f"{STREAMS.get(stream, '1')}\t{line.rstrip(chr(10))}\n".encode(errors="replace")
            if self._written + len(data) > SPOOL_BYTES:
                self._cut = True
                data = f"2\t{CUT}\n".encode()
            try:
                self._fh.write(data)
            except OSError:  # a full disk must not stop the command: the artifact is what counts
                self._cut = True
                return
            self._written += len(data)

    def close(self) -> None:
        with self._lock:
            self._fh.close()
        self.path.unlink(missing_ok=True)


def sweep(live_dir: Path | None) -> int:
    """Remove the spools a killed run left (call with the session lock held, before anything runs)."""
    if live_dir is None or not live_dir.is_dir():
        return 0
    stale = list(live_dir.glob("*.log"))
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


READ_LIMIT = 256 * 1024  # per read: a command printing faster than this is shown a little behind


class SpoolTail:
    """Complete lines appended to one spool since the last read (a watcher reads only what is new).

    The file stays open once found: the runner removes it when the command ends, and what was written
    in its last moment is still read from the open file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self._fh: BinaryIO | None = None

    @property
    def opened(self) -> bool:
        return self._fh is not None

    def read(self) -> list[tuple[str, str]]:
        if self._fh is None:
            try:
                self._fh = self.path.open("rb")
            except OSError:
                return []
        try:
            data = self._fh.read(READ_LIMIT)
        except OSError:
            return []
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        out = []
        for raw in lines:
            stream, _, text = raw.decode(errors="replace").partition("\t")
            out.append(("stderr" if stream == "2" else "stdout", text))
        return out

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
