"""A kill at any moment of a journal append leaves a journal the next writer goes on from; a forger gains nothing.

ci83 found the hole: a run SIGKILLed between writing `session.started` and the head after it left a steering
line no head vouched for, and `resume` refused the session for good (exit 5), as it must refuse a line chained
on behind the runner's back. Now the head announces a steering line (`intent`: its sha256) before it is
written. The matrix below kills a writer at every crash point the journal has — read from its source, so a
point added later joins the matrix — for every kind of steering line, signed and unsigned, and asks the next
writer to go on. The attacks show that an intent vouches for the one line it names, once, and only when the
key's holder signed it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from agent import crashpoints
from agent.errors import JournalUnverified
from agent.journal import chain, integrity
from agent.journal import events as ev
from agent.journal import head as checkpoint
from agent.journal.verify import verify
from tests.conftest import ed25519_keypair

SESSION = "s-intent"
STEERING: dict[str, Callable[[], ev.Event]] = {
    "session.started": lambda: ev.SessionStartedEvent(policy_text="commands: {default: ask}"),
    "policy.changed": lambda: ev.PolicyChangedEvent(policy_text="commands: {default: allow}", by="alice"),
    "decision": lambda: ev.DecisionEvent(gate="g1", gate_kind="triage", decision={"action": "skip"}, raw="skip #2"),
    "rule.added": lambda: ev.RuleAddedEvent(gate="g1", by="alice", raw="always skip unsafe", rule={"skip": "unsafe"}),
    "plan": lambda: ev.PlanEvent(brain="claude", order=[1], proposals=[{"id": 9, "apply": "sysctl -w vm.x=1"}]),
}


def journal_points() -> list[str]:
    """Every crash point prefix the journal's append reaches (`journal:`, `torn:`, …), from its source."""
    source = Path(chain.__file__).read_text()
    found = sorted(set(re.findall(r'crashpoints\.(?:reached|armed)\([^)]*?f"([a-z-]+):\{', source)))
    assert {"journal", "torn", "intent", "unheaded"} <= set(found), found
    return found


POINTS = journal_points()


def lines_before(kind: str) -> list[ev.Event]:
    if kind == "session.started":
        return []
    return [STEERING["session.started"](), ev.CommandFinishedEvent(host="h", i=0)]


def writer(path: Path, kind: str, at: str) -> bool:
    """Append a session's first lines, then a `kind` line, then one more, in a child SIGKILLed at crash point `at`
    (agent/crashpoints.py's `<point>[#n]`): True when it was killed there, False when it reached its end."""
    point, _, nth = at.partition("#")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only ever exits or dies
        try:
            crashpoints._point, crashpoints._target, crashpoints._seen = point, int(nth or 1), 0
            journal = chain.Journal(path, SESSION)
            for line in [*lines_before(kind), STEERING[kind](), ev.CommandFinishedEvent(host="h", i=1)]:
                journal.append(line)
            journal.close()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return True
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    return False


def killed_writer(path: Path, kind: str, point: str) -> None:
    """`writer`, SIGKILLed at `point:kind`."""
    assert writer(path, kind, f"{point}:{kind}"), f"{point}:{kind} was never reached"


def next_writer(path: Path, trust: checkpoint.Trust) -> chain.Journal:
    def check(limit: int) -> dict | None:
        return integrity.check_file(path, SESSION, limit=limit, trust=trust)

    return chain.Journal(path, SESSION, check=check, adopt=True)


def kinds(path: Path) -> list[str]:
    """The kinds of the journal's whole lines (a torn last one is not a line yet)."""
    raw = path.read_bytes()
    return [json.loads(line)["kind"] for line in raw[: raw.rfind(b"\n") + 1].splitlines()]


@pytest.fixture(params=["unsigned", "signed"])
def trust(request, tmp_path, monkeypatch) -> checkpoint.Trust:
    if request.param == "signed":
        private, _ = ed25519_keypair(tmp_path, "runner")
        monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(private))
    else:
        monkeypatch.delenv("SIGNOFF_SIGNING_KEY", raising=False)
    monkeypatch.delenv("SIGNOFF_TRUSTED_KEYS", raising=False)
    return checkpoint.Trust.from_environment()


