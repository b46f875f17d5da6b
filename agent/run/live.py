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
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
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


def read_spool(path: Path, *, limit: int = SPOOL_BYTES) -> list[tuple[str, str]]:
    """(stream, text) for each complete line of a spool; [] when it is gone (the command ended)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 4096)
    except OSError:
        return []
    lines = data.decode(errors="replace").split("\n")[:-1]  # the last piece may be half-written
    out: list[tuple[str, str]] = []
    for line in lines:
        stream, _, text = line.partition("\t")
        out.append(("stderr" if stream == "2" else "stdout", text))
    return out


READ_LIMIT = 256 * 1024  # per read: a command printing faster than this is shown a little behind


class SpoolTail:
    """Complete lines appended to one spool since the last read (a watcher reads only what is new)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self) -> list[tuple[str, str]]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read(READ_LIMIT)
        except OSError:
            return []
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        out = []
        for raw in lines:
            stream, _, text = raw.decode(errors="replace").partition("\t")
            out.append(("stderr" if stream == "2" else "stdout", text))
        return out
