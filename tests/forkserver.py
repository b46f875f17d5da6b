"""A warm interpreter that forks a fresh `python -m agent.cli` process for each test command.

Every signoff command a test runs is a process of its own: its own pid, stdin/stdout/stderr, working
directory, environment and exit status. What a new interpreter spends first, though, is importing: about
0.8 s of CPU for a command that builds the graph (LangGraph → langchain_core → langsmith), paid by several
hundred processes per suite. This server imports once (and compiles the graph once) and forks per command, so a
command starts in a few milliseconds with nothing shared but the modules' code and the compiled graph. It ends as
the interpreter would, less the teardown of its modules (`end`), in a forked child dearer than a short command.

Run as `python -m tests.forkserver SOCKET WORKER_PID`; it ends with its worker.

Protocol (one Unix-socket connection per command, from `tests/launch.py`):
  launcher → server: a 4-byte length, a JSON request {args, cwd, env}, and its fds 0, 1 and 2 (SCM_RIGHTS);
  server → launcher: `exec` (start a real interpreter instead) or `pid <n>`, then `exit <code>` or `signal <n>`;
  launcher → server: one byte per signal to pass on; EOF (the launcher died, e.g. SIGKILL) kills the command.

What a forked child cannot take from its request is refused rather than approximated: a request whose
environment would change how the interpreter starts (PYTHON*, locale, TZ) gets `exec`, and modules of ours that
read the environment at import are imported again in the child (`REIMPORT`). What it shares with the server and
a fresh interpreter would not: the string hash seed (every command of a worker iterates a set of strings in the
same order, so a test comparing two processes' results runs one of them with SIGNOFF_EXEC), its parent and
process group, and `/proc/<pid>/cmdline`. `tests/unit/test_forkserver.py` holds the two paths to the same
behaviour.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import gc
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import struct
import sys
import threading
from typing import Any

# What every graph-building command imports: the CLI and the graph with its checkpointers. And the Anthropic SDK,
# which every command with the Claude brain imports (~0.7 s of CPU each, a few dozen commands a suite; ~0.7 s once
# for each worker's server). And what a run, resume or decide imports as it goes (110 modules, ~45 ms of CPU each
# time): rich for the console report, rapidfuzz for the one-line reader, cryptography for the journal head's
# signature. None of them reads the environment as it is imported; their consoles and keys are made per call.
PRELOAD = (
    "agent.cli",
    "agent.graph",
    "agent.run.runner",
    "agent.run.create",
    "agent.run.checkpoints",
    "langgraph.checkpoint.sqlite",
    "anthropic",
    "agent.report.console",
    "tools.terminal",
    "rapidfuzz.distance",
    "rapidfuzz.fuzz",
    "rapidfuzz.process",
    "rapidfuzz.utils",
    "cryptography.exceptions",
    "cryptography.hazmat.primitives.serialization",
    "cryptography.hazmat.primitives.asymmetric.ed25519",
)
# Modules that read the environment when imported: a child imports them again under its own environment.
REIMPORT = ("agent.crashpoints",)
# What the interpreter reads from the environment as it starts (a forked child could not honour a change), and what
# a preloaded module read as it was imported (the SDK sets its logging up from ANTHROPIC_LOG).
STARTUP_PREFIXES = ("PYTHON", "LC_")
STARTUP_NAMES = ("LANG", "LANGUAGE", "TZ", "ANTHROPIC_LOG")
MAX_REQUEST = 8 << 20


def startup_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES}


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data = b""
    need = 4
    try:
        while len(data) < need:
            # CLOEXEC: a descriptor received here must not leak into what another command executes
            chunk, ancdata, _flags, _addr = conn.recvmsg(
                1 << 16, socket.CMSG_SPACE(3 * fds.itemsize), socket.MSG_CMSG_CLOEXEC
            )
            for level, kind, payload in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            if not chunk:
                raise EOFError("launcher went away before its request was complete")
            data += chunk
            if len(data) >= 4:
                need = 4 + struct.unpack("!I", data[:4])[0]
                if need > MAX_REQUEST:
                    raise ValueError("request too large")
        return json.loads(data[4:need]), list(fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


class Server:
    def __init__(self, path: str, worker: int) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        staging = f"{path}.{os.getpid()}"
        self.listener.bind(staging)
        self.listener.listen(64)
        os.rename(staging, path)  # the path appears only once it accepts connections
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.own_env = startup_env(dict(os.environ))
        self.live: set[int] = set()  # forked and not reaped yet: these pids are still our commands'
        # The worker that started us: if it dies without its teardown, so do we (and what we still run).
        try:
            self.selector.register(os.pidfd_open(worker), selectors.EVENT_READ, ("worker gone", None))
        except ProcessLookupError:
            self._orphaned()

    def serve(self) -> tuple[dict[str, Any], list[int]]:
        """Serve until a request is forked: returns (in the child only) that request and its fds."""
        while True:
            for key, _ in self.selector.select():
                what, state = key.data
                if what == "accept":
                    conn, _ = self.listener.accept()
                    forked = self._start(conn)
                    if forked is not None:
                        return forked
                elif what == "ended":
                    self._ended(*state)
                elif what == "launcher":
                    self._from_launcher(*state)
                else:
                    self._orphaned()

    def _orphaned(self) -> None:
        for pid in self.live:
            os.kill(pid, signal.SIGKILL)  # ours, not reaped: the pid is still theirs
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)  # the fixture's directory, made for us
        raise SystemExit(0)

    def _refuse(self, conn: socket.socket, fds: list[int], args: list[str]) -> None:
        for fd in fds:
            os.close(fd)
        print(f"refused: {' '.join(args)[:200]}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):  # a launcher gone already needs no answer
            conn.sendall(b"exec\n")
        conn.close()

    def _start(self, conn: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
        conn.settimeout(10)  # a launcher stopped halfway through its request must not hold up the others
        try:
            request, fds = _receive(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            return None
        conn.settimeout(None)
        if len(fds) != 3 or startup_env(request["env"]) != self.own_env or threading.active_count() != 1:
            self._refuse(conn, fds, request["args"])
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError:
            self._refuse(conn, fds, request["args"])
            return None
        if pid == 0:
            for key in list(self.selector.get_map().values()):
                if isinstance(key.fileobj, socket.socket):
                    key.fileobj.close()
                elif isinstance(key.fileobj, int):
                    os.close(key.fileobj)  # another command's pidfd
            self.selector.close()
            conn.close()
            return request, fds
        self.live.add(pid)
        test = request["env"].get("PYTEST_CURRENT_TEST", "")
        print(f"forked {pid}: {' '.join(request['args'])[:200]} [{test}]", file=sys.stderr, flush=True)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.selector.register(pidfd, selectors.EVENT_READ, ("ended", (pid, pidfd, conn)))
        self.selector.register(conn, selectors.EVENT_READ, ("launcher", (pid, conn)))
        try:
            conn.sendall(f"pid {pid}\n".encode())
        except OSError:
            self._forget(conn)
            os.kill(pid, signal.SIGKILL)  # its launcher is gone before it knew of it: the command goes too
        return None

    def _forget(self, fileobj: socket.socket | int) -> None:
        if fileobj in self.selector.get_map():
            self.selector.unregister(fileobj)

    def _ended(self, pid: int, pidfd: int, conn: socket.socket) -> None:
        _, status, usage = os.wait4(pid, 0)
        self.live.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        how = f"signal {-code}" if code < 0 else f"exit {code}"
        print(f"ended {pid}: {how}, {usage.ru_utime + usage.ru_stime:.3f} s CPU", file=sys.stderr, flush=True)
        self._forget(pidfd)
        os.close(pidfd)
        self._forget(conn)
        with contextlib.suppress(OSError):  # the launcher may be gone already
            conn.sendall(f"signal {-code}\n".encode() if code < 0 else f"exit {code}\n".encode())
        conn.close()

    def _from_launcher(self, pid: int, conn: socket.socket) -> None:
        if pid not in self.live:
            return  # reaped in this same round: its pid may be another process's by now
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:
            self._forget(conn)
            os.kill(pid, signal.SIGKILL)  # the launcher died (SIGKILL, a test's timeout): so does its command
            return
        for sig in data:
            os.kill(pid, sig)


def become(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this forked child into the command: its fds, directory, environment and argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    sys.argv = ["-m", *request["args"]]
    for name in REIMPORT:
        if name in sys.modules:
            importlib.reload(sys.modules[name])


def warm() -> None:
    """What a process computes once and keeps, computed here for every child: every preset read (YAML composed, CEL
    conditions compiled, their patterns in `re`'s cache: ~30 ms a command that reads a policy, of which every run,
    resume and decide reads one) and the one-line reader's synonyms compiled (~10-20 ms a command that reads a line).
    Caches of pure functions only, so a child behaves as a fresh interpreter would; a preset that fails to load here
    fails in the child as it would anywhere."""
    from policies.load import load_policy
    from policies.schema import PRESETS_DIR
    from policies.tolerant import SYNONYMS, _synonym

    for preset in sorted(PRESETS_DIR.glob("*.yaml")):  # every preset shipped, as `extends:` lists them
        with contextlib.suppress(Exception):
            load_policy(preset.stem)
    for i in range(len(SYNONYMS)):
        _synonym(i)


def main() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    # And the compiled graph (~0.1 s of CPU a command): it is built from the code alone, not from a
    # session, the environment or the command line, so every child would compile the same one.
    importlib.import_module("agent.run.checkpoints")._compiled()
    warm()
    # What is imported now lives as long as every child: out of the collector's sight, a child's collections
    # neither scan it nor write to its pages (which would copy them from this process, page by page).
    gc.freeze()
    server = Server(sys.argv[1], int(sys.argv[2]))
    request, fds = server.serve()
    del server
    become(request, fds)
    end(command())


def command(module: str = "agent.cli") -> int:
    """Run the command as `python -m` does and return its exit status, printing what the interpreter would print
    for an uncaught exception or a `sys.exit` with a message. Ctrl-C is left to the interpreter (it ends by SIGINT)."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return 1
    return 0


def end(status: int) -> None:
    """What the interpreter does at exit that a command can see, then `_exit`: its non-daemon threads joined, every
    atexit handler run (the command's, then those of the modules imported before the fork, e.g. logging's),
    stdout and stderr flushed (exit status 120 when one cannot be, as the interpreter's). What is skipped is
    the teardown of the modules and their objects: in a forked child it writes to most pages of the heap it shares
    with the server, copying each, ~90 ms of CPU a command (a `sessions --json` took ~130 ms in all, ~37 without).
    Nothing a command relies on is left to that teardown: its files are closed, its journal's head written (a
    test whose command lost data this way fails). A SQLite database it left open keeps its -wal file, as after a
    crash, which the stores read back; SIGNOFF_EXEC runs the interpreter's full ending."""
    threading._shutdown()  # pyright: ignore[reportAttributeAccessIssue]  # what Py_Finalize calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:
            continue
        try:
            stream.flush()
        except OSError:  # a reader gone
            status = 120
    os._exit(status)


if __name__ == "__main__":
    main()