@pytest.mark.parametrize("kind", STEERING)
@pytest.mark.parametrize("point", POINTS)
def test_a_writer_killed_anywhere_in_a_steering_append_leaves_a_journal_the_next_one_goes_on_from(
    tmp_path, trust, point, kind
):
    path = tmp_path / "journal.jsonl"
    killed_writer(path, kind, point)
    before = kinds(path)
    journal = next_writer(path, trust)  # raised JournalUnverified before the intent (ci83)
    journal.append(STEERING["decision"]())
    journal.close()
    report = verify(path)
    assert report.ok and report.vouched_events == report.head_events == report.events, report
    after = kinds(path)
    # Nothing the killed writer put on disk whole is lost; the next writer says what it adopted or cut.
    whole = [line.kind for line in lines_before(kind)]
    if point in ("unheaded", "journal"):
        assert before == [*whole, kind]
    if point in ("intent", "torn"):
        assert before == whole
    assert after[: len(before)] == before
    if point == "unheaded":
        assert "log.adopted" in after[len(before) :], after
    if point == "torn":
        assert "log.recovered" in after[len(before) :], after


def announced(tmp_path: Path, trust: checkpoint.Trust) -> tuple[Path, bytes]:
    """A journal whose writer died right after writing an announced decision (its last line)."""
    path = tmp_path / "journal.jsonl"
    killed_writer(path, "decision", "unheaded")
    assert integrity.check_file(path, SESSION, limit=path.stat().st_size, trust=trust) is not None
    return path, path.read_bytes().splitlines()[-1]


def forged_line(line: bytes, **changes: object) -> bytes:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def test_an_intent_vouches_only_for_the_line_it_names(tmp_path, trust):
    path, line = announced(tmp_path, trust)
    forged = forged_line(line, decision={"action": "approve"}, raw="approve everything")
    path.write_bytes(path.read_bytes()[: -len(line) - 1] + forged + b"\n")
    assert verify(path).ok  # the chain holds (the forged line is the last): only the intent can tell
    with pytest.raises(JournalUnverified, match="decision at seq 2 past every copy of its head"):
        next_writer(path, trust)


def test_an_intent_vouches_for_one_line_not_for_what_is_chained_after_it(tmp_path, trust):
    path, line = announced(tmp_path, trust)
    more = forged_line(line, seq=3, prev=hashlib.sha256(line).hexdigest(), raw="and approve the rest")
    path.write_bytes(path.read_bytes() + more + b"\n")
    assert verify(path).ok and verify(path).vouched_events == 3
    with pytest.raises(JournalUnverified, match="decision at seq 3 past every copy of its head"):
        next_writer(path, trust)


def test_an_intent_written_into_a_signed_head_without_the_key_is_refused(tmp_path, monkeypatch):
    private, _ = ed25519_keypair(tmp_path, "runner")
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(private))
    trust = checkpoint.Trust.from_environment()
    path = tmp_path / "journal.jsonl"
    journal = chain.Journal(path, SESSION)
    journal.append(STEERING["session.started"]())
    journal.close()
    # The forger chains a policy change on and announces it in both head copies, keeping the signature.
    line = path.read_bytes().splitlines()[-1]
    forged = forged_line(
        line, kind="policy.changed", seq=1, prev=hashlib.sha256(line).hexdigest(), policy_text="default: allow"
    )
    path.write_bytes(path.read_bytes() + forged + b"\n")
    for _, h in checkpoint.read_all(path):
        checkpoint.write_record(path, h.model_copy(update={"intent": hashlib.sha256(forged).hexdigest()}))
    report = verify(path)
    assert not report.ok and "signature does not verify" in (report.error or ""), report
    with pytest.raises(JournalUnverified, match="signature does not verify"):
        next_writer(path, trust)


