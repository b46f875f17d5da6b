"""The artifact store under concurrent writers of the same output (two hosts printing the same line)."""

from __future__ import annotations

import threading
from pathlib import Path

from tools.artifacts import ArtifactStore

THREADS, ROUNDS = 8, 200


def test_threads_storing_the_same_bytes_at_once_all_succeed(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    errors: list[BaseException] = []
    names: dict[int, set[str]] = {r: set() for r in range(ROUNDS)}
    together = threading.Barrier(THREADS)

    def put() -> None:
        for r in range(ROUNDS):
            together.wait()  # every round, all threads store the same new output at the same moment
            try:
                names[r].add(store.put(f"initialised {r}\n".encode())[1])
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=put) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []  # they shared one temporary name, and a `replace` found it gone
    assert all(len(n) == 1 for n in names.values())
    stored = {p.name for p in store.root.iterdir()}
    assert stored == set().union(*names.values())  # one file per output, no temporary file left behind


def test_a_streams_digest_names_its_artifact_and_an_empty_stream_makes_no_file_of_its_own(tmp_path: Path) -> None:
    import hashlib

    from tools.output import StreamSink

    store = ArtifactStore(tmp_path / "artifacts")
    quiet = StreamSink("stderr", store, None, str)
    assert list(store.root.iterdir()) == []  # nothing on disk before a stream's first byte
    _, digest, name = quiet.close()
    empty = hashlib.sha256(b"").hexdigest()
    assert (digest, name) == (empty, f"sha256-{empty}") and store.read(name) == ""
    # Without a newline, longer than a line, and in pieces: what is kept is what came, and its name says so.
    data = b"x" * 100_000 + "é".encode() + b"\nlast line without a newline"
    loud = StreamSink("stdout", store, None, str)
    for i in range(0, len(data), 4096):
        loud.feed(data[i : i + 4096])
    _, digest, name = loud.close()
    assert digest == hashlib.sha256(data).hexdigest() and name == f"sha256-{digest}"
    assert (store.root / name).read_bytes() == data
    assert sorted(p.name for p in store.root.iterdir()) == sorted({name, f"sha256-{empty}"})  # no partial file
