"""The remote backstop's watchdog (tools/ssh/script.py: watchdog), run by a local bash in a session of its own, as sshd
starts every command: fast checks of what tests/integration/test_ssh.py shows end to end over SSH."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

import pytest

from tests import procs
from tools.ssh.script import watchdog as the_watchdog
from tools.transport import ABSOLUTE_PATH, SHELL

NO_PTY = "/nonexistent/ptmx"  # where a host has no /dev/ptmx, the watchdog naps with `sleep`


def start(script: str, *, sigint: signal.Handlers = signal.SIG_DFL, **env: str) -> subprocess.Popen[bytes]:
    """The script's bash, started with SIGINT as `sigint` says, whatever this process has: a runner started in the
    background without job control ignores it, and so do the processes it starts (ci74, ci80, ci81 under the hogs)."""
    return subprocess.Popen(
        [*SHELL, script],
        start_new_session=True,  # its shell's pid is its process group, as under sshd
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),  # only a disposition: nothing a fork could deadlock on
    )


def gone(pattern: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while procs.matching(pattern, procs.processes()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# What a command may do to its own group (all found by attack): every signal it can send the group, `kill $!` (which
# names the watchdog until the command starts a job), a part that ignores TERM, and a shell `exec`'d away.
SIGNALS = "HUP INT QUIT ALRM TERM USR1 USR2 PIPE"
ATTACKS = {
    "term-ignoring part": "bash -c 'trap \"\" TERM; exec {stubborn}' & exec {plain}",
    "signals to its group": f"trap '' {SIGNALS}; for s in {SIGNALS}; do kill -$s 0; done; kill $!; "
    "{stubborn} & exec {plain}",
}


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["INT default", "INT ignored on entry"])
@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("pty", ["/dev/ptmx", NO_PTY])
def test_it_terms_then_kills_the_whole_group_whatever_the_command_does(
    pty: str, attack: str, sigint: signal.Handlers
) -> None:
    # And whatever the environment says: bash takes SECONDS from it (a negative one would put the TERM off for a
    # day), and POSIXLY_CORRECT puts it in posix mode, where a failed redirection (no /dev/ptmx) ends a subshell.
    # And a shell started with SIGINT ignored (ci74/ci80/ci81: the watchdog's `trap - INT` gave it bash's handler,
    # so the command's own `kill -INT 0` ended it after 17 ms, before any backstop was needed).
    tag = f"{os.getpid()}{len(pty)}{len(attack)}{int(sigint)}"
    stubborn, plain = f"sleep 3000.{tag}1", f"sleep 3000.{tag}2"
    watchdog = the_watchdog(1, 1).replace("/dev/ptmx", pty)
    command = ATTACKS[attack].format(stubborn=stubborn, plain=plain)
    started = time.monotonic()
    p = start(ABSOLUTE_PATH + watchdog + command, sigint=sigint, SECONDS="-100000", POSIXLY_CORRECT="1")
    try:
        p.wait(timeout=20)
        took = time.monotonic() - started
        assert p.returncode in (-signal.SIGTERM, -signal.SIGKILL) and 0.4 < took < 10, (p.returncode, took)
        assert gone(f"^({stubborn}|{plain})$", within=10)  # the TERM-ignoring one by the KILL a second later
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)


@pytest.mark.parametrize("pty", ["/dev/ptmx", NO_PTY])
def test_it_is_not_one_of_the_commands_jobs_and_leaves_with_it(pty):
    marker = f"signoff-watchdog-{os.getpid()}-{len(pty)}"
    watchdog = the_watchdog(60, 1).replace("/dev/ptmx", pty)
    p = start(ABSOLUTE_PATH + watchdog + f"sleep 0.1 & wait; echo $?; jobs | wc -l # {marker}")
    try:
        out, err = p.communicate(timeout=20)
        assert (p.returncode, out.split(), err) == (0, [b"0", b"0"], b"")  # no job of ours; nothing on stderr
        assert gone(marker, within=5)  # it noticed its command's shell had gone, and went too
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)


def ignored(status: bytes) -> int:
    """The SigIgn mask of a `/proc/<pid>/status` line."""
    return int(status.split()[1], 16)


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["INT default", "INT ignored on entry"])
@pytest.mark.parametrize("pty", ["/dev/ptmx", NO_PTY])
def test_the_commands_shell_keeps_the_sigint_it_was_started_with(pty: str, sigint: signal.Handlers) -> None:
    """What the watchdog ignores to be born ignoring it is given back: a shell started with SIGINT ignored stays
    ignoring it, one started with the default dies of it, as without the watchdog. (bash itself ignores SIGQUIT
    once it has started a background job, the watchdog as any other: not compared.)"""
    before = start("grep ^SigIgn: /proc/$$/status", sigint=sigint)
    watchdog = the_watchdog(60, 1).replace("/dev/ptmx", pty)
    script = "grep ^SigIgn: /proc/$$/status; kill -INT $$; kill -TERM $$; echo alive"
    after = start(ABSOLUTE_PATH + watchdog + script, sigint=sigint)
    try:
        out_before, _ = before.communicate(timeout=20)
        out_after, err = after.communicate(timeout=20)
        int_bit = 1 << (signal.SIGINT - 1)
        assert ignored(out_after.splitlines()[0]) & int_bit == ignored(out_before) & int_bit, (out_before, out_after)
        expected = -signal.SIGINT if sigint == signal.SIG_DFL else -signal.SIGTERM
        assert after.returncode == expected, (after.returncode, err)
    finally:
        for p in (before, after):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
