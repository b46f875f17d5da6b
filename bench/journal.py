"""Journal speed, measured against `sha256sum` in the same run (not a test).

  1. Append throughput: events/s through `Journal.append`, with the usual mix (one durable event —
     fsync and head checkpoint — per 50 events, as gates and decisions are in a real session).
  2. Verification of a 100,000-event journal (`agent.journal.verify.verify`: chain, seq, head copies)
     against `sha256sum` of the same file, and the verifier's peak memory growth (it streams).
Prints figures and ratios. Target (issue 8): verify ≤ 1.5× sha256sum, memory flat in the size.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from table import record

from agent.journal import events
from agent.journal.chain import Journal
from agent.journal.verify import verify

N = int(os.environ.get("BENCH_EVENTS", "100000"))


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="signoff-journal-bench-") as root:  # ~30 MB a run: never left behind
        measure(Path(root) / "journal.jsonl")


def measure(path: Path) -> None:
    journal = Journal(path, "bench")
    payload = {"host": "gpu-a", "purpose": "bench:A", "command": "python3 simserve.py bench --concurrency 90"}
    t0 = time.perf_counter()
    for i in range(N):
        if i % 50 == 49:
            journal.append(events.DecisionEvent(gate=f"g{i}", by="policy:bench", decision={"action": "continue"}))
        else:
            # `pair` and `command` are extra fields (the models allow them): the line is what it always was.
            journal.append(events.CommandFinishedEvent(exit=0, duration_s=0.27, pair=i, **payload))
    journal.close()
    append_s = time.perf_counter() - t0
    size_mb = path.stat().st_size / 1e6
    print(f"append: {N:,} events in {append_s:.2f}s = {N / append_s:,.0f} events/s ({size_mb:.1f} MB, fsync every 50)")

    sha, ours = [], []
    before = rss_mb()
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(["sha256sum", str(path)], check=True, capture_output=True)
        sha.append(time.perf_counter() - t)
        t = time.perf_counter()
        report = verify(path)
        ours.append(time.perf_counter() - t)
        assert report.ok, report
    s, v = statistics.median(sha), statistics.median(ours)
    record(f"journal verify ({N // 1000}k events)", f"{v * 1000:.0f} ms", f"sha256sum {s * 1000:.0f} ms",
           v / s, "≤ 1.5×", v / s <= 1.5)  # fmt: skip
    print(
        f"verify: {v * 1000:.0f} ms vs sha256sum {s * 1000:.0f} ms → ratio {v / s:.2f}× "
        f"(target ≤ 1.5×: {'met' if v / s <= 1.5 else 'NOT met'}); peak RSS growth {rss_mb() - before:.1f} MB"
    )


if __name__ == "__main__":
    main()
