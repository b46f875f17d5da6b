"""A real PostgreSQL server for the tests: `initdb` into a temp dir, `pg_ctl start` on 127.0.0.1 with a
free port, stopped by the PID in its postmaster.pid. PostgreSQL refuses to run as root, so as root the
server runs as the `postgres` system user (Debian's package creates it; `make test` installs the package).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests import procs


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries here (or no user to run them as)."""


def _bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise PostgresUnavailable(f"{name} not found (install postgresql)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PostgresServer:
    root: Path
    port: int
    user: str = "signoff"

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def database(self, name: str) -> str:
        """A fresh database on this server; its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def postmaster(self) -> int | None:
        """This server's postmaster, if the pid its pid file names still runs this server's data directory: a pid file
        left by a server that died names a pid that may be anyone's by now (a run goes through every pid)."""
        return procs.postmaster(self.root / "data")

    def stop(self) -> None:
        pid = self.postmaster()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                # SIGINT is PostgreSQL's "fast" shutdown (clients are disconnected); SIGTERM would be "smart",
                # which waits for every client to leave, e.g. a pool a test left open.
                os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.postmaster() is not None:
                time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)


def start(*, fsync: bool = False) -> PostgresServer:
    """Start a server; `fsync=False` (the tests) trades crash safety of the throwaway data for speed."""
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="signoff-pg-"))
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise PostgresUnavailable("running as root and there is no postgres user to run the server as") from exc
        as_user = ["runuser", "-u", "postgres", "--"]
        root.chmod(0o755)
        shutil.chown(root, "postgres")
    server = PostgresServer(root=root, port=_free_port())
    data, sock = root / "data", root / "sock"
    run = [*as_user]
    subprocess.run(
        [*run, _bin("initdb"), "-D", str(data), "-U", server.user, "-A", "trust", "--no-sync", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    if as_user:
        subprocess.run([*run, "mkdir", "-p", str(sock)], check=True)
    else:
        sock.mkdir()
    options = f"-p {server.port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync={'on' if fsync else 'off'}"
    r = subprocess.run(
        [*run, _bin("pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "-t", "30", "start"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        server.stop()
        raise PostgresUnavailable(f"pg_ctl start failed: {r.stderr.strip()} {log[-500:]}")
    return server
