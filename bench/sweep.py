"""What a load sweep costs in signoff, per level, against the same commands run directly (not a test).

A signoff session runs a three-level sweep (concurrency 30, 60, 90) of one option on the simulated decode
server: the sweep demo (examples/decode-campaign/sweep.yaml) cut to one option, no probes, stress or
capacity search, 4 pairs of 0.05 s runs, headless under the autonomous policy. Its journal says what each
level ran, in order: every benchmark run and the apply/revert toggles between arms (ABBA), on the hosts
they ran on, and which of them ran at the same time (a toggle runs on both decode hosts at once). The
reference replays exactly that with subprocess in fresh host directories of its own (`simserve.py init`
and the option applied, as setup and the apply step left them): one command after another, the commands
signoff ran at the same time started together. A level's signoff time is its `benchmark.level` phase line
to the next level's (or to the sweep's result). Per level: the runs, the wall time of each side, their
ratio and what signoff adds per benchmark run (journal, command policy, LangGraph tasks and checkpoints,
statistics, and the transport's own wait for each command; the "between" column is the part with no
command running). Medians of BENCH_RUNS (3) session/replay pairs. Target: ratio ≤ 1.3, the orchestration
budget of issue 9.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO_DIR = ROOT / "examples" / "decode-campaign"
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
TARGET = 1.3

from table import record  # noqa: E402

Batch = list[tuple[str, str]]  # (host, command) started together


def campaign_text() -> str:
    """The sweep demo with one option, no probes, stress or search, and 4 pairs of 0.05 s runs."""
    head = (DEMO_DIR / "sweep.yaml").read_text().split("\nstress:")[0]
    head = head.replace("--wall 0.1", "--wall 0.05").replace("pairs: 5\n  max_pairs: 6", "pairs: 4\n  max_pairs: 4")
    head = head.replace("    search: {low: 16, high: 128, steps: 6, runs: 3}\n", "")
    assert "--wall 0.05" in head and "pairs: 4\n" in head and "search:" not in head, "sweep.yaml changed shape"
    return head + (
        "\nrollback:\n  verify_runs: 1\n\noptions:\n"
        "  - id: 3\n    title: MoE/attention kernel occupancy\n"
        '    apply: [{run: "{{simserve}} apply moe-occupancy", on: decode}]\n'
        '    revert: [{run: "{{simserve}} revert moe-occupancy", on: decode}]\n'
    )


def ts(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()


def with_signoff(campaign: Path, home: Path) -> list[dict[str, Any]]:
    """One headless session of the campaign; its journal's events."""
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "bench"}
    p = subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", str(campaign), "--headless", "--policy", "autonomous", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    if p.returncode != 0:
        raise SystemExit(f"the signoff session failed (exit {p.returncode}): {p.stderr[-800:]}")
    (journal,) = (home / "sessions").glob("*/journal.jsonl")
    return [json.loads(line) for line in journal.read_text().splitlines()]


def batches(span: list[dict[str, Any]]) -> tuple[list[Batch], float]:
    """The level's benchmark runs and toggles in order (a command started while another was still running
    joins that one's batch), and the seconds the session spent with one of them running."""
    out: list[Batch] = []
    inside, since = 0.0, 0.0
    running: Counter[tuple[str, str]] = Counter()  # (host, purpose): benchmark runs carry no key
    for e in span:
        if e.get("purpose") not in ("bench:A", "bench:B", "toggle"):
            continue
        if e["kind"] == "command.started":
            if not running:
                out.append([])
                since = ts(e)
            out[-1].append((e["host"], e["command"]))
            running[e["host"], e["purpose"]] += 1
        elif e["kind"] == "command.finished":
            running[e["host"], e["purpose"]] -= 1
            running += Counter()  # drops the zeros
            if not running:
                inside += ts(e) - since
    return out, inside


