"""SSHTransport: paramiko, one pooled connection per host, strict host keys, hard deadlines.

What the defaults would get wrong, and what this module does instead (research/ssh.md):
- paramiko never sets TCP_NODELAY (48 ms per command): we build the socket and pass it as `sock=`;
- its keepalive never detects a dead peer: TCP keepalive on the socket plus our own `true` probe;
- `channel_timeout` defaults to an hour and `recv_exit_status()` has no timeout at all: explicit
  timeouts everywhere, and we wait on `status_event` with the time left;
- closing a channel leaves the remote process running (and sshd refuses the `signal` request for
  root): every command runs in its own process group beside a watchdog that ends it if signoff cannot,
  and on our deadline we kill that group over a second channel;
- sshd frees session slots lazily: at most 4 channels per connection, retried with backoff;
- opening a channel is a round trip before every command: the next command's channel is asked for while the
  current one runs (one of the 4, never used if it was refused, closed or its link died, and a command whose
  request could not leave goes on a new connection: nothing ran);
- `AutoAddPolicy` trusts anyone: unknown keys are rejected unless the operator opted into
  trust-on-first-use, and a changed key is always refused with both fingerprints.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import shlex
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from tools.artifacts import ArtifactStore
from tools.output import StreamSink
from tools.transport import (
    ABSOLUTE_PATH,
    SHELL,
    CommandRequest,
    CommandResult,
    Host,
    KeywordRun,
    TransportError,
    backstop,
    finish,
    open_sinks,
)

log = logging.getLogger("signoff.ssh")
logging.getLogger("paramiko").setLevel(logging.WARNING)

CHANNELS_PER_CONNECTION = 4  # well below sshd's MaxSessions (10); slots are freed lazily
HANDSHAKES_PER_HOST = 3  # sshd MaxStartups starts dropping at 10 unauthenticated connections
CONNECT_TIMEOUT = 10.0
KILL_GRACE = 2.0
IDLE_PROBE_AFTER = 60.0
# The largest data packet we ask sshd for: paramiko's 32 KiB made its reading thread handle four times as many
# packets (200 MB streamed: 573 vs 606 MB/s, medians of 6 interleaved runs); OpenSSH's own limit is 256 KiB.
MAX_PACKET = 1 << 17
PGID_MARK = "__SIGNOFF_PGID="
NO_BASH = "__SIGNOFF_NO_BASH"


class HostKeyError(TransportError):
    """Unknown or changed host key: never connected, never retried."""


@dataclass
class Endpoint:
    """Where and how to reach one host, after ~/.ssh/config resolution."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_paths: list[str] = field(default_factory=list)
    use_agent: bool = False
    passphrase: str | None = None
    proxy_jump: Endpoint | None = None

    @property
    def known_hosts_name(self) -> str:
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"

    def label(self) -> str:
        return f"{self.name} ({self.user + '@' if self.user else ''}{self.address}:{self.port})"


def resolve(host: Host, *, environ: Mapping[str, str] | None = None, ssh_config: str | None = None) -> Endpoint:
    """Inventory fields win; anything missing comes from `ssh -G` (OpenSSH semantics, Include and all),
    or from paramiko's SSHConfig when no OpenSSH client is installed."""
    env = os.environ if environ is None else environ
    alias = host.address or host.name
    cfg = _ssh_config(alias, ssh_config)
    address = cfg.get("hostname") or alias
    port = host.port if host.port != 22 or "port" not in cfg else int(cfg["port"])
    user = host.user or cfg.get("user")
    keys = (
        [host.key_path]
        if host.key_path
        else [p for p in _as_list(cfg.get("identityfile")) if Path(os.path.expanduser(p)).exists()]
    )
    passphrase = env.get(host.passphrase_env) if host.passphrase_env else None
    jump = host.proxy_jump or (cfg.get("proxyjump") if cfg.get("proxyjump", "none") != "none" else None)
    endpoint = Endpoint(
        name=host.name,
        address=address,
        port=port,
        user=user,
        key_paths=[os.path.expanduser(k) for k in keys],
        use_agent=host.use_agent,
        passphrase=passphrase,
    )
    if jump:
        first = jump.split(",")[0]
        juser, _, jhost = first.rpartition("@")
        jhost, _, jport = jhost.partition(":")
        jump_host = Host(
            name=f"{host.name}-jump",
            transport="ssh",
            address=jhost,
            user=juser or None,
            port=int(jport) if jport else 22,
            use_agent=host.use_agent,
            key_path=host.key_path,
        )
        endpoint.proxy_jump = resolve(jump_host, environ=env, ssh_config=ssh_config)
    return endpoint


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return cast(list[str], value) if isinstance(value, list) else [value]


