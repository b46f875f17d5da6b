"""The tests' fork server (tests/forkserver.py, tests/launch.py) stands in for `python -m agent.cli` exactly:
same output and exit codes, signals passed on, a killed launcher takes its command along, and a request it
cannot serve faithfully becomes a new interpreter."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SIGNOFF, SIGNOFF_EXEC


def server_log() -> Path:
    """This worker's server log, once the server accepts connections."""
    path = os.environ["SIGNOFF_TEST_FORKSERVER"]
    deadline = time.monotonic() + 60
    while True:
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    return Path(path).parent / "log"


def run(argv: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "120", **env}
    return subprocess.run(argv, capture_output=True, text=True, env=full, cwd=ROOT, timeout=120)


CASES = [
    ("--help",),
    ("schema", "policy"),
    ("schema", "nonsense"),  # exit 2 with one line
    ("sessions", "--json"),
    ("decision", "parse", "Skip #2 for now if it's unsafe", "--gate", "safety"),
    ("run", "/nonexistent/campaign.yaml"),
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_a_forked_command_prints_and_exits_as_a_new_interpreter_does(args: tuple[str, ...], tmp_path: Path) -> None:
    log = server_log()
    before = log.read_text().count("forked ")
    forked = run([*SIGNOFF, *args], tmp_path / "a")
    assert log.read_text().count("forked ") == before + 1  # it really was the warm server's fork
    fresh = run([*SIGNOFF_EXEC, *args], tmp_path / "b")
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_an_environment_the_interpreter_reads_at_start_gets_a_new_interpreter(tmp_path: Path) -> None:
    log = server_log()
    before = log.read_text().count("refused: ")
    r = run([*SIGNOFF, "schema", "policy"], tmp_path, PYTHONIOENCODING="latin-1")
    assert r.returncode == 0 and json.loads(r.stdout)
    assert log.read_text().count("refused: ") == before + 1


def started_run(home: Path, variant) -> tuple[subprocess.Popen[bytes], Path]:
    campaign = variant(edit=lambda t: t.replace("--wall 0.02", "--wall 0.3"))  # long enough to be caught running
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester"}
    proc = subprocess.Popen(
        [*SIGNOFF, "run", str(campaign), "--json"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(home.glob("sessions/*/journal.jsonl"))
        if found and '"bench.run"' in found[0].read_text():
            return proc, found[0]
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never reached its benchmark")


def test_sigterm_reaches_the_forked_command_and_its_exit_comes_back(tmp_path: Path, variant) -> None:
    server_log()
    proc, _ = started_run(tmp_path / "home", variant)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted; `signoff resume" in err.decode()


def test_a_killed_launcher_takes_its_command_along(tmp_path: Path, variant) -> None:
    server_log()
    home = tmp_path / "home"
    proc, journal = started_run(home, variant)
    proc.kill()
    proc.wait()
    # Killed, the command leaves its session interrupted; left running, it would hold it (`running`) and
    # then finish it.
    deadline = time.monotonic() + 30
    while True:
        status = json.loads(run([*SIGNOFF_EXEC, "sessions", "--json"], home).stdout)[0]["status"]
        if status != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == "interrupted"
    assert '"session.finished"' not in journal.read_text()
