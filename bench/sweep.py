"""What a load sweep costs in signoff, per level, against the same commands run directly (not a test).

A signoff session runs a three-level sweep (concurrency 30, 60, 90) of one option on the simulated decode
server, headless under the autonomous policy. Its journal says which commands each level ran, in order
(every benchmark run and every apply/revert between arms); the reference runs exactly those commands, in
that order, with subprocess in a fresh host directory of its own. Per level: the runs, the wall time of
each, their ratio and what signoff adds per run (journal, policy classification, LangGraph task and
checkpoint, statistics). Target: ratio ≤ 1.3, the orchestration budget of issue 9.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO_DIR = ROOT / "examples" / "decode-campaign"
LEVELS = (30, 60, 90)
TARGET = 1.3

from table import record  # noqa: E402


def campaign_text() -> str:
    """The sweep demo with one option, no probes, stress or search, and 0.05 s runs."""
    head = (DEMO_DIR / "sweep.yaml").read_text().split("\nstress:")[0]
    head = head.replace("--wall 0.1", "--wall 0.05").replace("pairs: 5\n  max_pairs: 6", "pairs: 4\n  max_pairs: 4")
    head = head.replace("    search: {low: 16, high: 128, steps: 6, runs: 3}\n", "")
    return head + (
        "\nrollback:\n  verify_runs: 1\n\noptions:\n"
        "  - id: 3\n    title: MoE/attention kernel occupancy\n"
        '    apply: [{run: "{{simserve}} apply moe-occupancy", on: decode}]\n'
        '    revert: [{run: "{{simserve}} revert moe-occupancy", on: decode}]\n'
    )


def ts(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()


def with_signoff(work: Path) -> list[dict[str, Any]]:
    campaign = DEMO_DIR / f".bench-sweep-{os.getpid()}.yaml"
    campaign.write_text(campaign_text())
    env = {**os.environ, "SIGNOFF_HOME": str(work / "home"), "USER": "bench"}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "agent.cli", "run", str(campaign), "--headless", "--policy", "autonomous", "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=600,
        )
    finally:
        campaign.unlink(missing_ok=True)
    if p.returncode != 0:
        raise SystemExit(f"the signoff session failed (exit {p.returncode}): {p.stderr[-800:]}")
    (journal,) = (work / "home" / "sessions").glob("*/journal.jsonl")
    return [json.loads(line) for line in journal.read_text().splitlines()]


def per_level(events: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
    """Each level's span in the journal (its phase line to the next level's, or to the sweep's result),
    its commands in order and its A/B runs."""
    marks = [(i, e) for i, e in enumerate(events) if e["kind"] == "phase" and e.get("phase") == "benchmark.level"]
    end = next(i for i, e in enumerate(events) if e["kind"] == "sweep.result")
    out = {}
    for n, (start, phase) in enumerate(marks):
        stop = marks[n + 1][0] if n + 1 < len(marks) else end
        span = events[start:stop]
        out[float(phase["level"])] = {
            "signoff_s": ts(events[stop]) - ts(phase),
            "commands": [
                e["command"]
                for e in span
                if e["kind"] == "command.started" and e["purpose"] in ("bench:A", "bench:B", "toggle")
            ],
            "runs": sum(1 for e in span if e["kind"] == "bench.run" and e.get("purpose") == "ab"),
        }
    return out


def directly(commands: list[str], host: Path) -> float:
    start = time.perf_counter()
    for command in commands:
        subprocess.run(shlex.split(command), cwd=host, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="signoff-bench-sweep-") as tmp:
        work = Path(tmp)
        levels = per_level(with_signoff(work))
        host = work / "direct"
        host.mkdir()
        shutil.copy(DEMO_DIR / "simserve.py", host / "simserve.py")
        for step in (["init", "--seed", "3"], ["apply", "moe-occupancy"]):  # as setup and the apply node left it
            subprocess.run([sys.executable, "simserve.py", *step], cwd=host, check=True, capture_output=True)
        print(f"{'level':>6} {'runs':>5} {'commands':>9} {'direct s':>9} {'signoff s':>10} {'ratio':>6} {'ms/run':>7}")
        total_direct = total_signoff = 0.0
        total_runs = 0
        for level, seen in levels.items():
            direct = directly(seen["commands"], host)
            ratio = seen["signoff_s"] / direct
            extra_ms = (seen["signoff_s"] - direct) / max(seen["runs"], 1) * 1000
            total_direct += direct
            total_signoff += seen["signoff_s"]
            total_runs += seen["runs"]
            print(
                f"{level:>6g} {seen['runs']:>5} {len(seen['commands']):>9} {direct:>9.2f} {seen['signoff_s']:>10.2f} "
                f"{ratio:>5.2f}× {extra_ms:>7.0f}"
            )
    ratio = total_signoff / total_direct
    per_run = (total_signoff - total_direct) / max(total_runs, 1) * 1000
    print(
        f"a sweep level costs {ratio:.2f}× the same commands run directly: {per_run:.0f} ms per benchmark run "
        f"for the journal, the command policy, the graph's tasks and checkpoints and the statistics"
    )
    record(
        "sweep: wall time per level vs the same commands run directly",
        f"{total_signoff:.1f} s over {len(LEVELS)} levels ({per_run:.0f} ms/run)",
        f"{total_direct:.1f} s",
        ratio,
        f"≤ {TARGET}×",
        ratio <= TARGET,
    )


if __name__ == "__main__":
    main()
