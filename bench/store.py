"""The team store against the embedded one, in the same run, on a throwaway PostgreSQL server
(127.0.0.1, fsync on, as a team store would run):

1. Gate round trip (target: PostgreSQL ≤ 3× the embedded store). Through the `Session` seam, exactly
   the store work of answering a gate: the runner journals `gate.opened` and `session.paused` at an
   interrupt; `decide` records its answer (`claim_answer`) and journals the decision; the runner reads
   the answers, journals `session.resumed`, resumes the LangGraph graph with its checkpointer (durable
   per step) up to the next interrupt, and reads the state back. The graph does no work of its own.
2. Journal append throughput: the file journal (fsync on its durable kinds, as in a run) against
   `PgJournal` (one transaction per line, its head row locked). No target: a reference figure.
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

from agent.journal import events as ev
from agent.journal import pg as pgjournal
from agent.journal.chain import Journal
from agent.journal.pg import PgJournal
from agent.journal.verify import verify
from tests import pg

N = int(os.environ.get("BENCH_EVENTS", "2000"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
GATES = int(os.environ.get("BENCH_GATES", "60"))


def gate_graph():
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class S(TypedDict):
        n: int
        answers: list[str]

    def gate(state: S) -> dict[str, object]:
        answer = interrupt({"gate": f"g{state['n']}", "question": "keep?"})
        return {"n": state["n"] + 1, "answers": [*state["answers"], answer]}

    g = StateGraph(S)
    g.add_node("gate", gate)
    g.add_edge(START, "gate")
    g.add_conditional_edges("gate", lambda s: END if s["n"] >= GATES else "gate")
    return g.compile()


def round_trips(session) -> list[float]:
    """Milliseconds per gate answered, through `session`'s store."""
    from langgraph.types import Command

    compiled = gate_graph()
    cfg = {"configurable": {"thread_id": session.id}}
    journal = session.open_journal()
    times = []
    with session.saver() as saver:
        graph = compiled.copy(update={"checkpointer": saver})
        graph.invoke({"n": 0, "answers": []}, cfg, durability="sync")
        for k in range(GATES):
            t = time.perf_counter()
            snapshot = graph.get_state(cfg)
            interrupt_id = snapshot.interrupts[0].id
            journal.append(ev.GateOpenedEvent(gate_kind="safety", gate=f"g{k}", interrupt=interrupt_id))
            journal.append(ev.SessionPausedEvent(gate=f"g{k}", interrupt=interrupt_id))
            session.claim_answer(interrupt_id, {"decision": "continue"})  # `signoff decide`
            journal.append(ev.DecisionEvent(gate=f"g{k}", by="human:bench", interrupt=interrupt_id))
            ready = session.answers()
            journal.append(ev.SessionResumedEvent(answers=sorted(ready)))
            session.clear_answers(list(ready))
            graph.invoke(Command(resume=ready[interrupt_id]), cfg, durability="sync")
            times.append((time.perf_counter() - t) * 1000)
    journal.close()
    return times


def gate_bench(url: str, work: Path) -> tuple[float, float]:
    from agent.store.local import SessionDir
    from agent.store.pg import PgSession

    os.environ["SIGNOFF_HOME"] = str(work / "home")
    local, team = [], []
    for k in range(RUNS):  # interleaved: the machine is shared
        d = SessionDir(f"bench-gates-{k}", root=work / "home" / f"gates-{k}")
        d.root.mkdir(parents=True)
        local += round_trips(d)
        p = PgSession(url, f"bench-gates-{k}")
        team += round_trips(p)
        p.close()
    return statistics.median(local), statistics.median(team)


def events() -> list[ev.Event]:
    """A run's mix: mostly finished commands, a decision (durable: fsynced) every 50th line."""
    out: list[ev.Event] = []
    for i in range(N):
        if i % 50 == 0:
            out.append(ev.DecisionEvent(gate=f"g{i}", by="human:bench", decision={"action": "continue"}))
        else:
            out.append(ev.CommandFinishedEvent(host="gpu-a", purpose="benchmark", exit=0, duration_s=0.27))
    return out


def file_rate(work: Path, k: int) -> float:
    j = Journal(work / f"file{k}" / "journal.jsonl", f"bench-{k}")
    t = time.perf_counter()
    for event in events():
        j.append(event)
    j.close()
    return N / (time.perf_counter() - t)


def pg_rate(url: str, work: Path, k: int) -> float:
    j = PgJournal(url, f"bench-{k}")
    t = time.perf_counter()
    for event in events():
        j.append(event)
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
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
        sqlite_ms, pg_ms = gate_bench(url, work)
        ratio = pg_ms / sqlite_ms
        print(f"gate round trip, {GATES} gates x {RUNS} (median): PostgreSQL {pg_ms:.1f} ms, embedded (SQLite + "
              f"file journal) {sqlite_ms:.1f} ms → ratio {ratio:.2f} (target ≤ 3)")  # fmt: skip
        record(
            "gate round trip: PostgreSQL vs embedded",
            f"{pg_ms:.1f} ms",
            f"SQLite {sqlite_ms:.1f} ms",
            ratio,
            "≤ 3×",
            ratio <= 3,
        )
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
