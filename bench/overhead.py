"""What signoff itself costs per graph step, against raw LangGraph doing the same steps (not a test).

The demo campaign runs against a zero-latency target: every simserve command is answered in-process
(no sleeps, no subprocess), so what is left is orchestration — policy gates, statistics, the journal
(hash chain, fsyncs), idempotency keys, LangGraph tasks and checkpoints. The reference is a raw
LangGraph graph with the same supersteps and task counts (recorded from signoff's own run), trivial
nodes and the same SQLite checkpointer (WAL, synchronous=NORMAL, durability="sync"). Target (issue 9):
ratio ≤ 1.3. Also prints checkpoint-DB bytes per step for the demo and a 3× wider campaign: bytes per
step staying flat is what "linear in the number of steps" means.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "examples" / "decode-campaign" / "campaign.yaml"
RUNS = int(os.environ.get("BENCH_RUNS", "7"))

from table import record  # noqa: E402

from agent.run.create import create  # noqa: E402
from agent.run.runner import Runner  # noqa: E402
from agent.store.local import SessionDir  # noqa: E402
from tools.transport import CommandRequest, CommandResult, Host  # noqa: E402


class _Hang(Exception):
    pass


class InstantTarget:
    """A transport that runs simserve.py in this process: same outputs and state files, no latency."""

    busy = 0.0  # seconds spent inside the target itself (subtracted: it is not orchestration)
    calls: ClassVar[Counter[str]] = Counter()  # commands per graph node task (by LangGraph task id)

    def __init__(self, hosts_dir: Path) -> None:
        spec = importlib.util.spec_from_file_location("simserve", DEMO.parent / "simserve.py")
        assert spec and spec.loader
        self.sim = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.sim)
        self.sim.time = _Clock()  # its sleeps: none, and a hang raises at once
        self.hosts_dir = hosts_dir
        self.lock = threading.Lock()  # simserve works in the current directory: one command at a time

    def workdir(self, host: Host) -> str:
        path = self.hosts_dir / host.name
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    def put(self, host: Host, local: Path, remote: str) -> None:
        return None  # simserve runs in-process: nothing to copy

    def close(self) -> None:
        return None

    def execute(self, request: CommandRequest) -> CommandResult:
        from langgraph.config import get_config

        host, command = request.host, request.command
        node = get_config()["configurable"]["checkpoint_ns"].split("|")[0]
        InstantTarget.calls[node.partition(":")[2]] += 1
        argv = shlex.split(command)
        out, err, code, hung = io.StringIO(), io.StringIO(), 0, False
        with self.lock:
            started = time.perf_counter()
            cwd = os.getcwd()
            os.chdir(self.workdir(host))
            try:
                if len(argv) > 1 and argv[1] == "simserve.py":
                    sys.argv = ["simserve.py", *argv[2:]]
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                        try:
                            self.sim.main()
                        except SystemExit as exc:
                            code = exc.code if isinstance(exc.code, int) else (1 if exc.code else 0)
                            if isinstance(exc.code, str):
                                err.write(exc.code + "\n")
                        except _Hang:
                            hung = True
                else:  # the one probe that is not simserve: grep a source file
                    code = _grep(argv, out)
            finally:
                os.chdir(cwd)
                InstantTarget.busy += time.perf_counter() - started
        return CommandResult(
            host=host.name,
            command=command,
            exit_code=None if hung else code,
            timed_out=hung,
            killed=hung,
            duration_s=0.0,
            stdout_tail=out.getvalue(),
            stderr_tail=err.getvalue(),
        )


class _Clock:
    strftime = staticmethod(time.strftime)
    time = staticmethod(time.time)

    @staticmethod
    def sleep(seconds: float) -> None:
        if seconds >= 60:
            raise _Hang


def _grep(argv: list[str], out: io.StringIO) -> int:
    pattern, path = argv[-2], Path(argv[-1])
    lines = path.read_text().splitlines() if path.exists() else []
    hits = [i for i, line in enumerate(lines) if pattern in line]
    for i in hits:
        out.write("\n".join(lines[i : i + 5]) + "\n")
    return 0 if hits else 1


def signoff_run(campaign: Path, home: Path) -> tuple[float, list[list[str]], Path]:
    """One headless run on the instant target: wall seconds, the tasks of each superstep, the DB path."""
    os.environ["SIGNOFF_HOME"] = str(home)
    d: SessionDir = create(campaign, "autonomous")
    runner = Runner(d, headless=True)
    target = InstantTarget(d.hosts)
    runner.transport = runner.ctx.transport = target  # type: ignore[assignment]
    InstantTarget.busy, InstantTarget.calls = 0.0, Counter()
    t = time.perf_counter()
    runner.start()
    wall = time.perf_counter() - t - InstantTarget.busy
    return wall, supersteps(d.checkpoints, d.id), d.checkpoints


def supersteps(db: Path, thread: str) -> list[list[tuple[str, int]]]:
    """(node, commands it ran) for each top-level superstep, oldest first, read back from the checkpointer."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agent.graph import build

    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = build().compile(checkpointer=SqliteSaver(conn))
        history = list(graph.get_state_history({"configurable": {"thread_id": thread}}))
    finally:
        conn.close()
    steps = [
        [(t.name, InstantTarget.calls[t.id]) for t in snap.tasks if not t.name.startswith("__")]
        for snap in reversed(history)
    ]
    return [s for s in steps if s]