def _ssh_config(alias: str, config_file: str | None = None) -> dict[str, Any]:
    ssh = shutil.which("ssh")
    if ssh:
        argv = [ssh, *(["-F", config_file] if config_file else []), "-G", "--", alias]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=True).stdout
        except (subprocess.SubprocessError, OSError):
            out = ""
        cfg: dict[str, Any] = {}
        for line in out.splitlines():
            key, _, value = line.partition(" ")
            if key == "identityfile":
                cfg.setdefault(key, []).append(value)
            else:
                cfg[key] = value
        if cfg:
            # `ssh -G` reports defaults too; an IdentityFile list of defaults is filtered for existence later.
            return cfg
    import paramiko

    path = Path(config_file or "~/.ssh/config").expanduser()
    if not path.exists():
        return {}
    return dict(paramiko.SSHConfig.from_path(str(path)).lookup(alias))


def user_known_hosts(alias: str, config_file: str | None = None) -> list[Path]:
    """The known_hosts files OpenSSH would use for `alias` (UserKnownHostsFile)."""
    value = _ssh_config(alias, config_file).get("userknownhostsfile", "")
    return [Path(os.path.expanduser(p)) for p in str(value).split() if p]


class KnownHosts:
    """Host keys from ~/.ssh/known_hosts, per-campaign files, and this session's pinned keys.

    paramiko raises on `@cert-authority`/`@revoked` lines for the whole file, so such lines are
    filtered out (with a warning) before parsing: a CA line must not disable host-key checking.
    """

    def __init__(
        self,
        files: list[Path],
        pinned: Path | None,
        *,
        accept_new: bool = False,
        on_pin: Callable[[str, str, str], None] | None = None,
    ) -> None:
        import paramiko

        self.keys = paramiko.HostKeys()
        self.warnings: list[str] = []
        for path in [*files, *([pinned] if pinned else [])]:
            self._load(path)
        self.pinned = pinned
        self.accept_new = accept_new
        self.on_pin = on_pin
        self._lock = threading.Lock()

    def _load(self, path: Path) -> None:
        import paramiko
        from paramiko.hostkeys import HostKeyEntry

        if not path.exists():
            return
        kept: list[str] = []
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith(("@cert-authority", "@revoked")):
                self.warnings.append(f"{path}:{number}: {line.split()[0]} lines are not supported; ignored")
                continue
            kept.append(line)
        for line in kept:
            try:
                entry = HostKeyEntry.from_line(line)
            except (paramiko.SSHException, ValueError, IndexError):
                continue
            if entry is not None:
                for name in entry.hostnames:
                    self.keys.add(name, entry.key.get_name(), entry.key)

    def policy(self) -> Any:
        import paramiko

        store = self

        class Policy(paramiko.MissingHostKeyPolicy):
            def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
                if not store.accept_new:
                    raise HostKeyError(
                        f"host key for {hostname} is unknown ({key.get_name()} {key.fingerprint}); add it to "
                        f"known_hosts after checking it (ssh-keyscan), or pass --accept-new-host-keys to pin it"
                    )
                store.pin(hostname, key)

        return Policy()

    def pin(self, hostname: str, key: Any) -> None:
        with self._lock:
            self.keys.add(hostname, key.get_name(), key)
            if self.pinned is not None:
                self.pinned.parent.mkdir(parents=True, exist_ok=True)
                with self.pinned.open("a") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        if self.on_pin is not None:
            self.on_pin(hostname, key.get_name(), key.fingerprint)


class _Connection:
    def __init__(self, client: Any, endpoint: Endpoint) -> None:
        self.client = client
        self.endpoint = endpoint
        self.slots = threading.BoundedSemaphore(CHANNELS_PER_CONNECTION)
        self.last_used = time.monotonic()
        self.spare: _Spare | None = None  # holds one of `slots` while it waits for a command
        self.ahead = True  # False once sshd refused a channel opened ahead (MaxSessions below ours): no more
        self.guard = threading.Lock()
        # Set once a command on it saw the link die: paramiko may still call a half-dead transport active
        # for a moment under load, and a retry must not land on it (CI: the retry was lost a second time).
        self.broken = False

    @property
    def transport(self) -> Any:
        return self.client.get_transport()

    def alive(self) -> bool:
        t = self.transport
        return not self.broken and t is not None and t.is_active()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()

    def take_spare(self) -> _Spare | None:
        with self.guard:
            spare, self.spare = self.spare, None
            return spare

    def open_spare(self) -> None:
        """Open the next command's channel now, if a slot is free and the connection is sound: the open's round trip
        (~0.4 ms of a pooled `true`'s ~6, bench/ssh_latency.py) then happens while the host runs this command."""
        if not self.slots.acquire(blocking=False):
            return
        spare = None
        with self.guard:
            if self.spare is None and self.ahead and self.alive():
                spare = _open_ahead(self.transport)
                self.spare = spare
        if spare is None:
            self.slots.release()


