"""The lower half of SSHTransport: endpoints resolved once, one pooled connection per host (made, probed when
idle, replaced when it dies), handshakes through jump hosts and under sshd's MaxStartups."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from tools.artifacts import ArtifactStore
from tools.ssh.channels import CONNECT_TIMEOUT, HANDSHAKES_PER_HOST, IDLE_PROBE_AFTER, Connection, fast_transport
from tools.ssh.hosts import Endpoint, HostKeyError, KnownHosts, resolve
from tools.transport import (
    Host,
    TransportError,
)


class SSHConnections:
    """Endpoints and the pool: one connection per host, thread-safe. `SSHTransport` runs commands over it."""

    def __init__(
        self,
        artifacts: ArtifactStore,
        known_hosts: KnownHosts,
        *,
        redact: Callable[[str], str] = str,
        session: str = "session",
        ssh_config: str | None = None,
    ) -> None:
        self.ssh_config = ssh_config
        self.artifacts = artifacts
        self.known_hosts = known_hosts
        self.redact = redact
        self.session = session
        self._pool: dict[str, Connection] = {}
        self._endpoints: dict[str, Endpoint] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._handshakes: dict[str, threading.BoundedSemaphore] = {}
        self._workdirs: dict[str, str] = {}
        self._guard = threading.Lock()

    # ---------------------------------------------------------------- connections

    def endpoint(self, host: Host) -> Endpoint:
        with self._guard:
            if host.name not in self._endpoints:
                self._endpoints[host.name] = resolve(host, ssh_config=self.ssh_config)
            return self._endpoints[host.name]

    def _host_lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def connection(self, host: Host, *, replacing: Connection | None = None) -> Connection:
        """The host's pooled connection, made when there is none or it died. `replacing` names one a
        caller saw die: it is replaced unless another caller already did, so a dozen commands that all
        saw the link drop make one new connection between them, not a dozen that close each other's."""
        with self._host_lock(host.name):
            conn = self._pool.get(host.name)
            if (
                conn is not None
                and conn is not replacing
                and conn.alive()
                and (time.monotonic() - conn.last_used < IDLE_PROBE_AFTER or self._probe(conn))
            ):
                return conn
            if conn is not None:
                conn.close()
            conn = self._connect(self.endpoint(host))
            self._pool[host.name] = conn
            return conn

    def _probe(self, conn: Connection) -> bool:
        import paramiko

        try:
            chan = conn.transport.open_session(timeout=5)
            chan.exec_command("true")
            ok = chan.status_event.wait(5) and chan.recv_exit_status() == 0
            chan.close()
            return bool(ok)
        except paramiko.ChannelException:
            # sshd refused the channel (MaxSessions: a long command, and the one opened ahead, hold sessions): it
            # answered, so the link is alive, and closing it would cut the commands running on it.
            return True
        except Exception:
            return False

    def _socket(self, endpoint: Endpoint) -> Any:
        if endpoint.proxy_jump is not None:
            jump = self._connect(endpoint.proxy_jump)
            try:
                return jump.transport.open_channel(
                    "direct-tcpip", (endpoint.address, endpoint.port), ("127.0.0.1", 0), timeout=CONNECT_TIMEOUT
                )
            except Exception as exc:
                raise TransportError(
                    f"{endpoint.label()}: jump host {endpoint.proxy_jump.label()} could not open a tunnel: {exc}"
                ) from None
        try:
            sock = socket.create_connection((endpoint.address, endpoint.port), timeout=CONNECT_TIMEOUT)
        except ConnectionRefusedError:
            raise TransportError(
                f"{endpoint.label()}: connection refused — is sshd running and the port right?"
            ) from None
        except TimeoutError:
            raise TransportError(
                f"{endpoint.label()}: no answer within {CONNECT_TIMEOUT:g}s (host down or filtered)"
            ) from None
        except OSError as exc:
            raise TransportError(f"{endpoint.label()}: cannot connect: {exc.strerror or exc}") from None
        # paramiko never sets NODELAY: Nagle + delayed ACK cost ~44 ms per command.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for opt, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, opt):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), value)
        return sock

    def _connect(self, endpoint: Endpoint) -> Connection:
        import paramiko

        with self._guard:
            gate = self._handshakes.setdefault(endpoint.address, threading.BoundedSemaphore(HANDSHAKES_PER_HOST))
        if not endpoint.key_paths and not endpoint.use_agent:
            raise TransportError(
                f"{endpoint.label()}: no key to authenticate with: set key_path on the host, an IdentityFile "
                "in ssh_config, or use_agent: true"
            )
        last: Exception | None = None
        for attempt in range(4):
            with gate:
                sock = self._socket(endpoint)
                client = paramiko.SSHClient()
                known = client.get_host_keys()
                for name in self.known_hosts.keys:
                    for key_type, key in self.known_hosts.keys[name].items():
                        known.add(name, key_type, key)
                client.set_missing_host_key_policy(self.known_hosts.policy())
                try:
                    client.connect(
                        transport_factory=fast_transport,
                        hostname=endpoint.address,
                        port=endpoint.port,
                        username=endpoint.user,
                        # paramiko takes a list of paths too (its docs, and _auth); typeshed's stub says str only
                        key_filename=endpoint.key_paths or None,  # pyright: ignore[reportArgumentType]
                        passphrase=endpoint.passphrase,
                        sock=sock,
                        timeout=CONNECT_TIMEOUT,
                        banner_timeout=CONNECT_TIMEOUT,
                        auth_timeout=15,
                        channel_timeout=CONNECT_TIMEOUT,
                        allow_agent=endpoint.use_agent,
                        look_for_keys=False,
                    )
                except HostKeyError:
                    client.close()
                    raise
                except paramiko.BadHostKeyException as exc:
                    client.close()
                    raise HostKeyError(
                        f"{endpoint.label()}: HOST KEY CHANGED — expected {exc.expected_key.get_name()} "
                        f"{exc.expected_key.fingerprint}, got {exc.key.get_name()} {exc.key.fingerprint}; refusing "
                        "to connect (possible man-in-the-middle; fix known_hosts only after checking the host)"
                    ) from None
                except paramiko.PasswordRequiredException:
                    # before AuthenticationException, which it subclasses: the hint says what to set
                    client.close()
                    raise TransportError(
                        f"{endpoint.label()}: the key is passphrase-protected; set passphrase_env on the host"
                    ) from None
                except paramiko.AuthenticationException as exc:
                    client.close()
                    keys = ", ".join(endpoint.key_paths) or ("ssh-agent" if endpoint.use_agent else "no key")
                    raise TransportError(f"{endpoint.label()}: authentication failed with {keys}: {exc}") from None
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    # Banner errors and resets: sshd's MaxStartups drops handshakes under a burst. Retry.
                    client.close()
                    last = exc
                    time.sleep(0.1 * 2**attempt)
                    continue
            transport = client.get_transport()
            assert transport is not None  # connect() returned, so the client has its transport
            transport.set_keepalive(15)
            return Connection(client, endpoint)
        raise TransportError(f"{endpoint.label()}: SSH handshake failed after retries: {last}")
