import json
from pathlib import Path

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.journal import events as ev
from agent.journal.chain import Journal, _plain, canonical, read_events
from agent.journal.verify import verify


def make(tmp_path: Path, n: int = 5) -> Path:
    j = Journal(tmp_path / "journal.jsonl", "s")
    j.append(ev.SessionStartedEvent(policy_text="x", gain=1.0, big=2**60, bad=float("inf")))
    for i in range(n - 1):
        j.append(ev.CommandFinishedEvent(host="h", i=i))
    j.close()
    return tmp_path / "journal.jsonl"


def test_chain_verifies_and_lines_are_canonical(tmp_path):
    path = make(tmp_path)
    report = verify(path)
    assert report.ok and report.events == 5
    first = path.read_text().splitlines()[0]
    assert first.startswith('{"actor":"signoff","bad":"inf","big":"1152921504606846976","gain":1,')
    assert [e["seq"] for e in read_events(path)] == list(range(5))


def test_edit_delete_swap_and_truncation_are_detected(tmp_path):
    path = make(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    cases = {
        "edit": [*lines[:2], lines[2].replace('"i":1', '"i":9'), *lines[3:]],
        "delete": lines[:2] + lines[3:],
        "swap": [*lines[:2], lines[3], lines[2], *lines[4:]],
        "truncate": lines[:3],
    }
    for name, content in cases.items():
        path.write_text("".join(content))
        report = verify(path)
        assert not report.ok, name
        assert report.error
    path.write_text("".join(lines))
    assert verify(path).ok


def test_rewritten_chain_is_caught_by_the_head_file(tmp_path):
    path = make(tmp_path, 3)
    head = json.loads((tmp_path / "head").read_text())
    (tmp_path / "journal.jsonl").unlink()
    (tmp_path / "head").unlink()
    forged = Journal(path, "s")
    forged.append(ev.SessionStartedEvent(policy_text="forged"))
    forged.append(ev.CommandFinishedEvent(host="h", i=0))
    forged.append(ev.CommandFinishedEvent(host="h", i=1))
    forged.close()
    (tmp_path / "head").write_text(json.dumps(head))
    report = verify(path)
    assert not report.ok and "rewritten" in report.error


def test_torn_last_line_is_cut_and_recorded(tmp_path):
    path = make(tmp_path, 3)
    with path.open("ab") as fh:
        fh.write(b'{"kind":"comm')
    j = Journal(path, "s")
    j.append(ev.SessionResumedEvent())
    j.close()
    events = list(read_events(path))
    assert [e["kind"] for e in events[-2:]] == ["log.recovered", "session.resumed"]
    assert events[-2]["torn_bytes"] == 13
    assert verify(path).ok


def test_nested_keys_named_seq_or_prev_do_not_confuse_the_verifier(tmp_path):
    j = Journal(tmp_path / "journal.jsonl", "s")
    j.append(ev.SessionStartedEvent(policy_text="x"))
    j.append(
        ev.GateOpenedEvent(
            gate="g", gate_kind="safety", facts={"prev": "0" * 64, "seq": 0}, note='say "prev":"x" and "seq":7,'
        )
    )
    j.append(ev.DecisionEvent(gate="g", by="policy:x"))
    j.close()
    assert verify(tmp_path / "journal.jsonl").ok
    # And the checkpoint DB holds the head too, so a rewritten head file alone is caught.
    head = tmp_path / "head"
    head.write_text(json.dumps({"events": 3, "head": "f" * 64}))
    report = verify(tmp_path / "journal.jsonl")
    assert not report.ok and "head file" in report.error


def test_a_write_the_disk_refuses_leaves_no_half_line_and_the_chain_goes_on(tmp_path):
    """A full disk (here: a file size limit, which fails the write the same way) refuses one append;
    when space is back, the next append continues a chain that still verifies."""
    import subprocess
    import sys

    script = f"""
import resource, signal
from pathlib import Path
from agent.journal import events as ev
from agent.journal.chain import Journal
from tools.artifacts import StorageFull

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing us
path = Path({str(tmp_path / "journal.jsonl")!r})
j = Journal(path, "s")
j.append(ev.SessionStartedEvent(note="x"))
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 100, hard))
refused = 0
for i in range(20):
    try:
        j.append(ev.CommandFinishedEvent(host="h", i=i, padding="p" * 60))
    except StorageFull as exc:
        refused += 1
        assert "no space left for the journal" in str(exc)
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
j.append(ev.SessionFailedEvent(reason="storage-full"))
j.close()
print(refused)
"""
    from tests.conftest import ROOT

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 0
    report = verify(tmp_path / "journal.jsonl")
    assert report.ok, report
    kinds = [e["kind"] for e in read_events(tmp_path / "journal.jsonl")]
    assert kinds[0] == "session.started" and kinds[-1] == "session.failed"


# Anything a journal line may hold, exotic corners included: control characters, U+2028, keys beyond the BMP (sorted by
# UTF-16 units in RFC 8785), floats on both sides of where exponent forms begin, whole floats, -0.0, lone surrogates.
_KEYS = st.one_of(st.text(max_size=6), st.sampled_from(["a", "\U0001f600", "\ufb01", "é", "Z", "_", "\x00", "\u2028"]))
_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 1e-4, 9.99e-5, 1e-7, 1e15, 9.9e15, 1e16, 1e21, 5.0, 0.1 + 0.2, 2.0**53, 2.0**53 + 2]),
)
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), _FLOATS, st.text(max_size=12))
_DATA = st.recursive(_LEAVES, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_KEYS, kids, max_size=4))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _DATA, max_size=6))
def test_the_fast_encoder_writes_exactly_rfc8785s_bytes(data):
    exotic: list[str] = []
    plain = _plain(data, exotic)
    try:
        expected = rfc8785.dumps(plain)
    except Exception as exc:  # what rfc8785 refuses (a lone surrogate) is refused alike, never written otherwise
        with pytest.raises(type(exc)):
            canonical(plain, exotic)
        return
    assert canonical(plain, exotic) == expected
    if not exotic:  # `plain`, the record listeners get, is what a reader of the line gets (JCS rounds beyond 2^53)
        assert json.loads(expected) == plain
