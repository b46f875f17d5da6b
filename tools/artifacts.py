"""Content-addressed storage for full command output; the journal keeps only digests."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

T = TypeVar("T")
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
PARTIAL = ".partial-"  # output still being written; left behind only by a process that was killed


class StorageFull(OSError):
    """The artifact store cannot take more output (disk full, quota or file size limit).

    `result` is set (to a CommandResult) when the command itself ran to its end and only its output
    could not be kept: how it ended is still known and worth recording."""

    result: object = None


def _guarded(root: Path, write: Callable[[], T]) -> T:
    try:
        return write()
    except StorageFull:
        raise
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        raise StorageFull(exc.errno, f"no space left for command output in {root} ({exc.strerror})") from exc


class ArtifactStore:
    """Content-addressed files for full command output (the journal keeps only digests)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Command output (secrets masked, but hosts' data all the same) is for the session's owner only.
        root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def sweep(self) -> int:
        """Remove partial files a killed process left (call with the session lock held)."""
        stale = list(self.root.glob(f"{PARTIAL}*"))
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)

    def read(self, name: str) -> str:
        return (self.root / Path(name).name).read_text(errors="replace")

    def writer(self) -> ArtifactWriter:
        return ArtifactWriter(self)

    def put(self, data: bytes) -> tuple[str, str]:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / f"sha256-{digest}"
        if not path.exists():
            # A temporary name of its own: two threads storing the same bytes must not share one file
            # (the second `replace` would find it gone).
            fd, name = _guarded(
                self.root, lambda: tempfile.mkstemp(dir=self.root, prefix=f"sha256-{digest}.", suffix=".tmp")
            )
            os.close(fd)
            tmp = Path(name)
            try:
                _guarded(self.root, lambda: tmp.write_bytes(data))
            except StorageFull:
                tmp.unlink(missing_ok=True)
                raise
            tmp.replace(path)
        return digest, path.name


class ArtifactWriter:
    """Streams output to disk while hashing it, so memory stays flat for any output size.

    The file is made at the first byte: most commands print nothing on one stream or both, and two files
    made and removed per command were a tenth of a short SSH command's time. An empty stream is the
    store's one empty artifact."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self._fh: BinaryIO | None = None
        self._tmp: Path | None = None
        self._hash = hashlib.sha256()

    def _open(self) -> BinaryIO:
        fd, name = _guarded(self.store.root, lambda: tempfile.mkstemp(dir=self.store.root, prefix=PARTIAL))
        self._tmp = Path(name)
        self._fh = fh = os.fdopen(fd, "wb")
        return fh

    def write(self, data: bytes) -> None:
        if not data:
            return
        fh = self._fh or self._open()
        _guarded(self.store.root, lambda: fh.write(data))
        self._hash.update(data)

    def discard(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):  # the disk is full: what did not fit goes with the file
                self._fh.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)

    def close(self) -> tuple[str, str]:
        fh, tmp = self._fh, self._tmp
        if fh is None or tmp is None:
            return self.store.put(b"")
        try:
            _guarded(self.store.root, fh.close)
        except StorageFull:
            self.discard()  # a partial artifact would be evidence of nothing
            raise
        digest = self._hash.hexdigest()
        path = self.store.root / f"sha256-{digest}"
        if path.exists():
            tmp.unlink()
        else:
            tmp.replace(path)
        return digest, path.name