class _Spare:
    """A session channel asked for without waiting for sshd's answer: paramiko's `open_channel`, minus its wait."""

    def __init__(self, chan: Any, event: threading.Event) -> None:
        self.chan, self.event = chan, event

    def ready(self, transport: Any) -> Any | None:
        """The channel, once sshd has opened it; None if sshd refused it, the link went down or it was closed since
        (the caller then opens one the usual way). Waits as `open_channel` does, watching the link."""
        import paramiko

        if transport is None:  # the connection was closed meanwhile (replaced, or the transport closed)
            return None
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while not self.event.wait(0.1):
            if not transport.active or time.monotonic() > deadline:
                return None
        if not transport.active or self.chan.closed:
            return None
        if transport._channels.get(self.chan.get_id()) is not self.chan:  # refused
            # paramiko keeps a refusal for the next `get_exception()`, which would report it as another open's:
            # taken here, when it is a refusal (a dead link's exception is left for the commands it cut).
            if isinstance(transport.saved_exception, paramiko.ChannelException):
                transport.get_exception()
            return None
        return self.chan

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            self.chan.close()


def _send_exec(chan: Any, script: str) -> Literal["sent", "channel closed", "link down"]:
    """paramiko's `exec_command` up to its wait for sshd's answer (`chan._wait_for_event()`, the caller's), saying
    whether the request left: not on a closed channel, nor when the socket refused the bytes ("link down"; a send
    that failed otherwise on a link paramiko still calls active, e.g. a key exchange that timed out, is "channel
    closed": not sent, and no reason to cut the other commands on that link)."""
    import paramiko
    from paramiko.common import cMSG_CHANNEL_REQUEST
    from paramiko.message import Message

    if chan.closed or chan.eof_received or chan.eof_sent or not chan.active:
        return "channel closed"
    m = Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(chan.remote_chanid)
    m.add_string("exec")
    m.add_boolean(True)
    m.add_string(script)
    chan._event_pending()
    try:
        chan.transport._send_user_message(m)
    except (OSError, EOFError):
        return "link down"
    except paramiko.SSHException:
        return "channel closed" if chan.transport.is_active() else "link down"
    return "sent"


def _open_ahead(transport: Any) -> _Spare | None:
    """Send a session channel's open request and return without waiting for the answer (which paramiko's reading
    thread records as it does for `open_session`); None if the link cannot take it. paramiko's own steps, pinned
    below 6 in pyproject, as `_bytes_pipe_class` is."""
    from paramiko.channel import Channel
    from paramiko.common import cMSG_CHANNEL_OPEN
    from paramiko.message import Message

    try:
        with transport.lock:
            window = transport._sanitize_window_size(None)
            packet = transport._sanitize_packet_size(MAX_PACKET)
            chanid = transport._next_channel()
            m = Message()
            m.add_byte(cMSG_CHANNEL_OPEN)
            m.add_string("session")
            m.add_int(chanid)
            m.add_int(window)
            m.add_int(packet)
            chan: Any = Channel(chanid)  # the stubs leave out the two setters open_channel calls
            _bytearray_buffers(chan)
            transport._channels.put(chanid, chan)
            transport.channel_events[chanid] = event = threading.Event()
            transport.channels_seen[chanid] = True
            chan._set_transport(transport)
            chan._set_window(window, packet)
        transport._send_user_message(m)
    except Exception:  # a link going down as we asked: the next command opens its channel itself
        return None
    return _Spare(chan, event)


