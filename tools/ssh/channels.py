"""paramiko, tuned and extended: a pooled connection, a channel opened ahead for the next command, an exec request
that says whether it left, a channel buffer on a bytearray, AES-GCM first, and reading a command's two streams."""

from __future__ import annotations

import contextlib
import functools
import logging
import select
import threading
import time
from typing import Any, Literal

from tools.output import StreamSink
from tools.ssh.hosts import Endpoint

logging.getLogger("paramiko").setLevel(logging.WARNING)

CHANNELS_PER_CONNECTION = 4  # well below sshd's MaxSessions (10); slots are freed lazily
HANDSHAKES_PER_HOST = 3  # sshd MaxStartups starts dropping at 10 unauthenticated connections
CONNECT_TIMEOUT = 10.0
KILL_GRACE = 2.0
IDLE_PROBE_AFTER = 60.0
# The largest data packet we ask sshd for: paramiko's 32 KiB made its reading thread handle four times as many
# packets (200 MB streamed: 573 vs 606 MB/s, medians of 6 interleaved runs); OpenSSH's own limit is 256 KiB.
MAX_PACKET = 1 << 17


class Connection:
    def __init__(self, client: Any, endpoint: Endpoint) -> None:
        self.client = client
        self.endpoint = endpoint
        self.slots = threading.BoundedSemaphore(CHANNELS_PER_CONNECTION)
        self.last_used = time.monotonic()
        self.spare: Spare | None = None  # holds one of `slots` while it waits for a command
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

    def take_spare(self) -> Spare | None:
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
                spare = open_ahead(self.transport)
                self.spare = spare
        if spare is None:
            self.slots.release()


class Spare:
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


def send_exec(chan: Any, script: str) -> Literal["sent", "channel closed", "link down"]:
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


def open_ahead(transport: Any) -> Spare | None:
    """Send a session channel's open request and return without waiting for the answer (which paramiko's reading
    thread records as it does for `open_session`); None if the link cannot take it. paramiko's own steps, pinned
    below 6 in pyproject, as `bytes_pipe_class` is."""
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
            bytearray_buffers(chan)
            transport._channels.put(chanid, chan)
            transport.channel_events[chanid] = event = threading.Event()
            transport.channels_seen[chanid] = True
            chan._set_transport(transport)
            chan._set_window(window, packet)
        transport._send_user_message(m)
    except Exception:  # a link going down as we asked: the next command opens its channel itself
        return None
    return Spare(chan, event)


def bytearray_buffers(chan: Any) -> None:
    """A channel's two read buffers on `bytes_pipe_class`: set before any data arrives on it."""
    pipe = bytes_pipe_class()
    chan.in_buffer, chan.in_stderr_buffer = pipe(), pipe()


@functools.cache
def bytes_pipe_class() -> type:
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


def fast_transport(sock: Any, **kwargs: Any) -> Any:
    """A paramiko Transport tuned for bulk output: AES-GCM first (AES-NI; measured 265 vs 243 MB/s for
    CTR on loopback). Negotiation still falls back to any cipher both sides have."""
    import paramiko

    t = paramiko.Transport(sock, **kwargs)  # a 16 MiB window measured 4× *slower* here: keep paramiko's 2 MiB
    options = t.get_security_options()
    gcm = [c for c in options.ciphers if "gcm" in c]
    options.ciphers = tuple(gcm + [c for c in options.ciphers if c not in gcm])
    return t


def drain(chan: Any, out: StreamSink, err: StreamSink, deadline: float) -> bool:
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
