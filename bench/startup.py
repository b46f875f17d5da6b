"""Start-up cost of the command line, measured against a bare interpreter in the same run (not a test).

`signoff --help`, `signoff sessions` and `signoff decision parse` (issue 18: rapidfuzz only when a word
needs correcting or an option is named in words) must not import LangGraph, anthropic, paramiko or
Textual; target (issue 9): ≤ 0.3 s wall each. Prints medians of 7 runs and the ratio to `python -c pass`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from table import record

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def median_wall(args: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    env = {**os.environ, "SIGNOFF_HOME": tempfile.mkdtemp(prefix="signoff-startup-")}
    bare = median_wall([sys.executable, "-c", "pass"], env)
    seed = "Soudnds like 3 is bigger win anyways"
    parse = ["decision", "parse", seed, "--gate", "continue_or_ask", "--options", "1,2,3"]
    for name, args in (("--help", ["--help"]), ("sessions", ["sessions"]), ("decision parse", parse)):
        wall = median_wall([sys.executable, "-m", "tui.cli", *args], env)
        verdict = "met" if wall <= 0.3 else "NOT met"
        record(f"start-up: signoff {name}", f"{wall * 1000:.0f} ms", f"python -c pass {bare * 1000:.0f} ms",
               wall / bare, "≤ 300 ms", wall <= 0.3)  # fmt: skip
        print(f"signoff {name}: {wall * 1000:.0f} ms (bare interpreter {bare * 1000:.0f} ms, ratio {wall / bare:.1f}×; "
              f"target ≤ 300 ms: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