class SSHTransport(KeywordRun):
    """The `Transport` for remote hosts. Thread-safe: one pooled connection per host."""

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
        self._pool: dict[str, _Connection] = {}
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

    def connection(self, host: Host, *, replacing: _Connection | None = None) -> _Connection:
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

    def _probe(self, conn: _Connection) -> bool:
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

    def _connect(self, endpoint: Endpoint) -> _Connection:
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
                        transport_factory=_fast_transport,
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
            return _Connection(client, endpoint)
        raise TransportError(f"{endpoint.label()}: SSH handshake failed after retries: {last}")

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

    def _open(self, host: Host) -> tuple[_Connection, Any]:
        """A session channel on the pooled connection; reconnect once if the connection died."""
        import paramiko

        dead: _Connection | None = None
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
                    _bytearray_buffers(chan)
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

    def _start(self, host: Host, script: str) -> tuple[_Connection, Any]:
        """A channel on the pooled connection with `script`'s exec request sent. A request that could not be sent
        reached nothing (not a byte left, or a packet cut short, which sshd drops whole), so nothing ran: it is sent
        once more, on a new connection. That is a link that died since its channel was opened, which a channel opened
        ahead and idle since (`open_spare`) makes likelier than an open just before the request."""
        for again in (False, True):
            conn, chan = self._open(host)
            chan.settimeout(0.0)
            if (sent := _send_exec(chan, script)) == "sent":
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
            timed_out = not _drain(chan, out, err, deadline)
            if timed_out:
                if on_timeout is not None:
                    on_timeout()
                killed = self._kill(host, pgid[0] if pgid else None)
                _drain(chan, out, err, time.monotonic() + KILL_GRACE)
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


def _bytearray_buffers(chan: Any) -> None:
    """A channel's two read buffers on `_bytes_pipe_class`: set before any data arrives on it."""
    pipe = _bytes_pipe_class()
    chan.in_buffer, chan.in_stderr_buffer = pipe(), pipe()


@functools.cache
def _bytes_pipe_class() -> type:
    """paramiko's channel buffer on a bytearray instead of an `array("B")`.

    Streaming 200 MB, two thirds of the reading thread's time went to that array: `frombytes` regrows it
    for every 32 KiB packet, and a read copies twice (a slice, then `tobytes`) and moves what is left. A
    bytearray grows in place, drops a prefix without moving the rest, and is read with one copy. Only the
    two storage hooks change: locking, events and closing stay paramiko's (pinned below 6 in pyproject)."""
    from paramiko.buffered_pipe import BufferedPipe

    class BytesPipe(BufferedPipe):  # pyright: ignore[reportMissingTypeArgument]
        def __init__(self) -> None:
            super().__init__()
            self._buffer: Any = bytearray()

        def _buffer_frombytes(self, data: bytes) -> None:
            self._buffer += data

        def _buffer_tobytes(self, limit: int | None = None) -> bytes:
            with memoryview(self._buffer) as view:
                return bytes(view[:limit])

    return BytesPipe


def _fast_transport(sock: Any, **kwargs: Any) -> Any:
    """A paramiko Transport tuned for bulk output: AES-GCM first (AES-NI; measured 265 vs 243 MB/s for
    CTR on loopback). Negotiation still falls back to any cipher both sides have."""
    import paramiko

    t = paramiko.Transport(sock, **kwargs)  # a 16 MiB window measured 4× *slower* here: keep paramiko's 2 MiB
    options = t.get_security_options()
    gcm = [c for c in options.ciphers if "gcm" in c]
    options.ciphers = tuple(gcm + [c for c in options.ciphers if c not in gcm])
    return t


def wrap(
    command: str,
    *,
    timeout: float,
    cwd: str | None,
    env: Mapping[str, str] | None,
    diagnosed: bool = False,
    stdin: bool = True,
    bash: bool = True,
) -> str:
    """Run `command` with a backstop and print its process group id first, on stderr.

    sshd starts every session's shell with setsid(), so that shell's pid is the process group of
    everything the command spawns: `kill -TERM -PGID` reaches all of it. The backstop holds even if signoff
    or the link dies; our own deadline fires first. The login shell only starts it: the command itself runs in
    bash (tools/transport.py: SHELL), with PATH's relative entries dropped first, beside `_watchdog`;
    `bash=False` is for signoff's own setup commands, which run in `sh` under coreutils `timeout`.
    """
    term, kill = backstop(timeout, diagnosed=diagnosed)
    # Without stdin the command reads /dev/null, so the channel needs no EOF from us (see `_exec`).
    redirect = "" if stdin else " </dev/null"
    prefix = ABSOLUTE_PATH + _watchdog(term, kill) if bash else ""
    if cwd:
        prefix += f"cd {shlex.quote(cwd)} || exit 126; "
    for key, value in (env or {}).items():
        prefix += f"export {key}={shlex.quote(value)}; "
    script = shlex.quote(prefix + command)
    if bash:
        return f"echo {PGID_MARK}$$ >&2; exec {' '.join(SHELL)} {script}{redirect}"
    return f"echo {PGID_MARK}$$ >&2; exec timeout -k {kill} {term} sh -c {script}{redirect}"