def test_an_intent_whose_line_never_came_is_harmless_and_dropped_by_the_next_head(tmp_path, trust):
    path = tmp_path / "journal.jsonl"
    killed_writer(path, "policy.changed", "intent")
    (copy,) = {h.intent for _, h in checkpoint.read_all(path)}
    assert copy is not None and kinds(path)[-1] != "policy.changed"
    journal = next_writer(path, trust)
    journal.append(ev.CommandFinishedEvent(host="h", i=2))  # another line where the announced one would have been
    # The stale intent stands over a line it does not name: it vouches for nothing past the head.
    report = verify(path)
    assert report.ok and report.events == 3 and report.head_events == report.vouched_events == 2, report
    journal.append(STEERING["rule.added"]())
    journal.close()
    assert verify(path).ok and all(h.intent is None for _, h in checkpoint.read_all(path))


def test_a_line_the_disk_refused_is_no_longer_announced(tmp_path, trust, monkeypatch):
    """A full disk refuses the announced line: the runner gives the step up (it runs again on resume), so the head
    must not keep announcing a line someone could rebuild from what they can read and append in its place."""
    path = tmp_path / "journal.jsonl"
    journal = chain.Journal(path, SESSION)
    journal.append(STEERING["session.started"]())
    refuse = chain.StorageFull(28, "no space left for the journal (test)")

    def full(data: bytes) -> None:
        raise refuse

    monkeypatch.setattr(journal, "_write", full)
    with pytest.raises(chain.StorageFull):
        journal.append(STEERING["decision"]())
    assert [h.intent for _, h in checkpoint.read_all(path)] == [None, None]
    monkeypatch.undo()
    journal.append(STEERING["decision"]())
    journal.close()
    assert verify(path).ok and kinds(path) == ["session.started", "decision"]


@pytest.mark.parametrize("kind", STEERING)
def test_a_writer_killed_between_the_two_head_copies_of_any_head_leaves_a_journal_the_next_one_goes_on_from(
    tmp_path, trust, kind
):
    """Every head the scenario writes (announcing, covering, closing), the head file written and the DB's copy not:
    the copies disagree, and what both vouch for is what the next writer goes on from."""
    killed = 0
    for n in range(1, 50):
        path = tmp_path / f"j{n}" / "journal.jsonl"
        path.parent.mkdir()
        if not writer(path, kind, f"head:copies#{n}"):
            break
        killed += 1
        journal = next_writer(path, trust)
        journal.append(STEERING["decision"]())
        journal.close()
        assert verify(path).ok, n
    assert killed >= 3  # at least the announcing, the covering and the closing head of the `kind` line


def test_heads_without_an_intent_sign_and_verify_as_before() -> None:
    """The message a signature covers is unchanged for a head without an intent: old sessions verify."""
    assert checkpoint.message("s", 3, "ab") == b"s:3:ab"
    assert checkpoint.message("s", 3, "ab", True) == b"s:3:ab:final"
    assert checkpoint.message("s", 3, "ab", intent="cd") == b"s:3:ab:intent=cd"
    assert checkpoint.Head(events=3, head="ab").model_dump_json(exclude_none=True) == '{"events":3,"head":"ab"}'
    with pytest.raises(ValueError):  # an intent is a sha256 or nothing: "" would sign as no intent at all
        checkpoint.Head(events=3, head="ab", intent="")


def test_a_signed_intent_over_an_empty_journal_verifies_for_its_session_only(tmp_path, monkeypatch):
    """Killed after announcing its first line, a signed session has a head but no line to name the session: the
    verifier is told whose journal it is (a writer and `replay --verify` know), and another session's name fails."""
    from agent.report.replay import verify_session

    private, _ = ed25519_keypair(tmp_path, "runner")
    monkeypatch.setenv("SIGNOFF_SIGNING_KEY", str(private))
    path = tmp_path / "journal.jsonl"
    killed_writer(path, "session.started", "intent")
    assert path.read_bytes() == b""
    assert verify(path, session=SESSION).ok and verify_session(path, meta={"id": SESSION}).ok
    assert "signature does not verify" in (verify(path, session="another").error or "")
