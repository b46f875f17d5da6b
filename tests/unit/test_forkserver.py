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


# A command module for the ending's tests: what it does is chosen by its argument.
ENDING_MODULE = """
import atexit, pathlib, sys, threading, time
marks = pathlib.Path(sys.argv[2])
def mark(text):
    with marks.open("a") as fh:
        fh.write(text + "\\n")
def late_thread():
    time.sleep(0.3)
    mark("thread")
threading.Thread(target=late_thread).start()  # not a daemon: the interpreter waits for it at exit
atexit.register(mark, "atexit")
sys.stdout.write("unflushed output")  # a pipe's buffer: written out only at exit
what = sys.argv[1]
if what == "exit-3":
    sys.exit(3)
if what == "exit-message":
    sys.exit("ended with a message")
if what == "raise":
    raise RuntimeError("uncaught")
"""


@pytest.mark.parametrize(
    ("what", "code", "stderr"),
    [("return", 0, ""), ("exit-3", 3, ""), ("exit-message", 1, "ended with a message"), ("raise", 1, "RuntimeError")],
)
def test_a_forked_command_ends_as_the_interpreter_would_without_tearing_its_modules_down(
    what: str, code: int, stderr: str, tmp_path: Path
) -> None:
    (tmp_path / "ending_probe.py").write_text(ENDING_MODULE)
    marks = tmp_path / "marks"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as on a pipe by default
    as_interpreter = subprocess.run(
        [sys.executable, "-m", "ending_probe", what, str(marks)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    expected_marks = marks.read_text()
    marks.unlink()
    # The fork server's child: `command` runs the module as `python -m` does, `end` ends the process.
    driver = (
        f"import sys; sys.path[:0] = [{str(tmp_path)!r}, {str(ROOT)!r}]; "
        "from tests.forkserver import command, end; "
        f"sys.argv = ['-m', {what!r}, {str(marks)!r}]; end(command('ending_probe'))"
    )
    forked = subprocess.run(
        [sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )
    expected = (code, "unflushed output")
    assert (forked.returncode, forked.stdout) == (as_interpreter.returncode, as_interpreter.stdout) == expected
    assert stderr in forked.stderr and stderr in as_interpreter.stderr
    # the non-daemon thread was waited for, then the atexit handlers ran: in the interpreter's order
    assert marks.read_text() == expected_marks == "thread\natexit\n"
