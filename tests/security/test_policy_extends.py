"""`extends:` is read from files a person names, never from a session's own text: a journal or a
session's policy copy that says `extends: …` (forged, imported, or an old session tampered with) is
refused without opening what it names. Each attack points it at a FIFO, which blocks whoever opens it."""

from __future__ import annotations

import os
import threading

import pytest

from policies.load import load_policy, load_policy_text
from policies.yamlsrc import SourceError


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "trap.yaml"
    os.mkfifo(path)
    yield path
    _has_reader(path)  # opening it for writing unblocks a reader, so a failing test fails instead of hanging


def _has_reader(path) -> bool:
    """Whether someone has the FIFO open for reading (opening it to write without one fails with ENXIO)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


def test_a_sessions_policy_text_that_extends_a_file_is_refused_without_opening_it(fifo):
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            load_policy_text(f"extends: {fifo}\nname: forged\n", path="policy.yaml")
            outcome.append(None)
        except BaseException as exc:  # the test reports whatever happened
            outcome.append(exc)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "loading a journaled policy opened the file its extends: names"
    assert isinstance(outcome[0], SourceError) and "self-contained" in str(outcome[0])
    assert not _has_reader(fifo)


def test_a_policy_the_journal_recorded_from_an_extending_file_loads_back_without_files(tmp_path):
    child = tmp_path / "c.yaml"
    child.write_text("extends: cautious\nname: c\ncommands:\n  allow: ['rm -rf *']\n")
    resolved = load_policy(child).text
    child.unlink()  # replay on another machine: none of the files exist
    again = load_policy_text(resolved, path=str(child))
    assert again.model.commands.allow[-1] == "rm -rf *" and "rm -rf /*" in again.model.commands.deny