def per_level(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each level's wall time in the session (and of it, with a command running), its A/B runs and its
    commands."""
    marks = [(i, e) for i, e in enumerate(events) if e["kind"] == "phase" and e.get("phase") == "benchmark.level"]
    end = next(i for i, e in enumerate(events) if e["kind"] == "sweep.result")
    out = {}
    for n, (start, phase) in enumerate(marks):
        stop = marks[n + 1][0] if n + 1 < len(marks) else end
        span = events[start:stop]
        level = int(phase["level"])
        steps, inside = batches(span)
        out[level] = {
            "signoff_s": ts(events[stop]) - ts(phase),
            "inside_s": inside,
            "batches": steps,
            "runs": sum(1 for e in span if e["kind"] == "bench.run" and e.get("level") == phase["level"]),
        }
    return out


def fresh_hosts(root: Path, hosts: set[str]) -> Path:
    """Host directories as setup and the apply step leave them: simserve initialised, the option on."""
    for name in sorted(hosts):
        host = root / name
        host.mkdir(parents=True)
        shutil.copy(DEMO_DIR / "simserve.py", host / "simserve.py")
        for step in (["init", "--seed", "3"], ["apply", "moe-occupancy"]):
            subprocess.run([sys.executable, "simserve.py", *step], cwd=host, check=True, capture_output=True)
    return root


def directly(steps: list[Batch], hosts: Path) -> float:
    start = time.perf_counter()
    for batch in steps:
        procs = [
            subprocess.Popen(shlex.split(cmd), cwd=hosts / host, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for host, cmd in batch
        ]
        for proc, (host, cmd) in zip(procs, batch, strict=True):
            proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"{cmd!r} on {host} failed (exit {proc.returncode})")
    return time.perf_counter() - start


def main() -> None:
    signoff: dict[int, list[float]] = {}
    inside: dict[int, list[float]] = {}
    direct: dict[int, list[float]] = {}
    shape: dict[int, dict[str, Any]] = {}
    campaign = DEMO_DIR / f".bench-sweep-{os.getpid()}.yaml"  # beside simserve.py, which it uploads
    campaign.write_text(campaign_text())
    try:
        with tempfile.TemporaryDirectory(prefix="signoff-bench-sweep-") as tmp:
            for k in range(RUNS):  # a session, then its replay: both see the same machine state
                work = Path(tmp) / str(k)
                levels = per_level(with_signoff(campaign, work / "home"))
                hosts = fresh_hosts(work / "direct", {h for v in levels.values() for b in v["batches"] for h, _ in b})
                for level, seen in levels.items():
                    signoff.setdefault(level, []).append(seen["signoff_s"])
                    inside.setdefault(level, []).append(seen["inside_s"])
                    direct.setdefault(level, []).append(directly(seen["batches"], hosts))
                    shape[level] = seen
    finally:
        campaign.unlink(missing_ok=True)
    # ms/run is what signoff adds per benchmark run; "between" is the part of it with no command running
    # (graph, journal, policy, statistics). The rest is inside the commands' spans: on this machine mostly
    # the local transport noticing an exit late (Popen.wait with a timeout polls, its sleeps doubling up to
    # 50 ms, so the journal's command durations bunch at about 63, 113 and 163 ms), not timeout + bash -c.
    print(f"{'level':>6} {'runs':>5} {'commands':>9} {'direct s':>9} {'signoff s':>10} {'ratio':>6} {'ms/run':>7} "
          f"{'between':>8}")  # fmt: skip
    total = {"direct": 0.0, "signoff": 0.0, "between": 0.0, "runs": 0}
    for level, seen in shape.items():
        d, s = statistics.median(direct[level]), statistics.median(signoff[level])
        between = statistics.median(a - b for a, b in zip(signoff[level], inside[level], strict=True))
        runs = max(seen["runs"], 1)
        commands = sum(len(b) for b in seen["batches"])
        print(f"{level:>6} {seen['runs']:>5} {commands:>9} {d:>9.2f} {s:>10.2f} {s / d:>5.2f}× "
              f"{(s - d) / runs * 1000:>7.0f} {between / runs * 1000:>8.0f}")  # fmt: skip
        for key, value in (("direct", d), ("signoff", s), ("between", between), ("runs", seen["runs"])):
            total[key] += value
    ratio = total["signoff"] / total["direct"]
    runs = max(total["runs"], 1)
    per_run = (total["signoff"] - total["direct"]) / runs * 1000
    between_ms = total["between"] / runs * 1000
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"a sweep level costs {ratio:.2f}× the same commands run directly: {per_run:.0f} ms per benchmark run, "
          f"{between_ms:.0f} ms of it between commands (graph, journal, policy, statistics) and "
          f"{per_run - between_ms:.0f} ms while they run (the transport's wait and wrapper, output capture); "
          f"medians of {RUNS}; target ≤ {TARGET}×: {verdict}")  # fmt: skip
    record(
        "sweep: wall time per level vs the same commands run directly",
        f"{total['signoff']:.1f} s over {len(shape)} levels ({per_run:.0f} ms/run)",
        f"{total['direct']:.1f} s",
        ratio,
        f"≤ {TARGET}×",
        ratio <= TARGET,
    )


if __name__ == "__main__":
    main()
