"""The store seam on the embedded store: a journal with writers in two processes, answers where the
first one wins, and the campaign files a session keeps for a runner whose checkout moved or changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.errors import SessionError
from agent.journal.chain import Journal, read_events
from agent.journal.verify import verify
from agent.run.create import create
from agent.run.documents import campaign_dir
from agent.store.local import LocalStore
from tests.conftest import DEMO_DIR, ROOT, fast

WRITER = """
import sys
from pathlib import Path

import pytest
from agent.journal import events as ev
from agent.journal.chain import Journal
j = Journal(Path(sys.argv[1]), "s")
for i in range(200):
    j.append(ev.CommandFinishedEvent(host="h", writer=sys.argv[2], i=i))
j.close()
"""


def test_the_file_journal_takes_writers_in_two_processes_without_breaking_its_chain(tmp_path):
    path = tmp_path / "journal.jsonl"
    Journal(path, "s").close()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], cwd=ROOT) for name in ("runner", "decide")
    ]
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    report = verify(path)
    assert report.ok and report.events == 400, report
    events = list(read_events(path))
    assert [e["seq"] for e in events] == list(range(400))
    assert {e["writer"] for e in events} == {"runner", "decide"}


def test_the_first_recorded_answer_stands(home):
    d = LocalStore().new("s-answers")
    first = d.claim_answer("i-1", {"echo": "CONTINUE", "answer_id": "a"})
    second = d.claim_answer("i-1", {"echo": "STOP", "answer_id": "b"})
    assert first == second == {"echo": "CONTINUE", "answer_id": "a"}
    d.clear_answers(["i-1"])
    assert d.answers() == {}


def test_a_session_uploads_the_files_it_started_with_when_the_checkout_moved_or_changed(home, tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(DEMO_DIR / "simserve.py", checkout / "simserve.py")
    (checkout / "campaign.yaml").write_text(fast((DEMO_DIR / "campaign.yaml").read_text()))
    d = create(checkout / "campaign.yaml", "cautious")
    meta = d.meta()
    assert campaign_dir(d, meta) == checkout  # untouched: the checkout itself
    original = (checkout / "simserve.py").read_bytes()
    (checkout / "simserve.py").write_text("# edited after the session started\n")
    moved = campaign_dir(d, meta)
    assert moved == d.work / "campaign" and (moved / "simserve.py").read_bytes() == original
    shutil.rmtree(checkout)
    assert (campaign_dir(d, meta) / "simserve.py").read_bytes() == original
    kept = json.loads(d.read("campaign-files.json"))
    kept["simserve.py"]["data"] = kept["simserve.py"]["data"][:-8] + "AAAAAAA="
    d.write("campaign-files.json", json.dumps(kept))
    with pytest.raises(SessionError, match="does not match its sha256"):  # never uploaded
        campaign_dir(d, meta)


def test_the_local_store_lists_owner_and_who_runs_a_session(home, cli, variant):
    r = cli("run", str(variant()), "--policy", "ask-everything", "--headless", "--json")
    assert r.code == 3
    (row,) = cli("sessions", "--json").json()
    assert row["owner"].startswith("tester@")  # user@host of whoever started it
    assert row["runner"] is None and row["waiting"] is None and row["status"] == "paused"
    assert Path(r.json()["journal"]).exists()
