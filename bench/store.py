"""Journal append throughput: the PostgreSQL journal against the embedded file journal, same run.

Starts a throwaway PostgreSQL server on 127.0.0.1 (as the tests do) and appends the same events to
both: the file journal (fsync on its durable kinds, as in a run) and `PgJournal` (one transaction per
line, its head row locked). Issue 10 also asks for a gate round trip on both stores; that needs the
store seam, which is not built yet, so it is not measured here.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from table import record

from agent import pgjournal
from agent.journal import Journal, verify
from agent.pgjournal import PgJournal
from tests import pg

N = int(os.environ.get("BENCH_EVENTS", "2000"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def events() -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for i in range(N):
        kind = "decision" if i % 50 == 0 else "command.finished"
        out.append((kind, {"host": "gpu-a", "exit": 0, "duration_s": 0.27, "pair": i, "gate": f"g{i}"}))
    return out


def file_rate(work: Path, k: int) -> float:
    j = Journal(work / f"file{k}" / "journal.jsonl", f"bench-{k}")
    t = time.perf_counter()
    for kind, data in events():
        j.append(kind, **data)
    j.close()
    return N / (time.perf_counter() - t)


def pg_rate(url: str, work: Path, k: int) -> float:
    j = PgJournal(url, f"bench-{k}")
    t = time.perf_counter()
    for kind, data in events():
        j.append(kind, **data)
    rate = N / (time.perf_counter() - t)
    exported = work / f"pg{k}" / "journal.jsonl"
    j.export(exported)
    j.close()
    assert verify(exported).ok
    return rate


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="signoff-store-"))
    server = pg.start(fsync=True)  # durable, as a team store would run
    try:
        url = server.database("bench")
        pgjournal.setup(url)
        files, pgs = [], []
        for k in range(RUNS):  # interleaved: the machine is shared
            (work / f"file{k}").mkdir()
            files.append(file_rate(work, k))
            pgs.append(pg_rate(url, work, k))
        f, p = statistics.median(files), statistics.median(pgs)
        print(f"journal append, {N:,} events (median of {RUNS}): PostgreSQL {p:,.0f}/s, file {f:,.0f}/s "
              f"→ ratio {p / f:.2f} (no target set)")  # fmt: skip
        record("journal append: PostgreSQL vs file", f"{p:,.0f}/s", f"file {f:,.0f}/s", p / f, "(none yet)", True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
