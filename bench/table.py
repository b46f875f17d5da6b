"""One results table for `make bench`.

Each benchmark script prints its own sentences and also calls `record(...)` for every figure it has a
target for. `python bench/table.py` runs every script in turn (their output shows as it comes) and then
prints one table of those records, read back from the file named by $BENCH_TABLE_FILE. It exits 1 when a
row is NOT met or a script did not finish, after printing the table either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "startup.py",
    "overhead.py",
    "journal.py",
    "store.py",
    "ssh_latency.py",
    "tui.py",
    "commands.py",
    "sweep.py",
    "sequential.py",
]


def record(name: str, measured: str, reference: str, ratio: float | None, target: str, met: bool) -> None:
    """Add one row to the table being collected (a no-op when a script runs on its own)."""
    path = os.environ.get("BENCH_TABLE_FILE")
    if not path:
        return
    row = {"name": name, "measured": measured, "reference": reference, "ratio": ratio, "target": target, "met": met}
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def main() -> int:
    fd, name = tempfile.mkstemp(prefix="signoff-bench-", suffix=".jsonl")
    os.close(fd)
    env = {**os.environ, "BENCH_TABLE_FILE": name}
    failed = []
    for script in SCRIPTS:
        print(f"== {script}", flush=True)
        if subprocess.run([sys.executable, str(HERE / script)], env=env).returncode != 0:
            failed.append(script)
    rows = [json.loads(line) for line in Path(name).read_text().splitlines()]
    Path(name).unlink()
    header = ("benchmark", "measured", "reference (same run)", "ratio", "target", "")
    table = [header] + [
        (r["name"], r["measured"], r["reference"], f"{r['ratio']:.2f}×" if r["ratio"] else "", r["target"],
         "met" if r["met"] else "NOT met")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print()
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for script in failed:
        print(f"{script} did not finish (see its output above)")
    missed = [r["name"] for r in rows if not r["met"]]
    if missed:
        print(f"{len(missed)} of {len(rows)} rows NOT met: " + "; ".join(missed))
    # A red row fails `make bench` as a crash does: a regression nobody sees is one nobody fixes.
    return 1 if failed or missed else 0


if __name__ == "__main__":
    sys.exit(main())
