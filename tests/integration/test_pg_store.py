"""The team store's foundations against a real PostgreSQL server: `signoff store init`, and the journal
in PostgreSQL (same bytes, same chain, append-only)."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest

from agent.journal import events as ev
from agent.journal import pg as pgjournal
from agent.journal.chain import Journal, read_events
from agent.journal.pg import PgJournal
from agent.journal.verify import verify


@pytest.fixture
def store(postgres) -> str:
    url = postgres.database(f"t_{uuid.uuid4().hex[:12]}")
    pgjournal.setup(url)
    return url


def test_store_init_creates_the_checkpoint_and_journal_tables_and_can_run_again(cli, postgres):
    url = postgres.database(f"init_{uuid.uuid4().hex[:12]}")
    for _ in range(2):
        r = cli("store", "init", "--store", url)
        assert r.code == 0, r.stderr
        assert "store ready" in r.stdout
    with psycopg.connect(url) as conn:
        tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"checkpoints", "checkpoint_writes", "checkpoint_migrations", "signoff_journal"} <= tables
    assert "signoff_journal_head" in tables


def test_store_init_without_a_store_or_with_an_unreachable_one_says_so_in_one_line(cli, postgres):
    r = cli("store", "init")
    assert r.code == 2 and "needs --store postgresql://" in r.stderr
    r = cli("store", "init", "--store", f"postgresql://signoff@127.0.0.1:{postgres.port}/no_such_db")
    assert r.code == 1 and r.stderr.startswith("signoff: store init failed:") and len(r.stderr.splitlines()) == 1


def test_the_journal_in_postgres_exports_to_the_same_file_format_and_verifies(store, tmp_path):
    pj = PgJournal(store, "s-1")
    pj.append(ev.SessionStartedEvent(policy_text="x", gain=1.5, big=2**60, bad=float("inf")))
    for i in range(20):
        pj.append(ev.CommandFinishedEvent(host="gpu-a", exit=0, i=i, note="ünïcode ✓"))
    pj.append(ev.SessionFinishedEvent(status="finished"))
    exported = tmp_path / "exported" / "journal.jsonl"
    assert pj.export(exported) == 22
    pj.close()
    report = verify(exported)
    assert report.ok and report.events == 22, report
    # The same events through the file journal give lines of the same shape, field for field.
    (tmp_path / "file").mkdir()
    j = Journal(tmp_path / "file" / "journal.jsonl", "s-1")
    j.append(ev.SessionStartedEvent(policy_text="x", gain=1.5, big=2**60, bad=float("inf")))
    j.close()
    from_pg, from_file = next(read_events(exported)), next(read_events(tmp_path / "file" / "journal.jsonl"))
    assert {k: v for k, v in from_pg.items() if k != "ts"} == {k: v for k, v in from_file.items() if k != "ts"}


def test_update_delete_and_truncate_on_the_journal_are_refused(store):
    pj = PgJournal(store, "s-2")
    pj.append(ev.SessionStartedEvent(note="x"))
    pj.close()
    with psycopg.connect(store, autocommit=True) as conn:
        for sql in (
            "UPDATE signoff_journal SET line = 'forged'::bytea",
            "DELETE FROM signoff_journal",
            "TRUNCATE signoff_journal",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
        assert conn.execute("SELECT count(*) FROM signoff_journal").fetchone()[0] == 1


def test_writers_in_parallel_extend_one_gapless_chain(store, tmp_path):
    writers = [PgJournal(store, "s-3") for _ in range(4)]

    def write(j: PgJournal, w: int) -> None:
        for i in range(25):
            j.append(ev.CommandFinishedEvent(host="h", writer=w, i=i))

    threads = [threading.Thread(target=write, args=(j, w)) for w, j in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert list(writers[0].lines())  # a read in between must not hold the next appends back
    writers[0].append(ev.SessionFinishedEvent(status="finished"))
    with psycopg.connect(store) as other:  # committed: another connection sees every line
        assert other.execute("SELECT count(*) FROM signoff_journal WHERE session = 's-3'").fetchone()[0] == 101
    path = tmp_path / "journal.jsonl"
    assert writers[0].export(path) == 101
    for j in writers:
        j.close()
    report = verify(path)
    assert report.ok and report.events == 101, report
    seen = sorted((e["writer"], e["i"]) for e in read_events(path) if e["kind"] == "command.finished")
    assert seen == [(w, i) for w in range(4) for i in range(25)]


HOLD = """
import sys, time
from agent.journal.pg import Lease
lease = Lease(sys.argv[1], "20261203-race", holder=f"pid {__import__('os').getpid()} (tester)")
who = lease.acquire()
print("got" if who is None else f"refused: {who}", flush=True)
time.sleep(float(sys.argv[2]) if who is None else 0)
"""


def test_one_runner_per_session_across_processes_and_a_killed_holder_loses_its_lease(store):
    import subprocess
    import sys

    from tests.conftest import ROOT

    procs = [
        subprocess.Popen([sys.executable, "-c", HOLD, store, "60"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for _ in range(4)
    ]
    lines = {p: p.stdout.readline().strip() for p in procs}
    winners = [p for p, line in lines.items() if line == "got"]
    assert len(winners) == 1, lines  # exactly one of four racing processes runs the session
    holder = winners[0]
    for p, line in lines.items():
        if p is not holder:
            assert line == f"refused: pid {holder.pid} (tester)"
            p.wait(timeout=30)
    holder.kill()  # SIGKILL: no chance to release anything
    holder.wait()
    late = subprocess.run(
        [sys.executable, "-c", HOLD, store, "0"], capture_output=True, text=True, cwd=ROOT, timeout=30
    )
    # the dead runner's connection is gone, and its lease with it
    assert late.stdout.strip() == "got", late.stderr


def test_a_watcher_reads_the_journal_only_when_a_commit_wakes_it(store):
    from agent.store.pg import PgTail

    writer = PgJournal(store, "watched")
    writer.append(ev.SessionStartedEvent(n=0))
    tail = PgTail(store, "watched")
    try:
        assert [e["kind"] for e in tail.read()] == ["session.started"]
        assert tail.queries == 1
        for _ in range(200):  # an idle session: the UI ticks, nothing is committed, nothing is queried
            assert tail.read() == []
        tail.wait(0.2)
        assert tail.queries == 1
        writer.append(ev.GateOpenedEvent(gate_kind="safety", gate="g1"))
        writer.append(ev.DecisionEvent(gate="g1"))
        tail.wait(5.0)  # returns on the NOTIFY the commit sent, not on the timeout
        assert [e["seq"] for e in tail.read()] == [1, 2]
        assert tail.queries == 2
    finally:
        tail.close()
        writer.close()
