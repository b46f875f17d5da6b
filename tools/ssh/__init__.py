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

The package's rooms: hosts.py (resolution, host keys), channels.py (paramiko's connection, channels and buffers,
tuned), connections.py (the pool), transport.py (commands), script.py (what runs on the host around a command).
"""

from tools.ssh.hosts import Endpoint, HostKeyError, KnownHosts, resolve, user_known_hosts
from tools.ssh.script import wrap
from tools.ssh.transport import SSHTransport

__all__ = ["Endpoint", "HostKeyError", "KnownHosts", "SSHTransport", "resolve", "user_known_hosts", "wrap"]
