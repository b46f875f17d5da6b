"""M3 (issue 19): `baseline.upload` destinations were outside the command policy, so an absolute or
`../../` destination wrote outside the host's working directory after a command gate that never showed
it. Uploads now follow the redirect rule: such a destination is `ask`, listed at the command gate, and
written only once approved there; one inside the working directory goes as before."""

from __future__ import annotations

import pytest

from agent.exec.planning import upload_class
from tests.conftest import journal_events
from tests.e2e.test_evidence import ALLOW_ALL, MINI


@pytest.mark.parametrize("dest", ["/etc/cron.d/x", "~/.bashrc", "../../x", "a/../../x", "$HOME/x", "`id`", "*.py"])
def test_destinations_that_may_land_outside_are_ask(dest):
    v = upload_class("simserve.py", dest)
    assert v.klass == "ask" and "writes outside the working directory" in v.reason


@pytest.mark.parametrize("dest", ["simserve.py", "bin/simserve.py", "./a/../b.py"])
def test_destinations_inside_are_allowed(dest):
    assert upload_class("simserve.py", dest).klass == "allow"


def test_an_escaping_upload_is_shown_at_the_gate_and_not_written_unless_approved(cli, variant, tmp_path, home):
    absolute = tmp_path / "absolute-target.py"
    campaign = variant(
        MINI.replace(
            "baseline:\n",
            "baseline:\n  upload:\n"
            '    - {src: simserve.py, dest: "../../escaped.py", on: h1}\n'
            f'    - {{src: simserve.py, dest: "{absolute}", on: h1}}\n',
        ),
        name="upload",
    )
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % "")
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 3, r.stderr
    gate = r.json()["pending_gate"]
    assert gate["kind"] == "command"
    assert "upload simserve.py -> ../../escaped.py" in gate["commands"]
    assert f"upload simserve.py -> {absolute}" in gate["commands"]
    session_dir = home / "sessions" / r.json()["session"]
    assert not (session_dir / "escaped.py").exists() and not absolute.exists()
    r = cli("decide", r.json()["session"], "decline", "--yes", "--json")
    assert r.code in (0, 1, 3), r.stderr
    assert not (session_dir / "escaped.py").exists() and not absolute.exists()
    assert not any(e["kind"] == "file.uploaded" for e in journal_events(session_dir / "journal.jsonl"))
