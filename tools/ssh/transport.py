"""SSHTransport: commands over the pooled connections, with hard deadlines and a kill over a second channel."""

from __future__ import annotations

import contextlib
import shlex
import time
from pathlib import Path
from typing import Any

from tools.ssh.channels import CONNECT_TIMEOUT, KILL_GRACE, MAX_PACKET, Connection, bytearray_buffers, drain, send_exec
from tools.ssh.connections import SSHConnections
from tools.ssh.script import NO_BASH, PGID_MARK, wrap
from tools.transport import (
    CommandRequest,
    CommandResult,
    Host,
    KeywordRun,
    TransportError,
    finish,
    open_sinks,
)


class SSHTransport(SSHConnections, KeywordRun):
    """The `Transport` for remote hosts. Thread-safe: one pooled connection per host."""

    # ---------------------------------------------------------------- commands

    def workdir(self, host: Host) -> str:
        with self._guard:
            known = self._workdirs.get(host.name)
        if known is not None:
            return known
        path = host.workdir or f"signoff/{self.session}/{host.name}"
        setup = f"command -v bash >/dev/null 2>&1 || {{ echo {NO_BASH}; exit 127; }}; "
        setup += f"mkdir -p {shlex.quote(path)} && cd {shlex.quote(path)} && pwd"
        result = self._exec(CommandRequest(host=host, command=setup, timeout=20), shell=False)
        if result.error is not None:
            raise TransportError(result.error)
        if result.exit_code == 127 and NO_BASH in result.stdout_tail:
            raise TransportError(f"{host.name}: bash is not installed there; signoff runs every command with bash")
        if not result.ok:
            raise TransportError(
                f"{host.name}: cannot create working directory {path}: {result.error or result.stderr_tail.strip()}"
            )
        resolved = result.stdout_tail.strip().splitlines()[-1]
        with self._guard:
            self._workdirs[host.name] = resolved
        return resolved

    def execute(self, request: CommandRequest) -> CommandResult:
        try:
            workdir = request.cwd or self.workdir(request.host)
        except TransportError as exc:
            return CommandResult(
                host=request.host.name,
                command=self.redact(request.command),
                exit_code=None,
                duration_s=0.0,
                error=str(exc),
            )
        return self._exec(request.model_copy(update={"cwd": workdir}))

    def _open(self, host: Host) -> tuple[Connection, Any]:
        """A session channel on the pooled connection; reconnect once if the connection died."""
        import paramiko

        dead: Connection | None = None
        for reconnect in (False, True):
            conn = self.connection(host, replacing=dead)
            # A slot, or the channel opened ahead, which holds one: while every slot is taken, a command running on
            # one may open the next channel with the slot another one frees, so a waiting command looks again.
            while True:
                if (spare := conn.take_spare()) is not None:
                    if (chan := spare.ready(conn.transport)) is not None:
                        return conn, chan
                    # Refused (paramiko logs it, as any refused open), closed, or its link gone: not again here.
                    conn.ahead = False
                    spare.discard()
                    conn.slots.release()
                if conn.slots.acquire(timeout=0.05):
                    break
            for attempt in range(6):
                try:
                    chan = conn.transport.open_session(timeout=CONNECT_TIMEOUT, max_packet_size=MAX_PACKET)
                    bytearray_buffers(chan)
                    return conn, chan
                except paramiko.ChannelException:
                    time.sleep(0.05 * 2**attempt)  # "no more sessions": sshd frees slots lazily
                except (paramiko.SSHException, EOFError, OSError, AttributeError) as exc:
                    if conn.alive():
                        time.sleep(0.05 * 2**attempt)
                        continue
                    conn.slots.release()
                    if reconnect:
                        raise TransportError(
                            f"{conn.endpoint.label()}: connection lost and reconnect failed: "
                            f"{exc or type(exc).__name__}"
                        ) from None
                    dead = conn
                    break
            else:
                conn.slots.release()
                raise TransportError(
                    f"{conn.endpoint.label()}: sshd refused a session channel 6 times (MaxSessions); reduce parallelism"
                )
        raise TransportError(f"{host.name}: could not open a channel")

    def _start(self, host: Host, script: str) -> tuple[Connection, Any]:
        """A channel on the pooled connection with `script`'s exec request sent. A request that could not be sent
        reached nothing (not a byte left, or a packet cut short, which sshd drops whole), so nothing ran: it is sent
        once more, on a new connection. That is a link that died since its channel was opened, which a channel opened
        ahead and idle since (`open_spare`) makes likelier than an open just before the request."""
        for again in (False, True):
            conn, chan = self._open(host)
            chan.settimeout(0.0)
            if (sent := send_exec(chan, script)) == "sent":
                return conn, chan
            if sent == "link down":
                conn.broken = True  # so the next open replaces it instead of trying it again
            with contextlib.suppress(Exception):
                chan.close()
            conn.slots.release()
            if again:
                why = "connection lost" if sent == "link down" else "sshd closed the channel"
                raise TransportError(f"{conn.endpoint.label()}: {why}; the command was not sent (two channels tried)")
        raise AssertionError("unreachable")

    def _exec(self, request: CommandRequest, *, shell: bool = True) -> CommandResult:
        """`shell`: run with bash (every campaign command); False for signoff's own setup, which must also say
        when a host has no bash."""
        host, command, on_timeout = request.host, request.command, request.on_timeout
        started = time.monotonic()
        shown = self.redact(command)
        out, err = open_sinks(self.artifacts, request.on_line, self.redact)
        pgid: list[int] = []

        def grab_pgid(line: str) -> bool:
            if not pgid and line.startswith(PGID_MARK):
                pgid.append(int(line[len(PGID_MARK) :]))
                err.filter = None  # only the first line is ours
                return True
            return False

        err.filter = grab_pgid
        script = wrap(
            command,
            timeout=request.timeout,
            cwd=request.cwd,
            env=request.env,
            diagnosed=on_timeout is not None,
            stdin=request.stdin is not None,
            bash=shell,
        )
        try:
            conn, chan = self._start(host, script)
        except TransportError as exc:
            return finish(
                host.name,
                shown,
                out,
                err,
                exit_code=None,
                timed_out=False,
                killed=False,
                duration=time.monotonic() - started,
                error=str(exc),
            )
        timed_out = killed = link_lost = False
        error = None
        exit_code: int | None = None
        try:
            conn.last_used = time.monotonic()
            chan._wait_for_event()  # sshd's answer to the exec request: raises as `exec_command` does
            if request.stdin is not None:
                chan.sendall(request.stdin)
                # paramiko sends an EOF even on a channel the server has already closed, and OpenSSH then
                # drops the whole connection ("ieof packet referred to nonexistent channel"), taking every
                # command pooled on it along. A command that finished first needs no EOF.
                if not (chan.closed or chan.eof_received or chan.status_event.is_set()):
                    chan.shutdown_write()
            conn.open_spare()  # while the host runs the command: for the next one
            deadline = started + request.timeout
            timed_out = not drain(chan, out, err, deadline)
            if timed_out:
                if on_timeout is not None:
                    on_timeout()
                killed = self._kill(host, pgid[0] if pgid else None)
                drain(chan, out, err, time.monotonic() + KILL_GRACE)
            elif chan.status_event.wait(max(0.0, deadline - time.monotonic()) + 1.0):
                status = chan.recv_exit_status()
                # -1: killed by a signal (paramiko drops exit-signal), which is how the watchdog's TERM or KILL
                # ends the command's shell; 124/137: `timeout` fired (signoff's own `sh` commands).
                exit_code = None if status == -1 else status
                if status in (-1, 124, 137) and time.monotonic() - started >= request.timeout:
                    timed_out = True
                if status == -1:
                    # No exit status: either the process died by a signal or the link went down.
                    time.sleep(0.2)
                    link_lost = not conn.alive()
                    error = (
                        f"{conn.endpoint.label()}: connection lost mid-command"
                        if link_lost
                        else "remote process ended by a signal"
                    )
            else:
                timed_out = True
        except (OSError, EOFError) as exc:
            link_lost = True
            error = f"{conn.endpoint.label()}: connection lost mid-command: {exc or type(exc).__name__}"
        except Exception as exc:
            error = f"{conn.endpoint.label()}: {type(exc).__name__}: {exc}"
        finally:
            # Closing a channel sends a message: on a link that just died that raises (EOFError, OSError),
            # and the command's result, not a traceback, is what the caller must get.
            with contextlib.suppress(Exception):
                chan.close()
            conn.slots.release()
        if error is None and not conn.alive():
            link_lost = True
            error = f"{conn.endpoint.label()}: connection lost mid-command"
        if link_lost:
            conn.broken = True
        if error is not None and exit_code is not None:
            exit_code = None
        return finish(
            host.name,
            shown,
            out,
            err,
            exit_code=exit_code,
            timed_out=timed_out,
            killed=killed,
            duration=time.monotonic() - started,
            error=error,
            link_lost=link_lost,
        )

    def _kill(self, host: Host, pgid: int | None) -> bool:
        """TERM then KILL the command's process group over a second channel."""
        if pgid is None:
            return False
        # `kill -0` would still see zombies that only wait to be reaped; count live members instead.
        alive = f"ps -A -o pgid=,stat= | awk -v g={pgid} '$1 == g && $2 !~ /^Z/ {{n++}} END {{exit n > 0 ? 0 : 1}}'"
        for sig in ("TERM", "KILL"):
            kill = f"kill -{sig} -{pgid} 2>/dev/null; sleep 0.3; {alive}"
            probe = self._exec(CommandRequest(host=host, command=kill, timeout=10), shell=False)
            if probe.exit_code == 1:
                return True  # no live process left in the group
        return False

    def put(self, host: Host, local: Path, remote: str) -> None:
        conn = self.connection(host)
        target = remote if remote.startswith("/") else f"{self.workdir(host)}/{remote}"
        try:
            sftp = conn.client.open_sftp()
            try:
                sftp.put(str(local), target)
            finally:
                sftp.close()
        except Exception as exc:
            raise TransportError(f"{conn.endpoint.label()}: upload of {local.name} failed: {exc}") from None

    def close(self) -> None:
        with self._guard:
            conns, self._pool = list(self._pool.values()), {}
        for conn in conns:
            conn.close()
