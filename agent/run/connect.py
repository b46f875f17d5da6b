"""One `Transport` for a campaign: each host's commands go to the transport its `transport:` names.

`TRANSPORTS` is the registry: a name (`tools.transport.TransportName`, what a campaign's host may say) → how to build
that transport for a session (`Wiring`: the artifact store, the redactor and what SSH needs). Each is built the first
time a host needs it, so paramiko is imported only when a campaign has SSH hosts. A new transport (a `kubectl exec`
one, say) is its module under tools/, its name in `TransportName`, and one entry here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.artifacts import ArtifactStore
from tools.transport import CommandRequest, CommandResult, Host, KeywordRun, LocalTransport, Transport, TransportName


@dataclass(frozen=True, kw_only=True)
class Wiring:
    """What a session gives the transports it builds."""

    artifacts: ArtifactStore
    redact: Callable[[str], str]
    hosts_root: Path  # where local hosts' working directories go
    hosts: list[Host]
    campaign_dir: Path
    pinned: Path  # the session's pinned SSH host keys
    accept_new: bool
    on_pin: Callable[[str, str, str], None]
    session: str
    ssh_config: str | None


def local_transport(w: Wiring) -> Transport:
    return LocalTransport(w.hosts_root, w.artifacts, redact=w.redact)


def ssh_transport(w: Wiring) -> Transport:
    from tools.ssh import KnownHosts, SSHTransport, user_known_hosts

    files = [Path("~/.ssh/known_hosts").expanduser()]
    for host in w.hosts:
        if host.known_hosts:
            p = Path(host.known_hosts).expanduser()
            files.append(p if p.is_absolute() else w.campaign_dir / p)
        if host.transport == "ssh":
            files += user_known_hosts(host.address or host.name, w.ssh_config)
    known = KnownHosts(list(dict.fromkeys(files)), w.pinned, accept_new=w.accept_new, on_pin=w.on_pin)
    return SSHTransport(w.artifacts, known, redact=w.redact, session=w.session, ssh_config=w.ssh_config)


TRANSPORTS: Mapping[TransportName, Callable[[Wiring], Transport]] = {"local": local_transport, "ssh": ssh_transport}


class HostRouter(KeywordRun):
    """The session's `Transport`: each call goes to the transport of the host it names, built on first use."""

    def __init__(self, wiring: Wiring, registry: Mapping[TransportName, Callable[[Wiring], Transport]] = TRANSPORTS):
        self.wiring = wiring
        self.registry = registry
        self.built: dict[TransportName, Transport] = {}
        self._building = threading.Lock()  # commands on many hosts start at once: one transport of each kind

    def _for(self, host: Host) -> Transport:
        if (made := self.built.get(host.transport)) is None:
            with self._building:
                if (made := self.built.get(host.transport)) is None:
                    made = self.built[host.transport] = self.registry[host.transport](self.wiring)
        return made

    def execute(self, request: CommandRequest) -> CommandResult:
        return self._for(request.host).execute(request)

    def workdir(self, host: Host) -> str:
        return self._for(host).workdir(host)

    def put(self, host: Host, local: Path, remote: str) -> None:
        self._for(host).put(host, local, remote)

    def close(self) -> None:
        for made in self.built.values():
            made.close()
