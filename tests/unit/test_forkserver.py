"""The tests' fork server (tests/forkserver.py, tests/launch.py) stands in for `python -m agent.cli` exactly:
same output and exit codes, signals passed on, a killed launcher takes its command along, and a request it
cannot serve faithfully becomes a new interpreter."""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SIGNOFF, SIGNOFF_EXEC, run_until_benchmarking


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


@pytest.mark.parametrize("name, value", [("PYTHONIOENCODING", "latin-1"), ("ANTHROPIC_LOG", "debug")])
def test_an_environment_read_at_start_or_by_a_preloaded_import_gets_a_new_interpreter(
    name: str, value: str, tmp_path: Path
) -> None:
    log = server_log()
    before = log.read_text().count("refused: ")
    r = run([*SIGNOFF, "schema", "policy"], tmp_path, **{name: value})
    assert r.returncode == 0 and json.loads(r.stdout)
    assert log.read_text().count("refused: ") == before + 1


def started_run(home: Path, variant) -> tuple[subprocess.Popen[bytes], Path]:
    """A forked `signoff run`, once it is benchmarking, and its journal."""
    campaign = variant(edit=lambda t: t.replace("--wall 0.02", "--wall 0.3"))  # long enough to be caught running
    proc = run_until_benchmarking(home, campaign, subprocess.PIPE, command=SIGNOFF)
    (journal,) = home.glob("sessions/*/journal.jsonl")
    return proc, journal


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


def test_a_launcher_gone_before_its_answer_takes_its_command_along_and_the_server_serves_on(
    tmp_path: Path, variant
) -> None:
    log = server_log()
    campaign = str(variant())
    request = {
        "args": ["run", campaign, "--json"],
        "cwd": str(ROOT),
        "env": {**os.environ, "SIGNOFF_HOME": str(tmp_path / "home"), "USER": "tester"},
    }
    body = json.dumps(request).encode()
    earlier = log.read_text()  # other tests may have run the same campaign path through this server
    with open(os.devnull, "rb") as nothing, socket.socket(socket.AF_UNIX) as conn:
        conn.connect(os.environ["SIGNOFF_TEST_FORKSERVER"])
        fds = array.array("i", [nothing.fileno()] * 3)
        conn.sendmsg([struct.pack("!I", len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    # closed without reading its pid: the run it asked for is killed, not left running unowned
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = log.read_text()[len(earlier) :].splitlines()
        forked = [line.split()[1].rstrip(":") for line in new if line.startswith("forked") and campaign in line]
        ended = {line.split()[1].rstrip(":"): line for line in new if line.startswith("ended")}
        if forked and forked[-1] in ended:
            assert "signal 9" in ended[forked[-1]], ended[forked[-1]]
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the command of a launcher that went away was never ended:\n{log.read_text()[-2000:]}")
    before = log.read_text().count("forked ")
    r = run([*SIGNOFF, "schema", "policy"], tmp_path)
    assert r.returncode == 0 and log.read_text().count("forked ") == before + 1, log.read_text()[-1500:]


def test_a_server_whose_worker_died_ends_and_leaves_nothing_behind(tmp_path: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="signoff-fs-test-"))
    # A parent that starts a server and exits at once, as a worker killed without its teardown would.
    starter = (
        "import os, subprocess, sys; "
        f"subprocess.Popen([sys.executable, '-m', 'tests.forkserver', {str(work / 'sock')!r}, str(os.getpid())], "
        "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
    )
    subprocess.run([sys.executable, "-c", starter], cwd=ROOT, check=True, timeout=60)
    deadline = time.monotonic() + 60
    while work.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not work.exists()
