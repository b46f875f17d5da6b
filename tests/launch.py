"""`python -m agent.cli ARGS…` for tests, started by the warm fork server when there is one (tests/forkserver.py).

It behaves as the command it stands for: the command gets this process's stdin, stdout and stderr, working
directory and environment; this process exits with the command's code, or dies by the command's signal;
signals sent to it are passed on, and if it is killed, so is the command. Without a server (the environment
variable unset, the server gone, or a request it must refuse) it becomes the real interpreter, by exec.
Standard library only and started with `-I -S`: it must cost a few milliseconds, not what it saves.
"""

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def main() -> None:
    args = sys.argv[1:]
    pending: list[int] = []  # signals that came before the command's pid
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    known = False

    def pass_on(sig: int, _frame: object) -> None:
        if not known:
            pending.append(sig)
            return
        # The server may have answered and gone: the command has ended, and its status is on its way.
        with contextlib.suppress(OSError):
            conn.send(bytes([sig]))

    def real() -> None:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        for sig in pending:  # what a new interpreter would have got: delivered to it instead, if we live
            os.kill(os.getpid(), sig)
        os.execv(sys.executable, [sys.executable, "-m", "agent.cli", *args])

    for sig in FORWARDED:
        signal.signal(sig, pass_on)
    path = os.environ.get("SIGNOFF_TEST_FORKSERVER")
    if not path:
        real()
    try:
        conn.connect(path)
    except OSError:
        real()
    body = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    message = struct.pack("!I", len(body)) + body
    try:
        conn.sendmsg([message[:4]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        conn.sendall(message[4:])
        reader = conn.makefile("rb")
        first = reader.readline().split()
    except OSError:
        first = []
    if not first or first[0] != b"pid":
        real()
    known = True
    for sig in pending:
        pass_on(sig, None)
    end = reader.readline().split()
    if len(end) == 2 and end[0] == b"signal":
        sig = int(end[1])
        if sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)  # ours passed it on; SIGKILL has no handler to reset
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(int(end[1]) if len(end) == 2 and end[0] == b"exit" else 70)


if __name__ == "__main__":
    main()
