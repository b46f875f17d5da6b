"""Files in a session's directory that only their owner may read or write.

The directories on the way to a local host's working directory are passable by others (0711, see
`agent.store.local.PASSABLE`), so every file the store keeps must be 0600 on its own: the checkpoint DB and
the head carry command output and the journal's chain.
"""

from __future__ import annotations

import os
from pathlib import Path


def private_file(path: Path) -> Path:
    """`path` as an existing file only its owner can read or write: made empty when missing (never through
    a link left in its place), tightened when a broader mode was left by an older version. SQLite gives
    its -wal and -shm files the database file's mode, so calling this before connecting covers them too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically, as a 0600 file made here (O_EXCL: never through a link)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
        fh.write(text)
    tmp.replace(path)