def _watchdog(term: int, kill: int) -> str:
    """The backstop, forked by the command's own bash before the command runs: TERM to the whole group `term`
    seconds after the start, KILL `kill` seconds later; it ends itself once the command's shell has gone.

    It replaces coreutils `timeout`, which cost every command a second exec and a fork: about 1 ms of the 3.3 ms a
    pooled `true` took; this fork costs about 0.45 ms (bench/ssh_latency.py). (A keeper per connection that commands
    registered with cost as much: waking it is what costs.) Builtins only, nothing exec'd: it sleeps in `read -t` on a
    pty master no one writes to (`sleep` where there is no /dev/ptmx). Being in the group, it keeps the group's id
    from being reused while it lives, so its kill can reach no one else's processes; disowned, a `wait` or `jobs` in
    the command does not see it (`$!` does name it until the command starts a job of its own); its stdio is
    /dev/null, so it never holds the channel open. What it must survive, each found by an attack (tests/unit/
    test_ssh_watchdog.py): every signal the command can send its own group (`kill 0`, `kill -HUP 0`, `kill $!`) is
    ignored, so only KILL ends it early (signoff's own kill of a group ends with KILL); a shell that `exec`s a
    program that drops the user's rights is still there by /proc when `kill -0` may not signal it; posix mode
    (POSIXLY_CORRECT from the environment) would end the subshell at a failed redirection, so it is turned off; and
    SECONDS, which bash takes from the environment, is set to 0. Its clock is SECONDS, bounded by the naps it took
    (a clock stepped back cannot put the TERM off), in whole seconds: the TERM comes up to a second before `term`
    (still 2 s after signoff's own deadline, see tools/transport.py: OUTLIVE_S) and at most half a second after it,
    so the command is gone by `gone_after`."""
    # Ignored before the fork, so the watchdog is born ignoring them (a trap set in it would race the command's first
    # `kill 0`); the command's shell then takes back what it had. SIGINT apart: where the shell was started with it
    # ignored (a daemon, a job started in the background), bash's `trap - INT` does not leave it ignored but installs
    # bash's own handler, and the command's `kill -INT 0` then ends its shell. So INT is given back only if the
    # kernel's SigIgn (read without a fork: ~0.1 ms) says it was not ignored; where there is no /proc, it is given back.
    return (
        "__s=; read -r -d '' __s 2>/dev/null </proc/$$/status; "
        "[[ $__s =~ SigIgn:.[0-9a-f]*([0-9a-f]) ]] && ((0x${BASH_REMATCH[1]} & 2)) && __s=INT || __s=; "
        f"trap '' {_SURVIVED}; {{ set +o posix; SECONDS=0; __n=0; "
        'if exec 3<>/dev/ptmx; then __nap() { read -t "$1" -u 3; }; else __nap() { sleep "$1" || exit; }; fi; '
        f"while kill -0 $$ 2>/dev/null || [ -e /proc/$$ ]; do if ((SECONDS >= {term} || __n >= {2 * term})); then "
        f"kill -TERM -$$; __nap {kill}; kill -KILL -$$; fi; __nap 0.5; __n=$((__n + 1)); done; }} "
        f'</dev/null >/dev/null 2>&1 & trap - {_SURVIVED.replace(" INT", "")}; [ -n "$__s" ] || trap - INT; '
        "unset __s; disown 2>/dev/null; "
    )


_SURVIVED = "HUP INT QUIT ALRM TERM USR1 USR2 PIPE"  # every signal a command may send its own group but KILL


def _drain(chan: Any, out: StreamSink, err: StreamSink, deadline: float) -> bool:
    """Read stdout and stderr together until EOF (True) or the deadline (False)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        got = False
        while chan.recv_ready():
            out.feed(chan.recv(1 << 20))
            got = True
        while chan.recv_stderr_ready():
            err.feed(chan.recv_stderr(1 << 20))
            got = True
        # Data, EOF and CLOSE can all arrive while we read the other stream: finish only when both
        # buffers are empty *after* the end was seen, or the tail of the output is lost.
        if (chan.eof_received or chan.closed) and not chan.recv_ready() and not chan.recv_stderr_ready():
            return True
        if not got:
            select.select([chan], [], [], min(remaining, 0.5))
