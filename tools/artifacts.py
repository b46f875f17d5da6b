"""Content-addressed storage for full command output; the journal keeps only digests."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


class ArtifactStore:
    """Content-addressed files for full command output (the journal keeps only digests)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def read(self, name: str) -> str:
        return (self.root / Path(name).name).read_text(errors="replace")

    def writer(self) -> ArtifactWriter:
        return ArtifactWriter(self)

    def put(self, data: bytes) -> tuple[str, str]:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / f"sha256-{digest}"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return digest, path.name


class ArtifactWriter:
    """Streams output to disk while hashing it, so memory stays flat for any output size."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        fd, name = tempfile.mkstemp(dir=store.root, prefix=".partial-")
        self._fh = os.fdopen(fd, "wb")
        self._tmp = Path(name)
        self._hash = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self._fh.write(data)
        self._hash.update(data)

    def close(self) -> tuple[str, str]:
        self._fh.close()
        digest = self._hash.hexdigest()
        path = self.store.root / f"sha256-{digest}"
        if path.exists():
            self._tmp.unlink()
        else:
            self._tmp.replace(path)
        return digest, path.name
