"""The command policy's classifier on long commands, against bash's own parser in the same run (not a test).

Issue 19 (H1): the regex classifier took 3.1 s on a 400 KB line, and grew quadratically. The tree-sitter
classifier must grow linearly: for each shape of command, the time per byte at 200 KB is compared with
the time per byte at 4 KB (target: at most 3× — linear, with room for cache effects), and the 200 KB
time with `bash -n` (parse only) on the same text. Prints medians of 5 runs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time

from table import record

from policies.load import load_policy
from tools.commands import classify, forget_verdicts

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
# Shapes that were slow, or that stress one part of the walk: long lists, error recovery (the 3.1 s
# case), substitutions, pipelines with expansions. (A stretch of over 2 KB with no `;` or line break is
# asked about at once, unparsed: it costs nothing to measure.)
SHAPES = {
    "echo a && echo b⏎ …": "echo a && echo b\n",
    "cat <>x; …": "cat <>x; ",
    "echo $(echo x); …": "echo $(echo x); ",
    'x=1; echo "$x" | grep x⏎ …': 'x=1; echo "$x" | grep -n x\n',
}


def median(fn, *args) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    rules = load_policy("cautious").model.commands

    def judge(text: str) -> None:
        forget_verdicts()  # each run reads a text it has not seen: a remembered verdict costs nothing
        classify(text, allow=rules.allow, ask=rules.ask, deny=rules.deny)

    def bash_n(text: str) -> None:
        subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True, check=False)

    for name, piece in SHAPES.items():
        small, large = piece * (4_000 // len(piece)), piece * (200_000 // len(piece))
        t_small, t_large, t_bash = median(judge, small), median(judge, large), median(bash_n, large)
        growth = (t_large / len(large)) / (t_small / len(small))
        ok = growth <= 3.0
        print(f"{name}: 4 KB {t_small * 1000:.1f} ms, 200 KB {t_large * 1000:.0f} ms "
              f"(per byte {growth:.2f}× the 4 KB rate; bash -n {t_bash * 1000:.0f} ms, "
              f"{t_large / t_bash:.1f}× it)")  # fmt: skip
        record(f"classify 200 KB: {name}", f"{t_large * 1000:.0f} ms", f"bash -n {t_bash * 1000:.0f} ms",
               t_large / t_bash, "per-byte ≤ 3× the 4 KB rate", ok)  # fmt: skip


if __name__ == "__main__":
    main()
