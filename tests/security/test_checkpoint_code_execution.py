"""C1 (issue 19): a checkpoint database someone else wrote must not run code when signoff reads it.

LangGraph's default serializer rebuilds any `module.function(arg)` named in a msgpack Ext. The attack is
reproduced first on that default, then shown to do nothing through signoff's serializer and through a
session's own SQLite saver (the path `signoff resume` and `signoff import` read)."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG, JsonPlusSerializer

from agent.store.serde import serializer


def payload(marker: Path) -> bytes:
    """What an attacker puts in a checkpoint blob: os.system("touch MARKER") on load."""
    ext = ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb(("os", "system", f"touch {marker}")))
    return ormsgpack.packb({"channel_values": {"x": ext}})


def test_the_attack_runs_code_through_langgraphs_default_serializer(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        JsonPlusSerializer().loads_typed(("msgpack", payload(marker)))
    assert marker.exists()  # the hole is real: this is what signoff must not do


def test_signoffs_serializer_does_not_run_it(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    loaded = serializer().loads_typed(("msgpack", payload(marker)))
    assert not marker.exists()
    assert "x" in loaded["channel_values"]  # left as data, never called


def test_a_sessions_saver_reading_a_tampered_checkpoint_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    from agent.store.local import LocalStore

    monkeypatch.setenv("SIGNOFF_HOME", str(tmp_path / "home"))
    marker = tmp_path / "pwned"
    session = LocalStore().new("20261203-000000-beef")
    from langgraph.checkpoint.base import empty_checkpoint

    with session.saver() as saver:
        config = {"configurable": {"thread_id": session.id, "checkpoint_ns": ""}}
        saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    conn = sqlite3.connect(session.checkpoints)
    conn.execute("UPDATE checkpoints SET type = 'msgpack', checkpoint = ?", (payload(marker),))
    conn.commit()
    conn.close()
    with session.saver() as saver:
        saver.get_tuple({"configurable": {"thread_id": session.id, "checkpoint_ns": ""}})
    assert not marker.exists()


def test_resuming_a_paused_session_from_a_tampered_checkpoint_is_refused_in_one_line(cli, variant, tmp_path):
    """The same payload planted in a paused session's own checkpoints: `decide` runs nothing and says why
    in one line (LangGraph's own "Blocked deserialization" warning is not printed beside it)."""
    from tests.conftest import journal_events
    from tests.e2e.test_evidence import ALLOW_ALL, MINI

    policy = tmp_path / "p.yaml"
    policy.write_text(
        (ALLOW_ALL % "").replace(
            'allow: ["*"]', 'allow: ["python* *simserve.py *", "/**/python* *simserve.py *", "test *"]'
        )
    )
    r = cli("run", str(variant(MINI, name="tamper")), "--policy", str(policy), "--json")
    assert r.code == 3 and r.json()["pending_gate"]["kind"] == "command", r.stderr
    session, journal = r.json()["session"], Path(r.json()["journal"])
    marker = tmp_path / "pwned"
    conn = sqlite3.connect(journal.parent / "checkpoints.sqlite")
    conn.execute("UPDATE checkpoints SET type = 'msgpack', checkpoint = ?", (payload(marker),))
    conn.commit()
    conn.close()
    r = cli("decide", session, "approve")
    lines = r.stderr.strip().splitlines()
    assert r.code != 0 and len(lines) == 1 and "os.system" in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert not marker.exists()
    events = journal_events(journal)
    assert events[-1]["kind"] == "checkpoint.unreadable" and "os.system" in events[-1]["error"]
    assert not any(e["kind"] == "command.started" and e["command"] == "touch broken" for e in events)