def _latest(a: int, b: int) -> int:
    return max(a, b)


class RawState(TypedDict, total=False):
    i: Annotated[int, _latest]
    calls: int


def raw_run(steps: list[list[tuple[str, int]]], db: Path) -> float:
    """Raw LangGraph: the same supersteps, each node making as many `@task` calls as signoff's made
    commands (the durable-effect pattern), trivial bodies, the same checkpointer and durability."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.func import task
    from langgraph.graph import START, StateGraph
    from langgraph.types import Send

    @task
    def effect(n: int) -> dict[str, int]:
        return {"exit": 0, "n": n}

    def node(state: dict[str, Any]) -> dict[str, Any]:
        for n in range(state["calls"]):
            effect(n).result()
        return {"i": state["i"] + 1}

    def route(state: RawState) -> Any:
        i = state.get("i", 0)
        return [Send(n, {"i": i, "calls": c}) for n, c in steps[i]] if i < len(steps) else "__end__"

    g: StateGraph[RawState, Any, Any, Any] = StateGraph(RawState)
    for n in sorted({n for s in steps for n, _ in s}):
        g.add_node(n, node)
        g.add_conditional_edges(n, route)
    g.add_conditional_edges(START, route)
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    conn.execute("PRAGMA synchronous=NORMAL")
    app = g.compile(checkpointer=saver)
    t = time.perf_counter()
    app.invoke({"i": 0}, {"configurable": {"thread_id": "raw"}, "recursion_limit": 10_000}, durability="sync")
    conn.close()  # timed, as signoff's own close is: the last close checkpoints the WAL into the DB file
    return time.perf_counter() - t


def wider(factor: int) -> Path:
    """The demo with its options repeated `factor` times under new ids, beside simserve.py."""
    text = DEMO.read_text()
    head, _, options = text.partition("\noptions:\n")
    copies = [
        re.sub(r"- id: (\d+)", lambda m, k=k: f"- id: {int(m.group(1)) + 10 * k}", options) for k in range(factor)
    ]
    path = DEMO.parent / f".bench-wide-{os.getpid()}.yaml"
    path.write_text(head + "\noptions:\n" + "\n".join(copies))
    return path


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="signoff-overhead-"))
    signoff_run(DEMO, work / "warm-up")  # imports and first-use caches are not per-step costs
    ours, raw, per_step = [], [], []
    steps: list[list[tuple[str, int]]] = []
    for k in range(RUNS):
        wall, steps, db = signoff_run(DEMO, work / f"home{k}")
        ours.append(wall / len(steps))
        raw.append(raw_run(steps, work / f"raw{k}.sqlite") / len(steps))
        per_step.append(db.stat().st_size / len(steps))
    tasks = sum(len(s) for s in steps)
    commands = sum(c for s in steps for _, c in s)
    # The best of the interleaved runs on each side: on a shared VM the medians of the same code swung from 1.13× to
    # 1.57× between runs of this script (single runs from 5 to 19 ms a step), and noise only ever adds time.
    o, r = min(ours), min(raw)
    verdict = "met" if o / r <= 1.3 else "NOT met"
    record("orchestration per graph step", f"{o * 1000:.1f} ms", f"raw LangGraph {r * 1000:.1f} ms", o / r, "≤ 1.3×",
           o / r <= 1.3)  # fmt: skip
    print(f"orchestration per graph step, best of {RUNS}: signoff {o * 1000:.2f} ms vs raw LangGraph {r * 1000:.2f} ms "
          f"({len(steps)} supersteps, {tasks} node tasks, {commands} command tasks; "
          f"ratio {o / r:.2f}×; target ≤ 1.3×: {verdict}; medians {statistics.median(ours) * 1000:.2f} vs "
          f"{statistics.median(raw) * 1000:.2f} ms)")  # fmt: skip
    campaign = wider(3)
    try:
        _, wide_steps, wide_db = signoff_run(campaign, work / "wide")
    finally:
        campaign.unlink(missing_ok=True)
    small, big = statistics.median(per_step), wide_db.stat().st_size / len(wide_steps)
    record("checkpoint DB per step, 9 vs 3 options", f"{big / 1024:.1f} KiB", f"{small / 1024:.1f} KiB", big / small,
           "flat (≤ 1.3×)", big / small <= 1.3)  # fmt: skip
    print(f"checkpoint DB per step: {small / 1024:.1f} KiB over {len(steps)} steps (3 options) vs "
          f"{big / 1024:.1f} KiB over {len(wide_steps)} steps (9 options): ratio {big / small:.2f} "
          "(flat = linear)")  # fmt: skip


if __name__ == "__main__":
    main()
