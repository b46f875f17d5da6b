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
